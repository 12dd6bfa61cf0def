// SPDX-License-Identifier: GPL-2.0
/* ntbsmc tool: "check": connect (or accept) with the ntbsmc ULP and report the mode it got. */

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/ntbsmc.h>

#include "tool.h"

#ifndef TCP_ULP
#define TCP_ULP		31
#endif

#define TIMEOUT_DEFAULT_MS	5000
#define TIMEOUT_MAX_S		3600
/* Between two looks at NTBSMC_INFO: the module has no event to wait for. */
#define POLL_INTERVAL_MS	10

struct check_opts {
	int family;		/* AF_UNSPEC (client: any), AF_INET or AF_INET6 */
	bool listen;
	unsigned long count;	/* -l: connections to accept, 0 for no limit */
	long timeout_ms;
	const char *timeout;	/* as given, for messages */
	const char *host;
	const char *port;	/* checked decimal 1..65535 */
};

void usage_check(FILE *f)
{
	fprintf(f,
		"Usage: ntbsmc check [ -4 | -6 ] [ -t SECONDS ] HOST PORT\n"
		"       ntbsmc check -l [ -4 | -6 ] [ -c COUNT ] [ -t SECONDS ] PORT\n");
}

/* ---- arguments ---- */

static bool valid_port(const char *s)
{
	unsigned long v;

	return parse_decimal(s, 65535, &v) && v;
}

/* Seconds, fractions allowed: "5", "0.5". */
static bool parse_timeout(const char *s, long *ms)
{
	double v;
	char *end;

	if ((*s < '0' || *s > '9') && *s != '.')
		return false;
	errno = 0;
	v = strtod(s, &end);
	if (*end || errno || !isfinite(v) || v <= 0 || v > TIMEOUT_MAX_S)
		return false;
	*ms = v < 0.001 ? 1 : (long)(v * 1000);
	return true;
}

static bool parse_count(const char *s, unsigned long *count)
{
	return parse_decimal(s, UINT32_MAX, count) && *count;
}

static int parse_args(int argc, char **argv, struct check_opts *o)
{
	const char *pos[2];
	unsigned int npos = 0;
	bool count = false;
	int i;

	for (i = 0; i < argc; i++) {
		const char *w = argv[i];

		if (!strcmp(w, "-4") || !strcmp(w, "-6")) {
			if (o->family != AF_UNSPEC)
				return usage_error("check", "-4 or -6 given twice");
			o->family = w[1] == '4' ? AF_INET : AF_INET6;
		} else if (!strcmp(w, "-l") || !strcmp(w, "--listen")) {
			o->listen = true;
		} else if (!strcmp(w, "-t") || !strcmp(w, "--timeout")) {
			if (++i == argc)
				return usage_error("check", "%s needs a value (seconds)", w);
			o->timeout = argv[i];
			if (!parse_timeout(o->timeout, &o->timeout_ms))
				return usage_error("check",
						   "invalid timeout \"%s\" (seconds, up to %d)",
						   o->timeout, TIMEOUT_MAX_S);
		} else if (!strcmp(w, "-c") || !strcmp(w, "--count")) {
			if (++i == argc)
				return usage_error("check", "%s needs a value", w);
			if (!parse_count(argv[i], &o->count))
				return usage_error("check", "invalid count \"%s\"", argv[i]);
			count = true;
		} else if (*w == '-' && w[1]) {
			return usage_error("check", "unknown option \"%s\"", w);
		} else if (npos < 2) {
			pos[npos++] = w;
		} else {
			return usage_error("check", "unexpected argument \"%s\"", w);
		}
	}

	if (count && !o->listen)
		return usage_error("check", "-c needs -l (it counts accepted connections)");
	if (o->listen) {
		if (npos > 1)
			return usage_error("check", "unexpected argument \"%s\" (-l takes PORT)",
					   pos[1]);
		if (!npos)
			return usage_error("check", "check -l: PORT missing");
		o->port = pos[0];
	} else {
		if (!npos)
			return usage_error("check", "check: HOST and PORT missing");
		if (npos == 1)
			return usage_error("check", "check: PORT missing");
		if (!*pos[0])
			return usage_error("check", "check: empty HOST");
		o->host = pos[0];
		o->port = pos[1];
	}
	if (!valid_port(o->port))
		return usage_error("check", "invalid port \"%s\" (1 to 65535)", o->port);
	return EXIT_OK;
}

/* ---- sockets ---- */

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

static int set_ulp(int fd)
{
	if (!setsockopt(fd, IPPROTO_TCP, TCP_ULP, NTBSMC_ULP_NAME, sizeof(NTBSMC_ULP_NAME)))
		return EXIT_OK;
	/* The kernel knows no ULP of that name (and could not load one). */
	if (errno == ENOENT)
		return fail(EXIT_NOMODULE, "ntbsmc module not loaded (no TCP ULP \"%s\")",
			    NTBSMC_ULP_NAME);
	return fail(EXIT_ERROR, "cannot set TCP_ULP \"%s\": %s", NTBSMC_ULP_NAME,
		    strerror(errno));
}

