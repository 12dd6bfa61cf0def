#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ntbsmc tool tests: usage and exit codes on the real kernel, output against the fake module.
#
# Run by "make check" in netlink-tool/. Needs no module: the real binary is only
# asked things it answers before talking to the kernel (or, where the module is not
# loaded, that it says so); everything else runs tests/ntbsmc-fake, the same sources
# answered by tests/fake_kernel.c. "ntbsmc check" runs over loopback, once against
# the host kernel (no module) and once with the module's socket options faked:
#
#   ntbsmc check 127.0.0.1 PORT  --TCP-->  ntbsmc check -l PORT  (or a python3 listener)
#        |  TCP_ULP, NTBSMC_INFO                |  TCP_ULP, NTBSMC_INFO
#        +-- tests/fake-sockopt.so (LD_PRELOAD) +-- the same
#
# Prints TAP.

set -u
cd "$(dirname "$0")/.." || exit 1

TOOL=./ntbsmc
FAKE=tests/ntbsmc-fake
TMP=$(mktemp -d)
pids=()
cleanup() {
	local pid

	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null
	done
	rm -rf "$TMP"
}
trap cleanup EXIT
n=0
failed=0

# run CMD...: sets $rc, $out (stdout) and $err (stderr)
run() {
	"$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	out=$(cat "$TMP/out")
	err=$(cat "$TMP/err")
}

result() {	# result OK DESCRIPTION [DETAILS]
	n=$((n + 1))
	if [ "$1" = 1 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		[ -n "${3:-}" ] && printf '%s\n' "$3" | sed 's/^/#   /'
		failed=$((failed + 1))
	fi
}

# expect RC ERR_REGEX DESCRIPTION -- CMD...: exit code and stderr (regex, or "" for none)
expect() {
	local want=$1 pattern=$2 desc=$3
	shift 4
	run "$@"
	local ok=1
	[ "$rc" = "$want" ] || ok=0
	if [ -z "$pattern" ]; then
		[ -z "$err" ] || ok=0
	else
		grep -Eq -- "$pattern" <<<"$err" || ok=0
	fi
	result $ok "$desc" "rc=$rc (want $want)
stderr: $err
stdout: $out"
}

# same OUTPUT_FILE DESCRIPTION: $out must equal the file's text
same() {
	if [ "$out" = "$(cat "$1")" ]; then
		result 1 "$2"
	else
		result 0 "$2" "$(diff <(printf '%s\n' "$out") "$1")"
	fi
}

# json PYTHON_EXPR DESCRIPTION: $out parses as one JSON document d and EXPR holds
json() {
	if ! command -v python3 >/dev/null; then
		echo "ok $((n += 1)) - $2 # SKIP no python3"
		return
	fi
	local res
	res=$(printf '%s' "$out" | python3 -c "import json,sys; d=json.load(sys.stdin); \
sys.exit(0 if ($1) else 1)" 2>&1)
	result $((! $?)) "$2" "$res
$out"
}

# conns INDEXES DESCRIPTION: $out is the JSON array of exactly the fake module's sockets
# INDEXES (0-5 of conns[] in tests/fake_kernel.c, in that order), compared key by key.
# Checked later, by conns_verify: one python3 for all (it takes a second to start).
nconns=0
conns() {
	nconns=$((nconns + 1))
	printf '%s' "$out" >"$TMP/conns.$nconns"
	printf '%s\t%s\t%s\n' "$1" "$TMP/conns.$nconns" "$2" >>"$TMP/conns.cases"
}

conns_verify() {
	local ok desc details done=0

	if ! command -v python3 >/dev/null; then
		echo "ok $((n += 1)) - conn JSON # SKIP no python3"
		return
	fi
	while IFS=$'\t' read -r ok desc details; do
		result "$ok" "$desc" "$(printf '%b' "$details")"
		done=$((done + 1))
	done < <(python3 "$TMP/conns.py" <"$TMP/conns.cases" 2>&1)
	[ "$done" = "$nconns" ]; result $((! $?)) "conn JSON: all $nconns checks ran"
	rm -f "$TMP/conns.cases"
}

# stdin: lines "INDEXES<TAB>FILE<TAB>DESCRIPTION"; stdout: "OK<TAB>DESCRIPTION<TAB>DETAILS"
cat >"$TMP/conns.py" <<'EOF'
import json, sys

ntb = ["lgr_id", "dev", "rmb_size", "peer_rmb_size", "tx_prod", "tx_cons", "rx_prod",
       "rx_cons", "tx_bytes", "rx_bytes", "cpu_bytes", "dma_bytes", "zc_bytes",
       "link_writes", "link_write_bytes", "link_reads", "doorbells"]
keys = ["family", "state", "client", "local_addr", "local_port", "peer_addr", "peer_port",
        "mode", "reason", "peer_reason", "uid", "inode"] + ntb

def conn(family, state, client, laddr, lport, paddr, pport, mode, reason, peer_reason,
         uid, inode, *ntb_values, version=None, can_switch=False, switch_time=None):
    c = dict(zip(keys, [family, state, client, laddr, lport, paddr, pport, mode, reason,
                        peer_reason, uid, inode]))
    c.update(zip(ntb, ntb_values or [None] * len(ntb)))
    c.update(version=version, can_switch=can_switch if version else None,
             failed_over=switch_time is not None if version else None,
             switch_time=switch_time)
    return c

# tests/fake_kernel.c: conns[]
want = [
    conn("inet", "ESTAB", True, "10.0.0.1", 40000, "10.0.0.2", 5000, "ntb", "none",
         "none", 1000, 40001, 3, "ntb0", 65536, 131072, 1048576, 1040384, 4096, 4096,
         1048576, 4096, 786432, 262144, 131072, 290, 1052672, 1, 37, version=7,
         can_switch=True),
    conn("inet6", "ESTAB", False, "fd00::1", 5000, "fd00::2", 40001, "ntb", "none",
         "none", 0, 40002, 3, "ntb0", 131072, 65536, 4096, 4096, 1048576, 1040384,
         4096, 1048576, 4096, 0, 0, 33, 5120, 0, 17, version=6),
    conn("inet", "ESTAB", True, "10.0.0.1", 40002, "10.0.0.3", 5001, "tcp", "declined",
         "no_buffer", 1000, 40003),
    conn("inet", "CLOSE-WAIT", False, "10.0.0.1", 5000, "192.168.1.7", 51234, "tcp",
         "link_down", "none", 0, 40004, version=7, can_switch=True,
         switch_time=1795780800123456789),
    conn("inet6", "LISTEN", False, "::", 5000, "::", 0, "listen", "none", "none", 0, 40005),
    conn("inet", "ESTAB", True, "10.0.0.1", 40003, "10.0.0.2", 5000, "handshake", "none",
         "none", 1000, 40006),
]

def check(indexes, text):
    try:
        got = json.loads(text)
    except ValueError as e:
        return ["not JSON: %s" % e]
    expect = [want[int(i)] for i in indexes.split(",") if i]
    if not isinstance(got, list) or len(got) != len(expect):
        return ["want %d sockets (%s), got %s" % (len(expect), indexes,
                len(got) if isinstance(got, list) else type(got).__name__)]
    errors = []
    for i, (g, w) in enumerate(zip(got, expect)):
        for k in sorted(set(g) | set(w)):
            if k not in g or k not in w or g[k] != w[k] or type(g[k]) != type(w[k]):
                errors.append("socket %d, %s: got %r, want %r" % (i, k, g.get(k, "<none>"),
                              w.get(k, "<none>")))
    return errors

for line in sys.stdin:
    indexes, path, desc = line.rstrip("\n").split("\t", 2)
    text = open(path).read()
    errors = check(indexes, text)
    details = "\n".join(errors + [text]).replace("\\", "\\\\").replace("\n", "\\n")
    print("%d\t%s\t%s" % (not errors, desc, details))
EOF

# free_port: a TCP port nothing listens on (nor, for a moment, will)
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); \
print(s.getsockname()[1])'
}

