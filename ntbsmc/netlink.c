// SPDX-License-Identifier: GPL-2.0
/* ntbsmc: generic netlink interface: devices, link groups, statistics. */

#include <net/genetlink.h>
#include <net/net_namespace.h>
#include <net/inet_sock.h>
#include <linux/proc_ns.h>
#include "ntbsmc.h"

static const struct nla_policy ntbsmc_policy[NTBSMC_A_MAX + 1] = {
	[NTBSMC_A_DEV_NAME]		= { .type = NLA_NUL_STRING, .len = 31 },
	[NTBSMC_A_DEV_ENABLED]		= NLA_POLICY_MAX(NLA_U8, 1),
	[NTBSMC_A_DEV_NETNS_PID]	= { .type = NLA_U32 },
	[NTBSMC_A_DEV_NETNS_FD]		= { .type = NLA_U32 },
	[NTBSMC_A_POLICY]		= { .type = NLA_NESTED },	/* policy.c checks it */
};


static u64 jiffies_ms_since(unsigned long then)
{
	return jiffies_to_msecs(jiffies - then);
}

static int put_dev(struct sk_buff *skb, struct ntbsmc_dev *dev)
{
	struct ntb_dev *ntb = dev->ntb;
	struct nlattr *nest;
	unsigned int units, free_units, rmbs;
	struct ntbsmc_dma_info dma;
	bool chan;

	chan = ntbsmc_dma_chan_info(dev, &dma);
	spin_lock_irq(&dev->slot_lock);
	units = dev->nslots;
	free_units = dev->free_units;
	rmbs = dev->rmbs;
	spin_unlock_irq(&dev->slot_lock);
	nest = nla_nest_start(skb, NTBSMC_A_DEV);
	if (!nest)
		return -EMSGSIZE;
	if (nla_put_string(skb, NTBSMC_DEV_NAME, dev->name) ||
	    nla_put(skb, NTBSMC_DEV_FABRIC_ID, NTBSMC_ID_LEN, dev->fabric_id) ||
	    nla_put_u8(skb, NTBSMC_DEV_STATE, READ_ONCE(dev->state)) ||
	    nla_put_u8(skb, NTBSMC_DEV_ENABLED, READ_ONCE(dev->enabled)) ||
	    nla_put_u64_64bit(skb, NTBSMC_DEV_NETNS_COOKIE, dev->net->net_cookie,
			      NTBSMC_DEV_PAD) ||
	    nla_put_u64_64bit(skb, NTBSMC_DEV_WINDOW_SIZE, dev->win_size, NTBSMC_DEV_PAD) ||
	    nla_put_u32(skb, NTBSMC_DEV_MW_COUNT, ntb_mw_count(ntb, NTB_DEF_PEER_IDX)) ||
	    nla_put_u32(skb, NTBSMC_DEV_DB_COUNT, hweight64(ntb_db_valid_mask(ntb))) ||
	    nla_put_u32(skb, NTBSMC_DEV_SPAD_COUNT, ntb_spad_count(ntb)) ||
	    nla_put_u32(skb, NTBSMC_DEV_RMB_SIZE,
			(u32)READ_ONCE(ntbsmc_net(dev->net)->rmb_kb) << 10) ||
	    nla_put_u32(skb, NTBSMC_DEV_RMB_COUNT, rmbs) ||
	    nla_put_u32(skb, NTBSMC_DEV_RMB_SPACE, units * NTBSMC_RMB_UNIT) ||
	    nla_put_u32(skb, NTBSMC_DEV_RMB_FREE, free_units * NTBSMC_RMB_UNIT) ||
	    nla_put_u32(skb, NTBSMC_DEV_ORPHANS, atomic_read(&dev->orphans)) ||
	    nla_put_u32(skb, NTBSMC_DEV_HELD, atomic_read(&dev->held)) ||
	    (dev->state != NTBSMC_DEV_DOWN &&
	     nla_put(skb, NTBSMC_DEV_PEER_SYSID, NTBSMC_ID_LEN, dev->peer_sysid)) ||
	    (chan && (nla_put_string(skb, NTBSMC_DEV_DMA_CHAN, dma.chan) ||
		      nla_put_string(skb, NTBSMC_DEV_DMA_DEV, dma.dev) ||
		      nla_put_u8(skb, NTBSMC_DEV_DMA_CHOICE, dma.choice)))) {
		nla_nest_cancel(skb, nest);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	return 0;
}

static int put_lgr(struct sk_buff *skb, struct ntbsmc_dev *dev)
{
	struct nlattr *nest;
	u32 conns = atomic_read(&dev->lgr_conns);

	nest = nla_nest_start(skb, NTBSMC_A_LGR);
	if (!nest)
		return -EMSGSIZE;
	if (nla_put_u32(skb, NTBSMC_LGR_ID, dev->lgr_id) ||
	    nla_put_string(skb, NTBSMC_LGR_DEV, dev->name) ||
	    nla_put(skb, NTBSMC_LGR_PEER_SYSID, NTBSMC_ID_LEN, dev->peer_sysid) ||
	    nla_put_u32(skb, NTBSMC_LGR_CONNS, conns) ||
	    nla_put_u64_64bit(skb, NTBSMC_LGR_TX_BYTES, atomic64_read(&dev->lgr_tx_bytes),
			      NTBSMC_LGR_PAD) ||
	    nla_put_u64_64bit(skb, NTBSMC_LGR_RX_BYTES, atomic64_read(&dev->lgr_rx_bytes),
			      NTBSMC_LGR_PAD) ||
	    nla_put_u64_64bit(skb, NTBSMC_LGR_AGE_MS, jiffies_ms_since(dev->lgr_created),
			      NTBSMC_LGR_PAD) ||
	    nla_put_u64_64bit(skb, NTBSMC_LGR_IDLE_MS,
			      conns ? 0 : jiffies_ms_since(dev->lgr_idle_since),
			      NTBSMC_LGR_PAD)) {
		nla_nest_cancel(skb, nest);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	return 0;
}

/*
 * Dumps devices (or link groups) of the caller's namespace, one message each.
 * cb->args[0] counts the ones already sent.
 */
static int dump_devs(struct sk_buff *skb, struct netlink_callback *cb, u8 cmd,
		     int (*put)(struct sk_buff *, struct ntbsmc_dev *))
{
	struct net *net = sock_net(skb->sk);
	struct ntbsmc_dev *dev;
	long i = 0, skip = cb->args[0];
	void *hdr;

	mutex_lock(&ntbsmc_devs_lock);
	list_for_each_entry(dev, &ntbsmc_devs, list) {
		if (!net_eq(dev->net, net))
			continue;
		if (cmd == NTBSMC_CMD_LGR_GET && !dev->lgr_id)
			continue;
		if (i++ < skip)
			continue;
		hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
				  &ntbsmc_genl, NLM_F_MULTI, cmd);
		if (!hdr || put(skb, dev)) {
			if (hdr)
				genlmsg_cancel(skb, hdr);
			i--;
			break;
		}
		genlmsg_end(skb, hdr);
	}
	mutex_unlock(&ntbsmc_devs_lock);
	cb->args[0] = i;
	return skb->len;
}

static int put_addr(struct sk_buff *skb, int type, const struct sock *sk, bool local)
{
	const struct inet_sock *inet = inet_sk(sk);

#if IS_ENABLED(CONFIG_IPV6)
	if (sk->sk_family == AF_INET6)
		return nla_put_in6_addr(skb, type, local ? &sk->sk_v6_rcv_saddr :
							   &sk->sk_v6_daddr);
#endif
	return nla_put_in_addr(skb, type, local ? inet->inet_rcv_saddr : inet->inet_daddr);
}

/*
 * The NTB side of a connection; it stays allocated while the caller holds
 * ntbsmc_socks_lock (see ctx_take_conn()).
 */
static int put_conn_ntb(struct sk_buff *skb, const struct ntbsmc_conn *conn)
{
	if (nla_put_u32(skb, NTBSMC_CONN_LGR_ID, conn->dev->lgr_id) ||
	    nla_put_string(skb, NTBSMC_CONN_DEV, conn->dev->name) ||
	    nla_put_u32(skb, NTBSMC_CONN_RMB_SIZE, conn->rmb_size) ||
	    nla_put_u32(skb, NTBSMC_CONN_PEER_RMB_SIZE, conn->peer_rmb_size) ||
	    nla_put_u64_64bit(skb, NTBSMC_CONN_TX_PROD, READ_ONCE(conn->tx_prod),
			      NTBSMC_CONN_PAD) ||
	    nla_put_u64_64bit(skb, NTBSMC_CONN_TX_CONS, READ_ONCE(conn->peer_cons),
			      NTBSMC_CONN_PAD) ||
	    nla_put_u64_64bit(skb, NTBSMC_CONN_RX_PROD, READ_ONCE(conn->peer_prod),
			      NTBSMC_CONN_PAD) ||
	    nla_put_u64_64bit(skb, NTBSMC_CONN_RX_CONS, READ_ONCE(conn->rx_cons),
			      NTBSMC_CONN_PAD) ||
	    nla_put_u64_64bit(skb, NTBSMC_CONN_TX_BYTES, READ_ONCE(conn->tx_bytes),
			      NTBSMC_CONN_PAD) ||
	    nla_put_u64_64bit(skb, NTBSMC_CONN_RX_BYTES, READ_ONCE(conn->rx_bytes),
			      NTBSMC_CONN_PAD) ||
	    nla_put_u64_64bit(skb, NTBSMC_CONN_CPU_BYTES, READ_ONCE(conn->cpu_bytes),
			      NTBSMC_CONN_PAD) ||
	    nla_put_u64_64bit(skb, NTBSMC_CONN_DMA_BYTES, READ_ONCE(conn->dma_bytes),
			      NTBSMC_CONN_PAD) ||
	    nla_put_u64_64bit(skb, NTBSMC_CONN_ZC_BYTES, READ_ONCE(conn->zc_bytes),
			      NTBSMC_CONN_PAD) ||
	    nla_put_u64_64bit(skb, NTBSMC_CONN_LINK_WRITES, atomic64_read(&conn->link_writes),
			      NTBSMC_CONN_PAD) ||
	    nla_put_u64_64bit(skb, NTBSMC_CONN_LINK_WRITE_BYTES,
			      atomic64_read(&conn->link_write_bytes), NTBSMC_CONN_PAD) ||
	    nla_put_u64_64bit(skb, NTBSMC_CONN_LINK_READS, atomic64_read(&conn->link_reads),
			      NTBSMC_CONN_PAD) ||
	    nla_put_u64_64bit(skb, NTBSMC_CONN_DOORBELLS, atomic64_read(&conn->doorbells),
			      NTBSMC_CONN_PAD))
		return -EMSGSIZE;
	return 0;
}

/* A connection's protocol version and whether it moved to TCP, in any mode. */
static int put_conn_switch(struct sk_buff *skb, struct ntbsmc_sock *ctx,
			   struct ntbsmc_conn *conn)
{
	u64 when = READ_ONCE(ctx->sw_time);

	if (nla_put_u32(skb, NTBSMC_CONN_VERSION, conn->version) ||
	    nla_put_u32(skb, NTBSMC_CONN_FLAGS, ntbsmc_info_flags(ctx, conn)))
		return -EMSGSIZE;
	if (when && nla_put_u64_64bit(skb, NTBSMC_CONN_SWITCH_TIME, when, NTBSMC_CONN_PAD))
		return -EMSGSIZE;
	return 0;
}

static int put_conn(struct sk_buff *skb, struct user_namespace *uns,
		    struct ntbsmc_sock *ctx)
{
	struct sock *sk = ctx->sk;
	u8 state = READ_ONCE(sk->sk_state);
	struct ntbsmc_conn *conn = rcu_dereference_check(ctx->conn,
							 lockdep_is_held(&ntbsmc_socks_lock));
	u32 mode = state == TCP_LISTEN ? NTBSMC_MODE_LISTEN : READ_ONCE(ctx->mode);
	struct nlattr *nest;

	nest = nla_nest_start(skb, NTBSMC_A_CONN);
	if (!nest)
		return -EMSGSIZE;
	if (nla_put_u8(skb, NTBSMC_CONN_FAMILY, sk->sk_family) ||
	    nla_put_u8(skb, NTBSMC_CONN_STATE, state) ||
	    nla_put_u8(skb, NTBSMC_CONN_CLIENT, ctx->client) ||
	    put_addr(skb, NTBSMC_CONN_LOCAL_ADDR, sk, true) ||
	    nla_put_u16(skb, NTBSMC_CONN_LOCAL_PORT, ntohs(inet_sk(sk)->inet_sport)) ||
	    put_addr(skb, NTBSMC_CONN_PEER_ADDR, sk, false) ||
	    nla_put_u16(skb, NTBSMC_CONN_PEER_PORT, ntohs(inet_sk(sk)->inet_dport)) ||
	    nla_put_u32(skb, NTBSMC_CONN_MODE, mode) ||
	    nla_put_u32(skb, NTBSMC_CONN_REASON, READ_ONCE(ctx->reason)) ||
	    nla_put_u32(skb, NTBSMC_CONN_PEER_REASON, READ_ONCE(ctx->peer_reason)) ||
	    nla_put_u32(skb, NTBSMC_CONN_UID, from_kuid_munged(uns, sock_i_uid(sk))) ||
	    nla_put_u64_64bit(skb, NTBSMC_CONN_INODE, sock_i_ino(sk), NTBSMC_CONN_PAD) ||
	    (conn && put_conn_switch(skb, ctx, conn)) ||
	    (mode == NTBSMC_MODE_NTB && conn && put_conn_ntb(skb, conn))) {
		nla_nest_cancel(skb, nest);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	return 0;
}

/*
 * Dumps the ULP's sockets of the caller's namespace: no privilege needed, but
 * without CAP_NET_ADMIN over the namespace only the caller's own sockets (its
 * uid). cb->args[0] counts the ones already sent.
 */
static int ntbsmc_nl_conn_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct user_namespace *uns = sk_user_ns(NETLINK_CB(cb->skb).sk);
	struct net *net = sock_net(skb->sk);
	bool all = netlink_net_capable(cb->skb, CAP_NET_ADMIN);
	kuid_t uid = NETLINK_CB(cb->skb).creds.uid;
	long i = 0, skip = cb->args[0];
	struct ntbsmc_sock *ctx;
	void *hdr;

	spin_lock_bh(&ntbsmc_socks_lock);
	list_for_each_entry(ctx, &ntbsmc_socks, node) {
		if (!net_eq(sock_net(ctx->sk), net))
			continue;
		if (!all && !uid_eq(sock_i_uid(ctx->sk), uid))
			continue;
		if (i++ < skip)
			continue;
		hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
				  &ntbsmc_genl, NLM_F_MULTI, NTBSMC_CMD_CONN_GET);
		if (!hdr || put_conn(skb, uns, ctx)) {
			if (hdr)
				genlmsg_cancel(skb, hdr);
			i--;
			break;
		}
		genlmsg_end(skb, hdr);
	}
	spin_unlock_bh(&ntbsmc_socks_lock);
	cb->args[0] = i;
	return skb->len;
}

