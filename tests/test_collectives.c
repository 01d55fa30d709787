// SPDX-License-Identifier: MIT
/*
 * test_collectives: groups and every collective across the ranks of an
 * emulated cluster, against references each rank computes itself:
 * every type x operator at counts 0, 1, odd and large, in place and not;
 * roots; v forms with uneven and zero counts; split and dup groups with
 * collectives in flight on two groups at once; non-blocking collectives
 * overlapping; allreduce results bitwise equal on every rank; members that
 * disagree (count, collective, root) get -EBADMSG on every rank; bad
 * arguments change nothing; a rank that dies mid-collective gives the
 * others an error in bounded time.
 *
 * Run alone, it starts itself under build/tools/fpgacomm-run in several
 * shapes (1, 2, 3, 4, 5, 8 and 16 ranks; ring, mesh, 2x2 and 4x4 torus,
 * full mesh; every algorithm forced somewhere; link faults) and exits
 * with the worst status. FPGACOMM_TEST_FULL=1 (make check-full) adds
 * shapes and larger counts.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fpgacomm/fpgacomm.h>

#include "launch.h"

#define EXIT_SKIP 77
#define T_MS	  60000

static struct fc_dev *dev;
static struct fc_group *world;
static uint32_t rank, size;
static int failures;
static bool full;
/* Through the kernel driver, messages stay small (see run_pair). */
static bool small;

/* ---- Data every rank can recompute ---- */

static uint16_t to_half(float f, bool brain)
{
	/* exact for the small integers used here */
	uint32_t u;

	memcpy(&u, &f, 4);
	if (brain)
		return (uint16_t)(u >> 16);
	if (f == 0)
		return (uint16_t)((u >> 16) & 0x8000);
	return (uint16_t)(((u >> 16) & 0x8000) |
			  (((u >> 23 & 0xff) - 112) << 10) |
			  ((u >> 13) & 0x3ff));
}

static double from_half(uint16_t h, bool brain)
{
	uint32_t u;
	float f;

	if (brain) {
		u = (uint32_t)h << 16;
	} else if (!(h & 0x7fff)) {
		u = (uint32_t)(h & 0x8000) << 16;
	} else {
		u = (uint32_t)(h & 0x8000) << 16 |
		    ((h >> 10 & 0x1f) + 112u) << 23 |
		    (uint32_t)(h & 0x3ff) << 13;
	}
	memcpy(&f, &u, 4);
	return f;
}

/*
 * Element @i of rank @r's input for @op (@seed varies the test). Small
 * integers, so that float sums and products are exact in any order; for
 * products only 1, -1 and (on two ranks) 2.
 */
static int64_t value(uint32_t r, size_t i, enum fc_redop op, uint64_t seed)
{
	uint64_t x = mix(seed ^ (uint64_t)r << 40 ^ i);

	if (op == FC_PROD)
		return (x & 1 ? -1 : 1) * ((r < 2 && (x & 6) == 6) ? 2 : 1);
	return (int64_t)(x % 15) - 7;
}

static bool is_float(enum fc_dtype t)
{
	return t >= FC_FLOAT16;
}

static void put_elem(void *buf, size_t i, enum fc_dtype t, int64_t v)
{
	switch (t) {
	case FC_INT8:
	case FC_UINT8:
		((uint8_t *)buf)[i] = (uint8_t)v;
		break;
	case FC_INT16:
	case FC_UINT16:
		((uint16_t *)buf)[i] = (uint16_t)v;
		break;
	case FC_INT32:
	case FC_UINT32:
		((uint32_t *)buf)[i] = (uint32_t)v;
		break;
	case FC_INT64:
	case FC_UINT64:
		((uint64_t *)buf)[i] = (uint64_t)v;
		break;
	case FC_FLOAT16:
		((uint16_t *)buf)[i] = to_half((float)v, false);
		break;
	case FC_BFLOAT16:
		((uint16_t *)buf)[i] = to_half((float)v, true);
		break;
	case FC_FLOAT32:
		((float *)buf)[i] = (float)v;
		break;
	case FC_FLOAT64:
		((double *)buf)[i] = (double)v;
		break;
	default:
		break;
	}
}

/* Element @i as a double (integers: as the type holds it). */
static double get_elem(const void *buf, size_t i, enum fc_dtype t)
{
	switch (t) {
	case FC_INT8:
		return ((const int8_t *)buf)[i];
	case FC_INT16:
		return ((const int16_t *)buf)[i];
	case FC_INT32:
		return ((const int32_t *)buf)[i];
	case FC_INT64:
		return (double)((const int64_t *)buf)[i];
	case FC_UINT8:
		return ((const uint8_t *)buf)[i];
	case FC_UINT16:
		return ((const uint16_t *)buf)[i];
	case FC_UINT32:
		return ((const uint32_t *)buf)[i];
	case FC_UINT64:
		return (double)((const uint64_t *)buf)[i];
	case FC_FLOAT16:
		return from_half(((const uint16_t *)buf)[i], false);
	case FC_BFLOAT16:
		return from_half(((const uint16_t *)buf)[i], true);
	case FC_FLOAT32:
		return ((const float *)buf)[i];
	default:
		return ((const double *)buf)[i];
	}
}

static void fill(void *buf, size_t count, enum fc_dtype t, enum fc_redop op,
		 uint32_t r, uint64_t seed)
{
	for (size_t i = 0; i < count; i++)
		put_elem(buf, i, t, value(r, i, op, seed));
}

