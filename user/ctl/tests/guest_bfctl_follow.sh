# SPDX-License-Identifier: GPL-2.0
# Sourced by guest_bfctl.sh: attach follows later loads (section "follow"),
# on the fixture fx_dl in its "wait" mode: it starts, says "ready", and
# opens libfxdl.so at SIGUSR1, so that bfctl attaches to it running.

FOLLOW_DIR=${BFT_FOLLOW_DIR:-/run/bftrace/follow}

# The follower of pid, from its state file; empty when there is none.
follower_of() {
	awk '$1 == "follower" { print $2 }' "$FOLLOW_DIR/$1" 2>/dev/null
}

tracer_of() {
	awk '$1 == "TracerPid:" { print $2 }' "/proc/$1/status" 2>/dev/null
}

# fx_dl's exit status, waiting at most 60 s.
fx_status() { # pid
	timeout 60 tail --pid="$1" -f /dev/null
	kill -KILL "$1" 2>/dev/null
	wait "$1"
}

# The follower of pid has let go of it and its state file is gone.
follower_gone() { # pid, follower
	local i
	for ((i = 0; i < 50; i++)); do
		if [[ ! -e $FOLLOW_DIR/$1 && $(tracer_of "$1") == @(0|) ]] &&
		   ! [[ -d /proc/$2 && $(awk '{ print $3 }' "/proc/$2/stat" 2>/dev/null) != Z ]]; then
			return 0
		fi
		sleep 0.1
	done
	echo "# process $1: TracerPid $(tracer_of "$1"), state file: $(cat "$FOLLOW_DIR/$1" 2>&1)"
	return 1
}

# attach with a pattern whose library is not loaded yet: pending in
# attach's words and in status, then exact once the library comes.
follow_dlopen_check() { # name, mode (fx_dl's: load, reopen)
	local name=$1 mode=$2 pid f rc
	settle
	fixture "$T/fx.out" "$FX/fx_dl" "$mode" wait || { not_ok "$name # fx_dl not ready"; return; }
	pid=$FXPID
	if ! bf attach --pid "$pid" -p 'libfxdl*:fxdl_*' >"$T/att" 2>"$T/err"; then
		note "$T/err"; not_ok "$name # attach failed"; kill -KILL "$pid"; return
	fi
	f=$(follower_of "$pid")
	if ! grep -q "pattern 'libfxdl\*:fxdl_\*' is pending" "$T/err" || [[ -z $f ]] ||
	   [[ $(tracer_of "$pid") != "$f" ]]; then
		note "$T/err"; not_ok "$name # not pending, or no follower (follower '$f', tracer $(tracer_of "$pid"))"
		kill -KILL "$pid"; return
	fi
	bf status >"$T/st"
	if ! grep -qE "^followed process $pid \(by bfctl attach $f, 0 loads seen\); pending: 'libfxdl\*:fxdl_\*'" "$T/st"; then
		note "$T/st"; not_ok "$name # status shows no pending pattern"; kill -KILL "$pid"; return
	fi
	bf start --persist >/dev/null 2>&1
	kill -USR1 "$pid"
	fx_status "$pid"
	rc=$?
	# the process's end, not stop, ends the follower
	follower_gone "$pid" "$f" >"$T/gone"
	local gone=$?
	bf stop >/dev/null
	bf --json record --last --events >"$T/ev.json" 2>>"$T/err"
	if [[ $rc != 0 ]]; then
		note "$T/fx.out"; not_ok "$name # fx_dl exited $rc"; return
	fi
	if ! dlopen_cmp "$pid" "$T/ev.json" "$mode" >"$T/cmp" 2>&1; then
		note "$T/cmp" "$FOLLOW_DIR/$pid.log"; not_ok "$name"; return
	fi
	if [[ $mode == reopen ]] && ! grep -qE 'unloaded a library: [0-9]+ probes detached' "$FOLLOW_DIR/$pid.log"; then
		note "$FOLLOW_DIR/$pid.log"; not_ok "$name # no detach at dlclose"; return
	fi
	if [[ $mode == reopen ]] && ! dlopen_ids_once >"$T/cmp2" 2>&1; then
		note "$T/cmp2"; not_ok "$name # the method table"; return
	fi
	if [[ $gone != 0 ]]; then
		note "$T/gone"; not_ok "$name # the follower stayed after the process ended"; return
	fi
	note "$T/cmp"; ok "$name"
}

