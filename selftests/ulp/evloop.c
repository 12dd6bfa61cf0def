// SPDX-License-Identifier: GPL-2.0
/*
 * evloop: an edge-triggered epoll echo server and a pipelining client, the way
 * real event loops (nginx, wrk, haproxy) use a socket.
 *
 *   evloop server [--ulp] [--delay-ms MS] ADDR PORT CONNS
 *   evloop client [--ulp] [--stall-ms MS] [--go FILE] ADDR PORT CONNS REQUESTS DEPTH MAXSIZE
 *
 * Both sides read like nginx: after an edge, recv() until it returns less than
 * asked (taken as "drained", no EAGAIN needed), then back to epoll_wait(). The
 * server echoes every byte, in order, writing until EAGAIN and waiting for
 * EPOLLOUT's edge for the rest; with --delay-ms it sleeps that long after each
 * round of writes before it waits again, the window in which a peer's next
 * request arrives while the server is not in epoll_wait(). It serves CONNS
 * connections and exits once all of them closed.
 *
 * The client opens CONNS connections and on each sends REQUESTS requests, at
 * most DEPTH unanswered at once (pipelined), of 1..MAXSIZE bytes each: a header
 * (connection, index, length) and a body that is a function of them, so every
 * echoed byte is checked where it lands. It fails when any connection made no
 * progress for --stall-ms (default 5000) while it had requests unanswered, and
 * names it. With --go FILE it connects all CONNS first and sends its first
 * requests only once FILE exists (at most 600 s): a test sets the connections
 * up, then starts the traffic under which it does something.
 *
 * Each prints one JSON line: requests, bytes, seconds, the longest wait of a
 * connection for progress (max_gap_ms). Exit 0 on success, 1 on failure.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef TCP_ULP
#define TCP_ULP 31
#endif

#define RBUF	(64 * 1024)
#define HDR	12	/* conn, index, length: 3 x u32, network order */

static int use_ulp, delay_ms, stall_ms = 5000;
static const char *go_file;

/* Ends the run with a JSON error; a system call's errno is added when set. */
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("{\"error\": \"");
	vprintf(fmt, ap);
	printf("%s%s\"}\n", errno ? ": " : "", errno ? strerror(errno) : "");
	va_end(ap);
	fflush(stdout);
	exit(1);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

static void nonblock(int fd)
{
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK))
		die("fcntl");
}

static void addr_of(const char *host, int port, struct sockaddr_storage *ss, socklen_t *len)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST };
	struct addrinfo *ai;
	char p[16];

	snprintf(p, sizeof(p), "%d", port);
	if (getaddrinfo(host, p, &hints, &ai))
		die("bad address %s", host);
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	freeaddrinfo(ai);
}

static int tcp_socket(int family)
{
	int fd = socket(family, SOCK_STREAM, 0), one = 1;

	if (fd < 0)
		die("socket");
	if (use_ulp && setsockopt(fd, SOL_TCP, TCP_ULP, "ntbsmc", 7))
		die("setsockopt TCP_ULP ntbsmc (is the module loaded?)");
	setsockopt(fd, SOL_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* A connection's pending output: a ring of bytes still to write. */
struct out {
	char *buf;
	size_t cap, head, len;
};

static void out_put(struct out *o, const char *p, size_t n)
{
	if (o->len + n > o->cap) {
		size_t cap = o->cap ? o->cap : 65536;
		char *b;

		while (cap < o->len + n)
			cap *= 2;
		b = malloc(cap);
		if (!b)
			die("malloc");
		for (size_t i = 0; i < o->len; i++)
			b[i] = o->buf[(o->head + i) % o->cap];
		free(o->buf);
		o->buf = b;
		o->cap = cap;
		o->head = 0;
	}
	for (size_t i = 0; i < n; i++)
		o->buf[(o->head + o->len + i) % o->cap] = p[i];
	o->len += n;
}

/* Writes until EAGAIN or empty; -1 on a socket error. */
static int out_flush(int fd, struct out *o)
{
	while (o->len) {
		size_t n = o->len, first = o->cap - o->head;
		ssize_t w;

		if (n > first)
			n = first;
		w = send(fd, o->buf + o->head, n, MSG_NOSIGNAL);
		if (w < 0)
			return errno == EAGAIN ? 0 : -1;
		o->head = (o->head + w) % o->cap;
		o->len -= w;
	}
	return 0;
}

/* ---- server ---- */

struct sconn {
	int fd;
	struct out out;
	unsigned long long bytes;
};

static int server(const char *host, int port, int conns)
{
	struct sockaddr_storage ss;
	struct epoll_event ev, evs[64];
	unsigned long long bytes = 0;
	int lfd, ep, open = 0, done = 0, one = 1;
	static char buf[RBUF];
	uint64_t t0 = 0;
	socklen_t len;

	addr_of(host, port, &ss, &len);
	lfd = tcp_socket(ss.ss_family);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&ss, len) || listen(lfd, 1024))
		die("bind/listen %s %d", host, port);
	nonblock(lfd);
	ep = epoll_create1(0);
	ev.events = EPOLLIN | EPOLLET;
	ev.data.ptr = NULL;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev))
		die("epoll_ctl");
	while (done < conns) {
		int n = epoll_wait(ep, evs, 64, -1), wrote = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("epoll_wait");
		for (int i = 0; i < n; i++) {
			struct sconn *c = evs[i].data.ptr;

			if (!c) {	/* the listener: accept until EAGAIN */
				int fd;

				while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
					c = calloc(1, sizeof(*c));
					c->fd = fd;
					ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
					ev.data.ptr = c;
					if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
						die("epoll_ctl");
					if (!open++)
						t0 = now_ms();
				}
				if (errno != EAGAIN)
					die("accept");
				continue;
			}
			if (evs[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLERR | EPOLLHUP)) {
				ssize_t r;
				int eof = 0;

				/* nginx's rule: a read shorter than asked drained it */
				do {
					r = recv(c->fd, buf, sizeof(buf), 0);
					if (r > 0) {
						out_put(&c->out, buf, r);
						c->bytes += r;
					} else if (r == 0) {
						eof = 1;
					} else if (errno != EAGAIN) {
						die("server recv");
					}
				} while (r == (ssize_t)sizeof(buf));
				if (out_flush(c->fd, &c->out))
					die("server send");
				wrote = 1;
				if (eof) {
					if (c->out.len)
						errno = 0, die("peer closed with %zu bytes unsent", c->out.len);
					bytes += c->bytes;
					close(c->fd);
					free(c->out.buf);
					free(c);
					done++;
					continue;
				}
			}
			if ((evs[i].events & EPOLLOUT) && c->out.len && out_flush(c->fd, &c->out))
				die("server send");
		}
		if (wrote && delay_ms)
			usleep(delay_ms * 1000);
	}
	printf("{\"role\": \"server\", \"conns\": %d, \"bytes\": %llu, \"seconds\": %.3f}\n",
	       conns, bytes, (now_ms() - t0) / 1000.0);
	return 0;
}

