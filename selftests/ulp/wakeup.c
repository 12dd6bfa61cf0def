// SPDX-License-Identifier: GPL-2.0
/*
 * wakeup: a reader that sleeps while its want of data is still on its way to the
 * writer, and a writer that writes into that gap (selftests/ulp/wakeup.sh).
 *
 *   wakeup writer ADDR PORT ROUNDS FIFO      (listens; one connection)
 *   wakeup reader ADDR PORT ROUNDS FIFO SRC_PORT
 *
 * Each round: the reader sends 'g'; the writer answers "ab"; the reader reads
 * 'a' alone (a full read that leaves 'b': ntbsmc lets go of WANT_DATA), then 'b'
 * (which drains the ring: WANT_DATA is set again, and fault want_late holds it
 * back from the writer), tells the writer through FIFO, and blocks for 'c',
 * which the writer sends 20 ms after it was told. Both ends run in one machine (two network
 * namespaces), the FIFO in its file system. The reader binds SRC_PORT, so that a
 * fault point's port matches its socket alone.
 *
 * Prints one JSON line: rounds, bytes checked, the longest wait for 'c' (ms,
 * for the log; the test asserts counters, not times).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tool.h"

/* Reads exactly one byte and checks it. */
static void read_byte(int fd, char want, const char *what)
{
	char c;
	ssize_t n = recv(fd, &c, 1, 0);

	if (n != 1) {
		if (n == 0)
			errno = 0;
		die(what);
	}
	if (c != want) {
		fprintf(stderr, "wakeup: %s: read '%c', want '%c'\n", what, c, want);
		exit(1);
	}
}

static void send_all(int fd, const char *s, size_t len, const char *what)
{
	if (send(fd, s, len, MSG_NOSIGNAL) != (ssize_t)len)
		die(what);
}

static void fifo_byte(int fd, bool write_it)
{
	char c = 't';

	if ((write_it ? write(fd, &c, 1) : read(fd, &c, 1)) != 1)
		die("fifo");
}

int main(int argc, char **argv)
{
	struct sockaddr_in a;
	long rounds, r;
	double worst = 0;
	int fd, fifo;
	bool reader;

	if (argc < 6 || (strcmp(argv[1], "writer") && strcmp(argv[1], "reader")) ||
	    (!strcmp(argv[1], "reader") && argc != 7)) {
		fprintf(stderr, "usage: wakeup writer ADDR PORT ROUNDS FIFO\n"
				"       wakeup reader ADDR PORT ROUNDS FIFO SRC_PORT\n");
		return 2;
	}
	reader = !strcmp(argv[1], "reader");
	a = addr_of(argv[2], argv[3]);
	rounds = atol(argv[4]);
	fd = ulp_socket(30);	/* a lost wakeup fails, never hangs */
	if (reader) {
		struct sockaddr_in src = { .sin_family = AF_INET,
					   .sin_port = htons(atoi(argv[6])) };

		if (bind(fd, (struct sockaddr *)&src, sizeof(src)))
			die("bind source port");
		if (connect(fd, (struct sockaddr *)&a, sizeof(a)))
			die("connect");
		fifo = open(argv[5], O_WRONLY);
	} else {
		int lfd = fd;

		if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 1))
			die("listen");
		fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			die("accept");
		close(lfd);
		fifo = open(argv[5], O_RDONLY);
	}
	if (fifo < 0)
		die("open fifo");
	for (r = 0; r < rounds; r++) {
		if (reader) {
			double t0;

			send_all(fd, "g", 1, "send request");
			read_byte(fd, 'a', "read a");
			read_byte(fd, 'b', "read b");
			fifo_byte(fifo, true);
			t0 = now_ms();
			read_byte(fd, 'c', "read c");
			if (now_ms() - t0 > worst)
				worst = now_ms() - t0;
		} else {
			read_byte(fd, 'g', "read request");
			send_all(fd, "ab", 2, "send ab");
			fifo_byte(fifo, false);
			/* the reader asleep by now, its want still on the way */
			usleep(20000);
			send_all(fd, "c", 1, "send c");
		}
	}
	printf("{\"rounds\": %ld, \"bytes\": %ld, \"max_wait_ms\": %.1f}\n", rounds,
	       rounds * (reader ? 3 : 1), worst);
	close(fd);
	return 0;
}
