# SPDX-License-Identifier: GPL-2.0
# make bench (host side): one comparison of bench/ulp.sh as an SVG on stdout,
# every sample a dot and each series' median a dashed line, so that the spread
# shows at a glance where the table gives only medians and ranges.
#
#   awk -F'|' -v id=ID -v topo=LABEL -f plot.awk SAMPLES
#
# SAMPLES: the "samples:" lines of the guest's log without their prefix, one
# series a line, ID|TITLE|UNIT|SERIES|V1 V2 ... (the values in round order, "n/a"
# for a sample that failed); lines of other IDs are skipped. x is the round: the
# samples of one round, which ran one after another, stand side by side, each
# series in the same place whatever its turn in the round. y is linear from 0,
# or logarithmic when the values span more than 20x (busy-poll against
# interrupts), which a linear axis would flatten into its floor.
# Plain awk (mawk, Debian's default): no python on a fresh machine.

function xml(s) {
	gsub(/&/, "\\&amp;", s)
	gsub(/</, "\\&lt;", s)
	gsub(/>/, "\\&gt;", s)
	return s
}

function floor(x) {
	return x == int(x) ? x : (x < 0 ? int(x) - 1 : int(x))
}

function log10(x) {
	return log(x) / log(10)
}

# The smallest of 1, 2, 2.5, 5 and 10 times a power of ten that is >= x > 0.
function nice(x, e, f) {
	e = 10 ^ floor(log10(x) + 1e-9)
	f = x / e
	return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * e
}

function scale(v) {
	return logy ? log10(v) : v
}

function ypos(v) {
	return top + ph * (1 - (scale(v) - scale(lo)) / (scale(hi) - scale(lo)))
}

function median(j, n, v, i, k, t) {
	n = 0
	for (i = 1; i <= rounds[j]; i++)
		if ((j, i) in val)
			v[++n] = val[j, i]
	for (i = 2; i <= n; i++)
		for (k = i; k > 1 && v[k - 1] > v[k]; k--) {
			t = v[k]
			v[k] = v[k - 1]
			v[k - 1] = t
		}
	if (!n)
		return ""
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}

$1 == id {
	title = $2
	unit = $3
	name[++ns] = $4
	rounds[ns] = split($5, w, " ")
	if (rounds[ns] > nr)
		nr = rounds[ns]
	for (i = 1; i <= rounds[ns]; i++)
		if (w[i] ~ /^[0-9]+(\.[0-9]*)?$/) {
			v = w[i] + 0
			val[ns, i] = v
			if (!nv || v < vmin)
				vmin = v
			if (!nv || v > vmax)
				vmax = v
			nv++
		}
}

END {
	split("#1f77b4 #d62728 #ff7f0e #2ca02c #9467bd", colour, " ")
	W = 760
	H = 440
	left = 80
	right = 20
	top = 78
	bottom = 58
	pw = W - left - right
	ph = H - top - bottom

	printf "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" " \
		"viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n", W, H, W, H
	printf "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, H
	printf "<text x=\"%d\" y=\"22\" text-anchor=\"middle\" font-size=\"15\" " \
		"font-weight=\"bold\">%s, %s</text>\n", W / 2, xml(title), xml(topo)
	if (!nv) {
		printf "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">no samples</text>\n</svg>\n",
			W / 2, H / 2
		exit
	}

	logy = vmin > 0 && vmax / vmin > 20
	if (logy) {
		# the nearest 1, 2 or 5 times a power of ten outside the values
		lo = 10 ^ floor(log10(vmin) + 1e-9)
		lo = vmin >= 5 * lo ? 5 * lo : vmin >= 2 * lo ? 2 * lo : lo
		hi = nice(vmax)
		hi = hi == 2.5 * 10 ^ floor(log10(hi) + 1e-9) ? 2 * hi : hi
	} else {
		lo = 0
		step = nice((vmax > 0 ? vmax : 1) * 1.05 / 5)
		hi = step * (floor(vmax * 1.05 / step) + 1)
	}

	# Grid and y axis labels.
	if (logy) {
		for (e = 10 ^ floor(log10(lo) + 1e-9); e < hi * 1.001; e *= 10)
			for (m = 1; m <= 5; m += (m == 1 ? 1 : 3)) {
				t = e * m
				if (t > lo * 0.999 && t < hi * 1.001)
					tick[++nt] = t
			}
	} else {
		for (t = 0; t <= hi * 1.001; t += step)
			tick[++nt] = t
	}
	for (i = 1; i <= nt; i++) {
		y = ypos(tick[i])
		printf "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
			left, y, left + pw, y
		printf "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
			left - 6, y + 4, tick[i]
	}
	printf "<text transform=\"translate(18 %d) rotate(-90)\" text-anchor=\"middle\">%s%s</text>\n",
		top + ph / 2, xml(unit), (logy ? " (log scale)" : "")

	# Rounds along x; within one, the series side by side in the order they ran.
	slot = pw / nr
	dx = slot / (ns + 1)
	if (dx > 16)
		dx = 16
	for (i = 1; i <= nr; i++)
		printf "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d</text>\n",
			left + (i - 0.5) * slot, top + ph + 18, i
	printf "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">" \
		"round (its samples ran one after another)</text>\n", left + pw / 2, H - 12
	printf "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#444\"/>\n",
		left, top, pw, ph

	# Legend: a series, its median.
	lw = pw / ns
	for (j = 1; j <= ns; j++) {
		c = colour[(j - 1) % 5 + 1]
		med[j] = median(j)
		x = left + (j - 1) * lw
		printf "<circle cx=\"%.1f\" cy=\"48\" r=\"5\" fill=\"%s\"/>\n", x + 6, c
		printf "<line x1=\"%.1f\" y1=\"62\" x2=\"%.1f\" y2=\"62\" stroke=\"%s\" " \
			"stroke-width=\"2\" stroke-dasharray=\"6 4\"/>\n", x, x + 12, c
		printf "<text x=\"%.1f\" y=\"52\">%s</text>\n", x + 16, xml(name[j])
		printf "<text x=\"%.1f\" y=\"66\">median %s</text>\n", x + 16,
			(med[j] == "" ? "n/a" : sprintf("%.1f", med[j]))
	}

	# Medians under the dots.
	for (j = 1; j <= ns; j++)
		if (med[j] != "")
			printf "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\" " \
				"stroke-width=\"2\" stroke-dasharray=\"6 4\" opacity=\"0.8\"/>\n",
				left, ypos(med[j]), left + pw, ypos(med[j]), colour[(j - 1) % 5 + 1]
	for (j = 1; j <= ns; j++)
		for (i = 1; i <= rounds[j]; i++)
			if ((j, i) in val)
				printf "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\" " \
					"stroke=\"white\"><title>%s, round %d: %s</title></circle>\n",
					left + (i - 0.5) * slot + (j - (ns + 1) / 2) * dx,
					ypos(val[j, i]), colour[(j - 1) % 5 + 1], xml(name[j]), i, val[j, i]
	printf "</svg>\n"
}
