// SPDX-License-Identifier: GPL-2.0
/* xfer: a verified transfer between two hosts, optionally over ntbsmc (TCP_ULP). */

/*
 *   xfer server ADDR PORT [--ulp|--proto] [--smc] [--conns N] [--allow-reset] [--hold FILE]
 *                         [--read-after FILE] [--pace-ms MS] [--pace-until FILE] [--until FILE]
 *   xfer client ADDR PORT [--ulp|--proto] [--smc] [--bytes N] [--write-size N] [--both]
 *                         [--seed S] [--allow-reset] [--hold FILE]
 *                         [--offset N] [--random-writes] [--munmap-ms MS]
 *                         [--fork-ms MS] [--pace-ms MS] [--pace-until FILE] [--until FILE]
 *
 * The client sends --bytes of pseudo-random data (with --both the server sends as
 * much back at the same time). The data is a function of the seed, the direction
 * and the byte's offset, so the receiver checks every byte where it lands (a lost,
 * repeated or misplaced block is found, not only a wrong one) and returns its
 * verdict to the sender. Each side prints one JSON line per connection:
 *
 *   {"outcome": "ok", "intact": true, "mode": "ntb", "reason": "none", ...}
 *
 * with the connection's mode and fallback reason (getsockopt NTBSMC_INFO;
 * "reason": "no_ulp" where the socket has no ntbsmc ULP), the bytes that crossed
 * NTB, the ports and the time; the client's also says how long its connect()
 * took ("connect_ms": with ntbsmc, the handshake's time too). Exit status 1
 * when any byte was wrong or an error ended a connection; with --allow-reset a
 * reset or timeout of the connection is an outcome ("outcome": "reset", with
 * the connection's mode and reasons), not a failure; a reader that read EOF
 * before the stream's end says where ("early_eof": bytes), whatever came next,
 * for the test to judge (after link loss, a truncation). --hold FILE keeps the connection
 * open after its exchange, with the JSON line already printed, until FILE exists.
 *
 * The sender writes from a buffer N (--offset) bytes past a page boundary, in
 * writes of --write-size bytes or, with --random-writes, of random sizes up to
 * it. --munmap-ms sends everything with one send() from one mapping that another
 * thread unmaps MS milliseconds later: the sender stops at the first error,
 * reports "sent" and ends its direction, so the receiver checks what arrived.
 * --fork-ms likewise sends from one mapping, and another thread forks MS
 * milliseconds later: the child writes over all of its copy of the mapping and
 * exits. The peer must still get the parent's bytes ("fork_during_send" says
 * whether the fork came before send() returned). --pace-ms sleeps MS milliseconds
 * after each write (on either side, for its own direction): a stream that lasts
 * while a test does something else beside it; with --pace-until FILE it sends
 * the rest at full speed once FILE exists (the test's work beside it is done). A receiver reports the longest
 * time it waited for a byte ("max_gap_ms"): a stall that ended is still seen.
 * With --read-after FILE the receiver reads nothing of the stream until FILE
 * exists (a stopped reader: the peer's writes fill the buffers), then reports
 * what ioctl(SIOCINQ) said before its first read ("inq_at_read").
 *
 * --until FILE (client, and the server of a --both stream) streams until FILE
 * exists instead of --bytes: a stream that lasts exactly as long as the test's
 * work beside it, however slow the machine. Each write then goes as a piece,
 * its length (8 bytes) first, and a piece of length 0 ends the stream, so the
 * receiver still tells the stream's end from a truncation ("early_eof") and
 * every byte's offset from its data; "bytes" is then what was sent.
 *
 * --ulp sets the ntbsmc ULP by setsockopt(TCP_ULP); --proto makes the socket with
 * socket(..., IPPROTO_NTBSMC) instead ("so_protocol": what SO_PROTOCOL says then).
 *
 * Sockets time out after 120 s, the client retries a refused connect for 30 s:
 * nothing waits without a bound.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/ntbsmc.h>
#include <linux/sockios.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "names.h"

#ifndef TCP_ULP
#define TCP_ULP 31
#endif
#ifndef AF_SMC
#define AF_SMC 43
#endif
#define SMCPROTO_SMC	0
#define SMCPROTO_SMC6	1

#define IO_TIMEOUT_S	120
#define CONNECT_RETRY_S	30
/* a held connection waits for the test; under load its steps take minutes */
#define HOLD_MAX_S	600
#define CHUNK		(1 << 20)
#define NO_ERROR	UINT64_MAX
#define OPEN_ENDED	UINT64_MAX	/* the header's bytes of a --until stream */