/* The reduction of ranks [from, to] at element @i, stored as type @t. */
static void reference(void *out, size_t i, enum fc_dtype t, enum fc_redop op,
		      uint32_t from, uint32_t to, uint64_t seed)
{
	int64_t acc = value(from, i, op, seed);

	for (uint32_t r = from + 1; r <= to; r++) {
		int64_t v = value(r, i, op, seed);

		switch (op) {
		case FC_SUM:
			acc += v;
			break;
		case FC_PROD:
			acc *= v;
			break;
		case FC_MIN:
			acc = v < acc ? v : acc;
			break;
		case FC_MAX:
			acc = v > acc ? v : acc;
			break;
		case FC_BAND:
			acc &= v;
			break;
		case FC_BOR:
			acc |= v;
			break;
		default:
			acc ^= v;
			break;
		}
	}
	/* min/max of unsigned types compare the stored (wrapped) values */
	if (!is_float(t) && t >= FC_UINT8 && (op == FC_MIN || op == FC_MAX)) {
		uint64_t m = 0,
			 mask = t == FC_UINT64 ?
					~0ull :
					(1ull << (8 * fc_dtype_size(t))) - 1;

		for (uint32_t r = from; r <= to; r++) {
			uint64_t v = (uint64_t)value(r, i, op, seed) & mask;

			if (r == from || (op == FC_MIN ? v < m : v > m))
				m = v;
		}
		acc = (int64_t)m;
	}
	put_elem(out, 0, t, acc);
}

static bool same_elem(const void *got, size_t i, const void *want,
		      enum fc_dtype t)
{
	size_t es = (size_t)fc_dtype_size(t);

	return !memcmp((const char *)got + i * es, want, es);
}

static const char *tname(enum fc_dtype t)
{
	static const char *const n[] = { "int8",     "int16",	"int32",
					 "int64",    "uint8",	"uint16",
					 "uint32",   "uint64",	"float16",
					 "bfloat16", "float32", "float64" };
	return n[t];
}

/* Check @count elements of @got against the reduction of [from, to]. */
static void check_reduced(const char *what, const void *got, size_t count,
			  enum fc_dtype t, enum fc_redop op, uint32_t from,
			  uint32_t to, uint64_t seed, size_t base)
{
	uint64_t want;

	for (size_t i = 0; i < count; i++) {
		reference(&want, base + i, t, op, from, to, seed);
		if (!same_elem(got, i, &want, t)) {
			CHECK(0,
			      "%s %s op %d count %zu: element %zu is %g, want %g",
			      what, tname(t), op, count, i, get_elem(got, i, t),
			      get_elem(&want, 0, t));
			return;
		}
	}
}

/* ---- Reductions ---- */

static bool op_valid(enum fc_dtype t, enum fc_redop op)
{
	return !(is_float(t) && op >= FC_BAND);
}

static void test_reductions(void)
{
	size_t counts[] = { 0, 1, 7, 61, 1000 }, big = full  ? 300000 :
						       small ? 5000 :
							       70000;
	char *in = malloc(big * 8 * size), *out = malloc(big * 8 * size);
	uint64_t seed = 1;

	for (int t = 0; t < FC_DTYPE_COUNT; t++) {
		for (int op = 0; op < FC_REDOP_COUNT; op++) {
			if (!op_valid(t, op))
				continue;
			for (size_t k = 0; k <= 5; k++, seed++) {
				size_t c = k < 5 ? counts[k] : big;
				uint32_t root = (uint32_t)(seed % size);

				if (k == 5 && t != FC_FLOAT32 &&
				    t != FC_INT32 && !full)
					continue;
				fill(in, c, t, op, rank, seed);
				CHECK_RC(fc_allreduce(world, in, out, c, t, op,
						      T_MS),
					 0);
				check_reduced("allreduce", out, c, t, op, 0,
					      size - 1, seed, 0);
				/* in place */
				fill(out, c, t, op, rank, seed);
				CHECK_RC(fc_allreduce(world, FC_IN_PLACE, out,
						      c, t, op, T_MS),
					 0);
				check_reduced("allreduce in place", out, c, t,
					      op, 0, size - 1, seed, 0);
				CHECK_RC(fc_reduce(world, in, out, c, t, op,
						   root, T_MS),
					 0);
				if (rank == root)
					check_reduced("reduce", out, c, t, op,
						      0, size - 1, seed, 0);
				CHECK_RC(fc_scan(world, in, out, c, t, op,
						 T_MS),
					 0);
				check_reduced("scan", out, c, t, op, 0, rank,
					      seed, 0);
				CHECK_RC(fc_exscan(world, in, out, c, t, op,
						   T_MS),
					 0);
				if (rank)
					check_reduced("exscan", out, c, t, op,
						      0, rank - 1, seed, 0);
				/* reduce_scatter: c elements per rank */
				fill(in, c * size, t, op, rank, seed);
				CHECK_RC(fc_reduce_scatter(world, in, out, c, t,
							   op, T_MS),
					 0);
				check_reduced("reduce_scatter", out, c, t, op,
					      0, size - 1, seed, rank * c);
			}
		}
	}
	free(in);
	free(out);
}

/* Allreduce of random (inexact) floats: the same bits on every rank. */
static void test_bitwise_identical(void)
{
	size_t c = small ? 5000 : 50000;
	float *in = malloc(c * 4), *out = malloc(c * 4);
	uint64_t h = 1469598103934665603ull, *all = calloc(size, 8);

	for (size_t i = 0; i < c; i++)
		in[i] = (float)(mix(rank * 7919u + i) % 1000003) / 997.0f;
	CHECK_RC(fc_allreduce(world, in, out, c, FC_FLOAT32, FC_SUM, T_MS), 0);
	for (size_t i = 0; i < c; i++) {
		uint32_t u;

		memcpy(&u, &out[i], 4);
		h = (h ^ u) * 1099511628211ull;
	}
	CHECK_RC(fc_allgather(world, &h, all, 1, FC_UINT64, T_MS), 0);
	for (uint32_t r = 0; r < size; r++)
		CHECK(all[r] == h, "rank %u's result differs from ours", r);
	free(in);
	free(out);
	free(all);
}

/* ---- Data movement ---- */

static uint32_t word(uint32_t from, uint32_t to, size_t i)
{
	return (uint32_t)mix((uint64_t)from << 48 ^ (uint64_t)to << 32 ^ i);
}

