// SPDX-License-Identifier: MIT
/*
 * test_gpu_coll: channels and collectives on CUDA device memory, as
 * ranks of an emulated cluster. Every collective (and its in-place form)
 * on device buffers at counts 0, 1, 61, 1000 and a large one, for int32,
 * float32 and float64 and several operators, device and host buffers
 * mixed, checked against references each rank computes, with the bytes
 * past each result untouched; a non-blocking allreduce; a device buffer
 * shorter than the call needs (-EFAULT, nothing sent, the group still in
 * step). Channel messages host -> GPU, GPU -> host, GPU -> GPU (and host
 * -> host) of 1 B, 4 KiB, 64 KiB and 1 MiB + 3 through every send and
 * receive call, a send of 0 bytes refused, a GPU buffer past its
 * allocation refused before anything is sent. Tagged messages (fc_tag_*)
 * in the same four pairs, of 1 B, 4 KiB and 16 MiB + 5 (in pieces), and
 * a device receive too short for its message (-EMSGSIZE, its first bytes
 * there).
 *
 * Run alone, it starts itself as 2 ranks (full:2) and as 4 ranks on a 2x2
 * torus (messages to the diagonal, two hops away). Where no CUDA driver
 * loads it re-runs itself against tests/fake_libcuda.c with
 * FAKE_CUDA_GUARD=1: device pointers the CPU cannot touch, so that a
 * library reading device memory as host memory crashes the test.
 */
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fpgacomm/fpgacomm.h>

#include "cuda_test.h"
#include "launch.h"

#define EXIT_SKIP 77
#define T_MS	  60000
#define TAIL	  64 /* bytes past each device result, checked untouched */
#define PORT	  7

static struct fc_dev *dev;
static struct fc_group *world;
static uint32_t rank, size;
static int failures;
static struct cu cu;

/* ---- Buffers: device (through the driver API) or host ---- */

struct buf {
	bool gpu;
	size_t len; /* usable bytes; TAIL more follow */
	void *p;    /* what the library is given */
	uint8_t *shadow;
};

static void buf_alloc(struct buf *b, bool gpu, size_t len)
{
	cu_ptr dp;

	b->gpu = gpu;
	b->len = len;
	b->shadow = calloc(1, len + TAIL);
	if (gpu) {
		if (cu.alloc(&dp, len + TAIL)) {
			fprintf(stderr, "rank %u: cuMemAlloc %zu\n", rank, len);
			exit(1);
		}
		b->p = (void *)(uintptr_t)dp;
	} else {
		b->p = malloc(len + TAIL);
	}
	if (!b->shadow || !b->p) {
		fprintf(stderr, "rank %u: out of memory\n", rank);
		exit(1);
	}
}

static void buf_free(struct buf *b)
{
	if (b->gpu)
		cu.free((cu_ptr)(uintptr_t)b->p);
	else
		free(b->p);
	free(b->shadow);
}

/* shadow -> buffer, all of it (the tail too) */
static void buf_push(struct buf *b)
{
	if (b->gpu)
		CHECK(!cu.htod((cu_ptr)(uintptr_t)b->p, b->shadow,
			       b->len + TAIL),
		      "cuMemcpyHtoD");
	else
		memcpy(b->p, b->shadow, b->len + TAIL);
}

static void buf_pull(struct buf *b)
{
	if (b->gpu)
		CHECK(!cu.dtoh(b->shadow, (cu_ptr)(uintptr_t)b->p,
			       b->len + TAIL),
		      "cuMemcpyDtoH");
	else
		memcpy(b->shadow, b->p, b->len + TAIL);
}

/* ---- Values every rank can recompute ---- */

static const enum fc_dtype types[] = { FC_INT32, FC_FLOAT32, FC_FLOAT64 };
static const char *const tnames[] = { "int32", "float32", "float64" };

