#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Unmodified Debian programs under ntbsmc_run run over NTB: iperf3 (control and
# data connections), ncat moving a file each way, curl fetching a file from
# Python's http.server; in make stress also redis-benchmark against redis-server
# (and a value stored and read back with redis-cli) and sockperf ping-pong
# (make check's request-response server is ulp/servers.sh's memcached, its
# ping-pong ulp/budget.sh's round trips). Each transfer is compared
# byte for byte where the program does not check it itself, and the namespace's
# NTB byte counters must have moved by at least its size. Then, with the module
# unloaded, the same wrapper runs ncat again over plain TCP (make stress: redis
# and sockperf too, many non-blocking connections and ping-pong: the wrapper's
# path without the module is the same for each; iperf3 and curl would only
# repeat the stream, at a few Mbit/s between the emulated VMs).
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"

test_phases ulp_setup ulp_cleanup "$@"

for p in iperf3 ncat curl redis-server redis-benchmark redis-cli sockperf; do
	command -v $p >/dev/null || fail "$p is not installed (selftests/vm/deps.sh installs it)"
done
ulp_wait_active
RUNNER=$REPO/netlink-tool/ntbsmc_run
SIZE=$((6 * 1024 * 1024))
port=6800
# Bound of each of host b's client programs, and so of host a's wait for them:
# under load a benchmark crawls (redis-benchmark over plain TCP between the
# VMs did 17 requests/s beside five other guests and a kernel build, on
# 2026-11-28, longer than the two minutes a barrier waits by default).
CLIENT_S=300

# With MODE=tcp (module unloaded) the programs run over plain TCP and nothing is
# counted: ntb_bytes says 0 and moved checks nothing.
MODE=ntb

# ntb_bytes tx|rx: the namespace's bytes sent/received over NTB so far.
ntb_bytes() {
	[ "$MODE" = tcp ] && echo 0 && return
	jfield "$(cli -j stats)" "$1_bytes"
}

# moved NAME DIR BEFORE [MIN]: this host's NTB counter DIR grew by MIN (default
# SIZE) since BEFORE.
moved() {
	local now min=${4:-$SIZE}
	[ "$MODE" = tcp ] && return 0
	now=$(ntb_bytes "$2")
	check "$1: $2 over NTB grew by $((now - $3)), want >= $min" [ $((now - $3)) -ge "$min" ]
}

# A file of SIZE random bytes on each host, its checksum published to the peer.
head -c $SIZE /dev/urandom >"$WORK/blob"
mine=$(sha256sum <"$WORK/blob")
put sum "$mine"
theirs=$(get sum)

# ncat: a file each way; the receiver compares it with the sender's checksum.
# ncat_case NAME SENDER(a|b)
ncat_case() {
	local name=$1 sender=$2 pid tx rx
	port=$((port + 1))
	tx=$(ntb_bytes tx) rx=$(ntb_bytes rx)
	if [ "$ROLE" = a ]; then
		if [ "$sender" = a ]; then
			inns "$RUNNER" ncat -l "$MY_IP" $port --send-only <"$WORK/blob" &
		else
			inns "$RUNNER" ncat -l "$MY_IP" $port --recv-only >"$WORK/$name.out" &
		fi
		pid=$!
		wait_for 180 "ncat listening" pid_listening $pid $port
		barrier "$name-listening"
		wait $pid || check "$name: ncat server exited $?" false
	else
		barrier "$name-listening"
		if [ "$sender" = b ]; then
			inns "$RUNNER" ncat "$PEER_IP" $port --send-only <"$WORK/blob"
		else
			inns "$RUNNER" ncat "$PEER_IP" $port --recv-only >"$WORK/$name.out"
		fi || check "$name: ncat client exited $?" false
	fi
	if [ "$ROLE" = "$sender" ]; then
		moved "$name" tx "$tx"
	else
		check "$name: received data differs from what $PEER sent" \
			[ "$(sha256sum <"$WORK/$name.out")" = "$theirs" ]
		moved "$name" rx "$rx"
	fi
	barrier "$name-done"
}

ncat_case ncat_to_server b
ncat_case ncat_from_server a

# serve NAME CMD...: host a runs server CMD under ntbsmc_run on $port (its output
# in $WORK/NAME.log) while host b goes from barrier NAME-listening to NAME-done.
serve() {
	local name=$1 pid
	shift
	inns "$RUNNER" "$@" >"$WORK/$name.log" 2>&1 &
	pid=$!
	wait_for 180 "$1 listening" pid_listening $pid $port
	barrier "$name-listening"
	barrier "$name-done" $((3 * CLIENT_S + 60))	# b's clients, one after the other
	kill $pid
	wait $pid 2>/dev/null
}

