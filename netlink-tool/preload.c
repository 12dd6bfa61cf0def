// SPDX-License-Identifier: GPL-2.0
/* libntbsmc-preload.so: sets the ntbsmc TCP ULP on a program's TCP sockets (LD_PRELOAD). */

/*
 * ntbsmc_run(8) preloads this library. It interposes connect() and listen() only, and
 * keeps no state per socket: at each call it asks the kernel what the descriptor is
 * (SO_DOMAIN, SO_TYPE, SO_PROTOCOL), whether it already has a ULP (TCP_ULP) and whether
 * it is still fresh (TCP_INFO), and sets TCP_ULP "ntbsmc" on an AF_INET/AF_INET6 TCP
 * socket the filters select, before passing the call on. So sockets made by socket()
 * with any type flags, by syscall(), or inherited across fork() and exec() are all
 * covered, threads need no locking, and a retried non-blocking connect() is recognised
 * from the socket itself. accept() needs nothing: the kernel gives accepted sockets the
 * listener's ULP.
 *
 * Whatever happens here, the program sees the call it made: a ULP that cannot be set
 * leaves a plain TCP socket, and errno is the one the real connect()/listen() leaves.
 *
 * Environment, read once when the library is loaded:
 *   NTBSMC_PORTS  "80,443,5000-5100": only these ports (connect: destination, listen:
 *                 the local port)
 *   NTBSMC_ADDRS  "10.0.0.0/8,fd00::/8,192.168.1.2": only connections to these peers;
 *                 IPv4 is compared in its IPv4-mapped IPv6 form, so IPv4 rules match
 *                 IPv4-mapped peers of AF_INET6 sockets
 *   NTBSMC_DEBUG  "1": one line per decision on standard error
 * A filter that does not parse is reported once and no socket gets the ULP.
 */

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/ntbsmc.h>

#ifndef SOL_TCP
#define SOL_TCP 6
#endif
#ifndef TCP_ULP
#define TCP_ULP 31
#endif

#define PREFIX "ntbsmc_run: "
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define EXPORT __attribute__((visibility("default")))

/* After ENOENT (no module), how long to stop asking: each ask may run modprobe. */
#define NOMODULE_RETRY_SEC 5

struct addr_rule {
	struct in6_addr addr;	/* IPv4 as ::ffff:a.b.c.d */
	unsigned int prefix;	/* 0-128, IPv4 rules +96 */
};

static struct {
	bool debug;
	bool invalid;		/* a filter did not parse: set the ULP on no socket */
	bool port_filter;
	uint8_t ports[65536 / 8];
	size_t nr_rules;	/* 0: no address filter */
	struct addr_rule *rules;
} cfg;

static int (*real_connect)(int, const struct sockaddr *, socklen_t);
static int (*real_listen)(int, int);
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static long nomodule_until;	/* CLOCK_MONOTONIC seconds, __atomic */

/* Writes one whole line with a single write(): threads' lines do not mix. */
__attribute__((format(printf, 1, 2)))
static void say(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, n) < 0)
		return;	/* nowhere to report it */
}

/* IPv4 as IPv4-mapped IPv6, ::ffff:a.b.c.d, the one form the filter compares. */
static void map_v4(struct in6_addr *a, const struct in_addr *v4)
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };

	memcpy(a->s6_addr, prefix, sizeof(prefix));
	memcpy(&a->s6_addr[12], v4, 4);
}

static char *trim(char *s)
{
	char *end;

	while (*s == ' ' || *s == '\t')
		s++;
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
		*--end = '\0';
	return s;
}

/* A decimal number in [min, max] and nothing else. */
static bool parse_uint(const char *s, unsigned long min, unsigned long max,
		       unsigned long *val)
{
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*val = strtoul(s, &end, 10);
	return !errno && !*end && *val >= min && *val <= max;
}

/* "80,443,5000-5100" into cfg.ports; on error names the bad item in why. */
static bool parse_ports(char *list, char *why, size_t whylen)
{
	char *item;

	while ((item = strsep(&list, ","))) {
		unsigned long lo, hi;
		char *dash, *p = trim(item);

		snprintf(why, whylen, "bad port or range \"%s\" (want N or N-M, 1-65535)", p);
		dash = strchr(p, '-');
		if (dash)
			*dash++ = '\0';
		if (!parse_uint(trim(p), 1, 65535, &lo) ||
		    !parse_uint(dash ? trim(dash) : p, 1, 65535, &hi) || hi < lo)
			return false;
		for (; lo <= hi; lo++)
			cfg.ports[lo / 8] |= 1 << (lo % 8);
	}
	return true;
}

