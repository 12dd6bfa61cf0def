// SPDX-License-Identifier: GPL-2.0
/* KUnit tests of ntb_hw_plx's chip logic: golden register-write traces on a fake PEX-87xx. */

/*
 * The fake backend is plain memory (BAR0, the B2B space, config space, Link
 * Status) that records every write; its only side effects are a test's hooks:
 * a register that ignores writes until read a few times (a Test Pattern
 * register after a link down), and all ones on every read (surprise removal).
 * Expected traces were worked out by hand from the register map, not from
 * chip.c. The port is NT0's Virtual Interface (our page 0x3e000, the Link page
 * 0x3f000) unless a test says otherwise. The requester-ID registers read 0x0308
 * (NT0 Virtual), 0x0408 (NT0 Link), 0x0510 (NT1 Virtual), 0x0610 (NT1 Link).
 */

#include <kunit/test.h>
#include <linux/device.h>
#include <linux/mm.h>
#include <linux/pci_regs.h>
#include <linux/platform_device.h>
#include <linux/sizes.h>
#include <linux/workqueue.h>

#include "ntb_hw_plx.h"

#define FAKE_SPACE_SIZE		SZ_256K
#define FAKE_CFG_SIZE		SZ_4K
#define FAKE_TRACE_MAX		4096
#define LNKSTA_UP_X4		(PCI_EXP_LNKSTA_NLW_X4 | PCI_EXP_LNKSTA_CLS_2_5GB)

struct plx_w {
	enum plx_space space;
	u32 off;
	u32 val;
};

#define W0(o, v)	{ PLX_SPACE_BAR0, (o), (v) }
#define WB(o, v)	{ PLX_SPACE_B2B, (o), (v) }
#define W_END		{ PLX_SPACE_BAR0, ~0U, 0 }	/* ends a group of writes */

struct plx_fake {
	struct kunit *test;
	u32 *bar0;
	u32 *b2b;
	u32 cfg[FAKE_CFG_SIZE / 4];
	u16 lnksta;
	bool gone;			/* every read: all ones (surprise removal) */
	bool regs_gone;			/* only rd32: all ones */
	bool peer_silent;		/* B2B reads: all ones (peer not set up) */
	/* a register that ignores writes until it has been read ro_reads times */
	enum plx_space ro_space;
	u32 ro_off;
	unsigned int ro_reads;		/* 0: no hook; UINT_MAX: for ever */
	struct plx_w *trace;
	unsigned int n;			/* writes, even beyond FAKE_TRACE_MAX */
	int line;			/* of the check, for messages */
};

static u32 *fake_regs(struct plx_fake *f, enum plx_space space)
{
	return space == PLX_SPACE_B2B ? f->b2b : f->bar0;
}

static bool fake_bad(struct plx_fake *f, u32 off)
{
	if (off < FAKE_SPACE_SIZE && !(off & 3))
		return false;
	KUNIT_FAIL(f->test, "access outside the register file: 0x%x", off);
	return true;
}

static bool fake_is_ro(struct plx_fake *f, enum plx_space space, u32 off)
{
	return f->ro_reads && space == f->ro_space && off == f->ro_off;
}

/* @off of @space ignores writes until read @reads times (UINT_MAX: for ever) */
static void fake_hook_ro(struct plx_fake *f, enum plx_space space, u32 off, unsigned int reads)
{
	f->ro_space = space;
	f->ro_off = off;
	f->ro_reads = reads;
}

static u32 fake_rd32(void *io, enum plx_space space, u32 off)
{
	struct plx_fake *f = io;
	u32 val;

	if (f->gone || f->regs_gone || fake_bad(f, off) ||
	    (space == PLX_SPACE_B2B && f->peer_silent))
		return ~0U;
	val = fake_regs(f, space)[off / 4];
	if (fake_is_ro(f, space, off) && f->ro_reads != UINT_MAX)
		f->ro_reads--;
	return val;
}

static void fake_wr32(void *io, enum plx_space space, u32 off, u32 val)
{
	struct plx_fake *f = io;

	if (f->n < FAKE_TRACE_MAX)
		f->trace[f->n] = (struct plx_w){ space, off, val };
	f->n++;
	if (fake_bad(f, off) || fake_is_ro(f, space, off))
		return;
	fake_regs(f, space)[off / 4] = val;
}

static u32 fake_cfg_rd32(void *io, u32 off)
{
	struct plx_fake *f = io;

	if (f->gone || off >= FAKE_CFG_SIZE || (off & 3))
		return ~0U;
	return f->cfg[off / 4];
}

static u16 fake_lnksta(void *io)
{
	struct plx_fake *f = io;

	return f->gone ? 0xffff : f->lnksta;
}

static const struct plx_io_ops fake_ops = {
	.rd32 = fake_rd32,
	.wr32 = fake_wr32,
	.cfg_rd32 = fake_cfg_rd32,
	.lnksta = fake_lnksta,
};

static const char *space_name(enum plx_space space)
{
	return space == PLX_SPACE_B2B ? "B2B" : "BAR0";
}

/*
 * Compares the writes recorded since the last check with @exp[0..@n), reports
 * the first difference and the counts, then empties the trace.
 */
static void expect_trace(struct kunit *test, struct plx_fake *fake,
			 const struct plx_w *exp, unsigned int n)
{
	unsigned int i, got = fake->n, common = min3(got, n, FAKE_TRACE_MAX);
	const struct plx_w *w, *e;

	for (i = 0; i < common; i++) {
		w = &fake->trace[i];
		e = &exp[i];
		if (w->space == e->space && w->off == e->off && w->val == e->val)
			continue;
		KUNIT_FAIL(test,
			   "line %d: write %u is %s 0x%05x = 0x%08x, expected %s 0x%05x = 0x%08x",
			   fake->line, i, space_name(w->space), w->off, w->val,
			   space_name(e->space), e->off, e->val);
		break;
	}
	if (i == common && got > n && n < FAKE_TRACE_MAX) {
		w = &fake->trace[n];
		KUNIT_FAIL(test, "line %d: unexpected write %u: %s 0x%05x = 0x%08x",
			   fake->line, n, space_name(w->space), w->off, w->val);
	} else if (i == common && got < n) {
		e = &exp[got];
		KUNIT_FAIL(test, "line %d: missing write %u: %s 0x%05x = 0x%08x",
			   fake->line, got, space_name(e->space), e->off, e->val);
	}
	KUNIT_EXPECT_EQ_MSG(test, got, n, "line %d: number of writes", fake->line);
	fake->n = 0;
}

/* one test's port: the fake and the driver's state */
struct plx_env {
	struct plx_fake fake;
	struct plx_ntb *plx;
	struct ntb_dev *ntb;
	const struct ntb_dev_ops *ops;
	bool inited;
};

#define PLX_MAX_ENV	3
struct plx_kctx {
	struct plx_env *env[PLX_MAX_ENV];
	unsigned int n;
};

/* what the backend would find: config 0xc8c, BAR0 0x360 and the BARs */
struct plx_layout {
	u32 face;
	u32 port_cfg;
	struct plx_bar bars[6];
	struct plx_params params;
};

static struct device *plx_kunit_dev;	/* for the driver's messages */
static struct platform_device *plx_kunit_pdev;

static void expect_groups(struct kunit *test, struct plx_env *env,
			  const struct plx_w *const *groups, int line)
{
	struct plx_w *exp = kunit_kcalloc(test, FAKE_TRACE_MAX, sizeof(*exp), GFP_KERNEL);
	const struct plx_w *w;
	unsigned int n = 0;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, exp);
	for (; *groups; groups++)
		for (w = *groups; w->off != ~0U && n < FAKE_TRACE_MAX; w++)
			exp[n++] = *w;
	env->fake.line = line;
	expect_trace(test, &env->fake, exp, n);
	kunit_kfree(test, exp);
}

/* the writes since the last check are the concatenation of these groups */
#define EXPECT_WRITES(test, env, ...) \
	expect_groups(test, env, (const struct plx_w *const []){ __VA_ARGS__, NULL }, __LINE__)

static const struct plx_w no_write[] = { W_END };
#define EXPECT_NO_WRITE(test, env)	EXPECT_WRITES(test, env, no_write)

static struct plx_env *env_new(struct kunit *test, const struct plx_layout *lay)
{
	struct plx_kctx *ctx = test->priv;
	struct plx_env *env;
	struct plx_fake *f;

	KUNIT_ASSERT_LT(test, ctx->n, PLX_MAX_ENV);
	env = kunit_kzalloc(test, sizeof(*env), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, env);
	ctx->env[ctx->n++] = env;
	f = &env->fake;
	f->test = test;
	f->bar0 = kvzalloc(FAKE_SPACE_SIZE, GFP_KERNEL);
	f->b2b = kvzalloc(FAKE_SPACE_SIZE, GFP_KERNEL);
	f->trace = kvcalloc(FAKE_TRACE_MAX, sizeof(*f->trace), GFP_KERNEL);
	KUNIT_ASSERT_TRUE(test, f->bar0 && f->b2b && f->trace);
	env->plx = kunit_kzalloc(test, sizeof(*env->plx), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, env->plx);
	env->ntb = &env->plx->ntb;

