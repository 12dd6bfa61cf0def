#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# check-kernel.sh KDIR [KERNELRELEASE]: one line on stderr, and failure, when
# the kernel configured in build tree KDIR has no NTB core.
#
# dkms.conf runs it to say why DKMS skips such a kernel (its BUILD_EXCLUSIVE
# message does not); stderr, as DKMS discards dkms.conf's stdout and dh_dkms's
# postinst that of "dkms build". ntbsmc/Kbuild prints the same line for make.

kdir=${1:?usage: check-kernel.sh KDIR [KERNELRELEASE]}
release=${2:-$(cat "$kdir/include/config/kernel.release" 2>/dev/null)}

# auto.conf is what kbuild reads; a tree configured but not prepared has .config.
for conf in "$kdir/include/config/auto.conf" "$kdir/.config"; do
	[ -r "$conf" ] || continue
	grep -Eq '^CONFIG_NTB=[ym]$' "$conf" && exit 0
	echo "ntbsmc: kernel ${release:-in $kdir} has no NTB core (CONFIG_NTB): build a kernel with CONFIG_NTB=m or y, or install the ntbsmc-dkms package, which builds the NTB core from linux-source (README.md, \"Installing on real hardware\")" >&2
	exit 1
done
echo "ntbsmc: $kdir is not a configured kernel build tree (no include/config/auto.conf or .config)" >&2
exit 1