# wait_listen PORT: until a socket listens on PORT (IPv4 or IPv6), at most 5 s
wait_listen() {
	local hex i

	hex=$(printf '%04X' "$1")
	for ((i = 0; i < 100; i++)); do
		grep -Eq ":$hex [0-9A-F]+:[0-9A-F]{4} 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null &&
			return 0
		sleep 0.05
	done
	return 1
}

# wait_file FILE: until FILE has a line, at most 5 s
wait_file() {
	local i

	for ((i = 0; i < 100; i++)); do
		[ -s "$1" ] && return 0
		sleep 0.05
	done
	return 1
}

# py_listener FILE: a python3 listener on 127.0.0.1 that writes its port to FILE, then
# for one connection "bytes N" (what it received before the peer closed); sets $lpid
py_listener() {
	python3 -c 'import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
f = open(sys.argv[1], "w")
print(s.getsockname()[1], file=f, flush=True)
c, _ = s.accept()
n = 0
while True:
    b = c.recv(4096)
    if not b:
        break
    n += len(b)
print("bytes", n, file=f, flush=True)' "$1" &
	lpid=$!
	pids+=("$lpid")
}

# ---- usage, help and exit codes (real binary, module not needed) ----

expect 0 "" "-V" -- $TOOL -V
grep -q "^ntbsmc utility, version" <<<"$out"; result $((! $?)) "-V prints the version"
expect 0 "" "help" -- $TOOL help
grep -q "ntbsmc dev set DEV" <<<"$out"; result $((! $?)) "help lists dev set"
expect 0 "" "-h" -- $TOOL -h
expect 0 "" "--help" -- $TOOL --help
expect 0 "" "dev help" -- $TOOL dev help
expect 0 "" "d h" -- $TOOL d h
expect 0 "" "linkgroup help" -- $TOOL linkgroup help
expect 0 "" "stats help" -- $TOOL stats help
expect 0 "" "dev set help" -- $TOOL dev set help
expect 0 "" "conn help" -- $TOOL conn help
grep -q "^Usage: ntbsmc conn show \[ -a | --all \]" <<<"$out"; result $((! $?)) "conn help: usage"
expect 0 "" "connection show help" -- $TOOL connection show help
expect 0 "" "check help" -- $TOOL check help
grep -q "^       ntbsmc check -l " <<<"$out"; result $((! $?)) "check help: usage of -l"
expect 0 "" "policy help" -- $TOOL policy help
grep -q "^       ntbsmc policy add { include | exclude } " <<<"$out"
result $((! $?)) "policy help: usage of add"
expect 0 "" "policy add help" -- $TOOL policy add help
expect 0 "" "help lists conn and check" -- $TOOL help
grep -q "ntbsmc conn show" <<<"$out" && grep -q "ntbsmc check \[" <<<"$out"
result $((! $?)) "help: conn show and check"
grep -q "^Usage: ntbsmc policy \[ show \]" <<<"$out"; result $((! $?)) "help: policy"
expect 2 '^Error: no object given' "no object" -- $TOOL
expect 2 '^Error: unknown object "bogus"' "unknown object" -- $TOOL bogus
expect 2 '^Error: ambiguous object ""' "ambiguous object" -- $TOOL ""
expect 2 '^Error: unknown dev command "frob"' "unknown dev command" -- $TOOL dev frob
expect 2 '^Error: unknown stats command "sh0w"' "unknown stats command" -- $TOOL stats sh0w
expect 2 '^Error: unknown linkgroup command "set"' "linkgroup has no set" -- $TOOL lgr set
expect 2 '^Error: unknown option "-x"' "unknown option" -- $TOOL -x dev
expect 2 '^Error: unknown option "--bogus"' "unknown long option" -- $TOOL --bogus dev
expect 2 '^Error: option "-n" needs a value' "-n without value" -- $TOOL -n
expect 2 '^Error: unexpected argument "y"' "dev show: too many arguments" -- $TOOL dev show x y
expect 2 'too long' "dev show: name too long" -- $TOOL dev show 0123456789012345678901234567890123
expect 2 '^Error: dev set: device name missing' "dev set: no device" -- $TOOL dev set
expect 2 'nothing to change' "dev set: nothing to change" -- $TOOL dev set ntb0
expect 2 'given twice' "dev set: enable and disable" -- $TOOL dev set ntb0 enable disable
expect 2 'netns needs' "dev set: netns without value" -- $TOOL dev set ntb0 netns
expect 2 'invalid PID "0"' "dev set: PID 0" -- $TOOL dev set ntb0 netns 0
expect 2 'invalid PID' "dev set: PID too large" -- $TOOL dev set ntb0 netns 99999999999
expect 2 'unknown dev set argument "frob"' "dev set: unknown keyword" -- $TOOL dev set ntb0 frob
expect 2 'network namespace "nosuch-ns" not found' "dev set: unknown netns name" -- \
	$TOOL dev set ntb0 netns nosuch-ns
expect 2 'invalid link group id "abc"' "linkgroup show: bad id" -- $TOOL linkgroup show abc
expect 2 'invalid link group id "0"' "linkgroup show: id 0" -- $TOOL linkgroup show 0
expect 2 'unexpected argument "now"' "stats reset: extra argument" -- $TOOL stats reset now
expect 2 '^Error: ambiguous object "c": could be conn, check' "c is ambiguous" -- $TOOL c
expect 2 '^Error: unknown conn command "frob"' "conn: unknown command" -- $TOOL conn frob
expect 2 '^Error: unknown conn show filter "bogus"' "conn show: unknown filter" -- \
	$TOOL conn show bogus
expect 2 '^Error: ambiguous conn show filter "l": could be lport, lgr' \
	"conn show: ambiguous filter" -- $TOOL conn show l 1
expect 2 '^Error: unknown option "-x"' "conn show: unknown option" -- $TOOL conn show -x
expect 2 '^Error: unknown option "-x"' "conn: unknown option without show" -- $TOOL conn -a -x
expect 2 '^Error: mode needs a value' "conn show: mode without value" -- $TOOL conn show mode
expect 2 '^Error: unknown mode "fast"' "conn show: unknown mode" -- $TOOL conn show mode fast
expect 2 '^Error: invalid port "70000"' "conn show: port too large" -- $TOOL conn s port 70000
expect 2 '^Error: invalid port "x"' "conn show: lport not a number" -- $TOOL conn s lport x
expect 2 '^Error: invalid port "-1"' "conn show: dport negative" -- $TOOL conn s dport -1
expect 2 '^Error: port given twice' "conn show: port twice" -- $TOOL conn s port 1 port 2
expect 2 '^Error: invalid link group id "0"' "conn show: lgr 0" -- $TOOL conn s lgr 0
expect 2 '^Error: invalid link group id "x"' "conn show: lgr x" -- $TOOL conn s lgr x
expect 2 '^Error: invalid device name ""' "conn show: empty dev" -- $TOOL conn s dev ""
expect 2 '^Error: invalid device name' "conn show: dev too long" -- \
	$TOOL conn s dev 0123456789012345678901234567890123
