#!/usr/bin/env bash
# The project's test command (`make test`, and CI through .ci/run): install
# what is missing, build the module for every kernel, the tools and the
# selftests, run the native unit tests and the packaging checks (make
# install, DKMS, the flame graph and the speedscope file in headless
# Chromium), the exact-trace tests through the BPF backend on this machine,
# the selftests in a guest on each kernel (the first kernel's meanwhile, in
# the background), and the live viewer in Chromium here while a guest of
# that kernel traces.  Every TAP result line of every suite is counted; a
# step that fails without a failing TAP line of its own (build error,
# crash, guest that does not boot, kernel log with warnings) counts as one
# failure.  The last line is "N passed, M failed"; the exit status is
# non-zero if M > 0.
#
# Logs of every step: build/logs/.  Environment:
#   BFT_KERNELS        subset of kernels to test (default: all of scripts/kernels.sh)
#   BFT_GUEST_TIMEOUT  seconds for the selftests in one guest (default 2400)
#   BFT_VERBOSE=1      stream the full output of test steps (default in CI);
#                      otherwise only TAP result lines and guest-run messages.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$root"
# shellcheck source=scripts/kernels.sh
. scripts/kernels.sh

read -r -a kernels <<<"${BFT_KERNELS:-$BFT_ALL_KERNELS}"
guest_timeout=${BFT_GUEST_TIMEOUT:-2400}
verbose=${BFT_VERBOSE:-}
[[ -n $verbose || -z ${CI:-} ]] || verbose=1
jobs=$(nproc 2>/dev/null || echo 2)

