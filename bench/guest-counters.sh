#!/usr/bin/env bash
# Runs INSIDE a guest:
#   scripts/guest-run --kernel KVER --timeout SEC -- bench/guest-counters.sh KVER
# or as the last part of bench/guest-bench.sh (make bench builds what it
# needs; alone: make -C user; scripts/build-kmod.sh KVER; and
# gcc -O2 -o build/bench/bench-many bench/targets/bench_many.c, and
# build/bench/bench-wakefloor from bench/tools/bench_wakefloor.c)
#
# The counters agent against the real module: bench-many's 1000 functions
# traced (bfctl run), bfcollector --counters at 10 Hz to bfhq --counters,
# which adds the 1000 "calls" counters, the Ring and the Kernel ones.
#   1. correctness: once the calls are over, the sampled "calls" of every
#      function equal ROUNDS, the target's model (each is called once a
#      round), and Kernel "probes" is 1000;
#   2. cost: the collector's CPU time over WINDOW seconds while sampling,
#      then over WINDOW seconds after the inspector said Good Bye (tracing
#      goes on, the probes stay, nothing is called);
#   3. the floor under it: bench-wakefloor's CPU time per 10 Hz wake, bare,
#      with the status ioctl, with a sample-sized TCP send, and with both.
# Prints "@res counters.* key=value" lines and "counters: ok|FAIL ...";
# exits 1 if a sampled count is wrong.  It asserts no timing.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$root" || exit 1
kver=${1:?usage: bench/guest-counters.sh KVER}
rounds=${BFT_COUNTERS_ROUNDS:-10}
window=${BFT_COUNTERS_WINDOW:-10}
B=$root/build/user
target=$root/build/bench/bench-many
floor=$root/build/bench/bench-wakefloor
ko=$root/build/kmod-$kver/bftrace.ko
tmp=$(mktemp -d /tmp/bfctr.XXXXXX)
port=7411

# BFT_BACKEND=bpf: natively, through the BPF backend (KVER names the run),
# in a session of its own beside any other
bpf=0
if [[ ${BFT_BACKEND:-} == bpf ]]; then
	bpf=1
	export BFT_BPF_PIN_DIR=${BFT_BPF_PIN_DIR:-/sys/fs/bpf/bftrace-counters}
	rm -rf "$BFT_BPF_PIN_DIR"
fi
for f in "$B/bfctl" "$B/bfcollector" "$B/bfhq" "$target" "$floor"; do
	[[ -e $f ]] || { echo "guest-counters: $f missing" >&2; exit 1; }
done
if ((!bpf)); then
	[[ -e $ko ]] || { echo "guest-counters: $ko missing" >&2; exit 1; }
	[[ -d /sys/module/bftrace ]] || insmod "$ko" || exit 1
fi

# process CPU time in ns (schedstat if the kernel keeps it, else ticks)
cpu_ns() {
	if [[ -r /proc/$1/schedstat ]]; then
		awk '{ print $1 }' "/proc/$1/schedstat"
	else
		awk -v t="$(getconf CLK_TCK)" '{ print ($14 + $15) * 1e9 / t }' \
			"/proc/$1/stat"
	fi
}

mkfifo "$tmp/in"
exec 3<>"$tmp/in"
"$B/bfhq" --counters "$port" --json --timeout 300 <&3 >"$tmp/insp.json" \
	2>"$tmp/insp.log" &
hq_pid=$!
sleep 0.5
"$B/bfcollector" -v --counters "127.0.0.1:$port" --counters-interval 100 \
	>"$tmp/coll.log" 2>&1 &
coll_pid=$!
for _ in $(seq 100); do
	[[ $("$B/bfctl" status 2>/dev/null | awk '$1 == "mode" { print $2 }') == tracing ]] && break
	sleep 0.1
done
"$B/bfctl" run -p 'bench-many:cf_*' -- "$target" "$rounds" $((3 * window + 30)) \
	>"$tmp/target.out" 2>"$tmp/target.err" &
run_pid=$!
# the counters can be added once the collector has the probes' names
for _ in $(seq 300); do
	n=$("$B/bfctl" status 2>/dev/null | awk '$1 == "probes" { print $2 }')
	[[ ${n:-0} -ge 1000 ]] && break
	sleep 0.1
done
sleep 1
for i in $(seq -f '%03g' 0 999); do
	echo "add Method:bench-many!cf_$i calls" >&3
done
for c in 'Kernel:probes' 'Kernel:total hits' 'Kernel:lost' 'Ring:cpu0 bytes used' \
	'Ring:cpu0 records' 'Ring:cpu1 records' 'Ring:cpu0 reads'; do
	echo "add $c" >&3
done
for _ in $(seq 600); do
	grep -q 'rounds done' "$tmp/target.out" 2>/dev/null && break
	sleep 0.1
