// SPDX-License-Identifier: MIT
/*
 * test_peer_gpu: GPU memory as peer memory of an emulated board
 * (fc_peer_import_cuda maps a CUDA device range; the engine moves its
 * bytes through the CUDA driver API). DMA host -> GPU and GPU -> host,
 * board <-> GPU and GPU -> GPU in one chain, an overlapping copy inside
 * one GPU buffer, a large transfer over many engine steps, each checked
 * byte for byte with cuMemcpy, bytes beside the range untouched; bad
 * ranges (a host pointer, past the allocation, past the region) and GPU
 * memory freed under a region (the chain fails with -EFAULT); on a
 * cluster board, GPU memory by its fabric address (its board's peer
 * window), and a chain refused at its check moving nothing; the GPU
 * memory written and read by another process's board through a CUDA IPC
 * handle (fc_cuda_ipc_export, fc_peer_import_cuda_ipc). Where no CUDA
 * driver loads (CI) it runs against the stand-in driver
 * tests/fake_libcuda.c, whose "device memory" is host memory (no IPC:
 * that test skips), and says which device it used. Skips without any
 * CUDA, and on a kernel board (test_peer_lib covers CUDA's dma-buf there).
 */
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "cuda_test.h"
#include "fabric.h" /* emu/: makes the emulated cluster it runs on */

#define BUF_LEN (1u << 20)
#define BIG_LEN ((64u << 20) + 12345) /* many 8 MiB engine steps */

static struct fc_mem *host_a, *host_b;
static struct cu cu;
static const char *no_cuda;
static uint8_t *scratch; /* BIG_LEN bytes for checks */
static char cluster[32]; /* test_fabric's, removed at teardown */

/* Allocate @len bytes of GPU memory filled with @fill. */
static cu_ptr gpu_alloc(size_t len, unsigned char fill)
{
	cu_ptr dp;

	assert_int_equal(cu.alloc(&dp, len), 0);
	assert_int_equal(cu.memset8(dp, fill, len), 0);
	assert_int_equal(cu.sync(), 0);
	return dp;
}

static void gpu_read(void *dst, cu_ptr src, size_t len)
{
	assert_int_equal(cu.dtoh(dst, src, len), 0);
}

static void assert_filled(const uint8_t *p, size_t len, uint8_t fill,
			  const char *what)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != fill)
			fail_msg("%s: byte %zu is 0x%02x, not 0x%02x", what, i,
				 p[i], fill);
}

static void need_gpu(void)
{
	if (no_cuda)
		skip_because(no_cuda);
}

/* host -> GPU and GPU -> host at unaligned offsets; neighbours untouched. */
static void test_host_gpu(void **state)
{
	uint8_t *src = host_a->addr, *back = host_b->addr;
	uint64_t off = 100, len = BUF_LEN - 300;
	struct fc_xfer x;
	struct fc_mem *m;
	cu_ptr dp;

	need_gpu();
	dp = gpu_alloc(BUF_LEN, 0x5a);
	assert_ok(fc_peer_import_cuda(dev, dp + off, len, 0, &m));
	assert_null(m->addr);
	assert_int_equal(m->len, len);

	rnd_fill(src, BUF_LEN);
	x = xfer(fc_host(host_a, 0), fc_host(m, 0), len);
	assert_ok(fc_dma_run(dev, &x, 1, WAIT_MS));
	gpu_read(scratch, dp, BUF_LEN);
	assert_same(scratch + off, src, len, "host -> GPU");
	assert_filled(scratch, off, 0x5a, "GPU before the region");
	assert_filled(scratch + off + len, BUF_LEN - off - len, 0x5a,
		      "GPU after the region");

	memset(back, 0, BUF_LEN);
	x = xfer(fc_host(m, 7), fc_host(host_b, 3), len - 7);
	assert_ok(fc_dma_run(dev, &x, 1, WAIT_MS));
	assert_same(back + 3, src + 7, len - 7, "GPU -> host");
	assert_filled(back, 3, 0, "host before the copy");

	/* One byte at either end of the region. */
	src[0] = 0xc3;
	x = xfer(fc_host(host_a, 0), fc_host(m, len - 1), 1);
	assert_ok(fc_dma_run(dev, &x, 1, WAIT_MS));
	gpu_read(scratch, dp + off + len - 1, 2);
	assert_int_equal(scratch[0], 0xc3);
	assert_int_equal(scratch[1], 0x5a);
	assert_ok(fc_mem_free(dev, m));
	assert_int_equal(cu.free(dp), 0);
}

