// SPDX-License-Identifier: GPL-2.0
/*
 * ntbsmc-bpf: runs a program with the TCP sockets it creates made
 * IPPROTO_NTBSMC by a BPF program on update_socket_protocol (bpf/select.bpf.c),
 * for programs LD_PRELOAD cannot reach (static binaries, Go, setuid programs,
 * cleaned environments). ntbsmc_run --bpf calls it.
 *
 *   ntbsmc-bpf [-s cgroup|netns] [-v] [--] PROGRAM [ARGS...]
 *
 * cgroup (the default): PROGRAM and its descendants run in a new cgroup
 * (ntbsmc-run.PID under this process's own); netns: every process of this
 * network namespace, for as long as PROGRAM runs. The program detaches when
 * PROGRAM exits, or when this process dies (the kernel holds the attachment
 * only through our link fd; nothing is pinned).
 *
 * While attached we hold an IPPROTO_NTBSMC socket, so the module cannot be
 * unloaded under the selector and every socket() it rewrites can be created.
 *
 * Needs CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN) to load and attach a tracing
 * program, and for the cgroup scope write access to this process's cgroup.
 * Exit status: PROGRAM's (128 + signal if it was killed); 1 if it could not be
 * started (nothing ran), 2 on a usage error, 127 if PROGRAM was not found.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/ntbsmc.h>

#include "select.skel.h"

enum { SCOPE_CGROUP, SCOPE_NETNS };	/* as in bpf/select.bpf.c */

static const char *prog_name = "ntbsmc_run";
static bool verbose;
static pid_t child;

static void __attribute__((format(printf, 1, 2))) err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: --bpf: ", prog_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (!verbose || level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: ntbsmc-bpf [-s cgroup|netns] [-v] [--] PROGRAM [ARGS...]\n"
		"Runs PROGRAM with the TCP sockets it creates made IPPROTO_NTBSMC by a BPF\n"
		"program on update_socket_protocol (Linux 6.6 and later).\n"
		"  -s cgroup  PROGRAM and the processes it starts (a new cgroup; default)\n"
		"  -s netns   every process in this network namespace while PROGRAM runs\n"
		"  -v         say what was attached and how many sockets were selected\n");
}

/*
 * The hook is there when the kernel's BTF describes update_socket_protocol;
 * whether it may be modified (MPTCP's BPF support registers it) the load
 * itself tells.
 */
static bool hook_present(void)
{
	struct btf *btf = btf__load_vmlinux_btf();
	bool found;

	if (!btf)
		return false;
	found = btf__find_by_name_kind(btf, "update_socket_protocol", BTF_KIND_FUNC) > 0;
	btf__free(btf);
	return found;
}

static void no_hook(const char *why)
{
	struct utsname u;

	uname(&u);
	err("this kernel (%s) %s: the BPF selector needs Linux 6.6 or later with BPF, "
	    "BTF and MPTCP (update_socket_protocol). Only the preload helper works "
	    "here: run ntbsmc_run without --bpf, or create IPPROTO_NTBSMC sockets",
	    u.release, why);
}

/* The cgroup2 mount point, from /proc/self/mountinfo. */
static int cgroup2_root(char *buf, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char mnt[PATH_MAX], *sep = strstr(line, " - ");

		if (!sep || strncmp(sep, " - cgroup2 ", 11))
			continue;
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
			continue;
		if (strlen(mnt) >= len)
			continue;
		strcpy(buf, mnt);
		ret = 0;
		break;
	}
	fclose(f);
	return ret;
}

/* This process's cgroup v2 path ("0::/a/b"), relative to the mount's root. */
static int own_cgroup(char *buf, size_t len)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[PATH_MAX + 8];
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3))
			continue;
		line[strcspn(line, "\n")] = '\0';
		if (strlen(line + 3) >= len) {
			ret = -ENAMETOOLONG;
			break;
		}
		strcpy(buf, line + 3);
		ret = 0;
		break;
	}
	fclose(f);
	return ret;
}

struct scope_cg {
	char dir[PATH_MAX];	/* the cgroup we made */
	char parent[PATH_MAX];	/* where leftovers go back to */
	int fd;			/* O_DIRECTORY, for the cgroup array */
	int procs;		/* its cgroup.procs, written by the child */
};

/*
 * No cgroup2 mount in this mount namespace: `ip netns exec` gives its program
 * a fresh sysfs, which hides the host's /sys/fs/cgroup. Mount one on it in a
 * mount namespace of our own (PROGRAM inherits it; nothing leaks out).
 */
