// SPDX-License-Identifier: MIT
/*
 * test_sort: the distributed sort (fc_sort) across the ranks of an
 * emulated cluster. Every result is checked three ways: it is ordered
 * (inside each rank and across rank boundaries), it is a permutation of
 * the input (each value carries its element's global index, from which
 * every rank recomputes the key it must go with, and an order-free hash of
 * the indices or keys matches the input's), and it is stable (equal keys
 * keep their global index order). Counting, one-pass and per-digit radix
 * sorts; 4- and 8-byte keys; values of 0, 4, 8 and 12 bytes; balanced and
 * partitioned layouts; random, all-equal, few-valued, sorted and reverse
 * sorted keys; zero keys on some ranks, one key in all, none at all;
 * in place; on a group split from the world; large enough for the
 * write-combined scatter and the layout by segments;
 * bad arguments (local errors change nothing; -ERANGE, -EBADMSG,
 * -ENOSPC and -ENOMEM on every rank, with the output untouched and the
 * group usable); a rank that lies about its per-destination counts (more,
 * none, a count that wraps in bytes) or sends an error code no rank sends
 * (INT_MIN, a negative one): -EBADMSG on every other rank, nothing
 * written, and the next sort works; one that counts true but sends other
 * keys: a rank that got them says -EBADMSG, none writes past its output.
 *
 * Run alone, it starts itself under build/tools/fpgacomm-run in several
 * shapes (1, 2, 3, 4, 5 and 8 ranks; ring, 2x2 torus, mesh, full mesh;
 * one with link faults, one with the exchange cut into rounds of 1000
 * bytes a pair) and exits with the worst status.
 */
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fpgacomm/fpgacomm.h>

#define CHECK_CONTEXT what /* the case being checked */
#include "launch.h"

#define EXIT_SKIP 77
#define T_MS	  120000
#define MAX_RANKS 16

static struct fc_dev *dev;
static struct fc_group *world;
static uint32_t rank, size;
static int failures;
static const char *what = ""; /* the case being checked */

/* ---- Inputs every rank can recompute ---- */

enum dist {
	RANDOM,
	EQUAL,
	FEW,
	SORTED,
	REVERSE
};
static const char *const dist_names[] = { "random", "equal", "few", "sorted",
					  "reverse" };

/* How many elements rank @r gives: some ranks none. */
enum counts {
	SOME_EMPTY,
	ONE_KEY,
	NO_KEYS,
	UNEVEN
};

struct spec {
	enum dist dist;
	enum counts counts;
	size_t base;	       /* elements per rank, about */
	uint32_t ks, bits, vs; /* key bytes, key bits (0: full), value bytes */
	uint32_t layout, algo;
	uint64_t seed;
	bool in_place; /* input in the output arrays */
};

static size_t count_of(const struct spec *s, uint32_t r)
{
	switch (s->counts) {
	case ONE_KEY:
		return r == size - 1 ? 1 : 0;
	case NO_KEYS:
		return 0;
	case UNEVEN:
		return s->base + r * 37;
	default:
		return (r % 3 == 1) ? 0 : s->base + r * 13;
	}
}

static unsigned int key_width(const struct spec *s)
{
	return s->bits ? s->bits : s->ks * 8;
}

static uint64_t key_of(const struct spec *s, uint64_t g, uint64_t total,
		       uint32_t r, size_t i)
{
	unsigned int w = key_width(s);
	uint64_t mask = w == 64 ? ~0ull : (1ull << w) - 1;
	uint64_t x = mix(s->seed ^ (uint64_t)r << 40 ^ i);
	unsigned __int128 span = (unsigned __int128)mask + 1;

	switch (s->dist) {
	case EQUAL:
		return 0x5a5a5a5a5a5a5a5aull & mask;
	case FEW:
		return (x % 3 == 0 ? 3 : x % 3 == 1 ? 0x123456 : ~0ull) & mask;
	case SORTED:
		return (uint64_t)(span * g / total);
	case REVERSE:
		return (uint64_t)(span * (total - 1 - g) / total);
	default:
		return x & mask;
	}
}

static void put_key(void *keys, size_t i, uint32_t ks, uint64_t k)
{
	if (ks == 4)
		((uint32_t *)keys)[i] = (uint32_t)k;
	else
		((uint64_t *)keys)[i] = k;
}

static uint64_t get_key(const void *keys, size_t i, uint32_t ks)
{
	return ks == 4 ? ((const uint32_t *)keys)[i] :
			 ((const uint64_t *)keys)[i];
}

/* The value of the element with global index @g: @g itself (cut to 4
 * bytes, or followed by a check word for 12). */
static void put_val(void *vals, size_t i, uint32_t vs, uint64_t g)
{
	uint8_t *p = (uint8_t *)vals + i * vs;
	uint32_t g32 = (uint32_t)g, chk = (uint32_t)~mix(g);

	if (vs == 4) {
		memcpy(p, &g32, 4);
	} else if (vs >= 8) {
		memcpy(p, &g, 8);
		if (vs == 12)
			memcpy(p + 8, &chk, 4);
	}
}

