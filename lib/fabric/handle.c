// SPDX-License-Identifier: MIT
/*
 * Request handles: a process-wide table of slots, each naming a live
 * request and counting its generation. A handle is (generation << 32 |
 * slot << 1 | 1): never a valid pointer, never NULL, and useless once its
 * slot moved on. The table only grows, in chunks that are never freed, so
 * a stale handle is checked against memory that is still there.
 */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>

#include "transport_internal.h"
#include "handle.h"

#define CHUNK_SLOTS 1024u
#define MAX_CHUNKS  1024u /* a million requests in flight */
#define NO_SLOT	    UINT32_MAX

struct slot {
	struct fc_req *r; /* NULL: free */
	struct fc_dev *dev;
	uint32_t gen;
	uint32_t next_free;
};

/*
 * The table's writers hold it a few dozen instructions: a flag taken by
 * an atomic exchange costs a fraction of a mutex, and every request takes
 * it twice. A writer that finds it held spins briefly, then yields.
 */
static int lock;

static void table_lock(void)
{
	unsigned int spins = 0;

	while (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE)) {
		if (++spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
			__builtin_ia32_pause();
#elif defined(__aarch64__)
			__asm__ __volatile__("yield");
#endif
		} else {
			sched_yield();
		}
	}
}

static void table_unlock(void)
{
	__atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
}
static struct slot *chunks[MAX_CHUNKS];
static uint32_t n_slots;
static uint32_t free_head = NO_SLOT;

_Static_assert(sizeof(uintptr_t) == 8, "handles need 64-bit pointers");

static struct slot *slot_at(uint32_t i)
{
	return &chunks[i / CHUNK_SLOTS][i % CHUNK_SLOTS];
}

/* The next slot to hand out, lock held. RETURN VALUE: it, or NO_SLOT. */
static uint32_t slot_take(void)
{
	uint32_t i = free_head;
	struct slot *c;

	if (i != NO_SLOT) {
		free_head = slot_at(i)->next_free;
		return i;
	}
	if (n_slots == CHUNK_SLOTS * MAX_CHUNKS)
		return NO_SLOT;
	if (n_slots % CHUNK_SLOTS == 0) {
		c = calloc(CHUNK_SLOTS, sizeof(*c));
		if (!c)
			return NO_SLOT;
		__atomic_store_n(&chunks[n_slots / CHUNK_SLOTS], c,
				 __ATOMIC_RELEASE);
	}
	/* The chunk is there before a reader may see the slot count. */
	__atomic_store_n(&n_slots, n_slots + 1, __ATOMIC_RELEASE);
	return n_slots - 1;
}

/* Free slot @i, its generation moved on; lock held. */
static void slot_free(uint32_t i)
{
	struct slot *s = slot_at(i);

	__atomic_store_n(&s->r, NULL, __ATOMIC_RELEASE);
	__atomic_store_n(&s->dev, NULL, __ATOMIC_RELEASE);
	__atomic_store_n(&s->gen, s->gen + 1 ? s->gen + 1 : 1,
			 __ATOMIC_RELEASE);
	s->next_free = free_head;
	free_head = i;
}

int fc__handle_new(struct fc_req *r, struct fc_req **handle)
{
	struct slot *s;
	uint32_t i;

	table_lock();
	i = slot_take();
	if (i == NO_SLOT) {
		table_unlock();
		return -ENOMEM;
	}
	s = slot_at(i);
	if (!s->gen)
		__atomic_store_n(&s->gen, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&s->dev, r->dev, __ATOMIC_RELEASE);
	__atomic_store_n(&s->r, r, __ATOMIC_RELEASE);
	r->handle = i + 1;
	*handle = (struct fc_req *)(uintptr_t)((uint64_t)s->gen << 32 |
					       (uint64_t)i << 1 | 1);
	table_unlock();
	return 0;
}

/*
 * Without the lock: the slot is read between two reads of its generation,
 * and the writers (under the lock) clear r before they move gen on. A
 * request read here may end meanwhile; the caller looks again under its
 * fabric's lock, where requests end (req_call()).
 */
struct fc_req *fc__handle_get(struct fc_req *handle, struct fc_dev **dev)
{
	uint64_t h = (uintptr_t)handle;
	uint32_t i = (uint32_t)h >> 1, gen = (uint32_t)(h >> 32);
	struct fc_req *r;
	struct fc_dev *d;
	struct slot *s;

	if (!(h & 1) || i >= __atomic_load_n(&n_slots, __ATOMIC_ACQUIRE))
		return NULL;
	s = slot_at(i);
	if (__atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) != gen)
		return NULL;
	r = __atomic_load_n(&s->r, __ATOMIC_ACQUIRE);
	d = __atomic_load_n(&s->dev, __ATOMIC_ACQUIRE);
	if (!r || !d || __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) != gen)
		return NULL;
	*dev = d;
	return r;
}

void fc__handle_put(struct fc_req *r)
{
	if (!r->handle)
		return;
	table_lock();
	slot_free(r->handle - 1);
	table_unlock();
	r->handle = 0;
}

void fc__handle_drop_dev(struct fc_dev *dev)
{
	uint32_t i;

	table_lock();
	for (i = 0; i < n_slots; i++)
		if (slot_at(i)->r && slot_at(i)->dev == dev)
			slot_free(i);
	table_unlock();
}
