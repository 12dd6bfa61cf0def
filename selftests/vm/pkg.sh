# SPDX-License-Identifier: GPL-2.0
# The Debian packages end to end on Debian's own kernels, host side (make
# check's pkg boots, make demo), without changing the host: a throwaway root,
# an overlay of the host's root whose writes go to a tmpfs, where apt installs
# Debian's unmodified kernel images (linux-image-RELEASE of the headers the
# host has; their initramfs made there by initramfs-tools, with a boot script
# for a 9p root), and then dpkg -i installs ntbsmc-dkms and ntbsmc-tools, whose
# postinst has DKMS build, for every kernel, ntbsmc, ntb_hw_plx and what the
# kernel lacks: the NTB core and plx_dma from linux-source. Guests then boot
# those kernels on that root (VM_ROOT); at the end dpkg --purge must remove
# every file the packages and DKMS put there.
# Needs REPO, RUN, PKG_BOOT (the results' prefix), record().

PKG_VERSION=$(<"$REPO/VERSION")
# Downloaded kernel images stay here, outside the throwaway root.
PKG_APT_CACHE=${NTBSMC_CACHE:-/var/cache/ntbsmc}/apt-archives

pkg_in() {
	chroot "$PKG_ROOT" "$@"
}

# pkg_stock_releases [SERIES...]: the releases of Debian's kernels of SERIES
# (default both: 6.1, 6.12), those whose headers the host has installed
# (linux-headers-amd64, linux-headers-6.12-amd64).
pkg_stock_releases() {
	local s p series=${*:-6.1 6.12}
	for s in $series; do
		p=linux-headers-amd64
		[ "$s" = 6.1 ] || p=linux-headers-$s-amd64
		dpkg-query -W -f '${Depends}\n' "$p" 2>/dev/null |
			sed -n 's/.*linux-headers-\([0-9][^ ,]*-amd64\).*/\1/p'
	done
}

# pkg_series RELEASE: 6.1 of 6.1.0-56-amd64.
pkg_series() {
	echo "$1" | sed -n 's/^\([0-9]*\.[0-9]*\).*/\1/p'
}

# pkg_teardown: unmounts the throwaway root; its writes vanish with the tmpfs.
pkg_teardown() {
	local d=$PKG_DIR m
	[ -n "$d" ] || return 0
	for m in "$d/root/var/cache/apt/archives" "$d/root/dev" "$d/root/proc" "$d/root" "$d/rw"; do
		mountpoint -q "$m" && umount -l "$m"
	done
	return 0
}

