// SPDX-License-Identifier: GPL-2.0
/* ntb_rtt: doorbell round-trip time of an NTB link (selftests and make bench). */

/*
 * Loaded on both ends. Writing N to /sys/kernel/debug/ntb_rtt/<dev>/run rings
 * doorbell 0 at the peer N times, each time waiting for the peer to ring doorbell 0
 * back from its interrupt; reading "run" then gives the round trips in ns:
 * "count N min X median X p99 X max X". The responder side needs nothing but the
 * module loaded and the link up.
 */

#include <linux/module.h>
#include <linux/ntb.h>
#include <linux/debugfs.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/completion.h>
#include <linux/ktime.h>

#define RTT_MAX 100000

struct rtt_ctx {
	struct ntb_dev *ntb;
	struct dentry *dir;
	struct mutex lock;
	struct completion pong;
	bool pinging;
	u64 *samples;
	unsigned int count;
};

static struct dentry *rtt_root;

static void rtt_link_event(void *ctx)
{
}

static void rtt_db_event(void *data, int vec)
{
	struct rtt_ctx *ctx = data;
	u64 bits = ntb_db_read(ctx->ntb) & BIT_ULL(0);

	if (!bits)
		return;
	ntb_db_clear(ctx->ntb, bits);
	if (READ_ONCE(ctx->pinging))
		complete(&ctx->pong);
	else
		ntb_peer_db_set(ctx->ntb, BIT_ULL(0));	/* responder: ring back */
}

static const struct ntb_ctx_ops rtt_ops = {
	.link_event = rtt_link_event,
	.db_event = rtt_db_event,
};

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

static ssize_t rtt_run_write(struct file *f, const char __user *ubuf, size_t len,
			     loff_t *off)
{
	struct rtt_ctx *ctx = f->private_data;
	unsigned int n, i;
	ktime_t t0;
	int rc;

	rc = kstrtouint_from_user(ubuf, len, 0, &n);
	if (rc)
		return rc;
	if (!n || n > RTT_MAX)
		return -EINVAL;
	if (!ntb_link_is_up(ctx->ntb, NULL, NULL))
		return -ENOLINK;
	mutex_lock(&ctx->lock);
	WRITE_ONCE(ctx->pinging, true);
	for (i = 0; i < n; i++) {
		reinit_completion(&ctx->pong);
		t0 = ktime_get();
		ntb_peer_db_set(ctx->ntb, BIT_ULL(0));
		if (!wait_for_completion_timeout(&ctx->pong, HZ)) {
			rc = -ETIMEDOUT;
			break;
		}
		ctx->samples[i] = ktime_to_ns(ktime_sub(ktime_get(), t0));
	}
	WRITE_ONCE(ctx->pinging, false);
	ctx->count = rc ? 0 : n;
	if (!rc)
		sort(ctx->samples, n, sizeof(u64), cmp_u64, NULL);
	mutex_unlock(&ctx->lock);
	return rc ?: len;
}

static ssize_t rtt_run_read(struct file *f, char __user *ubuf, size_t len, loff_t *off)
{
	struct rtt_ctx *ctx = f->private_data;
	char buf[160];
	unsigned int n;
	int l;

	mutex_lock(&ctx->lock);
	n = ctx->count;
	if (n)
		l = scnprintf(buf, sizeof(buf), "count %u min %llu median %llu p99 %llu max %llu\n",
			      n, ctx->samples[0], ctx->samples[n / 2],
			      ctx->samples[min(n - 1, n * 99 / 100)], ctx->samples[n - 1]);
	else
		l = scnprintf(buf, sizeof(buf), "count 0\n");
	mutex_unlock(&ctx->lock);
	return simple_read_from_buffer(ubuf, len, off, buf, l);
}

static const struct file_operations rtt_run_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = rtt_run_read,
	.write = rtt_run_write,
};

static int rtt_probe(struct ntb_client *client, struct ntb_dev *ntb)
{
	struct rtt_ctx *ctx;
	int rc;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return -ENOMEM;
	ctx->samples = kvcalloc(RTT_MAX, sizeof(u64), GFP_KERNEL);
	if (!ctx->samples) {
		kfree(ctx);
		return -ENOMEM;
	}
	ctx->ntb = ntb;
	mutex_init(&ctx->lock);
	init_completion(&ctx->pong);
	rc = ntb_set_ctx(ntb, ctx, &rtt_ops);
	if (rc) {
		kvfree(ctx->samples);
		kfree(ctx);
		return rc;
	}
	ntb_db_clear(ntb, BIT_ULL(0));
	ntb_db_clear_mask(ntb, BIT_ULL(0));
	ntb_link_enable(ntb, NTB_SPEED_AUTO, NTB_WIDTH_AUTO);
	ctx->dir = debugfs_create_dir(dev_name(&ntb->dev), rtt_root);
	debugfs_create_file("run", 0600, ctx->dir, ctx, &rtt_run_fops);
	return 0;
}

static void rtt_remove(struct ntb_client *client, struct ntb_dev *ntb)
{
	struct rtt_ctx *ctx = ntb->ctx;

	debugfs_remove_recursive(ctx->dir);
	ntb_link_disable(ntb);
	ntb_db_set_mask(ntb, BIT_ULL(0));
	ntb_clear_ctx(ntb);
	kvfree(ctx->samples);
	kfree(ctx);
}

static struct ntb_client rtt_client = {
	.ops = {
		.probe = rtt_probe,
		.remove = rtt_remove,
	},
};

static int __init rtt_init(void)
{
	int rc;

	rtt_root = debugfs_create_dir(KBUILD_MODNAME, NULL);
	rc = ntb_register_client(&rtt_client);
	if (rc)
		debugfs_remove_recursive(rtt_root);
	return rc;
}

static void __exit rtt_exit(void)
{
	ntb_unregister_client(&rtt_client);
	debugfs_remove_recursive(rtt_root);
}

module_init(rtt_init);
module_exit(rtt_exit);
MODULE_DESCRIPTION("NTB doorbell round-trip time");
MODULE_LICENSE("GPL");
