// SPDX-License-Identifier: MIT
/*
 * Dimension by dimension on a 2D torus (or mesh): a collective runs as
 * rings along the rows, then along the columns, so that every message
 * crosses one link and the number of steps is (nx - 1) + (ny - 1) per
 * phase instead of nx * ny - 1 around the whole group. The bytes each rank
 * sends are those of the group-wide ring.
 *
 * A group qualifies when its members are all the boards of the world,
 * in any order: member m sits at the world's coordinates of its board,
 * x = node % nx, y = node / nx (topo/topology.h).
 */
#include <errno.h>
#include <string.h>

#include "coll_shape.h"
#include "topology.h"

struct grid {
	uint32_t nx, ny;
	uint32_t x, y;	/* this rank's cell */
	uint32_t *row;	/* nx members of this rank's row, by x */
	uint32_t *col;	/* ny members of this rank's column, by y */
	uint32_t *cell; /* member at cell (x, y): cell[y * nx + x] */
};

static bool world_grid(struct fc_group *g, bool torus_only,
		       struct fc_topology *t)
{
	struct fc_world w;
	uint64_t seen = 0;

	_Static_assert(FC_MAX_NODES <= 64, "one bit a node");
	if (fc_world_query(g->dev, &w) || fc_topo_parse(w.topology, t))
		return false;
	if (t->kind != FC_TOPOLOGY_TORUS &&
	    (torus_only || t->kind != FC_TOPOLOGY_MESH))
		return false;
	if (t->nx < 2 || t->ny < 2 || g->size != t->nodes)
		return false;
	for (uint32_t m = 0; m < g->size; m++) {
		if (g->world[m] >= t->nodes || (seen >> g->world[m] & 1))
			return false;
		seen |= 1ull << g->world[m];
	}
	return true;
}

bool fc__grid_usable(struct fc_group *g, bool torus_only)
{
	struct fc_topology t;

	return world_grid(g, torus_only, &t);
}

/* This rank's grid, in the schedule's scratch. RETURN VALUE: 0, -EINVAL
 * (the group no longer covers the world: checked when it was chosen) or
 * -ENOMEM. */
static int grid_get(struct shape *x, struct grid *gr)
{
	struct fc_group *g = x->g;
	struct fc_topology t;
	uint32_t me;

	if (!world_grid(g, false, &t))
		return -EINVAL;
	gr->nx = t.nx;
	gr->ny = t.ny;
	gr->cell = fc__sched_scratch(x->s, t.nodes * sizeof(uint32_t));
	gr->row = fc__sched_scratch(x->s, t.nx * sizeof(uint32_t));
	gr->col = fc__sched_scratch(x->s, t.ny * sizeof(uint32_t));
	if (!gr->cell || !gr->row || !gr->col)
		return -ENOMEM;
	for (uint32_t m = 0; m < g->size; m++)
		gr->cell[g->world[m]] = m;
	me = g->world[g->rank];
	gr->x = me % t.nx;
	gr->y = me / t.nx;
	for (uint32_t i = 0; i < t.nx; i++)
		gr->row[i] = gr->cell[gr->y * t.nx + i];
	for (uint32_t i = 0; i < t.ny; i++)
		gr->col[i] = gr->cell[i * t.nx + gr->x];
	return 0;
}

static struct shape ring_of(const struct shape *x, uint32_t n, uint32_t pos,
			    const uint32_t *map)
{
	struct shape r = *x;

	r.n = n;
	r.r = pos;
	r.map = map;
	return r;
}

/*
 * Allreduce: a reduce-scatter along the row leaves this rank block x of
 * the row's sum; a ring allreduce of that block along the column (whose
 * members all hold block x) makes it the sum over all; an allgather along
 * the row hands the blocks back. Each element is computed once, by one
 * owner, and copied: the same bits everywhere.
 */
void fc__allreduce_grid(struct shape *x)
{
	size_t count = x->a->count, es = x->es, off, cnt, *offs, *cnts;
	char *acc = x->a->recvbuf;
	struct shape row, col;
	struct grid gr;
	int ret = grid_get(x, &gr);

	if (ret) {
		x->s->err = ret;
		return;
	}
	row = ring_of(x, gr.nx, gr.x, gr.row);
	col = ring_of(x, gr.ny, gr.y, gr.col);
	if (!x->a->in_place) {
		fc__sched_copy(x->s, acc, x->a->sendbuf, count * es);
		fc__sched_round(x->s);
	}
	fc__ring_reduce_scatter(&row, acc, count);
	off = blk_off(count, gr.nx, gr.x);
	cnt = blk_cnt(count, gr.nx, gr.x);
	fc__ring_reduce_scatter(&col, acc + off * es, cnt);
	if (fc__even_blocks(&col, cnt, &offs, &cnts))
		return;
	fc__ring_allgather(&col, acc + off * es, offs, cnts);
	if (fc__even_blocks(&row, count, &offs, &cnts))
		return;
	fc__ring_allgather(&row, acc, offs, cnts);
}

/* A binomial broadcast of @buf over the @n members of @map from position
 * @root; this rank is at position @pos. */
static void binomial_on(struct shape *x, const uint32_t *map, uint32_t n,
			uint32_t pos, uint32_t root, void *buf, size_t bytes)
{
	uint32_t vr = (pos + n - root) % n, mask, m;

	if (vr) {
		mask = vr & -vr;
		fc__sched_recv(x->s, map[(vr - mask + root) % n], buf, bytes);
		fc__sched_round(x->s);
	} else {
		for (mask = 1; mask < n; mask <<= 1)
			;
	}
	for (m = mask >> 1; m; m >>= 1)
		if (vr + m < n)
			fc__sched_send(x->s, map[(vr + m + root) % n], buf,
				       bytes);
	fc__sched_round(x->s);
}