static bool get_val(const void *vals, size_t i, uint32_t vs, uint64_t *g)
{
	const uint8_t *p = (const uint8_t *)vals + i * vs;
	uint32_t g32, chk;

	if (vs == 4) {
		memcpy(&g32, p, 4);
		*g = g32;
		return true;
	}
	memcpy(g, p, 8);
	if (vs == 12) {
		memcpy(&chk, p + 8, 4);
		return chk == (uint32_t)~mix(*g);
	}
	return true;
}

/* ---- One sort, checked ---- */

struct edge {
	uint64_t nonempty, first_key, first_g, last_key, last_g;
};

static uint64_t offs[MAX_RANKS + 1];

static uint32_t rank_of(uint64_t g)
{
	uint32_t r = 0;

	while (r + 1 < size && offs[r + 1] <= g)
		r++;
	return r;
}

static void run_case(const struct spec *s, const char *name)
{
	size_t count = count_of(s, rank), cap, extra;
	uint64_t total, hash_in = 0, sums[2], want[2];
	size_t rank_counts[MAX_RANKS] = { 0 };
	struct edge mine = { 0 }, all[MAX_RANKS];
	struct fc_sort_args a = { 0 };
	void *keys, *vals = NULL, *okeys, *ovals = NULL;
	bool partitioned = s->layout == FC_SORT_PARTITIONED;
	int rc;

	what = name;
	offs[0] = 0;
	for (uint32_t r = 0; r < size; r++)
		offs[r + 1] = offs[r] + count_of(s, r);
	total = offs[size];
	/* a partitioned share may be the whole of it */
	cap = partitioned ? total : count;
	extra = 3; /* sentinel elements past the capacity */
	keys = malloc((count + 1) * s->ks);
	okeys = malloc((cap + extra) * s->ks);
	if (s->vs) {
		vals = malloc((count + 1) * s->vs);
		ovals = malloc((cap + extra) * s->vs);
	}
	for (size_t i = 0; i < count; i++) {
		uint64_t g = offs[rank] + i;

		put_key(keys, i, s->ks, key_of(s, g, total, rank, i));
		if (s->vs)
			put_val(vals, i, s->vs, g);
	}
	memset(okeys, 0xa5, (cap + extra) * s->ks);
	if (ovals)
		memset(ovals, 0xa5, (cap + extra) * s->vs);

	a.key_size = s->ks;
	a.key_bits = s->bits;
	a.value_size = s->vs;
	a.layout = s->layout;
	a.algo = s->algo;
	a.keys = keys;
	a.values = vals;
	a.count = count;
	a.out_keys = okeys;
	a.out_values = ovals;
	a.capacity = cap;
	a.rank_counts = partitioned ? rank_counts : NULL;
	if (s->in_place) {
		memcpy(okeys, keys, count * s->ks);
		if (s->vs)
			memcpy(ovals, vals, count * s->vs);
		a.keys = okeys;
		a.values = ovals;
	}
	rc = fc_sort(world, &a, T_MS);
	CHECK(rc == 0, "fc_sort: %d (%s)", rc, fc_strerror(rc));
	if (rc)
		goto out;
	/* one crossing, or one per digit on which the keys differ */
	if (a.used_algo == FC_SORT_RADIX_NET)
		CHECK(a.net_passes <= (key_width(s) + 7) / 8, "net_passes %u",
		      a.net_passes);
	else
		CHECK(a.net_passes == (total ? 1u : 0u), "net_passes %u",
		      a.net_passes);
	CHECK(a.used_algo == (s->algo ? s->algo :
			      s->bits && s->bits <= FC_SORT_COUNTING_MAX_BITS ?
					FC_SORT_COUNTING :
					FC_SORT_ONEPASS),
	      "used_algo %u", a.used_algo);
	if (partitioned) {
		size_t sum = 0;

		for (uint32_t r = 0; r < size; r++)
			sum += rank_counts[r];
		CHECK(sum == total, "rank counts sum to %zu of %" PRIu64, sum,
		      total);
		CHECK(a.out_count == rank_counts[rank],
		      "out_count %zu, "
		      "rank_counts says %zu",
		      a.out_count, rank_counts[rank]);
	} else {
		CHECK(a.out_count == count, "balanced: %zu elements out of %zu",
		      a.out_count, count);
	}
	/* nothing written past what we were told */
	for (size_t i = a.out_count * s->ks; i < (cap + extra) * s->ks; i++)
		if (((uint8_t *)okeys)[i] != 0xa5) {
			CHECK(0, "key byte %zu written past out_count", i);
			break;
		}

	/* ordered, stable, keys where their indices say */
	for (size_t i = 0; i < a.out_count && i < cap; i++) {
		uint64_t k = get_key(okeys, i, s->ks), g = 0;

		if (i) {
			uint64_t pk = get_key(okeys, i - 1, s->ks);

			if (pk > k) {
				CHECK(0, "out of order at %zu", i);
				break;
			}
		}
		if (!s->vs) {
			hash_in += mix(k);
			continue;
		}
		if (!get_val(ovals, i, s->vs, &g)) {
			CHECK(0, "value %zu mangled", i);
			break;
		}
		if (s->vs == 4 && total > UINT32_MAX)
			continue;
		if (g >= total) {
			CHECK(0, "value %zu: index %" PRIu64 " out of range", i,
			      g);
			break;
		}
		{
			uint32_t r = rank_of(g);
			uint64_t want_k = key_of(s, g, total, r, g - offs[r]);

			if (want_k != k) {
				CHECK(0,
				      "element %zu: key %#" PRIx64
				      " with the index "
				      "of key %#" PRIx64,
				      i, k, want_k);
				break;
			}
		}
		if (i) {
			uint64_t pg = 0;

			get_val(ovals, i - 1, s->vs, &pg);
			if (get_key(okeys, i - 1, s->ks) == k && pg >= g) {
				CHECK(0,
				      "unstable at %zu: index %" PRIu64
				      " after %" PRIu64,
				      i, g, pg);
				break;
			}
		}
		hash_in += mix(g);
		if (!i) {
			mine.first_g = g;
		}
		mine.last_g = g;
	}
	if (a.out_count) {
		mine.nonempty = 1;
		mine.first_key = get_key(okeys, 0, s->ks);
		mine.last_key = get_key(okeys, a.out_count - 1, s->ks);
	}

	/* a permutation: the count and an order-free hash over all ranks */
	sums[0] = a.out_count;
	sums[1] = hash_in;
	CHECK_RC(fc_allreduce(world, FC_IN_PLACE, sums, 2, FC_UINT64, FC_SUM,
			      T_MS),
		 0);
	want[0] = total;
	want[1] = 0;
	for (uint32_t r = 0; r < size; r++)
		for (uint64_t g = offs[r]; g < offs[r + 1]; g++)
			want[1] += s->vs ? mix(g) :
					   mix(key_of(s, g, total, r,
						      g - offs[r]) &
					       (s->ks == 4 ? 0xffffffffull :
							     ~0ull));
	CHECK(sums[0] == want[0], "%" PRIu64 " elements in all, not %" PRIu64,
	      sums[0], want[0]);
	CHECK(sums[1] == want[1], "not a permutation of the input");

	/* across rank boundaries: ordered, stable, ranges disjoint */
	CHECK_RC(fc_allgather(world, &mine, all, 5, FC_UINT64, T_MS), 0);
	for (uint32_t r = 0, prev = UINT32_MAX; r < size; r++) {
		if (!all[r].nonempty)
			continue;
		if (prev != UINT32_MAX) {
			const struct edge *p = &all[prev], *q = &all[r];

			CHECK(p->last_key <= q->first_key,
			      "ranks %u, %u out of order", prev, r);
			if (partitioned)
				CHECK(p->last_key < q->first_key,
				      "equal keys on ranks %u and %u", prev, r);
			if (s->vs && p->last_key == q->first_key)
				CHECK(p->last_g < q->first_g,
				      "unstable across ranks %u, %u", prev, r);
		}
		prev = r;
	}
out:
	free(keys);
	free(vals);
	free(okeys);
	free(ovals);
}

