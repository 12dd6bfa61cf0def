#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A listener closes under a connect storm: host b keeps opening connections with
# the ULP while host a's server is killed (so the kernel closes the listener with
# children in their handshake and in its accept queue, and the accepted one
# mid-read), at a random moment, STORM_ROUNDS times (seeded: STORM_SEED):
#
#   host b: closer flood, 40 connections a wave   ---->  host a: closer server, killed
#
# Host a's handshakes hold their connection 300 ms before they accept
# (fault point server_accept_delay), so that the listener dies with children that own a
# receive buffer mid-handshake. Afterwards every receive buffer is free again on
# both hosts (nothing leaked a slot, a connection or a device reference) and the
# kernel logged no splat (the harness checks the guests' logs). "Free again"
# waits IDLE_WAIT: a client's buffer that its dying server never answered is
# held 65 s after its socket closed, by design (ulp/lib.sh); 5 s here (fault
# point hold_short: every handshake here waits 2 s at most), so that the
# buffers come back while the test watches, not a minute later.
#
# Then the churn (STORM_CHURN_SECS, 30; make stress: 60): host a makes listeners with the ULP
# and closes them over and over, each listening for 3 ms, while host b keeps 16
# connections in flight towards the port, each sending a byte once writable
# and closed after 50 ms, at the guests' own pace with no delay point: a
# listener's context freed while a child is being cloned from it, children a
# closing listener forgets while their handshake owns them, a child cloned
# from a listener that has not yet unhooked. On 5cdd1ae (issue 18's findings 3,
# 2 and 11) this ended in a KASAN use-after-free in ntbsmc_ulp_clone(),
# inet_csk_listen_stop()'s WARN, a general protection fault in the handshake
# worker and a recursion in ntbsmc_state_change(), 22 to 73 s in. After it the
# buffers are free again and a connection runs over NTB, intact.
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"

test_phases ulp_setup ulp_cleanup_faults "$@"

CLOSER=$REPO/selftests/ulp/closer
need_faults
ulp_wait_active
fault_set hold_short -1 5000
RANDOM=${STORM_SEED:-1805}
rounds=${STORM_ROUNDS:-$(tier 1 6)}
port=7400
log "seed ${STORM_SEED:-1805}, $rounds rounds"

# children PID PORT: process PID's namespace has at least 2 connections on
# local PORT (read from /proc: starting ss costs a second of the debug guest).
children() {
	local hex f _sl local _rem st _rest n=0
	printf -v hex ':%04X' "$2"
	for f in "/proc/$1/net/tcp" "/proc/$1/net/tcp6"; do
		[ -r "$f" ] || continue
		while read -r _sl local _rem st _rest; do
			[ "$st" != 0A ] && [[ $local == *"$hex" ]] && n=$((n + 1))
		done <"$f"
	done
	[ $n -ge 2 ]
}

# buffers_free: no receive buffer of this host's NTB port is held.
buffers_free() {
	[ "$(jfield "$(cli -j dev show "$NTB")" buffers)" = 0 ]
}

[ "$ROLE" = a ] && fault_set server_accept_delay -1 300
barrier delay-set
for i in $(seq "$rounds"); do
	port=$((port + 1))
	if [ "$ROLE" = a ]; then
		inns "$CLOSER" server "$MY_IP" $port --rounds 1000 --bytes 1 >/dev/null 2>&1 &
		srv=$!
		wait_for 90 "server on $port" pid_listening $srv $port
		barrier "storm$i-listening"
		# the storm has reached the listener: children in their handshakes
		wait_for 60 "the storm's first connections" children $srv $port
		nap "0.$((RANDOM % 5))"
		kill -9 $srv
		wait $srv 2>/dev/null
	else
		barrier "storm$i-listening"
		inns "$CLOSER" flood "$PEER_IP" $port --rounds 40 --secs 3 >"$WORK/storm$i.json" 2>&1
		log "storm $i: $(<"$WORK/storm$i.json")"
	fi
	barrier "storm$i-done"
done
[ "$ROLE" = a ] && fault_clear server_accept_delay
wait_for $IDLE_WAIT "every receive buffer free again" buffers_free
barrier storm-end

churn=${STORM_CHURN_SECS:-$(tier 30 60)}
port=$((port + 1))
barrier churn
if [ "$ROLE" = a ]; then
	inns "$CLOSER" churn "$MY_IP" $port --secs "$churn" >"$WORK/churn.json" 2>&1
else
	inns "$CLOSER" flood "$PEER_IP" $port --rounds 16 --life-ms 50 --secs "$churn" \
		>"$WORK/churn.json" 2>&1
fi
rc=$?
[ $rc = 0 ] || check "churn: closer exited $rc: $(<"$WORK/churn.json")" false
log "churn: $(<"$WORK/churn.json")"
barrier churn-done
wait_for $IDLE_WAIT "every receive buffer free again after the churn" buffers_free
xfer_one after_churn "--ulp" "--ulp --bytes 1000000 --both"
check "after the churn: mode ${O[mode]-missing} intact ${O[intact]-missing}" \
	[ "${O[mode]-missing}/${O[intact]-missing}" = ntb/true ]
checked
