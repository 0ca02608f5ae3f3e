#!/usr/bin/env bash
# `make demo`: trace a real program end to end and keep what HQ made of it.
# Installs what is missing, builds the module and the tools, boots Debian's
# 6.12 kernel under QEMU, and inside it runs bfhq, bfcollector and
# `bfctl run` on the sqlite3 shell, traced on sqlite3_* in libsqlite3.
# BFT_BACKEND=bpf: no module and no guest; the same, on this machine,
# through the BPF backend (root, a kernel with BTF).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$root"
# shellcheck source=scripts/kernels.sh
. scripts/kernels.sh
kver=${BFT_DEMO_KERNEL:-$KVER_612}
out=${BFT_DEMO_OUT:-$root/build/demo}

step() { printf '==> %s\n' "$*"; }

step "installing missing packages (scripts/setup-deps.sh)"
scripts/setup-deps.sh
if [[ ${BFT_BACKEND:-} == bpf ]]; then
	step "building bfctl, bfcollector, bfhq"
	make -s -C user >/dev/null
	rm -rf "$out"
	mkdir -p "$out"
	step "tracing sqlite3 on this machine through the BPF backend"
	BFT_EXPORT=$out timeout 240 scripts/demo-guest.sh
else
	step "building bftrace.ko for $kver"
	scripts/build-kmod.sh "$kver"
	step "building bfctl, bfcollector, bfhq"
	make -s -C user >/dev/null
	rm -rf "$out"
	mkdir -p "$out"
	step "booting $kver under QEMU and tracing sqlite3 (about a minute)"
	scripts/guest-run --kernel "$kver" --timeout 240 --out "$out/logs" \
		--export "$out" -- scripts/demo-guest.sh
fi
trace=$(find "$out" -maxdepth 2 -name folded.txt -printf '%h\n' | head -n 1)
[[ -n $trace ]] || { echo "demo: HQ wrote no trace" >&2; exit 1; }
echo
sed -n '1,40p' "$trace/summary.txt"
echo
echo "demo: the trace is in $trace:"
echo "  tree.txt     call tree per thread, with durations"
echo "  trace.pftrace  Perfetto trace (open it in https://ui.perfetto.dev)"
echo "  trace.json   the same as Chrome JSON"
echo "  trace.speedscope.json  the calls for https://www.speedscope.app"
echo "  folded.txt   folded stacks, weighted by self time"
echo "  flame.svg    flame graph (bfhq draws it; open it in a browser)"
