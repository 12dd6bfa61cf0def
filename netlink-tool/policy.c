// SPDX-License-Identifier: GPL-2.0
/* ntbsmc tool: the "policy" object: which peers and ports the namespace offers ntbsmc. */

#include <arpa/inet.h>
#include <string.h>
#include <sys/socket.h>

#include <netlink/genl/genl.h>

#include <linux/ntbsmc.h>

#include "tool.h"

static const struct nla_policy rule_policy[NTBSMC_POLICY_ATTR_MAX + 1] = {
	[NTBSMC_POLICY_ID]		= { .type = NLA_U32 },
	[NTBSMC_POLICY_ACTION]		= { .type = NLA_U8 },
	[NTBSMC_POLICY_FAMILY]		= { .type = NLA_U8 },
	[NTBSMC_POLICY_ADDR]		= { .minlen = 4, .maxlen = 16 },
	[NTBSMC_POLICY_PREFIXLEN]	= { .type = NLA_U8 },
	[NTBSMC_POLICY_PORT_MIN]	= { .type = NLA_U16 },
	[NTBSMC_POLICY_PORT_MAX]	= { .type = NLA_U16 },
	[NTBSMC_POLICY_HITS]		= { .type = NLA_U64 },
};

/* enum ntbsmc_policy_action, from NTBSMC_POLICY_INCLUDE on */
static const struct keyword actions[] = {
	{ "include", NULL, false },
	{ "exclude", NULL, false },
};

/* A rule as "policy add" reads it from the command line, or the id "policy del" does. */
struct rule {
	unsigned int id;		/* 0: none */
	int action;			/* enum ntbsmc_policy_action; 0: none */
	int family;			/* AF_INET, AF_INET6; AF_UNSPEC: every address */
	unsigned char addr[16];
	unsigned int prefixlen;
	unsigned long port_min;		/* 0: every port */
	unsigned long port_max;
};

void usage_policy(FILE *f)
{
	fprintf(f,
		"Usage: ntbsmc policy [ show ]\n"
		"       ntbsmc policy add { include | exclude } [ PREFIX | any ] [ port PORTS ]\n"
		"       ntbsmc policy del ID\n"
		"       ntbsmc policy flush\n"
		"where  PREFIX := { IPv4 | IPv6 }[/LENGTH]  (no LENGTH: one host)\n"
		"       PORTS := { PORT | PORT-PORT }\n");
}

/* ---- policy show ---- */

static int address_bits(int family)
{
	return family == AF_INET ? 32 : 128;
}

/* An address fits its family and length, a port range has its low end: else the module's bug. */
static bool rule_valid(struct nlattr **p)
{
	const struct nlattr *addr = p[NTBSMC_POLICY_ADDR], *len = p[NTBSMC_POLICY_PREFIXLEN];
	int family, bits;

	if (p[NTBSMC_POLICY_PORT_MAX] && !p[NTBSMC_POLICY_PORT_MIN])
		return false;
	if (!p[NTBSMC_POLICY_FAMILY])
		return true;
	family = nla_get_u8(p[NTBSMC_POLICY_FAMILY]);
	if (family != AF_INET && family != AF_INET6)
		return false;
	bits = address_bits(family);
	return addr && nla_len(addr) == bits / 8 && (!len || nla_get_u8(len) <= bits);
}

static void print_action(const struct nlattr *a)
{
	unsigned int action;
	char buf[32];

	if (!a) {
		print_null(PRINT_ANY, "action", " %s");
		return;
	}
	action = nla_get_u8(a) - NTBSMC_POLICY_INCLUDE;
	if (action < ARRAY_SIZE(actions))
		snprintf(buf, sizeof(buf), "%s", actions[action].name);
	else
		snprintf(buf, sizeof(buf), "unknown(%u)", nla_get_u8(a));
	print_string(PRINT_ANY, "action", " %s", buf);
}