static int ntbsmc_nl_dev_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	return dump_devs(skb, cb, NTBSMC_CMD_DEV_GET, put_dev);
}

static int ntbsmc_nl_lgr_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	return dump_devs(skb, cb, NTBSMC_CMD_LGR_GET, put_lgr);
}

static struct net *target_netns(struct genl_info *info)
{
	if (info->attrs[NTBSMC_A_DEV_NETNS_PID])
		return get_net_ns_by_pid(nla_get_u32(info->attrs[NTBSMC_A_DEV_NETNS_PID]));
	if (info->attrs[NTBSMC_A_DEV_NETNS_FD])
		return get_net_ns_by_fd(nla_get_u32(info->attrs[NTBSMC_A_DEV_NETNS_FD]));
	return NULL;
}

static int ntbsmc_nl_dev_set(struct sk_buff *skb, struct genl_info *info)
{
	struct net *net = genl_info_net(info), *to = NULL;
	int rc;

	if (!info->attrs[NTBSMC_A_DEV_NAME]) {
		NL_SET_ERR_MSG(info->extack, "device name missing");
		return -EINVAL;
	}
	if (info->attrs[NTBSMC_A_DEV_NETNS_PID] || info->attrs[NTBSMC_A_DEV_NETNS_FD]) {
		to = target_netns(info);
		if (IS_ERR(to)) {
			NL_SET_ERR_MSG(info->extack, "no such network namespace");
			return PTR_ERR(to);
		}
		/* Like moving a netdev: administer both namespaces. */
		if (!netlink_ns_capable(skb, to->user_ns, CAP_NET_ADMIN)) {
			put_net(to);
			return -EPERM;
		}
	}
	rc = ntbsmc_dev_set(net, nla_data(info->attrs[NTBSMC_A_DEV_NAME]),
			    info->attrs[NTBSMC_A_DEV_ENABLED] ?
			    nla_get_u8(info->attrs[NTBSMC_A_DEV_ENABLED]) : -1,
			    to, info->extack);
	if (to)
		put_net(to);
	return rc;
}

