// SPDX-License-Identifier: GPL-2.0
/* ntbsmc tool: the "dev" object: show NTB devices, enable/disable them, move them. */

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netlink/genl/genl.h>

#include <linux/ntbsmc.h>

#include "tool.h"

/* The module's policy for NTBSMC_A_DEV_NAME: NLA_NUL_STRING, .len = 31 */
#define DEV_NAME_MAX	31
#define ID_LEN		16

static const struct nla_policy dev_policy[NTBSMC_DEV_MAX + 1] = {
	[NTBSMC_DEV_NAME]		= { .type = NLA_STRING, .minlen = 1 },
	[NTBSMC_DEV_FABRIC_ID]		= { .minlen = ID_LEN, .maxlen = ID_LEN },
	[NTBSMC_DEV_STATE]		= { .type = NLA_U8 },
	[NTBSMC_DEV_ENABLED]		= { .type = NLA_U8 },
	[NTBSMC_DEV_NETNS_COOKIE]	= { .type = NLA_U64 },
	[NTBSMC_DEV_WINDOW_SIZE]	= { .type = NLA_U64 },
	[NTBSMC_DEV_MW_COUNT]		= { .type = NLA_U32 },
	[NTBSMC_DEV_DB_COUNT]		= { .type = NLA_U32 },
	[NTBSMC_DEV_SPAD_COUNT]		= { .type = NLA_U32 },
	[NTBSMC_DEV_RMB_SIZE]		= { .type = NLA_U32 },
	[NTBSMC_DEV_RMB_COUNT]		= { .type = NLA_U32 },
	[NTBSMC_DEV_RMB_SPACE]		= { .type = NLA_U32 },
	[NTBSMC_DEV_RMB_FREE]		= { .type = NLA_U32 },
	[NTBSMC_DEV_ORPHANS]		= { .type = NLA_U32 },
	[NTBSMC_DEV_HELD]		= { .type = NLA_U32 },
	[NTBSMC_DEV_PEER_SYSID]		= { .minlen = ID_LEN, .maxlen = ID_LEN },
	[NTBSMC_DEV_DMA_CHAN]		= { .type = NLA_STRING, .minlen = 1 },
	[NTBSMC_DEV_DMA_DEV]		= { .type = NLA_STRING, .minlen = 1 },
	[NTBSMC_DEV_DMA_CHOICE]		= { .type = NLA_U8 },
};

/* why the device took its DMA channel (enum ntbsmc_dma_choice) */
static const char *const dma_choices[] = {
	[NTBSMC_DMA_CHOICE_SWITCH]	= "switch",
	[NTBSMC_DMA_CHOICE_NUMA]	= "numa",
	[NTBSMC_DMA_CHOICE_ANY]		= "any",
};

static const char *const dev_states[] = {
	[NTBSMC_DEV_STATE_DOWN]		= "down",
	[NTBSMC_DEV_STATE_BRINGUP]	= "bringup",
	[NTBSMC_DEV_STATE_ACTIVE]	= "active",
};

void usage_dev(FILE *f)
{
	fprintf(f,
		"Usage: ntbsmc dev show [ DEV ]\n"
		"       ntbsmc dev set DEV [ enable | disable ] [ netns { PID | NAME } ]\n");
}

static int dev_name_check(const char *name)
{
	if (*name == '-')
		return usage_error(NULL, "unknown option \"%s\" (options go before the object)",
				   name);
	if (!*name)
		return usage_error("dev", "empty device name");
	if (strlen(name) > DEV_NAME_MAX)
		return usage_error("dev", "device name \"%s\" too long (at most %d characters)",
				   name, DEV_NAME_MAX);
	return EXIT_OK;
}

/* ---- dev show ---- */

struct dev_show {
	const char *name;	/* only this device */
	unsigned int count;
};

static void print_state(const struct nlattr *a)
{
	char buf[32];
	unsigned int state;

	if (!a) {
		print_null(PRINT_ANY, "state", " state %s");
		return;
	}
	state = nla_get_u8(a);
	if (state < sizeof(dev_states) / sizeof(dev_states[0]) && dev_states[state])
		snprintf(buf, sizeof(buf), "%s", dev_states[state]);
	else
		snprintf(buf, sizeof(buf), "unknown(%u)", state);
	print_string(PRINT_ANY, "state", " state %s", buf);
}

/* "switch": on the NTB device's own switch; "numa": on its node; "any" */
static void print_dma_choice(const struct nlattr *a)
{
	unsigned int c;
	char buf[32];

	if (!a) {
		print_null(PRINT_JSON, "dma_choice", NULL);
		return;
	}
	c = nla_get_u8(a);
	if (c < sizeof(dma_choices) / sizeof(dma_choices[0]) && dma_choices[c])
		snprintf(buf, sizeof(buf), "%s", dma_choices[c]);
	else
		snprintf(buf, sizeof(buf), "unknown(%u)", c);
	print_string(PRINT_ANY, "dma_choice", " (%s)", buf);
}

