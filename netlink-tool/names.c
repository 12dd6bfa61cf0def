// SPDX-License-Identifier: GPL-2.0
/* ntbsmc tool: names of connection modes, fallback reasons and TCP states, one table each. */

#include <netinet/tcp.h>
#include <stdio.h>

#include <linux/ntbsmc.h>

#include "names.h"

#define ARRAY_SIZE(a)	((unsigned int)(sizeof(a) / sizeof((a)[0])))

static const char *const mode_names[__NTBSMC_MODE_MAX] = {
	[NTBSMC_MODE_HANDSHAKE]	= "handshake",
	[NTBSMC_MODE_NTB]	= "ntb",
	[NTBSMC_MODE_TCP]	= "tcp",
	[NTBSMC_MODE_LISTEN]	= "listen",
};

static const char *const reason_names[__NTBSMC_REASON_MAX] = {
	[NTBSMC_REASON_NONE]		= "none",
	[NTBSMC_REASON_PEER_NO_OFFER]	= "peer_no_offer",
	[NTBSMC_REASON_PEER_SMC]	= "peer_smc",
	[NTBSMC_REASON_NO_FABRIC]	= "no_fabric",
	[NTBSMC_REASON_LINK_DOWN]	= "link_down",
	[NTBSMC_REASON_NO_BUFFER]	= "no_buffer",
	[NTBSMC_REASON_NO_MEMORY]	= "no_memory",
	[NTBSMC_REASON_VERSION]		= "version",
	[NTBSMC_REASON_TIMEOUT]		= "timeout",
	[NTBSMC_REASON_DECLINED]	= "declined",
	[NTBSMC_REASON_DISABLED]	= "disabled",
	[NTBSMC_REASON_PROTOCOL]	= "protocol",
	[NTBSMC_REASON_FASTOPEN]	= "fastopen",
	[NTBSMC_REASON_PEER_CLOSED]	= "peer_closed",
	[NTBSMC_REASON_DISCONNECTED]	= "disconnected",
	[NTBSMC_REASON_CONGESTED]	= "congested",
	[NTBSMC_REASON_AUTH]		= "auth",
	[NTBSMC_REASON_DEV_DISABLED]	= "dev_disabled",
	[NTBSMC_REASON_POLICY]		= "policy",
};

/* As ss(8) spells them; TCP_NEW_SYN_RECV (12) is a request socket ss shows as SYN-RECV. */
static const char *const tcp_state_names[] = {
	[TCP_ESTABLISHED]	= "ESTAB",
	[TCP_SYN_SENT]		= "SYN-SENT",
	[TCP_SYN_RECV]		= "SYN-RECV",
	[TCP_FIN_WAIT1]		= "FIN-WAIT-1",
	[TCP_FIN_WAIT2]		= "FIN-WAIT-2",
	[TCP_TIME_WAIT]		= "TIME-WAIT",
	[TCP_CLOSE]		= "UNCONN",
	[TCP_CLOSE_WAIT]	= "CLOSE-WAIT",
	[TCP_LAST_ACK]		= "LAST-ACK",
	[TCP_LISTEN]		= "LISTEN",
	[TCP_CLOSING]		= "CLOSING",
	[TCP_CLOSING + 1]	= "SYN-RECV",
};

const char *mode_name(unsigned int mode, char *buf, size_t size)
{
	if (mode < ARRAY_SIZE(mode_names) && mode_names[mode])
		return mode_names[mode];
	snprintf(buf, size, "unknown(%u)", mode);
	return buf;
}

bool reason_known(unsigned int reason)
{
	return reason < ARRAY_SIZE(reason_names) && reason_names[reason];
}

const char *reason_name(unsigned int reason, char *buf, size_t size)
{
	if (reason_known(reason))
		return reason_names[reason];
	snprintf(buf, size, "reason_%u", reason);
	return buf;
}

const char *tcp_state_name(unsigned int state, char *buf, size_t size)
{
	if (state < ARRAY_SIZE(tcp_state_names) && tcp_state_names[state])
		return tcp_state_names[state];
	snprintf(buf, size, "UNKNOWN(%u)", state);
	return buf;
}
