// SPDX-License-Identifier: GPL-2.0
/* ntbsmc tool: generic netlink session with the module: requests, replies, errors. */

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include <linux/netlink.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include <linux/ntbsmc.h>

#include "tool.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

#ifdef NTBSMC_FAKE_KERNEL
/* Test build: tests/fake_kernel.c answers in place of the module. */
void fake_kernel_attach(struct nl_sock *sk);
#endif

static struct nl_sock *sk;
static int family = -1;

static const struct nla_policy top_policy[NTBSMC_A_MAX + 1] = {
	[NTBSMC_A_DEV]		= { .type = NLA_NESTED },
	[NTBSMC_A_LGR]		= { .type = NLA_NESTED },
	[NTBSMC_A_CONN]		= { .type = NLA_NESTED },
	[NTBSMC_A_STATS]	= { .type = NLA_NESTED },
	[NTBSMC_A_DEV_NAME]	= { .type = NLA_STRING, .minlen = 1 },
	[NTBSMC_A_DEV_ENABLED]	= { .type = NLA_U8 },
	[NTBSMC_A_DEV_NETNS_PID] = { .type = NLA_U32 },
	[NTBSMC_A_DEV_NETNS_FD]	= { .type = NLA_U32 },
	[NTBSMC_A_POLICY]	= { .type = NLA_NESTED },
};

static const struct nla_policy extack_policy[NLMSGERR_ATTR_MAX + 1] = {
	[NLMSGERR_ATTR_MSG]	= { .type = NLA_STRING, .minlen = 1 },
};

int kern_open(void)
{
	int one = 1, err;

	sk = nl_socket_alloc();
	if (!sk)
		return fail(EXIT_ERROR, "out of memory");
	err = genl_connect(sk);
	if (err < 0)
		return fail(EXIT_ERROR, "cannot open a generic netlink socket: %s",
			    nl_geterror(err));
#ifdef NTBSMC_FAKE_KERNEL
	fake_kernel_attach(sk);
#endif
	/* Error messages from the kernel; an old kernel without them is fine. */
	setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	/* Dumps may come in messages larger than a page. */
	nl_socket_enable_msg_peek(sk);

	family = genl_ctrl_resolve(sk, NTBSMC_GENL_NAME);
	if (family == -NLE_OBJ_NOTFOUND)
		return fail(EXIT_NOMODULE,
			    "ntbsmc module not loaded (no generic netlink family \"%s\")",
			    NTBSMC_GENL_NAME);
	if (family < 0)
		return fail(EXIT_ERROR, "cannot look up generic netlink family \"%s\": %s",
			    NTBSMC_GENL_NAME, nl_geterror(family));
	return EXIT_OK;
}

void kern_close(void)
{
	if (sk)
		nl_socket_free(sk);
	sk = NULL;
}

struct nl_msg *kern_request(uint8_t cmd, bool dump)
{
	struct nl_msg *msg = nlmsg_alloc();

	if (!msg)
		return NULL;
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, dump ? NLM_F_DUMP : 0,
			 cmd, NTBSMC_GENL_VERSION)) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

struct reply {
	kern_reply_fn fn;
	void *arg;
	bool done;
	int rc;			/* exit code from FN or a malformed message */
	int err;		/* errno from the kernel */
	char ext[256];		/* the kernel's extended ack message */
};

/* Extended ack TLVs start OFF bytes into NLH's payload (NLM_F_ACK_TLVS). */
static void get_extack(const struct nlmsghdr *nlh, size_t off, char *buf, size_t size)
{
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];

	off = NLMSG_ALIGN(off);
	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS) || nlh->nlmsg_len < NLMSG_HDRLEN + off)
		return;
	if (nla_parse(tb, NLMSGERR_ATTR_MAX,
		      (struct nlattr *)((char *)NLMSG_DATA(nlh) + off),
		      nlh->nlmsg_len - NLMSG_HDRLEN - off, extack_policy) < 0)
		return;
	if (tb[NLMSGERR_ATTR_MSG])
		snprintf(buf, size, "%s", nla_get_string(tb[NLMSGERR_ATTR_MSG]));
}

/* Where the TLVs of an NLMSG_ERROR message begin. */
static size_t nlmsgerr_tlv_offset(const struct nlmsghdr *nlh, const struct nlmsgerr *e)
{
	size_t off = sizeof(*e);

	if (!(nlh->nlmsg_flags & NLM_F_CAPPED) && e->msg.nlmsg_len > NLMSG_HDRLEN)
		off += e->msg.nlmsg_len - NLMSG_HDRLEN;
	return off;
}

static int on_valid(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[NTBSMC_A_MAX + 1];
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct reply *r = arg;
	int rc;

	if (nlh->nlmsg_type != family)
		return NL_SKIP;
	if (genlmsg_parse(nlh, 0, tb, NTBSMC_A_MAX, top_policy) < 0)
		rc = kern_malformed("message");
	else
		rc = r->fn ? r->fn(tb, r->arg) : EXIT_OK;
	if (rc) {
		r->rc = rc;
		r->done = true;
		return NL_STOP;
	}
	return NL_OK;
}

static int on_error(struct sockaddr_nl *nla, struct nlmsgerr *e, void *arg)
{
	/* libnl passes the payload of the NLMSG_ERROR message, after its header. */
	const struct nlmsghdr *nlh = (const struct nlmsghdr *)((char *)e - NLMSG_HDRLEN);
	struct reply *r = arg;

	(void)nla;
	r->err = e->error < 0 ? -e->error : e->error;
	get_extack(nlh, nlmsgerr_tlv_offset(nlh, e), r->ext, sizeof(r->ext));
	r->done = true;
	return NL_STOP;
}

