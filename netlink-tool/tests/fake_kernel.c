// SPDX-License-Identifier: GPL-2.0
/* ntbsmc tool tests: a fake module answering through libnl's send/receive overrides. */

/*
 * Linked into tests/ntbsmc-fake only. The scenario comes from $NTBSMC_FAKE:
 *   normal      two devices (dump split over two reads), one link group, counters,
 *               six sockets (dump split over two reads; see conns[] below)
 *   empty       no devices, link groups or sockets, all counters zero
 *   nomodule    the generic netlink controller does not know "ntbsmc"
 *   eperm       changes fail with EPERM
 *   enodev      dev set fails with ENODEV and an extended ack message
 *   eopnotsupp  every ntbsmc command fails with EOPNOTSUPP
 *   missing     records without most attributes
 *   malformed   a device whose fabric id is 8 bytes, a socket whose address is 5
 *   dumperr     the device dump ends with -EIO and an extended ack message
 *   warn        dev set succeeds with an extended ack warning
 *   unknown     values this tool version does not know (state 7, reason 20; a socket
 *               in TCP state 13, mode 9, reason 20 declined for reason 21)
 * Each request is logged to $NTBSMC_FAKE_LOG (if set): "cmd=N flags=... attrs".
 *
 * The policy (NTBSMC_CMD_POLICY_*) works in every scenario as the module's does, on a
 * table kept in $NTBSMC_FAKE_POLICY (if set) from one run of the tool to the next; a
 * rule's hits are 10 times its id. "eperm" refuses its changes, "malformed" dumps one
 * rule with a 5-byte address.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include <linux/ntbsmc.h>

#define FAKE_FAMILY	0x42
#define MAX_READS	8

void fake_kernel_attach(struct nl_sock *sk);

/* Pending reads; each is one datagram of one or more messages. */
static struct {
	unsigned char *buf;
	size_t len;
} reads[MAX_READS];
static int nreads, next_read;
static const char *scenario = "normal";

static bool is(const char *s)
{
	return !strcmp(scenario, s);
}

static void new_read(void)
{
	if (nreads < MAX_READS)
		nreads++;
}

static void queue(struct nl_msg *msg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	size_t len = NLMSG_ALIGN(nlh->nlmsg_len);
	int r = nreads - 1;

	reads[r].buf = realloc(reads[r].buf, reads[r].len + len);
	memset(reads[r].buf + reads[r].len, 0, len);
	memcpy(reads[r].buf + reads[r].len, nlh, nlh->nlmsg_len);
	reads[r].len += len;
	nlmsg_free(msg);
}

static void put_extack(struct nl_msg *msg, const char *text)
{
	if (!text)
		return;
	nlmsg_hdr(msg)->nlmsg_flags |= NLM_F_ACK_TLVS;
	nla_put_string(msg, NLMSGERR_ATTR_MSG, text);
}

/* With TEXT, the whole request comes back (not NLM_F_CAPPED), like without NETLINK_CAP_ACK. */
static void queue_error(const struct nlmsghdr *req, int err, const char *text)
{
	struct nl_msg *msg = nlmsg_alloc_simple(NLMSG_ERROR, text ? 0 : NLM_F_CAPPED);
	struct nlmsgerr e = { .error = err, .msg = *req };

	nlmsg_hdr(msg)->nlmsg_seq = req->nlmsg_seq;
	nlmsg_hdr(msg)->nlmsg_pid = req->nlmsg_pid;
	nlmsg_append(msg, &e, sizeof(e), NLMSG_ALIGNTO);
	if (text)
		nlmsg_append(msg, (void *)NLMSG_DATA(req), req->nlmsg_len - NLMSG_HDRLEN,
			     NLMSG_ALIGNTO);
	put_extack(msg, text);
	queue(msg);
}

static void queue_done(const struct nlmsghdr *req, int err, const char *text)
{
	struct nl_msg *msg = nlmsg_alloc_simple(NLMSG_DONE, NLM_F_MULTI);

	nlmsg_hdr(msg)->nlmsg_seq = req->nlmsg_seq;
	nlmsg_hdr(msg)->nlmsg_pid = req->nlmsg_pid;
	nlmsg_append(msg, &err, sizeof(err), NLMSG_ALIGNTO);
	put_extack(msg, text);
	queue(msg);
}

static struct nl_msg *reply(const struct nlmsghdr *req, int family, int cmd, bool multi)
{
	struct nl_msg *msg = nlmsg_alloc();