expect 2 '^Error: unknown family "ipx"' "conn show: unknown family" -- $TOOL conn s family ipx
expect 2 '^Error: family given twice' "conn show: -4 -6" -- $TOOL conn s -4 -6
expect 2 '^Error: family given twice' "conn show: -6 family inet6" -- $TOOL conn s -6 family inet6
expect 2 '^Error: mode given twice' "conn show: mode twice" -- $TOOL conn s mode ntb mode tcp
expect 2 '^Error: check: HOST and PORT missing' "check: nothing" -- $TOOL check
expect 2 '^Error: check: PORT missing' "check: port missing" -- $TOOL check 127.0.0.1
expect 2 '^Error: invalid port "0" \(1 to 65535\)' "check: port 0" -- $TOOL check h 0
expect 2 '^Error: invalid port "65536"' "check: port too large" -- $TOOL check h 65536
expect 2 '^Error: invalid port "http"' "check: port by name" -- $TOOL check h http
expect 2 '^Error: invalid timeout "0"' "check: -t 0" -- $TOOL check -t 0 h 1
expect 2 '^Error: invalid timeout "abc"' "check: -t abc" -- $TOOL check -t abc h 1
expect 2 '^Error: invalid timeout "-1"' "check: -t -1" -- $TOOL check -t -1 h 1
expect 2 '^Error: invalid timeout "nan"' "check: -t nan" -- $TOOL check -t nan h 1
expect 2 '^Error: invalid timeout "3601"' "check: -t too long" -- $TOOL check -t 3601 h 1
expect 2 '^Error: -t needs a value' "check: -t without value" -- $TOOL check h 1 -t
expect 2 '^Error: unexpected argument "x"' "check: extra argument" -- $TOOL check h 1 x
expect 2 '^Error: unknown option "-x"' "check: unknown option" -- $TOOL check -x h 1
expect 2 '^Error: -4 or -6 given twice' "check: -4 -6" -- $TOOL check -4 -6 h 1
expect 2 '^Error: -c needs -l' "check: -c without -l" -- $TOOL check -c 1 h 1
expect 2 '^Error: invalid count "0"' "check: -c 0" -- $TOOL check -l -c 0 1
expect 2 '^Error: check -l: PORT missing' "check -l: port missing" -- $TOOL check -l
expect 2 '^Error: unexpected argument "1" \(-l takes PORT\)' "check -l: HOST PORT" -- \
	$TOOL check -l h 1
expect 2 'network namespace "nosuch-ns" not found' "check: -n unknown name" -- \
	$TOOL -n nosuch-ns check h 1
expect 2 'network namespace "nosuch-ns" not found' "-n unknown name" -- $TOOL -n nosuch-ns dev
expect 2 'is not a network namespace' "-n not a namespace" -- $TOOL -n /dev/null dev

if $TOOL stats >/dev/null 2>&1; [ $? = 3 ]; then
	cmds=("dev" "d s" "-j dev show" "link sh" "lgr show 1" "st" "stats reset"
	      "dev set ntb0 enable" "conn" "co s -a" "-j connection show mode ntb port 1"
	      "policy" "-j po s" "policy add exclude 10.0.0.0/8 port 22" "policy del 1"
	      "policy flush")
	[ "$(id -u)" = 0 ] && cmds+=("-n /proc/self/ns/net stats")
	for cmd in "${cmds[@]}"; do
		# shellcheck disable=SC2086
		expect 3 '^Error: ntbsmc module not loaded' "no module: $cmd" -- $TOOL $cmd
		[ -z "$out" ]; result $((! $?)) "no module: $cmd prints nothing on stdout"
	done

	# The ULP is looked up (and not found) before anything is sent to the listener.
	if command -v python3 >/dev/null; then
		py_listener "$TMP/listener"
		wait_file "$TMP/listener"; result $((! $?)) "no module: a local listener"
		port=$(head -n1 "$TMP/listener")
		for cmd in "check 127.0.0.1 $port" "-j check -t 1 localhost $port" \
			   "check -l $port" "check -l -6 -c 1 $(free_port)"; do
			# shellcheck disable=SC2086
			expect 3 '^Error: ntbsmc module not loaded \(no TCP ULP "ntbsmc"\)$' \
				"no module: $cmd" -- $TOOL $cmd
			[ -z "$out" ]; result $((! $?)) "no module: $cmd prints nothing on stdout"
		done
		kill "$lpid" 2>/dev/null
		wait "$lpid" 2>/dev/null
	else
		echo "ok $((n += 1)) - no module: check # SKIP no python3"
	fi
else
	echo "ok $((n += 1)) - no-module exit codes # SKIP the ntbsmc module is loaded"
fi

# ---- output and kernel errors (fake module) ----

export NTBSMC_FAKE=normal NTBSMC_FAKE_LOG="$TMP/log"

cat >"$TMP/dev.txt" <<'EOF'
ntb0: state active enabled yes
    fabric_id 0112233445566778899aabbccddeef00 netns_cookie 4097
    window 4194304 windows 2 doorbells 32 scratchpads 16
    buffers 3 space 4128768 free 1015808 size 1048576 orphans 1 held 0
    dma dma0chan0 of 0000:03:00.1 (switch)
    peer_sysid a0b1c2d3e4f5061728394a5b6c7d8e9f
ntb1: state down enabled no
    fabric_id 0112233445566778899aabbccddeef00 netns_cookie 4097
    window 4194304 windows 2 doorbells 32 scratchpads 16
    buffers 0 space 4128768 free 4128768 size 1048576 orphans 0 held 0
    peer_sysid -
EOF
expect 0 "" "fake: dev" -- $FAKE dev
same "$TMP/dev.txt" "fake: dev text"
expect 0 "" "fake: d s (prefixes)" -- $FAKE d s
same "$TMP/dev.txt" "fake: d s text"
expect 0 "" "fake: -p alone changes nothing in text" -- $FAKE -p dev
same "$TMP/dev.txt" "fake: -p text"

expect 0 "" "fake: -j dev" -- $FAKE -j dev
[ "$(wc -l <<<"$out")" = 1 ]; result $((! $?)) "fake: -j is one line"
json 'len(d) == 2 and d[0] == {"name": "ntb0", "state": "active", "enabled": True,
"fabric_id": "0112233445566778899aabbccddeef00", "netns_cookie": 4097,
"window_size": 4194304, "windows": 2, "doorbells": 32, "scratchpads": 16, "buffers": 3,
"buffer_space": 4128768, "buffer_free": 1015808, "buffer_size": 1048576, "orphans": 1,
"held": 0, "dma_chan": "dma0chan0", "dma_dev": "0000:03:00.1", "dma_choice": "switch",
"peer_sysid": "a0b1c2d3e4f5061728394a5b6c7d8e9f"} and
d[1]["peer_sysid"] is None and d[1]["dma_chan"] is None and d[1]["dma_dev"] is None and
d[1]["dma_choice"] is None and d[1]["state"] == "down" and
d[1]["orphans"] == 0' "fake: -j dev keys and values"
expect 0 "" "fake: --json --pretty dev show ntb1" -- $FAKE --json --pretty dev show ntb1
json 'len(d) == 1 and d[0]["name"] == "ntb1"' "fake: dev show DEV filters"
[ "$(wc -l <<<"$out")" -gt 3 ]; result $((! $?)) "fake: --pretty spreads over lines"
grep -q "cmd=1 dump=1 name=ntb1" "$TMP/log"; result $((! $?)) "fake: dev show DEV sends the name"
expect 5 '^Error: dev show: no NTB device "ntb9"' "fake: dev show unknown device" -- \
	$FAKE -j dev show ntb9
[ -z "$out" ]; result $((! $?)) "fake: failed show prints nothing on stdout"

cat >"$TMP/lgr.txt" <<'EOF'
3: dev ntb0 peer_sysid a0b1c2d3e4f5061728394a5b6c7d8e9f connections 2
    tx_bytes 1048576 rx_bytes 2097152 age 1h02m03s idle 0.000s
EOF
expect 0 "" "fake: link sh" -- $FAKE link sh
same "$TMP/lgr.txt" "fake: linkgroup text"
expect 0 "" "fake: -j lgr show 3" -- $FAKE -j lgr show 3
json 'd == [{"id": 3, "dev": "ntb0", "peer_sysid": "a0b1c2d3e4f5061728394a5b6c7d8e9f",
"connections": 2, "tx_bytes": 1048576, "rx_bytes": 2097152, "age_ms": 3723004,
"idle_ms": 0}]' "fake: -j linkgroup keys and values"
expect 5 'no link group 4' "fake: linkgroup show unknown id" -- $FAKE lgr show 4