static int cgroup2_mount_private(char *buf, size_t len)
{
	static const char dir[] = "/sys/fs/cgroup";

	if (unshare(CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) ||
	    mount("cgroup2", dir, "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
		return -errno;
	snprintf(buf, len, "%s", dir);
	return 0;
}

static int cgroup_make(struct scope_cg *cg)
{
	char root[PATH_MAX], own[PATH_MAX], procs[PATH_MAX + 16];
	int ret;

	ret = cgroup2_root(root, sizeof(root));
	if (ret == -ENOENT)
		ret = cgroup2_mount_private(root, sizeof(root));
	if (ret) {
		err("no cgroup2 filesystem is mounted, and none could be (%s): "
		    "mount -t cgroup2 none /sys/fs/cgroup, or choose --scope netns",
		    strerror(-ret));
		return ret;
	}
	ret = own_cgroup(own, sizeof(own));
	if (ret) {
		err("cannot tell this process's cgroup v2 from /proc/self/cgroup: %s",
		    strerror(-ret));
		return ret;
	}
	if (snprintf(cg->parent, sizeof(cg->parent), "%s%s", root,
		     strcmp(own, "/") ? own : "") >= (int)sizeof(cg->parent) ||
	    snprintf(cg->dir, sizeof(cg->dir), "%s/ntbsmc-run.%d", cg->parent,
		     (int)getpid()) >= (int)sizeof(cg->dir)) {
		err("cgroup path too long");
		return -ENAMETOOLONG;
	}
	if (mkdir(cg->dir, 0755)) {
		ret = -errno;
		err("cannot create cgroup %s: %s%s", cg->dir, strerror(errno),
		    errno == EACCES || errno == EPERM || errno == EROFS ?
		    " (it needs write access to this process's cgroup; or choose --scope netns)" : "");
		return ret;
	}
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg->dir);
	cg->fd = open(cg->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cg->procs = open(procs, O_WRONLY | O_CLOEXEC);
	if (cg->fd < 0 || cg->procs < 0) {
		ret = -errno;
		err("cannot open cgroup %s: %s", cg->dir, strerror(errno));
		if (cg->fd >= 0)
			close(cg->fd);
		rmdir(cg->dir);
		return ret;
	}
	return 0;
}

/*
 * PROGRAM's descendants may outlive it in the cgroup: move them back to where
 * we came from (their new sockets are TCP, the selector being gone) and remove
 * the cgroup. A process forking meanwhile lands in it again; a few rounds.
 */
static void cgroup_remove(struct scope_cg *cg)
{
	char path[PATH_MAX + 16], pid[32];
	int round;

	close(cg->fd);
	close(cg->procs);
	for (round = 0; round < 10; round++) {
		FILE *in, *out;

		if (!rmdir(cg->dir) || errno != EBUSY)
			return;
		snprintf(path, sizeof(path), "%s/cgroup.procs", cg->dir);
		in = fopen(path, "re");
		snprintf(path, sizeof(path), "%s/cgroup.procs", cg->parent);
		out = fopen(path, "we");
		if (!in || !out) {
			if (in)
				fclose(in);
			if (out)
				fclose(out);
			break;
		}
		while (fgets(pid, sizeof(pid), in)) {
			fputs(pid, out);
			fflush(out);
		}
		fclose(in);
		fclose(out);
	}
	if (rmdir(cg->dir))
		err("cannot remove cgroup %s: %s", cg->dir, strerror(errno));
}

static void forward(int sig)
{
	if (child > 0)
		kill(child, sig);
}

/*
 * Fork and exec PROGRAM. The child joins the cgroup (if any) first; a failure
 * there or in exec comes back through a close-on-exec pipe, so "started" means
 * PROGRAM is running inside the scope.
 */
static int start(char **argv, int procs_fd)
{
	int pipefd[2], e;
	ssize_t n;

	if (pipe2(pipefd, O_CLOEXEC))
		return -errno;
	child = fork();
	if (child < 0) {
		e = -errno;
		close(pipefd[0]);
		close(pipefd[1]);
		return e;
	}
	if (child == 0) {
		close(pipefd[0]);
		signal(SIGINT, SIG_DFL);
		signal(SIGQUIT, SIG_DFL);
		if (procs_fd >= 0 && write(procs_fd, "0\n", 2) != 2) {
			e = errno;
			if (write(pipefd[1], &e, sizeof(e)) < 0)
				_exit(1);
			_exit(1);
		}
		execvp(argv[0], argv);
		e = -errno;	/* negative: exec, positive: cgroup */
		if (write(pipefd[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(pipefd[1]);
	do
		n = read(pipefd[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(pipefd[0]);
	if (n == sizeof(e)) {
		waitpid(child, NULL, 0);
		child = 0;
		if (e > 0) {
			err("cannot move %s into its cgroup: %s", argv[0], strerror(e));
			return 1;
		}
		fprintf(stderr, "%s: %s: %s\n", prog_name, argv[0], strerror(-e));
		return -e == ENOENT ? 127 : 126;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct ntbsmc_select *skel = NULL;
	struct scope_cg cg = { .fd = -1, .procs = -1 };
	struct sigaction sa = { .sa_handler = forward };
	int scope = SCOPE_CGROUP, opt, pin, status, ret;
	bool have_cg = false;
	struct stat st;

	if (getenv("NTBSMC_RUN_NAME"))
		prog_name = getenv("NTBSMC_RUN_NAME");
	while ((opt = getopt(argc, argv, "+s:vh")) != -1) {
		switch (opt) {
		case 's':
			if (!strcmp(optarg, "cgroup")) {
				scope = SCOPE_CGROUP;
			} else if (!strcmp(optarg, "netns")) {
				scope = SCOPE_NETNS;
			} else {
				err("unknown scope '%s' (cgroup or netns)", optarg);
				return 2;
			}
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		err("no program given");
		return 2;
	}
	libbpf_set_print(libbpf_print);

	if (!hook_present()) {
		no_hook(access("/sys/kernel/btf/vmlinux", R_OK) ?
			"has no BTF (/sys/kernel/btf/vmlinux)" :
			"has no update_socket_protocol hook");
		return 1;
	}
	/* Pins the module (see the head comment); closed at our exit. */
	pin = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_NTBSMC);
	if (pin < 0) {
		err("socket(AF_INET, SOCK_STREAM, IPPROTO_NTBSMC): %s%s", strerror(errno),
		    errno == EPROTONOSUPPORT ? " (the ntbsmc module is not loaded: modprobe ntbsmc)" : "");
		return 1;
	}

	skel = ntbsmc_select__open();
	if (!skel) {
		err("cannot open the BPF program: %s", strerror(errno));
		return 1;
	}
	skel->rodata->scope = scope;
	if (scope == SCOPE_NETNS) {
		if (stat("/proc/self/ns/net", &st)) {
			err("cannot read this process's network namespace: %s", strerror(errno));
			goto fail;
		}
		skel->rodata->netns_inum = st.st_ino;
	}
	ret = ntbsmc_select__load(skel);
	if (ret) {
		if (ret == -EPERM || ret == -EACCES)
			err("loading the BPF program: %s (it needs CAP_BPF and CAP_PERFMON, "
			    "or root)", strerror(-ret));
		else if (ret == -EINVAL || ret == -524 /* ENOTSUPP */ || ret == -ENOSYS)
			no_hook("cannot modify update_socket_protocol (needs CONFIG_MPTCP "
				"and a BPF JIT with trampolines)");
		else
			err("loading the BPF program: %s (-v shows the verifier's log)",
			    strerror(-ret));
		goto fail;
	}
	if (scope == SCOPE_CGROUP) {
		__u32 key = 0;

		if (cgroup_make(&cg))
			goto fail;
		have_cg = true;
		ret = bpf_map__update_elem(skel->maps.scope_cgroup, &key, sizeof(key),
					   &cg.fd, sizeof(cg.fd), BPF_ANY);
		if (ret) {
			err("cannot set the cgroup scope: %s", strerror(-ret));
			goto fail;
		}
	}
	ret = ntbsmc_select__attach(skel);
	if (ret) {
		if (ret == -EPERM || ret == -EACCES)
			err("attaching the BPF program: %s (it needs CAP_BPF and CAP_PERFMON, "
			    "or root)", strerror(-ret));
		else
			no_hook("cannot attach to update_socket_protocol");
		goto fail;
	}
	if (verbose) {
		if (scope == SCOPE_CGROUP)
			fprintf(stderr, "%s: --bpf: TCP sockets of cgroup %s are IPPROTO_NTBSMC\n",
				prog_name, cg.dir);
		else
			fprintf(stderr, "%s: --bpf: TCP sockets of network namespace net:[%lu] are IPPROTO_NTBSMC\n",
				prog_name, (unsigned long)st.st_ino);
	}

	/* Like system(3): the terminal signals the child itself; others we pass on. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	ret = start(argv + optind, have_cg ? cg.procs : -1);
	if (ret)
		goto out;
	while (waitpid(child, &status, 0) < 0) {
		if (errno != EINTR) {
			err("waitpid: %s", strerror(errno));
			status = 1 << 8;
			break;
		}
	}
	child = 0;
	ret = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
out:
	if (verbose)
		fprintf(stderr, "%s: --bpf: %llu sockets made IPPROTO_NTBSMC; detached\n",
			prog_name, (unsigned long long)skel->bss->selected);
	ntbsmc_select__destroy(skel);
	if (have_cg)
		cgroup_remove(&cg);
	close(pin);
	return ret;
fail:
	ntbsmc_select__destroy(skel);
	if (have_cg)
		cgroup_remove(&cg);
	close(pin);
	return 1;
}
