#!/usr/bin/env bash
# Extract the kselftest harness headers and checkpatch from Debian's
# linux-source-6.1 tarball into build/.  They are build inputs, never
# committed.  Does nothing when they are already there.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
tarball=${BFT_LINUX_SOURCE:-/usr/src/linux-source-6.1.tar.xz}
harness=$root/build/harness
checkpatch=$root/build/checkpatch

# tree path inside the tarball -> destination
declare -A want=(
	[tools/testing/selftests/kselftest_harness.h]=$harness/kselftest_harness.h
	[tools/testing/selftests/kselftest.h]=$harness/kselftest.h
	[scripts/checkpatch.pl]=$checkpatch/checkpatch.pl
	[scripts/spelling.txt]=$checkpatch/spelling.txt
	[scripts/const_structs.checkpatch]=$checkpatch/const_structs.checkpatch
)

todo=0
for src in "${!want[@]}"; do
	[[ -s ${want[$src]} ]] || todo=1
done
((todo)) || exit 0

[[ -r $tarball ]] || {
	echo "get-harness: $tarball not found (install linux-source-6.1: scripts/setup-deps.sh)" >&2
	exit 1
}

mkdir -p "$root/build"
tmp=$(mktemp -d "$root/build/.harness.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# One pass over the 140 MB tarball; members are under linux-source-6.1/.
patterns=()
for src in "${!want[@]}"; do
	patterns+=("*/$src")
done
xz -dc "$tarball" | tar -x -C "$tmp" --wildcards "${patterns[@]}"

mkdir -p "$harness" "$checkpatch"
for src in "${!want[@]}"; do
	found=("$tmp"/*/"$src")
	[[ -f ${found[0]} ]] || { echo "get-harness: $src not in $tarball" >&2; exit 1; }
	install -m "$([[ $src == *.pl ]] && echo 755 || echo 644)" "${found[0]}" "${want[$src]}"
done
