// SPDX-License-Identifier: GPL-2.0
/* ntbsmc: socket(AF_INET or AF_INET6, SOCK_STREAM, IPPROTO_NTBSMC), a TCP socket with the ULP set. */

#include <linux/module.h>
#include <linux/net.h>
#include <net/inet_common.h>
#include <net/protocol.h>
#include <net/tcp.h>
#if IS_ENABLED(CONFIG_IPV6)
#include <net/ipv6.h>
#endif
#include "ntbsmc.h"

/*
 * One table per family: TCP's, with its own init and this module as owner.
 * It is a socket's creator only from sk_alloc() to the end of its init: then
 * the socket is TCP's in every respect (sk_prot, sk_protocol, the creator
 * that frees it), with the ntbsmc ULP set, and the module reference sk_alloc()
 * took for this table is the ULP's, which tcp_cleanup_ulp() puts. So a
 * socket holds the module as one that set the ULP by setsockopt() does: the
 * module does not unload while it exists, and nothing of it is left once it
 * is freed (its TIME_WAIT socket included).
 */
struct ntbsmc_inet {
	struct proto prot;
	struct inet_protosw sw;
	struct proto *base;		/* TCP's table, which the socket gets */
	bool registered;
};

static struct ntbsmc_inet ntbsmc_inet4, ntbsmc_inet6;

static int ntbsmc_inet_init_sk(struct sock *sk)
{
	const struct ntbsmc_inet *in = sk->sk_family == AF_INET6 ? &ntbsmc_inet6 : &ntbsmc_inet4;
	int rc;

	rc = in->base->init(sk);
	if (rc)
		return rc;
	WRITE_ONCE(sk->sk_prot, in->base);
	sk->sk_protocol = IPPROTO_TCP;	/* SO_PROTOCOL, sock_diag, sk_is_tcp() */
	rc = ntbsmc_ulp_set(sk);
	if (rc)
		return rc;	/* freed as our table's creation: its reference put */
	sk->sk_prot_creator = in->base;	/* the reference is the ULP's now */
	return 0;
}

static void inet_setup(struct ntbsmc_inet *in, struct proto *base,
		       const struct proto_ops *ops)
{
	in->base = base;
	in->prot = *base;	/* TCP's slab, object size, counters and memory limits */
	in->prot.init = ntbsmc_inet_init_sk;
	in->prot.owner = THIS_MODULE;
	in->sw.type = SOCK_STREAM;
	in->sw.protocol = IPPROTO_NTBSMC;
	in->sw.prot = &in->prot;
	in->sw.ops = ops;
	in->sw.flags = INET_PROTOSW_ICSK;
}

#if IS_ENABLED(CONFIG_IPV6)
/*
 * IPv6's TCP table and socket operations are not exported: taken from a
 * socket of its own (the ULP finds tcpv6_prot the same way). No IPv6: only
 * the AF_INET protocol is registered.
 */
static int inet6_register(void)
{
	struct socket *sock;
	int rc;

	rc = sock_create_kern(&init_net, AF_INET6, SOCK_STREAM, IPPROTO_TCP, &sock);
	if (rc)
		return rc == -EAFNOSUPPORT ? 0 : rc;
	inet_setup(&ntbsmc_inet6, sock->sk->sk_prot, sock->ops);
	sock_release(sock);
	rc = inet6_register_protosw(&ntbsmc_inet6.sw);
	ntbsmc_inet6.registered = !rc;
	return rc;
}

static void inet6_unregister(void)
{
	if (ntbsmc_inet6.registered)
		inet6_unregister_protosw(&ntbsmc_inet6.sw);
}
#else
static int inet6_register(void)
{
	return 0;
}

static void inet6_unregister(void)
{
}
#endif

/* After the ULP is registered: a socket made the moment this returns sets it. */
int ntbsmc_proto_init(void)
{
	int rc;

	inet_setup(&ntbsmc_inet4, &tcp_prot, &inet_stream_ops);
	inet_register_protosw(&ntbsmc_inet4.sw);
	rc = inet6_register();
	if (rc)
		inet_unregister_protosw(&ntbsmc_inet4.sw);
	return rc;
}

/*
 * Before the ULP goes. Both unregisters wait for an RCU grace period: a
 * socket() that found our table before holds a module reference from
 * sk_alloc() (which fails once the module is going), so none is left half made.
 */
void ntbsmc_proto_exit(void)
{
	inet6_unregister();
	inet_unregister_protosw(&ntbsmc_inet4.sw);
}

/* The kernel loads us on the first socket() of our protocol (type 1: SOCK_STREAM). */
MODULE_ALIAS("net-pf-" __stringify(PF_INET) "-proto-" __stringify(IPPROTO_NTBSMC) "-type-1");
MODULE_ALIAS("net-pf-" __stringify(PF_INET6) "-proto-" __stringify(IPPROTO_NTBSMC) "-type-1");
