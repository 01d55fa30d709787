// SPDX-License-Identifier: MIT
/*
 * Collective algorithms: each records a schedule (coll_sched.c) for one
 * rank. A round is: sends and receives, then reductions and copies (each
 * runs once the messages recorded before it are done), then
 * fc__sched_round(). docs/collectives.md has the choice table; the ring
 * steps are in coll_ring.c, dimension by dimension in coll_grid.c.
 *
 * Reductions that every rank ends with (allreduce) compute each element
 * once and copy it around (ring), or compute it on both partners from the
 * same operands in the same order, lower ranks first (recursive
 * doubling): the result is bitwise the same on every rank.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "coll_shape.h"

enum algo {
	A_DISSEMINATION,
	A_BINOMIAL,
	A_SCATTER_ALLGATHER,
	A_RECURSIVE_DOUBLING,
	A_RING,
	A_LINEAR,
	A_PAIRWISE,
	A_DIRECT,
	A_RABENSEIFNER,
	A_GRID,
	A_COUNT
};

static const char *const algo_names[A_COUNT] = {
	"dissemination", "binomial", "scatter_allgather", "recursive_doubling",
	"ring",		 "linear",   "pairwise",	  "direct",
	"rabenseifner",	 "grid",
};

const char *const fc__coll_kind_names[FC__KIND_COUNT] = {
	"barrier", "bcast",  "reduce",	"allreduce", "reduce_scatter", "scan",
	"exscan",  "gather", "scatter", "allgather", "alltoall",       "split",
};

#define BIT(a) (1u << (a))
/* The algorithms each collective has. */
static const uint32_t algos_of[FC__KIND_COUNT] = {
	[FC__BARRIER] = BIT(A_DISSEMINATION),
	[FC__BCAST] = BIT(A_BINOMIAL) | BIT(A_SCATTER_ALLGATHER) | BIT(A_GRID),
	[FC__REDUCE] = BIT(A_BINOMIAL),
	[FC__ALLREDUCE] = BIT(A_RECURSIVE_DOUBLING) | BIT(A_RING) |
			  BIT(A_RABENSEIFNER) | BIT(A_GRID),
	[FC__REDUCE_SCATTER] = BIT(A_RING) | BIT(A_GRID),
	[FC__SCAN] = BIT(A_RECURSIVE_DOUBLING),
	[FC__EXSCAN] = BIT(A_RECURSIVE_DOUBLING),
	[FC__GATHER] = BIT(A_LINEAR) | BIT(A_BINOMIAL),
	[FC__SCATTER] = BIT(A_LINEAR) | BIT(A_BINOMIAL),
	[FC__ALLGATHER] = BIT(A_RING) | BIT(A_RECURSIVE_DOUBLING) | BIT(A_GRID),
	[FC__ALLTOALL] = BIT(A_PAIRWISE) | BIT(A_DIRECT),
	[FC__SPLIT] = BIT(A_RING),
};

/* ---- Forcing: FPGACOMM_COLL_ALGO=kind=name,... ---- */

static int forced[FC__KIND_COUNT];
static pthread_once_t forced_once = PTHREAD_ONCE_INIT;

static int name_index(const char *const *names, int n, const char *s,
		      size_t len)
{
	for (int i = 0; i < n; i++)
		if (strlen(names[i]) == len && !strncmp(names[i], s, len))
			return i;
	return -1;
}

static void forced_parse(void)
{
	const char *env = getenv("FPGACOMM_COLL_ALGO"), *p, *eq, *end;

	for (int k = 0; k < FC__KIND_COUNT; k++)
		forced[k] = -1;
	for (p = env; p && *p; p = *end ? end + 1 : end) {
		int k, a;

		end = strchr(p, ',');
		if (!end)
			end = p + strlen(p);
		eq = memchr(p, '=', (size_t)(end - p));
		if (!eq)
			continue;
		k = name_index(fc__coll_kind_names, FC__KIND_COUNT, p,
			       (size_t)(eq - p));
		a = name_index(algo_names, A_COUNT, eq + 1,
			       (size_t)(end - eq - 1));
		if (k >= 0 && a >= 0 && (algos_of[k] & BIT(a)))
			forced[k] = a;
	}
}