static int dev_show_one(struct nlattr **tb, void *arg)
{
	struct nlattr *d[NTBSMC_DEV_MAX + 1];
	struct dev_show *ds = arg;

	if (!tb[NTBSMC_A_DEV])
		return EXIT_OK;
	if (nla_parse_nested(d, NTBSMC_DEV_MAX, tb[NTBSMC_A_DEV], dev_policy) < 0)
		return kern_malformed("device record");
	if (ds->name && (!d[NTBSMC_DEV_NAME] ||
			 strcmp(nla_get_string(d[NTBSMC_DEV_NAME]), ds->name)))
		return EXIT_OK;
	ds->count++;

	print_open_object(NULL);
	print_attr_string(PRINT_ANY, "name", "%s:", d[NTBSMC_DEV_NAME]);
	print_state(d[NTBSMC_DEV_STATE]);
	print_attr_bool(PRINT_ANY, "enabled", " enabled %s", d[NTBSMC_DEV_ENABLED]);
	print_fp("\n    ");
	print_attr_hex(PRINT_ANY, "fabric_id", "fabric_id %s", d[NTBSMC_DEV_FABRIC_ID]);
	print_attr_u64(PRINT_ANY, "netns_cookie", " netns_cookie %s",
		       d[NTBSMC_DEV_NETNS_COOKIE]);
	print_fp("\n    ");
	print_attr_u64(PRINT_ANY, "window_size", "window %s", d[NTBSMC_DEV_WINDOW_SIZE]);
	print_attr_u32(PRINT_ANY, "windows", " windows %s", d[NTBSMC_DEV_MW_COUNT]);
	print_attr_u32(PRINT_ANY, "doorbells", " doorbells %s", d[NTBSMC_DEV_DB_COUNT]);
	print_attr_u32(PRINT_ANY, "scratchpads", " scratchpads %s", d[NTBSMC_DEV_SPAD_COUNT]);
	print_fp("\n    ");
	print_attr_u32(PRINT_ANY, "buffers", "buffers %s", d[NTBSMC_DEV_RMB_COUNT]);
	print_attr_u32(PRINT_ANY, "buffer_space", " space %s", d[NTBSMC_DEV_RMB_SPACE]);
	print_attr_u32(PRINT_ANY, "buffer_free", " free %s", d[NTBSMC_DEV_RMB_FREE]);
	print_attr_u32(PRINT_ANY, "buffer_size", " size %s", d[NTBSMC_DEV_RMB_SIZE]);
	print_attr_u32(PRINT_ANY, "orphans", " orphans %s", d[NTBSMC_DEV_ORPHANS]);
	print_attr_u32(PRINT_ANY, "held", " held %s", d[NTBSMC_DEV_HELD]);
	print_fp("\n    ");
	/* Without a DMA channel writes are CPU copies: null in JSON, no text line. */
	print_attr_string(d[NTBSMC_DEV_DMA_CHAN] ? PRINT_ANY : PRINT_JSON, "dma_chan",
			  "dma %s", d[NTBSMC_DEV_DMA_CHAN]);
	if (d[NTBSMC_DEV_DMA_CHAN]) {
		print_attr_string(PRINT_ANY, "dma_dev", " of %s", d[NTBSMC_DEV_DMA_DEV]);
		print_dma_choice(d[NTBSMC_DEV_DMA_CHOICE]);
		print_fp("\n    ");
	} else {
		print_null(PRINT_JSON, "dma_dev", NULL);
		print_null(PRINT_JSON, "dma_choice", NULL);
	}
	/* Absent while the link is down. */
	print_attr_hex(PRINT_ANY, "peer_sysid", "peer_sysid %s\n", d[NTBSMC_DEV_PEER_SYSID]);
	print_close_object();
	return EXIT_OK;
}

static int dev_show(int argc, char **argv)
{
	struct dev_show ds = { NULL, 0 };
	struct nl_msg *msg;
	int rc;

	if (argc && is_help(argv[0])) {
		usage_dev(stdout);
		return EXIT_OK;
	}
	if (argc > 1)
		return usage_error("dev", "unexpected argument \"%s\"", argv[1]);
	if (argc) {
		ds.name = argv[0];
		rc = dev_name_check(ds.name);
		if (rc)
			return rc;
	}

	rc = session_start();
	if (rc)
		return rc;
	msg = kern_request(NTBSMC_CMD_DEV_GET, true);
	/* The module filters by name or not: the tool filters anyway. */
	if (msg && ds.name && nla_put_string(msg, NTBSMC_A_DEV_NAME, ds.name) < 0) {
		nlmsg_free(msg);
		msg = NULL;
	}
	print_open_array(NULL);
	rc = kern_run(msg, dev_show_one, &ds, "dev show", NULL);
	print_close_array();
	if (!rc && ds.name && !ds.count)
		rc = fail(EXIT_NODEV, "dev show: no NTB device \"%s\" in this network namespace",
			  ds.name);
	return rc;
}