static long value(uint32_t r, size_t i, unsigned int seed)
{
	return (long)((r * 7 + i * 3 + seed) % 11) - 5;
}

static void store(void *p, size_t i, enum fc_dtype t, double v)
{
	if (t == FC_INT32)
		((int32_t *)p)[i] = (int32_t)v;
	else if (t == FC_FLOAT32)
		((float *)p)[i] = (float)v;
	else
		((double *)p)[i] = v;
}

static double load(const void *p, size_t i, enum fc_dtype t)
{
	if (t == FC_INT32)
		return ((const int32_t *)p)[i];
	if (t == FC_FLOAT32)
		return ((const float *)p)[i];
	return ((const double *)p)[i];
}

static double combine(enum fc_redop op, double a, double b)
{
	switch (op) {
	case FC_SUM:
		return a + b;
	case FC_MIN:
		return a < b ? a : b;
	default:
		return a > b ? a : b;
	}
}

/* ranks first..last of element @i reduced */
static double reduced(enum fc_redop op, uint32_t first, uint32_t last, size_t i,
		      unsigned int seed)
{
	double acc = (double)value(first, i, seed);

	for (uint32_t r = first + 1; r <= last; r++)
		acc = combine(op, acc, (double)value(r, i, seed));
	return acc;
}

static void fill(struct buf *b, size_t from, size_t n, enum fc_dtype t,
		 uint32_t r, size_t i0, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		store(b->shadow, from + i, t, (double)value(r, i0 + i, seed));
}

/* Sentinel bytes: the whole shadow, so gaps and tails can be checked. */
static void sentinel(struct buf *b)
{
	memset(b->shadow, 0xA5, b->len + TAIL);
}

static void check_tail(struct buf *b, size_t from, const char *what)
{
	for (size_t i = from; i < b->len + TAIL; i++) {
		if (b->shadow[i] != 0xA5) {
			CHECK(0, "%s: byte %zu past the result changed", what,
			      i);
			return;
		}
	}
}

/* Element i of @b against @want; reports the first bad one. */
static bool expect(const struct buf *b, size_t i, enum fc_dtype t, double want,
		   const char *what, size_t count)
{
	double got = load(b->shadow, i, t);

	if (got == want)
		return true;
	CHECK(0, "%s (count %zu): element %zu = %g, expected %g", what, count,
	      i, got, want);
	return false;
}

/* ---- Collectives ---- */

#define NCOUNTS 5
static const size_t counts_small[NCOUNTS] = { 0, 1, 61, 1000, 200003 };
static const size_t counts_blocks[NCOUNTS] = { 0, 1, 61, 1000, 50001 };

/* Which buffers are on the GPU: both, only the receive one, only the
 * send one (cycled through the counts). */
static void kinds(unsigned int k, bool *sg, bool *rg)
{
	*sg = k % 3 != 1;
	*rg = k % 3 != 2;
}

enum red_kind {
	RK_ALLREDUCE,
	RK_REDUCE,
	RK_SCAN,
	RK_EXSCAN,
	RK_RSCATTER
};
static const char *const rk_names[] = { "allreduce", "reduce", "scan", "exscan",
					"reduce_scatter" };

static int call_red(enum red_kind k, const void *s, void *r, size_t count,
		    enum fc_dtype t, enum fc_redop op, uint32_t root)
{
	switch (k) {
	case RK_ALLREDUCE:
		return fc_allreduce(world, s, r, count, t, op, T_MS);
	case RK_REDUCE:
		return fc_reduce(world, s, r, count, t, op, root, T_MS);
	case RK_SCAN:
		return fc_scan(world, s, r, count, t, op, T_MS);
	case RK_EXSCAN:
		return fc_exscan(world, s, r, count, t, op, T_MS);
	default:
		return fc_reduce_scatter(world, s, r, count, t, op, T_MS);
	}
}