/* Returns 0 or a negative errno; FD is non-blocking. */
static int connect_wait(int fd, const struct addrinfo *ai, long deadline)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	socklen_t len = sizeof(int);
	long left;
	int err;

	if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
		return 0;
	if (errno != EINPROGRESS)
		return -errno;
	for (;;) {
		left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		err = poll(&p, 1, left > INT32_MAX ? INT32_MAX : (int)left);
		if (err > 0)
			break;
		if (err < 0 && errno != EINTR)
			return -errno;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len))
		return -errno;
	return -err;
}

/*
 * Looks at the mode until the handshake ended or DEADLINE passed. Returns 0 (INFO
 * filled, possibly still in handshake at the deadline) or an exit code.
 */
static int wait_mode(int fd, long deadline, struct ntbsmc_info *info)
{
	socklen_t len;
	long left;

	for (;;) {
		memset(info, 0, sizeof(*info));
		len = sizeof(*info);
		if (getsockopt(fd, SOL_NTBSMC, NTBSMC_INFO, info, &len))
			return fail(EXIT_ERROR, "getsockopt(SOL_NTBSMC, NTBSMC_INFO): %s",
				    strerror(errno));
		if (info->mode != NTBSMC_MODE_HANDSHAKE)
			return EXIT_OK;
		left = deadline - now_ms();
		if (left <= 0)
			return EXIT_OK;
		poll(NULL, 0, left < POLL_INTERVAL_MS ? (int)left : POLL_INTERVAL_MS);
	}
}

/* ---- output ---- */

/* "64 KiB", or bytes when not a whole number of KiB. */
static void print_size(const char *key, const char *fmt, uint32_t size)
{
	char buf[32];

	if (size % 1024)
		snprintf(buf, sizeof(buf), "%u B", size);
	else
		snprintf(buf, sizeof(buf), "%u KiB", size / 1024);
	print_u64(PRINT_JSON, key, NULL, size);
	print_string(PRINT_FP, NULL, fmt, buf);
}

/*
 * The rest of a result after "HOST:PORT: " (text), or its keys from "mode" on
 * (JSON): "NTB (link group 3, rmb 64 KiB, peer rmb 64 KiB)" or
 * "TCP, reason: declined, peer reason: no_buffer".
 */
static void print_info(const struct ntbsmc_info *info, const struct check_opts *o)
{
	char b1[32], b2[32];
	const char *reason = reason_name(info->reason, b1, sizeof(b1));
	bool ntb = info->mode == NTBSMC_MODE_NTB;

	print_string(PRINT_JSON, "mode", NULL, mode_name(info->mode, b2, sizeof(b2)));
	print_string(PRINT_JSON, "reason", NULL, reason);
	print_string(PRINT_JSON, "peer_reason", NULL,
		     reason_name(info->peer_reason, b2, sizeof(b2)));
	if (ntb) {
		print_u64(PRINT_ANY, "lgr_id", "NTB (link group %s", info->lgr_id);
		print_size("rmb_size", ", rmb %s", info->rmb_size);
		print_size("peer_rmb_size", ", peer rmb %s", info->peer_rmb_size);
		print_fp(")\n");
		return;
	}
	print_null(PRINT_JSON, "lgr_id", NULL);
	print_null(PRINT_JSON, "rmb_size", NULL);
	print_null(PRINT_JSON, "peer_rmb_size", NULL);
	if (info->mode == NTBSMC_MODE_TCP) {
		print_fp("TCP, reason: %s", reason);
		if (info->reason == NTBSMC_REASON_DECLINED)
			print_fp(", peer reason: %s", reason_name(info->peer_reason, b2,
								  sizeof(b2)));
		print_fp("\n");
	} else if (info->mode == NTBSMC_MODE_HANDSHAKE) {
		print_fp("handshake not finished after %s s\n", o->timeout);
	} else {
		print_fp("mode %s\n", mode_name(info->mode, b2, sizeof(b2)));
	}
}

/* ---- client ---- */

