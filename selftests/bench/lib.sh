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

# summary FMT WORDS...: "MEDIAN [MIN-MAX]" of the numbers among WORDS, each in
# printf format FMT; median FMT WORDS...: the median alone. The median of an
# even count is the mean of the middle two. A word that is not a number (a
# sample that failed: "n/a") does not count; "n/a" if none does.
summary() { _nums range "$@"; }
median() { _nums median "$@"; }
_nums() {
	local what=$1 fmt=$2
	shift 2
	awk -v what="$what" -v fmt="$fmt" -v w="$*" 'BEGIN {
		for (i = split(w, a, " "); i > 0; i--)
			if (a[i] ~ /^[0-9]+(\.[0-9]*)?$/)
				v[++n] = a[i] + 0
		if (!n) {
			print "n/a"
			exit
		}
		for (i = 2; i <= n; i++)	# insertion sort: a handful of samples
			for (j = i; j > 1 && v[j - 1] > v[j]; j--) {
				t = v[j]
				v[j] = v[j - 1]
				v[j - 1] = t
			}
		m = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
		if (what == "median")
			printf fmt "\n", m
		else
			printf fmt " [" fmt "-" fmt "]\n", m, v[1], v[n]
	}'
}

# ratios "A..." "B...": A[i] / B[i], pair by pair, "n/a" where either is not a
# number.
ratios() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		num = "^[0-9]+(\\.[0-9]*)?$"
		n = split(a, x, " ")
		split(b, y, " ")
		for (i = 1; i <= n; i++)
			printf "%s%s", (i > 1 ? " " : ""),
				(x[i] ~ num && y[i] ~ num && y[i] > 0) ? sprintf("%.3f", x[i] / y[i]) : "n/a"
		print ""
	}'
}
