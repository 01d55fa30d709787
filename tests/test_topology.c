// SPDX-License-Identifier: MIT
/*
 * test_topology: the topologies and routing tables of topo/topology.c
 * against docs/fabric.md, for rings, meshes, tori (including 1xN, Nx1 and
 * 2-wide ones) and full meshes: parse/format round trips and bad specs;
 * port counts; every link symmetric and where the port table says; routes
 * followed hop by hop from every node to every node arrive within the
 * diameter, on a shortest path, in dimension order without turning back,
 * with fc_topo_hops() equal to the walk and DATELINE exactly on the
 * wrap-around hops; and deadlock freedom: the channel dependency graph over
 * (link, VC) of all routes is acyclic (tori 4x4, 8x8, 3x5, ring 8 and every
 * other topology here), while the same graph with one VC has a cycle.
 *
 * Needs no board. FPGACOMM_TEST_FILTER picks tests by name.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "topology.h"

static const char *const good_specs[] = {
	"ring:1",    "ring:2",	   "ring:3",	 "ring:4",     "ring:5",
	"ring:8",    "ring:64",	   "mesh:1x1",	 "mesh:1x5",   "mesh:5x1",
	"mesh:2x2",  "mesh:3x4",   "mesh:4x4",	 "mesh:8x8",   "mesh:64x1",
	"torus:1x1", "torus:1x4",  "torus:4x1",	 "torus:2x2",  "torus:2x3",
	"torus:3x2", "torus:3x3",  "torus:3x5",	 "torus:4x4",  "torus:5x5",
	"torus:8x8", "torus:4x16", "torus:64x1", "torus:1x64", "full:1",
	"full:2",    "full:3",	   "full:5",	 "full:9",
};
#define N_GOOD (sizeof(good_specs) / sizeof(good_specs[0]))

static struct fc_topology topo(const char *spec)
{
	struct fc_topology t;
	int rc = fc_topo_parse(spec, &t);

	if (rc)
		fail_msg("parse(\"%s\") = %d, expected 0", spec, rc);
	return t;
}

static bool is_grid(const struct fc_topology *t)
{
	return t->kind != FC_TOPOLOGY_FULL;
}

static unsigned int xof(const struct fc_topology *t, unsigned int n)
{
	return n % t->nx;
}

static unsigned int yof(const struct fc_topology *t, unsigned int n)
{
	return n / t->nx;
}

/* Longest shortest path. */
static unsigned int diameter(const struct fc_topology *t)
{
	switch (t->kind) {
	case FC_TOPOLOGY_RING:
		return t->nx / 2;
	case FC_TOPOLOGY_MESH:
		return t->nx - 1 + t->ny - 1;
	case FC_TOPOLOGY_TORUS:
		return t->nx / 2 + t->ny / 2;
	default:
		return t->nodes > 1;
	}
}

/* ---- parse and format ---- */

static void test_round_trip(void **state)
{
	char buf[32];

	for (size_t i = 0; i < N_GOOD; i++) {
		struct fc_topology t = topo(good_specs[i]), u;

		assert_int_equal(t.nodes, t.nx * t.ny);
		assert_ok(fc_topo_format(&t, buf, sizeof(buf)));
		assert_string_equal(buf, good_specs[i]);
		assert_ok(fc_topo_parse(buf, &u));
		assert_memory_equal(&t, &u, sizeof(t));
	}
	/* the fields say what the spec says */
	struct fc_topology t = topo("torus:3x5");

	assert_int_equal(t.kind, FC_TOPOLOGY_TORUS);
	assert_int_equal(t.nx, 3);
	assert_int_equal(t.ny, 5);
	assert_int_equal(t.nodes, 15);
	t = topo("ring:7");
	assert_int_equal(t.kind, FC_TOPOLOGY_RING);
	assert_int_equal(t.nx, 7);
	assert_int_equal(t.ny, 1);
	t = topo("full:9");
	assert_int_equal(t.kind, FC_TOPOLOGY_FULL);
	assert_int_equal(t.nodes, 9);
	t = topo("mesh:2x3");
	assert_int_equal(t.kind, FC_TOPOLOGY_MESH);
	assert_int_equal(t.nodes, 6);
}