static bool pow2(uint32_t n)
{
	return !(n & (n - 1));
}

static bool full_mesh(struct fc_group *g)
{
	struct fc_world w;

	return !fc_world_query(g->dev, &w) && !strncmp(w.topology, "full:", 5);
}

/* Whether @a can run on @g with algorithm @algo. */
static bool usable(struct fc_group *g, enum fc__coll_kind kind, bool vector,
		   int algo)
{
	if (algo == A_GRID)
		return fc__grid_usable(g, false);
	if (kind == FC__ALLGATHER && algo == A_RECURSIVE_DOUBLING)
		return pow2(g->size) && !vector;
	if ((kind == FC__GATHER || kind == FC__SCATTER) && algo == A_BINOMIAL)
		return !vector;
	return true;
}

static int choose(struct fc_group *g, enum fc__coll_kind kind, bool vector,
		  size_t bytes)
{
	pthread_once(&forced_once, forced_parse);
	if (forced[kind] >= 0 && usable(g, kind, vector, forced[kind]))
		return forced[kind];
	switch (kind) {
	case FC__BCAST:
		/* scatter_allgather's 2 (n - 1) steps cost more than they save
		 * on the emulated fabric; on a torus the grid's one-link steps
		 * pay from 4 MiB (docs/performance.md) */
		if (bytes >= (4u << 20) && fc__grid_usable(g, true))
			return A_GRID;
		return A_BINOMIAL;
	case FC__REDUCE_SCATTER:
		/* the grid from 1 MiB of input on a torus (docs/performance.md) */
		if (bytes * g->size >= (1u << 20) && fc__grid_usable(g, true))
			return A_GRID;
		return A_RING;
	case FC__ALLREDUCE:
		/* halving pays from 8 KiB on 4 to 16 ranks: at 16 KiB it
		 * took 0.45-0.8x recursive doubling's time (docs/performance.md) */
		if (bytes < g->size ||
		    bytes <= (g->size > 2 ? 4u << 10 : 16u << 10))
			return A_RECURSIVE_DOUBLING;
		return bytes <= (1u << 20) && g->size > 2 ? A_RABENSEIFNER :
							    A_RING;
	case FC__ALLGATHER:
		return usable(g, kind, vector, A_RECURSIVE_DOUBLING) &&
				       bytes <= (16u << 10) ?
			       A_RECURSIVE_DOUBLING :
			       A_RING;
	case FC__ALLTOALL:
		/* every pair's messages at once, where the links or the ranks
		 * are few enough to take them (docs/collectives.md) */
		return g->size <= 8 || full_mesh(g) ? A_DIRECT : A_PAIRWISE;
	case FC__GATHER:
	case FC__SCATTER:
		return !vector && g->size > 2 && bytes <= (16u << 10) ?
			       A_BINOMIAL :
			       A_LINEAR;
	default:
		return __builtin_ctz(algos_of[kind]);
	}
}

const char *fc__coll_algo(struct fc_group *g, enum fc__coll_kind kind,
			  size_t bytes)
{
	return algo_names[choose(g, kind, false, bytes)];
}

/* ---- Shapes ---- */

/* One past the last element of block @i. */
static size_t blk_end(const size_t *offs, const size_t *cnts, uint32_t i)
{
	return offs[i] + cnts[i];
}

/* ---- Barrier ---- */

static void barrier_dissemination(struct shape *x)
{
	for (uint32_t k = 1; k < x->n; k <<= 1) {
		fc__sched_send(x->s, (x->r + k) % x->n, NULL, 0);
		fc__sched_recv(x->s, (x->r + x->n - k) % x->n, NULL, 0);
		fc__sched_round(x->s);
	}
}

/* ---- Broadcast ---- */

static uint32_t real(const struct shape *x, uint32_t v)
{
	return (v + x->a->root) % x->n;
}

static void bcast_binomial(struct shape *x, void *buf, size_t bytes)
{
	uint32_t vr = (x->r + x->n - x->a->root) % x->n, mask, m;

	if (vr) {
		mask = vr & -vr;
		fc__sched_recv(x->s, real(x, vr - mask), buf, bytes);
		fc__sched_round(x->s);
	} else {
		for (mask = 1; mask < x->n; mask <<= 1)
			;
	}
	for (m = mask >> 1; m; m >>= 1)
		if (vr + m < x->n)
			fc__sched_send(x->s, real(x, vr + m), buf, bytes);
	fc__sched_round(x->s);
}

