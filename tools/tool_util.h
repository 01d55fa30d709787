/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the command-line tools (tools/fpgacomm-*.c): usage
 * errors, numeric arguments, and the text they print.
 */
#ifndef FC_TOOL_UTIL_H
#define FC_TOOL_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit status for bad usage. */
#define EXIT_USAGE 2

/* The tool's name in messages; each tool defines it. */
extern const char *const prog;

/*
 * other_option - the default case of a tool's getopt_long() switch: -h
 * (--help) prints @usage on stdout and exits 0; anything else is an option
 * getopt_long() has already complained about: "Try 'PROG --help'." on
 * stderr, and exit with EXIT_USAGE.
 */
void __attribute__((noreturn)) other_option(int c, void (*usage)(FILE *f));

/* "PROG: <message>" and "Try 'PROG --help'." on stderr, exit EXIT_USAGE. */
void __attribute__((noreturn, format(printf, 1, 2)))
usage_error(const char *fmt, ...);

/*
 * parse_u64 - a decimal or 0x-prefixed number, and nothing else (no sign, no
 * blanks).
 * RETURN VALUE: 0, -EINVAL, or -ERANGE when it does not fit in 64 bits.
 */
int parse_u64(const char *s, uint64_t *val);

/*
 * parse_size - the same with an optional binary suffix from @suffixes, a
 * subset of "KMGT" (2^10, 2^20, 2^30, 2^40; either case); with @unit, "B"
 * or "iB" may follow it (KB, KiB...).
 * RETURN VALUE: as parse_u64().
 */
int parse_size(const char *s, uint64_t *val, const char *suffixes, bool unit);

/*
 * parse_list - a comma-separated list of at most @cap numbers into @v, each
 * read by parse_size() with @suffixes (NULL: plain numbers, parse_u64())
 * and within @min..@max. Anything else is a usage error naming @what
 * ("size"); so is an empty item.
 * RETURN VALUE: how many numbers were read.
 */
unsigned int parse_list(const char *s, uint64_t *v, unsigned int cap,
			const char *suffixes, uint64_t min, uint64_t max,
			const char *what);

/* @s as a JSON string, quoted and escaped, on stdout. */
void json_str(const char *s);

/*
 * human_size - @bytes in the largest binary unit (B, KiB ... PiB) that
 * leaves at least 1, with @decimals digits after the point unless whole.
 * RETURN VALUE: @buf.
 */
const char *human_size(uint64_t bytes, int decimals, char *buf, size_t len);

/* CLOCK_MONOTONIC in microseconds, for timing a benchmark's rounds. */
double tool_now_us(void);
/* ... and in seconds. */
double tool_now_s(void);

/* The median of @n values (sorts @v). */
double tool_median(double *v, unsigned int n);

#endif /* FC_TOOL_UTIL_H */