# conns[] of tests/fake_kernel.c: 0 IPv4 NTB client, 1 IPv6 NTB server, 2 fallback
# declined by the peer (no_buffer), 3 failed over to TCP (link_down) in CLOSE-WAIT, 4 IPv6
# listener, 5 client in handshake.
cat >"$TMP/conn.txt" <<'EOF'
State       Local Address:Port  Peer Address:Port  Mode       Reason               LGR  UID   Inode
ESTAB       10.0.0.1:40000      10.0.0.2:5000      ntb        -                    3    1000  40001
ESTAB       [fd00::1]:5000      [fd00::2]:40001    ntb        -                    3    0     40002
ESTAB       10.0.0.1:40002      10.0.0.3:5001      tcp        declined: no_buffer  -    1000  40003
CLOSE-WAIT  10.0.0.1:5000       192.168.1.7:51234  tcp        link_down            -    0     40004
ESTAB       10.0.0.1:40003      10.0.0.2:5000      handshake  -                    -    1000  40006
EOF
: >"$TMP/log"
expect 0 "" "fake: conn" -- $FAKE conn
same "$TMP/conn.txt" "fake: conn text: connected sockets, no listener"
grep -q "^cmd=4 dump=1$" "$TMP/log"; result $((! $?)) "fake: conn show sends a CONN_GET dump"
expect 0 "" "fake: co s (prefixes)" -- $FAKE co s
same "$TMP/conn.txt" "fake: co s text"
expect 0 "" "fake: connection list (aliases)" -- $FAKE connection list
same "$TMP/conn.txt" "fake: connection list text"

cat >"$TMP/conn-a.txt" <<'EOF'
State       Local Address:Port  Peer Address:Port  Mode       Reason               LGR  UID   Inode
ESTAB       10.0.0.1:40000      10.0.0.2:5000      ntb        -                    3    1000  40001
	client version 7 dev ntb0 rmb 65536 peer_rmb 131072 tx_prod 1048576 tx_cons 1040384 rx_prod 4096 rx_cons 4096 tx_bytes 1048576 rx_bytes 4096 cpu_bytes 786432 dma_bytes 262144 zc_bytes 131072 link_writes 290 link_write_bytes 1052672 link_reads 1 doorbells 37
ESTAB       [fd00::1]:5000      [fd00::2]:40001    ntb        -                    3    0     40002
	server version 6 dev ntb0 rmb 131072 peer_rmb 65536 tx_prod 4096 tx_cons 4096 rx_prod 1048576 rx_cons 1040384 tx_bytes 4096 rx_bytes 1048576 cpu_bytes 4096 dma_bytes 0 zc_bytes 0 link_writes 33 link_write_bytes 5120 link_reads 0 doorbells 17
ESTAB       10.0.0.1:40002      10.0.0.3:5001      tcp        declined: no_buffer  -    1000  40003
	client
CLOSE-WAIT  10.0.0.1:5000       192.168.1.7:51234  tcp        link_down            -    0     40004
	server version 7 failed_over 2026-11-27T12:00:00.123Z
LISTEN      [::]:5000           [::]:*             listen     -                    -    0     40005
	server
ESTAB       10.0.0.1:40003      10.0.0.2:5000      handshake  -                    -    1000  40006
	client
EOF
expect 0 "" "fake: conn show -a -d" -- $FAKE conn show -a -d
same "$TMP/conn-a.txt" "fake: conn -a -d text: listener, details line"
expect 0 "" "fake: -d conn --all (global -d)" -- $FAKE -d conn --all
same "$TMP/conn-a.txt" "fake: -d conn --all text"
expect 0 "" "fake: conn -a (show implied)" -- $FAKE conn -a
grep -q '^LISTEN      \[::\]:5000           \[::\]:\*  ' <<<"$out" && [ "$(wc -l <<<"$out")" = 7 ]
result $((! $?)) "fake: conn -a text: header and six sockets, listener as ss shows it"

expect 0 "" "fake: -j conn" -- $FAKE -j conn
[ "$(wc -l <<<"$out")" = 1 ]; result $((! $?)) "fake: -j conn is one line"
conns 0,1,2,3,5 "fake: -j conn: every key of every connected socket"
expect 0 "" "fake: -j -p conn show --all" -- $FAKE -j -p conn show --all
conns 0,1,2,3,4,5 "fake: -j -p conn -a: all six sockets"
expect 0 "" "fake: -j -d conn (details change nothing in JSON)" -- $FAKE -j -d conn
conns 0,1,2,3,5 "fake: -j -d conn"

# conn_filter ARGS INDEXES: conn show ARGS, in text (the header and as many lines) and JSON
conn_filter() {
	# shellcheck disable=SC2086
	expect 0 "" "fake: conn show $1" -- $FAKE conn show $1
	local want=$(( $(tr -cd , <<<"$2" | wc -c) + 2 ))
	[ -z "$2" ] && want=1
	[ "$(wc -l <<<"$out")" = "$want" ] && grep -q '^State ' <<<"$out"
	result $((! $?)) "fake: conn show $1: text has $((want - 1)) sockets"
	# shellcheck disable=SC2086
	expect 0 "" "fake: -j conn show $1" -- $FAKE -j conn show $1
	conns "$2" "fake: -j conn show $1: sockets $2"
}
conn_filter "mode ntb" 0,1
conn_filter "mode tcp" 2,3
conn_filter "mode handshake" 5
conn_filter "mode listen" 4
conn_filter "m l" 4
conn_filter "port 5000" 0,1,3,5
conn_filter "-a port 5000" 0,1,3,4,5
conn_filter "lport 5000" 1,3
conn_filter "sport 5000 --all" 1,3,4
conn_filter "dport 5000" 0,5
conn_filter "dport 0" ""
conn_filter "-a dport 0" 4
conn_filter "port 51234" 3
conn_filter "lgr 3" 0,1
conn_filter "lgr 4" ""
conn_filter "dev ntb0" 0,1
conn_filter "dev ntb1" ""
conn_filter "-4" 0,2,3,5
conn_filter "family inet" 0,2,3,5
conn_filter "-6" 1
conn_filter "-a family inet6" 1,4
conn_filter "f ipv6 -a" 1,4
conn_filter "mode tcp port 5000" 3
conn_filter "mode ntb -6 lgr 3 dev ntb0 lport 5000 dport 40001" 1
conn_filter "mode ntb -4 dport 40001" ""
conns_verify

cat >"$TMP/stats.txt" <<'EOF'
Connections
  over NTB                                     1000
  fell back to TCP                             2000
  handshake errors                             3000
  server handshakes, peak                     20000
  declined: max_handshakes                    21000
  reset (aborted)                             10000
  orphans reset                               19000
  no copy kept (cannot switch)                29000
  moved to TCP (link lost)                    30000
  switches that reset                         32000
Bytes
  sent over NTB                                4000
  received over NTB                            5000
  copied by the CPU                           11000
  moved by DMA                                12000
  of those, zero-copy                         16000
  DMA writes redone by the CPU                17000
  sent again over TCP                         31000
Link
  posted writes                               22000
  of <= 64 B                                  23000
  of <= 4 KiB                                 24000
  larger                                      25000
  bytes written                               26000
  reads across the link                       27000
Doorbells
  rung                                         6000
  handled                                      7000
  interrupts taken                            28000
  not needed (suppressed)                      8000
  lost, found by the re-check                 18000
Flow control
  peer buffer found full                       9000
Fallbacks to TCP, client side
  peer_no_offer                                   5
  no_fabric                                       2
