/* SPDX-License-Identifier: GPL-2.0 */
/* ntbsmc: formats that cross the link: the memory window layout and the handshake. */
#ifndef NTBSMC_WIRE_H
#define NTBSMC_WIRE_H

#include <linux/bits.h>
#include <linux/types.h>
#include <linux/build_bug.h>
#include <linux/stddef.h>
#include <linux/sizes.h>

/*
 * Memory window layout. Each side owns an inbound window that only its peer writes
 * (posted writes through the peer's outbound mapping) and only it reads (local
 * memory). Everything a side needs to read is therefore local; everything it tells
 * the peer is a remote write. All fields are little endian and each has a single
 * writer: the peer.
 *
 *   0                    struct ntbsmc_win_hdr   (event ring for the window's owner)
 *   NTBSMC_SLOT_OFFSET   struct ntbsmc_slot[]    (control blocks, by slot)
 *   NTBSMC_RMB_OFFSET    receive buffers (RMBs), in units of NTBSMC_RMB_UNIT
 *
 * A connection's RMB is a power of two of 16 KiB to 4 MiB, aligned in the RMB area
 * to its own size. Its slot is the number of its first unit: the RMB starts at
 * NTBSMC_RMB_OFFSET + slot * NTBSMC_RMB_UNIT, and its control block is
 * struct ntbsmc_slot number slot.
 */
#define NTBSMC_WIN_MAGIC	0x4e54534d	/* "NTSM" */
#define NTBSMC_EV_RING		256		/* power of two */
#define NTBSMC_SLOT_OFFSET	4096
#define NTBSMC_SLOT_MAX		1024
#define NTBSMC_RMB_OFFSET	(NTBSMC_SLOT_OFFSET + NTBSMC_SLOT_MAX * 64)
#define NTBSMC_RMB_UNIT		SZ_16K
#define NTBSMC_RMB_MAX		SZ_4M

struct ntbsmc_win_hdr {
	__le32 magic;
	__le32 epoch;		/* the writer's link epoch */
	__le32 reserved;
	/* The writer's count of events it found no room for: owner rescans */
	__le32 ev_overflow;
	/*
	 * How far the writer consumed the owner's events in the writer's window:
	 * written every NTBSMC_EV_CONS_BATCH entries, so the owner sees the ring
	 * fuller than it is, never emptier
	 */
	__le32 ev_cons;
	/*
	 * The writer's link secret of this epoch (since version 4): random, written once
	 * before @epoch, never sent anywhere else. Only a host that reads this
	 * window across the NTB link knows it: the key of the writer's handshake
	 * MACs (clc.c). All zero: the writer has not written it (yet).
	 */
	u8 secret[32];
	__le32 pad[3];
	/* Events for the window's owner: ntbsmc_ev_entry(), ring order */
	__le32 ev[NTBSMC_EV_RING];
};

#define NTBSMC_EV_CONS_BATCH	(NTBSMC_EV_RING / 8)

/*
 * An event names a slot whose control block changed. It carries its own
 * validity, so that one posted write publishes it: a tag of the ring's lap and
 * of the owner's link epoch, never zero. A stale entry (an earlier lap, an
 * earlier epoch, a cleared header) does not match the tag the owner expects next:
 * the tag holds the epoch's low byte, and the owner never starts an epoch whose
 * byte the writer may still post with (dev.c). That is the owner's choice
 * alone, so a writer of any version 5 build is held to it.
 */
#define NTBSMC_EV_SLOT_BITS	10
static_assert(NTBSMC_SLOT_MAX <= 1 << NTBSMC_EV_SLOT_BITS);
/* Of the owner's epoch, the tag holds the low byte: this many values */
#define NTBSMC_EV_EPOCH_TAGS	256

static inline u32 ntbsmc_ev_tag(u32 owner_epoch, u32 seq)
{
	return ((seq / NTBSMC_EV_RING) & 0x1fff) |
	       ((owner_epoch % NTBSMC_EV_EPOCH_TAGS) << 13) | BIT(21);
}

static inline u32 ntbsmc_ev_entry(u32 owner_epoch, u32 seq, u32 slot)
{
	return ntbsmc_ev_tag(owner_epoch, seq) << NTBSMC_EV_SLOT_BITS | slot;
}

