// SPDX-License-Identifier: GPL-2.0
/* ntbsmc tool: the "conn" object: the sockets that use the ntbsmc ULP, as a table like ss(8). */

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <linux/ntbsmc.h>

#include "tool.h"

/* The module's device names are at most 31 characters (see dev.c). */
#define DEV_NAME_MAX	31

static const struct nla_policy conn_policy[NTBSMC_CONN_MAX + 1] = {
	[NTBSMC_CONN_FAMILY]		= { .type = NLA_U8 },
	[NTBSMC_CONN_STATE]		= { .type = NLA_U8 },
	[NTBSMC_CONN_CLIENT]		= { .type = NLA_U8 },
	[NTBSMC_CONN_LOCAL_ADDR]	= { .minlen = 4, .maxlen = 16 },
	[NTBSMC_CONN_LOCAL_PORT]	= { .type = NLA_U16 },
	[NTBSMC_CONN_PEER_ADDR]		= { .minlen = 4, .maxlen = 16 },
	[NTBSMC_CONN_PEER_PORT]		= { .type = NLA_U16 },
	[NTBSMC_CONN_MODE]		= { .type = NLA_U32 },
	[NTBSMC_CONN_REASON]		= { .type = NLA_U32 },
	[NTBSMC_CONN_PEER_REASON]	= { .type = NLA_U32 },
	[NTBSMC_CONN_UID]		= { .type = NLA_U32 },
	[NTBSMC_CONN_INODE]		= { .type = NLA_U64 },
	[NTBSMC_CONN_LGR_ID]		= { .type = NLA_U32 },
	[NTBSMC_CONN_DEV]		= { .type = NLA_STRING, .minlen = 1 },
	[NTBSMC_CONN_RMB_SIZE]		= { .type = NLA_U32 },
	[NTBSMC_CONN_PEER_RMB_SIZE]	= { .type = NLA_U32 },
	[NTBSMC_CONN_TX_PROD]		= { .type = NLA_U64 },
	[NTBSMC_CONN_TX_CONS]		= { .type = NLA_U64 },
	[NTBSMC_CONN_RX_PROD]		= { .type = NLA_U64 },
	[NTBSMC_CONN_RX_CONS]		= { .type = NLA_U64 },
	[NTBSMC_CONN_TX_BYTES]		= { .type = NLA_U64 },
	[NTBSMC_CONN_RX_BYTES]		= { .type = NLA_U64 },
	[NTBSMC_CONN_CPU_BYTES]		= { .type = NLA_U64 },
	[NTBSMC_CONN_DMA_BYTES]		= { .type = NLA_U64 },
	[NTBSMC_CONN_ZC_BYTES]		= { .type = NLA_U64 },
	[NTBSMC_CONN_LINK_WRITES]	= { .type = NLA_U64 },
	[NTBSMC_CONN_LINK_WRITE_BYTES]	= { .type = NLA_U64 },
	[NTBSMC_CONN_LINK_READS]	= { .type = NLA_U64 },
	[NTBSMC_CONN_DOORBELLS]		= { .type = NLA_U64 },
	[NTBSMC_CONN_VERSION]		= { .type = NLA_U32 },
	[NTBSMC_CONN_FLAGS]		= { .type = NLA_U32 },
	[NTBSMC_CONN_SWITCH_TIME]	= { .type = NLA_U64 },
};

/* Text columns, in output order. */
enum {
	COL_STATE, COL_LOCAL, COL_PEER, COL_MODE, COL_REASON, COL_LGR, COL_UID, COL_INODE,
	NR_COLS
};

static const char *const col_titles[NR_COLS] = {
	[COL_STATE]	= "State",
	[COL_LOCAL]	= "Local Address:Port",
	[COL_PEER]	= "Peer Address:Port",
	[COL_MODE]	= "Mode",
	[COL_REASON]	= "Reason",
	[COL_LGR]	= "LGR",
	[COL_UID]	= "UID",
	[COL_INODE]	= "Inode",
};

/* Widest cell: "[" IPv6 "]:" port, and a declined reason with the peer's. */
#define CELL_MAX	64

