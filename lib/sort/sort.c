// SPDX-License-Identifier: MIT
/*
 * fc_sort: the distributed sort, built on the group collectives of the
 * public API (allgather, allreduce, exscan, alltoall, alltoallv) and the
 * local steps of lib/sort/sort_local.c. docs/sort.md gives the algorithms and
 * the cost model.
 *
 * Every rank runs the same steps. The first collective is an agreement:
 * each rank's count, capacity, arguments and a local error (a key out of
 * range) are gathered, so that an error any rank found is returned by all
 * of them before any data moves.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "sort_internal.h"

_Static_assert(sizeof(size_t) == sizeof(uint64_t),
	       "counts travel as FC_UINT64");

/* Digits of FC_SORT_RADIX_NET: one network crossing each. */
#define NET_DIGIT_BITS 8

/* What every rank tells the others first. */
enum {
	AG_COUNT,
	AG_CAP,
	AG_ERR,
	AG_KS,
	AG_BITS,
	AG_VS,
	AG_LAYOUT,
	AG_ALGO,
	AG_N
};

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

/* What is left of the caller's timeout for the next collective. */
static int left_ms(const struct sort_ctx *c)
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

static uint64_t key_limit(unsigned int bits)
{
	return bits >= 64 ? UINT64_MAX : (1ull << bits) - 1;
}

/* OR of every key, for the range check. */
static uint64_t keys_or(struct sort_view in, size_t n, size_t ks)
{
	uint64_t all = 0;

	for (size_t i = 0; i < n; i++)
		all |= sort_key_at(in.keys + i * in.kstride, ks);
	return all;
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
static int exchange(struct sort_ctx *c, const uint8_t *send, uint8_t *recv,
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
			  left_ms(c));
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
				  FC_UINT8, left_ms(c));
	}
	c->a->net_passes++;
	return rc;
}