/* ---- The cases ---- */

static void test_counting(void)
{
	static const enum dist dists[] = { RANDOM, EQUAL, FEW, SORTED,
					   REVERSE };
	struct spec s = { .base = 700,
			  .ks = 4,
			  .bits = 6,
			  .vs = 8,
			  .algo = FC_SORT_COUNTING,
			  .seed = 1 };
	char name[96];

	for (size_t d = 0; d < 5; d++) {
		s.dist = dists[d];
		for (uint32_t l = 0; l < 2; l++) {
			s.layout = l;
			snprintf(name, sizeof(name), "counting 6-bit %s %s",
				 dist_names[s.dist],
				 l ? "partitioned" : "balanced");
			run_case(&s, name);
		}
	}
	/* 16 bits, 8-byte keys, a 12-byte opaque value, auto */
	s = (struct spec){ .base = 900,
			   .ks = 8,
			   .bits = 16,
			   .vs = 12,
			   .algo = FC_SORT_AUTO,
			   .counts = UNEVEN,
			   .seed = 2 };
	run_case(&s, "counting 16-bit u64 keys, 12-byte values");
	s.vs = 4;
	s.layout = FC_SORT_PARTITIONED;
	run_case(&s, "counting 16-bit partitioned, 4-byte values");
	/* the widest: the local order in two radix passes */
	s = (struct spec){ .base = 900,
			   .ks = 4,
			   .bits = FC_SORT_COUNTING_MAX_BITS,
			   .vs = 8,
			   .algo = FC_SORT_AUTO,
			   .seed = 9 };
	run_case(&s, "counting 20-bit, auto");
	s.dist = FEW;
	s.layout = FC_SORT_PARTITIONED;
	run_case(&s, "counting 20-bit few, partitioned");
	s.dist = SORTED;
	s.bits = 13;
	s.algo = FC_SORT_COUNTING;
	s.layout = FC_SORT_BALANCED;
	run_case(&s, "counting 13-bit sorted");
}