/* "10.0.0.0/8", "fd00::1/128" (a host has its length too); "any" in text, null in JSON. */
static void print_prefix(struct nlattr **p)
{
	char addr[INET6_ADDRSTRLEN], buf[INET6_ADDRSTRLEN + 4];
	unsigned int len;
	int family;

	if (!p[NTBSMC_POLICY_FAMILY]) {
		print_null(PRINT_JSON, "prefix", NULL);
		print_fp(" any");
		return;
	}
	family = nla_get_u8(p[NTBSMC_POLICY_FAMILY]);
	len = p[NTBSMC_POLICY_PREFIXLEN] ? nla_get_u8(p[NTBSMC_POLICY_PREFIXLEN]) :
					     address_bits(family);
	inet_ntop(family, nla_data(p[NTBSMC_POLICY_ADDR]), addr, sizeof(addr));
	snprintf(buf, sizeof(buf), "%s/%u", addr, len);
	print_string(PRINT_ANY, "prefix", " %s", buf);
}

/* "port any", "port 80", "port 8000-8100"; JSON port_min and port_max, null for any. */
static void print_ports(const struct nlattr *min, const struct nlattr *max)
{
	unsigned int lo, hi;
	char buf[16];

	if (!min) {
		print_null(PRINT_JSON, "port_min", NULL);
		print_null(PRINT_JSON, "port_max", NULL);
		print_fp(" port any");
		return;
	}
	lo = nla_get_u16(min);
	hi = max ? nla_get_u16(max) : lo;
	print_u64(PRINT_JSON, "port_min", NULL, lo);
	print_u64(PRINT_JSON, "port_max", NULL, hi);
	if (lo == hi)
		snprintf(buf, sizeof(buf), "%u", lo);
	else
		snprintf(buf, sizeof(buf), "%u-%u", lo, hi);
	print_string(PRINT_FP, NULL, " port %s", buf);
}

static int policy_show_one(struct nlattr **tb, void *arg)
{
	struct nlattr *p[NTBSMC_POLICY_ATTR_MAX + 1];
	unsigned int *count = arg;

	if (!tb[NTBSMC_A_POLICY])
		return EXIT_OK;
	if (nla_parse_nested(p, NTBSMC_POLICY_ATTR_MAX, tb[NTBSMC_A_POLICY], rule_policy) < 0 ||
	    !rule_valid(p))
		return kern_malformed("policy rule");
	(*count)++;

	print_open_object(NULL);
	print_attr_u32(PRINT_ANY, "id", "%s", p[NTBSMC_POLICY_ID]);
	print_action(p[NTBSMC_POLICY_ACTION]);
	print_prefix(p);
	print_ports(p[NTBSMC_POLICY_PORT_MIN], p[NTBSMC_POLICY_PORT_MAX]);
	print_attr_u64(PRINT_ANY, "hits", " hits %s\n", p[NTBSMC_POLICY_HITS]);
	print_close_object();
	return EXIT_OK;
}

static int policy_show(int argc, char **argv)
{
	unsigned int count = 0;
	int rc;

	if (argc && is_help(argv[0])) {
		usage_policy(stdout);
		return EXIT_OK;
	}
	if (argc)
		return usage_error("policy", "unexpected argument \"%s\"", argv[0]);

	rc = session_start();
	if (rc)
		return rc;
	print_open_array(NULL);
	rc = kern_run(kern_request(NTBSMC_CMD_POLICY_GET, true), policy_show_one, &count,
		      "policy show", NULL);
	print_close_array();
	/* No rule is a policy too: the one that offers ntbsmc to everyone. */
	if (!rc && !count)
		print_fp("no rules: every peer and port is offered ntbsmc\n");
	return rc;
}

/* ---- policy add, del, flush ---- */

#define PRIV	"CAP_NET_ADMIN over the network namespace"