/* Van de Geijn: scatter the blocks from the root, then a ring allgather. */
static void bcast_scatter_allgather(struct shape *x, char *buf)
{
	uint32_t n = x->n, vr = (x->r + n - x->a->root) % n, i, s;
	size_t c = x->a->count, es = x->es;

	for (i = 1; i < n && !vr; i++)
		fc__sched_send(x->s, real(x, i), buf + blk_off(c, n, i) * es,
			       blk_cnt(c, n, i) * es);
	if (vr)
		fc__sched_recv(x->s, real(x, 0), buf + blk_off(c, n, vr) * es,
			       blk_cnt(c, n, vr) * es);
	fc__sched_round(x->s);
	for (s = 0; s + 1 < n; s++) {
		uint32_t out = (vr + n - s) % n, in = (vr + 2 * n - s - 1) % n;

		fc__sched_send(x->s, real(x, vr + 1),
			       buf + blk_off(c, n, out) * es,
			       blk_cnt(c, n, out) * es);
		fc__sched_recv(x->s, real(x, vr + n - 1),
			       buf + blk_off(c, n, in) * es,
			       blk_cnt(c, n, in) * es);
		fc__sched_round(x->s);
	}
}

/* ---- Reductions ---- */

static void reduce_binomial(struct shape *x)
{
	uint32_t vr = (x->r + x->n - x->a->root) % x->n, mask;
	size_t bytes = x->a->count * x->es;
	const void *acc = input(x);
	void *tmp = NULL, *sum = NULL;

	if (vr + 1 < x->n && !(vr & 1)) { /* has children */
		sum = vr ? fc__sched_scratch(x->s, bytes) : x->a->recvbuf;
		tmp = fc__sched_scratch(x->s, bytes);
		if (!sum || !tmp)
			return;
		fc__sched_copy(x->s, sum, acc, bytes);
		fc__sched_round(x->s);
		acc = sum;
	} else if (!vr) { /* a root alone */
		fc__sched_copy(x->s, x->a->recvbuf, acc, bytes);
		fc__sched_round(x->s);
	}
	for (mask = 1; mask < x->n; mask <<= 1) {
		if (vr & mask) {
			fc__sched_send(x->s, real(x, vr - mask), acc, bytes);
			fc__sched_round(x->s);
			return;
		}
		if (vr + mask < x->n) {
			fc__sched_recv(x->s, real(x, vr + mask), tmp, bytes);
			fc__sched_reduce(x->s, sum, tmp, bytes, false);
			fc__sched_round(x->s);
		}
	}
}

/*
 * Non-powers of two: the first 2 * rem ranks pair up and the even one
 * hands its part to the odd one, leaving p2 ranks, renumbered. RETURN
 * VALUE: this rank's new number, or -1 for a rank that handed in.
 */
static int fold_in(struct shape *x, void *acc, void *tmp, size_t bytes,
		   uint32_t *p2, uint32_t *rem)
{
	uint32_t r = x->r;

	for (*p2 = 1; *p2 * 2 <= x->n; *p2 *= 2)
		;
	*rem = x->n - *p2;
	if (r >= 2 * *rem)
		return (int)(r - *rem);
	if (!(r & 1)) {
		fc__sched_send(x->s, r + 1, acc, bytes);
		fc__sched_round(x->s);
		return -1;
	}
	fc__sched_recv(x->s, r - 1, tmp, bytes);
	fc__sched_reduce(x->s, acc, tmp, bytes, true);
	fc__sched_round(x->s);
	return (int)(r / 2);
}

/* The real rank of new number @nr (fold_in's inverse). */
static uint32_t unfolded(uint32_t nr, uint32_t rem)
{
	return nr < rem ? 2 * nr + 1 : nr + rem;
}

/* The result back to the ranks that handed their part in. */
static void fold_out(struct shape *x, void *acc, size_t bytes, uint32_t rem)
{
	if (x->r >= 2 * rem)
		return;
	if (x->r & 1)
		fc__sched_send(x->s, x->r - 1, acc, bytes);
	else
		fc__sched_recv(x->s, x->r + 1, acc, bytes);
	fc__sched_round(x->s);
}

