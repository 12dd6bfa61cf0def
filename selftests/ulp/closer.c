// SPDX-License-Identifier: GPL-2.0
/* closer: write, then close at once; the peer must read every byte, then EOF. */

/*
 *   closer server ADDR PORT --rounds N --bytes B [--slow] [--seed S] [--hold FILE]
 *   closer client ADDR PORT --rounds N --bytes B [--how HOW] [--nonblock] [--seed S]
 *                            [--close-after FILE]
 *   closer flood ADDR PORT --rounds N [--secs S] [--life-ms MS]
 *   closer churn ADDR PORT [--secs S]
 *
 * The commonest socket pattern there is (an HTTP/1.0 server, `cat file | ncat`,
 * any program that exits after its last write): the client connects with the
 * ntbsmc ULP, writes B bytes in one write() (with --nonblock: as fast as
 * poll() lets it) and at once ends the connection, HOW:
 *
 *   close      close()
 *   shutdown   shutdown(SHUT_WR), then read to EOF, then close()
 *   exit       a child process writes and exits without closing
 *   linger     SO_LINGER of 10 s, then close(): returns once the data is out
 *   unspec     writes another pattern's bytes (a random number of them with
 *              --seed, else B), disconnects with connect(AF_UNSPEC) at once,
 *              connects the same socket to the server again and writes the
 *              round's B bytes there, then close(). The server (--how unspec
 *              too) reads the old connection to its EOF or reset: a prefix of
 *              the old bytes, never one of the new connection's; then the new
 *              connection as any round. "ntb" counts the old connections over
 *              NTB (the new one is TCP: the handshake runs once per socket).
 *   handshake  connects non-blocking and closes during ntbsmc's handshake,
 *              writing nothing (--bytes 0): even rounds as soon as TCP is
 *              established, odd ones 50 ms later (with a kernel that reads the
 *              server's answer late, while it waits unread). The server must
 *              read EOF, not a reset. The client cannot tell whether the round
 *              ran over NTB; the server counts it.
 *
 * The server accepts N connections one after the other and reads each to EOF
 * (with --slow in 4 KiB reads, 1 ms apart), checking every byte: round R's byte K
 * is a function of R and K, so a lost, repeated or shifted block is found. A
 * round is lost when the bytes before EOF are not exactly the B sent, or the
 * read failed. With --hold the server keeps each connection open after its EOF
 * until FILE exists (at most 120 s): a peer whose application has not closed
 * yet. With --close-after the client, once its write returned, creates
 * FILE.wrote and ends the connection only once FILE exists (at most 120 s;
 * both are removed then): a test does something between the last write and
 * the close. Each side prints one JSON line:
 *
 *   {"rounds": 50, "lost": 0, "ntb": 50, "ntb_bytes": 6553600, "first": "...",
 *    "not_ntb": ""}
 *
 * "not_ntb" is the first round that did not run over NTB: its mode, reason and
 * the peer's ("tcp/declined, peer auth"), so that a failure says which fallback.
 * "ntb" counts the rounds that ran over NTB and "ntb_bytes" the bytes that
 * crossed it to the reading end (its rx_bytes; the writing end counts none): a
 * connection that fell back to TCP also delivers. "moved" counts the rounds
 * that ran over NTB and moved to TCP when the link went (their NTB bytes
 * count in "ntb_bytes"; they are neither "ntb" nor "not_ntb"). "bytes" is what the rounds
 * wrote. Exit status 1 on any lost round or error. Every socket times out after
 * 120 s.
 *
 * --seed S (the same on both ends) makes a stress of it: each round draws its
 * own size (a third each below 64 KiB, up to 256 KiB and up to 4 MiB: the CPU,
 * staged DMA and zero-copy paths at their default thresholds), HOW (close,
 * shutdown, exit, linger), blocking or not, a slow reader or not, and which end
 * writes and ends the connection: the server in about half of the rounds, the
 * client reading. --bytes, --how, --nonblock and --slow are then ignored.
 *
 * flood keeps N connections with the ULP open (non-blocking), each closed 1.5 s
 * after its connect and replaced at once, for S seconds (10) or until SIGTERM:
 * with a kernel that stalls their handshakes (ntbsmc's fault point client_silent),
 * the load of a host that keeps opening connections that offer ntbsmc and never
 * speak. It prints how many it opened, and how many of those it closed had TCP
 * established. With --life-ms each connection lives MS instead, and sends one
 * byte as soon as it is writable.
 *
 * churn makes listeners with the ULP over and over for S seconds (socket,
 * bind, listen; what comes in the next 3 ms is accepted and closed; close),
 * against a flood with --life-ms 50: listeners close while children are being
 * cloned from them, mid-handshake and in their accept queue, and children are
 * cloned from a listener just made (issue 18's findings 2, 3 and 11). It
 * prints how many listeners it made and connections it accepted.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/ntbsmc.h>
#include "names.h"
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef TCP_ULP
#define TCP_ULP 31
#endif

#define IO_TIMEOUT_S	120
#define CONNECT_RETRY_S	30

static struct {
	const char *addr, *port, *how;
	unsigned long rounds;
	size_t bytes;
	bool slow, nonblock;
	unsigned long secs;
	unsigned long life_ms;		/* flood: 0 is 1.5 s, and silent */
	unsigned long long seed;	/* 0: every round as the options say */
	const char *hold;
	const char *close_after;
} opt = { .rounds = 1, .bytes = 131072, .how = "close", .secs = 10 };

