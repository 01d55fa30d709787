// SPDX-License-Identifier: MIT
/*
 * fc_sort: the distributed sort, built on the group collectives of the
 * public API (allgather, allreduce, exscan, alltoall, alltoallv) and the
 * local steps of lib/sort/sort_local.c; its algorithms are in
 * lib/sort/sort_radix.c and lib/sort/sort_onepass.c. docs/sort.md gives the
 * algorithms and
 * the cost model.
 *
 * Every rank runs the same steps. The first collective is an agreement:
 * each rank's count, capacity, arguments and a local error (a key out of
 * range) are gathered, so that an error any rank found is returned by all
 * of them before any data moves.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sort_net_internal.h"

_Static_assert(sizeof(size_t) == sizeof(uint64_t),
	       "counts travel as FC_UINT64");

/* What every rank tells the others first. */
enum {
	AG_COUNT,
	AG_CAP,
	AG_ERR,
	AG_KS,
	AG_BITS,
	AG_VS,
	AG_LAYOUT,
	AG_ALGO,
	AG_N
};

/* OR of every key, for the range check. */
static uint64_t keys_or(struct sort_view in, size_t n, size_t ks)
{
	uint64_t all = 0;

	for (size_t i = 0; i < n; i++)
		all |= sort_key_at(in.keys + i * in.kstride, ks);
	return all;
}

/* The checks each rank makes alone, before any collective. */
static int check_args(struct fc_group *g, const struct fc_sort_args *a)
{
	if (!g || !a || a->flags)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(a->reserved) / sizeof(a->reserved[0]);
	     i++)
		if (a->reserved[i])
			return -EINVAL;
	if (a->key_size != 4 && a->key_size != 8)
		return -EINVAL;
	if (a->key_bits > a->key_size * 8)
		return -EINVAL;
	if (a->layout > FC_SORT_PARTITIONED || a->algo > FC_SORT_RADIX_NET)
		return -EINVAL;
	if (!a->value_size != !a->values && a->count)
		return -EINVAL;
	if (!a->value_size != !a->out_values && a->capacity)
		return -EINVAL;
	if (a->count && !a->keys)
		return -EINVAL;
	if (a->capacity && !a->out_keys)
		return -EINVAL;
	if (a->layout == FC_SORT_BALANCED && a->capacity < a->count)
		return -EINVAL;
	if (a->algo == FC_SORT_COUNTING &&
	    (!a->key_bits || a->key_bits > FC_SORT_COUNTING_MAX_BITS))
		return -EINVAL;
	if ((a->count | a->capacity) >
	    SIZE_MAX / 2 / ((size_t)a->key_size + a->value_size))
		return -EINVAL;
	return 0;
}

/*
 * A peer's error field as an error code: only the errors a rank finds
 * alone before the agreement (a key out of range, no memory) are taken
 * at its word; anything else is a peer not speaking the protocol.
 */
static int peer_error(uint64_t field)
{
	switch (field) {
	case ERANGE:
		return -ERANGE;
	case ENOMEM:
		return -ENOMEM;
	default:
		return -EBADMSG;
	}
}

/* Gather every rank's count, capacity, arguments and local error. */
static int agree(struct sort_ctx *c, int local_err)
{
	struct fc_sort_args *a = c->a;
	uint64_t mine[AG_N] = {
		[AG_COUNT] = a->count,		 [AG_CAP] = a->capacity,
		[AG_ERR] = (uint64_t)-local_err, [AG_KS] = a->key_size,
		[AG_BITS] = a->key_bits,	 [AG_VS] = a->value_size,
		[AG_LAYOUT] = a->layout,	 [AG_ALGO] = a->algo,
	};
	uint64_t *all = malloc(sizeof(mine) * c->n);
	size_t most = SIZE_MAX / 2 / c->rs; /* check_args's bound */
	int rc;

	if (!all)
		return -ENOMEM;
	rc = fc_allgather(c->g, mine, all, AG_N, FC_UINT64,
			  fc__sort_left_ms(c));
	if (rc)
		goto out;
	c->offs[0] = 0;
	for (uint32_t r = 0; r < c->n; r++) {
		const uint64_t *o = all + r * AG_N;

		if (o[AG_ERR] && !rc)
			rc = peer_error(o[AG_ERR]);
		for (int f = AG_KS; f < AG_N; f++)
			if (o[f] != mine[f] && !rc)
				rc = -EBADMSG;
		/* counts that no rank could hold, or a total that wraps */
		if ((o[AG_COUNT] | o[AG_CAP]) > most ||
		    o[AG_COUNT] > most - c->offs[r]) {
			if (!rc)
				rc = -EBADMSG;
			break;
		}
		c->counts[r] = o[AG_COUNT];
		c->caps[r] = o[AG_CAP];
		c->offs[r + 1] = c->offs[r] + o[AG_COUNT];
	}
	c->total = c->offs[c->n];
out:
	free(all);
	return rc;
}

/* The context of one sort: sizes, flags, and its small arrays. */
static int ctx_init(struct sort_ctx *c, struct fc_group *g,
		    struct fc_sort_args *a, int timeout_ms)
{
	int size = fc_group_size(g), rank = fc_group_rank(g);
	size_t *arrays;