/*
 * One chain: host -> board -> GPU -> board -> host, then GPU -> GPU
 * between two allocations; every hop checked.
 */
static void test_board_gpu(void **state)
{
	uint8_t *src = host_a->addr, *back = host_b->addr;
	uint64_t len = BUF_LEN / 2 + 17;
	struct fc_mem *g1, *g2;
	struct fc_xfer x[5];
	cu_ptr d1, d2;

	need_gpu();
	d1 = gpu_alloc(BUF_LEN, 0);
	d2 = gpu_alloc(BUF_LEN, 0);
	assert_ok(fc_peer_import_cuda(dev, d1, BUF_LEN, 0, &g1));
	assert_ok(fc_peer_import_cuda(dev, d2, BUF_LEN, 0, &g2));
	rnd_fill(src, BUF_LEN);
	memset(back, 0, BUF_LEN);
	x[0] = xfer(fc_host(host_a, 0), fc_board(0x10000), len);
	x[1] = xfer(fc_board(0x10000), fc_host(g1, 64), len);
	x[2] = xfer(fc_host(g1, 64), fc_host(g2, 5), len);
	x[3] = xfer(fc_host(g2, 5), fc_board(0x300000), len);
	x[4] = xfer(fc_board(0x300000), fc_host(host_b, 0), len);
	assert_ok(fc_dma_run(dev, x, 5, WAIT_MS));
	assert_same(back, src, len,
		    "host -> board -> GPU -> GPU -> board -> host");
	gpu_read(scratch, d1 + 64, len);
	assert_same(scratch, src, len, "board -> GPU");
	gpu_read(scratch, d2 + 5, len);
	assert_same(scratch, src, len, "GPU -> GPU");
	assert_ok(fc_mem_free(dev, g1));
	assert_ok(fc_mem_free(dev, g2));
	assert_int_equal(cu.free(d1), 0);
	assert_int_equal(cu.free(d2), 0);
}

/* GPU -> GPU inside one buffer, overlapping upwards: memmove order. */
static void test_gpu_overlap(void **state)
{
	size_t len = 16u << 20, n = 6u << 20, shift = 1u << 20;
	uint8_t *want = malloc(len);
	struct fc_mem *g;
	struct fc_xfer x;
	cu_ptr dp;

	need_gpu();
	assert_non_null(want);
	dp = gpu_alloc(len, 0);
	rnd_fill(want, len);
	assert_int_equal(cu.htod(dp, want, len), 0);
	assert_ok(fc_peer_import_cuda(dev, dp, len, 0, &g));
	x = xfer(fc_host(g, 0), fc_host(g, shift), n);
	assert_ok(fc_dma_run(dev, &x, 1, WAIT_MS));
	memmove(want + shift, want, n);
	gpu_read(scratch, dp, len);
	assert_same(scratch, want, len, "overlapping GPU -> GPU");
	assert_ok(fc_mem_free(dev, g));
	assert_int_equal(cu.free(dp), 0);
	free(want);
}

/* 64 MiB and an odd tail, there and back: many engine steps. */
static void test_large(void **state)
{
	struct fc_mem *big_a, *big_b, *g;
	struct fc_xfer x[2];
	uint8_t *want;
	cu_ptr dp;

	need_gpu();
	want = malloc(BIG_LEN);
	assert_non_null(want);
	assert_ok(fc_mem_alloc(dev, BIG_LEN, 0, &big_a));
	assert_ok(fc_mem_alloc(dev, BIG_LEN, 0, &big_b));
	dp = gpu_alloc(BIG_LEN, 0);
	assert_ok(fc_peer_import_cuda(dev, dp, BIG_LEN, 0, &g));
	rnd_fill(big_a->addr, BIG_LEN);
	memcpy(want, big_a->addr, BIG_LEN);
	memset(big_b->addr, 0, BIG_LEN);
	x[0] = xfer(fc_host(big_a, 0), fc_host(g, 0), BIG_LEN);
	x[1] = xfer(fc_host(g, 0), fc_host(big_b, 0), BIG_LEN);
	assert_ok(fc_dma_run(dev, x, 2, WAIT_MS));
	assert_same(big_a->addr, want, BIG_LEN, "the source, untouched");
	gpu_read(scratch, dp, BIG_LEN);
	assert_same(scratch, want, BIG_LEN, "host -> GPU, 64 MiB");
	assert_same(big_b->addr, want, BIG_LEN, "GPU -> host, 64 MiB");
	free(want);
	assert_ok(fc_mem_free(dev, g));
	assert_ok(fc_mem_free(dev, big_a));
	assert_ok(fc_mem_free(dev, big_b));
	assert_int_equal(cu.free(dp), 0);
}