/* What one round does; the options' round, or a random one (--seed). */
struct plan {
	size_t bytes;
	size_t first;		/* unspec: the bytes for the old connection */
	const char *how;
	bool nonblock, slow;
	bool reverse;		/* the server writes and ends, the client reads */
};

static struct {
	unsigned long lost, ntb, moved;
	uint64_t ntb_bytes, bytes;
	char first[160];
	char not_ntb[160];	/* the first round that was not NTB: its mode and reasons */
} res;

static void lost(unsigned long round, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void lost(unsigned long round, const char *fmt, ...)
{
	va_list ap;
	int n;

	res.lost++;
	if (res.first[0])
		return;
	n = snprintf(res.first, sizeof(res.first), "round %lu: ", round);
	va_start(ap, fmt);
	vsnprintf(res.first + n, sizeof(res.first) - n, fmt, ap);
	va_end(ap);
}

static void __attribute__((noreturn)) die(const char *what)
{
	fprintf(stderr, "closer: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* splitmix64's finaliser: a well-mixed 64-bit function of Z */
static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Byte K of round R: any block lost, repeated or moved shows. */
static unsigned char pattern(unsigned long round, size_t k)
{
	return mix((k / 8 + 1) * 0x9e3779b97f4a7c15ULL + round) >> (8 * (k % 8));
}

static struct plan plan_of(unsigned long round)
{
	static const char *const hows[] = { "close", "shutdown", "exit", "linger" };
	static const size_t lo[] = { 1, 65536, 262144 }, hi[] = { 65535, 262143, 4194304 };
	struct plan p = { opt.bytes, opt.bytes, opt.how, opt.nonblock, opt.slow, false };
	uint64_t r;
	int path;

	if (!opt.seed)
		return p;
	r = mix(opt.seed + round * 0x9e3779b97f4a7c15ULL);	/* unspec: any path too */
	p.first = lo[r % 3] + r / 3 % (hi[r % 3] - lo[r % 3] + 1);
	r = mix(opt.seed * 0x9e3779b97f4a7c15ULL + round);
	path = r % 3;
	r /= 3;
	p.bytes = lo[path] + r % (hi[path] - lo[path] + 1);
	r = mix(r);
	p.how = hows[r % 4];
	p.nonblock = r & 4;
	p.slow = (r & 0x18) == 0x18 && p.bytes <= 1048576;	/* a quarter, not the longest */
	p.reverse = r & 0x20;
	if (!strcmp(opt.how, "unspec")) {
		p.how = opt.how;
		p.reverse = false;
	}
	return p;
}

static struct addrinfo *resolve(void)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST };
	struct addrinfo *ai;
	int rc = getaddrinfo(opt.addr, opt.port, &hints, &ai);

	if (rc) {
		fprintf(stderr, "closer: %s: %s\n", opt.addr, gai_strerror(rc));
		exit(2);
	}
	return ai;
}

static void timeouts(int fd)
{
	struct timeval tv = { .tv_sec = IO_TIMEOUT_S };

	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)))
		die("SO_RCVTIMEO");
}