/* Flags a side publishes about its end of a connection (ntbsmc_slot.flags) */
#define NTBSMC_F_WANT_DATA	0x01	/* ring me when you produce */
#define NTBSMC_F_WANT_SPACE	0x02	/* ring me when you consume */
#define NTBSMC_F_WRITE_DONE	0x04	/* no more data from me (FIN) */
#define NTBSMC_F_CLOSED		0x08	/* I closed: I read nothing more */
#define NTBSMC_F_ABORT		0x10	/* connection reset */
/*
 * Your CLOSED reached me: I write nothing more into your slot, not even a
 * cursor, so you may reuse it while my socket stays open (version 3).
 */
#define NTBSMC_F_DETACHED	0x20
#define NTBSMC_F_VALID		0x3f
/*
 * The high half of the flags word counts the times the writer set a WANT flag
 * (version 5): each setting asks the owner, once, whether it published what the
 * writer has not seen (ntbsmc_slot.seen_*). See "Notifications" in conn.c.
 */
#define NTBSMC_F_WANT_SEQ_SHIFT	16

/*
 * Control block of one connection in the window of the side that receives through
 * its RMB. Written by the peer: the peer's producer cursor into this RMB, the peer's
 * consumer cursor of its own RMB (the credit for what this side sent), its flags.
 * Cursors are byte counts since the connection started; they never wrap.
 */
struct ntbsmc_slot {
	__le32 token;		/* connection this block currently belongs to */
	__le32 flags;		/* NTBSMC_F_*, and the want sequence above them */
	__le64 prod;
	__le64 cons;
	/*
	 * When the writer last set a WANT flag: the owner's producer (WANT_DATA)
	 * or consumer (WANT_SPACE) cursor as the writer had seen it. Written
	 * before the flags.
	 */
	__le64 seen_prod;
	__le64 seen_cons;
	__le32 pad[6];
};

static_assert(sizeof(struct ntbsmc_win_hdr) <= NTBSMC_SLOT_OFFSET);
static_assert(offsetof(struct ntbsmc_win_hdr, ev) == 64);
static_assert(offsetof(struct ntbsmc_slot, seen_prod) == 24);
static_assert(sizeof(struct ntbsmc_slot) == 64);

/* Where slot @slot's control block and RMB are in a window: the layout at the top. */
static inline size_t ntbsmc_ctl_off(u32 slot)
{
	return NTBSMC_SLOT_OFFSET + (size_t)slot * sizeof(struct ntbsmc_slot);
}

static inline size_t ntbsmc_rmb_off(u32 slot)
{
	return NTBSMC_RMB_OFFSET + (size_t)slot * NTBSMC_RMB_UNIT;
}

/*
 * Link bring-up through scratchpads (written into the peer's, read from ours), so
 * that hardware without message registers (PEX-8749) works. The epoch is written
 * last: a non-zero epoch means the rest is valid.
 */
enum {
	NTBSMC_SPAD_MAGIC,	/* NTBSMC_SPAD_MAGIC_V1 */
	NTBSMC_SPAD_SYSID0,	/* 16-byte system identity, 4 scratchpads */
	NTBSMC_SPAD_SYSID1,
	NTBSMC_SPAD_SYSID2,
	NTBSMC_SPAD_SYSID3,
	NTBSMC_SPAD_WIN_KB,	/* size of the inbound window translated, KiB */
	NTBSMC_SPAD_RSVD,
	NTBSMC_SPAD_EPOCH,
	NTBSMC_SPAD_COUNT	/* 8: what a PEX-8749 NT port has */
};

#define NTBSMC_SPAD_MAGIC_V1	0x4e540001

/* Doorbell bits */
#define NTBSMC_DB_EVENT		0	/* events in the ring */
#define NTBSMC_DB_BRINGUP	1	/* scratchpads changed */

