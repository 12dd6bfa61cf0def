// SPDX-License-Identifier: GPL-2.0
/* ivshmem server for the VM selftests: shared memory + doorbells for ivshmem-doorbell. */

/*
 * Debian's QEMU ships no ivshmem-server, so the VM harness uses this one. QEMU
 * attaches with
 *
 *   -chardev socket,path=SOCK,id=x -device ivshmem-doorbell,chardev=x,vectors=N
 *
 * Protocol (QEMU docs/specs/ivshmem-spec.rst): every message is a little-endian
 * int64 on a UNIX stream socket, optionally carrying one fd (SCM_RIGHTS). A new
 * client gets the protocol version (0), its peer id, -1 with the shared memory fd,
 * then for every other peer that peer's id N times with one of its N eventfds, then
 * its own id N times with its own eventfds. The other peers get the newcomer's id
 * N times with its eventfds. When a client goes away its eventfds are closed and
 * the remaining peers get its id without an fd.
 *
 * The start of the shared memory holds the ntbsmc fabric header (little endian),
 * written once at startup, magic last:
 *
 *   0  u32 magic "NTBM"   4  u32 layout (1)   8  u64 shm size
 *   16 u8 fabric id[16] (random)   32 u32 max peers   36 u32 vectors
 *
 * Single threaded, one poll(2) loop, never blocks on a client: a client whose
 * socket cannot take a message is dropped as if it had disconnected. A newcomer
 * gets the lowest free id; ids of clients that already hung up are freed first,
 * so a restarted QEMU gets its old id back.
 *
 * Like an NTB switch, which reports a port's link down when the host behind it
 * goes away, the server marks a departed client's control block absent: for ids
 * 0 and 1 (the two ends of an ntb_hw_ivshmem link) it clears "present" and
 * "link_en" at CTRL_OFFSET + id * CTRL_SIZE, bumps that block's "event" counter
 * and rings vector 0 of every remaining client. Offsets are struct side_ctrl's in
 * selftests/fabric/ntb_hw_ivshmem.c. The departed client is gone (its socket
 * closed), so nobody else writes that block; a restarted one rewrites it.
 *
 * QEMU 7.2 caveat (hw/misc/ivshmem.c): on "peer N left" close_peer_eventfds()
 * frees the peer's eventfd array, and a later "peer N joined" writes into the
 * freed array: a QEMU that sees a peer leave and come back under the same id
 * corrupts its heap. Restart QEMUs together, not one while the other runs on.
 * Guest reboots (system_reset) keep the connection and are not affected.
 */

#define _GNU_SOURCE
#include <ctype.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define PROG			"ivshmem-server"

#define IVSHMEM_PROTOCOL	0
#define MAX_VECTORS		64
#define MAX_PEERS_LIMIT		1024
#define DEFAULT_PEERS		2
#define MIN_SHM_SIZE		(1ULL << 20)
#define LISTEN_BACKLOG		16
/* generous upper bound of the socket buffer cost of one small message with an fd */
#define MSG_COST		1024

/* ntbsmc fabric header */
#define HDR_MAP_SIZE		4096
#define HDR_MAGIC		0x4e54424dU	/* "NTBM" */
#define HDR_LAYOUT		1U
#define HDR_ID_LEN		16
#define HDR_OFF_MAGIC		0
#define HDR_OFF_LAYOUT		4
#define HDR_OFF_SIZE		8
#define HDR_OFF_ID		16
#define HDR_OFF_PEERS		32
#define HDR_OFF_VECTORS		36

/* side_ctrl blocks of the two link ends (selftests/fabric/ntb_hw_ivshmem.c) */
#define CTRL_OFFSET		0x1000
#define CTRL_SIZE		0x1000
#define CTRL_OFF_PRESENT	0
#define CTRL_OFF_LINK_EN	4
#define CTRL_OFF_EVENT		16

#define EXIT_USAGE		2

#define __printf(a, b)		__attribute__((format(printf, a, b)))