static void test_bcast(void)
{
	size_t sizes[] = { 0, 1, 13, 4096, 300001 };

	for (size_t k = 0; k < (small ? 4u : 5u); k++) {
		for (uint32_t root = 0; root < size; root++) {
			size_t c = sizes[k];
			uint32_t *b = calloc(c + 1, 4);

			for (size_t i = 0; i < c && rank == root; i++)
				b[i] = word(root, 0, i);
			CHECK_RC(fc_bcast(world, b, c, FC_UINT32, root, T_MS),
				 0);
			for (size_t i = 0; i < c; i++)
				if (b[i] != word(root, 0, i)) {
					CHECK(0, "bcast %zu from %u: word %zu",
					      c, root, i);
					break;
				}
			free(b);
		}
	}
}

static void test_gather_scatter(void)
{
	size_t sizes[] = { 0, 1, 9, 20000 };

	for (size_t k = 0; k < 4; k++) {
		size_t c = sizes[k];
		uint32_t root = (uint32_t)k % size;
		uint32_t *mine = malloc(c * 4 + 4),
			 *all = malloc(c * 4 * size + 4);

		for (size_t i = 0; i < c; i++)
			mine[i] = word(rank, 0, i);
		CHECK_RC(fc_gather(world, mine, all, c, FC_UINT32, root, T_MS),
			 0);
		for (uint32_t r = 0; r < size && rank == root; r++)
			for (size_t i = 0; i < c; i++)
				if (all[r * c + i] != word(r, 0, i)) {
					CHECK(0, "gather %zu: rank %u word %zu",
					      c, r, i);
					r = size;
					break;
				}
		CHECK_RC(fc_allgather(world, mine, all, c, FC_UINT32, T_MS), 0);
		for (uint32_t r = 0; r < size; r++)
			for (size_t i = 0; i < c; i++)
				if (all[r * c + i] != word(r, 0, i)) {
					CHECK(0,
					      "allgather %zu: rank %u word %zu",
					      c, r, i);
					r = size;
					break;
				}
		/* allgather in place: our block is already there */
		memset(all, 0, c * 4 * size);
		memcpy(all + rank * c, mine, c * 4);
		CHECK_RC(fc_allgather(world, FC_IN_PLACE, all, c, FC_UINT32,
				      T_MS),
			 0);
		for (uint32_t r = 0; r < size && c; r++)
			CHECK(all[r * c + c - 1] == word(r, 0, c - 1),
			      "allgather in place %zu: rank %u", c, r);
		for (uint32_t r = 0; r < size && rank == root; r++)
			for (size_t i = 0; i < c; i++)
				all[r * c + i] = word(root, r, i);
		CHECK_RC(fc_scatter(world, all, mine, c, FC_UINT32, root, T_MS),
			 0);
		for (size_t i = 0; i < c; i++)
			if (mine[i] != word(root, rank, i)) {
				CHECK(0, "scatter %zu: word %zu", c, i);
				break;
			}
		free(mine);
		free(all);
	}
}

/* Uneven counts, some zero, blocks in reverse order with gaps. */
static size_t vcount(uint32_t from, uint32_t to, uint64_t seed)
{
	uint64_t x = mix(seed ^ from * 131u ^ to);

	return x % 4 == 0 ? 0 : (size_t)(x % 3000);
}

static void test_vector(void)
{
	size_t *cnt = calloc(size, sizeof(size_t)),
	       *dsp = calloc(size, sizeof(size_t));
	size_t *scnt = calloc(size, sizeof(size_t)),
	       *sdsp = calloc(size, sizeof(size_t));
	size_t total = 0, stotal = 0;
	uint32_t *in, *out, r;
	uint64_t seed = 77;

	/* alltoallv: from each rank vcount(r, rank) words, to each vcount(rank, r) */
	for (r = size; r-- > 0;) {
		cnt[r] = vcount(r, rank, seed);
		dsp[r] = total + 5;
		total += cnt[r] + 5;
		scnt[r] = vcount(rank, r, seed);
		sdsp[r] = stotal;
		stotal += scnt[r];
	}
	in = malloc(stotal * 4 + 4);
	out = calloc(total + 1, 4);
	for (r = 0; r < size; r++)
		for (size_t i = 0; i < scnt[r]; i++)
			in[sdsp[r] + i] = word(rank, r, i);
	CHECK_RC(fc_alltoallv(world, in, scnt, sdsp, out, cnt, dsp, FC_UINT32,
			      T_MS),
		 0);
	for (r = 0; r < size; r++)
		for (size_t i = 0; i < cnt[r]; i++)
			if (out[dsp[r] + i] != word(r, rank, i)) {
				CHECK(0, "alltoallv: from %u word %zu of %zu",
				      r, i, cnt[r]);
				break;
			}
	/* gatherv / allgatherv / scatterv: rank r gives vcount(r, 0) words */
	total = 0;
	for (r = size; r-- > 0;) {
		cnt[r] = vcount(r, 0, seed + 1);
		dsp[r] = total;
		total += cnt[r] + 3;
	}
	free(out);
	out = calloc(total + 1, 4);
	for (size_t i = 0; i < cnt[rank]; i++)
		in[i] = word(rank, 1, i);
	CHECK_RC(fc_allgatherv(world, in, cnt[rank], out, cnt, dsp, FC_UINT32,
			       T_MS),
		 0);
	for (r = 0; r < size; r++)
		for (size_t i = 0; i < cnt[r]; i++)
			if (out[dsp[r] + i] != word(r, 1, i)) {
				CHECK(0, "allgatherv: rank %u word %zu", r, i);
				break;
			}
	memset(out, 0, total * 4);
	CHECK_RC(fc_gatherv(world, in, cnt[rank], out, cnt, dsp, FC_UINT32,
			    size - 1, T_MS),
		 0);
	for (r = 0; r < size && rank == size - 1; r++)
		for (size_t i = 0; i < cnt[r]; i++)
			if (out[dsp[r] + i] != word(r, 1, i)) {
				CHECK(0, "gatherv: rank %u word %zu", r, i);
				break;
			}
	if (rank == 0)
		for (r = 0; r < size; r++)
			for (size_t i = 0; i < cnt[r]; i++)
				out[dsp[r] + i] = word(9, r, i);
	memset(in, 0, stotal * 4);
	CHECK_RC(fc_scatterv(world, out, cnt, dsp, in, cnt[rank], FC_UINT32, 0,
			     T_MS),
		 0);
	for (size_t i = 0; i < cnt[rank]; i++)
		if (in[i] != word(9, rank, i)) {
			CHECK(0, "scatterv: word %zu", i);
			break;
		}
	free(in);
	free(out);
	free(cnt);
	free(dsp);
	free(scnt);
	free(sdsp);
}

