#!/usr/bin/env bash
# The BPF backend on the build machine itself (no guest: traps are not
# emulated here, so the absolute figures mean something): what a traced call
# costs next to the untraced loop and to bpftrace, how many ring bytes a call
# takes, and the collector's CPU time at that rate.  A benchmark, not a test.
#
#   bench/bpf-native.sh [CALLS] [REPS]      (root; after make -C user)
#
# Prints "@res bpf_* key=value ..." lines (the format of build/bench/
# native.txt).  Each figure is the median of REPS runs, one thread pinned
# to CPU 0, bfcollector (writing .flow files) on CPU 1.
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

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ns_of() { sed -n 's/^total .*ns_per_call=\([0-9.]*\).*/\1/p'; }

for build in plain cet; do
	bin=$out/bench-loop-$build
	cf=none
	[[ $build == cet ]] && cf=full
	gcc -std=c11 -O2 -Wall -Wextra -Werror -pthread -fcf-protection=$cf \
		-o "$bin" bench/targets/bench_loop.c
	base=() traced=() bt=() bytes=() ccpu=() cpct=()
	for _ in $(seq "$reps"); do
		base+=("$(taskset -c 0 "$bin" "$calls" 1 | ns_of)")

		rm -rf "$out/flow" && mkdir -p "$out/flow"
		taskset -c 1 "$coll" --backend bpf -o "$out/flow" >"$out/collector.log" 2>&1 &
		cpid=$!
		sleep 0.3
		w0=$(date +%s%N)
		taskset -c 0 "$bfctl" --backend bpf run -p bench_work -- "$bin" "$calls" 1 >"$out/run.out"
		w1=$(date +%s%N)
		traced+=("$(ns_of <"$out/run.out")")
		b=$($bfctl --backend bpf --json status | python3 -c '
import json, sys
st = json.load(sys.stdin)
print(sum(c["bytes_written"] for c in st["cpus"]))')
		bytes+=("$(awk -v b="$b" -v n="$calls" 'BEGIN { printf "%.2f", b / n }')")
		$bfctl --backend bpf stop >/dev/null
		sleep 0.5	# the collector drains what is left
		ccpu+=("$(awk -v hz="$(getconf CLK_TCK)" '{ printf "%.3f", ($14 + $15) / hz }' "/proc/$cpid/stat")")
		# its whole CPU time against the traced run's wall time: the
		# collector at the rate of one thread calling flat out
		cpct+=("$(awk -v c="${ccpu[-1]}" -v w="$((w1 - w0))" 'BEGIN { printf "%.1f", 100 * c / (w / 1e9) }')")
		kill -INT "$cpid"
		wait "$cpid" || true
		rm -rf "$BFT_BPF_PIN_DIR"

		if command -v bpftrace >/dev/null; then
			bt+=("$(taskset -c 0 bpftrace -q -e "uprobe:$bin:bench_work { @e = count(); }
				uretprobe:$bin:bench_work { @x = count(); }" \
				-c "$bin $calls 1" 2>/dev/null | ns_of)")
		fi
	done
	b0=$(printf '%s\n' "${base[@]}" | median)
	t=$(printf '%s\n' "${traced[@]}" | median)
	by=$(printf '%s\n' "${bytes[@]}" | median)
	line="@res bpf_native build=$build calls=$calls untraced_ns=$b0 bpf_ns=$t"
	line+=" bpf_cost_ns=$(awk -v a="$t" -v b="$b0" 'BEGIN { printf "%.1f", a - b }')"
	line+=" bytes_per_call=$by collector_cpu_s=$(printf '%s\n' "${ccpu[@]}" | median)"
	line+=" collector_cpu_pct=$(printf '%s\n' "${cpct[@]}" | median)"
	if ((${#bt[@]})); then
		bb=$(printf '%s\n' "${bt[@]}" | median)
		line+=" bpftrace_ns=$bb bpftrace_cost_ns=$(awk -v a="$bb" -v b="$b0" 'BEGIN { printf "%.1f", a - b }')"
	fi
	echo "$line"
done
