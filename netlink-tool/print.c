// SPDX-License-Identifier: GPL-2.0
/* ntbsmc tool: text/JSON output helpers and a small JSON writer (compact or pretty). */

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "print.h"

#define JSON_MAX_DEPTH	16
#define JSON_INDENT	4

static FILE *out;
static bool json, pretty;

/* One entry per open JSON container: is it an array, how many members so far. */
static struct {
	bool array;
	unsigned int count;
} stack[JSON_MAX_DEPTH];
static int depth;

void print_init(FILE *f, bool as_json, bool as_pretty)
{
	out = f;
	json = as_json;
	pretty = as_pretty;
	depth = 0;
}

void print_set_output(FILE *f)
{
	out = f;
}

bool print_json(void)
{
	return json;
}

static void json_string(const char *s)
{
	const unsigned char *p;

	fputc('"', out);
	for (p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", out);
			break;
		case '\\':
			fputs("\\\\", out);
			break;
		case '\n':
			fputs("\\n", out);
			break;
		case '\t':
			fputs("\\t", out);
			break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				fprintf(out, "\\u%04x", *p);
			else
				fputc(*p, out);
		}
	}
	fputc('"', out);
}

static void json_newline(void)
{
	if (pretty)
		fprintf(out, "\n%*s", depth * JSON_INDENT, "");
}

/* Separator, indentation and "key": before a value or a container that opens. */
static void json_member(const char *key)
{
	if (!depth || depth > JSON_MAX_DEPTH)
		return;
	if (stack[depth - 1].count++)
		fputc(',', out);
	json_newline();
	if (!stack[depth - 1].array) {
		json_string(key ? key : "");
		fputs(pretty ? ": " : ":", out);
	}
}

static void json_open(const char *key, bool array)
{
	if (!json)
		return;
	json_member(key);
	fputc(array ? '[' : '{', out);
	if (depth < JSON_MAX_DEPTH) {
		stack[depth].array = array;
		stack[depth].count = 0;
	}
	depth++;
}

static void json_close(bool array)
{
	if (!json || !depth)
		return;
	depth--;
	if (depth < JSON_MAX_DEPTH && stack[depth].count)
		json_newline();
	fputc(array ? ']' : '}', out);
	if (!depth)
		fputc('\n', out);
}

void print_open_object(const char *key)
{
	json_open(key, false);
}

void print_close_object(void)
{
	json_close(false);
}

void print_open_array(const char *key)
{
	json_open(key, true);
}

void print_close_array(void)
{
	json_close(true);
}

/* Text mode: the value goes through FMT; control characters would garble a terminal. */
static void text_value(const char *fmt, const char *value)
{
	char buf[256];
	size_t i;

	if (!fmt)
		return;
	for (i = 0; value[i] && i < sizeof(buf) - 1; i++)
		buf[i] = isprint((unsigned char)value[i]) ? value[i] : '?';
	buf[i] = '\0';
	fprintf(out, fmt, buf);
}

void print_string(enum print_type t, const char *key, const char *fmt, const char *value)
{
	if (!value) {
		print_null(t, key, fmt);
		return;
	}
	if (json) {
		if (t & PRINT_JSON) {
			json_member(key);
			json_string(value);
		}
	} else if (t & PRINT_FP) {
		text_value(fmt, value);
	}
}

void print_u64(enum print_type t, const char *key, const char *fmt, uint64_t value)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRIu64, value);
	if (json) {
		if (t & PRINT_JSON) {
			json_member(key);
			fputs(buf, out);
		}
	} else if (t & PRINT_FP) {
		text_value(fmt, buf);
	}
}

void print_bool(enum print_type t, const char *key, const char *fmt, bool value)
{
	if (json) {
		if (t & PRINT_JSON) {
			json_member(key);
			fputs(value ? "true" : "false", out);
		}
	} else if (t & PRINT_FP) {
		text_value(fmt, value ? "yes" : "no");
	}
}

void print_null(enum print_type t, const char *key, const char *fmt)
{
	if (json) {
		if (t & PRINT_JSON) {
			json_member(key);
			fputs("null", out);
		}
	} else if (t & PRINT_FP) {
		text_value(fmt, "-");
	}
}

void print_fp(const char *fmt, ...)
{
	va_list ap;

	if (json)
		return;
	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
}