static int put_reasons(struct sk_buff *skb, int attr, atomic64_t *c)
{
	struct nlattr *nest = nla_nest_start(skb, attr);
	int r;

	if (!nest)
		return -EMSGSIZE;
	for (r = 0; r < __NTBSMC_REASON_MAX; r++)
		if (nla_put_u64_64bit(skb, r + 1, atomic64_read(&c[r]), 0))
			return -EMSGSIZE;
	nla_nest_end(skb, nest);
	return 0;
}

/* The scalar counters: attribute of each enum ntbsmc_stat */
static const u16 stat_attrs[] = {
	[NTBSMC_STAT_CONN_NTB]		= NTBSMC_STATS_CONN_NTB,
	[NTBSMC_STAT_CONN_TCP]		= NTBSMC_STATS_CONN_TCP,
	[NTBSMC_STAT_HS_ERR]		= NTBSMC_STATS_HS_ERR,
	[NTBSMC_STAT_TX_BYTES]		= NTBSMC_STATS_TX_BYTES,
	[NTBSMC_STAT_RX_BYTES]		= NTBSMC_STATS_RX_BYTES,
	[NTBSMC_STAT_DB_TX]		= NTBSMC_STATS_DB_TX,
	[NTBSMC_STAT_DB_RX]		= NTBSMC_STATS_DB_RX,
	[NTBSMC_STAT_DB_SUPPRESSED]	= NTBSMC_STATS_DB_SUPPRESSED,
	[NTBSMC_STAT_BUF_FULL]		= NTBSMC_STATS_BUF_FULL,
	[NTBSMC_STAT_ABORT]		= NTBSMC_STATS_ABORT,
	[NTBSMC_STAT_CPU_BYTES]		= NTBSMC_STATS_CPU_BYTES,
	[NTBSMC_STAT_DMA_BYTES]		= NTBSMC_STATS_DMA_BYTES,
	[NTBSMC_STAT_ZC_BYTES]		= NTBSMC_STATS_ZC_BYTES,
	[NTBSMC_STAT_DMA_FAILED]	= NTBSMC_STATS_DMA_FAILED,
	[NTBSMC_STAT_NOTIFY_LOST]	= NTBSMC_STATS_NOTIFY_LOST,
	[NTBSMC_STAT_ORPHAN_RESET]	= NTBSMC_STATS_ORPHAN_RESET,
	[NTBSMC_STAT_HS_PEAK]		= NTBSMC_STATS_HS_PEAK,
	[NTBSMC_STAT_HS_CONGESTED]	= NTBSMC_STATS_HS_CONGESTED,
	[NTBSMC_STAT_NO_MIRROR]		= NTBSMC_STATS_NO_MIRROR,
	[NTBSMC_STAT_SWITCH_TCP]	= NTBSMC_STATS_SWITCH_TCP,
	[NTBSMC_STAT_SWITCH_RESENT]	= NTBSMC_STATS_SWITCH_RESENT,
	[NTBSMC_STAT_SWITCH_FAILED]	= NTBSMC_STATS_SWITCH_FAILED,
	[NTBSMC_STAT_PW_SMALL]		= NTBSMC_STATS_LINK_WRITES_SMALL,
	[NTBSMC_STAT_PW_MEDIUM]		= NTBSMC_STATS_LINK_WRITES_MEDIUM,
	[NTBSMC_STAT_PW_LARGE]		= NTBSMC_STATS_LINK_WRITES_LARGE,
	[NTBSMC_STAT_PW_BYTES]		= NTBSMC_STATS_LINK_WRITE_BYTES,
	[NTBSMC_STAT_LINK_READS]	= NTBSMC_STATS_LINK_READS,
	[NTBSMC_STAT_IRQ]		= NTBSMC_STATS_IRQ,
};

