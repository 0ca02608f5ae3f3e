#!/usr/bin/env bash
# What single-stepping the first instruction costs per call on this
# machine's kernel, next to a probe on the emulated instruction the
# generalised endbr64 rule would choose (bench/singlestep-share.py): a
# plain tracefs uprobe event (no tracer behind it, tracing off) at
# sqlite3_bind_int+0 (movslq, single-stepped) and at +3 (jmp, emulated),
# over build/bench/bench-sqlite-bind.  Root; mounts tracefs if need be.
#
#   bench/singlestep-cost.sh [CALLS [REPS]]
#
# Prints "@res singlestep_cost rep=R untraced_ns=U at0_ns=A at3_ns=B".
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$root"
calls=${1:-200000}
reps=${2:-3}
lib=$(readlink -f /usr/lib/x86_64-linux-gnu/libsqlite3.so.0)
bin=build/bench/bench-sqlite-bind
mkdir -p build/bench
gcc -std=c11 -O2 -Wall -Wextra -Werror -o "$bin" bench/targets/bench_sqlite_bind.c -lsqlite3

# the function's file offset: its address moved from its LOAD segment
addr=$(nm -D --defined-only "$lib" | awk '$3 == "sqlite3_bind_int" { print $1 }')
read -r va off < <(readelf -lW "$lib" | awk '$1 == "LOAD" && $(NF - 1) == "E" { print $3, $2 }')
fo=$((16#$addr - va + off))
# the instruction after the first must be the jmp this bench is about
objdump -d --start-address=$((16#$addr)) --stop-address=$((16#$addr + 8)) "$lib" |
	grep -q 'jmp' || { echo "@skip singlestep_cost: sqlite3_bind_int has no jmp at +3 here"; exit 0; }

t=/sys/kernel/tracing
mountpoint -q "$t" || mount -t tracefs nodev "$t"
cleanup() {
	echo 0 >"$t/events/bfss/enable" 2>/dev/null || true
	echo "-:bfss/at0" >>"$t/uprobe_events" 2>/dev/null || true
	echo "-:bfss/at3" >>"$t/uprobe_events" 2>/dev/null || true
}
trap cleanup EXIT
echo "p:bfss/at0 $lib:$fo" >>"$t/uprobe_events"
echo "p:bfss/at3 $lib:$((fo + 3))" >>"$t/uprobe_events"
ns() { "$bin" "$calls" | sed -n 's/.*ns_per_call=//p'; }
for rep in $(seq "$reps"); do
	u=$(ns)
	echo 1 >"$t/events/bfss/at0/enable"; a=$(ns); echo 0 >"$t/events/bfss/at0/enable"
	echo 1 >"$t/events/bfss/at3/enable"; b=$(ns); echo 0 >"$t/events/bfss/at3/enable"
	echo "@res singlestep_cost rep=$rep untraced_ns=$u at0_ns=$a at3_ns=$b"
done
