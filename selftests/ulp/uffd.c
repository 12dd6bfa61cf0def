// SPDX-License-Identifier: GPL-2.0
/* uffd: a send or receive over ntbsmc whose user buffer faults and stays faulting. */

/*
 *   uffd send|recv ADDR PORT RELEASE_FILE
 *   uffd serve ADDR PORT
 *
 * Connects with the ntbsmc ULP, waits until the connection runs over NTB, then
 * sends (or, once the peer's bytes are there, receives) 2 pages through a buffer
 * registered with userfaultfd: the first page is present, the second missing.
 * The copy faults on the second page, and the fault is left unresolved until
 * RELEASE_FILE exists (at most 120 s): a buffer backed by userfaultfd or FUSE
 * can do that to any kernel copy. Prints "faulting" on stdout once the kernel
 * waits for the page, then, after the release, the call's result. Whatever the
 * kernel does meanwhile (the NTB device goes away), it must not wait for this
 * fault.
 *
 * serve is the other end: it accepts one connection with the ULP, writes 2
 * pages into it and reads until EOF or an error.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/ntbsmc.h>
#include <linux/userfaultfd.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef TCP_ULP
#define TCP_ULP 31
#endif

#define WAIT_S	120

static long page;
static char *area;
static int uffd;
static const char *release;

static void __attribute__((noreturn)) die(const char *what)
{
	fprintf(stderr, "uffd: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Resolves the one fault that comes, once RELEASE exists. */
static void *resolver(void *arg)
{
	struct pollfd p = { .fd = uffd, .events = POLLIN };
	struct uffdio_copy copy = { 0 };
	struct uffd_msg msg;
	struct stat st;
	char *src;
	int i;

	(void)arg;
	if (poll(&p, 1, WAIT_S * 1000) != 1)
		die("no page fault came");
	if (read(uffd, &msg, sizeof(msg)) != sizeof(msg) ||
	    msg.event != UFFD_EVENT_PAGEFAULT)
		die("read uffd_msg");
	printf("faulting\n");
	fflush(stdout);
	for (i = 0; i < WAIT_S * 10 && stat(release, &st); i++)
		usleep(100000);
	src = aligned_alloc(page, page);
	if (!src)
		die("aligned_alloc");
	memset(src, 0x5a, page);
	copy.dst = msg.arg.pagefault.address & ~(page - 1);
	copy.src = (unsigned long)src;
	copy.len = page;
	if (ioctl(uffd, UFFDIO_COPY, &copy))
		die("UFFDIO_COPY");
	free(src);
	return NULL;
}

static int serve(struct addrinfo *ai)
{
	struct timeval tv = { .tv_sec = WAIT_S };
	char buf[4096];
	int lfd, fd, one = 1;
	char *out;

	lfd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (lfd < 0 || setsockopt(lfd, SOL_TCP, TCP_ULP, "ntbsmc", sizeof("ntbsmc")) ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, ai->ai_addr, ai->ai_addrlen) || listen(lfd, 1))
		die("listen");
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		die("accept");
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)))
		die("setsockopt");
	out = malloc(2 * page);
	if (!out)
		die("malloc");
	memset(out, 0x77, 2 * page);
	if (send(fd, out, 2 * page, MSG_NOSIGNAL) != 2 * page)
		die("send");
	while (recv(fd, buf, sizeof(buf), 0) > 0)
		;
	printf("{\"served\": true}\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST };
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { 0 };
	struct uffdio_copy copy = { 0 };
	struct timeval tv = { .tv_sec = WAIT_S };
	struct ntbsmc_info info;
	struct addrinfo *ai;
	socklen_t len;
	pthread_t thr;
	bool sending;
	ssize_t n;
	char *src;
	int fd, i;

	if ((argc != 5 || (strcmp(argv[1], "send") && strcmp(argv[1], "recv"))) &&
	    (argc != 4 || strcmp(argv[1], "serve"))) {
		fprintf(stderr, "usage: uffd send|recv ADDR PORT RELEASE_FILE\n"
				"       uffd serve ADDR PORT\n");
		return 2;
	}
	page = sysconf(_SC_PAGESIZE);
	if (getaddrinfo(argv[2], argv[3], &hints, &ai))
		die("getaddrinfo");
	if (!strcmp(argv[1], "serve"))
		return serve(ai);
	sending = !strcmp(argv[1], "send");
	release = argv[4];

	uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0)
		die("userfaultfd");
	if (ioctl(uffd, UFFDIO_API, &api))
		die("UFFDIO_API");
	area = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area == MAP_FAILED)
		die("mmap");
	reg.range.start = (unsigned long)area;
	reg.range.len = 2 * page;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg))
		die("UFFDIO_REGISTER");
	/* the first page present, the second left missing */
	src = aligned_alloc(page, page);
	if (!src)
		die("aligned_alloc");
	memset(src, 0xa5, page);
	copy.dst = (unsigned long)area;
	copy.src = (unsigned long)src;
	copy.len = page;
	if (ioctl(uffd, UFFDIO_COPY, &copy))
		die("UFFDIO_COPY");
	free(src);

	for (i = 0;; i++) {
		fd = socket(ai->ai_family, SOCK_STREAM, 0);
		if (fd < 0)
			die("socket");
		if (setsockopt(fd, SOL_TCP, TCP_ULP, "ntbsmc", sizeof("ntbsmc")) ||
		    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
		    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)))
			die("setsockopt");
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
			break;
		if (errno != ECONNREFUSED || i == 300)
			die("connect");
		close(fd);
		usleep(100000);
	}
	/* over NTB once the handshake ended; the peer's bytes there for recv */
	for (i = 0;; i++) {
		int avail = 0;

		len = sizeof(info);
		if (getsockopt(fd, SOL_NTBSMC, NTBSMC_INFO, &info, &len))
			die("NTBSMC_INFO");
		if (info.mode == NTBSMC_MODE_HANDSHAKE && i < WAIT_S * 1000) {
			usleep(1000);
			continue;
		}
		if (info.mode != NTBSMC_MODE_NTB) {
			fprintf(stderr, "uffd: connection not over NTB (mode %u)\n", info.mode);
			return 1;
		}
		if (sending || (!ioctl(fd, FIONREAD, &avail) && avail >= 2 * page))
			break;
		if (i >= WAIT_S * 1000) {
			fprintf(stderr, "uffd: the peer's bytes did not come\n");
			return 1;
		}
		usleep(1000);
	}
	if (pthread_create(&thr, NULL, resolver, NULL))
		die("pthread_create");
	if (sending)
		n = send(fd, area, 2 * page, MSG_NOSIGNAL);
	else
		n = recv(fd, area, 2 * page, MSG_WAITALL);
	printf("{\"%s\": %zd, \"error\": \"%s\"}\n", argv[1], n,
	       n < 0 ? strerror(errno) : "");
	pthread_join(thr, NULL);
	close(fd);
	return 0;
}