static struct {
	bool server, ulp, proto, smc, both, allow_reset, random_writes;
	const char *addr, *port, *seed, *hold, *pace_until, *until, *read_after;
	uint64_t bytes, offset, munmap_ms, fork_ms, pace_ms;
	size_t write_size;
	unsigned long conns;
} opt = {
	.bytes = 1 << 20,
	.write_size = 65536,
	.conns = 1,
	.seed = "ntbsmc",
};

static double connected_at;	/* when the current connection was established */
static double connect_secs;	/* client: how long its connect() took (handshake included) */
static double max_gap;		/* receiver: the longest wait for a byte, seconds */
static int inq_at_read = -1;	/* receiver, --read-after: SIOCINQ then */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Both directions' threads may fail at once. The first to get here reports and
 * ends the process; the lock is never released, so a second one waits for the
 * end. _exit(): exit() would flush stdout without its lock, and with it a line
 * another thread is halfway through.
 */
static pthread_mutex_t end_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * A connection-ending error: with --allow-reset a reset or timeout is reported as
 * the outcome (exit 0), anything else fails.
 */
/*
 * A clean EOF before the stream's end: where (bytes received), else UINT64_MAX.
 * With the reset that usually follows (the verdict cannot be sent), the outcome
 * is "reset" and this says the reader was told EOF first: a truncation it would
 * have taken for success, had it not known the length.
 */
static volatile uint64_t eof_at = UINT64_MAX;
static int cur_fd = -1;		/* the connection's socket, for conn_error()'s info */

static void print_info(int fd);

static void __attribute__((noreturn)) conn_error(const char *what, int err)
{
	bool reset = err == ECONNRESET || err == EPIPE || err == ETIMEDOUT ||
		     err == EAGAIN || err == ECONNABORTED;
	double secs = connected_at ? now() - connected_at : 0.0;

	pthread_mutex_lock(&end_lock);
	printf("{\"outcome\": \"%s\", \"error\": \"%s\", \"during\": \"%s\", \"secs\": %.3f",
	       reset ? "reset" : "error", strerrorname_np(err) ?: "?", what, secs);
	if (eof_at != UINT64_MAX)
		printf(", \"early_eof\": %" PRIu64, eof_at);
	if (cur_fd >= 0) {
		printf(", ");
		print_info(cur_fd);
	}
	printf("}\n");
	fflush(stdout);
	_exit(opt.allow_reset && reset ? 0 : 1);
}

static void __attribute__((noreturn)) die(const char *what)
{
	int err = errno;

	pthread_mutex_lock(&end_lock);
	fprintf(stderr, "xfer: %s: %s\n", what, strerror(err));
	fflush(stdout);
	_exit(1);
}

/* splitmix64: word K of the stream named by SEED. */
static uint64_t word(uint64_t seed, uint64_t k)
{
	uint64_t z = seed + (k + 1) * 0x9e3779b97f4a7c15ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* The LEN stream bytes from offset OFF into BUF (little-endian words). */
static void fill(uint64_t seed, uint64_t off, unsigned char *buf, size_t len)
{
	while (len) {
		uint64_t w = word(seed, off / 8);
		unsigned int i = off % 8;

		for (; i < 8 && len; i++, len--, off++)
			*buf++ = w >> (8 * i);
	}
}

/* FNV-1a of the seed text and the sender's role: one stream per direction. */
static uint64_t stream_seed(const char *seed, const char *role)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	const char *s;

	for (s = seed; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	for (s = role; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

static void send_all(int fd, const void *buf, size_t len, const char *what)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			conn_error(what, errno);
		}
		p += n;
		len -= n;
	}
}