static int on_ack(struct nl_msg *msg, void *arg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct reply *r = arg;

	/* A success may carry a warning. */
	get_extack(nlh, nlmsgerr_tlv_offset(nlh, NLMSG_DATA(nlh)), r->ext, sizeof(r->ext));
	r->done = true;
	return NL_STOP;
}

/* End of a dump: its payload is an int, negative when the dump failed. */
static int on_finish(struct nl_msg *msg, void *arg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct reply *r = arg;
	int err;

	if (nlh->nlmsg_len >= NLMSG_LENGTH(sizeof(int))) {
		memcpy(&err, NLMSG_DATA(nlh), sizeof(err));
		if (err < 0)
			r->err = -err;
		get_extack(nlh, sizeof(int), r->ext, sizeof(r->ext));
	}
	r->done = true;
	return NL_STOP;
}

int kern_malformed(const char *what)
{
	return fail(EXIT_ERROR, "malformed %s from the kernel module (tool and module "
		    "versions differ?)", what);
}

static int kernel_error(const struct reply *r, const char *what, const char *priv)
{
	const char *msg = r->ext[0] ? r->ext : NULL;

	switch (r->err) {
	case EOPNOTSUPP:
		return fail(EXIT_ERROR, "%s not supported by this kernel module", what);
	case EPERM:
	case EACCES:
		return fail(EXIT_PERM, "%s: %s (needs %s)", what, msg ? msg : "permission denied",
			    priv ? priv : "CAP_NET_ADMIN");
	case ENODEV:
		return fail(EXIT_NODEV, "%s: %s", what, msg ? msg : "no such device");
	case ENOENT:
		return fail(EXIT_NODEV, "%s: %s", what, msg ? msg : "not found");
	default:
		return fail(EXIT_ERROR, "%s: %s", what, msg ? msg : strerror(r->err));
	}
}

int kern_run(struct nl_msg *msg, kern_reply_fn fn, void *arg, const char *what,
	     const char *priv)
{
	struct reply r = { .fn = fn, .arg = arg };
	struct nl_cb *cb, *sock_cb;
	int err;

	if (!msg)
		return fail(EXIT_ERROR, "out of memory");
	err = nl_send_auto(sk, msg);
	nlmsg_free(msg);
	if (err < 0)
		return fail(EXIT_ERROR, "%s: cannot send to the kernel: %s", what,
			    nl_geterror(err));

	/* A clone keeps any receive override of the socket's own callbacks. */
	sock_cb = nl_socket_get_cb(sk);
	cb = nl_cb_clone(sock_cb);
	nl_cb_put(sock_cb);
	if (!cb)
		return fail(EXIT_ERROR, "out of memory");
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, on_valid, &r);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, on_ack, &r);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, on_finish, &r);
	nl_cb_err(cb, NL_CB_CUSTOM, on_error, &r);

	while (!r.done) {
		err = nl_recvmsgs_report(sk, cb);
		if (r.done)
			break;
		if (err <= 0) {
			nl_cb_put(cb);
			return fail(EXIT_ERROR, "%s: %s", what,
				    err ? nl_geterror(err) : "no reply from the kernel");
		}
	}
	nl_cb_put(cb);

	if (r.rc)
		return r.rc;
	if (r.err)
		return kernel_error(&r, what, priv);
	if (r.ext[0])
		fprintf(stderr, "Warning: %s\n", r.ext);
	return EXIT_OK;
}

/* ---- attribute printers ---- */

void print_attr_u8(enum print_type t, const char *key, const char *fmt, const struct nlattr *a)
{
	if (a)
		print_u64(t, key, fmt, nla_get_u8(a));
	else
		print_null(t, key, fmt);
}

void print_attr_u32(enum print_type t, const char *key, const char *fmt, const struct nlattr *a)
{
	if (a)
		print_u64(t, key, fmt, nla_get_u32(a));
	else
		print_null(t, key, fmt);
}

void print_attr_u64(enum print_type t, const char *key, const char *fmt, const struct nlattr *a)
{
	if (a)
		print_u64(t, key, fmt, nla_get_u64(a));
	else
		print_null(t, key, fmt);
}

void print_attr_bool(enum print_type t, const char *key, const char *fmt, const struct nlattr *a)
{
	if (a)
		print_bool(t, key, fmt, nla_get_u8(a));
	else
		print_null(t, key, fmt);
}

void print_attr_string(enum print_type t, const char *key, const char *fmt,
		       const struct nlattr *a)
{
	print_string(t, key, fmt, a ? nla_get_string(a) : NULL);
}

void print_attr_hex(enum print_type t, const char *key, const char *fmt, const struct nlattr *a)
{
	static const char digits[] = "0123456789abcdef";
	char buf[2 * 64 + 1];
	const unsigned char *p;
	int i, len;

	if (!a) {
		print_null(t, key, fmt);
		return;
	}
	p = nla_data(a);
	len = nla_len(a);
	if (len > 64)
		len = 64;
	for (i = 0; i < len; i++) {
		buf[2 * i] = digits[p[i] >> 4];
		buf[2 * i + 1] = digits[p[i] & 0xf];
	}
	buf[2 * len] = '\0';
	print_string(t, key, fmt, buf);
}
