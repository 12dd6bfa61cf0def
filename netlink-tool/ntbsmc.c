// SPDX-License-Identifier: GPL-2.0
/* ntbsmc tool: command line, object dispatch, help, network namespaces, exit codes. */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/ntbsmc.h>

#include "tool.h"

/* From ../VERSION, by the Makefile: one version for module, tools and packages. */
#ifndef NTBSMC_TOOL_VERSION
#error "NTBSMC_TOOL_VERSION not defined: build with netlink-tool/Makefile"
#endif

#define NETNS_RUN_DIR "/run/netns"

static const char *opt_netns;
bool show_details;

int fail(int code, const char *fmt, ...)
{
	va_list ap;

	fputs("Error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return code;
}

bool parse_decimal(const char *s, unsigned long max, unsigned long *val)
{
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*val = strtoul(s, &end, 10);
	return !*end && !errno && *val <= max;
}

int usage_error(const char *help, const char *fmt, ...)
{
	va_list ap;

	fputs("Error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (try \"ntbsmc %s%shelp\")\n", help ? help : "", help ? " " : "");
	return EXIT_USAGE;
}

static bool is_prefix(const char *word, const char *name)
{
	return name && !strncmp(word, name, strlen(word));
}

int parse_keyword(const char *word, const struct keyword *kw, int n, const char *what,
		  const char *help)
{
	int i, found = -1, matches = 0, preferred = -1, npreferred = 0;
	char list[256] = "";

	for (i = 0; i < n; i++)
		if (!strcmp(word, kw[i].name) || (kw[i].alias && !strcmp(word, kw[i].alias)))
			return i;
	for (i = 0; i < n; i++) {
		if (!is_prefix(word, kw[i].name) && !is_prefix(word, kw[i].alias))
			continue;
		found = i;
		matches++;
		if (kw[i].preferred) {
			preferred = i;
			npreferred++;
		}
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
			 matches > 1 ? ", " : "", kw[i].name);
	}
	if (matches == 1)
		return found;
	if (matches > 1 && npreferred == 1)
		return preferred;
	if (matches > 1)
		usage_error(help, "ambiguous %s \"%s\": could be %s", what, word, list);
	else
		usage_error(help, "unknown %s \"%s\"", what, word);
	return -1;
}

bool is_help(const char *word)
{
	return !strcmp(word, "help") || !strcmp(word, "-h") || !strcmp(word, "--help");
}

int netns_open(const char *name, int *fd)
{
	char path[PATH_MAX];

	if (!*name)
		return usage_error(NULL, "empty network namespace name");
	if (strchr(name, '/'))
		snprintf(path, sizeof(path), "%s", name);
	else if (!strcmp(name, ".") || !strcmp(name, "..") ||
		 snprintf(path, sizeof(path), "%s/%s", NETNS_RUN_DIR, name) >= (int)sizeof(path))
		return usage_error(NULL, "invalid network namespace name \"%s\"", name);

	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd >= 0)
		return EXIT_OK;
	switch (errno) {
	case ENOENT:
		return fail(EXIT_USAGE, "network namespace \"%s\" not found (no %s)", name, path);
	case EACCES:
	case EPERM:
		return fail(EXIT_PERM, "cannot open network namespace \"%s\": permission denied",
			    name);
	default:
		return fail(EXIT_ERROR, "cannot open network namespace \"%s\": %s", name,
			    strerror(errno));
	}
}

/* Like "ip -n": everything after this runs in that namespace. */
static int netns_enter(const char *name)
{
	int fd, rc, err;

	rc = netns_open(name, &fd);
	if (rc)
		return rc;
	rc = setns(fd, CLONE_NEWNET);
	err = errno;
	close(fd);
	if (!rc)
		return EXIT_OK;
	switch (err) {
	case EPERM:
		return fail(EXIT_PERM, "cannot enter network namespace \"%s\": needs CAP_SYS_ADMIN",
			    name);
	case EINVAL:
		return fail(EXIT_USAGE, "\"%s\" is not a network namespace", name);
	default:
		return fail(EXIT_ERROR, "cannot enter network namespace \"%s\": %s", name,
			    strerror(err));
	}
}

int session_netns(void)
{
	return opt_netns ? netns_enter(opt_netns) : EXIT_OK;
}

int session_start(void)
{
	int rc;

	rc = session_netns();
	if (rc)
		return rc;
	return kern_open();
}

static void usage_options(FILE *f)
{
	fprintf(f,
		"Usage: ntbsmc [OPTIONS] OBJECT { COMMAND | help }\n"
		"       ntbsmc -V | --version\n"
		"       ntbsmc -h | --help | help\n"
		"where  OBJECT := { dev | linkgroup | conn | stats | policy | check }\n"
		"       OPTIONS := { -j | --json    output JSON\n"
		"                    -p | --pretty  pretty-print JSON\n"
		"                    -d | --details more details (conn show)\n"
		"                    -n | --netns NETNS  run in network namespace NETNS\n"
		"                    -V | --version -h | --help }\n");
}

