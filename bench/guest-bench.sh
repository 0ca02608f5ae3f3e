#!/usr/bin/env bash
# Runs INSIDE a guest, started by scripts/bench:
#   scripts/guest-run --kernel KVER --timeout SEC -- bench/guest-bench.sh KVER
#
# Measures, side by side in this one boot, what a traced call of
# bench_work() costs under each tracer, and the ring and collector figures.
# Prints its results as lines the driver parses:
#   @info KEY VALUE...                 about the guest and the tools
#   @cmd ID COMMAND...                 the command that produced result ID
#   @res ID key=value...               one measurement (one repetition)
# and anything else as commentary.  It asserts no timing: a tracer that
# fails to run or does not see every call is reported (seen=...), not fatal.
#
# Environment (set by scripts/bench, passed through by guest-run):
#   BFT_BENCH_CALLS    calls per thread per measurement (50000)
#   BFT_BENCH_REPS     repetitions of each per-call measurement (5)
#   BFT_BENCH_OFF_PLAIN, BFT_BENCH_OFF_CET
#                      file offsets of bench_work in the two targets
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$root" || exit 1
(($# == 1)) || { echo "usage: bench/guest-bench.sh KVER (inside the guest)" >&2; exit 2; }
kver=$1
[[ $(uname -r) == "$kver" ]] || { echo "guest-bench: running $(uname -r), not $kver" >&2; exit 1; }

calls=${BFT_BENCH_CALLS:-50000}
reps=${BFT_BENCH_REPS:-5}
warmup=200
off_plain=${BFT_BENCH_OFF_PLAIN:?set by scripts/bench}
off_cet=${BFT_BENCH_OFF_CET:?set by scripts/bench}

B=$root/build/bench
plain=$B/bench-loop-plain
cet=$B/bench-loop-cet
floor_ko=$B/floor-$kver/bft_floor.ko
bft_ko=$root/build/kmod-$kver/bftrace.ko
bfctl=$root/build/user/bfctl
bfcoll=$root/build/user/bfcollector
ringsize=$B/bench-ringsize
throw=$B/bench-throw
tmp=$(mktemp -d /tmp/bfbench.XXXXXX)
: >"$tmp/results"
tick=$(getconf CLK_TCK)
# a tracer that hangs must not eat the guest's whole time
tool_timeout=90

for f in "$plain" "$cet" "$floor_ko" "$bft_ko" "$bfctl" "$bfcoll" "$ringsize" "$throw"; do
	[[ -e $f ]] || { echo "guest-bench: $f missing (run scripts/bench, which builds it)" >&2; exit 1; }
done

info() { echo "@info $*"; }
cmd() { # ID COMMAND...: record the command that reproduces result ID
	local id=$1
	shift
	echo "@cmd $id $*"
}
res() { echo "@res $*" | tee -a "$tmp/results"; }

# The "total ..." line of bench-loop, from a file holding its output.
loop_field() { # file key
	sed -n "s/^total .*\b$2=\([0-9.]*\).*/\1/p" "$1" | tail -n 1
}

# utime+stime of a process, in clock ticks.
cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0
}

# The ring counters summed over CPUs: the "all" line of "bfctl status",
# reduced to "produced lost bytes_written" (no JSON parser needed here).
ring_counters() { "$bfctl" status 2>/dev/null | awk '$1 == "all" { print $2, $4, $6 }'; }
stat_sum() { # status key
	local -a v
	read -r -a v <<<"$1"
	case $2 in
	produced) echo "${v[0]:-0}" ;;
	lost) echo "${v[1]:-0}" ;;
	bytes_written) echo "${v[2]:-0}" ;;
	esac
}

info kernel "$(uname -r)"
info cpu "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
info cpus "$(nproc)"
info bpftrace "$(bpftrace --version 2>&1 | head -n 1)"
info perf "$(perf version 2>&1 | head -n 1)"
info clocksource "$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null) (available: $(cat /sys/devices/system/clocksource/clocksource0/available_clocksource 2>/dev/null))"
info calls "$calls"
info reps "$reps"
info warmup "$warmup"

# ---------------------------------------------------------------- tracers
# Each prints one @res line; ID is build.tool[.threads].

untraced() { # id bin threads
	local id=$1 bin=$2 n=$3
	cmd "$id" "$bin $calls $n"
	timeout "$tool_timeout" "$bin" "$calls" "$n" >"$tmp/out" 2>&1
	res "$id" ns="$(loop_field "$tmp/out" ns_per_call)" seen=- expect=-
}