/* ---- dev set ---- */

enum { SET_ENABLE, SET_DISABLE, SET_NETNS };

static const struct keyword set_keywords[] = {
	[SET_ENABLE]	= { "enable", NULL, false },
	[SET_DISABLE]	= { "disable", NULL, false },
	[SET_NETNS]	= { "netns", NULL, false },
};

/* A number is a PID, anything else an "ip netns" name (or a path). */
static bool parse_pid(const char *s, unsigned int *pid)
{
	unsigned long v;
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (*end)
		return false;
	*pid = errno || v > INT_MAX ? 0 : v;
	return true;
}

static int dev_set(int argc, char **argv)
{
	const char *name, *netns = NULL;
	int enable = -1, netns_fd = -1, rc, i;
	unsigned int pid = 0;
	struct nl_msg *msg;

	if (!argc)
		return usage_error("dev", "dev set: device name missing");
	if (is_help(argv[0])) {
		usage_dev(stdout);
		return EXIT_OK;
	}
	name = argv[0];
	rc = dev_name_check(name);
	if (rc)
		return rc;

	for (i = 1; i < argc; i++) {
		int kw = parse_keyword(argv[i], set_keywords,
				       sizeof(set_keywords) / sizeof(set_keywords[0]),
				       "dev set argument", "dev");

		switch (kw) {
		case SET_ENABLE:
		case SET_DISABLE:
			if (enable >= 0)
				return usage_error("dev", "enable/disable given twice");
			enable = kw == SET_ENABLE;
			break;
		case SET_NETNS:
			if (netns)
				return usage_error("dev", "netns given twice");
			if (++i == argc)
				return usage_error("dev", "netns needs a PID or a name");
			netns = argv[i];
			if (parse_pid(netns, &pid) && !pid)
				return usage_error("dev", "invalid PID \"%s\"", netns);
			break;
		default:
			return EXIT_USAGE;
		}
	}
	if (enable < 0 && !netns)
		return usage_error("dev", "dev set: nothing to change (enable, disable or netns)");

	if (netns && !pid) {
		rc = netns_open(netns, &netns_fd);
		if (rc)
			return rc;
	}

	rc = session_start();
	if (!rc) {
		msg = kern_request(NTBSMC_CMD_DEV_SET, false);
		if (msg && (nla_put_string(msg, NTBSMC_A_DEV_NAME, name) < 0 ||
			    (enable >= 0 && nla_put_u8(msg, NTBSMC_A_DEV_ENABLED, enable) < 0) ||
			    (pid && nla_put_u32(msg, NTBSMC_A_DEV_NETNS_PID, pid) < 0) ||
			    (netns_fd >= 0 &&
			     nla_put_u32(msg, NTBSMC_A_DEV_NETNS_FD, netns_fd) < 0))) {
			nlmsg_free(msg);
			msg = NULL;
		}
		rc = kern_run(msg, NULL, NULL, "dev set",
			      netns ? "CAP_NET_ADMIN over this and the target network namespace"
				    : "CAP_NET_ADMIN over the network namespace");
	}
	if (netns_fd >= 0)
		close(netns_fd);
	return rc;
}

/* ---- dispatch ---- */

enum { DEV_SHOW, DEV_SET, DEV_HELP };

static const struct keyword dev_commands[] = {
	[DEV_SHOW]	= { "show", "list", true },
	[DEV_SET]	= { "set", NULL, false },
	[DEV_HELP]	= { "help", NULL, false },
};

int do_dev(int argc, char **argv)
{
	if (!argc)
		return dev_show(0, NULL);
	switch (parse_keyword(argv[0], dev_commands,
			      sizeof(dev_commands) / sizeof(dev_commands[0]),
			      "dev command", "dev")) {
	case DEV_SHOW:
		return dev_show(argc - 1, argv + 1);
	case DEV_SET:
		return dev_set(argc - 1, argv + 1);
	case DEV_HELP:
		if (argc > 1)
			return usage_error("dev", "unexpected argument \"%s\"", argv[1]);
		usage_dev(stdout);
		return EXIT_OK;
	default:
		return EXIT_USAGE;
	}
}
