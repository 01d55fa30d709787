/* SPDX-License-Identifier: MIT */
/*
 * What the collective algorithms share (private to lib/coll_*.c): the
 * shape of one rank's view of a group, or of a ring inside it, and the
 * ring steps that whole-group and per-dimension algorithms both use.
 */
#ifndef FC_COLL_SHAPE_H
#define FC_COLL_SHAPE_H

#include <errno.h>

#include "coll_internal.h"

/*
 * @n members, this rank is @r. @map names the members of a ring inside
 * the group (a row or a column of a torus): position i is group member
 * map[i]; NULL for the whole group in rank order.
 */
struct shape {
	struct fc_group *g;
	struct fc__sched *s;
	const struct fc__coll_args *a;
	uint32_t n, r;
	size_t es;
	const uint32_t *map;
};

/* The group member at position @i of @x. */
static inline uint32_t member(const struct shape *x, uint32_t i)
{
	return x->map ? x->map[i] : i;
}

static inline uint32_t left(const struct shape *x)
{
	return member(x, (x->r + x->n - 1) % x->n);
}

static inline uint32_t right(const struct shape *x)
{
	return member(x, (x->r + 1) % x->n);
}

/* Block @i of @count elements cut into @n nearly equal blocks. */
static inline size_t blk_off(size_t count, uint32_t n, uint32_t i)
{
	size_t q = count / n, rem = count % n;

	return i * q + (i < rem ? i : rem);
}

static inline size_t blk_cnt(size_t count, uint32_t n, uint32_t i)
{
	return count / n + (i < count % n);
}

/* The input of a reduction: @sendbuf, or @recvbuf in place. */
static inline const void *input(const struct shape *x)
{
	return x->a->in_place ? x->a->recvbuf : x->a->sendbuf;
}

/* Block offsets and counts of @count elements in x->n blocks, in the
 * schedule's scratch. RETURN VALUE: 0 or -ENOMEM. */
static inline int fc__even_blocks(struct shape *x, size_t count, size_t **offs,
				  size_t **cnts)
{
	*offs = fc__sched_scratch(x->s, x->n * sizeof(size_t));
	*cnts = fc__sched_scratch(x->s, x->n * sizeof(size_t));
	if (!*offs || !*cnts)
		return -ENOMEM;
	for (uint32_t i = 0; i < x->n; i++) {
		(*offs)[i] = blk_off(count, x->n, i);
		(*cnts)[i] = blk_cnt(count, x->n, i);
	}
	return 0;
}

/* Per-member counts and displacements of the receive side (elements). */
static inline int fc__layout(struct shape *x, size_t **offs, size_t **cnts)
{
	if (x->a->vector) {
		*offs = (size_t *)x->a->displs;
		*cnts = (size_t *)x->a->counts;
		return 0;
	}
	*offs = fc__sched_scratch(x->s, x->n * sizeof(size_t));
	*cnts = fc__sched_scratch(x->s, x->n * sizeof(size_t));
	if (!*offs || !*cnts)
		return -ENOMEM;
	for (uint32_t i = 0; i < x->n; i++) {
		(*offs)[i] = i * x->a->count;
		(*cnts)[i] = x->a->count;
	}
	return 0;
}

/* coll_ring.c: after it, position r holds block r of @acc (@count
 * elements in n blocks) reduced over the ring. */
void fc__ring_reduce_scatter(struct shape *x, char *acc, size_t count);
/* Ring allgather of the blocks at @offs/@cnts (elements, per position)
 * in @buf: position r starts with block r. */
void fc__ring_allgather(struct shape *x, char *buf, const size_t *offs,
			const size_t *cnts);
void fc__allreduce_ring(struct shape *x);
void fc__reduce_scatter_ring(struct shape *x);

/* coll_grid.c: dimension by dimension on a torus or mesh that the group
 * covers. fc__grid_usable tells whether @g is such a group. */
bool fc__grid_usable(struct fc_group *g, bool torus_only);
void fc__bcast_grid(struct shape *x);
void fc__allreduce_grid(struct shape *x);
void fc__reduce_scatter_grid(struct shape *x);
void fc__allgather_grid(struct shape *x);

#endif /* FC_COLL_SHAPE_H */
