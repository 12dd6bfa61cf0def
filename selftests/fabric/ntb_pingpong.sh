#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ntb_pingpong over the emulated fabric: doorbells and scratchpads bounce between the
# ports; its counter must keep growing on both hosts.
source "$REPO/selftests/lib.sh"

case $1 in
setup) load_module ntb_pingpong delay_ms=50; exit ;;
cleanup) unload_module ntb_pingpong; exit ;;
esac

C=$NTB_DBG/ntb_pingpong/$NTB/count
wait_for 30 "ntb_pingpong on $NTB" test -e "$C"
barrier start
wait_for 60 "pingpong count to pass 20 (now $(cat "$C"))" test "$(cat "$C")" -ge 20
first=$(cat "$C")
wait_for 60 "pingpong count to grow past $first" test "$(cat "$C")" -gt "$((first + 10))"
log "pingpong count $(cat "$C")"
barrier done
