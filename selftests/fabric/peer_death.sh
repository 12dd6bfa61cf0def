#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Two-VM topology only, last test: VM b keeps its port up and announces it is ready
# to die; the host kills VM b and times how long VM a takes to see the link down
# (vm/../run_tests.sh asserts the bound).
source "$REPO/selftests/lib.sh"

setup() { load_module ntb_tool; }
cleanup() { unload_module ntb_tool; }

test_phases setup cleanup "$@"

T=$NTB_DBG/ntb_tool/$NTB
wait_for 30 "ntb_tool on $NTB" test -d "$T/peer0"
run sh -c "echo Y >$T/link"
run timeout 60 sh -c "echo Y >$T/peer0/link_event"
barrier up
if [ "$ROLE" = b ]; then
	"$REPO/selftests/vm/kmemleak-scan.sh"
	touch /run/out/sync/b.dying
	sleep 100000
fi
run timeout 300 sh -c "echo N >$T/peer0/link_event"
: >"$SYNC/a.down"	# a builtin: no process start-up in the measurement
log "link down after the peer VM died"
