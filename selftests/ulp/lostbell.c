// SPDX-License-Identifier: GPL-2.0
/*
 * lostbell: a waiter whose one doorbell is lost while another thread of its
 * socket keeps looking (selftests/ulp/wakeup.sh).
 *
 *   lostbell server ADDR PORT ROUNDS FIFO FAULTDIR   (listens; a connection a round)
 *   lostbell client ADDR PORT ROUNDS FIFO MODE
 *
 * FIFO and FIFO.back are FIFOs both ends can open.
 *
 * MODE is space-alone, space-poll, space-recv, space-once, data-alone or
 * data-send.
 *
 * space-*: the client's thread W blocks in one send() of the server's whole
 * buffer and 4 KiB more. Once the buffer is full and W has slept 300 ms, the
 * server arms fault notify_drop for this connection's port, once, and reads the
 * buffer: the one doorbell that tells W of the space is not rung. Meanwhile
 * another thread of the client's socket looks: poll(POLLIN, 0) every 2 ms
 * (space-poll), recv(MSG_DONTWAIT) every 2 ms (space-recv), one poll() after the
 * server's read (space-once), or nothing (space-alone). W must wake (the
 * re-check's bound is two recheck_ms periods) and finish its send; the server
 * then reads the rest and checks every byte.
 *
 * data-*: the client's thread R blocks in recv(). The server turns its own
 * WANT_DATA off (a read of 1 of the 2 bytes the client sent first: a full read
 * that leaves bytes), so that the client's sends ring no doorbell that could
 * use up the fault; after 300 ms it arms notify_drop once and sends 512 bytes:
 * the doorbell for them is not rung. Meanwhile another thread of the client's
 * socket sends a byte every 2 ms (data-send), or nothing (data-alone). R must
 * wake and read the 512 bytes, checked.
 *
 * A waiter must wake within WAKE_BOUND_MS (8 s, twenty times the re-check's
 * bound) of the server's drain or send, or the round fails; the sockets time
 * out after 20 s (SO_SNDTIMEO, SO_RCVTIMEO), so a waiter never woken never
 * hangs the test. In data-*, the server touches its socket again only once the
 * client says (through FIFO.back) that its reader woke: a read or a poll of its
 * own would set its WANT_DATA, whose event wakes the client's reader too. The server prints a line a round
 * ("round N fired F": whether the fault fired, so the test knows how many
 * doorbells were lost), the client one JSON line: rounds and the longest wait
 * from the server's drain or send to the waiter's wake (ms, for the log; the
 * test asserts that every waiter woke, and counters, not times).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tool.h"

#define EXTRA		4096	/* bytes beyond the server's buffer */
#define DATA_LEN	512
/* what the writer sends: more than the server's 64 KiB buffer holds */
#define SPACE_LEN	(64 * 1024 + EXTRA)
#define TIMEOUT_S	20
/*
 * A waiter must wake this soon after its doorbell was dropped: the re-check's
 * bound is two recheck_ms periods (200 ms in the test), so this leaves 20 times
 * that for a loaded emulator, and stays well under TIMEOUT_S, at which a
 * writer never woken would wake anyway (and go on, finding the space).
 */
#define WAKE_BOUND_MS	8000

static unsigned char pattern(size_t i)
{
	return (unsigned char)(i * 7 + (i >> 11));
}

/* Reads exactly @len bytes, checking them against the pattern from @from. */
static void read_checked(int fd, size_t from, size_t len, const char *what)
{
	unsigned char buf[65536];
	size_t done = 0, i;

	while (done < len) {
		size_t want = len - done < sizeof(buf) ? len - done : sizeof(buf);
		ssize_t n = recv(fd, buf, want, 0);

		if (n <= 0) {
			if (n == 0)
				errno = 0;
			fprintf(stderr, "lostbell: %s: %zu of %zu bytes\n", what, done, len);
			die(what);
		}
		for (i = 0; i < (size_t)n; i++)
			if (buf[i] != pattern(from + done + i)) {
				fprintf(stderr, "lostbell: %s: byte %zu wrong\n", what,
					from + done + i);
				exit(1);
			}
		done += n;
	}
}

static void fill(unsigned char *buf, size_t from, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = pattern(from + i);
}

static void put_file(const char *dir, const char *name, const char *val)
{
	char path[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f || fputs(val, f) < 0 || fclose(f))
		die(path);
}

static long get_file(const char *dir, const char *name)
{
	char path[1024];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f || fscanf(f, "%ld", &v) != 1)
		die(path);
	fclose(f);
	return v;
}

