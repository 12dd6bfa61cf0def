/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * ntbsmc: TCP sockets over PCIe NTB, the public contract between the kernel module
 * and userspace (socket options, connection modes, fallback reasons).
 *
 * A TCP socket opts in with
 *	setsockopt(fd, SOL_TCP, TCP_ULP, "ntbsmc", sizeof("ntbsmc"));
 * before connect() or listen(), or is made with the ULP already set:
 *	socket(AF_INET or AF_INET6, SOCK_STREAM, IPPROTO_NTBSMC)
 * Both ends then negotiate over the TCP connection
 * whether they share an NTB fabric; the connection runs over NTB if they do and
 * stays plain TCP (with a reason) if they don't.
 */
#ifndef _UAPI_LINUX_NTBSMC_H
#define _UAPI_LINUX_NTBSMC_H

#include <linux/types.h>

#define NTBSMC_ULP_NAME		"ntbsmc"

/*
 * The protocol of socket(AF_INET/AF_INET6, SOCK_STREAM, IPPROTO_NTBSMC): a TCP
 * socket with the ntbsmc ULP set, which says it is TCP (SO_PROTOCOL, /proc,
 * ss) from then on. Above the IP protocol numbers (0-255) and below
 * IPPROTO_MAX (263) of Linux 6.1 and 6.12, where those kernels define only
 * IPPROTO_SMC (256) and IPPROTO_MPTCP (262). Loading ntbsmc registers it;
 * the kernel loads the module on the first such socket() (its alias).
 */
#define IPPROTO_NTBSMC		261

/* Socket option level of ntbsmc's own options (getsockopt/setsockopt). */
#define SOL_NTBSMC		0x4e54

/**
 * enum ntbsmc_sockopt - options at level %SOL_NTBSMC
 * @NTBSMC_INFO: (get) struct ntbsmc_info: the connection's mode, why it fell back,
 *	and what crossed NTB. Waits for nothing: during the handshake the mode is
 *	%NTBSMC_MODE_HANDSHAKE.
 */
enum ntbsmc_sockopt {
	NTBSMC_INFO = 1,
};

/**
 * enum ntbsmc_mode - how a connection moves its data
 * @NTBSMC_MODE_HANDSHAKE: negotiation still running
 * @NTBSMC_MODE_NTB: over NTB shared memory
 * @NTBSMC_MODE_TCP: plain TCP (fallback); &ntbsmc_info.reason says why
 * @NTBSMC_MODE_LISTEN: a listening socket (its accepted sockets have a mode)
 */
enum ntbsmc_mode {
	NTBSMC_MODE_HANDSHAKE,
	NTBSMC_MODE_NTB,
	NTBSMC_MODE_TCP,
	NTBSMC_MODE_LISTEN,

	__NTBSMC_MODE_MAX
};

/**
 * enum ntbsmc_reason - why a connection runs over TCP (and what a DECLINE carries)
 * @NTBSMC_REASON_NONE: not fallen back
 * @NTBSMC_REASON_PEER_NO_OFFER: the peer did not offer ntbsmc in its SYN/SYN-ACK
 * @NTBSMC_REASON_PEER_SMC: the peer is Linux SMC, not ntbsmc
 * @NTBSMC_REASON_NO_FABRIC: no NTB fabric with a live link is shared with the peer
 * @NTBSMC_REASON_LINK_DOWN: the shared NTB link is down
 * @NTBSMC_REASON_NO_BUFFER: no receive buffer space left on the link
 * @NTBSMC_REASON_NO_MEMORY: out of kernel memory
 * @NTBSMC_REASON_VERSION: no common protocol version
 * @NTBSMC_REASON_TIMEOUT: a handshake message did not arrive in time
 * @NTBSMC_REASON_DECLINED: the peer declined; &ntbsmc_info.peer_reason says why
 * @NTBSMC_REASON_DISABLED: ntbsmc is disabled in this network namespace
 * @NTBSMC_REASON_PROTOCOL: the peer sent a malformed handshake message
 * @NTBSMC_REASON_FASTOPEN: the application sent data in the SYN (TCP Fast Open),
 *	where the handshake's first message must go
 * @NTBSMC_REASON_PEER_CLOSED: the peer closed or reset the connection during the
 *	handshake (the application reads EOF, or TCP's error)
 * @NTBSMC_REASON_DISCONNECTED: connect(AF_UNSPEC) ended the connection; the
 *	socket's later connections are plain TCP
 * @NTBSMC_REASON_CONGESTED: the server had net.ntbsmc.max_handshakes handshakes
 *	running and answered the SYN without the offer (the client sees
 *	%NTBSMC_REASON_PEER_NO_OFFER)
 * @NTBSMC_REASON_AUTH: the peer did not prove that it reads this link's NTB
 *	windows (a forged, replayed or altered handshake), or speaks a protocol
 *	version without that proof
 * @NTBSMC_REASON_DEV_DISABLED: the NTB device that reached the peer is disabled
 *	on this host (%NTBSMC_A_DEV_ENABLED 0: ntbsmc dev set DEV disable)
 * @NTBSMC_REASON_POLICY: the namespace's policy (%NTBSMC_CMD_POLICY_ADD) does
 *	not offer ntbsmc to this peer address and port
 */