	f->cfg[0xc8c / 4] = lay->face;
	f->bar0[0x360 / 4] = lay->port_cfg;
	f->bar0[0x3ec90 / 4] = 0x0308;
	f->bar0[0x3fc90 / 4] = 0x0408;
	f->bar0[0x3cc90 / 4] = 0x0510;
	f->bar0[0x3dc90 / 4] = 0x0610;
	return env;
}

static int env_init(struct kunit *test, struct plx_env *env, const struct plx_layout *lay)
{
	int ret;

	ret = plx_ntb_init(env->plx, &fake_ops, &env->fake, plx_kunit_dev, lay->bars,
			   &lay->params);
	if (ret)
		return ret;
	env->inited = true;
	KUNIT_EXPECT_PTR_EQ(test, env->ntb->ops, &plx_ntb_ops);
	env->ops = env->ntb->ops ?: &plx_ntb_ops;
	/* the link-error status is write-1-to-clear: init's write left it clear */
	env->fake.bar0[0x3efe0 / 4] = 0;
	env->fake.bar0[0x3cfe0 / 4] = 0;
	return 0;
}

/* an initialised port; its init writes are still in the trace */
static struct plx_env *plx_up(struct kunit *test, const struct plx_layout *lay)
{
	struct plx_env *env = env_new(test, lay);

	KUNIT_ASSERT_EQ(test, env_init(test, env, lay), 0);
	return env;
}

static void skip_writes(struct plx_env *env)
{
	env->fake.n = 0;
}

static void expect_align(struct kunit *test, struct plx_env *env, int widx,
			 u64 addr_align, u64 size_align, u64 size_max)
{
	resource_size_t a = 0, s = 0, m = 0;

	KUNIT_EXPECT_EQ_MSG(test, env->ops->mw_get_align(env->ntb, 0, widx, &a, &s, &m), 0,
			    "window %d", widx);
	KUNIT_EXPECT_EQ_MSG(test, a, addr_align, "window %d: addr_align", widx);
	KUNIT_EXPECT_EQ_MSG(test, s, size_align, "window %d: size_align", widx);
	KUNIT_EXPECT_EQ_MSG(test, m, size_max, "window %d: size_max", widx);
	/* every pointer may be NULL */
	m = 0;
	KUNIT_EXPECT_EQ(test, env->ops->mw_get_align(env->ntb, 0, widx, NULL, NULL, &m), 0);
	KUNIT_EXPECT_EQ_MSG(test, m, size_max, "window %d: size_max alone", widx);
}

static void expect_mw_addr(struct kunit *test, struct plx_env *env, int widx,
			   u64 base, u64 size)
{
	phys_addr_t b = 0;
	resource_size_t s = 0;

	KUNIT_EXPECT_EQ_MSG(test, env->ops->peer_mw_get_addr(env->ntb, widx, &b, &s), 0,
			    "window %d", widx);
	KUNIT_EXPECT_EQ_MSG(test, b, base, "window %d: base", widx);
	KUNIT_EXPECT_EQ_MSG(test, s, size, "window %d: size", widx);
}

/* BAR layouts */
#define BAR64(p, s)	{ .phys = (p), .size = (s), .is64 = true }
#define BAR32(p, s)	{ .phys = (p), .size = (s), .is64 = false }

/* NT0 Virtual on port 8, no A-LUT, BAR2 and BAR4 64-bit 4 MiB, B2B */
static const struct plx_layout lay_b2b64 = {
	.face = 0, .port_cfg = 8 << 8,
	.bars = { [2] = BAR64(0x380000000000ULL, SZ_4M), [4] = BAR64(0x380000400000ULL, SZ_4M) },
	.params = { .b2b = true },
};

/* the same with a 1 MiB BAR4: B2B takes all of it */
static const struct plx_layout lay_b2b64_small = {
	.face = 0, .port_cfg = 8 << 8,
	.bars = { [2] = BAR64(0x380000000000ULL, SZ_4M), [4] = BAR64(0x380000400000ULL, SZ_1M) },
	.params = { .b2b = true },
};

/* four 32-bit BARs, B2B in the last */
static const struct plx_layout lay_b2b32 = {
	.face = 0, .port_cfg = 8 << 8,
	.bars = { [2] = BAR32(0xe0000000, SZ_1M), [3] = BAR32(0xe0100000, SZ_1M),
		  [4] = BAR32(0xe0200000, SZ_1M), [5] = BAR32(0xe0400000, SZ_4M) },
	.params = { .b2b = true },
};

/* NTB-to-Root-Port, Virtual side */
static const struct plx_layout lay_rp_virt = {
	.face = 0, .port_cfg = 8 << 8,
	.bars = { [2] = BAR64(0x380000000000ULL, SZ_4M), [4] = BAR64(0x380000400000ULL, SZ_4M) },
	.params = { .b2b = false },
};

/* NTB-to-Root-Port, NT1's Link side on port 9: b2b is ignored there */
static const struct plx_layout lay_rp_link = {
	.face = PLX_CFG_FACE_LINK | PLX_CFG_FACE_NT1, .port_cfg = (9 << 16) | (8 << 8),
	.bars = { [2] = BAR64(0x380000000000ULL, SZ_1M), [4] = BAR32(0xe0200000, SZ_2M),
		  [5] = BAR32(0xe0100000, SZ_1M) },
	.params = { .b2b = true },
};

/* A-LUT on for NT0 only (bit 30: 256 entries), BAR2 8 MiB split in 4 */
static const struct plx_layout lay_alut_split = {
	.face = 0, .port_cfg = BIT(30) | (8 << 8),
	.bars = { [2] = BAR64(0x380000000000ULL, SZ_8M), [4] = BAR64(0x380000800000ULL, SZ_4M) },
	.params = { .b2b = true, .split = 2 },
};

/* A-LUT on, no split */
static const struct plx_layout lay_alut = {
	.face = 0, .port_cfg = BIT(30) | (8 << 8),
	.bars = { [2] = BAR64(0x380000000000ULL, SZ_4M), [4] = BAR64(0x380000400000ULL, SZ_4M) },
	.params = { .b2b = true },
};

/* Groups of writes: NT0 Virtual (ours 0x3e000, the Link page 0x3f000) */

/* Test Pattern probe at port 0 (NT0 * 8) + 0x20c, then restored */
static const struct plx_w tp_probe_nt0[] = {
	W0(0x0020c, 0x12345678), W0(0x0020c, 0), W_END };
/* every doorbell masked: Virtual mask-set */
static const struct plx_w db_mask_nt0v[] = { W0(0x3ec54, 0xffff), W_END };
/* B2B: the peer chip's Link BAR0 (64-bit) at 4 << 61 (| 4: 64-bit), reached through BAR4 */
static const struct plx_w b2b_bar0_at_bar4[] = {
	W0(0x3f0e4, 0x3), W0(0x3f010, 0x00000004), W0(0x3f014, 0x80000000), W_END };
/* B2B: BAR2 and BAR4 go out to the peer's Link BARs at 2 << 61 and 4 << 61 */
static const struct plx_w b2b_out_bar2_bar4[] = {
	W0(0x3ec3c, 0), W0(0x3ec40, 0x40000000), W0(0x3ec44, 0), W0(0x3ec48, 0x80000000), W_END };
/* B2B: the Link side's requester-ID LUT lets in bus 0, slots 0..31 */
static const struct plx_w rid_lut_link_nt0[] = {
	W0(0x3fdb4, 0x00090001), W0(0x3fdb8, 0x00190011), W0(0x3fdbc, 0x00290021),
	W0(0x3fdc0, 0x00390031), W0(0x3fdc4, 0x00490041), W0(0x3fdc8, 0x00590051),
	W0(0x3fdcc, 0x00690061), W0(0x3fdd0, 0x00790071), W0(0x3fdd4, 0x00890081),
	W0(0x3fdd8, 0x00990091), W0(0x3fddc, 0x00a900a1), W0(0x3fde0, 0x00b900b1),
	W0(0x3fde4, 0x00c900c1), W0(0x3fde8, 0x00d900d1), W0(0x3fdec, 0x00e900e1),
	W0(0x3fdf0, 0x00f900f1), W_END };
/* Virtual requester-ID LUT: 0:0, our requester ID 0x0308, then 0/64/128/192:4 */
static const struct plx_w rid_lut_nt0v[] = {
	W0(0x3ed94, 0x03090001), W0(0x3ed98, 0x40210021), W0(0x3ed9c, 0xc0218021), W_END };
/* window 0: Link BAR2 without size (64-bit prefetchable) at 2 << 61, translation 0 */
static const struct plx_w win_bar2_b2b64_clear[] = {
	W0(0x3f0e8, 0xc), W0(0x3f0ec, 0), W0(0x3f018, 0), W0(0x3f01c, 0x40000000),
	W0(0x3fc3c, 0), W0(0x3fc40, 0), W_END };
