#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Installs what "make deb" needs on Debian 12, if missing. Build tools only:
# dkms's recommended kernel headers are not needed to package.
exec "$(dirname "$0")/../selftests/vm/deps.sh" --no-install-recommends \
	build-essential debhelper dh-dkms dkms dpkg-dev lintian pkg-config \
	libnl-3-dev libnl-genl-3-dev bpftool clang libbpf-dev python3
