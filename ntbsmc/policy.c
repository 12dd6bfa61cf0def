// SPDX-License-Identifier: GPL-2.0
/* ntbsmc: the namespace's policy of which peers and ports are offered ntbsmc. */

#include <net/genetlink.h>
#include <net/ipv6.h>
#include "ntbsmc.h"

/*
 * A rule of a namespace's policy (uapi: enum ntbsmc_policy_attr). On the
 * namespace's list, which connects and server handshakes walk under RCU;
 * added, removed and freed (kfree_rcu) under policy_lock only, and the last
 * ones by the namespace's exit, when no socket of it is left.
 */
struct ntbsmc_rule {
	struct list_head node;		/* ntbsmc_net.policy */
	struct rcu_head rcu;
	u32 id;
	u8 action;			/* enum ntbsmc_policy_action */
	u8 family;			/* AF_INET, AF_INET6; 0: every address */
	u8 plen;			/* of @addr: an IPv4 prefix is mapped, 96 + its length */
	u16 port_min, port_max;		/* 0, 0: every port */
	struct in6_addr addr;
	atomic64_t hits;		/* connections it decided */
};

static DEFINE_MUTEX(policy_lock);

static bool rule_has_addr(const struct ntbsmc_rule *r, const struct in6_addr *peer)
{
	if (!r->family)
		return true;
	/* an IPv6 prefix (even ::/0) is not one of IPv4 peers */
	if (r->family == AF_INET6 && ipv6_addr_v4mapped(peer))
		return false;
	return ipv6_prefix_equal(peer, &r->addr, r->plen);
}

static bool rule_has_port(const struct ntbsmc_rule *r, u16 port)
{
	return !r->port_min || (port >= r->port_min && port <= r->port_max);
}

/*
 * Whether a connection to or from @peer (IPv4 as IPv4-mapped) on service port
 * @port is offered ntbsmc (uapi: the comment above NTBSMC_POLICY_MAX). The
 * rule that decided counts it. Any context.
 */
bool ntbsmc_policy_offers(struct net *net, const struct in6_addr *peer, u16 port)
{
	struct ntbsmc_net *nn = ntbsmc_net(net);
	struct ntbsmc_rule *r, *include = NULL;
	bool includes = false, offer = true;

	rcu_read_lock();
	list_for_each_entry_rcu(r, &nn->policy, node) {
		if (r->action == NTBSMC_POLICY_INCLUDE)
			includes = true;
		if (!rule_has_addr(r, peer) || !rule_has_port(r, port))
			continue;
		if (r->action == NTBSMC_POLICY_EXCLUDE) {
			atomic64_inc(&r->hits);
			offer = false;
			goto out;
		}
		include = include ?: r;
	}
	if (include)
		atomic64_inc(&include->hits);
	else if (includes)
		offer = false;
out:
	rcu_read_unlock();
	return offer;
}

/* The peer address and service port of a socket's connection: the server's view. */
bool ntbsmc_policy_offers_sk(const struct sock *sk)
{
	struct in6_addr peer;

#if IS_ENABLED(CONFIG_IPV6)
	if (sk->sk_family == AF_INET6)
		peer = sk->sk_v6_daddr;
	else
#endif
		ipv6_addr_set_v4mapped(inet_sk(sk)->inet_daddr, &peer);
	return ntbsmc_policy_offers(sock_net(sk), &peer, ntohs(inet_sk(sk)->inet_sport));
}

/* Two rules of one action that both match some connection. */
static bool rules_overlap(const struct ntbsmc_rule *a, const struct ntbsmc_rule *b)
{
	if (a->port_min && b->port_min &&
	    (a->port_max < b->port_min || b->port_max < a->port_min))
		return false;
	if (!a->family || !b->family)
		return true;
	return a->family == b->family &&
	       ipv6_prefix_equal(&a->addr, &b->addr, min(a->plen, b->plen));
}

static const struct nla_policy rule_nl_policy[NTBSMC_POLICY_ATTR_MAX + 1] = {
	[NTBSMC_POLICY_ID]		= { .type = NLA_U32 },
	[NTBSMC_POLICY_ACTION]		= NLA_POLICY_RANGE(NLA_U8, NTBSMC_POLICY_INCLUDE,
							   NTBSMC_POLICY_EXCLUDE),
	[NTBSMC_POLICY_FAMILY]		= { .type = NLA_U8 },
	[NTBSMC_POLICY_ADDR]		= { .type = NLA_BINARY, .len = sizeof(struct in6_addr) },
	[NTBSMC_POLICY_PREFIXLEN]	= { .type = NLA_U8 },
	[NTBSMC_POLICY_PORT_MIN]	= { .type = NLA_U16 },
	[NTBSMC_POLICY_PORT_MAX]	= { .type = NLA_U16 },
};

