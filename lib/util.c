// SPDX-License-Identifier: MIT
/* Small helpers shared by the library's files. */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "internal.h"

/* Parse "4096", "64K", "8G" (binary units). RETURN VALUE: 0 or -EINVAL. */
int fc__parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	}
	if (*end == 'i' || *end == 'B')
		end += (*end == 'i' && end[1] == 'B') ? 2 : 1;
	if (*end || (shift && v > (~0ull >> shift)))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

uint64_t fc__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/*
 * Wait a little before looking again: yield for the first rounds, then
 * sleep, doubling up to 1 ms. Two cores are shared; nothing spins for long.
 */
void fc__backoff(unsigned int *round)
{
	struct timespec ts = { 0, 0 };
	unsigned int r = (*round)++;

	if (r < 16) {
		sched_yield();
		return;
	}
	r -= 16;
	ts.tv_nsec = 1000L << (r < 10 ? r : 10);	/* 1 us .. ~1 ms */
	nanosleep(&ts, NULL);
}
