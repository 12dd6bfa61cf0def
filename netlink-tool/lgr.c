// SPDX-License-Identifier: GPL-2.0
/* ntbsmc tool: the "linkgroup" object: show the link groups connections run on. */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <linux/ntbsmc.h>

#include "tool.h"

#define ID_LEN	16

static const struct nla_policy lgr_policy[NTBSMC_LGR_MAX + 1] = {
	[NTBSMC_LGR_ID]		= { .type = NLA_U32 },
	[NTBSMC_LGR_DEV]	= { .type = NLA_STRING, .minlen = 1 },
	[NTBSMC_LGR_PEER_SYSID]	= { .minlen = ID_LEN, .maxlen = ID_LEN },
	[NTBSMC_LGR_CONNS]	= { .type = NLA_U32 },
	[NTBSMC_LGR_TX_BYTES]	= { .type = NLA_U64 },
	[NTBSMC_LGR_RX_BYTES]	= { .type = NLA_U64 },
	[NTBSMC_LGR_AGE_MS]	= { .type = NLA_U64 },
	[NTBSMC_LGR_IDLE_MS]	= { .type = NLA_U64 },
};

void usage_lgr(FILE *f)
{
	fprintf(f, "Usage: ntbsmc linkgroup show [ ID ]\n");
}

struct lgr_show {
	bool filter;
	uint32_t id;
	unsigned int count;
};

/* Milliseconds: the number in JSON (KEY), a duration such as "1h02m03s" in text. */
static void print_attr_ms(const char *key, const char *fmt, const struct nlattr *a)
{
	uint64_t ms, s;
	char buf[48];

	if (!a) {
		print_null(PRINT_ANY, key, fmt);
		return;
	}
	ms = nla_get_u64(a);
	s = ms / 1000;
	if (s < 60)
		snprintf(buf, sizeof(buf), "%" PRIu64 ".%03" PRIu64 "s", s, ms % 1000);
	else if (s < 3600)
		snprintf(buf, sizeof(buf), "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, sizeof(buf), "%" PRIu64 "h%02" PRIu64 "m%02" PRIu64 "s", s / 3600,
			 s / 60 % 60, s % 60);
	else
		snprintf(buf, sizeof(buf), "%" PRIu64 "d%02" PRIu64 "h%02" PRIu64 "m", s / 86400,
			 s / 3600 % 24, s / 60 % 60);
	print_u64(PRINT_JSON, key, NULL, ms);
	print_string(PRINT_FP, NULL, fmt, buf);
}

static int lgr_show_one(struct nlattr **tb, void *arg)
{
	struct nlattr *l[NTBSMC_LGR_MAX + 1];
	struct lgr_show *ls = arg;

	if (!tb[NTBSMC_A_LGR])
		return EXIT_OK;
	if (nla_parse_nested(l, NTBSMC_LGR_MAX, tb[NTBSMC_A_LGR], lgr_policy) < 0)
		return kern_malformed("link group record");
	if (ls->filter && (!l[NTBSMC_LGR_ID] || nla_get_u32(l[NTBSMC_LGR_ID]) != ls->id))
		return EXIT_OK;
	ls->count++;

	print_open_object(NULL);
	print_attr_u32(PRINT_ANY, "id", "%s:", l[NTBSMC_LGR_ID]);
	print_attr_string(PRINT_ANY, "dev", " dev %s", l[NTBSMC_LGR_DEV]);
	print_attr_hex(PRINT_ANY, "peer_sysid", " peer_sysid %s", l[NTBSMC_LGR_PEER_SYSID]);
	print_attr_u32(PRINT_ANY, "connections", " connections %s", l[NTBSMC_LGR_CONNS]);
	print_fp("\n    ");
	print_attr_u64(PRINT_ANY, "tx_bytes", "tx_bytes %s", l[NTBSMC_LGR_TX_BYTES]);
	print_attr_u64(PRINT_ANY, "rx_bytes", " rx_bytes %s", l[NTBSMC_LGR_RX_BYTES]);
	print_attr_ms("age_ms", " age %s", l[NTBSMC_LGR_AGE_MS]);
	/* 0 while connections use it. */
	print_attr_ms("idle_ms", " idle %s", l[NTBSMC_LGR_IDLE_MS]);
	print_fp("\n");
	print_close_object();
	return EXIT_OK;
}

static int lgr_show(int argc, char **argv)
{
	struct lgr_show ls = { false, 0, 0 };
	unsigned long id;
	char *end;
	int rc;

	if (argc && is_help(argv[0])) {
		usage_lgr(stdout);
		return EXIT_OK;
	}
	if (argc > 1)
		return usage_error("linkgroup", "unexpected argument \"%s\"", argv[1]);
	if (argc) {
		errno = 0;
		id = strtoul(argv[0], &end, 0);
		if (argv[0][0] < '0' || argv[0][0] > '9' || *end || errno || !id ||
		    id > UINT32_MAX)
			return usage_error("linkgroup", "invalid link group id \"%s\"", argv[0]);
		ls.filter = true;
		ls.id = id;
	}

	rc = session_start();
	if (rc)
		return rc;
	print_open_array(NULL);
	rc = kern_run(kern_request(NTBSMC_CMD_LGR_GET, true), lgr_show_one, &ls,
		      "linkgroup show", NULL);
	print_close_array();
	if (!rc && ls.filter && !ls.count)
		rc = fail(EXIT_NODEV, "linkgroup show: no link group %" PRIu32
			  " in this network namespace", ls.id);
	return rc;
}

enum { LGR_SHOW, LGR_HELP };

static const struct keyword lgr_commands[] = {
	[LGR_SHOW]	= { "show", "list", true },
	[LGR_HELP]	= { "help", NULL, false },
};

int do_lgr(int argc, char **argv)
{
	if (!argc)
		return lgr_show(0, NULL);
	switch (parse_keyword(argv[0], lgr_commands,
			      sizeof(lgr_commands) / sizeof(lgr_commands[0]),
			      "linkgroup command", "linkgroup")) {
	case LGR_SHOW:
		return lgr_show(argc - 1, argv + 1);
	case LGR_HELP:
		if (argc > 1)
			return usage_error("linkgroup", "unexpected argument \"%s\"", argv[1]);
		usage_lgr(stdout);
		return EXIT_OK;
	default:
		return EXIT_USAGE;
	}
}
