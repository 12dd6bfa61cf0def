#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Builds (or reuses) the selftests' guest kernel from Debian's linux-source-SERIES
# (6.1: Debian 12's kernel, the default; 6.12: Debian 13's) and prints the build
# directory. The cache lives outside the checkout, keyed by the
# source package version, the exact config fragments and kernel-patches/, so a later run with the same
# inputs reuses it.
#
#   kernel.sh debug [SERIES]    tinyconfig + config.vm + config + config.debug
#                               (+ config.SERIES if there is one)  (make check)
#   kernel.sh nodebug [SERIES]  the same without config.debug      (make bench)
set -euo pipefail

flavour=${1:-debug}
series=${2:-6.1}
here=$(cd "$(dirname "$0")" && pwd)
sel=$(dirname "$here")
cache=${NTBSMC_CACHE:-/var/cache/ntbsmc}
# The guests see the host's root but mount their own /tmp: a kernel tree there
# would be missing in them (its modules.order, the modules the tests load).
case "$(realpath -m "$cache")/" in
/tmp/*)
	echo "kernel.sh: NTBSMC_CACHE=$cache is under /tmp, which the guests replace with their own: put the kernel cache elsewhere" >&2
	exit 2 ;;
esac

frags=("$sel/config.vm" "$sel/config")
case "$flavour" in
debug) frags+=("$sel/config.debug") ;;
nodebug) ;;
*) echo "kernel.sh: unknown flavour '$flavour' (debug|nodebug)" >&2; exit 2 ;;
esac
case "$series" in
6.1|6.12) ;;
*) echo "kernel.sh: unsupported kernel series '$series' (6.1|6.12)" >&2; exit 2 ;;
esac
[ -f "$sel/config.$series" ] && frags+=("$sel/config.$series")

tarball=/usr/src/linux-source-$series.tar.xz
# (only the series a command builds is installed: make check's one, make
# stress's second, make bench's)
[ -f "$tarball" ] || "$here/deps.sh" --kernel "$series" || exit 1
if [ ! -f "$tarball" ]; then
	echo "kernel.sh: $tarball missing (apt-get install linux-source-$series)" >&2
	exit 1
fi
srcver=$(dpkg-query -W -f '${Version}' "linux-source-$series")
# Fixes to the kernel itself the guests need (kernel-patches/, applied in order
# to both series' sources): a source tree is keyed by them too.
patches=("$here"/kernel-patches/*.patch)
[ -e "${patches[0]}" ] || patches=()
phash=$(cat /dev/null "${patches[@]}" | sha256sum | cut -c1-8)
# The build recipe below, by version: bump it when a change to this script
# changes the kernel it builds (not for comments or locking).
recipe=2
key=$( (echo "$srcver"; echo "$flavour"; echo "recipe $recipe"; cat "${frags[@]}" "${patches[@]}") |
	sha256sum | cut -c1-16)
src=$cache/src-$srcver-$phash
# the 6.1 kernel's directory keeps its name from before there were two series
out=$cache/kernel-$flavour-$key
[ "$series" = 6.1 ] || out=$cache/kernel-$series-$flavour-$key

if [ -f "$out/.ntbsmc-done" ]; then
	echo "$out"
	exit 0
fi

# One lock per source tree and one per kernel: the two series build side by side
# (run_tests.sh), a second run waits for the kernel it needs.
mkdir -p "$cache"
exec 8>"$src.lock"
flock 8
if [ ! -f "$src/.ntbsmc-done" ]; then
	echo "kernel.sh: unpacking linux-source $srcver" >&2
	rm -rf "$src" "$src.tmp"
	mkdir -p "$src.tmp"
	tar -C "$src.tmp" --strip-components=1 -xf "$tarball"
	for p in "${patches[@]}"; do
		patch -s -p1 -d "$src.tmp" <"$p" ||
			{ echo "kernel.sh: $(basename "$p") does not apply to $srcver" >&2; exit 1; }
	done
	touch "$src.tmp/.ntbsmc-done"
	mv "$src.tmp" "$src"
fi
exec 9>"$out.lock"
flock 9
flock -u 8
if [ ! -f "$out/.ntbsmc-done" ]; then
	echo "kernel.sh: building $flavour kernel in $out (about 11 minutes)" >&2
	rm -rf "$out"
	mkdir -p "$out"
	make -s -C "$src" O="$out" tinyconfig >&2
	"$src/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" "${frags[@]}" >/dev/null
	make -s -C "$src" O="$out" olddefconfig >&2
	# merge_config only warns; an option that did not stick is a broken fragment.
	missing=0
	for f in "${frags[@]}"; do
		while read -r line; do
			case "$line" in CONFIG_*=*) ;; *) continue ;; esac
			if ! grep -qx "$line" "$out/.config"; then
				echo "kernel.sh: $line (from $(basename "$f")) did not stick" >&2
				missing=1
			fi
		done <"$f"
	done
	[ "$missing" = 0 ] || exit 1
	make -C "$src" O="$out" -j"$(nproc)" bzImage modules >"$out/build.log" 2>&1 ||
		{ tail -30 "$out/build.log" >&2; exit 1; }
	touch "$out/.ntbsmc-done"
fi
echo "$out"
