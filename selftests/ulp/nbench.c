// SPDX-License-Identifier: GPL-2.0
/* nbench: TCP/ntbsmc throughput, round trip and connection-rate benchmark. */

/*
 *   nbench server [--ulp] ADDR PORT
 *   nbench client [--ulp] [--busy-poll US] [--huge] ADDR PORT stream WRITE_SIZE SECONDS
 *   nbench client [--ulp] [--busy-poll US] ADDR PORT rr COUNT
 *   nbench client [--ulp] ADDR PORT crr SECONDS
 *
 * stream: one connection, the client writes WRITE_SIZE blocks for SECONDS; prints
 * MB/s as the server counted them and the writer's CPU time per GiB; --huge asks
 * for transparent huge pages (physically contiguous 2 MiB) for the buffer it writes
 * from and says what share of it got them ("huge N%"). rr: 1-byte ping-pong COUNT
 * times; prints median and p99 round trip in us. crr: connect, 1-byte
 * request/response, close, for SECONDS; prints connections per second. Every result
 * line also says the mode the (last) connection ran in ("ntb" or "tcp:<reason>").
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/ntbsmc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "names.h"

#ifndef TCP_ULP
#define TCP_ULP 31
#endif

static int use_ulp, use_huge, busy_poll;

#define HUGE_SZ	((size_t)2 << 20)

static void die(const char *what)
{
	fprintf(stderr, "nbench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int resolve(const char *addr, const char *port, struct sockaddr_storage *ss,
		   socklen_t *len)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;

	if (getaddrinfo(addr, port, &hints, &ai))
		return -1;
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

static int new_socket(int family)
{
	int fd = socket(family, SOCK_STREAM, 0), one = 1;

	if (fd < 0)
		die("socket");
	if (use_ulp && setsockopt(fd, SOL_TCP, TCP_ULP, "ntbsmc", 7))
		die("setsockopt TCP_ULP ntbsmc (is the module loaded?)");
	setsockopt(fd, SOL_TCP, TCP_NODELAY, &one, sizeof(one));
	if (busy_poll && setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &busy_poll,
				    sizeof(busy_poll)))
		die("setsockopt SO_BUSY_POLL");
	return fd;
}

static const char *mode_of(int fd)
{
	static char buf[64];
	struct ntbsmc_info info;
	socklen_t len = sizeof(info);
	char rb[32];

	if (getsockopt(fd, SOL_NTBSMC, NTBSMC_INFO, &info, &len))
		return "tcp";
	if (info.mode == NTBSMC_MODE_NTB) {
		/* With the peer's buffer: it bounds a stream under emulation. */
		snprintf(buf, sizeof(buf), "ntb:%uK", info.peer_rmb_size >> 10);
		return buf;
	}
	snprintf(buf, sizeof(buf), "tcp:%s", reason_name(info.reason, rb, sizeof(rb)));
	return buf;
}

static int full_read(int fd, void *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		n = read(fd, (char *)buf + got, len - got);
		if (n <= 0)
			return -1;
		got += n;
	}
	return 0;
}

/* Server: per connection, a one-byte command says what to do. */
static void serve(int fd)
{
	static char buf[1 << 20];
	unsigned long long total = 0;
	char cmd;
	ssize_t n;

	if (full_read(fd, &cmd, 1))
		return;
	switch (cmd) {
	case 's':	/* count until EOF, then report */
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			total += n;
		if (write(fd, &total, sizeof(total)) != sizeof(total))
			return;
		break;
	case 'r':	/* echo single bytes */
		while (read(fd, buf, 1) == 1)
			if (write(fd, buf, 1) != 1)
				return;
		break;
	}
}

static int run_server(const char *addr, const char *port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int lfd, fd, one = 1;

	if (resolve(addr, port, &ss, &len))
		die("resolve");
	lfd = new_socket(ss.ss_family);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&ss, len) || listen(lfd, 1024))
		die("bind/listen");
	signal(SIGCHLD, SIG_IGN);
	for (;;) {
		fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			continue;
		if (!fork()) {
			serve(fd);
			_exit(0);
		}
		close(fd);
	}
}

static int dial(struct sockaddr_storage *ss, socklen_t len)
{
	int fd = new_socket(ss->ss_family);

	if (connect(fd, (struct sockaddr *)ss, len))
		die("connect");
	return fd;
}

/*
 * The writer's buffer, written before the stream as an application's data is. A
 * buffer never written is the kernel's zero page throughout, which zero-copy pins
 * and maps page by page: 0.30 s/GiB of sender CPU against 0.04 from a written
 * buffer (1 MiB writes between VMs). With --huge it asks for transparent huge
 * pages; the result line says what share of it got them.
 */
static char *stream_buffer(size_t wsize)
{
	size_t len = wsize;
	void *buf;

	if (use_huge) {
		len = (wsize + HUGE_SZ - 1) & ~(HUGE_SZ - 1);
		if (posix_memalign(&buf, HUGE_SZ, len))
			return NULL;
		if (madvise(buf, len, MADV_HUGEPAGE))
			fprintf(stderr, "nbench: madvise(MADV_HUGEPAGE): %s\n", strerror(errno));
	} else {
		buf = malloc(len);
		if (!buf)
			return NULL;
	}
	memset(buf, 0x5a, len);
	return buf;
}