/* "10.0.0.0/8,fd00::/8,192.168.1.2" into cfg.rules. */
static bool parse_addrs(char *list, char *why, size_t whylen)
{
	size_t n = 1;
	char *item;

	for (item = list; *item; item++)
		n += *item == ',';
	cfg.rules = calloc(n, sizeof(*cfg.rules));
	if (!cfg.rules) {
		snprintf(why, whylen, "out of memory");
		return false;
	}
	while ((item = strsep(&list, ","))) {
		struct addr_rule *r = &cfg.rules[cfg.nr_rules];
		char *slash, *p = trim(item);
		unsigned long prefix;
		struct in_addr a4;

		snprintf(why, whylen,
			 "bad address \"%s\" (want ADDR or ADDR/PREFIX, IPv4 or IPv6)", p);
		slash = strchr(p, '/');
		if (slash)
			*slash++ = '\0';
		if (inet_pton(AF_INET, trim(p), &a4) == 1) {
			if (slash && !parse_uint(trim(slash), 0, 32, &prefix))
				return false;
			map_v4(&r->addr, &a4);
			r->prefix = 96 + (slash ? prefix : 32);
		} else if (inet_pton(AF_INET6, p, &r->addr) == 1) {
			if (slash && !parse_uint(trim(slash), 0, 128, &prefix))
				return false;
			r->prefix = slash ? prefix : 128;
		} else {
			return false;
		}
		cfg.nr_rules++;
	}
	return true;
}

/*
 * Parses one filter variable; an unset or blank one filters nothing. Reports a bad one
 * and marks the configuration invalid.
 */
static bool parse_filter(const char *var, bool (*parse)(char *, char *, size_t))
{
	const char *val = getenv(var);
	char why[160], *copy;
	bool ok;

	if (!val || !val[strspn(val, " \t")])
		return false;
	copy = strdup(val);
	ok = copy && parse(copy, why, sizeof(why));
	if (!copy)
		snprintf(why, sizeof(why), "out of memory");
	free(copy);
	if (!ok) {
		say(PREFIX "%s=\"%s\": %s; ntbsmc is not used, the program runs on plain TCP",
		    var, val, why);
		cfg.invalid = true;
	}
	return ok;
}

static void init(void)
{
	const char *debug = getenv("NTBSMC_DEBUG");

	real_connect = dlsym(RTLD_NEXT, "connect");
	real_listen = dlsym(RTLD_NEXT, "listen");
	cfg.debug = debug && *debug && strcmp(debug, "0");
	cfg.port_filter = parse_filter("NTBSMC_PORTS", parse_ports);
	parse_filter("NTBSMC_ADDRS", parse_addrs);
}

__attribute__((constructor))
static void ntbsmc_preload_init(void)
{
	int saved_errno = errno;	/* the program's, even before main() */

	pthread_once(&init_once, init);
	errno = saved_errno;
}

static bool port_selected(unsigned int port)
{
	return !cfg.port_filter || (cfg.ports[port / 8] & (1 << (port % 8)));
}

static bool prefix_match(const struct in6_addr *a, const struct addr_rule *r)
{
	unsigned int bytes = r->prefix / 8, bits = r->prefix % 8;

	if (memcmp(a, &r->addr, bytes))
		return false;
	return !bits || !((a->s6_addr[bytes] ^ r->addr.s6_addr[bytes]) & (0xff00 >> bits));
}

static bool addr_selected(const struct in6_addr *a)
{
	size_t i;

	if (!cfg.nr_rules)
		return true;
	for (i = 0; i < cfg.nr_rules; i++)
		if (prefix_match(a, &cfg.rules[i]))
			return true;
	return false;
}

/* An AF_INET or AF_INET6 stream socket of protocol TCP (not MPTCP, not SCTP). */
static bool is_inet_tcp(int fd)
{
	int domain, type, proto;
	socklen_t len = sizeof(int);

	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) || type != SOCK_STREAM)
		return false;
	len = sizeof(int);
	if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &len) || proto != IPPROTO_TCP)
		return false;
	len = sizeof(int);
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len))
		return false;
	return domain == AF_INET || domain == AF_INET6;
}

/* Peer address as IPv6 (IPv4 mapped), port, and "1.2.3.4:80" / "[::1]:80" in text. */
static bool read_sockaddr(const struct sockaddr *sa, socklen_t len, struct in6_addr *a,
			  unsigned int *port, char *text, size_t textlen)
{
	char buf[INET6_ADDRSTRLEN];

	if (!sa)
		return false;
	if (len >= sizeof(struct sockaddr_in) && sa->sa_family == AF_INET) {
		struct sockaddr_in sin;

		memcpy(&sin, sa, sizeof(sin));
		map_v4(a, &sin.sin_addr);
		*port = ntohs(sin.sin_port);
		inet_ntop(AF_INET, &sin.sin_addr, buf, sizeof(buf));
		snprintf(text, textlen, "%s:%u", buf, *port);
		return true;
	}
	/* The kernel takes the RFC 2133 size, without sin6_scope_id. */
	if (len >= offsetof(struct sockaddr_in6, sin6_scope_id) && sa->sa_family == AF_INET6) {
		struct sockaddr_in6 sin6 = { 0 };

		memcpy(&sin6, sa, len < sizeof(sin6) ? len : sizeof(sin6));
		*a = sin6.sin6_addr;
		*port = ntohs(sin6.sin6_port);
		inet_ntop(AF_INET6, &sin6.sin6_addr, buf, sizeof(buf));
		snprintf(text, textlen, "[%s]:%u", buf, *port);
		return true;
	}
	return false;	/* AF_UNSPEC (disconnect) or malformed: the kernel answers */
}