enum ntbsmc_reason {
	NTBSMC_REASON_NONE,
	NTBSMC_REASON_PEER_NO_OFFER,
	NTBSMC_REASON_PEER_SMC,
	NTBSMC_REASON_NO_FABRIC,
	NTBSMC_REASON_LINK_DOWN,
	NTBSMC_REASON_NO_BUFFER,
	NTBSMC_REASON_NO_MEMORY,
	NTBSMC_REASON_VERSION,
	NTBSMC_REASON_TIMEOUT,
	NTBSMC_REASON_DECLINED,
	NTBSMC_REASON_DISABLED,
	NTBSMC_REASON_PROTOCOL,
	NTBSMC_REASON_FASTOPEN,
	NTBSMC_REASON_PEER_CLOSED,
	NTBSMC_REASON_DISCONNECTED,
	NTBSMC_REASON_CONGESTED,
	NTBSMC_REASON_AUTH,
	NTBSMC_REASON_DEV_DISABLED,
	NTBSMC_REASON_POLICY,

	__NTBSMC_REASON_MAX
};

/**
 * struct ntbsmc_info - result of getsockopt(SOL_NTBSMC, NTBSMC_INFO)
 * @mode: enum ntbsmc_mode
 * @reason: enum ntbsmc_reason, when @mode is %NTBSMC_MODE_TCP
 * @peer_reason: the reason the peer gave, when @reason is %NTBSMC_REASON_DECLINED
 * @lgr_id: link group the connection runs on (NTB mode), else 0
 * @tx_bytes: payload bytes this socket wrote into the peer's buffer over NTB
 * @rx_bytes: payload bytes this socket read from its own buffer over NTB
 * @rmb_size: size of this connection's receive buffer (NTB mode)
 * @peer_rmb_size: size of the peer's receive buffer (NTB mode)
 * @cpu_bytes: of @tx_bytes, copied into the peer's buffer by the CPU
 * @dma_bytes: of @tx_bytes, written by a DMA engine
 * @zc_bytes: of @dma_bytes, straight from the sender's pages (zero-copy)
 * @version: the ntbsmc protocol version the handshake agreed on, else 0
 * @flags: NTBSMC_INFO_F_*
 * @switch_time: when it moved to TCP (CLOCK_REALTIME, ns), else 0
 *
 * Later versions only append fields; the kernel fills as much as optlen asks for.
 */
struct ntbsmc_info {
	__u32 mode;
	__u32 reason;
	__u32 peer_reason;
	__u32 lgr_id;
	__u64 tx_bytes;
	__u64 rx_bytes;
	__u32 rmb_size;
	__u32 peer_rmb_size;
	__u64 cpu_bytes;
	__u64 dma_bytes;
	__u64 zc_bytes;
	__u32 version;
	__u32 flags;
	__u64 switch_time;
};

/*
 * @NTBSMC_INFO_F_SWITCH: the connection can move to its TCP connection when
 *	the NTB link goes (protocol version 7, with the copy of its writes kept)
 */
