// SPDX-License-Identifier: GPL-2.0
/* sockets, a TCP socket-behaviour oracle between two hosts: its harness and main(). */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "harness.h"

volatile sig_atomic_t sigpipes;
static char watchdog_msg[512];

/* The command line. */
struct options opt = { .conns = 200 };

/* ---------------------------------------------------------------- reports */

static const char *side(const struct ctx *c)
{
	return c->srv ? "server" : "client";
}

void diag(const struct ctx *c, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	printf("# %s: %s: %s\n", side(c), c->chk ? c->chk->name : "-", msg);
}

/* Print why the check failed; returns R_FAIL (== -1) for both checks and helpers. */
int fail(const struct ctx *c, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	printf("# %s: %s: FAIL: %s\n", side(c), c->chk ? c->chk->name : "-", msg);
	return R_FAIL;
}

int skip(struct ctx *c, const char *reason)
{
	snprintf(c->skip, sizeof(c->skip), "%s", reason);
	return R_SKIP;
}

/* ------------------------------------------------------ control connection */

int ctl_send(struct ctx *c, const char *fmt, ...)
{
	char line[600];
	size_t off = 0;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int)sizeof(line) - 1)
		return fail(c, "control line too long");
	line[n++] = '\n';
	while (off < (size_t)n) {
		ssize_t r = send(c->ctl, line + off, n - off, MSG_NOSIGNAL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			c->ctl_dead = true;
			return fail(c, "control connection: send: %s", en(errno));
		}
		off += r;
	}
	return 0;
}

/* Read what is available on the control connection (waits up to @ms). */
int ctl_fill(struct ctx *c, int ms)
{
	struct pollfd p = { c->ctl, POLLIN, 0 };
	ssize_t r;
	int n;

	if (c->ctl_dead)
		return fail(c, "control connection lost");
	if (c->rlen == sizeof(c->rbuf))
		return fail(c, "control line too long");
	n = poll(&p, 1, ms);
	if (n < 0 && errno != EINTR)
		return fail(c, "control connection: poll: %s", en(errno));
	if (n <= 0)
		return 0;
	r = recv(c->ctl, c->rbuf + c->rlen, sizeof(c->rbuf) - c->rlen, MSG_DONTWAIT);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (r <= 0) {
		c->ctl_dead = true;
		return fail(c, "control connection: %s", r ? en(errno) : "closed by the peer");
	}
	c->rlen += r;
	return 0;
}

/* Next line of the control connection, waiting up to @ms. */
static int ctl_readline(struct ctx *c, char *out, size_t sz, int ms)
{
	double end = now_ms() + ms;

	for (;;) {
		char *nl = memchr(c->rbuf, '\n', c->rlen);
		int left;

		if (nl) {
			size_t n = nl - c->rbuf;

			snprintf(out, sz, "%.*s", (int)n, c->rbuf);
			memmove(c->rbuf, nl + 1, c->rlen - n - 1);
			c->rlen -= n + 1;
			return 0;
		}
		left = end - now_ms();
		if (left <= 0)
			return fail(c, "control connection: nothing from the peer in %d ms", ms);
		if (ctl_fill(c, left))
			return -1;
	}
}

/* Is a complete "DONE" line of the peer waiting? */
bool ctl_peer_gave_up(struct ctx *c)
{
	size_t i = 0;

	if (c->peer_done)
		return true;
	while (i < c->rlen) {
		char *nl = memchr(c->rbuf + i, '\n', c->rlen - i);

		if (!nl)
			break;
		if (!strncmp(c->rbuf + i, "DONE ", 5))
			return true;
		i = nl - c->rbuf + 1;
	}
	return false;
}

static int parse_res(const char *s)
{
	if (!strncmp(s, "pass", 4))
		return R_PASS;
	if (!strncmp(s, "skip", 4))
		return R_SKIP;
	return R_FAIL;
}

/*
 * Wait for the peer's sync point @tag; its arguments go to @args. The peer's
 * DONE instead means it gave up on the check.
 */
int sync_wait(struct ctx *c, const char *tag, char *args, size_t sz)
{
	size_t tl = strlen(tag);
	char line[600];

	if (c->peer_done)
		return fail(c, "waiting for '%s': the peer already ended the check", tag);
	if (ctl_readline(c, line, sizeof(line), c->wait_ms))
		return fail(c, "waiting for '%s' from the peer", tag);
	if (!strncmp(line, "DONE ", 5)) {
		c->peer_done = true;
		c->peer_res = parse_res(line + 5);
		return fail(c, "waiting for '%s': the peer ended the check (%s)", tag, line + 5);
	}
	if (strncmp(line, "S ", 2) || strncmp(line + 2, tag, tl) ||
	    (line[2 + tl] && line[2 + tl] != ' '))
		return fail(c, "control desync: expected 'S %s', got '%s'", tag, line);
	if (args)
		snprintf(args, sz, "%s", line[2 + tl] ? line + 3 + tl : "");
	return 0;
}