static const char *tcp_state_name(unsigned int state)
{
	static const char *const names[] = {
		[TCP_ESTABLISHED] = "ESTABLISHED", [TCP_SYN_SENT] = "SYN-SENT",
		[TCP_SYN_RECV] = "SYN-RECV", [TCP_FIN_WAIT1] = "FIN-WAIT-1",
		[TCP_FIN_WAIT2] = "FIN-WAIT-2", [TCP_TIME_WAIT] = "TIME-WAIT",
		[TCP_CLOSE] = "CLOSE", [TCP_CLOSE_WAIT] = "CLOSE-WAIT",
		[TCP_LAST_ACK] = "LAST-ACK", [TCP_LISTEN] = "LISTEN",
		[TCP_CLOSING] = "CLOSING",
	};

	return state < ARRAY_SIZE(names) && names[state] ?
	       names[state] : "?";
}

static long now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec;
}

/*
 * Sets the ULP on a fresh socket that has none. Returns a word for the debug line:
 * NULL when it was set, else why not.
 */
static const char *set_ulp(int fd, char *why, size_t whylen)
{
	char ulp[16] = "", err[64];
	struct tcp_info info;
	socklen_t len = sizeof(ulp) - 1;

	/* A retried connect() or a second listen() finds its own earlier work. */
	if (getsockopt(fd, SOL_TCP, TCP_ULP, ulp, &len) == 0 && len && ulp[0]) {
		ulp[len < sizeof(ulp) ? len : sizeof(ulp) - 1] = '\0';
		if (!strcmp(ulp, NTBSMC_ULP_NAME))
			return "ULP already set";
		snprintf(why, whylen, "ULP not set: socket has ULP \"%s\"", ulp);
		return why;
	}
	len = sizeof(info);
	if (getsockopt(fd, SOL_TCP, TCP_INFO, &info, &len) == 0 &&
	    len >= offsetof(struct tcp_info, tcpi_state) + 1 && info.tcpi_state != TCP_CLOSE) {
		snprintf(why, whylen, "ULP not set: socket not fresh (%s)",
			 tcp_state_name(info.tcpi_state));
		return why;
	}
	if (__atomic_load_n(&nomodule_until, __ATOMIC_RELAXED) > now_sec())
		return "ULP not set: No such file or directory (module not loaded?) [cached]";
	if (setsockopt(fd, SOL_TCP, TCP_ULP, NTBSMC_ULP_NAME, sizeof(NTBSMC_ULP_NAME)) == 0)
		return NULL;
	if (errno == ENOENT) {
		__atomic_store_n(&nomodule_until, now_sec() + NOMODULE_RETRY_SEC,
				 __ATOMIC_RELAXED);
		return "ULP not set: No such file or directory (module not loaded?)";
	}
	snprintf(why, whylen, "ULP not set: %s", strerror_r(errno, err, sizeof(err)));
	return why;
}

/*
 * The decision for one connect() to sa, or one listen(). Silent on sockets that are
 * not TCP; one debug line for every other call.
 */
static void consider(int fd, bool is_connect, const struct sockaddr *sa, socklen_t salen)
{
	char where[INET6_ADDRSTRLEN + 16], why[128];
	const char *call = is_connect ? "connect" : "listen", *verdict;
	struct in6_addr peer;
	unsigned int port;

	pthread_once(&init_once, init);
	if (!is_inet_tcp(fd))
		return;
	if (is_connect) {
		if (!read_sockaddr(sa, salen, &peer, &port, where, sizeof(where)))
			return;
	} else {
		struct sockaddr_storage ss;
		socklen_t sslen = sizeof(ss);

		if (getsockname(fd, (struct sockaddr *)&ss, &sslen) ||
		    !read_sockaddr((struct sockaddr *)&ss, sslen, &peer, &port, where,
				   sizeof(where)))
			return;
	}

	if (cfg.invalid)
		verdict = "skipped: invalid filter";
	else if (!port_selected(port))
		verdict = "skipped by port filter";
	else if (is_connect && !addr_selected(&peer))
		verdict = "skipped by address filter";	/* listen: no peer yet */
	else
		verdict = set_ulp(fd, why, sizeof(why)) ?: "ULP set";
	if (cfg.debug)
		say(PREFIX "pid %d fd %d %s %s: %s", (int)getpid(), fd, call, where, verdict);
}

EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	int saved_errno = errno;

	consider(fd, true, addr, len);
	errno = saved_errno;
	if (!real_connect)
		return syscall(SYS_connect, fd, addr, len);
	return real_connect(fd, addr, len);
}

EXPORT int listen(int fd, int backlog)
{
	int saved_errno = errno;

	consider(fd, false, NULL, 0);
	errno = saved_errno;
	if (!real_listen)
		return syscall(SYS_listen, fd, backlog);
	return real_listen(fd, backlog);
}