struct peer {
	int sock;			/* -1: id is free */
	bool dead;			/* dropped, reap_dead() frees it */
	int err;			/* why it was dropped: 0 = hung up, else errno */
	int efd[MAX_VECTORS];		/* -1 when not open */
};

struct server {
	const char *sock_path;
	const char *shm_path;
	const char *pid_path;
	uint64_t shm_size;
	unsigned int vectors;
	unsigned int max_peers;
	int sndbuf;			/* socket send buffer wanted per client */

	int sig_fd;
	int shm_fd;
	uint8_t *ctrl;			/* the link ends' control blocks, mapped */
	int listen_fd;
	bool accept_paused;		/* out of fds/memory: stop accepting for a while */

	/* what we created, so that cleanup never unlinks a successor's file */
	bool sock_made, shm_made, pid_made;
	struct stat sock_st, shm_st, pid_st;

	struct peer *peers;		/* indexed by peer id */
	struct pollfd *pfd;		/* sig_fd, listen_fd, then the connected peers */
	unsigned int *pfd_id;		/* peer id of pfd[i], i >= 2 */
};

static bool verbose;

/* One line, one write(2): lines stay whole when the harness shares our stderr. */
static void vlog(const char *fmt, va_list ap)
{
	char *msg;

	if (vasprintf(&msg, fmt, ap) < 0) {
		fputs(PROG ": out of memory while logging\n", stderr);
		return;
	}
	fprintf(stderr, PROG ": %s\n", msg);
	free(msg);
}

static void __printf(1, 2) pr_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}

static void __printf(1, 2) pr_info(const char *fmt, ...)
{
	va_list ap;

	if (!verbose)
		return;
	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}

static void print_usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " -S SOCKET_PATH -m SHM_PATH -l SIZE -n VECTORS [-p MAX_PEERS]\n"
		"                      [-F PIDFILE] [-v]\n"
		"  -S PATH  UNIX socket to listen on (a stale socket there is replaced)\n"
		"  -m PATH  shared memory file to create, e.g. /dev/shm/ntbsmc (removed on exit)\n"
		"  -l SIZE  shared memory size: a power of two >= 1M, suffixes K, M, G\n"
		"  -n N     vectors (eventfds) per peer, 1..%d; must match QEMU's vectors=N\n"
		"  -p N     maximum number of peers, 1..%d (default %d)\n"
		"  -F PATH  write the pid to PATH once the socket is listening\n"
		"  -v       log connects and disconnects to stderr\n"
		"  -h       show this help\n",
		MAX_VECTORS, MAX_PEERS_LIMIT, DEFAULT_PEERS);
}

static int parse_uint(const char *str, unsigned int min, unsigned int max, unsigned int *out)
{
	unsigned long val;
	char *end;

	if (!isdigit((unsigned char)*str))
		return -1;
	errno = 0;
	val = strtoul(str, &end, 10);
	if (errno || *end || val < min || val > max)
		return -1;
	*out = (unsigned int)val;
	return 0;
}

/* decimal bytes with an optional K/M/G suffix; a power of two >= 1M */
static int parse_size(const char *str, uint64_t *out)
{
	unsigned long long val;
	unsigned int shift = 0;
	char *end;

	if (!isdigit((unsigned char)*str))
		return -1;
	errno = 0;
	val = strtoull(str, &end, 10);
	if (errno)
		return -1;
	switch (*end) {
	case 'k': case 'K':
		shift = 10;
		break;
	case 'm': case 'M':
		shift = 20;
		break;
	case 'g': case 'G':
		shift = 30;
		break;
	case '\0':
		break;
	default:
		return -1;
	}
	if (shift && *++end)
		return -1;
	if (val > (unsigned long long)INT64_MAX >> shift)
		return -1;
	val <<= shift;
	if (val < MIN_SHM_SIZE || (val & (val - 1)))
		return -1;
	*out = val;
	return 0;
}