/* ------------------------------------------------------------ check table */

/* The check groups, in the order their checks run. */
static const struct check_group *const groups[] = {
	&data_checks, &nonblock_checks, &poll_checks, &shutdown_checks, &options_checks,
	&connect_checks,
};

/* Every check, in the order they run: the groups' tables one after the other. */
static const struct check *checks[MAX_CHECKS];
static int nchecks;

static int collect_checks(void)
{
	int g, i;

	for (g = 0; g < ARRAY_SIZE(groups); g++) {
		for (i = 0; i < groups[g]->n; i++) {
			if (nchecks == MAX_CHECKS) {
				fprintf(stderr, "sockets: more than %d checks\n", MAX_CHECKS);
				return -1;
			}
			checks[nchecks++] = &groups[g]->checks[i];
		}
	}
	return 0;
}

/* ---------------------------------------------------------------- harness */

static void on_alarm(int sig)
{
	ssize_t r;

	(void)sig;
	r = write(STDOUT_FILENO, watchdog_msg, strlen(watchdog_msg));
	(void)r;
	_exit(1);
}

static void on_sigpipe(int sig)
{
	(void)sig;
	sigpipes++;
}

static const struct check *find_check(const char *name)
{
	int i;

	for (i = 0; i < nchecks; i++)
		if (!strcmp(checks[i]->name, name))
			return checks[i];
	return NULL;
}

/* Server: close whatever an earlier check left in the accept queue. */
static void drain_backlog(struct ctx *c)
{
	int fd;

	while ((fd = accept4(c->lfd, NULL, NULL, SOCK_CLOEXEC)) >= 0)
		close(fd);
}

static int worst(int a, int b)
{
	if (a == R_FAIL || b == R_FAIL)
		return R_FAIL;
	if (a == R_SKIP || b == R_SKIP)
		return R_SKIP;
	return R_PASS;
}

static const char *res_name(int r)
{
	return r == R_PASS ? "pass" : r == R_SKIP ? "skip" : "fail";
}

/*
 * Run check @chk as test @num: the check itself, then "DONE res" both ways, the
 * NTB counters while the connections are still open, then "RESULT res reason"
 * both ways. Both sides print the same verdict.
 */
static int run_check(struct ctx *c, const struct check *chk, int num)
{
	int budget = chk->budget_s + (int)(c->big_mib / 8);
	char line[600], reason[200] = "";
	int res, peer = R_FAIL;
	double end, t0 = now_ms();

	snprintf(watchdog_msg, sizeof(watchdog_msg),
		 "# %s: %s: FAIL: watchdog: the check took longer than %d s\n"
		 "not ok %d %s\nBail out! %s: watchdog expired\n",
		 side(c), chk->name, budget, num, chk->name, side(c));
	alarm(budget);
	c->chk = chk;
	c->peer_done = false;
	c->skip[0] = 0;
	c->wait_ms = budget * 1000;
	res = chk->fn(c);
	if (res != R_PASS)
		close_all(c);

	/* DONE: both ends are finished with the data connections */
	if (!c->ctl_dead)
		ctl_send(c, "DONE %s", res_name(res));
	end = now_ms() + budget * 1000.0;
	while (!c->peer_done && !c->ctl_dead) {
		int left = end - now_ms();

		if (ctl_readline(c, line, sizeof(line), left > 0 ? left : 1))
			break;
		if (!strncmp(line, "DONE ", 5)) {
			c->peer_done = true;
			c->peer_res = parse_res(line + 5);
		}
	}
	if (!c->peer_done)
		res = fail(c, "no DONE from the peer");
	peer = c->peer_res;
	if (res == R_PASS && peer != R_FAIL && check_counters(c))
		res = R_FAIL;
	close_all(c);

	/* RESULT: agree on the verdict */
	if (!c->ctl_dead)
		ctl_send(c, "RESULT %s %s", res_name(res), c->skip);
	for (;;) {
		int left = end - now_ms();

		if (c->ctl_dead || ctl_readline(c, line, sizeof(line), left > 0 ? left : 1)) {
			peer = R_FAIL;
			fail(c, "no RESULT from the peer");
			break;
		}
		if (!strncmp(line, "RESULT ", 7)) {
			char *sp = strchr(line + 7, ' ');

			peer = parse_res(line + 7);
			if (sp && peer == R_SKIP && !c->skip[0])
				snprintf(reason, sizeof(reason), "%s", sp + 1);
			break;
		}
	}
	alarm(0);
	if (c->skip[0])
		snprintf(reason, sizeof(reason), "%s", c->skip);
	if (res == R_PASS && peer == R_FAIL)
		printf("# %s: %s: the peer failed this check (see its output)\n",
		       side(c), chk->name);
	res = worst(res, peer);
	printf("# %s: %s: %.0f ms\n", side(c), chk->name, now_ms() - t0);
	if (res == R_FAIL)
		printf("not ok %d %s\n", num, chk->name);
	else if (res == R_SKIP)
		printf("ok %d %s # SKIP %s\n", num, chk->name, reason[0] ? reason : "");
	else
		printf("ok %d %s\n", num, chk->name);
	c->chk = NULL;
	return res;
}