# What ends a follower: stop, detach, a session ended elsewhere, SIGKILL
# (also while it holds the loading thread).  Each time the process runs on
# untraced, and fx_dl exits 0 after its dlopen(); after the first three
# nothing of libfxdl is ever attached.
follow_end_check() { # name, how (stop, detach, elsewhere, sigkill, sigkill-held)
	local name=$1 how=$2 pid f rc live hold=0
	settle
	fixture "$T/fx.out" "$FX/fx_dl" reopen wait || { not_ok "$name # fx_dl not ready"; return; }
	pid=$FXPID
	# the follower pauses 30 s in each hold: time to kill it there
	[[ $how == sigkill-held ]] && hold=30000
	if ! BFT_FOLLOW_HOLD_MS=$hold bf attach --pid "$pid" -p 'libfxdl*:fxdl_*' -p 'fx_dl:main' \
	     >/dev/null 2>"$T/err"; then
		note "$T/err"; not_ok "$name # attach failed"; kill -KILL "$pid"; return
	fi
	f=$(follower_of "$pid")
	if [[ -z $f ]]; then
		note "$T/err"; not_ok "$name # no follower"; kill -KILL "$pid"; return
	fi
	bf start --persist >/dev/null 2>&1
	if [[ $how == sigkill-held ]]; then
		kill -USR1 "$pid"
		if ! wait_for "$FOLLOW_DIR/$pid.log" 'held on the loader hook' 60; then
			note "$FOLLOW_DIR/$pid.log"; not_ok "$name # never held"; kill -KILL "$pid" "$f"; return
		fi
	fi
	case $how in
	stop) bf stop >/dev/null ;;
	detach) bf detach --pid "$pid" >/dev/null ;;
	# a stop that does not know of the follower, as bfcollector's is
	elsewhere) BFT_FOLLOW_DIR=$T/none bf stop >/dev/null ;;
	sigkill*) kill -KILL "$f" ;;
	esac
	if [[ $how != sigkill* ]] && ! follower_gone "$pid" "$f" >"$T/gone"; then
		note "$T/gone"; not_ok "$name # the follower stayed"; kill -KILL "$pid"; return
	fi
	[[ $how != sigkill-held ]] && kill -USR1 "$pid"
	fx_status "$pid"
	rc=$?
	# every entry since the start, detached ones included
	live=$(bf --json methods --all | python3 -c '
import json, sys
print(sum(1 for m in json.load(sys.stdin)["methods"] if "fxdl_" in m["name"]))')
	if [[ $rc != 0 ]]; then
		note "$T/fx.out"; not_ok "$name # fx_dl exited $rc"
	elif [[ $how != sigkill* && $live != 0 ]]; then
		bf methods --all | note /dev/stdin; not_ok "$name # libfxdl was attached after the end"
	else
		ok "$name"
	fi
	bf stop >/dev/null 2>&1
	bf detach --all >/dev/null 2>&1
}

# Another tracer holds the process: attach attaches, says that later loads
# are not followed, and succeeds; with nothing to attach now, it fails.
follow_traced_check() {
	local name="attach to a process another tracer holds: probes attached, later loads said not followed" pid tr rc
	settle
	fixture "$T/fx.out" "$FX/fx_dl" load wait || { not_ok "$name # fx_dl not ready"; return; }
	pid=$FXPID
	python3 -c '
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
if libc.ptrace(0x4206, int(sys.argv[1]), None, None):	# PTRACE_SEIZE
    sys.exit("seize: errno %d" % ctypes.get_errno())
print("seized", flush=True)
time.sleep(120)' "$pid" >"$T/tracer.out" 2>&1 &
	tr=$!
	bg_pids+=("$tr")
	wait_for "$T/tracer.out" seized 30
	bf attach --pid "$pid" -p 'libfxdl*:fxdl_*' -p 'fx_dl:main' >/dev/null 2>"$T/err"
	rc=$?
	bf attach --pid "$pid" -p 'libfxdl*:fxdl_*' >/dev/null 2>>"$T/err"
	local rc2=$?
	kill -KILL "$tr"; wait "$tr" 2>/dev/null
	kill -USR1 "$pid"; fx_status "$pid" >/dev/null
	if [[ $rc == 0 && $rc2 != 0 ]] &&
	   grep -q "is traced by process $tr (a debugger?): later loads are not followed" "$T/err"; then
		ok "$name"
	else
		note "$T/err" "$T/tracer.out"; not_ok "$name (exit $rc, then $rc2)"
	fi
	bf detach --all >/dev/null 2>&1
}