static int ulp_socket(int family)
{
	int fd = socket(family, SOCK_STREAM, 0);

	if (fd < 0)
		die("socket");
	if (setsockopt(fd, SOL_TCP, TCP_ULP, "ntbsmc", sizeof("ntbsmc")))
		die("TCP_ULP ntbsmc");
	timeouts(fd);
	return fd;
}

/* Counts the round as NTB if it is, and a reader's bytes that came over NTB. */
static void count_ntb(int fd, bool rx)
{
	struct ntbsmc_info info;
	socklen_t len = sizeof(info);

	/* an accepted socket's handshake may still run (its first read waits) */
	for (int ms = 0;; ms++) {
		len = sizeof(info);
		if (getsockopt(fd, SOL_NTBSMC, NTBSMC_INFO, &info, &len))
			die("NTBSMC_INFO");
		if (info.mode != NTBSMC_MODE_HANDSHAKE || ms == IO_TIMEOUT_S * 1000)
			break;
		usleep(1000);
	}
	if (info.mode == NTBSMC_MODE_TCP && (info.flags & NTBSMC_INFO_F_FAILED_OVER)) {
		/* ran over NTB until the link went, then over its TCP */
		res.moved++;
		if (rx)
			res.ntb_bytes += info.rx_bytes;
		return;
	}
	if (info.mode != NTBSMC_MODE_NTB) {
		char m[32], r[32], pr[32];

		if (!res.not_ntb[0])
			snprintf(res.not_ntb, sizeof(res.not_ntb), "%s/%s, peer %s",
				 mode_name(info.mode, m, sizeof(m)),
				 reason_name(info.reason, r, sizeof(r)),
				 reason_name(info.peer_reason, pr, sizeof(pr)));
		return;
	}
	res.ntb++;
	if (rx)
		res.ntb_bytes += info.rx_bytes;
}

/* Reads the round's bytes to EOF, checking each, then closes. */
static void read_round(int fd, unsigned long round, const struct plan *p,
		       unsigned char *buf)
{
	size_t got = 0, want = p->bytes, n, k;
	ssize_t r;

	for (;;) {
		n = p->slow ? 4096 : want + 1;
		r = recv(fd, buf, n, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			lost(round, "recv after %zu of %zu bytes: %s", got, want,
			     strerrorname_np(errno) ?: "?");
			break;
		}
		if (!r) {
			if (got != want)
				lost(round, "EOF after %zu of %zu bytes", got, want);
			break;
		}
		for (k = 0; k < (size_t)r; k++) {
			if (got + k >= want || buf[k] != pattern(round, got + k)) {
				lost(round, "byte %zu wrong", got + k);
				goto out;
			}
		}
		got += r;
		if (p->slow)
			usleep(1000);
	}
out:
	count_ntb(fd, true);
	for (int i = 0; opt.hold && i < IO_TIMEOUT_S * 100 && access(opt.hold, F_OK); i++)
		usleep(10000);
	close(fd);
}

static void write_round(int fd, unsigned long round, const struct plan *p,
			unsigned char *buf);

/* The old connection's bytes, which no byte of the new one may follow. */
#define UNSPEC_KEY 0x756e73706563ULL

/*
 * An unspec round's old connection: read to EOF or reset (the peer disconnected
 * at once, so a reset may discard some), a prefix of its own bytes only.
 */
static void read_old(int fd, unsigned long round, const struct plan *p,
		     unsigned char *buf)
{
	size_t got = 0, k;
	ssize_t r;

	count_ntb(fd, false);
	for (;;) {
		r = recv(fd, buf, p->first + 1, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno != ECONNRESET)
			lost(round, "old connection: recv after %zu bytes: %s", got,
			     strerrorname_np(errno) ?: "?");
		if (r <= 0)
			break;
		for (k = 0; k < (size_t)r; k++) {
			if (got + k >= p->first ||
			    buf[k] != pattern(round + UNSPEC_KEY, got + k)) {
				lost(round, "old connection: byte %zu not its own", got + k);
				goto out;
			}
		}
		got += r;
	}
out:
	close(fd);
}