	genlmsg_put(msg, req->nlmsg_pid, req->nlmsg_seq, family, 0, multi ? NLM_F_MULTI : 0,
		    cmd, 1);
	return msg;
}

static void id(unsigned char *out, unsigned char seed)
{
	int i;

	for (i = 0; i < 16; i++)
		out[i] = seed + 17 * i;
}

static void queue_dev(const struct nlmsghdr *req, const char *name, bool up)
{
	struct nl_msg *msg = reply(req, FAKE_FAMILY, NTBSMC_CMD_DEV_GET, true);
	struct nlattr *nest = nla_nest_start(msg, NTBSMC_A_DEV);
	unsigned char fabric[16], peer[16];

	id(fabric, 0x01);
	id(peer, 0xa0);
	nla_put_string(msg, NTBSMC_DEV_NAME, name);
	if (is("missing")) {
		nla_nest_end(msg, nest);
		queue(msg);
		return;
	}
	nla_put(msg, NTBSMC_DEV_FABRIC_ID, is("malformed") ? 8 : 16, fabric);
	nla_put_u8(msg, NTBSMC_DEV_STATE, is("unknown") ? 7 : up ? NTBSMC_DEV_STATE_ACTIVE :
		   NTBSMC_DEV_STATE_DOWN);
	nla_put_u8(msg, NTBSMC_DEV_ENABLED, up);
	nla_put_u64(msg, NTBSMC_DEV_NETNS_COOKIE, 4097);
	nla_put_u64(msg, NTBSMC_DEV_WINDOW_SIZE, 4 << 20);
	nla_put_u32(msg, NTBSMC_DEV_MW_COUNT, 2);
	nla_put_u32(msg, NTBSMC_DEV_DB_COUNT, 32);
	nla_put_u32(msg, NTBSMC_DEV_SPAD_COUNT, 16);
	nla_put_u32(msg, NTBSMC_DEV_RMB_SIZE, 1048576);
	nla_put_u32(msg, NTBSMC_DEV_RMB_COUNT, up ? 3 : 0);
	nla_put_u32(msg, NTBSMC_DEV_RMB_SPACE, 4128768);
	nla_put_u32(msg, NTBSMC_DEV_RMB_FREE, up ? 1015808 : 4128768);
	nla_put_u32(msg, NTBSMC_DEV_ORPHANS, up ? 1 : 0);
	nla_put_u32(msg, NTBSMC_DEV_HELD, 0);
	if (up) {
		nla_put(msg, NTBSMC_DEV_PEER_SYSID, 16, peer);
		nla_put_string(msg, NTBSMC_DEV_DMA_CHAN, "dma0chan0");
		nla_put_string(msg, NTBSMC_DEV_DMA_DEV, "0000:03:00.1");
		nla_put_u8(msg, NTBSMC_DEV_DMA_CHOICE, NTBSMC_DMA_CHOICE_SWITCH);
	}
	nla_nest_end(msg, nest);
	queue(msg);
}

static void dev_dump(const struct nlmsghdr *req)
{
	if (is("empty")) {
		queue_done(req, 0, NULL);
		return;
	}
	queue_dev(req, "ntb0", true);
	new_read();	/* the rest in a second read, like a dump that did not fit */
	queue_dev(req, "ntb1", false);
	if (is("dumperr"))
		queue_done(req, -EIO, "fake dump failure");
	else
		queue_done(req, 0, NULL);
}

static void lgr_dump(const struct nlmsghdr *req)
{
	struct nl_msg *msg;
	struct nlattr *nest;
	unsigned char peer[16];

	if (!is("empty")) {
		msg = reply(req, FAKE_FAMILY, NTBSMC_CMD_LGR_GET, true);
		nest = nla_nest_start(msg, NTBSMC_A_LGR);
		nla_put_u32(msg, NTBSMC_LGR_CONNS, 2);
		if (!is("missing")) {
			id(peer, 0xa0);
			nla_put_u32(msg, NTBSMC_LGR_ID, 3);
			nla_put_string(msg, NTBSMC_LGR_DEV, "ntb0");
			nla_put(msg, NTBSMC_LGR_PEER_SYSID, 16, peer);
			nla_put_u64(msg, NTBSMC_LGR_TX_BYTES, 1048576);
			nla_put_u64(msg, NTBSMC_LGR_RX_BYTES, 2097152);
			nla_put_u64(msg, NTBSMC_LGR_AGE_MS, 3723004);
			nla_put_u64(msg, NTBSMC_LGR_IDLE_MS, 0);
		}
		nla_nest_end(msg, nest);
		queue(msg);
	}
	queue_done(req, 0, NULL);
}

