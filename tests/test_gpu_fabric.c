// SPDX-License-Identifier: MIT
/*
 * test_gpu_fabric: GPU memory between boards. Every pair of host, board
 * and GPU memory as source and destination of a put (fc_put_from) and of
 * a get (fc_get) to the next rank, in packets (1000 bytes) and bursts
 * (300 KiB), each checked byte for byte with the bytes beside it left
 * alone; block-stride puts and gets of GPU memory (the gaps untouched),
 * with their refusals (a stride below the block, a count of 0, more blocks
 * than a chain); fc_iput_from and fc_iget ended by fc_req_wait; a window entry written beyond its end, then revoked by
 * fc_mem_free(): the writer and the reader get -EACCES, and the GPU bytes
 * beside and behind the entry do not change.
 *
 * Run alone, it starts itself under build/tools/fpgacomm-run as 2 ranks
 * and as 4 ranks on a 2x2 torus (a next rank two hops away). Without a
 * CUDA driver (CI) the ranks use the stand-in tests/fake_libcuda.c, whose
 * "device memory" is each process's own. Skips on a kernel board.
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

#define T_MS  60000
#define SMALL 1000u		  /* PUT packets */
#define LARGE ((300u << 10) + 13) /* bursts */
#define SLOT  (640u << 10)	  /* one case's bytes; gets land at half */
#define CASES 36		  /* 3 x 3 kinds x put/get x 2 sizes */
#define LEN   ((size_t)CASES * SLOT)
#define BOFF  (1u << 20)  /* our part of board memory */
#define EDGE  (64u << 10) /* the revocation test's window */

enum kind {
	HOST,
	BOARD,
	GPU,
	KINDS
};
static const char *const kind_name[KINDS] = { "host", "board", "GPU" };

static struct fc_dev *dev;
static struct fc_group *world;
static uint32_t rank, size;
static int failures;
static struct cu cu;
static struct fc_mem *host, *stage, *gpu;
static cu_ptr dp;
static uint64_t (*addrs)[KINDS]; /* every rank's, by kind */
static uint8_t *want, *got;

static uint8_t byte(uint64_t tag, size_t i)
{
	return (uint8_t)mix(tag << 40 ^ i);
}

static void pattern(uint8_t *p, size_t len, uint64_t tag)
{
	for (size_t i = 0; i < len; i++)
		p[i] = byte(tag, i);
}

/* Through the stage buffer by local DMA: board memory is not mapped. */
static void board_io(uint64_t off, void *p, size_t len, bool write)
{
	struct fc_xfer x = { 0 };

	x.len = len;
	x.src = write ? fc_host(stage, 0) : fc_board(BOFF + off);
	x.dst = write ? fc_board(BOFF + off) : fc_host(stage, 0);
	if (write)
		memcpy(stage->addr, p, len);
	CHECK_RC(fc_dma_run(dev, &x, 1, T_MS), 0);
	if (!write)
		memcpy(p, stage->addr, len);
}

static void local_io(enum kind k, uint64_t off, void *p, size_t len, bool write)
{
	switch (k) {
	case HOST:
		if (write)
			memcpy((uint8_t *)host->addr + off, p, len);
		else
			memcpy(p, (uint8_t *)host->addr + off, len);
		break;
	case BOARD:
		board_io(off, p, len, write);
		break;
	default:
		CHECK((write ? cu.htod(dp + off, p, len) :
			       cu.dtoh(p, dp + off, len)) == 0,
		      "cuMemcpy of %zu bytes", len);
	}
}

static struct fc_loc loc(enum kind k, uint64_t off)
{
	if (k == HOST)
		return fc_host(host, off);
	if (k == BOARD)
		return fc_board(BOFF + off);
	return fc_host(gpu, off);
}

