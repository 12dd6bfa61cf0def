#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Installs what "make deb" needs on Debian 12, if missing (as selftests/vm/deps.sh).
set -eu
pkgs=(build-essential debhelper dh-dkms dkms dpkg-dev lintian pkg-config
      libnl-3-dev libnl-genl-3-dev python3)
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
# Build tools only: dkms's recommended kernel headers are not needed to package.
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	"${missing[@]}" >/dev/null