/* Bad ranges are refused before anything moves; nothing changes. */
static void test_bad_ranges(void **state)
{
	uint8_t *src = host_a->addr;
	struct fc_mem *m, *stale;
	struct fc_xfer x;
	uint64_t ticket;
	cu_ptr dp;

	need_gpu();
	dp = gpu_alloc(BUF_LEN, 0x11);
	/* Host memory, and a range running past the allocation. */
	assert_rc(fc_peer_import_cuda(dev, (uintptr_t)src, 4096, 0, &m),
		  -EINVAL);
	assert_rc(fc_peer_import_cuda(dev, dp + BUF_LEN - 100, 200, 0, &m),
		  -ERANGE);
	assert_rc(fc_peer_import_cuda(dev, dp, BUF_LEN + 1, 0, &m), -ERANGE);
	assert_rc(fc_peer_import_cuda(dev, dp, 4096, 1, &m), -EINVAL);

	assert_ok(fc_peer_import_cuda(dev, dp + 4096, 8192, 0, &m));
	rnd_fill(src, BUF_LEN);
	x = xfer(fc_host(host_a, 0), fc_host(m, 1), 8192);
	assert_rc(fc_dma_submit(dev, &x, 1, 0, &ticket), -ERANGE);
	x = xfer(fc_host(m, 8192), fc_host(host_a, 0), 1);
	assert_rc(fc_dma_submit(dev, &x, 1, 0, &ticket), -ERANGE);
	gpu_read(scratch, dp, BUF_LEN);
	assert_filled(scratch, BUF_LEN, 0x11, "GPU after refused transfers");
	stale = m;
	assert_ok(fc_mem_free(dev, m));
	x = xfer(fc_host(host_a, 0), fc_host(stale, 0), 16);
	assert_rc(fc_dma_submit(dev, &x, 1, 0, &ticket), -EINVAL);

	/* The GPU memory freed under a region: the chain fails, cleanly. */
	assert_ok(fc_peer_import_cuda(dev, dp, BUF_LEN, 0, &m));
	assert_int_equal(cu.free(dp), 0);
	x = xfer(fc_host(host_a, 0), fc_host(m, 0), 4096);
	assert_rc(fc_dma_run(dev, &x, 1, WAIT_MS), -EFAULT);
	x = xfer(fc_host(m, 0), fc_host(host_a, 0), 4096);
	assert_rc(fc_dma_run(dev, &x, 1, WAIT_MS), -EFAULT);
	/* The engine goes on working. */
	x = xfer(fc_host(host_a, 0), fc_host(host_b, 0), 4096);
	assert_ok(fc_dma_run(dev, &x, 1, WAIT_MS));
	assert_same(host_b->addr, src, 4096, "host -> host after the fault");
	assert_ok(fc_mem_free(dev, m));
}

/* A fabric address: a board's memory or host memory, on any node. */
static struct fc_loc fabric(uint64_t addr)
{
	struct fc_loc l = { FC_SPACE_FABRIC, 0, NULL, addr };

	return l;
}

/*
 * On a board of a cluster: GPU memory named by its fabric address (an
 * entry of the board's own peer window) is reached locally; a chain
 * refused at its check (a node outside the cluster) moves nothing, not
 * even its first descriptor into the GPU. Puts and gets of GPU memory
 * between boards are test_gpu_fabric's.
 */