/*
 * @peer's part into what this rank holds (*cur), lower rank first. While
 * *cur is still the input (out of place), the message lands straight in
 * @acc and the input is reduced into it: the input is never copied.
 */
static void absorb(struct shape *x, uint32_t peer, const void **cur, void *acc,
		   void **tmp, size_t bytes)
{
	if (*cur != acc) {
		fc__sched_recv(x->s, peer, acc, bytes);
		fc__sched_reduce(x->s, acc, *cur, bytes, x->r < peer);
		*cur = acc;
		return;
	}
	if (!*tmp)
		*tmp = fc__sched_scratch(x->s, bytes);
	if (!*tmp)
		return;
	fc__sched_recv(x->s, peer, *tmp, bytes);
	fc__sched_reduce(x->s, acc, *tmp, bytes, peer < x->r);
}

/*
 * Non-powers of two fold as fold_in() does: the even rank of each of the
 * first rem pairs hands its input in and gets the result back.
 */
static void allreduce_recursive_doubling(struct shape *x)
{
	uint32_t p2, rem, mask, r = x->r, nr;
	size_t bytes = x->a->count * x->es;
	void *acc = x->a->recvbuf, *tmp = NULL;
	const void *cur = input(x); /* in place: @acc */

	for (p2 = 1; p2 * 2 <= x->n; p2 *= 2)
		;
	rem = x->n - p2;
	if (r < 2 * rem && !(r & 1)) {
		fc__sched_send(x->s, r + 1, cur, bytes);
		fc__sched_round(x->s);
		fc__sched_recv(x->s, r + 1, acc, bytes);
		fc__sched_round(x->s);
		return;
	}
	nr = r - rem;
	if (r < 2 * rem) {
		absorb(x, r - 1, &cur, acc, &tmp, bytes);
		fc__sched_round(x->s);
		nr = r / 2;
	}
	for (mask = 1; mask < p2; mask <<= 1) {
		uint32_t peer = unfolded(nr ^ mask, rem);

		fc__sched_send(x->s, peer, cur, bytes);
		absorb(x, peer, &cur, acc, &tmp, bytes);
		fc__sched_round(x->s);
	}
	/* one rank alone */
	fc__sched_copy(x->s, acc, cur, bytes);
	fc__sched_round(x->s);
	fold_out(x, acc, bytes, rem);
}

/*
 * Rabenseifner: reduce-scatter by recursive halving (each step keeps half
 * of what is left and sends the other half to the partner), then an
 * allgather by recursive doubling: the bytes of the ring in 2 log2(p)
 * steps instead of 2 (p - 1). Each block is reduced once, by its owner,
 * lower ranks' parts first, and copied to the others.
 */
static void allreduce_rabenseifner(struct shape *x)
{
	size_t count = x->a->count, es = x->es, bytes = count * es, *offs,
	       *cnts;
	uint32_t p2, rem, mask, lo = 0, hi, r = x->r;
	char *acc = x->a->recvbuf, *tmp = fc__sched_scratch(x->s, bytes);
	int nr;

	if (!tmp)
		return;
	fc__sched_copy(x->s, acc, input(x), bytes);
	fc__sched_round(x->s);
	nr = fold_in(x, acc, tmp, bytes, &p2, &rem);
	if (nr >= 0) {
		/* p2 blocks; offs has p2 + 1 entries so that offs[hi] ends */
		struct shape sub = *x;

		sub.n = p2;
		if (fc__even_blocks(&sub, count, &offs, &cnts))
			return;
		hi = p2;
		for (mask = p2 / 2; mask; mask /= 2) {
			uint32_t peer = unfolded((uint32_t)nr ^ mask, rem);
			uint32_t mid = lo + mask, klo, khi, slo, shi;
			size_t kb, sb;

			if ((uint32_t)nr & mask) { /* keep the upper half */
				klo = mid, khi = hi, slo = lo, shi = mid;
			} else {
				klo = lo, khi = mid, slo = mid, shi = hi;
			}
			kb = (blk_end(offs, cnts, khi - 1) - offs[klo]) * es;
			sb = (blk_end(offs, cnts, shi - 1) - offs[slo]) * es;
			fc__sched_send(x->s, peer, acc + offs[slo] * es, sb);
			fc__sched_recv(x->s, peer, tmp, kb);
			fc__sched_reduce(x->s, acc + offs[klo] * es, tmp, kb,
					 peer < r);
			fc__sched_round(x->s);
			lo = klo;
			hi = khi;
		}
		for (mask = 1; mask < p2; mask *= 2) {
			uint32_t peer = unfolded((uint32_t)nr ^ mask, rem);
			uint32_t plo = lo ^ mask; /* the partner's range */

			fc__sched_send(x->s, peer, acc + offs[lo] * es,
				       (blk_end(offs, cnts, lo + mask - 1) -
					offs[lo]) *
					       es);
			fc__sched_recv(x->s, peer, acc + offs[plo] * es,
				       (blk_end(offs, cnts, plo + mask - 1) -
					offs[plo]) *
					       es);
			fc__sched_round(x->s);
			lo = lo < plo ? lo : plo;
		}
	}
	fold_out(x, acc, bytes, rem);
}

