/* SPDX-License-Identifier: MIT */
/*
 * Starting a test program as the ranks of an emulated cluster (in
 * harness.c; this header needs no cmocka, for rank tests with state of
 * their own).
 */
#ifndef FC_TEST_LAUNCH_H
#define FC_TEST_LAUNCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * CHECK - in a rank's program: when @cond is false, say which rank and
 * where, and count it (the program defines `rank` and `failures`, and may
 * define CHECK_CONTEXT, a string naming the case, and CHECK_RANK, where
 * its rank is if not in `rank`, before including this).
 */
#ifndef CHECK_CONTEXT
#define CHECK_CONTEXT ""
#endif
#ifndef CHECK_RANK
#define CHECK_RANK rank
#endif
#define CHECK(cond, ...)                                                    \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "rank %u: %s%s%s:%d: ", CHECK_RANK, \
				CHECK_CONTEXT, *CHECK_CONTEXT ? ": " : "",  \
				__func__, __LINE__);                        \
			fprintf(stderr, __VA_ARGS__);                       \
			fputc('\n', stderr);                                \
			failures++;                                         \
		}                                                           \
	} while (0)

/* CHECK_RC - CHECK that @expr (a call) returns @want, saying what it did. */
#define CHECK_RC(expr, want)                                                 \
	do {                                                                 \
		int _rc = (expr), _want = (want);                            \
		CHECK(_rc == _want, "%s = %d (%s), expected %d", #expr, _rc, \
		      fc_strerror(_rc), _want);                              \
	} while (0)

/* Data every rank can recompute: splitmix64's output for @x. */
static inline uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

struct fc_dev;
struct fc_group;

/*
 * harness_rank_world - a rank's board (FPGACOMM_DEVICE, as fpgacomm-run
 * sets it) and the world group, with this rank's number and the world's
 * size. RETURN VALUE: 0, or 1 (said why on stderr).
 */
int harness_rank_world(struct fc_dev **devp, struct fc_group **world,
		       uint32_t *rank, uint32_t *size);

/*
 * harness_find_run - this program's path into @self, and the
 * fpgacomm-run beside it (build/tools/) into @run.
 * RETURN VALUE: 0, or EXIT_SKIP (said why) when there is none or when
 * FPGACOMM_TEST_DEVICE names a board that is not emulated (the ranks need
 * an emulated cluster); 1 when this program's path cannot be read.
 */
int harness_find_run(char *self, size_t self_len, char *run, size_t run_len);

/*
 * harness_launch_ranks - run @self as @ranks ranks under @run, on
 * @topology and with link @faults (either may be NULL), with the
 * environment pairs @env (NAME, VALUE, ..., NULL; may be NULL) set in the
 * ranks; then print "== status N".
 * RETURN VALUE: the worst rank's exit status (128 + signal when killed).
 */
int harness_launch_ranks(const char *run, const char *self, int ranks,
			 const char *topology, const char *faults,
			 const char *const *env);

#endif /* FC_TEST_LAUNCH_H */
