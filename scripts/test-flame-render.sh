#!/usr/bin/env bash
# The flame graph must render in a real browser: bfhq --flame (what bfhq
# writes as each trace's flame.svg) draws scripts/fixtures/flame.folded,
# headless Chromium screenshots the SVG, and scripts/flame-render-check.py
# compares the picture with the SVG (coverage, each frame's fill at its
# place, the distinct fills).  Then bfhq's live page
# of a running trace, screenshot the README's way.  The SVG, the PNGs and
# Chromium's logs stay in build/flame-render/ for inspection.  Output is TAP.
#
# Environment: BFT_CHROMIUM, the browser to run (default: chromium).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$root"
out=$root/build/flame-render
fixture=scripts/fixtures/flame.folded
chromium=${BFT_CHROMIUM:-chromium}
rm -rf "$out"
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=scripts/tap.sh
. scripts/tap.sh

if build/user/bfhq --flame "$fixture" -o "$out/flame.svg" 2>"$out/flamegraph.err" &&
   [[ -s $out/flame.svg ]]; then
	ok "bfhq --flame draws $fixture"
else
	not_ok "bfhq --flame draws $fixture"
	sed 's/^/# /' "$out/flamegraph.err"
	tap_finish
fi

if ! command -v "$chromium" >/dev/null; then
	not_ok "$chromium is installed (scripts/setup-deps.sh installs it)"
	tap_finish
fi
# Root needs --no-sandbox; a private profile keeps the run from touching
# (or depending on) the user's.  Chromium logs D-Bus errors on a machine
# without a session bus; they go to the log, not the TAP stream.
rc=0
timeout -k 10 120 "$chromium" --headless --no-sandbox --disable-gpu \
	--user-data-dir="$tmp/profile" --hide-scrollbars \
	--screenshot="$out/flame.png" --window-size=1200,800 \
	"file://$out/flame.svg" >"$out/chromium.log" 2>&1 || rc=$?
if ((rc == 0)) && [[ -s $out/flame.png ]]; then
	ok "headless $chromium screenshots the SVG"
else
	why="exit $rc"
	((rc != 124)) || why="timed out after 120 s"
	not_ok "headless $chromium screenshots the SVG ($why)"
	tail -n 20 "$out/chromium.log" | sed 's/^/# /'
fi

# The fixture's widest leaf is labelled in full; the C++ name checks that
# '<' and '>' reach the SVG escaped and come back out of the parser whole.
crc=0
check_out=$(python3 scripts/flame-render-check.py --start $((tap_n + 1)) \
	--label sqlite3_step --frame 'kv::Cache<std::string>::get' \
	--size 1200x800 "$out/flame.svg" "$out/flame.png" 2>&1) || crc=$?
printf '%s\n' "$check_out"
tap_n=$((tap_n + $(grep -cE '^(not )?ok [0-9]+' <<<"$check_out" || true)))
check_nok=$(grep -cE '^not ok [0-9]+' <<<"$check_out" || true)
tap_nfail=$((tap_nfail + check_nok))
if ((crc != 0 && check_nok == 0)); then
	not_ok "scripts/flame-render-check.py failed (exit $crc) without a failing check"
fi
echo "# screenshot: ${out#"$root"/}/flame.png"

# The live page, screenshot as the README says (chromium --timeout): its
# event stream never ends while a trace runs, so waiting for the network
# to go idle (--virtual-time-budget, Playwright's networkidle) would wait
# for the trace to end.  The trace here runs until the test ends it: its
# replay stream is a FIFO whose writer stays open.
mkdir -p "$tmp/rp"
mkfifo "$tmp/rp/cpu0.bft"
: >"$tmp/rp/methods"
exec {writer}<>"$tmp/rp/cpu0.bft"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
build/user/bfhq --start -p "$port" --http 0 -o "$tmp/hq" >"$out/bfhq.log" 2>&1 &
hq=$!
build/user/bfcollector --hq "127.0.0.1:$port" --replay "$tmp/rp" >"$out/collector.log" 2>&1 &
coll=$!
for _ in $(seq 100); do
	grep -q 'trace-1' "$out/bfhq.log" && break
	sleep 0.1
done
url=$(sed -n 's|.*live viewer on \(http://[^ ]*\).*|\1|p' "$out/bfhq.log")
rc=0
t0=$SECONDS
timeout -k 10 60 "$chromium" --headless --no-sandbox --disable-gpu \
	--user-data-dir="$tmp/profile-live" --hide-scrollbars --window-size=1400,900 \
	--timeout=3000 --screenshot="$out/live.png" "${url}#trace=1" \
	>"$out/chromium-live.log" 2>&1 || rc=$?
secs=$((SECONDS - t0))
if ((rc == 0 && secs < 30)) && [[ -n $url && -s $out/live.png ]] && kill -0 "$coll" 2>/dev/null; then
	ok "the live page of a running trace screenshots with --timeout ($secs s)"
else
	not_ok "the live page of a running trace screenshots with --timeout (exit $rc, $secs s, url '${url}')"
	tail -n 5 "$out/bfhq.log" "$out/collector.log" "$out/chromium-live.log" | sed 's/^/# /'
fi
exec {writer}>&-
kill "$coll" "$hq" 2>/dev/null
wait "$coll" "$hq" 2>/dev/null || true
tap_finish