/* [off - 1, off + len] of our @k: the bytes, and zero on either side. */
static void expect(enum kind k, uint64_t off, size_t len, uint64_t tag,
		   const char *what)
{
	size_t bad = 0;

	pattern(want, len, tag);
	local_io(k, off - 1, got, len + 2, false);
	for (size_t i = 0; i < len; i++)
		bad += got[i + 1] != want[i];
	CHECK(!bad, "%s into %s: %zu of %zu bytes wrong", what, kind_name[k],
	      bad, len);
	CHECK(!got[0] && !got[len + 1], "%s into %s: a byte beside it moved",
	      what, kind_name[k]);
}

/* Case @c: from our @a to the next rank's @b, @len bytes, a put or get. */
static void one_case(unsigned int c, enum kind a, enum kind b, size_t len,
		     bool get)
{
	uint32_t next = (rank + 1) % size, prev = (rank + size - 1) % size;
	uint64_t off = (uint64_t)c * SLOT + 1, dst = off + SLOT / 2;

	pattern(want, len, (uint64_t)c << 8 | rank);
	local_io(a, off, want, len, true);
	CHECK_RC(fc_barrier_group(world, T_MS), 0);
	if (get) {
		/* read the next rank's @a into our @b */
		CHECK_RC(fc_get(dev, loc(b, dst), addrs[next][a] + off, len,
				T_MS),
			 0);
		expect(b, dst, len, (uint64_t)c << 8 | next, "get");
	} else {
		CHECK_RC(fc_put_from(dev, addrs[next][b] + dst, loc(a, off),
				     len, T_MS),
			 0);
		CHECK_RC(fc_barrier_group(world, T_MS), 0);
		expect(b, dst, len, (uint64_t)c << 8 | prev, "put");
	}
	if (failures)
		fprintf(stderr, "rank %u: case %u: %s %s -> %s, %zu bytes\n",
			rank, c, get ? "get" : "put", kind_name[a],
			kind_name[b], len);
}

static void test_pairs(void)
{
	unsigned int c = 0;

	for (int get = 0; get < 2; get++)
		for (enum kind a = HOST; a < KINDS; a++)
			for (enum kind b = HOST; b < KINDS; b++) {
				one_case(c++, a, b, SMALL, get);
				one_case(c++, a, b, LARGE, get);
			}
}

/* Blocks of @st at @base of our GPU: the pattern in each, zero between. */
static void expect_blocks(const struct fc_stride *st, uint64_t base,
			  uint64_t stride, uint64_t tag, const char *what)
{
	size_t extent = (st->count - 1) * stride + st->block, bad = 0;

	local_io(GPU, base, got, extent, false);
	for (size_t i = 0; i < extent; i++) {
		size_t k = i / stride, in = i % stride;
		uint8_t w =
			in < st->block ? byte(tag, k * st->src_stride + in) : 0;

		bad += got[i] != w;
	}
	CHECK(!bad, "%s: %zu of %zu bytes wrong", what, bad, extent);
}

/*
 * Every rank reads 200 blocks of the next rank's GPU memory at once, so
 * that two boards answer each other's reads (as packets: the source is
 * GPU memory) while reading: neither may hold the other back for ever.
 * The next rank's GPU holds our pattern's 7 * 1500 bytes, then zeros.
 */
static void both_ways(void)
{
	struct fc_stride st = { 200, 4000, 4000, 4096 };
	uint32_t next = (rank + 1) % size;
	uint64_t at = 12u << 20;
	size_t bad = 0, k, i;

	CHECK_RC(fc_get_strided(dev, loc(GPU, at), addrs[next][GPU], &st, T_MS),
		 0);
	local_io(GPU, at, got, 200 * 4096, false);
	for (k = 0; k < 200; k++)
		for (i = 0; i < 4000; i++) {
			size_t b = k * 4000 + i;
			uint8_t w = b < 7 * 1500 ? byte(99u << 8 | next, b) : 0;

			bad += got[k * 4096 + i] != w;
		}
	CHECK(!bad, "200 blocks read both ways: %zu bytes wrong", bad);
}

