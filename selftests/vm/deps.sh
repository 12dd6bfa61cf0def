#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Installs the Debian 12 packages the build, the tests and the demo need, if missing.
#   deps.sh [--no-install-recommends PKG...]   those packages instead (debian/deps.sh)
#   deps.sh --kernel SERIES                    only what a kernel build of SERIES needs
set -eu
apt_opts=()
if [ "${1:-}" = --no-install-recommends ]; then
	apt_opts=("$1")
	shift
fi
kernel=(build-essential bc bison flex libelf-dev libssl-dev kmod cpio patch xz-utils openssl)
pkgs=("${kernel[@]}" pkg-config sparse
      linux-source-6.1 linux-source-6.12 linux-headers-amd64 linux-headers-6.12-amd64 qemu-system-x86 libnl-3-dev
      libnl-genl-3-dev liburing-dev dwarves clang bpftool libbpf-dev python3 iproute2 iputils-ping procps iperf3 ncat curl
      sockperf redis-server redis-tools nginx-light wrk haproxy memcached)
if [ "${1:-}" = --kernel ]; then
	pkgs=("${kernel[@]}" "linux-source-$2")
elif [ $# != 0 ]; then
	pkgs=("$@")
fi
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing+=("$p")
done
[ ${#missing[@]} = 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "deps.sh: missing packages (${missing[*]}); run as root to install them" >&2
	exit 1
fi
echo "deps.sh: installing ${missing[*]}" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${apt_opts[@]}" "${missing[@]}" >/dev/null
