// SPDX-License-Identifier: MIT
/*
 * test_lock: the library's mutex (lib/core/lock.h), which guards every
 * board and every fabric. Free, it is taken and given back leaving its
 * word as it was; four threads adding to a counter under it, each add a
 * separate load and store with a check that nobody else is inside, lose
 * no add and never meet; a thread that finds it held sleeps (its word
 * says so) and gets it only once the holder gives it back; many threads
 * that also sleep and yield while holding it all finish (no lost wake-up).
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "lock.h"

#define THREADS 4
#define ADDS	200000

static struct fc__lock lock;
static volatile unsigned long counter;
static volatile int inside;
static volatile int met;

static void *adder(void *arg)
{
	unsigned long v;
	unsigned int i, k;

	(void)arg;
	for (i = 0; i < ADDS; i++) {
		fc__lock(&lock);
		if (inside)
			met = 1;
		inside = 1;
		v = counter;
		for (k = 0; k < 20; k++) /* a window for another to come in */
			__asm__ volatile("" ::: "memory");
		counter = v + 1;
		inside = 0;
		fc__unlock(&lock);
	}
	return NULL;
}

static void test_lock_free(void **state)
{
	(void)state;
	fc__lock_init(&lock);
	assert_int_equal(lock.v, 0);
	fc__lock(&lock);
	assert_int_equal(lock.v, 1);
	fc__unlock(&lock);
	assert_int_equal(lock.v, 0);
}

static void test_exclusion(void **state)
{
	pthread_t t[THREADS];
	unsigned int i;

	(void)state;
	fc__lock_init(&lock);
	counter = 0;
	met = 0;
	for (i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, adder, NULL), 0);
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(met, 0);
	assert_int_equal(counter, (unsigned long)THREADS * ADDS);
	assert_int_equal(lock.v, 0);
}

static volatile int got;

static void *taker(void *arg)
{
	(void)arg;
	fc__lock(&lock);
	got = 1;
	fc__unlock(&lock);
	return NULL;
}

static void test_sleeper(void **state)
{
	const struct timespec ms = { .tv_nsec = 1000000 };
	pthread_t t;
	unsigned int i;

	(void)state;
	fc__lock_init(&lock);
	got = 0;
	fc__lock(&lock);
	assert_int_equal(pthread_create(&t, NULL, taker, NULL), 0);
	/* the taker marks the word (2) as it goes to sleep on it */
	for (i = 0;
	     i < 10000 && __atomic_load_n(&lock.v, __ATOMIC_ACQUIRE) != 2; i++)
		nanosleep(&ms, NULL);
	assert_int_equal(lock.v, 2);
	assert_int_equal(got, 0);
	fc__unlock(&lock);
	pthread_join(t, NULL);
	assert_int_equal(got, 1);
	assert_int_equal(lock.v, 0);
}

static void *napper(void *arg)
{
	const struct timespec us = { .tv_nsec = 20000 };
	unsigned int i;

	(void)arg;
	for (i = 0; i < 300; i++) {
		fc__lock(&lock);
		counter++;
		if (i % 3 == 0)
			nanosleep(&us, NULL);
		else
			sched_yield();
		fc__unlock(&lock);
	}
	return NULL;
}

static void test_no_lost_wakeup(void **state)
{
	pthread_t t[8];
	unsigned int i;

	(void)state;
	fc__lock_init(&lock);
	counter = 0;
	for (i = 0; i < 8; i++)
		assert_int_equal(pthread_create(&t[i], NULL, napper, NULL), 0);
	for (i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(counter, 8 * 300);
	assert_int_equal(lock.v, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lock_free),
		cmocka_unit_test(test_exclusion),
		cmocka_unit_test(test_sleeper),
		cmocka_unit_test(test_no_lost_wakeup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
