#!/usr/bin/env bash
# Runs INSIDE the test guest: the netlink fuzzer (selftests/bftrace/nl_fuzz_test.c)
# alone, for BFT_FUZZ_SECONDS (300 unless set), with build/kmod-KVER/bftrace.ko
# loaded; then the module must unload.  `make fuzz-guest` runs it on every kernel.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$root"
(($# == 1)) || { echo "usage: scripts/guest-nl-fuzz.sh KVER   (inside the guest)" >&2; exit 2; }
export BFT_KO=$root/build/kmod-$1/bftrace.ko
export BFT_FUZZ_SECONDS=${BFT_FUZZ_SECONDS:-300}
[[ -d /sys/module/bftrace ]] && rmmod bftrace
insmod "$BFT_KO"
rc=0
build/selftests/nl_fuzz_test || rc=$?
if ! rmmod bftrace; then
	echo "not ok 1 rmmod bftrace after fuzzing"
	rc=1
fi
exit "$rc"