/*
 * Handshake over the TCP connection, after both ends offered ntbsmc in the SYN and
 * SYN-ACK (versions 6 and 7):
 *
 *   client                                    server
 *   HELLO (a valid SMC-R v1 CLC DECLINE) -->
 *                                         <-- CHALLENGE (server system, nonce)
 *   PROPOSAL (system, fabric, nonce, MAC) -->
 *                                         <-- ACCEPT (RMB, MAC) | DECLINE (reason)
 *   CONFIRM (RMB, MAC) | DECLINE (reason, MAC) -->
 *
 * The client's first message is a well-formed SMC-R CLC DECLINE carrying the
 * ntbsmc marker in its system id: a Linux SMC server (which answers the same SYN
 * option) reads it as "peer declined" and falls back to TCP without sending a byte,
 * and nothing else is sent until the server proved it speaks ntbsmc. A Linux SMC
 * client sends an SMC PROPOSAL first; the server consumes it, answers with an SMC
 * DECLINE and both fall back. Our own messages are framed with a magic, a type, a
 * version and an exact length per type, and a trailer.
 *
 * Proof of NTB presence. At every link epoch each side writes a fresh random
 * secret into the header of its peer's window (ntbsmc_win_hdr.secret): only a
 * host that reads that window across the NTB link learns it. A side's MACs are
 * keyed by the secret its peer wrote there, and cover this TCP connection's
 * addresses and ports and every byte of the handshake up to the MAC itself, both
 * nonces included:
 *
 *   PROPOSAL.mac = MAC(server's secret, "ntbsmc6P" ID HELLO CHALLENGE PROPOSAL[..mac])
 *   ACCEPT.mac   = MAC(client's secret, "ntbsmc6A" ID ... PROPOSAL ACCEPT[..mac])
 *   CONFIRM.mac  = MAC(server's secret, "ntbsmc6C" ID ... ACCEPT CONFIRM[..mac])
 *   DECLINE.mac  = MAC(server's secret, "ntbsmc6D" ID ... ACCEPT DECLINE[..mac])
 *
 * ID is struct ntbsmc_clc_tcp_id: the client's and the server's address and
 * port, each end filling it from its own socket. A relay or a NAT changes one of
 * them, so the MACs fail and the connection stays TCP.
 *
 * MAC(k, m) is SipHash-2-4(k[0..15], m) || SipHash-2-4(k[16..31], m), each
 * little endian: 128 bits under two independent keys. Neither nonce repeats, so
 * a recorded handshake proves nothing the second time.
 *
 * What each message authorises, so that no side exposes, holds or frees a buffer
 * on the word of a party that has not proved NTB presence on this connection:
 *
 *   PROPOSAL  the client proved presence; nothing is allocated on either side.
 *   ACCEPT    the server, having checked the PROPOSAL, names its RMB: the
 *             client, having checked the ACCEPT, allocates its own, attaches to
 *             the server's (writes its control block) and then writes data
 *             into it. The server holds its RMB from here until the client
 *             acknowledges or can no longer attach.
 *   CONFIRM   names the client's RMB: the server attaches to it and writes
 *             into it only once this MAC checked. The client holds its RMB
 *             from here until the server acknowledges or can no longer attach.
 *   DECLINE   in place of the ACCEPT it changes nothing (the client has
 *             allocated nothing) and needs no MAC. In place of the CONFIRM it
 *             tells the server that the client did not attach, so the server
 *             frees its RMB at once: only with a MAC that checks. One without
 *             is not believed; the server resets the connection and holds the
 *             RMB as after a timeout.
 *
 * Versions. A client says the highest version it speaks in its HELLO
 * (reserved[0]); the server's CHALLENGE offers the range it speaks (6 to 7, or
 * 6 alone with sysctl switch=0); the client picks the highest version both
 * speak and names it in its PROPOSAL, whose MAC covers the CHALLENGE: a relay
 * that narrows the offer breaks the proof. A client of version 4 or 5 declines
 * a CHALLENGE without its version (reason version on both ends); a client
 * older than version 4 gets a HELLO_ACK, which it cannot decline but by its
 * version-3 PROPOSAL (reset). A client declines a CHALLENGE it shares no
 * version with (version) and a HELLO_ACK (auth). Versions 6 and 7 differ only
 * after the handshake: version 7 can move the connection to its TCP
 * connection and back (Documentation/switch.md), keyed by two keys each end
 * derives once the CONFIRM checked, one per direction:
 *
 *   key(k) = MAC(k, "ntbsmc7K" ID ... CONFIRM) || MAC(k, "ntbsmc7L" ID ... CONFIRM)
 *
 * with k the key of that direction's handshake MACs (the client's direction:
 * the server's secret), so that a SWITCH proves what the handshake proved, on
 * this connection only.
 */
