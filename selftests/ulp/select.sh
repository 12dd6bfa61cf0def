#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Which sockets get ntbsmc without the preload helper, and which connections
# it is offered to (two VMs: host a on 6.1, host b on 6.12, so each series
# serves and connects):
#
#   host a (6.1) --- TCP + NTB link --- host b (6.12)
#
#   - socket(AF_INET/AF_INET6, SOCK_STREAM, IPPROTO_NTBSMC): NTB between two
#     such sockets either way and with a socket that set the ULP, TCP (reason
#     peer_no_offer) against a plain server; SO_PROTOCOL says TCP; bytes
#     checked where they land, and that they crossed NTB (counters)
#   - the module does not unload while such a socket exists (rmmod: in use)
#     and the connection ends intact over NTB; once they are closed it
#     unloads, socket(IPPROTO_NTBSMC) then fails with EPROTONOSUPPORT, the
#     module carries the aliases that load it on demand, and loaded again it
#     works
#   - the namespace's policy (ntbsmc policy): a client's excluded port (its SYN
#     does not offer: reason policy; the server peer_no_offer), a server's
#     excluded peer prefix (it declines: server policy, client declined/policy),
#     an include rule (its port NTB, another port TCP/policy), an IPv6 prefix
#     (::/0) that leaves IPv4 peers alone, a rule added under a running
#     connection (it stays on NTB, the next is TCP); the rules' hits and the
#     fallback counters
#   - bad input to the policy (host bits, a prefix or port out of range, an
#     upside-down range, an unknown word or rule, an overlap, no privilege): an
#     error with a message, and the rules as they were
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"

test_phases ulp_setup ulp_cleanup "$@"

ulp_wait_active
port=6500
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"

# ntb_conn_on PORT: this host's end of the connection on service port PORT runs over NTB.
ntb_conn_on() {
	local by=dport
	[ "$ROLE" = a ] && by=lport
	[[ $(cli -j conn show mode ntb "$by" "$1") == *local_port* ]]
}

# sel_case NAME SERVER_OPTS CLIENT_OPTS MODE SERVER_REASON CLIENT_REASON [CLIENT_PEER_REASON]
sel_case() {
	local name=$1 mode=$4 srv=${XFER_SERVER:-a} opts want n ntb
	xfer_one "$name" "$2" "$3"
	if [ "$ROLE" = "$srv" ]; then
		want=$5 opts=$2
	else
		want=$6 opts=$3
		[ -n "${7:-}" ] && check "$name: peer reason ${O[peer_reason]-missing}, want $7" \
			[ "${O[peer_reason]-missing}" = "$7" ]
	fi
	check "$name: mode ${O[mode]-missing}, want $mode" [ "${O[mode]-missing}" = "$mode" ]
	check "$name: reason ${O[reason]-missing}, want $want" [ "${O[reason]-missing}" = "$want" ]
	check "$name: bytes not intact" [ "${O[intact]-missing}" = true ]
	case " $opts " in *" --proto "*)
		check "$name: SO_PROTOCOL ${O[so_protocol]-missing}, want 6 (TCP)" \
			[ "${O[so_protocol]-missing}" = 6 ] ;;
	esac
	if [ "$mode" = ntb ]; then
		n=${O[bytes]-missing}
		[ "$ROLE" = "$srv" ] && ntb=${O[ntb_rx_bytes]-missing} || ntb=${O[ntb_tx_bytes]-missing}
		check "$name: only $ntb of $n bytes crossed NTB" [ "$ntb" -ge "$n" ]
	fi
}

# ---- socket(..., IPPROTO_NTBSMC) ----
sel_case proto "--proto" "--proto --bytes 4194304 --both" ntb none none
XFER_SERVER=b sel_case proto_rev "--proto" "--proto --bytes 4194304 --both" ntb none none
sel_case proto_ipv6 "--proto" "--proto -6 --bytes 1048576" ntb none none
XFER_SERVER=b sel_case proto_ulp "--ulp" "--proto --bytes 1048576" ntb none none
sel_case proto_plain_server "" "--proto --bytes 100000" tcp no_ulp peer_no_offer

