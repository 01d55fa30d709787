// SPDX-License-Identifier: MIT
/*
 * fpgacomm-bench gpu-fabric: GPU to GPU across two boards. Run as the two
 * ranks of a world (fpgacomm-run -n 2 -- fpgacomm-bench gpu-fabric), each
 * with its own GPU (CUDA device = rank, modulo the devices there are).
 * Rank 0 measures, in the same run and taking turns in every round:
 *  - put: fc_put() from its GPU memory into rank 1's (a window entry of
 *    rank 1's board), which returns once the bytes are in rank 1's GPU;
 *  - peer: cuMemcpyPeer() from its GPU to a buffer on the other device
 *    in its own process (what one process with both GPUs would do);
 *  - 3copy: cuMemcpyDtoH to host memory, fc_put() to rank 1's host
 *    memory, then rank 1's cuMemcpyHtoD, each side told by a barrier.
 * Latency (8 B, 4 KiB) in microseconds per transfer, bandwidth in GB/s
 * (10^9 bytes/s), medians of the rounds and the median per-round ratios.
 * The CUDA driver API is loaded at run time; without it, exit 77.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <fpgacomm/fpgacomm.h>

#include "bench_cuda.h"
#include "bench_gpu.h"
#include "tool_util.h"

#define GF_MAX_SIZES  32
#define GF_MAX_ROUNDS 32
#define GF_T_MS	      120000
#define GF_SKIP	      77

struct gf {
	struct fc_dev *dev;
	struct fc_group *world;
	uint32_t rank;
	struct bench_cu cu;
	void *ctx, *ctx_other;
	bool p2p; /* cuMemcpyPeer goes device to device, not through the host */
	cu_ptr dp, dp_other; /* ours; rank 0's on the other device */
	struct fc_mem *gpu, *host;
	uint64_t peer_gpu, peer_host; /* rank 1's, by fabric address */
	unsigned int rounds;
};

static void gf_usage(FILE *f)
{
	fprintf(f,
		"Usage: fpgacomm-run -n 2 -- %s gpu-fabric [options]\n"
		"GPU to GPU between two ranks on two boards: fc_put of GPU\n"
		"memory beside cuMemcpyPeer and beside the three-copy path\n"
		"(DtoH, host put, HtoD), in the same run.\n"
		"\n"
		"Options:\n"
		"  -s, --sizes LIST   bandwidth sizes (default 64K,256K,1M,4M,16M,\n"
		"                     64M,256M); latency is 8 B and 4 KiB\n"
		"  -r, --rounds N     rounds (default 5)\n"
		"  -h, --help         show this help\n"
		"Exits %d, saying why, where there is no CUDA driver or GPU.\n",
		prog, GF_SKIP);
}

static void gf_die(const char *what, int err)
{
	fprintf(stderr, "%s gpu-fabric: %s: %s\n", prog, what,
		fc_strerror(err));
	exit(1);
}

static void cu_ok(const char *what, cu_res r)
{
	if (r) {
		fprintf(stderr, "%s gpu-fabric: %s: CUDA error %d\n", prog,
			what, r);
		exit(1);
	}
}

/*
 * The baseline is cuMemcpyPeer at its best: device to device, which it is
 * only once the current context may reach the other device's memory (else
 * the driver stages the copy through host memory).
 */
static void gf_enable_peer(struct gf *g, int d, int other)
{
	struct bench_cu *cu = &g->cu;
	int can = 0;
	cu_res r;

	if (d == other || !cu->can_peer || !cu->enable_peer ||
	    cu->can_peer(&can, d, other) || !can)
		return;
	r = cu->enable_peer(g->ctx_other, 0);
	g->p2p = !r || r == 704; /* CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED */
}

/* Load the driver; take device @rank (modulo the count) and the next. */
static const char *gf_load(struct gf *g, char *name, size_t len)
{
	struct bench_cu *cu = &g->cu;
	const char *why;
	int n, d, other;

	why = bench_cu_load(cu, &n);
	if (why)
		return why;
	if (!cu->peer || !cu->sync)
		return "CUDA driver without cuMemcpyPeer";
	if (cu->device_get(&d, (int)g->rank % n) ||
	    cu->device_get(&other, ((int)g->rank + 1) % n))
		return "cuDeviceGet failed";
	if (cu->retain(&g->ctx, d) || cu->retain(&g->ctx_other, other) ||
	    cu->set_current(g->ctx))
		return "no CUDA context";
	bench_cu_name(cu, d, name, len);
	gf_enable_peer(g, d, other);
	return NULL;
}

