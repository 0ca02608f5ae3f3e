#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Build the resolver fixtures into OUTDIR:  build.sh OUTDIR
#
#   libfx.so      shared library (PIC)
#   fx_c          C, not PIE, no CET, with .symtab
#   fx_pie        C, PIE, linked with libfx.so (rpath $ORIGIN)
#   fx_cet        C, PIE, -fcf-protection=full (functions start with endbr64)
#   fx_static     C, static
#   fx_dl         C, PIE, dlopen()s libfxdl.so at run time (not a DT_NEEDED)
#   fx_usdt       C, PIE, two threads hitting USDT probes, one behind a
#                 semaphore, one in libfxusdt.so (rpath $ORIGIN)
#   fx_stripped   fx_stripped.full (PIE, -rdynamic) stripped: .dynsym only
#   fx_dbg        PIE stripped to .dynsym, its .symtab in fx_dbg.debug
#                 (found by build-id or .gnu_debuglink)
#   fx_dbg2       fx_dbg without .gnu_debuglink; its debug file is
#                 dbgroot/.build-id/xx/rest.debug, and in dbgbad/ the same
#                 name holds the debug file of another build
#   fx_cpp        C++, PIE
#   fx_cold       C, PIE, -O2: cf_work.cold (a cold fragment), setjmp
#   fx_cold_static  the same, static: setjmp and its kin inside
#   fx_exc        C++, PIE, throws
#   fx_exc_stripped  fx_exc static, stripped of every symbol but fx_exc_*
# and for each program X: X.nm (nm -S), X.nmd (nm -D -S), X.bytes (X bytes).
# Outputs newer than every source are kept; OUTDIR/stamp marks completion.
# Environment: CC, CXX (default cc, c++).
set -eu
here=$(cd "$(dirname "$0")" && pwd -P)
out=$1
mkdir -p "$out"
cd "$out"
CC=${CC:-cc}
CXX=${CXX:-c++}
srcs="$here/fx.h $here/fx_main.c $here/fx_lib.c $here/fx_cpp.cc $here/fx_cold.c $here/fx_exc.cc $here/fx_dl.c $here/fx_dl_lib.c $here/fx_usdt.c $here/fx_usdt_gated.c $here/fx_usdt_lib.c $here/build.sh"

fresh() { # output
	[ -e "$1" ] || return 1
	for s in $srcs; do [ "$1" -nt "$s" ] || return 1; done
}
base="-O1 -g -fno-omit-frame-pointer -I$here"

fresh libfx.so || $CC $base -fPIC -shared -fcf-protection=none -o libfx.so "$here/fx_lib.c"
fresh fx_c || $CC $base -no-pie -fcf-protection=none -o fx_c "$here/fx_main.c"
fresh fx_pie || $CC $base -fPIE -pie -fcf-protection=none -DFX_WITH_LIB -o fx_pie \
	"$here/fx_main.c" -L. -lfx -Wl,-rpath,'$ORIGIN'
fresh libfxdl.so || $CC $base -fPIC -shared -fcf-protection=none -o libfxdl.so "$here/fx_dl_lib.c"
fresh fx_dl || $CC $base -fPIE -pie -fcf-protection=none -pthread -o fx_dl "$here/fx_dl.c" -ldl
fresh libfxusdt.so || $CC $base -fPIC -shared -fcf-protection=none -o libfxusdt.so "$here/fx_usdt_lib.c"
fresh fx_usdt || $CC $base -fPIE -pie -fcf-protection=none -pthread -o fx_usdt \
	"$here/fx_usdt.c" "$here/fx_usdt_gated.c" -L. -lfxusdt -Wl,-rpath,'$ORIGIN'
fresh fx_cet || $CC $base -fPIE -pie -fcf-protection=full -o fx_cet "$here/fx_main.c"
fresh fx_static || $CC $base -static -fcf-protection=none -o fx_static "$here/fx_main.c"
if ! fresh fx_stripped; then
	$CC $base -fPIE -pie -rdynamic -fcf-protection=none -o fx_stripped.full "$here/fx_main.c"
	strip --strip-all -o fx_stripped fx_stripped.full
fi
if ! fresh fx_dbg; then
	$CC $base -fPIE -pie -rdynamic -fcf-protection=none -Wl,--build-id -o fx_dbg.full "$here/fx_main.c"
	objcopy --only-keep-debug fx_dbg.full fx_dbg.debug
	strip --strip-all -o fx_dbg fx_dbg.full
	objcopy --add-gnu-debuglink=fx_dbg.debug fx_dbg
fi
if ! fresh fx_dbg2; then
	objcopy --remove-section .gnu_debuglink fx_dbg fx_dbg2
	id=$(readelf -n fx_dbg | sed -n 's/.*Build ID: //p')
	rm -rf dbgroot dbgbad
	for d in dbgroot dbgbad; do
		mkdir -p "$d/.build-id/$(echo "$id" | cut -c1-2)"
	done
	rest=.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug
	cp fx_dbg.debug "dbgroot/$rest"
	objcopy --only-keep-debug fx_cet "dbgbad/$rest"
fi
fresh fx_cpp || $CXX $base -fPIE -pie -fcf-protection=none -o fx_cpp "$here/fx_cpp.cc"
fresh fx_cold || $CC -O2 -g -fPIE -pie -fcf-protection=none -o fx_cold "$here/fx_cold.c"
fresh fx_cold_static || $CC -O2 -g -static -fcf-protection=none -o fx_cold_static "$here/fx_cold.c"
fresh fx_exc || $CXX $base -fPIE -pie -fcf-protection=none -o fx_exc "$here/fx_exc.cc"
if ! fresh fx_exc_stripped; then
	$CXX $base -static -fcf-protection=none -o fx_exc_stripped.full "$here/fx_exc.cc"
	strip --strip-all --wildcard --keep-symbol='*fx_exc_*' -o fx_exc_stripped fx_exc_stripped.full
fi

for p in libfx.so fx_c fx_pie fx_cet fx_static fx_stripped fx_stripped.full fx_dbg fx_dbg.full fx_cpp fx_cold fx_cold_static; do
	fresh "$p.nm" || nm -S --defined-only "$p" >"$p.nm" 2>/dev/null || :
	fresh "$p.nmd" || nm -D -S --defined-only "$p" >"$p.nmd" 2>/dev/null || :
done
for p in fx_c fx_pie fx_cet fx_static fx_stripped fx_dbg fx_cpp; do
	fresh "$p.bytes" || "./$p" bytes >"$p.bytes"
done
touch stamp