#define NTBSMC_INFO_F_SWITCH	(1U << 0)
/* @NTBSMC_INFO_F_FAILED_OVER: it moved from NTB to TCP (at &ntbsmc_info.switch_time) */
#define NTBSMC_INFO_F_FAILED_OVER	(1U << 1)


/*
 * Generic netlink family NTBSMC_GENL_NAME. Every command works on the caller's
 * network namespace. Dumps need no privilege, but a caller without CAP_NET_ADMIN
 * over the namespace sees only its own connections (its uid); changes need
 * CAP_NET_ADMIN in the namespace's user namespace.
 */
#define NTBSMC_GENL_NAME	"ntbsmc"
#define NTBSMC_GENL_VERSION	1

/**
 * enum ntbsmc_cmd - generic netlink commands
 * @NTBSMC_CMD_DEV_GET: dump the NTB devices serving this namespace (or, with
 *	%NTBSMC_A_DEV_NAME, one device of any namespace the caller administers);
 *	replies with nested %NTBSMC_A_DEV
 * @NTBSMC_CMD_DEV_SET: change a device (%NTBSMC_A_DEV_NAME required):
 *	%NTBSMC_A_DEV_ENABLED, and %NTBSMC_A_DEV_NETNS_PID or %NTBSMC_A_DEV_NETNS_FD
 *	to move it to another namespace (its connections are reset)
 * @NTBSMC_CMD_LGR_GET: dump link groups, nested %NTBSMC_A_LGR
 * @NTBSMC_CMD_CONN_GET: dump ntbsmc connections, nested %NTBSMC_A_CONN
 * @NTBSMC_CMD_STATS_GET: the namespace's counters, nested %NTBSMC_A_STATS
 * @NTBSMC_CMD_STATS_RESET: zero the namespace's counters
 * @NTBSMC_CMD_POLICY_GET: dump the namespace's policy rules, nested
 *	%NTBSMC_A_POLICY each, in the order they were added
 * @NTBSMC_CMD_POLICY_ADD: add one rule (nested %NTBSMC_A_POLICY: ACTION
 *	required, the rest optional). Refused with EINVAL (a bad prefix, a port
 *	range upside down), EEXIST (it overlaps a rule of the same action in both
 *	addresses and ports) or ENOSPC (%NTBSMC_POLICY_MAX rules), with an extended
 *	ack message; nothing changes then
 * @NTBSMC_CMD_POLICY_DEL: remove the rule %NTBSMC_POLICY_ID (ENOENT if none)
 * @NTBSMC_CMD_POLICY_FLUSH: remove every rule: every peer and port offered
 */
enum ntbsmc_cmd {
	NTBSMC_CMD_UNSPEC,
	NTBSMC_CMD_DEV_GET,
	NTBSMC_CMD_DEV_SET,
	NTBSMC_CMD_LGR_GET,
	NTBSMC_CMD_CONN_GET,
	NTBSMC_CMD_STATS_GET,
	NTBSMC_CMD_STATS_RESET,
	NTBSMC_CMD_POLICY_GET,
	NTBSMC_CMD_POLICY_ADD,
	NTBSMC_CMD_POLICY_DEL,
	NTBSMC_CMD_POLICY_FLUSH,

	__NTBSMC_CMD_MAX
};
#define NTBSMC_CMD_MAX (__NTBSMC_CMD_MAX - 1)

/**
 * enum ntbsmc_attr - top-level attributes
 * @NTBSMC_A_DEV: nested, enum ntbsmc_dev_attr
 * @NTBSMC_A_LGR: nested, enum ntbsmc_lgr_attr
 * @NTBSMC_A_CONN: nested, enum ntbsmc_conn_attr
 * @NTBSMC_A_STATS: nested, enum ntbsmc_stats_attr
 * @NTBSMC_A_DEV_NAME: string, NTB device name (DEV_GET filter, DEV_SET target)
 * @NTBSMC_A_DEV_ENABLED: u8, use the device for ntbsmc (DEV_SET)
 * @NTBSMC_A_DEV_NETNS_PID: u32, move the device to this process's namespace
 * @NTBSMC_A_DEV_NETNS_FD: u32, move the device to the namespace of this fd
 * @NTBSMC_A_POLICY: nested, enum ntbsmc_policy_attr
 */
