#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# build.sh KDIR KVER [DIR...]: DKMS's build of the modules for kernel KVER
# (build tree KDIR), in the tree this script is in (DKMS's build tree): the
# kernel's own drivers it lacks (kernel-src.sh) in kernel/, then the modules
# of DIR... (default ntbsmc/ ntb_hw_plx/; the selftests build the test
# fabric's this way), in one kbuild run so that their symbols resolve against
# each other (one Module.symvers).
#   build.sh clean KDIR: removes what it built.
set -eu
tree=$(cd "$(dirname "$0")/.." && pwd)
if [ "$1" = clean ]; then
	[ -e "$tree/Kbuild" ] && make -C "$2" M="$tree" clean
	rm -rf "$tree/kernel" "$tree/Kbuild"
	exit 0
fi
kdir=$1
kver=$2
shift 2
[ $# -gt 0 ] || set -- ntbsmc/ ntb_hw_plx/
rm -rf "$tree/kernel"
need=$(sh "$tree/dkms/kernel-src.sh" prepare "$kdir" "$kver" "$tree/kernel" | tr "\n" " ")
dirs=""
ntb=""
for d in $need; do
	dirs="$dirs kernel/$d/"
	echo "ntbsmc: building $d from the kernel's source (kernel/$d/Kbuild)"
done
# The modules link only against an NTB core: this one's.
case " $need " in *" ntb "*) ntb=CONFIG_NTB=m ;; esac
printf '# SPDX-License-Identifier: GPL-2.0\n# Written by dkms/build.sh for %s\nobj-y +=%s %s\n' \
	"$kver" "$dirs" "$*" >"$tree/Kbuild"
# shellcheck disable=SC2086
exec make -C "$kdir" M="$tree" $ntb modules