floor() { # id bin offset threads
	local id=$1 bin=$2 off=$3 n=$4 e r
	cmd "$id" "insmod $floor_ko path=$bin offset=$off && $bin $calls $n; rmmod bft_floor"
	if ! insmod "$floor_ko" path="$bin" offset="$off"; then
		res "$id" ns= seen=insmod-failed expect=-
		return
	fi
	timeout "$tool_timeout" "$bin" "$calls" "$n" >"$tmp/out" 2>&1
	e=$(cat /sys/module/bft_floor/parameters/entries)
	r=$(cat /sys/module/bft_floor/parameters/returns)
	rmmod bft_floor
	res "$id" ns="$(loop_field "$tmp/out" ns_per_call)" seen="$e/$r" \
		expect="$(((calls + warmup) * n))"
}

coll_pid=
# What the bftrace runs trace through, for their commands (the BPF section
# below changes it).
setup="bftrace.ko loaded, $bfcoll -o DIR running"
# The collector runs for the whole of the bftrace measurements; each one
# also reports the collector's CPU time during that run.
bftrace() { # id bin threads [bfctl run option]
	local id=$1 bin=$2 n=$3 opt=${4:-} s0 s1 t0 t1 w0 w1 prod lost bytes
	local -a o=()
	[[ -n $opt ]] && o=("$opt")
	cmd "$id" "$bfctl run -p '$(basename "$bin"):bench_work' ${opt:+$opt }-- $bin $calls $n  ($setup)"
	s0=$(ring_counters)
	t0=$(cpu_ticks "$coll_pid")
	w0=$(date +%s%N)
	timeout "$tool_timeout" "$bfctl" run -p "$(basename "$bin"):bench_work" "${o[@]}" \
		-- "$bin" "$calls" "$n" >"$tmp/out" 2>"$tmp/err"
	w1=$(date +%s%N)
	t1=$(cpu_ticks "$coll_pid")
	s1=$(ring_counters)
	prod=$(($(stat_sum "$s1" produced) - $(stat_sum "$s0" produced)))
	lost=$(($(stat_sum "$s1" lost) - $(stat_sum "$s0" lost)))
	bytes=$(($(stat_sum "$s1" bytes_written) - $(stat_sum "$s0" bytes_written)))
	[[ -s $tmp/out ]] || sed 's/^/# bfctl: /' "$tmp/err"
	res "$id" ns="$(loop_field "$tmp/out" ns_per_call)" seen="$prod" \
		expect="$((2 * (calls + warmup) * n))" lost="$lost" bytes="$bytes" \
		calls_per_s="$(loop_field "$tmp/out" calls_per_s)" \
		coll_ticks="$((t1 - t0))" wall_ns="$((w1 - w0))" tick="$tick"
}

bpftrace_run() { # id bin threads
	local id=$1 bin=$2 n=$3 prog
	prog="uprobe:$bin:bench_work {} uretprobe:$bin:bench_work {}"
	cmd "$id" "bpftrace -e '$prog' -c '$bin $calls $n'"
	timeout "$tool_timeout" bpftrace -e "$prog" -c "$bin $calls $n" >"$tmp/out" 2>&1
	grep -q '^total ' "$tmp/out" || sed 's/^/# bpftrace: /' "$tmp/out" | tail -n 5
	res "$id" ns="$(loop_field "$tmp/out" ns_per_call)" seen=- expect=-
}

perf_run() { # id bin threads
	local id=$1 bin=$2 n=$3 samples
	cmd "$id" "perf probe -x $bin -a bfbench:entry=bench_work -a bfbench:exit=bench_work%return && perf record -e 'bfbench:*' -o FILE -- $bin $calls $n; perf probe -d 'bfbench:*'"
	perf probe -q -d 'bfbench:*' >/dev/null 2>&1
	if ! perf probe -x "$bin" -a bfbench:entry=bench_work -a bfbench:exit=bench_work%return >"$tmp/err" 2>&1; then
		sed 's/^/# perf probe: /' "$tmp/err" | tail -n 5
		res "$id" ns= seen=probe-failed expect=-
		return
	fi
	# perf names the return event exit__return: take the whole group
	timeout "$tool_timeout" perf record -e 'bfbench:*' -o "$tmp/perf.data" \
		-- "$bin" "$calls" "$n" >"$tmp/out" 2>&1
	samples=$(sed -n 's/.*(\([0-9]*\) samples).*/\1/p' "$tmp/out" | tail -n 1)
	grep -q '^total ' "$tmp/out" || sed 's/^/# perf: /' "$tmp/out" | tail -n 5
	perf probe -q -d 'bfbench:*' >/dev/null 2>&1
	rm -f "$tmp/perf.data"
	res "$id" ns="$(loop_field "$tmp/out" ns_per_call)" seen="${samples:-?}" \
		expect="$((2 * (calls + warmup) * n))"
}