/* A socket that passed the filters, kept until the columns' widths are known. */
struct conn {
	struct nlattr *nest;			/* copy of its NTBSMC_A_CONN */
	struct nlattr *a[NTBSMC_CONN_MAX + 1];	/* parsed, pointing into NEST */
	char cell[NR_COLS][CELL_MAX];		/* the text columns */
};

struct conn_filter {
	bool all;		/* -a: listeners and unconnected sockets too */
	int family;		/* AF_INET, AF_INET6, or -1 for any; likewise below */
	int mode;
	int port;		/* either end */
	int lport;
	int dport;
	int64_t lgr;
	const char *dev;
};

struct conn_show {
	struct conn_filter f;
	struct conn *conns;
	size_t count, alloc;
};

void usage_conn(FILE *f)
{
	fprintf(f,
		"Usage: ntbsmc conn show [ -a | --all ] [ -d | --details ] [ -4 | -6 ] [ FILTER ]...\n"
		"where  FILTER := { mode { ntb | tcp | handshake | listen } | port PORT |\n"
		"                   lport PORT | dport PORT | lgr ID | dev DEV |\n"
		"                   family { inet | inet6 } }\n");
}

/* ---- filters ---- */

enum { F_MODE, F_PORT, F_LPORT, F_DPORT, F_LGR, F_DEV, F_FAMILY };

static const struct keyword filter_keywords[] = {
	[F_MODE]	= { "mode", NULL, false },
	[F_PORT]	= { "port", NULL, false },
	[F_LPORT]	= { "lport", "sport", false },
	[F_DPORT]	= { "dport", NULL, false },
	[F_LGR]		= { "lgr", "linkgroup", false },
	[F_DEV]		= { "dev", "device", false },
	[F_FAMILY]	= { "family", NULL, false },
};

static const struct keyword mode_keywords[] = {
	[NTBSMC_MODE_HANDSHAKE]	= { "handshake", NULL, false },
	[NTBSMC_MODE_NTB]	= { "ntb", NULL, false },
	[NTBSMC_MODE_TCP]	= { "tcp", NULL, false },
	[NTBSMC_MODE_LISTEN]	= { "listen", NULL, false },
};

enum { FAM_INET, FAM_INET6 };

static const struct keyword family_keywords[] = {
	[FAM_INET]	= { "inet", "ipv4", false },
	[FAM_INET6]	= { "inet6", "ipv6", false },
};

/* Decimal 0..65535: a listener's peer port is 0. */
static int parse_port(const char *s)
{
	unsigned long v;

	return parse_decimal(s, 65535, &v) ? (int)v : -1;
}

static int set_once(int *field, int value, const char *name)
{
	if (*field >= 0)
		return usage_error("conn", "%s given twice", name);
	*field = value;
	return EXIT_OK;
}

/* The value of filter KW. */
static int parse_filter_value(int kw, const char *value, struct conn_filter *f)
{
	unsigned long id;
	char *end;
	int v;

	switch (kw) {
	case F_MODE:
		v = parse_keyword(value, mode_keywords, ARRAY_SIZE(mode_keywords), "mode", "conn");
		return v < 0 ? EXIT_USAGE : set_once(&f->mode, v, "mode");
	case F_FAMILY:
		v = parse_keyword(value, family_keywords, ARRAY_SIZE(family_keywords), "family",
				  "conn");
		if (v < 0)
			return EXIT_USAGE;
		return set_once(&f->family, v == FAM_INET ? AF_INET : AF_INET6, "family");
	case F_PORT:
	case F_LPORT:
	case F_DPORT:
		v = parse_port(value);
		if (v < 0)
			return usage_error("conn", "invalid port \"%s\" (0 to 65535)", value);
		return set_once(kw == F_PORT ? &f->port : kw == F_LPORT ? &f->lport : &f->dport, v,
				filter_keywords[kw].name);
	case F_LGR:
		errno = 0;
		id = strtoul(value, &end, 0);
		if (*value < '0' || *value > '9' || *end || errno || !id || id > UINT32_MAX)
			return usage_error("conn", "invalid link group id \"%s\"", value);
		if (f->lgr >= 0)
			return usage_error("conn", "lgr given twice");
		f->lgr = id;
		return EXIT_OK;
	default:	/* F_DEV */
		if (!*value || strlen(value) > DEV_NAME_MAX)
			return usage_error("conn", "invalid device name \"%s\" (at most %d)", value,
					   DEV_NAME_MAX);
		if (f->dev)
			return usage_error("conn", "dev given twice");
		f->dev = value;
		return EXIT_OK;
	}
}