static void one_reduction(enum red_kind k, enum fc_dtype t, enum fc_redop op,
			  size_t count, unsigned int ki, bool in_place,
			  unsigned int seed)
{
	size_t es = (size_t)fc_dtype_size(t);
	size_t in = k == RK_RSCATTER ? count * size : count; /* input elems */
	size_t out = in_place ? in : count; /* what recvbuf holds */
	uint32_t root = size - 1;
	bool at_root = rank == root, sg, rg, writes;
	struct buf sb, rb;
	char what[96];
	size_t i, first;

	kinds(ki, &sg, &rg);
	if (in_place)
		rg = true;
	snprintf(what, sizeof(what), "%s %s op %d%s send %s recv %s",
		 rk_names[k],
		 tnames[t == FC_INT32	? 0 :
			t == FC_FLOAT32 ? 1 :
					  2],
		 op, in_place ? " in place" : "", sg ? "gpu" : "host",
		 rg ? "gpu" : "host");
	if (k == RK_REDUCE && in_place && !at_root)
		in_place = false; /* only the root's is in place */
	buf_alloc(&sb, sg, in * es);
	buf_alloc(&rb, rg, out * es);
	sentinel(&sb);
	sentinel(&rb);
	fill(in_place ? &rb : &sb, 0, in, t, rank, 0, seed);
	buf_push(&sb);
	buf_push(&rb);
	CHECK_RC(call_red(k, in_place ? FC_IN_PLACE : sb.p, rb.p, count, t, op,
			  root),
		 0);
	buf_pull(&rb);
	writes = !(k == RK_REDUCE && !at_root) && !(k == RK_EXSCAN && !rank);
	first = k == RK_RSCATTER ? rank * count : 0;
	for (i = 0; writes && i < count; i++) {
		double want;

		if (k == RK_SCAN)
			want = reduced(op, 0, rank, i, seed);
		else if (k == RK_EXSCAN)
			want = reduced(op, 0, rank - 1, i, seed);
		else
			want = reduced(op, 0, size - 1, first + i, seed);
		if (!expect(&rb, i, t, want, what, count))
			break;
	}
	if (!in_place && !writes)
		check_tail(&rb, 0, what); /* not written at all */
	else if (!in_place)
		check_tail(&rb, count * es, what);
	else
		check_tail(&rb, in * es, what);
	buf_free(&sb);
	buf_free(&rb);
}

static void test_reductions(void)
{
	static const enum fc_redop ops[] = { FC_SUM, FC_MAX, FC_MIN };
	unsigned int seed = 1;

	for (int k = RK_ALLREDUCE; k <= RK_RSCATTER; k++)
		for (unsigned int ti = 0; ti < 3; ti++)
			for (unsigned int c = 0; c < NCOUNTS; c++) {
				size_t n = k == RK_RSCATTER ? counts_blocks[c] :
							      counts_small[c];
				enum fc_redop op = ops[(ti + c) % 3];

				one_reduction(k, types[ti], op, n, c + ti,
					      false, seed++);
				one_reduction(k, types[ti], op, n, c + ti, true,
					      seed++);
			}
}

static void test_bcast(void)
{
	for (unsigned int ti = 0; ti < 3; ti++) {
		for (unsigned int c = 0; c < NCOUNTS; c++) {
			enum fc_dtype t = types[ti];
			size_t n = counts_small[c],
			       es = (size_t)fc_dtype_size(t);
			uint32_t root = (c + ti) % size;
			struct buf b;

			buf_alloc(&b, true, n * es);
			sentinel(&b);
			if (rank == root)
				fill(&b, 0, n, t, root, 0, c);
			buf_push(&b);
			CHECK_RC(fc_bcast(world, b.p, n, t, root, T_MS), 0);
			buf_pull(&b);
			for (size_t i = 0; i < n; i++)
				if (!expect(&b, i, t, (double)value(root, i, c),
					    "bcast", n))
					break;
			check_tail(&b, n * es, "bcast");
			buf_free(&b);
		}
	}
}