/* Reads exactly LEN bytes; false on EOF before that. */
static bool recv_all(int fd, void *buf, size_t len, const char *what)
{
	char *p = buf;

	while (len) {
		ssize_t n = recv(fd, p, len, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			conn_error(what, errno);
		}
		if (!n)
			return false;
		p += n;
		len -= n;
	}
	return true;
}

/* The header the client opens a connection with; sizes in network order. */
struct header {
	uint64_t bytes;
	uint8_t both;
	char seed[23];
} __attribute__((packed));

/* What a receiver returns: how many bytes arrived, where the first wrong one was. */
struct verdict {
	uint64_t received;
	uint64_t first_bad;
} __attribute__((packed));

struct sender {
	int fd;
	uint64_t seed, bytes, sent;
	void *map;
	size_t map_len;
	double forked_at, send_end;
};

static void *unmapper(void *arg)
{
	struct sender *s = arg;

	usleep(opt.munmap_ms * 1000);
	munmap(s->map, s->map_len);
	return NULL;
}

/* The child scribbles over its copy of everything the parent is sending. */
static void *forker(void *arg)
{
	struct sender *s = arg;
	int status;
	pid_t pid;

	usleep(opt.fork_ms * 1000);
	s->forked_at = now();
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		memset(s->map, 0x5a, s->map_len);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		die("child of fork");
	return NULL;
}

/*
 * --munmap-ms, --fork-ms: one send() of everything from a mapping that another
 * thread unmaps or forks meanwhile.
 */
static void send_mapped(struct sender *s)
{
	pthread_t th;
	ssize_t n;

	s->map_len = opt.offset + s->bytes;
	s->map = mmap(NULL, s->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		      -1, 0);
	if (s->map == MAP_FAILED)
		die("mmap");
	fill(s->seed, 0, (unsigned char *)s->map + opt.offset, s->bytes);
	if (pthread_create(&th, NULL, opt.munmap_ms ? unmapper : forker, s))
		die("pthread_create");
	while (s->sent < s->bytes) {
		n = send(s->fd, (unsigned char *)s->map + opt.offset + s->sent,
			 s->bytes - s->sent, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		s->sent += n;
	}
	s->send_end = now();
	pthread_join(th, NULL);
	shutdown(s->fd, SHUT_WR);	/* the receiver checks what came */
}

static void *send_stream(void *arg)
{
	struct sender *s = arg;
	unsigned char *base = aligned_alloc(4096, (opt.offset + opt.write_size + 4095) & ~4095UL);
	unsigned char *buf = base + opt.offset;
	uint32_t r = 2463534242u;
	uint64_t off, pace = opt.pace_ms;

	if (!base)
		die("malloc");
	if (opt.munmap_ms || opt.fork_ms) {
		free(base);
		send_mapped(s);
		return NULL;
	}
	for (off = 0; off < s->bytes; ) {
		size_t n = s->bytes - off < opt.write_size ? s->bytes - off : opt.write_size;

		if (opt.random_writes) {
			r ^= r << 13, r ^= r >> 17, r ^= r << 5;	/* xorshift32 */
			n = 1 + r % n;
		}
		if (s->bytes == OPEN_ENDED) {
			uint64_t len = htobe64(access(opt.until, F_OK) ? n : 0);

			send_all(s->fd, &len, sizeof(len), "send piece");
			if (!len)
				break;
		}
		fill(s->seed, off, buf, n);
		send_all(s->fd, buf, n, "send");
		off += n;
		if (pace && opt.pace_until && !access(opt.pace_until, F_OK))
			pace = 0;
		if (pace)
			nanosleep(&(struct timespec){ pace / 1000, pace % 1000 * 1000000 }, NULL);
	}
	s->sent = off;
	free(base);
	return NULL;
}

static void wait_release(const char *path);

/*
 * Receives BYTES of the stream SEED, checking each byte; returns the verdict.
 * An OPEN_ENDED stream comes in pieces, each after its length, up to one of 0.
 */
static struct verdict recv_stream(int fd, uint64_t seed, uint64_t bytes)
{
	unsigned char *buf = malloc(CHUNK), *want = malloc(CHUNK);
	struct verdict v = { 0, NO_ERROR };
	uint64_t end = bytes;
	double last;

	max_gap = 0;
	if (!buf || !want)
		die("malloc");
	if (opt.read_after) {
		wait_release(opt.read_after);
		if (ioctl(fd, SIOCINQ, &inq_at_read))
			die("ioctl SIOCINQ");
	}
	last = now();
	if (bytes == OPEN_ENDED)
		end = 0;
	for (;;) {
		size_t len;
		ssize_t n;
		double t;

		if (v.received == end) {
			uint64_t piece;

			if (bytes != OPEN_ENDED)
				break;
			if (!recv_all(fd, &piece, sizeof(piece), "recv piece")) {
				eof_at = v.received;
				break;
			}
			piece = be64toh(piece);
			if (!piece)
				break;
			if (piece > OPEN_ENDED - end) {
				v.first_bad = v.received;	/* no length a sender sends */
				break;
			}
			end += piece;
		}
		len = end - v.received < CHUNK ? end - v.received : CHUNK;
		n = recv(fd, buf, len, 0);
		t = now();

		if (t - last > max_gap)
			max_gap = t - last;
		last = t;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			conn_error("recv", errno);
		if (!n) {
			eof_at = v.received;
			break;
		}
		if (v.first_bad == NO_ERROR) {
			fill(seed, v.received, want, n);
			if (memcmp(buf, want, n)) {
				ssize_t i = 0;

				while (buf[i] == want[i])
					i++;
				v.first_bad = v.received + i;
			}
		}
		v.received += n;
	}
	free(buf);
	free(want);
	return v;
}

static int so_protocol(int fd)
{
	socklen_t len = sizeof(int);
	int v;

	return getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &v, &len) ? -errno : v;
}

