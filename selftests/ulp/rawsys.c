// SPDX-License-Identifier: GPL-2.0
/*
 * rawsys: a statically linked TCP client and server that never calls libc's
 * socket functions: every socket operation is a raw syscall(2), as Go's
 * runtime issues them (non-blocking sockets with SOCK_CLOEXEC, a non-blocking
 * connect, poll for readiness). LD_PRELOAD cannot reach it; ntbsmc_run --bpf
 * can (ulp/bpfsel.sh).
 *
 *   rawsys server ADDR PORT [--proto] [--bytes N]
 *   rawsys client ADDR PORT [--proto] [--bytes N]
 *
 * The client sends N bytes (default 1 MiB) of a pattern and ends its side; the
 * server checks each byte, sends every byte back XORed with 0x5a and ends
 * its side; the client checks those. --proto asks for IPPROTO_NTBSMC itself.
 * Each prints one JSON line: intact, bytes, SO_PROTOCOL and the connection's
 * NTBSMC_INFO (mode, reasons, bytes over NTB) taken before the close.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <linux/ntbsmc.h>

#include "names.h"

#define TIMEOUT_MS 120000

static long sys(long nr, long a, long b, long c, long d, long e)
{
	long r = syscall(nr, a, b, c, d, e, 0);

	return r < 0 ? -errno : r;
}

static void die(const char *what, long err)
{
	printf("{\"outcome\": \"error\", \"error\": \"%s: %s\"}\n", what, strerror((int)-err));
	exit(1);
}

static uint8_t pattern(uint64_t i)
{
	return (uint8_t)(i * 7 + (i >> 9) + (i >> 17));
}

/* Waits for EVENTS on a non-blocking fd, with ppoll(2) as a syscall. */
static void await(int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };
	struct timespec ts = { TIMEOUT_MS / 1000, 0 };
	long r = sys(SYS_ppoll, (long)&p, 1, (long)&ts, 0, 0);

	if (r == 0)
		die("ppoll", -ETIMEDOUT);
	if (r < 0 && r != -EINTR)
		die("ppoll", r);
}

static void send_all(int fd, const uint8_t *buf, size_t len)
{
	while (len) {
		long n = sys(SYS_sendto, fd, (long)buf, (long)len, MSG_NOSIGNAL, 0);

		if (n == -EAGAIN) {
			await(fd, POLLOUT);
			continue;
		}
		if (n < 0)
			die("sendto", n);
		buf += n;
		len -= n;
	}
}

/* Reads until EOF; each byte must be pattern(i) ^ XOR. False on a bad byte. */
static bool recv_check(int fd, uint8_t xor, uint64_t *got)
{
	static uint8_t buf[65536];
	bool ok = true;

	*got = 0;
	for (;;) {
		long n = sys(SYS_recvfrom, fd, (long)buf, sizeof(buf), 0, 0);

		if (n == -EAGAIN) {
			await(fd, POLLIN);
			continue;
		}
		if (n < 0)
			die("recvfrom", n);
		if (n == 0)
			return ok;
		for (long i = 0; i < n; i++)
			ok &= buf[i] == (pattern(*got + i) ^ xor);
		*got += n;
	}
}

static void print_result(int fd, bool ok, uint64_t bytes)
{
	struct ntbsmc_info info;
	socklen_t len = sizeof(info);
	int proto = -1;
	socklen_t plen = sizeof(proto);
	char b1[32], b2[32], b3[32];

	sys(SYS_getsockopt, fd, SOL_SOCKET, SO_PROTOCOL, (long)&proto, (long)&plen);
	printf("{\"outcome\": \"ok\", \"intact\": %s, \"bytes\": %llu, \"so_protocol\": %d, ",
	       ok ? "true" : "false", (unsigned long long)bytes, proto);
	if (sys(SYS_getsockopt, fd, SOL_NTBSMC, NTBSMC_INFO, (long)&info, (long)&len)) {
		printf("\"mode\": \"tcp\", \"reason\": \"no_ulp\"}\n");
		return;
	}
	printf("\"mode\": \"%s\", \"reason\": \"%s\", \"peer_reason\": \"%s\", "
	       "\"ntb_tx_bytes\": %llu, \"ntb_rx_bytes\": %llu}\n",
	       mode_name(info.mode, b1, sizeof(b1)), reason_name(info.reason, b2, sizeof(b2)),
	       reason_name(info.peer_reason, b3, sizeof(b3)),
	       (unsigned long long)info.tx_bytes, (unsigned long long)info.rx_bytes);
}