/* window 1: Link BAR4 without size at 4 << 61 + 2 MiB (B2B below), translation 0 */
static const struct plx_w win_bar4_b2b64_clear[] = {
	W0(0x3f0f0, 0xc), W0(0x3f0f4, 0), W0(0x3f020, 0x00200000), W0(0x3f024, 0x80000000),
	W0(0x3fc44, 0), W0(0x3fc48, 0), W_END };
/* the same when B2B takes all of BAR4: at 4 << 61 */
static const struct plx_w win_bar4_b2b64_all[] = {
	W0(0x3f0f0, 0xc), W0(0x3f0f4, 0), W0(0x3f020, 0), W0(0x3f024, 0x80000000),
	W0(0x3fc44, 0), W0(0x3fc48, 0), W_END };
/* B2B: memory space and bus master on the Link Interface */
static const struct plx_w link_cmd_nt0[] = { W0(0x3f004, 0x6), W_END };
/* link errors cleared (write 1 to clear) and unmasked */
static const struct plx_w link_err_nt0[] = { W0(0x3efe0, 0xf), W0(0x3efe4, 0), W_END };

/* B2B with four 32-bit BARs: the peer's Link BAR0 (32-bit) at 5 << 29, through BAR5 */
static const struct plx_w b2b_bar0_at_bar5[] = {
	W0(0x3f0e4, 0x2), W0(0x3f010, 0xa0000000), W_END };
/* B2B: BAR2..5 go out to the peer's Link BARs at n << 29 */
static const struct plx_w b2b_out_32[] = {
	W0(0x3ec3c, 0x40000000), W0(0x3ec40, 0x60000000), W0(0x3ec44, 0x80000000),
	W0(0x3ec48, 0xa0000000), W_END };
/* windows 0-3: Link BARn without size at n << 29 (BAR5: + 2 MiB), translation 0 */
static const struct plx_w win_b2b32_clear[] = {
	W0(0x3f0e8, 0), W0(0x3f018, 0x40000000), W0(0x3fc3c, 0),
	W0(0x3f0ec, 0), W0(0x3f01c, 0x60000000), W0(0x3fc40, 0),
	W0(0x3f0f0, 0), W0(0x3f020, 0x80000000), W0(0x3fc44, 0),
	W0(0x3f0f4, 0), W0(0x3f024, 0xa0200000), W0(0x3fc48, 0), W_END };

/* Root-Port mode, Virtual side: inbound translations of BAR2 and BAR4 in the Link page */
static const struct plx_w xlat_nt0_clear[] = {
	W0(0x3fc3c, 0), W0(0x3fc40, 0), W0(0x3fc44, 0), W0(0x3fc48, 0), W_END };

/* Root-Port mode, NT1 Link side (ours 0x3d000, the Virtual page 0x3c000) */
/* Test Pattern probe at port 8 (NT1 * 8) + 0x20c, second half: + 8 */
static const struct plx_w tp_probe_nt1l[] = {
	W0(0x08214, 0x12345678), W0(0x08214, 0), W_END };
/* every doorbell masked: Link mask-set */
static const struct plx_w db_mask_nt1l[] = { W0(0x3dc64, 0xffff), W_END };
/* Link requester-ID LUT: 0:0, our requester ID 0x0610, 0/64/128/192:4 */
static const struct plx_w rid_lut_nt1l[] = {
	W0(0x3ddb4, 0x06110001), W0(0x3ddb8, 0x40210021), W0(0x3ddbc, 0xc0218021), W_END };
/* translations of BAR2 (64-bit), BAR4 and BAR5 (32-bit) in the Virtual page */
static const struct plx_w xlat_nt1_clear[] = {
	W0(0x3cc3c, 0), W0(0x3cc40, 0), W0(0x3cc44, 0), W0(0x3cc48, 0), W_END };