/*
 * Broadcast: a binomial tree along the root's row, then one down every
 * column from its member in that row: log2(nx) + log2(ny) steps, each
 * message one link.
 */
void fc__bcast_grid(struct shape *x)
{
	size_t bytes = x->a->count * x->es;
	uint32_t node, rx, ry;
	struct grid gr;
	int ret = grid_get(x, &gr);

	if (ret) {
		x->s->err = ret;
		return;
	}
	node = x->g->world[x->a->root];
	rx = node % gr.nx;
	ry = node / gr.nx;
	if (gr.y == ry)
		binomial_on(x, gr.row, gr.nx, gr.x, rx, x->a->recvbuf, bytes);
	binomial_on(x, gr.col, gr.ny, gr.y, ry, x->a->recvbuf, bytes);
}

/*
 * Reduce-scatter: the input's blocks are laid out by their owner's
 * column, then row (a copy), so that a ring reduce-scatter along the row
 * leaves this rank the row's sums for the owners in its column, side by
 * side, and one along the column leaves it its own block's sum over all.
 */
void fc__reduce_scatter_grid(struct shape *x)
{
	size_t c = x->a->count, blk = c * x->es;
	const char *in = input(x);
	struct shape row, col;
	struct grid gr;
	char *work;
	int ret = grid_get(x, &gr);

	work = ret ? NULL : fc__sched_scratch(x->s, x->n * blk);
	if (!ret && !work)
		ret = -ENOMEM;
	if (ret) {
		x->s->err = ret;
		return;
	}
	for (uint32_t m = 0; m < x->n; m++) {
		uint32_t node = x->g->world[m];
		uint32_t pos = (node % gr.nx) * gr.ny + node / gr.nx;

		fc__sched_copy(x->s, work + pos * blk, in + m * blk, blk);
	}
	fc__sched_round(x->s);
	row = ring_of(x, gr.nx, gr.x, gr.row);
	col = ring_of(x, gr.ny, gr.y, gr.col);
	fc__ring_reduce_scatter(&row, work, x->n * c);
	fc__ring_reduce_scatter(&col, work + gr.x * gr.ny * blk, gr.ny * c);
	fc__sched_copy(x->s, x->a->recvbuf, work + (gr.x * gr.ny + gr.y) * blk,
		       blk);
	fc__sched_round(x->s);
}

/*
 * Send (or receive) the blocks of the members of row @y, as few messages
 * as their places in the buffer allow: one, where the row's members are
 * consecutive ranks (the world, or a dup of it).
 */
static void row_blocks(struct shape *x, const struct grid *gr, uint32_t y,
		       uint32_t peer, bool send, char *buf, const size_t *offs,
		       const size_t *cnts)
{
	size_t start = 0, len = 0;

	for (uint32_t i = 0; i < gr->nx; i++) {
		uint32_t m = gr->cell[y * gr->nx + i];

		if (len && offs[m] == start + len) {
			len += cnts[m];
			continue;
		}
		if (len && send)
			fc__sched_send(x->s, peer, buf + start * x->es,
				       len * x->es);
		else if (len)
			fc__sched_recv(x->s, peer, buf + start * x->es,
				       len * x->es);
		start = offs[m];
		len = cnts[m];
	}
	/* the last run, empty or not, so that both ends count alike */
	if (send)
		fc__sched_send(x->s, peer, buf + start * x->es, len * x->es);
	else
		fc__sched_recv(x->s, peer, buf + start * x->es, len * x->es);
}

/*
 * Allgather(v): a ring along the row gathers the row's blocks, then a
 * ring along the column passes whole rows on, one step a row.
 */
void fc__allgather_grid(struct shape *x)
{
	size_t *offs, *cnts, *roffs, *rcnts, es = x->es;
	char *rb = x->a->recvbuf;
	struct shape row;
	struct grid gr;
	int ret = grid_get(x, &gr);

	if (!ret)
		ret = fc__layout(x, &offs, &cnts);
	roffs = fc__sched_scratch(x->s, gr.nx * sizeof(size_t));
	rcnts = fc__sched_scratch(x->s, gr.nx * sizeof(size_t));
	if (!ret && (!roffs || !rcnts))
		ret = -ENOMEM;
	if (ret) {
		x->s->err = ret;
		return;
	}
	if (!x->a->in_place)
		fc__sched_copy(x->s, rb + offs[x->r] * es, x->a->sendbuf,
			       cnts[x->r] * es);
	fc__sched_round(x->s);
	for (uint32_t i = 0; i < gr.nx; i++) {
		roffs[i] = offs[gr.row[i]];
		rcnts[i] = cnts[gr.row[i]];
	}
	row = ring_of(x, gr.nx, gr.x, gr.row);
	fc__ring_allgather(&row, rb, roffs, rcnts);
	for (uint32_t s = 0; s + 1 < gr.ny; s++) {
		uint32_t out = (gr.y + gr.ny - s) % gr.ny;
		uint32_t in = (gr.y + 2 * gr.ny - s - 1) % gr.ny;

		row_blocks(x, &gr, out, gr.col[(gr.y + 1) % gr.ny], true, rb,
			   offs, cnts);
		row_blocks(x, &gr, in, gr.col[(gr.y + gr.ny - 1) % gr.ny],
			   false, rb, offs, cnts);
		fc__sched_round(x->s);
	}
}
