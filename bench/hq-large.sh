#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# bfhq on a large trace: bfcollector replays a synthetic recording of
# CALLS calls (bench-stream, 4 CPUs, 4 threads) to a real bfhq, which
# writes every output.  Measured: bfhq's peak RSS, its CPU time, the wall
# time from the agent's end to bfhq's exit (writing the outputs), and the
# size of each output per call.  A benchmark, not a test.
#
#   bench/hq-large.sh [CALLS]        (default 10000000; after make -C user
#                                     and scripts/bench's tools, or alone)
#
# Prints:
#   @cmd hq_large COMMAND
#   @res hq_large calls=N maxrss_kib=K cpu_s=C write_s=W wire_bytes=B
#        <file>=BYTES ... (trace.json, trace.pftrace, trace.speedscope.json,
#        tree.txt, calls.txt, folded.txt, flame.svg, live)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$root"
calls=${1:-10000000}
[[ $calls =~ ^[1-9][0-9]*$ ]] || { echo "hq-large: CALLS wants a positive number" >&2; exit 2; }
out=build/bench/hq-large
mkdir -p "$out"
if [[ ! -x build/bench/bench-stream ]]; then
	mkdir -p build/bench
	read -r -a libs <<<"$(pkg-config --libs jansson)"
	gcc -std=c11 -D_GNU_SOURCE= -O2 -Wall -Wextra -Werror -Iinclude/uapi -Iuser/lib \
		-o build/bench/bench-stream bench/tools/bench_stream.c build/user/libbftrace.a "${libs[@]}"
fi
stream=$out/stream
events=$((calls * 2))
if [[ $(cat "$stream/made-by" 2>/dev/null) != "$events" ]]; then
	rm -rf "$stream"
	mkdir -p "$stream"
	build/bench/bench-stream "$stream" "$events" 4 >"$stream/info"
	echo "$events" >"$stream/made-by"
fi
rm -rf "$out/hq"
port=$((20000 + RANDOM % 20000))
# bfhq under a parent that reports its peak RSS and CPU time once it
# exits, and the time of that exit
python3 - "$out" "$port" >"$out/hq.log" 2>&1 <<'EOF' &
import resource, subprocess, sys, time
out, port = sys.argv[1], sys.argv[2]
p = subprocess.run(["build/user/bfhq", "-p", port, "-o", out + "/hq", "--start",
                    "--count", "1", "--timeout", "3600"])
end = time.time()
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print("hq-large: rc=%d maxrss_kib=%d cpu_s=%.3f end=%.6f" %
      (p.returncode, ru.ru_maxrss, ru.ru_utime + ru.ru_stime, end), flush=True)
EOF
hq=$!
for _ in $(seq 100); do grep -q listening "$out/hq.log" && break; sleep 0.1; done
build/user/bfcollector --replay "$stream" --hq "127.0.0.1:$port" >"$out/collector.log" 2>&1
agent_end=$EPOCHREALTIME
wait "$hq"
line=$(grep '^hq-large: ' "$out/hq.log") ||
	{ cat "$out/hq.log" >&2; echo "hq-large: bfhq did not finish" >&2; exit 1; }
[[ $line == *" rc=0 "* ]] || { cat "$out/hq.log" >&2; exit 1; }
t=$out/hq/trace-1
sent=$(sed -n 's/.*: \([0-9]*\) events sent.*/\1/p' "$out/collector.log")
wire=$(sed -n 's/^received: *\([0-9]*\) bytes.*/\1/p' "$t/summary.txt")
got=$(sed -n 's/^calls: *\([0-9]*\) .*/\1/p' "$t/summary.txt")
sizes=""
for f in trace.json trace.pftrace trace.speedscope.json tree.txt calls.txt folded.txt flame.svg; do
	sizes+=" $f=$(stat -c %s "$t/$f")"
done
sizes+=" live=$(du -sb "$t/live" | cut -f1)"
echo "@cmd hq_large bench/hq-large.sh $calls (bfcollector --replay of build/bench/bench-stream DIR $events 4, to bfhq --start --count 1)"
awk -v l="$line" -v a="$agent_end" -v calls="${got:-0}" -v sent="${sent:-0}" -v wire="${wire:-0}" -v sizes="$sizes" 'BEGIN {
	n = split(l, f, /[ =]/)
	for (i = 1; i < n; i++) v[f[i]] = f[i + 1]
	printf "@res hq_large calls=%d events_sent=%d maxrss_kib=%d cpu_s=%s write_s=%.3f wire_bytes=%d%s\n",
		calls, sent, v["maxrss_kib"], v["cpu_s"], v["end"] - a, wire, sizes
}'
rm -rf "$out/hq"
