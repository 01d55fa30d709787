// SPDX-License-Identifier: MIT
/*
 * Routing decisions of an emulated board: where a packet goes from a
 * board (its routing table, the peer's state) and on which VC it leaves.
 * The routers (router.c) and the express hop (express.c) both ask; this
 * file calls nothing above it.
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

