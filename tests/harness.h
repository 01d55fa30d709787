/* SPDX-License-Identifier: MIT */
/*
 * The setup and helpers shared by the library test programs (cmocka): the
 * board under test, a seeded random stream, and assertions that say what
 * went wrong in the library's terms.
 *
 * FPGACOMM_TEST_DEVICE names the board (default "emu:"), FPGACOMM_TEST_SEED
 * repeats a run, FPGACOMM_TEST_FILTER picks tests by name (cmocka pattern).
 */
#ifndef FC_TEST_HARNESS_H
#define FC_TEST_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fpgacomm/fpgacomm.h>

#define EXIT_SKIP 77
#define WAIT_MS	  20000 /* generous: valgrind is slow */

extern const char *dev_name; /* the board under test, as opened */
extern struct fc_dev *dev;
extern struct fc_info info;
extern uint64_t seed;
extern unsigned int n_skipped; /* tests that called skip_because() */

#define assert_rc(expr, want)                                                  \
	do {                                                                   \
		int _rc = (expr), _want = (want);                              \
		if (_rc != _want)                                              \
			fail_msg("%s = %d (%s), expected %d (%s)", #expr, _rc, \
				 fc_strerror(_rc), _want, fc_strerror(_want)); \
	} while (0)
#define assert_ok(expr) assert_rc(expr, 0)

#define skip_because(why)                                \
	do {                                             \
		print_message("[   SKIP   ] %s\n", why); \
		n_skipped++;                             \
		skip();                                  \
	} while (0)

/* The next number of the random stream (splitmix64). */
uint64_t rnd(void);
void rnd_fill(void *p, size_t len);
/* Each test draws from its own stream so that a filtered run repeats. */
void rng_reset(const char *name);

struct fc_xfer xfer(struct fc_loc s, struct fc_loc d, uint64_t len);
void assert_same(const void *got, const void *want, size_t len,
		 const char *what);
int is_emulated(void);

/*
 * harness_open - set the test up: the seed, then the board opened into dev
 * and described in info. @prog names the program in the first line printed.
 * RETURN VALUE: 0, or the exit status for main(): EXIT_SKIP when there is
 * no such board, 1 when it cannot be opened or queried.
 */
int harness_open(const char *prog);

/*
 * harness_alloc - group setup: two host buffers of @len bytes each.
 * harness_close - group teardown: free those that are left, close dev.
 * RETURN VALUE: 0, or -1 when anything fails.
 */
int harness_alloc(size_t len, struct fc_mem **a, struct fc_mem **b);
int harness_close(struct fc_mem *a, struct fc_mem *b);

/*
 * harness_run - run @tests as a group, filtered by FPGACOMM_TEST_FILTER.
 * RETURN VALUE: the exit status for main(): 0, 1 when a test failed, or
 * EXIT_SKIP when every test skipped.
 */
#define harness_run(tests, setup, teardown)                                  \
	harness_run_group(#tests, tests, sizeof(tests) / sizeof((tests)[0]), \
			  setup, teardown)
int harness_run_group(const char *name, const struct CMUnitTest *tests,
		      size_t n, CMFixtureFunction setup,
		      CMFixtureFunction teardown);

#include "launch.h"

#endif /* FC_TEST_HARNESS_H */