/* Fault notify_drop, once, for connections with this port. */
static void arm(const char *faults, int port)
{
	char p[16];

	snprintf(p, sizeof(p), "%d", port);
	put_file(faults, "port", p);
	put_file(faults, "delay_ms", "0");
	put_file(faults, "times", "1");
	put_file(faults, "probability", "100");
}

static void disarm(const char *faults)
{
	put_file(faults, "probability", "0");
	put_file(faults, "port", "0");
}

static int inq(int fd)
{
	int n;

	if (ioctl(fd, FIONREAD, &n))
		die("FIONREAD");
	return n;
}

/* Waits until @fd has at least @want bytes to read, 10 s at most. */
static int wait_inq(int fd, int want, const char *what)
{
	double end = now_ms() + TIMEOUT_S * 1000;
	int n;

	while ((n = inq(fd)) < want) {
		if (now_ms() > end) {
			fprintf(stderr, "lostbell: %s: %d bytes to read, want %d\n", what, n, want);
			exit(1);
		}
		usleep(5000);
	}
	return n;
}

static void server(const struct sockaddr_in *a, long rounds, int fifo, int back,
		   const char *faults)
{
	char dir[512];
	long r;
	int lfd = ulp_socket(TIMEOUT_S);

	snprintf(dir, sizeof(dir), "%s/notify_drop", faults);
	if (bind(lfd, (const struct sockaddr *)a, sizeof(*a)) || listen(lfd, 1))
		die("listen");
	for (r = 0; r < rounds; r++) {
		struct sockaddr_in peer;
		socklen_t plen = sizeof(peer);
		char mode = 0, c;
		int fd, full;
		long fired;

		fd = accept(lfd, (struct sockaddr *)&peer, &plen);
		if (fd < 0)
			die("accept");
		/* the client names its mode's kind in its first byte */
		if (recv(fd, &mode, 1, 0) != 1)
			die("read mode");
		if (mode == 's') {
			/* the client's writer fills our buffer and sleeps */
			full = wait_inq(fd, 4096, "writer's first bytes");
			usleep(200000);
			full = inq(fd);
			usleep(300000);
			if (inq(fd) != full)
				die("the writer still writes: buffer not full");
			arm(dir, ntohs(peer.sin_port));
			read_checked(fd, 0, full, "the full buffer");
			if (write(fifo, "d", 1) != 1)
				die("fifo");
			/* the rest comes once the writer woke; it closes after */
			read_checked(fd, full, SPACE_LEN - full, "the rest: the writer was not woken");
			if (recv(fd, &c, 1, 0) != 0)
				die("EOF after the writer's bytes");
			printf("round %ld bytes %d\n", r, SPACE_LEN);
		} else if (mode == 'd') {
			unsigned char buf[DATA_LEN];

			wait_inq(fd, 2, "the client's first bytes");
			/* a full read that leaves a byte: our WANT_DATA off */
			if (recv(fd, &c, 1, 0) != 1)
				die("read one byte");
			usleep(300000);
			arm(dir, ntohs(peer.sin_port));
			fill(buf, 0, sizeof(buf));
			if (send(fd, buf, sizeof(buf), MSG_NOSIGNAL) != sizeof(buf))
				die("send data");
			if (write(fifo, "d", 1) != 1)
				die("fifo");
			/* nothing of ours may wake the reader: wait for its word */
			{
				struct pollfd p = { .fd = back, .events = POLLIN };

				if (poll(&p, 1, 2 * TIMEOUT_S * 1000) != 1 || read(back, &c, 1) != 1)
					die("the client's word that its reader woke");
			}
			/* the client closes once its reader has the data */
			while (recv(fd, buf, sizeof(buf), 0) > 0)
				;
			printf("round %ld bytes %d\n", r, DATA_LEN);
		} else {
			errno = EINVAL;
			die("mode");
		}
		fired = get_file(dir, "times") == 0;
		disarm(dir);
		printf("round %ld fired %ld\n", r, fired);
		fflush(stdout);
		close(fd);
	}
	close(lfd);
}

struct client {
	int fd, fifo, back;
	const char *look;	/* alone, poll, recv, once, send */
	atomic_bool done;
	_Atomic double signalled;	/* when the server drained or sent */
};

/* The other thread of the socket: it looks (or sends) while the waiter sleeps. */
static void *looker(void *arg)
{
	struct client *c = arg;
	char ch;

	if (!strcmp(c->look, "once")) {
		struct pollfd p = { .fd = c->fd, .events = POLLIN };

		if (read(c->fifo, &ch, 1) != 1)
			die("fifo");
		c->signalled = now_ms();
		usleep(10000);
		poll(&p, 1, 0);
		return NULL;
	}
	while (!c->done) {
		if (!strcmp(c->look, "poll")) {
			struct pollfd p = { .fd = c->fd, .events = POLLIN };

			poll(&p, 1, 0);
		} else if (!strcmp(c->look, "recv")) {
			if (recv(c->fd, &ch, 1, MSG_DONTWAIT) > 0)
				die("the server sent something");
		} else if (!strcmp(c->look, "send")) {
			if (send(c->fd, "x", 1, MSG_NOSIGNAL) != 1)
				die("send a byte");
		}
		usleep(2000);
	}
	return NULL;
}

