// SPDX-License-Identifier: GPL-2.0
/* tcpdead: an NTB connection whose TCP connection dies under it. */

/*
 *   tcpdead client ADDR PORT
 *   tcpdead server ADDR PORT
 *
 * Both ends connect with the ntbsmc ULP and wait until the connection runs over
 * NTB; then each blocks in recv() (120 s at most), the peer sending nothing.
 * The client keeps TCP alive with keepalive probes after 1 s of silence, one a
 * second, two unanswered ones ending it: when the path between the hosts goes
 * away (the test takes an interface down; the NTB link stays up), TCP fails
 * with ETIMEDOUT, and that must end the NTB connection too, as it would end
 * TCP's: the client's recv() returns TCP's error, and the server, which TCP
 * cannot tell any more, hears of it over NTB and gets an error or EOF.
 *
 * Prints "ntb" once the connection runs over NTB (the test then cuts the path),
 * and at the end one JSON line: how recv() ended and after how many ms.
 *
 *   {"recv": "ETIMEDOUT", "ms": 3012, "mode": "ntb"}
 *
 * "recv" is an errno name, "eof" or "data". Exit status 0 when recv() ended,
 * 1 when it timed out (EAGAIN) or on a setup error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/ntbsmc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef TCP_ULP
#define TCP_ULP 31
#endif

#define WAIT_S	120

static void __attribute__((noreturn)) die(const char *what)
{
	fprintf(stderr, "tcpdead: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void set_int(int fd, int level, int name, int v, const char *what)
{
	if (setsockopt(fd, level, name, &v, sizeof(v)))
		die(what);
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits out the handshake: the connection's mode once it is decided. */
static unsigned int mode_of(int fd)
{
	struct ntbsmc_info info;
	socklen_t len;
	long end = now_ms() + WAIT_S * 1000;

	for (;;) {
		len = sizeof(info);
		if (getsockopt(fd, SOL_NTBSMC, NTBSMC_INFO, &info, &len))
			die("NTBSMC_INFO");
		if (info.mode != NTBSMC_MODE_HANDSHAKE || now_ms() > end)
			return info.mode;
		usleep(1000);
	}
}

int main(int argc, char **argv)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST };
	struct timeval tv = { .tv_sec = WAIT_S };
	struct addrinfo *ai;
	bool server;
	int fd, lfd, rc;
	long t0;
	ssize_t r;
	char c;

	if (argc != 4 || (strcmp(argv[1], "client") && strcmp(argv[1], "server"))) {
		fprintf(stderr, "usage: tcpdead client|server ADDR PORT\n");
		return 2;
	}
	server = !strcmp(argv[1], "server");
	rc = getaddrinfo(argv[2], argv[3], &hints, &ai);
	if (rc) {
		fprintf(stderr, "tcpdead: %s: %s\n", argv[2], gai_strerror(rc));
		return 2;
	}
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd < 0)
		die("socket");
	set_int(fd, SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR");
	if (setsockopt(fd, SOL_TCP, TCP_ULP, "ntbsmc", sizeof("ntbsmc")))
		die("TCP_ULP ntbsmc");
	if (server) {
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 1))
			die("bind/listen");
		lfd = fd;
		fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			die("accept");
		close(lfd);
	} else {
		if (connect(fd, ai->ai_addr, ai->ai_addrlen))
			die("connect");
		set_int(fd, SOL_SOCKET, SO_KEEPALIVE, 1, "SO_KEEPALIVE");
		set_int(fd, SOL_TCP, TCP_KEEPIDLE, 1, "TCP_KEEPIDLE");
		set_int(fd, SOL_TCP, TCP_KEEPINTVL, 1, "TCP_KEEPINTVL");
		set_int(fd, SOL_TCP, TCP_KEEPCNT, 2, "TCP_KEEPCNT");
	}
	freeaddrinfo(ai);
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)))
		die("SO_RCVTIMEO");
	if (mode_of(fd) != NTBSMC_MODE_NTB) {
		printf("{\"recv\": \"none\", \"ms\": 0, \"mode\": \"not ntb\"}\n");
		return 1;
	}
	printf("ntb\n");
	fflush(stdout);
	t0 = now_ms();
	do {
		r = recv(fd, &c, 1, 0);
	} while (r < 0 && errno == EINTR);
	printf("{\"recv\": \"%s\", \"ms\": %ld, \"mode\": \"ntb\"}\n",
	       r > 0 ? "data" : !r ? "eof" : strerrorname_np(errno) ?: "?", now_ms() - t0);
	close(fd);
	return r < 0 && errno == EAGAIN;
}
