#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ntbsmc tool tests: usage and exit codes on the real kernel, output against the fake module.
#
# Run by "make check" in netlink-tool/. Needs no module: the real binary is only
# asked things it answers before talking to the kernel (or, where the module is not
# loaded, that it says so); everything else runs tests/ntbsmc-fake, the same sources
# answered by tests/fake_kernel.c. Prints TAP.

set -u
cd "$(dirname "$0")/.." || exit 1

TOOL=./ntbsmc
FAKE=tests/ntbsmc-fake
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
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
expect 2 'network namespace "nosuch-ns" not found' "-n unknown name" -- $TOOL -n nosuch-ns dev
expect 2 'is not a network namespace' "-n not a namespace" -- $TOOL -n /dev/null dev

if $TOOL stats >/dev/null 2>&1; [ $? = 3 ]; then
	cmds=("dev" "d s" "-j dev show" "link sh" "lgr show 1" "st" "stats reset"
	      "dev set ntb0 enable")
	[ "$(id -u)" = 0 ] && cmds+=("-n /proc/self/ns/net stats")
	for cmd in "${cmds[@]}"; do
		# shellcheck disable=SC2086
		expect 3 '^Error: ntbsmc module not loaded' "no module: $cmd" -- $TOOL $cmd
		[ -z "$out" ]; result $((! $?)) "no module: $cmd prints nothing on stdout"
	done
else
	echo "ok $((n += 1)) - no-module exit codes # SKIP the ntbsmc module is loaded"
fi

# ---- output and kernel errors (fake module) ----

export NTBSMC_FAKE=normal NTBSMC_FAKE_LOG="$TMP/log"

cat >"$TMP/dev.txt" <<'EOF'
ntb0: state active enabled yes
    fabric_id 0112233445566778899aabbccddeef00 netns_cookie 4097
    window 4194304 windows 2 doorbells 32 scratchpads 16 buffers 62 x 65536
    peer_sysid a0b1c2d3e4f5061728394a5b6c7d8e9f
ntb1: state down enabled no
    fabric_id 0112233445566778899aabbccddeef00 netns_cookie 4097
    window 4194304 windows 2 doorbells 32 scratchpads 16 buffers 62 x 65536
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
"window_size": 4194304, "windows": 2, "doorbells": 32, "scratchpads": 16, "buffers": 62,
"buffer_size": 65536, "peer_sysid": "a0b1c2d3e4f5061728394a5b6c7d8e9f"} and
d[1]["peer_sysid"] is None and d[1]["state"] == "down"' "fake: -j dev keys and values"
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

cat >"$TMP/stats.txt" <<'EOF'
Connections
  over NTB                                     1000
  fell back to TCP                             2000
  handshake errors                             3000
  reset (aborted)                             10000
Bytes
  sent over NTB                                4000
  received over NTB                            5000
  copied by the CPU                           11000
  moved by DMA                                12000
Doorbells
  rung                                         6000
  handled                                      7000
  not needed (suppressed)                      8000
Flow control
  peer buffer found full                       9000
Fallbacks to TCP, client side
  peer_no_offer                                   5
  no_fabric                                       2
Fallbacks to TCP, server side
  declined                                        1
EOF
expect 0 "" "fake: st" -- $FAKE st
same "$TMP/stats.txt" "fake: stats text (non-zero reasons only)"
expect 0 "" "fake: -j stats show" -- $FAKE -j stats show
reasons='["peer_no_offer", "peer_smc", "no_fabric", "link_down", "no_buffer", "no_memory",
"version", "timeout", "declined", "disabled", "protocol"]'
json "isinstance(d, dict) and d['conn_ntb'] == 1000 and d['aborts'] == 10000 and
d['buffer_full'] == 9000 and list(d['fallback_client']) == $reasons and
list(d['fallback_server']) == $reasons and d['fallback_client']['peer_no_offer'] == 5 and
d['fallback_server']['declined'] == 1 and d['fallback_server']['timeout'] == 0" \
	"fake: -j stats: all reasons, in order"

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

NTBSMC_FAKE=empty expect 0 "" "fake empty: dev" -- $FAKE dev
[ -z "$out" ]; result $((! $?)) "fake empty: dev text is empty"
NTBSMC_FAKE=empty expect 0 "" "fake empty: -j dev" -- $FAKE -j dev
[ "$out" = "[]" ]; result $((! $?)) "fake empty: -j dev is []"
NTBSMC_FAKE=empty expect 0 "" "fake empty: -j -p lgr" -- $FAKE -j -p lgr
[ "$out" = "[]" ]; result $((! $?)) "fake empty: -j -p linkgroup is []"
NTBSMC_FAKE=empty expect 0 "" "fake empty: stats" -- $FAKE stats
[ "$(grep -c '^  none$' <<<"$out")" = 2 ]; result $((! $?)) "fake empty: no fallbacks: none"

NTBSMC_FAKE=nomodule expect 3 '^Error: ntbsmc module not loaded' "fake nomodule" -- $FAKE dev
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
NTBSMC_FAKE=dumperr expect 1 '^Error: dev show: fake dump failure$' \
	"fake dumperr: error at the end of a dump" -- $FAKE -j dev
[ -z "$out" ]; result $((! $?)) "fake dumperr: nothing on stdout"
NTBSMC_FAKE=warn expect 0 '^Warning: fake warning$' "fake warn: warning printed" -- \
	$FAKE dev set ntb0 enable
NTBSMC_FAKE=malformed expect 1 '^Error: malformed device record' "fake malformed: fabric id" -- \
	$FAKE dev

NTBSMC_FAKE=missing expect 0 "" "fake missing: dev" -- $FAKE dev
grep -q "^ntb0: state - enabled -$" <<<"$out"; result $((! $?)) "fake missing: dev text dashes"
NTBSMC_FAKE=missing expect 0 "" "fake missing: -j dev" -- $FAKE -j dev
json 'd[0]["name"] == "ntb0" and d[0]["state"] is None and d[0]["window_size"] is None' \
	"fake missing: -j dev nulls"
NTBSMC_FAKE=missing expect 0 "" "fake missing: -j lgr" -- $FAKE -j lgr
json 'd[0]["id"] is None and d[0]["connections"] == 2' "fake missing: -j linkgroup nulls"
NTBSMC_FAKE=missing expect 0 "" "fake missing: stats" -- $FAKE stats
NTBSMC_FAKE=missing expect 0 "" "fake missing: -j stats" -- $FAKE -j stats
json 'd["conn_ntb"] == 7 and d["conn_tcp"] is None and d["fallback_client"] is None' \
	"fake missing: -j stats nulls"

NTBSMC_FAKE=unknown expect 0 "" "fake unknown: dev" -- $FAKE dev
grep -q "state unknown(7)" <<<"$out"; result $((! $?)) "fake unknown: state unknown(7)"
NTBSMC_FAKE=unknown expect 0 "" "fake unknown: -j stats" -- $FAKE -j stats
json 'd["fallback_client"]["reason_20"] == 9' "fake unknown: unknown reason kept"

echo "1..$n"
[ "$failed" = 0 ] || echo "# $failed of $n failed"
exit $((failed != 0))