static void usage(FILE *f)
{
	usage_options(f);
	fputc('\n', f);
	usage_dev(f);
	usage_lgr(f);
	usage_conn(f);
	usage_stats(f);
	usage_policy(f);
	usage_check(f);
	fprintf(f, "\nObjects and commands may be abbreviated (\"ntbsmc d s\").\n"
		"Exit codes: 0 ok, 1 error, 2 bad arguments, 3 module not loaded,\n"
		"            4 permission denied, 5 no such device, link group or rule,\n"
		"            6 check could not connect.\n");
}

enum { OBJ_DEV, OBJ_LGR, OBJ_CONN, OBJ_STATS, OBJ_POLICY, OBJ_CHECK, OBJ_HELP };

static const struct keyword objects[] = {
	[OBJ_DEV]	= { "dev", "device", false },
	[OBJ_LGR]	= { "linkgroup", "lgr", false },
	[OBJ_CONN]	= { "conn", "connection", false },
	[OBJ_STATS]	= { "stats", "statistics", false },
	[OBJ_POLICY]	= { "policy", NULL, false },
	[OBJ_CHECK]	= { "check", NULL, false },
	[OBJ_HELP]	= { "help", NULL, false },
};

static int dispatch(int argc, char **argv)
{
	int obj;

	if (!argc) {
		usage_options(stderr);
		return usage_error(NULL, "no object given");
	}
	obj = parse_keyword(argv[0], objects, sizeof(objects) / sizeof(objects[0]), "object",
			    NULL);
	switch (obj) {
	case OBJ_DEV:
		return do_dev(argc - 1, argv + 1);
	case OBJ_LGR:
		return do_lgr(argc - 1, argv + 1);
	case OBJ_CONN:
		return do_conn(argc - 1, argv + 1);
	case OBJ_STATS:
		return do_stats(argc - 1, argv + 1);
	case OBJ_POLICY:
		return do_policy(argc - 1, argv + 1);
	case OBJ_CHECK:
		return do_check(argc - 1, argv + 1);
	case OBJ_HELP:
		if (argc > 1)
			return usage_error(NULL, "unexpected argument \"%s\"", argv[1]);
		usage(stdout);
		return EXIT_OK;
	default:
		return EXIT_USAGE;
	}
}

static const struct option long_options[] = {
	{ "json",	no_argument,		NULL, 'j' },
	{ "pretty",	no_argument,		NULL, 'p' },
	{ "details",	no_argument,		NULL, 'd' },
	{ "netns",	required_argument,	NULL, 'n' },
	{ "version",	no_argument,		NULL, 'V' },
	{ "help",	no_argument,		NULL, 'h' },
	{ NULL,		0,			NULL, 0 },
};

int main(int argc, char **argv)
{
	bool json = false, pretty = false;
	char *buf = NULL;
	size_t len = 0;
	FILE *out;
	int c, rc;

	opterr = 0;
	/* '+': options come before the object, like ip(8); ':': report missing values. */
	while ((c = getopt_long(argc, argv, "+:jpdn:Vh", long_options, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'p':
			pretty = true;
			break;
		case 'd':
			show_details = true;
			break;
		case 'n':
			opt_netns = optarg;
			break;
		case 'V':
			printf("ntbsmc utility, version %s (generic netlink family %s, version %d)\n",
			       NTBSMC_TOOL_VERSION, NTBSMC_GENL_NAME, NTBSMC_GENL_VERSION);
			return EXIT_OK;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		case ':':
			return usage_error(NULL, "option \"%s\" needs a value", argv[optind - 1]);
		default:
			if (optopt)
				return usage_error(NULL, "unknown option \"-%c\"", optopt);
			return usage_error(NULL, "unknown option \"%s\"", argv[optind - 1]);
		}
	}

	/* Output is held back so that a failing command prints nothing on stdout. */
	out = open_memstream(&buf, &len);
	if (!out)
		return fail(EXIT_ERROR, "out of memory");
	print_init(out, json, pretty);

	rc = dispatch(argc - optind, argv + optind);
	kern_close();

	if (fclose(out)) {
		free(buf);
		return fail(EXIT_ERROR, "out of memory");
	}
	if (!rc && len)
		fwrite(buf, 1, len, stdout);
	free(buf);
	if (fflush(stdout) || ferror(stdout))
		return fail(EXIT_ERROR, "cannot write output: %s", strerror(errno));
	return rc;
}