/* The nested rule of a request, checked against the same policy. */
static int rule_attrs(struct genl_info *info, struct nlattr **tb)
{
	if (!info->attrs[NTBSMC_A_POLICY]) {
		NL_SET_ERR_MSG(info->extack, "policy rule missing");
		return -EINVAL;
	}
	return nla_parse_nested(tb, NTBSMC_POLICY_ATTR_MAX, info->attrs[NTBSMC_A_POLICY],
				rule_nl_policy, info->extack);
}

/* A rule from userspace, validated where it enters. */
static int rule_parse(struct genl_info *info, struct ntbsmc_rule *r)
{
	struct nlattr *tb[NTBSMC_POLICY_ATTR_MAX + 1];
	struct netlink_ext_ack *extack = info->extack;
	struct in6_addr prefix;
	unsigned int len, max;
	int rc;

	rc = rule_attrs(info, tb);
	if (rc)
		return rc;
	if (!tb[NTBSMC_POLICY_ACTION]) {
		NL_SET_ERR_MSG(extack, "include or exclude missing");
		return -EINVAL;
	}
	r->action = nla_get_u8(tb[NTBSMC_POLICY_ACTION]);
	if (tb[NTBSMC_POLICY_FAMILY]) {
		r->family = nla_get_u8(tb[NTBSMC_POLICY_FAMILY]);
		if (r->family != AF_INET && r->family != AF_INET6) {
			NL_SET_ERR_MSG(extack, "family must be AF_INET or AF_INET6");
			return -EINVAL;
		}
		len = r->family == AF_INET ? 4 : 16;
		if (!tb[NTBSMC_POLICY_ADDR] || nla_len(tb[NTBSMC_POLICY_ADDR]) != len) {
			NL_SET_ERR_MSG(extack, "address missing or not of its family's length");
			return -EINVAL;
		}
		max = len * 8;
		r->plen = tb[NTBSMC_POLICY_PREFIXLEN] ?
			  nla_get_u8(tb[NTBSMC_POLICY_PREFIXLEN]) : max;
		if (r->plen > max) {
			NL_SET_ERR_MSG(extack, "prefix length beyond the address");
			return -EINVAL;
		}
		if (r->family == AF_INET) {
			ipv6_addr_set_v4mapped(nla_get_in_addr(tb[NTBSMC_POLICY_ADDR]), &r->addr);
			r->plen += 96;
		} else {
			r->addr = nla_get_in6_addr(tb[NTBSMC_POLICY_ADDR]);
		}
		ipv6_addr_prefix(&prefix, &r->addr, r->plen);
		if (!ipv6_addr_equal(&prefix, &r->addr)) {
			NL_SET_ERR_MSG(extack, "host bits set beyond the prefix length");
			return -EINVAL;
		}
		/* it would never match: IPv4 peers are matched by IPv4 rules */
		if (r->family == AF_INET6 && r->plen >= 96 && ipv6_addr_v4mapped(&r->addr)) {
			NL_SET_ERR_MSG(extack, "an IPv4-mapped prefix: give it as IPv4");
			return -EINVAL;
		}
	} else if (tb[NTBSMC_POLICY_ADDR] || tb[NTBSMC_POLICY_PREFIXLEN]) {
		NL_SET_ERR_MSG(extack, "an address needs its family");
		return -EINVAL;
	}
	if (tb[NTBSMC_POLICY_PORT_MIN]) {
		r->port_min = nla_get_u16(tb[NTBSMC_POLICY_PORT_MIN]);
		r->port_max = tb[NTBSMC_POLICY_PORT_MAX] ?
			      nla_get_u16(tb[NTBSMC_POLICY_PORT_MAX]) : r->port_min;
		if (!r->port_min || r->port_max < r->port_min) {
			NL_SET_ERR_MSG(extack, "port range must be 1-65535, low to high");
			return -EINVAL;
		}
	} else if (tb[NTBSMC_POLICY_PORT_MAX]) {
		NL_SET_ERR_MSG(extack, "port range without its low end");
		return -EINVAL;
	}
	return 0;
}

