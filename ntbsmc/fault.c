// SPDX-License-Identifier: GPL-2.0
/* ntbsmc: the test build's delay and failure points (see fault.h). */

#include <linux/module.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/fault-inject.h>
#include <net/inet_sock.h>
#include "fault.h"

#ifndef CONFIG_FAULT_INJECTION_DEBUG_FS
#error "the test build of ntbsmc needs a kernel with CONFIG_FAULT_INJECTION_DEBUG_FS"
#endif

/* A delay point sleeps at most this long: the largest handshake timeout and then some. */
#define FAULT_DELAY_MAX_MS	65000

struct fault_point {
	struct fault_attr attr;
	u32 port;
	u32 delay_ms;
	atomic_t hits;		/* times it fired since the module was loaded */
};

static const char *const fault_names[NTBSMC_FAULT_NR] = {
	[NTBSMC_FAULT_CLC_TRUNCATED]		= "clc_truncated",
	[NTBSMC_FAULT_CLC_GARBAGE]		= "clc_garbage",
	[NTBSMC_FAULT_CLC_OVERSIZED]		= "clc_oversized",
	[NTBSMC_FAULT_SERVER_VERSION]		= "server_version",
	[NTBSMC_FAULT_SERVER_HELLO_DELAY]	= "server_hello_delay",
	[NTBSMC_FAULT_SERVER_ATTACH_DELAY]	= "server_attach_delay",
	[NTBSMC_FAULT_SERVER_ACCEPT_DELAY]	= "server_accept_delay",
	[NTBSMC_FAULT_SERVER_CONFIRM_LOST]	= "server_confirm_lost",
	[NTBSMC_FAULT_HS_FAIL_DELAY]		= "hs_fail_delay",
	[NTBSMC_FAULT_CLIENT_ANSWER_DELAY]	= "client_answer_delay",
	[NTBSMC_FAULT_CLIENT_SILENT]		= "client_silent",
	[NTBSMC_FAULT_TX_BAD_CURSOR]		= "tx_bad_cursor",
	[NTBSMC_FAULT_POLL_ARM_DELAY]		= "poll_arm_delay",
	[NTBSMC_FAULT_NOTIFY_DROP]		= "notify_drop",
	[NTBSMC_FAULT_DETACH_DROP]		= "detach_drop",
	[NTBSMC_FAULT_CLIENT_HELLO_DELAY]	= "client_hello_delay",
	[NTBSMC_FAULT_CLONE_NOMEM]		= "clone_nomem",
	[NTBSMC_FAULT_RAW_HANDSHAKE]		= "raw_handshake",
	[NTBSMC_FAULT_WANT_LATE]		= "want_late",
	[NTBSMC_FAULT_ANSWER_DROP]		= "answer_drop",
	[NTBSMC_FAULT_ABORT_REPORT_DELAY]	= "abort_report_delay",
	[NTBSMC_FAULT_WIRE_DECLINE_ACCEPT]	= "wire_decline_accept",
	[NTBSMC_FAULT_WIRE_DECLINE_CONFIRM]	= "wire_decline_confirm",
	[NTBSMC_FAULT_SWITCH_BAD_MAC]		= "switch_bad_mac",
	[NTBSMC_FAULT_SWITCH_DELAY]		= "switch_delay",
	[NTBSMC_FAULT_SWITCH_REPLAY]		= "switch_replay",
	[NTBSMC_FAULT_CLIENT_CONFIRM_DELAY]	= "client_confirm_delay",
	[NTBSMC_FAULT_HOLD_SHORT]		= "hold_short",
};

/*
 * Points whose port is only the socket's own: a hand-made handshake's socket,
 * one end's late want or unanswered wants, its reset's report, never the socket
 * at the other end of its connection, which in one kernel would match the same
 * port as its remote one.
 */
#define FAULT_LOCAL_PORT_ONLY	(BIT(NTBSMC_FAULT_RAW_HANDSHAKE) | BIT(NTBSMC_FAULT_WANT_LATE) | \
				 BIT(NTBSMC_FAULT_ANSWER_DROP) | \
				 BIT(NTBSMC_FAULT_ABORT_REPORT_DELAY) | \
				 BIT(NTBSMC_FAULT_SWITCH_BAD_MAC) | BIT(NTBSMC_FAULT_SWITCH_DELAY) | \
				 BIT(NTBSMC_FAULT_SWITCH_REPLAY))

static struct fault_point fault_points[NTBSMC_FAULT_NR];
static struct dentry *fault_root;

static bool fault_port_match(enum ntbsmc_fault_point point, const struct sock *sk)
{
	u32 port = READ_ONCE(fault_points[point].port);

	/* a closed connection has no socket: only a point for any port hits it */
	if (!port)
		return true;
	if (!sk)
		return false;
	if (inet_sk(sk)->inet_num == port)
		return true;
	return !(FAULT_LOCAL_PORT_ONLY & BIT(point)) &&
	       ntohs(inet_sk(sk)->inet_dport) == port;
}

bool ntbsmc_fault(enum ntbsmc_fault_point point, const struct sock *sk)
{
	struct fault_point *p = &fault_points[point];

	/* The port is tested first, so that "times" counts only the port's hits. */
	if (!fault_port_match(point, sk) || !should_fail(&p->attr, 1))
		return false;
	atomic_inc(&p->hits);
	return true;
}

/* The point fired since the module was loaded: what follows from it is the test's. */
bool ntbsmc_fault_hit(enum ntbsmc_fault_point point)
{
	return atomic_read(&fault_points[point].hits);
}

unsigned int ntbsmc_fault_delay_ms(enum ntbsmc_fault_point point)
{
	return min_t(u32, READ_ONCE(fault_points[point].delay_ms), FAULT_DELAY_MAX_MS);
}

void ntbsmc_fault_delay(enum ntbsmc_fault_point point, const struct sock *sk)
{
	might_sleep();
	if (ntbsmc_fault(point, sk))
		msleep(min_t(u32, READ_ONCE(fault_points[point].delay_ms),
			     FAULT_DELAY_MAX_MS));
}

int ntbsmc_fault_init(void)
{
	struct dentry *dir;
	int i;

	/* The tests read debugfs; nothing works without it, so a failure is fatal. */
	fault_root = debugfs_create_dir("ntbsmc", NULL);
	dir = debugfs_create_dir("fault", fault_root);
	for (i = 0; i < NTBSMC_FAULT_NR; i++) {
		struct fault_point *p = &fault_points[i];
		struct dentry *d;

		p->attr = (struct fault_attr)FAULT_ATTR_INITIALIZER;
		p->attr.verbose = 0;	/* a stack dump per fault would read as a splat */
		d = fault_create_debugfs_attr(fault_names[i], dir, &p->attr);
		if (IS_ERR(d)) {
			debugfs_remove_recursive(fault_root);
			return PTR_ERR(d);
		}
		debugfs_create_u32("port", 0600, d, &p->port);
		debugfs_create_u32("delay_ms", 0600, d, &p->delay_ms);
	}
	pr_info("test build: fault points in debugfs ntbsmc/fault/\n");
	return 0;
}

void ntbsmc_fault_exit(void)
{
	debugfs_remove_recursive(fault_root);
}
