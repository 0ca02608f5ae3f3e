#!/usr/bin/env bash
# The DKMS packaging, natively (no guest): `make dkms-install DESTDIR=...`
# stages the module's sources, then dkms adds, builds, installs and removes
# them for every kernel of scripts/kernels.sh.  dkms works on scratch trees
# (--sourcetree, --dkmstree, --installtree, --no-depmod), so the host's own
# /usr/src, DKMS state and /lib/modules are left alone; only the MOK key
# dkms signs with is shared with the host's DKMS.  Output is TAP.
#
# Environment: BFT_KERNELS, a subset of the kernels (as for run-tests.sh).
# shellcheck disable=SC2317 # the checks are functions run through check()
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$root"
# shellcheck source=scripts/kernels.sh
. scripts/kernels.sh
read -r -a kernels <<<"${BFT_KERNELS:-$BFT_ALL_KERNELS}"

# shellcheck source=scripts/tap.sh
. scripts/tap.sh

if ! command -v dkms >/dev/null && ((EUID == 0)) && command -v apt-get >/dev/null; then
	echo "# dkms is missing; installing it"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends dkms >/dev/null 2>&1 ||
		echo "# apt-get install dkms failed"
fi
if ! command -v dkms >/dev/null; then
	echo "ok 1 # SKIP dkms is not installed and could not be installed"
	echo "1..1"
	exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
stage=$tmp/stage
srctree=$stage/usr/src
dkmstree=$tmp/dkms
insttree=$tmp/modules
mkdir -p "$dkmstree" "$insttree"
trees=(--sourcetree "$srctree" --dkmstree "$dkmstree" --installtree "$insttree")

version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' dkms.conf)
name=$(sed -n 's/^PACKAGE_NAME="\(.*\)"$/\1/p' dkms.conf)
# shellcheck disable=SC2016 # $(VERSION) is make's, not the shell's
make_version=$(make -s --no-print-directory -f Makefile --eval 'bft-print-version: ; @echo $(VERSION)' bft-print-version)
same_version() {
	echo "dkms.conf: $name $version; Makefile: $make_version"
	[[ -n $version && $name == bftrace && $make_version == "$version" ]]
}
check "dkms.conf names bftrace $version, the version the Makefile uses" same_version

# The staged tree must hold exactly what Kbuild compiles: a file missing
# breaks the build, an extra one (build products, tools) bloats every
# kernel's rebuild.
expect_files() {
	printf '%s\n' Kbuild Makefile dkms.conf include/uapi/linux/bftrace.h
	printf '%s\n' kmod/*.c kmod/*.h
}
staged_files() {
	(cd "$srctree/bftrace-$version" && find . -type f -printf '%P\n')
}
check "make dkms-install DESTDIR=... stages the module sources" \
	make -s --no-print-directory dkms-install DESTDIR="$stage"
check "the staged tree holds exactly Kbuild, Makefile, dkms.conf, kmod/ and the uapi header" \
	diff <(expect_files | sort) <(staged_files | sort)

check "dkms add" dkms add -m bftrace -v "$version" "${trees[@]}"
((passed)) || tap_finish

# The module DKMS keeps for kernel $1 (compressed if that kernel's
# modules are), uncompressed into $2.
kept_module() {
	local dir
	dir=$dkmstree/bftrace/$version/$1/$(uname -m)/module
	if [[ -f $dir/bftrace.ko ]]; then
		cp "$dir/bftrace.ko" "$2"
	elif [[ -f $dir/bftrace.ko.xz ]]; then
		xz -dc "$dir/bftrace.ko.xz" >"$2"
	elif [[ -f $dir/bftrace.ko.zst ]]; then
		zstd -qdc "$dir/bftrace.ko.zst" >"$2"
	elif [[ -f $dir/bftrace.ko.gz ]]; then
		gzip -dc "$dir/bftrace.ko.gz" >"$2"
	else
		echo "no bftrace.ko* in $dir"
		return 1
	fi
}
no_warnings() { # make.log
	if grep -inE '\b(warning|error)\b' "$1"; then return 1; fi
}
vermagic_is() { # ko kver
	local vm
	vm=$(modinfo -F vermagic "$1")
	echo "vermagic: $vm"
	[[ $vm == "$2 "* ]]
}
# The Kbuild picks the uprobe API from the headers it compiles against;
# read the same headers here to know which unregister call the module must
# import.  Debian's per-flavour build tree includes the common tree.
uses_kernels_uprobe_api() { # ko kver
	local kdir=/lib/modules/$2/build common hdr want other
	common=$(sed -n 's|^include \(/.*\)/Makefile$|\1|p' "$kdir/Makefile")
	hdr=${common:-$kdir}/include/linux/uprobes.h
	[[ -f $hdr ]] || { echo "no $hdr"; return 1; }
	if grep -q uprobe_unregister_nosync "$hdr"; then
		want=uprobe_unregister_nosync other=uprobe_unregister
	else
		want=uprobe_unregister other=uprobe_unregister_nosync
	fi
	nm -u "$1" | grep uprobe
	nm -u "$1" | grep -qx " *U $want" && ! nm -u "$1" | grep -qx " *U $other"
}
installed_module() { # kver
	find "$insttree/$1" -name 'bftrace.ko*' -print | grep -q .
}

for k in "${kernels[@]}"; do
	if [[ ! -e /lib/modules/$k/build/Makefile ]]; then
		not_ok "$k: no kernel build tree (install linux-headers-$k)"
		continue
	fi
	mkdir -p "$insttree/$k"
	t0=$SECONDS
	check "$k: dkms build" dkms build -m bftrace -v "$version" -k "$k" "${trees[@]}"
	if ((!passed)); then
		log=$dkmstree/bftrace/$version/build/make.log
		[[ ! -f $log ]] || tail -n 30 "$log" | sed 's/^/# /'
		continue
	fi
	echo "# $k: dkms build took $((SECONDS - t0)) s"
	log=$dkmstree/bftrace/$version/$k/$(uname -m)/log/make.log
	check "$k: the build log has no warning or error" no_warnings "$log"
	ko=$tmp/bftrace-$k.ko
	check "$k: dkms keeps the built bftrace.ko" kept_module "$k" "$ko"
	if ((passed)); then
		check "$k: the module's vermagic is $k" vermagic_is "$ko" "$k"
		check "$k: the module uses the uprobe API of $k's headers" uses_kernels_uprobe_api "$ko" "$k"
		echo "# $k: the module imports $(nm -u "$ko" | grep -o 'uprobe_[a-z_]*' | tr '\n' ' ')"
	fi
	check "$k: dkms install" dkms install --no-depmod -m bftrace -v "$version" -k "$k" "${trees[@]}"
	check "$k: bftrace.ko is in the install tree" installed_module "$k"
done

check "dkms remove --all" dkms remove --no-depmod -m bftrace -v "$version" --all "${trees[@]}"
removed_everywhere() {
	local left
	left=$(find "$insttree" "$dkmstree" -name 'bftrace*' -print)
	[[ -z $left ]] || { printf '%s\n' "$left"; return 1; }
	[[ -z $(dkms status -m bftrace "${trees[@]}" 2>/dev/null) ]]
}
check "after dkms remove, no module and no DKMS state are left" removed_everywhere
check "make dkms-uninstall DESTDIR=... removes the staged sources" \
	make -s --no-print-directory dkms-uninstall DESTDIR="$stage"
check "the staged source tree is gone" test ! -e "$srctree/bftrace-$version"

tap_finish