static void test_alltoall(void)
{
	size_t sizes[] = { 0, 1, 17, 70000 };

	for (size_t k = 0; k < (small ? 3u : 4u); k++) {
		size_t c = sizes[k];
		uint32_t *in = malloc(c * 4 * size + 4),
			 *out = malloc(c * 4 * size + 4);

		for (uint32_t r = 0; r < size; r++)
			for (size_t i = 0; i < c; i++)
				in[r * c + i] = word(rank, r, i);
		CHECK_RC(fc_alltoall(world, in, out, c, FC_UINT32, T_MS), 0);
		for (uint32_t r = 0; r < size; r++)
			for (size_t i = 0; i < c; i++)
				if (out[r * c + i] != word(r, rank, i)) {
					CHECK(0,
					      "alltoall %zu: from %u word %zu",
					      c, r, i);
					r = size;
					break;
				}
		CHECK_RC(fc_alltoall(world, FC_IN_PLACE, in, c, FC_UINT32,
				     T_MS),
			 0);
		CHECK(!memcmp(in, out, c * 4 * size), "alltoall in place %zu",
		      c);
		free(in);
		free(out);
	}
	CHECK_RC(fc_barrier_group(world, T_MS), 0);
}

/* ---- Groups and non-blocking collectives ---- */

static void test_groups(void)
{
	struct fc_group *half = NULL, *dup = NULL, *none = (void *)1;
	struct fc_coll_req *r1, *r2, *r3;
	int64_t a = rank, b = 0, c = 0, d[2] = { 0, 0 };
	uint32_t w;
	int n;

	/* split by parity, ranked backwards */
	CHECK_RC(fc_group_split(world, (int)(rank % 2), -(int)rank, T_MS,
				&half),
		 0);
	if (!half)
		return;
	n = fc_group_size(half);
	CHECK(n == (int)((size + 1 - rank % 2) / 2), "split size %d", n);
	CHECK(fc_group_rank(half) == n - 1 - (int)(rank / 2), "split rank %d",
	      fc_group_rank(half));
	CHECK_RC(fc_group_world_rank(half, 0, &w), 0);
	CHECK(w % 2 == rank % 2 && w >= rank, "member 0 is world rank %u", w);
	CHECK_RC(fc_group_dup(world, T_MS, &dup), 0);
	/* collectives on three groups in flight at once */
	CHECK_RC(fc_iallreduce(half, &a, &b, 1, FC_INT64, FC_SUM, &r1), 0);
	CHECK_RC(fc_iallreduce(dup, &a, &c, 1, FC_INT64, FC_MAX, &r2), 0);
	CHECK_RC(fc_iallgather(world, &a, NULL, 0, FC_INT64, &r3), 0);
	CHECK_RC(fc_coll_wait(r2, T_MS), 0);
	CHECK_RC(fc_coll_wait(r3, T_MS), 0);
	CHECK_RC(fc_coll_wait(r1, T_MS), 0);
	{
		int64_t want = 0;

		for (uint32_t r = rank % 2; r < size; r += 2)
			want += r;
		CHECK(b == want,
		      "sum over the parity group %" PRId64 ", want %" PRId64, b,
		      want);
	}
	CHECK(c == (int64_t)size - 1, "max over dup %" PRId64, c);
	/* several outstanding on one group: they run in order */
	if (rank == size - 1)
		d[1] = 42;
	CHECK_RC(fc_iallreduce(dup, &a, &d[0], 1, FC_INT64, FC_MIN, &r1), 0);
	CHECK_RC(fc_ibcast(dup, &d[1], 1, FC_INT64, size - 1, &r2), 0);
	CHECK_RC(fc_coll_wait(r2, T_MS), 0); /* the later one first */
	CHECK_RC(fc_coll_wait(r1, T_MS), 0);
	CHECK(d[0] == 0 && d[1] == 42, "min %" PRId64 ", bcast %" PRId64, d[0],
	      d[1]);
	CHECK_RC(fc_coll_test(r1), -EINVAL); /* a freed request */
	/* a rank that joins no group gets NULL */
	CHECK_RC(fc_group_split(world, rank == 0 ? FC_GROUP_NONE : 3, 0, T_MS,
				&none),
		 0);
	CHECK(rank == 0 ? none == NULL : fc_group_size(none) == (int)size - 1,
	      "split with FC_GROUP_NONE");
	if (none)
		CHECK_RC(fc_group_free(none), 0);
	CHECK_RC(fc_group_free(half), 0);
	CHECK_RC(fc_group_free(dup), 0);
	CHECK_RC(fc_group_free(dup), -EINVAL);
}

/* ---- Forced algorithms ---- */

/* The collective @kind's algorithm on @g, forced or not, for 1 MiB. */
static bool runs_at(struct fc_group *g, const char *kind, size_t bytes,
		    const char *algo)
{
	const char *name = fc_coll_algo_name(g, kind, bytes);

	return name && !strcmp(name, algo);
}

static bool runs(struct fc_group *g, const char *kind, const char *algo)
{
	return runs_at(g, kind, 1 << 20, algo);
}

