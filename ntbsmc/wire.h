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
 * SYN-ACK:
 *
 *   client                                    server
 *   HELLO (a valid SMC-R v1 CLC DECLINE) -->
 *                                         <-- CHALLENGE (server system, nonce)
 *   PROPOSAL (system, fabric, RMB,
 *             nonce, MAC)                -->
 *                                         <-- ACCEPT (RMB, MAC) | DECLINE (reason)
 *   CONFIRM | DECLINE (reason)           -->
 *
 * The client's first message is a well-formed SMC-R CLC DECLINE carrying the
 * ntbsmc marker in its system id: a Linux SMC server (which answers the same SYN
 * option) reads it as "peer declined" and falls back to TCP without sending a byte,
 * and nothing else is sent until the server proved it speaks ntbsmc. A Linux SMC
 * client sends an SMC PROPOSAL first; the server consumes it, answers with an SMC
 * DECLINE and both fall back. Our own messages are framed with a magic, a type, a
 * version and an exact length per type, and a trailer.
 *
 * Proof of NTB presence (since version 4). At every link epoch each side writes
 * a fresh random secret into the header of its peer's window (ntbsmc_win_hdr.secret):
 * only a host that reads that window across the NTB link learns it. A side's
 * handshake MAC is keyed by the secret its peer wrote there, and covers every byte
 * of the handshake up to the MAC itself, both nonces included:
 *
 *   PROPOSAL.mac = MAC(server's secret, "ntbsmc4P" HELLO CHALLENGE PROPOSAL[..mac])
 *   ACCEPT.mac   = MAC(client's secret, "ntbsmc4A" HELLO CHALLENGE PROPOSAL
 *                                                   ACCEPT[..mac])
 *
 * MAC(k, m) is SipHash-2-4(k[0..15], m) || SipHash-2-4(k[16..31], m), each
 * little endian: 128 bits under two independent keys (the labels keep the
 * "4" of the version that introduced them). The server checks the PROPOSAL
 * before it allocates or writes anything; the client checks the ACCEPT before
 * it writes into the server's window. Neither nonce repeats, so a recorded
 * handshake proves nothing the second time.
 *
 * Versions. A client says the highest version it speaks in its HELLO
 * (reserved[0]; zero before version 4). A server of version 3 or older ignores
 * that and answers with a HELLO_ACK, which we decline (reason auth: it would
 * believe anyone). We answer the HELLO of an older client with a HELLO_ACK that
 * offers only our version: a version-3 client declines it (reason version), a
 * version-4 one takes it for an older server's (reason auth); either way we
 * count auth. A version-4 server answers our HELLO with a CHALLENGE offering
 * only version 4, which we decline (reason version). PROPOSAL and ACCEPT are
 * sent only between two ends of this version, after the CHALLENGE.
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
 * want sequence and seen cursors (no read across the link); no older version is
 * spoken.
 */
#define NTBSMC_CLC_FRAME_VERSION	1
#define NTBSMC_CLC_VERSION	5

#define NTBSMC_NONCE_LEN	16
#define NTBSMC_MAC_LEN		16
#define NTBSMC_SECRET_LEN	32
#define NTBSMC_MAC_LABEL_PROPOSAL	"ntbsmc4P"
#define NTBSMC_MAC_LABEL_ACCEPT		"ntbsmc4A"

enum ntbsmc_clc_type {
	NTBSMC_CLC_HELLO_ACK = 1,	/* to a client older than this version */
	NTBSMC_CLC_PROPOSAL,
	NTBSMC_CLC_ACCEPT,
	NTBSMC_CLC_CONFIRM,
	NTBSMC_CLC_DECLINE,
	NTBSMC_CLC_CHALLENGE,		/* the answer to HELLO, since version 4 */
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

struct ntbsmc_clc_proposal {
	struct ntbsmc_clc_hdr hdr;
	u8 version;
	u8 reserved[3];
	u8 sysid[16];
	u8 fabric_id[16];
	struct ntbsmc_clc_rmb rmb;
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
	struct ntbsmc_clc_trailer trl;
} __packed;

struct ntbsmc_clc_decline {
	struct ntbsmc_clc_hdr hdr;
	__be32 reason;		/* enum ntbsmc_reason */
	struct ntbsmc_clc_trailer trl;
} __packed;

static_assert(sizeof(struct ntbsmc_clc_hello_ack) == 32);
static_assert(sizeof(struct ntbsmc_clc_challenge) == 48);
static_assert(sizeof(struct ntbsmc_clc_proposal) == 96);
static_assert(sizeof(struct ntbsmc_clc_accept) == 44);

#define NTBSMC_CLC_MAX_LEN	sizeof(struct ntbsmc_clc_proposal)

#endif /* NTBSMC_WIRE_H */