static void put_reasons(struct nl_msg *msg, int attr, const unsigned long *v, int n)
{
	struct nlattr *nest = nla_nest_start(msg, attr);
	int r;

	for (r = 0; r < n; r++)
		nla_put_u64(msg, r + 1, v[r]);
	nla_nest_end(msg, nest);
}

static void stats_get(const struct nlmsghdr *req)
{
	static const unsigned long client[] = { 0, 5, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
						0, 0, 0, 0, 0, 0, 9 };
	static const unsigned long server[__NTBSMC_REASON_MAX] = {
		[NTBSMC_REASON_DECLINED] = 1, [NTBSMC_REASON_POLICY] = 4,
	};
	static const unsigned long zero[__NTBSMC_REASON_MAX];
	struct nl_msg *msg = reply(req, FAKE_FAMILY, NTBSMC_CMD_STATS_GET, false);
	struct nlattr *nest = nla_nest_start(msg, NTBSMC_A_STATS);
	int s;

	if (is("missing")) {
		nla_put_u64(msg, NTBSMC_STATS_CONN_NTB, 7);
	} else {
		for (s = NTBSMC_STATS_CONN_NTB; s <= NTBSMC_STATS_DMA_BYTES; s++)
			nla_put_u64(msg, s, is("empty") ? 0 : 1000 * s);
		for (s = NTBSMC_STATS_ZC_BYTES; s <= NTBSMC_STATS_MAX; s++)
			nla_put_u64(msg, s, is("empty") ? 0 : 1000 * s);
		put_reasons(msg, NTBSMC_STATS_FB_CLIENT, is("empty") ? zero : client,
			    is("unknown") ? 21 : __NTBSMC_REASON_MAX);
		put_reasons(msg, NTBSMC_STATS_FB_SERVER, is("empty") ? zero : server,
			    __NTBSMC_REASON_MAX);
	}
	nla_nest_end(msg, nest);
	queue(msg);
	new_read();
	queue_error(req, 0, NULL);
}

/* The NTB side of a connection: only connections over NTB report it. */
struct fake_ntb {
	unsigned int lgr_id;
	const char *dev;
	unsigned int rmb, peer_rmb;
	unsigned long long tx_prod, tx_cons, rx_prod, rx_cons, tx, rx, cpu, dma;
	unsigned long long link_writes, link_write_bytes, link_reads, doorbells;
};

static const struct fake_ntb ntb_client = {
	3, "ntb0", 65536, 131072, 1048576, 1040384, 4096, 4096, 1048576, 4096, 786432, 262144,
	290, 1052672, 1, 37
};
static const struct fake_ntb ntb_server = {
	3, "ntb0", 131072, 65536, 4096, 4096, 1048576, 1040384, 4096, 1048576, 4096, 0,
	33, 5120, 0, 17
};