static void print_info(int fd)
{
	struct ntbsmc_info info;
	socklen_t len = sizeof(info);
	char b1[32], b2[32], b3[32];

	if (getsockopt(fd, SOL_NTBSMC, NTBSMC_INFO, &info, &len)) {
		printf("\"mode\": \"tcp\", \"reason\": \"no_ulp\"");
		return;
	}
	printf("\"mode\": \"%s\", \"reason\": \"%s\", \"peer_reason\": \"%s\", \"lgr\": %u, "
	       "\"ntb_tx_bytes\": %llu, \"ntb_rx_bytes\": %llu, \"rmb_size\": %u, "
	       "\"peer_rmb_size\": %u, \"ntb_cpu_bytes\": %llu, \"ntb_dma_bytes\": %llu, "
	       "\"ntb_zc_bytes\": %llu, \"version\": %u, \"can_switch\": %s, "
	       "\"failed_over\": %s",
	       mode_name(info.mode, b1, sizeof(b1)), reason_name(info.reason, b2, sizeof(b2)),
	       reason_name(info.peer_reason, b3, sizeof(b3)), info.lgr_id,
	       (unsigned long long)info.tx_bytes, (unsigned long long)info.rx_bytes,
	       info.rmb_size, info.peer_rmb_size, (unsigned long long)info.cpu_bytes,
	       (unsigned long long)info.dma_bytes, (unsigned long long)info.zc_bytes,
	       info.version, info.flags & NTBSMC_INFO_F_SWITCH ? "true" : "false",
	       info.flags & NTBSMC_INFO_F_FAILED_OVER ? "true" : "false");
}

static unsigned int port_of(const struct sockaddr_storage *ss)
{
	return ntohs(ss->ss_family == AF_INET6 ? ((struct sockaddr_in6 *)ss)->sin6_port :
						 ((struct sockaddr_in *)ss)->sin_port);
}

static void wait_release(const char *path)
{
	double end = now() + HOLD_MAX_S;
	struct stat st;

	while (stat(path, &st)) {
		if (now() > end) {
			fprintf(stderr, "xfer: %s never appeared\n", path);
			exit(1);
		}
		usleep(50000);
	}
}

