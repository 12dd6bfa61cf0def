// SPDX-License-Identifier: GPL-2.0
/* ntbsmc tool tests: the module's socket options faked by LD_PRELOAD, for "ntbsmc check". */

/*
 * Preloaded into ntbsmc by tests/run.sh, over real TCP on the loopback device:
 *  - setsockopt(IPPROTO_TCP, TCP_ULP, "ntbsmc") succeeds (and touches nothing);
 *  - getsockopt(SOL_NTBSMC, NTBSMC_INFO) answers from $FAKE_NTBSMC_INFO,
 *    "MODE REASON PEER_REASON LGR_ID RMB_SIZE PEER_RMB_SIZE" (numbers), after
 *    $FAKE_NTBSMC_HANDSHAKE answers (default 2) of NTBSMC_MODE_HANDSHAKE per socket,
 *    counted from its setsockopt(TCP_ULP) or accept();
 *  - everything else goes to libc.
 */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <linux/ntbsmc.h>

#define MAX_FD	1024

static unsigned long looks[MAX_FD];

static void reset(int fd)
{
	if (fd >= 0 && fd < MAX_FD)
		looks[fd] = 0;
}

int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	int (*real)(int fd, int level, int name, const void *val, socklen_t len) =
		dlsym(RTLD_NEXT, "setsockopt");

	if (level == IPPROTO_TCP && name == TCP_ULP && len >= sizeof(NTBSMC_ULP_NAME) - 1 &&
	    !memcmp(val, NTBSMC_ULP_NAME, sizeof(NTBSMC_ULP_NAME) - 1)) {
		reset(fd);
		return 0;
	}
	return real(fd, level, name, val, len);
}

int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	int (*real)(int fd, struct sockaddr *addr, socklen_t *len, int flags) =
		dlsym(RTLD_NEXT, "accept4");
	int cfd = real(fd, addr, len, flags);

	reset(cfd);
	return cfd;
}

int getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	int (*real)(int fd, int level, int name, void *val, socklen_t *len) =
		dlsym(RTLD_NEXT, "getsockopt");
	const char *spec = getenv("FAKE_NTBSMC_INFO");
	const char *hs = getenv("FAKE_NTBSMC_HANDSHAKE");
	struct ntbsmc_info info = { 0 };

	if (level != SOL_NTBSMC)
		return real(fd, level, name, val, len);
	if (name != NTBSMC_INFO || fd < 0 || fd >= MAX_FD) {
		errno = ENOPROTOOPT;
		return -1;
	}
	if (looks[fd]++ < strtoul(hs ? hs : "2", NULL, 10))
		info.mode = NTBSMC_MODE_HANDSHAKE;
	else if (!spec || sscanf(spec, "%u %u %u %u %u %u", &info.mode, &info.reason,
				 &info.peer_reason, &info.lgr_id, &info.rmb_size,
				 &info.peer_rmb_size) != 6)
		abort();	/* the test forgot to say what to answer */
	if (*len > sizeof(info))
		*len = sizeof(info);
	memcpy(val, &info, *len);
	return 0;
}
