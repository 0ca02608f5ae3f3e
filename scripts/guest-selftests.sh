#!/usr/bin/env bash
# Runs INSIDE the test guest (scripts/guest-run ... -- scripts/guest-selftests.sh KVER):
# load build/kmod-KVER/bftrace.ko, run every build/selftests/*_test, unload.
#
# Prints the tests' own TAP output.  Where a test binary fails without a TAP
# line saying so (crash, timeout, no results at all), or the module cannot be
# loaded or unloaded, a "not ok" line of its own is added so that a counter
# of TAP lines sees the failure.  Exit status is non-zero on any failure.
#
# Environment: BFT_TEST_TIMEOUT (seconds per test binary, default 600);
# BFT_SELFTESTS, a space-separated list of names (pipeline_test,
# guest_bfctl.sh, ...), runs only those, for working on one of them;
# BFT_INLINE_VARIANTS=1 runs every inline variant here (0: none);
# BFT_PROTOCOL_VARIANTS= (empty) every protocol variant of pipeline_test.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$root"

(($# == 1)) || { echo "usage: scripts/guest-selftests.sh KVER   (inside the guest)" >&2; exit 2; }
kver=$1
per_test_timeout=${BFT_TEST_TIMEOUT:-600}

failed=0
# A result line of this script's own; numbered 1 like a one-test TAP stream,
# the same shape as the kselftest lines around it.
result() { # ok|not ok, description
	echo "$1 1 $2"
	[[ $1 == ok ]] || failed=1
}

if [[ $(uname -r) != "$kver" ]]; then
	result "not ok" "guest kernel is $kver # running $(uname -r) instead"
	exit 1
fi

ko=$root/build/kmod-$kver/bftrace.ko
if [[ ! -f $ko ]]; then
	result "not ok" "bftrace.ko for $kver exists # $ko missing (scripts/build-kmod.sh $kver)"
	exit 1
fi
export BFT_KO=$ko
# The guest is the tests' own: offline_test takes a CPU offline and back.
export BFT_TEST_HOTPLUG=1
. "$root/scripts/kernels.sh"
# Guest time goes to what depends on the kernel.  pipeline_test: what the
# collector does apart from it runs in each backend's v1 variant here (the
# BPF backend's other variants run natively).
export BFT_PROTOCOL_VARIANTS=${BFT_PROTOCOL_VARIANTS-1}
# guest_bfctl.sh: the BPF backend counts on fewer kinds of binary than the
# module; nl_fuzz_test: 30 s of random requests on each kernel
export BFT_BFCTL_BPF_KINDS=${BFT_BFCTL_BPF_KINDS-short}
export BFT_FUZZ_SECONDS=${BFT_FUZZ_SECONDS:-30}
# The inline backend needs no kernel feature: its variants run natively,
# and here only the calltree and exception targets' (trace_test, exc_test),
# in the oldest kernel's guest alone.
inline_here() { # test name
	[[ $kver == "$KVER_61" && ($1 == trace_test || $1 == exc_test) ]]
}

loaded() { [[ -d /sys/module/bftrace ]]; }
if loaded; then
	rmmod bftrace || true
fi
if ! insmod "$ko"; then
	result "not ok" "insmod bftrace.ko ($kver)"
	dmesg | tail -n 30 | sed 's/^/# dmesg: /'
	exit 1
fi

shopt -s nullglob
tests=()
for t in build/selftests/*_test; do
	# yama_test sets ptrace_scope 3, which only a reboot lowers: last
	[[ -f $t && -x $t && $t != */yama_test ]] && tests+=("$t")
done
((${#tests[@]})) || result "not ok" "selftests found # nothing executable matches build/selftests/*_test"
# bfctl's checks against real binaries and bpftrace (issue 3's acceptance)
[[ -x user/ctl/tests/guest_bfctl.sh ]] && tests+=(user/ctl/tests/guest_bfctl.sh)
# bfhq --http in Chromium while the module traces runs on the host, with
# its traced side in a guest of its own (scripts/live-view-test.py --guest)
[[ -x build/selftests/yama_test ]] && tests+=(build/selftests/yama_test)

if [[ -n ${BFT_SELFTESTS:-} ]]; then
	picked=()
	for t in "${tests[@]}"; do
		[[ " $BFT_SELFTESTS " == *" ${t##*/} "* ]] && picked+=("$t")
	done
	((${#picked[@]})) || result "not ok" "selftests found # BFT_SELFTESTS='$BFT_SELFTESTS' names none of them"
	tests=("${picked[@]}")
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for t in "${tests[@]}"; do
	name=$(basename "$t")
	if ! loaded; then
		echo "# note: bftrace.ko was not loaded after the previous test; loading it again"
		insmod "$ko" || { result "not ok" "reload bftrace.ko before $name"; continue; }
	fi
	echo "# ==== $name ($kver)"
	# the kernel log's timestamps then tell which test a message came from
	echo "bftrace-selftests: start $name" >/dev/kmsg 2>/dev/null || true
	t_start=$SECONDS
	rc=0
	limit=$per_test_timeout
	# both backends, each waiting up to 420 s on a slow bpftrace map print
	[[ $name == guest_bfctl.sh ]] && ((limit < 1200)) && limit=1200
	inline=0
	inline_here "$name" && inline=1
	# with its inline variants, beside CI's native steps: 562 and 604 s
	((inline)) && [[ $name == exc_test ]] && ((limit < 900)) && limit=900
	BFT_INLINE_VARIANTS=${BFT_INLINE_VARIANTS:-$inline} \
		timeout -k 10 "$limit" "$t" 2>&1 | tee "$tmp/out" || rc=${PIPESTATUS[0]}
	if ((rc == 124 || rc == 137)); then
		result "not ok" "$name # TIMEOUT: killed after ${limit}s"
	elif ((rc != 0)) && ! grep -q '^not ok ' "$tmp/out"; then
		result "not ok" "$name # exited with status $rc and no failing test reported"
	elif ! grep -Eq '^(not )?ok [0-9]+' "$tmp/out"; then
		result "not ok" "$name # printed no TAP results"
	elif ((rc != 0)); then
		failed=1
	fi
	echo "# ==== $name took $((SECONDS - t_start)) s"
	# a test killed before its teardown (offline_test) must not leave
	# the tests after it one CPU short
	for c in /sys/devices/system/cpu/cpu[0-9]*/online; do
		[[ $(cat "$c") == 1 ]] && continue
		echo 1 >"$c" || result "not ok" "${c%/online} back online after $name"
	done
done

if loaded; then
	if ! out=$(rmmod bftrace 2>&1); then
		echo "# $out"
		result "not ok" "rmmod bftrace ($kver)"
	fi
fi

echo "# ==== kernel log ($kver)"
dmesg | sed 's/^/# /'
exit "$failed"