Fallbacks to TCP, server side
  declined                                        1
  policy                                          4
EOF
expect 0 "" "fake: st" -- $FAKE st
same "$TMP/stats.txt" "fake: stats text (non-zero reasons only)"
expect 0 "" "fake: -j stats show" -- $FAKE -j stats show
reasons='["peer_no_offer", "peer_smc", "no_fabric", "link_down", "no_buffer", "no_memory",
"version", "timeout", "declined", "disabled", "protocol", "fastopen", "peer_closed",
"disconnected", "congested", "auth", "dev_disabled", "policy"]'
json "isinstance(d, dict) and d['conn_ntb'] == 1000 and d['aborts'] == 10000 and
d['buffer_full'] == 9000 and list(d['fallback_client']) == $reasons and
list(d['fallback_server']) == $reasons and d['fallback_client']['peer_no_offer'] == 5 and
d['fallback_server']['declined'] == 1 and d['fallback_server']['timeout'] == 0 and
d['fallback_server']['policy'] == 4" \
	"fake: -j stats: all reasons, in order"
# Each counter is 1000 times its attribute number in tests/fake_kernel.c.
json "list(d) == ['conn_ntb', 'conn_tcp', 'handshake_errors', 'handshakes_peak',
'handshakes_congested', 'aborts', 'orphan_resets', 'no_mirror', 'switch_to_tcp',
'switch_failed', 'tx_bytes', 'rx_bytes', 'cpu_bytes', 'dma_bytes', 'zc_bytes', 'dma_failed',
'switch_resent_bytes', 'link_writes', 'link_writes_small',
'link_writes_medium', 'link_writes_large', 'link_write_bytes', 'link_reads', 'doorbells_tx',
'doorbells_rx', 'interrupts', 'doorbells_suppressed', 'notify_lost', 'buffer_full',
'fallback_client', 'fallback_server'] and d['link_writes'] == 22000 and
d['link_writes_small'] == 23000 and d['link_writes_medium'] == 24000 and
d['link_writes_large'] == 25000 and d['link_write_bytes'] == 26000 and
d['link_reads'] == 27000 and d['interrupts'] == 28000" \
	"fake: -j stats: every counter key, in order, link counters and interrupts"

expect 0 "" "fake: stats reset" -- $FAKE stats reset
[ -z "$out" ]; result $((! $?)) "fake: stats reset prints nothing"
expect 0 "" "fake: dev set enable" -- $FAKE dev set ntb0 enable
grep -q "cmd=2 dump=0 name=ntb0 enabled=1$" "$TMP/log"; result $((! $?)) "fake: enable sent"
expect 0 "" "fake: dev se (prefix) dis" -- $FAKE dev se ntb0 dis
grep -q "cmd=2 dump=0 name=ntb0 enabled=0$" "$TMP/log"; result $((! $?)) "fake: disable sent"
expect 0 "" "fake: dev set netns PID" -- $FAKE dev set ntb0 netns 1234
grep -q "cmd=2 dump=0 name=ntb0 pid=1234$" "$TMP/log"; result $((! $?)) "fake: PID sent"
expect 0 "" "fake: dev set netns PATH" -- $FAKE dev set ntb0 netns /proc/self/ns/net enable
grep -q "cmd=2 dump=0 name=ntb0 enabled=1 fd=open$" "$TMP/log"; result $((! $?)) "fake: fd sent"
if [ "$(id -u)" = 0 ]; then
	expect 0 "" "fake: -n PATH" -- $FAKE -n /proc/self/ns/net -j dev
else
	expect 4 'needs CAP_SYS_ADMIN' "fake: -n PATH unprivileged" -- $FAKE -n /proc/self/ns/net dev
fi

# ---- policy (fake module; its table lives in $NTBSMC_FAKE_POLICY from run to run) ----

export NTBSMC_FAKE_POLICY="$TMP/policy"

: >"$TMP/log"
expect 0 "" "fake: policy (no rules)" -- $FAKE policy
[ "$out" = "no rules: every peer and port is offered ntbsmc" ]
result $((! $?)) "fake: policy text without rules: everything offered" "$out"
[ "$(cat "$TMP/log")" = "cmd=7 dump=1" ]
result $((! $?)) "fake: policy show sends a POLICY_GET dump" "$(cat "$TMP/log")"
expect 0 "" "fake: -j policy show (no rules)" -- $FAKE -j policy show
[ "$out" = "[]" ]; result $((! $?)) "fake: -j policy without rules is []"

# policy_add ARGS SENT: "policy add ARGS" prints nothing and sends the rule SENT
policy_add() {
	: >"$TMP/log"
	# shellcheck disable=SC2086
	expect 0 "" "fake: policy add $1" -- $FAKE policy add $1
	[ -z "$out" ] && [ "$(cat "$TMP/log")" = "cmd=8 dump=0 $2" ]
	result $((! $?)) "fake: policy add $1: sends $2" "$(cat "$TMP/log")"
}
policy_add "include 10.0.0.0/8" "action=1 family=2 addr=10.0.0.0 prefixlen=8"
policy_add "exclude 10.1.2.3 port 22" \
	"action=2 family=2 addr=10.1.2.3 prefixlen=32 port_min=22 port_max=22"
policy_add "ex fd00::/16 port 8000-8100" \
	"action=2 family=10 addr=fd00:: prefixlen=16 port_min=8000 port_max=8100"
policy_add "exclude any port 25" "action=2 port_min=25 port_max=25"
policy_add "exclude port 443" "action=2 port_min=443 port_max=443"
# Another family does not overlap: include 10.0.0.0/8 is for IPv4 only.
policy_add "in fd00:1::1" "action=1 family=10 addr=fd00:1::1 prefixlen=128"
# Nor does another action.
policy_add "exclude port 80 10.0.0.0/8" \
	"action=2 family=2 addr=10.0.0.0 prefixlen=8 port_min=80 port_max=80"

cat >"$TMP/policy.txt" <<'EOT'
1 include 10.0.0.0/8 port any hits 10
2 exclude 10.1.2.3/32 port 22 hits 20
3 exclude fd00::/16 port 8000-8100 hits 30
4 exclude any port 25 hits 40
5 exclude any port 443 hits 50
6 include fd00:1::1/128 port any hits 60
7 exclude 10.0.0.0/8 port 80 hits 70
EOT
expect 0 "" "fake: policy show" -- $FAKE policy show
same "$TMP/policy.txt" "fake: policy text: the rules in order"
expect 0 "" "fake: po (prefix, show implied)" -- $FAKE po
same "$TMP/policy.txt" "fake: po text"
expect 0 "" "fake: -j policy list" -- $FAKE -j policy list
[ "$(wc -l <<<"$out")" = 1 ]; result $((! $?)) "fake: -j policy is one line"
json 'd == [
{"id": 1, "action": "include", "prefix": "10.0.0.0/8", "port_min": None, "port_max": None,
 "hits": 10},
{"id": 2, "action": "exclude", "prefix": "10.1.2.3/32", "port_min": 22, "port_max": 22,
 "hits": 20},
{"id": 3, "action": "exclude", "prefix": "fd00::/16", "port_min": 8000, "port_max": 8100,
 "hits": 30},
{"id": 4, "action": "exclude", "prefix": None, "port_min": 25, "port_max": 25, "hits": 40},
{"id": 5, "action": "exclude", "prefix": None, "port_min": 443, "port_max": 443, "hits": 50},
{"id": 6, "action": "include", "prefix": "fd00:1::1/128", "port_min": None,
 "port_max": None, "hits": 60},
{"id": 7, "action": "exclude", "prefix": "10.0.0.0/8", "port_min": 80, "port_max": 80,
 "hits": 70}] and all(list(r) == ["id", "action", "prefix", "port_min", "port_max", "hits"]
 for r in d)' "fake: -j policy: keys, values and order"