static int parse_filter(int argc, char **argv, struct conn_filter *f)
{
	const char *word;
	int i, kw, rc;

	for (i = 0; i < argc; i++) {
		word = argv[i];
		if (!strcmp(word, "-a") || !strcmp(word, "--all")) {
			f->all = true;
			continue;
		}
		if (!strcmp(word, "-d") || !strcmp(word, "--details")) {
			show_details = true;
			continue;
		}
		if (!strcmp(word, "-4") || !strcmp(word, "-6")) {
			rc = set_once(&f->family, word[1] == '4' ? AF_INET : AF_INET6, "family");
			if (rc)
				return rc;
			continue;
		}
		if (*word == '-')
			return usage_error("conn", "unknown option \"%s\"", word);

		kw = parse_keyword(word, filter_keywords, ARRAY_SIZE(filter_keywords),
				   "conn show filter", "conn");
		if (kw < 0)
			return EXIT_USAGE;
		if (++i == argc)
			return usage_error("conn", "%s needs a value", filter_keywords[kw].name);
		rc = parse_filter_value(kw, argv[i], f);
		if (rc)
			return rc;
	}
	return EXIT_OK;
}

static bool match_u32(const struct nlattr *a, int64_t want)
{
	return want < 0 || (a && nla_get_u32(a) == want);
}

static bool match_u16(const struct nlattr *a, int want)
{
	return want < 0 || (a && nla_get_u16(a) == want);
}

/* Like ss: without -a only connected sockets, unless the filter asks for listeners. */
static bool conn_hidden(struct nlattr **a, const struct conn_filter *f)
{
	unsigned int state;

	if (f->all || f->mode == NTBSMC_MODE_LISTEN)
		return false;
	if (a[NTBSMC_CONN_MODE] && nla_get_u32(a[NTBSMC_CONN_MODE]) == NTBSMC_MODE_LISTEN)
		return true;
	if (!a[NTBSMC_CONN_STATE])
		return false;
	state = nla_get_u8(a[NTBSMC_CONN_STATE]);
	return state == TCP_LISTEN || state == TCP_CLOSE;
}

static bool conn_match(struct nlattr **a, const struct conn_filter *f)
{
	if (conn_hidden(a, f))
		return false;
	if (f->family >= 0 &&
	    (!a[NTBSMC_CONN_FAMILY] || nla_get_u8(a[NTBSMC_CONN_FAMILY]) != f->family))
		return false;
	if (f->port >= 0 && !match_u16(a[NTBSMC_CONN_LOCAL_PORT], f->port) &&
	    !match_u16(a[NTBSMC_CONN_PEER_PORT], f->port))
		return false;
	if (f->dev && (!a[NTBSMC_CONN_DEV] || strcmp(nla_get_string(a[NTBSMC_CONN_DEV]), f->dev)))
		return false;
	return match_u32(a[NTBSMC_CONN_MODE], f->mode) &&
	       match_u16(a[NTBSMC_CONN_LOCAL_PORT], f->lport) &&
	       match_u16(a[NTBSMC_CONN_PEER_PORT], f->dport) &&
	       match_u32(a[NTBSMC_CONN_LGR_ID], f->lgr);
}

/* ---- text cells ---- */

/*
 * An address as ss prints it: "10.0.0.1:5000", "[fd00::1]:5000", port 0 as "*".
 * ADDR (4 or 16 bytes, checked by conn_valid()) may be absent, like the port.
 */