/*
 * Every algorithm FPGACOMM_COLL_ALGO forces is the one that runs on the
 * world. Where it forces grid (dimension by dimension on a torus or
 * mesh): also on the world ranked backwards (a row's blocks are then
 * not consecutive in an allgather's buffer), and a group that covers
 * half the boards falls back to another algorithm, with right results.
 */
static void test_forced_algos(void)
{
	const char *env = getenv("FPGACOMM_COLL_ALGO");
	struct fc_group *rev = NULL, *half = NULL;
	char buf[256], *item, *save = NULL;
	int64_t in[3], sum[3], *all;

	if (!env)
		return;
	snprintf(buf, sizeof(buf), "%s", env);
	for (item = strtok_r(buf, ",", &save); item;
	     item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '=');

		if (!eq)
			continue;
		*eq = '\0';
		CHECK(runs(world, item, eq + 1), "%s: %s runs, %s forced", item,
		      fc_coll_algo_name(world, item, 1 << 20), eq + 1);
	}
	if (!strstr(env, "allgather=grid") || size < 4)
		return;
	all = calloc(size * 3, sizeof(*all));
	CHECK_RC(fc_group_split(world, 0, -(int)rank, T_MS, &rev), 0);
	CHECK_RC(fc_group_split(world, (int)(rank % 2), 0, T_MS, &half), 0);
	if (!all || !rev || !half)
		goto out;
	CHECK(runs(rev, "allgather", "grid") && runs(rev, "allreduce", "grid"),
	      "grid on the world ranked backwards");
	CHECK(!runs(half, "allgather", "grid") &&
		      !runs(half, "allreduce", "grid"),
	      "grid on half of the boards");
	for (int i = 0; i < 3; i++)
		in[i] = (int64_t)rank * 10 + i;
	CHECK_RC(fc_allgather(rev, in, all, 3, FC_INT64, T_MS), 0);
	for (uint32_t m = 0; m < size; m++)
		for (int i = 0; i < 3; i++)
			CHECK(all[m * 3 + i] ==
				      (int64_t)(size - 1 - m) * 10 + i,
			      "allgather backwards: member %u [%d] = %" PRId64,
			      m, i, all[m * 3 + i]);
	CHECK_RC(fc_allreduce(rev, in, sum, 3, FC_INT64, FC_SUM, T_MS), 0);
	for (int i = 0; i < 3; i++)
		CHECK(sum[i] == (int64_t)(size * (size - 1) / 2) * 10 +
					(int64_t)size * i,
		      "allreduce backwards [%d] = %" PRId64, i, sum[i]);
	/* a broadcast on it, from each member */
	for (uint32_t root = 0; root < size; root++) {
		int64_t v[2] = { 0, 0 };

		if ((uint32_t)fc_group_rank(rev) == root) {
			v[0] = 7000 + root;
			v[1] = -(int64_t)root;
		}
		CHECK_RC(fc_bcast(rev, v, 2, FC_INT64, root, T_MS), 0);
		CHECK(v[0] == 7000 + (int64_t)root && v[1] == -(int64_t)root,
		      "bcast backwards from %u: %" PRId64 " %" PRId64, root,
		      v[0], v[1]);
	}
	/* reduce-scatter on it: member m's block holds m's sums */
	{
		int64_t *rs = calloc(size * 3, sizeof(*rs));
		uint32_t me = (uint32_t)fc_group_rank(rev);

		if (rs) {
			for (uint32_t m = 0; m < size; m++)
				for (int i = 0; i < 3; i++)
					rs[m * 3 + i] = (int64_t)rank * 100 +
							m * 10 + i;
			CHECK_RC(fc_reduce_scatter(rev, rs, sum, 3, FC_INT64,
						   FC_SUM, T_MS),
				 0);
			for (int i = 0; i < 3; i++)
				CHECK(sum[i] == (int64_t)(size * (size - 1) /
							  2) * 100 +
							(int64_t)size *
								(me * 10 + i),
				      "reduce_scatter backwards [%d] = %" PRId64,
				      i, sum[i]);
			free(rs);
		}
	}
	CHECK_RC(fc_allreduce(half, in, sum, 3, FC_INT64, FC_SUM, T_MS), 0);
	{
		int64_t want = 0;

		for (uint32_t r = rank % 2; r < size; r += 2)
			want += (int64_t)r * 10;
		CHECK(sum[0] == want,
		      "allreduce on half %" PRId64 ", want %" PRId64, sum[0],
		      want);
	}
out:
	if (rev)
		CHECK_RC(fc_group_free(rev), 0);
	if (half)
		CHECK_RC(fc_group_free(half), 0);
	free(all);
}

/*
 * The default choice on a torus the world covers: bcast from 4 MiB and
 * reduce-scatter from 1 MiB of input go dimension by dimension, smaller
 * ones not (docs/collectives.md, the choice table).
 */
static void test_default_algos(void)
{
	struct fc_world w;
	unsigned int nx = 0, ny = 0;

	if (getenv("FPGACOMM_COLL_ALGO") || fc_world_query(dev, &w) ||
	    sscanf(w.topology, "torus:%ux%u", &nx, &ny) != 2 || nx < 2 ||
	    ny < 2)
		return;
	CHECK(runs_at(world, "bcast", 4 << 20, "grid") &&
		      !runs_at(world, "bcast", 1 << 16, "grid"),
	      "bcast on %s: grid from 4 MiB only", w.topology);
	CHECK(runs_at(world, "reduce_scatter", (1 << 20) / size, "grid") &&
		      !runs_at(world, "reduce_scatter", 1024, "grid"),
	      "reduce_scatter on %s: grid from 1 MiB only", w.topology);
}

/* ---- Errors ---- */

