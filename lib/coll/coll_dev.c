// SPDX-License-Identifier: MIT
/*
 * Collectives on device memory: at a collective's start its device
 * buffers are swapped for host bounce buffers, the input copied in; the
 * algorithm (and every reduction) then runs on host memory as for any
 * other call; at its end the result goes back to the device buffer. One
 * copy of each buffer per call, whatever the algorithm: coll.c calls
 * fc__coll_stage_in() once at the start and fc__coll_stage_out() once at
 * the end.
 */
#include <errno.h>
#include <stdlib.h>

#include "coll_internal.h"
#include "devmem.h"
#include "internal.h"

struct fc__coll_stage {
	struct fc__bounce *send, *recv;
	void *dev_recv;	   /* where recv's bytes go back */
	size_t recv_bytes; /* how many */
};

/* max(displs[i] + counts[i]) elements over the ranks with a block (the
 * arguments were checked: no overflow). */
static size_t extent(const size_t *counts, const size_t *displs, uint32_t n)
{
	size_t end = 0;

	for (uint32_t i = 0; i < n; i++)
		if (counts[i] && counts[i] + displs[i] > end)
			end = counts[i] + displs[i];
	return end;
}

/*
 * The bytes of @a's send and receive buffers this rank's collective
 * touches (0: none), and whether the receive buffer is read (an input, or
 * partly written: what is not written must stay as it was).
 */
static void extents(const struct fc_group *g, const struct fc__coll_args *a,
		    size_t *sbytes, size_t *rbytes, bool *rin)
{
	size_t es = fc__dtype_size(a->dtype), n = g->size;
	bool root = g->rank == a->root, v = a->vector;
	size_t s = a->count, r = a->count; /* elements */

	*rin = a->in_place;
	switch (a->kind) {
	case FC__BARRIER:
		s = r = 0;
		break;
	case FC__BCAST:
		s = 0;
		*rin = root;
		break;
	case FC__REDUCE:
		r = root ? r : 0;
		break;
	case FC__EXSCAN:
		*rin = true; /* rank 0's is left as it was */
		break;
	case FC__REDUCE_SCATTER:
		s = n * a->count;
		r = a->in_place ? s : a->count;
		break;
	case FC__GATHER:
	case FC__ALLGATHER:
		s = a->sendcount;
		if (a->kind == FC__GATHER && !root)
			r = 0;
		else
			r = v ? extent(a->counts, a->displs, g->size) :
				n * a->count;
		*rin |= v;
		break;
	case FC__SCATTER:
		s = !root ? 0 :
		    v	  ? extent(a->counts, a->displs, g->size) :
			    n * a->count;
		r = a->sendcount;
		break;
	case FC__ALLTOALL:
		s = v ? (a->in_place ? 0 : extent(a->scounts, a->sdispls, n)) :
			n * a->count;
		r = v ? extent(a->counts, a->displs, g->size) : n * a->count;
		*rin |= v;
		break;
	default: /* allreduce, scan */
		break;
	}
	*sbytes = a->in_place || !a->sendbuf ? 0 : s * es;
	*rbytes = a->recvbuf ? r * es : 0;
}

int fc__coll_stage_out(struct fc__coll_stage *st, int ret)
{
	if (!st)
		return ret;
	if (!ret && st->dev_recv)
		ret = fc__devmem_to_dev(st->dev_recv, st->recv->p,
					st->recv_bytes);
	fc__bounce_put(st->send);
	fc__bounce_put(st->recv);
	free(st);
	return ret;
}

int fc__coll_stage_in(struct fc_group *g, struct fc__coll_args *a,
		      struct fc__coll_stage **stp)
{
	bool sdev, rdev, rin;
	struct fc__coll_stage *st;
	size_t sb, rb;
	int ret = 0;

	*stp = NULL;
	sdev = fc__devmem_path(g->dev, a->sendbuf) != FC__PATH_HOST;
	rdev = fc__devmem_path(g->dev, a->recvbuf) != FC__PATH_HOST;
	if (!sdev && !rdev)
		return 0;
	extents(g, a, &sb, &rb, &rin);
	sdev &= sb > 0;
	rdev &= rb > 0;
	if (!sdev && !rdev)
		return 0; /* nothing of them is touched */
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	if (sdev) {
		ret = fc__bounce_get(sb, &st->send);
		if (!ret)
			ret = fc__devmem_to_host(st->send->p, a->sendbuf, sb);
	}
	if (!ret && rdev) {
		ret = fc__bounce_get(rb, &st->recv);
		if (!ret && rin)
			ret = fc__devmem_to_host(st->recv->p, a->recvbuf, rb);
	}
	if (ret) {
		fc__coll_stage_out(st, ret);
		return ret;
	}
	if (sdev)
		a->sendbuf = st->send->p;
	if (rdev) {
		st->dev_recv = a->recvbuf;
		st->recv_bytes = rb;
		a->recvbuf = st->recv->p;
	}
	*stp = st;
	return 0;
}