done
# the last records reach the collector within a flush interval or two
sleep 2
s0=$(grep -c '"event":"sample"' "$tmp/insp.json")
c0=$(cpu_ns "$coll_pid")
sleep "$window"
c1=$(cpu_ns "$coll_pid")
samples_in_window=$(($(grep -c '"event":"sample"' "$tmp/insp.json") - s0))
# values a sample carried in the window (the inspector asks for changes only)
carried=$(grep '"event":"sample"' "$tmp/insp.json" | tail -n "$samples_in_window" |
	python3 -c 'import json, sys
c = [json.loads(l).get("carried", 0) for l in sys.stdin]
print(round(sum(c) / len(c), 1) if c else "-")')
echo bye >&3
wait "$hq_pid"
c2=$(cpu_ns "$coll_pid")
sleep "$window"
c3=$(cpu_ns "$coll_pid")

# every function's sampled calls against the model
python3 - "$tmp/insp.json" "$rounds" >"$tmp/check" <<'EOF'
import json, sys
last = None
adds = {"OK": 0}
for line in open(sys.argv[1]):
    j = json.loads(line)
    if j["event"] == "add":
        adds[j["status"]] = adds.get(j["status"], 0) + 1
    if j["event"] == "sample":
        last = j
v = last["values"] if last else {}
calls = [v.get("Method:bench-many!cf_%03d calls" % i) for i in range(1000)]
bad = [i for i, c in enumerate(calls) if c != int(sys.argv[2])]
print("added=%d methods_sampled=%d wrong=%d probes=%s hits=%s lost=%s"
      % (adds["OK"], sum(c is not None for c in calls), len(bad),
         v.get("Kernel:probes"), v.get("Kernel:total hits"),
         v.get("Kernel:lost")))
print("first_wrong=%s" % ([(i, calls[i]) for i in bad[:3]]))
EOF
cat "$tmp/check"
kill -TERM "$coll_pid" 2>/dev/null
for _ in $(seq 300); do
	kill -0 "$coll_pid" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$coll_pid" 2>/dev/null; then
	echo "# guest-counters: bfcollector still running 30 s after SIGTERM: killed" >&2
	kill -KILL "$coll_pid"
fi
wait "$coll_pid"
# the target idles on under bfctl run: end it, then bfctl
for p in $(ps -o pid= --ppid "$run_pid"); do kill -TERM "$p" 2>/dev/null; done
kill -TERM "$run_pid" 2>/dev/null
wait "$run_pid" 2>/dev/null
timeout 30 "$B/bfctl" stop >/dev/null 2>&1
sed 's/^/# collector: /' "$tmp/coll.log" | tail -n 5
sed 's/^/# inspector: /' "$tmp/insp.log" | tail -n 3

# the floor: what a 10 Hz wake, the status ioctl and a sample-sized send
# cost here with no agent around them (bench/tools/bench_wakefloor.c)
"$floor" 50
if ((bpf)); then
	rm -rf "$BFT_BPF_PIN_DIR"
else
	rmmod bftrace || echo "guest-counters: rmmod bftrace failed" >&2
fi
# where the time goes, from the collector's -v lines at its end
per_sample=$(sed -n 's/.* \([0-9]*\) us a sample, \([0-9]*\) of it reading the status, and \([0-9]*\) writing.*/\1 \2 \3/p' "$tmp/coll.log")
dumps=$(sed -n 's/.*method table read \([0-9]*\) times (\([0-9]*\) us CPU each), \([0-9]*\) looks.*/\1 \2 \3/p' "$tmp/coll.log")
read -r sample_us status_us write_us <<<"${per_sample:-- - -}"
read -r ndumps dump_us nlooks <<<"${dumps:-- - -}"

correct=0
grep -q "wrong=0 " "$tmp/check" && grep -q "methods_sampled=1000" "$tmp/check" &&
	correct=1
pct() { python3 -c "print(round(($2 - $1) / 1e9 / $3 * 100, 3))"; }
echo "@cmd counters.10hz bfcollector --counters 127.0.0.1:$port --counters-interval 100" \
	"(bfhq --counters $port adds 1000 'Method:bench-many!cf_NNN calls' + 7; bfctl run -p" \
	"'bench-many:cf_*' -- bench-many $rounds ...)"
echo "@res counters.10hz cpu_pct=$(pct "$c0" "$c1" "$window") window_s=$window" \
	"samples=$samples_in_window carried=$carried correct=$correct" \
	"counters=$(( $(grep -c '"status":"OK"' "$tmp/insp.json") + 15 ))" \
	"sample_us=$sample_us status_us=$status_us write_us=$write_us"
echo "@res counters.none cpu_pct=$(pct "$c2" "$c3" "$window") window_s=$window" \
	"table_reads=$ndumps table_read_us=$dump_us status_looks=$nlooks"
[[ -n ${BFT_KEEP:-} ]] || rm -rf "$tmp"
if ((correct)); then
	echo "counters: ok"
	exit 0
fi
echo "counters: FAIL"
exit 1