static void test_bad_args(void)
{
	int32_t x = 1, y;
	size_t cnt[64] = { 0 }, dsp[64] = { 0 };

	CHECK_RC(fc_allreduce(NULL, &x, &y, 1, FC_INT32, FC_SUM, T_MS),
		 -EINVAL);
	CHECK_RC(fc_allreduce(world, NULL, &y, 1, FC_INT32, FC_SUM, T_MS),
		 -EINVAL);
	CHECK_RC(fc_allreduce(world, &x, &y, 1, FC_DTYPE_COUNT, FC_SUM, T_MS),
		 -EINVAL);
	CHECK_RC(fc_allreduce(world, &x, &y, 1, FC_INT32, FC_REDOP_COUNT, T_MS),
		 -EINVAL);
	CHECK_RC(fc_allreduce(world, &x, &y, 1, FC_FLOAT32, FC_BXOR, T_MS),
		 -EINVAL);
	CHECK_RC(fc_allreduce(world, &x, &y, SIZE_MAX / 2, FC_INT32, FC_SUM,
			      T_MS),
		 -EOVERFLOW);
	CHECK_RC(fc_bcast(world, &x, 1, FC_INT32, size, T_MS), -EINVAL);
	CHECK_RC(fc_bcast(world, NULL, 1, FC_INT32, 0, T_MS), -EINVAL);
	CHECK_RC(fc_scatter(world, FC_IN_PLACE, &y, 1, FC_INT32, 0, T_MS),
		 -EINVAL);
	CHECK_RC(fc_allgatherv(world, &x, 2, &y, cnt, dsp, FC_INT32, T_MS),
		 -EINVAL); /* sendcount is not counts[rank] */
	CHECK_RC(fc_alltoallv(world, &x, NULL, dsp, &y, cnt, dsp, FC_INT32,
			      T_MS),
		 -EINVAL);
	CHECK_RC(fc_iallreduce(world, &x, &y, 1, FC_INT32, FC_SUM, NULL),
		 -EINVAL);
	CHECK_RC(fc_coll_wait(NULL, 0), -EINVAL);
	CHECK_RC(fc_group_split(world, -2, 0, T_MS, &(struct fc_group *){ 0 }),
		 -EINVAL);
	/* none of it counted: the group still agrees */
	x = (int32_t)rank;
	CHECK_RC(fc_allreduce(world, &x, &y, 1, FC_INT32, FC_SUM, T_MS), 0);
	CHECK(y == (int32_t)(size * (size - 1) / 2), "sum after bad args %d",
	      y);
}

/*
 * Members that disagree are all told: by the collective itself where they
 * see it, else (a leaf that finished its part) by the next collective on
 * the group at the latest. Each case on a group of its own.
 */
static void expect_mismatch(const char *what, struct fc_group *g, int rc)
{
	if (rc == 0)
		rc = fc_barrier_group(g, T_MS);
	CHECK(rc == -EBADMSG, "%s: %d (%s)", what, rc, fc_strerror(rc));
	CHECK_RC(fc_barrier_group(g, T_MS), -EBADMSG); /* stays broken */
	CHECK_RC(fc_group_free(g), 0);
}

static void test_mismatch(void)
{
	struct fc_group *g;
	int32_t buf[8] = { 0 }, out[2 * 64]; /* allgather: 2 per rank */

	if (size < 2)
		return;
	CHECK_RC(fc_group_dup(world, T_MS, &g), 0);
	expect_mismatch("count", g,
			fc_allreduce(g, buf, out, rank == 0 ? 5 : 6, FC_INT32,
				     FC_SUM, T_MS));
	CHECK_RC(fc_group_dup(world, T_MS, &g), 0);
	expect_mismatch("collective", g,
			rank == size - 1 ?
				fc_bcast(g, buf, 4, FC_INT32, 0, T_MS) :
				fc_allreduce(g, buf, out, 4, FC_INT32, FC_SUM,
					     T_MS));
	CHECK_RC(fc_group_dup(world, T_MS, &g), 0);
	expect_mismatch("root", g,
			fc_reduce(g, buf, out, 4, FC_INT32, FC_SUM,
				  rank == 0 ? 0 : 1, T_MS));
	/* a binomial bcast's first message from the root stands in for the
	 * root's check: every pattern of roots must still meet */
	for (size_t c = 0; c <= 4; c += 4) {
		CHECK_RC(fc_group_dup(world, T_MS, &g), 0);
		expect_mismatch("bcast root", g,
				fc_bcast(g, buf, c, FC_INT32, rank == 0 ? 0 : 1,
					 T_MS));
		CHECK_RC(fc_group_dup(world, T_MS, &g), 0);
		expect_mismatch("bcast, each its own root", g,
				fc_bcast(g, buf, c, FC_INT32, rank, T_MS));
		CHECK_RC(fc_group_dup(world, T_MS, &g), 0);
		expect_mismatch("bcast, each its left's root", g,
				fc_bcast(g, buf, c, FC_INT32,
					 (rank + size - 1) % size, T_MS));
		CHECK_RC(fc_group_dup(world, T_MS, &g), 0);
		expect_mismatch("bcast, each its right's root", g,
				fc_bcast(g, buf, c, FC_INT32, (rank + 1) % size,
					 T_MS));
	}
	CHECK_RC(fc_group_dup(world, T_MS, &g), 0);
	expect_mismatch("type", g,
			fc_allgather(g, buf, out, 2,
				     rank == 0 ? FC_INT32 : FC_FLOAT32, T_MS));
	/* the world is untouched */
	CHECK_RC(fc_barrier_group(world, T_MS), 0);
}

/*
 * Boards outlive the jobs that use them: what an earlier job left unread
 * in a group's channels must not be taken for this job's messages. Here
 * the earlier job is this process before it closes and reopens its board:
 * every rank but 0 starts a second barrier on a dup of the world and
 * gives up on it (its messages, and the abort that tells the others, stay unread
 * at rank 0's board); after the reopen, a dup made the same way gets the
 * same port, and its collectives must work.
 */
/*
 * Close the board and open it again as the next job would: only once
 * every rank has closed (a message that reaches a board's ring before its
 * process closes dies with it, and jobs on one set of boards do not
 * overlap). The ranks meet through files, outside the fabric.
 */
