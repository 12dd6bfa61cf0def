#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# kernel-src.sh: the kernel's own drivers that ntbsmc needs and a kernel may
# lack, built by DKMS beside ntbsmc and ntb_hw_plx from the distribution's
# source of that kernel's series (Debian's kernels have neither).
#
#   kernel-src.sh list KDIR KVER       the drivers to build for KVER (ntb,
#                                      plx_dma), one a line; none if it has them
#   kernel-src.sh prepare KDIR KVER DIR  their sources in DIR/<driver>/, each
#                                      with its Kbuild
#
# KDIR is KVER's build tree (/lib/modules/KVER/build). A driver is built when
# KDIR's configuration has it neither built in nor as a module: ntb
# (CONFIG_NTB, drivers/ntb/core.c) and plx_dma (CONFIG_PLX_DMA,
# drivers/dma/plx_dma.c, the PEX switch's DMA engine). A kernel that has them
# keeps its own.
#
# The source is Debian's linux-source-SERIES package, whose tarball is
# /usr/src/linux-source-SERIES.tar.xz; SERIES is KVER's first two numbers
# (6.1.0-56-amd64: 6.1). The tarball's own Makefile must be of that series.
# When the package's version is the kernel's own (include/generated/package.h:
# "Debian 6.1.192-2") the drivers are built from it. When it differs (a kernel
# older or newer than the source package), they are built only if the headers
# they share with the kernel's other modules (include/linux/ntb.h,
# include/linux/dmaengine.h) are the same in both. A driver that cannot be
# built from the source is not, with one line saying why: without the core
# ntbsmc cannot be built either (failure); without plx_dma it copies with the
# CPU. Every message is one line on stderr (DKMS discards dkms.conf's stdout).
set -u

cmd=${1:-}
kdir=${2:-}
kver=${3:-}
[ -n "$kdir" ] && [ -n "$kver" ] || {
	echo "usage: kernel-src.sh list|prepare KDIR KVER [DIR]" >&2
	exit 2
}

say() {
	echo "ntbsmc: kernel $kver: $*" >&2
}

conf=$kdir/include/config/auto.conf
[ -r "$conf" ] || conf=$kdir/.config
[ -r "$conf" ] || {
	say "$kdir is not a configured kernel build tree (no include/config/auto.conf or .config)"
	exit 1
}
has() {
	grep -Eq "^$1=[ym]\$" "$conf"
}

need=""
has CONFIG_NTB || need="ntb"
if ! has CONFIG_PLX_DMA; then
	if has CONFIG_DMA_ENGINE && has CONFIG_PCI; then
		need="$need plx_dma"
	else
		say "no DMA engine framework (CONFIG_DMA_ENGINE): plx_dma not built, ntbsmc copies with the CPU"
	fi
fi
need=${need# }
[ -n "$need" ] || exit 0

# cannot WHY: the drivers cannot be built from the source. Without the NTB
# core nothing can (failure); without plx_dma ntbsmc runs, copying with the
# CPU (no driver built, success).
cannot() {
	case " $need " in
	*" ntb "*)
		say "$1"
		exit 1 ;;
	esac
	say "$1; plx_dma not built: ntbsmc copies with the CPU"
	exit 0
}

series=$(echo "$kver" | sed -n 's/^\([0-9]*\.[0-9]*\).*/\1/p')
tarball=/usr/src/linux-source-$series.tar.xz
top=linux-source-$series
case $need in
ntb) what="the NTB core (CONFIG_NTB)" ;;
plx_dma) what="plx_dma (CONFIG_PLX_DMA)" ;;
*) what="the NTB core (CONFIG_NTB) and plx_dma (CONFIG_PLX_DMA)" ;;
esac
if [ -z "$series" ] || [ ! -r "$tarball" ]; then
	cannot "lacks $what, and $tarball, its source, is missing: apt install linux-source-${series:-SERIES}, or use a kernel with CONFIG_NTB (README.md, \"Installing on real hardware\")"
fi
# The series of the tarball is its Makefile's, not its name's.
srcseries=$(tar -xJf "$tarball" -O "$top/Makefile" 2>/dev/null | head -4 |
	awk '$1 == "VERSION" { v = $3 } $1 == "PATCHLEVEL" { p = $3 } END { if (v != "") print v "." p }')