/* The sockets CONN_GET reports, one of each kind; tests/run.sh expects exactly these. */
static const struct fake_conn {
	int family, state, client;
	const char *laddr, *paddr;
	int lport, pport;
	unsigned int mode, reason, peer_reason, uid;
	unsigned long long inode;
	const struct fake_ntb *ntb;
	/* the handshake agreed a version (0: none), NTBSMC_INFO_F_*, moved to TCP at */
	unsigned int version, flags;
	unsigned long long switch_time;
} conns[] = {
	{ AF_INET, TCP_ESTABLISHED, 1, "10.0.0.1", "10.0.0.2", 40000, 5000, NTBSMC_MODE_NTB,
	  NTBSMC_REASON_NONE, NTBSMC_REASON_NONE, 1000, 40001, &ntb_client, 7,
	  NTBSMC_INFO_F_SWITCH, 0 },
	{ AF_INET6, TCP_ESTABLISHED, 0, "fd00::1", "fd00::2", 5000, 40001, NTBSMC_MODE_NTB,
	  NTBSMC_REASON_NONE, NTBSMC_REASON_NONE, 0, 40002, &ntb_server, 6, 0, 0 },
	{ AF_INET, TCP_ESTABLISHED, 1, "10.0.0.1", "10.0.0.3", 40002, 5001, NTBSMC_MODE_TCP,
	  NTBSMC_REASON_DECLINED, NTBSMC_REASON_NO_BUFFER, 1000, 40003, NULL, 0, 0, 0 },
	/* ran over NTB, moved to TCP when the link went, then the peer closed */
	{ AF_INET, TCP_CLOSE_WAIT, 0, "10.0.0.1", "192.168.1.7", 5000, 51234, NTBSMC_MODE_TCP,
	  NTBSMC_REASON_LINK_DOWN, NTBSMC_REASON_NONE, 0, 40004, NULL, 7,
	  NTBSMC_INFO_F_SWITCH | NTBSMC_INFO_F_FAILED_OVER, 1795780800123456789ULL },
	{ AF_INET6, TCP_LISTEN, 0, "::", "::", 5000, 0, NTBSMC_MODE_LISTEN, NTBSMC_REASON_NONE,
	  NTBSMC_REASON_NONE, 0, 40005, NULL, 0, 0, 0 },
	{ AF_INET, TCP_ESTABLISHED, 1, "10.0.0.1", "10.0.0.2", 40003, 5000,
	  NTBSMC_MODE_HANDSHAKE, NTBSMC_REASON_NONE, NTBSMC_REASON_NONE, 1000, 40006, NULL, 0, 0, 0 },
};

static void put_in_addr(struct nl_msg *msg, int type, int family, const char *text)
{
	unsigned char addr[16];

	inet_pton(family, text, addr);
	nla_put(msg, type, is("malformed") ? 5 : family == AF_INET ? 4 : 16, addr);
}

static void queue_conn(const struct nlmsghdr *req, const struct fake_conn *c)
{
	struct nl_msg *msg = reply(req, FAKE_FAMILY, NTBSMC_CMD_CONN_GET, true);
	struct nlattr *nest = nla_nest_start(msg, NTBSMC_A_CONN);
	bool unknown = is("unknown");

	nla_put_u8(msg, NTBSMC_CONN_FAMILY, c->family);
	nla_put_u32(msg, NTBSMC_CONN_MODE, unknown ? 9 : c->mode);
	if (is("missing")) {
		nla_nest_end(msg, nest);
		queue(msg);
		return;
	}
	nla_put_u8(msg, NTBSMC_CONN_STATE, unknown ? 13 : c->state);
	nla_put_u8(msg, NTBSMC_CONN_CLIENT, c->client);
	put_in_addr(msg, NTBSMC_CONN_LOCAL_ADDR, c->family, c->laddr);
	nla_put_u16(msg, NTBSMC_CONN_LOCAL_PORT, c->lport);
	put_in_addr(msg, NTBSMC_CONN_PEER_ADDR, c->family, c->paddr);
	nla_put_u16(msg, NTBSMC_CONN_PEER_PORT, c->pport);
	nla_put_u32(msg, NTBSMC_CONN_REASON, unknown ? 20 : c->reason);
	nla_put_u32(msg, NTBSMC_CONN_PEER_REASON, unknown ? 21 : c->peer_reason);
	nla_put_u32(msg, NTBSMC_CONN_UID, c->uid);
	nla_put_u64(msg, NTBSMC_CONN_INODE, c->inode);
	if (c->version) {
		nla_put_u32(msg, NTBSMC_CONN_VERSION, c->version);
		nla_put_u32(msg, NTBSMC_CONN_FLAGS, c->flags);
	}
	if (c->switch_time)
		nla_put_u64(msg, NTBSMC_CONN_SWITCH_TIME, c->switch_time);
	if (c->ntb) {
		nla_put_u32(msg, NTBSMC_CONN_LGR_ID, c->ntb->lgr_id);
		nla_put_string(msg, NTBSMC_CONN_DEV, c->ntb->dev);
		nla_put_u32(msg, NTBSMC_CONN_RMB_SIZE, c->ntb->rmb);
		nla_put_u32(msg, NTBSMC_CONN_PEER_RMB_SIZE, c->ntb->peer_rmb);
		nla_put_u64(msg, NTBSMC_CONN_TX_PROD, c->ntb->tx_prod);
		nla_put_u64(msg, NTBSMC_CONN_TX_CONS, c->ntb->tx_cons);
		nla_put_u64(msg, NTBSMC_CONN_RX_PROD, c->ntb->rx_prod);
		nla_put_u64(msg, NTBSMC_CONN_RX_CONS, c->ntb->rx_cons);
		nla_put_u64(msg, NTBSMC_CONN_TX_BYTES, c->ntb->tx);
		nla_put_u64(msg, NTBSMC_CONN_RX_BYTES, c->ntb->rx);
		nla_put_u64(msg, NTBSMC_CONN_CPU_BYTES, c->ntb->cpu);
		nla_put_u64(msg, NTBSMC_CONN_DMA_BYTES, c->ntb->dma);
		nla_put_u64(msg, NTBSMC_CONN_ZC_BYTES, c->ntb->dma / 2);
		nla_put_u64(msg, NTBSMC_CONN_LINK_WRITES, c->ntb->link_writes);
		nla_put_u64(msg, NTBSMC_CONN_LINK_WRITE_BYTES, c->ntb->link_write_bytes);
		nla_put_u64(msg, NTBSMC_CONN_LINK_READS, c->ntb->link_reads);
		nla_put_u64(msg, NTBSMC_CONN_DOORBELLS, c->ntb->doorbells);
	}
	nla_nest_end(msg, nest);
	queue(msg);
}