static void test_strided(void)
{
	struct fc_stride st = { 7, 1000, 1500, 3001 };
	struct fc_stride bad = st;
	uint32_t next = (rank + 1) % size, prev = (rank + size - 1) % size;
	uint64_t src = 0, dst = 4u << 20, back = 8u << 20;

	/* every get of the cases has ended: the GPU's start is free */
	CHECK_RC(fc_barrier_group(world, T_MS), 0);
	memset(want, 0, 12u << 20);
	local_io(GPU, 0, want, 12u << 20, true);
	pattern(want, 7 * 1500, 99u << 8 | rank);
	local_io(GPU, src, want, 7 * 1500, true);
	CHECK_RC(fc_barrier_group(world, T_MS), 0);
	CHECK_RC(fc_put_strided(dev, addrs[next][GPU] + dst, loc(GPU, src), &st,
				T_MS),
		 0);
	CHECK_RC(fc_barrier_group(world, T_MS), 0);
	expect_blocks(&st, dst, st.dst_stride, 99u << 8 | prev, "put_strided");
	/* read the next rank's source blocks back, packed 1200 apart */
	st.dst_stride = 1200;
	CHECK_RC(fc_get_strided(dev, loc(GPU, back), addrs[next][GPU] + src,
				&st, T_MS),
		 0);
	expect_blocks(&st, back, st.dst_stride, 99u << 8 | next, "get_strided");
	both_ways();
	/* refused before anything moves */
	bad.src_stride = 999;
	CHECK_RC(fc_put_strided(dev, addrs[next][GPU], loc(GPU, 0), &bad, T_MS),
		 -EINVAL);
	bad = st;
	bad.dst_stride = 1;
	CHECK_RC(fc_get_strided(dev, loc(GPU, 0), addrs[next][GPU], &bad, T_MS),
		 -EINVAL);
	bad = st;
	bad.count = 0;
	CHECK_RC(fc_put_strided(dev, addrs[next][GPU], loc(GPU, 0), &bad, T_MS),
		 -EINVAL);
	bad.count = 256;
	bad.src_stride = bad.dst_stride = bad.block = 16;
	CHECK_RC(fc_put_strided(dev, addrs[next][GPU], loc(GPU, 0), &bad, T_MS),
		 -E2BIG);
	CHECK_RC(fc_put_strided(dev, addrs[next][GPU], loc(GPU, 0), NULL, T_MS),
		 -EINVAL);
	CHECK_RC(fc_barrier_group(world, T_MS), 0);
	expect_blocks(&st, dst, 3001, 99u << 8 | prev, "after the refusals");
}

/*
 * The forms that return a request: fc_iput_from GPU -> the next rank's
 * GPU, ended by fc_fence; fc_iget of the next rank's host memory into our
 * board memory, ended by fc_req_wait.
 */
static void test_nowait(void)
{
	uint32_t next = (rank + 1) % size, prev = (rank + size - 1) % size;
	uint64_t at = 16u << 20, len = 200000;
	struct fc_req *put = NULL, *get = NULL;

	pattern(want, len, 77u << 8 | rank);
	local_io(GPU, at, want, len, true);
	local_io(HOST, at, want, len, true);
	CHECK_RC(fc_barrier_group(world, T_MS), 0);
	CHECK_RC(fc_iput_from(dev, addrs[next][GPU] + at + SLOT, loc(GPU, at),
			      len, &put),
		 0);
	CHECK_RC(fc_iget(dev, loc(BOARD, at), addrs[next][HOST] + at, len,
			 &get),
		 0);
	CHECK_RC(fc_req_wait(get, T_MS, NULL), 0);
	expect(BOARD, at, len, 77u << 8 | next, "iget");
	CHECK_RC(fc_req_wait(put, T_MS, NULL), 0);
	CHECK_RC(fc_fence(dev, T_MS), 0);
	CHECK_RC(fc_barrier_group(world, T_MS), 0);
	expect(GPU, at + SLOT, len, 77u << 8 | prev, "iput_from");
	CHECK_RC(fc_barrier_group(world, T_MS), 0);
}

/*
 * Rank 1 gives EDGE bytes in the middle of a GPU allocation a window
 * entry; rank 0 writes in bounds, past the end, then after rank 1 freed
 * the import (revoked). Rank 1 reads the allocation: only the write in
 * bounds changed it.
 */