enum ntbsmc_attr {
	NTBSMC_A_UNSPEC,
	NTBSMC_A_DEV,
	NTBSMC_A_LGR,
	NTBSMC_A_CONN,
	NTBSMC_A_STATS,
	NTBSMC_A_DEV_NAME,
	NTBSMC_A_DEV_ENABLED,
	NTBSMC_A_DEV_NETNS_PID,
	NTBSMC_A_DEV_NETNS_FD,
	NTBSMC_A_PAD,
	NTBSMC_A_POLICY,

	__NTBSMC_A_MAX
};
#define NTBSMC_A_MAX (__NTBSMC_A_MAX - 1)

/*
 * The policy of a namespace: which connections its ntbsmc sockets offer
 * ntbsmc to, however they got the ULP. A connection is offered when it
 * matches no EXCLUDE rule and, if there is any INCLUDE rule, matches one. A
 * rule matches the peer's address (IPv4-mapped IPv6 addresses as IPv4) and the
 * service port: the port a client connects to, the port a server listens on.
 * A client checks before its SYN (not offered: TCP at once, reason
 * %NTBSMC_REASON_POLICY); a server when the handshake starts, and declines
 * (its reason POLICY, the client's %NTBSMC_REASON_DECLINED with peer reason
 * POLICY). A change applies to connections made afterwards.
 */
#define NTBSMC_POLICY_MAX	256

enum ntbsmc_policy_action {
	NTBSMC_POLICY_INCLUDE = 1,
	NTBSMC_POLICY_EXCLUDE,
};

/**
 * enum ntbsmc_policy_attr - a policy rule (in %NTBSMC_A_POLICY)
 * @NTBSMC_POLICY_ID: u32, the rule's id (POLICY_GET, POLICY_DEL)
 * @NTBSMC_POLICY_ACTION: u8, enum ntbsmc_policy_action
 * @NTBSMC_POLICY_FAMILY: u8, AF_INET or AF_INET6; absent: every address
 * @NTBSMC_POLICY_ADDR: binary, 4 or 16 bytes (with FAMILY), no bit set
 *	beyond PREFIXLEN
 * @NTBSMC_POLICY_PREFIXLEN: u8, at most 32 or 128 (with FAMILY; absent: a host)
 * @NTBSMC_POLICY_PORT_MIN: u16, 1-65535 (absent: every port)
 * @NTBSMC_POLICY_PORT_MAX: u16, PORT_MIN to 65535 (absent: PORT_MIN)
 * @NTBSMC_POLICY_HITS: u64, connections this rule decided (POLICY_GET)
 */
enum ntbsmc_policy_attr {
	NTBSMC_POLICY_UNSPEC,
	NTBSMC_POLICY_ID,
	NTBSMC_POLICY_ACTION,
	NTBSMC_POLICY_FAMILY,
	NTBSMC_POLICY_ADDR,
	NTBSMC_POLICY_PREFIXLEN,
	NTBSMC_POLICY_PORT_MIN,
	NTBSMC_POLICY_PORT_MAX,
	NTBSMC_POLICY_HITS,
	NTBSMC_POLICY_PAD,

	__NTBSMC_POLICY_MAX
};
#define NTBSMC_POLICY_ATTR_MAX (__NTBSMC_POLICY_MAX - 1)