#define NTBSMC_SMC_EYECATCHER	"\xe2\xd4\xc3\xd9"	/* "SMCR" in EBCDIC */
#define NTBSMC_SMC_PROPOSAL	0x01
#define NTBSMC_SMC_DECLINE	0x04
#define NTBSMC_SMC_V1		0x10	/* version 1 in the high nibble */
#define NTBSMC_SMC_PEERNOSMC	0x03010000
#define NTBSMC_SMC_MAX_LEN	4096	/* longest SMC PROPOSAL we consume */
#define NTBSMC_HELLO_ID		"NTBSMC\x00\x01"

struct ntbsmc_smc_decline {
	u8 eyecatcher[4];
	u8 type;
	__be16 length;
	u8 version;
	u8 id_for_peer[8];
	__be32 peer_diagnosis;
	u8 os_type;
	u8 reserved[3];		/* ours: [0] the highest version a HELLO's client speaks */
	u8 trailer[4];
} __packed;

static_assert(sizeof(struct ntbsmc_smc_decline) == 28);

#define NTBSMC_CLC_MAGIC	"NTBS"
#define NTBSMC_CLC_TRAILER	"SBTN"
/*
 * The header's version is that of the framing, which every version keeps, so
 * that two ends of different versions read each other's HELLO_ACK and DECLINE.
 * Version 2: RMBs of any size, placed by slot. Version 3: the DETACHED flag.
 * Version 4: the proof of NTB presence. Version 5: events of one write each, the
 * want sequence and seen cursors (no read across the link). Version 6: the
 * proofs come before any buffer is named, cover the TCP connection's addresses,
 * and the CONFIRM and a DECLINE after the ACCEPT carry one; no older version is
 * spoken. Version 7: the switch keys (above); version 6 is still spoken.
 */
#define NTBSMC_CLC_FRAME_VERSION	1
#define NTBSMC_CLC_VERSION	7
/* The oldest version we speak, and the first that switches transport */
#define NTBSMC_CLC_VERSION_MIN		6
#define NTBSMC_CLC_VERSION_SWITCH	7
/* The oldest client version that reads a CHALLENGE (and so declines ours). */
#define NTBSMC_CLC_VERSION_CHALLENGE	4

#define NTBSMC_NONCE_LEN	16
#define NTBSMC_MAC_LEN		16
#define NTBSMC_SECRET_LEN	32
#define NTBSMC_MAC_LABEL_PROPOSAL	"ntbsmc6P"
#define NTBSMC_MAC_LABEL_ACCEPT		"ntbsmc6A"
#define NTBSMC_MAC_LABEL_CONFIRM	"ntbsmc6C"
#define NTBSMC_MAC_LABEL_DECLINE	"ntbsmc6D"
#define NTBSMC_KEY_LABEL_SWITCH0	"ntbsmc7K"
#define NTBSMC_KEY_LABEL_SWITCH1	"ntbsmc7L"

enum ntbsmc_clc_type {
	NTBSMC_CLC_HELLO_ACK = 1,	/* to a client older than this version */
	NTBSMC_CLC_PROPOSAL,
	NTBSMC_CLC_ACCEPT,
	NTBSMC_CLC_CONFIRM,
	NTBSMC_CLC_DECLINE,
	NTBSMC_CLC_CHALLENGE,		/* version 4's answer to HELLO */
	NTBSMC_CLC_DECLINE_MAC,		/* version 6: the client's DECLINE of an ACCEPT */
	NTBSMC_CLC_SWITCH,		/* version 7, after the handshake: switch.md */
};

struct ntbsmc_clc_hdr {
	u8 magic[4];
	u8 type;
	u8 version;
	__be16 length;		/* whole message, header and trailer included */
} __packed;

struct ntbsmc_clc_trailer {
	u8 magic[4];
} __packed;

struct ntbsmc_clc_hello_ack {
	struct ntbsmc_clc_hdr hdr;
	u8 version_min;
	u8 version_max;
	u8 reserved[2];
	u8 sysid[16];
	struct ntbsmc_clc_trailer trl;
} __packed;

