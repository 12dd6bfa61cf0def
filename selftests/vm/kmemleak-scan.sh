#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Scans for kernel memory leaks and prints any report to the console, where the host
# looks for splats. Runs at the end of every guest's job.
k=/sys/kernel/debug/kmemleak
[ -w $k ] || exit 0
# Two scans: kmemleak reports an object only after it looked orphaned twice.
echo scan >$k
sleep 1
echo scan >$k
leaks=$(cat $k)
if [ -n "$leaks" ]; then
	echo "kmemleak: unreferenced objects found" >/dev/console
	echo "$leaks" >/dev/console
fi
