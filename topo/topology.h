/* SPDX-License-Identifier: MIT */
/*
 * Topologies and their routing tables (docs/fabric.md, "Ports, routes and
 * virtual channels"): pure functions of the topology, no state. The one
 * place that knows them, used by the emulated cluster (emu/), the kernel
 * backend (lib/) and the fabric tools, as NCCL's graph/ serves its
 * transports and collectives alike.
 */
#ifndef FC_TOPOLOGY_H
#define FC_TOPOLOGY_H

#include <stddef.h>
#include <stdint.h>

#include <fpgacomm/hw.h>

/* The shapes; the board's registers name them FC_TOPO_* (fc_topo_reg()). */
enum fc_topo_kind {
	FC_TOPOLOGY_RING,  /* "ring:N" */
	FC_TOPOLOGY_MESH,  /* "mesh:XxY" */
	FC_TOPOLOGY_TORUS, /* "torus:XxY" */
	FC_TOPOLOGY_FULL,  /* "full:N", N <= FC_MAX_PORTS + 1 */
};

struct fc_topology {
	uint32_t kind;	 /* enum fc_topo_kind */
	uint32_t nx, ny; /* ring and full: nx = N, ny = 1 */
	uint32_t nodes;	 /* nx * ny, 1..FC_MAX_NODES */
};

/* RETURN VALUE: 0, or -EINVAL for a malformed or too large topology. */
int fc_topo_parse(const char *spec, struct fc_topology *t);
/* "torus:4x4" etc. into @buf. RETURN VALUE: 0 or -ENOSPC. */
int fc_topo_format(const struct fc_topology *t, char *buf, size_t len);
/*
 * The topology as the board registers FC_ROUTER_FABRIC_NODES/_TOPO hold it
 * (hw.h): fc_topo_reg() gives the TOPO value (0 for an invalid one);
 * fc_topo_from_reg() reads one back. RETURN VALUE: 0, or -EINVAL for
 * registers that name no valid topology (0: no fabric).
 */
uint32_t fc_topo_reg(const struct fc_topology *t);
int fc_topo_from_reg(uint32_t nodes, uint32_t reg, struct fc_topology *t);
/* Link ports per board (ring 2, mesh and torus 4, full N-1). */
unsigned int fc_topo_ports(const struct fc_topology *t);
/*
 * Where link port @port (1..ports) of @node leads: *peer and the port
 * number at the peer. RETURN VALUE: 0; -ENOENT where a mesh has no link.
 */
int fc_topo_peer(const struct fc_topology *t, unsigned int node,
		 unsigned int port, unsigned int *peer,
		 unsigned int *peer_port);
/* The routing-table entry (FC_ROUTE_*) at @node for destination @dst:
 * FC_ROUTE_VALID | port, port 0 for @dst == @node, DATELINE on wrap hops. */
uint32_t fc_topo_route(const struct fc_topology *t, unsigned int node,
		       unsigned int dst);
/* Link hops from @a to @b along the routes. */
unsigned int fc_topo_hops(const struct fc_topology *t, unsigned int a,
			  unsigned int b);

#endif /* FC_TOPOLOGY_H */