/* Hillis and Steele: in round k, pass the sum of the 2^k ranks up to
 * this one on to rank r + 2^k. */
static void scan_recursive_doubling(struct shape *x, bool exclusive)
{
	size_t bytes = x->a->count * x->es;
	uint32_t mask, r = x->r;
	void *part = fc__sched_scratch(x->s, bytes);
	void *tmp = fc__sched_scratch(x->s, bytes);
	char *res = x->a->recvbuf;

	if (!part || !tmp)
		return;
	fc__sched_copy(x->s, part, input(x), bytes);
	if (!exclusive)
		fc__sched_copy(x->s, res, input(x), bytes);
	fc__sched_round(x->s);
	for (mask = 1; mask < x->n; mask <<= 1) {
		if (r + mask < x->n)
			fc__sched_send(x->s, r + mask, part, bytes);
		if (r >= mask) {
			fc__sched_recv(x->s, r - mask, tmp, bytes);
			if (exclusive && mask == 1)
				fc__sched_copy(x->s, res, tmp, bytes);
			else
				fc__sched_reduce(x->s, res, tmp, bytes, true);
			fc__sched_reduce(x->s, part, tmp, bytes, true);
		}
		fc__sched_round(x->s);
	}
}

/* ---- Gather, scatter, allgather, alltoall ---- */

/* Linear gather (@gather) or scatter: the root talks to each rank. */
static void rooted_linear(struct shape *x, bool gather)
{
	const struct fc__coll_args *a = x->a;
	size_t *offs, *cnts, es = x->es;
	/* the root's array of blocks, and the block of this rank */
	char *blocks = gather ? a->recvbuf : (char *)a->sendbuf;
	char *own = gather ? (char *)a->sendbuf : a->recvbuf;
	uint32_t i;

	if (x->r != a->root) {
		if (gather)
			fc__sched_send(x->s, a->root, own, a->sendcount * es);
		else
			fc__sched_recv(x->s, a->root, own, a->sendcount * es);
		fc__sched_round(x->s);
		return;
	}
	if (fc__layout(x, &offs, &cnts))
		return;
	for (i = 0; i < x->n; i++) {
		if (i == x->r)
			continue;
		if (gather)
			fc__sched_recv(x->s, i, blocks + offs[i] * es,
				       cnts[i] * es);
		else
			fc__sched_send(x->s, i, blocks + offs[i] * es,
				       cnts[i] * es);
	}
	if (!a->in_place && gather)
		fc__sched_copy(x->s, blocks + offs[x->r] * es, own,
			       cnts[x->r] * es);
	else if (!a->in_place)
		fc__sched_copy(x->s, own, blocks + offs[x->r] * es,
			       cnts[x->r] * es);
	fc__sched_round(x->s);
}

/* Members in the subtree of relative rank @vr of a binomial tree. */
static uint32_t subtree(const struct shape *x, uint32_t vr)
{
	uint32_t m = vr & -vr;

	if (!vr)
		for (m = 1; m < x->n; m <<= 1)
			;
	return m < x->n - vr ? m : x->n - vr;
}