static void test_revoke(void)
{
	uint64_t a = 0;
	struct fc_mem *m = NULL;
	cu_ptr edge = 0;

	if (rank == 1) {
		CHECK(cu.alloc(&edge, 3 * EDGE) == 0, "cuMemAlloc");
		CHECK(cu.memset8(edge, 0, 3 * EDGE) == 0, "cuMemsetD8");
		CHECK_RC(fc_peer_import_cuda(dev, edge + EDGE, EDGE, 0, &m), 0);
		CHECK_RC(fc_mem_fabric_addr(dev, m, 0, &a), 0);
		CHECK(FC_FABRIC_REGION(a) == FC_REGION_PEER,
		      "GPU memory in region %u", (unsigned)FC_FABRIC_REGION(a));
	}
	CHECK_RC(fc_bcast(world, &a, 1, FC_UINT64, 1, T_MS), 0);
	if (rank == 0) {
		pattern(want, EDGE, 7);
		local_io(HOST, 0, want, EDGE, true);
		CHECK_RC(fc_put(dev, a + 100, host, 0, 5000, T_MS), 0);
		/* past the end: packets, a burst, one packet across the
		 * end; the bytes behind the entry are another part of the
		 * allocation */
		CHECK_RC(fc_put(dev, a + EDGE, host, 0, 100, T_MS), -EACCES);
		CHECK_RC(fc_put(dev, a + EDGE + 100, host, 0, 40000, T_MS),
			 -EACCES);
		CHECK_RC(fc_put(dev, a + EDGE - 10, host, 0, 20, T_MS),
			 -EACCES);
		CHECK_RC(fc_get(dev, fc_host(host, 0), a + EDGE - 8, 16, T_MS),
			 -EACCES);
	}
	CHECK_RC(fc_barrier_group(world, T_MS), 0);
	if (rank == 1)
		CHECK_RC(fc_mem_free(dev, m), 0); /* revokes */
	CHECK_RC(fc_barrier_group(world, T_MS), 0);
	if (rank == 0) {
		memset(got, 0xcc, 64);
		local_io(HOST, EDGE, got, 64, true);
		CHECK_RC(fc_put(dev, a, host, 0, 64, T_MS), -EACCES);
		CHECK_RC(fc_put(dev, a + 1000, host, 0, 20000, T_MS), -EACCES);
		CHECK_RC(fc_get(dev, fc_host(host, EDGE), a, 64, T_MS),
			 -EACCES);
		local_io(HOST, EDGE, got, 64, false);
		CHECK(got[0] == 0xcc && got[63] == 0xcc,
		      "a refused get wrote our buffer");
		/* the engine and the fabric go on */
		CHECK_RC(fc_put(dev, addrs[1][HOST] + 3, host, 0, 64, T_MS), 0);
	}
	CHECK_RC(fc_barrier_group(world, T_MS), 0);
	if (rank == 1) {
		size_t badb = 0;

		CHECK(cu.dtoh(got, edge, 3 * EDGE) == 0, "cuMemcpyDtoH");
		pattern(want, EDGE, 7);
		for (size_t i = 0; i < 3 * EDGE; i++) {
			size_t in = i - EDGE - 100;
			uint8_t w = i >= EDGE + 100 && in < 5000 ? want[in] : 0;

			badb += got[i] != w;
		}
		CHECK(!badb, "GPU allocation: %zu bytes wrong", badb);
		CHECK(cu.free(edge) == 0, "cuMemFree");
	}
	CHECK_RC(fc_barrier_group(world, T_MS), 0);
}

/*
 * Rank 0 keeps large puts (GPU and host sources, each its own pattern)
 * running into an entry over rank 1's GPU memory while rank 1 revokes it
 * (fc_mem_free()). Each put ends with 0 or -EACCES; once the revoke has
 * returned, no byte of the allocation changes any more.
 */