/* ADDRESS[/LENGTH]; no LENGTH: one host. */
static int parse_prefix(const char *word, struct rule *r)
{
	char buf[INET6_ADDRSTRLEN + 4], *len;
	unsigned long plen;

	snprintf(buf, sizeof(buf), "%s", word);
	len = strchr(buf, '/');
	if (len)
		*len++ = '\0';
	r->family = strlen(word) >= sizeof(buf) ? AF_UNSPEC :
		    inet_pton(AF_INET, buf, r->addr) == 1 ? AF_INET :
		    inet_pton(AF_INET6, buf, r->addr) == 1 ? AF_INET6 : AF_UNSPEC;
	if (!r->family)
		return usage_error("policy",
				   "invalid prefix \"%s\" (IPv4 or IPv6 ADDRESS[/LENGTH])", word);
	r->prefixlen = address_bits(r->family);
	if (!len)
		return EXIT_OK;
	if (!parse_decimal(len, r->prefixlen, &plen))
		return usage_error("policy", "invalid prefix length in \"%s\" (0 to %u)", word,
				   r->prefixlen);
	r->prefixlen = plen;
	return EXIT_OK;
}

static bool parse_port(const char *s, unsigned long *port)
{
	return parse_decimal(s, 65535, port) && *port;
}

/* PORT or PORT-PORT, 1 to 65535, low to high. */
static int parse_ports(const char *word, struct rule *r)
{
	char buf[16], *hi;

	snprintf(buf, sizeof(buf), "%s", word);
	hi = strchr(buf, '-');
	if (hi)
		*hi++ = '\0';
	if (strlen(word) >= sizeof(buf) || !parse_port(buf, &r->port_min) ||
	    !parse_port(hi ? hi : buf, &r->port_max))
		return usage_error("policy",
				   "invalid port \"%s\" (1 to 65535, or a range PORT-PORT)", word);
	if (r->port_min > r->port_max)
		return usage_error("policy", "invalid port range \"%s\" (%lu is above %lu)", word,
				   r->port_min, r->port_max);
	return EXIT_OK;
}

enum { ADD_ANY, ADD_PORT };

static const struct keyword add_keywords[] = {
	[ADD_ANY]	= { "any", NULL, false },
	[ADD_PORT]	= { "port", NULL, false },
};

/* Addresses start with a digit or hold a ':'; every other word is a keyword. */
static int parse_add_word(int argc, char **argv, int *i, struct rule *r, bool *prefix)
{
	const char *word = argv[*i];

	if ((*word >= '0' && *word <= '9') || strchr(word, ':')) {
		if (*prefix)
			return usage_error("policy", "prefix given twice");
		*prefix = true;
		return parse_prefix(word, r);
	}
	switch (parse_keyword(word, add_keywords, ARRAY_SIZE(add_keywords),
			      "policy add argument", "policy")) {
	case ADD_ANY:
		if (*prefix)
			return usage_error("policy", "prefix given twice");
		*prefix = true;
		return EXIT_OK;
	case ADD_PORT:
		if (r->port_min)
			return usage_error("policy", "port given twice");
		if (++*i == argc)
			return usage_error("policy", "port needs a value");
		return parse_ports(argv[*i], r);
	default:
		return EXIT_USAGE;
	}
}

static int parse_rule(int argc, char **argv, struct rule *r)
{
	bool prefix = false;
	int i, rc;

	if (!argc)
		return usage_error("policy", "policy add: include or exclude missing");
	i = parse_keyword(argv[0], actions, ARRAY_SIZE(actions), "policy action", "policy");
	if (i < 0)
		return EXIT_USAGE;
	r->action = NTBSMC_POLICY_INCLUDE + i;
	for (i = 1; i < argc; i++) {
		rc = parse_add_word(argc, argv, &i, r, &prefix);
		if (rc)
			return rc;
	}
	return EXIT_OK;
}

static int put_rule(struct nl_msg *msg, const struct rule *r)
{
	struct nlattr *nest = nla_nest_start(msg, NTBSMC_A_POLICY);

	if (!nest || (r->id && nla_put_u32(msg, NTBSMC_POLICY_ID, r->id) < 0) ||
	    (r->action && nla_put_u8(msg, NTBSMC_POLICY_ACTION, r->action) < 0))
		return -1;
	if (r->family && (nla_put_u8(msg, NTBSMC_POLICY_FAMILY, r->family) < 0 ||
			  nla_put(msg, NTBSMC_POLICY_ADDR, address_bits(r->family) / 8,
				  r->addr) < 0 ||
			  nla_put_u8(msg, NTBSMC_POLICY_PREFIXLEN, r->prefixlen) < 0))
		return -1;
	if (r->port_min && (nla_put_u16(msg, NTBSMC_POLICY_PORT_MIN, r->port_min) < 0 ||
			    nla_put_u16(msg, NTBSMC_POLICY_PORT_MAX, r->port_max) < 0))
		return -1;
	nla_nest_end(msg, nest);
	return 0;
}

