#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kernel-src-test.sh: how DKMS chooses the source of the kernel's own drivers
# (dkms/kernel-src.sh, dkms.conf), on build trees made up to differ from
# Debian's 6.1 kernel in one thing each, against the host's linux-source-6.1
# and Debian 6.1 headers (make check's host tests). One line per case; exits
# non-zero if any case fails.
set -u
REPO=$(cd "$(dirname "$0")/../.." && pwd)
ks=$REPO/dkms/kernel-src.sh
rel=$(dpkg-query -W -f '${Depends}\n' linux-headers-amd64 | sed -n 's/.*linux-headers-\([0-9][^ ,]*-amd64\).*/\1/p')
kdir=/lib/modules/$rel/build
# Debian's headers of the kernel: where its build tree's Makefile includes them
common=$(sed -n 's|^include \(/.*\)/Makefile$|\1|p' "$kdir/Makefile")
sdeb=$(dpkg-query -W -f '${Version}' linux-source-6.1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0

# tree NAME DEBVER [CONFIG...]: a build tree like Debian's 6.1 one, of Debian
# version DEBVER, with the lines CONFIG added to its configuration.
tree() {
	local t=$tmp/$1 ver=$2
	shift 2
	mkdir -p "$t/include/config" "$t/include/generated" "$t/include/linux"
	cp "$kdir/include/config/auto.conf" "$t/include/config/"
	printf '%s\n' "$@" >>"$t/include/config/auto.conf"
	echo "#define LINUX_PACKAGE_ID \" Debian $ver\"" >"$t/include/generated/package.h"
	cp "$common/include/linux/ntb.h" "$common/include/linux/dmaengine.h" "$t/include/linux/"
	touch "$t/Makefile"
	echo "$t"
}

# case NAME WANT-EXIT WANT-LIST WANT-MESSAGE TREE KVER
case_() {
	local name=$1 wexit=$2 wlist=$3 wmsg=$4 t=$5 kver=$6 out err rc
	sh "$ks" list "$t" "$kver" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	err=$(<"$tmp/err")
	out=$(tr '\n' ' ' <"$tmp/out")
	out=${out% }
	if [ "$rc" = "$wexit" ] && [ "$out" = "$wlist" ] && [[ $err == *"$wmsg"* ]]; then
		echo "ok $name # exit $rc, [$out]"
	else
		echo "not ok $name # exit $rc (want $wexit), [$out] (want [$wlist]), said: ${err:-nothing} (want ...$wmsg...)"
		failed=1
	fi
}

case_ debian_kernel 0 "ntb plx_dma" "" "$kdir" "$rel"
case_ own_core 0 "" "" "$(tree own "$sdeb" CONFIG_NTB=m CONFIG_PLX_DMA=m)" "$rel"
case_ own_core_no_plx_dma 0 "plx_dma" "" "$(tree ownntb "$sdeb" CONFIG_NTB=y)" "$rel"
case_ other_version_same_interface 0 "ntb plx_dma" "building the NTB core" \
	"$(tree older 6.1.1-1)" 6.1.0-1-amd64
# Debian's layout: the headers where the tree's Makefile includes them
t=$(tree debian_layout 6.1.1-1)
rm -r "$t/include/linux"
echo "include $common/Makefile" >"$t/Makefile"
case_ other_version_debian_layout 0 "ntb plx_dma" "as their include/linux/ntb.h" "$t" 6.1.0-1-amd64
t=$(tree changed 6.1.1-1)
echo "/* another version */" >>"$t/include/linux/ntb.h"
case_ other_version_other_interface 1 "" "include/linux/ntb.h differ" "$t" 6.1.0-1-amd64
t=$(tree changed_dma 6.1.1-1 CONFIG_NTB=m)
echo "/* another version */" >>"$t/include/linux/dmaengine.h"
case_ other_version_plx_dma_only 0 "" "plx_dma not built" "$t" 6.1.0-1-amd64
case_ no_source_for_series 1 "" "linux-source-6.3.tar.xz, its source, is missing" \
	"$(tree s63 6.3.1-1)" 6.3.0-1-amd64

# dkms.conf: the kernel's drivers become DKMS modules; a kernel that cannot
# have them is excluded (DKMS: exit 77, "Skipped.").
dkms_conf() {	# KDIR KVER
	(
		# shellcheck disable=SC2034 # dkms.conf's inputs
		kernel_source_dir=$1 kernelver=$2 dkms_tree=/var/lib/dkms
		# shellcheck disable=SC1091
		source "$REPO/dkms.conf" 2>/dev/null
		echo "${BUILT_MODULE_NAME[*]} excl=${BUILD_EXCLUSIVE_KERNEL:-}"
	)
}
out=$(dkms_conf "$kdir" "$rel")
if [ "$out" = "ntbsmc ntb_hw_plx ntb plx_dma excl=" ]; then
	echo "ok dkms_conf_modules # $out"
else
	echo "not ok dkms_conf_modules # $out"
	failed=1
fi
t=$tmp/changed
out=$(dkms_conf "$t" 6.1.0-1-amd64)
if [ "$out" = "ntbsmc ntb_hw_plx excl=^\$" ]; then
	echo "ok dkms_conf_excluded # $out"
else
	echo "not ok dkms_conf_excluded # $out"
	failed=1
fi
exit $failed