static void format_endpoint(char *buf, const struct nlattr *addr, const struct nlattr *port)
{
	char host[INET6_ADDRSTRLEN] = "-", num[8] = "-";
	bool v6 = addr && nla_len(addr) == 16;

	if (addr)
		inet_ntop(v6 ? AF_INET6 : AF_INET, nla_data(addr), host, sizeof(host));
	if (port && nla_get_u16(port))
		snprintf(num, sizeof(num), "%u", nla_get_u16(port));
	else if (port)
		snprintf(num, sizeof(num), "*");
	snprintf(buf, CELL_MAX, v6 ? "[%s]:%s" : "%s:%s", host, num);
}

/* Only a connection that fell back has a reason: "peer_no_offer", "declined: no_buffer". */
static void format_reason(char *buf, struct nlattr **a)
{
	char b1[32], b2[32];
	unsigned int reason;

	if (!a[NTBSMC_CONN_MODE] || nla_get_u32(a[NTBSMC_CONN_MODE]) != NTBSMC_MODE_TCP ||
	    !a[NTBSMC_CONN_REASON]) {
		snprintf(buf, CELL_MAX, "-");
		return;
	}
	reason = nla_get_u32(a[NTBSMC_CONN_REASON]);
	if (reason == NTBSMC_REASON_DECLINED && a[NTBSMC_CONN_PEER_REASON])
		snprintf(buf, CELL_MAX, "%s: %s", reason_name(reason, b1, sizeof(b1)),
			 reason_name(nla_get_u32(a[NTBSMC_CONN_PEER_REASON]), b2, sizeof(b2)));
	else
		snprintf(buf, CELL_MAX, "%s", reason_name(reason, b1, sizeof(b1)));
}

static void format_u64(char *buf, const struct nlattr *a, bool is_u64)
{
	if (!a)
		snprintf(buf, CELL_MAX, "-");
	else
		snprintf(buf, CELL_MAX, "%" PRIu64, is_u64 ? nla_get_u64(a) : nla_get_u32(a));
}

static void conn_format(struct conn *c)
{
	struct nlattr **a = c->a;
	char buf[32];

	snprintf(c->cell[COL_STATE], CELL_MAX, "%s", !a[NTBSMC_CONN_STATE] ? "-" :
		 tcp_state_name(nla_get_u8(a[NTBSMC_CONN_STATE]), buf, sizeof(buf)));
	format_endpoint(c->cell[COL_LOCAL], a[NTBSMC_CONN_LOCAL_ADDR], a[NTBSMC_CONN_LOCAL_PORT]);
	format_endpoint(c->cell[COL_PEER], a[NTBSMC_CONN_PEER_ADDR], a[NTBSMC_CONN_PEER_PORT]);
	snprintf(c->cell[COL_MODE], CELL_MAX, "%s", !a[NTBSMC_CONN_MODE] ? "-" :
		 mode_name(nla_get_u32(a[NTBSMC_CONN_MODE]), buf, sizeof(buf)));
	format_reason(c->cell[COL_REASON], a);
	format_u64(c->cell[COL_LGR], a[NTBSMC_CONN_LGR_ID], false);
	format_u64(c->cell[COL_UID], a[NTBSMC_CONN_UID], false);
	format_u64(c->cell[COL_INODE], a[NTBSMC_CONN_INODE], true);
}

/* ---- collecting the dump ---- */

/* Addresses must fit the family: a record that does not is the module's bug, not ours. */
static bool conn_valid(struct nlattr **a)
{
	int types[] = { NTBSMC_CONN_LOCAL_ADDR, NTBSMC_CONN_PEER_ADDR };
	int family = a[NTBSMC_CONN_FAMILY] ? nla_get_u8(a[NTBSMC_CONN_FAMILY]) : -1;
	int i;

	for (i = 0; i < ARRAY_SIZE(types); i++) {
		const struct nlattr *addr = a[types[i]];

		if (!addr)
			continue;
		if (nla_len(addr) != 4 && nla_len(addr) != 16)
			return false;
		if ((family == AF_INET && nla_len(addr) != 4) ||
		    (family == AF_INET6 && nla_len(addr) != 16))
			return false;
	}
	return true;
}

