// SPDX-License-Identifier: GPL-2.0
/* lstop: ntbsmc listeners stopped while handshakes run, and reused after. */

/*
 *   lstop storm ADDR PORT SECS THREADS   connect with ntbsmc to ADDR PORT in a loop
 *   lstop echo ADDR PORT                 an ntbsmc echo server, until killed
 *   lstop server ADDR PORT HOW ROUNDS ECHO_ADDR ECHO_PORT
 *   lstop burst ADDR PORT N             N connects at once, final ACKs held back
 *   lstop drain ADDR PORT CLOSE_MS       a listener closed with a handshake stalled
 *
 * The server, ROUNDS times: an ntbsmc listener on ADDR PORT with two threads
 * blocked in accept() (they close what they get), then, after a random 50-400 ms
 * under the storm, stops it with HOW: rd (shutdown(SHUT_RD)), rdwr
 * (shutdown(SHUT_RDWR)) or unspec (connect(AF_UNSPEC)). TCP destroys the accept
 * queue's children there, some in their ntbsmc handshake. The accept()ers must
 * return (within 10 s): both after a shutdown(), which wakes every waiter;
 * one after connect(AF_UNSPEC), whose error report wakes one exclusive waiter
 * (TCP's own behaviour; the other is then interrupted by a signal). Then the same socket, no longer listening, connects to
 * the echo server (an ntbsmc listener) and must be plain TCP that offers
 * nothing: its bytes come back as sent (a SYN that offered ntbsmc with no
 * handshake behind it has the peer read them as a handshake, and reset).
 *
 * One JSON line per round; exit status 1 if any round failed.
 *
 * burst opens N non-blocking ntbsmc connections at once, each with
 * TCP_DEFER_ACCEPT, which makes a connecting socket hold back the last ACK of
 * TCP's handshake (up to 200 ms, until it has data): the listener sees N SYNs,
 * then N ACKs. It waits for each connection's ntbsmc handshake to end and
 * prints how many run over NTB, fell back to TCP or failed:
 *
 *   {"role": "burst", "conns": 32, "ntb": 4, "tcp": 28, "failed": 0}
 *
 *   {"round": 1, "how": "rd", "accepted": 7, "accept_end": "EINVAL",
 *    "woken_ms": 0, "echo": "ok", "mode": "tcp", "reason": "disconnected"}
 *
 * drain listens on ADDR PORT and connects to it, non-blocking, from the same
 * namespace (the test holds the client's handshake with fault points), closes
 * the listener CLOSE_MS after the connect began, and says how long after the
 * connect began close() returned: it waits for the child's server handshake.
 *
 *   {"role": "drain", "close_at_ms": 2500, "drained_ms": 4012}
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/ntbsmc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "names.h"

#ifndef TCP_ULP
#define TCP_ULP 31
#endif

#define WOKEN_MAX_MS	10000
#define IO_TIMEOUT_S	10

static void __attribute__((noreturn)) die(const char *what)
{
	fprintf(stderr, "lstop: %s: %s\n", what, strerror(errno));
	exit(2);
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static struct addrinfo *resolve(const char *addr, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;

	if (getaddrinfo(addr, port, &hints, &ai))
		die("getaddrinfo");
	return ai;
}

/* A TCP socket of @ai's family with the ntbsmc ULP. */
static int ulp_socket(const struct addrinfo *ai)
{
	int fd = socket(ai->ai_family, SOCK_STREAM, 0), one = 1;

	if (fd < 0)
		die("socket");
	if (setsockopt(fd, SOL_TCP, TCP_ULP, "ntbsmc", sizeof("ntbsmc")))
		die("setsockopt TCP_ULP");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	return fd;
}

