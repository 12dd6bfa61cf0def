// SPDX-License-Identifier: GPL-2.0
/* ntbsmc: per network namespace state: system identity, sysctls, statistics. */

#include <linux/random.h>
#include <linux/sysctl.h>
#include <net/net_namespace.h>
#include "ntbsmc.h"

unsigned int ntbsmc_net_id;

static int max_timeout_ms = NTBSMC_HS_TIMEOUT_MAX_MS;
static int min_timeout_ms = 100;
static int max_busy_poll_us = 100000;
static int min_rmb_kb = NTBSMC_RMB_UNIT >> 10;
static int max_rmb_kb = NTBSMC_RMB_MAX >> 10;
static int max_idle_ms = 24 * 3600 * 1000;
static int max_hs = 65536;
static int max_recheck_ms = 60000;
static int max_orphan_ms = 24 * 3600 * 1000;
static int max_orphans = NTBSMC_SLOT_MAX;

static const struct ctl_table ntbsmc_sysctl_template[] = {
	{
		.procname	= "enabled",
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_ONE,
	},
	{
		.procname	= "handshake_timeout_ms",
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= &min_timeout_ms,
		.extra2		= &max_timeout_ms,
	},
	{
		.procname	= "busy_poll_us",
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= &max_busy_poll_us,
	},
	{
		.procname	= "rmb_kb",
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= &min_rmb_kb,
		.extra2		= &max_rmb_kb,
	},
	{
		.procname	= "lgr_idle_ms",
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= &min_timeout_ms,
		.extra2		= &max_idle_ms,
	},
	{
		.procname	= "dma_threshold",
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_INT_MAX,
	},
	{
		.procname	= "zerocopy_threshold",
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_INT_MAX,
	},
	{
		.procname	= "max_handshakes",
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ONE,
		.extra2		= &max_hs,
	},
	{
		.procname	= "recheck_ms",
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= &max_recheck_ms,
	},
	{
		.procname	= "orphan_timeout_ms",
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= &min_timeout_ms,
		.extra2		= &max_orphan_ms,
	},
	{
		.procname	= "max_orphans",
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= &max_orphans,
	},
	{
		.procname	= "switch",
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_ONE,
	},
	{
		.procname	= "switch_timeout_ms",
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= &min_timeout_ms,
		.extra2		= &max_timeout_ms,
	},
	{ }
};

static int __net_init ntbsmc_net_init(struct net *net)
{
	struct ntbsmc_net *nn = ntbsmc_net(net);
	struct ctl_table *tbl;

	get_random_bytes(nn->sysid, sizeof(nn->sysid));
	nn->enabled = 1;
	nn->handshake_timeout_ms = 2000;
	nn->busy_poll_us = 0;
	nn->rmb_kb = 1024;
	nn->lgr_idle_ms = 600 * 1000;
	nn->dma_threshold = 65536;
	nn->zerocopy_threshold = 262144;
	nn->max_handshakes = 64;
	nn->recheck_ms = NTBSMC_RECHECK_MS;
	nn->orphan_timeout_ms = 60 * 1000;	/* tcp_fin_timeout's default */
	nn->max_orphans = 256;
	nn->switch_on = 1;
	nn->switch_timeout_ms = 5000;
	INIT_LIST_HEAD(&nn->policy);

	/*
	 * Handshakes sleep on the peer, each a handshake timeout at most. The
	 * servers' are as many as peers open (max_handshakes full ones, and the
	 * congested that only decline): on a queue of their own, however many
	 * stall, our clients' connects do not wait for a worker behind them.
	 */
	nn->hs_wq = alloc_workqueue("ntbsmc_hs", WQ_UNBOUND, WQ_MAX_ACTIVE);
	if (!nn->hs_wq)
		return -ENOMEM;
	nn->hs_srv_wq = alloc_workqueue("ntbsmc_hs_srv", WQ_UNBOUND, WQ_MAX_ACTIVE);
	if (!nn->hs_srv_wq)
		goto err_wq;
	tbl = kmemdup(ntbsmc_sysctl_template, sizeof(ntbsmc_sysctl_template),
		      GFP_KERNEL);
	if (!tbl)
		goto err_srv_wq;
	tbl[0].data = &nn->enabled;
	tbl[1].data = &nn->handshake_timeout_ms;
	tbl[2].data = &nn->busy_poll_us;
	tbl[3].data = &nn->rmb_kb;
	tbl[4].data = &nn->lgr_idle_ms;
	tbl[5].data = &nn->dma_threshold;
	tbl[6].data = &nn->zerocopy_threshold;
	tbl[7].data = &nn->max_handshakes;
	tbl[8].data = &nn->recheck_ms;
	tbl[9].data = &nn->orphan_timeout_ms;
	tbl[10].data = &nn->max_orphans;
	tbl[11].data = &nn->switch_on;
	tbl[12].data = &nn->switch_timeout_ms;
	/* Like net.ipv4: a namespace's settings are its own root's to change. */
	nn->sysctl = ntbsmc_register_net_sysctl(net, "net/ntbsmc", tbl,
						ARRAY_SIZE(ntbsmc_sysctl_template) - 1);
	if (!nn->sysctl) {
		kfree(tbl);
		goto err_srv_wq;
	}
	return 0;

err_srv_wq:
	destroy_workqueue(nn->hs_srv_wq);
err_wq:
	destroy_workqueue(nn->hs_wq);
	return -ENOMEM;
}

static void __net_exit ntbsmc_net_pre_exit(struct net *net)
{
	ntbsmc_dev_netns_exit(net);
}

static void __net_exit ntbsmc_net_exit(struct net *net)
{
	struct ntbsmc_net *nn = ntbsmc_net(net);
	const struct ctl_table *tbl = nn->sysctl->ctl_table_arg;

	unregister_net_sysctl_table(nn->sysctl);
	kfree(tbl);
	ntbsmc_policy_flush(net);
	/* every socket held the namespace: no handshake is left but ending ones */
	destroy_workqueue(nn->hs_srv_wq);
	destroy_workqueue(nn->hs_wq);
}

static struct pernet_operations ntbsmc_net_ops = {
	.init	= ntbsmc_net_init,
	.pre_exit = ntbsmc_net_pre_exit,
	.exit	= ntbsmc_net_exit,
	.id	= &ntbsmc_net_id,
	.size	= sizeof(struct ntbsmc_net),
};

int ntbsmc_netns_init(void)
{
	return register_pernet_subsys(&ntbsmc_net_ops);
}

void ntbsmc_netns_exit(void)
{
	unregister_pernet_subsys(&ntbsmc_net_ops);
}