/* Notes when the server signals, unless the looker does (mode once). */
static void *signal_reader(void *arg)
{
	struct client *c = arg;
	char ch;

	if (read(c->fifo, &ch, 1) != 1)
		die("fifo");
	c->signalled = now_ms();
	return NULL;
}

static double client_round(const struct sockaddr_in *a, int fifo, int back, const char *mode)
{
	struct client c = { .fifo = fifo, .back = back };
	pthread_t lt, st;
	bool space = !strncmp(mode, "space-", 6);
	double woke;
	int one_sig;

	c.look = mode + (space ? 6 : 5);
	c.fd = ulp_socket(TIMEOUT_S);
	if (connect(c.fd, (const struct sockaddr *)a, sizeof(*a)))
		die("connect");
	if (send(c.fd, space ? "s" : "d", 1, MSG_NOSIGNAL) != 1)
		die("send mode");
	one_sig = !strcmp(c.look, "once");
	if (!one_sig && pthread_create(&st, NULL, signal_reader, &c))
		die("thread");
	if (strcmp(c.look, "alone") && pthread_create(&lt, NULL, looker, &c))
		die("thread");
	if (space) {
		/* one send() that fills the server's buffer, sleeps, and is woken */
		static unsigned char buf[SPACE_LEN];
		ssize_t n;

		fill(buf, 0, SPACE_LEN);
		n = send(c.fd, buf, SPACE_LEN, MSG_NOSIGNAL);
		woke = now_ms();
		if (n != SPACE_LEN) {
			fprintf(stderr, "lostbell: %s: send returned %zd: the writer was not woken\n",
				mode, n);
			exit(1);
		}
	} else {
		unsigned char d[DATA_LEN];
		size_t i;
		ssize_t n;

		if (send(c.fd, "xx", 2, MSG_NOSIGNAL) != 2)
			die("send the first bytes");
		n = recv(c.fd, d, sizeof(d), MSG_WAITALL);
		woke = now_ms();
		if (n != DATA_LEN) {
			fprintf(stderr, "lostbell: %s: recv returned %zd: the reader was not woken\n",
				mode, n);
			exit(1);
		}
		for (i = 0; i < DATA_LEN; i++)
			if (d[i] != pattern(i)) {
				fprintf(stderr, "lostbell: byte %zu wrong\n", i);
				exit(1);
			}
	}
	c.done = true;
	if (strcmp(c.look, "alone"))
		pthread_join(lt, NULL);
	if (!one_sig)
		pthread_join(st, NULL);
	if (!space && write(back, "k", 1) != 1)
		die("fifo back");
	if (woke - c.signalled > WAKE_BOUND_MS) {
		fprintf(stderr, "lostbell: %s: the waiter woke %.0f ms after its doorbell was dropped, bound %d\n",
			mode, woke - c.signalled, WAKE_BOUND_MS);
		exit(1);
	}
	close(c.fd);
	return woke - c.signalled;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	long rounds, r;
	double worst = 0;
	char backpath[1024];
	int fifo, back;

	if (argc != 7 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
		fprintf(stderr, "usage: lostbell server ADDR PORT ROUNDS FIFO FAULTDIR\n"
				"       lostbell client ADDR PORT ROUNDS FIFO MODE\n");
		return 2;
	}
	a.sin_port = htons(atoi(argv[3]));
	if (inet_pton(AF_INET, argv[2], &a.sin_addr) != 1) {
		errno = EINVAL;
		die(argv[2]);
	}
	rounds = atol(argv[4]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* (read-write: a write-only open would wait for the other end's) */
	snprintf(backpath, sizeof(backpath), "%s.back", argv[5]);
	fifo = open(argv[5], O_RDWR);
	back = open(backpath, O_RDWR);
	if (fifo < 0 || back < 0)
		die("open fifos");
	if (!strcmp(argv[1], "server")) {
		server(&a, rounds, fifo, back, argv[6]);
		return 0;
	}
	for (r = 0; r < rounds; r++) {
		double w = client_round(&a, fifo, back, argv[6]);

		if (w > worst)
			worst = w;
	}
	printf("{\"mode\": \"%s\", \"rounds\": %ld, \"max_wake_ms\": %.1f}\n", argv[6], rounds,
	       worst);
	return 0;
}
