/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel interfaces ntbsmc uses that differ between the series it supports
 * (6.1 and 6.12), in one place. Where the difference can be tested directly
 * (a header, a macro) it is; the rest goes by the version that changed it.
 */
#ifndef NTBSMC_COMPAT_H
#define NTBSMC_COMPAT_H

#include <linux/version.h>
#include <linux/uio.h>
#include <net/inet_sock.h>
#include <net/net_namespace.h>
#include <linux/sysctl.h>
#include <linux/bpf.h>

/* 6.12: moved; by version, as sparse (make sparse) has no __has_include */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif

/* 6.4: iov_iter's segment array is reached through iter_iov() */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 4, 0)
static inline const struct iovec *iter_iov(const struct iov_iter *i)
{
	return i->iov;
}
#endif

/* 6.6: inet_sock's flags became bits */
static inline bool ntbsmc_defer_connect(const struct sock *sk)
{
#ifdef inet_test_bit
	return inet_test_bit(DEFER_CONNECT, sk);
#else
	return inet_sk(sk)->defer_connect;
#endif
}

/*
 * 6.6: a table is registered with its size (no sentinel needed, 6.11 none
 * allowed); @n excludes the sentinel the older kernels need.
 */
#ifdef register_net_sysctl
#define ntbsmc_register_net_sysctl(net, path, tbl, n) \
	register_net_sysctl_sz(net, path, tbl, n)
#else
#define ntbsmc_register_net_sysctl(net, path, tbl, n) \
	register_net_sysctl(net, path, tbl)
#endif

/* 6.5: proto.sendpage is gone; splice sends pages with MSG_SPLICE_PAGES */
#define NTBSMC_HAVE_SENDPAGE	(LINUX_VERSION_CODE < KERNEL_VERSION(6, 5, 0))

/* 6.5: proto.ioctl returns the value in *karg; the socket layer copies it out */
#define NTBSMC_IOCTL_KARG	(LINUX_VERSION_CODE >= KERNEL_VERSION(6, 5, 0))

/* 6.10: proto_ops.accept takes its flags in struct proto_accept_arg */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 10, 0)
#define NTBSMC_ACCEPT_PARAMS	struct proto_accept_arg *arg
#define NTBSMC_ACCEPT_ARGS	arg
#else
#define NTBSMC_ACCEPT_PARAMS	int flags, bool kern
#define NTBSMC_ACCEPT_ARGS	flags, kern
#endif

/*
 * A socket operation that may sleep: not one a BPF program calls (6.5:
 * bpf_sock_destroy() reaches proto.diag_destroy from an iterator).
 */
static inline bool ntbsmc_may_sleep(void)
{
	return !has_current_bpf_ctx();
}

/* An extended ack message with values: 6.3. Before, a fixed one. */
#ifdef NL_SET_ERR_MSG_FMT
#define ntbsmc_err_fmt(extack, plain, fmt, ...) NL_SET_ERR_MSG_FMT(extack, fmt, ##__VA_ARGS__)
#else
#define ntbsmc_err_fmt(extack, plain, fmt, ...) NL_SET_ERR_MSG(extack, plain)
#endif

#endif /* NTBSMC_COMPAT_H */
