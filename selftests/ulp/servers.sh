#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Real servers' event loops over NTB, each program unmodified under ntbsmc_run.
#
#   host a                                      host b
#   nginx  :8080 (ntbsmc) :8090 (TCP) <-------- wrk, curl (keep-alive, close)
#   memcached :11211 (ntbsmc)         <-------- memc.py (pipelined set/get)
#   wrk, curl ------------------------------->  haproxy :8070 (splice, ntbsmc)
#   nginx :8080                       <--------     (both legs over NTB)
#
# nginx serves a 1 KiB and a 1 MiB file (with sendfile) to wrk with keep-alive
# and with "Connection: close", over ntbsmc and, in the same boot, over TCP;
# wrk's Lua checks every response body against the file. A stall does not pass
# as a slow run: while each run over ntbsmc is under way the client's NTB
# connections are sampled twice, 2 s apart, and one whose cursors show bytes
# queued and did not move fails the test (both rates are logged; they are
# compared by make bench, not here). curl's downloads are compared by checksum. haproxy
# (mode tcp, splicing both ways) forwards wrk's and curl's requests to nginx.
# memcached answers a client that pipelines 16 sets, then 16 gets, per round.
# In make stress, wrk's keep-alive connections to nginx go on, no request
# failing, while host b's NTB port is unbound and bound again under them (they
# move to TCP). In make stress also each wrk run over TCP beside it.
# Every host's counters must show the bytes crossing NTB, no fallback (but of
# clients gone mid-handshake, peer_closed) and no lost notification.
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"

test_phases ulp_setup ulp_cleanup "$@"

for p in nginx wrk haproxy memcached curl python3; do
	command -v $p >/dev/null || fail "$p is not installed (selftests/vm/deps.sh installs it)"
done
ulp_wait_active
# A bound on a stalled handshake with room for a machine four times slower
# than ours under load, not the default 2 s: a handshake that times out falls
# back (correctly), and how many do would depend on the machine's load.
sctl net.ntbsmc.handshake_timeout_ms=20000 || fail "cannot set handshake_timeout_ms"
RUNNER=$REPO/netlink-tool/ntbsmc_run
NTB_PORT=8080 TCP_PORT=8090 PROXY_PORT=8070 MC_PORT=11211
SECS=5

# step WHAT: the test's progress in the kernel log too, beside what the kernel
# says, and readable while the guest runs (its TAP comes at the end).
step() {
	log "$*"
	echo "ntbsmc-test: servers.sh [$ROLE]: $*" >/dev/kmsg
}