static void probe_b2b_64bit_large(struct kunit *test)
{
	struct plx_env *env = plx_up(test, &lay_b2b64);

	EXPECT_WRITES(test, env, tp_probe_nt0, db_mask_nt0v, b2b_bar0_at_bar4, b2b_out_bar2_bar4,
		      rid_lut_link_nt0, rid_lut_nt0v, win_bar2_b2b64_clear, win_bar4_b2b64_clear,
		      link_cmd_nt0, link_err_nt0);
	KUNIT_EXPECT_EQ(test, env->ops->mw_count(env->ntb, 0), 2);
	/* BAR2 whole; BAR4's upper half (its lower half reaches the peer's registers) */
	expect_align(test, env, 0, SZ_4M, SZ_2M, SZ_4M);
	expect_align(test, env, 1, SZ_2M, SZ_1M, SZ_2M);
	expect_mw_addr(test, env, 0, 0x380000000000ULL, SZ_4M);
	expect_mw_addr(test, env, 1, 0x380000600000ULL, SZ_2M);
	KUNIT_EXPECT_EQ(test, env->ops->mw_get_align(env->ntb, 0, 2, NULL, NULL, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, env->ops->spad_count(env->ntb), 12);
	EXPECT_NO_WRITE(test, env);
}

static void probe_b2b_small_last_bar(struct kunit *test)
{
	struct plx_env *env = plx_up(test, &lay_b2b64_small);
	phys_addr_t base;
	resource_size_t size;

	EXPECT_WRITES(test, env, tp_probe_nt0, db_mask_nt0v, b2b_bar0_at_bar4, b2b_out_bar2_bar4,
		      rid_lut_link_nt0, rid_lut_nt0v, win_bar2_b2b64_clear, win_bar4_b2b64_all,
		      link_cmd_nt0, link_err_nt0);
	KUNIT_EXPECT_EQ(test, env->ops->mw_count(env->ntb, 0), 1);
	expect_align(test, env, 0, SZ_4M, SZ_2M, SZ_4M);
	expect_mw_addr(test, env, 0, 0x380000000000ULL, SZ_4M);
	/* BAR4 belongs to B2B: no window 1 */
	KUNIT_EXPECT_EQ(test, env->ops->mw_get_align(env->ntb, 0, 1, NULL, NULL, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, env->ops->peer_mw_get_addr(env->ntb, 1, &base, &size), -EINVAL);
	KUNIT_EXPECT_EQ(test, env->ops->mw_set_trans(env->ntb, 0, 1, 0, SZ_1M), -EINVAL);
	EXPECT_NO_WRITE(test, env);
}

static void probe_b2b_32bit(struct kunit *test)
{
	struct plx_env *env = plx_up(test, &lay_b2b32);

	EXPECT_WRITES(test, env, tp_probe_nt0, db_mask_nt0v, b2b_bar0_at_bar5, b2b_out_32,
		      rid_lut_link_nt0, rid_lut_nt0v, win_b2b32_clear, link_cmd_nt0, link_err_nt0);
	KUNIT_EXPECT_EQ(test, env->ops->mw_count(env->ntb, 0), 4);
	expect_align(test, env, 0, SZ_1M, SZ_512K, SZ_1M);
	expect_align(test, env, 2, SZ_1M, SZ_512K, SZ_1M);
	expect_align(test, env, 3, SZ_2M, SZ_1M, SZ_2M);
	expect_mw_addr(test, env, 1, 0xe0100000, SZ_1M);
	expect_mw_addr(test, env, 3, 0xe0600000, SZ_2M);
	EXPECT_NO_WRITE(test, env);
}

static void probe_root_port_virtual(struct kunit *test)
{
	static const struct plx_w spads[] = {
		/* ours: scratchpads 0-3 and the first two Test Pattern registers */
		W0(0x3ec6c, 0xa0), W0(0x3ec78, 0xa3), W0(0x0020c, 0xa4), W0(0x00210, 0xa5),
		/* the Link side's: scratchpads 4-7 and the last two, still in BAR0 */
		W0(0x3ec7c, 0xb0), W0(0x3ec88, 0xb3), W0(0x00214, 0xb4), W0(0x00218, 0xb5),
		/* peer doorbell: the Link side's set register */
		W0(0x3ec5c, 0x8), W_END };
	/* Port Control of station 1 (port 8 & ~7 = 8): bit 0 = port 8 disabled */
	static const struct plx_w enable[] = { W0(0x08208, 0x300), W_END };
	static const struct plx_w disable[] = { W0(0x08208, 0x301), W_END };
	struct plx_env *env = plx_up(test, &lay_rp_virt);
	const struct ntb_dev_ops *ops = env->ops;
	struct ntb_dev *ntb = env->ntb;

	EXPECT_WRITES(test, env, tp_probe_nt0, db_mask_nt0v, rid_lut_nt0v, xlat_nt0_clear,
		      link_err_nt0);
	KUNIT_EXPECT_EQ(test, ops->mw_count(ntb, 0), 2);
	expect_align(test, env, 0, SZ_4M, SZ_4M, SZ_4M);
	expect_align(test, env, 1, SZ_4M, SZ_4M, SZ_4M);
	expect_mw_addr(test, env, 1, 0x380000400000ULL, SZ_4M);

	KUNIT_EXPECT_EQ(test, ops->spad_count(ntb), 6);
	KUNIT_EXPECT_EQ(test, ops->spad_write(ntb, 0, 0xa0), 0);
	KUNIT_EXPECT_EQ(test, ops->spad_write(ntb, 3, 0xa3), 0);
	KUNIT_EXPECT_EQ(test, ops->spad_write(ntb, 4, 0xa4), 0);
	KUNIT_EXPECT_EQ(test, ops->spad_write(ntb, 5, 0xa5), 0);
	KUNIT_EXPECT_EQ(test, ops->spad_write(ntb, 6, 0xa6), -EINVAL);
	KUNIT_EXPECT_EQ(test, ops->peer_spad_write(ntb, 0, 0, 0xb0), 0);
	KUNIT_EXPECT_EQ(test, ops->peer_spad_write(ntb, 0, 3, 0xb3), 0);
	KUNIT_EXPECT_EQ(test, ops->peer_spad_write(ntb, 0, 4, 0xb4), 0);
	KUNIT_EXPECT_EQ(test, ops->peer_spad_write(ntb, 0, 5, 0xb5), 0);
	KUNIT_EXPECT_EQ(test, ops->peer_db_set(ntb, 0x8), 0);
	EXPECT_WRITES(test, env, spads);
	KUNIT_EXPECT_EQ(test, ops->spad_read(ntb, 4), 0xa4);
	KUNIT_EXPECT_EQ(test, ops->peer_spad_read(ntb, 0, 4), 0xb4);

	env->fake.bar0[0x08208 / 4] = 0x301;
	KUNIT_EXPECT_EQ(test, ops->link_enable(ntb, NTB_SPEED_AUTO, NTB_WIDTH_AUTO), 0);
	EXPECT_WRITES(test, env, enable);
	/* already enabled: nothing to write */
	KUNIT_EXPECT_EQ(test, ops->link_enable(ntb, NTB_SPEED_AUTO, NTB_WIDTH_AUTO), 0);
	EXPECT_NO_WRITE(test, env);
	KUNIT_EXPECT_EQ(test, ops->link_disable(ntb), 0);
	EXPECT_WRITES(test, env, disable);
}

static void probe_root_port_link(struct kunit *test)
{
	static const struct plx_w spads[] = {
		/* ours: scratchpads 4-7, Test Pattern registers 2-3 */
		W0(0x3dc7c, 0xa0), W0(0x08214, 0xa4), W0(0x08218, 0xa5),
		/* the Virtual side's: scratchpads 0-3, Test Pattern registers 0-1 */
		W0(0x3dc6c, 0xb0), W0(0x0820c, 0xb4),
		/* peer doorbell: the Virtual side's set register */
		W0(0x3dc4c, 0x8), W_END };
	static const struct plx_w doorbells[] = {
		/* Link mask-set, clear, mask-clear */
		W0(0x3dc64, 0x1), W0(0x3dc60, 0x1), W0(0x3dc68, 0x1), W_END };
	static const struct plx_w xlat[] = {
		/* inbound translations in the Virtual page: BAR2 (64-bit), BAR4 (32-bit) */
		W0(0x3cc3c, 0x00100000), W0(0x3cc40, 0x2), W0(0x3cc44, 0x40000000), W_END };
	struct plx_env *env = plx_up(test, &lay_rp_link);
	const struct ntb_dev_ops *ops = env->ops;
	struct ntb_dev *ntb = env->ntb;

	EXPECT_WRITES(test, env, tp_probe_nt1l, db_mask_nt1l, rid_lut_nt1l, xlat_nt1_clear);
	KUNIT_EXPECT_EQ(test, ops->mw_count(ntb, 0), 3);
	expect_align(test, env, 0, SZ_1M, SZ_1M, SZ_1M);
	expect_align(test, env, 1, SZ_2M, SZ_2M, SZ_2M);
	expect_align(test, env, 2, SZ_1M, SZ_1M, SZ_1M);
	expect_mw_addr(test, env, 1, 0xe0200000, SZ_2M);

	KUNIT_EXPECT_EQ(test, ops->spad_count(ntb), 6);
	KUNIT_EXPECT_EQ(test, ops->spad_write(ntb, 0, 0xa0), 0);
	KUNIT_EXPECT_EQ(test, ops->spad_write(ntb, 4, 0xa4), 0);
	KUNIT_EXPECT_EQ(test, ops->spad_write(ntb, 5, 0xa5), 0);
	KUNIT_EXPECT_EQ(test, ops->peer_spad_write(ntb, 0, 0, 0xb0), 0);
	KUNIT_EXPECT_EQ(test, ops->peer_spad_write(ntb, 0, 4, 0xb4), 0);
	KUNIT_EXPECT_EQ(test, ops->peer_db_set(ntb, 0x8), 0);
	EXPECT_WRITES(test, env, spads);

	KUNIT_EXPECT_EQ(test, ops->db_set_mask(ntb, 0x1), 0);
	KUNIT_EXPECT_EQ(test, ops->db_clear(ntb, 0x1), 0);
	KUNIT_EXPECT_EQ(test, ops->db_clear_mask(ntb, 0x1), 0);
	EXPECT_WRITES(test, env, doorbells);

	KUNIT_EXPECT_EQ(test, ops->mw_set_trans(ntb, 0, 0, 0x200100000ULL, SZ_1M), 0);
	KUNIT_EXPECT_EQ(test, ops->mw_set_trans(ntb, 0, 1, 0x40000000, SZ_1M), 0);
	KUNIT_EXPECT_EQ(test, ops->mw_set_trans(ntb, 0, 2, 0x100000000ULL, SZ_1M), -ERANGE);
	EXPECT_WRITES(test, env, xlat);

	/* the Link side never touches Port Control */
	KUNIT_EXPECT_EQ(test, ops->link_enable(ntb, NTB_SPEED_AUTO, NTB_WIDTH_AUTO), 0);
	KUNIT_EXPECT_EQ(test, ops->link_disable(ntb), 0);
	EXPECT_NO_WRITE(test, env);
}

/*
 * The whole A-LUT of NT0's Virtual side with 256 entries (alut = 2: at 0x38000
 * + 1 * 0x1000 * 2 = 0x3a000, entries 128..255 0xe00 further on, upper halves
 * at +0x400, permissions at +0x800), then the A-LUT on. Part p of the
 * 1 << @split parts starts at entry p * (256 >> @split) with @addr[p]; an
 * entry is enabled (3) while it lies below @addr[p] + @size[p].
 */
static const struct plx_w *alut_writes(struct kunit *test, unsigned int split, u64 esize,
				       const u64 *addr, const u64 *size)
{
	struct plx_w *w = kunit_kcalloc(test, 3 * 256 + 2, sizeof(*w), GFP_KERNEL);
	unsigned int i, n = 0, per = 256 >> split;
	u64 a, end;
	u32 reg;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, w);
	for (i = 0; i < 256; i++) {
		reg = 0x3a000 + i * 4 + (i >= 128 ? 0xe00 : 0);
		a = addr[i / per] + (i % per) * esize;
		end = addr[i / per] + size[i / per];
		w[n++] = (struct plx_w)W0(reg, lower_32_bits(a));
		w[n++] = (struct plx_w)W0(reg + 0x400, upper_32_bits(a));
		w[n++] = (struct plx_w)W0(reg + 0x800, a < end ? 3 : 0);
	}
	w[n++] = (struct plx_w)W0(0x3ec94, 0x10000000);
	w[n] = (struct plx_w)W_END;
	return w;
}

static void alut_on_split(struct kunit *test)
{
	/* Link BAR2 stays 8 MiB (split: never resized) at 2 << 61; translation bypassed */
	static const struct plx_w head[] = {
		W0(0x3f0e8, 0xff80000c), W0(0x3f0ec, 0xffffffff), W0(0x3f018, 0),
		W0(0x3f01c, 0x40000000), W0(0x3fc3c, 0xffffffff), W0(0x3fc40, 0xffffffff), W_END };
	static const u64 addr[4] = { 0, 0x123458000ULL, 0, 0 };
	static const u64 size[4] = { 0, SZ_1M, 0, 0 };
	static const u64 zero[4];
	struct plx_env *env = plx_up(test, &lay_alut_split);
	const struct ntb_dev_ops *ops = env->ops;
	struct ntb_dev *ntb = env->ntb;

	skip_writes(env);
	/* BAR2 in 4 windows of 2 MiB, then BAR4's upper half */
	KUNIT_EXPECT_EQ(test, ops->mw_count(ntb, 0), 5);
	expect_align(test, env, 0, SZ_32K, SZ_32K, SZ_2M);
	expect_align(test, env, 3, SZ_32K, SZ_32K, SZ_2M);
	expect_align(test, env, 4, SZ_2M, SZ_1M, SZ_2M);
	expect_mw_addr(test, env, 1, 0x380000200000ULL, SZ_2M);
	expect_mw_addr(test, env, 3, 0x380000600000ULL, SZ_2M);
	expect_mw_addr(test, env, 4, 0x380000a00000ULL, SZ_2M);

	/* window 1: 1 MiB at a 32 KiB-aligned address: entries 64..95 enabled */
	KUNIT_EXPECT_EQ(test, ops->mw_set_trans(ntb, 0, 1, 0x123458000ULL, SZ_1M), 0);
	EXPECT_WRITES(test, env, head, alut_writes(test, 2, SZ_32K, addr, size));
	/* not 32 KiB-aligned, or larger than a part */
	KUNIT_EXPECT_EQ(test, ops->mw_set_trans(ntb, 0, 1, 0x123454000ULL, SZ_1M), -EINVAL);
	KUNIT_EXPECT_EQ(test, ops->mw_set_trans(ntb, 0, 1, 0x123400000ULL, SZ_4M), -EINVAL);
	EXPECT_NO_WRITE(test, env);
	/* cleared: every entry disabled, the A-LUT stays on */
	KUNIT_EXPECT_EQ(test, ops->mw_clear_trans(ntb, 0, 1), 0);
	EXPECT_WRITES(test, env, head, alut_writes(test, 2, SZ_32K, zero, zero));
}

static void alut_off(struct kunit *test)
{
	/* B2B: the Link side's A-LUT off */
	static const struct plx_w alut_link_off[] = { W0(0x3fc94, 0), W_END };
	/* BAR2 needs no A-LUT: ours off */
	static const struct plx_w alut_nt0v_off[] = { W0(0x3ec94, 0), W_END };
	/* Link BAR2 4 MiB at 2 << 61, translation to 0x1_2340_0000 */
	static const struct plx_w aligned[] = {
		W0(0x3f0e8, 0xffc0000c), W0(0x3f0ec, 0xffffffff), W0(0x3f018, 0),
		W0(0x3f01c, 0x40000000), W0(0x3fc3c, 0x23400000), W0(0x3fc40, 0x1),
		W0(0x3ec94, 0), W_END };
	/* 3 MiB at 0x1_2340_4000: Link BAR2 4 MiB, translation to the buffer, A-LUT */
	static const struct plx_w head[] = {
		W0(0x3f0e8, 0xffc0000c), W0(0x3f0ec, 0xffffffff), W0(0x3f018, 0),
		W0(0x3f01c, 0x40000000), W0(0x3fc3c, 0x23404000), W0(0x3fc40, 0x1), W_END };
	static const u64 addr[1] = { 0x123404000ULL };
	static const u64 size[1] = { 3 * SZ_1M };
	struct plx_env *env = plx_up(test, &lay_alut);
	const struct ntb_dev_ops *ops = env->ops;

	EXPECT_WRITES(test, env, tp_probe_nt0, db_mask_nt0v, b2b_bar0_at_bar4, b2b_out_bar2_bar4,
		      alut_link_off, rid_lut_link_nt0, rid_lut_nt0v, win_bar2_b2b64_clear,
		      alut_nt0v_off, win_bar4_b2b64_clear, link_cmd_nt0, link_err_nt0);
	/* 1/256 of BAR2 with the A-LUT; BAR4 has none */
	expect_align(test, env, 0, SZ_16K, SZ_16K, SZ_4M);
	expect_align(test, env, 1, SZ_2M, SZ_1M, SZ_2M);

	KUNIT_EXPECT_EQ(test, ops->mw_set_trans(env->ntb, 0, 0, 0x123400000ULL, SZ_4M), 0);
	EXPECT_WRITES(test, env, aligned);
	/* unaligned: entries of 16 KiB, 192 of them enabled */
	KUNIT_EXPECT_EQ(test, ops->mw_set_trans(env->ntb, 0, 0, 0x123404000ULL, 3 * SZ_1M), 0);
	EXPECT_WRITES(test, env, head, alut_writes(test, 0, SZ_16K, addr, size));
	KUNIT_EXPECT_EQ(test, ops->mw_set_trans(env->ntb, 0, 0, 0x123400000ULL, SZ_4M), 0);
	EXPECT_WRITES(test, env, aligned);
}

static void set_clear_trans_b2b(struct kunit *test)
{
	/* Link BAR2 4 MiB (3 MiB rounded up) at 2 << 61, translation to 0x1_2340_0000 */
	static const struct plx_w set0[] = {
		W0(0x3f0e8, 0xffc0000c), W0(0x3f0ec, 0xffffffff), W0(0x3f018, 0),
		W0(0x3f01c, 0x40000000), W0(0x3fc3c, 0x23400000), W0(0x3fc40, 0x1), W_END };
	/* Link BAR4 1 MiB (512 KiB, at least 1 MiB) at 4 << 61 + 2 MiB, to 0x8020_0000 */
	static const struct plx_w set1[] = {
		W0(0x3f0f0, 0xfff0000c), W0(0x3f0f4, 0xffffffff), W0(0x3f020, 0x00200000),
		W0(0x3f024, 0x80000000), W0(0x3fc44, 0x80200000), W0(0x3fc48, 0), W_END };
	/* 32-bit: Link BAR2 1 MiB at 2 << 29, translation to 0x1230_0000 */
	static const struct plx_w set32[] = {
		W0(0x3f0e8, 0xfff00000), W0(0x3f018, 0x40000000), W0(0x3fc3c, 0x12300000), W_END };
	struct plx_env *env = plx_up(test, &lay_b2b64), *env32;
	const struct ntb_dev_ops *ops = env->ops;
	struct ntb_dev *ntb = env->ntb;

	skip_writes(env);
	KUNIT_EXPECT_EQ(test, ops->mw_set_trans(ntb, 0, 0, 0x123400000ULL, 3 * SZ_1M), 0);
	EXPECT_WRITES(test, env, set0);
	KUNIT_EXPECT_EQ(test, ops->mw_set_trans(ntb, 0, 1, 0x80200000, SZ_512K), 0);
	EXPECT_WRITES(test, env, set1);
	KUNIT_EXPECT_EQ(test, ops->mw_clear_trans(ntb, 0, 0), 0);
	EXPECT_WRITES(test, env, win_bar2_b2b64_clear);
	KUNIT_EXPECT_EQ(test, ops->mw_clear_trans(ntb, 0, 1), 0);
	EXPECT_WRITES(test, env, win_bar4_b2b64_clear);

	/* refused without a write: unaligned, too large, bad window, bad peer */
	KUNIT_EXPECT_EQ(test, ops->mw_set_trans(ntb, 0, 0, 0x123401000ULL, SZ_1M), -EINVAL);
	KUNIT_EXPECT_EQ(test, ops->mw_set_trans(ntb, 0, 1, 0x80100000, SZ_1M), -EINVAL);
	KUNIT_EXPECT_EQ(test, ops->mw_set_trans(ntb, 0, 0, 0x123400000ULL, SZ_8M), -EINVAL);
	KUNIT_EXPECT_EQ(test, ops->mw_set_trans(ntb, 0, 2, 0x123400000ULL, SZ_1M), -EINVAL);
	KUNIT_EXPECT_EQ(test, ops->mw_set_trans(ntb, 0, -1, 0x123400000ULL, SZ_1M), -EINVAL);
	KUNIT_EXPECT_EQ(test, ops->mw_set_trans(ntb, 1, 0, 0x123400000ULL, SZ_1M), -EINVAL);
	KUNIT_EXPECT_EQ(test, ops->mw_clear_trans(ntb, 0, 2), -EINVAL);
	KUNIT_EXPECT_EQ(test, ops->mw_clear_trans(ntb, 1, 0), -EINVAL);
	EXPECT_NO_WRITE(test, env);

	/* a 32-bit BAR cannot reach above 4 GiB */
	env32 = plx_up(test, &lay_b2b32);
	skip_writes(env32);
	KUNIT_EXPECT_EQ(test, ops->mw_set_trans(env32->ntb, 0, 0, 0x100000000ULL, SZ_1M), -ERANGE);
	KUNIT_EXPECT_EQ(test, ops->mw_set_trans(env32->ntb, 0, 3, 0x100200000ULL, SZ_1M), -ERANGE);
	EXPECT_NO_WRITE(test, env32);
	KUNIT_EXPECT_EQ(test, ops->mw_set_trans(env32->ntb, 0, 0, 0x12300000, SZ_1M), 0);
	EXPECT_WRITES(test, env32, set32);
}

/* @n writes of @val at @off of @space */
static const struct plx_w *repeated(struct kunit *test, enum plx_space space, u32 off,
				    u32 val, unsigned int n)
{
	struct plx_w *w = kunit_kcalloc(test, n + 1, sizeof(*w), GFP_KERNEL);
	unsigned int i;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, w);
	for (i = 0; i < n; i++)
		w[i] = (struct plx_w){ space, off, val };
	w[n] = (struct plx_w)W_END;
	return w;
}

