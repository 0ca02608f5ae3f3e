#!/usr/bin/env bash
# What a USDT marker costs: bench/targets/bench_usdt.c passes HITS times over
# one probe with two arguments, untraced, under bfctl --usdt on each
# backend (with bfctl record reading the rings), and under bpftrace's usdt:
# probe, in the same run; once with a one-byte nop at the site (what
# <sys/sdt.h> emits) and once with a five-byte nop (which 6.18 and later
# turn into a call after the first hit).  A benchmark, not a test.
#
#   bench/usdt-cost.sh WHERE HITS REPS [BACKENDS]     (root; after make -C user)
#
# WHERE labels the results ("native", or the guest's kernel release);
# BACKENDS defaults to "bpf".  Prints "@cmd" and, per site and
# repetition, "@res usdt site=nop1|nop5 where=W untraced=NS kmod=NS
# seen_kmod=N bpf=NS seen_bpf=N bpftrace=NS seen_bpftrace=N" (ns per
# hit; seen: the hits the tracer counted, HITS plus the warm-up's 1000).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$root" || exit 1
(($# >= 3)) || { sed -n '/^#   bench/p' "$0" >&2; exit 2; }
where=$1 hits=$2 reps=$3 backends=${4:-bpf}
out=$root/build/bench
mkdir -p "$out"
# the readers' output: somewhere writable, also in a guest whose view of
# the repository is read-only
scratch=$(mktemp -d /tmp/bft-usdt.XXXXXX) || exit 1
trap 'rm -rf "$scratch"' EXIT
bfctl=$root/build/user/bfctl
# a session of its own, removed after each pass
export BFT_BPF_PIN_DIR=/sys/fs/bpf/bftrace-bench-usdt
have_bpftrace=0
command -v bpftrace >/dev/null && have_bpftrace=1
# the reader on CPU 1, the target on CPU 0; a guest with one CPU pins none
on0=() on1=()
if (($(nproc) > 1)); then
	on0=(taskset -c 0) on1=(taskset -c 1)
fi

for site in nop1 nop5; do
	bin=$out/bench-usdt-$site
	def=()
	[[ $site == nop5 ]] && def=(-DBENCH_NOP5)
	if [[ ! -x $bin || bench/targets/bench_usdt.c -nt $bin ]]; then
		gcc -std=c11 -O2 -Wall -Wextra -Werror "${def[@]}" -o "$bin" \
			bench/targets/bench_usdt.c || exit 1
	fi
done

ns_of() { sed -n 's/.*ns_per_hit=\([0-9.]*\).*/\1/p'; }

# One traced pass under bfctl on backend $1: prints "NS SEEN".
bftrace_pass() { # backend bin
	local be=$1 bin=$2 rec=$scratch/usdt-record.json err=$scratch/usdt-record.err ns seen
	: >"$err"
	"${on1[@]}" "$bfctl" --backend "$be" --json record >"$rec" 2>"$err" &
	local rpid=$!
	for _ in $(seq 600); do
		grep -qE 'record: (recording|no session is running)' "$err" && break
		sleep 0.1
	done
	ns=$("${on0[@]}" "$bfctl" --backend "$be" run -u bench:tick -- "$bin" "$hits" 2>/dev/null | ns_of)
	"$bfctl" --backend "$be" stop >/dev/null 2>&1
	timeout 120 tail --pid="$rpid" -f /dev/null
	kill -KILL "$rpid" 2>/dev/null
	wait "$rpid" 2>/dev/null
	# the BPF backend's session stays pinned after its stop
	[[ $be == bpf ]] && rm -rf "$BFT_BPF_PIN_DIR"
	seen=$(python3 -c '
import json, sys
try:
    r = json.load(open(sys.argv[1]))
    print(sum(m["calls"] for m in r["methods"] if m["name"].endswith("bench:tick")))
except Exception:
    print(0)' "$rec")
	echo "${ns:-NA} $seen"
}

bpftrace_pass() { # bin
	local o=$scratch/usdt-bpftrace.out ns seen
	"${on0[@]}" bpftrace -e "usdt:$1:bench:tick { @ = count(); }" \
		-c "$1 $hits" >"$o" 2>&1
	ns=$(ns_of <"$o")
	seen=$(sed -n 's/^@: \([0-9]*\)$/\1/p' "$o")
	echo "${ns:-NA} ${seen:-0}"
}

for site in nop1 nop5; do
	bin=$out/bench-usdt-$site
	echo "@cmd usdt.$site.untraced ${on0[*]} $bin $hits"
	for be in $backends; do
		echo "@cmd usdt.$site.$be ${on1[*]} $bfctl --backend $be record & ${on0[*]} $bfctl --backend $be run -u bench:tick -- $bin $hits"
	done
	((have_bpftrace)) &&
		echo "@cmd usdt.$site.bpftrace ${on0[*]} bpftrace -e 'usdt:$bin:bench:tick { @ = count(); }' -c '$bin $hits'"
	for _ in $(seq "$reps"); do
		line="@res usdt site=$site where=$where untraced=$("${on0[@]}" "$bin" "$hits" | ns_of)"
		# no process substitution: a guest's /dev has no /dev/fd
		for be in $backends; do
			read -r ns seen <<<"$(bftrace_pass "$be" "$bin")"
			line+=" $be=$ns seen_$be=$seen"
		done
		if ((have_bpftrace)); then
			read -r ns seen <<<"$(bpftrace_pass "$bin")"
			line+=" bpftrace=$ns seen_bpftrace=$seen"
		fi
		echo "$line"
	done
done
