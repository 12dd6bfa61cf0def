#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# build-deb.sh [OUTDIR]: "make deb": the .debs of ntbsmc-dkms and ntbsmc-tools
# in OUTDIR (default build/deb), and lintian's report on them.
#
# dpkg-buildpackage writes beside the source directory and cleans it, so the
# build runs on a copy of the working tree in a temporary directory.
# DEB_BUILD_OPTIONS=nocheck skips netlink-tool's tests.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-build/deb}
case $out in /*) ;; *) out=$top/$out ;; esac

"$top/debian/check-version.sh"
version=$(cat "$top/VERSION")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ntbsmc-deb.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
src=$tmp/ntbsmc-$version
mkdir "$src"

# Tracked and new files as they are now, without build outputs and build/.
if git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	(cd "$top" && git ls-files -z --cached --others --exclude-standard |
		tar --null -T - --ignore-failed-read -cf -) | tar -C "$src" -xf -
else
	tar -C "$top" --exclude=./build --exclude=./.git -cf - . | tar -C "$src" -xf -
fi

(cd "$src" && dpkg-buildpackage -us -uc -b)

mkdir -p "$out"
rm -f "$out"/ntbsmc-*.deb
cp "$tmp"/*.deb "$out"/
if command -v lintian >/dev/null; then
	lintian --info --display-info --fail-on error "$tmp"/*.changes | tee "$out/lintian.txt"
else
	echo "build-deb: lintian not installed, packages not checked" >&2
fi
ls -l "$out"/*.deb