expect 0 "" "fake: -j -p policy" -- $FAKE -j -p policy
json 'len(d) == 7 and d[2]["prefix"] == "fd00::/16"' "fake: -j -p policy: the same rules"

# policy_usage ERR_REGEX DESCRIPTION -- ARGS...: refused by the tool, nothing sent
policy_usage() {
	local pattern=$1 desc=$2

	shift 3
	: >"$TMP/log"
	expect 2 "$pattern" "$desc" -- $FAKE policy "$@"
	[ ! -s "$TMP/log" ]; result $((! $?)) "$desc: nothing sent" "$(cat "$TMP/log")"
}
policy_usage '^Error: policy add: include or exclude missing' "policy add: nothing" -- add
policy_usage '^Error: unknown policy action "allow"' "policy add: unknown action" -- \
	add allow 10.0.0.0/8
policy_usage '^Error: unknown policy action "10\.0\.0\.0/8"' "policy add: no action" -- \
	add 10.0.0.0/8 port 80
policy_usage '^Error: invalid prefix "10\.0\.0\.256" \(IPv4 or IPv6 ADDRESS\[/LENGTH\]\)' \
	"policy add: bad IPv4 address" -- add include 10.0.0.256
policy_usage '^Error: invalid prefix "fd00:::1/64"' "policy add: bad IPv6 address" -- \
	add exclude fd00:::1/64
policy_usage '^Error: invalid prefix "10\.0\.0/8"' "policy add: short IPv4 address" -- \
	add exclude 10.0.0/8
policy_usage '^Error: invalid prefix length in "10\.0\.0\.0/33" \(0 to 32\)' \
	"policy add: IPv4 length 33" -- add include 10.0.0.0/33
policy_usage '^Error: invalid prefix length in "fd00::/129" \(0 to 128\)' \
	"policy add: IPv6 length 129" -- add include fd00::/129
policy_usage '^Error: invalid prefix length in "10\.0\.0\.0/"' "policy add: empty length" -- \
	add include 10.0.0.0/
policy_usage '^Error: invalid prefix length in "10\.0\.0\.0/-1"' \
	"policy add: negative length" -- add include 10.0.0.0/-1
policy_usage '^Error: invalid port "0" \(1 to 65535' "policy add: port 0" -- add in port 0
policy_usage '^Error: invalid port "65536"' "policy add: port 65536" -- add in port 65536
policy_usage '^Error: invalid port "1-65536"' "policy add: range to 65536" -- \
	add in port 1-65536
policy_usage '^Error: invalid port "80-"' "policy add: open range" -- add in port 80-
policy_usage '^Error: invalid port "http"' "policy add: port by name" -- add in port http
policy_usage '^Error: invalid port range "8100-8000" \(8100 is above 8000\)' \
	"policy add: range upside down" -- add exclude any port 8100-8000
policy_usage '^Error: port needs a value' "policy add: port without value" -- add in port
policy_usage '^Error: unknown policy add argument "bogus"' "policy add: unknown word" -- \
	add in bogus
policy_usage '^Error: prefix given twice' "policy add: prefix and any" -- \
	add in 10.0.0.0/8 any
policy_usage '^Error: prefix given twice' "policy add: two prefixes" -- \
	add in 10.0.0.0/8 fd00::/8
policy_usage '^Error: port given twice' "policy add: port twice" -- add in port 1 port 2
policy_usage '^Error: policy del: rule id missing' "policy del: no id" -- del
policy_usage '^Error: invalid rule id "0"' "policy del: id 0" -- del 0
policy_usage '^Error: invalid rule id "x"' "policy del: id x" -- del x
policy_usage '^Error: invalid rule id "4294967296"' "policy del: id too large" -- \
	del 4294967296
policy_usage '^Error: unexpected argument "2"' "policy del: two ids" -- del 1 2
policy_usage '^Error: unexpected argument "now"' "policy flush: extra argument" -- flush now
policy_usage '^Error: unexpected argument "x"' "policy show: extra argument" -- show x
policy_usage '^Error: unknown policy command "frob"' "policy: unknown command" -- frob

# Refused by the module, with its message; nothing changes.
expect 1 '^Error: policy add: host bits set beyond the prefix length$' \
	"fake: policy add 10.0.0.1/8: host bits" -- $FAKE policy add exclude 10.0.0.1/8
expect 1 '^Error: policy add: host bits set beyond the prefix length$' \
	"fake: policy add fd00::1/16: host bits" -- $FAKE policy add include fd00::1/16
expect 1 '^Error: policy add: an IPv4-mapped prefix: give it as IPv4$' \
	"fake: policy add ::ffff:10.0.0.0/104: IPv4-mapped" -- \
	$FAKE policy add include ::ffff:10.0.0.0/104
expect 1 '^Error: policy add: overlaps rule 1$' \
	"fake: policy add: any address overlaps rule 1" -- $FAKE policy add include any port 5000
expect 1 '^Error: policy add: overlaps rule 1$' \
	"fake: policy add: a prefix inside rule 1" -- $FAKE policy add include 10.1.0.0/16
expect 1 '^Error: policy add: overlaps rule 2$' \
	"fake: policy add: a prefix and ports around rule 2" -- \
	$FAKE policy add exclude 10.1.0.0/16 port 20-30
expect 1 '^Error: policy add: overlaps rule 3$' \
	"fake: policy add: ports that meet rule 3's at 8100" -- \
	$FAKE policy add exclude fd00:0:1::/48 port 8100-9000
expect 1 '^Error: policy add: overlaps rule 6$' \
	"fake: policy add: ::/0 holds rule 6" -- $FAKE policy add include ::/0 port 9000
expect 0 "" "fake: policy after refusals" -- $FAKE policy
same "$TMP/policy.txt" "fake: policy text unchanged by refused rules"

: >"$TMP/log"
expect 0 "" "fake: policy del 2" -- $FAKE policy del 2
[ -z "$out" ] && [ "$(cat "$TMP/log")" = "cmd=9 dump=0 id=2" ]
result $((! $?)) "fake: policy del sends the id" "$(cat "$TMP/log")"
expect 5 '^Error: policy del: no rule 2$' "fake: policy del 2 again: no such rule" -- \
	$FAKE policy del 2
expect 5 '^Error: policy del: no rule 99$' "fake: policy delete 99 (alias)" -- \
	$FAKE policy delete 99
expect 0 "" "fake: policy after del" -- $FAKE policy
[ "$out" = "$(grep -v '^2 ' "$TMP/policy.txt")" ]
result $((! $?)) "fake: policy text without rule 2" "$out"

NTBSMC_FAKE=eperm expect 4 \
	'^Error: policy add: permission denied \(needs CAP_NET_ADMIN over the network namespace\)$' \
	"fake eperm: policy add" -- $FAKE policy add exclude any port 2
NTBSMC_FAKE=eperm expect 4 '^Error: policy del: permission denied \(needs CAP_NET_ADMIN' \
	"fake eperm: policy del" -- $FAKE policy del 1
NTBSMC_FAKE=eperm expect 4 '^Error: policy flush: permission denied \(needs CAP_NET_ADMIN' \
	"fake eperm: policy flush" -- $FAKE policy flush
NTBSMC_FAKE=eperm expect 0 "" "fake eperm: policy show needs no privilege" -- $FAKE policy
[ "$out" = "$(grep -v '^2 ' "$TMP/policy.txt")" ]
result $((! $?)) "fake eperm: policy unchanged" "$out"
NTBSMC_FAKE=eopnotsupp expect 1 '^Error: policy show not supported by this kernel module$' \
	"fake eopnotsupp: policy show (a module without policies)" -- $FAKE policy
NTBSMC_FAKE=malformed expect 1 '^Error: malformed policy rule' \
	"fake malformed: policy rule with a 5-byte address" -- $FAKE -j policy