static const char *meet_dir(void)
{
	const char *d = getenv("TMPDIR");

	return d && *d ? d : "/tmp";
}

/* Names the ranks' meeting files apart from other runs'. */
static const char *meet_tag(void)
{
	const char *t = getenv("FPGACOMM_COLL_MEET");

	return t ? t : getenv("FPGACOMM_CLUSTER");
}

/* Wait until every rank has passed point @phase (files in $TMPDIR). */
static void meet(int phase)
{
	const char *cl = meet_tag();
	char path[256];
	uint32_t r;
	int fd;

	snprintf(path, sizeof(path), "%s/tc-%s-%d-%u", meet_dir(),
		 cl ? cl : "x", phase, rank);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	if (fd >= 0)
		close(fd);
	for (r = 0; r < size; r++) {
		snprintf(path, sizeof(path), "%s/tc-%s-%d-%u", meet_dir(),
			 cl ? cl : "x", phase, r);
		for (int i = 0; i < 6000 && access(path, F_OK); i++)
			usleep(10000);
	}
}

static void meet_done(int phase)
{
	const char *cl = meet_tag();
	char path[256];

	snprintf(path, sizeof(path), "%s/tc-%s-%d-%u", meet_dir(),
		 cl ? cl : "x", phase, rank);
	unlink(path);
}

/*
 * Close the board and open it again as the next job would: jobs on one
 * set of boards do not overlap, so every rank closes before any opens
 * again (a message that reaches a board's ring before its process closes
 * dies with it), and every rank has opened before any sends (a board
 * whose process left is down). The ranks meet through files, outside the
 * fabric.
 */
static void reopen(int phase)
{
	CHECK_RC(fc_group_free(world), 0);
	CHECK_RC(fc_close(dev), 0);
	meet(2 * phase);
	CHECK_RC(fc_open(&dev, NULL), 0);
	CHECK_RC(fc_group_world(dev, &world), 0);
	meet(2 * phase + 1);
	CHECK_RC(fc_barrier_group(world, T_MS), 0);
	meet_done(2 * phase);
	meet_done(2 * phase + 1);
}

static void test_earlier_job(void)
{
	struct fc_group *g;
	struct fc_coll_req *req;
	int32_t x = (int32_t)rank, y = 0;

	if (size < 2)
		return;
	/* an earlier job: its first dup takes the first free group port */
	reopen(1);
	CHECK_RC(fc_group_dup(world, T_MS, &g), 0);
	CHECK_RC(fc_barrier_group(g, T_MS), 0); /* its handshake done */
	if (rank != 0) {
		CHECK_RC(fc_ibarrier_group(g, &req), 0);
		/* another rank's cancel may have broken it already */
		int rc = fc_coll_test(req);

		CHECK(rc == -EINPROGRESS || rc == -ECANCELED, "ibarrier: %d",
		      rc);
		if (rc == -EINPROGRESS)
			CHECK_RC(fc_coll_cancel(req), 0);
	}
	CHECK_RC(fc_barrier_group(world, T_MS), 0);
	CHECK_RC(fc_group_free(g), 0);
	/* the next job: the same dup on the same port */
	reopen(2);
	CHECK_RC(fc_group_dup(world, T_MS, &g), 0);
	CHECK_RC(fc_allreduce(g, &x, &y, 1, FC_INT32, FC_SUM, T_MS), 0);
	CHECK(y == (int32_t)(size * (size - 1) / 2), "sum in the next job %d",
	      y);
	CHECK_RC(fc_group_free(g), 0);
}

/* The last rank dies in the middle of an allreduce; the others must hear. */
static void test_rank_dies(void)
{
	size_t c = 1 << 16;
	float *in = calloc(c, 4), *out = calloc(c, 4);
	int rc;

	if (size < 2)
		return;
	CHECK_RC(fc_barrier_group(world, T_MS), 0);
	if (rank == size - 1)
		_exit(0);
	rc = fc_allreduce(world, in, out, c, FC_FLOAT32, FC_SUM, 30000);
	CHECK(rc == -EHOSTDOWN, "allreduce with a dead rank: %d (%s)", rc,
	      fc_strerror(rc));
	free(in);
	free(out);
}

/* FPGACOMM_COLL_TEST: "small" (the driver pair), "dies" (a rank dies),
 * "earlier" (only the close-and-reopen case, after a barrier); unset: all
 * but "dies". */
static int run_rank(void)
{
	const char *only = getenv("FPGACOMM_COLL_TEST");

	full = getenv("FPGACOMM_TEST_FULL") &&
	       atoi(getenv("FPGACOMM_TEST_FULL"));
	small = only && !strcmp(only, "small");
	if (harness_rank_world(&dev, &world, &rank, &size))
		return 1;
	/*
	 * Through the driver, a message sent to a board before its process
	 * has opened it can be lost (docs/collectives.md): start once both
	 * have.
	 */
	if (small)
		meet(100); /* run_pair removes the files */
	if (only && !strcmp(only, "dies")) {
		test_rank_dies();
	} else if (only && !strcmp(only, "reductions")) {
		CHECK(runs(world, "allreduce", "recursive_doubling"),
		      "allreduce runs %s",
		      fc_coll_algo_name(world, "allreduce", 1 << 20));
		test_reductions();
		test_bitwise_identical();
	} else if (only && !strcmp(only, "earlier")) {
		/* every board met before the first one closes */
		CHECK_RC(fc_barrier_group(world, T_MS), 0);
		test_earlier_job();
	} else {
		test_groups();
		test_forced_algos();
		test_default_algos();
		test_reductions();
		test_bitwise_identical();
		test_bcast();
		test_gather_scatter();
		test_vector();
		test_alltoall();
		test_bad_args();
		test_mismatch();
		test_earlier_job();
	}
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
	const char *topo, *algo, *faults, *test;
	bool full_only;
	const char *pipeline; /* FPGACOMM_COLL_PIPELINE: bytes a ring piece */
};

