#!/usr/bin/env bash
# The BPF backend on the build machine itself (no guest: traps are not
# emulated here, so the absolute figures mean something): what a traced call
# costs next to the untraced loop, the bare trap (the floor: empty uprobe and
# uretprobe programs, bench/tools/bench_bpffloor.c) and bpftrace with empty
# and with counting actions, and the floor again on uprobe_multi links, the
# kind bftrace makes on Linux 6.6+ (the floor and bpftrace 0.17 make
# perf-event links, which cost more); how many ring bytes a call takes, and the
# collector's CPU time at that rate (from the run's start to its drain;
# its one-time start-up, making the session, apart).  A benchmark, not a test.
#
#   bench/bpf-native.sh [CALLS] [REPS]      (root; after make -C user)
#
# Prints "@cmd ID COMMAND" and "@res bpf_native key=value ..." lines (the
# format of build/bench/native.txt).  Each figure is the median of REPS
# runs, the tracers interleaved within a repetition (each run's figure is
# there too, reps_*, for ratios within a repetition), one thread pinned to
# CPU 0, bfcollector (writing .flow files) on CPU 1.  On the CET build
# bftrace and its floor probe func+4 (past endbr64); bpftrace 0.17 probes
# only func there (it refuses an offset), which single-steps endbr64 at
# tens of microseconds a call, so its rows and the floor at func, their
# like-for-like floor, run CALLS/10 calls.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$root"
calls=${1:-2000000}
reps=${2:-5}
out=build/bench/bpf
mkdir -p "$out"
export BFT_BPF_PIN_DIR=/sys/fs/bpf/bftrace-bench
bfctl=build/user/bfctl
coll=build/user/bfcollector

# Not next to a TCG guest eating a core: take the guests' lock, as
# scripts/bench does (BFT_BENCH_LOCK=0 when the caller holds it already).
if [[ ${BFT_BENCH_LOCK:-1} == 1 ]]; then
	exec 8>/tmp/bftrace-guest.lock
	flock 8
fi

why=$($bfctl --backend bpf caps 2>&1 >/dev/null) || {
	echo "@skip bpf_native ${why:-the BPF backend cannot run here}"
	exit 0
}

# The collector's CPU time so far in ns, all its threads (schedstat: ns,
# where /proc/PID/stat counts 10 ms ticks).
cpu_ns() {
	if [[ -r /proc/$1/schedstat ]]; then
		cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%d", s }'
	else
		awk -v hz="$(getconf CLK_TCK)" '{ printf "%d", ($14 + $15) * 1e9 / hz }' "/proc/$1/stat"
	fi
}
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ns_of() { sed -n 's/^total .*ns_per_call=\([0-9.]*\).*/\1/p'; }
warmup=200	# bench-loop's untimed calls, which the probes see too

# The floor: empty programs, loaded by a tiny libbpf loader (scripts/bench
# builds both; built here too when run alone).
floor=build/bench/bench-bpffloor
floor_obj=build/bench/bench_floor.bpf.o
if [[ ! -x $floor || ! -s $floor_obj || bench/tools/bench_bpffloor.c -nt $floor ||
	bench/tools/bench_floor.bpf.c -nt $floor_obj ]]; then
	bash bench/build-bpffloor.sh
fi
have_bpftrace=0
command -v bpftrace >/dev/null && have_bpftrace=1

