#!/usr/bin/env bash
# Builds bftrace.ko for one kernel into build/kmod-<kver>/.
# Each kernel gets its own copy of the sources, because Kbuild writes its
# objects next to them.  Fails on any compiler warning.
set -euo pipefail
kver=${1:?usage: scripts/build-kmod.sh <kernel release>}
top=$(cd "$(dirname "$0")/.." && pwd)
kdir=/lib/modules/$kver/build
[ -d "$kdir" ] || kdir=/usr/src/linux-headers-$kver
[ -d "$kdir" ] || { echo "build-kmod: no headers for $kver (install linux-headers-$kver)" >&2; exit 1; }
out=$top/build/kmod-$kver
mkdir -p "$out"
cp -r "$top/Kbuild" "$top/kmod" "$out/"
mkdir -p "$out/include/uapi/linux"
cp "$top/include/uapi/linux/bftrace.h" "$out/include/uapi/linux/"
log=$out/build.log
if ! make -C "$kdir" M="$out" modules >"$log" 2>&1; then
	cat "$log" >&2
	echo "build-kmod: build for $kver failed" >&2
	exit 1
fi
if grep -E 'warning:|error:' "$log" >&2; then
	echo "build-kmod: warnings building for $kver" >&2
	exit 1
fi