# ---------------------------------------------------------------- size
# First, with bench-ringsize reading the rings (it keeps the raw bytes,
# which the collector does not): bytes per traced call, by record kind, at
# the default time unit and, to show what the timestamps cost, at coarser
# ones.
insmod "$bft_ko" || { echo "guest-bench: insmod bftrace.ko failed" >&2; exit 1; }
size_run() { # id time_res_ns
	local id=$1 tres=$2 s0 s1 rs_pid bytes prod
	"$bfctl" set time_res_ns "$tres" >/dev/null
	"$ringsize" >"$tmp/size" 2>&1 &
	rs_pid=$!
	for _ in $(seq 50); do grep -q '^ready' "$tmp/size" && break; sleep 0.1; done
	cmd "$id" "$bfctl set time_res_ns $tres; $ringsize & $bfctl run -p 'bench-loop-plain:bench_work' -- $plain $calls 1; kill -INT \$!; $bfctl stop"
	s0=$(ring_counters)
	timeout "$tool_timeout" "$bfctl" run -p 'bench-loop-plain:bench_work' -- "$plain" "$calls" 1 >"$tmp/out" 2>"$tmp/err"
	s1=$(ring_counters)
	sleep 0.3
	kill -INT "$rs_pid"
	wait "$rs_pid"
	"$bfctl" stop >/dev/null
	sed 's/^/# ringsize: /' "$tmp/size"
	bytes=$(($(stat_sum "$s1" bytes_written) - $(stat_sum "$s0" bytes_written)))
	prod=$(($(stat_sum "$s1" produced) - $(stat_sum "$s0" produced)))
	res "$id" bytes="$bytes" seen="$prod" expect="$((2 * (calls + warmup)))" \
		calls="$((calls + warmup))" ns="$(loop_field "$tmp/out" ns_per_call)" time_res_ns="$tres" \
		kinds="$(grep '^kind=' "$tmp/size" | sed 's/^kind=\([^ ]*\) records=\([0-9]*\) bytes=\([0-9]*\)/\1:\2:\3/' | paste -sd, -)"
}
def_res=$("$bfctl" get time_res_ns | awk '$1 == "time_res_ns" { print $2 }')
info time_res_ns_default "$def_res"
size_run size "${def_res:-1000}"
size_run size.res8000 8000
size_run size.res64000 64000
"$bfctl" set time_res_ns "${def_res:-1000}" >/dev/null

# ---------------------------------------------------------------- no reader
# bftrace with nothing reading the rings: the kernel side alone, without
# the collector's share of the CPUs.  A ring (1 MiB by default) holds one
# run; bench-ringsize empties them after each.
for rep in $(seq "$reps"); do
	id=plain.bftrace_noreader
	cmd "$id" "$bfctl run -p 'bench-loop-plain:bench_work' -- $plain $calls 1  (bftrace.ko loaded, nothing reading the rings)"
	s0=$(ring_counters)
	timeout "$tool_timeout" "$bfctl" run -p 'bench-loop-plain:bench_work' -- "$plain" "$calls" 1 >"$tmp/out" 2>"$tmp/err"
	s1=$(ring_counters)
	"$ringsize" >/dev/null 2>&1 &
	rs_pid=$!
	sleep 1
	kill -INT "$rs_pid"
	wait "$rs_pid"
	"$bfctl" stop >/dev/null
	res "$id" ns="$(loop_field "$tmp/out" ns_per_call)" \
		seen="$(($(stat_sum "$s1" produced) - $(stat_sum "$s0" produced)))" \
		expect="$((2 * (calls + warmup)))" \
		lost="$(($(stat_sum "$s1" lost) - $(stat_sum "$s0" lost)))"
done

# ---------------------------------------------------------------- per call
# With no HQ to wait for, the collector starts tracing at once.
wait_tracing() {
	for _ in $(seq 50); do
		[[ $("$bfctl" status 2>/dev/null | awk '$1 == "mode" { print $2 }') == tracing ]] && break
		sleep 0.1
	done
}
mkdir -p "$tmp/flow"
"$bfcoll" -o "$tmp/flow" >"$tmp/coll.log" 2>&1 &
coll_pid=$!
wait_tracing
info collector "$bfcoll -o DIR (pid $coll_pid)"

