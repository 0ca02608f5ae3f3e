#!/usr/bin/env bash
# The inline backend (docs/inline-probes.md) on the build machine, side by
# side in one run with what it must beat: per traced call of bench_work
# (bench/targets/bench_loop.c), plain and CET builds, against the untraced
# loop, the bare trap (empty uprobe + uretprobe programs: the BPF floor,
# bench/tools/bench_bpffloor.c), bpftrace's empty probes on the same
# function, uftrace on a -pg build of the same loop (its bench_work calls
# mcount as gcc -pg compiles it), and the BPF backend.  Then the parts of an
# inline call: the vDSO clock read alone and the physical floor, two clock
# reads and the bytes stored (bench/targets/bench_clock.c); the patched
# function with the session INITIALIZING (the stub and the mode check, no
# record); entries only against entry and return.  Then libsqlite3's API
# (bench/targets/bench_sqlite.c, the workload of bench/sqlite-api.sh) under
# the inline backend, bpftrace's empty probes and the BPF backend.  A
# benchmark, not a test.
#
#   bench/inline-native.sh [CALLS] [REPS]     (root; after make -C user)
#
# Prints "@cmd ID COMMAND" and "@res inline_native ..." / "@res
# inline_sqlite ..." lines, as bench/bpf-native.sh does: each figure is the
# median of REPS runs, every tracer run once in each repetition (reps_*
# keep each run's figure).  The loop's thread runs on CPU 0 (bench-loop pins
# it), bfcollector and uftrace's own threads on CPU 1.  The inline backend
# is attached through its ops table (build/bench/bench-inline) to the
# running target, which waits for a file (BENCH_GO) before its first call
# and for another (BENCH_END) after printing, so its ring counters are read
# while it lives.  Every run that uses BPF holds /tmp/bft-native-bpf.lock.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$root"
calls=${1:-2000000}
reps=${2:-5}
out=build/bench/inline
mkdir -p "$out"
bfctl=$root/build/user/bfctl
coll=$root/build/user/bfcollector
inl=$root/build/bench/bench-inline
clk=$root/build/bench/bench-clock
floor=$root/build/bench/bench-bpffloor
floor_obj=$root/build/bench/bench_floor.bpf.o
lock=/tmp/bft-native-bpf.lock
warmup=200
tmp=$(mktemp -d /tmp/bfinline-bench.XXXXXX)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	rm -rf "$tmp"
	return 0
}
trap cleanup EXIT

# Not next to a TCG guest eating a core: take the guests' lock, as
# scripts/bench does (BFT_BENCH_LOCK=0 when the caller holds it already).
if [[ ${BFT_BENCH_LOCK:-1} == 1 ]]; then
	exec 8>/tmp/bftrace-guest.lock
	flock 8
fi

# ------------------------------------------------------------------ build
read -r -a libs <<<"$(pkg-config --libs libmnl libelf libdw libbpf jansson capstone libpcre2-8 libcap-ng)"
gcc -std=c11 -D_GNU_SOURCE= -O2 -g -Wall -Wextra -Werror -Iinclude/uapi -Iinclude -Iuser/lib \
	-o "$inl" bench/tools/bench_inline.c build/user/libbftrace.a -Wl,--as-needed "${libs[@]}" -liberty
gcc -std=c11 -O2 -Wall -Wextra -Werror -o "$clk" bench/targets/bench_clock.c
gcc -std=c11 -O2 -Wall -Wextra -Werror -o build/bench/bench-sqlite bench/targets/bench_sqlite.c -lsqlite3
if [[ ! -x $floor || ! -s $floor_obj || bench/tools/bench_bpffloor.c -nt $floor ]]; then
	bash bench/build-bpffloor.sh
