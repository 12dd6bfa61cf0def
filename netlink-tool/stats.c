// SPDX-License-Identifier: GPL-2.0
/* ntbsmc tool: the "stats" object: the namespace's counters and fallback reasons. */

#include <string.h>

#include <linux/ntbsmc.h>

#include "tool.h"

/* Fallback nests hold one u64 per enum ntbsmc_reason, attribute type = reason + 1. */
#define REASON_ATTR_MAX	64

static const struct nla_policy stats_policy[NTBSMC_STATS_MAX + 1] = {
	[NTBSMC_STATS_CONN_NTB]		= { .type = NLA_U64 },
	[NTBSMC_STATS_CONN_TCP]		= { .type = NLA_U64 },
	[NTBSMC_STATS_HS_ERR]		= { .type = NLA_U64 },
	[NTBSMC_STATS_TX_BYTES]		= { .type = NLA_U64 },
	[NTBSMC_STATS_RX_BYTES]		= { .type = NLA_U64 },
	[NTBSMC_STATS_DB_TX]		= { .type = NLA_U64 },
	[NTBSMC_STATS_DB_RX]		= { .type = NLA_U64 },
	[NTBSMC_STATS_DB_SUPPRESSED]	= { .type = NLA_U64 },
	[NTBSMC_STATS_BUF_FULL]		= { .type = NLA_U64 },
	[NTBSMC_STATS_ABORT]		= { .type = NLA_U64 },
	[NTBSMC_STATS_CPU_BYTES]	= { .type = NLA_U64 },
	[NTBSMC_STATS_DMA_BYTES]	= { .type = NLA_U64 },
	[NTBSMC_STATS_FB_CLIENT]	= { .type = NLA_NESTED },
	[NTBSMC_STATS_FB_SERVER]	= { .type = NLA_NESTED },
	[NTBSMC_STATS_ZC_BYTES]		= { .type = NLA_U64 },
	[NTBSMC_STATS_DMA_FAILED]	= { .type = NLA_U64 },
	[NTBSMC_STATS_NOTIFY_LOST]	= { .type = NLA_U64 },
	[NTBSMC_STATS_ORPHAN_RESET]	= { .type = NLA_U64 },
	[NTBSMC_STATS_HS_PEAK]		= { .type = NLA_U64 },
	[NTBSMC_STATS_HS_CONGESTED]	= { .type = NLA_U64 },
	[NTBSMC_STATS_LINK_WRITES]	= { .type = NLA_U64 },
	[NTBSMC_STATS_LINK_WRITES_SMALL]	= { .type = NLA_U64 },
	[NTBSMC_STATS_LINK_WRITES_MEDIUM]	= { .type = NLA_U64 },
	[NTBSMC_STATS_LINK_WRITES_LARGE]	= { .type = NLA_U64 },
	[NTBSMC_STATS_LINK_WRITE_BYTES]	= { .type = NLA_U64 },
	[NTBSMC_STATS_LINK_READS]	= { .type = NLA_U64 },
	[NTBSMC_STATS_IRQ]		= { .type = NLA_U64 },
	[NTBSMC_STATS_NO_MIRROR]	= { .type = NLA_U64 },
	[NTBSMC_STATS_SWITCH_TCP]	= { .type = NLA_U64 },
	[NTBSMC_STATS_SWITCH_RESENT]	= { .type = NLA_U64 },
	[NTBSMC_STATS_SWITCH_FAILED]	= { .type = NLA_U64 },
};

static const struct nla_policy reason_policy[REASON_ATTR_MAX + 1] = {
	[1 ... REASON_ATTR_MAX]		= { .type = NLA_U64 },
};