/*
 * Binomial gather: each rank collects its subtree's blocks, in relative
 * rank order, and passes them up in one message; the root turns them back
 * into rank order. log2(n) messages on the root's path instead of n - 1.
 */
static void gather_binomial(struct shape *x)
{
	uint32_t n = x->n, root = x->a->root, vr = (x->r + n - root) % n, mask;
	size_t blk = x->a->count * x->es;
	char *tmp = fc__sched_scratch(x->s, subtree(x, vr) * blk);
	char *rb = x->a->recvbuf;

	if (!tmp)
		return;
	fc__sched_copy(x->s, tmp,
		       x->a->in_place ? rb + root * blk : x->a->sendbuf, blk);
	fc__sched_round(x->s);
	for (mask = 1; mask < n; mask <<= 1) {
		if (vr & mask) {
			fc__sched_send(x->s, real(x, vr - mask), tmp,
				       subtree(x, vr) * blk);
			fc__sched_round(x->s);
			return;
		}
		if (vr + mask < n) {
			fc__sched_recv(x->s, real(x, vr + mask),
				       tmp + mask * blk,
				       subtree(x, vr + mask) * blk);
			fc__sched_round(x->s);
		}
	}
	/* the root: relative rank v is rank (v + root) % n */
	fc__sched_copy(x->s, rb + root * blk, tmp, (n - root) * blk);
	fc__sched_copy(x->s, rb, tmp + (n - root) * blk, root * blk);
	fc__sched_round(x->s);
}

/* Binomial scatter: gather_binomial backwards. */
static void scatter_binomial(struct shape *x)
{
	uint32_t n = x->n, root = x->a->root, vr = (x->r + n - root) % n, m;
	size_t blk = x->a->count * x->es;
	char *tmp = fc__sched_scratch(x->s, subtree(x, vr) * blk);
	const char *sb = x->a->sendbuf;

	if (!tmp)
		return;
	if (!vr) {
		fc__sched_copy(x->s, tmp, sb + root * blk, (n - root) * blk);
		fc__sched_copy(x->s, tmp + (n - root) * blk, sb, root * blk);
		fc__sched_round(x->s);
	} else {
		fc__sched_recv(x->s, real(x, vr - (vr & -vr)), tmp,
			       subtree(x, vr) * blk);
		fc__sched_round(x->s);
	}
	if (vr) {
		m = vr & -vr;
	} else {
		for (m = 1; m < n; m <<= 1)
			;
	}
	while ((m >>= 1))
		if (vr + m < n)
			fc__sched_send(x->s, real(x, vr + m), tmp + m * blk,
				       subtree(x, vr + m) * blk);
	fc__sched_copy(x->s, x->a->recvbuf, tmp, blk);
	fc__sched_round(x->s);
}

static void allgather(struct shape *x, int algo)
{
	size_t *offs, *cnts, es = x->es, c = x->a->count;
	char *rb = x->a->recvbuf;
	uint32_t mask, r = x->r;

	if (fc__layout(x, &offs, &cnts))
		return;
	if (!x->a->in_place)
		fc__sched_copy(x->s, rb + offs[r] * es, x->a->sendbuf,
			       cnts[r] * es);
	fc__sched_round(x->s);
	if (algo == A_RING) {
		fc__ring_allgather(x, rb, offs, cnts);
		return;
	}
	for (mask = 1; mask < x->n; mask <<= 1) {
		uint32_t peer = r ^ mask;

		fc__sched_send(x->s, peer, rb + (r & ~(mask - 1)) * c * es,
			       mask * c * es);
		fc__sched_recv(x->s, peer, rb + (peer & ~(mask - 1)) * c * es,
			       mask * c * es);
		fc__sched_round(x->s);
	}
}