for build in plain cet; do
	bin=$root/$out/bench-loop-$build
	cf=none
	[[ $build == cet ]] && cf=full
	gcc -std=c11 -O2 -Wall -Wextra -Werror -pthread -fcf-protection=$cf \
		-o "$bin" bench/targets/bench_loop.c
	site=bench_work at=func
	[[ $build == cet ]] && site=bench_work+4 at=func+4
	# single-stepped sites (bpftrace on the CET build) run fewer calls
	sscalls=$calls
	[[ $build == cet ]] && sscalls=$(((calls + 9) / 10))
	id=bpf_native.$build
	echo "@cmd $id.untraced taskset -c 0 $bin $calls 1"
	echo "@cmd $id.floor taskset -c 0 $floor $floor_obj $bin:$site -- $bin $calls 1"
	echo "@cmd $id.bpf taskset -c 1 $coll --backend bpf -o DIR & taskset -c 0 $bfctl --backend bpf run -p bench_work -- $bin $calls 1"
	empty="uprobe:$bin:bench_work {} uretprobe:$bin:bench_work {}"
	counting="uprobe:$bin:bench_work { @e = count(); } uretprobe:$bin:bench_work { @x = count(); }"
	if ((have_bpftrace)); then
		echo "@cmd $id.bpftrace_empty taskset -c 0 bpftrace -e '$empty' -c '$bin $sscalls 1'"
		echo "@cmd $id.bpftrace taskset -c 0 bpftrace -e '$counting' -c '$bin $sscalls 1'"
	fi
	[[ $build == cet ]] &&
		echo "@cmd $id.floor_func taskset -c 0 $floor $floor_obj $bin:bench_work -- $bin $sscalls 1"
	# uprobe_multi links, where the kernel has them (6.6+)
	fmc=$(taskset -c 0 "$floor" -c -m "$floor_obj" "$bin:$site" -- "$bin" 1000 1 2>/dev/null |
		sed -n 's/^floor probes=1 entries=\([0-9]*\) returns=\([0-9]*\)$/\1\/\2/p') || true
	multi=0
	if [[ $fmc == "$((1000 + warmup))/$((1000 + warmup))" ]]; then
		multi=1
		echo "@cmd $id.floor_multi taskset -c 0 $floor -m $floor_obj $bin:$site -- $bin $calls 1"
	fi

	# The floor's probes must see every call: count them once, with the
	# kernel's run statistics on (not timed: they add clock reads).
	fc=$(taskset -c 0 "$floor" -c "$floor_obj" "$bin:$site" -- "$bin" "$sscalls" 1 |
		sed -n 's/^floor probes=1 entries=\([0-9]*\) returns=\([0-9]*\)$/\1\/\2/p')

	base=() fl=() flm=() flf=() traced=() bt=() bte=() bytes=() ccpu=() cpct=() cstart=() seen=() lost=()
	for _ in $(seq "$reps"); do
		base+=("$(taskset -c 0 "$bin" "$calls" 1 | ns_of)")
		fl+=("$(taskset -c 0 "$floor" "$floor_obj" "$bin:$site" -- "$bin" "$calls" 1 | ns_of)")
		((multi)) &&
			flm+=("$(taskset -c 0 "$floor" -m "$floor_obj" "$bin:$site" -- "$bin" "$calls" 1 | ns_of)")
		[[ $build == cet ]] &&
			flf+=("$(taskset -c 0 "$floor" "$floor_obj" "$bin:bench_work" -- "$bin" "$sscalls" 1 | ns_of)")

		rm -rf "$out/flow" && mkdir -p "$out/flow"
		taskset -c 1 "$coll" --backend bpf -o "$out/flow" >"$out/collector.log" 2>&1 &
		cpid=$!
		# Its start-up (making the session: loading and verifying the
		# programs, about 0.2 s of CPU) is paid once, not per event:
		# counted apart from the rate's figure.
		for _ in $(seq 50); do
			[[ -e $BFT_BPF_PIN_DIR/ctl ]] && break
			sleep 0.1
		done
		sleep 0.3
		c0=$(cpu_ns "$cpid")
		w0=$(date +%s%N)
		taskset -c 0 "$bfctl" --backend bpf run -p bench_work -- "$bin" "$calls" 1 >"$out/run.out"
		w1=$(date +%s%N)
		traced+=("$(ns_of <"$out/run.out")")
		read -r b p l < <($bfctl --backend bpf --json status | python3 -c '
import json, sys
st = json.load(sys.stdin)
print(*(sum(c[k] for c in st["cpus"]) for k in ("bytes_written", "produced", "lost")))')
		bytes+=("$(awk -v b="$b" -v n="$calls" 'BEGIN { printf "%.2f", b / n }')")
		seen+=("$p") lost+=("$l")
		$bfctl --backend bpf stop >/dev/null
		sleep 0.5	# the collector drains what is left
		c2=$(cpu_ns "$cpid")
		cstart+=("$(awk -v c="$c0" 'BEGIN { printf "%.3f", c / 1e9 }')")
		ccpu+=("$(awk -v c="$c2" -v s="$c0" 'BEGIN { printf "%.3f", (c - s) / 1e9 }')")
		# its CPU time from the run's start until it drained, against
		# the run's wall time: the collector at the rate of one thread
		# calling flat out
		cpct+=("$(awk -v c="${ccpu[-1]}" -v w="$((w1 - w0))" 'BEGIN { printf "%.1f", 100 * c / (w / 1e9) }')")
		kill -INT "$cpid"
		wait "$cpid" || true
		rm -rf "$BFT_BPF_PIN_DIR"

		if ((have_bpftrace)); then
			bte+=("$(taskset -c 0 bpftrace -q -e "$empty" -c "$bin $sscalls 1" 2>/dev/null | ns_of)")
			bt+=("$(taskset -c 0 bpftrace -q -e "$counting" -c "$bin $sscalls 1" 2>/dev/null | ns_of)")
		fi
	done
	med() { printf '%s\n' "$@" | median; }
	minus() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "") print ""; else printf "%.1f", a - b }'; }
	b0=$(med "${base[@]}")
	f=$(med "${fl[@]}")
	t=$(med "${traced[@]}")
	line="@res bpf_native build=$build calls=$calls untraced_ns=$b0 floor_ns=$f floor_at=$at"
	line+=" floor_cost_ns=$(minus "$f" "$b0") floor_seen=${fc:-none} floor_expect=$((sscalls + warmup))"
	line+=" bpf_ns=$t bpf_cost_ns=$(minus "$t" "$b0") bpf_at=$at"
	line+=" bpf_seen=$(med "${seen[@]}") bpf_expect=$((2 * (calls + warmup))) bpf_lost=$(med "${lost[@]}")"
	line+=" bytes_per_call=$(med "${bytes[@]}") collector_cpu_s=$(med "${ccpu[@]}")"
	line+=" collector_cpu_pct=$(med "${cpct[@]}") collector_start_cpu_s=$(med "${cstart[@]}")"
	# each repetition's runs too, in order, "" where a run failed: the
	# report takes ratios within a repetition (bench/report.py)
	reps() { local IFS=,; echo "$*"; }
	line+=" reps_untraced=$(reps "${base[@]}") reps_floor=$(reps "${fl[@]}") reps_bpf=$(reps "${traced[@]}")"
	((${#flm[@]})) && line+=" reps_floor_multi=$(reps "${flm[@]}")"
	((${#flf[@]})) && line+=" reps_floor_func=$(reps "${flf[@]}")"
	((${#bte[@]})) && line+=" reps_bpftrace_empty=$(reps "${bte[@]}") reps_bpftrace=$(reps "${bt[@]}")"
	if ((${#flm[@]})); then
		fm=$(med "${flm[@]}")
		line+=" floor_multi_ns=$fm floor_multi_cost_ns=$(minus "$fm" "$b0") floor_multi_seen=$fmc"
	fi
	if ((${#flf[@]})); then
		ff=$(med "${flf[@]}")
		line+=" floor_func_ns=$ff floor_func_cost_ns=$(minus "$ff" "$b0")"
	fi
	if ((${#bt[@]})); then
		bb=$(med "${bt[@]}") be=$(med "${bte[@]}")
		line+=" bpftrace_calls=$sscalls bpftrace_at=func"
		line+=" bpftrace_empty_ns=$be bpftrace_empty_cost_ns=$(minus "$be" "$b0")"
		line+=" bpftrace_ns=$bb bpftrace_cost_ns=$(minus "$bb" "$b0")"
	fi
	echo "$line"
done