static void conn_dump(const struct nlmsghdr *req)
{
	size_t i, n = sizeof(conns) / sizeof(conns[0]);

	if (is("unknown") || is("missing"))
		n = 1;
	for (i = 0; i < n && !is("empty"); i++) {
		if (i == 3)
			new_read();	/* like a dump that did not fit one message */
		queue_conn(req, &conns[i]);
	}
	queue_done(req, 0, NULL);
}

/* ---- the policy ---- */

struct fake_rule {
	unsigned int id;
	unsigned char action, family, plen;	/* family 0: every address */
	unsigned char addr[16];
	unsigned short port_min, port_max;	/* 0, 0: every port */
};

/* The namespace's policy, kept in $NTBSMC_FAKE_POLICY as this struct's bytes. */
static struct {
	unsigned int last_id;			/* ids are never reused */
	unsigned int count;
	struct fake_rule rules[NTBSMC_POLICY_MAX];
} policy;

/* $NTBSMC_FAKE_POLICY opened in MODE, or NULL (no such file, or no policy kept). */
static FILE *policy_file(const char *mode)
{
	const char *path = getenv("NTBSMC_FAKE_POLICY");

	return path ? fopen(path, mode) : NULL;
}

static void policy_load(void)
{
	FILE *f = policy_file("rb");

	if (!f)
		return;
	if (fread(&policy, sizeof(policy), 1, f) != 1)
		memset(&policy, 0, sizeof(policy));
	fclose(f);
}

static void policy_save(void)
{
	FILE *f = policy_file("wb");

	if (!f)
		return;
	fwrite(&policy, sizeof(policy), 1, f);
	fclose(f);
}

static void queue_rule(const struct nlmsghdr *req, const struct fake_rule *r)
{
	struct nl_msg *msg = reply(req, FAKE_FAMILY, NTBSMC_CMD_POLICY_GET, true);
	struct nlattr *nest = nla_nest_start(msg, NTBSMC_A_POLICY);

	nla_put_u32(msg, NTBSMC_POLICY_ID, r->id);
	nla_put_u8(msg, NTBSMC_POLICY_ACTION, r->action);
	if (r->family) {
		nla_put_u8(msg, NTBSMC_POLICY_FAMILY, r->family);
		nla_put(msg, NTBSMC_POLICY_ADDR, is("malformed") ? 5 :
			r->family == AF_INET ? 4 : 16, r->addr);
		nla_put_u8(msg, NTBSMC_POLICY_PREFIXLEN, r->plen);
	}
	if (r->port_min) {
		nla_put_u16(msg, NTBSMC_POLICY_PORT_MIN, r->port_min);
		nla_put_u16(msg, NTBSMC_POLICY_PORT_MAX, r->port_max);
	}
	nla_put_u64(msg, NTBSMC_POLICY_HITS, 10ULL * r->id);
	nla_nest_end(msg, nest);
	queue(msg);
}

static void policy_dump(const struct nlmsghdr *req)
{
	static const struct fake_rule bad = {
		.id = 1, .action = NTBSMC_POLICY_INCLUDE, .family = AF_INET, .plen = 8,
	};
	unsigned int i;

	if (is("malformed"))
		queue_rule(req, &bad);
	else
		for (i = 0; i < policy.count; i++) {
			if (i == 2)
				new_read();	/* like a dump that did not fit one message */
			queue_rule(req, &policy.rules[i]);
		}
	queue_done(req, 0, NULL);
}