static void barrier(struct gf *g)
{
	int ret = fc_barrier_group(g->world, GF_T_MS);

	if (ret)
		gf_die("barrier", ret);
}

/* Seconds for @iters transfers of @size by @way (0 put, 1 peer, 2 3copy);
 * both ranks call it, rank 0 times it. */
static double gf_time(struct gf *g, int way, uint64_t size, unsigned int iters)
{
	double t0;
	int ret;

	barrier(g);
	t0 = tool_now_s();
	for (unsigned int i = 0; i < iters; i++) {
		if (way == 2) {
			if (!g->rank) {
				cu_ok("cuMemcpyDtoH",
				      g->cu.dtoh(g->host->addr, g->dp, size));
				ret = fc_put(g->dev, g->peer_host, g->host, 0,
					     size, GF_T_MS);
				if (ret)
					gf_die("fc_put host", ret);
			}
			barrier(g); /* rank 1: the bytes are in host memory */
			if (g->rank)
				cu_ok("cuMemcpyHtoD",
				      g->cu.htod(g->dp, g->host->addr, size));
			barrier(g); /* rank 0: ... and in the GPU */
		} else if (!g->rank && way == 0) {
			ret = fc_put(g->dev, g->peer_gpu, g->gpu, 0, size,
				     GF_T_MS);
			if (ret)
				gf_die("fc_put GPU", ret);
		} else if (!g->rank) {
			cu_ok("cuMemcpyPeer",
			      g->cu.peer(g->dp_other, g->ctx_other, g->dp,
					 g->ctx, size));
		}
	}
	if (!g->rank && way == 1)
		cu_ok("cuCtxSynchronize", g->cu.sync());
	return tool_now_s() - t0;
}

/* One row: each way in every round, in turn; @lat: microseconds. */
static void gf_row(struct gf *g, uint64_t size, bool lat)
{
	unsigned int iters = lat ? 200 : 1, r, w;
	double v[3][GF_MAX_ROUNDS], rp[GF_MAX_ROUNDS], r3[GF_MAX_ROUNDS], t;
	char sz[32];

	if (!lat && size < (64ull << 20))
		iters = (unsigned int)((64ull << 20) / size);
	for (w = 0; w < 3; w++)
		gf_time(g, (int)w, size, 1); /* warm-up */
	for (r = 0; r < g->rounds; r++) {
		for (w = 0; w < 3; w++) {
			/* a different way first in each round */
			unsigned int way = (w + r) % 3;

			t = gf_time(g, (int)way, size, iters);
			v[way][r] = lat ? t / iters * 1e6 :
					  (double)size * iters / t / 1e9;
		}
		/* > 1: the put is better (faster, or more GB/s) */
		rp[r] = lat ? v[1][r] / v[0][r] : v[0][r] / v[1][r];
		r3[r] = lat ? v[2][r] / v[0][r] : v[0][r] / v[2][r];
	}
	if (g->rank)
		return;
	printf("%-9s %-5s %10.2f %10.2f %10.2f %8.2f %8.2f\n",
	       human_size(size, 0, sz, sizeof(sz)), lat ? "us" : "GB/s",
	       tool_median(v[0], g->rounds), tool_median(v[1], g->rounds),
	       tool_median(v[2], g->rounds), tool_median(rp, g->rounds),
	       tool_median(r3, g->rounds));
	fflush(stdout);
}

/* Rank 0 checks that a put reached rank 1's GPU: rank 1 sends it back. */
static void gf_verify(struct gf *g, uint64_t size)
{
	uint8_t *h = g->host->addr;
	uint64_t bad = 0;
	int ret;

	for (uint64_t i = 0; i < size; i++)
		h[i] = (uint8_t)(i * 7 + 3);
	if (!g->rank) {
		cu_ok("cuMemcpyHtoD", g->cu.htod(g->dp, h, size));
		ret = fc_put(g->dev, g->peer_gpu, g->gpu, 0, size, GF_T_MS);
		if (ret)
			gf_die("fc_put GPU", ret);
	}
	barrier(g);
	if (g->rank) {
		memset(h, 0, size);
		cu_ok("cuMemcpyDtoH", g->cu.dtoh(h, g->dp, size));
		for (uint64_t i = 0; i < size; i++)
			bad += h[i] != (uint8_t)(i * 7 + 3);
		if (bad) {
			fprintf(stderr,
				"%s gpu-fabric: %llu bytes wrong in "
				"the GPU put\n",
				prog, (unsigned long long)bad);
			exit(1);
		}
	}
	barrier(g);
}