static_assert(ARRAY_SIZE(stat_attrs) == NTBSMC_STAT_FB_CLIENT);

static int ntbsmc_nl_stats_get(struct sk_buff *skb, struct genl_info *info)
{
	struct ntbsmc_net *nn = ntbsmc_net(genl_info_net(info));
	struct nlattr *nest;
	struct sk_buff *msg;
	void *hdr;
	int s;

	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, &ntbsmc_genl, 0, NTBSMC_CMD_STATS_GET);
	if (!hdr)
		goto err;
	nest = nla_nest_start(msg, NTBSMC_A_STATS);
	if (!nest)
		goto err;
	for (s = 0; s < ARRAY_SIZE(stat_attrs); s++)
		if (nla_put_u64_64bit(msg, stat_attrs[s], atomic64_read(&nn->stats[s]),
				      NTBSMC_STATS_PAD))
			goto err;
	if (nla_put_u64_64bit(msg, NTBSMC_STATS_LINK_WRITES,
			      atomic64_read(&nn->stats[NTBSMC_STAT_PW_SMALL]) +
			      atomic64_read(&nn->stats[NTBSMC_STAT_PW_MEDIUM]) +
			      atomic64_read(&nn->stats[NTBSMC_STAT_PW_LARGE]), NTBSMC_STATS_PAD))
		goto err;
	if (put_reasons(msg, NTBSMC_STATS_FB_CLIENT, &nn->stats[NTBSMC_STAT_FB_CLIENT]) ||
	    put_reasons(msg, NTBSMC_STATS_FB_SERVER, &nn->stats[NTBSMC_STAT_FB_SERVER]))
		goto err;
	nla_nest_end(msg, nest);
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);
err:
	nlmsg_free(msg);
	return -EMSGSIZE;
}

