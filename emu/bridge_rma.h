/* SPDX-License-Identifier: MIT */
/*
 * Bursts between hosts (docs/fabric.md, "Bursts between hosts"): the
 * bridge (bridge_ofi.c) hands this file the bursts that reach a link to
 * another host; their bytes cross as one libfabric RMA write into a
 * landing slot the far bridge registered, checked there (CRC, the wire's
 * faults) before the record follows them. Only with libfabric's headers.
 */
#ifndef FCEMU_BRIDGE_RMA_H
#define FCEMU_BRIDGE_RMA_H

#ifdef FCEMU_HAVE_OFI

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <rdma/fabric.h>

#include "cluster_internal.h"

/* Message types of ours, above the bridge's own. */
enum {
	FCEMU_RMA_MSG_BURST = 16, /* a record whose bytes were written */
	FCEMU_RMA_MSG_CHECKED,	  /* head 1: landed intact; 0: write again */
	FCEMU_RMA_MSG_FREE,	  /* head: landing slots applied, free */
};

/* What a bridge publishes with its name: its landing area. */
#define FCEMU_RMA_INFO_LEN 24

/*
 * How we send a message of ours (@len bytes of @body after the bridge's
 * header, whose port, vc and head fields we fill) to board @dst's bridge.
 * RETURN VALUE: 0 or -errno (-FI_EAGAIN: no room now, try again).
 */
struct fcemu_rma_ops {
	void *arg;
	int (*send)(void *arg, unsigned int dst, unsigned int type,
		    unsigned int port, unsigned int vc, uint32_t head,
		    const void *body, size_t len);
};

struct fcemu_rma;

/*
 * Register a landing area on @domain for the bursts of other hosts'
 * bridges, writes to go out on @ep. RETURN VALUE: 0; -EOPNOTSUPP the
 * provider cannot (@info lacks FI_RMA or needs local registration);
 * -errno.
 */
int fcemu__rma_open(struct fcemu_rma **rp, const struct fi_info *info,
		    struct fid_domain *domain, struct fid_ep *ep,
		    const struct fcemu_rma_ops *ops);
/* A new bridge of board @node in @c takes the area over: nothing of an
 * earlier one's is kept; @c's landing fields point at it. */
void fcemu__rma_start(struct fcemu_rma *r, struct fcemu_cluster *c,
		      unsigned int node);
/* The FCEMU_RMA_INFO_LEN bytes to publish with our name (@r may be NULL:
 * no bursts for us). */
void fcemu__rma_info(const struct fcemu_rma *r, void *info);
/* Board @n's bridge is (again) at @addr with landing area @info: what
 * was under way with an earlier one of it is dropped. */
void fcemu__rma_meet(struct fcemu_rma *r, unsigned int n, fi_addr_t addr,
		     const void *info);
/* Of the @n checked packets at @ring's head, how many go before a burst
 * to board @far that we carry (0: one is at the head). */
uint32_t fcemu__rma_cut(struct fcemu_rma *r, struct cl_ring *ring,
			unsigned int far, uint32_t n);
/*
 * Carry the burst at the head of our link port @p, VC @vc, which leads
 * to port @q of board @far. RETURN VALUE: true it crossed and was taken
 * off the ring; false still under way.
 */
bool fcemu__rma_carry(struct fcemu_rma *r, unsigned int p, unsigned int vc,
		      unsigned int far, unsigned int q);
/* A completion for @ctx: RETURN VALUE false if not ours; else true, with
 * *@dst the board written to (its failure is the bridge's business). */
bool fcemu__rma_complete(struct fcemu_rma *r, void *ctx, int err,
			 unsigned int *dst);
/* One of our messages, @type, from board @src's bridge. RETURN VALUE:
 * true the burst on our port @port, VC @vc, landed: its packet now counts
 * against the link's credits (before the far side can return it). */
bool fcemu__rma_take(struct fcemu_rma *r, unsigned int type, unsigned int src,
		     unsigned int port, unsigned int vc, uint32_t head,
		     const void *body, size_t len);
/* Tell senders which of their landing slots our board has applied. */
void fcemu__rma_release(struct fcemu_rma *r);
/* Is a write or its check still under way? */
bool fcemu__rma_busy(const struct fcemu_rma *r);
void fcemu__rma_close(struct fcemu_rma *r);

#endif /* FCEMU_HAVE_OFI */
#endif /* FCEMU_BRIDGE_RMA_H */