static int conn_collect(struct nlattr **tb, void *arg)
{
	struct nlattr *a[NTBSMC_CONN_MAX + 1];
	struct conn_show *cs = arg;
	struct conn *c, *grown;
	size_t len;

	if (!tb[NTBSMC_A_CONN])
		return EXIT_OK;
	if (nla_parse_nested(a, NTBSMC_CONN_MAX, tb[NTBSMC_A_CONN], conn_policy) < 0 ||
	    !conn_valid(a))
		return kern_malformed("connection record");
	if (!conn_match(a, &cs->f))
		return EXIT_OK;

	if (cs->count == cs->alloc) {
		cs->alloc = cs->alloc ? 2 * cs->alloc : 16;
		grown = realloc(cs->conns, cs->alloc * sizeof(*grown));
		if (!grown)
			return fail(EXIT_ERROR, "out of memory");
		cs->conns = grown;
	}
	c = &cs->conns[cs->count];
	memset(c, 0, sizeof(*c));
	len = tb[NTBSMC_A_CONN]->nla_len;
	c->nest = malloc(len);
	if (!c->nest)
		return fail(EXIT_ERROR, "out of memory");
	memcpy(c->nest, tb[NTBSMC_A_CONN], len);
	cs->count++;
	/* Parsed again, now in the copy the record keeps; it parsed above. */
	nla_parse_nested(c->a, NTBSMC_CONN_MAX, c->nest, conn_policy);
	conn_format(c);
	return EXIT_OK;
}

/* ---- output ---- */

static void print_addr(const char *key, const struct nlattr *addr)
{
	char host[INET6_ADDRSTRLEN];

	if (!addr) {
		print_null(PRINT_JSON, key, NULL);
		return;
	}
	inet_ntop(nla_len(addr) == 16 ? AF_INET6 : AF_INET, nla_data(addr), host, sizeof(host));
	print_string(PRINT_JSON, key, NULL, host);
}

static void print_port(const char *key, const struct nlattr *a)
{
	if (a)
		print_u64(PRINT_JSON, key, NULL, nla_get_u16(a));
	else
		print_null(PRINT_JSON, key, NULL);
}

static void print_enum(const char *key, const struct nlattr *a,
		       const char *(*name)(unsigned int, char *, size_t))
{
	char buf[32];

	if (a)
		print_string(PRINT_JSON, key, NULL, name(nla_get_u32(a), buf, sizeof(buf)));
	else
		print_null(PRINT_JSON, key, NULL);
}

static void print_family(const struct nlattr *a)
{
	char buf[16];
	int family;

	if (!a) {
		print_null(PRINT_JSON, "family", NULL);
		return;
	}
	family = nla_get_u8(a);
	if (family == AF_INET || family == AF_INET6)
		snprintf(buf, sizeof(buf), "%s", family == AF_INET ? "inet" : "inet6");
	else
		snprintf(buf, sizeof(buf), "af_%d", family);
	print_string(PRINT_JSON, "family", NULL, buf);
}

static bool conn_flag(struct nlattr *const *a, uint32_t flag)
{
	return a[NTBSMC_CONN_FLAGS] && (nla_get_u32(a[NTBSMC_CONN_FLAGS]) & flag);
}

/*
 * The protocol version and the move to TCP: JSON "version", "can_switch" and
 * "failed_over" (null unless a handshake agreed a version) and "switch_time"
 * (ns since the epoch, null if it did not move); the details line " version 7",
 * " failed_over 2026-11-27T10:00:00.123Z" (UTC).
 */
static void print_switch(struct nlattr *const *a)
{
	const struct nlattr *when = a[NTBSMC_CONN_SWITCH_TIME];
	enum print_type t = show_details ? PRINT_ANY : PRINT_JSON;
	char buf[40] = "-";
	struct tm tm;
	uint64_t ns;
	time_t sec;

	print_attr_u32(a[NTBSMC_CONN_VERSION] ? t : PRINT_JSON, "version", " version %s",
		       a[NTBSMC_CONN_VERSION]);
	if (a[NTBSMC_CONN_FLAGS]) {
		print_bool(PRINT_JSON, "can_switch", NULL, conn_flag(a, NTBSMC_INFO_F_SWITCH));
		print_bool(PRINT_JSON, "failed_over", NULL,
			   conn_flag(a, NTBSMC_INFO_F_FAILED_OVER));
	} else {
		print_null(PRINT_JSON, "can_switch", NULL);
		print_null(PRINT_JSON, "failed_over", NULL);
	}
	if (!when) {
		print_null(PRINT_JSON, "switch_time", NULL);
		return;
	}
	ns = nla_get_u64(when);
	print_u64(PRINT_JSON, "switch_time", NULL, ns);
	sec = ns / 1000000000;
	if (gmtime_r(&sec, &tm) && strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm))
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), ".%03uZ",
			 (unsigned int)(ns % 1000000000 / 1000000));
	if (show_details)
		print_string(PRINT_FP, NULL, " failed_over %s", buf);
}

