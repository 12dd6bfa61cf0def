#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Doorbell round trips over the emulated fabric with ntb_rtt: a pings, b answers
# from its interrupt handler; every round trip must complete.
source "$REPO/selftests/lib.sh"

setup() { insmod "$MODDIR/selftests/fabric/ntb_rtt.ko"; }
cleanup() { unload_module ntb_rtt; }

test_phases setup cleanup "$@"

R=$NTB_DBG/ntb_rtt/$NTB
wait_for 30 "ntb_rtt on $NTB" test -e "$R/run"
barrier start
if [ "$ROLE" = a ]; then
	n=${RTT_COUNT:-2000}
	wait_for 60 "link up" sh -c "echo 1 >$R/run"
	run sh -c "echo $n >$R/run"
	out=$(<"$R/run"); jmap O "$out"
	log "figure: doorbell round trip $TOPO (ns): $out"
	echo "$out" | grep -q "^count $n " || fail "not all $n round trips completed: $out"
fi
barrier done