#define RLEN (2u << 20)
#define RUNS 4 /* puts per batch, two batches */
static void test_revoke_running(void)
{
	struct fc_req *req[2 * RUNS] = { 0 };
	struct fc_mem *m = NULL;
	cu_ptr buf = 0;
	uint64_t a = 0;
	int rc, ok = 0, refused = 0;

	if (rank == 1) {
		CHECK(cu.alloc(&buf, RLEN) == 0, "cuMemAlloc");
		CHECK(cu.memset8(buf, 0, RLEN) == 0, "cuMemsetD8");
		CHECK_RC(fc_peer_import_cuda(dev, buf, RLEN, 0, &m), 0);
		CHECK_RC(fc_mem_fabric_addr(dev, m, 0, &a), 0);
	}
	CHECK_RC(fc_bcast(world, &a, 1, FC_UINT64, 1, T_MS), 0);
	if (rank == 0) {
		for (unsigned int k = 0; k < 2 * RUNS; k++) {
			pattern(want, RLEN, 900 + k);
			local_io(k % 2 ? HOST : GPU, (uint64_t)k * RLEN, want,
				 RLEN, true);
		}
		for (unsigned int k = 0; k < RUNS; k++)
			CHECK_RC(fc_iput_from(dev, a,
					      loc(k % 2 ? HOST : GPU,
						  (uint64_t)k * RLEN),
					      RLEN, &req[k]),
				 0);
	}
	CHECK_RC(fc_barrier_group(world, T_MS), 0);
	if (rank == 0) {
		for (unsigned int k = RUNS; k < 2 * RUNS; k++)
			CHECK_RC(fc_iput_from(dev, a,
					      loc(k % 2 ? HOST : GPU,
						  (uint64_t)k * RLEN),
					      RLEN, &req[k]),
				 0);
	}
	if (rank == 1) {
		CHECK_RC(fc_mem_free(dev, m), 0); /* revokes */
		CHECK(cu.dtoh(want, buf, RLEN) == 0, "cuMemcpyDtoH");
	}
	if (rank == 0) {
		for (unsigned int k = 0; k < 2 * RUNS; k++) {
			if (!req[k])
				continue;
			rc = fc_req_wait(req[k], T_MS, NULL);
			CHECK(rc == 0 || rc == -EACCES,
			      "put %u during the revoke: %d", k, rc);
			ok += rc == 0;
			refused += rc == -EACCES;
		}
		rc = fc_fence(dev, T_MS); /* reports the refusals again */
		CHECK(rc == 0 || rc == -EACCES, "fc_fence: %d", rc);
		printf("revoke under way: %d puts done, %d refused\n", ok,
		       refused);
	}
	CHECK_RC(fc_barrier_group(world, T_MS), 0);
	if (rank == 1) {
		CHECK(cu.dtoh(got, buf, RLEN) == 0, "cuMemcpyDtoH");
		CHECK(!memcmp(got, want, RLEN),
		      "the GPU memory changed after the revoke");
		CHECK(cu.free(buf) == 0, "cuMemFree");
	}
	CHECK_RC(fc_barrier_group(world, T_MS), 0);
}

/*
 * Did the engine copy into the other process's GPU memory itself? The
 * stand-in driver counts the handles it opened; a real one is measured by
 * scripts/bench-gpu-fabric.sh instead.
 */
static void check_direct(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	const char *env = getenv("FPGACOMM_EMU_GPU_IPC");
	bool off = env && !strcmp(env, "0");
	int (*opens)(void) = NULL;

	if (lib)
		*(void **)&opens = dlsym(lib, "fake_cuda_ipc_opens");
	if (opens && rank == 0 && off)
		CHECK(opens() == 0, "%d IPC handles opened, direct copies off",
		      opens());
	else if (opens && rank == 0)
		CHECK(opens() > 0, "no IPC handle opened: no direct copy");
	if (lib)
		dlclose(lib);
}