	if (size < 1 || rank < 0)
		return -EINVAL;
	memset(c, 0, sizeof(*c));
	c->g = g;
	c->a = a;
	c->timeout_ms = timeout_ms;
	clock_gettime(CLOCK_MONOTONIC, &c->start);
	c->n = (uint32_t)size;
	c->rank = (uint32_t)rank;
	c->ks = a->key_size;
	c->vs = a->value_size;
	c->rs = c->ks + c->vs;
	c->bits = a->key_bits ? a->key_bits : a->key_size * 8;
	c->partitioned = a->layout == FC_SORT_PARTITIONED;
	arrays = calloc(11 * (size_t)c->n + 1, sizeof(*arrays));
	if (!arrays)
		return -ENOMEM;
	c->counts = arrays;
	c->caps = c->counts + c->n;
	c->sc = c->caps + c->n;
	c->sd = c->sc + c->n;
	c->rc = c->sd + c->n;
	c->rd = c->rc + c->n;
	c->offs = c->rd + c->n; /* n + 1 */
	c->piece = c->offs + c->n + 1;
	return 0;
}

/*
 * The range check (keys within key_bits), in the counting sort's
 * histogram pass, which *histp keeps. RETURN VALUE: 0, -ERANGE, -ENOMEM.
 */
static int check_keys(struct sort_ctx *c, uint32_t algo, size_t **histp)
{
	struct fc_sort_args *a = c->a;
	struct sort_view in = sort_split(a->keys, a->values, c->ks, c->vs);
	size_t *hist;

	if (algo == FC_SORT_COUNTING) {
		hist = malloc(sizeof(*hist) << c->bits);
		*histp = hist;
		a->mem_passes++;
		if (!hist)
			return -ENOMEM;
		return fc__sort_hist(in, a->count, c->ks, 0, c->bits, hist) &
				       ~sort_key_limit(c->bits) ?
			       -ERANGE :
			       0;
	}
	if (c->bits < c->ks * 8) {
		a->mem_passes++;
		if (keys_or(in, a->count, c->ks) & ~sort_key_limit(c->bits))
			return -ERANGE;
	}
	return 0;
}

/*
 * The work buffers, taken before the agreement so that a rank short of
 * memory says so there. RETURN VALUE: 0 or -ENOMEM.
 */
static int take_buffers(struct sort_ctx *c, uint32_t algo)
{
	size_t bytes = c->a->count * c->rs + 1;
	unsigned int nbuf = algo == FC_SORT_RADIX_NET ? 3 :
			    algo == FC_SORT_ONEPASS   ? 2 :
							1;
	/* a key wider than a local digit: the local sort's second */
	bool spare = algo == FC_SORT_COUNTING &&
		     c->bits > SORT_LOCAL_DIGIT_BITS;
	int rc = 0;

	if (!c->partitioned && algo != FC_SORT_RADIX_NET)
		nbuf++; /* the receive buffer: count elements */
	for (unsigned int i = 0; i < 3; i++) {
		if (i >= nbuf && !(i == 2 && spare))
			continue;
		c->buf[i] = fc__sort_alloc(bytes);
		if (!c->buf[i])
			rc = -ENOMEM;
	}
	return rc;
}

FC__EXPORT int fc_sort(struct fc_group *g, struct fc_sort_args *a,
		       int timeout_ms)
{
	struct sort_ctx c;
	size_t *hist = NULL;
	uint32_t algo;
	int rc, local_err, err;

	rc = check_args(g, a);
	if (!rc)
		rc = ctx_init(&c, g, a, timeout_ms);
	if (rc)
		return rc;
	algo = a->algo;
	if (algo == FC_SORT_AUTO)
		algo = a->key_bits && a->key_bits <= FC_SORT_COUNTING_MAX_BITS ?
			       FC_SORT_COUNTING :
			       FC_SORT_ONEPASS;
	a->out_count = 0;
	a->net_passes = 0;
	a->mem_passes = 0;
	a->used_algo = algo;

	local_err = check_keys(&c, algo, &hist);
	err = take_buffers(&c, algo);
	rc = agree(&c, local_err ? local_err : err);
	if (rc)
		goto out;
	if (!c.total) {
		if (a->rank_counts)
			memset(a->rank_counts, 0, c.n * sizeof(size_t));
		goto out;
	}
	switch (algo) {
	case FC_SORT_COUNTING:
		rc = fc__sort_counting(&c, hist);
		break;
	case FC_SORT_RADIX_NET:
		rc = fc__sort_radix_net(&c);
		break;
	default:
		rc = fc__sort_onepass(&c);
		break;
	}
out:
	for (int i = 0; i < 3; i++)
		fc__sort_free(c.buf[i]);
	free(hist);
	free(c.counts);
	return rc;
}

static int sort_keys(struct fc_group *g, void *keys, size_t count,
		     unsigned int ks, unsigned int key_bits, int timeout_ms)
{
	struct fc_sort_args a = {
		.key_size = ks,
		.key_bits = key_bits,
		.keys = keys,
		.count = count,
		.out_keys = keys,
		.capacity = count,
	};

	return fc_sort(g, &a, timeout_ms);
}

FC__EXPORT int fc_sort_u32(struct fc_group *g, uint32_t *keys, size_t count,
			   unsigned int key_bits, int timeout_ms)
{
	return sort_keys(g, keys, count, 4, key_bits, timeout_ms);
}

FC__EXPORT int fc_sort_u64(struct fc_group *g, uint64_t *keys, size_t count,
			   unsigned int key_bits, int timeout_ms)
{
	return sort_keys(g, keys, count, 8, key_bits, timeout_ms);
}
