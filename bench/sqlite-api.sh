#!/usr/bin/env bash
# A real library: what a traced call of libsqlite3's API costs under
# bftrace and under bpftrace (empty actions, then counting ones), over the
# fixed SQL workload of bench/targets/bench_sqlite.c, the same probes for
# both tools: entry and return of every sqlite3_* function the workload
# calls.  The library also calls some of them itself, so the calls traced
# are what the probes count (bpftrace's per-function counts; natively also
# the empty floor programs' run counts, bench-bpffloor -c), and bftrace's
# events must be twice that.  bftrace runs twice: with its probes where
# bfctl places them (off single-step where it can, bfctl(8) "Probes"), and
# with --at-entry, on each function's first byte as bpftrace's are.  Each
# run does the workload ROUNDS times and reports its median round, so the
# process's start and the first round's cold caches (under TCG, the code
# the emulator translates first) stay out; each repetition runs the
# untraced workload next to the traced ones.  A benchmark, not a test.
#
#   bench/sqlite-api.sh native ROWS ROUNDS REPS   (the BPF backend, this machine)
#   bench/sqlite-api.sh KVER ROWS ROUNDS REPS     (bftrace.ko, inside a guest)
#
# Prints "@cmd ID COMMAND", "@res sqlite.WHERE key=value" (one per
# repetition; times are the median round's ns, hits the calls bpftrace
# counted over all rounds) and
# "@res sqlite_fn.WHERE name=F class=C hits=N" (natively, the class from
# bench/singlestep-share.py).  Root; scripts/bench builds
# build/bench/bench-sqlite first.  No process substitution: the guests
# have no /dev/fd.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$root" || exit 1
(($# == 4)) || { echo "usage: bench/sqlite-api.sh native|KVER ROWS ROUNDS REPS" >&2; exit 2; }
where=$1 rows=$2 rounds=$3 reps=$4
work=("$rows" "$rounds")
bin=$root/build/bench/bench-sqlite
bfctl=$root/build/user/bfctl
coll=$root/build/user/bfcollector
lib=$(readlink -f /usr/lib/x86_64-linux-gnu/libsqlite3.so.0)
# what bench_sqlite.c calls, nothing else
funcs=(sqlite3_open sqlite3_exec sqlite3_prepare_v2 sqlite3_bind_int sqlite3_bind_text
	sqlite3_step sqlite3_reset sqlite3_finalize sqlite3_column_int sqlite3_column_text
	sqlite3_close)
tool_timeout=120
tmp=$(mktemp -d /tmp/bfsqlite.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for f in "$bin" "$bfctl" "$coll" "$lib"; do
	[[ -e $f ]] || { echo "sqlite-api: $f missing" >&2; exit 1; }
done

pats=() ent=() ret=() specs=()
for f in "${funcs[@]}"; do
	pats+=(-p "libsqlite3.so*:$f")
	ent+=("uprobe:$lib:$f") ret+=("uretprobe:$lib:$f") specs+=("$lib:$f")
done
ents=$(IFS=,; echo "${ent[*]}")
rets=$(IFS=,; echo "${ret[*]}")
empty="$ents {} $rets {}"
counting="$ents { @calls[probe] = count(); } $rets { @returns = count(); }"

field() { sed -n "s/^total .*\b$1=\([0-9]*\).*/\1/p" "$2" | tail -n 1; }
ring_counters() { "$bfctl" status 2>/dev/null | awk '$1 == "all" { print $2, $4 }'; }

if [[ $where == native ]]; then
	export BFT_BACKEND=bpf BFT_BPF_PIN_DIR=/sys/fs/bpf/bftrace-bench-sqlite
	mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
	rm -rf "$BFT_BPF_PIN_DIR"
	setup="BFT_BACKEND=bpf, $coll -o DIR running"
else
	ko=$root/build/kmod-$where/bftrace.ko
	insmod "$ko" || { echo "sqlite-api: insmod $ko failed" >&2; exit 1; }
	setup="bftrace.ko loaded, $coll -o DIR running"
fi
mkdir -p "$tmp/flow"
"$coll" -o "$tmp/flow" >"$tmp/coll.log" 2>&1 &
cpid=$!
for _ in $(seq 50); do
	[[ $("$bfctl" status 2>/dev/null | awk '$1 == "mode" { print $2 }') == tracing ]] && break
	sleep 0.1
done

id=sqlite.$where
echo "@info sqlite_lib $lib"
echo "@info sqlite_funcs ${funcs[*]}"
echo "@cmd $id.untraced $bin ${work[*]}"
echo "@cmd $id.bftrace $bfctl run ${pats[*]} -- $bin ${work[*]}  ($setup)"
echo "@cmd $id.bftrace_at_entry $bfctl run --at-entry ${pats[*]} -- $bin ${work[*]}  ($setup)"
echo "@cmd $id.bpftrace_empty bpftrace -e '$empty' -c '$bin ${work[*]}'"
echo "@cmd $id.bpftrace bpftrace -e '$counting' -c '$bin ${work[*]}'"
floor=$root/build/bench/bench-bpffloor
floor_obj=$root/build/bench/bench_floor.bpf.o
fhits=
if [[ $where == native && -x $floor ]]; then
	echo "@cmd $id.floor_count $floor -c $floor_obj ${specs[*]} -- $bin ${work[*]}"
	fhits=$(timeout "$tool_timeout" "$floor" -c "$floor_obj" "${specs[@]}" -- "$bin" "${work[@]}" |
		sed -n 's/^floor .* entries=\([0-9]*\) returns=\([0-9]*\)$/\1\/\2/p')
fi

for rep in $(seq "$reps"); do
	timeout "$tool_timeout" "$bin" "${work[@]}" >"$tmp/u" 2>&1
	read -r p0 l0 <<<"$(ring_counters)"
	timeout "$tool_timeout" "$bfctl" run "${pats[@]}" -- "$bin" "${work[@]}" >"$tmp/b" 2>"$tmp/berr"
	read -r p1 l1 <<<"$(ring_counters)"
	[[ -n $(field round_ns "$tmp/b") ]] || sed 's/^/# bfctl: /' "$tmp/berr" | tail -n 5
	timeout "$tool_timeout" "$bfctl" run --at-entry "${pats[@]}" -- "$bin" "${work[@]}" >"$tmp/a" 2>"$tmp/aerr"
	read -r p2 l2 <<<"$(ring_counters)"
	[[ -n $(field round_ns "$tmp/a") ]] || sed 's/^/# bfctl --at-entry: /' "$tmp/aerr" | tail -n 5
	timeout "$tool_timeout" bpftrace -q -e "$empty" -c "$bin ${work[*]}" >"$tmp/e" 2>"$tmp/eerr"
	[[ -n $(field round_ns "$tmp/e") ]] || sed 's/^/# bpftrace: /' "$tmp/eerr" | tail -n 5
	# Counting, natively in every repetition; in a guest, where each
	# bpftrace start takes seconds, once: the workload is fixed, so its
	# count holds for the other repetitions.
	: >"$tmp/c"
	if [[ $where == native ]] || ((rep == 1)); then
		timeout "$tool_timeout" bpftrace -q -e "$counting" -c "$bin ${work[*]}" >"$tmp/c" 2>"$tmp/cerr"
		[[ -n $(field round_ns "$tmp/c") ]] || sed 's/^/# bpftrace: /' "$tmp/cerr" | tail -n 5
		# @calls[uprobe:LIB:F]: N, one line per function
		sed -n 's/^@calls\[uprobe:.*:\(sqlite3_[a-z0-9_]*\)\]: \([0-9]*\)$/\1 \2/p' "$tmp/c" >"$tmp/hits"
		hits=$(awk '{ s += $2 } END { print s + 0 }' "$tmp/hits")
		returns=$(sed -n 's/^@returns: \([0-9]*\)$/\1/p' "$tmp/c")
	fi
	echo "@res $id rep=$rep rows=$rows rounds=$rounds api_calls=$(field api_calls "$tmp/u")" \
		"untraced_ns=$(field round_ns "$tmp/u") bftrace_ns=$(field round_ns "$tmp/b")" \
		"bftrace_at_entry_ns=$(field round_ns "$tmp/a")" \
		"bpftrace_empty_ns=$(field round_ns "$tmp/e") bpftrace_ns=$(field round_ns "$tmp/c")" \
		"hits=$hits returns=$returns" \
		"bftrace_seen=$((${p1:-0} - ${p0:-0})) bftrace_lost=$((${l1:-0} - ${l0:-0}))" \
		"bftrace_at_entry_seen=$((${p2:-0} - ${p1:-0})) bftrace_at_entry_lost=$((${l2:-0} - ${l1:-0}))" \
		"floor_seen=${fhits:--} probes=${#funcs[@]}"
done

kill -INT "$cpid"
wait "$cpid"
sed 's/^/# collector: /' "$tmp/coll.log" | tail -n 2
"$bfctl" stop >/dev/null 2>&1
if [[ $where == native ]]; then
	rm -rf "$BFT_BPF_PIN_DIR"
	# which probes uprobes single-step, weighed by the calls they took
	only=$(IFS=,; echo "${funcs[*]}")
	echo "@cmd $id.classes python3 bench/singlestep-share.py --only $only $lib"
	python3 bench/singlestep-share.py --only "$only" "$lib" >"$tmp/cls" || true
	while read -r _ name class; do
		echo "@res sqlite_fn.$where name=$name class=$class hits=$(awk -v n="$name" '$1 == n { print $2 }' "$tmp/hits")"
	done <<<"$(grep "^@fn " "$tmp/cls")"
	grep '^@res singlestep' "$tmp/cls" | sed "s/^@res singlestep /@res sqlite_share.$where /"
	python3 bench/singlestep-share.py "$lib" | grep '^@res singlestep' |
		sed "s/^@res singlestep /@res sqlite_share_all.$where /"
else
	rmmod bftrace || echo "sqlite-api: rmmod bftrace failed" >&2
fi