# Module unload with a protocol socket open (a connection over NTB, paced so
# that it runs while rmmod is tried): refused, the connection ends intact.
port=$((port + 1))
if [ "$ROLE" = a ]; then
	inns "$XFER" server "$MY_IP" $port --proto >"$WORK/unload.json" &
	pid=$!
	wait_for 90 "server on $port" pid_listening $pid $port
	barrier unload-listening
else
	barrier unload-listening
	inns "$XFER" client "$PEER_IP" $port --proto --bytes 67108864 --pace-ms 20 \
		--pace-until "$SYNC/unload-tried" >"$WORK/unload.json" &
	pid=$!
fi
wait_for 60 "the connection over NTB" ntb_conn_on $port
msg=$(rmmod ntbsmc 2>&1)
rc=$?
check "rmmod with a connection open: exit $rc ($msg), want refused" [ $rc != 0 ]
check "ntbsmc unloaded under an open socket" grep -q "^ntbsmc " /proc/modules
barrier unload-tried
[ "$ROLE" = a ] && : >"$SYNC/unload-tried"
wait $pid || check "unload: xfer failed: $(<"$WORK/unload.json")" false
result "$WORK/unload.json"
log "unload: $out"
check "unload: mode ${O[mode]-missing}, want ntb" [ "${O[mode]-missing}" = ntb ]
check "unload: bytes not intact" [ "${O[intact]-missing}" = true ]
barrier unload-done
# Closed: the module goes once this host's connections are gone.
wait_for $IDLE_WAIT "no buffer, orphan or connection left" ulp_idle
wait_for 30 "rmmod ntbsmc" rmmod ntbsmc
aliases=$(modinfo -F alias "$MODDIR/ntbsmc/ntbsmc.ko" | tr '\n' ' ')
for fam in 2 10; do
	check "no alias for family $fam's IPPROTO_NTBSMC sockets: $aliases" \
		has " $aliases" " net-pf-$fam-proto-261-type-1 "
done
err=$(inns python3 -c '
import errno, socket
try:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM, 261)
    print("created")
except OSError as e:
    print(errno.errorcode[e.errno])')
check "socket(IPPROTO_NTBSMC) without the module: $err, want EPROTONOSUPPORT" \
	[ "$err" = EPROTONOSUPPORT ]
barrier unloaded
ulp_setup
wait_for 60 "ntbsmc link active on $NTB" dev_active
barrier reloaded
sel_case proto_reloaded "--proto" "--proto --bytes 1048576" ntb none none

# ---- the policy ----
# policy_hits ACTION: the hits of this host's first rule of ACTION.
policy_hits() {
	local re="\"action\": *\"$1\"[^}]*\"hits\": *([0-9]+)"
	[[ $(cli -j policy show) =~ $re ]] && echo "${BASH_REMATCH[1]}" || echo missing
}
# fb_client REASON: this namespace's client fallbacks for REASON.
fb_client() {
	local re="\"fallback_client\": *\\{[^}]*\"$1\": *([0-9]+)"
	[[ $(cli -j stats) =~ $re ]] && echo "${BASH_REMATCH[1]}" || echo missing
}

# A client's excluded service port: its SYN does not offer.
[ "$ROLE" = b ] && run cli policy add exclude port $((port + 1))
barrier pol-port
sel_case policy_client_port "--ulp" "--ulp --bytes 100000" tcp peer_no_offer policy
if [ "$ROLE" = b ]; then
	check "policy_client_port: hits $(policy_hits exclude), want 1" [ "$(policy_hits exclude)" = 1 ]
	check "policy_client_port: fallback_client policy $(fb_client policy), want >= 1" \
		[ "$(fb_client policy)" -ge 1 ]
	run cli policy flush
