# SPDX-License-Identifier: GPL-2.0
# Helpers for the tests of the ntbsmc module (guest side), on top of selftests/lib.sh.

XFER=$REPO/selftests/ulp/xfer
NTBSMC_CLI=$REPO/netlink-tool/ntbsmc

# cli ARGS...: the ntbsmc tool in this host's network namespace, which it enters
# itself (-n): one process started, where "inns" starts two, and a process
# start costs a large part of a second in the debug kernel under emulation.
cli() {
	"$NTBSMC_CLI" ${NS:+-n "$NS"} "$@"
}

# Loads ntbsmc (it binds every NTB port) and, with both hosts in one kernel, gives
# each host's namespace its own port.
ulp_setup() {
	echo "ntbsmc-test: setup" >/dev/kmsg
	# the tree's module if it was built there, else the installed one (DKMS's)
	if ! grep -q "^ntbsmc " /proc/modules; then
		if [ -e "$MODDIR/ntbsmc/ntbsmc.ko" ]; then
			run insmod "$MODDIR/ntbsmc/ntbsmc.ko"
		else
			run modprobe ntbsmc
		fi
	fi
	if [ "$TOPO" = onevm ]; then
		local h
		for h in a b; do
			run "$NTBSMC_CLI" dev set "$(dev_of_host $h)" netns "$h"
		done
	fi
}

ulp_cleanup() {
	unload_module ntbsmc
}

# ulp_cleanup_faults: ulp_cleanup for a test that arms fault points.
ulp_cleanup_faults() {
	fault_clear
	ulp_cleanup
}

# ulp_idle: no receive buffer, orphan or connection of this host is left.
# Wait for it IDLE_WAIT seconds: a client's buffer that a PROPOSAL named and
# that no server attached to is held for NTBSMC_HOLD_MS (65 s) after its
# socket closed, so any test that kills handshakes sees buffers that long.
IDLE_WAIT=120
ulp_idle() {
	local dev
	dev=$(cli -j dev show "$NTB")
	[ "$(jfield "$dev" buffers)" = 0 ] && [ "$(jfield "$dev" orphans)" = 0 ] &&
		[[ $(cli -j conn show) != *local_port* ]]
}

# dev_of_host a|b: the NTB port (PCI name) of host a (port 0) or b (port 1).
dev_of_host() {
	local d
	for d in /sys/bus/ntb/devices/*; do
		d=${d##*/}
		[ "$(<"/sys/bus/pci/devices/$d/port")" = "$([ "$1" = a ] && echo 0 || echo 1)" ] &&
			echo "$d" && return 0
	done
	return 1
}

# port_unbind, port_bind: this host's NTB port goes away (its driver unbound),
# and comes back (with both hosts in one kernel, to this host's namespace).
port_unbind() {
	echo "ntbsmc-test: unbind" >/dev/kmsg
	run sh -c "echo $NTB >/sys/bus/pci/drivers/ntb_hw_ivshmem/unbind"
}

port_bind() {
	echo "ntbsmc-test: setup" >/dev/kmsg
	run sh -c "echo $NTB >/sys/bus/pci/drivers/ntb_hw_ivshmem/bind"
	if [ "$TOPO" = onevm ]; then
		run in_first "$NTBSMC_CLI" dev set "$NTB" netns "$ROLE"
	fi
}

# jfield JSON KEY: one field of a flat JSON line (xfer's, ntbsmc -j's), a string
# without its quotes, or "missing". Read in bash: under emulation a Python start
# costs seconds.
jfield() {
	local re="\"$2\": *(\"([^\"]*)\"|([^,}]*))"
	if [[ $1 =~ $re ]]; then
		echo "${BASH_REMATCH[2]}${BASH_REMATCH[3]}"
	else
		echo missing
	fi
}