/**
 * enum ntbsmc_dev_attr - an NTB device (in %NTBSMC_A_DEV)
 * @NTBSMC_DEV_NAME: string, the NTB device's name
 * @NTBSMC_DEV_FABRIC_ID: binary, 16 bytes, identity of the fabric the port is on
 * @NTBSMC_DEV_STATE: u8, enum ntbsmc_dev_state_uapi
 * @NTBSMC_DEV_ENABLED: u8, used by ntbsmc
 * @NTBSMC_DEV_NETNS_COOKIE: u64, cookie of the namespace it serves
 * @NTBSMC_DEV_WINDOW_SIZE: u64, bytes of the inbound window used
 * @NTBSMC_DEV_MW_COUNT: u32, memory windows the device has
 * @NTBSMC_DEV_DB_COUNT: u32, doorbell bits
 * @NTBSMC_DEV_SPAD_COUNT: u32, scratchpads
 * @NTBSMC_DEV_RMB_SIZE: u32, bytes of receive buffer a connection asks for by
 *	default (net.ntbsmc.rmb_kb); it gets less when the link's space is short
 * @NTBSMC_DEV_RMB_COUNT: u32, connection buffers in use
 * @NTBSMC_DEV_PEER_SYSID: binary, 16 bytes, the peer system (once the link is up)
 * @NTBSMC_DEV_DMA_CHAN: string, the dmaengine channel writing into the peer's
 *	window (absent: writes are CPU copies)
 * @NTBSMC_DEV_RMB_SPACE: u32, bytes of the window for receive buffers (while the
 *	link is up)
 * @NTBSMC_DEV_RMB_FREE: u32, of those, bytes not in use
 * @NTBSMC_DEV_ORPHANS: u32, connections whose socket closed while their buffer
 *	waits for the peer, which attached to it, to close its end (or for the
 *	link to go down)
 * @NTBSMC_DEV_DMA_DEV: string, the device of the DMA engine of
 *	@NTBSMC_DEV_DMA_CHAN (a PCI name for plx_dma, ioatdma)
 * @NTBSMC_DEV_DMA_CHOICE: u8, why that channel: enum ntbsmc_dma_choice
 * @NTBSMC_DEV_HELD: u32, buffers closed after a handshake told the peer of
 *	them and the peer never attached: held until it acknowledges or can no
 *	longer attach (65 s at most). Not orphans: net.ntbsmc.max_orphans does not
 *	count them
 */
enum ntbsmc_dev_attr {
	NTBSMC_DEV_UNSPEC,
	NTBSMC_DEV_NAME,
	NTBSMC_DEV_FABRIC_ID,
	NTBSMC_DEV_STATE,
	NTBSMC_DEV_ENABLED,
	NTBSMC_DEV_NETNS_COOKIE,
	NTBSMC_DEV_WINDOW_SIZE,
	NTBSMC_DEV_MW_COUNT,
	NTBSMC_DEV_DB_COUNT,
	NTBSMC_DEV_SPAD_COUNT,
	NTBSMC_DEV_RMB_SIZE,
	NTBSMC_DEV_RMB_COUNT,
	NTBSMC_DEV_PEER_SYSID,
	NTBSMC_DEV_PAD,
	NTBSMC_DEV_DMA_CHAN,
	NTBSMC_DEV_RMB_SPACE,
	NTBSMC_DEV_RMB_FREE,
	NTBSMC_DEV_ORPHANS,
	NTBSMC_DEV_DMA_DEV,
	NTBSMC_DEV_DMA_CHOICE,
	NTBSMC_DEV_HELD,

	__NTBSMC_DEV_MAX
};
#define NTBSMC_DEV_MAX (__NTBSMC_DEV_MAX - 1)

/*
 * NTBSMC_DEV_DMA_CHOICE values: a device takes the first DMA_MEMCPY channel
 * found in this order of preference.
 */
enum ntbsmc_dma_choice {
	NTBSMC_DMA_CHOICE_SWITCH,	/* the engine is on the NTB device's own
					 * switch (a PEX-87xx's plx_dma beside its
					 * NT port): its writes stay in the switch */
	NTBSMC_DMA_CHOICE_NUMA,		/* on the NTB device's NUMA node */
	NTBSMC_DMA_CHOICE_ANY,		/* any other */

	__NTBSMC_DMA_CHOICE_MAX
};

/* NTBSMC_DEV_STATE values */
enum ntbsmc_dev_state_uapi {
	NTBSMC_DEV_STATE_DOWN,		/* NTB link down */
	NTBSMC_DEV_STATE_BRINGUP,	/* link up, exchanging scratchpads */
	NTBSMC_DEV_STATE_ACTIVE,	/* usable */
};

