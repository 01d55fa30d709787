// SPDX-License-Identifier: MIT
/*
 * Topologies and their routing tables (docs/fabric.md, "Ports, routes and
 * virtual channels"): pure functions of the topology, shared by the
 * emulated cluster, the kernel backend, fpgacomm-route and fpgacomm-run.
 *
 * A ring is treated as a torus of N x 1 and a mesh as a torus without its
 * wrap-around links, so one dimension-order routine serves all three.
 *
 * Small dimensions:
 *  - a dimension of size 1 has no links: its two ports lead nowhere
 *    (-ENOENT), as a self-loop would carry nothing;
 *  - a ring dimension of size 2 has two distinct links between the pair,
 *    one through each port (0's port 2 meets 1's port 1, 0's port 1 meets
 *    1's port 2). Both ways round are one hop, so ties going + sends all
 *    traffic through port 2; the 1 -> 0 hop is the wrap-around link and
 *    carries DATELINE like any other. Port 1 links stay unused, which is
 *    what the same rule gives a real 2-wide torus.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "topology.h"

/* Ports of dimension d: 2d+1 goes -, 2d+2 goes + (FC_PORT_DIM). */
#define PORT_MINUS(d) (2 * (d) + 1)
#define PORT_PLUS(d)  (2 * (d) + 2)

static const char *const kind_names[] = {
	[FC_TOPOLOGY_RING] = "ring",
	[FC_TOPOLOGY_MESH] = "mesh",
	[FC_TOPOLOGY_TORUS] = "torus",
	[FC_TOPOLOGY_FULL] = "full",
};

/*
 * A dimension size: decimal, 1..FC_MAX_NODES, no sign, blanks or leading
 * zeros, so that every accepted spec formats back to itself.
 * RETURN VALUE: characters used, or 0 when there is no valid number.
 */
static int parse_dim(const char *s, uint32_t *val)
{
	uint32_t v = 0;
	int i;

	if (s[0] < '1' || s[0] > '9')
		return 0;
	for (i = 0; s[i] >= '0' && s[i] <= '9'; i++) {
		v = v * 10 + (s[i] - '0');
		if (v > FC_MAX_NODES)
			return 0;
	}
	*val = v;
	return i;
}

static int topo_valid(const struct fc_topology *t)
{
	if (!t || !t->nx || !t->ny || t->nx > FC_MAX_NODES ||
	    t->ny > FC_MAX_NODES || t->nx * t->ny != t->nodes ||
	    t->nodes > FC_MAX_NODES)
		return 0;
	switch (t->kind) {
	case FC_TOPOLOGY_RING:
		return t->ny == 1;
	case FC_TOPOLOGY_FULL:
		return t->ny == 1 && t->nx <= FC_MAX_PORTS + 1;
	case FC_TOPOLOGY_MESH:
	case FC_TOPOLOGY_TORUS:
		return 1;
	}
	return 0;
}

int fc_topo_parse(const char *spec, struct fc_topology *t)
{
	struct fc_topology r;
	const char *p;
	size_t klen;
	int n;

	if (!spec || !t)
		return -EINVAL;
	p = strchr(spec, ':');
	if (!p)
		return -EINVAL;
	klen = p - spec;
	memset(&r, 0, sizeof(r));
	for (r.kind = 0; r.kind < sizeof(kind_names) / sizeof(kind_names[0]);
	     r.kind++)
		if (strlen(kind_names[r.kind]) == klen &&
		    !strncmp(spec, kind_names[r.kind], klen))
			break;
	if (r.kind >= sizeof(kind_names) / sizeof(kind_names[0]))
		return -EINVAL;
	p++;
	n = parse_dim(p, &r.nx);
	if (!n)
		return -EINVAL;
	p += n;
	r.ny = 1;
	if (r.kind == FC_TOPOLOGY_MESH || r.kind == FC_TOPOLOGY_TORUS) {
		if (*p++ != 'x')
			return -EINVAL;
		n = parse_dim(p, &r.ny);
		if (!n)
			return -EINVAL;
		p += n;
	}
	if (*p)
		return -EINVAL;
	r.nodes = r.nx * r.ny;
	if (!topo_valid(&r))
		return -EINVAL;
	*t = r;
	return 0;
}

int fc_topo_format(const struct fc_topology *t, char *buf, size_t len)
{
	int n;

	if (!topo_valid(t) || !buf)
		return -EINVAL;
	if (t->kind == FC_TOPOLOGY_MESH || t->kind == FC_TOPOLOGY_TORUS)
		n = snprintf(buf, len, "%s:%ux%u", kind_names[t->kind], t->nx,
			     t->ny);
	else
		n = snprintf(buf, len, "%s:%u", kind_names[t->kind], t->nx);
	return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}

/* The hardware's names of the kinds (hw.h FC_TOPO_*), by enum value. */
static const uint32_t hw_kinds[] = {
	[FC_TOPOLOGY_RING] = FC_TOPO_RING,
	[FC_TOPOLOGY_MESH] = FC_TOPO_MESH,
	[FC_TOPOLOGY_TORUS] = FC_TOPO_TORUS,
	[FC_TOPOLOGY_FULL] = FC_TOPO_FULL,
};

uint32_t fc_topo_reg(const struct fc_topology *t)
{
	if (!topo_valid(t))
		return 0;
	return FC_TOPO(hw_kinds[t->kind], t->nx, t->ny);
}

