// SPDX-License-Identifier: MIT
/*
 * Control messages' handlers, by kind: protocols (rendezvous, credits)
 * register theirs at open, and the receive path (fabric_rx.c) hands each
 * control message that arrives to the handler of its kind. The transport
 * names no protocol: a kind with no handler is dropped.
 */
#include <endian.h>
#include <string.h>

#include "transport_internal.h"

void fc__ctrl_register(struct fc__fabric *fab, unsigned int kind,
		       fc__ctrl_fn fn)
{
	if (kind && kind < FC__CTRL_KINDS)
		fab->ctrl[kind] = fn;
}

void fc__ctrl_take(struct fc_dev *dev, uint32_t port, uint32_t node,
		   const uint8_t *msg, size_t len)
{
	struct fc__ctrl_msg m;

	if (len != sizeof(m))
		return; /* not one of ours */
	memcpy(&m, msg, sizeof(m));
	if (m.kind && m.kind < FC__CTRL_KINDS && dev->fab->ctrl[m.kind])
		dev->fab->ctrl[m.kind](dev, port, node, le32toh(m.cookie),
				       le64toh(m.val));
}