static void test_bad_specs(void **state)
{
	static const char *const bad[] = {
		"",
		":",
		"ring",
		"ring:",
		"ring:0",
		"ring:65",
		"ring:-1",
		"ring:+4",
		"ring: 4",
		" ring:4",
		"ring:4 ",
		"ring:04",
		"ring:4x1",
		"ring:4\n",
		"ring::4",
		"ring:0x4",
		"Ring:4",
		"RING:4",
		"mesh:4",
		"mesh:4x",
		"mesh:x4",
		"mesh:4x0",
		"mesh:0x4",
		"mesh:9x8",
		"mesh:4X4",
		"mesh:4*4",
		"mesh:4x4x4",
		"torus:8x9",
		"torus:65x1",
		"torus:1x65",
		"torus:4x4,",
		"torus:99999999999x1",
		"torus:4294967297x1",
		"torus:4x-4",
		"full:0",
		"full:10",
		"full:64",
		"full:3x3",
		"star:4",
		":4",
		"hypercube:4",
		"ring4",
		"torus4x4",
	};
	struct fc_topology t, keep;
	char buf[32];

	keep = topo("torus:4x4");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc;

		t = keep;
		rc = fc_topo_parse(bad[i], &t);
		if (rc != -EINVAL)
			fail_msg("parse(\"%s\") = %d, expected -EINVAL", bad[i],
				 rc);
		/* a failed parse leaves the result alone */
		assert_memory_equal(&t, &keep, sizeof(t));
	}
	assert_int_equal(fc_topo_parse(NULL, &t), -EINVAL);
	assert_int_equal(fc_topo_parse("ring:4", NULL), -EINVAL);

	/* format: exactly enough room, one byte short, nothing */
	assert_ok(fc_topo_format(&keep, buf, sizeof("torus:4x4")));
	assert_string_equal(buf, "torus:4x4");
	assert_int_equal(fc_topo_format(&keep, buf, strlen("torus:4x4")),
			 -ENOSPC);
	assert_int_equal(fc_topo_format(&keep, buf, 0), -ENOSPC);

	/* inconsistent structures are refused everywhere */
	static const struct fc_topology broken[] = {
		{ FC_TOPOLOGY_TORUS, 4, 4, 15 },
		{ FC_TOPOLOGY_TORUS, 0, 4, 0 },
		{ FC_TOPOLOGY_MESH, 16, 8, 128 },
		{ FC_TOPOLOGY_RING, 4, 2, 8 },
		{ FC_TOPOLOGY_FULL, 10, 1, 10 },
		{ 17, 4, 1, 4 },
		/* 2^16 * 2^16 wraps to 0 in 32 bits */
		{ FC_TOPOLOGY_TORUS, 65536, 65536, 0 },
	};
	for (size_t i = 0; i < sizeof(broken) / sizeof(broken[0]); i++) {
		unsigned int p, pp;

		assert_int_equal(fc_topo_format(&broken[i], buf, sizeof(buf)),
				 -EINVAL);
		assert_int_equal(fc_topo_ports(&broken[i]), 0);
		assert_int_equal(fc_topo_peer(&broken[i], 0, 1, &p, &pp),
				 -EINVAL);
		assert_int_equal(fc_topo_route(&broken[i], 0, 0), 0);
		assert_int_equal(fc_topo_hops(&broken[i], 0, 1), 0);
	}
	assert_int_equal(fc_topo_format(NULL, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(fc_topo_format(&keep, NULL, 8), -EINVAL);
}

static void test_ports(void **state)
{
	static const struct {
		const char *spec;
		unsigned int ports;
	} want[] = {
		{ "ring:2", 2 },   { "ring:64", 2 },   { "mesh:1x1", 4 },
		{ "mesh:3x4", 4 }, { "torus:4x4", 4 }, { "torus:1x64", 4 },
		{ "full:1", 0 },   { "full:2", 1 },    { "full:9", 8 },
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct fc_topology t = topo(want[i].spec);

		if (fc_topo_ports(&t) != want[i].ports)
			fail_msg("%s: %u ports, expected %u", want[i].spec,
				 fc_topo_ports(&t), want[i].ports);
	}
	assert_int_equal(fc_topo_ports(NULL), 0);
}

/* ---- links ---- */

/*
 * Where port @p of @n must lead by the port table of docs/fabric.md;
 * false where there is no link (a mesh edge, a dimension of size 1).
 */
static bool expected_peer(const struct fc_topology *t, unsigned int n,
			  unsigned int p, unsigned int *peer)
{
	unsigned int x = xof(t, n), y = yof(t, n);
	bool wrap = t->kind != FC_TOPOLOGY_MESH;
	unsigned int size, c;
	int step;

	if (t->kind == FC_TOPOLOGY_FULL) {
		*peer = (n + p) % t->nodes;
		return true;
	}
	size = p <= 2 ? t->nx : t->ny;
	c = p <= 2 ? x : y;
	step = p % 2 ? -1 : 1;
	if (size == 1)
		return false;
	if (!wrap && ((step < 0 && c == 0) || (step > 0 && c == size - 1)))
		return false;
	c = (c + size + step) % size;
	*peer = p <= 2 ? y * t->nx + c : c * t->nx + x;
	return true;
}

static void test_peers(void **state)
{
	for (size_t i = 0; i < N_GOOD; i++) {
		struct fc_topology t = topo(good_specs[i]);
		unsigned int ports = fc_topo_ports(&t);
		/* each (node, port) end is reached by exactly one link */
		bool seen[FC_MAX_NODES][FC_MAX_PORTS + 1];

		memset(seen, 0, sizeof(seen));
		for (unsigned int n = 0; n < t.nodes; n++) {
			unsigned int p, b, bp, back, backp, want;

			for (p = 1; p <= ports; p++) {
				int rc = fc_topo_peer(&t, n, p, &b, &bp);

				if (!expected_peer(&t, n, p, &want)) {
					if (rc != -ENOENT)
						fail_msg("%s: node %u port %u: "
							 "%d, expected -ENOENT",
							 good_specs[i], n, p,
							 rc);
					continue;
				}
				if (rc || b != want)
					fail_msg("%s: node %u port %u: rc %d "
						 "peer %u, expected %u",
						 good_specs[i], n, p, rc, b,
						 want);
				assert_int_not_equal(b, n);
				assert_true(bp >= 1 && bp <= ports);
				assert_false(seen[b][bp]);
				seen[b][bp] = true;
				/* and back again */
				assert_ok(
					fc_topo_peer(&t, b, bp, &back, &backp));
				if (back != n || backp != p)
					fail_msg("%s: %u.%u -> %u.%u -> %u.%u",
						 good_specs[i], n, p, b, bp,
						 back, backp);
				/* a grid link stays in its dimension */
				if (is_grid(&t))
					assert_int_equal(FC_PORT_DIM(p),
							 FC_PORT_DIM(bp));
			}
			/* port 0 is local, not a link; nothing past the last */
			assert_int_equal(fc_topo_peer(&t, n, 0, &b, &bp),
					 -EINVAL);
			assert_int_equal(fc_topo_peer(&t, n, ports + 1, &b,
						      &bp),
					 -EINVAL);
		}
		unsigned int b, bp;

		assert_int_equal(fc_topo_peer(&t, t.nodes, 1, &b, &bp),
				 -EINVAL);
		if (ports)
			assert_int_equal(fc_topo_peer(&t, 0, 1, NULL, &bp),
					 -EINVAL);
	}
}

/* ---- routes ---- */

struct hop {
	unsigned int node, port;
	uint32_t entry;
};

/* Follow the tables from @a to @b into @path. RETURN VALUE: hops. */
static unsigned int walk(const struct fc_topology *t, unsigned int a,
			 unsigned int b, struct hop *path)
{
	unsigned int cur = a, n = 0, next, np;

	for (;;) {
		uint32_t e = fc_topo_route(t, cur, b);
		unsigned int port = e & FC_ROUTE_PORT_MASK;

		if (!(e & FC_ROUTE_VALID))
			fail_msg("%u -> %u: no valid entry at node %u "
				 "(0x%x)",
				 a, b, cur, e);
		if (port == FC_PORT_LOCAL) {
			if (cur != b)
				fail_msg("%u -> %u: delivered locally at %u", a,
					 b, cur);
			assert_int_equal(e & FC_ROUTE_DATELINE, 0);
			return n;
		}
		if (n > diameter(t))
			fail_msg("%u -> %u: longer than the diameter %u", a, b,
				 diameter(t));
		if (fc_topo_peer(t, cur, port, &next, &np))
			fail_msg("%u -> %u: node %u routes to port %u, which "
				 "has no link",
				 a, b, cur, port);
		path[n].node = cur;
		path[n].port = port;
		path[n].entry = e;
		n++;
		cur = next;
	}
}

/* Shortest distances from @a over the links (BFS). */
static void bfs(const struct fc_topology *t, unsigned int a, unsigned int *dist)
{
	unsigned int q[FC_MAX_NODES], head = 0, tail = 0;

	for (unsigned int i = 0; i < t->nodes; i++)
		dist[i] = ~0u;
	dist[a] = 0;
	q[tail++] = a;
	while (head < tail) {
		unsigned int n = q[head++], b, bp;

		for (unsigned int p = 1; p <= fc_topo_ports(t); p++) {
			if (fc_topo_peer(t, n, p, &b, &bp) || dist[b] != ~0u)
				continue;
			dist[b] = dist[n] + 1;
			q[tail++] = b;
		}
	}
}

static void test_routes_reach(void **state)
{
	struct hop path[FC_MAX_NODES];

	for (size_t i = 0; i < N_GOOD; i++) {
		struct fc_topology t = topo(good_specs[i]);
		unsigned int dist[FC_MAX_NODES], worst = 0;

		for (unsigned int a = 0; a < t.nodes; a++) {
			assert_int_equal(fc_topo_route(&t, a, a),
					 FC_ROUTE_VALID | FC_PORT_LOCAL);
			assert_int_equal(fc_topo_route(&t, a, t.nodes), 0);
			assert_int_equal(fc_topo_route(&t, t.nodes, a), 0);
			bfs(&t, a, dist);
			for (unsigned int b = 0; b < t.nodes; b++) {
				unsigned int n = walk(&t, a, b, path);

				if (fc_topo_hops(&t, a, b) != n)
					fail_msg("%s: hops(%u, %u) = %u, the "
						 "walk took %u",
						 good_specs[i], a, b,
						 fc_topo_hops(&t, a, b), n);
				/* dimension order is minimal on these */
				if (n != dist[b])
					fail_msg("%s: %u -> %u in %u hops, "
						 "shortest is %u",
						 good_specs[i], a, b, n,
						 dist[b]);
				if (n > worst)
					worst = n;
			}
		}
		/* the diameter is reached, so the bound above is tight */
		assert_int_equal(worst, diameter(&t));
	}
}

/*
 * Dimension order: X hops, then Y hops, never back; within a dimension one
 * direction only; and on a ring or torus the shorter way, a tie going +.
 */
static void test_dimension_order(void **state)
{
	struct hop path[FC_MAX_NODES];

	for (size_t i = 0; i < N_GOOD; i++) {
		struct fc_topology t = topo(good_specs[i]);

		if (!is_grid(&t))
			continue;
		for (unsigned int a = 0; a < t.nodes; a++) {
			for (unsigned int b = 0; b < t.nodes; b++) {
				unsigned int n = walk(&t, a, b, path);
				unsigned int nx = 0, ny = 0;

				for (unsigned int h = 0; h < n; h++) {
					unsigned int p = path[h].port;

					if (h && p != path[h - 1].port)
						/* only an X-to-Y turn */
						assert_true(p > 2 &&
							    path[h - 1].port <=
								    2);
					if (p <= 2)
						nx++;
					else
						ny++;
				}
				if (t.kind == FC_TOPOLOGY_MESH)
					continue;
				/* ring/torus: the shorter way, ties + */
				unsigned int up =
					(xof(&t, b) + t.nx - xof(&t, a)) % t.nx;
				unsigned int vup =
					(yof(&t, b) + t.ny - yof(&t, a)) % t.ny;

				if (up) {
					assert_int_equal(nx, up <= t.nx - up ?
								     up :
								     t.nx - up);
					assert_int_equal(path[0].port,
							 up <= t.nx - up ? 2 :
									   1);
				}
				if (vup) {
					assert_int_equal(ny,
							 vup <= t.ny - vup ?
								 vup :
								 t.ny - vup);
					assert_int_equal(path[nx].port,
							 vup <= t.ny - vup ? 4 :
									     3);
				}
			}
		}
	}
}

/* Is the hop through @p at @n a wrap-around link of a ring dimension? */
static bool is_wrap(const struct fc_topology *t, unsigned int n, unsigned int p)
{
	unsigned int size = p <= 2 ? t->nx : t->ny;
	unsigned int c = p <= 2 ? xof(t, n) : yof(t, n);

	if (t->kind != FC_TOPOLOGY_RING && t->kind != FC_TOPOLOGY_TORUS)
		return false;
	return p % 2 ? c == 0 : c == size - 1;
}

static void test_dateline(void **state)
{
	struct hop path[FC_MAX_NODES];

	for (size_t i = 0; i < N_GOOD; i++) {
		struct fc_topology t = topo(good_specs[i]);
		unsigned int crossings = 0;

		for (unsigned int a = 0; a < t.nodes; a++) {
			for (unsigned int b = 0; b < t.nodes; b++) {
				unsigned int n = walk(&t, a, b, path);
				unsigned int per_dim[2] = { 0, 0 };

				for (unsigned int h = 0; h < n; h++) {
					bool dl = path[h].entry &
						  FC_ROUTE_DATELINE;
					bool w = is_grid(&t) &&
						 is_wrap(&t, path[h].node,
							 path[h].port);

					if (dl != w)
						fail_msg("%s: %u -> %u hop %u "
							 "(node %u port %u): "
							 "DATELINE %d, wrap %d",
							 good_specs[i], a, b, h,
							 path[h].node,
							 path[h].port, dl, w);
					if (dl) {
						per_dim[FC_PORT_DIM(
							path[h].port)]++;
						crossings++;
					}
				}
				/* a packet crosses each dateline at most once */
				assert_true(per_dim[0] <= 1 && per_dim[1] <= 1);
			}
		}
		/* rings and tori with a wrap link use it; meshes never */
		if (t.kind == FC_TOPOLOGY_MESH || t.kind == FC_TOPOLOGY_FULL ||
		    t.nodes == 1)
			assert_int_equal(crossings, 0);
		else
			assert_true(crossings > 0);
	}
	/* and the table itself: ring 8, node 7 to 0 goes + over the wrap */
	struct fc_topology r = topo("ring:8");

	assert_int_equal(fc_topo_route(&r, 7, 0),
			 FC_ROUTE_VALID | FC_ROUTE_DATELINE | 2);
	assert_int_equal(fc_topo_route(&r, 0, 7),
			 FC_ROUTE_VALID | FC_ROUTE_DATELINE | 1);
	assert_int_equal(fc_topo_route(&r, 0, 4), FC_ROUTE_VALID | 2);
	assert_int_equal(fc_topo_route(&r, 4, 0),
			 FC_ROUTE_VALID | 2); /* tie: + */
	/* torus 4x4: node 3 (x=3,y=0) to 12 (x=0,y=3): X wrap, then Y wrap */
	struct fc_topology q = topo("torus:4x4");

	assert_int_equal(fc_topo_route(&q, 3, 12),
			 FC_ROUTE_VALID | FC_ROUTE_DATELINE | 2);
	assert_int_equal(fc_topo_route(&q, 0, 12),
			 FC_ROUTE_VALID | FC_ROUTE_DATELINE | 3);
	assert_int_equal(fc_topo_hops(&q, 3, 12), 2);
}

/* ---- deadlock freedom ---- */

/* A channel: (node, link port, VC). */
#define NCHAN (FC_MAX_NODES * (FC_MAX_PORTS + 1) * FC_NUM_VCS)

static unsigned int chan_id(unsigned int node, unsigned int port,
			    unsigned int vc)
{
	return (node * (FC_MAX_PORTS + 1) + port) * FC_NUM_VCS + vc;
}

struct cdg {
	bool *edge; /* NCHAN x NCHAN */
	unsigned char *color;
	unsigned int edges;
};

/*
 * Add the dependencies of every route: a packet holding channel c waits for
 * the next hop's channel. VCs as docs/fabric.md: VC 0 on entry and after a
 * turn to another dimension, VC 1 from a DATELINE hop on. @one_vc puts
 * everything on VC 0, as a torus without the dateline rule would.
 */
static void cdg_build(struct cdg *g, const struct fc_topology *t, bool one_vc)
{
	struct hop path[FC_MAX_NODES];

	g->edges = 0;
	for (unsigned int a = 0; a < t->nodes; a++) {
		for (unsigned int b = 0; b < t->nodes; b++) {
			unsigned int n = walk(t, a, b, path), vc = 0, prev = 0;

			for (unsigned int h = 0; h < n; h++) {
				unsigned int p = path[h].port, c;

				if (h && FC_PORT_DIM(p) !=
						 FC_PORT_DIM(path[h - 1].port))
					vc = 0;
				if (path[h].entry & FC_ROUTE_DATELINE)
					vc = 1;
				c = chan_id(path[h].node, p, one_vc ? 0 : vc);
				if (h && !g->edge[prev * NCHAN + c]) {
					g->edge[prev * NCHAN + c] = true;
					g->edges++;
				}
				prev = c;
			}
		}
	}
}

/* DFS from @c: true when it finds a channel still on the stack. */
static bool cdg_cycle_from(struct cdg *g, unsigned int c)
{
	g->color[c] = 1; /* on the stack */
	for (unsigned int d = 0; d < NCHAN; d++) {
		if (!g->edge[c * NCHAN + d])
			continue;
		if (g->color[d] == 1)
			return true;
		if (!g->color[d] && cdg_cycle_from(g, d))
			return true;
	}
	g->color[c] = 2; /* done */
	return false;
}

static bool cdg_cyclic(const struct fc_topology *t, bool one_vc,
		       unsigned int *edges)
{
	struct cdg g;
	bool cyc = false;

	g.edge = calloc((size_t)NCHAN * NCHAN, sizeof(*g.edge));
	g.color = calloc(NCHAN, 1);
	assert_non_null(g.edge);
	assert_non_null(g.color);
	cdg_build(&g, t, one_vc);
	for (unsigned int c = 0; c < NCHAN && !cyc; c++)
		if (!g.color[c])
			cyc = cdg_cycle_from(&g, c);
	*edges = g.edges;
	free(g.edge);
	free(g.color);
	return cyc;
}

static void test_deadlock_free(void **state)
{
	static const char *const required[] = {
		"torus:4x4",
		"torus:8x8",
		"torus:3x5",
		"ring:8",
	};
	unsigned int edges;

	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
		struct fc_topology t = topo(required[i]);

		if (cdg_cyclic(&t, false, &edges))
			fail_msg("%s: channel dependency graph has a cycle",
				 required[i]);
		print_message("%s: %u dependencies, acyclic\n", required[i],
			      edges);
		assert_true(edges > 0);
		/* the checker finds the cycle the dateline breaks */
		if (!cdg_cyclic(&t, true, &edges))
			fail_msg("%s: one VC should deadlock, found no cycle",
				 required[i]);
	}
	for (size_t i = 0; i < N_GOOD; i++) {
		struct fc_topology t = topo(good_specs[i]);

		if (cdg_cyclic(&t, false, &edges))
			fail_msg("%s: channel dependency graph has a cycle",
				 good_specs[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_bad_specs),
		cmocka_unit_test(test_ports),
		cmocka_unit_test(test_peers),
		cmocka_unit_test(test_routes_reach),
		cmocka_unit_test(test_dimension_order),
		cmocka_unit_test(test_dateline),
		cmocka_unit_test(test_deadlock_free),
	};

	printf("test_topology: routing tables of docs/fabric.md, no board\n");
	return harness_run(tests, NULL, NULL);
}