static int check_connect(const struct check_opts *o)
{
	struct addrinfo hints = {
		.ai_family = o->family,
		.ai_socktype = SOCK_STREAM,
		.ai_protocol = IPPROTO_TCP,
		.ai_flags = AI_NUMERICSERV,
	};
	long deadline = now_ms() + o->timeout_ms;
	const char *bl = strchr(o->host, ':') ? "[" : "", *br = *bl ? "]" : "";
	struct addrinfo *res, *ai;
	struct ntbsmc_info info;
	int fd = -1, err = 0, rc;

	rc = getaddrinfo(o->host, o->port, &hints, &res);
	if (rc)
		return fail(EXIT_CONNECT, "cannot resolve %s: %s", o->host,
			    rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
	/* Like a client would: the addresses in the resolver's order, until one answers. */
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			    IPPROTO_TCP);
		if (fd < 0) {
			err = errno;
			continue;
		}
		rc = set_ulp(fd);
		if (rc) {
			close(fd);
			freeaddrinfo(res);
			return rc;
		}
		err = -connect_wait(fd, ai, deadline);
		if (!err)
			break;
		close(fd);
		fd = -1;
		if (err == ETIMEDOUT)
			break;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return fail(EXIT_CONNECT, "connect to %s%s%s:%s: %s", bl, o->host, br, o->port,
			    strerror(err));

	/* Nothing is sent: the handshake runs by itself once TCP is established. */
	rc = wait_mode(fd, deadline, &info);
	close(fd);
	if (rc)
		return rc;
	if (info.mode == NTBSMC_MODE_HANDSHAKE)
		return fail(EXIT_ERROR, "%s%s%s:%s: handshake not finished after %s s", bl,
			    o->host, br, o->port, o->timeout);

	print_open_object(NULL);
	print_string(PRINT_JSON, "host", NULL, o->host);
	print_fp("%s%s%s", bl, o->host, br);
	print_u64(PRINT_ANY, "port", ":%s: ", strtoul(o->port, NULL, 10));
	print_info(&info, o);
	print_close_object();
	return EXIT_OK;
}

/* ---- server ---- */

/* Discards whatever the peer sends until it closes, for at most TIMEOUT_MS. */
static void drain(int fd, long timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	long deadline = now_ms() + timeout_ms, left;
	char buf[4096];
	ssize_t n;

	while ((left = deadline - now_ms()) > 0) {
		if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
			return;
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (!n || (n < 0 && errno != EAGAIN && errno != EINTR))
			return;
	}
}

static int serve_one(int fd, const struct sockaddr_storage *peer, const struct check_opts *o)
{
	char host[INET6_ADDRSTRLEN] = "?";
	struct ntbsmc_info info;
	unsigned int port;
	bool v6;
	int rc;

	v6 = peer->ss_family == AF_INET6;
	if (v6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)peer;

		inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host));
		port = ntohs(sin6->sin6_port);
	} else {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)peer;

		inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
		port = ntohs(sin->sin_port);
	}

	rc = wait_mode(fd, now_ms() + o->timeout_ms, &info);
	if (rc)
		return rc;
	print_open_object(NULL);
	print_string(PRINT_JSON, "peer_addr", NULL, host);
	print_fp(v6 ? "[%s]" : "%s", host);
	print_u64(PRINT_ANY, "peer_port", ":%s: ", port);
	print_info(&info, o);
	print_close_object();
	fflush(stdout);
	/* The client closes first once it saw its mode; closing here could cut it short. */
	drain(fd, o->timeout_ms);
	return EXIT_OK;
}

static int check_listen(const struct check_opts *o)
{
	int family = o->family == AF_INET6 ? AF_INET6 : AF_INET;
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT };
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY) };
	struct sockaddr_storage peer;
	unsigned long accepted = 0;
	socklen_t len;
	int fd, cfd, one = 1, rc;

	sin.sin_port = htons(strtoul(o->port, NULL, 10));
	sin6.sin6_port = sin.sin_port;
	fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
	if (fd < 0)
		return fail(EXIT_ERROR, "cannot create a TCP socket: %s", strerror(errno));
	/* Before listen(): accepted sockets inherit the ULP from the listener. */
	rc = set_ulp(fd);
	if (rc)
		goto out;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* Each family on its own: -6 does not take IPv4 connections as mapped addresses. */
	if (family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if ((family == AF_INET6 ? bind(fd, (struct sockaddr *)&sin6, sizeof(sin6)) :
				  bind(fd, (struct sockaddr *)&sin, sizeof(sin))) ||
	    listen(fd, 64)) {
		rc = fail(EXIT_CONNECT, "cannot listen on port %s: %s", o->port, strerror(errno));
		goto out;
	}

	/* One line (or JSON object) per connection, as it comes. */
	print_set_output(stdout);
	while (!o->count || accepted < o->count) {
		len = sizeof(peer);
		cfd = accept4(fd, (struct sockaddr *)&peer, &len, SOCK_CLOEXEC);
		if (cfd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			rc = fail(EXIT_ERROR, "accept on port %s: %s", o->port, strerror(errno));
			goto out;
		}
		accepted++;
		rc = serve_one(cfd, &peer, o);
		close(cfd);
		if (rc)
			goto out;
	}
out:
	close(fd);
	return rc;
}

int do_check(int argc, char **argv)
{
	struct check_opts o = {
		.family = AF_UNSPEC,
		.timeout_ms = TIMEOUT_DEFAULT_MS,
		.timeout = "5",
	};
	int rc;

	if (argc && is_help(argv[0])) {
		if (argc > 1)
			return usage_error("check", "unexpected argument \"%s\"", argv[1]);
		usage_check(stdout);
		return EXIT_OK;
	}
	rc = parse_args(argc, argv, &o);
	if (rc)
		return rc;
	rc = session_netns();
	if (rc)
		return rc;
	return o.listen ? check_listen(&o) : check_connect(&o);
}