static int resolve(const char *addr, int port, struct sockaddr_storage *ss, socklen_t *len)
{
	struct addrinfo hints = {
		.ai_family = strchr(addr, ':') ? AF_INET6 : AF_INET,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
	};
	struct addrinfo *ai;
	char ps[16];
	int err;

	snprintf(ps, sizeof(ps), "%d", port);
	err = getaddrinfo(addr, ps, &hints, &ai);
	if (err) {
		fprintf(stderr, "sockets: bad address %s: %s\n", addr, gai_strerror(err));
		return -1;
	}
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

static void summary(int pass, int fail_n, int skip_n)
{
	printf("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:%d error:0\n",
	       pass, fail_n, skip_n);
}

static int listen_on(const struct sockaddr_storage *ss, bool ulp, int backlog)
{
	int fd, one = 1;

	fd = socket(opt.family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		printf("Bail out! socket: %s\n", en(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)ss, opt.salen)) {
		printf("Bail out! bind: %s\n", en(errno));
		goto err;
	}
	if (ulp && set_ulp(fd)) {
		printf("Bail out! setsockopt(TCP_ULP, \"ntbsmc\") on the listening socket: %s%s\n",
		       en(errno), errno == ENOENT ? " (is the ntbsmc module loaded?)" : "");
		goto err;
	}
	if (listen(fd, backlog)) {
		printf("Bail out! listen: %s\n", en(errno));
		goto err;
	}
	return fd;
err:
	close(fd);
	return -1;
}

static int run_server(struct ctx *c)
{
	int cl, pass = 0, fails = 0, skips = 0, n = 0, num = 0;
	char line[600];
	struct pollfd p;

	c->lfd = listen_on(&opt.data_sa, opt.ulp, 4096);
	if (c->lfd < 0)
		return 1;
	cl = listen_on(&opt.ctl_sa, false, 4);
	if (cl < 0)
		return 1;
	if (opt.ulp) {
		struct ntbsmc_info info;
		socklen_t len;

		if (get_info(c->lfd, &info, &len))
			printf("# server: listening socket: NTBSMC_INFO: %s\n", en(errno));
		else
			printf("# server: listening socket: mode %s\n", MODE_NAME(info.mode));
	}
	p.fd = cl;
	p.events = POLLIN;
	if (poll(&p, 1, SERVER_WAIT_MS) != 1) {
		printf("Bail out! server: no client within %d s\n", SERVER_WAIT_MS / 1000);
		return 1;
	}
	c->ctl = accept4(cl, NULL, NULL, SOCK_CLOEXEC);
	close(cl);
	if (c->ctl < 0) {
		printf("Bail out! server: accept of the control connection: %s\n", en(errno));
		return 1;
	}
	set_timeo(c, c->ctl, SO_RCVTIMEO, SERVER_WAIT_MS);
	if (ctl_readline(c, line, sizeof(line), SERVER_WAIT_MS) ||
	    sscanf(line, "PLAN %d %d %ld", &n, &c->conns_n, &c->big_mib) != 3) {
		printf("Bail out! server: no PLAN from the client ('%s')\n", line);
		return 1;
	}
	if (c->conns_n + 16 > c->maxconns) {
		free(c->conns);
		c->maxconns = c->conns_n + 16;
		c->conns = calloc(c->maxconns, sizeof(*c->conns));
		if (!c->conns) {
			printf("Bail out! server: out of memory\n");
			return 1;
		}
	}
	printf("1..%d\n", n);
	for (;;) {
		const struct check *chk;
		int res;

		if (ctl_readline(c, line, sizeof(line), SERVER_WAIT_MS)) {
			printf("Bail out! server: lost the client\n");
			return 1;
		}
		if (!strcmp(line, "BYE"))
			break;
		if (strncmp(line, "RUN ", 4) || !(chk = find_check(line + 4))) {
			printf("Bail out! server: unexpected '%s' from the client\n", line);
			return 1;
		}
		drain_backlog(c);
		if (ctl_send(c, "READY %s", chk->name))
			return 1;
		res = run_check(c, chk, ++num);
		if (res == R_PASS)
			pass++;
		else if (res == R_SKIP)
			skips++;
		else
			fails++;
		if (c->ctl_dead) {
			printf("Bail out! server: control connection lost\n");
			return 1;
		}
	}
	summary(pass, fails, skips);
	if (num != n) {
		printf("# server: the client announced %d checks but ran %d\n", n, num);
		return 1;
	}
	return fails ? 1 : 0;
}

static int ctl_connect(struct ctx *c)
{
	double end = now_ms() + CONNECT_WAIT_MS;
	int err;

	for (;;) {
		c->ctl = socket(opt.family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (c->ctl < 0) {
			printf("Bail out! socket: %s\n", en(errno));
			return -1;
		}
		set_timeo(c, c->ctl, SO_SNDTIMEO, 2000);
		if (!connect(c->ctl, (struct sockaddr *)&opt.ctl_sa, opt.salen))
			break;
		err = errno;
		close(c->ctl);
		if (now_ms() > end) {
			printf("Bail out! client: connect to the server's control port: %s (tried %d s)\n",
			       en(err), CONNECT_WAIT_MS / 1000);
			return -1;
		}
		msleep(100);
	}
	set_timeo(c, c->ctl, SO_RCVTIMEO, SERVER_WAIT_MS);
	return 0;
}

static int run_client(struct ctx *c, const struct check **plan, int n)
{
	int i, pass = 0, fails = 0, skips = 0;
	char line[600];

	if (opt.ulp) {
		/* fail early and clearly if the ULP is not available */
		int fd = socket(opt.family, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0 || set_ulp(fd)) {
			printf("Bail out! setsockopt(TCP_ULP, \"ntbsmc\"): %s%s\n", en(errno),
			       errno == ENOENT ? " (is the ntbsmc module loaded?)" : "");
			return 1;
		}
		close(fd);
	}
	if (ctl_connect(c))
		return 1;
	c->conns_n = opt.conns;
	c->big_mib = opt.big_mib;
	printf("1..%d\n", n);
	if (ctl_send(c, "PLAN %d %d %ld", n, c->conns_n, c->big_mib))
		return 1;
	for (i = 0; i < n; i++) {
		int res;

		if (ctl_send(c, "RUN %s", plan[i]->name) ||
		    ctl_readline(c, line, sizeof(line), 30000) ||
		    strncmp(line, "READY ", 6) || strcmp(line + 6, plan[i]->name)) {
			printf("Bail out! client: the server did not start %s\n", plan[i]->name);
			return 1;
		}
		res = run_check(c, plan[i], i + 1);
		if (res == R_PASS)
			pass++;
		else if (res == R_SKIP)
			skips++;
		else
			fails++;
		if (c->ctl_dead) {
			printf("Bail out! client: control connection lost\n");
			return 1;
		}
	}
	ctl_send(c, "BYE");
	summary(pass, fails, skips);
	return fails ? 1 : 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: sockets server|client [options] ADDR PORT\n"
		"       sockets --list\n"
		"  --ulp              use the ntbsmc ULP (TCP_ULP) on the data sockets\n"
		"  --expect ntb|tcp   mode every data connection must be in\n"
		"  --only N[,N...]    run only these checks\n"
		"  --list             list the checks\n"
		"  --conns N          connections of many_conns (default 200)\n"
		"  --big MIB          add a transfer of MIB MiB to data_sizes\n"
		"PORT is the control connection, PORT+1 the data listener. The server runs\n"
		"what the client asks for (its --only, --conns, --big); --ulp and --expect\n"
		"apply to each side's own sockets. Exit 0 if all passed, 1 otherwise.\n");
}

/* Select the checks of --only, in table order. */
static int make_plan(const struct check **plan)
{
	int i, n = 0;

	if (opt.only) {
		char *list = strdup(opt.only), *tok, *save;

		for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			if (!find_check(tok)) {
				fprintf(stderr, "sockets: unknown check '%s' (see --list)\n", tok);
				free(list);
				return -1;
			}
		}
		free(list);
	}
	for (i = 0; i < nchecks; i++) {
		if (opt.only) {
			const char *p = opt.only;
			size_t l = strlen(checks[i]->name);
			bool found = false;

			while (p && *p) {
				if (!strncmp(p, checks[i]->name, l) && (p[l] == ',' || !p[l]))
					found = true;
				p = strchr(p, ',');
				if (p)
					p++;
			}
			if (!found)
				continue;
		}
		plan[n++] = checks[i];
	}
	return n;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "ulp", no_argument, NULL, 'u' },
		{ "expect", required_argument, NULL, 'e' },
		{ "only", required_argument, NULL, 'o' },
		{ "list", no_argument, NULL, 'l' },
		{ "conns", required_argument, NULL, 'c' },
		{ "big", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const struct check *plan[MAX_CHECKS];
	struct sigaction sa = { 0 };
	struct ctx c = { .ctl = -1, .lfd = -1 };
	bool list = false;
	struct rlimit rl;
	int o, n, ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((o = getopt_long(argc, argv, "+", lopts, NULL)) != -1 || optind < argc) {
		if (o == -1) {
			/* a positional argument; options may follow it */
			if (!strcmp(argv[optind], "server") || !strcmp(argv[optind], "client")) {
				if (opt.addr) {
					usage(stderr);
					return 2;
				}
				opt.server = argv[optind][0] == 's';
				opt.addr = "";
			} else if (opt.addr && !*opt.addr) {
				opt.addr = argv[optind];
			} else if (opt.addr && !opt.port) {
				opt.port = atoi(argv[optind]);
				if (opt.port <= 0 || opt.port > 65534) {
					fprintf(stderr, "sockets: bad port %s\n", argv[optind]);
					return 2;
				}
			} else {
				usage(stderr);
				return 2;
			}
			optind++;
			continue;
		}
		switch (o) {
		case 'u':
			opt.ulp = true;
			break;
		case 'e':
			if (!strcmp(optarg, "ntb"))
				opt.expect = EXPECT_NTB;
			else if (!strcmp(optarg, "tcp"))
				opt.expect = EXPECT_TCP;
			else {
				fprintf(stderr, "sockets: --expect ntb|tcp\n");
				return 2;
			}
			break;
		case 'o':
			opt.only = optarg;
			break;
		case 'l':
			list = true;
			break;
		case 'c':
			opt.conns = atoi(optarg);
			if (opt.conns < 1 || opt.conns > 100000) {
				fprintf(stderr, "sockets: bad --conns %s\n", optarg);
				return 2;
			}
			break;
		case 'b':
			opt.big_mib = atol(optarg);
			if (opt.big_mib < 1) {
				fprintf(stderr, "sockets: bad --big %s\n", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (collect_checks())
		return 2;
	n = make_plan(plan);
	if (n < 0)
		return 2;
	if (list) {
		for (o = 0; o < n; o++)
			printf("%s\n", plan[o]->name);
		return 0;
	}
	if (!opt.addr || !*opt.addr || !opt.port) {
		usage(stderr);
		return 2;
	}
	if (resolve(opt.addr, opt.port, &opt.ctl_sa, &opt.salen) ||
	    resolve(opt.addr, opt.port + 1, &opt.data_sa, &opt.salen))
		return 2;
	opt.family = opt.ctl_sa.ss_family;

	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	sa.sa_handler = on_sigpipe;
	sigaction(SIGPIPE, &sa, NULL);
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	c.srv = opt.server;
	c.maxconns = opt.conns + 16;
	c.conns = calloc(c.maxconns, sizeof(*c.conns));
	if (!c.conns)
		return 1;

	printf("TAP version 13\n");
	printf("# %s: %s %s port %d (data %d)%s%s%s\n", side(&c), opt.server ? "listening on" :
	       "connecting to", opt.addr, opt.port, opt.port + 1, opt.ulp ? ", ULP ntbsmc" : "",
	       opt.expect == EXPECT_NTB ? ", expecting NTB mode" : "",
	       opt.expect == EXPECT_TCP ? ", expecting TCP mode" : "");
	ret = opt.server ? run_server(&c) : run_client(&c, plan, n);
	if (c.ctl >= 0)
		close(c.ctl);
	return ret;
}