[ -z "$out" ]; result $((! $?)) "fake malformed: policy prints nothing on stdout"

: >"$TMP/log"
expect 0 "" "fake: policy flush" -- $FAKE policy flush
[ -z "$out" ] && [ "$(cat "$TMP/log")" = "cmd=10 dump=0" ]
result $((! $?)) "fake: policy flush sends POLICY_FLUSH" "$(cat "$TMP/log")"
expect 0 "" "fake: -j policy after flush" -- $FAKE -j policy
[ "$out" = "[]" ]; result $((! $?)) "fake: -j policy after flush is []"
policy_add "include 10.0.0.0/8" "action=1 family=2 addr=10.0.0.0 prefixlen=8"
expect 0 "" "fake: -j policy, a rule after flush" -- $FAKE -j policy
json 'len(d) == 1 and d[0]["id"] == 8' "fake: ids are never reused (8 after 7)"

# NTBSMC_POLICY_MAX rules, then one more.
for ((i = 2; i <= 256; i++)); do
	$FAKE policy add exclude any port "$i" 2>"$TMP/err" || break
done
[ "$i" = 257 ]; result $((! $?)) "fake: 256 rules" "stopped at $i: $(cat "$TMP/err")"
expect 1 '^Error: policy add: too many rules$' "fake: policy add: the 257th rule" -- \
	$FAKE policy add exclude any port 257
expect 0 "" "fake: -j policy, 256 rules" -- $FAKE -j policy
json 'len(d) == 256 and d[-1] == {"id": 263, "action": "exclude", "prefix": None,
"port_min": 256, "port_max": 256, "hits": 2630}' "fake: -j policy: 256 rules, the last"
expect 0 "" "fake: policy flush (256 rules)" -- $FAKE policy flush
unset NTBSMC_FAKE_POLICY

NTBSMC_FAKE=empty expect 0 "" "fake empty: dev" -- $FAKE dev
[ -z "$out" ]; result $((! $?)) "fake empty: dev text is empty"
NTBSMC_FAKE=empty expect 0 "" "fake empty: -j dev" -- $FAKE -j dev
[ "$out" = "[]" ]; result $((! $?)) "fake empty: -j dev is []"
NTBSMC_FAKE=empty expect 0 "" "fake empty: -j -p lgr" -- $FAKE -j -p lgr
[ "$out" = "[]" ]; result $((! $?)) "fake empty: -j -p linkgroup is []"
NTBSMC_FAKE=empty expect 0 "" "fake empty: conn" -- $FAKE conn
[ "$out" = "State  Local Address:Port  Peer Address:Port  Mode  Reason  LGR  UID  Inode" ]
result $((! $?)) "fake empty: conn text is the header" "$out"
NTBSMC_FAKE=empty expect 0 "" "fake empty: -j conn -a" -- $FAKE -j conn -a
[ "$out" = "[]" ]; result $((! $?)) "fake empty: -j conn is []"
NTBSMC_FAKE=empty expect 0 "" "fake empty: stats" -- $FAKE stats
[ "$(grep -c '^  none$' <<<"$out")" = 2 ]; result $((! $?)) "fake empty: no fallbacks: none"

NTBSMC_FAKE=nomodule expect 3 '^Error: ntbsmc module not loaded' "fake nomodule" -- $FAKE dev
NTBSMC_FAKE=nomodule expect 3 '^Error: ntbsmc module not loaded' "fake nomodule: conn" -- \
	$FAKE -j conn show -a
[ -z "$out" ]; result $((! $?)) "fake nomodule: conn prints nothing on stdout"
NTBSMC_FAKE=eperm expect 4 '^Error: stats reset: permission denied \(needs CAP_NET_ADMIN' \
	"fake eperm: stats reset" -- $FAKE stats reset
NTBSMC_FAKE=eperm expect 4 'needs CAP_NET_ADMIN over this and the target' \
	"fake eperm: dev set netns" -- $FAKE dev set ntb0 netns 1
NTBSMC_FAKE=enodev expect 5 '^Error: dev set: no such NTB device in this network namespace$' \
	"fake enodev: extended ack message" -- $FAKE dev set ntb9 enable
NTBSMC_FAKE=eopnotsupp expect 1 '^Error: dev show not supported by this kernel module$' \
	"fake eopnotsupp: dev show" -- $FAKE dev
NTBSMC_FAKE=eopnotsupp expect 1 '^Error: stats show not supported by this kernel module$' \
	"fake eopnotsupp: stats" -- $FAKE -j stats
NTBSMC_FAKE=eopnotsupp expect 1 '^Error: conn show not supported by this kernel module$' \
	"fake eopnotsupp: conn (a module without CONN_GET)" -- $FAKE conn
[ -z "$out" ]; result $((! $?)) "fake eopnotsupp: conn prints nothing on stdout"
NTBSMC_FAKE=dumperr expect 1 '^Error: dev show: fake dump failure$' \
	"fake dumperr: error at the end of a dump" -- $FAKE -j dev
[ -z "$out" ]; result $((! $?)) "fake dumperr: nothing on stdout"
NTBSMC_FAKE=warn expect 0 '^Warning: fake warning$' "fake warn: warning printed" -- \
	$FAKE dev set ntb0 enable
NTBSMC_FAKE=malformed expect 1 '^Error: malformed device record' "fake malformed: fabric id" -- \
	$FAKE dev
NTBSMC_FAKE=malformed expect 1 '^Error: malformed connection record' \
	"fake malformed: 5-byte address" -- $FAKE -j conn
[ -z "$out" ]; result $((! $?)) "fake malformed: conn prints nothing on stdout"

NTBSMC_FAKE=missing expect 0 "" "fake missing: dev" -- $FAKE dev
grep -q "^ntb0: state - enabled -$" <<<"$out"; result $((! $?)) "fake missing: dev text dashes"
NTBSMC_FAKE=missing expect 0 "" "fake missing: -j dev" -- $FAKE -j dev
json 'd[0]["name"] == "ntb0" and d[0]["state"] is None and d[0]["window_size"] is None' \
	"fake missing: -j dev nulls"
NTBSMC_FAKE=missing expect 0 "" "fake missing: -j lgr" -- $FAKE -j lgr
json 'd[0]["id"] is None and d[0]["connections"] == 2' "fake missing: -j linkgroup nulls"
NTBSMC_FAKE=missing expect 0 "" "fake missing: conn -d" -- $FAKE conn -d
grep -q '^-      -:-                 -:-                ntb   -       -    -    -$' <<<"$out"
result $((! $?)) "fake missing: conn text dashes"
grep -q '^	-$' <<<"$out"; result $((! $?)) "fake missing: conn -d: no role, no NTB side"
NTBSMC_FAKE=missing expect 0 "" "fake missing: -j conn" -- $FAKE -j conn
json 'len(d) == 1 and d[0]["family"] == "inet" and d[0]["mode"] == "ntb" and
len(d[0]) == 33 and all(v is None for k, v in d[0].items() if k not in ("family", "mode"))' \
	"fake missing: -j conn: every key, null when not sent"
NTBSMC_FAKE=missing expect 0 "" "fake missing: stats" -- $FAKE stats
NTBSMC_FAKE=missing expect 0 "" "fake missing: -j stats" -- $FAKE -j stats
json 'd["conn_ntb"] == 7 and d["conn_tcp"] is None and d["fallback_client"] is None and
d["link_writes"] is None and d["link_reads"] is None and d["interrupts"] is None' \
	"fake missing: -j stats nulls"