fi
have_bpftrace=0 have_uftrace=0 have_bpf=1
command -v bpftrace >/dev/null && have_bpftrace=1
command -v uftrace >/dev/null && have_uftrace=1
why=$($bfctl --backend bpf caps 2>&1 >/dev/null) || { have_bpf=0; echo "@info inline_native_no_bpf ${why:-BPF backend unavailable}"; }

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }
med() { printf '%s\n' "$@" | grep -v '^$' | median; }
minus() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "") print ""; else printf "%.1f", a - b }'; }
ns_of() { sed -n 's/^total .*ns_per_call=\([0-9.]*\).*/\1/p' | tail -n 1; }
joined() { local IFS=,; echo "$*"; }

# A registry of this run's own, ring big enough that nothing is lost at a
# flat-out rate between two reads.
inline_dir() {
	local d
	d=$(mktemp -d "$tmp/reg.XXXXXX")
	BFT_INLINE_DIR=$d "$bfctl" --backend inline set buf_size 33554432 >/dev/null
	BFT_INLINE_DIR=$d "$bfctl" --backend inline set flush_ms 20 >/dev/null
	echo "$d"
}

# One run of BIN ARGS (bench-loop or bench-sqlite) under the inline
# backend, FUNCS (space-separated) of OBJ patched.  MODE: trace
# (bfcollector recording, entry and return), entry (the same, entries only),
# init (no session: patched, INITIALIZING).  The program's output goes to
# $tmp/last.out; prints "BYTES PRODUCED LOST ATTACHED", the ring counters
# read before the target exits and the functions rewritten.
inline_run() { # mode obj funcs bin args...
	local mode=$1 obj=$2 funcs=$3 bin=$4 reg cpid=0 tpid opt=() st own
	shift 4
	reg=$(inline_dir)
	export BFT_INLINE_DIR=$reg
	if [[ $mode != init ]]; then
		taskset -c 1 "$coll" --backend inline -o "$reg/flow" >"$reg/coll.log" 2>&1 &
		cpid=$!
		for _ in $(seq 50); do
			[[ $("$bfctl" --backend inline status 2>/dev/null | awk '$1 == "mode" { print $2 }') == tracing ]] && break
			sleep 0.1
		done
	fi
	BENCH_GO=$reg/go BENCH_END=$reg/end taskset -c 0 "$bin" "$@" >"$reg/run.out" 2>&1 &
	tpid=$!
	# killed and reaped whatever happens to this run (never kill 0)
	own="$tpid"
	((cpid)) && own+=" $cpid"
	# shellcheck disable=SC2064 # the pids of this call, fixed now
	trap "kill $own 2>/dev/null; wait $own 2>/dev/null; trap - RETURN" RETURN
	[[ $mode == entry ]] && opt=(-e)
	[[ $mode == init ]] && opt=(-i)
	sleep 0.05
	# shellcheck disable=SC2086 # funcs: one word each
	"$inl" "${opt[@]}" "$tpid" "$obj" $funcs >"$reg/attach.out" 2>&1 ||
		sed 's/^/# bench-inline: /' "$reg/attach.out" >&2
	# the reader looks at the registry once a second: let it find the target
	[[ $mode != init ]] && sleep 1.2
	: >"$reg/go"
	for _ in $(seq 1200); do
		grep -q '^total ' "$reg/run.out" && break
		kill -0 "$tpid" 2>/dev/null || break
		sleep 0.1
	done
	sleep 0.2
	st=$("$bfctl" --backend inline --json status 2>/dev/null | python3 -c '
import json, sys
st = json.load(sys.stdin)
print(*(sum(c[k] for c in st["cpus"]) for k in ("bytes_written", "produced", "lost")))' 2>/dev/null) || st="0 0 0"
	: >"$reg/end"
	wait "$tpid" || true
	if ((cpid)); then
		kill -INT "$cpid" 2>/dev/null || true
		wait "$cpid" || true
	fi
	# both reaped: their pids are no longer ours to signal
	trap - RETURN
	unset BFT_INLINE_DIR
	cp "$reg/run.out" "$tmp/last.out"
	echo "$st $(sed -n 's/^attached=\([0-9]*\) .*/\1/p' "$reg/attach.out")"
	rm -rf "$reg"
}

# The BPF backend's run (bench/bpf-native.sh's, without the collector's
# CPU figures): NS.
bpf_run() { # bin args...
	local cpid
	export BFT_BPF_PIN_DIR=/sys/fs/bpf/bftrace-inline-bench
	rm -rf "$BFT_BPF_PIN_DIR" "$tmp/bflow"
	mkdir -p "$tmp/bflow"
	taskset -c 1 "$coll" --backend bpf -o "$tmp/bflow" >"$tmp/bcoll.log" 2>&1 &
	cpid=$!
	pids+=("$cpid")
	for _ in $(seq 50); do
		[[ -e $BFT_BPF_PIN_DIR/ctl ]] && break
		sleep 0.1
	done
	sleep 0.3
	taskset -c 0 "$bfctl" --backend bpf run "${bpf_pats[@]}" -- "$@" >"$tmp/brun.out" 2>"$tmp/brun.err" || true
	"$bfctl" --backend bpf stop >/dev/null 2>&1 || true
	sleep 0.3
	kill -INT "$cpid" 2>/dev/null || true
	wait "$cpid" || true
	rm -rf "$BFT_BPF_PIN_DIR"
	unset BFT_BPF_PIN_DIR
	cat "$tmp/brun.out"
}

# ------------------------------------------------------------- bench_work
for build in plain cet; do
	bin=$root/build/bench/bench-loop-$build
	pg=$root/build/bench/bench-loop-pg-$build
	cf=none
	[[ $build == cet ]] && cf=full
	gcc -std=c11 -O2 -Wall -Wextra -Werror -pthread -fcf-protection=$cf \
		-o "$bin" bench/targets/bench_loop.c
	gcc -std=c11 -O2 -Wall -Wextra -Werror -pthread -fcf-protection=$cf -pg -DBENCH_MCOUNT \
		-o "$pg" bench/targets/bench_loop.c
	site=bench_work
	[[ $build == cet ]] && site=bench_work+4
	# bpftrace probes func, which single-steps endbr64 on the CET build:
	# fewer calls there, as bench/bpf-native.sh does
	sscalls=$calls
	[[ $build == cet ]] && sscalls=$(((calls + 9) / 10))
	empty="uprobe:$bin:bench_work {} uretprobe:$bin:bench_work {}"
	bpf_pats=(-p bench_work)
	id=inline_native.$build
	echo "@cmd $id.untraced taskset -c 0 $bin $calls 1"
	echo "@cmd $id.clock taskset -c 0 $clk clock $calls"
	echo "@cmd $id.record_floor taskset -c 0 $clk record $calls"
	echo "@cmd $id.inline taskset -c 1 $coll --backend inline -o DIR & BENCH_GO=F taskset -c 0 $bin $calls 1 & $inl PID $bin bench_work"
	echo "@cmd $id.inline_entry (the same with $inl -e)"
	echo "@cmd $id.inline_init (no session: $inl -i, INITIALIZING)"
	echo "@cmd $id.floor flock $lock taskset -c 0 $floor $floor_obj $bin:$site -- $bin $calls 1"
	((have_bpftrace)) && echo "@cmd $id.bpftrace_empty flock $lock taskset -c 0 bpftrace -e '$empty' -c '$bin $sscalls 1'"
	((have_bpf)) && echo "@cmd $id.bpf flock $lock (taskset -c 1 $coll --backend bpf -o DIR & taskset -c 0 $bfctl --backend bpf run -p bench_work -- $bin $calls 1)"
	((have_uftrace)) && echo "@cmd $id.uftrace taskset -c 1 uftrace record -d DIR $pg $calls 1  (bench-loop pins its thread to CPU 0)"
	echo "@cmd $id.pg_untraced taskset -c 0 $pg $calls 1"

	base=() clock=() rfloor=() tr=() en=() ini=() fl=() bte=() bpf=() uft=() pgu=()
	bytes=() seen=() lost=() eseen=()
	for rep in $(seq "$reps"); do
		echo "# $build repetition $rep" >&2
		base+=("$(taskset -c 0 "$bin" "$calls" 1 | ns_of)")
		clock+=("$(taskset -c 0 "$clk" clock "$calls" | ns_of)")
		rfloor+=("$(taskset -c 0 "$clk" record "$calls" | ns_of)")
		read -r b p l _ <<<"$(inline_run trace "$bin" bench_work "$bin" "$calls" 1)"
		tr+=("$(ns_of <"$tmp/last.out")")
		bytes+=("$(awk -v b="$b" -v p="$p" 'BEGIN { if (p) printf "%.2f", b / p * 2 }')")
		seen+=("$p") lost+=("$l")
		read -r _ p _ _ <<<"$(inline_run entry "$bin" bench_work "$bin" "$calls" 1)"
		en+=("$(ns_of <"$tmp/last.out")") eseen+=("$p")
		inline_run init "$bin" bench_work "$bin" "$calls" 1 >/dev/null
		ini+=("$(ns_of <"$tmp/last.out")")
		fl+=("$(flock "$lock" taskset -c 0 "$floor" "$floor_obj" "$bin:$site" -- "$bin" "$calls" 1 | ns_of)")
		if ((have_bpftrace)); then
			bte+=("$(flock "$lock" taskset -c 0 bpftrace -q -e "$empty" -c "$bin $sscalls 1" 2>/dev/null | ns_of)")
		fi
		if ((have_bpf)); then
			bpf+=("$(flock "$lock" bash -c "$(declare -f bpf_run); $(declare -p bpf_pats coll bfctl tmp); bpf_run $bin $calls 1" | ns_of)")
		fi
		if ((have_uftrace)); then
			rm -rf "$tmp/uft"
			uft+=("$(cd "$tmp" && taskset -c 1 uftrace record -d "$tmp/uft" "$pg" "$calls" 1 2>/dev/null | ns_of)")
		fi
		# a -pg program writes gmon.out where it runs: not in the tree
		pgu+=("$(cd "$tmp" && taskset -c 0 "$pg" "$calls" 1 | ns_of)")
	done
	b0=$(med "${base[@]}")
	t=$(med "${tr[@]}") e=$(med "${en[@]}") i0=$(med "${ini[@]}")
	c=$(med "${clock[@]}") r=$(med "${rfloor[@]}") f=$(med "${fl[@]}")
	line="@res inline_native build=$build calls=$calls untraced_ns=$b0"
	line+=" inline_ns=$t inline_cost_ns=$(minus "$t" "$b0")"
	line+=" inline_entry_ns=$e inline_entry_cost_ns=$(minus "$e" "$b0")"
	line+=" inline_init_ns=$i0 inline_init_cost_ns=$(minus "$i0" "$b0")"
	line+=" inline_seen=$(med "${seen[@]}") inline_expect=$((2 * (calls + warmup))) inline_lost=$(med "${lost[@]}")"
	line+=" inline_entry_seen=$(med "${eseen[@]}") inline_entry_expect=$((calls + warmup))"
	line+=" bytes_per_call=$(med "${bytes[@]}")"
	line+=" clock_ns=$c record_floor_ns=$r floor_ns=$f floor_cost_ns=$(minus "$f" "$b0")"
	if ((${#bte[@]})); then
		be=$(med "${bte[@]}")
		line+=" bpftrace_calls=$sscalls bpftrace_empty_ns=$be bpftrace_empty_cost_ns=$(minus "$be" "$b0")"
	fi
	if ((${#bpf[@]})); then
		bb=$(med "${bpf[@]}")
		line+=" bpf_ns=$bb bpf_cost_ns=$(minus "$bb" "$b0")"
	fi
	if ((${#uft[@]})); then
		u=$(med "${uft[@]}")
		line+=" uftrace_ns=$u uftrace_cost_ns=$(minus "$u" "$b0")"
	fi
	line+=" pg_untraced_ns=$(med "${pgu[@]}")"
	line+=" reps_untraced=$(joined "${base[@]}") reps_inline=$(joined "${tr[@]}")"
	line+=" reps_inline_entry=$(joined "${en[@]}") reps_inline_init=$(joined "${ini[@]}")"
	line+=" reps_clock=$(joined "${clock[@]}") reps_record_floor=$(joined "${rfloor[@]}") reps_floor=$(joined "${fl[@]}")"
	((${#bte[@]})) && line+=" reps_bpftrace_empty=$(joined "${bte[@]}")"
	((${#bpf[@]})) && line+=" reps_bpf=$(joined "${bpf[@]}")"
	((${#uft[@]})) && line+=" reps_uftrace=$(joined "${uft[@]}")"
	echo "$line"
done

# -------------------------------------------------------------- libsqlite3
# bench/sqlite-api.sh's workload and functions; bench-sqlite has one
# thread, pinned here to CPU 0.  uftrace is left out: libsqlite3 is not
# built with -pg.
rows=2000 rounds=5
sq=$root/build/bench/bench-sqlite
lib=$(readlink -f /usr/lib/x86_64-linux-gnu/libsqlite3.so.0)
funcs=(sqlite3_open sqlite3_exec sqlite3_prepare_v2 sqlite3_bind_int sqlite3_bind_text
	sqlite3_step sqlite3_reset sqlite3_finalize sqlite3_column_int sqlite3_column_text
	sqlite3_close)
ent=() ret=() bpf_pats=()
for f in "${funcs[@]}"; do
	ent+=("uprobe:$lib:$f") ret+=("uretprobe:$lib:$f") bpf_pats+=(-p "libsqlite3.so*:$f")
done
sq_empty="$(IFS=,; echo "${ent[*]}") {} $(IFS=,; echo "${ret[*]}") {}"
round_of() { sed -n 's/^total .*round_ns=\([0-9]*\).*/\1/p' | tail -n 1; }
echo "@cmd inline_sqlite.untraced taskset -c 0 $sq $rows $rounds"
echo "@cmd inline_sqlite.inline BENCH_GO=F taskset -c 0 $sq $rows $rounds & $inl PID $lib ${funcs[*]}"
((have_bpftrace)) && echo "@cmd inline_sqlite.bpftrace_empty flock $lock taskset -c 0 bpftrace -e '$sq_empty' -c '$sq $rows $rounds'"
((have_bpf)) && echo "@cmd inline_sqlite.bpf flock $lock taskset -c 0 $bfctl --backend bpf run ${bpf_pats[*]} -- $sq $rows $rounds"
for rep in $(seq "$reps"); do
	u=$(taskset -c 0 "$sq" "$rows" "$rounds" | round_of)
	read -r _ p l attached <<<"$(inline_run trace "$lib" "${funcs[*]}" "$sq" "$rows" "$rounds")"
	i=$(round_of <"$tmp/last.out")
	e=
	((have_bpftrace)) &&
		e=$(flock "$lock" taskset -c 0 bpftrace -q -e "$sq_empty" -c "$sq $rows $rounds" 2>/dev/null | round_of)
	b=
	((have_bpf)) &&
		b=$(flock "$lock" bash -c "$(declare -f bpf_run); $(declare -p bpf_pats coll bfctl tmp); bpf_run $sq $rows $rounds" | round_of)
	# calls per round: the events over all rounds, two per call
	echo "@res inline_sqlite rep=$rep rows=$rows rounds=$rounds untraced_ns=$u inline_ns=$i" \
		"inline_attached=${attached:-0} probes=${#funcs[@]} inline_seen=$p inline_lost=$l" \
		"calls_per_round=$((p / 2 / rounds)) bpftrace_empty_ns=$e bpf_ns=$b"
done
