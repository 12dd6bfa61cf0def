#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Socket behaviour over NTB must match TCP's: sockets (the oracle, which passes on
# plain TCP) runs its checks with the ULP on both ends, asserting for every
# connection that it ran over NTB and that the bytes crossed NTB. IPv4 and IPv6.
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"

case $1 in
setup) ulp_setup; exit ;;
cleanup) ulp_cleanup; exit ;;
esac

ulp_wait_active
S=$REPO/selftests/ulp/sockets
# Fewer concurrent connections than the link has receive buffers (over 250 in the
# emulated window, see buffers.sh): beyond that they fall back to TCP (no_buffer).
opts="--ulp --expect ntb --conns 200"
for fam in 4 6; do
	if [ $fam = 4 ]; then addr=$PEER_IP my=$MY_IP; else addr=$PEER_IP6 my=$MY_IP6; fi
	port=$((6500 + fam * 10))
	if [ "$ROLE" = a ]; then
		# shellcheck disable=SC2086
		inns "$S" server $opts "$my" $port >"$WORK/sockets$fam.tap" 2>&1 &
		srv=$!
		wait_for 90 "sockets server" pid_listening $srv $port
		barrier "v$fam-listening"
		wait $srv
		rc=$?
	else
		barrier "v$fam-listening"
		# shellcheck disable=SC2086
		inns "$S" client $opts "$addr" $port >"$WORK/sockets$fam.tap" 2>&1
		rc=$?
	fi
	sed "s/^/# [$ROLE v$fam] /" "$WORK/sockets$fam.tap" | grep -E "not ok|ok |Totals|# " | head -120
	check "sockets over IPv$fam: exit $rc" [ $rc = 0 ]
	barrier "v$fam-done"
done
checked
