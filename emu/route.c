// SPDX-License-Identifier: MIT
/*
 * Routing decisions of an emulated board: where a packet goes from a
 * board (its routing table, the peer's state) and on which VC it leaves.
 * The routers (router.c), the express hop (express.c) and a burst's
 * pieces on a wire with faults (burst.c) ask; this file calls nothing
 * above it.
 */
#include "cluster_internal.h"

/* The VC a packet leaves on (hw.h): 1 across a dateline, its own VC in
 * the same dimension, and 0 when it enters or turns. */
unsigned int fcemu__out_vc(uint32_t entry, unsigned int in, unsigned int vc,
			   unsigned int out)
{
	if (entry & FC_ROUTE_DATELINE)
		return 1;
	if (in != FC_PORT_LOCAL && FC_PORT_DIM(in) == FC_PORT_DIM(out))
		return vc;
	return 0;
}

/* Where the packet goes: an output port, or -1 to drop it. */
int fcemu__route(struct fcemu_cluster *c, unsigned int n, uint32_t hdr,
		 uint32_t *entry)
{
	unsigned int dst = (hdr >> FC_PKT_DST_SHIFT) & FC_PKT_NODE_MASK;
	unsigned int port;

	if (dst >= c->nodes || cl_gone(c, dst))
		return -1;
	*entry = cl_rd(c, n, FC_ROUTE_TABLE(dst));
	if (!(*entry & FC_ROUTE_VALID))
		return -1;
	port = *entry & FC_ROUTE_PORT_MASK;
	if (port == FC_PORT_LOCAL)
		return dst == n ? 0 : -1;
	if (port > c->ports || cl_peer(c, n, port) == CL_NO_PEER)
		return -1;
	return (int)port;
}

unsigned int fcemu__route_links(struct fcemu_cluster *c, unsigned int src,
				unsigned int dst, uint8_t *node, uint8_t *port)
{
	uint32_t hdr = dst << FC_PKT_DST_SHIFT, entry = 0;
	unsigned int m = src, hops;
	int out;

	for (hops = 0; m != dst; hops++) {
		if (hops == FC_MAX_NODES)
			return 0;
		out = fcemu__route(c, m, hdr, &entry);
		if (out <= 0)
			return 0;
		node[hops] = (uint8_t)cl_peer(c, m, (unsigned int)out);
		port[hops] = (uint8_t)cl_peer_port(c, m, (unsigned int)out);
		m = node[hops];
	}
	return hops;
}