static const struct shape shapes[] = {
	{ 1, NULL, NULL, NULL, NULL, false, NULL },
	{ 2, NULL, NULL, NULL, NULL, false, NULL },
	{ 3, "ring:3",
	  "allreduce=ring,bcast=scatter_allgather,alltoall=pairwise,"
	  "gather=binomial,scatter=binomial",
	  NULL, NULL, false, "1000" },
	{ 4, "torus:2x2",
	  "allreduce=ring,allgather=recursive_doubling,"
	  "bcast=scatter_allgather,gather=linear,scatter=linear",
	  NULL, NULL, false, NULL },
	{ 4, "full:4",
	  "allreduce=recursive_doubling,allgather=ring,"
	  "alltoall=direct,bcast=binomial",
	  "drop=0.01,corrupt=0.01", NULL, false, NULL },
	{ 5, "mesh:5x1", "allreduce=rabenseifner", NULL, NULL, false, NULL },
	{ 8, "full:8", "allreduce=ring", NULL, NULL, false, NULL },
	{ 16, "torus:4x4", NULL, NULL, NULL, false, NULL },
	{ 8, "torus:4x2",
	  "allreduce=grid,allgather=grid,reduce_scatter=grid,bcast=grid", NULL,
	  NULL, false, NULL },
	{ 6, "mesh:3x2",
	  "allreduce=grid,allgather=grid,reduce_scatter=grid,bcast=grid",
	  "drop=0.01", NULL, true, NULL },
	{ 5, "mesh:5x1", "allreduce=ring,alltoall=direct,allgather=ring", NULL,
	  NULL, true, NULL },
	{ 8, "ring:8",
	  "alltoall=pairwise,bcast=scatter_allgather,"
	  "allgather=recursive_doubling",
	  NULL, NULL, true, NULL },
	{ 16, "torus:4x4",
	  "allreduce=recursive_doubling,allgather=ring,"
	  "bcast=binomial",
	  "drop=0.01,corrupt=0.01", NULL, true, NULL },
	{ 3, "full:3", NULL, NULL, "dies", false, NULL },
	/* recursive doubling at every count on rank counts that fold */
	{ 3, "full:3", "allreduce=recursive_doubling", NULL, "reductions",
	  false, NULL },
	{ 5, "full:5", "allreduce=recursive_doubling", NULL, "reductions",
	  false, NULL },
	{ 6, "full:6", "allreduce=recursive_doubling", NULL, "reductions",
	  false, NULL },
	{ 7, "ring:7", "allreduce=recursive_doubling", NULL, "reductions",
	  false, NULL },
};

static int launch(const char *run, const char *self, const struct shape *s)
{
	const char *const env[] = { "FPGACOMM_COLL_ALGO",
				    s->algo,
				    "FPGACOMM_COLL_TEST",
				    s->test,
				    "FPGACOMM_COLL_PIPELINE",
				    s->pipeline,
				    NULL };

	printf("== %d ranks, %s%s%s%s%s%s%s\n", s->ranks,
	       s->topo ? s->topo : "default",
	       s->algo ? ", FPGACOMM_COLL_ALGO=" : "", s->algo ? s->algo : "",
	       s->faults ? ", faults " : "", s->faults ? s->faults : "",
	       s->pipeline ? ", FPGACOMM_COLL_PIPELINE=" : "",
	       s->pipeline ? s->pipeline : "");
	return harness_launch_ranks(run, self, s->ranks, s->topo, s->faults,
				    env);
}

/*
 * FPGACOMM_TEST_PAIR="DEV0 DEV1": two boards of one cluster behind the
 * kernel driver (the VM of make check), one rank per board, each in a
 * process of its own. Messages through the driver go as chains of pinned
 * user pages (no rendezvous there yet), so the sizes stay small.
 */
static int run_pair(const char *pair)
{
	char dev_name[2][128], tag[32], path[300];
	int st, worst = 0;
	pid_t pid[2];

	if (sscanf(pair, "%127s %127s", dev_name[0], dev_name[1]) != 2) {
		fprintf(stderr, "FPGACOMM_TEST_PAIR: two device names\n");
		return 2;
	}
	printf("== 2 ranks on %s and %s\n", dev_name[0], dev_name[1]);
	fflush(stdout);
	snprintf(tag, sizeof(tag), "p%ld", (long)getpid());
	setenv("FPGACOMM_COLL_MEET", tag, 1);
	for (int i = 0; i < 2; i++) {
		pid[i] = fork();
		if (pid[i] < 0)
			return 1;
		if (pid[i] == 0) {
			setenv("FPGACOMM_DEVICE", dev_name[i], 1);
			setenv("FPGACOMM_RANK", i ? "1" : "0", 1);
			setenv("FPGACOMM_COLL_TEST", "small", 1);
			_exit(run_rank());
		}
	}
	for (int i = 0; i < 2; i++) {
		if (waitpid(pid[i], &st, 0) < 0)
			return 1;
		st = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		worst = st > worst ? st : worst;
	}
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/tc-%s-100-%d", meet_dir(), tag,
			 i);
		unlink(path);
	}
	printf("== status %d\n", worst);
	return worst;
}

int main(void)
{
	char self[PATH_MAX], run[PATH_MAX + 32];
	bool want_full = getenv("FPGACOMM_TEST_FULL") &&
			 atoi(getenv("FPGACOMM_TEST_FULL"));
	int worst = 0, rc;

	const char *pair = getenv("FPGACOMM_TEST_PAIR");

	if (getenv("FPGACOMM_RANK"))
		return run_rank();
	printf("test_collectives: groups and collectives across ranks\n");
	if (pair && *pair)
		return run_pair(pair);
	rc = harness_find_run(self, sizeof(self), run, sizeof(run));
	if (rc)
		return rc;
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		if (shapes[i].full_only && !want_full)
			continue;
		rc = launch(run, self, &shapes[i]);
		worst = rc > worst ? rc : worst;
	}
	return worst;
}