/* gather, allgather (in place too), scatter, alltoall (in place too) */
static void test_blocks(void)
{
	for (unsigned int c = 0; c < NCOUNTS; c++) {
		enum fc_dtype t = types[c % 3];
		size_t n = counts_blocks[c], es = (size_t)fc_dtype_size(t);
		size_t all = n * size;
		uint32_t root = c % size;
		struct buf sb, rb;
		bool sg, rg;

		for (int ip = 0; ip < 2; ip++) {
			kinds(c + (unsigned int)ip, &sg, &rg);
			/* gather */
			buf_alloc(&sb, sg, n * es);
			buf_alloc(&rb, rg, all * es);
			sentinel(&sb);
			sentinel(&rb);
			fill(&sb, 0, n, t, rank, 0, c);
			if (ip && rank == root)
				fill(&rb, rank * n, n, t, rank, 0, c);
			buf_push(&sb);
			buf_push(&rb);
			CHECK_RC(fc_gather(world,
					   ip && rank == root ? FC_IN_PLACE :
								sb.p,
					   rb.p, n, t, root, T_MS),
				 0);
			buf_pull(&rb);
			for (size_t i = 0; rank == root && i < all; i++)
				if (!expect(&rb, i, t,
					    (double)value((uint32_t)(i / n),
							  i % n, c),
					    "gather", n))
					break;
			check_tail(&rb, rank == root ? all * es : 0, "gather");
			/* allgather into the same receive buffer */
			sentinel(&rb);
			if (ip)
				fill(&rb, rank * n, n, t, rank, 0, c);
			buf_push(&rb);
			CHECK_RC(fc_allgather(world, ip ? FC_IN_PLACE : sb.p,
					      rb.p, n, t, T_MS),
				 0);
			buf_pull(&rb);
			for (size_t i = 0; i < all; i++)
				if (!expect(&rb, i, t,
					    (double)value((uint32_t)(i / n),
							  i % n, c),
					    "allgather", n))
					break;
			check_tail(&rb, all * es, "allgather");
			/* alltoall: block j of rank r is value(r, j * n + i) */
			buf_free(&sb);
			buf_alloc(&sb, sg, all * es);
			sentinel(&sb);
			sentinel(&rb);
			fill(ip ? &rb : &sb, 0, all, t, rank, 0, c);
			buf_push(&sb);
			buf_push(&rb);
			CHECK_RC(fc_alltoall(world, ip ? FC_IN_PLACE : sb.p,
					     rb.p, n, t, T_MS),
				 0);
			buf_pull(&rb);
			for (size_t i = 0; i < all; i++)
				if (!expect(&rb, i, t,
					    (double)value((uint32_t)(i / n),
							  rank * n + i % n, c),
					    "alltoall", n))
					break;
			check_tail(&rb, all * es, "alltoall");
			/* scatter from the root's (send) buffer of all */
			buf_free(&rb);
			buf_alloc(&rb, rg, n * es);
			sentinel(&sb);
			sentinel(&rb);
			if (rank == root)
				fill(&sb, 0, all, t, root, 0, c);
			buf_push(&sb);
			buf_push(&rb);
			CHECK_RC(fc_scatter(world, sb.p, rb.p, n, t, root,
					    T_MS),
				 0);
			buf_pull(&rb);
			for (size_t i = 0; i < n; i++)
				if (!expect(&rb, i, t,
					    (double)value(root, rank * n + i,
							  c),
					    "scatter", n))
					break;
			check_tail(&rb, n * es, "scatter");
			buf_free(&sb);
			buf_free(&rb);
		}
	}
}

/* The v forms: rank i's block is i + 1 elements at displacement 3 * i *
 * (i + 1) (gaps between blocks, which must stay as they were). */