# jmap NAME JSON: every key of a JSON line (xfer's, ntbsmc -j's) into the
# associative array NAME, as jfield reads it (its first occurrence), so that
# a check reads ${NAME[KEY]-missing} with no process.
jmap() {
	local -n _jm=$1
	local _jm_rest=$2 _jm_re='"([A-Za-z0-9_]+)": *("([^"]*)"|([^,}]*))'
	_jm=()
	while [[ $_jm_rest =~ $_jm_re ]]; do
		[ -n "${_jm[${BASH_REMATCH[1]}]+set}" ] ||
			_jm[${BASH_REMATCH[1]}]=${BASH_REMATCH[3]}${BASH_REMATCH[4]}
		_jm_rest=${_jm_rest#*\""${BASH_REMATCH[1]}"\":}
	done
}

# result FILE: the last line of a test program's output (its JSON result) into
# $out, and its fields into O: ${O[mode]}, ${O[intact]}...
declare -gA O
result() {
	last_line out "$1"
	jmap O "$out"
}

# stats: this host's counters (ntbsmc -j stats) into $STATS and S, one process
# start for as many reads of them, ${S[KEY]}, as a check needs.
declare -gA S
stats() {
	STATS=$(cli -j stats)
	jmap S "$STATS"
}

dev_active() {
	local d
	d=$(cli -j dev show "$NTB")
	[[ $d =~ \"state\":\ *\"active\" ]]
}

# conn_failed_over sport|dport PORT: our connection from or to PORT moved to
# TCP, as the tool says
conn_failed_over() {
	local j
	j=$(cli -j conn show mode tcp "$1" "$2")
	[[ $j == *'"version":7'* && $j == *'"failed_over":true'* &&
	   $j == *'"switch_time":'[1-9]* ]]
}

# ntb_conn_to PORT: this host has a connection to PORT running over NTB.
ntb_conn_to() {
	[[ $(cli -j conn show mode ntb dport "$1") == *local_port* ]]
}

# fb_server REASON: this namespace's server connections that fell back to TCP
# for REASON (ntbsmc stats), or "missing".
fb_server() {
	local n
	fb_server_of n "$1" "$(cli -j stats)"
	echo "$n"
}

# fb_server_of VAR REASON [JSON]: fb_server into VAR, from JSON or else the
# counters stats read last.
fb_server_of() {
	local _fb_re="\"fallback_server\": *\\{[^}]*\"$2\": *([0-9]+)"
	if [[ ${3-$STATS} =~ $_fb_re ]]; then
		printf -v "$1" %s "${BASH_REMATCH[1]}"
	else
		printf -v "$1" %s missing
	fi
}

# fb_both_of VAR REASON: this namespace's connections, client and server,
# that fell back for REASON, from the counters stats read last.
fb_both_of() {
	local _re_c="\"fallback_client\": *\\{[^}]*\"$2\": *([0-9]+)" _n
	fb_server_of _n "$2"
	if [ "$_n" != missing ] && [[ $STATS =~ $_re_c ]]; then
		printf -v "$1" %s $((_n + BASH_REMATCH[1]))
	else
		printf -v "$1" %s missing
	fi
}

# fb_server_grew REASON N: this namespace's server connections that fell
# back for REASON are N or more (it reads the counters: stats).
fb_server_grew() {
	local n
	stats
	fb_server_of n "$1"
	[ "$n" != missing ] && [ "$n" -ge "$2" ]
}

# Waits until this host's NTB port is usable by ntbsmc.
ulp_wait_active() {
	wait_for 60 "ntbsmc link active on $NTB" dev_active
	barrier ulp_active
}

# xfer_one NAME SERVER_OPTS CLIENT_OPTS: one xfer transfer on the next $port;
# host a serves (host XFER_SERVER if set), the other connects; "-6" in
# CLIENT_OPTS runs it over IPv6; with RUNNER set both programs run under it. A
# failure is recorded (check), the JSON result of this host is left in $out.
xfer_one() {
	local name=$1 sopts=$2 copts=$3 my=$MY_IP peer=$PEER_IP
	port=$((port + 1))
	case " $copts " in *" -6 "*) my=$MY_IP6 peer=$PEER_IP6 copts=${copts/-6/} ;; esac
	if [ "$ROLE" = "${XFER_SERVER:-a}" ]; then
		# shellcheck disable=SC2086
		inns ${RUNNER:-} "$XFER" server "$my" $port $sopts >"$WORK/$name.json" &
		local srv=$!
		wait_for 90 "server on $port" pid_listening $srv $port
		barrier "$name-listening"
		wait $srv || check "$name: server failed: $(<"$WORK/$name.json")" false
	else
		barrier "$name-listening"
		# shellcheck disable=SC2086
		inns ${RUNNER:-} "$XFER" client "$peer" $port $copts >"$WORK/$name.json" ||
			check "$name: client failed: $(<"$WORK/$name.json")" false
	fi
	result "$WORK/$name.json"
	log "$name: $out"
	barrier "$name-done"
}

# ---- ulp/rawsys: a static program of raw socket system calls ----
RAWSYS=$REPO/selftests/ulp/rawsys

# bpf_hook: this kernel has update_socket_protocol and the BTF to attach to it
# (ntbsmc_run --bpf can work here).
bpf_hook() { [ -r /sys/kernel/btf/vmlinux ] && grep -qw update_socket_protocol /proc/kallsyms; }

# raw_one NAME SERVER_HOST SERVER_RUNNER SERVER_OPTS CLIENT_RUNNER CLIENT_OPTS:
# rawsys server on SERVER_HOST (a or b), client on the other, each under its
# RUNNER (words, may be empty); this host's JSON line in $out, the runner's
# standard error in $WORK/NAME.err.
raw_one() {
	local name=$1 srv=$2 srun=$3 sopts=$4 crun=$5 copts=$6 my=$MY_IP peer=$PEER_IP pid
	port=$((port + 1))
	case " $copts " in *" -6 "*) my=$MY_IP6 peer=$PEER_IP6 copts=${copts/-6/} ;; esac
	if [ "$ROLE" = "$srv" ]; then
		# shellcheck disable=SC2086
		inns $srun "$RAWSYS" server "$my" $port $sopts >"$WORK/$name.json" 2>"$WORK/$name.err" &
		pid=$!
		wait_for 90 "server on $port" pid_listening $pid $port
		barrier "$name-listening"
		# bounded: a client that never connected leaves it waiting
		barrier "$name-client-ended" 300
		wait_for 60 "$name: the server to end after its client" pid_gone $pid
		wait $pid || check "$name: server failed: $(cat "$WORK/$name.json" "$WORK/$name.err")" false
	else
		barrier "$name-listening"
		# shellcheck disable=SC2086
		inns $crun "$RAWSYS" client "$peer" $port $copts >"$WORK/$name.json" 2>"$WORK/$name.err" ||
			check "$name: client failed: $(cat "$WORK/$name.json" "$WORK/$name.err")" false
		barrier "$name-client-ended"
	fi
	result "$WORK/$name.json"
	log "$name: $out"
	barrier "$name-done"
}

# raw_case NAME SERVER_HOST SERVER_RUNNER SERVER_OPTS CLIENT_RUNNER CLIENT_OPTS
#          MODE SERVER_REASON CLIENT_REASON
raw_case() {
	local name=$1 srv=$2 mode=$7 want n ntb
	raw_one "$@"
	[ "$ROLE" = "$srv" ] && want=$8 || want=$9
	check "$name: mode ${O[mode]-missing}, want $mode" [ "${O[mode]-missing}" = "$mode" ]
	check "$name: reason ${O[reason]-missing}, want $want" [ "${O[reason]-missing}" = "$want" ]
	check "$name: bytes not intact" [ "${O[intact]-missing}" = true ]
	check "$name: SO_PROTOCOL ${O[so_protocol]-missing}, want 6 (TCP)" \
		[ "${O[so_protocol]-missing}" = 6 ]
	if [ "$mode" = ntb ]; then
		n=${O[bytes]-missing}
		for ntb in "${O[ntb_tx_bytes]-missing}" "${O[ntb_rx_bytes]-missing}"; do
			check "$name: only $ntb of $n bytes crossed NTB each way" [ "$ntb" -ge "$n" ]
		done
	fi
}

# The test build's delay and failure points (ntbsmc/fault.h), one directory each.
FAULTS=/sys/kernel/debug/ntbsmc/fault

# have_faults: the fault points are there. make check's guests always load the
# test build (it fails there without them); on an installed ntbsmc it says that
# what follows is skipped, and is false.
have_faults() {
	[ -d $FAULTS ] && return 0
	[ -z "${IVS_PARAMS:-}" ] || fail "no $FAULTS: make check loads the test build"
	echo "# [$ROLE] SKIP: ntbsmc is not the test build (make FAULT_INJECTION=1): no $FAULTS"
	return 1
}

# need_faults: the whole test needs fault points (have_faults), or is skipped.
need_faults() {
	have_faults || exit "$KSFT_SKIP"
}

# fault_set POINT [TIMES [DELAY_MS [PORT]]]: POINT fires at every hit, TIMES
# times (-1, the default: until cleared), sleeping DELAY_MS if it is a delay
# point, only on connections with local or remote port PORT if one is given.
fault_set() {
	local d=$FAULTS/$1
	if ! { echo "${4:-0}" >"$d/port" && echo "${3:-0}" >"$d/delay_ms" &&
	       echo "${2:--1}" >"$d/times" && echo 100 >"$d/probability"; }; then
		fail "cannot arm fault point $1"
	fi
}

# fault_clear [POINT...]: disarms the points (all of them without arguments);
# for cleanup traps, so silent when there are none.
fault_clear() {
	local p
	[ -d $FAULTS ] || return 0
	if [ $# = 0 ]; then
		for p in "$FAULTS"/*/; do
			p=${p%/}
			set -- "$@" "${p##*/}"
		done
	fi
	for p in "$@"; do
		echo 0 >"$FAULTS/$p/probability"
		echo 0 >"$FAULTS/$p/port"
	done
}

# ---- web servers (ulp/servers.sh, bench/wrk.sh) ----

WWW=$WORK/www
LUA=$WORK/check.lua

# www_files: the files the web tests serve, the same on both hosts (host a
# makes them): $WWW/1k and $WWW/1m, random; and $LUA, wrk's check of every
# response: status 200 and the body byte for byte (WRK_BODY names the file).
www_files() {
	mkdir -p "$WWW"
	if [ "$ROLE" = a ]; then
		head -c 1024 /dev/urandom >"$WWW/1k"
		head -c $((1024 * 1024)) /dev/urandom >"$WWW/1m"
		cp "$WWW/1k" "$SYNC/www.1k.tmp" && mv "$SYNC/www.1k.tmp" "$SYNC/www.1k"
		cp "$WWW/1m" "$SYNC/www.1m.tmp" && mv "$SYNC/www.1m.tmp" "$SYNC/www.1m"
	else
		wait_for 60 "host a's files" test -e "$SYNC/www.1m"
		cp "$SYNC/www.1k" "$WWW/1k"
		cp "$SYNC/www.1m" "$WWW/1m"
	fi
	cat >"$LUA" <<'EOF'
local threads = {}
function setup(thread)
	table.insert(threads, thread)
end
function init(args)
	local f = assert(io.open(os.getenv("WRK_BODY"), "rb"))
	want = f:read("*a")
	f:close()
	bad, good = 0, 0
end
function response(status, headers, body)
	if status == 200 and body == want then
		good = good + 1
	else
		bad = bad + 1
	end
end
function done(summary, latency, requests)
	local b, g = 0, 0
	for _, t in ipairs(threads) do
		b = b + t:get("bad")
		g = g + t:get("good")
	end
	io.write(string.format("checked %d good %d bad\n", g, b))
end
EOF
}

# nginx_up NTB_PORT TCP_PORT: nginx, 2 workers, sendfile, serving $WWW on
# MY_IP at both ports, only the first opted in to ntbsmc (ntbsmc_run -p): the
# same server over TCP on the second. Sets NGINX_PID; its log is
# $WORK/nginx/error.log.
nginx_up() {
	local d=$WORK/nginx
	mkdir -p "$d"
	cat >"$d/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 2;
user root;
pid $d/nginx.pid;
error_log $d/error.log;
events { worker_connections 1024; }
http {
	access_log off;
	sendfile on;
	tcp_nopush on;
	keepalive_requests 1000000;
	default_type application/octet-stream;
	client_body_temp_path $d;
	proxy_temp_path $d;
	fastcgi_temp_path $d;
	uwsgi_temp_path $d;
	scgi_temp_path $d;
	server {
		listen $MY_IP:$1;
		listen $MY_IP:$2;
		root $WWW;
	}
}
EOF
	inns "$REPO/netlink-tool/ntbsmc_run" -p "$1" nginx -p "$d" -c "$d/nginx.conf" \
		-e "$d/error.log" &
	NGINX_PID=$!
	wait_for 60 "nginx listening" pid_listening $NGINX_PID "$1"
}
