#!/usr/bin/env bash
# The collector's CPU at live rates, natively with the BPF backend: one
# traced thread (CPU 0) calls bench_work() at each RATE calls per second for
# about SECONDS, while bfcollector (writing .flow files, CPU 1) drains the
# rings.  Only the traced window is counted: the collector's user + system
# time and its voluntary context switches (its wake-ups) between just
# before and just after the run.  A benchmark, not a test.
#
#   bench/collector-rates.sh [SECONDS [RATE...]]   (root; after make -C user)
#
# BFT_BENCH_BIN: the directory holding bfctl and bfcollector (default
# build/user), to measure another build side by side.  Prints one line per
# rate:
#   @res collector_rate rate=R calls=N events_per_s=E cpu_s=C
#        cpu_pct=P wakeups=W bytes_per_call=B
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$root"
secs=${1:-2}
shift || true
rates=("$@")
((${#rates[@]})) || rates=(10000 50000 200000 0)
bin=${BFT_BENCH_BIN:-build/user}
out=build/bench/rates
mkdir -p "$out"
export BFT_BPF_PIN_DIR=/sys/fs/bpf/bftrace-rates
target=$out/bench-loop-plain
gcc -std=c11 -O2 -Wall -Wextra -Werror -pthread -fcf-protection=none \
	-o "$target" bench/targets/bench_loop.c

why=$("$bin/bfctl" --backend bpf caps 2>&1 >/dev/null) || {
	echo "@skip collector_rate ${why:-the BPF backend cannot run here}"
	exit 0
}

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
wakeups() { awk '$1 == "voluntary_ctxt_switches:" { print $2 }' "/proc/$1/status"; }
tick=$(getconf CLK_TCK)

for rate in "${rates[@]}"; do
	# flat out (0) runs about 2 us a call here; paced runs take secs
	if ((rate)); then calls=$((rate * secs)); else calls=$((500000 * secs)); fi
	rm -rf "$out/flow" && mkdir -p "$out/flow"
	taskset -c 1 "$bin/bfcollector" --backend bpf -o "$out/flow" >"$out/collector.log" 2>&1 &
	cpid=$!
	sleep 0.5
	c0=$(cpu_ticks "$cpid") w0=$(wakeups "$cpid") t0=$(date +%s.%N)
	taskset -c 0 "$bin/bfctl" --backend bpf run -p bench_work -- "$target" "$calls" 1 "$rate" >"$out/run.out"
	c1=$(cpu_ticks "$cpid") w1=$(wakeups "$cpid") t1=$(date +%s.%N)
	bytes=$("$bin/bfctl" --backend bpf --json status | python3 -c '
import json, sys
print(sum(c["bytes_written"] for c in json.load(sys.stdin)["cpus"]))')
	"$bin/bfctl" --backend bpf stop >/dev/null
	kill -INT "$cpid"
	wait "$cpid" || true
	rm -rf "$BFT_BPF_PIN_DIR"
	awk -v r="$rate" -v n="$calls" -v c0="$c0" -v c1="$c1" -v hz="$tick" \
		-v t0="$t0" -v t1="$t1" -v w="$((w1 - w0))" -v b="$bytes" 'BEGIN {
		wall = t1 - t0; cpu = (c1 - c0) / hz
		printf "@res collector_rate rate=%d calls=%d events_per_s=%.0f cpu_s=%.2f cpu_pct=%.1f wakeups=%d bytes_per_call=%.2f\n",
			r, n, 2 * n / wall, cpu, 100 * cpu / wall, w, b / n }'
done