static void test_vector(void)
{
	enum fc_dtype t = FC_FLOAT64;
	size_t es = 8, counts[16], displs[16], total = 0, mine = rank + 1;
	struct buf sb, rb;

	for (uint32_t i = 0; i < size; i++) {
		counts[i] = i + 1;
		displs[i] = 3 * i * (i + 1);
		total = displs[i] + counts[i];
	}
	buf_alloc(&sb, true, total * es);
	buf_alloc(&rb, true, total * es);
	/* allgatherv */
	sentinel(&sb);
	sentinel(&rb);
	fill(&sb, 0, mine, t, rank, 0, 5);
	buf_push(&sb);
	buf_push(&rb);
	CHECK_RC(fc_allgatherv(world, sb.p, mine, rb.p, counts, displs, t,
			       T_MS),
		 0);
	buf_pull(&rb);
	for (uint32_t r = 0; r < size; r++) {
		for (size_t i = 0; i < counts[r]; i++)
			expect(&rb, displs[r] + i, t, (double)value(r, i, 5),
			       "allgatherv", counts[r]);
		if (r + 1 < size)
			for (size_t b = (displs[r] + counts[r]) * es;
			     b < displs[r + 1] * es; b++)
				CHECK(rb.shadow[b] == 0xA5,
				      "allgatherv: gap byte %zu changed", b);
	}
	check_tail(&rb, total * es, "allgatherv");
	/* gatherv to rank 0 */
	sentinel(&rb);
	buf_push(&rb);
	CHECK_RC(fc_gatherv(world, sb.p, mine, rb.p, counts, displs, t, 0,
			    T_MS),
		 0);
	buf_pull(&rb);
	for (uint32_t r = 0; rank == 0 && r < size; r++)
		for (size_t i = 0; i < counts[r]; i++)
			expect(&rb, displs[r] + i, t, (double)value(r, i, 5),
			       "gatherv", counts[r]);
	/* scatterv from rank 0's send buffer */
	sentinel(&sb);
	sentinel(&rb);
	for (uint32_t r = 0; rank == 0 && r < size; r++)
		fill(&sb, displs[r], counts[r], t, r, 0, 6);
	buf_push(&sb);
	buf_push(&rb);
	CHECK_RC(fc_scatterv(world, sb.p, counts, displs, rb.p, mine, t, 0,
			     T_MS),
		 0);
	buf_pull(&rb);
	for (size_t i = 0; i < mine; i++)
		expect(&rb, i, t, (double)value(rank, i, 6), "scatterv", mine);
	check_tail(&rb, mine * es, "scatterv");
	buf_free(&sb);
	buf_free(&rb);
	/* alltoallv: to rank j, j + 1 elements; from rank i, rank + 1 */
	{
		size_t sc[16], sd[16], rc[16], rd[16], stot = 0, rtot = 0;

		for (uint32_t j = 0; j < size; j++) {
			sc[j] = j + 1;
			sd[j] = stot;
			stot += sc[j] + 1; /* a gap after each */
			rc[j] = mine;
			rd[j] = rtot;
			rtot += mine + 2;
		}
		buf_alloc(&sb, true, stot * es);
		buf_alloc(&rb, true, rtot * es);
		sentinel(&sb);
		sentinel(&rb);
		for (uint32_t j = 0; j < size; j++)
			fill(&sb, sd[j], sc[j], t, rank, 100 * j, 7);
		buf_push(&sb);
		buf_push(&rb);
		CHECK_RC(fc_alltoallv(world, sb.p, sc, sd, rb.p, rc, rd, t,
				      T_MS),
			 0);
		buf_pull(&rb);
		for (uint32_t j = 0; j < size; j++) {
			for (size_t i = 0; i < mine; i++)
				expect(&rb, rd[j] + i, t,
				       (double)value(j, 100 * rank + i, 7),
				       "alltoallv", mine);
			for (size_t b = (rd[j] + mine) * es;
			     b < (rd[j] + mine + 2) * es && b < rb.len; b++)
				CHECK(rb.shadow[b] == 0xA5,
				      "alltoallv: gap byte %zu changed", b);
		}
		buf_free(&sb);
		buf_free(&rb);
	}
}