static void spad_partition_and_retry(struct kunit *test)
{
	static const struct plx_w ours[] = {
		/* scratchpads 0 and 7 in our page, Test Pattern registers 0 and 3 */
		W0(0x3ec6c, 0x11111111), W0(0x3ec88, 0x77777777),
		W0(0x0020c, 0x88888888), W0(0x00218, 0xbbbbbbbb), W_END };
	static const struct plx_w peers[] = {
		/* the peer chip's, through the B2B window: same offsets */
		WB(0x3ec6c, 0x12), WB(0x3ec88, 0x13), WB(0x0020c, 0x34), W_END };
	struct plx_env *env = plx_up(test, &lay_b2b64);
	const struct ntb_dev_ops *ops = env->ops;
	struct ntb_dev *ntb = env->ntb;
	struct plx_fake *f = &env->fake;

	skip_writes(env);
	KUNIT_EXPECT_EQ(test, ops->spad_count(ntb), 12);
	KUNIT_EXPECT_EQ(test, ops->spad_write(ntb, 0, 0x11111111), 0);
	KUNIT_EXPECT_EQ(test, ops->spad_write(ntb, 7, 0x77777777), 0);
	KUNIT_EXPECT_EQ(test, ops->spad_write(ntb, 8, 0x88888888), 0);
	KUNIT_EXPECT_EQ(test, ops->spad_write(ntb, 11, 0xbbbbbbbb), 0);
	KUNIT_EXPECT_EQ(test, ops->spad_write(ntb, 12, 0xcccccccc), -EINVAL);
	KUNIT_EXPECT_EQ(test, ops->spad_write(ntb, -1, 0xcccccccc), -EINVAL);
	EXPECT_WRITES(test, env, ours);
	KUNIT_EXPECT_EQ(test, ops->spad_read(ntb, 0), 0x11111111);
	KUNIT_EXPECT_EQ(test, ops->spad_read(ntb, 7), 0x77777777);
	KUNIT_EXPECT_EQ(test, ops->spad_read(ntb, 8), 0x88888888);
	KUNIT_EXPECT_EQ(test, ops->spad_read(ntb, 11), 0xbbbbbbbb);
	KUNIT_EXPECT_EQ(test, ops->spad_read(ntb, 12), 0);

	/* Test Pattern register 1 ignores writes until read 5 times: the 6th write holds */
	fake_hook_ro(f, PLX_SPACE_BAR0, 0x00210, 5);
	KUNIT_EXPECT_EQ(test, ops->spad_write(ntb, 9, 0x600d600d), 0);
	EXPECT_WRITES(test, env, repeated(test, PLX_SPACE_BAR0, 0x00210, 0x600d600d, 6));
	KUNIT_EXPECT_EQ(test, ops->spad_read(ntb, 9), 0x600d600d);
	/* register 2 never takes it: 1000 tries, then -EIO */
	fake_hook_ro(f, PLX_SPACE_BAR0, 0x00214, UINT_MAX);
	KUNIT_EXPECT_EQ(test, ops->spad_write(ntb, 10, 0xdead), -EIO);
	EXPECT_WRITES(test, env, repeated(test, PLX_SPACE_BAR0, 0x00214, 0xdead, 1000));
	fake_hook_ro(f, PLX_SPACE_BAR0, 0, 0);

	f->b2b[0x3ec70 / 4] = 0x5a5a;
	KUNIT_EXPECT_EQ(test, ops->peer_spad_read(ntb, 0, 1), 0x5a5a);
	KUNIT_EXPECT_EQ(test, ops->peer_spad_write(ntb, 0, 0, 0x12), 0);
	KUNIT_EXPECT_EQ(test, ops->peer_spad_write(ntb, 0, 7, 0x13), 0);
	KUNIT_EXPECT_EQ(test, ops->peer_spad_write(ntb, 0, 8, 0x34), 0);
	KUNIT_EXPECT_EQ(test, ops->peer_spad_write(ntb, 0, 12, 0x35), -EINVAL);
	EXPECT_WRITES(test, env, peers);
	KUNIT_EXPECT_EQ(test, ops->peer_spad_read(ntb, 0, 8), 0x34);
	/* the peer's Test Pattern register is read back through the B2B window too */
	fake_hook_ro(f, PLX_SPACE_B2B, 0x00210, 2);
	KUNIT_EXPECT_EQ(test, ops->peer_spad_write(ntb, 0, 9, 0x56), 0);
	EXPECT_WRITES(test, env, repeated(test, PLX_SPACE_B2B, 0x00210, 0x56, 3));
}

