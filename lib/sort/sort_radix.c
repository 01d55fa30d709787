// SPDX-License-Identifier: MIT
/*
 * The distributed sort by digits: OPTWEB's counting sort (one network
 * crossing by a small whole key) and the radix sort over the network
 * (one crossing per 8-bit digit). docs/sort.md gives the cost model.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sort_net_internal.h"

/* Digits of FC_SORT_RADIX_NET: one network crossing each. */
#define NET_DIGIT_BITS 8

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
			  fc__sort_left_ms(c));
	if (!rc)
		rc = fc_exscan(c->g, hist, p->E, p->nb, FC_UINT64, FC_SUM,
			       fc__sort_left_ms(c));
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

	fc__sort_partition_bins(c, p->H, p->nb, p->owner, p->share);
	for (size_t v = 0; v < p->nb; v++)
		c->sc[p->owner[v]] += hist[v];
	rc = fc__sort_check_shares(c, p->share);
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
	return fc__sort_place_runs(c, p->runs, p->lens, out, shift, b, vlo, vhi,
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
		rc = fc_alltoall(c->g, c->sc, c->rc, 1, FC_UINT64,
				 fc__sort_left_ms(c));
	if (rc)
		goto out;
	send = order_locally(c, &p, in, hist, shift, b, send, spare);
	rc = -ENOMEM;
	if (!send)
		goto out;
	if (!*recvp) {
		rc = fc__sort_agree_alloc(c, c->a->out_count * c->rs, recvp);
		if (rc)
			goto out;
	}
	/* our own run stays in @send: the exchange moves the others' */
	p.lens[c->rank] = c->sc[c->rank];
	rc = fc__sort_exchange(c, send, *recvp, true, c->a->out_count);
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
int fc__sort_counting(struct sort_ctx *c, const size_t *hist)
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
			  fc__sort_left_ms(c));
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
	fc__sort_partition_bins(c, H + d * nb, nb, NULL, share);
	rc = fc__sort_check_shares(c, share);
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
int fc__sort_radix_net(struct sort_ctx *c)
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