static void test_onepass(void)
{
	static const enum dist dists[] = { RANDOM, EQUAL, FEW, SORTED,
					   REVERSE };
	struct spec s = { .base = 800,
			  .ks = 4,
			  .vs = 8,
			  .algo = FC_SORT_ONEPASS,
			  .seed = 3 };
	char name[96];

	for (size_t d = 0; d < 5; d++) {
		s.dist = dists[d];
		for (uint32_t l = 0; l < 2; l++) {
			s.layout = l;
			snprintf(name, sizeof(name), "onepass u32 %s %s",
				 dist_names[s.dist],
				 l ? "partitioned" : "balanced");
			run_case(&s, name);
		}
	}
	s = (struct spec){ .base = 600,
			   .ks = 8,
			   .vs = 8,
			   .counts = UNEVEN,
			   .algo = FC_SORT_AUTO,
			   .seed = 4 };
	run_case(&s, "onepass u64 full width");
	s.dist = FEW;
	run_case(&s, "onepass u64 few values, every rank some");
	s.vs = 0;
	run_case(&s, "onepass u64 keys alone, few values");
	s = (struct spec){ .base = 500,
			   .ks = 4,
			   .bits = 24,
			   .vs = 4,
			   .algo = FC_SORT_AUTO,
			   .seed = 5 };
	run_case(&s, "onepass 24-bit keys, 4-byte values");
}

static void test_radix_net(void)
{
	struct spec s = { .base = 600,
			  .ks = 4,
			  .vs = 8,
			  .algo = FC_SORT_RADIX_NET,
			  .seed = 6 };

	run_case(&s, "radix_net u32 random");
	s.dist = FEW;
	run_case(&s, "radix_net u32 few");
	s.dist = REVERSE;
	s.bits = 12;
	s.vs = 12;
	run_case(&s, "radix_net 12-bit reverse, 12-byte values");

	/* partitioned: the last digit on which keys differ hands out bins */
	s = (struct spec){ .base = 600,
			   .ks = 4,
			   .vs = 8,
			   .layout = FC_SORT_PARTITIONED,
			   .algo = FC_SORT_RADIX_NET,
			   .seed = 10 };
	for (size_t d = 0; d < 5; d++) {
		char name[96];

		s.dist = (enum dist)d;
		snprintf(name, sizeof(name), "radix_net u32 %s partitioned",
			 dist_names[s.dist]);
		run_case(&s, name);
	}
	s.dist = RANDOM;
	s.bits = 20; /* the top digit of the key width is all zero */
	s.vs = 12;
	s.counts = UNEVEN;
	run_case(&s, "radix_net 20-bit partitioned, 12-byte values");
	s.ks = 8;
	s.bits = 0;
	s.vs = 0;
	run_case(&s, "radix_net u64 keys alone partitioned");
}

/* Keys and values sorted where they are, by each algorithm. */
static void test_in_place_values(void)
{
	struct spec s = { .base = 500,
			  .ks = 4,
			  .vs = 8,
			  .dist = FEW,
			  .counts = UNEVEN,
			  .in_place = true,
			  .seed = 8 };

	s.bits = 6;
	s.algo = FC_SORT_COUNTING;
	run_case(&s, "in place, counting");
	s.bits = 0;
	s.algo = FC_SORT_ONEPASS;
	run_case(&s, "in place, onepass");
	s.algo = FC_SORT_RADIX_NET;
	s.vs = 12;
	run_case(&s, "in place, radix_net, 12-byte values");
}

/* A sort on a group split from the world: each half sorts its own. */
static void test_subgroup(void)
{
	struct fc_group *half;
	size_t n = 300 + rank * 11;
	uint32_t *k = malloc(n * 4), *edges;
	uint64_t sum[2] = { 0 };
	int hn;

	what = "a split group";
	CHECK_RC(fc_group_split(world, (int)(rank % 2), -(int)rank, T_MS,
				&half),
		 0);
	if (!half || !k) {
		free(k);
		return;
	}
	hn = fc_group_size(half);
	for (size_t i = 0; i < n; i++) {
		k[i] = (uint32_t)mix(rank * 131 + i);
		sum[0] += mix(k[i]);
	}
	CHECK_RC(fc_sort_u32(half, k, n, 0, T_MS), 0);
	for (size_t i = 0; i < n; i++) {
		sum[1] += mix(k[i]);
		if (i && k[i - 1] > k[i]) {
			CHECK(0, "out of order at %zu", i);
			break;
		}
	}
	/* the half's own hash, and its ranks in order (reversed keys) */
	CHECK_RC(fc_allreduce(half, FC_IN_PLACE, sum, 2, FC_UINT64, FC_SUM,
			      T_MS),
		 0);
	CHECK(sum[0] == sum[1], "not a permutation of the half's keys");
	edges = malloc(2 * 4 * (size_t)hn);
	if (edges) {
		uint32_t e[2] = { k[0], k[n - 1] };

		CHECK_RC(fc_allgather(half, e, edges, 2, FC_UINT32, T_MS), 0);
		for (int r = 1; r < hn; r++)
			CHECK(edges[2 * r - 1] <= edges[2 * r],
			      "half ranks %d, %d out of order", r - 1, r);
		free(edges);
	}
	CHECK_RC(fc_group_free(half), 0);
	free(k);
}