/**
 * enum ntbsmc_lgr_attr - a link group (in %NTBSMC_A_LGR)
 * @NTBSMC_LGR_ID: u32
 * @NTBSMC_LGR_DEV: string, the NTB device it runs on
 * @NTBSMC_LGR_PEER_SYSID: binary, 16 bytes
 * @NTBSMC_LGR_CONNS: u32, connections
 * @NTBSMC_LGR_TX_BYTES: u64, bytes sent by its closed connections
 * @NTBSMC_LGR_RX_BYTES: u64, bytes received by its closed connections
 * @NTBSMC_LGR_AGE_MS: u64, since it was created
 * @NTBSMC_LGR_IDLE_MS: u64, since its last connection ended (0 while in use)
 */
enum ntbsmc_lgr_attr {
	NTBSMC_LGR_UNSPEC,
	NTBSMC_LGR_ID,
	NTBSMC_LGR_DEV,
	NTBSMC_LGR_PEER_SYSID,
	NTBSMC_LGR_CONNS,
	NTBSMC_LGR_TX_BYTES,
	NTBSMC_LGR_RX_BYTES,
	NTBSMC_LGR_AGE_MS,
	NTBSMC_LGR_IDLE_MS,
	NTBSMC_LGR_PAD,

	__NTBSMC_LGR_MAX
};
#define NTBSMC_LGR_MAX (__NTBSMC_LGR_MAX - 1)

/**
 * enum ntbsmc_conn_attr - a socket with the ntbsmc ULP (in %NTBSMC_A_CONN), as
 *	CONN_GET dumps them: every such socket of the caller's namespace, listeners
 *	and fallen-back connections included, like ss shows sockets
 * @NTBSMC_CONN_FAMILY: u8, AF_INET or AF_INET6
 * @NTBSMC_CONN_STATE: u8, TCP state (TCP_ESTABLISHED, TCP_LISTEN, ...)
 * @NTBSMC_CONN_CLIENT: u8, 1 if this end connected, 0 if it was accepted/listens
 * @NTBSMC_CONN_LOCAL_ADDR: binary, 4 or 16 bytes, network order
 * @NTBSMC_CONN_LOCAL_PORT: u16, host order
 * @NTBSMC_CONN_PEER_ADDR: binary, 4 or 16 bytes, network order
 * @NTBSMC_CONN_PEER_PORT: u16, host order
 * @NTBSMC_CONN_MODE: u32, enum ntbsmc_mode
 * @NTBSMC_CONN_REASON: u32, enum ntbsmc_reason (mode TCP)
 * @NTBSMC_CONN_PEER_REASON: u32, enum ntbsmc_reason the peer gave (reason DECLINED)
 * @NTBSMC_CONN_UID: u32, owner of the socket, in the caller's user namespace
 * @NTBSMC_CONN_INODE: u64, the socket's inode number (as ss -e shows it)
 * @NTBSMC_CONN_LGR_ID: u32, link group (NTB mode only, like all below)
 * @NTBSMC_CONN_DEV: string, NTB device the link group runs on
 * @NTBSMC_CONN_RMB_SIZE: u32, bytes of our receive buffer
 * @NTBSMC_CONN_PEER_RMB_SIZE: u32, bytes of the peer's receive buffer
 * @NTBSMC_CONN_TX_PROD: u64, our producer cursor (bytes written to the peer)
 * @NTBSMC_CONN_TX_CONS: u64, the peer's consumer cursor (bytes it has read)
 * @NTBSMC_CONN_RX_PROD: u64, the peer's producer cursor (bytes it wrote to us)
 * @NTBSMC_CONN_RX_CONS: u64, our consumer cursor (bytes we have read)
 * @NTBSMC_CONN_TX_BYTES: u64, payload bytes sent over NTB
 * @NTBSMC_CONN_RX_BYTES: u64, payload bytes received over NTB
 * @NTBSMC_CONN_CPU_BYTES: u64, of @NTBSMC_CONN_TX_BYTES, copied by the CPU
 * @NTBSMC_CONN_DMA_BYTES: u64, of @NTBSMC_CONN_TX_BYTES, moved by DMA
 * @NTBSMC_CONN_ZC_BYTES: u64, of @NTBSMC_CONN_DMA_BYTES, straight from the
 *	sender's pages (zero-copy)
 * @NTBSMC_CONN_LINK_WRITES: u64, posted writes of this connection into the
 *	peer's window (as %NTBSMC_STATS_LINK_WRITES)
 * @NTBSMC_CONN_LINK_WRITE_BYTES: u64, their bytes
 * @NTBSMC_CONN_LINK_READS: u64, reads of the peer's window across the link
 * @NTBSMC_CONN_DOORBELLS: u64, doorbells rung for this connection
 * @NTBSMC_CONN_VERSION: u32, the protocol version its handshake agreed on (a
 *	connection that ran over NTB, in any mode since)
 * @NTBSMC_CONN_FLAGS: u32, NTBSMC_INFO_F_* (likewise)
 * @NTBSMC_CONN_SWITCH_TIME: u64, when it moved from NTB to TCP
 *	(CLOCK_REALTIME, ns; only once it did)
 */
