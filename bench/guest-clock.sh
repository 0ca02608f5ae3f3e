#!/usr/bin/env bash
# Runs INSIDE a guest (scripts/guest-run), one boot per clocksource:
#   scripts/guest-run --kernel KVER -- bench/guest-clock.sh KVER [LABEL=KO...]
#   BFT_GUEST_APPEND="tsc=reliable clocksource=tsc" scripts/guest-run ...
#
# What the clock costs a tracer here, side by side in this boot: the bare
# trap (bench/floor) with each handler reading no clock, ktime_get_ns(),
# ktime_get_mono_fast_ns() or local_clock(), then each bftrace.ko given as
# LABEL=PATH (say, before and after a change) tracing the same loop with
# bfctl run, no reader.  REPS rounds, interleaved, so the host's load hits
# every variant alike.  Prints "@info" and "@res ID rep=R ns=X seen=..."
# lines, as bench/guest-bench.sh does; asserts no timing.
#
# Environment: BFT_BENCH_CALLS (50000), BFT_BENCH_REPS (3).  Needs what
# scripts/bench builds: build/bench/bench-loop-plain, build/bench/floor-KVER.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$root" || exit 1
(($# >= 1)) || { echo "usage: bench/guest-clock.sh KVER [LABEL=KO...] (inside the guest)" >&2; exit 2; }
kver=$1
shift
[[ $(uname -r) == "$kver" ]] || { echo "guest-clock: running $(uname -r), not $kver" >&2; exit 1; }
calls=${BFT_BENCH_CALLS:-50000}
reps=${BFT_BENCH_REPS:-3}
plain=$root/build/bench/bench-loop-plain
floor_ko=$root/build/bench/floor-$kver/bft_floor.ko
bfctl=$root/build/user/bfctl
off=$(readelf -sW "$plain" | awk '$8 == "bench_work" { print $2; exit }')
# bench-loop-plain is position-independent, its text in the first
# executable segment: the address is the file offset once that segment's
# own (address - offset) is taken off
seg=$(readelf -lW "$plain" | awk '$1 == "LOAD" && $(NF - 1) == "E" { print $3, $2; exit }')
read -r va fo <<<"$seg"
off=$((16#$off - va + fo))
tmp=$(mktemp -d /tmp/bfclock.XXXXXX)

loop_ns() { sed -n 's/^total .*ns_per_call=\([0-9.]*\).*/\1/p' "$1" | tail -n 1; }
cs=/sys/devices/system/clocksource/clocksource0
echo "@info kernel $(uname -r)"
echo "@info clocksource $(cat $cs/current_clocksource) (available: $(cat $cs/available_clocksource))"
echo "@info cmdline $(cat /proc/cmdline)"
echo "@info calls $calls reps $reps offset $off"

for rep in $(seq "$reps"); do
	for c in 0 1 2 3; do
		insmod "$floor_ko" path="$plain" offset="$off" clock="$c" || { echo "@res floor.clock$c rep=$rep ns= seen=insmod-failed"; continue; }
		"$plain" "$calls" 1 >"$tmp/out" 2>&1
		e=$(cat /sys/module/bft_floor/parameters/entries)
		rmmod bft_floor
		echo "@res floor.clock$c rep=$rep ns=$(loop_ns "$tmp/out") seen=$e"
	done
	for kv in "$@"; do
		label=${kv%%=*} ko=${kv#*=}
		insmod "$ko" || { echo "@res bftrace.$label rep=$rep ns= seen=insmod-failed"; continue; }
		timeout 120 "$bfctl" run -p 'bench-loop-plain:bench_work' -- "$plain" "$calls" 1 >"$tmp/out" 2>"$tmp/err"
		seen=$("$bfctl" status 2>/dev/null | awk '$1 == "all" { print $2 }')
		"$bfctl" stop >/dev/null 2>&1
		rmmod bftrace
		echo "@res bftrace.$label rep=$rep ns=$(loop_ns "$tmp/out") seen=${seen:-?}"
	done
done
rm -rf "$tmp"