# bounded SECS NAME CMD...: CMD, failing NAME if it has not ended within SECS:
# then the kernel stacks of its tasks go to the log (and the kernel's list of
# blocked tasks to its log), so that a hang says where it is, and it is killed.
bounded() {
	local secs=$1 name=$2 pid t end
	shift 2
	"$@" &
	pid=$!
	end=$((${EPOCHREALTIME/./} + secs * 1000000))
	while kill -0 $pid 2>/dev/null && [ "${EPOCHREALTIME/./}" -lt $end ]; do
		nap 0.2
	done
	if kill -0 $pid 2>/dev/null; then
		check "$name: still running after $secs s: $*" false
		for t in /proc/$pid/task/* $(pgrep -P $pid | sed 's|^|/proc/|'); do
			log "$name: $t ($(cat "$t/comm" 2>/dev/null)) in $(cat "$t/wchan" 2>/dev/null): $(tr '\n' '|' <"$t/stack" 2>/dev/null)"
		done
		echo w >/proc/sysrq-trigger
		kill -KILL $pid
	fi
	wait $pid
}

stats
tx0=${S[tx_bytes]-missing} rx0=${S[rx_bytes]-missing} tcp0=${S[conn_tcp]-missing} ntb0=${S[conn_ntb]-missing}
lost0=${S[notify_lost]-missing}
fb_both_of closed0 peer_closed

www_files

# stuck: this host's NTB connections with bytes queued either way, as
# "port tx_prod tx_cons rx_prod rx_cons" lines.
stuck() {
	local j o re='"local_port": *([0-9]+).*"tx_prod": *([0-9]+), *"tx_cons": *([0-9]+), *"rx_prod": *([0-9]+), *"rx_cons": *([0-9]+)'
	j=$(cli -j conn show -a mode ntb)
	while read -r o; do
		[[ $o =~ $re ]] || continue
		[ "${BASH_REMATCH[2]}" != "${BASH_REMATCH[3]}" ] ||
			[ "${BASH_REMATCH[4]}" != "${BASH_REMATCH[5]}" ] &&
			echo "${BASH_REMATCH[*]:1}"
	done <<<"${j//\},/$'\n'}"
}

# ntb_answered PORT N: this host has N connections to PORT over NTB that have
# received bytes there.
ntb_answered() {
	local j o n=0 re='"rx_bytes": *([0-9]+)'
	j=$(cli -j conn show mode ntb dport "$1")
	while read -r o; do
		[[ $o =~ $re ]] && [ "${BASH_REMATCH[1]}" -gt 0 ] && n=$((n + 1))
	done <<<"${j//\},/$'\n'}"
	[ $n -ge "$2" ]
}

# wrk_run NAME URL FILE [ntb] [WRK-ARGS...]: wrk for SECS s, 1 thread and 4
# connections, under ntbsmc_run if "ntb"; sets RATE (requests/s) and GOOD.
# Over ntbsmc the client's connections are sampled for a stall meanwhile.
wrk_run() {
	local name=$1 url=$2 file=$3 mode=$4 pid s1 s2 rx out bad
	local -A O	# (its fields, result's)
	shift 4
	step "$name: wrk $url"
	stats
	rx=${S[rx_bytes]-missing}
	if [ "$mode" = ntb ]; then
		WRK_BODY=$file bounded 120 "$name" inns "$RUNNER" wrk -t1 -c4 -d${SECS}s -s "$LUA" \
			"$@" "$url" >"$WORK/$name.wrk" 2>&1 &
		pid=$!
		nap 1.5
		s1=$(stuck)
		nap 2
		s2=$(stuck)
		wait $pid || check "$name: wrk exited $?" false
		local same="" l
		while read -r l; do
			[ -n "$l" ] && [[ $'\n'$s1$'\n' == *$'\n'"$l"$'\n'* ]] && same+="$l; "
		done <<<"$s2"
		check "$name: NTB connections stalled (port tx_prod tx_cons rx_prod rx_cons, unchanged over 2 s): $same" \
			[ -z "$same" ]
	else
		WRK_BODY=$file bounded 120 "$name" inns wrk -t1 -c4 -d${SECS}s -s "$LUA" "$@" "$url" \
			>"$WORK/$name.wrk" 2>&1
	fi
	out=$(<"$WORK/$name.wrk"); jmap O "$out"
	RATE=$(sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' <<<"$out")
	GOOD=$(sed -n 's/^checked \([0-9]*\) good.*/\1/p' <<<"$out")
	bad=$(sed -n 's/^checked [0-9]* good \([0-9]*\) bad.*/\1/p' <<<"$out")
	log "$name: ${RATE:-?} requests/s, ${GOOD:-?} checked good, ${bad:-?} bad"
	check "$name: wrk's output: $(tr '\n' '|' <<<"$out")" test -n "$RATE" -a -n "$GOOD"
	check "$name: $bad responses differ from the file" [ "${bad:-1}" = 0 ]
	# (TCP between two debug-kernel VMs may not finish a 1 MiB answer in 5 s)
	[ "$mode" = ntb ] && check "$name: no response checked" [ "${GOOD:-0}" -gt 0 ]
	if [ "$mode" = ntb ]; then
		stats
		# (all but the one in fifty connections that may fall back, below)
		check "$name: received over NTB $((${S[rx_bytes]-missing} - rx)) bytes, want >= 49/50 of ${GOOD:-0} bodies of $(stat -c %s "$file")" \
			[ $((${S[rx_bytes]-missing} - rx)) -ge $((${GOOD:-0} * $(stat -c %s "$file") * 49 / 50)) ]
	fi
}

# The link-loss window's connections (wrk reconnects when nginx ends a
# keep-alive connection): those that start while b's port is gone or coming
# back fall back, rightly, and are left out of the one in fifty below. None
# may be reset (a handshake that had committed to the link it lost and did
# not move with its peer): wrk's socket errors say so on b.
loss_begin() {
	stats
	w_tcp=${S[conn_tcp]-missing} w_ntb=${S[conn_ntb]-missing}
}
loss_end() {
	stats
	w_tcp=$((${S[conn_tcp]-missing} - w_tcp)) w_ntb=$((${S[conn_ntb]-missing} - w_ntb))
	log "link loss window: $w_tcp connections fell back, $w_ntb over NTB"
}
w_tcp=0 w_ntb=0