static void server_round(int lfd, unsigned long round, unsigned char *buf)
{
	struct plan p = plan_of(round);
	int fd = accept(lfd, NULL, NULL);

	if (fd < 0)
		die("accept");
	timeouts(fd);
	if (!strcmp(p.how, "unspec")) {
		read_old(fd, round, &p, buf);
		fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			die("accept");
		timeouts(fd);
	}
	if (p.reverse) {
		count_ntb(fd, false);
		write_round(fd, round, &p, buf);
	} else
		read_round(fd, round, &p, buf);
}

/* A buffer for any round's bytes, and one more. */
static size_t buf_size(void)
{
	return (opt.seed ? 4194304 : opt.bytes) + 1;
}

static void run_server(void)
{
	struct addrinfo *ai = resolve();
	unsigned char *buf = malloc(buf_size());
	unsigned long i;
	int one = 1, lfd;

	if (!buf)
		die("malloc");
	lfd = ulp_socket(ai->ai_family);
	if (setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)))
		die("SO_REUSEADDR");
	if (bind(lfd, ai->ai_addr, ai->ai_addrlen) || listen(lfd, 1024))
		die("bind/listen");
	for (i = 0; i < opt.rounds; i++)
		server_round(lfd, i, buf);
	close(lfd);
	free(buf);
	freeaddrinfo(ai);
}

static int client_connect(struct addrinfo *ai)
{
	time_t until = time(NULL) + CONNECT_RETRY_S;
	int fd;

	for (;;) {
		fd = ulp_socket(ai->ai_family);
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
			return fd;
		if (errno != ECONNREFUSED || time(NULL) > until)
			die("connect");
		close(fd);
		usleep(100000);
	}
}

/* Writes all of BUF: in one write(), or non-blocking as poll() allows. */
static void write_all(int fd, const unsigned char *buf, size_t len, bool nonblock)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	ssize_t n;

	if (nonblock && fcntl(fd, F_SETFL, O_NONBLOCK))
		die("O_NONBLOCK");
	while (len) {
		n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EAGAIN && nonblock) {
			if (poll(&p, 1, IO_TIMEOUT_S * 1000) != 1)
				die("poll");
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("send");
		buf += n;
		len -= n;
	}
}

/* A socket with the ULP, its connect started non-blocking. */
static int connect_nonblock(struct addrinfo *ai)
{
	int fd = ulp_socket(ai->ai_family);

	if (fcntl(fd, F_SETFL, O_NONBLOCK))
		die("O_NONBLOCK");
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS)
		die("connect");
	return fd;
}

/* Connects non-blocking and closes during the handshake, nothing written. */
static void handshake_round(struct addrinfo *ai, unsigned long round)
{
	int fd = connect_nonblock(ai);
	time_t until = time(NULL) + CONNECT_RETRY_S;
	struct tcp_info ti;
	socklen_t len;

	for (;;) {
		len = sizeof(ti);
		if (getsockopt(fd, SOL_TCP, TCP_INFO, &ti, &len))
			die("TCP_INFO");
		if (ti.tcpi_state == 1 /* TCP_ESTABLISHED */)
			break;
		if (ti.tcpi_state != 2 /* TCP_SYN_SENT */ || time(NULL) > until) {
			lost(round, "TCP state %u, not established", ti.tcpi_state);
			break;
		}
		usleep(1000);
	}
	if (round % 2)
		usleep(50000);
	close(fd);
}

/* --close-after: say the write returned, wait for the go, clear both */
static void wait_close_after(void)
{
	char wrote[PATH_MAX];
	int i, fd;

	snprintf(wrote, sizeof(wrote), "%s.wrote", opt.close_after);
	fd = open(wrote, O_WRONLY | O_CREAT, 0644);
	if (fd < 0)
		die("open FILE.wrote");
	close(fd);
	for (i = 0; i < IO_TIMEOUT_S * 100 && access(opt.close_after, F_OK); i++)
		usleep(10000);
	if (access(opt.close_after, F_OK))
		die("--close-after: FILE never appeared");
	unlink(opt.close_after);
	unlink(wrote);
}

