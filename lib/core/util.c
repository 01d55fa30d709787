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
	case 'k':
	case 'K':
		shift = 10;
		end++;
		break;
	case 'm':
	case 'M':
		shift = 20;
		end++;
		break;
	case 'g':
	case 'G':
		shift = 30;
		end++;
		break;
	case 't':
	case 'T':
		shift = 40;
		end++;
		break;
	}
	if (*end == 'i' || *end == 'B')
		end += (*end == 'i' && end[1] == 'B') ? 2 : 1;
	if (*end || (shift && v > (~0ull >> shift)))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

/* A size from environment variable @name, or @dflt if unset or malformed. */
uint64_t fc__env_size(const char *name, uint64_t dflt)
{
	uint64_t v;

	return fc__parse_size(getenv(name), &v) ? dflt : v;
}

uint64_t fc__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

uint64_t fc__now_coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* A hint to the core that we are spinning: saves power, frees the sibling. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/*
 * Wait a little before looking again. A peer that answers within
 * microseconds (a ping-pong, a ring being drained on the other core) is
 * best met by spinning: a yield or a sleep costs more than the wait. So
 * spin with a pause for up to SPIN_NS, then yield for 16 rounds, then
 * sleep, doubling up to 1 ms. Two cores are shared: the spin is bounded,
 * and it yields every SPIN_YIELD_NS, so that a peer waiting for our core
 * (more ranks than cores) runs within microseconds, not after the spin.
 *
 * The spin's start is per thread: a thread waits in one loop at a time,
 * and every loop starts with *round = 0.
 */
#define SPIN_NS	      (50 * 1000ull)
#define SPIN_PAUSES   2		    /* per round: the caller polls in between */
#define SPIN_YIELD_NS (5 * 1000ull) /* within the spin, yield this often */
#define YIELD_ROUNDS  16

static __thread uint64_t spin_start_ns, spin_yield_ns;

void fc__backoff_dev(struct fc_dev *dev, unsigned int *round, uint64_t now)
{
	struct timespec ts = { 0, 0 };

	if (dev && dev->be->waiting)
		dev->be->waiting(dev);
	unsigned int r = *round, i;
	uint64_t ns;

	if (r == 0) {
		spin_start_ns = spin_yield_ns = now;
		*round = 1;
	}
	if (r <= 1) {
		for (i = 0; i < SPIN_PAUSES; i++)
			cpu_relax();
		if (now - spin_start_ns >= SPIN_NS) {
			*round = 2;
		} else if (now - spin_yield_ns >= SPIN_YIELD_NS) {
			/* Cheap when the core is ours; else the peer runs. */
			spin_yield_ns = now;
			sched_yield();
		}
		return;
	}
	r -= 2;
	(*round)++;
	if (r < YIELD_ROUNDS) {
		sched_yield();
		return;
	}
	r -= YIELD_ROUNDS;
	ns = 1000ull << (r < 10 ? r : 10); /* 1 us .. ~1 ms */
	/* A board that can wake us when news comes: no need to oversleep. */
	if (dev && dev->be->idle) {
		dev->be->idle(dev, ns);
		return;
	}
	ts.tv_nsec = (long)ns;
	nanosleep(&ts, NULL);
}

void fc__backoff_at(unsigned int *round, uint64_t now)
{
	fc__backoff_dev(NULL, round, now);
}

void fc__backoff(unsigned int *round)
{
	fc__backoff_at(round, fc__now_ns());
}