/* Ends our direction and waits for the peer's end; false if anything else came. */
static bool finish(int fd)
{
	bool ok = true;
	ssize_t n;
	char c;

	shutdown(fd, SHUT_WR);
	while ((n = recv(fd, &c, 1, 0)) != 0) {
		if (n < 0 && errno != EINTR)
			conn_error("recv end", errno);
		if (n > 0)
			ok = false;	/* nothing may follow the verdicts */
	}
	return ok;
}

/* One connection, client or server side; prints its line; true if intact. */
static bool session(int fd, const char *seed_text)
{
	const char *me = opt.server ? "server" : "client";
	const char *peer = opt.server ? "client" : "server";
	struct sockaddr_storage la, pa;
	socklen_t la_len = sizeof(la), pa_len = sizeof(pa);
	struct header h = { 0 };
	struct verdict got = { 0, NO_ERROR }, back = { 0, NO_ERROR };
	struct sender snd = { .fd = fd };
	pthread_t th;
	bool sending, receiving, ok = true;
	char seed[sizeof(h.seed) + 1];
	double t0, secs;

	if (opt.server) {
		if (!recv_all(fd, &h, sizeof(h), "recv header"))
			conn_error("recv header", ECONNRESET);
		h.bytes = be64toh(h.bytes);
		memcpy(seed, h.seed, sizeof(h.seed));
		seed[sizeof(h.seed)] = 0;
		if (h.bytes == OPEN_ENDED && h.both && !opt.until) {
			fprintf(stderr, "xfer: the client streams until a file: --until FILE\n");
			exit(2);
		}
	} else {
		if (opt.until)
			opt.bytes = OPEN_ENDED;
		h.bytes = htobe64(opt.bytes);
		h.both = opt.both;
		memcpy(h.seed, seed_text, strnlen(seed_text, sizeof(h.seed)));
		send_all(fd, &h, sizeof(h), "send header");
		h.bytes = opt.bytes;
		snprintf(seed, sizeof(seed), "%s", seed_text);
	}
	t0 = now();
	sending = !opt.server || h.both;
	receiving = opt.server || h.both;
	snd.bytes = h.bytes;
	snd.seed = stream_seed(seed, me);
	if (sending && pthread_create(&th, NULL, send_stream, &snd))
		die("pthread_create");
	if (receiving) {
		got = recv_stream(fd, stream_seed(seed, peer), h.bytes);
		ok &= (h.bytes == OPEN_ENDED ? eof_at == UINT64_MAX : got.received == h.bytes) &&
		      got.first_bad == NO_ERROR;
	}
	/* One writer per direction: the verdict follows our own data. */
	if (sending)
		pthread_join(th, NULL);
	if (receiving) {
		struct verdict v = { htobe64(got.received), htobe64(got.first_bad) };

		send_all(fd, &v, sizeof(v), "send verdict");
	}
	if (sending) {
		if (recv_all(fd, &back, sizeof(back), "recv verdict")) {
			back.received = be64toh(back.received);
			back.first_bad = be64toh(back.first_bad);
			ok &= back.received == (h.bytes == OPEN_ENDED ? snd.sent : h.bytes) &&
			      back.first_bad == NO_ERROR;
		} else {
			ok = false;
		}
	}
	getsockname(fd, (struct sockaddr *)&la, &la_len);
	getpeername(fd, (struct sockaddr *)&pa, &pa_len);

	if (!opt.hold)
		ok &= finish(fd);
	secs = now() - t0;
	printf("{\"outcome\": \"ok\", \"intact\": %s, ", ok ? "true" : "false");
	if (receiving)
		printf("\"received\": %" PRIu64 ", \"max_gap_ms\": %.0f, ", got.received,
		       max_gap * 1000);
	if (got.first_bad != NO_ERROR)
		printf("\"first_bad\": %" PRIu64 ", ", got.first_bad);
	if (eof_at != UINT64_MAX)
		printf("\"early_eof\": %" PRIu64 ", ", eof_at);
	if (inq_at_read >= 0)
		printf("\"inq_at_read\": %d, ", inq_at_read);
	if (sending && back.first_bad != NO_ERROR)
		printf("\"peer_first_bad\": %" PRIu64 ", ", back.first_bad);
	if (sending && (opt.munmap_ms || opt.fork_ms))
		printf("\"sent\": %" PRIu64 ", \"peer_received\": %" PRIu64 ", ", snd.sent,
		       back.received);
	if (sending && opt.fork_ms)
		printf("\"fork_during_send\": %s, ",
		       snd.forked_at < snd.send_end ? "true" : "false");
	if (!opt.server)
		printf("\"connect_ms\": %.1f, ", connect_secs * 1000);
	if (opt.proto)
		printf("\"so_protocol\": %d, ", so_protocol(fd));
	if (h.bytes == OPEN_ENDED)
		h.bytes = sending ? snd.sent : got.received;
	print_info(fd);
	printf(", \"role\": \"%s\", \"bytes\": %" PRIu64 ", \"local_port\": %u, "
	       "\"peer_port\": %u, \"secs\": %.4f, \"mb_per_s\": %.1f}\n",
	       me, h.bytes, port_of(&la), port_of(&pa), secs,
	       h.bytes * (h.both ? 2.0 : 1.0) / (secs > 0 ? secs : 1e-9) / 1e6);
	fflush(stdout);
	if (opt.hold) {
		wait_release(opt.hold);
		ok &= finish(fd);
	}
	return ok;
}