/* A non-blocking allreduce: the result is in device memory once the
 * request has ended, through fc_coll_test as through fc_coll_wait. */
static void test_nonblocking(void)
{
	size_t n = 4099, es = 4;
	struct fc_coll_req *req[2];
	struct buf b[2];
	int ret;

	for (int j = 0; j < 2; j++) {
		buf_alloc(&b[j], true, n * es);
		sentinel(&b[j]);
		fill(&b[j], 0, n, FC_FLOAT32, rank, 0, 20 + j);
		buf_push(&b[j]);
		CHECK_RC(fc_iallreduce(world, FC_IN_PLACE, b[j].p, n,
				       FC_FLOAT32, FC_SUM, &req[j]),
			 0);
	}
	while ((ret = fc_coll_test(req[0])) == -EINPROGRESS)
		;
	CHECK_RC(ret, 0);
	CHECK_RC(fc_coll_wait(req[1], T_MS), 0);
	for (int j = 0; j < 2; j++) {
		buf_pull(&b[j]);
		for (size_t i = 0; i < n; i++)
			if (!expect(&b[j], i, FC_FLOAT32,
				    reduced(FC_SUM, 0, size - 1, i, 20 + j),
				    "iallreduce", n))
				break;
		check_tail(&b[j], n * es, "iallreduce");
		buf_free(&b[j]);
	}
}

/* A device buffer shorter than the collective needs: -EFAULT on every
 * rank, and it does not count (the next one runs in step). */
static void test_short_buffer(void)
{
	static int32_t host[1000];
	int32_t one = 1, sum = 0;
	struct buf b;

	buf_alloc(&b, true, 16);
	CHECK_RC(fc_allreduce(world, b.p, host, 1000, FC_INT32, FC_SUM, T_MS),
		 -EFAULT);
	CHECK_RC(fc_allreduce(world, host, b.p, 1000, FC_INT32, FC_SUM, T_MS),
		 -EFAULT);
	CHECK_RC(fc_allreduce(world, &one, &sum, 1, FC_INT32, FC_SUM, T_MS), 0);
	CHECK(sum == (int32_t)size, "allreduce after -EFAULT: %d", sum);
	buf_free(&b);
}

/* ---- Channels ---- */

static const size_t msg_sizes[] = { 1, 4096, 65536, (1u << 20) + 3 };

static uint8_t pattern(uint32_t from, size_t i, unsigned int seed)
{
	return (uint8_t)(mix((uint64_t)from << 48 ^ (uint64_t)seed << 32 ^
			     (i / 8)) >>
			 (8 * (i % 8)));
}

/*
 * Send @len bytes to @peer from a buffer of kind @sg and receive as many
 * from it into one of kind @rg, through the call pair @how selects:
 * 0 send + irecv, 1 isend + recv, 2 isend + irecv.
 */
static void exchange(struct fc_chan *ch, uint32_t peer, bool sg, bool rg,
		     size_t len, unsigned int how, unsigned int seed)
{
	struct fc_req *sr = NULL, *rr = NULL;
	struct buf sb, rb;
	size_t got = 0;
	char what[80];

	snprintf(what, sizeof(what), "%s -> %s, %zu B, calls %u",
		 sg ? "gpu" : "host", rg ? "gpu" : "host", len, how);
	buf_alloc(&sb, sg, len);
	buf_alloc(&rb, rg, len);
	sentinel(&sb);
	sentinel(&rb);
	for (size_t i = 0; i < len; i++)
		sb.shadow[i] = pattern(rank, i, seed);
	buf_push(&sb);
	buf_push(&rb);
	if (how != 1)
		CHECK_RC(fc_chan_irecv(ch, rb.p, len, &rr), 0);
	if (how == 0)
		CHECK_RC(fc_chan_send(ch, sb.p, len, T_MS), 0);
	else
		CHECK_RC(fc_chan_isend(ch, sb.p, len, &sr), 0);
	if (how == 1)
		CHECK_RC(fc_chan_recv(ch, rb.p, len, &got, T_MS), 0);
	else if (rr)
		CHECK_RC(fc_req_wait(rr, T_MS, &got), 0);
	if (sr)
		CHECK_RC(fc_req_wait(sr, T_MS, NULL), 0);
	CHECK(got == len, "%s: received %zu bytes", what, got);
	buf_pull(&rb);
	for (size_t i = 0; i < len; i++) {
		if (rb.shadow[i] != pattern(peer, i, seed)) {
			CHECK(0, "%s: byte %zu differs", what, i);
			break;
		}
	}
	check_tail(&rb, len, what);
	buf_free(&sb);
	buf_free(&rb);
}

