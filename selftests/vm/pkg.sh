# SPDX-License-Identifier: GPL-2.0
# The Debian packages end to end, host side (make check's pkg boot), without
# changing the host: a throwaway root, an overlay of the host's root whose
# writes go to a tmpfs, where ntbsmc-dkms and ntbsmc-tools are installed with
# dpkg -i and DKMS builds the module for the guest kernel; a guest then boots
# on that root (VM_ROOT) and runs ulp/packaged.sh with the packaged module and
# tools; at the end dpkg --purge must remove every file the packages and DKMS
# put there.
# Needs REPO, RUN, KBUILD (the guest kernel's tree), PKG_BOOT (the results' prefix),
# record().

PKG_VERSION=$(cat "$REPO/VERSION")

pkg_in() {
	chroot "$PKG_ROOT" "$@"
}

# pkg_teardown: unmounts the throwaway root; its writes vanish with the tmpfs.
pkg_teardown() {
	local d=$RUN/pkgroot m
	for m in "$d/root/dev" "$d/root/proc" "$d/root" "$d/rw"; do
		mountpoint -q "$m" && umount -l "$m"
	done
	return 0
}

# pkg_up: builds the packages, makes the throwaway root, installs them there
# and builds and installs the module for KBUILD's kernel with DKMS. Records
# pkg/build_debs, pkg/dpkg_install and pkg/dkms_build.
pkg_up() {
	local d=$RUN/pkgroot kver
	mkdir -p "$d/rw" "$d/root" "$RUN/deb"
	if DEB_BUILD_OPTIONS=nocheck "$REPO/debian/build-deb.sh" "$RUN/deb" \
		>"$RUN/build-deb.log" 2>&1; then
		record "ok $PKG_BOOT/build_debs"
	else
		record "not ok $PKG_BOOT/build_debs # see $RUN/build-deb.log"
		return 1
	fi
	mount -t tmpfs -o size=4G ntbsmc-pkg "$d/rw" &&
	mkdir "$d/rw/upper" "$d/rw/work" &&
	mount -t overlay ntbsmc-pkg -o "lowerdir=/,upperdir=$d/rw/upper,workdir=$d/rw/work" \
		"$d/root" &&
	mount -t proc proc "$d/root/proc" &&
	mount --bind /dev "$d/root/dev" || {
		record "not ok $PKG_BOOT/dpkg_install # cannot make the throwaway root"
		return 1
	}
	PKG_ROOT=$d/root
	mkdir -p "$PKG_ROOT/tmp/ntbsmc-pkg"
	cp "$RUN"/deb/ntbsmc-dkms_"$PKG_VERSION"_all.deb \
		"$RUN"/deb/ntbsmc-tools_"$PKG_VERSION"_*.deb "$PKG_ROOT/tmp/ntbsmc-pkg/"
	# dkms's postinst builds for the running and the newest installed kernel:
	# here none has the NTB core, which it reports and skips
	pkg_in sh -c 'dpkg -i /tmp/ntbsmc-pkg/*.deb' >"$RUN/dpkg-install.log" 2>&1
	pkg_in dpkg-query -W -f='${Status}\n' ntbsmc-dkms ntbsmc-tools >>"$RUN/dpkg-install.log"
	if [ "$(grep -c '^install ok installed$' "$RUN/dpkg-install.log")" = 2 ]; then
		record "ok $PKG_BOOT/dpkg_install"
	else
		record "not ok $PKG_BOOT/dpkg_install # see $RUN/dpkg-install.log"
		return 1
	fi
	# the guest kernel, installed in that root as its package would be
	kver=$(cat "$KBUILD/include/config/kernel.release")
	make -s -C "$KBUILD" INSTALL_MOD_PATH="$PKG_ROOT" modules_install >"$RUN/dkms.log" 2>&1
	if pkg_in dkms install "ntbsmc/$PKG_VERSION" -k "$kver" --kernelsourcedir "$KBUILD" \
		>>"$RUN/dkms.log" 2>&1 &&
	   [ -e "$PKG_ROOT/lib/modules/$kver/updates/dkms/ntbsmc.ko" ] &&
	   [ -e "$PKG_ROOT/lib/modules/$kver/updates/dkms/ntb_hw_plx.ko" ]; then
		record "ok $PKG_BOOT/dkms_build # for $kver"
	else
		record "not ok $PKG_BOOT/dkms_build # see $RUN/dkms.log"
		return 1
	fi
	# everything the packages and DKMS installed, for the purge to remove
	{
		pkg_in dpkg-query -L ntbsmc-dkms ntbsmc-tools
		pkg_in find /var/lib/dkms/ntbsmc "/lib/modules/$kver/updates/dkms"
	} | sort -u | while read -r f; do
		[ -d "$PKG_ROOT$f" ] || echo "$f"
	done >"$RUN/installed-files"
}

# pkg_purge: dpkg --purge of both packages; records pkg/purge, ok when none
# of the files they (and DKMS) installed is left.
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