static void test_edges(void)
{
	struct spec s = { .base = 100, .ks = 4, .vs = 8, .seed = 7 };

	s.counts = ONE_KEY;
	s.algo = FC_SORT_ONEPASS;
	run_case(&s, "one key in all, onepass");
	s.algo = FC_SORT_RADIX_NET;
	run_case(&s, "one key in all, radix_net");
	s.bits = 6;
	s.algo = FC_SORT_COUNTING;
	s.layout = FC_SORT_PARTITIONED;
	run_case(&s, "one key in all, counting partitioned");
	s.counts = NO_KEYS;
	run_case(&s, "no keys anywhere, counting");
	s.bits = 0;
	s.algo = FC_SORT_ONEPASS;
	run_case(&s, "no keys anywhere, onepass");
	s.layout = FC_SORT_BALANCED;
	s.counts = SOME_EMPTY;
	s.base = 1;
	run_case(&s, "a key or none per rank");
}

/*
 * Enough elements per bin for the write-combined scatter (64 a bin and
 * more) and for laying out what arrives by whole segments: records of 4,
 * 12, 16 and 20 bytes (some run over a cache line), every algorithm.
 */
static void test_large(void)
{
	struct spec s = { .base = 20000,
			  .ks = 4,
			  .bits = 6,
			  .algo = FC_SORT_COUNTING,
			  .seed = 11 };

	run_case(&s, "large counting 6-bit keys alone");
	s.ks = 8;
	s.vs = 12;
	s.dist = FEW;
	s.layout = FC_SORT_PARTITIONED;
	run_case(&s, "large counting 6-bit u64 keys, 12-byte values, few");
	s = (struct spec){ .base = 70000,
			   .ks = 4,
			   .bits = 10,
			   .vs = 8,
			   .dist = REVERSE,
			   .counts = UNEVEN,
			   .algo = FC_SORT_COUNTING,
			   .seed = 12 };
	run_case(&s, "large counting 10-bit reverse, 8-byte values");
	s.bits = 14;
	s.ks = 8;
	s.dist = RANDOM;
	run_case(&s, "large counting 14-bit u64 keys, 8-byte values");
	s = (struct spec){ .base = 140000,
			   .ks = 4,
			   .vs = 4,
			   .algo = FC_SORT_ONEPASS,
			   .seed = 13 };
	run_case(&s, "large onepass u32, 4-byte values");
	s = (struct spec){ .base = 20000,
			   .ks = 4,
			   .vs = 12,
			   .algo = FC_SORT_RADIX_NET,
			   .seed = 14 };
	run_case(&s, "large radix_net u32, 12-byte values");
}

/* fc_sort_u32 in place: the convenience form. */
static void test_in_place(void)
{
	size_t n = 1000 + rank * 3;
	uint32_t *k = malloc(n * 4);
	uint64_t sum[2] = { 0 }, in[2] = { 0 };
	uint32_t edge[2], *edges = malloc(2 * 4 * size);

	what = "fc_sort_u32 in place";
	for (size_t i = 0; i < n; i++) {
		k[i] = (uint32_t)mix(rank * 7919 + i);
		in[0] += mix(k[i]);
	}
	CHECK_RC(fc_sort_u32(world, k, n, 0, T_MS), 0);
	for (size_t i = 0; i < n; i++) {
		sum[0] += mix(k[i]);
		if (i && k[i - 1] > k[i]) {
			CHECK(0, "out of order at %zu", i);
			break;
		}
	}
	CHECK_RC(fc_allreduce(world, FC_IN_PLACE, sum, 1, FC_UINT64, FC_SUM,
			      T_MS),
		 0);
	CHECK_RC(fc_allreduce(world, FC_IN_PLACE, in, 1, FC_UINT64, FC_SUM,
			      T_MS),
		 0);
	CHECK(sum[0] == in[0], "not a permutation");
	edge[0] = k[0];
	edge[1] = k[n - 1];
	CHECK_RC(fc_allgather(world, edge, edges, 2, FC_UINT32, T_MS), 0);
	for (uint32_t r = 1; r < size; r++)
		CHECK(edges[2 * r - 1] <= edges[2 * r], "ranks %u, %u", r - 1,
		      r);
	free(k);
	free(edges);
}