/* Writes the round's bytes and ends the connection as the plan says. */
static void write_round(int fd, unsigned long round, const struct plan *p,
			unsigned char *buf)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 10 };
	int status;
	char c;
	size_t k;
	pid_t pid;

	for (k = 0; k < p->bytes; k++)
		buf[k] = pattern(round, k);
	res.bytes += p->bytes;
	if (!strcmp(p->how, "exit")) {
		pid = fork();
		if (pid < 0)
			die("fork");
		if (!pid) {
			write_all(fd, buf, p->bytes, p->nonblock);
			_exit(0);	/* the kernel closes the socket */
		}
		close(fd);
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			lost(round, "the writing child failed");
		return;
	}
	write_all(fd, buf, p->bytes, p->nonblock);
	if (opt.close_after)
		wait_close_after();
	if (!strcmp(p->how, "shutdown")) {
		if (shutdown(fd, SHUT_WR))
			die("shutdown");
		if (fcntl(fd, F_SETFL, 0))
			die("F_SETFL");
		if (recv(fd, &c, 1, 0) != 0)
			lost(round, "no EOF from the reader after shutdown");
	} else if (!strcmp(p->how, "linger")) {
		if (setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)))
			die("SO_LINGER");
	}
	close(fd);
}

/*
 * An unspec round's client: the old connection's bytes, in one write() (on any
 * copy path, maybe still in flight), then at once connect(AF_UNSPEC) and a new
 * connection on the same socket, which closes as a "close" round.
 */
static void unspec_round(struct addrinfo *ai, unsigned long round, struct plan *p,
			 unsigned char *buf)
{
	struct sockaddr sa = { .sa_family = AF_UNSPEC };
	int fd = client_connect(ai);
	size_t k;

	timeouts(fd);
	count_ntb(fd, false);
	for (k = 0; k < p->first; k++)
		buf[k] = pattern(round + UNSPEC_KEY, k);
	write_all(fd, buf, p->first, false);
	if (connect(fd, &sa, sizeof(sa)))
		die("connect(AF_UNSPEC)");
	if (connect(fd, ai->ai_addr, ai->ai_addrlen))
		die("connect again");
	p->how = "close";
	write_round(fd, round, p, buf);
}

static void client_round(struct addrinfo *ai, unsigned long round, unsigned char *buf)
{
	struct plan p = plan_of(round);
	int fd;

	if (!strcmp(p.how, "handshake")) {
		handshake_round(ai, round);
		return;
	}
	if (!strcmp(p.how, "unspec")) {
		unspec_round(ai, round, &p, buf);
		return;
	}
	fd = client_connect(ai);
	if (p.reverse) {
		read_round(fd, round, &p, buf);
		return;
	}
	count_ntb(fd, false);
	write_round(fd, round, &p, buf);
}

static void run_client(void)
{
	struct addrinfo *ai = resolve();
	unsigned char *buf = malloc(buf_size());
	unsigned long i;

	if (!buf)
		die("malloc");
	for (i = 0; i < opt.rounds; i++)
		client_round(ai, i, buf);
	free(buf);
	freeaddrinfo(ai);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static volatile sig_atomic_t flood_stop;

static void on_term(int sig __attribute__((unused)))
{
	flood_stop = 1;
}

/*
 * N connections, each closed 1.5 s after its connect and replaced at once: a
 * rolling flood, N / 1.5 new connections a second, so that the server's
 * handshake slots are never all free at once (waves that closed together left
 * gaps that a connection from elsewhere could meet every time).
 */
static void run_flood(void)
{
	struct addrinfo *ai = resolve();
	double *born = calloc(opt.rounds, sizeof(double));
	int *fds = calloc(opt.rounds, sizeof(int));
	bool *sent = calloc(opt.rounds, sizeof(bool));
	double life = opt.life_ms ? opt.life_ms / 1000.0 : 1.5;
	unsigned long i, opened = 0, up = 0;
	double end = now_s() + opt.secs;
	struct tcp_info ti;
	socklen_t len;

	if (!fds || !born || !sent)
		die("calloc");
	signal(SIGTERM, on_term);
	/* staggered over the first lifetime */
	for (i = 0; i < opt.rounds; i++) {
		fds[i] = connect_nonblock(ai);
		born[i] = now_s() - life * i / opt.rounds;
		opened++;
	}
	while (now_s() < end && !flood_stop) {
		for (i = 0; i < opt.rounds; i++) {
			struct pollfd p = { .fd = fds[i], .events = POLLOUT };

			if (opt.life_ms && !sent[i] && poll(&p, 1, 0) > 0 &&
			    !(p.revents & (POLLERR | POLLHUP))) {
				(void)!send(fds[i], "x", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
				sent[i] = true;
			}
			if (now_s() - born[i] < life)
				continue;
			len = sizeof(ti);
			if (!getsockopt(fds[i], SOL_TCP, TCP_INFO, &ti, &len) &&
			    ti.tcpi_state == 1 /* TCP_ESTABLISHED */)
				up++;
			close(fds[i]);
			fds[i] = connect_nonblock(ai);
			born[i] = now_s();
			sent[i] = false;
			opened++;
		}
		usleep(opt.life_ms ? 1000 : 5000);
	}
	for (i = 0; i < opt.rounds; i++)
		close(fds[i]);
	printf("{\"flood\": %lu, \"opened\": %lu, \"established\": %lu}\n", opt.rounds,
	       opened, up);
	free(sent);
	free(fds);
	free(born);
	freeaddrinfo(ai);
	exit(0);
}

/* Listeners with the ULP, made and closed over and over. */
static void run_churn(void)
{
	struct addrinfo *ai = resolve();
	unsigned long made = 0, accepted = 0;
	double end = now_s() + opt.secs, until;
	int one = 1, l, c;

	while (now_s() < end) {
		l = ulp_socket(ai->ai_family);
		if (setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)))
			die("SO_REUSEADDR");
		if (bind(l, ai->ai_addr, ai->ai_addrlen))
			die("bind");
		if (listen(l, 64) || fcntl(l, F_SETFL, O_NONBLOCK))
			die("listen");
		made++;
		for (until = now_s() + 0.003; now_s() < until;) {
			c = accept(l, NULL, NULL);
			if (c >= 0) {
				accepted++;
				close(c);
			}
		}
		close(l);
	}
	printf("{\"listeners\": %lu, \"accepted\": %lu}\n", made, accepted);
	freeaddrinfo(ai);
	exit(0);
}

