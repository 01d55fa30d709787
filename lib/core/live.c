// SPDX-License-Identifier: MIT
/*
 * Sets of live objects: an open-addressed table of pointers, probed
 * linearly from the pointer's hash, read without a lock under a sequence
 * count, so that checking a channel on every call costs a few loads
 * instead of a lock and a walk of every channel.
 *
 * Writers (under the lock) make the count odd while they change the
 * table and even again after; a reader that saw it odd, or changed, looks
 * again. A removed entry becomes a tombstone, cleared when the table is
 * rebuilt in place. A table that outgrows itself is replaced by one
 * twice its size, and the old one is kept, not freed: a reader that
 * loaded it before the switch still reads memory that is there (the old
 * tables add up to less than the newest one).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "live.h"

#define TOMB	    ((const void *)1)
#define FIRST_SLOTS 64u
#define READ_TRIES  64 /* then wait for the writer on its lock */

struct fc__live_table {
	size_t slots;		      /* a power of two */
	size_t used;		      /* entries and tombstones */
	size_t live;		      /* entries */
	struct fc__live_table *older; /* kept for readers */
	const void *slot[];
};

static size_t hash(const void *p, size_t slots)
{
	uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 32) & (slots - 1);
}

static const void *slot_ld(const struct fc__live_table *t, size_t i)
{
	return __atomic_load_n(&t->slot[i], __ATOMIC_RELAXED);
}

static void slot_st(struct fc__live_table *t, size_t i, const void *p)
{
	__atomic_store_n(&t->slot[i], p, __ATOMIC_RELAXED);
}

/* Where @p is in @t, or where the probe ended (an empty slot): -1. */
static long table_find(const struct fc__live_table *t, const void *p)
{
	size_t i, k;
	const void *e;

	for (k = 0, i = hash(p, t->slots); k < t->slots;
	     k++, i = (i + 1) & (t->slots - 1)) {
		e = slot_ld(t, i);
		if (e == p)
			return (long)i;
		if (!e)
			break;
	}
	return -1;
}

/* Put @p, not there yet, into @t, which has room; lock held. */
static void table_put(struct fc__live_table *t, const void *p)
{
	size_t i = hash(p, t->slots);

	while (slot_ld(t, i) && slot_ld(t, i) != TOMB)
		i = (i + 1) & (t->slots - 1);
	if (!slot_ld(t, i))
		t->used++;
	t->live++;
	slot_st(t, i, p);
}

/* Tombstones out: the live entries put back in place; lock held. */
static int table_rebuild(struct fc__live_table *t)
{
	const void **keep = malloc(t->live * sizeof(*keep) + 1);
	size_t i, n = 0;

	if (!keep)
		return -ENOMEM;
	for (i = 0; i < t->slots; i++) {
		if (slot_ld(t, i) && slot_ld(t, i) != TOMB)
			keep[n++] = slot_ld(t, i);
		slot_st(t, i, NULL);
	}
	t->used = t->live = 0;
	for (i = 0; i < n; i++)
		table_put(t, keep[i]);
	free(keep);
	return 0;
}

/* Room for one more in @set's table, rebuilt or replaced; lock held and
 * the count odd. RETURN VALUE: 0, or -ENOMEM. */
static int make_room(struct fc__live *set)
{
	struct fc__live_table *t = set->table, *bigger;
	size_t slots, i;

	/* At most half full, tombstones counted, so probes stay short. */
	if (t && 2 * (t->used + 1) <= t->slots)
		return 0;
	if (t && 4 * (t->live + 1) <= t->slots)
		return table_rebuild(t);
	slots = t ? 2 * t->slots : FIRST_SLOTS;
	bigger = calloc(1, sizeof(*bigger) + slots * sizeof(bigger->slot[0]));
	if (!bigger)
		return -ENOMEM;
	bigger->slots = slots;
	bigger->older = t;
	for (i = 0; t && i < t->slots; i++)
		if (t->slot[i] && t->slot[i] != TOMB)
			table_put(bigger, t->slot[i]);
	__atomic_store_n(&set->table, bigger, __ATOMIC_RELAXED);
	return 0;
}

static void write_begin(struct fc__live *set)
{
	pthread_mutex_lock(&set->lock);
	__atomic_store_n(&set->seq, set->seq + 1, __ATOMIC_RELAXED);
	/* odd before any slot changes */
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static void write_end(struct fc__live *set)
{
	__atomic_store_n(&set->seq, set->seq + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&set->lock);
}

int fc__live_add(struct fc__live *set, const void *p)
{
	int ret;

	if (!p || p == TOMB)
		return -EINVAL;
	write_begin(set);
	ret = make_room(set);
	if (!ret)
		table_put(set->table, p);
	write_end(set);
	return ret;
}

bool fc__live_del(struct fc__live *set, const void *p)
{
	long i = -1;

	write_begin(set);
	if (set->table && p && p != TOMB)
		i = table_find(set->table, p);
	if (i >= 0) {
		slot_st(set->table, (size_t)i, TOMB);
		set->table->live--;
	}
	write_end(set);
	return i >= 0;
}

void fc__live_del_if(struct fc__live *set,
		     bool (*drop)(const void *p, const void *arg),
		     const void *arg)
{
	struct fc__live_table *t;
	const void *e;
	size_t i;

	write_begin(set);
	for (t = set->table, i = 0; t && i < t->slots; i++) {
		e = t->slot[i];
		if (e && e != TOMB && drop(e, arg)) {
			slot_st(t, i, TOMB);
			t->live--;
		}
	}
	write_end(set);
}

__thread struct fc__live_hit fc__live_hits[FC__LIVE_PAIRS][2];

bool fc__live_has_slow(struct fc__live *set, const void *p)
{
	const struct fc__live_table *t;
	uint32_t seq;
	bool found;
	int tries;

	if (!p || p == TOMB)
		return false;
	for (tries = 0; tries < READ_TRIES; tries++) {
		seq = __atomic_load_n(&set->seq, __ATOMIC_ACQUIRE);
		if (seq & 1)
			continue;
		t = __atomic_load_n(&set->table, __ATOMIC_RELAXED);
		found = t && table_find(t, p) >= 0;
		/* the slots read before the count is read again */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&set->seq, __ATOMIC_RELAXED) == seq) {
			if (found) {
				struct fc__live_hit *h = fc__live_pair_of(p);

				h[1] = h[0]; /* the older one stays a while */
				h[0].set = set;
				h[0].p = p;
				h[0].seq = seq;
			}
			return found;
		}
	}
	/* A writer in the way all along (preempted, most likely). */
	pthread_mutex_lock(&set->lock);
	found = set->table && table_find(set->table, p) >= 0;
	pthread_mutex_unlock(&set->lock);
	return found;
}

void fc__live_fini(struct fc__live *set)
{
	struct fc__live_table *t, *older;

	for (t = set->table; t; t = older) {
		older = t->older;
		free(t);
	}
	set->table = NULL;
}
