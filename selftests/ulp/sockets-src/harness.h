// SPDX-License-Identifier: GPL-2.0
/* sockets: what the harness and the check groups share: types, limits, helpers. */
#ifndef SOCKETS_HARNESS_H
#define SOCKETS_HARNESS_H

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <linux/ntbsmc.h>

#include "names.h"

#ifndef SOL_TCP
#define SOL_TCP		6
#endif
#ifndef TCP_ULP
#define TCP_ULP		31
#endif

#define R_FAIL		(-1)
#define R_PASS		0
#define R_SKIP		1

#define IO_TIMEOUT_S	10		/* SO_RCVTIMEO/SO_SNDTIMEO of data sockets */
#define CONNECT_WAIT_MS	10000		/* client retries the control connect */
#define ACCEPT_WAIT_MS	10000
#define MODE_WAIT_MS	10000		/* NTBSMC_MODE_HANDSHAKE must end by then */
#define SERVER_WAIT_MS	120000		/* server waits for the client this long */
#define CHUNK		(128 * 1024)
#define MAX_CHECKS	64

#define ARRAY_SIZE(a)	((int)(sizeof(a) / sizeof((a)[0])))

enum expect { EXPECT_NONE, EXPECT_NTB, EXPECT_TCP };

/* The command line (harness.c). */
struct options {
	bool server;
	bool ulp;
	enum expect expect;
	const char *only;
	const char *addr;
	int port;
	int conns;
	long big_mib;
	int family;
	struct sockaddr_storage ctl_sa, data_sa;
	socklen_t salen;
};

extern struct options opt;

/* A data connection of the running check, with the payload it moved. */
struct tconn {
	int fd;
	bool ntb;			/* NTB mode: verify the info counters */
	uint64_t tx, rx;		/* payload bytes written / read */
	struct ntbsmc_info base;	/* NTBSMC_INFO when it was tracked */
};

struct check;

struct ctx {
	bool srv;
	const struct check *chk;
	int ctl;			/* control connection */
	int lfd;			/* server: listener of the data connections */
	char rbuf[8192];		/* control connection input */
	size_t rlen;
	bool ctl_dead;
	bool peer_done;			/* the peer's DONE arrived during the check */
	int peer_res;
	struct tconn *conns;
	int nconns, maxconns;
	int wait_ms;			/* bound of control waits inside a check */
	int conns_n;			/* many_conns: connections (from the client) */
	long big_mib;			/* data_sizes: extra transfer (from the client) */
	char skip[160];
};

struct check {
	const char *name;
	int (*fn)(struct ctx *c);
	int budget_s;			/* watchdog */
};

/* The checks of one group (one file), in the order they run. */
struct check_group {
	const struct check *checks;
	int n;
};

/* The groups, each in its own file; harness.c runs them in this order. */
extern const struct check_group data_checks;		/* data.c */
extern const struct check_group nonblock_checks;	/* nonblock.c */
extern const struct check_group poll_checks;		/* poll.c */
extern const struct check_group shutdown_checks;	/* shutdown.c */
extern const struct check_group options_checks;		/* options.c */
extern const struct check_group connect_checks;		/* connect.c */

extern volatile sig_atomic_t sigpipes;		/* SIGPIPEs received (harness.c) */

/* harness.c: a check's reports */
void diag(const struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int fail(const struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int skip(struct ctx *c, const char *reason);

/* harness.c: the control connection and the checks' sync points on it */
int ctl_send(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int ctl_fill(struct ctx *c, int ms);
bool ctl_peer_gave_up(struct ctx *c);
int sync_wait(struct ctx *c, const char *tag, char *args, size_t sz);

/* Send a sync point "S tag args" of the running check. */
#define sync_send(c, ...)	ctl_send(c, "S " __VA_ARGS__)

/* The module's names (netlink-tool/names.c), valid until the end of the enclosing block. */
#define MODE_NAME(m)	mode_name((m), (char[32]){ 0 }, 32)
#define REASON_NAME(r)	reason_name((r), (char[32]){ 0 }, 32)

/* helpers.c: errno names, clocks, socket options */
const char *en(int e);
double now_ms(void);
void msleep(int ms);
const char *fmt_sa(const struct sockaddr_storage *ss, char *buf, size_t len);
int set_int(const struct ctx *c, int fd, int level, int name, int val, const char *what);
int get_int(const struct ctx *c, int fd, int level, int name, int *val, const char *what);
int set_timeo(const struct ctx *c, int fd, int name, int ms);
int set_nonblock(const struct ctx *c, int fd, bool on);
int set_ulp(int fd);

/* helpers.c: the seeded data stream */
void gen_bytes(uint64_t seed, uint64_t off, uint8_t *p, size_t len);

/* helpers.c: the data connections of a check, their mode and NTB counters */
struct tconn *find_conn(struct ctx *c, int fd);
void account(struct ctx *c, int fd, uint64_t tx, uint64_t rx);
struct tconn *track(struct ctx *c, int fd);
void untrack(struct ctx *c, int fd);
void no_counters(struct ctx *c, int fd);
void close_conn(struct ctx *c, int fd);
void close_all(struct ctx *c);
int get_info(int fd, struct ntbsmc_info *info, socklen_t *len);
int check_mode(struct ctx *c, struct tconn *t, const char *what);
int check_counters(struct ctx *c);
int setup_data_fd(struct ctx *c, int fd);
int data_connect_ex(struct ctx *c, bool ulp, bool mode);
int data_connect(struct ctx *c);
int data_accept_ex(struct ctx *c, bool mode);
int data_accept(struct ctx *c);
int data_conn(struct ctx *c);

/* helpers.c: data I/O */
int send_all(struct ctx *c, int fd, const void *buf, size_t len, const char *what);
int recv_all(struct ctx *c, int fd, void *buf, size_t len, const char *what);
int expect_eof(struct ctx *c, int fd, const char *what);
int send_stream(struct ctx *c, int fd, uint64_t seed, uint64_t len, uint64_t *sizes,
		uint64_t *sum);
int recv_stream(struct ctx *c, int fd, uint64_t seed, uint64_t len, uint64_t *sizes,
		uint64_t *sum);
int xfer(struct ctx *c, int fd, bool sender_srv, uint64_t seed, uint64_t len, uint64_t wseed,
	 uint64_t rseed);

/* helpers.c: readiness */
const char *ev_str(int ev, char *buf, size_t len);
int poll_one(struct ctx *c, int fd, short events, int ms);
int fill_nonblock(struct ctx *c, int fd, uint64_t seed, uint64_t *total);

#endif