/* Bad arguments: local ones change nothing; shared ones fail every rank. */
static void test_bad_args(void)
{
	uint32_t k[64], out[64], big[64];
	uint64_t v[64];
	size_t counts[MAX_RANKS];
	struct fc_sort_args a, good = {
		.key_size = 4,
		.key_bits = 6,
		.keys = k,
		.count = 64,
		.out_keys = out,
		.capacity = 64,
	};

	what = "bad arguments";
	for (int i = 0; i < 64; i++) {
		k[i] = (uint32_t)(i * 7 + rank) % 64;
		out[i] = 0xdeadbeef;
	}
#define BAD(field_change, want)                           \
	do {                                              \
		a = good;                                 \
		field_change;                             \
		CHECK_RC(fc_sort(world, &a, T_MS), want); \
	} while (0)
	CHECK_RC(fc_sort(NULL, &good, T_MS), -EINVAL);
	CHECK_RC(fc_sort(world, NULL, T_MS), -EINVAL);
	BAD(a.key_size = 2, -EINVAL);
	BAD(a.key_bits = 33, -EINVAL);
	BAD(a.flags = 1, -EINVAL);
	BAD(a.reserved[4] = 1, -EINVAL);
	BAD(a.layout = 2, -EINVAL);
	BAD(a.algo = 4, -EINVAL);
	BAD(a.keys = NULL, -EINVAL);
	BAD(a.out_keys = NULL, -EINVAL);
	BAD(a.capacity = 63, -EINVAL);	/* balanced needs count */
	BAD(a.value_size = 8, -EINVAL); /* without values */
	BAD(a.values = v, -EINVAL);	/* without value_size */
	BAD((a.algo = FC_SORT_COUNTING,
	     a.key_bits = FC_SORT_COUNTING_MAX_BITS + 1),
	    -EINVAL);
	BAD((a.algo = FC_SORT_COUNTING, a.key_bits = 0), -EINVAL);
	for (int i = 0; i < 64; i++)
		CHECK(out[i] == 0xdeadbeef, "output touched by a bad call");

	/* one rank's key out of range: every rank hears, nothing moves */
	memcpy(big, k, sizeof(k));
	if (rank == size - 1)
		big[17] = 64;
	BAD(a.keys = big, -ERANGE);
	BAD((a.keys = big, a.algo = FC_SORT_ONEPASS), -ERANGE);
	/* the ranks disagree on the key width */
	if (size > 1)
		BAD(a.key_bits = rank == 0 ? 7 : 6, -EBADMSG);
	for (int i = 0; i < 64; i++)
		CHECK(out[i] == 0xdeadbeef, "output touched by a failed sort");

	/* a partitioned share too big for its rank: -ENOSPC everywhere */
	for (int i = 0; i < 64; i++)
		big[i] = 9;
	for (uint32_t algo = FC_SORT_COUNTING; algo <= FC_SORT_RADIX_NET;
	     algo++) {
		if (size == 1)
			break;
		BAD((a.keys = big, a.layout = FC_SORT_PARTITIONED,
		     a.algo = algo, a.rank_counts = counts),
		    -ENOSPC);
		{
			size_t owner = 0;

			for (uint32_t r = 0; r < size; r++)
				if (counts[r])
					owner++;
			CHECK(owner == 1 && a.out_count == counts[rank],
			      "-ENOSPC: %zu owners, out_count %zu", owner,
			      a.out_count);
			for (int i = 0; i < 64; i++)
				CHECK(out[i] == 0xdeadbeef, "output touched");
		}
	}
	/*
	 * Rank 0 cannot get its work buffers (2^20 elements of 1 GiB):
	 * -ENOMEM on every rank, found before anything moves (the keys and
	 * values are not read before the agreement).
	 */
	{
		uint32_t *many = calloc(1u << 20, 4);

		a = good;
		a.algo = FC_SORT_ONEPASS;
		a.key_bits = 0;
		a.keys = many;
		a.count = rank == 0 ? 1u << 20 : 1;
		a.capacity = a.count;
		a.value_size = 1u << 30;
		a.values = many;    /* never read */
		a.out_values = out; /* never written */
		CHECK_RC(fc_sort(world, &a, T_MS), -ENOMEM);
		free(many);
		for (int i = 0; i < 64; i++)
			CHECK(out[i] == 0xdeadbeef,
			      "output touched by -ENOMEM");
	}
	/* and the group still sorts */
	CHECK_RC(fc_sort(world, &good, T_MS), 0);
	for (int i = 1; i < 64; i++)
		CHECK(out[i - 1] <= out[i], "after the errors: unsorted");
#undef BAD
}

/* ---- A rank that lies ---- */

/*
 * The last rank plays fc_sort's part by hand with the public collectives,
 * in the order a counting sort of LIE_COUNT 8-bit keys calls them, but
 * sends what it likes where fc_sort would send facts: its error field in
 * the agreement, or its per-destination counts before the exchange. The
 * others call fc_sort and must all fail with -EBADMSG, their output
 * untouched, and the group must still sort afterwards.
 */
static size_t lie_count = 64; /* keys per rank */
#define LIE_COUNT lie_count
#define LIE_BITS  8

enum lie {
	LIE_NONE,
	LIE_MORE,
	LIE_LESS,
	LIE_HUGE,
	LIE_ERR,
	LIE_KEYS
};