static void doorbells(struct kunit *test)
{
	/* Virtual doorbells: set (pending) 0x3ec4c, clear c50, mask-set c54, mask-clear c58 */
	static const struct plx_w client[] = {
		W0(0x3ec58, 0x00ff), W0(0x3ec54, 0x0001), W0(0x3ec58, 0x0001),
		/* ring ourselves, then the peer chip's Virtual set register through B2B */
		W0(0x3ec4c, 0x0002), WB(0x3ec4c, 0x0005), W_END };
	/* the ISR masks the pending unmasked bits 0, 1 and 7 */
	static const struct plx_w isr[] = { W0(0x3ec54, 0x0083), W_END };
	/* the client masks bit 1, clears 0, 1, 7: 0 and 7 unmasked, 1 stays masked */
	static const struct plx_w clear[] = {
		W0(0x3ec54, 0x0002), W0(0x3ec50, 0x0083), W0(0x3ec58, 0x0081), W_END };
	/* bit 1 was acknowledged: the client's unmask reaches the chip */
	static const struct plx_w unmask1[] = { W0(0x3ec58, 0x0002), W_END };
	/*
	 * bit 1 again: the client's unmask delivers it once more though it
	 * was not cleared (a bit reported while no client was bound would
	 * otherwise stay masked for the next one); reported again, then cleared
	 */
	static const struct plx_w isr1[] = { W0(0x3ec54, 0x0002), W_END };
	static const struct plx_w unmask1_again[] = { W0(0x3ec58, 0x0002), W_END };
	static const struct plx_w clear1[] = { W0(0x3ec50, 0x0002), W0(0x3ec58, 0x0002), W_END };
	struct plx_env *env = plx_up(test, &lay_b2b64);
	const struct ntb_dev_ops *ops = env->ops;
	struct ntb_dev *ntb = env->ntb;
	u32 *pending = &env->fake.bar0[0x3ec4c / 4];

	/* doorbells come with the link up, as reported to the clients */
	env->fake.lnksta = LNKSTA_UP_X4;
	plx_ntb_check_link(env->plx);
	skip_writes(env);
	KUNIT_EXPECT_EQ(test, ops->db_valid_mask(ntb), 0xffffULL);
	KUNIT_EXPECT_EQ(test, ops->db_vector_count(ntb), 1);
	KUNIT_EXPECT_EQ(test, ops->db_read_mask(ntb), 0xffffULL);
	KUNIT_EXPECT_EQ(test, ops->db_clear_mask(ntb, 0x00ff), 0);
	KUNIT_EXPECT_EQ(test, ops->db_read_mask(ntb), 0xff00ULL);
	KUNIT_EXPECT_EQ(test, ops->db_set_mask(ntb, 0x0001), 0);
	KUNIT_EXPECT_EQ(test, ops->db_read_mask(ntb), 0xff01ULL);
	KUNIT_EXPECT_EQ(test, ops->db_clear_mask(ntb, 0x0001), 0);
	KUNIT_EXPECT_EQ(test, ops->db_set(ntb, 0x0002), 0);
	KUNIT_EXPECT_EQ(test, ops->peer_db_set(ntb, 0x0005), 0);
	EXPECT_WRITES(test, env, client);

	*pending = 0xabcd0183;
	KUNIT_EXPECT_EQ(test, ops->db_read(ntb), 0x0183ULL);
	/* bit 8 is pending too, but masked by the client */
	KUNIT_EXPECT_EQ(test, plx_ntb_isr(env->plx), IRQ_HANDLED);
	EXPECT_WRITES(test, env, isr);
	KUNIT_EXPECT_EQ(test, ops->db_read_mask(ntb), 0xff00ULL);
	/* still pending, but all masked now: not ours */
	KUNIT_EXPECT_EQ(test, plx_ntb_isr(env->plx), IRQ_NONE);
	EXPECT_NO_WRITE(test, env);

	KUNIT_EXPECT_EQ(test, ops->db_set_mask(ntb, 0x0002), 0);
	KUNIT_EXPECT_EQ(test, ops->db_clear(ntb, 0x0083), 0);
	EXPECT_WRITES(test, env, clear);
	KUNIT_EXPECT_EQ(test, ops->db_clear_mask(ntb, 0x0002), 0);
	EXPECT_WRITES(test, env, unmask1);

	*pending = 0x0002;
	KUNIT_EXPECT_EQ(test, plx_ntb_isr(env->plx), IRQ_HANDLED);
	EXPECT_WRITES(test, env, isr1);
	KUNIT_EXPECT_EQ(test, ops->db_clear_mask(ntb, 0x0002), 0);
	EXPECT_WRITES(test, env, unmask1_again);
	KUNIT_EXPECT_EQ(test, plx_ntb_isr(env->plx), IRQ_HANDLED);
	EXPECT_WRITES(test, env, isr1);
	KUNIT_EXPECT_EQ(test, ops->db_clear(ntb, 0x0002), 0);
	EXPECT_WRITES(test, env, clear1);
	KUNIT_EXPECT_EQ(test, ops->db_clear(ntb, 0x10000), -EINVAL);
	EXPECT_NO_WRITE(test, env);
	KUNIT_EXPECT_EQ(test, ops->db_read_mask(ntb), 0xff00ULL);

	/* nothing pending, no link error */
	*pending = 0;
	KUNIT_EXPECT_EQ(test, plx_ntb_isr(env->plx), IRQ_NONE);
	EXPECT_NO_WRITE(test, env);
}