static void usage(void)
{
	fprintf(stderr, "usage: closer server|client|flood|churn ADDR PORT [--rounds N] [--bytes B] "
			"[--slow] [--how close|shutdown|exit|linger|unspec|handshake] [--nonblock] "
			"[--secs S] [--life-ms MS] "
			"[--seed S] [--hold FILE] [--close-after FILE]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	bool server;
	int i;

	if (argc < 4)
		usage();
	server = !strcmp(argv[1], "server");
	if (!server && strcmp(argv[1], "client") && strcmp(argv[1], "flood") &&
	    strcmp(argv[1], "churn"))
		usage();
	opt.addr = argv[2];
	opt.port = argv[3];
	for (i = 4; i < argc; i++) {
		if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			opt.rounds = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--bytes") && i + 1 < argc)
			opt.bytes = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--how") && i + 1 < argc)
			opt.how = argv[++i];
		else if (!strcmp(argv[i], "--slow"))
			opt.slow = true;
		else if (!strcmp(argv[i], "--nonblock"))
			opt.nonblock = true;
		else if (!strcmp(argv[i], "--secs") && i + 1 < argc)
			opt.secs = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--life-ms") && i + 1 < argc)
			opt.life_ms = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			opt.seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--hold") && i + 1 < argc && server)
			opt.hold = argv[++i];
		else if (!strcmp(argv[i], "--close-after") && i + 1 < argc && !server)
			opt.close_after = argv[++i];
		else
			usage();
	}
	if (!opt.rounds || (!opt.bytes && !server && strcmp(opt.how, "handshake")) ||
	    (strcmp(opt.how, "close") && strcmp(opt.how, "shutdown") &&
	     strcmp(opt.how, "exit") && strcmp(opt.how, "linger") &&
	     strcmp(opt.how, "unspec") && strcmp(opt.how, "handshake")))
		usage();
	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(argv[1], "flood"))
		run_flood();
	if (!strcmp(argv[1], "churn"))
		run_churn();
	if (server)
		run_server();
	else
		run_client();
	printf("{\"rounds\": %lu, \"lost\": %lu, \"ntb\": %lu, \"moved\": %lu, \"ntb_bytes\": %"
	       PRIu64 ", \"bytes\": %" PRIu64 ", \"first\": \"%s\", \"not_ntb\": \"%s\"}\n",
	       opt.rounds, res.lost, res.ntb, res.moved, res.ntb_bytes, res.bytes, res.first,
	       res.not_ntb);
	return res.lost ? 1 : 0;
}