struct ntbsmc_clc_challenge {
	struct ntbsmc_clc_hdr hdr;
	u8 version_min;
	u8 version_max;
	u8 reserved[2];
	u8 sysid[16];
	u8 nonce[NTBSMC_NONCE_LEN];
	struct ntbsmc_clc_trailer trl;
} __packed;

/* The RMB a side offers: its slot (first unit) in its window, token, size. */
struct ntbsmc_clc_rmb {
	__be32 slot;
	__be32 token;
	__be32 size;
	__be32 epoch;		/* the offerer's link epoch */
} __packed;

/* No buffer: the client names its own only in the CONFIRM. */
struct ntbsmc_clc_proposal {
	struct ntbsmc_clc_hdr hdr;
	u8 version;
	u8 reserved[3];
	u8 sysid[16];
	u8 fabric_id[16];
	u8 nonce[NTBSMC_NONCE_LEN];
	u8 mac[NTBSMC_MAC_LEN];
	struct ntbsmc_clc_trailer trl;
} __packed;

struct ntbsmc_clc_accept {
	struct ntbsmc_clc_hdr hdr;
	struct ntbsmc_clc_rmb rmb;
	u8 mac[NTBSMC_MAC_LEN];
	struct ntbsmc_clc_trailer trl;
} __packed;

struct ntbsmc_clc_confirm {
	struct ntbsmc_clc_hdr hdr;
	struct ntbsmc_clc_rmb rmb;
	u8 mac[NTBSMC_MAC_LEN];
	struct ntbsmc_clc_trailer trl;
} __packed;

/* Any version: what ends a handshake that named no buffer yet. */
struct ntbsmc_clc_decline {
	struct ntbsmc_clc_hdr hdr;
	__be32 reason;		/* enum ntbsmc_reason */
	struct ntbsmc_clc_trailer trl;
} __packed;

/* The client's DECLINE of an ACCEPT: "I did not attach", under its MAC. */
struct ntbsmc_clc_decline_mac {
	struct ntbsmc_clc_hdr hdr;
	__be32 reason;		/* enum ntbsmc_reason */
	u8 mac[NTBSMC_MAC_LEN];
	struct ntbsmc_clc_trailer trl;
} __packed;

/*
 * Version 7: an end that stopped writing into the peer's buffer says how far it
 * received there (@rx_end: the peer resends from it over TCP) and how far it
 * sent (@tx_end); with NTBSMC_SWITCH_WRITE_DONE its stream ends at @tx_end (a
 * FIN follows its resend). @seq counts the connection's switches from 1.
 * mac = MAC(the sender's switch key, "ntbsmc7S" SWITCH[..mac]).
 */
#define NTBSMC_MAC_LABEL_SWITCH		"ntbsmc7S"
#define NTBSMC_SWITCH_WRITE_DONE	0x01
struct ntbsmc_clc_switch {
	struct ntbsmc_clc_hdr hdr;
	u8 seq;
	u8 flags;
	u8 reserved[2];
	__be64 rx_end;
	__be64 tx_end;
	u8 mac[NTBSMC_MAC_LEN];
	struct ntbsmc_clc_trailer trl;
} __packed;

/*
 * The TCP connection a handshake runs on, as both ends name it: IPv4 addresses
 * mapped into IPv6 (::ffff:a.b.c.d), ports in network order.
 */
struct ntbsmc_clc_tcp_id {
	u8 client_addr[16];
	u8 server_addr[16];
	__be16 client_port;
	__be16 server_port;
} __packed;

static_assert(sizeof(struct ntbsmc_clc_hello_ack) == 32);
static_assert(sizeof(struct ntbsmc_clc_challenge) == 48);
static_assert(sizeof(struct ntbsmc_clc_proposal) == 80);
static_assert(sizeof(struct ntbsmc_clc_accept) == 44);
static_assert(sizeof(struct ntbsmc_clc_confirm) == 44);
static_assert(sizeof(struct ntbsmc_clc_decline) == 16);
static_assert(sizeof(struct ntbsmc_clc_decline_mac) == 32);
static_assert(sizeof(struct ntbsmc_clc_tcp_id) == 36);
static_assert(sizeof(struct ntbsmc_clc_switch) == 48);

#define NTBSMC_CLC_MAX_LEN	sizeof(struct ntbsmc_clc_proposal)

#endif /* NTBSMC_WIRE_H */