/*
 * A doorbell that comes before the link is reported up (it proves the link
 * up) is masked and held: the clients hear of the link first, then of the
 * doorbell, which fires again once unmasked.
 */
static void doorbells_held(struct kunit *test)
{
	/* the ISR masks bit 2 without reporting it */
	static const struct plx_w hold[] = { W0(0x3ec54, 0x0004), W_END };
	/* the link reported up: the held bit unmasked, so that it fires again */
	static const struct plx_w release[] = { W0(0x3ec58, 0x0004), W_END };
	/* then reported like any doorbell */
	static const struct plx_w isr[] = { W0(0x3ec54, 0x0004), W_END };
	struct plx_env *env = plx_up(test, &lay_b2b64);
	const struct ntb_dev_ops *ops = env->ops;
	struct ntb_dev *ntb = env->ntb;
	u32 *pending = &env->fake.bar0[0x3ec4c / 4];

	KUNIT_EXPECT_EQ(test, ops->db_clear_mask(ntb, 0x000f), 0);
	skip_writes(env);
	env->fake.lnksta = 0;
	*pending = 0x0004;
	KUNIT_EXPECT_EQ(test, plx_ntb_isr(env->plx), IRQ_HANDLED);
	/* the ISR kicked the link poll; it may have run, finding the link down */
	cancel_delayed_work_sync(&env->plx->link_work);
	clear_bit(PLX_REINIT, &env->plx->flags);
	EXPECT_WRITES(test, env, hold);
	KUNIT_EXPECT_EQ(test, ops->db_read_mask(ntb), 0xfff0ULL);
	KUNIT_EXPECT_EQ(test, plx_ntb_isr(env->plx), IRQ_NONE);
	/* a client's unmask does not release it either */
	KUNIT_EXPECT_EQ(test, ops->db_clear_mask(ntb, 0x0004), 0);
	EXPECT_NO_WRITE(test, env);

	env->fake.lnksta = LNKSTA_UP_X4;
	plx_ntb_check_link(env->plx);
	EXPECT_WRITES(test, env, release);
	KUNIT_EXPECT_TRUE(test, env->plx->link_up);
	KUNIT_EXPECT_EQ(test, plx_ntb_isr(env->plx), IRQ_HANDLED);
	EXPECT_WRITES(test, env, isr);
}

/* Link events the driver reported to its client (dl_down) */
static int link_events;

static void count_link_event(void *ctx)
{
	link_events++;
}

static const struct ntb_ctx_ops count_ops = {
	.link_event = count_link_event,
};

static void dl_down(struct kunit *test)
{
	static const struct plx_w corr[] = { W0(0x3efe0, 0x1), W_END };
	static const struct plx_w down[] = { W0(0x3efe0, 0x5), W_END };
	struct plx_env *env = plx_up(test, &lay_b2b64);
	struct plx_fake *f = &env->fake;
	enum ntb_speed speed;
	enum ntb_width width;
	int events;

	KUNIT_ASSERT_EQ(test, ntb_set_ctx(env->ntb, NULL, &count_ops), 0);

	skip_writes(env);
	f->lnksta = LNKSTA_UP_X4;
	/* up once the link work saw it */
	KUNIT_EXPECT_EQ(test, env->ops->link_is_up(env->ntb, &speed, &width), 0ULL);
	KUNIT_EXPECT_EQ(test, speed, NTB_SPEED_NONE);
	plx_ntb_check_link(env->plx);
	KUNIT_EXPECT_EQ(test, env->ops->link_is_up(env->ntb, &speed, &width), 1ULL);
	KUNIT_EXPECT_EQ(test, speed, NTB_SPEED_GEN1);
	KUNIT_EXPECT_EQ(test, width, NTB_WIDTH_4);
	EXPECT_NO_WRITE(test, env);

	/* a correctable error: cleared, nothing set up again */
	f->bar0[0x3efe0 / 4] = PLX_LINK_ERR_CORR;
	KUNIT_EXPECT_EQ(test, plx_ntb_isr(env->plx), IRQ_HANDLED);
	EXPECT_WRITES(test, env, corr);
	f->bar0[0x3efe0 / 4] = 0;
	plx_ntb_check_link(env->plx);
	EXPECT_NO_WRITE(test, env);

	/*
	 * DL_Down (with a correctable error): cleared, and the link work kicked.
	 * The link is down meanwhile, so that the work writes nothing; it is
	 * cancelled before the link comes back, so that only our call sets up.
	 */
	f->lnksta = 0;
	f->bar0[0x3efe0 / 4] = PLX_LINK_ERR_DL_DOWN | PLX_LINK_ERR_CORR;
	KUNIT_EXPECT_EQ(test, plx_ntb_isr(env->plx), IRQ_HANDLED);
	cancel_delayed_work_sync(&env->plx->link_work);
	EXPECT_WRITES(test, env, down);
	f->bar0[0x3efe0 / 4] = 0;

	f->lnksta = LNKSTA_UP_X4;
	events = link_events;
	plx_ntb_check_link(env->plx);
	EXPECT_WRITES(test, env, b2b_bar0_at_bar4, b2b_out_bar2_bar4, rid_lut_link_nt0,
		      rid_lut_nt0v, win_bar2_b2b64_clear, win_bar4_b2b64_clear, link_cmd_nt0);
	/* the clients never saw it down: told of the loss, then of the link back */
	KUNIT_EXPECT_EQ(test, link_events - events, 2);
	KUNIT_EXPECT_TRUE(test, env->plx->link_up);
	/* once only */
	plx_ntb_check_link(env->plx);
	EXPECT_NO_WRITE(test, env);
	KUNIT_EXPECT_EQ(test, link_events - events, 2);
	ntb_clear_ctx(env->ntb);
}

/*
 * B2B: the PCIe link is up but the peer chip does not answer through the B2B
 * window (its link side reset, not yet set up again): the link stays down for
 * the clients, whose scratchpad and doorbell writes would be lost, and comes
 * up once the peer answers. The set-up after a link loss does not wait for it.
 */
static void peer_silent(struct kunit *test)
{
	struct plx_env *env = plx_up(test, &lay_b2b64);
	struct plx_fake *f = &env->fake;

	skip_writes(env);
	f->peer_silent = true;
	f->lnksta = LNKSTA_UP_X4;
	plx_ntb_check_link(env->plx);
	KUNIT_EXPECT_FALSE(test, env->plx->link_up);
	KUNIT_EXPECT_EQ(test, env->ops->link_is_up(env->ntb, NULL, NULL), 0ULL);
	f->peer_silent = false;
	plx_ntb_check_link(env->plx);
	KUNIT_EXPECT_TRUE(test, env->plx->link_up);
	KUNIT_EXPECT_EQ(test, env->ops->link_is_up(env->ntb, NULL, NULL), 1ULL);
	EXPECT_NO_WRITE(test, env);

	/* lost and back, the peer still silent: set up again, reported down */
	f->lnksta = 0;
	plx_ntb_check_link(env->plx);
	f->lnksta = LNKSTA_UP_X4;
	f->peer_silent = true;
	plx_ntb_check_link(env->plx);
	EXPECT_WRITES(test, env, b2b_bar0_at_bar4, b2b_out_bar2_bar4, rid_lut_link_nt0,
		      rid_lut_nt0v, win_bar2_b2b64_clear, win_bar4_b2b64_clear, link_cmd_nt0);
	KUNIT_EXPECT_FALSE(test, env->plx->link_up);
	f->peer_silent = false;
	plx_ntb_check_link(env->plx);
	KUNIT_EXPECT_TRUE(test, env->plx->link_up);
	EXPECT_NO_WRITE(test, env);
}

static void surprise_removal(struct kunit *test)
{
	struct plx_env *env;

	/* gone before probe: config space reads all ones */
	env = env_new(test, &lay_b2b64);
	env->fake.gone = true;
	KUNIT_EXPECT_EQ(test, env_init(test, env, &lay_b2b64), -ENODEV);
	EXPECT_NO_WRITE(test, env);
	/* config space still answers, BAR0 reads all ones */
	env = env_new(test, &lay_b2b64);
	env->fake.regs_gone = true;
	KUNIT_EXPECT_EQ(test, env_init(test, env, &lay_b2b64), -ENODEV);
	EXPECT_NO_WRITE(test, env);

	/* gone after probe, with every doorbell unmasked: all ones is no doorbell */
	env = plx_up(test, &lay_b2b64);
	KUNIT_EXPECT_EQ(test, env->ops->db_clear_mask(env->ntb, 0xffff), 0);
	skip_writes(env);
	env->fake.gone = true;
	KUNIT_EXPECT_EQ(test, plx_ntb_isr(env->plx), IRQ_NONE);
	KUNIT_EXPECT_EQ(test, env->ops->link_is_up(env->ntb, NULL, NULL), 0ULL);
	KUNIT_EXPECT_EQ(test, env->ops->db_read(env->ntb), 0ULL);
	plx_ntb_check_link(env->plx);
	EXPECT_NO_WRITE(test, env);
}