enum ntbsmc_conn_attr {
	NTBSMC_CONN_UNSPEC,
	NTBSMC_CONN_FAMILY,
	NTBSMC_CONN_STATE,
	NTBSMC_CONN_CLIENT,
	NTBSMC_CONN_LOCAL_ADDR,
	NTBSMC_CONN_LOCAL_PORT,
	NTBSMC_CONN_PEER_ADDR,
	NTBSMC_CONN_PEER_PORT,
	NTBSMC_CONN_MODE,
	NTBSMC_CONN_REASON,
	NTBSMC_CONN_PEER_REASON,
	NTBSMC_CONN_UID,
	NTBSMC_CONN_INODE,
	NTBSMC_CONN_LGR_ID,
	NTBSMC_CONN_DEV,
	NTBSMC_CONN_RMB_SIZE,
	NTBSMC_CONN_PEER_RMB_SIZE,
	NTBSMC_CONN_TX_PROD,
	NTBSMC_CONN_TX_CONS,
	NTBSMC_CONN_RX_PROD,
	NTBSMC_CONN_RX_CONS,
	NTBSMC_CONN_TX_BYTES,
	NTBSMC_CONN_RX_BYTES,
	NTBSMC_CONN_CPU_BYTES,
	NTBSMC_CONN_DMA_BYTES,
	NTBSMC_CONN_PAD,
	NTBSMC_CONN_ZC_BYTES,
	NTBSMC_CONN_LINK_WRITES,
	NTBSMC_CONN_LINK_WRITE_BYTES,
	NTBSMC_CONN_LINK_READS,
	NTBSMC_CONN_DOORBELLS,
	NTBSMC_CONN_VERSION,
	NTBSMC_CONN_FLAGS,
	NTBSMC_CONN_SWITCH_TIME,

	__NTBSMC_CONN_MAX
};
#define NTBSMC_CONN_MAX (__NTBSMC_CONN_MAX - 1)

