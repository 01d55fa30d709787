// SPDX-License-Identifier: MIT
/*
 * The distributed sort in one network pass: sort locally, find exact
 * splitters by a radix select over the group, cut, exchange, merge the
 * runs that arrive. docs/sort.md gives the cost model.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sort_net_internal.h"

/* Bits of the splitter key settled per round of find_splitters(). */
#define SPLIT_ROUND_BITS 8

/*
 * Exact splitters for a locally sorted @recs: K[d] is the key of the
 * element at global place target[d] (d = 0..n-2, for the boundary before
 * rank d + 1). A radix select that all ranks run in step: each round
 * settles the next 8 bits of every splitter from the global counts of
 * keys at or below the 256 candidates (one allreduce), so 32-bit keys
 * take 4 rounds. A target at or past the end has no splitter (past[d]).
 */
static int find_splitters(struct sort_ctx *c, const uint8_t *recs,
			  const size_t *target, uint64_t *K, bool *past)
{
	const size_t nc = (size_t)1 << SPLIT_ROUND_BITS;
	uint32_t nbd = c->n - 1;
	size_t *cnt = calloc(nbd * nc, sizeof(*cnt));
	size_t *sum = calloc(nbd * nc, sizeof(*sum));
	unsigned int left = c->bits;
	int rc = -ENOMEM;

	if (!cnt || !sum)
		goto out;
	for (uint32_t d = 0; d < nbd; d++) {
		past[d] = target[d] >= c->total;
		K[d] = 0;
	}
	while (left) {
		unsigned int w = left < SPLIT_ROUND_BITS ? left :
							   SPLIT_ROUND_BITS;
		unsigned int shift = left - w;
		uint64_t below = shift ? sort_key_limit(shift) : 0;

		for (uint32_t d = 0; d < nbd; d++) {
			if (past[d])
				continue;
			for (size_t j = 0; j < ((size_t)1 << w); j++)
				cnt[d * nc + j] = fc__sort_bound(
					recs, c->a->count, c->ks, c->rs,
					K[d] | (uint64_t)j << shift | below, 1);
		}
		rc = fc_allreduce(c->g, cnt, sum, nbd * nc, FC_UINT64, FC_SUM,
				  fc__sort_left_ms(c));
		if (rc)
			goto out;
		/* the first candidate with more than target[d] at or below */
		for (uint32_t d = 0; d < nbd; d++) {
			size_t j = 0;

			if (past[d])
				continue;
			while (j + 1 < ((size_t)1 << w) &&
			       sum[d * nc + j] <= target[d])
				j++;
			K[d] |= (uint64_t)j << shift;
		}
		left -= w;
	}
	rc = 0;
out:
	free(cnt);
	free(sum);
	return rc;
}

/* The splitters of one-pass and where they cut this rank's sorted run. */
struct onepass {
	size_t *target;	 /* n: global place of each boundary */
	size_t *lb, *eq; /* n: ours below, and equal to, each splitter */
	size_t *L, *E;	 /* n: all ranks' lb; the lower ranks' eq */
	size_t *cut;	 /* n + 1: our run's cuts, then run starts */
	size_t *share;	 /* n: each rank's share (partitioned) */
	uint64_t *K;	 /* n: the splitters */
	bool *past;	 /* n: a boundary past the end has none */
};

static void onepass_free(struct onepass *o)
{
	free(o->target);
	free(o->lb);
	free(o->eq);
	free(o->L);
	free(o->E);
	free(o->cut);
	free(o->share);
	free(o->K);
	free(o->past);
}

static int onepass_alloc(struct onepass *o, uint32_t n)
{
	o->target = calloc(n, sizeof(*o->target));
	o->lb = calloc(n, sizeof(*o->lb));
	o->eq = calloc(n, sizeof(*o->eq));
	o->L = calloc(n, sizeof(*o->L));
	o->E = calloc(n, sizeof(*o->E));
	o->cut = calloc(n + 1, sizeof(*o->cut));
	o->share = calloc(n, sizeof(*o->share));
	o->K = calloc(n, sizeof(*o->K));
	o->past = calloc(n, sizeof(*o->past));
	if (!o->target || !o->lb || !o->eq || !o->L || !o->E || !o->cut ||
	    !o->share || !o->K || !o->past) {
		onepass_free(o);
		return -ENOMEM;
	}
	return 0;
}

/*
 * The splitters for sorted @recs, and for each the elements below it
 * (lb, and over all ranks L) and equal to it (eq, and over the lower
 * ranks E, which a balanced result splits in rank order).
 */