static void unbind(struct kunit *test)
{
	/* every doorbell masked, link errors masked (Virtual side) */
	static const struct plx_w mask_nt0v[] = { W0(0x3ec54, 0xffff), W0(0x3efe4, 0xf), W_END };
	struct plx_env *env = plx_up(test, &lay_b2b64);

	KUNIT_EXPECT_EQ(test, env->ops->mw_set_trans(env->ntb, 0, 0, 0x123400000ULL, SZ_1M), 0);
	KUNIT_EXPECT_EQ(test, env->ops->db_clear_mask(env->ntb, 0xffff), 0);
	skip_writes(env);
	plx_ntb_uninit(env->plx);
	EXPECT_WRITES(test, env, mask_nt0v, win_bar2_b2b64_clear, win_bar4_b2b64_clear);

	/* the Link side: no link-error registers, translations in the Virtual page */
	env = plx_up(test, &lay_rp_link);
	skip_writes(env);
	plx_ntb_uninit(env->plx);
	EXPECT_WRITES(test, env, db_mask_nt1l, xlat_nt1_clear);
}

/* refused before any write: no A-LUT, more than 2^7, BAR2 wholly taken by B2B */
static const struct plx_layout lay_split_bad[] = {
	{ .port_cfg = 8 << 8, .bars = { [2] = BAR64(0x380000000000ULL, SZ_8M) },
	  .params = { .b2b = false, .split = 1 } },
	{ .port_cfg = BIT(30) | (8 << 8), .bars = { [2] = BAR64(0x380000000000ULL, SZ_8M) },
	  .params = { .b2b = false, .split = 8 } },
	{ .port_cfg = BIT(30) | (8 << 8), .bars = { [2] = BAR64(0x380000000000ULL, SZ_1M) },
	  .params = { .b2b = true, .split = 1 } },
};

static void split_invalid(struct kunit *test)
{
	struct plx_env *env;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(lay_split_bad); i++) {
		env = env_new(test, &lay_split_bad[i]);
		KUNIT_EXPECT_EQ_MSG(test, env_init(test, env, &lay_split_bad[i]), -EINVAL,
				    "layout %u", i);
		EXPECT_NO_WRITE(test, env);
	}
}

/*
 * More requesters (a DMA function 3:2.1, another function of the same device,
 * one at 80:0.0): one LUT entry a device, after the six fixed ones, two a
 * dword; more than the LUT holds is refused before any write.
 */
static const struct plx_layout lay_rids = {
	.face = 0, .port_cfg = 8 << 8,
	.bars = { [2] = BAR64(0x380000000000ULL, SZ_4M), [4] = BAR64(0x380000400000ULL, SZ_4M) },
	.params = { .b2b = true, .rid = { 0x0311, 0x0310, 0x8000 }, .nr_rid = 3 },
};

static const struct plx_layout lay_rids_bad = {
	.face = 0, .port_cfg = 8 << 8,
	.bars = { [2] = BAR64(0x380000000000ULL, SZ_4M), [4] = BAR64(0x380000400000ULL, SZ_4M) },
	.params = { .b2b = true, .nr_rid = PLX_MAX_RID + 1 },
};

/* 3:2.* and 80:0.* in the Virtual LUT's entries 6 and 7 */
static const struct plx_w rid_lut_nt0v_more[] = {
	W0(0x3ed94, 0x03090001), W0(0x3ed98, 0x40210021), W0(0x3ed9c, 0xc0218021),
	W0(0x3eda0, 0x80010311), W_END };

static void requester_ids(struct kunit *test)
{
	struct plx_env *env = plx_up(test, &lay_rids);

	EXPECT_WRITES(test, env, tp_probe_nt0, db_mask_nt0v, b2b_bar0_at_bar4, b2b_out_bar2_bar4,
		      rid_lut_link_nt0, rid_lut_nt0v_more, win_bar2_b2b64_clear,
		      win_bar4_b2b64_clear, link_cmd_nt0, link_err_nt0);

	env = env_new(test, &lay_rids_bad);
	KUNIT_EXPECT_EQ(test, env_init(test, env, &lay_rids_bad), -EINVAL);
	EXPECT_NO_WRITE(test, env);
}

/* The rid option: bus:device and lspci's bus:device.function, in hex. */
static void requester_ids_option(struct kunit *test)
{
	static const char * const bad[] = {
		"zz", "03", "03:20", "100:00", "03:00.0x", "03:00.8", "0x3:00", "03:00,",
		"03:00 ", "-1:00",
		"0:0,0:1,0:2,0:3,0:4,0:5,0:6,0:7,0:8,0:9,0:a",
	};
	struct plx_params p = {};
	unsigned int i;

	KUNIT_EXPECT_EQ(test, plx_parse_rids(&p, NULL, NULL), 0);
	KUNIT_EXPECT_EQ(test, plx_parse_rids(&p, "", NULL), 0);
	KUNIT_EXPECT_EQ(test, p.nr_rid, 0U);
	KUNIT_EXPECT_EQ(test, plx_parse_rids(&p, "03:00,80:1f.7,A:2", NULL), 0);
	KUNIT_ASSERT_EQ(test, p.nr_rid, 3U);
	KUNIT_EXPECT_EQ(test, p.rid[0], 0x0300);
	KUNIT_EXPECT_EQ(test, p.rid[1], 0x80f8);
	KUNIT_EXPECT_EQ(test, p.rid[2], 0x0a10);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		p.nr_rid = 0;
		KUNIT_EXPECT_EQ_MSG(test, plx_parse_rids(&p, bad[i], NULL), -EINVAL,
				    "rid=%s", bad[i]);
	}
	/* the switch's own DMA functions first: the option gets what is left */
	p.nr_rid = PLX_MAX_RID - 1;
	KUNIT_EXPECT_EQ(test, plx_parse_rids(&p, "03:00", NULL), 0);
	KUNIT_EXPECT_EQ(test, plx_parse_rids(&p, "04:00", NULL), -EINVAL);
}

static int plx_test_init(struct kunit *test)
{
	test->priv = kunit_kzalloc(test, sizeof(struct plx_kctx), GFP_KERNEL);
	return test->priv ? 0 : -ENOMEM;
}

static void plx_test_exit(struct kunit *test)
{
	struct plx_kctx *ctx = test->priv;
	struct plx_env *env;
	unsigned int i;

	for (i = 0; i < ctx->n; i++) {
		env = ctx->env[i];
		/* link_enable() and a DL_Down start the link poll */
		if (env->inited)
			cancel_delayed_work_sync(&env->plx->link_work);
		kvfree(env->fake.bar0);
		kvfree(env->fake.b2b);
		kvfree(env->fake.trace);
	}
}

static int plx_suite_init(struct kunit_suite *suite)
{
	/*
	 * A platform device: root_device_register() links its device to the
	 * module, whose sysfs is not there yet while a module's suite runs.
	 */
	plx_kunit_pdev = platform_device_register_simple("plx_kunit", -1, NULL, 0);
	if (IS_ERR(plx_kunit_pdev))
		return PTR_ERR(plx_kunit_pdev);
	plx_kunit_dev = &plx_kunit_pdev->dev;
	return 0;
}

static void plx_suite_exit(struct kunit_suite *suite)
{
	platform_device_unregister(plx_kunit_pdev);
}

static struct kunit_case plx_cases[] = {
	KUNIT_CASE(probe_b2b_64bit_large),
	KUNIT_CASE(probe_b2b_small_last_bar),
	KUNIT_CASE(probe_b2b_32bit),
	KUNIT_CASE(probe_root_port_virtual),
	KUNIT_CASE(probe_root_port_link),
	KUNIT_CASE(alut_on_split),
	KUNIT_CASE(alut_off),
	KUNIT_CASE(set_clear_trans_b2b),
	KUNIT_CASE(spad_partition_and_retry),
	KUNIT_CASE(doorbells),
	KUNIT_CASE(doorbells_held),
	KUNIT_CASE(dl_down),
	KUNIT_CASE(peer_silent),
	KUNIT_CASE(surprise_removal),
	KUNIT_CASE(unbind),
	KUNIT_CASE(split_invalid),
	KUNIT_CASE(requester_ids),
	KUNIT_CASE(requester_ids_option),
	{}
};

static struct kunit_suite plx_suite = {
	.name = "ntb_hw_plx",
	.suite_init = plx_suite_init,
	.suite_exit = plx_suite_exit,
	.init = plx_test_init,
	.exit = plx_test_exit,
	.test_cases = plx_cases,
};

kunit_test_suite(plx_suite);

MODULE_DESCRIPTION("KUnit tests of the PEX-87xx NT port driver's chip logic");
MODULE_LICENSE("GPL");