static bool addr_bit(const unsigned char *addr, unsigned int i)
{
	return addr[i / 8] >> (7 - i % 8) & 1;
}

/* As the module's rules_overlap(): both match some connection. */
static bool rules_overlap(const struct fake_rule *a, const struct fake_rule *b)
{
	unsigned int i, plen = a->plen < b->plen ? a->plen : b->plen;

	if (a->port_min && b->port_min &&
	    (a->port_max < b->port_min || b->port_max < a->port_min))
		return false;
	if (!a->family || !b->family)
		return true;
	if (a->family != b->family)
		return false;
	for (i = 0; i < plen; i++)
		if (addr_bit(a->addr, i) != addr_bit(b->addr, i))
			return false;
	return true;
}

/* The request's rule, checked as the module's rule_parse() does; NULL or a message. */
static const char *rule_parse(struct nlattr **a, struct fake_rule *r)
{
	unsigned int len, i;

	r->action = a[NTBSMC_POLICY_ACTION] ? nla_get_u8(a[NTBSMC_POLICY_ACTION]) : 0;
	if (r->action != NTBSMC_POLICY_INCLUDE && r->action != NTBSMC_POLICY_EXCLUDE)
		return "include or exclude missing";
	if (a[NTBSMC_POLICY_FAMILY]) {
		r->family = nla_get_u8(a[NTBSMC_POLICY_FAMILY]);
		if (r->family != AF_INET && r->family != AF_INET6)
			return "family must be AF_INET or AF_INET6";
		len = r->family == AF_INET ? 4 : 16;
		if (!a[NTBSMC_POLICY_ADDR] || nla_len(a[NTBSMC_POLICY_ADDR]) != (int)len)
			return "address missing or not of its family's length";
		memcpy(r->addr, nla_data(a[NTBSMC_POLICY_ADDR]), len);
		r->plen = a[NTBSMC_POLICY_PREFIXLEN] ? nla_get_u8(a[NTBSMC_POLICY_PREFIXLEN]) :
						       8 * len;
		if (r->plen > 8 * len)
			return "prefix length beyond the address";
		for (i = r->plen; i < 8 * len; i++)
			if (addr_bit(r->addr, i))
				return "host bits set beyond the prefix length";
		if (r->family == AF_INET6 && r->plen >= 96 &&
		    !memcmp(r->addr, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12))
			return "an IPv4-mapped prefix: give it as IPv4";
	} else if (a[NTBSMC_POLICY_ADDR] || a[NTBSMC_POLICY_PREFIXLEN]) {
		return "an address needs its family";
	}
	if (a[NTBSMC_POLICY_PORT_MIN]) {
		r->port_min = nla_get_u16(a[NTBSMC_POLICY_PORT_MIN]);
		r->port_max = a[NTBSMC_POLICY_PORT_MAX] ? nla_get_u16(a[NTBSMC_POLICY_PORT_MAX]) :
							  r->port_min;
		if (!r->port_min || r->port_max < r->port_min)
			return "port range must be 1-65535, low to high";
	} else if (a[NTBSMC_POLICY_PORT_MAX]) {
		return "port range without its low end";
	}
	return NULL;
}

static void policy_add(const struct nlmsghdr *req, struct nlattr **tb)
{
	struct fake_rule r = { 0 };
	const char *err = rule_parse(tb, &r);
	char text[32];
	unsigned int i;

	if (err) {
		queue_error(req, -EINVAL, err);
		return;
	}
	if (policy.count == NTBSMC_POLICY_MAX) {
		queue_error(req, -ENOSPC, "too many rules");
		return;
	}
	for (i = 0; i < policy.count; i++) {
		if (policy.rules[i].action == r.action && rules_overlap(&policy.rules[i], &r)) {
			snprintf(text, sizeof(text), "overlaps rule %u", policy.rules[i].id);
			queue_error(req, -EEXIST, text);
			return;
		}
	}
	r.id = ++policy.last_id;
	policy.rules[policy.count++] = r;
	policy_save();
	queue_error(req, 0, NULL);
}