/* A request carrying R as its NTBSMC_A_POLICY; NULL when out of memory. */
static struct nl_msg *rule_request(uint8_t cmd, const struct rule *r)
{
	struct nl_msg *msg = kern_request(cmd, false);

	if (msg && put_rule(msg, r) < 0) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

/* The module refuses a rule with a message of its own (uapi: NTBSMC_CMD_POLICY_ADD). */
static int policy_add(int argc, char **argv)
{
	struct rule r = { 0 };
	int rc;

	if (argc && is_help(argv[0])) {
		usage_policy(stdout);
		return EXIT_OK;
	}
	rc = parse_rule(argc, argv, &r);
	if (rc)
		return rc;
	rc = session_start();
	if (rc)
		return rc;
	return kern_run(rule_request(NTBSMC_CMD_POLICY_ADD, &r), NULL, NULL, "policy add", PRIV);
}

static int policy_del(int argc, char **argv)
{
	struct rule r = { 0 };
	unsigned long id;
	int rc;

	if (!argc)
		return usage_error("policy", "policy del: rule id missing");
	if (is_help(argv[0])) {
		usage_policy(stdout);
		return EXIT_OK;
	}
	if (!parse_decimal(argv[0], UINT32_MAX, &id) || !id)
		return usage_error("policy", "invalid rule id \"%s\"", argv[0]);
	if (argc > 1)
		return usage_error("policy", "unexpected argument \"%s\"", argv[1]);
	r.id = id;
	rc = session_start();
	if (rc)
		return rc;
	return kern_run(rule_request(NTBSMC_CMD_POLICY_DEL, &r), NULL, NULL, "policy del", PRIV);
}

static int policy_flush(int argc, char **argv)
{
	int rc;

	if (argc && is_help(argv[0])) {
		usage_policy(stdout);
		return EXIT_OK;
	}
	if (argc)
		return usage_error("policy", "unexpected argument \"%s\"", argv[0]);
	rc = session_start();
	if (rc)
		return rc;
	return kern_run(kern_request(NTBSMC_CMD_POLICY_FLUSH, false), NULL, NULL,
			"policy flush", PRIV);
}

/* ---- dispatch ---- */

enum { POLICY_SHOW, POLICY_ADD, POLICY_DEL, POLICY_FLUSH, POLICY_HELP };

static const struct keyword policy_commands[] = {
	[POLICY_SHOW]	= { "show", "list", true },
	[POLICY_ADD]	= { "add", NULL, false },
	[POLICY_DEL]	= { "del", "delete", false },
	[POLICY_FLUSH]	= { "flush", NULL, false },
	[POLICY_HELP]	= { "help", NULL, false },
};

int do_policy(int argc, char **argv)
{
	if (!argc)
		return policy_show(0, NULL);
	switch (parse_keyword(argv[0], policy_commands, ARRAY_SIZE(policy_commands),
			      "policy command", "policy")) {
	case POLICY_SHOW:
		return policy_show(argc - 1, argv + 1);
	case POLICY_ADD:
		return policy_add(argc - 1, argv + 1);
	case POLICY_DEL:
		return policy_del(argc - 1, argv + 1);
	case POLICY_FLUSH:
		return policy_flush(argc - 1, argv + 1);
	case POLICY_HELP:
		if (argc > 1)
			return usage_error("policy", "unexpected argument \"%s\"", argv[1]);
		usage_policy(stdout);
		return EXIT_OK;
	default:
		return EXIT_USAGE;
	}
}