static void gf_setup(struct gf *g, uint64_t max)
{
	uint64_t mine[2], all[4];
	int ret;

	ret = fc_mem_alloc(g->dev, max, 0, &g->host);
	if (ret)
		gf_die("fc_mem_alloc", ret);
	cu_ok("cuMemAlloc", g->cu.alloc(&g->dp, max));
	if (!g->rank) {
		cu_ok("cuCtxSetCurrent", g->cu.set_current(g->ctx_other));
		cu_ok("cuMemAlloc (other device)",
		      g->cu.alloc(&g->dp_other, max));
		cu_ok("cuCtxSetCurrent", g->cu.set_current(g->ctx));
	}
	ret = fc_peer_import_cuda(g->dev, g->dp, max, 0, &g->gpu);
	if (ret)
		gf_die("fc_peer_import_cuda", ret);
	ret = fc_mem_fabric_addr(g->dev, g->gpu, 0, &mine[0]);
	if (!ret)
		ret = fc_mem_fabric_addr(g->dev, g->host, 0, &mine[1]);
	if (ret)
		gf_die("fc_mem_fabric_addr", ret);
	ret = fc_allgather(g->world, mine, all, 2, FC_UINT64, GF_T_MS);
	if (ret)
		gf_die("allgather", ret);
	g->peer_gpu = all[2];
	g->peer_host = all[3];
}

static unsigned int gf_sizes(const char *s, uint64_t *sizes)
{
	return parse_list(s, sizes, GF_MAX_SIZES, "KMG", 1, FC_DESC_MAX_LEN,
			  "size");
}

int bench_gpu_fabric_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "sizes", required_argument, NULL, 's' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t sizes[GF_MAX_SIZES], v, max = 4096;
	unsigned int nsizes = 0, s;
	struct gf g = { .rounds = 5 };
	const char *why;
	char name[128];
	int ch, ret;

	optind = 2; /* argv[1] is "gpu-fabric" */
	while ((ch = getopt_long(argc, argv, "s:r:h", opts, NULL)) != -1) {
		switch (ch) {
		case 's':
			nsizes = gf_sizes(optarg, sizes);
			break;
		case 'r':
			if (parse_u64(optarg, &v) || !v || v > GF_MAX_ROUNDS)
				usage_error("bad round count '%s' (1..%u)",
					    optarg, GF_MAX_ROUNDS);
			g.rounds = (unsigned int)v;
			break;
		default:
			other_option(ch, gf_usage);
		}
	}
	if (optind != argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	if (!nsizes)
		for (v = 64 << 10; v <= (256u << 20); v <<= 2)
			sizes[nsizes++] = v;
	for (s = 0; s < nsizes; s++)
		max = sizes[s] > max ? sizes[s] : max;

	ret = fc_open(&g.dev, NULL);
	if (ret)
		gf_die("open", ret);
	ret = fc_group_world(g.dev, &g.world);
	if (ret)
		gf_die("world (run it under fpgacomm-run -n 2)", ret);
	g.rank = (uint32_t)fc_group_rank(g.world);
	if (fc_group_size(g.world) != 2)
		usage_error("two ranks, one per board and GPU");
	/* every rank skips alike: no GPU on this machine */
	why = gf_load(&g, name, sizeof(name));
	if (why) {
		if (!g.rank)
			printf("%s gpu-fabric: skipped: %s\n", prog, why);
		return GF_SKIP;
	}
	gf_setup(&g, max);
	gf_verify(&g, max < (1u << 20) ? max : (1u << 20));
	if (!g.rank) {
		printf("# 2 boards, rank 0 GPU: %s; medians of %u rounds\n",
		       name, g.rounds);
		printf("# put = fc_put GPU -> remote GPU; peer = cuMemcpyPeer "
		       "(%s); 3copy = DtoH + host put + HtoD\n",
		       g.p2p ? "peer access on: device to device" :
			       "no peer access: through the host");
		printf("# ratios: > 1 means the put is faster\n");
		printf("%-9s %-5s %10s %10s %10s %8s %8s\n", "size", "unit",
		       "put", "peer", "3copy", "put/peer", "put/3cp");
	}
	gf_row(&g, 8, true);
	gf_row(&g, 4096, true);
	for (s = 0; s < nsizes; s++)
		gf_row(&g, sizes[s], false);
	barrier(&g);
	fc_mem_free(g.dev, g.gpu);
	g.cu.free(g.dp);
	if (g.dp_other)
		g.cu.free(g.dp_other);
	fc_mem_free(g.dev, g.host);
	fc_group_free(g.world);
	fc_close(g.dev);
	return 0;
}
