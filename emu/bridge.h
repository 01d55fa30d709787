/* SPDX-License-Identifier: MIT */
/*
 * The bridge (docs/fabric.md, "Clusters over several hosts"): the links
 * whose far end is a board of another host, carried by a libfabric RDM
 * endpoint of this board's process. One bridge per board-owning process.
 */
#ifndef FCEMU_BRIDGE_H
#define FCEMU_BRIDGE_H

#include <stddef.h>

#include "fabric.h"

/* A board of another host not heard from this long is declared DEAD
 * (heartbeats go every 100 ms; a host's processes share its cores). */
#define FCEMU_BRIDGE_DOWN_NS (3 * 1000000000ull)

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

#endif /* FCEMU_BRIDGE_H */