for rep in $(seq "$reps"); do
	echo "# repetition $rep of $reps"
	untraced plain.untraced "$plain" 1
	floor plain.floor "$plain" "$off_plain" 1
	bftrace plain.bftrace "$plain" 1
	bpftrace_run plain.bpftrace "$plain" 1
	perf_run plain.perf "$plain" 1

	untraced cet.untraced "$cet" 1
	floor cet.floor_func "$cet" "$off_cet" 1
	floor cet.floor_func4 "$cet" "$((off_cet + 4))" 1
	bftrace cet.bftrace_func "$cet" 1 --no-endbr
	bftrace cet.bftrace_func4 "$cet" 1
	bpftrace_run cet.bpftrace "$cet" 1

	untraced scale.untraced.2 "$plain" 2
	floor scale.floor.2 "$plain" "$off_plain" 2
	bftrace scale.bftrace.2 "$plain" 2
done

# ---------------------------------------------------------------- throws
# A C++ throw through DEPTH frames of bt_frame, caught in main: untraced,
# then with entry and return probes on bt_frame (bfctl adds the exception
# hooks).  caught= says every throw came back to main: the target lived.
throws=$((calls / 25 > 0 ? calls / 25 : 1))
throw_run() { # id depth traced(0|1)
	local id=$1 depth=$2 traced=$3 s0 s1
	local -a run=()
	((traced)) && run=("$bfctl" run -p 'bench-throw:bt_frame' --)
	cmd "$id" "${run[*]}${run:+ }$throw $throws $depth"
	s0=$(ring_counters)
	timeout "$tool_timeout" "${run[@]}" "$throw" "$throws" "$depth" >"$tmp/out" 2>"$tmp/err"
	s1=$(ring_counters)
	[[ -s $tmp/out ]] || sed 's/^/# bench-throw: /' "$tmp/err"
	res "$id" ns="$(loop_field "$tmp/out" ns_per_throw)" \
		seen="$(loop_field "$tmp/out" caught)" expect="$throws" \
		lost="$(($(stat_sum "$s1" lost) - $(stat_sum "$s0" lost)))"
}
for rep in $(seq "$reps"); do
	for depth in 1 10; do
		throw_run "throw.untraced.$depth" "$depth" 0
		throw_run "throw.bftrace.$depth" "$depth" 1
	done
done

# ---------------------------------------------------------------- loss
# Two threads (one per CPU), paced at a rising rate until flat out; the
# collector drains with the default buffer size and flush interval.
# Flat out, the run lasts about 3 s (sized from the two-thread per-call
# figure above), so that the collector's CPU time, counted in clock ticks
# over the whole bfctl run, is dominated by the recording itself.
per2=$(sed -n 's/^@res scale.bftrace.2 ns=\([0-9]*\).*/\1/p' "$tmp/results" | sort -n | head -n 1)
flat=$((3000000000 / ${per2:-10000}))
((flat < calls)) && flat=$calls
((flat > 2000000)) && flat=2000000
paced() { # id rate calls: two threads at rate calls/s each (0: flat out)
	local id=$1 rate=$2 n=$3 s0 s1 t0 t1 w0 w1
	cmd "$id" "$bfctl run -p 'bench-loop-plain:bench_work' -- $plain $n 2 $rate  ($setup, draining)"
	s0=$(ring_counters)
	w0=$(date +%s%N)
	t0=$(cpu_ticks "$coll_pid")
	timeout "$tool_timeout" "$bfctl" run -p 'bench-loop-plain:bench_work' -- "$plain" "$n" 2 "$rate" >"$tmp/out" 2>"$tmp/err"
	t1=$(cpu_ticks "$coll_pid")
	w1=$(date +%s%N)
	s1=$(ring_counters)
	res "$id" rate="$rate" calls_per_s="$(loop_field "$tmp/out" calls_per_s)" \
		elapsed_ns="$(loop_field "$tmp/out" elapsed_ns)" \
		seen="$(($(stat_sum "$s1" produced) - $(stat_sum "$s0" produced)))" \
		expect="$((2 * (n + warmup) * 2))" \
		lost="$(($(stat_sum "$s1" lost) - $(stat_sum "$s0" lost)))" \
		coll_ticks="$((t1 - t0))" wall_ns="$((w1 - w0))" tick="$tick"
}
for rate in 2000 5000 10000 20000 50000 80000 0; do
	# about 1.5 s per paced step
	n=$flat
	((rate)) && n=$((rate * 3 / 2))
	paced "loss.$rate" "$rate" "$n"
done