# compare NAME TCP_RATE NTB_RATE: both rates logged, no verdict: a rate is
# a measure of speed, which moves with the machine's load (make bench
# compares them). A stall is caught where it is: a connection whose queued
# bytes do not move (stuck_conns), a request that never ends (bounded).
compare() {
	log "$1: TCP $2 requests/s, ntbsmc $3 requests/s"
	echo "$1 tcp=$2 ntb=$3" >>"$WORK/rates"
}

# curl_check NAME URL FILE [CURL-ARGS...]: under ntbsmc_run, the body compared.
curl_check() {
	local name=$1 url=$2 file=$3
	shift 3
	step "$name: curl $url"
	bounded 90 "$name" inns "$RUNNER" curl -sS --max-time 60 "$@" -o "$WORK/$name.out" "$url" ||
		check "$name: curl exited $?" false
	check "$name: body differs from the file" cmp -s "$WORK/$name.out" "$file"
}

if [ "$ROLE" = a ]; then
	nginx_up $NTB_PORT $TCP_PORT
	nginx_pid=$NGINX_PID
	inns "$RUNNER" memcached -u root -l "$MY_IP" -p $MC_PORT -U 0 -t 2 -m 64 &
	mc_pid=$!
	wait_for 180 "memcached listening" pid_listening $mc_pid $MC_PORT
	barrier servers-up

	# b's link loss, beside its wrk (after b's other clients: minutes)
	if stress_tier; then
		barrier ka-loss-start 900
		loss_begin
		barrier ka-loss-end 300
		loss_end
	fi

	# through b's haproxy: both legs over NTB, once b's own clients are done
	# (minutes under the debug kernel when the other boot shares the CPUs)
	barrier proxy-up 900
	curl_check proxy_1m "http://$PEER_IP:$PROXY_PORT/1m" "$WWW/1m"
	wrk_run proxy_1m "http://$PEER_IP:$PROXY_PORT/1m" "$WWW/1m" ntb
	barrier proxy-done

	barrier clients-done
	kill $nginx_pid $mc_pid
	wait $nginx_pid $mc_pid 2>/dev/null
	alerts=$(grep -i "alert\|emerg\|crit" "$WORK/nginx/error.log")
	check "nginx logged: $alerts" [ -z "$alerts" ]
else
	barrier servers-up
	base=http://$PEER_IP
	curl_check curl_1k "$base:$NTB_PORT/1k" "$WWW/1k"
	curl_check curl_1m "$base:$NTB_PORT/1m" "$WWW/1m"
	# keep-alive: ten requests on one connection
	step "curl keep-alive: 10 requests on one connection"
	bounded 90 curl_keepalive inns "$RUNNER" curl -sS --max-time 60 \
		$(printf "$base:$NTB_PORT/1k %.0s" {1..10}) >"$WORK/ka.out" ||
		check "curl keep-alive exited $?" false
	for i in {1..10}; do cat "$WWW/1k"; done >"$WORK/ka.want"
	check "curl keep-alive: 10 bodies of 1 KiB, got $(stat -c %s "$WORK/ka.out") bytes" \
		cmp -s "$WORK/ka.out" "$WORK/ka.want"

	# each over ntbsmc; in make stress each beside the same over TCP, same
	# server, same boot (rates logged, not judged: make bench compares them)
	for c in "ka_1k 1k" "ka_1m 1m" "close_1k 1k -H Connection:close"; do
		set -- $c
		t=-
		if stress_tier; then
			wrk_run ${1}_tcp "$base:$TCP_PORT/$2" "$WWW/$2" tcp "${@:3}"
			t=$RATE
		fi
		wrk_run ${1}_ntb "$base:$NTB_PORT/$2" "$WWW/$2" ntb "${@:3}"
		compare "$1" "$t" "$RATE"
	done

	step "memcached: memc.py"
	# (the bounds here catch a hang, not slowness: with the suite, a second
	# guest and a kernel build on two CPUs, memc.py took 95 s and haproxy
	# more than 60 s to listen, on 2026-11-27)
	out=$(bounded 300 memcached inns "$RUNNER" python3 "$REPO/selftests/ulp/memc.py" \
		"$PEER_IP" $MC_PORT 4 20 16 2>&1) || check "memcached: memc.py exited $?" false
	log "memcached: $out"
	check "memcached: $out" has "$out" '"ops": 2560'

	# keep-alive while the link goes and comes back: nginx's and wrk's
	# connections move to TCP and on; no request fails (failback is not
	# built: they stay on TCP). make stress only, for now: wrk reads on
	# EPOLLIN and takes EAGAIN for an error, and a read that meets the
	# switch gets EAGAIN although poll had said readable (the bytes the
	# socket held are kept for after the switch): one read error in about
	# sixteen losses, on 20261207. Issue 47 makes such a read return them.
	if stress_tier; then
		step "ka_link_loss: wrk keep-alive for 20 s, b's port unbound once its four connections run over NTB, bound 4 s later"
		barrier ka-loss-start
		loss_begin
		sw0=${S[switch_to_tcp]-missing}
		WRK_BODY=$WWW/1k bounded 120 ka_link_loss inns "$RUNNER" wrk -t1 -c4 -d20s -s "$LUA" \
			"$base:$NTB_PORT/1k" >"$WORK/ka_link_loss.wrk" 2>&1 &
		pid=$!
		# all four over NTB and answered there (the server attached) before the
		# loss: a handshake that meets it is ulp/hostile.sh's case, not this one
		wait_for 60 "wrk's four connections answered over NTB" ntb_answered $NTB_PORT 4
		nap 1
		port_unbind
		nap 4
		port_bind
		check "ka_link_loss: wrk ended before the port came back" kill -0 $pid
		wait $pid || check "ka_link_loss: wrk exited $?" false
		loss_end
		barrier ka-loss-end
		out=$(<"$WORK/ka_link_loss.wrk"); jmap O "$out"
		good=$(sed -n 's/^checked \([0-9]*\) good.*/\1/p' <<<"$out")
		bad=$(sed -n 's/^checked [0-9]* good \([0-9]*\) bad.*/\1/p' <<<"$out")
		log "ka_link_loss: ${good:-?} good, ${bad:-?} bad: $(tr '\n' '|' <<<"$out")"
		check "ka_link_loss: ${good:-no} responses checked good, ${bad:-?} bad" \
			[ "${good:-0}" -gt 0 -a "${bad:-1}" = 0 ]
		check "ka_link_loss: wrk saw errors: $(grep -E 'Socket errors|Non-2xx' <<<"$out")" \
			lacks "$out" errors
		check "ka_link_loss: wrk saw non-2xx answers" lacks "$out" Non-2xx
		stats
		check "ka_link_loss: $((${S[switch_to_tcp]-missing} - sw0)) connections moved to TCP, want wrk's 4" \
			[ $((${S[switch_to_tcp]-missing} - sw0)) -ge 4 ]
		ulp_wait_active
	fi

	# haproxy between a's client and a's nginx
	cat >"$WORK/haproxy.cfg" <<EOF
