// SPDX-License-Identifier: MIT
/*
 * test_live: the library's sets of live objects (lib/core/live.c), which check
 * every channel handle before it is followed. Entries are found until
 * removed and not after; the table grows past thousands of entries and is
 * rebuilt after long churn; a reader that looks without a lock while a
 * writer adds, removes, rebuilds and grows never misses an entry that
 * stayed, nor finds one that was never there. What a thread found last is
 * remembered (live.h): an entry found, then removed (by del or del_if), is
 * not found again, nor found in another set.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "live.h"

static char objs[20000]; /* addresses to put in sets */

static void test_add_find_remove(void **state)
{
	struct fc__live set = FC__LIVE_INIT;
	unsigned int i;

	(void)state;
	assert_false(fc__live_has(&set, &objs[0]));
	assert_false(fc__live_del(&set, &objs[0]));
	assert_int_equal(fc__live_add(&set, NULL), -EINVAL);
	assert_false(fc__live_has(&set, NULL));
	for (i = 0; i < 5000; i++)
		assert_int_equal(fc__live_add(&set, &objs[i]), 0);
	for (i = 0; i < 5000; i++)
		assert_true(fc__live_has(&set, &objs[i]));
	assert_false(fc__live_has(&set, &objs[5000]));
	for (i = 0; i < 5000; i += 2)
		assert_true(fc__live_del(&set, &objs[i]));
	for (i = 0; i < 5000; i++)
		assert_int_equal(fc__live_has(&set, &objs[i]), i % 2);
	assert_false(fc__live_del(&set, &objs[0]));
	fc__live_fini(&set);
}

static bool in_first_half(const void *p, const void *arg)
{
	return (const char *)p < (const char *)arg;
}

static void test_del_if(void **state)
{
	struct fc__live set = FC__LIVE_INIT;
	unsigned int i;

	(void)state;
	for (i = 0; i < 100; i++)
		assert_int_equal(fc__live_add(&set, &objs[i]), 0);
	fc__live_del_if(&set, in_first_half, &objs[50]);
	for (i = 0; i < 100; i++)
		assert_int_equal(fc__live_has(&set, &objs[i]), i >= 50);
	fc__live_fini(&set);
}

static bool every(const void *p, const void *arg)
{
	(void)p;
	(void)arg;
	return true;
}

/* Found (and so remembered), then removed: not found any more. */
static void test_remembered_then_removed(void **state)
{
	struct fc__live a = FC__LIVE_INIT, b = FC__LIVE_INIT;
	unsigned int i;

	(void)state;
	assert_int_equal(fc__live_add(&a, &objs[1]), 0);
	assert_int_equal(fc__live_add(&a, &objs[2]), 0);
	for (i = 0; i < 3; i++) {
		assert_true(fc__live_has(&a, &objs[1]));
		assert_true(fc__live_has(&a, &objs[2]));
	}
	/* the same address in a set it is not in */
	assert_false(fc__live_has(&b, &objs[1]));
	assert_true(fc__live_del(&a, &objs[1]));
	assert_false(fc__live_has(&a, &objs[1]));
	assert_true(fc__live_has(&a, &objs[2]));
	/* back again, then gone by del_if */
	assert_int_equal(fc__live_add(&a, &objs[1]), 0);
	assert_true(fc__live_has(&a, &objs[1]));
	fc__live_del_if(&a, every, NULL);
	assert_false(fc__live_has(&a, &objs[1]));
	assert_false(fc__live_has(&a, &objs[2]));
	fc__live_fini(&a);
	fc__live_fini(&b);
}

/* Open and close, over and over: tombstones are cleared, what stays is
 * found all along. */
static void test_churn(void **state)
{
	struct fc__live set = FC__LIVE_INIT;
	unsigned int i;

	(void)state;
	assert_int_equal(fc__live_add(&set, &objs[19999]), 0);
	for (i = 0; i < 200000; i++) {
		assert_int_equal(fc__live_add(&set, &objs[i % 19999]), 0);
		assert_true(fc__live_has(&set, &objs[i % 19999]));
		assert_true(fc__live_del(&set, &objs[i % 19999]));
		assert_false(fc__live_has(&set, &objs[i % 19999]));
	}
	assert_true(fc__live_has(&set, &objs[19999]));
	fc__live_fini(&set);
}

struct race {
	struct fc__live set;
	volatile bool stop;
	unsigned long looks, wrong;
};

static void *reader(void *arg)
{
	struct race *r = arg;

	while (!r->stop) {
		/* 0..9 stay in the set; 19990..19999 are never put there */
		if (!fc__live_has(&r->set, &objs[r->looks % 10]) ||
		    fc__live_has(&r->set, &objs[19990 + r->looks % 10]))
			r->wrong++;
		r->looks++;
	}
	return NULL;
}

static void test_reader_beside_writer(void **state)
{
	struct race r = { .set = FC__LIVE_INIT };
	const unsigned int span = 19980, window = 200;
	pthread_t t;
	unsigned int i;

	(void)state;
	for (i = 0; i < 10; i++)
		assert_int_equal(fc__live_add(&r.set, &objs[i]), 0);
	assert_int_equal(pthread_create(&t, NULL, reader, &r), 0);
	/*
	 * A window of 200 entries sliding over 19,980 addresses: the table
	 * grows, then fills with tombstones and is rebuilt in place, over
	 * and over, while the reader looks.
	 */
	for (i = 0; i < 1000000; i++) {
		assert_int_equal(fc__live_add(&r.set, &objs[10 + i % span]), 0);
		if (i >= window)
			assert_true(fc__live_del(
				&r.set, &objs[10 + (i - window) % span]));
	}
	r.stop = true;
	assert_int_equal(pthread_join(t, NULL), 0);
	print_message("%lu lookups beside the writer, %lu wrong\n", r.looks,
		      r.wrong);
	assert_true(r.looks > 0);
	assert_int_equal(r.wrong, 0);
	fc__live_fini(&r.set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_find_remove),
		cmocka_unit_test(test_del_if),
		cmocka_unit_test(test_remembered_then_removed),
		cmocka_unit_test(test_churn),
		cmocka_unit_test(test_reader_beside_writer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
