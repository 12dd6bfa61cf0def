/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ntbsmc: delay and failure points for the selftests. They exist only in the test
 * build (make FAULT_INJECTION=1, which make check loads); the module users install
 * compiles every call below to nothing.
 *
 * Each point is a fault_attr of the kernel's fault-injection framework under
 * /sys/kernel/debug/ntbsmc/fault/NAME/ (probability, times, interval, ...; see
 * Documentation/fault-injection/fault-injection.rst), plus two knobs of ours:
 * "port", which limits the point to connections with that local or remote port
 * (0: any; raw_handshake: local only), and "delay_ms", how long a delay point
 * sleeps when it fires.
 */
#ifndef NTBSMC_FAULT_H
#define NTBSMC_FAULT_H

#include <net/sock.h>

enum ntbsmc_fault_point {
	NTBSMC_FAULT_CLC_TRUNCATED,	/* a handshake message cut in half */
	NTBSMC_FAULT_CLC_GARBAGE,	/* a handshake message of 0x5a bytes */
	NTBSMC_FAULT_CLC_OVERSIZED,	/* a header that announces 60000 bytes */
	NTBSMC_FAULT_SERVER_VERSION,	/* a server of the next protocol version only */
	NTBSMC_FAULT_SERVER_HELLO_DELAY,	/* delay: a server slow to read HELLO */
	NTBSMC_FAULT_SERVER_ATTACH_DELAY,	/* delay: PROPOSAL read, not yet attached */
	NTBSMC_FAULT_SERVER_ACCEPT_DELAY,	/* delay: buffer set up, ACCEPT not yet sent */
	NTBSMC_FAULT_SERVER_CONFIRM_LOST,	/* ACCEPT sent, fails as if CONFIRM never came */
	NTBSMC_FAULT_HS_FAIL_DELAY,	/* delay: a failed handshake, before TCP hears */
	NTBSMC_FAULT_CLIENT_ANSWER_DELAY,	/* delay: HELLO sent, its answer left unread */
	NTBSMC_FAULT_CLIENT_SILENT,	/* a client that offers ntbsmc, then stalls */
	NTBSMC_FAULT_TX_BAD_CURSOR,	/* a send that publishes an impossible cursor */
	NTBSMC_FAULT_POLL_ARM_DELAY,	/* delay: poll asked for doorbells, not yet looked again */
	NTBSMC_FAULT_NOTIFY_DROP,	/* a doorbell the peer asked for, not rung */
	NTBSMC_FAULT_DETACH_DROP,	/* a peer that never lets go of a closed connection */
	NTBSMC_FAULT_CLIENT_HELLO_DELAY,	/* delay: connected, HELLO not sent yet */
	NTBSMC_FAULT_CLONE_NOMEM,	/* a child's context not allocated (atomic) */
	/*
	 * A socket that offers ntbsmc in its SYN or SYN-ACK and then leaves the
	 * handshake to its program (a hostile host's hand-made one); the port is
	 * only the socket's local port
	 */
	NTBSMC_FAULT_RAW_HANDSHAKE,
	/*
	 * A WANT flag that reaches the peer delay_ms after its waiter looked at
	 * the cursors (a posted write still on the link; the emulated fabric's
	 * land at once), its event after it
	 */
	NTBSMC_FAULT_WANT_LATE,
	NTBSMC_FAULT_ANSWER_DROP,	/* a want of the peer's left unanswered */
	/*
	 * delay: a connection reset, its socket not yet told (in process
	 * context only: the link going down, a timer's reset); local port only
	 */
	NTBSMC_FAULT_ABORT_REPORT_DELAY,
	/*
	 * A relay on the path that keeps both ends' addresses: the ACCEPT (or
	 * the CONFIRM) this end sends reaches the peer as a DECLINE without a
	 * MAC (reason no_buffer), and this end goes on as if it had been sent
	 */
	NTBSMC_FAULT_WIRE_DECLINE_ACCEPT,
	NTBSMC_FAULT_WIRE_DECLINE_CONFIRM,
	/* A relay that changes this end's SWITCH on the way (a bit of its MAC) */
	NTBSMC_FAULT_SWITCH_BAD_MAC,
	/* delay: a switch of transport, between its SWITCH sent and the peer's read */
	NTBSMC_FAULT_SWITCH_DELAY,
	/*
	 * A relay that replays a SWITCH it recorded on another connection (the
	 * last one this kernel sent before) in place of this end's
	 */
	NTBSMC_FAULT_SWITCH_REPLAY,
	/* delay: the client's CONFIRM sent, its connection not yet established */
	NTBSMC_FAULT_CLIENT_CONFIRM_DELAY,
	/*
	 * A failed handshake's slot held delay_ms instead of NTBSMC_HOLD_MS
	 * (65 s): for tests whose handshakes wait the default 2 s at most, so
	 * that they need not wait a minute to see every slot given back
	 */
	NTBSMC_FAULT_HOLD_SHORT,
	NTBSMC_FAULT_NR
};

#ifdef CONFIG_NTBSMC_FAULT_INJECTION
int ntbsmc_fault_init(void);
void ntbsmc_fault_exit(void);
bool ntbsmc_fault(enum ntbsmc_fault_point point, const struct sock *sk);
void ntbsmc_fault_delay(enum ntbsmc_fault_point point, const struct sock *sk);
bool ntbsmc_fault_hit(enum ntbsmc_fault_point point);
unsigned int ntbsmc_fault_delay_ms(enum ntbsmc_fault_point point);
#else
static inline int ntbsmc_fault_init(void)
{
	return 0;
}

static inline void ntbsmc_fault_exit(void)
{
}

static inline bool ntbsmc_fault(enum ntbsmc_fault_point point, const struct sock *sk)
{
	return false;
}

static inline void ntbsmc_fault_delay(enum ntbsmc_fault_point point,
				      const struct sock *sk)
{
}

static inline bool ntbsmc_fault_hit(enum ntbsmc_fault_point point)
{
	return false;
}

static inline unsigned int ntbsmc_fault_delay_ms(enum ntbsmc_fault_point point)
{
	return 0;
}
#endif

#endif
