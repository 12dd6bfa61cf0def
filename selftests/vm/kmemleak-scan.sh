#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Scans for kernel memory leaks and prints any report to the console, where the host
# looks for splats ("kmemleak: unreferenced"). Runs at the end of every guest's job.
#
# One exception, under investigation and listed separately so it stays visible:
# devres nodes allocated in ntb_tool's probe (tool_probe [ntb_tool]) are reported
# as leaked after ntb_tool unbinds from ntb_hw_ivshmem ports; whether ntb_tool or
# the emulated device's lifetime is at fault is not settled yet. Any other object
# fails the run.
k=/sys/kernel/debug/kmemleak
[ -w $k ] || exit 0
# Two scans: kmemleak reports an object only after it looked orphaned twice.
echo scan >$k
sleep 1
echo scan >$k
cat $k | awk '
	/^unreferenced object/ { if (obj != "") flush(); obj = $0 "\n"; next }
	{ obj = obj $0 "\n" }
	function flush() {
		if (obj ~ /tool_probe\+[^\n]*\[ntb_tool\]/) known = known obj
		else other = other obj
		obj = ""
	}
	END {
		if (obj != "") flush()
		if (other != "") printf "kmemleak: unreferenced objects found\n%s", other
		if (known != "") printf "kmemleak (known, ntb_tool probe, under investigation):\n%s", known
	}' >/dev/console
