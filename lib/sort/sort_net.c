// SPDX-License-Identifier: MIT
/*
 * The distributed sort's network steps, shared by its algorithms: the
 * timeout's remainder, the exchange of elements (in pieces, its counts
 * checked), the shares of a partitioned result, and laying out the runs
 * that arrive.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sort_net_internal.h"

/* What is left of the caller's timeout for the next collective. */
int fc__sort_left_ms(const struct sort_ctx *c)
{
	struct timespec now;
	long long ms;

	if (c->timeout_ms < 0)
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (now.tv_sec - c->start.tv_sec) * 1000LL +
	     (now.tv_nsec - c->start.tv_nsec) / 1000000;
	ms = c->timeout_ms - ms;
	return ms < 1 ? 1 : (int)ms;
}

/*
 * Bytes per pair in one alltoallv. Larger exchanges go as several
 * alltoallv rounds, each carrying the next piece of every pair's block:
 * with about 16 MiB per pair on 4 ranks, fc_alltoallv was seen to hang
 * (docs/sort.md), and pieces of 8 MiB never did.
 */
#define SORT_XCHG_PIECE ((size_t)8 << 20)

/* The piece size: $FPGACOMM_SORT_PIECE (bytes) overrides it, for tests. */
static size_t xchg_piece(void)
{
	const char *env = getenv("FPGACOMM_SORT_PIECE");
	unsigned long long v = env ? strtoull(env, NULL, 0) : 0;

	return v ? (size_t)v : SORT_XCHG_PIECE;
}

/*
 * Whether the counts the peers say they send (rc, from the alltoall)
 * add up to @expect, the elements this rank's receive side has room for:
 * a peer's word is all that sets the receive lengths.
 */
static bool counts_add_up(const struct sort_ctx *c, size_t expect)
{
	size_t sum = 0;

	for (uint32_t d = 0; d < c->n; d++) {
		if (c->rc[d] > expect - sum)
			return false;
		sum += c->rc[d];
	}
	return sum == expect;
}

/*
 * Turn element counts into byte counts and displacements, then exchange.
 * With @keep_own, this rank's block to itself stays where it is in @send
 * (at sd[rank]) and takes no room in @recv. The peers' counts must add up
 * to @expect elements (this rank's included); the allreduce that sizes
 * the rounds also carries every rank's verdict on its counts (SIZE_MAX,
 * which no real block reaches), so that all ranks fail together.
 */
int fc__sort_exchange(struct sort_ctx *c, const uint8_t *send, uint8_t *recv,
		      bool keep_own, size_t expect)
{
	size_t s = 0, r = 0, most = 0, *psc = c->piece, *psd = psc + c->n;
	size_t *prc = psd + c->n, *prd = prc + c->n, piece = xchg_piece();
	bool bad = c->bad || !counts_add_up(c, expect);
	int rc;

	for (uint32_t d = 0; d < c->n && !bad; d++) {
		c->sd[d] = s;
		s += c->sc[d] *= c->rs;
		if (keep_own && d == c->rank)
			c->sc[d] = c->rc[d] = 0;
		c->rd[d] = r;
		r += c->rc[d] *= c->rs;
		most = c->sc[d] > most ? c->sc[d] : most;
		most = c->rc[d] > most ? c->rc[d] : most;
	}
	if (bad)
		most = SIZE_MAX;
	rc = fc_allreduce(c->g, FC_IN_PLACE, &most, 1, FC_UINT64, FC_MAX,
			  fc__sort_left_ms(c));
	if (!rc && most == SIZE_MAX)
		rc = -EBADMSG;
	for (size_t off = 0; !rc && (off < most || !off); off += piece) {
		for (uint32_t d = 0; d < c->n; d++) {
			psc[d] = c->sc[d] > off ? c->sc[d] - off : 0;
			psc[d] = psc[d] < piece ? psc[d] : piece;
			psd[d] = c->sd[d] + (psc[d] ? off : 0);
			prc[d] = c->rc[d] > off ? c->rc[d] - off : 0;
			prc[d] = prc[d] < piece ? prc[d] : piece;
			prd[d] = c->rd[d] + (prc[d] ? off : 0);
		}
		rc = fc_alltoallv(c->g, send, psc, psd, recv, prc, prd,
				  FC_UINT8, fc__sort_left_ms(c));
	}
	c->a->net_passes++;
	return rc;
}