static int setup(void)
{
	uint64_t mine[KINDS];
	void *ctx;
	const char *why = cu_load(&cu, &ctx);

	if (why) {
		fprintf(stderr, "rank %u: %s\n", rank, why);
		return 1;
	}
	want = malloc(LEN);
	got = malloc(LEN);
	addrs = calloc(size, sizeof(*addrs));
	if (!want || !got || !addrs)
		return 1;
	CHECK_RC(fc_mem_alloc(dev, LEN, 0, &host), 0);
	CHECK_RC(fc_mem_alloc(dev, LEN, 0, &stage), 0);
	CHECK(cu.alloc(&dp, LEN) == 0, "cuMemAlloc");
	if (failures)
		return 1;
	CHECK_RC(fc_peer_import_cuda(dev, dp, LEN, 0, &gpu), 0);
	/* everything zero: the bytes beside each case are checked */
	memset(host->addr, 0, LEN);
	memset(stage->addr, 0, LEN);
	CHECK(cu.memset8(dp, 0, LEN) == 0, "cuMemsetD8");
	memset(want, 0, LEN);
	board_io(0, want, LEN, true);
	CHECK_RC(fc_mem_fabric_addr(dev, host, 0, &mine[HOST]), 0);
	CHECK_RC(fc_mem_fabric_addr(dev, gpu, 0, &mine[GPU]), 0);
	mine[BOARD] = FC_FABRIC_ADDR(FC_FABRIC_NODE(mine[HOST]),
				     FC_REGION_BOARD, BOFF);
	CHECK(FC_FABRIC_REGION(mine[GPU]) == FC_REGION_PEER,
	      "GPU memory in region %u", (unsigned)FC_FABRIC_REGION(mine[GPU]));
	CHECK_RC(fc_allgather(world, mine, addrs, KINDS, FC_UINT64, T_MS), 0);
	return failures ? 1 : 0;
}

static int run_rank(void)
{
	if (harness_rank_world(&dev, &world, &rank, &size))
		return 1;
	if (!setup()) {
		test_pairs();
		test_strided();
		test_nowait();
		test_revoke();
		test_revoke_running();
		check_direct();
	}
	if (rank == 0 || failures)
		printf("rank %u: %s (%d failures)\n", rank,
		       failures ? "FAIL" : "ok", failures);
	if (gpu)
		fc_mem_free(dev, gpu);
	if (dp)
		cu.free(dp);
	fc_group_free(world);
	fc_close(dev);
	return failures ? 1 : 0;
}

/* No CUDA driver here: the ranks load the stand-in beside this program. */
static int use_fake_cuda(const char *self)
{
	int rc = cu_use_stand_in(self);

	if (rc != 1)
		return rc < 0 ? 1 : rc;
	/* its device memory shared between processes: CUDA IPC works */
	setenv("FAKE_CUDA_IPC", "1", 1);
	/* its copies into another process's memory slow: a revoke lands
	 * in the middle of one */
	setenv("FAKE_CUDA_IPC_COPY_US", "20000", 1);
	return 0;
}

int main(void)
{
	char self[PATH_MAX], run[PATH_MAX + 32];
	int worst, rc;

	if (getenv("FPGACOMM_RANK"))
		return run_rank();
	printf("test_gpu_fabric: puts and gets between host, board and GPU "
	       "memory of different boards\n");
	rc = harness_find_run(self, sizeof(self), run, sizeof(run));
	if (!rc)
		rc = use_fake_cuda(self);
	if (rc)
		return rc;
	printf("== 2 ranks\n");
	fflush(stdout);
	worst = harness_launch_ranks(run, self, 2, NULL, NULL, NULL);
	printf("== 4 ranks, torus:2x2\n");
	fflush(stdout);
	rc = harness_launch_ranks(run, self, 4, "torus:2x2", NULL, NULL);
	worst = rc > worst ? rc : worst;
	/* GPU memory of other boards through the receiver: no CUDA IPC */
	printf("== 2 ranks, FPGACOMM_EMU_GPU_IPC=0\n");
	fflush(stdout);
	setenv("FPGACOMM_EMU_GPU_IPC", "0", 1);
	rc = harness_launch_ranks(run, self, 2, NULL, NULL, NULL);
	return rc > worst ? rc : worst;
}