int main(int argc, char **argv)
{
	struct sockaddr_storage ss = {};
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	uint64_t bytes = 1 << 20, got = 0, i;
	int family, proto = 0, one = 1, fd, ls;
	socklen_t salen;
	uint8_t *buf;
	bool server, ok;
	long r;

	if (argc < 4 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
		fprintf(stderr, "usage: rawsys server|client ADDR PORT [--proto] [--bytes N]\n");
		return 2;
	}
	server = !strcmp(argv[1], "server");
	for (int a = 4; a < argc; a++) {
		if (!strcmp(argv[a], "--proto"))
			proto = IPPROTO_NTBSMC;
		else if (!strcmp(argv[a], "--bytes") && a + 1 < argc)
			bytes = strtoull(argv[++a], NULL, 0);
		else {
			fprintf(stderr, "rawsys: unknown argument %s\n", argv[a]);
			return 2;
		}
	}
	if (inet_pton(AF_INET, argv[2], &sin->sin_addr) == 1) {
		family = AF_INET;
		sin->sin_family = AF_INET;
		sin->sin_port = htons(atoi(argv[3]));
		salen = sizeof(*sin);
	} else if (inet_pton(AF_INET6, argv[2], &sin6->sin6_addr) == 1) {
		family = AF_INET6;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(atoi(argv[3]));
		salen = sizeof(*sin6);
	} else {
		fprintf(stderr, "rawsys: bad address %s\n", argv[2]);
		return 2;
	}

	if (server) {
		ls = sys(SYS_socket, family, SOCK_STREAM | SOCK_CLOEXEC, proto, 0, 0);
		if (ls < 0)
			die("socket", ls);
		sys(SYS_setsockopt, ls, SOL_SOCKET, SO_REUSEADDR, (long)&one, sizeof(one));
		r = sys(SYS_bind, ls, (long)&ss, salen, 0, 0);
		if (r)
			die("bind", r);
		r = sys(SYS_listen, ls, 8, 0, 0, 0);
		if (r)
			die("listen", r);
		fd = sys(SYS_accept4, ls, 0, 0, SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			die("accept4", fd);
		sys(SYS_close, ls, 0, 0, 0, 0);
		ok = recv_check(fd, 0, &got);
		buf = malloc(65536);
		for (i = 0; buf && i < got; i += 65536) {
			size_t n = got - i < 65536 ? got - i : 65536;

			for (size_t j = 0; j < n; j++)
				buf[j] = pattern(i + j) ^ 0x5a;
			send_all(fd, buf, n);
		}
		sys(SYS_shutdown, fd, SHUT_WR, 0, 0, 0);
		/* The client closes after reading all of it: wait for its EOF. */
		recv_check(fd, 0, &i);
		print_result(fd, ok && buf && i == 0, got);
	} else {
		fd = sys(SYS_socket, family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, proto, 0, 0);
		if (fd < 0)
			die("socket", fd);
		r = sys(SYS_connect, fd, (long)&ss, salen, 0, 0);
		if (r == -EINPROGRESS) {
			int soerr = 0;
			socklen_t l = sizeof(soerr);

			await(fd, POLLOUT);
			sys(SYS_getsockopt, fd, SOL_SOCKET, SO_ERROR, (long)&soerr, (long)&l);
			r = -soerr;
		}
		if (r)
			die("connect", r);
		buf = malloc(65536);
		if (!buf)
			die("malloc", -ENOMEM);
		for (i = 0; i < bytes; i += 65536) {
			size_t n = bytes - i < 65536 ? bytes - i : 65536;

			for (size_t j = 0; j < n; j++)
				buf[j] = pattern(i + j);
			send_all(fd, buf, n);
		}
		sys(SYS_shutdown, fd, SHUT_WR, 0, 0, 0);
		ok = recv_check(fd, 0x5a, &got);
		print_result(fd, ok && got == bytes, bytes);
	}
	sys(SYS_close, fd, 0, 0, 0, 0);
	return 0;
}