global
	nbthread 1
	maxconn 256
defaults
	mode tcp
	timeout connect 10s
	timeout client 60s
	timeout server 60s
listen web
	bind $MY_IP:$PROXY_PORT
	option splice-request
	option splice-response
	server nginx $PEER_IP:$NTB_PORT
EOF
	inns "$RUNNER" haproxy -f "$WORK/haproxy.cfg" -db &
	hap_pid=$!
	wait_for 180 "haproxy listening" pid_listening $hap_pid $PROXY_PORT
	barrier proxy-up
	barrier proxy-done 300
	kill $hap_pid
	wait $hap_pid 2>/dev/null
	barrier clients-done
fi

stats
check "NTB bytes sent: $((${S[tx_bytes]-missing} - tx0)), want > 1 MiB" \
	[ $((${S[tx_bytes]-missing} - tx0)) -gt 1048576 ]
check "NTB bytes received: $((${S[rx_bytes]-missing} - rx0)), want > 1 MiB" \
	[ $((${S[rx_bytes]-missing} - rx0)) -gt 1048576 ]
# No fallback but where the client went mid-handshake (peer_closed: wrk at
# the end of its run, haproxy resetting a backend connection whose client
# went): what those are depends on timing, and they are correct. Any other
# reason is a failure. (Those of the link-loss window, above, are not
# counted.)
fb=$((${S[conn_tcp]-missing} - tcp0 - w_tcp)) nc=$((${S[conn_ntb]-missing} - ntb0 - w_ntb))
fb_both_of closed peer_closed
closed=$((closed - closed0))
[ $fb = 0 ] || log "fallbacks: $(grep -o '"fallback_[a-z]*":{[^}]*}' <<<"$STATS" | tr '\n' ' ')"
check "$((fb - closed)) of $((fb + nc)) connections fell back to TCP for a reason other than peer_closed ($closed did), want 0" \
	[ $((fb - closed)) -le 0 ]
check "$((${S[notify_lost]-missing} - lost0)) notifications lost (found by the re-check), want 0" \
	[ "${S[notify_lost]-missing}" = "$lost0" ]
[ -e "$WORK/rates" ] && sed "s/^/# [$ROLE] rates: /" "$WORK/rates"
checked