# A second attach to a followed process: one follower, both attaches'
# patterns, both libraries' functions traced.
follow_merge_check() {
	local name="a second attach: one follower for the patterns of both" pid f1 f2
	settle
	fixture "$T/fx.out" "$FX/fx_dl" load wait || { not_ok "$name # fx_dl not ready"; return; }
	pid=$FXPID
	bf attach --pid "$pid" -p 'libfxdl*:fxdl_entry' >/dev/null 2>"$T/err"
	f1=$(follower_of "$pid")
	bf attach --pid "$pid" -p 'libfxdl*:fxdl_leaf' >/dev/null 2>>"$T/err"
	f2=$(follower_of "$pid")
	bf start --persist >/dev/null 2>&1
	kill -USR1 "$pid"
	fx_status "$pid" >/dev/null
	bf stop >/dev/null
	bf record --last >"$T/rec" 2>>"$T/err"
	if [[ -n $f1 && -n $f2 && $f1 != "$f2" ]] && ! [[ -d /proc/$f1 && $(awk '{ print $3 }' "/proc/$f1/stat") != Z ]] &&
	   grep -qE '^ +6 +6 +libfxdl\.so!fxdl_entry' "$T/rec" &&
	   grep -qE '^ +6 +6 +libfxdl\.so!fxdl_leaf' "$T/rec"; then
		ok "$name"
	else
		note "$T/err" "$T/rec"; not_ok "$name (followers '$f1' then '$f2')"
	fi
}

# bfctl run's pending patterns, in status while its process runs.
follow_run_status_check() {
	local name="run: status shows the patterns that wait for their library" pid rp i
	settle
	: >"$T/fx.out"
	"$BFCTL" run -p 'libfxdl*:fxdl_*' -p 'fx_dl:main' -- "$FX/fx_dl" load wait >"$T/fx.out" 2>"$T/err" &
	rp=$!
	bg_pids+=("$rp")
	wait_for "$T/fx.out" '^ready' 30
	pid=$(pgrep -P "$rp" -x fx_dl)
	bf status >"$T/st"
	[[ -n $pid ]] && kill -USR1 "$pid"
	timeout 60 tail --pid="$rp" -f /dev/null
	for ((i = 0; i < 20; i++)); do [[ -e $FOLLOW_DIR/$pid ]] || break; sleep 0.1; done
	if [[ -n $pid ]] &&
	   grep -qE "^followed process $pid \(by bfctl run $rp\); pending: 'libfxdl\*:fxdl_\*'" "$T/st" &&
	   [[ ! -e $FOLLOW_DIR/$pid ]]; then
		ok "$name"
	else
		note "$T/st" "$T/err"; not_ok "$name (process '$pid' of bfctl $rp)"
	fi
}

sec_follow() {
	follow_dlopen_check "attach follows dlopen: a pending pattern, the constructor and two threads' first calls, exactly" load
	follow_dlopen_check "attach follows dlclose and a second dlopen: the constructor runs traced again" reopen
	follow_end_check "stop ends the follower: the process runs on untraced and loads unharmed" stop
	follow_end_check "detach --pid ends the follower" detach
	follow_end_check "a session ended by another (bfcollector) ends the follower within a second" elsewhere
	follow_end_check "a follower killed by SIGKILL leaves nothing that harms the process" sigkill
	follow_end_check "a follower killed while it holds the loading thread: the process goes on" sigkill-held
	follow_traced_check
	follow_merge_check
	follow_run_status_check
}
