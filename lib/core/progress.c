// SPDX-License-Identifier: MIT
/*
 * The process's progress engine. MPI's progress rule: waiting on or
 * testing any request moves every outstanding operation of the process,
 * so that an operation nobody waits for yet (another group's collective,
 * a channel message of the board a collective runs on) still gets its
 * turn. A part of the library with work in flight beyond the board a
 * wait is about registers a poller here: the collective engine, which
 * moves every group's schedules and the boards they run on. Every wait
 * and test of a board runs the pollers through fc__poll_all() whenever
 * its own look moved nothing, then backs off as before.
 *
 * A board's wait does not move another board's channels: a process with
 * two boards of one cluster (tests do it) can still play a receiver that
 * does not read.
 *
 * This file is the bottom of the library: it calls nothing but the
 * pollers it was given, so the layers above reach each other only through
 * it, never by name.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "internal.h"

struct poller {
	fc__poll_fn fn;
	void *arg;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct poller *pollers;
static unsigned int npollers, cap;
/* Read without the lock by every pass: a process whose one poller is
 * the caller's (a collective's wait) skips the lock. A poller added
 * meanwhile by another thread runs from the next pass on. */
static unsigned int shown_n;
static void *shown_sole; /* the one poller's arg */

static void show(void)
{
	__atomic_store_n(&shown_sole, npollers == 1 ? pollers[0].arg : NULL,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&shown_n, npollers, __ATOMIC_RELEASE);
}

/* Inside a poll pass (or a layer's own progress): pollers a wait below
 * calls again would only recurse. */
static __thread unsigned int depth;

int fc__poller_add(fc__poll_fn fn, void *arg)
{
	int ret = 0;

	pthread_mutex_lock(&lock);
	if (npollers == cap) {
		unsigned int c = cap ? 2 * cap : 8;
		struct poller *p = realloc(pollers, c * sizeof(*p));

		if (!p) {
			ret = -ENOMEM;
			goto out;
		}
		pollers = p;
		cap = c;
	}
	pollers[npollers].fn = fn;
	pollers[npollers].arg = arg;
	npollers++;
	show();
out:
	pthread_mutex_unlock(&lock);
	return ret;
}

void fc__poller_del(fc__poll_fn fn, void *arg)
{
	unsigned int i;

	/* Waits for a pass under way: after this, @fn no longer runs. */
	pthread_mutex_lock(&lock);
	for (i = 0; i < npollers; i++) {
		if (pollers[i].fn == fn && pollers[i].arg == arg) {
			pollers[i] = pollers[--npollers];
			show();
			break;
		}
	}
	pthread_mutex_unlock(&lock);
}

void fc__progress_enter(void)
{
	depth++;
}

void fc__progress_leave(void)
{
	depth--;
}

bool fc__poll_all(const void *skip)
{
	unsigned int n = __atomic_load_n(&shown_n, __ATOMIC_ACQUIRE), i;
	bool moved = false;

	/* nothing to run but the caller's own */
	if (depth || !n ||
	    (n == 1 && __atomic_load_n(&shown_sole, __ATOMIC_RELAXED) == skip))
		return false;
	/* Another thread's pass moves everything as well. */
	if (pthread_mutex_trylock(&lock))
		return false;
	depth++;
	for (i = 0; i < npollers; i++)
		if (pollers[i].arg != skip)
			moved |= pollers[i].fn(pollers[i].arg);
	depth--;
	pthread_mutex_unlock(&lock);
	return moved;
}