# iperf3: one test of SIZE bytes from b to a. The server stops reading when the
# client reports the end on the control connection, so only the sender's counter
# must cover SIZE; the receiver's must show that the data came over NTB.
iperf3_case() {
	local tx rx pid
	port=$((port + 1))
	tx=$(ntb_bytes tx) rx=$(ntb_bytes rx)
	if [ "$ROLE" = a ]; then
		inns "$RUNNER" iperf3 -s -1 -B "$MY_IP" -p $port >"$WORK/$1.log" 2>&1 &
		pid=$!
		wait_for 180 "iperf3 listening" pid_listening $pid $port
		barrier "$1-listening"
		wait $pid || check "iperf3 server exited $?: $(tail -3 "$WORK/$1.log")" false
		moved "$1" rx "$rx" 1
	else
		barrier "$1-listening"
		inns "$RUNNER" iperf3 -c "$PEER_IP" -p $port -n $SIZE >"$WORK/$1.log" 2>&1 ||
			check "iperf3 client exited $?: $(tail -3 "$WORK/$1.log")" false
		moved "$1" tx "$tx"
	fi
	log "$1: $(grep -E 'sender|receiver' "$WORK/$1.log" | tr -s ' ' | tr '\n' ';')"
	barrier "$1-done"
}
iperf3_case iperf3

# curl from Python's http.server: host b fetches host a's file.
http_case() {
	local tx rx
	port=$((port + 1))
	tx=$(ntb_bytes tx) rx=$(ntb_bytes rx)
	if [ "$ROLE" = a ]; then
		mkdir -p "$WORK/www" && cp "$WORK/blob" "$WORK/www/blob"
		serve "$1" python3 -m http.server $port --bind "$MY_IP" --directory "$WORK/www"
		moved "$1" tx "$tx"
	else
		barrier "$1-listening"
		inns "$RUNNER" curl -sS --max-time 120 -o "$WORK/$1.out" "http://$PEER_IP:$port/blob" ||
			check "curl exited $?" false
		barrier "$1-done"
		check "$1: fetched file differs from $PEER's" [ "$(sha256sum <"$WORK/$1.out")" = "$theirs" ]
		moved "$1" rx "$rx"
	fi
}
http_case http

# redis-server with redis-benchmark (4 clients, 600 SETs and GETs of 1 KiB values)
# and a 64 KiB value stored and read back with redis-cli.
REQS=600 VAL=1024
redis_case() {
	local tx rx out sum got
	local -A O	# (its fields, result's)
	port=$((port + 1))
	tx=$(ntb_bytes tx) rx=$(ntb_bytes rx)
	if [ "$ROLE" = a ]; then
		serve "$1" redis-server --bind "$MY_IP" --port $port --save "" --appendonly no \
			--protected-mode no --dir "$WORK"
		moved "$1" tx "$tx" $((REQS * VAL))
	else
		barrier "$1-listening"
		out=$(inns timeout $CLIENT_S "$RUNNER" redis-benchmark -h "$PEER_IP" -p $port -c 4 -n $REQS -d $VAL \
			-t set,get -q 2>&1) || check "redis-benchmark exited $?: ${out:(-300)}" false
		sum=$(grep -o "[A-Z]*: [0-9.]* requests per second" <<<"${out//$'\r'/$'\n'}" | tr '\n' ' ')
		log "$1: redis-benchmark: $sum"
		check "redis-benchmark: no SET result: $sum" has "$sum" "SET: "
		check "redis-benchmark: no GET result: $sum" has "$sum" "GET: "
		head -c 49152 /dev/urandom | base64 -w0 >"$WORK/value"
		inns timeout $CLIENT_S "$RUNNER" redis-cli -h "$PEER_IP" -p $port -x SET blob <"$WORK/value" >/dev/null ||
			check "redis-cli SET exited $?" false
		got=$(inns timeout $CLIENT_S "$RUNNER" redis-cli -h "$PEER_IP" -p $port --raw GET blob)
		check "$1: the value read back differs from the one stored" [ "$got" = "$(<"$WORK/value")" ]
		moved "$1" tx "$tx" $((REQS * VAL))
		barrier "$1-done"
	fi
}
# (make stress: memcached's pipelined sets and gets in ulp/servers.sh are
# make check's request-response server)
stress_tier && redis_case redis

# sockperf ping-pong (its server answers every message): latency over NTB.
sockperf_case() {
	local tx out lat
	local -A O	# (its fields, result's)
	port=$((port + 1))
	tx=$(ntb_bytes tx)
	if [ "$ROLE" = a ]; then
		serve "$1" sockperf server --tcp -i "$MY_IP" -p $port
		moved "$1" tx "$tx" 6400
	else
		barrier "$1-listening"
		out=$(inns timeout $CLIENT_S "$RUNNER" sockperf ping-pong --tcp -i "$PEER_IP" -p $port -t 3 -m 64 2>&1) ||
			check "sockperf exited $?: $(tail -3 <<<"$out")" false
		lat=$(grep -m1 "avg-lat" <<<"$out")
		log "$1: $lat"
		check "sockperf: no latency summary: $(tail -3 <<<"$out")" [ -n "$lat" ]
		moved "$1" tx "$tx" 6400
		barrier "$1-done"
	fi
}
# (make stress: ulp/budget.sh's round trips are make check's ping-pong)
stress_tier && sockperf_case sockperf

# Without the module, ntbsmc_run steps aside: the program runs on plain TCP.
barrier apps-done
if [ "$TOPO" = twovm ] || [ "$ROLE" = a ]; then
	unload_module ntbsmc
fi
barrier unloaded
check "ntbsmc still loaded" [ ! -d /sys/module/ntbsmc ]
MODE=tcp
ncat_case ncat_no_module b
if stress_tier; then
	redis_case redis_no_module
	sockperf_case sockperf_no_module
fi
checked