static void test_fabric(void **state)
{
	char name[32], spec[48];
	struct fc_topology t;
	struct fcemu_cluster *c;
	struct fc_mem *host, *g;
	struct fc_xfer x, y[2];
	struct fc_dev *d;
	uint64_t fa;
	cu_ptr dp;

	need_gpu();
	snprintf(name, sizeof(name), "tpg-%d", (int)getpid());
	snprintf(cluster, sizeof(cluster), "%s", name);
	snprintf(spec, sizeof(spec), "emu:%s/0", name);
	assert_int_equal(fc_topo_parse("ring:2", &t), 0);
	assert_int_equal(fcemu_cluster_create(&c, name, &t, NULL), 0);
	assert_ok(fc_open(&d, spec));
	assert_ok(fc_mem_alloc(d, BUF_LEN, 0, &host));
	dp = gpu_alloc(BUF_LEN, 0);
	assert_ok(fc_peer_import_cuda(d, dp, BUF_LEN, 0, &g));
	assert_ok(fc_mem_fabric_addr(d, g, 64, &fa));

	rnd_fill(host->addr, 4096);
	x = xfer(fc_host(host, 0), fabric(fa), 4096);
	assert_ok(fc_dma_run(d, &x, 1, WAIT_MS));
	gpu_read(scratch, dp + 64, 4096);
	assert_same(scratch, host->addr, 4096, "host -> GPU by fabric address");
	x = xfer(fabric(fa), fc_board(0x1000), 4096);
	assert_ok(fc_dma_run(d, &x, 1, WAIT_MS));

	/* Refused at the chain's check: its first descriptor moves nothing. */
	memset(host->addr, 0x77, 4096);
	y[0] = xfer(fc_host(host, 0), fc_host(g, 64), 4096);
	y[1] = xfer(fc_host(g, 0),
		    fabric(FC_FABRIC_ADDR(5, FC_REGION_BOARD, 0)), 4096);
	assert_rc(fc_dma_run(d, y, 2, WAIT_MS), -EHOSTUNREACH);
	gpu_read(scratch + 4096, dp + 64, 4096);
	assert_same(scratch + 4096, scratch, 4096, "GPU after a refused chain");
	x = xfer(fc_host(host, 0), fc_host(g, 0), 16);
	assert_ok(fc_dma_run(d, &x, 1, WAIT_MS)); /* the engine goes on */

	assert_ok(fc_mem_free(d, g));
	assert_int_equal(cu.free(dp), 0);
	assert_ok(fc_close(d));
	fcemu_cluster_detach(c);
	fcemu_cluster_unlink(name);
	cluster[0] = 0;
}

/* ---- Across processes: CUDA IPC ---- */

#define IPC_OFF	 100
#define IPC_LEN	 8192
#define IPC_FILL 0x22

static uint8_t ipc_byte(size_t i)
{
	return (uint8_t)(i * 7 + 3);
}

/*
 * The child: a process of its own with its own emulated board and no
 * CUDA set up, given the parent's GPU memory as a hex fc_cuda_ipc. It
 * writes ipc_byte() into [IPC_OFF, IPC_OFF + IPC_LEN) of it by DMA and
 * reads the byte before back. RETURN VALUE: 0, or where it failed.
 */
static int ipc_child(const char *hex)
{
	struct fc_cuda_ipc ipc;
	struct fc_dev *d;
	struct fc_mem *host, *m;
	struct fc_xfer x;
	uint8_t *p = (uint8_t *)&ipc;
	unsigned int v;
	size_t i;
	int rc;

	if (strlen(hex) != 2 * sizeof(ipc))
		return 10;
	for (i = 0; i < sizeof(ipc); i++) {
		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return 10;
		p[i] = (uint8_t)v;
	}
	if (fc_open(&d, "emu:") || fc_mem_alloc(d, IPC_LEN, 0, &host))
		return 11;
	if (fc_peer_import_cuda_ipc(d, &ipc, ipc.len - 10, 11, 0, &m) !=
	    -ERANGE)
		return 12;
	rc = fc_peer_import_cuda_ipc(d, &ipc, IPC_OFF - 1, IPC_LEN + 1, 0, &m);
	if (rc) {
		fprintf(stderr, "ipc child: fc_peer_import_cuda_ipc: %s\n",
			fc_strerror(rc));
		return 13;
	}
	for (i = 0; i < IPC_LEN; i++)
		((uint8_t *)host->addr)[i] = ipc_byte(i);
	x = xfer(fc_host(host, 0), fc_host(m, 1), IPC_LEN);
	if (fc_dma_run(d, &x, 1, WAIT_MS))
		return 14;
	memset(host->addr, 0, IPC_LEN);
	x = xfer(fc_host(m, 0), fc_host(host, 0), 1);
	if (fc_dma_run(d, &x, 1, WAIT_MS) ||
	    ((uint8_t *)host->addr)[0] != IPC_FILL)
		return 15;
	if (fc_mem_free(d, m) || fc_mem_free(d, m) != -EINVAL)
		return 16;
	return fc_close(d) ? 17 : 0;
}

