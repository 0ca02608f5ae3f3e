# shellcheck shell=bash
# shellcheck disable=SC2034 # $passed is read by the scripts that source this
# TAP output for the packaging checks (scripts/test-*.sh), which
# scripts/run-tests.sh counts line by line.  Sourced; the caller ends with
# tap_finish.
tap_n=0
tap_nfail=0
# 1 if the last check passed: the next checks may depend on it.
passed=0
ok() { tap_n=$((tap_n + 1)); echo "ok $tap_n - $*"; }
not_ok() { tap_n=$((tap_n + 1)); tap_nfail=$((tap_nfail + 1)); echo "not ok $tap_n - $*"; }
# check DESC CMD...: one TAP line for CMD's status; the output of a failing
# CMD goes to the TAP stream as comments, so a failure explains itself.
check() {
	local desc=$1 out rc=0
	shift
	out=$("$@" 2>&1) || rc=$?
	if ((rc == 0)); then
		passed=1
		ok "$desc"
	else
		passed=0
		not_ok "$desc"
		printf '%s\n' "$out" | tail -n 30 | sed 's/^/# /'
	fi
}
# The plan goes last, once the number of checks is known.
tap_finish() {
	echo "1..$tap_n"
	if ((tap_nfail)); then exit 1; fi
	exit 0
}