/* Counters in output order: JSON key, text section and label. */
static const struct {
	int attr;
	const char *key;
	const char *section;
	const char *label;
} counters[] = {
	{ NTBSMC_STATS_CONN_NTB, "conn_ntb", "Connections", "over NTB" },
	{ NTBSMC_STATS_CONN_TCP, "conn_tcp", "Connections", "fell back to TCP" },
	{ NTBSMC_STATS_HS_ERR, "handshake_errors", "Connections", "handshake errors" },
	{ NTBSMC_STATS_HS_PEAK, "handshakes_peak", "Connections",
	  "server handshakes, peak" },
	{ NTBSMC_STATS_HS_CONGESTED, "handshakes_congested", "Connections",
	  "declined: max_handshakes" },
	{ NTBSMC_STATS_ABORT, "aborts", "Connections", "reset (aborted)" },
	{ NTBSMC_STATS_ORPHAN_RESET, "orphan_resets", "Connections", "orphans reset" },
	{ NTBSMC_STATS_NO_MIRROR, "no_mirror", "Connections",
	  "no copy kept (cannot switch)" },
	{ NTBSMC_STATS_SWITCH_TCP, "switch_to_tcp", "Connections", "moved to TCP (link lost)" },
	{ NTBSMC_STATS_SWITCH_FAILED, "switch_failed", "Connections", "switches that reset" },
	{ NTBSMC_STATS_TX_BYTES, "tx_bytes", "Bytes", "sent over NTB" },
	{ NTBSMC_STATS_RX_BYTES, "rx_bytes", "Bytes", "received over NTB" },
	{ NTBSMC_STATS_CPU_BYTES, "cpu_bytes", "Bytes", "copied by the CPU" },
	{ NTBSMC_STATS_DMA_BYTES, "dma_bytes", "Bytes", "moved by DMA" },
	{ NTBSMC_STATS_ZC_BYTES, "zc_bytes", "Bytes", "of those, zero-copy" },
	{ NTBSMC_STATS_DMA_FAILED, "dma_failed", "Bytes", "DMA writes redone by the CPU" },
	{ NTBSMC_STATS_SWITCH_RESENT, "switch_resent_bytes", "Bytes", "sent again over TCP" },
	{ NTBSMC_STATS_LINK_WRITES, "link_writes", "Link", "posted writes" },
	{ NTBSMC_STATS_LINK_WRITES_SMALL, "link_writes_small", "Link", "of <= 64 B" },
	{ NTBSMC_STATS_LINK_WRITES_MEDIUM, "link_writes_medium", "Link", "of <= 4 KiB" },
	{ NTBSMC_STATS_LINK_WRITES_LARGE, "link_writes_large", "Link", "larger" },
	{ NTBSMC_STATS_LINK_WRITE_BYTES, "link_write_bytes", "Link", "bytes written" },
	{ NTBSMC_STATS_LINK_READS, "link_reads", "Link", "reads across the link" },
	{ NTBSMC_STATS_DB_TX, "doorbells_tx", "Doorbells", "rung" },
	{ NTBSMC_STATS_DB_RX, "doorbells_rx", "Doorbells", "handled" },
	{ NTBSMC_STATS_IRQ, "interrupts", "Doorbells", "interrupts taken" },
	{ NTBSMC_STATS_DB_SUPPRESSED, "doorbells_suppressed", "Doorbells",
	  "not needed (suppressed)" },
	{ NTBSMC_STATS_NOTIFY_LOST, "notify_lost", "Doorbells",
	  "lost, found by the re-check" },
	{ NTBSMC_STATS_BUF_FULL, "buffer_full", "Flow control", "peer buffer found full" },
};

#define TEXT_ROW "  %-28s %%20s\n"

void usage_stats(FILE *f)
{
	fprintf(f, "Usage: ntbsmc stats [ show ]\n"
		   "       ntbsmc stats reset\n");
}

