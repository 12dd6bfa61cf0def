/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the small ULP test programs (wakeup, lostbell, nbsend) share: dying with
 * the call that failed, a monotonic clock in milliseconds, an IPv4 address from
 * the command line, and a socket with the ntbsmc ULP whose every wait is
 * bounded (a lost wakeup fails the test, never hangs it).
 */
#ifndef NTBSMC_SELFTEST_TOOL_H
#define NTBSMC_SELFTEST_TOOL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* program_invocation_short_name */
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

#ifndef TCP_ULP
#define TCP_ULP 31
#endif

static inline void __attribute__((noreturn)) die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what,
		errno ? strerror(errno) : "unexpected");
	exit(1);
}

static inline double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static inline struct sockaddr_in addr_of(const char *ip, const char *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(atoi(port)) };

	if (inet_pton(AF_INET, ip, &a.sin_addr) != 1) {
		errno = EINVAL;
		die(ip);
	}
	return a;
}

/* An IPv4 socket with the ntbsmc ULP; every send and receive waits @timeout_s at most. */
static inline int ulp_socket(int timeout_s)
{
	struct timeval tv = { .tv_sec = timeout_s };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (fd < 0)
		die("socket");
	if (setsockopt(fd, SOL_TCP, TCP_ULP, "ntbsmc", sizeof("ntbsmc")))
		die("TCP_ULP ntbsmc");
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)))
		die("socket options");
	return fd;
}

#endif