static int new_socket(int family)
{
	struct timeval tv = { .tv_sec = IO_TIMEOUT_S };
	int fd, one = 1;

	if (opt.smc)
		fd = socket(AF_SMC, SOCK_STREAM,
			    family == AF_INET6 ? SMCPROTO_SMC6 : SMCPROTO_SMC);
	else
		fd = socket(family, SOCK_STREAM, opt.proto ? IPPROTO_NTBSMC : 0);
	if (fd < 0)
		die(opt.smc ? "socket(AF_SMC)" : opt.proto ? "socket(IPPROTO_NTBSMC)" : "socket");
	if (opt.ulp && setsockopt(fd, SOL_TCP, TCP_ULP, "ntbsmc", sizeof("ntbsmc")))
		die("setsockopt TCP_ULP ntbsmc");
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)))
		die("setsockopt");
	return fd;
}

static bool parse_u64(const char *s, uint64_t max, uint64_t *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return !errno && !*end && *v <= max;
}

static void __attribute__((noreturn)) usage(void)
{
	fprintf(stderr,
		"usage: xfer server ADDR PORT [--ulp|--proto] [--smc] [--conns N] [--allow-reset]\n"
		"                             [--hold FILE] [--read-after FILE]\n"
		"                             [--pace-ms MS] [--pace-until FILE] [--until FILE]\n"
		"       xfer client ADDR PORT [--ulp|--proto] [--smc] [--bytes N] [--write-size N] [--both]\n"
		"                             [--seed S] [--allow-reset] [--hold FILE]\n"
		"                             [--offset N] [--random-writes] [--munmap-ms MS]\n"
		"                             [--fork-ms MS] [--pace-ms MS] [--pace-until FILE]\n"
		"                             [--until FILE]\n");
	exit(2);
}