/* Text: only reasons that happened; JSON: every known reason, and any other that did. */
static int print_reasons(const char *key, const char *title, struct nlattr *nest)
{
	struct nlattr *r[REASON_ATTR_MAX + 1];
	unsigned int shown = 0;
	char name[32], fmt[64];
	const char *rname;
	int type;

	print_fp("Fallbacks to TCP, %s\n", title);
	if (!nest) {
		print_null(PRINT_ANY, key, "  %s\n");
		return EXIT_OK;
	}
	if (nla_parse_nested(r, REASON_ATTR_MAX, nest, reason_policy) < 0)
		return kern_malformed("fallback counters");

	print_open_object(key);
	for (type = 1; type <= REASON_ATTR_MAX; type++) {
		int reason = type - 1;
		uint64_t v = r[type] ? nla_get_u64(r[type]) : 0;
		bool known = reason_known(reason);
		enum print_type t = v ? PRINT_ANY : PRINT_JSON;

		/* "none" is no fallback: it would only count a module bug. */
		if (!v && (!known || reason == NTBSMC_REASON_NONE))
			continue;
		rname = reason_name(reason, name, sizeof(name));
		snprintf(fmt, sizeof(fmt), TEXT_ROW, rname);
		if (r[type])
			print_u64(t, rname, fmt, v);
		else
			print_null(PRINT_JSON, rname, NULL);
		shown += !!v;
	}
	print_close_object();
	if (!shown)
		print_fp("  none\n");
	return EXIT_OK;
}

static int stats_show_one(struct nlattr **tb, void *arg)
{
	struct nlattr *s[NTBSMC_STATS_MAX + 1];
	const char *section = NULL;
	bool *seen = arg;
	char fmt[64];
	size_t i;
	int rc;

	if (!tb[NTBSMC_A_STATS] || *seen)
		return EXIT_OK;
	if (nla_parse_nested(s, NTBSMC_STATS_MAX, tb[NTBSMC_A_STATS], stats_policy) < 0)
		return kern_malformed("statistics");
	*seen = true;

	print_open_object(NULL);
	for (i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
		if (!section || strcmp(section, counters[i].section)) {
			section = counters[i].section;
			print_fp("%s\n", section);
		}
		snprintf(fmt, sizeof(fmt), TEXT_ROW, counters[i].label);
		print_attr_u64(PRINT_ANY, counters[i].key, fmt, s[counters[i].attr]);
	}
	rc = print_reasons("fallback_client", "client side", s[NTBSMC_STATS_FB_CLIENT]);
	if (!rc)
		rc = print_reasons("fallback_server", "server side", s[NTBSMC_STATS_FB_SERVER]);
	print_close_object();
	return rc;
}

static int stats_show(int argc, char **argv)
{
	bool seen = false;
	int rc;

	if (argc && is_help(argv[0])) {
		usage_stats(stdout);
		return EXIT_OK;
	}
	if (argc)
		return usage_error("stats", "unexpected argument \"%s\"", argv[0]);

	rc = session_start();
	if (rc)
		return rc;
	rc = kern_run(kern_request(NTBSMC_CMD_STATS_GET, false), stats_show_one, &seen,
		      "stats show", NULL);
	if (!rc && !seen)
		rc = fail(EXIT_ERROR, "stats show: no statistics in the kernel's reply");
	return rc;
}

static int stats_reset(int argc, char **argv)
{
	int rc;

	if (argc && is_help(argv[0])) {
		usage_stats(stdout);
		return EXIT_OK;
	}
	if (argc)
		return usage_error("stats", "unexpected argument \"%s\"", argv[0]);
	rc = session_start();
	if (rc)
		return rc;
	return kern_run(kern_request(NTBSMC_CMD_STATS_RESET, false), NULL, NULL,
			"stats reset", "CAP_NET_ADMIN over the network namespace");
}

enum { STATS_SHOW, STATS_RESET, STATS_HELP };

static const struct keyword stats_commands[] = {
	[STATS_SHOW]	= { "show", "list", true },
	[STATS_RESET]	= { "reset", NULL, false },
	[STATS_HELP]	= { "help", NULL, false },
};

int do_stats(int argc, char **argv)
{
	if (!argc)
		return stats_show(0, NULL);
	switch (parse_keyword(argv[0], stats_commands,
			      sizeof(stats_commands) / sizeof(stats_commands[0]),
			      "stats command", "stats")) {
	case STATS_SHOW:
		return stats_show(argc - 1, argv + 1);
	case STATS_RESET:
		return stats_reset(argc - 1, argv + 1);
	case STATS_HELP:
		if (argc > 1)
			return usage_error("stats", "unexpected argument \"%s\"", argv[1]);
		usage_stats(stdout);
		return EXIT_OK;
	default:
		return EXIT_USAGE;
	}
}