static void test_channels(void)
{
	/* two boards: each other; a 2x2 torus: the diagonal, two hops */
	uint32_t peer = size == 4 ? rank ^ 3 : rank ^ 1;
	struct fc_chan *ch;
	unsigned int seed = 0;
	struct buf b;
	size_t got;
	uint8_t one = 0;

	if (peer >= size)
		return;
	CHECK_RC(fc_chan_open(dev, peer, PORT, 0, &ch), 0);
	for (int k = 0; k < 4; k++)
		for (size_t s = 0; s < sizeof(msg_sizes) / sizeof(*msg_sizes);
		     s++)
			exchange(ch, peer, k & 1, k & 2, msg_sizes[s],
				 (unsigned int)(s + k) % 3, seed++);
	/* refused before anything is sent: 0 bytes, past the allocation */
	buf_alloc(&b, true, 4096);
	CHECK_RC(fc_chan_send(ch, b.p, 0, T_MS), -EINVAL);
	CHECK_RC(fc_chan_send(ch, b.p, 4096 + TAIL + 1, T_MS), -EFAULT);
	/* so the next message the peer gets is this one (from and into the
	 * middle of an allocation) */
	one = (uint8_t)(rank + 1);
	CHECK(!cu.htod((cu_ptr)(uintptr_t)b.p + 4000, &one, 1), "cuMemcpyHtoD");
	CHECK_RC(fc_chan_send(ch, (char *)b.p + 4000, 1, T_MS), 0);
	CHECK_RC(fc_chan_recv(ch, (char *)b.p + 17, 4096 - 17, &got, T_MS), 0);
	CHECK(got == 1, "after the refused sends: %zu bytes", got);
	CHECK(!cu.dtoh(&one, (cu_ptr)(uintptr_t)b.p + 17, 1), "cuMemcpyDtoH");
	CHECK(one == peer + 1, "after the refused sends: got %u from %u", one,
	      peer);
	buf_free(&b);
	CHECK_RC(fc_chan_close(ch), 0);
}

/*
 * Tagged messages (fc_tag_*) between device and host buffers: one
 * message, one split in pieces (above FC_CHAN_MAX_MSG), and a receive too
 * short for its message (-EMSGSIZE, its first cap bytes in device memory).
 */
static void tag_complete(struct fc_tag_ep *ep, int n, struct fc_tag_cqe *c)
{
	int got = 0, rc;

	while (got < n) {
		rc = fc_tag_wait(ep, T_MS);
		if (rc) {
			CHECK_RC(rc, 0);
			return;
		}
		rc = fc_tag_poll(ep, c + got, (unsigned int)(n - got));
		if (rc < 0) {
			CHECK_RC(rc, 0);
			return;
		}
		got += rc;
	}
}