logs=build/logs
mkdir -p "$logs"
rm -f "$logs"/*.log "$logs"/*.txt

passed=0
failed=0
failures=()
skips=()
todos=()
stepno=0
t_start=$SECONDS

clock() { printf '%02d:%02d' $(((SECONDS - t_start) / 60)) $(((SECONDS - t_start) % 60)); }
fail() { # description
	failed=$((failed + 1))
	failures+=("$1")
}
logname() { # step name -> log path (stepno is advanced by the caller)
	printf '%s/%02d-%s.log' "$logs" "$stepno" "$(tr -c 'A-Za-z0-9.+_-' '-' <<<"$1" | tr -s '-' | sed 's/-$//')"
}
show_log_tail() { # log
	local n=40
	[[ -z ${CI:-} ]] || n=400
	echo "    last $n lines of $1:"
	tail -n "$n" "$1" | sed 's/^/    | /'
}

child=
bg_pid=
# shellcheck disable=SC2317 # called from the trap
on_signal() {
	if [[ -n $child ]]; then kill "$child" 2>/dev/null || true; fi
	if [[ -n $bg_pid ]]; then kill "$bg_pid" 2>/dev/null || true; fi
	echo "run-tests: interrupted" >&2
	exit 130
}
trap on_signal INT TERM
# guest-run ends its QEMU when it gets TERM; a guest left behind would run
# on for up to BFT_GUEST_TIMEOUT
# shellcheck disable=SC2317 # called from the trap
on_exit() {
	if [[ -n $bg_pid ]]; then kill "$bg_pid" 2>/dev/null || true; fi
}
trap on_exit EXIT

# A build step: output to its log only, a progress line every minute.
# Returns the command's status.
build_step() { # name cmd...
	local name=$1 log rc=0 t0=$SECONDS tick=60
	shift
	stepno=$((stepno + 1))
	log=$(logname "$name")
	echo "==> [$(clock)] $name"
	"$@" >"$log" 2>&1 &
	child=$!
	while kill -0 "$child" 2>/dev/null; do
		sleep 1
		if ((SECONDS - t0 >= tick)); then
			echo "    ... still running ($((SECONDS - t0))s)"
			tick=$((tick + 60))
		fi
	done
	wait "$child" || rc=$?
	child=
	if ((rc)); then
		echo "    FAILED (exit $rc, $((SECONDS - t0))s); log: $log"
		show_log_tail "$log"
		fail "$name (exit $rc; log $log)"
	else
		echo "    ok ($((SECONDS - t0))s)"
	fi
	return "$rc"
}

# A test step: its output is TAP, counted here.  Sets step_rc, step_nok,
# step_log.
step_rc=0
step_nok=0
step_log=
# what a test step shows of its log unless verbose
shown_lines='^(not )?ok [0-9]+|^guest-run:|^# (Totals|PASSED|FAILED)'
test_step() { # name cmd...
	local name=$1 log t0=$SECONDS
	shift
	stepno=$((stepno + 1))
	log=$(logname "$name")
	step_log=$log
	echo "==> [$(clock)] $name"
	step_rc=0
	if [[ -n $verbose ]]; then
		"$@" 2>&1 | tee "$log" || step_rc=${PIPESTATUS[0]}
	else
		"$@" 2>&1 | tee "$log" |
			grep --line-buffered -E "$shown_lines" |
			sed -u 's/^/    /' || step_rc=${PIPESTATUS[0]}
	fi
	tally "$name" "$log" "$t0"
}

# Count the TAP lines of a finished step's log into the totals.
tally() { # name log t0
	local name=$1 log=$2 t0=$3 ok nok line
	ok=$(grep -cE '^ok [0-9]+' "$log" || true)
	# TAP: a "not ok ... # TODO" is a known gap, not a failure
	nok=$(grep -E '^not ok [0-9]+' "$log" | grep -cvE '#[[:space:]]*TODO' || true)
	passed=$((passed + ok))
	failed=$((failed + nok))
	while IFS= read -r line; do
		failures+=("$name: $line")
	done < <(grep -E '^not ok [0-9]+' "$log" | grep -vE '#[[:space:]]*TODO' || true)
	while IFS= read -r line; do
		todos+=("$name: $line")
	done < <(grep -E '^not ok [0-9]+.*#[[:space:]]*TODO' "$log" || true)
	while IFS= read -r line; do
		skips+=("$name: $line")
	done < <(grep -iE '^ok [0-9]+.*#[[:space:]]*skip' "$log" || true)
	step_nok=$nok
	echo "    $ok ok, $nok not ok, exit $step_rc ($((SECONDS - t0))s); log: $log"
}

summary() {
	if ((passed + failed == 0)); then
		fail "no test produced any result"
	fi
	if ((${#skips[@]})); then
		echo "skipped (counted as passed):"
		printf '  %s\n' "${skips[@]}"
	fi
	if ((${#todos[@]})); then
		echo "known gaps (TAP TODO, counted as neither):"
		printf '  %s\n' "${todos[@]}"
	fi
	if ((${#failures[@]})); then
		echo "failures:"
		printf '  %s\n' "${failures[@]}"
	fi
	echo "total time $(clock); logs in $logs/"
	{
		for line in "${failures[@]}"; do echo "FAIL $line"; done
		for line in "${skips[@]}"; do echo "SKIP $line"; done
		echo "$passed passed, $failed failed"
	} >"$logs/summary.txt"
	echo "$passed passed, $failed failed"
	if ((failed)); then exit 1; fi
	exit 0
}

# --- dependencies ---------------------------------------------------------
build_step "setup-deps" bash scripts/setup-deps.sh || summary
build_step "get-harness" bash scripts/get-harness.sh || true

# --- builds ---------------------------------------------------------------
declare -A kmod_ok=()
for k in "${kernels[@]}"; do
	kmod_ok[$k]=0
	build_step "build-kmod $k" bash scripts/build-kmod.sh "$k" && kmod_ok[$k]=1
done

user_ok=0
build_step "make -C user" make -C user -j"$jobs" && user_ok=1

selftests_ok=0
build_step "make -C selftests/bftrace" make -C selftests/bftrace -j"$jobs" && selftests_ok=1
# bfctl's guest checks trace these; building them in the guest is slow
if ((user_ok)); then
	build_step "bfctl fixtures" sh user/lib/tests/resolve_fixtures/build.sh build/user/ctl-fixtures ||
		fail "bfctl fixtures did not build"
fi

# --- the first guest, in the background -----------------------------------
# Under TCG a guest keeps less than one of the two cores busy (0.8 of one,
# measured), so the first kernel's guest runs while the native steps do;
# its results are counted when it ends, after them.
guest_ready() { # kernel: say why not, or succeed
	if ((!kmod_ok[$1])); then
		echo "==> skipping the guest on $1: the module did not build"
		return 1
	fi
	if ((!selftests_ok)); then
		echo "==> skipping the guest on $1: the selftests did not build"
		return 1
	fi
}
guest_cmd() { # kernel (exec: in the background, $! is guest-run itself)
	exec bash scripts/guest-run --kernel "$1" --timeout "$guest_timeout" --out "$logs" \
		-- bash scripts/guest-selftests.sh "$1"
}
bg_kernel= bg_log= bg_t0=
if guest_ready "${kernels[0]}"; then
	bg_kernel=${kernels[0]}
	stepno=$((stepno + 1))
	bg_log=$(logname "guest $bg_kernel")
	bg_t0=$SECONDS
	echo "==> [$(clock)] guest $bg_kernel, in the background (its results come after the native steps)"
	guest_cmd "$bg_kernel" >"$bg_log" 2>&1 &
	bg_pid=$!
fi

if ((user_ok)); then
	test_step "make -C user check" make -C user check
	if ((step_rc != 0 && step_nok == 0)); then
		fail "make -C user check: exit $step_rc with no failing test reported"
	fi
else
	echo "==> skipping the native unit tests: the user-space build failed"
fi

# --- packaging (native) ---------------------------------------------------
packaging_step() { # name cmd...
	test_step "$@"
	if ((step_rc != 0 && step_nok == 0)); then
		fail "$1: exit $step_rc with no failing test reported"
	fi
}
if ((user_ok)); then
	packaging_step "make install" bash scripts/test-install.sh
else
	echo "==> skipping the make install checks: the user-space build failed"
fi
packaging_step "dkms" bash scripts/test-dkms.sh
packaging_step "flame graph in chromium" bash scripts/test-flame-render.sh
packaging_step "speedscope file in speedscope, in chromium" python3 scripts/test-speedscope-load.py


# --- native: the BPF backend ----------------------------------------------
# The one part of bftrace that runs on the build machine itself: the exact
# call-tree tests through the BPF backend.  Where this machine cannot run
# BPF (no BTF, no privileges, BPF off) they report SKIP with the reason.
# pipeline_test adds bfctl, bfcollector and bfhq over Bytefrog v1 and v2;
# bpf_refusals_test the refusals and the module's batch and mode rules;
# bpf_session_test the owner rule (kill -9 of a starter leaves nothing);
# counters_test the counters agent against calltree's model; bpf_wake_test
# that a ring wakes its reader once per watermark and that nothing is lost;
# bpf_overflow_test that a full ring's lost batches are counted exactly;
# fork_test that a child forked inside traced functions stays out of it.
if ((selftests_ok && user_ok)); then
	for t in trace_test pipeline_test bpf_refusals_test bpf_session_test counters_test \
		bpf_wake_test bpf_overflow_test fork_test; do
		test_step "bpf backend: $t (native)" env BFT_BACKEND=bpf "build/selftests/$t"
		if ((step_rc != 0 && step_nok == 0)); then
			fail "bpf backend: $t (native): exit $step_rc with no failing test reported"
		fi
	done
	# The inline backend needs no kernel feature at all: trace_test,
	# fork_test and pipeline_test above ran its variants too; inline_test
	# is its own (a target's life, 100 attach/stop cycles under load);
	# exc_test's inline variants trace the exception cases under bfctl run.
	for t in inline_test exc_test; do
		test_step "inline backend: $t (native)" env BFT_BACKEND=inline \
			"build/selftests/$t"
		if ((step_rc != 0 && step_nok == 0)); then
			fail "inline backend: $t (native): exit $step_rc with no failing test reported"
		fi
	done
	# bfctl as a newcomer uses it, on the BPF backend (the module's half
	# runs in the guests, and there the BPF one counts on fewer binaries)
	test_step "bfctl checks (native, bpf)" env BFT_BFCTL_BACKENDS=bpf \
		BFT_BFCTL_ONLY='^(counts|record|newcomer|run|usdt|follow)$' user/ctl/tests/guest_bfctl.sh
	if ((step_rc != 0 && step_nok == 0)); then
		fail "bfctl checks (native, bpf): exit $step_rc with no failing test reported"
	fi
	# bfhq --http in headless Chromium while the calltree target is traced
	packaging_step "live viewer in chromium (native, bpf)" python3 scripts/live-view-test.py
else
	echo "==> skipping the native BPF tests: the selftests did not build"
fi

# --- guests ---------------------------------------------------------------
for k in "${kernels[@]}"; do
	if [[ $k == "$bg_kernel" ]]; then
		echo "==> [$(clock)] guest $k (started at $(printf '%02d:%02d' $(((bg_t0 - t_start) / 60)) $(((bg_t0 - t_start) % 60))))"
		step_rc=0
		wait "$bg_pid" || step_rc=$?
		bg_pid=
		if [[ -n $verbose ]]; then
			cat "$bg_log"
		else
			grep -E "$shown_lines" "$bg_log" |
				sed 's/^/    /' || true
		fi
		step_log=$bg_log
		tally "guest $k" "$bg_log" "$bg_t0"
	else
		guest_ready "$k" || continue
		test_step "guest $k" guest_cmd "$k"
	fi
	log=$step_log
	# guest-run's last line tells the command's status from the kernel log's.
	last=$(grep -F "guest-run: $k: exit status" "$log" | tail -n 1 || true)
	if [[ -z $last ]]; then
		fail "guest $k: guest-run failed (exit $step_rc; log $log, console $logs/console-$k.txt)"
		continue
	fi
	if [[ $last == *"dmesg NOT clean"* ]]; then
		fail "guest $k: kernel log has warnings or traces ($logs/dmesg-$k.txt)"
	fi
	status=$(sed -E 's/.*exit status ([0-9]+).*/\1/' <<<"$last")
	if ((status != 0 && step_nok == 0)); then
		fail "guest $k: exit $status with no failing test reported (log $log)"
	fi
	# bfhq --http in headless Chromium here, the module tracing in a guest
	# that streams to it through a forwarded port (its guest logs: the test's
	# build/live-view-KVER[-udp]/guest/).  The data come over TCP from the
	# first kernel's guest, in UDP datagrams from the others': the data
	# path does not depend on the kernel, and guest time is the scarce part.
	if ((user_ok)); then
		udp=()
		[[ $k != "${kernels[0]}" ]] && udp=(--data-udp)
		packaging_step "live viewer in chromium ($k guest, module${udp:+, data over UDP})" \
			python3 scripts/live-view-test.py --guest "$k" "${udp[@]}"
	fi
done

summary
