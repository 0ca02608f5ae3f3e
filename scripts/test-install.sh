#!/usr/bin/env bash
# `make install` and `make uninstall` into a scratch DESTDIR: every file
# lands where PREFIX says with its mode, the installed tools run, the
# installed man pages format without warnings, the installed header
# compiles on its own, and uninstall leaves no file behind.  Output is TAP.
# shellcheck disable=SC2317 # the checks are functions run through check()
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$root"

# shellcheck source=scripts/tap.sh
. scripts/tap.sh

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/dest

# path under DESTDIR, mode
files=(
	usr/bin/bfctl:755
	usr/bin/bfcollector:755
	usr/bin/bfhq:755
	usr/share/man/man8/bfctl.8:644
	usr/share/man/man1/bfcollector.1:644
	usr/share/man/man1/bfhq.1:644
	usr/include/linux/bftrace.h:644
)
# bfhq --http's page
for f in user/hq/www/*; do
	files+=("usr/share/bftrace/www/${f##*/}:644")
done

check "make install DESTDIR=... PREFIX=/usr" \
	make -s --no-print-directory install DESTDIR="$dest" PREFIX=/usr

has_mode() { # file mode
	[[ -f $1 ]] || { echo "$1: missing"; return 1; }
	local m
	m=$(stat -c %a "$1")
	[[ $m == "$2" ]] || { echo "$1: mode $m"; return 1; }
}
for f in "${files[@]}"; do
	check "${f%:*} installed with mode ${f#*:}" has_mode "$dest/${f%:*}" "${f#*:}"
done

only_these() {
	diff <(printf '%s\n' "${files[@]%:*}" | sort) <(cd "$dest" && find . -type f -printf '%P\n' | sort)
}
check "make install installs nothing else" only_these

# --help must go to standard output, exit 0 and name the tool.
runs_help() { # binary name
	local out
	out=$("$1" --help) || { echo "$2 --help: exit $?"; return 1; }
	grep -q "$2" <<<"$out" || { echo "$2 --help does not name $2:"; echo "$out"; return 1; }
}
for t in bfctl bfcollector bfhq; do
	check "installed $t --help exits 0" runs_help "$dest/usr/bin/$t" "$t"
done

# The installed bfhq serves the installed page, not the source tree's.
serves_installed_page() {
	local log
	log=$(BFHQ_WWW='' "$dest/usr/bin/bfhq" --port 0 --http 127.0.0.1:0 -o "$tmp/hqout" --timeout 1 2>&1) || true
	grep -qF "page from $dest/usr/bin/../share/bftrace/www)" <<<"$log" || { echo "$log"; return 1; }
}
check "installed bfhq --http finds its page under share/bftrace/www" serves_installed_page

# Any diagnostic of the formatter is a defect of the page.  man-db
# when present (what users run), else groff directly.
formats_clean() { # page name
	local out err
	if command -v man >/dev/null; then
		err=$(MANWIDTH=80 LC_ALL=C.UTF-8 man --warnings -l "$1" 2>&1 >"$tmp/page.txt") ||
			{ echo "man -l $1 failed: $err"; return 1; }
	elif command -v groff >/dev/null; then
		err=$(groff -man -ww -Tutf8 "$1" 2>&1 >"$tmp/page.txt") ||
			{ echo "groff $1 failed: $err"; return 1; }
	else
		echo "neither man nor groff is installed (scripts/setup-deps.sh installs man-db)"
		return 1
	fi
	[[ -z $err ]] || { echo "$err"; return 1; }
	out=$(sed -n '1,/^DESCRIPTION/p' "$tmp/page.txt")
	if ! grep -q '^NAME' <<<"$out" || ! grep -q "$2" <<<"$out"; then
		echo "no NAME section naming $2:"
		head -n 20 "$tmp/page.txt"
		return 1
	fi
}
check "bfctl.8 formats without warnings" formats_clean "$dest/usr/share/man/man8/bfctl.8" bfctl
check "bfcollector.1 formats without warnings" formats_clean "$dest/usr/share/man/man1/bfcollector.1" bfcollector
check "bfhq.1 formats without warnings" formats_clean "$dest/usr/share/man/man1/bfhq.1" bfhq

# What a program built against the installed header sees: no include path
# into the source tree.
header_compiles() {
	printf '#include <linux/bftrace.h>\nint main(void) { return BFT_GENL_VERSION < 0; }\n' |
		${CC:-cc} -std=c11 -Wall -Wextra -Werror -I"$dest/usr/include" -x c -o "$tmp/hdr" -
}
check "the installed <linux/bftrace.h> compiles on its own" header_compiles

check "make uninstall DESTDIR=... PREFIX=/usr" \
	make -s --no-print-directory uninstall DESTDIR="$dest" PREFIX=/usr
none_left() {
	local left
	left=$(find "$dest" -type f -print)
	[[ -z $left ]] || { printf '%s\n' "$left"; return 1; }
}
check "make uninstall removes every installed file" none_left

default_prefix() {
	make -s --no-print-directory install DESTDIR="$tmp/dflt" >/dev/null &&
		[[ -x $tmp/dflt/usr/local/bin/bfctl && -f $tmp/dflt/usr/local/share/man/man8/bfctl.8 ]] &&
		make -s --no-print-directory uninstall DESTDIR="$tmp/dflt" >/dev/null &&
		[[ ! -e $tmp/dflt/usr/local/bin/bfctl ]]
}
check "without PREFIX, make install and uninstall use /usr/local" default_prefix

tap_finish
