#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A DL_Down on a modelled PEX-87xx NT port (ntb_hw_ivshmem profile=plx under
# ntb_hw_plx): the chip resets its link-side registers and raises DL_Down; the
# driver must set the chip up again when the link returns, or the peer's B2B
# window (its doorbells and scratchpads to us) and our inbound windows stay
# dead.
#
#   host a (server)  <==== NTB, a 16 GiB stream ====  host b (client)
#                                          host b's port: DL_Down, 500 ms
#
# Both ends of the running connection are reset within 5 s, as on any link
# loss; once the link is back a new connection runs over NTB again, intact,
# which needs the B2B window and the translations re-made on host b; the
# model saw no inbound translation that missed its window's memory.
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"

case $1 in
setup) ulp_setup; exit ;;
cleanup) ulp_cleanup; exit ;;
esac

pci=/sys/bus/pci/devices/$NTB
[ -e "$pci/plx_dl_down" ] || skip "$NTB is not a modelled PLX port (ntb_hw_ivshmem profile=plx)"
ulp_wait_active
port=7100

xfer_one before "--ulp" "--ulp --bytes 1048576 --both"
check "before: mode $(jfield "$out" mode) intact $(jfield "$out" intact)" \
	[ "$(jfield "$out" mode)/$(jfield "$out" intact)" = ntb/true ]

port=$((port + 1))
if [ "$ROLE" = a ]; then
	inns "$XFER" server "$MY_IP" $port --ulp --allow-reset >"$WORK/down.json" &
	srv=$!
	wait_for 90 "server on $port" pid_listening $srv $port
	barrier down-listening
	barrier down
	t0=$(now_us)
	echo "ntbsmc-test: setup" >/dev/kmsg
	wait $srv
else
	barrier down-listening
	inns "$XFER" client "$PEER_IP" $port --ulp --allow-reset --bytes 17179869184 \
		>"$WORK/down.json" &
	cli=$!
	wait_for 90 "the connection over NTB" ntb_conn_to $port
	run sh -c "echo 500 >$pci/plx_dl_down"
	t0=$(now_us)
	barrier down
	wait $cli
fi
ms=$((($(now_us) - t0) / 1000))
out=$(tail -1 "$WORK/down.json")
log "DL_Down: $out (${ms} ms)"
check "not reset by the DL_Down: $out" [ "$(jfield "$out" outcome)" = reset ]
check "${ms} ms to see the reset, bound 5000" [ "$ms" -le 5000 ]
barrier reset-seen

ulp_wait_active
xfer_one after "--ulp" "--ulp --bytes 1048576 --both"
check "after the link returned: mode $(jfield "$out" mode) intact $(jfield "$out" intact)" \
	[ "$(jfield "$out" mode)/$(jfield "$out" intact)" = ntb/true ]
stats=$(cat "$pci/plx_model")
log "model: $stats"
check "translations that missed their window: $stats" has "$stats" "bad_xlat 0 "
[ "$ROLE" = b ] && check "ntb_hw_plx did not set the chip up again after the DL_Down" \
	has "$(dmesg)" "$NTB: link back, chip set up again"
checked
