/* SPDX-License-Identifier: MIT */
/*
 * The bridge (docs/fabric.md, "Clusters over several hosts"): the links
 * whose far end is a board of another host, carried by a libfabric RDM
 * endpoint of this board's process. One bridge per board-owning process.
 */
#ifndef FCEMU_BRIDGE_H
#define FCEMU_BRIDGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fabric.h"

/* A board of another host not heard from this long is declared DEAD
 * (heartbeats go every 100 ms; a host's processes share its cores). */
#define FCEMU_BRIDGE_DOWN_NS (3 * 1000000000ull)
/* A reply from another host is awaited this long after our last packet
 * left for one (fcemu_bridge_reply_due): a few round trips over tcp. */
#define FCEMU_BRIDGE_DUE_NS (500 * 1000ull)
/* and the longest such a wait lasts before the board's bell is looked at */
#define FCEMU_BRIDGE_POLL_NS (100 * 1000ull)

/*
 * How the bridges of a job learn each other's endpoint names: @put
 * publishes ours (again, under a new name, when the board opens again
 * in a later job), @get waits (bounded) for board @node's and copies it to
 * @name (*@len bytes at most in, the name's length out). Both return 0 or
 * a negative errno. @addr: the address to bind to (e.g. 127.0.0.2), NULL
 * for the provider's choice.
 */
struct fcemu_bridge_boot {
	void *arg;
	int (*put)(void *arg, unsigned int node, const void *name, size_t len);
	int (*get)(void *arg, unsigned int node, void *name, size_t *len);
	/* optional: withdraw our name (the board leaves; it may come back) */
	void (*drop)(void *arg, unsigned int node);
	const char *addr;
};

struct fcemu_bridge;

/*
 * Carry the links between board @node (claimed by this process in @c) and
 * the other hosts' boards: open an endpoint (FI_PROVIDER, else tcp; never
 * the fpgacomm provider), exchange names through @boot, and drive them
 * from @c's progress and a thread that sleeps in the completion queue.
 * RETURN VALUE: 0; -EOPNOTSUPP built or run without libfabric;
 * -EPROTONOSUPPORT no such provider; -ETIMEDOUT a peer's name never came;
 * -errno.
 */
int fcemu_bridge_start(struct fcemu_bridge **bp, struct fcemu_cluster *c,
		       unsigned int node, const struct fcemu_bridge_boot *boot);
/*
 * Say goodbye (the other hosts see the board EXITED; those that hold it
 * down are told so), then carry what is still on the board's links, its
 * own and what others route through it, until every other board of the
 * cluster has left or the links have been idle for 1 s, 10 s at most;
 * close. Call it after releasing the board.
 */
void fcemu_bridge_stop(struct fcemu_bridge *b);
/*
 * A host about to sleep while a reply from a board of another host may
 * come soon (packets left on our links to other hosts within the last
 * FCEMU_BRIDGE_DUE_NS and none came in since): sleep on the bridge's
 * completion queue instead of the board's bell, @max_ns at most
 * (FCEMU_BRIDGE_POLL_NS at most: the bell is not heard meanwhile), so
 * that what arrives wakes the caller at once and not through the
 * bridge's thread, two wake-ups where the round trip lasts about one.
 * RETURN VALUE: true: it slept, or found something waiting (poll the
 * board); false: no reply due, or the queue has no wait fd, or @b is
 * NULL (sleep on the bell as usual).
 */
bool fcemu_bridge_wait_reply(struct fcemu_bridge *b, uint64_t max_ns);

#endif /* FCEMU_BRIDGE_H */