fi
# A server's excluded peer prefix: it declines.
[ "$ROLE" = a ] && run cli policy add exclude "${PEER_IP%.*}.0/24"
barrier pol-prefix
sel_case policy_server_prefix "--ulp" "--ulp --bytes 100000" tcp policy declined policy
if [ "$ROLE" = a ]; then
	check "policy_server_prefix: hits $(policy_hits exclude), want 1" [ "$(policy_hits exclude)" = 1 ]
	check "policy_server_prefix: fallback_server policy $(fb_server policy), want >= 1" \
		[ "$(fb_server policy)" -ge 1 ]
	run cli policy flush
fi
# Include rules: their peer and port run over NTB, another port does not.
[ "$ROLE" = b ] && run cli policy add include "$PEER_IP" port $((port + 1))
barrier pol-include
sel_case policy_included "--ulp" "--ulp --bytes 1048576" ntb none none
sel_case policy_not_included "--ulp" "--ulp --bytes 100000" tcp peer_no_offer policy
[ "$ROLE" = b ] && check "policy_included: hits $(policy_hits include), want 1" \
	[ "$(policy_hits include)" = 1 ] && run cli policy flush
# An IPv6 prefix, even ::/0, is not one of IPv4 peers.
[ "$ROLE" = b ] && run cli policy add exclude ::/0
barrier pol-v6
sel_case policy_v6 "--ulp" "--ulp -6 --bytes 100000" tcp peer_no_offer policy
sel_case policy_v6_v4peer "--ulp" "--ulp --bytes 1048576" ntb none none
[ "$ROLE" = b ] && run cli policy flush
# A rule added under a running connection applies to the next ones only.
port=$((port + 1))
if [ "$ROLE" = a ]; then
	inns "$XFER" server "$MY_IP" $port --ulp >"$WORK/live.json" &
	pid=$!
	wait_for 90 "server on $port" pid_listening $pid $port
	barrier live-listening
else
	barrier live-listening
	inns "$XFER" client "$PEER_IP" $port --ulp --bytes 67108864 --pace-ms 20 \
		--pace-until "$SYNC/live-ruled" >"$WORK/live.json" &
	pid=$!
	wait_for 60 "the connection over NTB" ntb_conn_to $port
	run cli policy add exclude "$PEER_IP"
	: >"$SYNC/live-ruled"
fi
wait $pid || check "live: xfer failed: $(<"$WORK/live.json")" false
result "$WORK/live.json"
log "live: $out"
check "live: mode ${O[mode]-missing}, want ntb" [ "${O[mode]-missing}" = ntb ]
check "live: bytes not intact" [ "${O[intact]-missing}" = true ]
barrier live-done
sel_case policy_after "--ulp" "--ulp --bytes 100000" tcp peer_no_offer policy
[ "$ROLE" = b ] && run cli policy flush

# Bad input, on both series: an error with a message, nothing changed.
run cli policy add exclude 10.0.0.0/8 port 100-200
before=$(cli -j policy show)
for bad in "add exclude 10.0.0.1/8" "add exclude 10.0.0.0/33" "add exclude fd00::/129" \
	   "add exclude port 0" "add exclude port 70000" "add exclude port 9-3" \
	   "add maybe 10.0.0.0/8" "add exclude 10.0.0.300" "del 4242" \
	   "add exclude 10.1.0.0/16 port 150-300"; do
	# shellcheck disable=SC2086
	msg=$(cli policy $bad 2>&1)
	rc=$?
	check "policy $bad: exit $rc ($msg), want an error with a message" [ $rc != 0 -a -n "$msg" ]
done
check "an overlapping rule is not named as such: $msg" has "$msg" overlaps
msg=$(inns $NOBODY "$NTBSMC_CLI" policy add exclude port 1 2>&1)
rc=$?
check "policy add as nobody: exit $rc ($msg), want 4 with a message" [ $rc = 4 -a -n "$msg" ]
check "bad input changed the policy: $(cli -j policy show)" [ "$(cli -j policy show)" = "$before" ]
run cli policy flush
check "flush left rules: $(cli -j policy show)" [ "$(cli -j policy show)" = "[]" ]
barrier done
checked
