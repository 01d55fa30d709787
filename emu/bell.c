// SPDX-License-Identifier: MIT
/*
 * The bell of each board of an emulated cluster: a futex word in the node
 * table that a host sleeps on while its board is idle (fcemu_cluster_wait)
 * and that whoever publishes news for the board rings (the routers,
 * bursts). It calls nothing else of the cluster.
 */
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cluster_internal.h"

static long futex(uint32_t *word, int op, uint32_t val,
		  const struct timespec *ts)
{
	return syscall(SYS_futex, word, op, val, ts, NULL, 0);
}

/*
 * Called after publishing something for @node, with a full barrier
 * between the two (a locked operation): that orders the publication
 * before the look at sleepers, and fcemu_cluster_wait() counts itself
 * before it looks for news, so one of the two sees the other.
 */
void fcemu__cluster_ring_fenced(struct fcemu_cluster *c, unsigned int node)
{
	struct cl_node *nd = &c->hdr->node[node];

	if (!__atomic_load_n(&nd->sleepers, __ATOMIC_RELAXED))
		return;
	__atomic_fetch_add(&nd->bell, 1, __ATOMIC_SEQ_CST);
	futex(&nd->bell, FUTEX_WAKE, INT_MAX, NULL);
}

void fcemu__cluster_ring(struct fcemu_cluster *c, unsigned int node)
{
	uint32_t own = 0;

	/* A locked operation on a line of our own: a cheaper barrier than
	 * mfence, and no line of the peer's is written. */
	__atomic_fetch_or(&own, 0, __ATOMIC_SEQ_CST);
	fcemu__cluster_ring_fenced(c, node);
}

void fcemu_cluster_wait(struct fcemu_cluster *c, unsigned int node,
			uint64_t max_ns, bool (*news)(void *arg), void *arg)
{
	struct cl_node *nd;
	struct timespec ts;
	uint32_t bell;

	if (!c || node >= c->nodes)
		return;
	nd = &c->hdr->node[node];
	ts.tv_sec = (time_t)(max_ns / 1000000000ull);
	ts.tv_nsec = (long)(max_ns % 1000000000ull);
	/* with a model: the board may take its next packet (vtorder.c) */
	if (c->vt[node])
		__atomic_fetch_or(&c->vt_idle, 1ull << node, __ATOMIC_RELAXED);
	__atomic_fetch_add(&nd->sleepers, 1, __ATOMIC_SEQ_CST);
	bell = __atomic_load_n(&nd->bell, __ATOMIC_SEQ_CST);
	/*
	 * What came before we were counted is seen by @news; what comes
	 * after rings and changes @bell. Transit traffic through our router
	 * is not news: others route it, and a sleeper that stayed up for it
	 * would take the core from them.
	 */
	if (!news || !news(arg))
		futex(&nd->bell, FUTEX_WAIT, bell, &ts);
	if (c->vt[node])
		__atomic_fetch_and(&c->vt_idle, ~(1ull << node),
				   __ATOMIC_RELAXED);
	__atomic_fetch_sub(&nd->sleepers, 1, __ATOMIC_SEQ_CST);
}

void fcemu_cluster_watch(struct fcemu_cluster *c, unsigned int node, bool on)
{
	if (!c || node >= c->nodes)
		return;
	__atomic_fetch_add(&c->hdr->node[node].sleepers, on ? 1 : -1,
			   __ATOMIC_SEQ_CST);
}

uint32_t fcemu_cluster_bell_wait(struct fcemu_cluster *c, unsigned int node,
				 uint32_t seen, uint64_t max_ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(max_ns / 1000000000ull),
		.tv_nsec = (long)(max_ns % 1000000000ull),
	};
	uint32_t *bell;

	if (!c || node >= c->nodes)
		return seen;
	bell = &c->hdr->node[node].bell;
	if (__atomic_load_n(bell, __ATOMIC_SEQ_CST) == seen)
		futex(bell, FUTEX_WAIT, seen, &ts);
	return __atomic_load_n(bell, __ATOMIC_SEQ_CST);
}
