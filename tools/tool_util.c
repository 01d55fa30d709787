// SPDX-License-Identifier: MIT
/*
 * Helpers shared by the command-line tools; see tool_util.h.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tool_util.h"

static void __attribute__((noreturn)) try_help(void)
{
	fprintf(stderr, "Try '%s --help'.\n", prog);
	exit(EXIT_USAGE);
}

void other_option(int c, void (*usage)(FILE *f))
{
	if (c == 'h') {
		usage(stdout);
		exit(0);
	}
	try_help();
}

void usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	try_help();
}

/* A decimal or 0x-prefixed number; what follows it is left at *@end. */
static int parse_num(const char *s, uint64_t *val, char **end)
{
	int base = 10;

	/* strtoull accepts a sign and leading blanks; an argument should not. */
	if (*s < '0' || *s > '9')
		return -EINVAL;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		base = 16;
	errno = 0;
	*val = strtoull(s, end, base);
	if (errno)
		return -errno;
	if (*end == s || (base == 16 && *end == s + 2))
		return -EINVAL;
	return 0;
}

int parse_u64(const char *s, uint64_t *val)
{
	char *end;
	int ret = parse_num(s, val, &end);

	if (ret)
		return ret;
	return *end ? -EINVAL : 0;
}

int parse_size(const char *s, uint64_t *val, const char *suffixes, bool unit)
{
	static const char scale[] = "KMGT"; /* 2^10, 2^20, ... */
	unsigned int shift;
	const char *p;
	char *end;
	int c, ret;

	ret = parse_num(s, val, &end);
	if (ret)
		return ret;
	if (!*end)
		return 0;
	c = toupper((unsigned char)*end);
	p = strchr(scale, c);
	if (!p || !strchr(suffixes, c))
		return -EINVAL;
	shift = 10 * (p - scale + 1);
	end++;
	if (unit && (!strcmp(end, "iB") || !strcmp(end, "B")))
		end += strlen(end);
	if (*end)
		return -EINVAL;
	if (*val > UINT64_MAX >> shift)
		return -ERANGE;
	*val <<= shift;
	return 0;
}

unsigned int parse_list(const char *s, uint64_t *v, unsigned int cap,
			const char *suffixes, uint64_t min, uint64_t max,
			const char *what)
{
	const char *tok = s, *comma;
	unsigned int n = 0;
	char item[64];
	size_t len;
	int ret;

	do {
		comma = strchr(tok, ',');
		len = comma ? (size_t)(comma - tok) : strlen(tok);
		if (n == cap)
			usage_error("too many %s values (at most %u)", what,
				    cap);
		if (len >= sizeof(item))
			usage_error("bad %s '%.*s'", what, (int)len, tok);
		memcpy(item, tok, len);
		item[len] = '\0';
		ret = suffixes ? parse_size(item, &v[n], suffixes, true) :
				 parse_u64(item, &v[n]);
		if (!ret && (v[n] < min || v[n] > max))
			ret = -ERANGE;
		if (ret && max == UINT64_MAX)
			usage_error("bad %s '%s' (at least %llu)", what, item,
				    (unsigned long long)min);
		if (ret)
			usage_error("bad %s '%s' (%llu..%llu)", what, item,
				    (unsigned long long)min,
				    (unsigned long long)max);
		n++;
		tok = comma ? comma + 1 : NULL;
	} while (tok);
	return n;
}

void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

const char *human_size(uint64_t bytes, int decimals, char *buf, size_t len)
{
	static const char *const units[] = { "B",   "KiB", "MiB",
					     "GiB", "TiB", "PiB" };
	unsigned int u = 0;
	double v = bytes;

	while (v >= 1024 && u < sizeof(units) / sizeof(units[0]) - 1) {
		v /= 1024;
		u++;
	}
	if (v == (uint64_t)v)
		snprintf(buf, len, "%" PRIu64 " %s", (uint64_t)v, units[u]);
	else
		snprintf(buf, len, "%.*f %s", decimals, v, units[u]);
	return buf;
}

double tool_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

double tool_now_s(void)
{
	return tool_now_us() / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double tool_median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