# pkg_submounts: the host's filesystems mounted below / (a separate /var,
# /home, or the checkout's), overlaid too: an overlay of / shows none of them.
# Not the kernel's own (proc, sysfs, ...) nor scratch tmpfs, unless the
# checkout is there.
pkg_submounts() {
	local mnt fstype i=0
	while read -r mnt fstype; do
		case $mnt in /|/proc|/proc/*|/sys|/sys/*|/dev|/dev/*|/run|/run/*) continue ;; esac
		case $PKG_DIR/ in "$mnt"/*) continue ;; esac
		case $fstype in
		proc|sysfs|devtmpfs|devpts|cgroup|cgroup2|debugfs|tracefs|securityfs|pstore|bpf|\
		mqueue|hugetlbfs|fusectl|configfs|autofs|binfmt_misc|nsfs|efivarfs|overlay|9p)
			continue ;;
		tmpfs|ramfs)
			case $REPO/ in "$mnt"/*) ;; *) continue ;; esac ;;
		esac
		[ -d "$PKG_DIR/root$mnt" ] || continue
		i=$((i + 1))
		mkdir "$PKG_DIR/rw/upper.$i" "$PKG_DIR/rw/work.$i" &&
		mount -t overlay ntbsmc-pkg \
			-o "lowerdir=$mnt,upperdir=$PKG_DIR/rw/upper.$i,workdir=$PKG_DIR/rw/work.$i" \
			"$PKG_DIR/root$mnt" || return 1
	done < <(findmnt -rn -o TARGET,FSTYPE)
}

# pkg_up RELEASE...: builds the packages, makes the throwaway root, installs
# Debian's kernel images RELEASE... there and then the packages, and checks
# what DKMS built for each. Records build_debs, kernel_images, dpkg_install and
# dkms_RELEASE. Sets PKG_ROOT.
pkg_up() {
	local rel
	PKG_DIR=$RUN/pkgroot
	mkdir -p "$PKG_DIR/rw" "$PKG_DIR/root" "$RUN/deb" "$PKG_APT_CACHE/partial"
	if DEB_BUILD_OPTIONS=nocheck "$REPO/debian/build-deb.sh" "$RUN/deb" \
		>"$RUN/build-deb.log" 2>&1; then
		record "ok $PKG_BOOT/build_debs"
	else
		record "not ok $PKG_BOOT/build_debs # see $RUN/build-deb.log"
		return 1
	fi
	mount -t tmpfs -o size=4G ntbsmc-pkg "$PKG_DIR/rw" &&
	mkdir "$PKG_DIR/rw/upper" "$PKG_DIR/rw/work" &&
	mount -t overlay ntbsmc-pkg \
		-o "lowerdir=/,upperdir=$PKG_DIR/rw/upper,workdir=$PKG_DIR/rw/work" "$PKG_DIR/root" &&
	pkg_submounts &&
	mount -t proc proc "$PKG_DIR/root/proc" &&
	mount --bind /dev "$PKG_DIR/root/dev" &&
	mount --bind "$PKG_APT_CACHE" "$PKG_DIR/root/var/cache/apt/archives" || {
		record "not ok $PKG_BOOT/kernel_images # cannot make the throwaway root"
		return 1
	}
	PKG_ROOT=$PKG_DIR/root
	# The host's boot loader hooks (update-grub) would act on, or fail
	# at, an overlay root: only the initramfs and DKMS run for the images.
	find "$PKG_ROOT/etc/kernel" -mindepth 2 -maxdepth 2 -type f \
		! -name initramfs-tools ! -name dkms -delete 2>/dev/null
	pkg_in env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		initramfs-tools >"$RUN/kernel-images.log" 2>&1
	# The guests' root is a 9p share, which initramfs-tools cannot mount:
	# its boot script for one (boot=ntbsmc9p), and an initramfs of only the
	# modules it needs. Set before the images, whose postinst makes it.
	cp "$REPO/selftests/vm/initramfs/ntbsmc9p" "$PKG_ROOT/etc/initramfs-tools/scripts/"
	printf '%s\n' virtio_pci 9pnet_virtio 9p >>"$PKG_ROOT/etc/initramfs-tools/modules"
	sed -i 's/^MODULES=.*/MODULES=list/' "$PKG_ROOT/etc/initramfs-tools/initramfs.conf"
	local imgs=()
	for rel in "$@"; do
		imgs+=("linux-image-$rel")
	done
	# apt's lists are the host's, as the headers' were: the same versions
	if pkg_in env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends "${imgs[@]}" >>"$RUN/kernel-images.log" 2>&1; then
		for rel in "$@"; do
			# made here, with the boot script, even where the image
			# was already installed (on the host: apt did nothing)
			pkg_in sh -c "rm -f /boot/initrd.img-$rel && update-initramfs -c -k $rel" \
				>>"$RUN/kernel-images.log" 2>&1
			[ -s "$PKG_ROOT/boot/vmlinuz-$rel" ] && [ -s "$PKG_ROOT/boot/initrd.img-$rel" ] || {
				record "not ok $PKG_BOOT/kernel_images # no /boot/vmlinuz or initrd.img of $rel (see $RUN/kernel-images.log)"
				return 1
			}
		done
		record "ok $PKG_BOOT/kernel_images # Debian's ${imgs[*]}"
	else
		record "not ok $PKG_BOOT/kernel_images # apt-get install ${imgs[*]} failed (see $RUN/kernel-images.log; apt-get update, and the headers of the same version: apt-get install linux-headers-amd64 linux-headers-6.12-amd64)"
		return 1
	fi
	mkdir -p "$PKG_ROOT/tmp/ntbsmc-pkg"
	cp "$RUN"/deb/ntbsmc-dkms_"$PKG_VERSION"_all.deb \
		"$RUN"/deb/ntbsmc-tools_"$PKG_VERSION"_*.deb "$PKG_ROOT/tmp/ntbsmc-pkg/"
	# The last series' source comes after the packages (PKG_LATE_SOURCE=1,
	# make check): DKMS must skip its kernel, saying why, until the source
	# package's file trigger has it build there.
	local late="" late_rel="" late_src=""
	if [ -n "${PKG_LATE_SOURCE:-}" ] && [ $# -gt 1 ]; then
		late_rel=${*: -1}
		late=$(pkg_series "$late_rel")
		late_src=/usr/src/linux-source-$late.tar.xz
		pkg_in rm -f "$late_src"
	fi
	# As a user would: dkms's postinst builds for every kernel of the root
	# (the running one, the host's, is not installed there).
	pkg_in sh -c 'dpkg -i /tmp/ntbsmc-pkg/*.deb' >"$RUN/dpkg-install.log" 2>&1
	pkg_in dpkg-query -W -f='${Status}\n' ntbsmc-dkms ntbsmc-tools >>"$RUN/dpkg-install.log"
	if [ "$(grep -c '^install ok installed$' "$RUN/dpkg-install.log")" = 2 ]; then
		record "ok $PKG_BOOT/dpkg_install"
	else
		record "not ok $PKG_BOOT/dpkg_install # see $RUN/dpkg-install.log"
		return 1
	fi
	if [ -n "$late" ]; then
		pkg_late_source "$late_rel" "$late_src"
	fi
	pkg_in dkms status >"$RUN/dkms-status.log" 2>&1
	for rel in "$@"; do
		pkg_dkms_check "$rel" "ntbsmc ntb_hw_plx ntb plx_dma" "" "$(pkg_series "$rel")"
	done
	pkg_installed_files "$@"
}

# pkg_late_source RELEASE TARBALL: DKMS skipped RELEASE, whose source TARBALL
# was missing, with the line that says so and "Skipped." (dkms status not
# installed); then the tarball comes, as linux-source's unpack would bring it,
# and the package's file trigger has DKMS build there. Records
# dkms_source_later; pkg_dkms_check checks what was built.
pkg_late_source() {
	local rel=$1 src=$2 why=""
	grep -q "kernel $rel: lacks the NTB core.*${src##*/}, its source, is missing: apt install" \
		"$RUN/dpkg-install.log" || why+=" no line saying the source is missing;"
	pkg_in dkms status -k "$rel" >"$RUN/dkms-status.log" 2>&1
	grep -q ": installed" "$RUN/dkms-status.log" && why+=" installed without its source;"
	cp "$src" "$PKG_ROOT$src" &&
	pkg_in sh -c "dpkg-trigger --no-await $src && dpkg --triggers-only --pending" \
		>"$RUN/dpkg-trigger.log" 2>&1 || why+=" the trigger failed (see $RUN/dpkg-trigger.log);"
	grep -q "ntbsmc-dkms: $src changed: building for $rel" "$RUN/dpkg-trigger.log" ||
		why+=" the package's trigger did not build for $rel (see $RUN/dpkg-trigger.log);"
	if [ -z "$why" ]; then
		record "ok $PKG_BOOT/dkms_source_later # $rel skipped without ${src##*/}, built by the trigger when it came"
	else
		record "not ok $PKG_BOOT/dkms_source_later #$why see $RUN/dpkg-install.log"
	fi
}

# pkg_dkms_check RELEASE WANTED UNWANTED NAME [unsigned]: DKMS installed the
# modules WANTED for RELEASE, each signed with DKMS's key (unless the kernel
# signs no modules: unsigned), and none of UNWANTED. Records dkms_NAME.
pkg_dkms_check() {
	local rel=$1 m f why="" signer key
	local dir=$PKG_ROOT/lib/modules/$rel/updates/dkms
	grep -q "^ntbsmc/$PKG_VERSION, $rel, [^:]*: installed" "$RUN/dkms-status.log" ||
		why+=" dkms status not 'installed';"
	key=$(openssl x509 -inform DER -in "$PKG_ROOT/var/lib/dkms/mok.pub" -noout -subject 2>/dev/null |
		sed -n 's/.*CN *= *//p')
	for m in $2; do
		f=$(ls "$dir/$m.ko"* 2>/dev/null | head -1)
		if [ -z "$f" ]; then
			why+=" no $m.ko;"
			continue
		fi
		[ "${5:-}" = unsigned ] && continue
		signer=$(modinfo -F signer "$f" 2>/dev/null)
		[ -n "$key" ] && [ "$signer" = "$key" ] ||
			why+=" $m.ko signed by '${signer:-nobody}', want DKMS's '${key:-(no key)}';"
	done
	for m in $3; do
		ls "$dir/$m.ko"* >/dev/null 2>&1 && why+=" $m.ko built, but the kernel has its own;"
	done
	if [ -z "$why" ]; then
		record "ok $PKG_BOOT/dkms_$4 # $rel: $2"
	else
		record "not ok $PKG_BOOT/dkms_$4 #$why see $RUN/dkms-status.log, $RUN/dpkg-install.log"
	fi
}

# pkg_own_core KBUILD: DKMS for a kernel that has the NTB core (the debug test
# kernel, installed in the root as its package would be) builds ntbsmc,
# ntb_hw_plx and plx_dma, which it lacks, and keeps the kernel's own core.
# Records dkms_own_core.
pkg_own_core() {
	local kbuild=$1 kver
	kver=$(<"$kbuild/include/config/kernel.release")
	make -s -C "$kbuild" INSTALL_MOD_PATH="$PKG_ROOT" modules_install >"$RUN/dkms-own.log" 2>&1
	pkg_in dkms install "ntbsmc/$PKG_VERSION" -k "$kver" --kernelsourcedir "$kbuild" \
		>>"$RUN/dkms-own.log" 2>&1
	pkg_in dkms status >"$RUN/dkms-status.log" 2>&1
	# (the test kernel has no module signing, so DKMS signs nothing)
	pkg_dkms_check "$kver" "ntbsmc ntb_hw_plx plx_dma" "ntb" own_core unsigned
	pkg_installed_files "$kver"
}

# pkg_installed_files RELEASE...: adds what the packages and DKMS installed
# for RELEASE... to the list the purge must remove.
pkg_installed_files() {
	local rel
	{
		cat "$RUN/installed-files" 2>/dev/null
		pkg_in dpkg-query -L ntbsmc-dkms ntbsmc-tools
		pkg_in find /var/lib/dkms/ntbsmc
		for rel in "$@"; do
			pkg_in find "/lib/modules/$rel/updates/dkms"
		done
	} | sort -u | while read -r f; do
		[ -d "$PKG_ROOT$f" ] || echo "$f"
	done >"$RUN/installed-files.new"
	mv "$RUN/installed-files.new" "$RUN/installed-files"
}

# pkg_fabric RELEASE DIR: the test fabric's driver (selftests/fabric) built in
# DIR against RELEASE's headers (W=1), as DKMS builds ntbsmc (dkms/build.sh):
# beside the kernel's drivers it lacks, for the core's symbol versions (the
# core the guest loads is DKMS's).
pkg_fabric() {
	local rel=$1 dir=$2
	rm -rf "$dir"
	"$REPO/selftests/vm/copy-modules.sh" "$dir" &&
	cp -r "$REPO/dkms" "$dir/" &&
	KBUILD_EXTRA_WARN=1 sh "$dir/dkms/build.sh" "/lib/modules/$rel/build" "$rel" \
		selftests/fabric/ >"$dir/build.log" 2>&1 &&
	[ -e "$dir/selftests/fabric/ntb_hw_ivshmem.ko" ]
}

# pkg_purge: dpkg --purge of both packages; records purge, ok when none of
# the files they (and DKMS) installed is left.
pkg_purge() {
	local left f
	[ -s "$RUN/installed-files" ] || {
		record "not ok $PKG_BOOT/purge # nothing was installed"
		return 1
	}
	pkg_in dpkg --purge ntbsmc-tools ntbsmc-dkms >"$RUN/dpkg-purge.log" 2>&1 || {
		record "not ok $PKG_BOOT/purge # dpkg --purge failed, see $RUN/dpkg-purge.log"
		return 1
	}
	left=$(while read -r f; do
		[ -e "$PKG_ROOT$f" ] || [ -L "$PKG_ROOT$f" ] && echo "$f"
	done <"$RUN/installed-files")
	[ -d "$PKG_ROOT/var/lib/dkms/ntbsmc" ] && left+=" /var/lib/dkms/ntbsmc"
	[ -d "$PKG_ROOT/usr/src/ntbsmc-$PKG_VERSION" ] && left+=" /usr/src/ntbsmc-$PKG_VERSION"
	if [ -n "$left" ]; then
		record "not ok $PKG_BOOT/purge # left behind: $(echo $left | head -c 300)"
	else
		record "ok $PKG_BOOT/purge # $(wc -l <"$RUN/installed-files") files removed"
	fi
}
