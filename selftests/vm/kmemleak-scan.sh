#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Scans for kernel memory leaks and prints any report to the console, where the host
# looks for splats ("kmemleak: unreferenced"). Runs at the end of every guest's job.
k=/sys/kernel/debug/kmemleak
[ -w $k ] || exit 0
# Two scans: kmemleak reports an object only after it looked orphaned twice.
echo scan >$k
sleep 1
echo scan >$k
if grep -q '^unreferenced object' $k; then
	{ echo "kmemleak: unreferenced objects found"; cat $k; } >/dev/console
fi