# ---------------------------------------------------------------- profile
# Where the time of a traced call goes, floor against bftrace: cpu-clock
# samples (TCG has no PMU) over one run of each, system-wide, reported for
# the traced program's thread only (its comm, cut to 15 characters), as a
# share of that thread's samples.
profile() { # id command...
	local id=$1
	shift
	cmd "prof.$id" "perf record -e cpu-clock -a -o FILE -- $*; perf report --comms bench-loop-plai --percentage relative --no-children --sort sym"
	if ! timeout "$tool_timeout" perf record -q -e cpu-clock -a -o "$tmp/prof.data" -- "$@" >"$tmp/out" 2>&1; then
		sed 's/^/# perf record: /' "$tmp/out" | tail -n 5
		return
	fi
	res "prof.$id" ns="$(loop_field "$tmp/out" ns_per_call)"
	perf report -i "$tmp/prof.data" --comms bench-loop-plai --percentage relative \
		--no-children --sort sym --stdio 2>/dev/null |
		awk -v id="$id" '/^ +[0-9.]+%/ { pct = $1; $1 = ""; sub(/^ +/, ""); print "@prof " id " " pct " " $0 }' |
		head -n 30
	rm -f "$tmp/prof.data"
}
if insmod "$floor_ko" path="$plain" offset="$off_plain"; then
	profile floor "$plain" "$((calls * 4))" 1
	rmmod bft_floor
fi
profile bftrace "$bfctl" run -p 'bench-loop-plain:bench_work' -- "$plain" "$((calls * 4))" 1

# ---------------------------------------------------------------- end
kill -INT "$coll_pid"
wait "$coll_pid"
sed 's/^/# collector: /' "$tmp/coll.log" | tail -n 3
res collector_exit lost_line="$(grep -c 'lost' "$tmp/coll.log")" \
	summary="$(tail -n 1 "$tmp/coll.log" | tr ' ' '_')"
"$bfctl" stop >/dev/null 2>&1
rmmod bftrace || echo "guest-bench: rmmod bftrace failed" >&2

# ---------------------------------------------------------------- BPF backend
# The same runs through the BPF backend (docs/bpf-backend.md) in this boot,
# beside the module's figures above: per call against the floor, the module
# and bpftrace; ring bytes per call; the collector's CPU flat out.  One link
# per function on 6.1, uprobe_multi links on 6.6 and later.
bpf_bench() {
	local why
	export BFT_BACKEND=bpf BFT_BPF_PIN_DIR=/sys/fs/bpf/bftrace-bench
	mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
	rm -rf "$BFT_BPF_PIN_DIR"
	if ! why=$("$bfctl" caps 2>&1 >/dev/null); then
		info bpf_skip "${why:-the BPF backend cannot run here}"
		return
	fi
	setup="BFT_BACKEND=bpf, $bfcoll --backend bpf -o DIR running"
	mkdir -p "$tmp/bflow"
	"$bfcoll" --backend bpf -o "$tmp/bflow" >"$tmp/bcoll.log" 2>&1 &
	coll_pid=$!
	wait_tracing
	info bpf_links "$("$bfctl" -vv status 2>&1 >/dev/null |
		sed -n 's/^bfctl: connected: .*(\(.*\))$/\1/p')"
	for rep in $(seq "$reps"); do
		echo "# BPF backend: repetition $rep of $reps"
		bftrace plain.bpf "$plain" 1
		bftrace cet.bpf_func4 "$cet" 1
	done
	paced bpf.flat 0 "$flat"
	kill -INT "$coll_pid"
	wait "$coll_pid"
	sed 's/^/# BPF collector: /' "$tmp/bcoll.log" | tail -n 3
	"$bfctl" stop >/dev/null 2>&1
	rm -rf "$BFT_BPF_PIN_DIR"
	unset BFT_BACKEND BFT_BPF_PIN_DIR
}
bpf_bench
# a real library: libsqlite3's API under the module and bpftrace (a small
# workload: single-stepped probes cost tens of microseconds under TCG)
"$root/bench/sqlite-api.sh" "$kver" 500 5 3
# the counters agent at 10 Hz with 1000 probes (loads the module again)
"$root/bench/guest-counters.sh" "$kver"
# a USDT marker under the module, the BPF backend and bpftrace (few hits:
# a trap costs tens of microseconds under TCG)
if insmod "$bft_ko"; then
	"$root/bench/usdt-cost.sh" "$kver" 5000 3 "kmod bpf"
	rmmod bftrace || echo "guest-bench: rmmod bftrace failed" >&2
else
	echo "guest-bench: insmod bftrace.ko for the USDT figures failed" >&2
fi
rm -rf "$tmp"
echo "# guest-bench: done"