/* The parent's GPU memory written by another process's board. */
static void test_ipc(void **state)
{
	char hex[2 * sizeof(struct fc_cuda_ipc) + 1], cmd[sizeof(hex) + 64];
	struct fc_cuda_ipc ipc;
	size_t i;
	cu_ptr dp;
	int rc;

	need_gpu();
	dp = gpu_alloc(BUF_LEN, IPC_FILL);
	assert_rc(fc_cuda_ipc_export(0, &ipc), -EINVAL);
	assert_rc(fc_cuda_ipc_export(dp, NULL), -EINVAL);
	assert_rc(fc_cuda_ipc_export((uintptr_t)scratch, &ipc), -EINVAL);
	rc = fc_cuda_ipc_export(dp + 4096, &ipc);
	if (rc == -EOPNOTSUPP) {
		assert_int_equal(cu.free(dp), 0);
		skip_because("no CUDA IPC in this driver");
	}
	assert_ok(rc);
	assert_int_equal(ipc.off, 4096);
	assert_int_equal(ipc.len, BUF_LEN - 4096);
	for (i = 0; i < sizeof(ipc); i++)
		sprintf(hex + 2 * i, "%02x", ((uint8_t *)&ipc)[i]);
	snprintf(cmd, sizeof(cmd), "/proc/%d/exe --ipc-child %s", getpid(),
		 hex);
	rc = system(cmd);
	assert_true(WIFEXITED(rc));
	if (WEXITSTATUS(rc))
		fail_msg("the child process failed at step %d",
			 WEXITSTATUS(rc));
	gpu_read(scratch, dp, BUF_LEN);
	for (i = 0; i < IPC_LEN; i++)
		if (scratch[4096 + IPC_OFF + i] != ipc_byte(i))
			fail_msg("byte %zu written by the other process is "
				 "0x%02x, not 0x%02x",
				 i, scratch[4096 + IPC_OFF + i], ipc_byte(i));
	assert_filled(scratch, 4096 + IPC_OFF, IPC_FILL, "GPU before");
	assert_filled(scratch + 4096 + IPC_OFF + IPC_LEN,
		      BUF_LEN - 4096 - IPC_OFF - IPC_LEN, IPC_FILL,
		      "GPU after");
	assert_int_equal(cu.free(dp), 0);
}

static int setup(void **state)
{
	char name[128];
	void *ctx;

	if (strncmp(dev_name, "emu:", 4))
		no_cuda = "GPU windows are the emulated board's (a kernel "
			  "board takes CUDA's dma-buf: test_peer_lib)";
	else
		no_cuda = cu_load(&cu, &ctx);
	if (!no_cuda && !cu.device_name(name, sizeof(name), cu.dev))
		print_message("[   NOTE   ] CUDA device: %s\n", name);
	scratch = malloc(BIG_LEN);
	if (!scratch)
		return -1;
	return harness_alloc(BUF_LEN, &host_a, &host_b);
}

static int teardown(void **state)
{
	if (cluster[0])
		fcemu_cluster_unlink(cluster); /* a failed test_fabric's */
	free(scratch);
	return harness_close(host_a, host_b);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_host_gpu),
		cmocka_unit_test(test_board_gpu),
		cmocka_unit_test(test_gpu_overlap),
		cmocka_unit_test(test_large),
		cmocka_unit_test(test_bad_ranges),
		cmocka_unit_test(test_fabric),
		cmocka_unit_test(test_ipc),
	};
	int rc;

	if (argc == 3 && !strcmp(argv[1], "--ipc-child"))
		return ipc_child(argv[2]);
	cu_run_again_with_stand_in(argv, false);
	rc = harness_open("test_peer_gpu");

	if (rc)
		return rc;
	return harness_run(tests, setup, teardown);
}