/* ---- client ---- */

struct cconn {
	int fd, id;
	struct out out;
	unsigned int sent, answered;	/* requests */
	unsigned int cur_len;		/* length of the request being read back */
	size_t got;			/* bytes of it read back */
	char hdr[HDR];
	uint64_t last;			/* ms: last progress */
	int connected;
};

static unsigned int req_len(int conn, unsigned int idx, unsigned int max)
{
	uint32_t x = (conn + 1) * 2654435761u ^ (idx + 1) * 40503u;

	x ^= x >> 13;
	x *= 0x5bd1e995;
	x ^= x >> 15;
	return HDR + x % (max > HDR ? max - HDR + 1 : 1);
}

/* Byte @off of request @idx of connection @conn (the header aside). */
static char req_byte(int conn, unsigned int idx, size_t off)
{
	return (char)((conn * 131 + idx * 31 + off * 7 + (off >> 8)) & 0xff);
}

static void req_send(struct cconn *c, unsigned int max)
{
	unsigned int len = req_len(c->id, c->sent, max);
	uint32_t h[3] = { htonl(c->id), htonl(c->sent), htonl(len) };
	char body[4096];

	out_put(&c->out, (char *)h, HDR);
	for (size_t off = HDR; off < len;) {
		size_t n = len - off < sizeof(body) ? len - off : sizeof(body);

		for (size_t i = 0; i < n; i++)
			body[i] = req_byte(c->id, c->sent, off + i);
		out_put(&c->out, body, n);
		off += n;
	}
	c->sent++;
}

/* Checks @n echoed bytes of @c; returns the requests they completed. */
static unsigned int check_echo(struct cconn *c, const char *p, size_t n, unsigned int max)
{
	unsigned int done = 0;

	for (size_t i = 0; i < n; i++) {
		if (!c->cur_len)
			c->cur_len = req_len(c->id, c->answered, max);
		if (c->got < HDR) {
			c->hdr[c->got] = p[i];
			if (c->got == HDR - 1) {
				uint32_t h[3];

				memcpy(h, c->hdr, HDR);
				if (ntohl(h[0]) != (uint32_t)c->id || ntohl(h[1]) != c->answered ||
				    ntohl(h[2]) != c->cur_len)
					errno = 0, die("conn %d: request %u: echoed header %u/%u/%u, want %d/%u/%u",
					    c->id, c->answered, ntohl(h[0]), ntohl(h[1]),
					    ntohl(h[2]), c->id, c->answered, c->cur_len);
			}
		} else if (p[i] != req_byte(c->id, c->answered, c->got)) {
			errno = 0, die("conn %d: request %u: byte %zu differs", c->id, c->answered, c->got);
		}
		if (++c->got == c->cur_len) {
			c->answered++;
			c->got = 0;
			c->cur_len = 0;
			done++;
		}
	}
	return done;
}