/* Text: a cell padded to its column, "  " between columns, none after the last. */
static void cell_fmt(char *fmt, size_t size, int col, const int *width)
{
	if (col == NR_COLS - 1)
		snprintf(fmt, size, "%%s\n");
	else
		snprintf(fmt, size, "%%-%ds  ", width[col]);
}

/*
 * JSON has every key in every object (null when the module did not send it); text
 * has the columns, and with -d a second line with the role and the NTB side.
 */
static void conn_print(const struct conn *c, const int *width)
{
	struct nlattr *const *a = c->a;
	char fmt[NR_COLS][16];
	enum print_type t;
	bool ntb;
	int col;

	for (col = 0; col < NR_COLS; col++)
		cell_fmt(fmt[col], sizeof(fmt[col]), col, width);
	ntb = a[NTBSMC_CONN_LGR_ID] || a[NTBSMC_CONN_DEV];
	t = show_details && ntb ? PRINT_ANY : PRINT_JSON;

	print_open_object(NULL);
	print_family(a[NTBSMC_CONN_FAMILY]);
	print_string(PRINT_ANY, "state", fmt[COL_STATE],
		     a[NTBSMC_CONN_STATE] ? c->cell[COL_STATE] : NULL);
	print_attr_bool(PRINT_JSON, "client", NULL, a[NTBSMC_CONN_CLIENT]);
	print_addr("local_addr", a[NTBSMC_CONN_LOCAL_ADDR]);
	print_port("local_port", a[NTBSMC_CONN_LOCAL_PORT]);
	print_string(PRINT_FP, NULL, fmt[COL_LOCAL], c->cell[COL_LOCAL]);
	print_addr("peer_addr", a[NTBSMC_CONN_PEER_ADDR]);
	print_port("peer_port", a[NTBSMC_CONN_PEER_PORT]);
	print_string(PRINT_FP, NULL, fmt[COL_PEER], c->cell[COL_PEER]);
	print_string(PRINT_ANY, "mode", fmt[COL_MODE],
		     a[NTBSMC_CONN_MODE] ? c->cell[COL_MODE] : NULL);
	print_enum("reason", a[NTBSMC_CONN_REASON], reason_name);
	print_enum("peer_reason", a[NTBSMC_CONN_PEER_REASON], reason_name);
	print_string(PRINT_FP, NULL, fmt[COL_REASON], c->cell[COL_REASON]);
	print_attr_u32(PRINT_ANY, "lgr_id", fmt[COL_LGR], a[NTBSMC_CONN_LGR_ID]);
	print_attr_u32(PRINT_ANY, "uid", fmt[COL_UID], a[NTBSMC_CONN_UID]);
	print_attr_u64(PRINT_ANY, "inode", fmt[COL_INODE], a[NTBSMC_CONN_INODE]);

	if (show_details && a[NTBSMC_CONN_CLIENT])
		print_fp("\t%s", nla_get_u8(a[NTBSMC_CONN_CLIENT]) ? "client" : "server");
	else if (show_details)
		print_fp("\t-");
	print_switch(a);
	print_attr_string(t, "dev", " dev %s", a[NTBSMC_CONN_DEV]);
	print_attr_u32(t, "rmb_size", " rmb %s", a[NTBSMC_CONN_RMB_SIZE]);
	print_attr_u32(t, "peer_rmb_size", " peer_rmb %s", a[NTBSMC_CONN_PEER_RMB_SIZE]);
	print_attr_u64(t, "tx_prod", " tx_prod %s", a[NTBSMC_CONN_TX_PROD]);
	print_attr_u64(t, "tx_cons", " tx_cons %s", a[NTBSMC_CONN_TX_CONS]);
	print_attr_u64(t, "rx_prod", " rx_prod %s", a[NTBSMC_CONN_RX_PROD]);
	print_attr_u64(t, "rx_cons", " rx_cons %s", a[NTBSMC_CONN_RX_CONS]);
	print_attr_u64(t, "tx_bytes", " tx_bytes %s", a[NTBSMC_CONN_TX_BYTES]);
	print_attr_u64(t, "rx_bytes", " rx_bytes %s", a[NTBSMC_CONN_RX_BYTES]);
	print_attr_u64(t, "cpu_bytes", " cpu_bytes %s", a[NTBSMC_CONN_CPU_BYTES]);
	print_attr_u64(t, "dma_bytes", " dma_bytes %s", a[NTBSMC_CONN_DMA_BYTES]);
	print_attr_u64(t, "zc_bytes", " zc_bytes %s", a[NTBSMC_CONN_ZC_BYTES]);
	print_attr_u64(t, "link_writes", " link_writes %s", a[NTBSMC_CONN_LINK_WRITES]);
	print_attr_u64(t, "link_write_bytes", " link_write_bytes %s",
		       a[NTBSMC_CONN_LINK_WRITE_BYTES]);
	print_attr_u64(t, "link_reads", " link_reads %s", a[NTBSMC_CONN_LINK_READS]);
	print_attr_u64(t, "doorbells", " doorbells %s", a[NTBSMC_CONN_DOORBELLS]);
	if (show_details)
		print_fp("\n");
	print_close_object();
}