/*
 * The share of @len bytes at @buf on huge pages: the AnonHugePages of the mapping
 * that holds them (nothing else in it was touched). -1 if smaps says nothing.
 */
static int huge_percent(const char *buf, size_t len)
{
	unsigned long start, end, kb;
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[256];
	bool in = false;
	int pct = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2) {
			in = start <= (unsigned long)buf && (unsigned long)buf < end;
			continue;
		}
		if (in && sscanf(line, "AnonHugePages: %lu kB", &kb) == 1) {
			pct = kb << 10 >= len ? 100 : (int)((kb << 10) * 100 / len);
			break;
		}
	}
	fclose(f);
	return pct;
}

static double cpu_secs(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int i = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--ulp"))
			use_ulp = 1;
		else if (!strcmp(argv[i], "--busy-poll") && i + 1 < argc)
			busy_poll = atoi(argv[++i]);
		else
			break;
	}
	if (i < argc && !strcmp(argv[i], "server")) {
		/* options may also follow the role */
		for (i++; i < argc && argv[i][0] == '-'; i++)
			if (!strcmp(argv[i], "--ulp"))
				use_ulp = 1;
		if (argc - i != 2)
			goto usage;
		return run_server(argv[i], argv[i + 1]);
	}
	if (i >= argc || strcmp(argv[i], "client"))
		goto usage;
	for (i++; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--ulp"))
			use_ulp = 1;
		else if (!strcmp(argv[i], "--huge"))
			use_huge = 1;
		else if (!strcmp(argv[i], "--busy-poll") && i + 1 < argc)
			busy_poll = atoi(argv[++i]);
	}
	if (argc - i < 3 || resolve(argv[i], argv[i + 1], &ss, &len))
		goto usage;
	if (!strcmp(argv[i + 2], "stream") && argc - i == 5) {
		size_t wsize = strtoul(argv[i + 3], NULL, 0);
		double secs = atof(argv[i + 4]), t0, t, c0;
		unsigned long long total;
		char *buf = stream_buffer(wsize);
		int fd = dial(&ss, len);

		if (!buf || write(fd, "s", 1) != 1)
			die("stream start");
		c0 = cpu_secs();
		t0 = now();
		do {
			for (int k = 0; k < 16; k++)
				if (write(fd, buf, wsize) != (ssize_t)wsize)
					die("write");
		} while (now() - t0 < secs);
		shutdown(fd, SHUT_WR);
		if (full_read(fd, &total, sizeof(total)))
			die("stream result");
		t = now() - t0;
		/* the sender's own CPU time (user + system) per GiB it sent */
		printf("stream %zu %.1f MB/s sender_cpu %.3f s/GiB ", wsize,
		       total / t / 1e6, (cpu_secs() - c0) * (1 << 30) / (total ? total : 1));
		if (use_huge)	/* THP may not find 2 MiB pages: say how many it did */
			printf("huge %d%% ", huge_percent(buf, wsize));
		printf("mode %s\n", mode_of(fd));
		return 0;
	}
	if (!strcmp(argv[i + 2], "rr") && argc - i == 4) {
		int n = atoi(argv[i + 3]), fd = dial(&ss, len);
		double *s = calloc(n, sizeof(double)), t0;
		char c = 'x';

		if (!s || n <= 0 || write(fd, "r", 1) != 1)
			die("rr start");
		for (int k = 0; k < n; k++) {
			t0 = now();
			if (write(fd, &c, 1) != 1 || read(fd, &c, 1) != 1)
				die("rr");
			s[k] = (now() - t0) * 1e6;
		}
		qsort(s, n, sizeof(double), cmp_double);
		printf("rr median %.1f us p99 %.1f us mode %s\n", s[n / 2], s[n * 99 / 100],
		       mode_of(fd));
		return 0;
	}
	if (!strcmp(argv[i + 2], "crr") && argc - i == 4) {
		double secs = atof(argv[i + 3]), t0 = now();
		long conns = 0;
		char c = 'x', last[64] = "?";

		do {
			int fd = dial(&ss, len);

			if (write(fd, "r", 1) != 1 || write(fd, &c, 1) != 1 ||
			    read(fd, &c, 1) != 1)
				die("crr");
			snprintf(last, sizeof(last), "%s", mode_of(fd));
			close(fd);
			conns++;
		} while (now() - t0 < secs);
		printf("crr %.0f conn/s mode %s\n", conns / (now() - t0), last);
		return 0;
	}
usage:
	fprintf(stderr, "usage: nbench server [--ulp] ADDR PORT\n"
		"       nbench client [--ulp] [--busy-poll US] [--huge] ADDR PORT stream WRITE_SIZE SECONDS|rr COUNT|crr SECONDS\n");
	return 2;
}
