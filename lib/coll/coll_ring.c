// SPDX-License-Identifier: MIT
/*
 * Ring algorithms: a reduce-scatter and an allgather around a ring of
 * members (the whole group, or a row or column of a torus: struct
 * shape's map), and the allreduce and reduce-scatter built from them.
 * Each element of a reduction is computed once, by the block's owner, and
 * copied around: every rank ends with the same bits.
 */
#include <stdlib.h>

#include "coll_shape.h"

/*
 * A ring step's block may go in pieces ($FPGACOMM_COLL_PIPELINE bytes,
 * rounded down to whole elements): the engine runs a piece's reduction as
 * soon as the messages recorded before it are done, so the arithmetic on
 * one piece overlaps the transfer of the next, as CIRCUS fuses the two in
 * its pipeline. Off by default: on emulated boards the transfer is a copy
 * by the same CPUs, and pieces of 256 KiB and 1 MiB measured slower than
 * whole blocks (docs/performance.md); a board whose DMA moves the data
 * while the host adds is where it pays.
 */
static size_t pipe_bytes(size_t es)
{
	const char *env = getenv("FPGACOMM_COLL_PIPELINE");
	size_t p = env ? strtoull(env, NULL, 0) : 0;

	if (!p)
		return SIZE_MAX;
	return p < es ? es : p - p % es;
}

/*
 * One ring step: send @slen bytes at @sbuf to the right, receive @rlen
 * bytes from the left into @rbuf and fold them into @dst (dst = @own op
 * dst, or dst = dst op rbuf without @own), piece by piece. Both ends cut
 * a block alike, so the pieces match; an empty block is one empty
 * message, as the receiver expects.
 */
static void pipe_step(struct shape *x, const char *sbuf, size_t slen,
		      char *rbuf, size_t rlen, char *dst, const char *own)
{
	size_t p = pipe_bytes(x->es), off;

	for (off = 0; off < slen || off < rlen || !off; off += p) {
		size_t sl = off < slen ? slen - off : 0;
		size_t rl = off < rlen ? rlen - off : 0;

		sl = sl < p ? sl : p;
		rl = rl < p ? rl : p;
		if (off < slen || !off)
			fc__sched_send(x->s, right(x), sbuf + off, sl);
		if (off < rlen || !off) {
			fc__sched_recv(x->s, left(x), rbuf + off, rl);
			if (own)
				fc__sched_reduce(x->s, dst + off, own + off, rl,
						 true);
			else
				fc__sched_reduce(x->s, dst + off, rbuf + off,
						 rl, false);
		}
		if (p == SIZE_MAX)
			break;
	}
	fc__sched_round(x->s);
}

/*
 * Ring reduce-scatter over @acc (@count elements in n blocks; block i
 * at blk_off): after it, rank r holds block r reduced over every rank.
 */
void fc__ring_reduce_scatter(struct shape *x, char *acc, size_t count)
{
	uint32_t n = x->n, r = x->r, s;
	size_t es = x->es;
	char *tmp = fc__sched_scratch(x->s, blk_cnt(count, n, 0) * es);

	if (!tmp)
		return;
	for (s = 0; s + 1 < n; s++) {
		uint32_t out = (r + 2 * n - s - 1) % n;
		uint32_t in = (r + 2 * n - s - 2) % n;

		pipe_step(x, acc + blk_off(count, n, out) * es,
			  blk_cnt(count, n, out) * es, tmp,
			  blk_cnt(count, n, in) * es,
			  acc + blk_off(count, n, in) * es, NULL);
	}
}

/* Ring allgather of blocks at @offs/@cnts (elements) in @buf: rank r
 * starts with block r. */
void fc__ring_allgather(struct shape *x, char *buf, const size_t *offs,
			const size_t *cnts)
{
	uint32_t n = x->n, r = x->r, s;
	size_t es = x->es;

	for (s = 0; s + 1 < n; s++) {
		uint32_t out = (r + n - s) % n, in = (r + 2 * n - s - 1) % n;

		fc__sched_send(x->s, right(x), buf + offs[out] * es,
			       cnts[out] * es);
		fc__sched_recv(x->s, left(x), buf + offs[in] * es,
			       cnts[in] * es);
		fc__sched_round(x->s);
	}
}

/*
 * Ring allreduce. Out of place, the caller's input is read where it lies:
 * each block is received straight into @recvbuf and the rank's own part
 * added from @sendbuf, with no copy of the input and no scratch; in place,
 * blocks arrive in a scratch block and are added into @recvbuf. Both add
 * in the order own op incoming, so that mixed calls agree to the bit.
 */
void fc__allreduce_ring(struct shape *x)
{
	size_t count = x->a->count, *offs, *cnts, es = x->es;
	const char *own = x->a->sendbuf;
	char *acc = x->a->recvbuf;
	uint32_t n = x->n, r = x->r, s;

	if (fc__even_blocks(x, count, &offs, &cnts))
		return;
	if (x->a->in_place) {
		fc__ring_reduce_scatter(x, acc, count);
	} else {
		for (s = 0; s + 1 < n; s++) {
			uint32_t out = (r + 2 * n - s - 1) % n;
			uint32_t in = (r + 2 * n - s - 2) % n;

			pipe_step(x, (s ? acc : own) + offs[out] * es,
				  cnts[out] * es, acc + offs[in] * es,
				  cnts[in] * es, acc + offs[in] * es,
				  own + offs[in] * es);
		}
		if (n == 1) {
			fc__sched_copy(x->s, acc, own, count * es);
			fc__sched_round(x->s);
		}
	}
	fc__ring_allgather(x, acc, offs, cnts);
}

void fc__reduce_scatter_ring(struct shape *x)
{
	size_t count = x->a->count, bytes = count * x->es, all = bytes * x->n;
	char *acc = fc__sched_scratch(x->s, all);

	if (!acc)
		return;
	fc__sched_copy(x->s, acc, input(x), all);
	fc__sched_round(x->s);
	fc__ring_reduce_scatter(x, acc, count * x->n);
	fc__sched_copy(x->s, x->a->recvbuf, acc + x->r * bytes, bytes);
	fc__sched_round(x->s);
}