static int client(const char *host, int port, int conns, unsigned int reqs,
		  unsigned int depth, unsigned int max)
{
	struct sockaddr_storage ss;
	struct epoll_event ev, evs[64];
	struct cconn *cs = calloc(conns, sizeof(*cs));
	unsigned long long bytes = 0;
	uint64_t t0 = now_ms(), max_gap = 0;
	int ep = epoll_create1(0), left = conns;
	static char buf[RBUF];
	socklen_t len;

	addr_of(host, port, &ss, &len);
	for (int i = 0; i < conns; i++) {
		struct cconn *c = &cs[i];

		c->id = i;
		c->fd = tcp_socket(ss.ss_family);
		nonblock(c->fd);
		if (connect(c->fd, (struct sockaddr *)&ss, len) && errno != EINPROGRESS)
			die("connect %s %d", host, port);
		ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
		ev.data.ptr = c;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev))
			die("epoll_ctl");
		c->last = now_ms();
		while (!go_file && c->sent < reqs && c->sent - c->answered < depth)
			req_send(c, max);
	}
	if (go_file) {
		for (int i = 0; access(go_file, F_OK); i++) {
			if (i == 60000)
				errno = 0, die("--go: %s never appeared", go_file);
			usleep(10000);
		}
		for (int i = 0; i < conns; i++) {
			struct cconn *c = &cs[i];

			while (c->sent < reqs && c->sent - c->answered < depth)
				req_send(c, max);
			if (out_flush(c->fd, &c->out))
				die("conn %d: send", c->id);
			c->last = now_ms();
		}
		t0 = now_ms();
	}
	while (left) {
		int n = epoll_wait(ep, evs, 64, 200);
		uint64_t now = now_ms();

		if (n < 0 && errno != EINTR)
			die("epoll_wait");
		for (int i = 0; i < n; i++) {
			struct cconn *c = evs[i].data.ptr;
			ssize_t r;

			if (c->fd < 0)
				continue;
			if (evs[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLERR | EPOLLHUP)) {
				do {
					r = recv(c->fd, buf, sizeof(buf), 0);
					if (r > 0) {
						unsigned int k = check_echo(c, buf, r, max);

						bytes += r;
						if (now - c->last > max_gap)
							max_gap = now - c->last;
						c->last = now;
						while (k-- && c->sent < reqs)
							req_send(c, max);
					} else if (r == 0) {
						errno = 0, die("conn %d: EOF after %u of %u answers", c->id,
						    c->answered, reqs);
					} else if (errno != EAGAIN) {
						die("conn %d: recv", c->id);
					}
				} while (r == (ssize_t)sizeof(buf));
			}
			if (out_flush(c->fd, &c->out))
				die("conn %d: send", c->id);
			if (c->answered == reqs) {
				/* all answered: the server sees EOF and counts it */
				close(c->fd);
				c->fd = -1;
				left--;
			}
		}
		for (int i = 0; i < conns; i++) {
			struct cconn *c = &cs[i];

			if (c->fd >= 0 && now - c->last > (uint64_t)stall_ms)
				errno = 0, die("conn %d stalled: no progress for %llu ms with %u requests unanswered (%u of %u answered, %zu bytes unsent)",
				    i, (unsigned long long)(now - c->last), c->sent - c->answered,
				    c->answered, reqs, c->out.len);
		}
	}
	printf("{\"role\": \"client\", \"conns\": %d, \"requests\": %llu, \"bytes\": %llu, \"seconds\": %.3f, \"max_gap_ms\": %llu}\n",
	       conns, (unsigned long long)conns * reqs, bytes, (now_ms() - t0) / 1000.0,
	       (unsigned long long)max_gap);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: evloop server [--ulp] [--delay-ms MS] ADDR PORT CONNS\n"
			"       evloop client [--ulp] [--stall-ms MS] [--go FILE] ADDR PORT CONNS REQUESTS DEPTH MAXSIZE\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int i = 2;

	if (argc < 2)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (; i < argc && !strncmp(argv[i], "--", 2); i++) {
		if (!strcmp(argv[i], "--ulp"))
			use_ulp = 1;
		else if (!strcmp(argv[i], "--delay-ms") && i + 1 < argc)
			delay_ms = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--stall-ms") && i + 1 < argc)
			stall_ms = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--go") && i + 1 < argc)
			go_file = argv[++i];
		else
			usage();
	}
	if (!strcmp(argv[1], "server") && argc - i == 3)
		return server(argv[i], atoi(argv[i + 1]), atoi(argv[i + 2]));
	if (!strcmp(argv[1], "client") && argc - i == 6) {
		unsigned int depth = atoi(argv[i + 4]), max = atoi(argv[i + 5]);

		if (!depth || max < HDR)
			usage();
		return client(argv[i], atoi(argv[i + 1]), atoi(argv[i + 2]), atoi(argv[i + 3]),
			      depth, max);
	}
	usage();
	return 2;
}