static void conn_print_all(const struct conn_show *cs)
{
	int width[NR_COLS], col, len;
	char fmt[16];
	size_t i;

	for (col = 0; col < NR_COLS; col++) {
		width[col] = strlen(col_titles[col]);
		for (i = 0; i < cs->count; i++) {
			len = strlen(cs->conns[i].cell[col]);
			if (len > width[col])
				width[col] = len;
		}
	}
	for (col = 0; col < NR_COLS; col++) {
		cell_fmt(fmt, sizeof(fmt), col, width);
		print_fp(fmt, col_titles[col]);
	}
	print_open_array(NULL);
	for (i = 0; i < cs->count; i++)
		conn_print(&cs->conns[i], width);
	print_close_array();
}

static int conn_show(int argc, char **argv)
{
	struct conn_show cs = {
		.f = { .family = -1, .mode = -1, .port = -1, .lport = -1, .dport = -1,
		       .lgr = -1 },
	};
	size_t i;
	int rc;

	if (argc && is_help(argv[0])) {
		usage_conn(stdout);
		return EXIT_OK;
	}
	rc = parse_filter(argc, argv, &cs.f);
	if (rc)
		return rc;

	rc = session_start();
	if (rc)
		return rc;
	rc = kern_run(kern_request(NTBSMC_CMD_CONN_GET, true), conn_collect, &cs, "conn show",
		      NULL);
	if (!rc)
		conn_print_all(&cs);
	for (i = 0; i < cs.count; i++)
		free(cs.conns[i].nest);
	free(cs.conns);
	return rc;
}

enum { CONN_SHOW, CONN_HELP };

static const struct keyword conn_commands[] = {
	[CONN_SHOW]	= { "show", "list", true },
	[CONN_HELP]	= { "help", NULL, false },
};

int do_conn(int argc, char **argv)
{
	if (!argc)
		return conn_show(0, NULL);
	/* "ntbsmc conn -a" is "ntbsmc conn show -a", like "ss -a". */
	if (*argv[0] == '-' && !is_help(argv[0]))
		return conn_show(argc, argv);
	switch (parse_keyword(argv[0], conn_commands, ARRAY_SIZE(conn_commands),
			      "conn command", "conn")) {
	case CONN_SHOW:
		return conn_show(argc - 1, argv + 1);
	case CONN_HELP:
		if (argc > 1)
			return usage_error("conn", "unexpected argument \"%s\"", argv[1]);
		usage_conn(stdout);
		return EXIT_OK;
	default:
		return EXIT_USAGE;
	}
}