static void alltoall(struct shape *x, int algo)
{
	const struct fc__coll_args *a = x->a;
	size_t *roffs, *rcnts, *soffs, *scnts, es = x->es, end = 0;
	const char *sb = a->sendbuf;
	char *rb = a->recvbuf;
	uint32_t i, r = x->r, n = x->n;

	if (fc__layout(x, &roffs, &rcnts))
		return;
	soffs = a->vector ? (size_t *)a->sdispls : roffs;
	scnts = a->vector ? (size_t *)a->scounts : rcnts;
	if (a->in_place) {
		/* send from a copy of what will be overwritten */
		for (i = 0; i < n; i++)
			if (roffs[i] + rcnts[i] > end)
				end = roffs[i] + rcnts[i];
		sb = fc__sched_scratch(x->s, end * es);
		if (!sb)
			return;
		fc__sched_copy(x->s, (void *)sb, rb, end * es);
		fc__sched_round(x->s);
		soffs = roffs;
		scnts = rcnts;
	} else {
		fc__sched_copy(x->s, rb + roffs[r] * es, sb + soffs[r] * es,
			       rcnts[r] * es);
	}
	for (i = 1; i < n; i++) {
		uint32_t to = (r + i) % n, from = (r + n - i) % n;

		fc__sched_send(x->s, to, sb + soffs[to] * es, scnts[to] * es);
		fc__sched_recv(x->s, from, rb + roffs[from] * es,
			       rcnts[from] * es);
		if (algo == A_PAIRWISE)
			fc__sched_round(x->s);
	}
	fc__sched_round(x->s);
}

int fc__coll_record(struct fc_group *g, const struct fc__coll_args *a,
		    struct fc__sched *s)
{
	struct shape x = { g,	    s,	     a,
			   g->size, g->rank, fc__dtype_size(a->dtype),
			   NULL };
	size_t bytes = a->count * x.es;
	int algo;

	/* alltoallv: the choice goes by its largest message */
	for (uint32_t i = 0;
	     a->kind == FC__ALLTOALL && a->vector && a->counts && i < x.n; i++)
		if (a->counts[i] * x.es > bytes)
			bytes = a->counts[i] * x.es;
	algo = choose(g, a->kind, a->vector, bytes);

	switch (a->kind) {
	case FC__BARRIER:
		barrier_dissemination(&x);
		break;
	case FC__BCAST:
		if (algo == A_BINOMIAL)
			bcast_binomial(&x, a->recvbuf, bytes);
		else if (algo == A_GRID)
			fc__bcast_grid(&x);
		else
			bcast_scatter_allgather(&x, a->recvbuf);
		break;
	case FC__REDUCE:
		reduce_binomial(&x);
		break;
	case FC__ALLREDUCE:
		if (algo == A_RING)
			fc__allreduce_ring(&x);
		else if (algo == A_GRID)
			fc__allreduce_grid(&x);
		else if (algo == A_RABENSEIFNER)
			allreduce_rabenseifner(&x);
		else
			allreduce_recursive_doubling(&x);
		break;
	case FC__REDUCE_SCATTER:
		if (algo == A_GRID)
			fc__reduce_scatter_grid(&x);
		else
			fc__reduce_scatter_ring(&x);
		break;
	case FC__SCAN:
	case FC__EXSCAN:
		scan_recursive_doubling(&x, a->kind == FC__EXSCAN);
		break;
	case FC__GATHER:
		if (algo == A_BINOMIAL)
			gather_binomial(&x);
		else
			rooted_linear(&x, true);
		break;
	case FC__SCATTER:
		if (algo == A_BINOMIAL)
			scatter_binomial(&x);
		else
			rooted_linear(&x, false);
		break;
	case FC__ALLGATHER:
	case FC__SPLIT:
		if (algo == A_GRID)
			fc__allgather_grid(&x);
		else
			allgather(&x, algo);
		break;
	case FC__ALLTOALL:
		alltoall(&x, algo);
		break;
	default:
		return -EINVAL;
	}
	if (x.n > 1 && (a->kind == FC__BCAST || a->kind == FC__REDUCE ||
			a->kind == FC__GATHER || a->kind == FC__SCATTER)) {
		uint32_t vr = (x.r + x.n - a->root) % x.n;
		/* A binomial bcast's root sends to its right neighbour in its
		 * first round anyway: that message stands in for the check
		 * (each rank still gets a first-round message from its left,
		 * sent unconditionally, whatever root the left believes in) */
		bool bino = a->kind == FC__BCAST && algo == A_BINOMIAL;

		fc__sched_check(s, bino && vr == 0 ? FC__NOBODY : right(&x),
				bino && vr == 1 ? FC__NOBODY : left(&x));
	}
	return s->err;
}