NTBSMC_FAKE=unknown expect 0 "" "fake unknown: dev" -- $FAKE dev
grep -q "state unknown(7)" <<<"$out"; result $((! $?)) "fake unknown: state unknown(7)"
NTBSMC_FAKE=unknown expect 0 "" "fake unknown: -j stats" -- $FAKE -j stats
json 'd["fallback_client"]["reason_20"] == 9' "fake unknown: unknown reason kept"
NTBSMC_FAKE=unknown expect 0 "" "fake unknown: conn" -- $FAKE conn
grep -q '^UNKNOWN(13)  10.0.0.1:40000      10.0.0.2:5000      unknown(9)  -  ' <<<"$out"
result $((! $?)) "fake unknown: conn text: unknown state and mode, no reason"
NTBSMC_FAKE=unknown expect 0 "" "fake unknown: -j conn" -- $FAKE -j conn
json 'd[0]["state"] == "UNKNOWN(13)" and d[0]["mode"] == "unknown(9)" and
d[0]["reason"] == "reason_20" and d[0]["peer_reason"] == "reason_21"' \
	"fake unknown: -j conn: unknown values named"

# ---- check over loopback, the module's socket options faked ----

# fake_check INFO CMD...: CMD with tests/fake-sockopt.so answering NTBSMC_INFO with INFO
# ("MODE REASON PEER_REASON LGR_ID RMB_SIZE PEER_RMB_SIZE") after two handshake answers
fake_check() {
	local info=$1

	shift
	LD_PRELOAD=$PWD/tests/fake-sockopt.so FAKE_NTBSMC_INFO=$info "$@"
}

# server INFO ARGS...: "ntbsmc ARGS" in the background, output in $TMP/server.{out,err};
# sets $spid once it listens
server() {
	local info=$1

	shift
	rm -f "$TMP/server.out" "$TMP/server.err"
	fake_check "$info" $TOOL "$@" >"$TMP/server.out" 2>"$TMP/server.err" &
	spid=$!
	pids+=("$spid")
}

# server_done DESCRIPTION: the server exited 0 by itself; sets $out to its output
server_done() {
	local i

	for ((i = 0; i < 100; i++)); do
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.05
	done
	kill "$spid" 2>/dev/null
	wait "$spid"
	rc=$?
	out=$(cat "$TMP/server.out")
	err=$(cat "$TMP/server.err")
	[ "$rc" = 0 ] && [ -z "$err" ]
	result $((! $?)) "$1" "rc=$rc
stderr: $err
stdout: $out"
}

NTB="1 0 0 3 65536 131072"
DECLINED="2 9 5 0 0 0"
if ! command -v python3 >/dev/null || [ ! -e tests/fake-sockopt.so ]; then
	echo "ok $((n += 1)) - check over loopback # SKIP needs python3 and tests/fake-sockopt.so"
else
	port=$(free_port)
	server "$NTB" -j check -l -c 3 -t 2 "$port"
	wait_listen "$port"; result $((! $?)) "check -l: listens on port $port"
	fake_check "$NTB" expect 0 "" "check: NTB" -- $TOOL check 127.0.0.1 "$port"
	[ "$out" = "127.0.0.1:$port: NTB (link group 3, rmb 64 KiB, peer rmb 128 KiB)" ]
	result $((! $?)) "check: NTB text" "$out"
	fake_check "$NTB" expect 0 "" "check -j: NTB" -- $TOOL -j check -4 -t 1.5 localhost "$port"
	json "d == {'host': 'localhost', 'port': $port, 'mode': 'ntb', 'reason': 'none',
'peer_reason': 'none', 'lgr_id': 3, 'rmb_size': 65536, 'peer_rmb_size': 131072}" \
		"check -j: NTB keys and values"
	fake_check "$DECLINED" expect 0 "" "check: TCP" -- $TOOL check 127.0.0.1 "$port"
	[ "$out" = "127.0.0.1:$port: TCP, reason: declined, peer reason: no_buffer" ]
	result $((! $?)) "check: TCP text with the peer's reason" "$out"
	server_done "check -l -c 3: exits 0 after three connections"
	[ "$(wc -l <<<"$out")" = 3 ]; result $((! $?)) "check -l -j: one line per connection"
	out=$(head -n1 <<<"$out")
	json "set(d) == {'peer_addr', 'peer_port', 'mode', 'reason', 'peer_reason', 'lgr_id',
'rmb_size', 'peer_rmb_size'} and d['peer_addr'] == '127.0.0.1' and d['peer_port'] > 0 and
d['mode'] == 'ntb' and d['lgr_id'] == 3 and d['peer_rmb_size'] == 131072" \
		"check -l -j: keys and values of a connection"

	server "$DECLINED" check -l -c 1 "$port"
	wait_listen "$port"
	fake_check "$DECLINED" expect 0 "" "check -j: TCP" -- $TOOL -j check 127.0.0.1 "$port"
	json "d == {'host': '127.0.0.1', 'port': $port, 'mode': 'tcp', 'reason': 'declined',
'peer_reason': 'no_buffer', 'lgr_id': None, 'rmb_size': None, 'peer_rmb_size': None}" \
		"check -j: TCP keys and values"
	server_done "check -l -c 1: exits 0"
	grep -Eq "^127\.0\.0\.1:[0-9]+: TCP, reason: declined, peer reason: no_buffer$" <<<"$out"
	result $((! $?)) "check -l: TCP text" "$out"

	# The handshake never ends: both sides give up after -t.
	FAKE_NTBSMC_HANDSHAKE=1000000 server "$NTB" check -l -c 1 -t 0.3 "$port"
	wait_listen "$port"
	FAKE_NTBSMC_HANDSHAKE=1000000 fake_check "$NTB" \
		expect 1 "^Error: 127\.0\.0\.1:$port: handshake not finished after 0\.3 s$" \
		"check: handshake timeout" -- $TOOL check -t 0.3 127.0.0.1 "$port"
	[ -z "$out" ]; result $((! $?)) "check: handshake timeout prints nothing on stdout"
	server_done "check -l: a handshake that does not end"
	grep -Eq "^127\.0\.0\.1:[0-9]+: handshake not finished after 0\.3 s$" <<<"$out"
	result $((! $?)) "check -l: handshake timeout text" "$out"

	fake_check "$NTB" expect 6 "^Error: connect to 127\.0\.0\.1:$port: Connection refused$" \
		"check: connection refused" -- $TOOL check 127.0.0.1 "$port"
	fake_check "$NTB" expect 6 '^Error: cannot resolve 127\.0\.0\.1: ' \
		"check -6: an IPv4 literal does not resolve" -- $TOOL check -6 127.0.0.1 "$port"

	# What the checker sends the server: nothing, then its FIN.
	py_listener "$TMP/py"
	wait_file "$TMP/py"
	fake_check "$NTB" expect 0 "" "check: against a plain listener" -- \
		$TOOL check 127.0.0.1 "$(head -n1 "$TMP/py")"
	wait "$lpid"
	[ "$(sed -n 2p "$TMP/py")" = "bytes 0" ]
	result $((! $?)) "check: sends no data, closes" "$(cat "$TMP/py")"

	if python3 -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' 2>/dev/null
	then
		server "$NTB" check -l -6 -c 1 "$port"
		wait_listen "$port"
		fake_check "$NTB" expect 0 "" "check: IPv6" -- $TOOL check ::1 "$port"
		[ "$out" = "[::1]:$port: NTB (link group 3, rmb 64 KiB, peer rmb 128 KiB)" ]
		result $((! $?)) "check: IPv6 text" "$out"
		server_done "check -l -6: exits 0"
		grep -Eq '^\[::1\]:[0-9]+: NTB \(link group 3, rmb 64 KiB, peer rmb 128 KiB\)$' \
			<<<"$out"
		result $((! $?)) "check -l -6: text" "$out"
	else
		echo "ok $((n += 1)) - check: IPv6 # SKIP no IPv6 loopback"
	fi
fi

echo "1..$n"
[ "$failed" = 0 ] || echo "# $failed of $n failed"
exit $((failed != 0))