int fc_topo_from_reg(uint32_t nodes, uint32_t reg, struct fc_topology *t)
{
	struct fc_topology r = { 0 };

	for (r.kind = 0; r.kind < sizeof(hw_kinds) / sizeof(hw_kinds[0]);
	     r.kind++)
		if (hw_kinds[r.kind] == FC_TOPO_KIND(reg))
			break;
	r.nx = FC_TOPO_NX(reg);
	r.ny = FC_TOPO_NY(reg);
	r.nodes = nodes;
	if (FC_TOPO_KIND(reg) == FC_TOPO_NONE || !topo_valid(&r))
		return -EINVAL;
	*t = r;
	return 0;
}

unsigned int fc_topo_ports(const struct fc_topology *t)
{
	if (!topo_valid(t))
		return 0;
	switch (t->kind) {
	case FC_TOPOLOGY_RING:
		return 2;
	case FC_TOPOLOGY_MESH:
	case FC_TOPOLOGY_TORUS:
		return 4;
	case FC_TOPOLOGY_FULL:
		return t->nodes - 1;
	}
	return 0;
}

/* Size of dimension @d (0: x, 1: y) and @node's coordinate in it. */
static unsigned int dim_size(const struct fc_topology *t, unsigned int d)
{
	return d ? t->ny : t->nx;
}

static unsigned int coord(const struct fc_topology *t, unsigned int node,
			  unsigned int d)
{
	return d ? node / t->nx : node % t->nx;
}

/* @node with its coordinate in dimension @d replaced by @c. */
static unsigned int with_coord(const struct fc_topology *t, unsigned int node,
			       unsigned int d, unsigned int c)
{
	unsigned int x = coord(t, node, 0), y = coord(t, node, 1);

	if (d)
		y = c;
	else
		x = c;
	return y * t->nx + x;
}

static int wraps(const struct fc_topology *t)
{
	return t->kind != FC_TOPOLOGY_MESH;
}

int fc_topo_peer(const struct fc_topology *t, unsigned int node,
		 unsigned int port, unsigned int *peer, unsigned int *peer_port)
{
	unsigned int d, n, c, to;

	if (!topo_valid(t) || node >= t->nodes || !peer || !peer_port ||
	    port < 1 || port > fc_topo_ports(t))
		return -EINVAL;
	if (t->kind == FC_TOPOLOGY_FULL) {
		*peer = (node + port) % t->nodes;
		*peer_port = t->nodes - port;
		return 0;
	}
	d = FC_PORT_DIM(port);
	n = dim_size(t, d);
	c = coord(t, node, d);
	if (n == 1)
		return -ENOENT;
	if (port == PORT_PLUS(d)) {
		if (c == n - 1 && !wraps(t))
			return -ENOENT;
		to = (c + 1) % n;
	} else {
		if (c == 0 && !wraps(t))
			return -ENOENT;
		to = (c + n - 1) % n;
	}
	*peer = with_coord(t, node, d, to);
	/* The link arrives on the port going back the other way. */
	*peer_port = port == PORT_PLUS(d) ? PORT_MINUS(d) : PORT_PLUS(d);
	return 0;
}

/*
 * The hop in dimension @d from coordinate @c towards @dc (c != dc): the
 * port and its DATELINE flag. *dist is the number of hops that way.
 */
static uint32_t dim_step(const struct fc_topology *t, unsigned int d,
			 unsigned int c, unsigned int dc, unsigned int *dist)
{
	unsigned int n = dim_size(t, d);
	unsigned int up = (dc + n - c) % n; /* hops going + */
	unsigned int down = n - up;	    /* hops going - */

	if (!wraps(t)) {
		if (dc > c) {
			*dist = dc - c;
			return PORT_PLUS(d);
		}
		*dist = c - dc;
		return PORT_MINUS(d);
	}
	/* The shorter way round; a tie goes +. */
	if (up <= down) {
		*dist = up;
		return PORT_PLUS(d) | (c == n - 1 ? FC_ROUTE_DATELINE : 0);
	}
	*dist = down;
	return PORT_MINUS(d) | (c == 0 ? FC_ROUTE_DATELINE : 0);
}

uint32_t fc_topo_route(const struct fc_topology *t, unsigned int node,
		       unsigned int dst)
{
	unsigned int d, c, dc, dist;

	if (!topo_valid(t) || node >= t->nodes || dst >= t->nodes)
		return 0;
	if (node == dst)
		return FC_ROUTE_VALID | FC_PORT_LOCAL;
	if (t->kind == FC_TOPOLOGY_FULL)
		return FC_ROUTE_VALID | ((dst + t->nodes - node) % t->nodes);
	/* Dimension order: the first dimension that differs, x before y. */
	for (d = 0; d < 2; d++) {
		c = coord(t, node, d);
		dc = coord(t, dst, d);
		if (c != dc)
			return FC_ROUTE_VALID | dim_step(t, d, c, dc, &dist);
	}
	return 0;
}

unsigned int fc_topo_hops(const struct fc_topology *t, unsigned int a,
			  unsigned int b)
{
	unsigned int d, c, dc, dist, hops = 0;

	if (!topo_valid(t) || a >= t->nodes || b >= t->nodes || a == b)
		return 0;
	if (t->kind == FC_TOPOLOGY_FULL)
		return 1;
	/* Each dimension is travelled once, the way dim_step() chose. */
	for (d = 0; d < 2; d++) {
		c = coord(t, a, d);
		dc = coord(t, b, d);
		if (c != dc) {
			dim_step(t, d, c, dc, &dist);
			hops += dist;
		}
	}
	return hops;
}