/**
 * enum ntbsmc_stats_attr - counters of a namespace (in %NTBSMC_A_STATS), u64 each
 * @NTBSMC_STATS_CONN_NTB: connections that ran over NTB
 * @NTBSMC_STATS_CONN_TCP: connections that fell back to TCP
 * @NTBSMC_STATS_HS_ERR: handshakes ended by a malformed message
 * @NTBSMC_STATS_TX_BYTES: payload bytes sent over NTB
 * @NTBSMC_STATS_RX_BYTES: payload bytes received over NTB
 * @NTBSMC_STATS_DB_TX: doorbells rung
 * @NTBSMC_STATS_DB_RX: doorbell events handled
 * @NTBSMC_STATS_DB_SUPPRESSED: cursor updates that needed no doorbell
 * @NTBSMC_STATS_BUF_FULL: times a writer found the peer's buffer full
 * @NTBSMC_STATS_ABORT: connections reset (invalid peer value, link down)
 * @NTBSMC_STATS_CPU_BYTES: payload bytes copied by the CPU
 * @NTBSMC_STATS_DMA_BYTES: payload bytes moved by DMA
 * @NTBSMC_STATS_FB_CLIENT: nested, u64 per enum ntbsmc_reason (attr = reason + 1)
 * @NTBSMC_STATS_FB_SERVER: nested, likewise for server-side connections
 * @NTBSMC_STATS_ZC_BYTES: of @NTBSMC_STATS_DMA_BYTES, moved straight from the
 *	sender's pages (zero-copy)
 * @NTBSMC_STATS_DMA_FAILED: DMA writes that failed, timed out or were aborted and
 *	were redone by the CPU (their bytes count as CPU bytes)
 * @NTBSMC_STATS_NOTIFY_LOST: notifications that never came: a periodic re-check
 *	(sysctl net.ntbsmc.recheck_ms) found data or space a waiting socket had
 *	asked to be rung for, unannounced for a whole period, and woke it. Zero
 *	unless a peer (or this host) has a bug.
 * @NTBSMC_STATS_LINK_WRITES: posted writes into the peer's window (payload,
 *	cursors, flags, events; a DMA segment counts as one), the sum of the three
 *	size classes below
 * @NTBSMC_STATS_LINK_WRITES_SMALL: of those, of at most 64 bytes
 * @NTBSMC_STATS_LINK_WRITES_MEDIUM: of more than 64 and at most 4096 bytes
 * @NTBSMC_STATS_LINK_WRITES_LARGE: of more than 4096 bytes
 * @NTBSMC_STATS_LINK_WRITE_BYTES: bytes of all of them
 * @NTBSMC_STATS_LINK_READS: reads of the peer's window across the link (each
 *	stalls the CPU for a round trip on hardware)
 * @NTBSMC_STATS_IRQ: doorbell interrupts taken
 * @NTBSMC_STATS_NO_MIRROR: connections of protocol version 7 that could not
 *	keep the copy of their writes a switch of transport resends from: they
 *	are reset on link loss, as version 6's are
 * @NTBSMC_STATS_SWITCH_TCP: connections moved from NTB to their TCP connection
 *	(the link went)
 * @NTBSMC_STATS_SWITCH_RESENT: bytes those switches sent again over TCP (sent
 *	over NTB, not known to have landed)
 * @NTBSMC_STATS_SWITCH_FAILED: switches that ended in a reset (a peer that did
 *	not answer in switch_timeout_ms, a bad SWITCH, TCP failing, no memory)
 */
enum ntbsmc_stats_attr {
	NTBSMC_STATS_UNSPEC,
	NTBSMC_STATS_CONN_NTB,
	NTBSMC_STATS_CONN_TCP,
	NTBSMC_STATS_HS_ERR,
	NTBSMC_STATS_TX_BYTES,
	NTBSMC_STATS_RX_BYTES,
	NTBSMC_STATS_DB_TX,
	NTBSMC_STATS_DB_RX,
	NTBSMC_STATS_DB_SUPPRESSED,
	NTBSMC_STATS_BUF_FULL,
	NTBSMC_STATS_ABORT,
	NTBSMC_STATS_CPU_BYTES,
	NTBSMC_STATS_DMA_BYTES,
	NTBSMC_STATS_FB_CLIENT,
	NTBSMC_STATS_FB_SERVER,
	NTBSMC_STATS_PAD,
	NTBSMC_STATS_ZC_BYTES,
	NTBSMC_STATS_DMA_FAILED,
	NTBSMC_STATS_NOTIFY_LOST,
	NTBSMC_STATS_ORPHAN_RESET,
	NTBSMC_STATS_HS_PEAK,
	NTBSMC_STATS_HS_CONGESTED,
	NTBSMC_STATS_LINK_WRITES,
	NTBSMC_STATS_LINK_WRITES_SMALL,
	NTBSMC_STATS_LINK_WRITES_MEDIUM,
	NTBSMC_STATS_LINK_WRITES_LARGE,
	NTBSMC_STATS_LINK_WRITE_BYTES,
	NTBSMC_STATS_LINK_READS,
	NTBSMC_STATS_IRQ,
	NTBSMC_STATS_NO_MIRROR,
	NTBSMC_STATS_SWITCH_TCP,
	NTBSMC_STATS_SWITCH_RESENT,
	NTBSMC_STATS_SWITCH_FAILED,

	__NTBSMC_STATS_MAX
};
#define NTBSMC_STATS_MAX (__NTBSMC_STATS_MAX - 1)

#endif /* _UAPI_LINUX_NTBSMC_H */
