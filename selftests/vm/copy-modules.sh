#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# copy-modules.sh DIR: the sources of every module the tree builds (ntbsmc,
# ntb_hw_plx and the test drivers), without build outputs, in DIR, for a build against
# another kernel: kbuild leaves its objects beside the sources, and objects
# built for one kernel prove nothing about another.
set -e
top=$(cd "$(dirname "$0")/../.." && pwd)
dir=$1
mkdir -p "$dir/selftests"
cp -r "$top/Kbuild" "$top/VERSION" "$top/ntbsmc" "$top/ntb_hw_plx" "$top/include" "$dir/"
cp -r "$top/selftests/fabric" "$top/selftests/dma" "$top/selftests/plx" "$dir/selftests/"
find "$dir" \( -name '*.o' -o -name '*.ko' -o -name '*.mod' -o -name '*.mod.c' \
	-o -name '.*.cmd' -o -name 'modules.order' -o -name 'Module.symvers' \) -delete