static void policy_del(const struct nlmsghdr *req, struct nlattr **tb)
{
	unsigned int i, id;
	char text[32];

	if (!tb[NTBSMC_POLICY_ID]) {
		queue_error(req, -EINVAL, "rule id missing");
		return;
	}
	id = nla_get_u32(tb[NTBSMC_POLICY_ID]);
	for (i = 0; i < policy.count && policy.rules[i].id != id; i++)
		;
	if (i == policy.count) {
		snprintf(text, sizeof(text), "no rule %u", id);
		queue_error(req, -ENOENT, text);
		return;
	}
	memmove(&policy.rules[i], &policy.rules[i + 1],
		(policy.count - i - 1) * sizeof(policy.rules[0]));
	policy.count--;
	policy_save();
	queue_error(req, 0, NULL);
}

/* Changes of the policy; the rule comes nested in NTBSMC_A_POLICY. */
static void policy_change(const struct nlmsghdr *req, int cmd)
{
	struct nlattr *top[NTBSMC_A_MAX + 1], *tb[NTBSMC_POLICY_ATTR_MAX + 1];

	if (is("eperm")) {
		queue_error(req, -EPERM, NULL);
		return;
	}
	if (cmd == NTBSMC_CMD_POLICY_FLUSH) {
		policy.count = 0;
		policy_save();
		queue_error(req, 0, NULL);
		return;
	}
	if (genlmsg_parse((struct nlmsghdr *)req, 0, top, NTBSMC_A_MAX, NULL) < 0 ||
	    !top[NTBSMC_A_POLICY] ||
	    nla_parse_nested(tb, NTBSMC_POLICY_ATTR_MAX, top[NTBSMC_A_POLICY], NULL) < 0) {
		queue_error(req, -EINVAL, "policy rule missing");
		return;
	}
	if (cmd == NTBSMC_CMD_POLICY_ADD)
		policy_add(req, tb);
	else
		policy_del(req, tb);
}

/* " id=1 action=2 family=2 addr=10.0.0.0 prefixlen=8 port_min=22 port_max=22", as sent */
static void log_rule(FILE *f, struct nlattr *nest)
{
	static const char *const names[NTBSMC_POLICY_ATTR_MAX + 1] = {
		[NTBSMC_POLICY_ID] = "id", [NTBSMC_POLICY_ACTION] = "action",
		[NTBSMC_POLICY_FAMILY] = "family", [NTBSMC_POLICY_PREFIXLEN] = "prefixlen",
		[NTBSMC_POLICY_PORT_MIN] = "port_min", [NTBSMC_POLICY_PORT_MAX] = "port_max",
	};
	char addr[INET6_ADDRSTRLEN];
	struct nlattr *a;
	int rem;

	nla_for_each_nested(a, nest, rem) {
		int type = nla_type(a), len = nla_len(a);
		const char *name = type <= NTBSMC_POLICY_ATTR_MAX ? names[type] : NULL;

		if (type == NTBSMC_POLICY_ADDR)
			fprintf(f, " addr=%s", inet_ntop(len == 4 ? AF_INET : AF_INET6, nla_data(a),
							 addr, sizeof(addr)));
		else if (name)
			fprintf(f, " %s=%u", name, len == 1 ? nla_get_u8(a) :
				len == 2 ? nla_get_u16(a) : nla_get_u32(a));
		else
			fprintf(f, " attr%d", type);
	}
}

static void log_request(const struct nlmsghdr *nlh)
{
	const char *path = getenv("NTBSMC_FAKE_LOG");
	struct genlmsghdr *gh = nlmsg_data(nlh);
	struct nlattr *tb[NTBSMC_A_MAX + 1];
	FILE *f;

	if (!path || !(f = fopen(path, "a")))
		return;
	fprintf(f, "cmd=%d dump=%d", gh->cmd, !!(nlh->nlmsg_flags & NLM_F_DUMP));
	if (!genlmsg_parse((struct nlmsghdr *)nlh, 0, tb, NTBSMC_A_MAX, NULL)) {
		if (tb[NTBSMC_A_DEV_NAME])
			fprintf(f, " name=%s", nla_get_string(tb[NTBSMC_A_DEV_NAME]));
		if (tb[NTBSMC_A_DEV_ENABLED])
			fprintf(f, " enabled=%u", nla_get_u8(tb[NTBSMC_A_DEV_ENABLED]));
		if (tb[NTBSMC_A_DEV_NETNS_PID])
			fprintf(f, " pid=%u", nla_get_u32(tb[NTBSMC_A_DEV_NETNS_PID]));
		if (tb[NTBSMC_A_DEV_NETNS_FD])
			fprintf(f, " fd=%s", nla_get_u32(tb[NTBSMC_A_DEV_NETNS_FD]) > 2 ?
			       "open" : "bad");
		if (tb[NTBSMC_A_POLICY])
			log_rule(f, tb[NTBSMC_A_POLICY]);
	}
	fputc('\n', f);
	fclose(f);
}