/* Each rank's share of a partitioned result against its capacity. */
static int check_shares(struct sort_ctx *c, const size_t *share)
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
static void partition_bins(const struct sort_ctx *c, const size_t *H, size_t nb,
			   uint32_t *owner, size_t *share)
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
static int agree_alloc(struct sort_ctx *c, size_t bytes, uint8_t **bufp)
{
	int32_t err, all;
	int rc;

	*bufp = fc__sort_alloc(bytes + 1);
	err = *bufp ? 0 : -ENOMEM;
	rc = fc_allreduce(c->g, &err, &all, 1, FC_INT32, FC_MIN, left_ms(c));
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
static int place_runs(struct sort_ctx *c, uint8_t *const *runs,
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

/* The bins of one digit pass, and what each rank's share of them is. */
struct digit_pass {
	size_t nb;	 /* 2^b bins */
	size_t *H;	 /* global count per bin */
	size_t *E;	 /* the lower ranks' count per bin */
	size_t *G;	 /* global place where bin v starts */
	size_t *place;	 /* per bin: where the next element goes */
	size_t *share;	 /* n: each rank's share (partitioned) */
	size_t *lens;	 /* n: elements in each source's run */
	uint8_t **runs;	 /* n: each source's run */
	uint32_t *owner; /* per bin: the rank it goes to (partitioned) */
	size_t lo;	 /* global place where our share starts */
};

static void digit_pass_free(struct digit_pass *p)
{
	free(p->H);
	free(p->E);
	free(p->G);
	free(p->place);
	free(p->share);
	free(p->lens);
	free(p->runs);
	free(p->owner);
}

static int digit_pass_alloc(struct digit_pass *p, const struct sort_ctx *c,
			    unsigned int b)
{
	size_t nb = (size_t)1 << b;

	memset(p, 0, sizeof(*p));
	p->nb = nb;
	p->H = malloc(nb * sizeof(*p->H));
	p->E = calloc(nb, sizeof(*p->E));
	p->G = malloc(nb * sizeof(*p->G));
	p->place = malloc(nb * sizeof(*p->place));
	p->share = calloc(c->n, sizeof(*p->share));
	p->lens = calloc(c->n, sizeof(*p->lens));
	p->runs = calloc(c->n, sizeof(*p->runs));
	if (c->partitioned)
		p->owner = malloc(nb * sizeof(*p->owner));
	if (!p->H || !p->E || !p->G || !p->place || !p->share || !p->lens ||
	    !p->runs || (c->partitioned && !p->owner)) {
		digit_pass_free(p);
		return -ENOMEM;
	}
	return 0;
}

/*
 * The digit's global histogram H, the lower ranks' E, and where each bin
 * starts (G). RETURN VALUE: 0; 1 with @may_skip when all keys share the
 * digit; -EBADMSG when the peers' counts do not add up to the agreed
 * total (the same H on every rank, so the same verdict); a collective's
 * error.
 */
static int digit_bins(struct sort_ctx *c, struct digit_pass *p,
		      const size_t *hist, bool may_skip)
{
	size_t sum = 0;
	int rc;

	rc = fc_allreduce(c->g, hist, p->H, p->nb, FC_UINT64, FC_SUM,
			  left_ms(c));
	if (!rc)
		rc = fc_exscan(c->g, hist, p->E, p->nb, FC_UINT64, FC_SUM,
			       left_ms(c));
	if (rc)
		return rc;
	if (c->rank == 0)
		memset(p->E, 0, p->nb * sizeof(*p->E));
	for (size_t v = 0; v < p->nb; v++) {
		if (p->H[v] > c->total - sum)
			return -EBADMSG;
		if (may_skip && p->H[v] == c->total)
			return 1;
		p->G[v] = sum;
		sum += p->H[v];
	}
	return sum == c->total ? 0 : -EBADMSG;
}

/* Partitioned: each bin goes whole to one rank; ours start at p->lo. */
static int partitioned_counts(struct sort_ctx *c, struct digit_pass *p,
			      const size_t *hist)
{
	int rc;

	partition_bins(c, p->H, p->nb, p->owner, p->share);
	for (size_t v = 0; v < p->nb; v++)
		c->sc[p->owner[v]] += hist[v];
	rc = check_shares(c, p->share);
	if (rc)
		return rc;
	for (size_t v = 0; v < p->nb; v++)
		if (p->owner[v] == c->rank) {
			p->lo = p->G[v];
			break;
		}
	return 0;
}

/*
 * Balanced: our elements of bin v take global places G[v] + E[v]
 * onwards, and each goes to the rank whose range (offs) holds its place.
 * Peers' histograms that place us past the end mark the pass bad.
 */
static void balanced_counts(struct sort_ctx *c, struct digit_pass *p,
			    const size_t *hist)
{
	uint32_t d = 0;

	c->a->out_count = c->a->count;
	p->lo = c->offs[c->rank];
	for (size_t v = 0; v < p->nb; v++) {
		size_t s = p->G[v] + p->E[v], h = hist[v];

		if (p->E[v] > p->H[v] || h > p->H[v] - p->E[v]) {
			c->bad = true;
			return;
		}
		while (h) {
			size_t take;

			while (c->offs[d + 1] <= s)
				d++;
			take = c->offs[d + 1] - s;
			take = take < h ? take : h;
			c->sc[d] += take;
			s += take;
			h -= take;
		}
	}
}

/*
 * Our elements in stable digit order into @send (or, for a digit wider
 * than the local radix sort's, by its passes between @send and @spare).
 * RETURN VALUE: the buffer holding them, NULL without memory.
 */
static uint8_t *order_locally(struct sort_ctx *c, struct digit_pass *p,
			      struct sort_view in, const size_t *hist,
			      unsigned int shift, unsigned int b, uint8_t *send,
			      uint8_t *spare)
{
	size_t sum = 0;

	if (b > SORT_LOCAL_DIGIT_BITS && spare && !shift) {
		unsigned int passes;

		send = fc__sort_radix(in, c->a->count, c->ks, c->vs, b, hist,
				      send, spare, &passes);
		c->a->mem_passes += passes;
		return send;
	}
	for (size_t v = 0; v < p->nb; v++) {
		p->place[v] = sum;
		sum += hist[v];
	}
	fc__sort_scatter(in, sort_packed(send, c->ks, c->vs), c->a->count,
			 c->ks, c->vs, shift, b, p->place);
	c->a->mem_passes++;
	return send;
}

/*
 * The runs that arrived (ours still in @send) laid out into @out. Bin v
 * starts at global place G[v], so at max(G[v], lo) - lo in our share;
 * the share holds bins vlo..vhi.
 */
static int lay_out(struct sort_ctx *c, struct digit_pass *p,
		   struct sort_view out, unsigned int shift, unsigned int b)
{
	size_t vlo, vhi;

	for (vlo = 0; p->G[vlo] + p->H[vlo] <= p->lo; vlo++)
		;
	for (vhi = vlo;
	     vhi + 1 < p->nb && p->G[vhi + 1] < p->lo + c->a->out_count; vhi++)
		;
	for (size_t v = vlo; v <= vhi; v++)
		p->place[v] = p->G[v] > p->lo ? p->G[v] - p->lo : 0;
	c->a->mem_passes++;
	return place_runs(c, p->runs, p->lens, out, shift, b, vlo, vhi,
			  p->place);
}

/*
 * One crossing of the network by the digit (key >> shift) & (2^b - 1):
 * every element goes to the rank, and the place there, that the stable
 * order by that digit gives it. @in holds this rank's elements, @hist
 * their histogram of the digit. The elements are put in stable digit
 * order in @send (so each destination's are a sorted run), the runs for
 * other ranks are exchanged into @recv, and every rank lays out the runs
 * it holds (its own still in @send) into @out. @send and @recv are packed
 * buffers of a->count and of the result's count; @out may be @in. A digit
 * wider than the local radix sort's (shift 0 only) is ordered by that
 * sort's passes, between @send and @spare. With @may_skip, a digit on
 * which all keys agree moves nothing and returns 1.
 */
static int net_digit_pass(struct sort_ctx *c, struct sort_view in,
			  const size_t *hist, unsigned int shift,
			  unsigned int b, struct sort_view out, uint8_t *send,
			  uint8_t *spare, uint8_t **recvp, bool may_skip)
{
	struct digit_pass p;
	int rc;

	rc = digit_pass_alloc(&p, c, b);
	if (rc)
		return rc;
	rc = digit_bins(c, &p, hist, may_skip);
	if (rc)
		goto out;
	/* where each rank's share begins, and how much of it comes from us */
	memset(c->sc, 0, c->n * sizeof(*c->sc));
	if (c->partitioned)
		rc = partitioned_counts(c, &p, hist);
	else
		balanced_counts(c, &p, hist);
	if (!rc)
		rc = fc_alltoall(c->g, c->sc, c->rc, 1, FC_UINT64, left_ms(c));
	if (rc)
		goto out;
	send = order_locally(c, &p, in, hist, shift, b, send, spare);
	rc = -ENOMEM;
	if (!send)
		goto out;
	if (!*recvp) {
		rc = agree_alloc(c, c->a->out_count * c->rs, recvp);
		if (rc)
			goto out;
	}
	/* our own run stays in @send: the exchange moves the others' */
	p.lens[c->rank] = c->sc[c->rank];
	rc = exchange(c, send, *recvp, true, c->a->out_count);
	if (rc)
		goto out;
	for (uint32_t d = 0; d < c->n; d++) {
		if (d != c->rank)
			p.lens[d] = c->rc[d] / c->rs;
		p.runs[d] = d == c->rank ? send + c->sd[d] : *recvp + c->rd[d];
	}
	if (c->a->out_count)
		rc = lay_out(c, &p, out, shift, b);
out:
	digit_pass_free(&p);
	return rc;
}

/* OPTWEB's counting sort: one crossing by the whole (small) key. */
static int sort_counting(struct sort_ctx *c, const size_t *hist)
{
	struct fc_sort_args *a = c->a;
	uint8_t *recv = c->buf[1]; /* NULL when partitioned */
	int rc;

	rc = net_digit_pass(
		c, sort_split(a->keys, a->values, c->ks, c->vs), hist, 0,
		c->bits, sort_split(a->out_keys, a->out_values, c->ks, c->vs),
		c->buf[0], c->buf[2], &recv, false);
	if (recv != c->buf[1])
		fc__sort_free(recv);
	return rc;
}

/*
 * A partitioned result: the last digit on which keys differ (0 if none
 * does), into *last, and every rank's share, checked against its
 * capacity, from all the digits' histograms read at once.
 */
static int plan_partition(struct sort_ctx *c, struct sort_view in,
			  unsigned int ndig, unsigned int *last)
{
	size_t nb = (size_t)1 << NET_DIGIT_BITS;
	size_t *local = malloc(ndig * nb * sizeof(*local));
	size_t *H = malloc(ndig * nb * sizeof(*H));
	size_t *share = malloc(c->n * sizeof(*share));
	unsigned int d;
	int rc = -ENOMEM;

	if (!local || !H || !share)
		goto out;
	fc__sort_hist_digits(in, c->a->count, c->ks, ndig, NET_DIGIT_BITS,
			     local);
	c->a->mem_passes++;
	rc = fc_allreduce(c->g, local, H, ndig * nb, FC_UINT64, FC_SUM,
			  left_ms(c));
	if (rc)
		goto out;
	for (d = ndig - 1; d; d--) {
		size_t v = 0;

		while (v < nb && H[d * nb + v] != c->total)
			v++;
		if (v == nb)
			break;
	}
	*last = d;
	partition_bins(c, H + d * nb, nb, NULL, share);
	rc = check_shares(c, share);
out:
	free(local);
	free(H);
	free(share);
	return rc;
}

/*
 * A radix sort that crosses the network on every digit. Balanced, each
 * pass puts every element at its balanced place by the digits so far. For
 * a partitioned result the passes are balanced but the last, which hands
 * out the bins of the most significant digit on which keys differ whole,
 * as the counting sort does its keys. Which digit that is, and so every
 * rank's share, is known before anything moves: a digit's global
 * histogram does not change as the elements move, so one read of all the
 * digits and one allreduce give them all.
 */
static int sort_radix_net(struct sort_ctx *c)
{
	struct fc_sort_args *a = c->a;
	size_t nb = (size_t)1 << NET_DIGIT_BITS, n = a->count;
	unsigned int ndig = (c->bits + NET_DIGIT_BITS - 1) / NET_DIGIT_BITS;
	unsigned int last = ndig - 1;
	struct sort_view user_in = sort_split(a->keys, a->values, c->ks, c->vs);
	struct sort_view user_out =
		sort_split(a->out_keys, a->out_values, c->ks, c->vs);
	struct sort_view cur = user_in;
	struct sort_view work = sort_packed(c->buf[0], c->ks, c->vs);
	uint8_t *send = c->buf[1], *recv = c->buf[2], *share_recv = NULL;
	size_t *hist = malloc(nb * sizeof(*hist));
	bool part = c->partitioned;
	int rc = -ENOMEM;

	if (!hist)
		goto out;
	if (part) {
		rc = plan_partition(c, user_in, ndig, &last);
		if (rc)
			goto out;
	}
	for (unsigned int dg = 0; dg <= last; dg++) {
		unsigned int shift = dg * NET_DIGIT_BITS;
		unsigned int b = c->bits - shift < NET_DIGIT_BITS ?
					 c->bits - shift :
					 NET_DIGIT_BITS;
		bool fin = dg == last;

		c->partitioned = part && fin; /* balanced until the last */
		fc__sort_hist(cur, n, c->ks, shift, b, hist);
		a->mem_passes++;
		rc = net_digit_pass(c, cur, hist, shift, b,
				    fin ? user_out : work, send, NULL,
				    c->partitioned ? &share_recv : &recv,
				    !c->partitioned);
		if (rc < 0)
			goto out;
		if (rc == 0)
			cur = fin ? user_out : work;
	}
	rc = 0;
	if (part)
		goto out; /* the last pass wrote the output */
	if (cur.keys != user_out.keys) {
		fc__sort_copy(cur, user_out, n, c->ks, c->vs);
		a->mem_passes++;
	}
	a->out_count = n;
out:
	c->partitioned = part;
	fc__sort_free(share_recv);
	free(hist);
	return rc;
}

/* Bits of the splitter key settled per round of find_splitters(). */
#define SPLIT_ROUND_BITS 8

/*
 * Exact splitters for a locally sorted @recs: K[d] is the key of the
 * element at global place target[d] (d = 0..n-2, for the boundary before
 * rank d + 1). A radix select that all ranks run in step: each round
 * settles the next 8 bits of every splitter from the global counts of
 * keys at or below the 256 candidates (one allreduce), so 32-bit keys
 * take 4 rounds. A target at or past the end has no splitter (past[d]).
 */
static int find_splitters(struct sort_ctx *c, const uint8_t *recs,
			  const size_t *target, uint64_t *K, bool *past)
{
	const size_t nc = (size_t)1 << SPLIT_ROUND_BITS;
	uint32_t nbd = c->n - 1;
	size_t *cnt = calloc(nbd * nc, sizeof(*cnt));
	size_t *sum = calloc(nbd * nc, sizeof(*sum));
	unsigned int left = c->bits;
	int rc = -ENOMEM;

	if (!cnt || !sum)
		goto out;
	for (uint32_t d = 0; d < nbd; d++) {
		past[d] = target[d] >= c->total;
		K[d] = 0;
	}
	while (left) {
		unsigned int w = left < SPLIT_ROUND_BITS ? left :
							   SPLIT_ROUND_BITS;
		unsigned int shift = left - w;
		uint64_t below = shift ? key_limit(shift) : 0;

		for (uint32_t d = 0; d < nbd; d++) {
			if (past[d])
				continue;
			for (size_t j = 0; j < ((size_t)1 << w); j++)
				cnt[d * nc + j] = fc__sort_bound(
					recs, c->a->count, c->ks, c->rs,
					K[d] | (uint64_t)j << shift | below, 1);
		}
		rc = fc_allreduce(c->g, cnt, sum, nbd * nc, FC_UINT64, FC_SUM,
				  left_ms(c));
		if (rc)
			goto out;
		/* the first candidate with more than target[d] at or below */
		for (uint32_t d = 0; d < nbd; d++) {
			size_t j = 0;

			if (past[d])
				continue;
			while (j + 1 < ((size_t)1 << w) &&
			       sum[d * nc + j] <= target[d])
				j++;
			K[d] |= (uint64_t)j << shift;
		}
		left -= w;
	}
	rc = 0;
out:
	free(cnt);
	free(sum);
	return rc;
}

/* The splitters of one-pass and where they cut this rank's sorted run. */
struct onepass {
	size_t *target;	 /* n: global place of each boundary */
	size_t *lb, *eq; /* n: ours below, and equal to, each splitter */
	size_t *L, *E;	 /* n: all ranks' lb; the lower ranks' eq */
	size_t *cut;	 /* n + 1: our run's cuts, then run starts */
	size_t *share;	 /* n: each rank's share (partitioned) */
	uint64_t *K;	 /* n: the splitters */
	bool *past;	 /* n: a boundary past the end has none */
};

static void onepass_free(struct onepass *o)
{
	free(o->target);
	free(o->lb);
	free(o->eq);
	free(o->L);
	free(o->E);
	free(o->cut);
	free(o->share);
	free(o->K);
	free(o->past);
}

static int onepass_alloc(struct onepass *o, uint32_t n)
{
	o->target = calloc(n, sizeof(*o->target));
	o->lb = calloc(n, sizeof(*o->lb));
	o->eq = calloc(n, sizeof(*o->eq));
	o->L = calloc(n, sizeof(*o->L));
	o->E = calloc(n, sizeof(*o->E));
	o->cut = calloc(n + 1, sizeof(*o->cut));
	o->share = calloc(n, sizeof(*o->share));
	o->K = calloc(n, sizeof(*o->K));
	o->past = calloc(n, sizeof(*o->past));
	if (!o->target || !o->lb || !o->eq || !o->L || !o->E || !o->cut ||
	    !o->share || !o->K || !o->past) {
		onepass_free(o);
		return -ENOMEM;
	}
	return 0;
}

/*
 * The splitters for sorted @recs, and for each the elements below it
 * (lb, and over all ranks L) and equal to it (eq, and over the lower
 * ranks E, which a balanced result splits in rank order).
 */
static int find_bounds(struct sort_ctx *c, struct onepass *o,
		       const uint8_t *recs)
{
	uint32_t n = c->n, nbd = n - 1;
	size_t count = c->a->count;
	int rc;

	if (!nbd)
		return 0;
	for (uint32_t d = 0; d < nbd; d++)
		o->target[d] = c->partitioned ?
				       (size_t)((unsigned __int128)c->total *
						(d + 1) / n) :
				       c->offs[d + 1];
	rc = find_splitters(c, recs, o->target, o->K, o->past);
	if (rc)
		return rc;
	for (uint32_t d = 0; d < nbd; d++) {
		if (o->past[d]) {
			o->lb[d] = count;
			continue;
		}
		o->lb[d] =
			fc__sort_bound(recs, count, c->ks, c->rs, o->K[d], 0);
		o->eq[d] =
			fc__sort_bound(recs, count, c->ks, c->rs, o->K[d], 1) -
			o->lb[d];
	}
	rc = fc_allreduce(c->g, o->lb, o->L, nbd, FC_UINT64, FC_SUM,
			  left_ms(c));
	if (!rc && !c->partitioned)
		rc = fc_exscan(c->g, o->eq, o->E, nbd, FC_UINT64, FC_SUM,
			       left_ms(c));
	if (!rc && c->rank == 0)
		memset(o->E, 0, nbd * sizeof(*o->E));
	return rc;
}

/*
 * Where this rank's sorted run is cut between the ranks, into sc; the
 * share each rank gets. Cuts out of order (the peers' sums were not
 * true) mark the pass bad.
 */
static int cut_run(struct sort_ctx *c, struct onepass *o)
{
	uint32_t n = c->n, nbd = n - 1;
	size_t count = c->a->count;

	o->cut[0] = 0;
	o->cut[n] = count;
	for (uint32_t d = 0; d < nbd; d++) {
		size_t before = 0;

		if (o->past[d]) {
			o->cut[d + 1] = count;
			continue;
		}
		if (!c->partitioned && o->target[d] > o->L[d] + o->E[d]) {
			before = o->target[d] - o->L[d] - o->E[d];
			before = before < o->eq[d] ? before : o->eq[d];
		}
		o->cut[d + 1] = o->lb[d] + before;
		if (o->cut[d + 1] < o->cut[d]) {
			o->cut[d + 1] = o->cut[d];
			c->bad = true;
		}
	}
	for (uint32_t d = 0; d < n; d++)
		c->sc[d] = o->cut[d + 1] - o->cut[d];
	if (!c->partitioned) {
		c->a->out_count = count;
		return 0;
	}
	for (uint32_t d = 0; d < n; d++)
		o->share[d] =
			(d < nbd ? o->L[d] : c->total) - (d ? o->L[d - 1] : 0);
	return check_shares(c, o->share);
}

/*
 * Full-width keys over the network once: sort locally, cut at exact
 * splitters, exchange, merge the runs that arrive.
 */
static int sort_onepass(struct sort_ctx *c)
{
	struct fc_sort_args *a = c->a;
	uint8_t *x = c->buf[0], *y = c->buf[1], *recs, *recv = c->buf[2];
	uint8_t *scratch[2] = { NULL, NULL };
	struct onepass o;
	unsigned int passes = 0;
	int rc;

	rc = onepass_alloc(&o, c->n);
	if (rc)
		return rc;
	rc = -ENOMEM;
	recs = fc__sort_radix(sort_split(a->keys, a->values, c->ks, c->vs),
			      a->count, c->ks, c->vs, c->bits, NULL, x, y,
			      &passes);
	if (!recs)
		goto out;
	a->mem_passes += passes;
	rc = find_bounds(c, &o, recs);
	if (!rc)
		rc = cut_run(c, &o);
	if (!rc)
		rc = fc_alltoall(c->g, c->sc, c->rc, 1, FC_UINT64, left_ms(c));
	if (rc)
		goto out;
	for (uint32_t d = 0, s = 0; d <= c->n; d++) { /* run starts */
		o.cut[d] = s;
		if (d < c->n)
			s += c->rc[d];
	}
	if (!recv) { /* a partitioned share */
		rc = agree_alloc(c, a->out_count * c->rs, &recv);
		if (rc)
			goto out;
	}
	rc = exchange(c, recs, recv, false, a->out_count);
	if (rc)
		goto out;
	/* the radix sort's two buffers are free now: the merge's scratch */
	if (a->out_count <= a->count) {
		scratch[0] = x;
		scratch[1] = y;
	}
	a->mem_passes += fc__sort_merge(recv, o.cut, c->n,
					sort_split(a->out_keys, a->out_values,
						   c->ks, c->vs),
					c->ks, c->vs, scratch);
out:
	if (recv != c->buf[2])
		fc__sort_free(recv);
	onepass_free(&o);
	return rc;
}

/* The checks each rank makes alone, before any collective. */
static int check_args(struct fc_group *g, const struct fc_sort_args *a)
{
	if (!g || !a || a->flags)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(a->reserved) / sizeof(a->reserved[0]);
	     i++)
		if (a->reserved[i])
			return -EINVAL;
	if (a->key_size != 4 && a->key_size != 8)
		return -EINVAL;
	if (a->key_bits > a->key_size * 8)
		return -EINVAL;
	if (a->layout > FC_SORT_PARTITIONED || a->algo > FC_SORT_RADIX_NET)
		return -EINVAL;
	if (!a->value_size != !a->values && a->count)
		return -EINVAL;
	if (!a->value_size != !a->out_values && a->capacity)
		return -EINVAL;
	if (a->count && !a->keys)
		return -EINVAL;
	if (a->capacity && !a->out_keys)
		return -EINVAL;
	if (a->layout == FC_SORT_BALANCED && a->capacity < a->count)
		return -EINVAL;
	if (a->algo == FC_SORT_COUNTING &&
	    (!a->key_bits || a->key_bits > FC_SORT_COUNTING_MAX_BITS))
		return -EINVAL;
	if ((a->count | a->capacity) >
	    SIZE_MAX / 2 / ((size_t)a->key_size + a->value_size))
		return -EINVAL;
	return 0;
}

/*
 * A peer's error field as an error code: only the errors a rank finds
 * alone before the agreement (a key out of range, no memory) are taken
 * at its word; anything else is a peer not speaking the protocol.
 */
static int peer_error(uint64_t field)
{
	switch (field) {
	case ERANGE:
		return -ERANGE;
	case ENOMEM:
		return -ENOMEM;
	default:
		return -EBADMSG;
	}
}

/* Gather every rank's count, capacity, arguments and local error. */
static int agree(struct sort_ctx *c, int local_err)
{
	struct fc_sort_args *a = c->a;
	uint64_t mine[AG_N] = {
		[AG_COUNT] = a->count,		 [AG_CAP] = a->capacity,
		[AG_ERR] = (uint64_t)-local_err, [AG_KS] = a->key_size,
		[AG_BITS] = a->key_bits,	 [AG_VS] = a->value_size,
		[AG_LAYOUT] = a->layout,	 [AG_ALGO] = a->algo,
	};
	uint64_t *all = malloc(sizeof(mine) * c->n);
	size_t most = SIZE_MAX / 2 / c->rs; /* check_args's bound */
	int rc;

	if (!all)
		return -ENOMEM;
	rc = fc_allgather(c->g, mine, all, AG_N, FC_UINT64, left_ms(c));
	if (rc)
		goto out;
	c->offs[0] = 0;
	for (uint32_t r = 0; r < c->n; r++) {
		const uint64_t *o = all + r * AG_N;

		if (o[AG_ERR] && !rc)
			rc = peer_error(o[AG_ERR]);
		for (int f = AG_KS; f < AG_N; f++)
			if (o[f] != mine[f] && !rc)
				rc = -EBADMSG;
		/* counts that no rank could hold, or a total that wraps */
		if ((o[AG_COUNT] | o[AG_CAP]) > most ||
		    o[AG_COUNT] > most - c->offs[r]) {
			if (!rc)
				rc = -EBADMSG;
			break;
		}
		c->counts[r] = o[AG_COUNT];
		c->caps[r] = o[AG_CAP];
		c->offs[r + 1] = c->offs[r] + o[AG_COUNT];
	}
	c->total = c->offs[c->n];
out:
	free(all);
	return rc;
}

/* The context of one sort: sizes, flags, and its small arrays. */
static int ctx_init(struct sort_ctx *c, struct fc_group *g,
		    struct fc_sort_args *a, int timeout_ms)
{
	int size = fc_group_size(g), rank = fc_group_rank(g);
	size_t *arrays;

	if (size < 1 || rank < 0)
		return -EINVAL;
	memset(c, 0, sizeof(*c));
	c->g = g;
	c->a = a;
	c->timeout_ms = timeout_ms;
	clock_gettime(CLOCK_MONOTONIC, &c->start);
	c->n = (uint32_t)size;
	c->rank = (uint32_t)rank;
	c->ks = a->key_size;
	c->vs = a->value_size;
	c->rs = c->ks + c->vs;
	c->bits = a->key_bits ? a->key_bits : a->key_size * 8;
	c->partitioned = a->layout == FC_SORT_PARTITIONED;
	arrays = calloc(11 * (size_t)c->n + 1, sizeof(*arrays));
	if (!arrays)
		return -ENOMEM;
	c->counts = arrays;
	c->caps = c->counts + c->n;
	c->sc = c->caps + c->n;
	c->sd = c->sc + c->n;
	c->rc = c->sd + c->n;
	c->rd = c->rc + c->n;
	c->offs = c->rd + c->n; /* n + 1 */
	c->piece = c->offs + c->n + 1;
	return 0;
}

/*
 * The range check (keys within key_bits), in the counting sort's
 * histogram pass, which *histp keeps. RETURN VALUE: 0, -ERANGE, -ENOMEM.
 */
static int check_keys(struct sort_ctx *c, uint32_t algo, size_t **histp)
{
	struct fc_sort_args *a = c->a;
	struct sort_view in = sort_split(a->keys, a->values, c->ks, c->vs);
	size_t *hist;

	if (algo == FC_SORT_COUNTING) {
		hist = malloc(sizeof(*hist) << c->bits);
		*histp = hist;
		a->mem_passes++;
		if (!hist)
			return -ENOMEM;
		return fc__sort_hist(in, a->count, c->ks, 0, c->bits, hist) &
				       ~key_limit(c->bits) ?
			       -ERANGE :
			       0;
	}
	if (c->bits < c->ks * 8) {
		a->mem_passes++;
		if (keys_or(in, a->count, c->ks) & ~key_limit(c->bits))
			return -ERANGE;
	}
	return 0;
}

/*
 * The work buffers, taken before the agreement so that a rank short of
 * memory says so there. RETURN VALUE: 0 or -ENOMEM.
 */
static int take_buffers(struct sort_ctx *c, uint32_t algo)
{
	size_t bytes = c->a->count * c->rs + 1;
	unsigned int nbuf = algo == FC_SORT_RADIX_NET ? 3 :
			    algo == FC_SORT_ONEPASS   ? 2 :
							1;
	/* a key wider than a local digit: the local sort's second */
	bool spare = algo == FC_SORT_COUNTING &&
		     c->bits > SORT_LOCAL_DIGIT_BITS;
	int rc = 0;

	if (!c->partitioned && algo != FC_SORT_RADIX_NET)
		nbuf++; /* the receive buffer: count elements */
	for (unsigned int i = 0; i < 3; i++) {
		if (i >= nbuf && !(i == 2 && spare))
			continue;
		c->buf[i] = fc__sort_alloc(bytes);
		if (!c->buf[i])
			rc = -ENOMEM;
	}
	return rc;
}

FC__EXPORT int fc_sort(struct fc_group *g, struct fc_sort_args *a,
		       int timeout_ms)
{
	struct sort_ctx c;
	size_t *hist = NULL;
	uint32_t algo;
	int rc, local_err, err;

	rc = check_args(g, a);
	if (!rc)
		rc = ctx_init(&c, g, a, timeout_ms);
	if (rc)
		return rc;
	algo = a->algo;
	if (algo == FC_SORT_AUTO)
		algo = a->key_bits && a->key_bits <= FC_SORT_COUNTING_MAX_BITS ?
			       FC_SORT_COUNTING :
			       FC_SORT_ONEPASS;
	a->out_count = 0;
	a->net_passes = 0;
	a->mem_passes = 0;
	a->used_algo = algo;

	local_err = check_keys(&c, algo, &hist);
	err = take_buffers(&c, algo);
	rc = agree(&c, local_err ? local_err : err);
	if (rc)
		goto out;
	if (!c.total) {
		if (a->rank_counts)
			memset(a->rank_counts, 0, c.n * sizeof(size_t));
		goto out;
	}
	switch (algo) {
	case FC_SORT_COUNTING:
		rc = sort_counting(&c, hist);
		break;
	case FC_SORT_RADIX_NET:
		rc = sort_radix_net(&c);
		break;
	default:
		rc = sort_onepass(&c);
		break;
	}
out:
	for (int i = 0; i < 3; i++)
		fc__sort_free(c.buf[i]);
	free(hist);
	free(c.counts);
	return rc;
}

static int sort_keys(struct fc_group *g, void *keys, size_t count,
		     unsigned int ks, unsigned int key_bits, int timeout_ms)
{
	struct fc_sort_args a = {
		.key_size = ks,
		.key_bits = key_bits,
		.keys = keys,
		.count = count,
		.out_keys = keys,
		.capacity = count,
	};

	return fc_sort(g, &a, timeout_ms);
}

FC__EXPORT int fc_sort_u32(struct fc_group *g, uint32_t *keys, size_t count,
			   unsigned int key_bits, int timeout_ms)
{
	return sort_keys(g, keys, count, 4, key_bits, timeout_ms);
}

FC__EXPORT int fc_sort_u64(struct fc_group *g, uint64_t *keys, size_t count,
			   unsigned int key_bits, int timeout_ms)
{
	return sort_keys(g, keys, count, 8, key_bits, timeout_ms);
}
