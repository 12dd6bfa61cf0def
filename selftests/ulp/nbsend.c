// SPDX-License-Identifier: GPL-2.0
/*
 * nbsend: non-blocking sends into a connection whose reader stopped
 * (selftests/dma/paths.sh, case nonblock).
 *
 *   nbsend server ADDR PORT HOLD_FILE     (listens; one connection)
 *   nbsend client ADDR PORT WRITE_SIZE MAX_BYTES [OUT_MS]
 *
 * The client sends one byte blocking (the handshake is over when it returns),
 * then writes of WRITE_SIZE bytes with MSG_DONTWAIT from page-aligned user
 * memory until one returns EAGAIN or MAX_BYTES were sent, and closes. With
 * OUT_MS, after an EAGAIN it waits that long at most for an edge-triggered
 * EPOLLOUT (epoll, as an event loop does: "out_ms", -1 if none came) and
 * sends once more (its bytes, "after"). The
 * server reads nothing until HOLD_FILE exists, then everything to EOF, each
 * byte checked where it lands. Each prints one JSON line: the client's says
 * how many bytes the calls took, whether the last one was EAGAIN, the longest
 * call (ms) and the connection's counters (mode, bytes by DMA and zero-copy).
 * Every socket times out after 120 s: nothing waits without a bound.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/ntbsmc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tool.h"

#include "names.h"

#define IO_TIMEOUT_S	120

/* The byte at stream offset @off. */
static uint8_t pattern(uint64_t off)
{
	return (uint8_t)(off * 131 + (off >> 9) + 7);
}

static void print_info(int fd)
{
	struct ntbsmc_info info = { 0 };
	socklen_t len = sizeof(info);
	char b1[32], b2[32];

	if (getsockopt(fd, SOL_NTBSMC, NTBSMC_INFO, &info, &len))
		die("NTBSMC_INFO");
	printf("\"mode\": \"%s\", \"reason\": \"%s\", \"ntb_tx_bytes\": %llu, "
	       "\"ntb_cpu_bytes\": %llu, \"ntb_dma_bytes\": %llu, \"ntb_zc_bytes\": %llu",
	       mode_name(info.mode, b1, sizeof(b1)), reason_name(info.reason, b2, sizeof(b2)),
	       (unsigned long long)info.tx_bytes, (unsigned long long)info.cpu_bytes,
	       (unsigned long long)info.dma_bytes, (unsigned long long)info.zc_bytes);
}

static int server(struct sockaddr_in *a, const char *hold)
{
	static uint8_t buf[65536];
	uint64_t got = 0, bad = UINT64_MAX;
	int lfd = ulp_socket(IO_TIMEOUT_S), fd, waited;
	struct stat st;
	ssize_t n, i;

	if (bind(lfd, (struct sockaddr *)a, sizeof(*a)) || listen(lfd, 1))
		die("listen");
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		die("accept");
	close(lfd);
	/* the stopped reader */
	for (waited = 0; stat(hold, &st); waited++) {
		if (waited > IO_TIMEOUT_S * 20) {
			errno = ETIMEDOUT;
			die(hold);
		}
		usleep(50000);
	}
	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) {
		for (i = 0; i < n; i++)
			if (buf[i] != pattern(got + i) && bad == UINT64_MAX)
				bad = got + i;
		got += n;
	}
	if (n < 0)
		die("recv");
	printf("{\"bytes\": %llu, \"intact\": %s, \"first_bad\": %lld, ",
	       (unsigned long long)got, bad == UINT64_MAX ? "true" : "false",
	       bad == UINT64_MAX ? -1LL : (long long)bad);
	print_info(fd);
	printf("}\n");
	close(fd);
	return bad != UINT64_MAX;
}

static int client(struct sockaddr_in *a, size_t wsize, uint64_t max, int out_ms)
{
	struct epoll_event ev = { .events = EPOLLOUT | EPOLLET };
	uint64_t sent = 1, calls = 0;
	double worst = 0, t0, dt, waited = -1;
	ssize_t n, after = -1;
	bool eagain = false;
	int fd = ulp_socket(IO_TIMEOUT_S), ep;
	uint8_t *buf;
	size_t i;

	buf = mmap(NULL, wsize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		die("mmap");
	if (connect(fd, (struct sockaddr *)a, sizeof(*a)))
		die("connect");
	buf[0] = pattern(0);
	if (send(fd, buf, 1, MSG_NOSIGNAL) != 1)	/* waits for the handshake */
		die("send first byte");
	/* writable now: the edge that adding it reports is taken here */
	ep = epoll_create1(0);
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) || epoll_wait(ep, &ev, 1, 0) < 0)
		die("epoll");
	while (sent < max) {
		for (i = 0; i < wsize; i++)
			buf[i] = pattern(sent + i);
		t0 = now_ms();
		n = send(fd, buf, wsize, MSG_DONTWAIT | MSG_NOSIGNAL);
		dt = now_ms() - t0;
		calls++;
		if (dt > worst)
			worst = dt;
		if (n < 0 && errno == EAGAIN) {
			eagain = true;
			break;
		}
		if (n <= 0)
			die("send MSG_DONTWAIT");
		sent += n;
	}
	if (eagain && out_ms > 0) {
		t0 = now_ms();
		n = epoll_wait(ep, &ev, 1, out_ms);
		if (n < 0)
			die("epoll_wait");
		if (n) {
			waited = now_ms() - t0;
			for (i = 0; i < wsize; i++)
				buf[i] = pattern(sent + i);
			after = send(fd, buf, wsize, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (after > 0)
				sent += after;
		}
	}
	printf("{\"sent\": %llu, \"calls\": %llu, \"eagain\": %s, \"max_call_ms\": %.1f, "
	       "\"out_ms\": %.1f, \"after\": %zd, ",
	       (unsigned long long)sent, (unsigned long long)calls, eagain ? "true" : "false",
	       worst, waited, after);
	print_info(fd);
	printf("}\n");
	fflush(stdout);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a;

	if (argc == 5 && !strcmp(argv[1], "server")) {
		a = addr_of(argv[2], argv[3]);
		return server(&a, argv[4]);
	}
	if ((argc == 6 || argc == 7) && !strcmp(argv[1], "client") && atol(argv[4]) > 0) {
		a = addr_of(argv[2], argv[3]);
		return client(&a, atol(argv[4]), strtoull(argv[5], NULL, 0),
			      argc == 7 ? atoi(argv[6]) : 0);
	}
	fprintf(stderr, "usage: nbsend server ADDR PORT HOLD_FILE\n"
			"       nbsend client ADDR PORT WRITE_SIZE MAX_BYTES [OUT_MS]\n");
	return 2;
}