static void ctrl_request(const struct nlmsghdr *req)
{
	struct nl_msg *msg;

	if (is("nomodule")) {
		queue_error(req, -ENOENT, NULL);
		return;
	}
	msg = reply(req, GENL_ID_CTRL, CTRL_CMD_NEWFAMILY, false);
	nla_put_string(msg, CTRL_ATTR_FAMILY_NAME, NTBSMC_GENL_NAME);
	nla_put_u16(msg, CTRL_ATTR_FAMILY_ID, FAKE_FAMILY);
	nla_put_u32(msg, CTRL_ATTR_VERSION, NTBSMC_GENL_VERSION);
	nla_put_u32(msg, CTRL_ATTR_HDRSIZE, 0);
	nla_put_u32(msg, CTRL_ATTR_MAXATTR, NTBSMC_A_MAX);
	queue(msg);
	if (req->nlmsg_flags & NLM_F_ACK) {
		new_read();
		queue_error(req, 0, NULL);
	}
}

static void ntbsmc_request(const struct nlmsghdr *req)
{
	struct genlmsghdr *gh = nlmsg_data(req);

	log_request(req);
	if (is("eopnotsupp")) {
		queue_error(req, -EOPNOTSUPP, NULL);
		return;
	}
	switch (gh->cmd) {
	case NTBSMC_CMD_DEV_GET:
		dev_dump(req);
		break;
	case NTBSMC_CMD_LGR_GET:
		lgr_dump(req);
		break;
	case NTBSMC_CMD_CONN_GET:
		conn_dump(req);
		break;
	case NTBSMC_CMD_STATS_GET:
		stats_get(req);
		break;
	case NTBSMC_CMD_POLICY_GET:
		policy_dump(req);
		break;
	case NTBSMC_CMD_POLICY_ADD:
	case NTBSMC_CMD_POLICY_DEL:
	case NTBSMC_CMD_POLICY_FLUSH:
		policy_change(req, gh->cmd);
		break;
	case NTBSMC_CMD_DEV_SET:
	case NTBSMC_CMD_STATS_RESET:
		if (is("eperm"))
			queue_error(req, -EPERM, NULL);
		else if (is("enodev") && gh->cmd == NTBSMC_CMD_DEV_SET)
			queue_error(req, -ENODEV, "no such NTB device in this network namespace");
		else if (is("warn"))
			queue_error(req, 0, "fake warning");
		else
			queue_error(req, 0, NULL);
		break;
	default:
		queue_error(req, -EOPNOTSUPP, NULL);
	}
}

static int fake_send(struct nl_sock *sk, struct nl_msg *msg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);

	(void)sk;
	new_read();
	if (nlh->nlmsg_type == GENL_ID_CTRL)
		ctrl_request(nlh);
	else if (nlh->nlmsg_type == FAKE_FAMILY)
		ntbsmc_request(nlh);
	else
		queue_error(nlh, -EINVAL, NULL);
	return nlh->nlmsg_len;
}

static int fake_recv(struct nl_sock *sk, struct sockaddr_nl *nla, unsigned char **buf,
		     struct ucred **creds)
{
	int len;

	(void)sk;
	(void)creds;
	if (next_read >= nreads)
		return -NLE_AGAIN;	/* the tool waits for a reply that never comes */
	memset(nla, 0, sizeof(*nla));
	nla->nl_family = AF_NETLINK;
	*buf = reads[next_read].buf;
	len = reads[next_read].len;
	reads[next_read].buf = NULL;
	next_read++;
	return len;
}

void fake_kernel_attach(struct nl_sock *sk)
{
	struct nl_cb *cb = nl_socket_get_cb(sk);

	if (getenv("NTBSMC_FAKE"))
		scenario = getenv("NTBSMC_FAKE");
	policy_load();
	nl_cb_overwrite_send(cb, fake_send);
	nl_cb_overwrite_recv(cb, fake_recv);
	nl_cb_put(cb);
}