/* Sends one little-endian int64, with @fd attached unless it is -1. Returns 0 or -errno. */
static int send_msg(int sock, int64_t val, int fd)
{
	uint64_t le = htole64((uint64_t)val);
	struct iovec iov = { .iov_base = &le, .iov_len = sizeof(le) };
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cmsg;
	ssize_t ret;

	if (fd >= 0) {
		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.buf;
		msg.msg_controllen = sizeof(ctl.buf);
		cmsg = CMSG_FIRSTHDR(&msg);
		cmsg->cmsg_level = SOL_SOCKET;
		cmsg->cmsg_type = SCM_RIGHTS;
		cmsg->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
	}
	do {
		ret = sendmsg(sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
	} while (ret < 0 && errno == EINTR);
	if (ret < 0)
		return -errno;
	/* a partial message would desynchronize the stream: treat it as fatal */
	return ret == sizeof(le) ? 0 : -EIO;
}

static void free_peer(struct server *s, struct peer *p)
{
	unsigned int v;

	for (v = 0; v < MAX_VECTORS; v++) {
		if (p->efd[v] >= 0)
			close(p->efd[v]);
		p->efd[v] = -1;
	}
	if (p->sock >= 0)
		close(p->sock);
	p->sock = -1;
	p->dead = false;
	p->err = 0;
	/* a descriptor came free: worth trying accept() again */
	s->accept_paused = false;
}

static void mark_dead(struct peer *p, int err)
{
	if (!p->dead) {
		p->dead = true;
		p->err = err;
	}
}

static void log_drop(unsigned int id, int err)
{
	if (!err)
		pr_info("peer %u disconnected", id);
	else if (err == EPIPE || err == ECONNRESET)
		pr_info("peer %u disconnected (%s)", id, strerror(err));
	else if (err == EAGAIN || err == EWOULDBLOCK)
		pr_err("peer %u dropped: its socket is full (client not reading)", id);
	else
		pr_err("peer %u dropped: %s", id, strerror(err));
}

static bool peer_live(const struct peer *p)
{
	return p->sock >= 0 && !p->dead;
}

/*
 * Peer @id left: its end of the link is down. Clears its presence in its control
 * block and rings the others on vector 0, where the driver looks at link events.
 */
static void side_gone(struct server *s, unsigned int id)
{
	uint8_t *c = s->ctrl + CTRL_OFFSET + (size_t)id * CTRL_SIZE;
	const uint64_t one = 1;
	uint32_t ev;
	unsigned int j;

	if (!s->ctrl || id > 1)
		return;
	__atomic_store_n((uint32_t *)(c + CTRL_OFF_LINK_EN), 0, __ATOMIC_RELAXED);
	__atomic_store_n((uint32_t *)(c + CTRL_OFF_PRESENT), 0, __ATOMIC_RELAXED);
	ev = le32toh(__atomic_load_n((uint32_t *)(c + CTRL_OFF_EVENT), __ATOMIC_RELAXED));
	__atomic_store_n((uint32_t *)(c + CTRL_OFF_EVENT), htole32(ev + 1), __ATOMIC_RELEASE);
	for (j = 0; j < s->max_peers; j++) {
		const struct peer *q = &s->peers[j];

		/* a full eventfd counter already means "look": nothing lost */
		if (peer_live(q) && q->efd[0] >= 0 &&
		    write(q->efd[0], &one, sizeof(one)) < 0 && errno != EAGAIN)
			pr_err("peer %u: cannot ring vector 0: %s", j, strerror(errno));
	}
}

/*
 * Frees every peer marked dead and tells the remaining peers that it left. A peer
 * that cannot be told is marked dead in turn, so this loops until nothing changes.
 */
static void reap_dead(struct server *s)
{
	unsigned int id, j;
	bool again;
	int ret;

	do {
		again = false;
		for (id = 0; id < s->max_peers; id++) {
			struct peer *p = &s->peers[id];

			if (p->sock < 0 || !p->dead)
				continue;
			log_drop(id, p->err);
			free_peer(s, p);
			side_gone(s, id);
			for (j = 0; j < s->max_peers; j++) {
				struct peer *q = &s->peers[j];

				if (q->sock < 0 || q->dead)
					continue;
				ret = send_msg(q->sock, id, -1);
				if (ret) {
					mark_dead(q, -ret);
					again = true;
				}
			}
		}
	} while (again);
}


/* Everything a new client is told: version, its id, the shm, all peers' eventfds. */
static int send_setup(struct server *s, unsigned int id)
{
	struct peer *p = &s->peers[id];
	unsigned int i, v;
	int ret;

	ret = send_msg(p->sock, IVSHMEM_PROTOCOL, -1);
	if (!ret)
		ret = send_msg(p->sock, id, -1);
	if (!ret)
		ret = send_msg(p->sock, -1, s->shm_fd);
	for (i = 0; !ret && i < s->max_peers; i++) {
		if (i == id || !peer_live(&s->peers[i]))
			continue;
		for (v = 0; !ret && v < s->vectors; v++)
			ret = send_msg(p->sock, i, s->peers[i].efd[v]);
	}
	for (v = 0; !ret && v < s->vectors; v++)
		ret = send_msg(p->sock, id, p->efd[v]);
	return ret;
}

/* Makes room for the whole setup burst, so that a client is never dropped for it. */
static void grow_sndbuf(const struct server *s, int sock)
{
	socklen_t len = sizeof(int);
	int cur, val = s->sndbuf / 2;	/* the kernel doubles what it is given */

	if (getsockopt(sock, SOL_SOCKET, SO_SNDBUF, &cur, &len) || cur >= s->sndbuf)
		return;
	/* SO_SNDBUFFORCE ignores net.core.wmem_max but needs CAP_NET_ADMIN */
	if (setsockopt(sock, SOL_SOCKET, SO_SNDBUFFORCE, &val, sizeof(val)))
		setsockopt(sock, SOL_SOCKET, SO_SNDBUF, &val, sizeof(val));
}

static void add_peer(struct server *s, int sock)
{
	struct ucred cred = { .pid = 0 };
	socklen_t len = sizeof(cred);
	struct peer *p = NULL;
	unsigned int id, i, v;
	int ret;

	for (id = 0; id < s->max_peers; id++) {
		if (s->peers[id].sock < 0) {
			p = &s->peers[id];
			break;
		}
	}
	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		cred.pid = 0;
	if (!p) {
		pr_err("refusing connection from pid %d: all %u peer ids are in use",
		       (int)cred.pid, s->max_peers);
		close(sock);
		return;
	}
	for (v = 0; v < s->vectors; v++) {
		p->efd[v] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (p->efd[v] < 0) {
			pr_err("refusing connection from pid %d: eventfd: %s",
			       (int)cred.pid, strerror(errno));
			close(sock);
			free_peer(s, p);
			return;
		}
	}
	p->sock = sock;
	grow_sndbuf(s, sock);

	ret = send_setup(s, id);
	if (ret) {
		/* nobody has heard of it yet: just forget it */
		if (ret == -EPIPE || ret == -ECONNRESET)
			pr_info("peer %u (pid %d) hung up during setup", id, (int)cred.pid);
		else
			pr_err("peer %u (pid %d): setup failed: %s", id, (int)cred.pid,
			       strerror(-ret));
		free_peer(s, p);
		return;
	}
	pr_info("peer %u connected (pid %d)", id, (int)cred.pid);

	for (i = 0; i < s->max_peers; i++) {
		struct peer *q = &s->peers[i];

		if (i == id || !peer_live(q))
			continue;
		for (v = 0; v < s->vectors; v++) {
			ret = send_msg(q->sock, id, p->efd[v]);
			if (ret) {
				mark_dead(q, -ret);
				break;
			}
		}
	}
	reap_dead(s);
}

static void handle_peer(struct server *s, unsigned int id, short revents)
{
	struct peer *p = &s->peers[id];
	char buf[256];
	unsigned int i;
	ssize_t n;

	if (revents & POLLIN) {
		/* clients have nothing to say: discard it, looking for EOF behind it */
		for (i = 0; i < 16; i++) {
			n = recv(p->sock, buf, sizeof(buf), MSG_DONTWAIT);
			if (n > 0)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
				return;
			mark_dead(p, n < 0 ? errno : 0);
			break;
		}
		if (!p->dead)
			return;
	} else if (revents & (POLLHUP | POLLERR | POLLNVAL)) {
		mark_dead(p, 0);
	}
	reap_dead(s);
}

/* Fills s->pfd from index @n on with the connected peers; returns the new count. */
static nfds_t add_peer_pfds(struct server *s, nfds_t n)
{
	unsigned int id;

	for (id = 0; id < s->max_peers; id++) {
		if (s->peers[id].sock < 0)
			continue;
		s->pfd_id[n] = id;
		s->pfd[n++] = (struct pollfd){ .fd = s->peers[id].sock, .events = POLLIN };
	}
	return n;
}

static void handle_peers(struct server *s, nfds_t first, nfds_t n)
{
	unsigned int id;
	nfds_t i;

	for (i = first; i < n; i++) {
		id = s->pfd_id[i];
		/* skip peers already dropped while handling an earlier one */
		if (!s->pfd[i].revents || s->peers[id].sock != s->pfd[i].fd)
			continue;
		handle_peer(s, id, s->pfd[i].revents);
	}
}

/*
 * Frees the ids of clients that are already gone before a newcomer gets one: a QEMU
 * restarted right after the old one exited must get the old id back, not be refused
 * or given another one because its predecessor's EOF is still unread. Clobbers s->pfd.
 */
static void reap_departed(struct server *s)
{
	nfds_t n = add_peer_pfds(s, 0);
	int ret;

	if (!n)
		return;
	do {
		ret = poll(s->pfd, n, 0);
	} while (ret < 0 && errno == EINTR);
	if (ret > 0)
		handle_peers(s, 0, n);
}

static void handle_accept(struct server *s)
{
	int sock;

	for (;;) {
		sock = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (sock >= 0) {
			reap_departed(s);
			add_peer(s, sock);
			continue;
		}
		switch (errno) {
		case EINTR:
		case ECONNABORTED:
			continue;
		case EAGAIN:
#if EWOULDBLOCK != EAGAIN
		case EWOULDBLOCK:
#endif
			return;
		case EMFILE:
		case ENFILE:
		case ENOBUFS:
		case ENOMEM:
			/* the connection stays queued; poll() would spin on it */
			pr_err("accept: %s; not accepting for a second", strerror(errno));
			s->accept_paused = true;
			return;
		default:
			pr_err("accept: %s", strerror(errno));
			return;
		}
	}
}

/* Returns true when the server should exit. */
static bool handle_signal(struct server *s)
{
	struct signalfd_siginfo si;
	ssize_t n;

	n = read(s->sig_fd, &si, sizeof(si));
	if (n != sizeof(si))
		return false;
	pr_info("caught %s, exiting", strsignal(si.ssi_signo));
	return true;
}

static int run(struct server *s)
{
	nfds_t n;
	int ret;

	for (;;) {
		s->pfd[0] = (struct pollfd){ .fd = s->sig_fd, .events = POLLIN };
		s->pfd[1] = (struct pollfd){
			.fd = s->accept_paused ? -1 : s->listen_fd,
			.events = POLLIN,
		};
		n = add_peer_pfds(s, 2);

		ret = poll(s->pfd, n, s->accept_paused ? 1000 : -1);
		if (ret < 0) {
			if (errno == EINTR)
				continue;
			pr_err("poll: %s", strerror(errno));
			return 1;
		}
		if (ret == 0) {
			s->accept_paused = false;
			continue;
		}
		if ((s->pfd[0].revents & POLLIN) && handle_signal(s))
			return 0;

		handle_peers(s, 2, n);

		if (s->pfd[1].revents & POLLIN) {
			handle_accept(s);	/* last: it reuses s->pfd */
		} else if (s->pfd[1].revents & (POLLERR | POLLHUP | POLLNVAL)) {
			pr_err("listening socket failed (poll revents %#x)", s->pfd[1].revents);
			return 1;
		}
	}
}

static void put_le32(uint8_t *p, uint32_t val)
{
	val = htole32(val);
	memcpy(p, &val, sizeof(val));
}

static void put_le64(uint8_t *p, uint64_t val)
{
	val = htole64(val);
	memcpy(p, &val, sizeof(val));
}

static int create_shm(struct server *s)
{
	uint8_t fabric_id[HDR_ID_LEN];
	size_t got = 0;
	uint8_t *hdr;
	ssize_t n;

	s->shm_fd = open(s->shm_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (s->shm_fd < 0) {
		pr_err("cannot create shared memory file %s: %s", s->shm_path, strerror(errno));
		return -1;
	}
	if (fstat(s->shm_fd, &s->shm_st)) {
		pr_err("cannot stat %s: %s", s->shm_path, strerror(errno));
		return -1;
	}
	if (!S_ISREG(s->shm_st.st_mode)) {
		pr_err("%s is not a regular file", s->shm_path);
		return -1;
	}
	s->shm_made = true;
	if (ftruncate(s->shm_fd, (off_t)s->shm_size)) {
		pr_err("cannot size %s to %llu bytes: %s", s->shm_path,
		       (unsigned long long)s->shm_size, strerror(errno));
		return -1;
	}

	while (got < sizeof(fabric_id)) {
		n = getrandom(fabric_id + got, sizeof(fabric_id) - got, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			pr_err("getrandom: %s", strerror(errno));
			return -1;
		}
		got += n;
	}

	hdr = mmap(NULL, HDR_MAP_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, s->shm_fd, 0);
	if (hdr == MAP_FAILED) {
		pr_err("cannot map %s: %s", s->shm_path, strerror(errno));
		return -1;
	}
	/* last field first, magic last: whoever sees the magic sees the rest */
	put_le32(hdr + HDR_OFF_VECTORS, s->vectors);
	put_le32(hdr + HDR_OFF_PEERS, s->max_peers);
	memcpy(hdr + HDR_OFF_ID, fabric_id, HDR_ID_LEN);
	put_le64(hdr + HDR_OFF_SIZE, s->shm_size);
	put_le32(hdr + HDR_OFF_LAYOUT, HDR_LAYOUT);
	__atomic_store_n((uint32_t *)(hdr + HDR_OFF_MAGIC), htole32(HDR_MAGIC), __ATOMIC_RELEASE);
	if (munmap(hdr, HDR_MAP_SIZE)) {
		pr_err("munmap: %s", strerror(errno));
		return -1;
	}
	if (s->max_peers >= 2 && s->shm_size >= CTRL_OFFSET + 2 * CTRL_SIZE) {
		s->ctrl = mmap(NULL, CTRL_OFFSET + 2 * CTRL_SIZE, PROT_READ | PROT_WRITE,
			       MAP_SHARED, s->shm_fd, 0);
		if (s->ctrl == MAP_FAILED) {
			pr_err("cannot map %s: %s", s->shm_path, strerror(errno));
			s->ctrl = NULL;
			return -1;
		}
	}
	return 0;
}

static int create_socket(struct server *s)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct stat st;

	/* length checked while parsing the command line */
	memcpy(addr.sun_path, s->sock_path, strlen(s->sock_path) + 1);

	if (!lstat(s->sock_path, &st)) {
		if (!S_ISSOCK(st.st_mode)) {
			pr_err("%s exists and is not a socket, not removing it", s->sock_path);
			return -1;
		}
		if (unlink(s->sock_path) && errno != ENOENT) {
			pr_err("cannot remove stale socket %s: %s", s->sock_path,
			       strerror(errno));
			return -1;
		}
		pr_info("removed stale socket %s", s->sock_path);
	} else if (errno != ENOENT) {
		pr_err("cannot stat %s: %s", s->sock_path, strerror(errno));
		return -1;
	}

	s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->listen_fd < 0) {
		pr_err("socket: %s", strerror(errno));
		return -1;
	}
	if (bind(s->listen_fd, (struct sockaddr *)&addr, sizeof(addr))) {
		pr_err("cannot bind to %s: %s", s->sock_path, strerror(errno));
		return -1;
	}
	if (lstat(s->sock_path, &s->sock_st)) {
		pr_err("cannot stat %s: %s", s->sock_path, strerror(errno));
		unlink(s->sock_path);
		return -1;
	}
	s->sock_made = true;
	if (listen(s->listen_fd, LISTEN_BACKLOG)) {
		pr_err("cannot listen on %s: %s", s->sock_path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Written to a temporary file renamed into place: a reader never sees a partial pid. */
static int write_pidfile(struct server *s)
{
	size_t len = strlen(s->pid_path) + sizeof(".XXXXXX");
	char *tmp = malloc(len);
	int fd, ret = -1;

	if (!tmp) {
		pr_err("out of memory");
		return -1;
	}
	snprintf(tmp, len, "%s.XXXXXX", s->pid_path);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		pr_err("cannot create pid file %s: %s", tmp, strerror(errno));
		free(tmp);
		return -1;
	}
	if (fchmod(fd, 0644) || dprintf(fd, "%d\n", (int)getpid()) < 0 ||
	    fstat(fd, &s->pid_st)) {
		pr_err("cannot write pid file %s: %s", tmp, strerror(errno));
		close(fd);
		goto out;
	}
	if (close(fd)) {
		pr_err("cannot write pid file %s: %s", tmp, strerror(errno));
		goto out;
	}
	if (rename(tmp, s->pid_path)) {
		pr_err("cannot rename %s to %s: %s", tmp, s->pid_path, strerror(errno));
		goto out;
	}
	s->pid_made = true;
	ret = 0;
out:
	if (ret)
		unlink(tmp);
	free(tmp);
	return ret;
}

/* SIGINT/SIGTERM/SIGHUP are blocked and read from a signalfd, so poll() sees them. */
static int setup_signals(struct server *s)
{
	sigset_t set;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL)) {
		pr_err("sigprocmask: %s", strerror(errno));
		return -1;
	}
	s->sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (s->sig_fd < 0) {
		pr_err("signalfd: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Every peer holds a socket and one eventfd per vector, and for an unprivileged
 * sender the kernel also counts fds in flight (sent, not yet received) against
 * RLIMIT_NOFILE: make room for both, as far as the hard limit allows.
 */
static void raise_nofile(const struct server *s)
{
	rlim_t peers = s->max_peers;
	rlim_t need = peers * (s->vectors + 1) + 32;
	rlim_t want = need + peers * (3 + peers * s->vectors);
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = (rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want) ? want : rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur < need)
		pr_err("warning: RLIMIT_NOFILE is below the %llu descriptors %u peers may need",
		       (unsigned long long)need, s->max_peers);
}

/* If fd 0, 1 or 2 were closed, the shm file could become "stderr": keep them taken. */
static void reserve_stdio(void)
{
	int fd;

	do {
		fd = open("/dev/null", O_RDWR);
	} while (fd >= 0 && fd <= STDERR_FILENO);
	if (fd > STDERR_FILENO)
		close(fd);
}

static int init_server(struct server *s)
{
	unsigned long long want = (3ULL + 2ULL * s->vectors * s->max_peers) * MSG_COST;
	unsigned int id, v;

	s->sndbuf = want > INT_MAX / 2 ? INT_MAX / 2 : (int)want;
	s->peers = calloc(s->max_peers, sizeof(*s->peers));
	s->pfd = calloc(s->max_peers + 2, sizeof(*s->pfd));
	s->pfd_id = calloc(s->max_peers + 2, sizeof(*s->pfd_id));
	if (!s->peers || !s->pfd || !s->pfd_id) {
		pr_err("out of memory");
		return -1;
	}
	for (id = 0; id < s->max_peers; id++) {
		s->peers[id].sock = -1;
		for (v = 0; v < MAX_VECTORS; v++)
			s->peers[id].efd[v] = -1;
	}
	raise_nofile(s);
	if (setup_signals(s) || create_shm(s) || create_socket(s))
		return -1;
	pr_info("listening on %s: shm %s, %llu bytes, %u vectors, max %u peers",
		s->sock_path, s->shm_path, (unsigned long long)s->shm_size, s->vectors,
		s->max_peers);
	if (s->pid_path && write_pidfile(s))
		return -1;
	return 0;
}

static void unlink_ours(const char *path, const struct stat *made)
{
	struct stat st;

	if (!lstat(path, &st) && st.st_dev == made->st_dev && st.st_ino == made->st_ino &&
	    unlink(path) && errno != ENOENT)
		pr_err("cannot remove %s: %s", path, strerror(errno));
}

static void cleanup(struct server *s)
{
	unsigned int id;

	if (s->peers) {
		for (id = 0; id < s->max_peers; id++)
			free_peer(s, &s->peers[id]);
	}
	if (s->sock_made)
		unlink_ours(s->sock_path, &s->sock_st);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->shm_made)
		unlink_ours(s->shm_path, &s->shm_st);
	if (s->shm_fd >= 0)
		close(s->shm_fd);
	if (s->sig_fd >= 0)
		close(s->sig_fd);
	/* last: once the pid file is gone, so is everything else */
	if (s->pid_made)
		unlink_ours(s->pid_path, &s->pid_st);
	free(s->peers);
	free(s->pfd);
	free(s->pfd_id);
}

int main(int argc, char **argv)
{
	struct server s = {
		.max_peers = DEFAULT_PEERS,
		.sig_fd = -1,
		.shm_fd = -1,
		.listen_fd = -1,
	};
	const char *size_arg = NULL;
	int opt, ret;

	opterr = 0;
	while ((opt = getopt(argc, argv, ":S:m:l:n:p:F:vh")) != -1) {
		switch (opt) {
		case 'S':
			s.sock_path = optarg;
			break;
		case 'm':
			s.shm_path = optarg;
			break;
		case 'l':
			size_arg = optarg;
			if (parse_size(optarg, &s.shm_size)) {
				pr_err("invalid size '%s': must be a power of two >= 1M", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'n':
			if (parse_uint(optarg, 1, MAX_VECTORS, &s.vectors)) {
				pr_err("invalid vector count '%s': need 1..%d", optarg,
				       MAX_VECTORS);
				return EXIT_USAGE;
			}
			break;
		case 'p':
			if (parse_uint(optarg, 1, MAX_PEERS_LIMIT, &s.max_peers)) {
				pr_err("invalid peer count '%s': need 1..%d", optarg,
				       MAX_PEERS_LIMIT);
				return EXIT_USAGE;
			}
			break;
		case 'F':
			s.pid_path = optarg;
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			print_usage(stdout);
			return 0;
		case ':':
			pr_err("option -%c needs an argument", optopt);
			print_usage(stderr);
			return EXIT_USAGE;
		default:
			pr_err("unknown option -%c", optopt);
			print_usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		pr_err("unexpected argument '%s'", argv[optind]);
		print_usage(stderr);
		return EXIT_USAGE;
	}
	if (!s.sock_path || !s.shm_path || !size_arg || !s.vectors) {
		pr_err("-S, -m, -l and -n are required");
		print_usage(stderr);
		return EXIT_USAGE;
	}
	if (!*s.sock_path || !*s.shm_path || (s.pid_path && !*s.pid_path)) {
		pr_err("empty path");
		return EXIT_USAGE;
	}
	if (strlen(s.sock_path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		pr_err("socket path too long (max %zu bytes): %s",
		       sizeof(((struct sockaddr_un *)0)->sun_path) - 1, s.sock_path);
		return EXIT_USAGE;
	}

	reserve_stdio();
	ret = init_server(&s) ? 1 : run(&s);
	cleanup(&s);
	return ret;
}