static void lie_agree(uint64_t err)
{
	uint64_t mine[8] = {
		LIE_COUNT,	  LIE_COUNT,	   err, 4, LIE_BITS, 0,
		FC_SORT_BALANCED, FC_SORT_COUNTING
	};
	uint64_t *all = calloc(8 * size, sizeof(*all));

	CHECK_RC(fc_allgather(world, mine, all, 8, FC_UINT64, T_MS), 0);
	free(all);
}

/* The liar's counts to each rank, then the exchange in fc_sort's rounds. */
static void lie_exchange(enum lie lie)
{
	uint64_t hist[1u << LIE_BITS] = { [0] = LIE_COUNT };
	uint64_t H[1u << LIE_BITS], sc[MAX_RANKS] = { 0 },
				    rc[MAX_RANKS] = { 0 };
	size_t psc[MAX_RANKS], psd[MAX_RANKS], prc[MAX_RANKS], prd[MAX_RANKS];
	const char *env = getenv("FPGACOMM_SORT_PIECE");
	size_t piece = env && strtoull(env, NULL, 0) ? strtoull(env, NULL, 0) :
						       (size_t)8 << 20;
	uint64_t most = 0, rtotal = 0;
	uint8_t *send, *recv;

	CHECK_RC(fc_allreduce(world, hist, H, 1u << LIE_BITS, FC_UINT64, FC_SUM,
			      T_MS),
		 0);
	CHECK_RC(fc_exscan(world, hist, H, 1u << LIE_BITS, FC_UINT64, FC_SUM,
			   T_MS),
		 0);
	/* all its keys are 0: by the facts they go to rank 0, mostly */
	sc[0] = lie == LIE_MORE ? LIE_COUNT + 1000 :
		lie == LIE_HUGE ? LIE_COUNT + (1ull << 62) :
				  0;
	if (lie == LIE_KEYS) {
		/* the true counts: places H[0] (the lower ranks' zeros) on */
		for (uint64_t s = H[0], h = LIE_COUNT; h; s++, h--)
			sc[s / LIE_COUNT]++;
	}
	if (fc_alltoall(world, sc, rc, 1, FC_UINT64, T_MS)) {
		CHECK(0, "the liar's alltoall failed");
		return;
	}
	sc[rank] = 0; /* its own stays, as fc_sort's does */
	for (uint32_t d = 0; d < size; d++)
		sc[d] = sc[d] * 4 > (1u << 20) ? (1u << 20) : sc[d] * 4;
	for (uint32_t d = 0; d < size; d++) {
		rc[d] = d == rank ? 0 : rc[d] * 4;
		rtotal += rc[d];
		most = sc[d] > most ? sc[d] : most;
		most = rc[d] > most ? rc[d] : most;
	}
	if (fc_allreduce(world, FC_IN_PLACE, &most, 1, FC_UINT64, FC_MAX,
			 T_MS)) {
		CHECK(0, "the liar's allreduce failed");
		return;
	}
	if (most == UINT64_MAX)
		return; /* someone saw the lie: no exchange */
	/* what fc_sort did before it checked: the exchange, as declared */
	send = calloc(1, (size_t)LIE_COUNT * 4 + (1u << 20) + 1);
	recv = calloc(1, rtotal + 1);
	/* LIE_KEYS: the counts were true, the keys are 255, not 0 */
	for (size_t i = 0; lie == LIE_KEYS && i < LIE_COUNT; i++)
		send[4 * i] = 0xff;
	for (size_t off = 0; off < most || !off; off += piece) {
		for (uint32_t d = 0, r = 0, s = 0; d < size; d++) {
			psc[d] = sc[d] > off ? sc[d] - off : 0;
			psc[d] = psc[d] < piece ? psc[d] : piece;
			psd[d] = s + (psc[d] ? off : 0);
			s += sc[d];
			prc[d] = rc[d] > off ? rc[d] - off : 0;
			prc[d] = prc[d] < piece ? prc[d] : piece;
			prd[d] = r + (prc[d] ? off : 0);
			r += rc[d];
		}
		CHECK_RC(fc_alltoallv(world, send, psc, psd, recv, prc, prd,
				      FC_UINT8, T_MS),
			 0);
	}
	free(send);
	free(recv);
}

