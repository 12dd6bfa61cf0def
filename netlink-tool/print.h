// SPDX-License-Identifier: GPL-2.0
/* ntbsmc tool: one set of print calls that writes either text or JSON (iproute2 style). */
#ifndef NTBSMC_PRINT_H
#define NTBSMC_PRINT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/*
 * Every field is printed by one call that names both forms: KEY for JSON and FMT for
 * text. FMT holds at most one conversion, "%s" (with optional width/flags), which
 * receives the value already rendered as text; a missing value prints as "-" in text
 * and null in JSON. Which forms a call produces:
 */
enum print_type {
	PRINT_FP	= 1,	/* text mode only */
	PRINT_JSON	= 2,	/* JSON mode only */
	PRINT_ANY	= 3,	/* both */
};

void print_init(FILE *out, bool json, bool pretty);
/* Writes to OUT from now on: for a command that must not hold its output back. */
void print_set_output(FILE *out);
bool print_json(void);

/* Objects and arrays exist in JSON only; KEY is NULL inside an array or at top level. */
void print_open_object(const char *key);
void print_close_object(void);
void print_open_array(const char *key);
void print_close_array(void);

void print_string(enum print_type t, const char *key, const char *fmt, const char *value);
void print_u64(enum print_type t, const char *key, const char *fmt, uint64_t value);
/* Text says "yes"/"no", JSON true/false. */
void print_bool(enum print_type t, const char *key, const char *fmt, bool value);
void print_null(enum print_type t, const char *key, const char *fmt);
/* Literal text (labels, line breaks): text mode only. */
void print_fp(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* NTBSMC_PRINT_H */