static int find_bounds(struct sort_ctx *c, struct onepass *o,
		       const uint8_t *recs)
{
	uint32_t n = c->n, nbd = n - 1;
	size_t count = c->a->count;
	int rc;

	if (!nbd)
		return 0;
	for (uint32_t d = 0; d < nbd; d++)
		o->target[d] = c->partitioned ?
				       (size_t)((unsigned __int128)c->total *
						(d + 1) / n) :
				       c->offs[d + 1];
	rc = find_splitters(c, recs, o->target, o->K, o->past);
	if (rc)
		return rc;
	for (uint32_t d = 0; d < nbd; d++) {
		if (o->past[d]) {
			o->lb[d] = count;
			continue;
		}
		o->lb[d] =
			fc__sort_bound(recs, count, c->ks, c->rs, o->K[d], 0);
		o->eq[d] =
			fc__sort_bound(recs, count, c->ks, c->rs, o->K[d], 1) -
			o->lb[d];
	}
	rc = fc_allreduce(c->g, o->lb, o->L, nbd, FC_UINT64, FC_SUM,
			  fc__sort_left_ms(c));
	if (!rc && !c->partitioned)
		rc = fc_exscan(c->g, o->eq, o->E, nbd, FC_UINT64, FC_SUM,
			       fc__sort_left_ms(c));
	if (!rc && c->rank == 0)
		memset(o->E, 0, nbd * sizeof(*o->E));
	return rc;
}

/*
 * Where this rank's sorted run is cut between the ranks, into sc; the
 * share each rank gets. Cuts out of order (the peers' sums were not
 * true) mark the pass bad.
 */
static int cut_run(struct sort_ctx *c, struct onepass *o)
{
	uint32_t n = c->n, nbd = n - 1;
	size_t count = c->a->count;

	o->cut[0] = 0;
	o->cut[n] = count;
	for (uint32_t d = 0; d < nbd; d++) {
		size_t before = 0;

		if (o->past[d]) {
			o->cut[d + 1] = count;
			continue;
		}
		if (!c->partitioned && o->target[d] > o->L[d] + o->E[d]) {
			before = o->target[d] - o->L[d] - o->E[d];
			before = before < o->eq[d] ? before : o->eq[d];
		}
		o->cut[d + 1] = o->lb[d] + before;
		if (o->cut[d + 1] < o->cut[d]) {
			o->cut[d + 1] = o->cut[d];
			c->bad = true;
		}
	}
	for (uint32_t d = 0; d < n; d++)
		c->sc[d] = o->cut[d + 1] - o->cut[d];
	if (!c->partitioned) {
		c->a->out_count = count;
		return 0;
	}
	for (uint32_t d = 0; d < n; d++)
		o->share[d] =
			(d < nbd ? o->L[d] : c->total) - (d ? o->L[d - 1] : 0);
	return fc__sort_check_shares(c, o->share);
}

/*
 * Full-width keys over the network once: sort locally, cut at exact
 * splitters, exchange, merge the runs that arrive.
 */
int fc__sort_onepass(struct sort_ctx *c)
{
	struct fc_sort_args *a = c->a;
	uint8_t *x = c->buf[0], *y = c->buf[1], *recs, *recv = c->buf[2];
	uint8_t *scratch[2] = { NULL, NULL };
	struct onepass o;
	unsigned int passes = 0;
	int rc;

	rc = onepass_alloc(&o, c->n);
	if (rc)
		return rc;
	rc = -ENOMEM;
	recs = fc__sort_radix(sort_split(a->keys, a->values, c->ks, c->vs),
			      a->count, c->ks, c->vs, c->bits, NULL, x, y,
			      &passes);
	if (!recs)
		goto out;
	a->mem_passes += passes;
	rc = find_bounds(c, &o, recs);
	if (!rc)
		rc = cut_run(c, &o);
	if (!rc)
		rc = fc_alltoall(c->g, c->sc, c->rc, 1, FC_UINT64,
				 fc__sort_left_ms(c));
	if (rc)
		goto out;
	for (uint32_t d = 0, s = 0; d <= c->n; d++) { /* run starts */
		o.cut[d] = s;
		if (d < c->n)
			s += c->rc[d];
	}
	if (!recv) { /* a partitioned share */
		rc = fc__sort_agree_alloc(c, a->out_count * c->rs, &recv);
		if (rc)
			goto out;
	}
	rc = fc__sort_exchange(c, recs, recv, false, a->out_count);
	if (rc)
		goto out;
	/* the radix sort's two buffers are free now: the merge's scratch */
	if (a->out_count <= a->count) {
		scratch[0] = x;
		scratch[1] = y;
	}
	a->mem_passes += fc__sort_merge(recv, o.cut, c->n,
					sort_split(a->out_keys, a->out_values,
						   c->ks, c->vs),
					c->ks, c->vs, scratch);
out:
	if (recv != c->buf[2])
		fc__sort_free(recv);
	onepass_free(&o);
	return rc;
}
