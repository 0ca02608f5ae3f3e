#!/usr/bin/env bash
# Install every Debian package bftrace needs to build and test.  Quick and
# silent when everything is present; apt-get runs only for what is missing.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=scripts/kernels.sh
. "$here/kernels.sh"

packages=(
	build-essential pkg-config python3 cpio xz-utils kmod
	qemu-system-x86 busybox-static
	# The meta packages track Debian's default kernel; the versioned
	# packages pin the exact ABI the tests are written against.
	linux-image-amd64 linux-headers-amd64
	"linux-image-$KVER_61" "linux-headers-$KVER_61"
	"linux-image-$KVER_612-unsigned" "linux-headers-$KVER_612"
	linux-source-6.1
	libmnl-dev libelf-dev libdw-dev libbpf-dev libiberty-dev libjansson-dev
	# bfctl's entry probe placement decodes x86-64 instructions
	libcapstone-dev
	# <sys/sdt.h>: the USDT probes of the test programs
	systemtap-sdt-dev
	# bfcollector's inclusion and exclusion regexes
	libpcre2-dev
	# bfhq --http, the live viewer
	libmicrohttpd-dev
	# bfcollector --user: the switch of user that keeps capabilities
	libcap-ng-dev
	# make fuzz: libFuzzer harnesses (clang -fsanitize=fuzzer)
	clang libclang-rt-dev
	# the BPF backend: vmlinux.h and the skeleton made by bpftool (its
	# programs are built with the clang above)
	bpftool
	# peers and real programs the tests and benchmarks trace
	bpftrace valgrind sqlite3 linux-perf iproute2
	# packaging checks: DKMS builds, man pages, the flame graph in a browser
	dkms man-db chromium
	# speedscope's web app (npm, into build/speedscope/) loads
	# trace.speedscope.json in that browser
	nodejs
)

missing=()
for p in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[[ $status == installed ]] || missing+=("$p")
done
# Debian's npm, unless the nodejs installed brings its own (NodeSource's
# does, and conflicts with Debian's)
command -v npm >/dev/null || missing+=(npm)

if ((${#missing[@]})); then
	echo "setup-deps: installing ${missing[*]}"
	sudo=()
	if ((EUID != 0)); then
		command -v sudo >/dev/null ||
			{ echo "setup-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
		sudo=(sudo)
	fi
	export DEBIAN_FRONTEND=noninteractive
	"${sudo[@]}" apt-get update -q
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The packages can be "installed" yet the files the scripts use missing
# (e.g. a container image that strips /boot); say which one.
for k in "$KVER_61" "$KVER_612"; do
	for f in "/boot/vmlinuz-$k" "/lib/modules/$k/modules.dep" "/usr/src/linux-headers-$k/Makefile"; do
		[[ -e $f ]] || { echo "setup-deps: $f is missing although its package is installed" >&2; exit 1; }
	done
done
for f in /usr/src/linux-source-6.1.tar.xz /bin/busybox; do
	[[ -e $f ]] || { echo "setup-deps: $f is missing although its package is installed" >&2; exit 1; }
done