static void lie_once(enum lie lie, uint64_t err, int want, const char *name)
{
	uint32_t k[LIE_COUNT], out[LIE_COUNT + 4];
	uint64_t bad = 0;
	struct fc_sort_args a = {
		.key_size = 4,
		.key_bits = LIE_BITS,
		.keys = k,
		.count = LIE_COUNT,
		.out_keys = out,
		.capacity = LIE_COUNT,
		.algo = FC_SORT_COUNTING,
	};

	what = name;
	for (size_t i = 0; i < LIE_COUNT; i++)
		k[i] = (uint32_t)mix(i * 31 + rank) & 0xff;
	memset(out, 0xa5, sizeof(out));
	if (rank == size - 1) {
		lie_agree(err);
		if (lie != LIE_ERR)
			lie_exchange(lie);
	} else if (lie == LIE_KEYS) {
		/* only a rank that got the keys can tell: nothing past out */
		int rc = fc_sort(world, &a, T_MS);

		CHECK(rc == 0 || rc == -EBADMSG, "fc_sort: %d", rc);
		bad = rc == -EBADMSG;
		for (size_t i = LIE_COUNT; i < LIE_COUNT + 4; i++)
			CHECK(out[i] == 0xa5a5a5a5,
			      "written past the output "
			      "at %zu",
			      i);
	} else {
		CHECK_RC(fc_sort(world, &a, T_MS), want);
		for (size_t i = 0; i < LIE_COUNT + 4; i++)
			if (out[i] != 0xa5a5a5a5) {
				CHECK(0, "output touched at %zu", i);
				break;
			}
	}
	if (lie == LIE_KEYS) {
		CHECK_RC(fc_allreduce(world, FC_IN_PLACE, &bad, 1, FC_UINT64,
				      FC_SUM, T_MS),
			 0);
		CHECK(bad >= 1, "no rank saw keys other than counted");
	}
	/* the group is still good for an honest sort */
	CHECK_RC(fc_sort(world, &a, T_MS), 0);
	for (size_t i = 1; i < LIE_COUNT; i++)
		CHECK(out[i - 1] <= out[i], "after the lie: unsorted");
}

static void test_lying_peer(void)
{
	if (size < 2)
		return;
	lie_once(LIE_MORE, 0, -EBADMSG, "a peer claims to send more");
	lie_once(LIE_LESS, 0, -EBADMSG, "a peer claims to send nothing");
	lie_once(LIE_HUGE, 0, -EBADMSG, "a peer's count wraps in bytes");
	lie_once(LIE_KEYS, 0, -EBADMSG, "a peer sends keys it did not count");
	/* enough for the layout by segments (fc__sort_place) on <= 4 ranks */
	lie_count = 16384;
	lie_once(LIE_KEYS, 0, -EBADMSG,
		 "a peer sends keys it did not count, "
		 "laid out by segments");
	lie_count = 64;
	/* error fields no rank sends: only known codes are taken as such */
	lie_once(LIE_ERR, 0x80000000u, -EBADMSG, "error field INT_MIN");
	lie_once(LIE_ERR, (uint64_t)-5, -EBADMSG, "error field -EIO");
	lie_once(LIE_ERR, 0xffffffffu, -EBADMSG, "error field 2^32-1");
	lie_once(LIE_ERR, ERANGE, -ERANGE, "error field ERANGE");
}

/*
 * Under AddressSanitizer: the -ENOMEM case asks for more than it serves,
 * and must get NULL as from malloc, not an abort.
 */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "allocator_may_return_null=1";
}

static int run_rank(void)
{
	if (harness_rank_world(&dev, &world, &rank, &size))
		return 1;
	if (size > MAX_RANKS) {
		fprintf(stderr, "at most %d ranks\n", MAX_RANKS);
		return 1;
	}
	test_counting();
	test_onepass();
	test_radix_net();
	test_edges();
	test_large();
	test_in_place();
	test_in_place_values();
	test_subgroup();
	test_bad_args();
	test_lying_peer();
	if (rank == 0 || failures)
		printf("rank %u: %s (%d failures)\n", rank,
		       failures ? "FAIL" : "ok", failures);
	fc_group_free(world);
	fc_close(dev);
	return failures ? 1 : 0;
}

/* ---- The launcher ---- */

struct shape {
	int ranks;
	const char *topo, *faults;
	const char *piece; /* FPGACOMM_SORT_PIECE: exchanges in rounds */
};

static const struct shape shapes[] = {
	{ 1, NULL, NULL, NULL },
	{ 2, NULL, NULL, NULL },
	{ 3, "ring:3", NULL, "1000" },
	{ 4, "torus:2x2", NULL, NULL },
	{ 4, "full:4", "drop=0.01,corrupt=0.01", NULL },
	{ 5, "mesh:5x1", NULL, NULL },
	{ 8, "full:8", NULL, NULL },
};

static int launch(const char *run, const char *self, const struct shape *s)
{
	const char *const env[] = { "FPGACOMM_SORT_PIECE", s->piece, NULL };

	printf("== %d ranks, %s%s%s%s%s\n", s->ranks,
	       s->topo ? s->topo : "default", s->faults ? ", faults " : "",
	       s->faults ? s->faults : "",
	       s->piece ? ", FPGACOMM_SORT_PIECE=" : "",
	       s->piece ? s->piece : "");
	return harness_launch_ranks(run, self, s->ranks, s->topo, s->faults,
				    env);
}

int main(int argc, char **argv)
{
	char self[PATH_MAX], run[PATH_MAX + 32];
	int worst = 0, rc;

	if (getenv("FPGACOMM_RANK"))
		return run_rank();
	printf("test_sort: the distributed sort across ranks\n");
	rc = harness_find_run(self, sizeof(self), run, sizeof(run));
	if (rc)
		return rc;
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		/* "test_sort N" runs only the shapes of N ranks */
		if (argc > 1 && shapes[i].ranks != atoi(argv[1]))
			continue;
		rc = launch(run, self, &shapes[i]);
		worst = rc > worst ? rc : worst;
	}
	return worst;
}