static void parse_args(int argc, char **argv)
{
	uint64_t v;
	int i;

	if (argc < 4 || (strcmp(argv[1], "server") && strcmp(argv[1], "client")))
		usage();
	opt.server = !strcmp(argv[1], "server");
	opt.addr = argv[2];
	opt.port = argv[3];
	for (i = 4; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--ulp")) {
			opt.ulp = true;
		} else if (!strcmp(a, "--proto")) {
			opt.proto = true;
		} else if (!strcmp(a, "--smc")) {
			opt.smc = true;
		} else if (!strcmp(a, "--both")) {
			opt.both = true;
		} else if (!strcmp(a, "--allow-reset")) {
			opt.allow_reset = true;
		} else if (!strcmp(a, "--random-writes")) {
			opt.random_writes = true;
		} else if (!val) {
			usage();
		} else if (!strcmp(a, "--bytes") && parse_u64(val, UINT64_MAX - 1, &v)) {
			opt.bytes = v;
			i++;
		} else if (!strcmp(a, "--write-size") && parse_u64(val, 1 << 26, &v) && v) {
			opt.write_size = v;
			i++;
		} else if (!strcmp(a, "--offset") && parse_u64(val, 1 << 20, &v)) {
			opt.offset = v;
			i++;
		} else if (!strcmp(a, "--munmap-ms") && parse_u64(val, 60000, &v) && v) {
			opt.munmap_ms = v;
			i++;
		} else if (!strcmp(a, "--pace-ms") && parse_u64(val, 10000, &v)) {
			opt.pace_ms = v;
			i++;
		} else if (!strcmp(a, "--fork-ms") && parse_u64(val, 60000, &v) && v) {
			opt.fork_ms = v;
			i++;
		} else if (!strcmp(a, "--conns") && parse_u64(val, 1 << 20, &v) && v) {
			opt.conns = v;
			i++;
		} else if (!strcmp(a, "--seed") && strlen(val) < 20) {
			opt.seed = val;
			i++;
		} else if (!strcmp(a, "--until")) {
			opt.until = val;
			i++;
		} else if (!strcmp(a, "--pace-until")) {
			opt.pace_until = val;
			i++;
		} else if (!strcmp(a, "--hold")) {
			opt.hold = val;
			i++;
		} else if (!strcmp(a, "--read-after")) {
			opt.read_after = val;
			i++;
		} else {
			usage();
		}
	}
	if (opt.munmap_ms && opt.fork_ms)
		usage();
	if (opt.until && (opt.munmap_ms || opt.fork_ms))
		usage();
}

int main(int argc, char **argv)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST },
			*ai;
	unsigned long i;
	bool ok = true;
	int fd, err;

	parse_args(argc, argv);
	signal(SIGPIPE, SIG_IGN);
	err = getaddrinfo(opt.addr, opt.port, &hints, &ai);
	if (err) {
		fprintf(stderr, "xfer: %s port %s: %s\n", opt.addr, opt.port, gai_strerror(err));
		return 2;
	}
	if (opt.server) {
		struct pollfd p;
		int lfd = new_socket(ai->ai_family);

		if (bind(lfd, ai->ai_addr, ai->ai_addrlen) || listen(lfd, 128))
			die("bind/listen");
		p.fd = lfd;
		p.events = POLLIN;
		for (i = 0; i < opt.conns; i++) {
			err = poll(&p, 1, IO_TIMEOUT_S * 1000);
			if (err <= 0) {
				errno = err ? errno : ETIMEDOUT;
				die("accept");
			}
			fd = accept(lfd, NULL, NULL);
			if (fd < 0)
				conn_error("accept", errno);
			connected_at = now();
			cur_fd = fd;
			ok &= session(fd, "");
			close(fd);
			connected_at = 0;
			cur_fd = -1;
		}
		close(lfd);
	} else {
		for (i = 0; i < opt.conns; i++) {
			double end = now() + CONNECT_RETRY_S;
			char seed[32];

			/*
			 * A fresh socket per attempt: after a refused connect the same
			 * socket cannot connect again.
			 */
			for (;;) {
				double t = now();

				fd = new_socket(ai->ai_family);
				if (!connect(fd, ai->ai_addr, ai->ai_addrlen)) {
					connect_secs = now() - t;
					break;
				}
				err = errno;
				close(fd);
				if (err != ECONNREFUSED || now() > end)
					conn_error("connect", err);
				usleep(100000);
			}
			connected_at = now();
			cur_fd = fd;
			snprintf(seed, sizeof(seed), "%s%lu", opt.seed, i);
			ok &= session(fd, seed);
			close(fd);
			connected_at = 0;
			cur_fd = -1;
		}
	}
	freeaddrinfo(ai);
	return ok ? 0 : 1;
}
