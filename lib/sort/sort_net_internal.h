/* SPDX-License-Identifier: MIT */
/*
 * Private to lib/sort*.c: one sort's context, and the network steps that
 * every algorithm of the distributed sort shares (lib/sort/sort_net.c). The
 * algorithms (lib/sort/sort_radix.c, lib/sort/sort_onepass.c) call down into them;
 * lib/sort/sort.c agrees on the arguments and picks an algorithm.
 */
#ifndef FC_SORT_NET_INTERNAL_H
#define FC_SORT_NET_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "internal.h"
#include "sort_internal.h"

struct sort_ctx {
	struct fc_group *g;
	struct fc_sort_args *a;
	uint32_t rank, n;
	size_t ks, vs, rs;
	unsigned int bits; /* significant key bits */
	bool partitioned;
	int timeout_ms;
	struct timespec start;
	size_t total;		   /* elements over all ranks */
	size_t *counts, *caps;	   /* n each: every rank's */
	size_t *offs;		   /* n + 1: balanced ranges */
	size_t *sc, *sd, *rc, *rd; /* n each, for the alltoallv */
	size_t *piece;		   /* 4 n: one round of it */
	uint8_t *buf[3];	   /* work buffers, taken before agreeing */
	bool bad;		   /* a peer's counts do not add up */
};

static inline uint64_t sort_key_limit(unsigned int bits)
{
	return bits >= 64 ? UINT64_MAX : (1ull << bits) - 1;
}

/* The network steps (lib/sort/sort_net.c); each comments its own contract. */
int fc__sort_left_ms(const struct sort_ctx *c);
int fc__sort_exchange(struct sort_ctx *c, const uint8_t *send, uint8_t *recv,
		      bool keep_own, size_t expect);
int fc__sort_check_shares(struct sort_ctx *c, const size_t *share);
void fc__sort_partition_bins(const struct sort_ctx *c, const size_t *H,
			     size_t nb, uint32_t *owner, size_t *share);
int fc__sort_agree_alloc(struct sort_ctx *c, size_t bytes, uint8_t **bufp);
int fc__sort_place_runs(struct sort_ctx *c, uint8_t *const *runs,
			const size_t *lens, struct sort_view out,
			unsigned int shift, unsigned int b, size_t vlo,
			size_t vhi, size_t *place);

/*
 * The algorithms, run by every rank once the arguments are agreed and
 * the total is not zero (docs/sort.md): OPTWEB's counting sort from the
 * keys' histogram @hist (lib/sort/sort_radix.c), the radix sort over the
 * network (lib/sort/sort_radix.c), one pass by exact splitters
 * (lib/sort/sort_onepass.c). Each returns 0 or a negative errno, the same on
 * every rank.
 */
int fc__sort_counting(struct sort_ctx *c, const size_t *hist);
int fc__sort_radix_net(struct sort_ctx *c);
int fc__sort_onepass(struct sort_ctx *c);

#endif /* FC_SORT_NET_INTERNAL_H */
