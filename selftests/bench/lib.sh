# SPDX-License-Identifier: GPL-2.0
# Helpers of the make bench scripts (guest side), on top of selftests/lib.sh.

NB=$REPO/selftests/ulp/nbench
SECS=${BENCH_SECS:-5}

# bench NAME VALUE: one figure, collected from the log into the bench report.
bench() { log "bench: $1|$2"; }

# once_per_kernel CMD...: module loading is per kernel; in the one-VM topology
# both hosts share it, and host a does it for both.
once_per_kernel() {
	if [ "$TOPO" = twovm ] || [ "$ROLE" = a ]; then
		"$@"
	fi
}