static void test_tagged(void)
{
	static const size_t sizes[] = { 1, 4096, (16u << 20) + 5 };
	uint32_t peer = size == 4 ? rank ^ 3 : rank ^ 1;
	struct fc_tag_cqe c[2];
	struct fc_tag_ep *ep;
	struct buf sb, rb;
	unsigned int seed = 50;
	int rc, n;

	if (peer >= size)
		return;
	CHECK_RC(fc_tag_open(dev, PORT + 1, 0, &ep), 0);
	for (int k = 0; k < 4; k++) {
		for (size_t s = 0; s < sizeof(sizes) / sizeof(*sizes); s++) {
			size_t len = sizes[s],
			       cap = s == 1 && k == 3 ? 100 : len;
			bool sg = k & 1, rg = k & 2;

			buf_alloc(&sb, sg, len);
			buf_alloc(&rb, rg, len);
			sentinel(&sb);
			sentinel(&rb);
			for (size_t i = 0; i < len; i++)
				sb.shadow[i] = pattern(rank, i, seed);
			buf_push(&sb);
			buf_push(&rb);
			CHECK_RC(fc_tag_recv(ep, peer, rb.p, cap, seed, 0, 0,
					     &rb, 0),
				 0);
			rc = fc_tag_send(ep, peer, PORT + 1, sb.p, len, seed, 0,
					 0, &sb, 0);
			CHECK_RC(rc, 0);
			n = rc ? 1 : 2; /* a send refused has no completion */
			tag_complete(ep, n, c);
			for (int j = 0; j < n; j++) {
				bool recv = c[j].ctx == &rb;
				int want = recv && cap < len ? -EMSGSIZE : 0;

				CHECK(c[j].status == want,
				      "tagged %zu B (%s -> %s): status %d", len,
				      sg ? "gpu" : "host", rg ? "gpu" : "host",
				      c[j].status);
				if (recv)
					CHECK(c[j].len == cap,
					      "tagged: %llu bytes placed",
					      (unsigned long long)c[j].len);
			}
			buf_pull(&rb);
			for (size_t i = 0; i < cap; i++) {
				if (rb.shadow[i] != pattern(peer, i, seed)) {
					CHECK(0, "tagged %zu B: byte %zu", len,
					      i);
					break;
				}
			}
			check_tail(&rb, cap, "tagged");
			buf_free(&sb);
			buf_free(&rb);
			seed++;
		}
	}
	CHECK_RC(fc_tag_close(ep), 0);
}

static int run_rank(void)
{
	const char *why;
	void *ctx;

	why = cu_load(&cu, &ctx);
	if (why) {
		printf("SKIP: %s\n", why);
		return EXIT_SKIP;
	}
	if (harness_rank_world(&dev, &world, &rank, &size))
		return 1;
	if (rank == 0) {
		char name[128];

		if (!cu.device_name(name, sizeof(name), cu.dev))
			printf("CUDA device: %s\n", name);
	}
	test_channels();
	test_tagged();
	test_reductions();
	test_bcast();
	test_blocks();
	test_vector();
	test_nonblocking();
	test_short_buffer();
	if (rank == 0 || failures)
		printf("rank %u: %s (%d failures)\n", rank,
		       failures ? "FAIL" : "ok", failures);
	fc_group_free(world);
	fc_close(dev);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	char self[PATH_MAX], run[PATH_MAX + 32];
	int worst = 0, rc;

	if (getenv("FPGACOMM_RANK"))
		return run_rank();
	printf("test_gpu_coll: channels and collectives on device memory\n");
	/* device pointers the CPU cannot touch */
	cu_run_again_with_stand_in(argv, true);
	rc = harness_find_run(self, sizeof(self), run, sizeof(run));
	if (rc)
		return rc;
	printf("== 2 ranks, full:2\n");
	rc = harness_launch_ranks(run, self, 2, "full:2", NULL, NULL);
	worst = rc > worst ? rc : worst;
	printf("== 4 ranks, torus:2x2\n");
	rc = harness_launch_ranks(run, self, 4, "torus:2x2", NULL, NULL);
	return rc > worst ? rc : worst;
}