static int put_rule(struct sk_buff *skb, const struct ntbsmc_rule *r)
{
	struct nlattr *nest = nla_nest_start(skb, NTBSMC_A_POLICY);

	if (!nest)
		return -EMSGSIZE;
	if (nla_put_u32(skb, NTBSMC_POLICY_ID, r->id) ||
	    nla_put_u8(skb, NTBSMC_POLICY_ACTION, r->action) ||
	    nla_put_u64_64bit(skb, NTBSMC_POLICY_HITS, atomic64_read(&r->hits),
			      NTBSMC_POLICY_PAD))
		goto err;
	if (r->family == AF_INET &&
	    (nla_put_u8(skb, NTBSMC_POLICY_FAMILY, AF_INET) ||
	     nla_put_in_addr(skb, NTBSMC_POLICY_ADDR, r->addr.s6_addr32[3]) ||
	     nla_put_u8(skb, NTBSMC_POLICY_PREFIXLEN, r->plen - 96)))
		goto err;
	if (r->family == AF_INET6 &&
	    (nla_put_u8(skb, NTBSMC_POLICY_FAMILY, AF_INET6) ||
	     nla_put_in6_addr(skb, NTBSMC_POLICY_ADDR, &r->addr) ||
	     nla_put_u8(skb, NTBSMC_POLICY_PREFIXLEN, r->plen)))
		goto err;
	if (r->port_min &&
	    (nla_put_u16(skb, NTBSMC_POLICY_PORT_MIN, r->port_min) ||
	     nla_put_u16(skb, NTBSMC_POLICY_PORT_MAX, r->port_max)))
		goto err;
	nla_nest_end(skb, nest);
	return 0;
err:
	nla_nest_cancel(skb, nest);
	return -EMSGSIZE;
}

/* cb->args[0]: how many rules earlier parts of the dump carried. */
int ntbsmc_nl_policy_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct ntbsmc_net *nn = ntbsmc_net(sock_net(skb->sk));
	const struct ntbsmc_rule *r;
	long i = 0;
	void *hdr;

	mutex_lock(&policy_lock);
	list_for_each_entry(r, &nn->policy, node) {
		if (i++ < cb->args[0])
			continue;
		hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
				  &ntbsmc_genl, NLM_F_MULTI, NTBSMC_CMD_POLICY_GET);
		if (!hdr)
			break;
		if (put_rule(skb, r)) {
			genlmsg_cancel(skb, hdr);
			break;
		}
		genlmsg_end(skb, hdr);
		cb->args[0] = i;
	}
	mutex_unlock(&policy_lock);
	return skb->len;
}

int ntbsmc_nl_policy_add(struct sk_buff *skb, struct genl_info *info)
{
	struct ntbsmc_net *nn = ntbsmc_net(genl_info_net(info));
	struct ntbsmc_rule *r, *o;
	int rc;

	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	rc = rule_parse(info, r);
	if (rc)
		goto err;
	mutex_lock(&policy_lock);
	rc = -ENOSPC;
	if (nn->policy_rules >= NTBSMC_POLICY_MAX) {
		NL_SET_ERR_MSG(info->extack, "too many rules");
		goto err_unlock;
	}
	list_for_each_entry(o, &nn->policy, node) {
		if (o->action == r->action && rules_overlap(o, r)) {
			ntbsmc_err_fmt(info->extack, "overlaps a rule of the same action",
				       "overlaps rule %u", o->id);
			rc = -EEXIST;
			goto err_unlock;
		}
	}
	r->id = ++nn->policy_last_id;
	nn->policy_rules++;
	list_add_tail_rcu(&r->node, &nn->policy);
	mutex_unlock(&policy_lock);
	return 0;

err_unlock:
	mutex_unlock(&policy_lock);
err:
	kfree(r);
	return rc;
}

static void rule_del(struct ntbsmc_net *nn, struct ntbsmc_rule *r)
{
	lockdep_assert_held(&policy_lock);
	list_del_rcu(&r->node);
	nn->policy_rules--;
	kfree_rcu(r, rcu);	/* a connect may be walking past it */
}

int ntbsmc_nl_policy_del(struct sk_buff *skb, struct genl_info *info)
{
	struct ntbsmc_net *nn = ntbsmc_net(genl_info_net(info));
	struct nlattr *tb[NTBSMC_POLICY_ATTR_MAX + 1];
	struct ntbsmc_rule *r;
	int rc;
	u32 id;

	rc = rule_attrs(info, tb);
	if (rc)
		return rc;
	if (!tb[NTBSMC_POLICY_ID]) {
		NL_SET_ERR_MSG(info->extack, "rule id missing");
		return -EINVAL;
	}
	id = nla_get_u32(tb[NTBSMC_POLICY_ID]);
	rc = -ENOENT;
	mutex_lock(&policy_lock);
	list_for_each_entry(r, &nn->policy, node) {
		if (r->id == id) {
			rule_del(nn, r);
			rc = 0;
			break;
		}
	}
	mutex_unlock(&policy_lock);
	if (rc)
		ntbsmc_err_fmt(info->extack, "no such rule", "no rule %u", id);
	return rc;
}

void ntbsmc_policy_flush(struct net *net)
{
	struct ntbsmc_net *nn = ntbsmc_net(net);
	struct ntbsmc_rule *r, *tmp;

	mutex_lock(&policy_lock);
	list_for_each_entry_safe(r, tmp, &nn->policy, node)
		rule_del(nn, r);
	mutex_unlock(&policy_lock);
}

int ntbsmc_nl_policy_flush(struct sk_buff *skb, struct genl_info *info)
{
	ntbsmc_policy_flush(genl_info_net(info));
	return 0;
}
