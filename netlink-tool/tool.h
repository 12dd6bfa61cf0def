// SPDX-License-Identifier: GPL-2.0
/* ntbsmc tool: declarations shared by the front end, the netlink layer and the objects. */
#ifndef NTBSMC_TOOL_H
#define NTBSMC_TOOL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <netlink/attr.h>

#include "names.h"
#include "print.h"

#define ARRAY_SIZE(a)	((int)(sizeof(a) / sizeof((a)[0])))

/* Exit codes (documented in ntbsmc.8). */
enum {
	EXIT_OK		= 0,
	EXIT_ERROR	= 1,	/* general or kernel error */
	EXIT_USAGE	= 2,	/* bad arguments */
	EXIT_NOMODULE	= 3,	/* generic netlink family "ntbsmc" not found */
	EXIT_PERM	= 4,	/* EPERM/EACCES */
	EXIT_NODEV	= 5,	/* no such device (or link group, or policy rule) */
	EXIT_CONNECT	= 6,	/* check: cannot resolve, connect or listen */
};

/* -d: more details, where a command has them (conn show). */
extern bool show_details;

/* Prints "Error: <message>" on stderr and returns CODE. */
int fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Like fail(EXIT_USAGE, ...), adding a pointer to "ntbsmc HELP help". */
int usage_error(const char *help, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A whole decimal number, digits only, at most MAX; false otherwise. */
bool parse_decimal(const char *s, unsigned long max, unsigned long *val);

/*
 * Keywords are prefix-matched: an exact name or alias wins, else the one entry the
 * word is a prefix of, else among several the one marked preferred (iproute2's
 * "s" for "show"); anything else is unknown or ambiguous.
 */
struct keyword {
	const char *name;
	const char *alias;
	bool preferred;
};

/*
 * Index of WORD in KW[N], or -1 after printing a usage error naming WHAT (e.g.
 * "dev command") with a pointer to "ntbsmc HELP help".
 */
int parse_keyword(const char *word, const struct keyword *kw, int n, const char *what,
		  const char *help);
bool is_help(const char *word);

/* Network namespaces: NAME is an "ip netns" name, or a path when it holds a '/'. */
int netns_open(const char *name, int *fd);
/* Enters the -n namespace (if any). */
int session_netns(void);
/* Enters the -n namespace (if any) and connects to the kernel module. */
int session_start(void);

/* Objects: ARGV starts after the object word. */
int do_dev(int argc, char **argv);
int do_lgr(int argc, char **argv);
int do_stats(int argc, char **argv);
int do_conn(int argc, char **argv);
int do_check(int argc, char **argv);
int do_policy(int argc, char **argv);
void usage_dev(FILE *f);
void usage_lgr(FILE *f);
void usage_stats(FILE *f);
void usage_conn(FILE *f);
void usage_check(FILE *f);
void usage_policy(FILE *f);

/* ---- talking to the kernel module (nl.c) ---- */

/*
 * Called with the top-level attributes (enum ntbsmc_attr, validated) of every reply
 * message. Returns 0 to go on, or an exit code (error already printed) to stop.
 */
typedef int (*kern_reply_fn)(struct nlattr **tb, void *arg);

int kern_open(void);
void kern_close(void);
struct nl_msg *kern_request(uint8_t cmd, bool dump);
/*
 * Sends MSG (and frees it), feeds the replies to FN and maps a kernel error to an
 * exit code with a message that starts with WHAT ("dev set"); PRIV says which
 * privilege a permission error means. Returns an exit code.
 */
int kern_run(struct nl_msg *msg, kern_reply_fn fn, void *arg, const char *what,
	     const char *priv);
/* A nested attribute that did not parse: prints the error, returns EXIT_ERROR. */
int kern_malformed(const char *what);

/* Attribute printers: a NULL attribute prints as "-" / null. */
void print_attr_u8(enum print_type t, const char *key, const char *fmt, const struct nlattr *a);
void print_attr_u32(enum print_type t, const char *key, const char *fmt, const struct nlattr *a);
void print_attr_u64(enum print_type t, const char *key, const char *fmt, const struct nlattr *a);
void print_attr_bool(enum print_type t, const char *key, const char *fmt, const struct nlattr *a);
void print_attr_string(enum print_type t, const char *key, const char *fmt,
		       const struct nlattr *a);
/* Binary attribute as lowercase hex without separators (like the kernel's %*phN). */
void print_attr_hex(enum print_type t, const char *key, const char *fmt, const struct nlattr *a);

#endif /* NTBSMC_TOOL_H */