/* Each rank's share of a partitioned result against its capacity. */
int fc__sort_check_shares(struct sort_ctx *c, const size_t *share)
{
	c->a->out_count = share[c->rank];
	if (c->a->rank_counts)
		memcpy(c->a->rank_counts, share, c->n * sizeof(*share));
	for (uint32_t d = 0; d < c->n; d++)
		if (share[d] > c->caps[d])
			return -ENOSPC;
	return 0;
}

/*
 * The rank that owns each bin of a partitioned result (@owner, may be
 * NULL) and every rank's share, from the bins' global counts @H: a bin
 * goes whole to the rank in whose even share of the total it starts.
 */
void fc__sort_partition_bins(const struct sort_ctx *c, const size_t *H,
			     size_t nb, uint32_t *owner, size_t *share)
{
	size_t g = 0;

	memset(share, 0, c->n * sizeof(*share));
	for (size_t v = 0; v < nb; v++) {
		unsigned __int128 o = (unsigned __int128)g * c->n / c->total;
		uint32_t r = o >= c->n ? c->n - 1 : (uint32_t)o;

		if (owner)
			owner[v] = r;
		share[r] += H[v];
		g += H[v];
	}
}

/*
 * A buffer that only some ranks need after the agreement (a partitioned
 * share's): all ranks learn whether every rank got its own, so that none
 * is left waiting in the exchange.
 */
int fc__sort_agree_alloc(struct sort_ctx *c, size_t bytes, uint8_t **bufp)
{
	int32_t err, all;
	int rc;

	*bufp = fc__sort_alloc(bytes + 1);
	err = *bufp ? 0 : -ENOMEM;
	rc = fc_allreduce(c->g, &err, &all, 1, FC_INT32, FC_MIN,
			  fc__sort_left_ms(c));
	return rc ? rc : all;
}

/*
 * Segments shorter than this, on average, are scattered element by element
 * rather than found and copied whole.
 */
#define PLACE_MIN_SEGMENT 16

/*
 * Do the runs hold, bin by bin, what the share has room for (bin v from
 * place[v] to place[v + 1], the last to out_count), and nothing outside
 * bins vlo..vhi? The peers' runs are as they counted them only if they
 * say true: a scatter trusts every element's digit.
 */
static bool runs_fit(const struct sort_ctx *c, uint8_t *const *runs,
		     const size_t *lens, unsigned int shift, unsigned int b,
		     size_t vlo, size_t vhi, const size_t *place)
{
	size_t nb = (size_t)1 << b, *cnt = calloc(nb, sizeof(*cnt));
	uint64_t mask = nb - 1;
	bool fit = cnt != NULL;

	for (uint32_t s = 0; fit && s < c->n; s++)
		for (size_t i = 0; i < lens[s]; i++)
			cnt[sort_key_at(runs[s] + i * c->rs, c->ks) >> shift &
			    mask]++;
	for (size_t v = 0; fit && v < nb; v++) {
		size_t room = v < vlo || v > vhi ? 0 :
						   (v < vhi ? place[v + 1] :
							      c->a->out_count) -
							   place[v];

		fit = cnt[v] <= room;
	}
	free(cnt);
	return fit;
}

/*
 * What arrived, laid out into @out: @runs[s] holds source s's elements
 * (lens[s] of them), each run in stable digit order; bin v of the share
 * starts at place[v]. With long segments, each run's segment of a digit
 * is copied whole; otherwise the runs are scattered in source order.
 * RETURN VALUE: 0, or -EBADMSG for runs not as their senders counted them
 * (nothing written out of the share).
 */
int fc__sort_place_runs(struct sort_ctx *c, uint8_t *const *runs,
			const size_t *lens, struct sort_view out,
			unsigned int shift, unsigned int b, size_t vlo,
			size_t vhi, size_t *place)
{
	size_t bins = vhi - vlo + 1;

	if (c->a->out_count / bins / c->n >= PLACE_MIN_SEGMENT)
		return fc__sort_place(runs, lens, c->n, out, c->ks, c->vs,
				      shift, b, vlo, vhi, place,
				      c->a->out_count) ?
			       0 :
			       -EBADMSG;
	if (!runs_fit(c, runs, lens, shift, b, vlo, vhi, place))
		return -EBADMSG;
	for (uint32_t s = 0; s < c->n; s++)
		fc__sort_scatter(sort_packed(runs[s], c->ks, c->vs), out,
				 lens[s], c->ks, c->vs, shift, b, place);
	return 0;
}
