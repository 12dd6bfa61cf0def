# SPDX-License-Identifier: GPL-2.0
# Helpers for the tests of the ntbsmc module (guest side), on top of selftests/lib.sh.

XFER=$REPO/selftests/ulp/xfer.py
NTBSMC_CLI=$REPO/netlink-tool/ntbsmc

# Loads ntbsmc (it binds every NTB port) and, with both hosts in one kernel, gives
# each host's namespace its own port.
ulp_setup() {
	echo "ntbsmc-test: setup" >/dev/kmsg
	grep -q "^ntbsmc " /proc/modules || run insmod "$REPO/ntbsmc/ntbsmc.ko"
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

# dev_of_host a|b: the NTB port (PCI name) of host a (port 0) or b (port 1).
dev_of_host() {
	local d
	for d in /sys/bus/ntb/devices/*; do
		d=${d##*/}
		[ "$(cat "/sys/bus/pci/devices/$d/port")" = "$([ "$1" = a ] && echo 0 || echo 1)" ] &&
			echo "$d" && return 0
	done
	return 1
}

# jfield JSON KEY: one field of a flat JSON object.
jfield() {
	python3 -c 'import json,sys; v=json.loads(sys.argv[1]).get(sys.argv[2]); print(v)' "$1" "$2"
}

# Waits until this host's NTB port is usable by ntbsmc.
ulp_wait_active() {
	wait_for 60 "ntbsmc link active on $NTB" sh -c \
		"dmesg | tac | sed '/ntbsmc-test: setup/q' | grep -q '$NTB: ntbsmc: link active'"
	barrier ulp_active
}

# xfer_one NAME SERVER_OPTS CLIENT_OPTS: one xfer.py transfer on the next $port;
# host a serves, host b connects; a failure is recorded (check), the JSON result
# of this host is left in $out.
xfer_one() {
	local name=$1 sopts=$2 copts=$3
	port=$((port + 1))
	if [ "$ROLE" = a ]; then
		# shellcheck disable=SC2086
		inns python3 "$XFER" server "$MY_IP" $port $sopts >"$WORK/$name.json" &
		local srv=$!
		wait_for 90 "server on $port" listening $port
		barrier "$name-listening"
		wait $srv || check "$name: server failed: $(cat "$WORK/$name.json")" false
	else
		barrier "$name-listening"
		# shellcheck disable=SC2086
		inns python3 "$XFER" client "$PEER_IP" $port $copts >"$WORK/$name.json" ||
			check "$name: client failed: $(cat "$WORK/$name.json")" false
	fi
	out=$(tail -1 "$WORK/$name.json")
	log "$name: $out"
	barrier "$name-done"
}