if [ "$srcseries" != "$series" ]; then
	cannot "$tarball is of series ${srcseries:-unknown}, not $series: nothing built from it"
fi

# The Debian version of the kernel (its build tree's package.h or utsversion.h)
# and of the source package.
kdeb=$(sed -n 's/.*"[^"]* Debian \([0-9][^ "]*\).*/\1/p' "$kdir/include/generated/package.h" \
	"$kdir/include/generated/utsversion.h" 2>/dev/null | head -1)
sdeb=$(dpkg-query -W -f '${Version}' "linux-source-$series" 2>/dev/null)

if [ "$cmd" = list ] && [ -n "$kdeb" ] && [ "$kdeb" = "$sdeb" ]; then
	echo "$need" | tr ' ' '\n'
	exit 0
fi

# members DIR: extracts what the drivers need from the tarball into DIR
# (one pass: each name once).
members() {
	files="$top/include/linux/ntb.h $top/include/linux/dmaengine.h"
	case " $need " in *" ntb "*) files="$files $top/drivers/ntb/core.c" ;; esac
	case " $need " in *" plx_dma "*)
		files="$files $top/drivers/dma/plx_dma.c $top/drivers/dma/dmaengine.h" ;;
	esac
	# shellcheck disable=SC2086
	tar -xJf "$tarball" --occurrence=1 -C "$1" $files ||
		cannot "cannot read $files from $tarball"
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ntbsmc-ksrc.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
members "$tmp"
src=$tmp/$top

if [ -z "$kdeb" ] || [ "$kdeb" != "$sdeb" ]; then
	# Another version of the series: the drivers' interfaces must be the
	# kernel's own.
	kwant=${kdeb:-of the kernel\'s version}
	versions="is Debian ${kdeb:-(version unknown)}, linux-source-$series is ${sdeb:-(version unknown)}"
	# The kernel's headers: in the tree, in source/ (a tree built with
	# O=), or where its Makefile includes the kernel's (Debian's
	# linux-headers-KVER: "include .../linux-headers-*-common/Makefile").
	khdr=$kdir
	if [ ! -e "$kdir/include/linux/ntb.h" ]; then
		khdr=$kdir/source
		[ -e "$khdr/include/linux/ntb.h" ] ||
			khdr=$(sed -n 's|^include \(/.*\)/Makefile$|\1|p' "$kdir/Makefile" | head -1)
	fi
	[ -n "$khdr" ] && [ -e "$khdr/include/linux/ntb.h" ] ||
		cannot "$versions, and the kernel's include/linux/ntb.h is not in $kdir to compare: not building $what from another version"
	for h in include/linux/ntb.h include/linux/dmaengine.h; do
		if ! cmp -s "$src/$h" "$khdr/$h"; then
			cannot "$versions, and their $h differ: not building $what from another version; install linux-source-$series $kwant, or boot the kernel of linux-source-$series's version"
		fi
	done
	say "$versions: building $what from it, as their include/linux/ntb.h and dmaengine.h are the same"
fi

case $cmd in
list)
	echo "$need" | tr ' ' '\n'
	;;
prepare)
	dir=${4:?usage: kernel-src.sh prepare KDIR KVER DIR}
	for d in $need; do
		mkdir -p "$dir/$d"
	done
	case " $need " in *" ntb "*)
		cp "$src/drivers/ntb/core.c" "$dir/ntb/"
		cat >"$dir/ntb/Kbuild" <<-KB
		# From $tarball (linux-source-$series ${sdeb:-}): drivers/ntb/Makefile's ntb.ko
		obj-m += ntb.o
		ntb-y := core.o
		KB
	esac
	case " $need " in *" plx_dma "*)
		cp "$src/drivers/dma/plx_dma.c" "$src/drivers/dma/dmaengine.h" "$dir/plx_dma/"
		cat >"$dir/plx_dma/Kbuild" <<-KB
		# From $tarball (linux-source-$series ${sdeb:-}): drivers/dma/Makefile's plx_dma.ko
		obj-m += plx_dma.o
		KB
	esac
	echo "$need" | tr ' ' '\n'
	;;
*)
	echo "usage: kernel-src.sh list|prepare KDIR KVER [DIR]" >&2
	exit 2
	;;
esac