static void timeouts(int fd)
{
	struct timeval tv = { IO_TIMEOUT_S, 0 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* ---- storm ---- */

static struct addrinfo *storm_ai;
static long storm_end;
static atomic_long storm_conns;

static void *storm_thread(void *arg)
{
	(void)arg;
	while (now_ms() < storm_end) {
		int fd = ulp_socket(storm_ai);

		timeouts(fd);
		if (!connect(fd, storm_ai->ai_addr, storm_ai->ai_addrlen)) {
			atomic_fetch_add(&storm_conns, 1);
			/* the listener may be gone: that is the point */
			(void)!send(fd, "x", 1, MSG_NOSIGNAL);
		} else {
			sleep_ms(5);
		}
		close(fd);
	}
	return NULL;
}

static int storm(const char *addr, const char *port, int secs, int threads)
{
	pthread_t th[64];
	int i;

	if (threads < 1 || threads > 64)
		return fprintf(stderr, "lstop: 1-64 threads\n"), 2;
	storm_ai = resolve(addr, port);
	storm_end = now_ms() + secs * 1000L;
	for (i = 0; i < threads; i++)
		if (pthread_create(&th[i], NULL, storm_thread, NULL))
			die("pthread_create");
	for (i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	printf("{\"role\": \"storm\", \"conns\": %ld}\n", atomic_load(&storm_conns));
	return 0;
}

/* ---- burst ---- */

static int burst(const char *addr, const char *port, int n)
{
	struct addrinfo *ai = resolve(addr, port);
	int fds[256], i, ntb = 0, tcp = 0, failed = 0, one = 1;
	long end;

	if (n < 1 || n > 256)
		return fprintf(stderr, "lstop: 1-256 connections\n"), 2;
	for (i = 0; i < n; i++) {
		fds[i] = ulp_socket(ai);
		if (setsockopt(fds[i], SOL_TCP, TCP_DEFER_ACCEPT, &one, sizeof(one)))
			die("setsockopt TCP_DEFER_ACCEPT");
		if (fcntl(fds[i], F_SETFL, O_NONBLOCK))
			die("fcntl");
		if (connect(fds[i], ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS)
			die("connect");
	}
	end = now_ms() + 30000;
	for (i = 0; i < n; i++) {
		struct ntbsmc_info info;
		socklen_t len = sizeof(info);
		int err = 0;

		for (;;) {
			len = sizeof(info);
			if (getsockopt(fds[i], SOL_NTBSMC, NTBSMC_INFO, &info, &len))
				die("getsockopt NTBSMC_INFO");
			len = sizeof(err);
			getsockopt(fds[i], SOL_SOCKET, SO_ERROR, &err, &len);
			if (err || info.mode != NTBSMC_MODE_HANDSHAKE || now_ms() > end)
				break;
			sleep_ms(20);
		}
		if (err || info.mode == NTBSMC_MODE_HANDSHAKE)
			failed++;
		else if (info.mode == NTBSMC_MODE_NTB)
			ntb++;
		else
			tcp++;
	}
	for (i = 0; i < n; i++)
		close(fds[i]);
	printf("{\"role\": \"burst\", \"conns\": %d, \"ntb\": %d, \"tcp\": %d, "
	       "\"failed\": %d}\n", n, ntb, tcp, failed);
	return failed ? 1 : 0;
}

/* ---- echo ---- */

static void *echo_conn(void *arg)
{
	int fd = (int)(long)arg;
	char buf[4096];
	ssize_t n;

	timeouts(fd);
	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
		if (send(fd, buf, n, MSG_NOSIGNAL) != n)
			break;
	close(fd);
	return NULL;
}

static int echo(const char *addr, const char *port)
{
	struct addrinfo *ai = resolve(addr, port);
	int lfd = ulp_socket(ai);

	if (bind(lfd, ai->ai_addr, ai->ai_addrlen) || listen(lfd, 64))
		die("echo bind/listen");
	for (;;) {
		int fd = accept(lfd, NULL, NULL);
		pthread_t th;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			die("accept");
		}
		if (pthread_create(&th, NULL, echo_conn, (void *)(long)fd))
			die("pthread_create");
		pthread_detach(th);
	}
}

/* ---- server ---- */

static atomic_bool stopping;

static void on_usr1(int sig)
{
	(void)sig;
}

struct acceptor {
	pthread_t th;
	int lfd;
	int accepted;
	int err;		/* how accept() ended */
	atomic_long ended_at;
};

static void *accept_thread(void *arg)
{
	struct acceptor *a = arg;

	for (;;) {
		int fd = accept(a->lfd, NULL, NULL);

		if (fd < 0) {
			if (errno == EINTR && !atomic_load(&stopping))
				continue;
			a->err = errno;
			break;
		}
		a->accepted++;
		close(fd);
	}
	atomic_store(&a->ended_at, now_ms());
	return NULL;
}

static char mode_buf[32], reason_buf[32];

static const char *mode_of(int fd, const char **reason)
{
	struct ntbsmc_info info;
	socklen_t len = sizeof(info);

	*reason = "?";
	if (getsockopt(fd, SOL_NTBSMC, NTBSMC_INFO, &info, &len))
		return "no_ulp";
	*reason = reason_name(info.reason, reason_buf, sizeof(reason_buf));
	return mode_name(info.mode, mode_buf, sizeof(mode_buf));
}

static const char *errno_name(int err)
{
	return err ? strerrorname_np(err) ?: "?" : "none";
}

/* The stopped listener connects to the echo server: "ok", or what went wrong. */
static const char *echo_check(int fd, const struct addrinfo *eai, int round)
{
	char out[64], in[64];
	int len, got = 0;
	ssize_t n;

	timeouts(fd);
	if (connect(fd, eai->ai_addr, eai->ai_addrlen))
		return errno_name(errno);
	len = snprintf(out, sizeof(out), "lstop round %d: plain TCP", round);
	if (send(fd, out, len, MSG_NOSIGNAL) != len)
		return errno_name(errno);
	while (got < len) {
		n = recv(fd, in + got, len - got, 0);
		if (n <= 0)
			return n ? errno_name(errno) : "eof";
		got += n;
	}
	return memcmp(in, out, len) ? "wrong_bytes" : "ok";
}

static int server(const char *addr, const char *port, const char *how, int rounds,
		  const char *eaddr, const char *eport)
{
	struct addrinfo *ai = resolve(addr, port), *eai = resolve(eaddr, eport);
	struct sockaddr unspec = { .sa_family = AF_UNSPEC };
	int round, failed = 0;

	struct sigaction sa = { .sa_handler = on_usr1 };	/* no SA_RESTART */

	sigaction(SIGUSR1, &sa, NULL);
	srandom(getpid());
	for (round = 1; round <= rounds; round++) {
		struct acceptor acc[2] = { 0 };
		const char *echo = "skipped", *mode, *reason;
		long stopped, woken = -1;
		int lfd, i, rc, need, ended = 0, stop_errno;

		lfd = ulp_socket(ai);
		if (bind(lfd, ai->ai_addr, ai->ai_addrlen) || listen(lfd, 64))
			die("bind/listen");
		for (i = 0; i < 2; i++) {
			acc[i].lfd = lfd;
			if (pthread_create(&acc[i].th, NULL, accept_thread, &acc[i]))
				die("pthread_create");
		}
		sleep_ms(50 + random() % 350);
		if (!strcmp(how, "rd"))
			rc = shutdown(lfd, SHUT_RD);
		else if (!strcmp(how, "rdwr"))
			rc = shutdown(lfd, SHUT_RDWR);
		else
			rc = connect(lfd, &unspec, sizeof(unspec));
		stopped = now_ms();
		stop_errno = errno;
		if (rc)
			fprintf(stderr, "lstop: stop %s: %s\n", how, strerror(errno));
		/* the accept()ers the stop wakes must have returned within the bound */
		need = strcmp(how, "unspec") ? 2 : 1;
		for (;;) {
			ended = !!atomic_load(&acc[0].ended_at) + !!atomic_load(&acc[1].ended_at);
			if (ended >= need || now_ms() - stopped >= WOKEN_MAX_MS)
				break;
			sleep_ms(10);
		}
		if (ended >= need) {
			long last = 0;

			for (i = 0; i < 2; i++)
				if (atomic_load(&acc[i].ended_at) > last)
					last = atomic_load(&acc[i].ended_at);
			woken = last > stopped ? last - stopped : 0;
		}
		atomic_store(&stopping, true);
		for (i = 0; i < 2; i++) {
			if (!atomic_load(&acc[i].ended_at))
				pthread_kill(acc[i].th, SIGUSR1);
			pthread_join(acc[i].th, NULL);
		}
		atomic_store(&stopping, false);
		if (woken >= 0)
			echo = echo_check(lfd, eai, round);
		mode = mode_of(lfd, &reason);
		printf("{\"round\": %d, \"how\": \"%s\", \"stop\": \"%s\", \"accepted\": %d, "
		       "\"accept_end\": \"%s\", \"woken_ms\": %ld, \"echo\": \"%s\", "
		       "\"mode\": \"%s\", \"reason\": \"%s\"}\n",
		       round, how, rc ? errno_name(stop_errno) : "ok",
		       acc[0].accepted + acc[1].accepted, errno_name(acc[0].err), woken,
		       echo, mode, reason);
		fflush(stdout);
		if (rc || woken < 0 || strcmp(echo, "ok"))
			failed = 1;
		close(lfd);
	}
	return failed;
}

/* ---- drain ---- */

static int drain(const char *addr, const char *port, long close_ms)
{
	struct addrinfo *ai = resolve(addr, port);
	int lfd = ulp_socket(ai), fd = ulp_socket(ai);
	long t0, t1, t2;

	if (bind(lfd, ai->ai_addr, ai->ai_addrlen) || listen(lfd, 8))
		die("listen");
	/* a blocking connect() would wait for the client's handshake */
	fcntl(fd, F_SETFL, O_NONBLOCK);
	t0 = now_ms();
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS)
		die("connect");
	sleep_ms(t0 + close_ms - now_ms());
	t1 = now_ms();
	close(lfd);
	t2 = now_ms();
	printf("{\"role\": \"drain\", \"close_at_ms\": %ld, \"drained_ms\": %ld}\n",
	       t1 - t0, t2 - t0);
	close(fd);
	freeaddrinfo(ai);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 6 && !strcmp(argv[1], "storm"))
		return storm(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]));
	if (argc == 5 && !strcmp(argv[1], "burst"))
		return burst(argv[2], argv[3], atoi(argv[4]));
	if (argc == 4 && !strcmp(argv[1], "echo"))
		return echo(argv[2], argv[3]);
	if (argc == 5 && !strcmp(argv[1], "drain"))
		return drain(argv[2], argv[3], atol(argv[4]));
	if (argc == 8 && !strcmp(argv[1], "server") &&
	    (!strcmp(argv[4], "rd") || !strcmp(argv[4], "rdwr") || !strcmp(argv[4], "unspec")))
		return server(argv[2], argv[3], argv[4], atoi(argv[5]), argv[6], argv[7]);
	fprintf(stderr, "usage: lstop storm ADDR PORT SECS THREADS\n"
			"       lstop echo ADDR PORT\n"
			"       lstop burst ADDR PORT N\n"
			"       lstop drain ADDR PORT CLOSE_MS\n"
			"       lstop server ADDR PORT rd|rdwr|unspec ROUNDS ECHO_ADDR ECHO_PORT\n");
	return 2;
}