static int ntbsmc_nl_stats_reset(struct sk_buff *skb, struct genl_info *info)
{
	struct ntbsmc_net *nn = ntbsmc_net(genl_info_net(info));
	int s;

	for (s = 0; s < __NTBSMC_STAT_MAX; s++)
		atomic64_set(&nn->stats[s], 0);
	return 0;
}

static const struct genl_small_ops ntbsmc_genl_ops[] = {
	{
		.cmd	= NTBSMC_CMD_DEV_GET,
		.dumpit	= ntbsmc_nl_dev_dump,
	},
	{
		.cmd	= NTBSMC_CMD_DEV_SET,
		.doit	= ntbsmc_nl_dev_set,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= NTBSMC_CMD_LGR_GET,
		.dumpit	= ntbsmc_nl_lgr_dump,
	},
	{
		.cmd	= NTBSMC_CMD_CONN_GET,
		.dumpit	= ntbsmc_nl_conn_dump,
	},
	{
		.cmd	= NTBSMC_CMD_STATS_GET,
		.doit	= ntbsmc_nl_stats_get,
	},
	{
		.cmd	= NTBSMC_CMD_STATS_RESET,
		.doit	= ntbsmc_nl_stats_reset,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= NTBSMC_CMD_POLICY_GET,
		.dumpit	= ntbsmc_nl_policy_dump,
	},
	{
		.cmd	= NTBSMC_CMD_POLICY_ADD,
		.doit	= ntbsmc_nl_policy_add,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= NTBSMC_CMD_POLICY_DEL,
		.doit	= ntbsmc_nl_policy_del,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= NTBSMC_CMD_POLICY_FLUSH,
		.doit	= ntbsmc_nl_policy_flush,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
};

struct genl_family ntbsmc_genl __ro_after_init = {
	.name		= NTBSMC_GENL_NAME,
	.version	= NTBSMC_GENL_VERSION,
	.maxattr	= NTBSMC_A_MAX,
	.policy		= ntbsmc_policy,
	.netnsok	= true,
	.module		= THIS_MODULE,
	.small_ops	= ntbsmc_genl_ops,
	.n_small_ops	= ARRAY_SIZE(ntbsmc_genl_ops),
	.resv_start_op	= NTBSMC_CMD_MAX + 1,
};

int ntbsmc_netlink_init(void)
{
	return genl_register_family(&ntbsmc_genl);
}

void ntbsmc_netlink_exit(void)
{
	genl_unregister_family(&ntbsmc_genl);
}
