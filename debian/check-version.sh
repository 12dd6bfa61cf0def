#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# check-version.sh: fails unless debian/changelog and dkms.conf carry VERSION,
# the one version of the module, the tools and the packages (netlink-tool's
# Makefile and ntbsmc/Kbuild read VERSION itself). The package is native, so
# the changelog's version is VERSION exactly.
set -eu
cd "$(dirname "$0")/.."

version=$(cat VERSION)
if ! printf '%s\n' "$version" | grep -Eqx '[0-9][0-9A-Za-z.+~]*'; then
	echo "check-version: VERSION is \"$version\", not one line of a version (digits, letters, . + ~)" >&2
	exit 1
fi
changelog=$(sed -n '1s/^[^ ]* (\([^)]*\)).*/\1/p' debian/changelog)
dkms=$(sed -n 's/^PACKAGE_VERSION="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' dkms.conf)

rc=0
for entry in "debian/changelog:$changelog" "dkms.conf PACKAGE_VERSION:$dkms"; do
	if [ "${entry#*:}" != "$version" ]; then
		echo "check-version: ${entry%%:*} is \"${entry#*:}\", VERSION is \"$version\"" >&2
		rc=1
	fi
done
exit $rc
