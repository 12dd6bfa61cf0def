// SPDX-License-Identifier: GPL-2.0
/*
 * select.bpf.c: ntbsmc_run --bpf's selector. It rewrites the protocol of the
 * TCP sockets a process in its scope creates with socket(2) to IPPROTO_NTBSMC,
 * through the fmod_ret hook update_socket_protocol (Linux 6.6 and later).
 *
 * The scope is set by ntbsmc-bpf before load: one cgroup and its descendants
 * (the cgroup array's slot 0), or one network namespace (its nsfs inode). The
 * hook sees socket(2) only: io_uring's IORING_OP_SOCKET, kernel sockets and
 * accepted sockets (which inherit their listener's protocol) pass by it.
 */
#include <linux/bpf.h>
#include <linux/ntbsmc.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#define AF_INET		2
#define AF_INET6	10
#define SOCK_STREAM	1
#define SOCK_TYPE_MASK	0xf	/* type also carries SOCK_NONBLOCK, SOCK_CLOEXEC */
#define IPPROTO_TCP	6

enum { SCOPE_CGROUP, SCOPE_NETNS };

/* The kernel's types, as far as the netns scope reads them: libbpf relocates
 * the offsets against the running kernel's BTF (CO-RE).
 */
struct ns_common {
	unsigned int inum;
} __attribute__((preserve_access_index));

struct net {
	struct ns_common ns;
} __attribute__((preserve_access_index));

struct nsproxy {
	struct net *net_ns;
} __attribute__((preserve_access_index));

struct task_struct {
	struct nsproxy *nsproxy;
} __attribute__((preserve_access_index));

const volatile __u32 scope = SCOPE_CGROUP;
const volatile __u32 netns_inum;

/* Sockets made IPPROTO_NTBSMC, read by ntbsmc-bpf when it detaches. */
__u64 selected;

struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} scope_cgroup SEC(".maps");

static int in_scope(void)
{
	struct task_struct *task;

	if (scope == SCOPE_CGROUP)
		/* 1: in the cgroup or below it; 0: not; < 0: no cgroup in slot 0 */
		return bpf_current_task_under_cgroup(&scope_cgroup, 0) == 1;

	/* A task's nsproxy is NULL once it is exiting; a BTF pointer read
	 * through NULL yields 0, which no namespace has as its inode.
	 */
	task = bpf_get_current_task_btf();
	return task->nsproxy->net_ns->ns.inum == netns_inum;
}

SEC("fmod_ret/update_socket_protocol")
int BPF_PROG(ntbsmc_select, int family, int type, int protocol)
{
	if (family != AF_INET && family != AF_INET6)
		return protocol;
	if ((type & SOCK_TYPE_MASK) != SOCK_STREAM)
		return protocol;
	if (protocol != 0 && protocol != IPPROTO_TCP)
		return protocol;
	if (!in_scope())
		return protocol;
	__sync_fetch_and_add(&selected, 1);
	return IPPROTO_NTBSMC;
}

char LICENSE[] SEC("license") = "GPL";
