#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Run libFuzzer harnesses one after another (make -C user fuzz):
#   fuzz.sh BIN_DIR CORPUS_DIR HARNESS...
# Each runs FUZZ_RUNS executions (default 10000000), at most FUZZ_TIME
# seconds (default 1200), inputs of at most FUZZ_MAX_LEN bytes (default
# 65536; fuzz_hq runs about twice as fast at 4096), one process (the
# machine is shared), starting
# from its committed corpus (CORPUS_DIR/<harness>, read only) plus what
# earlier runs found (build/fuzz/work/<harness>).  Crashes, leaks and
# timeouts go to build/fuzz/artifacts/<harness>/.  A table of executions
# (and their rate), coverage (libFuzzer's cov and ft) and findings ends the
# output; the exit status is 1 if any harness found something.
#
#   fuzz.sh --merge BIN_DIR CORPUS_DIR HARNESS...
# instead minimises: CORPUS_DIR/<harness> becomes the smallest set of its
# inputs and build/fuzz/work/<harness> that keeps every feature (-merge=1).
set -uo pipefail

merge=0
if [[ ${1:-} == --merge ]]; then
	merge=1
	shift
fi
bin=$1 corpus=$2
shift 2
runs=${FUZZ_RUNS:-10000000}
max_time=${FUZZ_TIME:-1200}
max_len=${FUZZ_MAX_LEN:-65536}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
out=$here/build/fuzz
mkdir -p "$out"
# fuzz_hq and fuzz_collector_control write files per input: on tmpfs
# they run several times faster.
if [[ -z ${TMPDIR:-} && -d /dev/shm && -w /dev/shm ]]; then
	export TMPDIR=/dev/shm
fi
if ((merge)); then
	for h in "$@"; do
		new=$out/merged/$h
		rm -rf "$new"
		mkdir -p "$new" "$out/work/$h"
		"$bin/$h" -merge=1 -max_len=65536 "$new" "$corpus/$h" \
			"$out/work/$h" >"$out/$h.merge.log" 2>&1 ||
			{ echo "fuzz: $h: merge failed, see $out/$h.merge.log" >&2; exit 1; }
		rm -rf "${corpus:?}/$h"
		mv "$new" "$corpus/$h"
		echo "fuzz: $h: $(find "$corpus/$h" -type f | wc -l) inputs," \
			"$(du -sk "$corpus/$h" | cut -f1) KiB"
	done
	exit 0
fi
table=$out/results.txt
printf '%-24s %12s %8s %8s %8s %8s %7s %6s %s\n' harness execs seconds \
	execs/s cov ft crashes leaks "" >"$table"
found=0
for h in "$@"; do
	work=$out/work/$h art=$out/artifacts/$h log=$out/$h.log
	mkdir -p "$work" "$art"
	echo "fuzz: $h: up to $runs runs, $max_time s"
	start=$SECONDS
	"$bin/$h" -runs="$runs" -max_total_time="$max_time" -timeout=10 \
		-rss_limit_mb=2048 -max_len="$max_len" -print_final_stats=1 \
		-artifact_prefix="$art/" "$work" "$corpus/$h" >"$log" 2>&1
	rc=$?
	secs=$((SECONDS - start))
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
	cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
	ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
	crashes=$(find "$art" -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' | wc -l)
	leaks=$(find "$art" -name 'leak-*' | wc -l)
	note=""
	((rc)) && note="exit $rc (see $log)"
	((rc || crashes || leaks)) && found=1
	rate=?
	[[ ${execs:-} =~ ^[0-9]+$ ]] && rate=$((execs / (secs ? secs : 1)))
	printf '%-24s %12s %8s %8s %8s %8s %7s %6s %s\n' "$h" "${execs:-?}" \
		"$secs" "$rate" "${cov:-?}" "${ft:-?}" "$crashes" "$leaks" \
		"$note" >>"$table"
	tail -n 1 "$table"
done
cat "$table"
exit $found
