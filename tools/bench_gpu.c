// SPDX-License-Identifier: MIT
/*
 * fpgacomm-bench gpu: the board's DMA into and out of CUDA device memory
 * (fc_peer_import_cuda), beside cuMemcpyHtoD/DtoH of the same bytes
 * between the same buffers in the same run. On an emulated board the
 * engine itself moves GPU memory with cuMemcpy, so the ratio is the cost
 * of the board model around it. The CUDA driver API is loaded at run time.
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

#define GPU_MAX_SIZES  32
#define GPU_ROUNDS     5
#define GPU_TIMEOUT_MS 60000
#define GPU_EXIT_SKIP  77 /* no GPU: scripts skip, as tests do */

static void gpu_usage(FILE *f)
{
	fprintf(f,
		"Usage: %s gpu [options]\n"
		"DMA between host memory and CUDA device memory (a peer region\n"
		"from fc_peer_import_cuda) beside cuMemcpyHtoD/DtoH of the same\n"
		"bytes, in GB/s (10^9 bytes/s), medians of %u rounds.\n"
		"\n"
		"Options:\n"
		"  -s, --sizes LIST   transfer sizes, comma separated, suffixes K/M\n"
		"                     (default 64K,256K,1M,4M,16M,64M,256M)\n"
		"  -i, --iters N      transfers per size and round (default: as\n"
		"                     many as move 256 MiB, 2 at least)\n"
		"  -P, --pinned       page-lock the host buffer (cuMemHostRegister)\n"
		"  -d, --device DEV   board (default: $FPGACOMM_DEVICE, ...)\n"
		"  -h, --help         show this help\n"
		"Exits %d, saying why, where there is no CUDA driver or GPU.\n",
		prog, GPU_ROUNDS, GPU_EXIT_SKIP);
}

static void gpu_die(const char *what, int err)
{
	fprintf(stderr, "%s gpu: %s: %s\n", prog, what, fc_strerror(err));
	exit(1);
}

static void cu_check(const char *what, cu_res r)
{
	if (r) {
		fprintf(stderr, "%s gpu: %s: CUDA error %d\n", prog, what, r);
		exit(1);
	}
}

static const char *gpu_load(struct bench_cu *cu, char *name, size_t len)
{
	const char *why;
	void *ctx;
	int n, d;

	why = bench_cu_load(cu, &n);
	if (why)
		return why;
	if (!cu->host_register || !cu->host_unregister)
		return "CUDA driver without cuMemHostRegister";
	if (cu->device_get(&d, 0))
		return "cuDeviceGet failed";
	if (cu->retain(&ctx, d) || cu->set_current(ctx))
		return "no CUDA context";
	bench_cu_name(cu, d, name, len);
	return NULL;
}

struct gpu_case {
	struct fc_dev *dev;
	struct bench_cu *cu;
	struct fc_mem *host; /* fc_mem_alloc'd */
	struct fc_mem *gpu;  /* the peer region over dp */
	cu_ptr dp;
};

/* GB/s of @iters board DMAs of @size bytes, into the GPU if @to_gpu. */
static double dma_rate(struct gpu_case *c, uint64_t size, unsigned int iters,
		       bool to_gpu)
{
	struct fc_xfer x = { .len = size };
	unsigned int i;
	double t0;
	int ret;

	x.src = to_gpu ? fc_host(c->host, 0) : fc_host(c->gpu, 0);
	x.dst = to_gpu ? fc_host(c->gpu, 0) : fc_host(c->host, 0);
	t0 = tool_now_s();
	for (i = 0; i < iters; i++) {
		ret = fc_dma_run(c->dev, &x, 1, GPU_TIMEOUT_MS);
		if (ret)
			gpu_die(to_gpu ? "DMA host -> GPU" : "DMA GPU -> host",
				ret);
	}
	return (double)size * iters / (tool_now_s() - t0) / 1e9;
}

/* The same bytes with cuMemcpyHtoD/DtoH. */
static double cu_rate(struct gpu_case *c, uint64_t size, unsigned int iters,
		      bool to_gpu)
{
	unsigned int i;
	double t0;

	t0 = tool_now_s();
	for (i = 0; i < iters; i++)
		cu_check(to_gpu ? "cuMemcpyHtoD" : "cuMemcpyDtoH",
			 to_gpu ? c->cu->htod(c->dp, c->host->addr, size) :
				  c->cu->dtoh(c->host->addr, c->dp, size));
	return (double)size * iters / (tool_now_s() - t0) / 1e9;
}

/* One row: medians over rounds, DMA and cuMemcpy alternating in each. */
static void gpu_row(struct gpu_case *c, uint64_t size, unsigned int iters)
{
	double dma[2][GPU_ROUNDS], cpy[2][GPU_ROUNDS], ratio[2][GPU_ROUNDS];
	double m_dma[2], m_cpy[2], m_ratio[2];
	unsigned int r, dir;
	char sz[32];

	/* A warm-up of each, not timed. */
	for (dir = 0; dir < 2; dir++) {
		dma_rate(c, size, 1, !dir);
		cu_rate(c, size, 1, !dir);
	}
	for (r = 0; r < GPU_ROUNDS; r++) {
		for (dir = 0; dir < 2; dir++) {
			dma[dir][r] = dma_rate(c, size, iters, !dir);
			cpy[dir][r] = cu_rate(c, size, iters, !dir);
			ratio[dir][r] = dma[dir][r] / cpy[dir][r];
		}
	}
	for (dir = 0; dir < 2; dir++) {
		m_dma[dir] = tool_median(dma[dir], GPU_ROUNDS);
		m_cpy[dir] = tool_median(cpy[dir], GPU_ROUNDS);
		m_ratio[dir] = tool_median(ratio[dir], GPU_ROUNDS);
	}
	printf("%-9s %6u %10.2f %10.2f %6.2f %10.2f %10.2f %6.2f\n",
	       human_size(size, 0, sz, sizeof(sz)), iters, m_dma[0], m_cpy[0],
	       m_ratio[0], m_dma[1], m_cpy[1], m_ratio[1]);
	fflush(stdout);
}

static unsigned int gpu_parse_sizes(const char *s, uint64_t *sizes)
{
	return parse_list(s, sizes, GPU_MAX_SIZES, "KMG", 1, FC_DESC_MAX_LEN,
			  "size");
}

int bench_gpu_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "sizes", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'i' },
		{ "pinned", no_argument, NULL, 'P' },
		{ "device", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t sizes[GPU_MAX_SIZES], v, max = 0;
	unsigned int nsizes = 0, iters = 0, s, n;
	const char *devname = NULL, *why;
	struct gpu_case c = { 0 };
	struct bench_cu cu = { 0 };
	struct fc_info info;
	bool pinned = false;
	char gpu_name[128];
	int ch, ret;

	optind = 2; /* argv[1] is "gpu" */
	while ((ch = getopt_long(argc, argv, "s:i:Pd:h", opts, NULL)) != -1) {
		switch (ch) {
		case 's':
			nsizes = gpu_parse_sizes(optarg, sizes);
			break;
		case 'i':
			if (parse_u64(optarg, &v) || !v || v > 1000000)
				usage_error("bad iteration count '%s'", optarg);
			iters = (unsigned int)v;
			break;
		case 'P':
			pinned = true;
			break;
		case 'd':
			devname = optarg;
			break;
		default:
			other_option(ch, gpu_usage);
		}
	}
	if (optind != argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	if (!nsizes)
		for (v = 64 << 10; v <= (256u << 20); v <<= 2)
			sizes[nsizes++] = v;
	for (s = 0; s < nsizes; s++)
		if (sizes[s] > max)
			max = sizes[s];

	why = gpu_load(&cu, gpu_name, sizeof(gpu_name));
	if (why) {
		printf("%s gpu: skipped: %s\n", prog, why);
		return GPU_EXIT_SKIP;
	}
	ret = fc_open(&c.dev, devname);
	if (ret)
		gpu_die("open", ret);
	ret = fc_query(c.dev, &info);
	if (ret)
		gpu_die("query", ret);
	ret = fc_mem_alloc(c.dev, max, 0, &c.host);
	if (ret)
		gpu_die("fc_mem_alloc", ret);
	memset(c.host->addr, 0xa5, max);
	if (pinned)
		cu_check("cuMemHostRegister",
			 cu.host_register(c.host->addr, max, 0));
	cu_check("cuMemAlloc", cu.alloc(&c.dp, max));
	ret = fc_peer_import_cuda(c.dev, c.dp, max, 0, &c.gpu);
	if (ret)
		gpu_die("fc_peer_import_cuda", ret);
	c.cu = &cu;

	printf("# board %s, GPU %s, host memory %s\n", info.name, gpu_name,
	       pinned ? "page-locked" : "pageable");
	printf("# GB/s = 10^9 bytes/s, medians of %u rounds\n", GPU_ROUNDS);
	printf("%-9s %6s %10s %10s %6s %10s %10s %6s\n", "size", "iters",
	       "DMA h2d", "cuMemcpy", "ratio", "DMA d2h", "cuMemcpy", "ratio");
	for (s = 0; s < nsizes; s++) {
		n = iters;
		if (!n) {
			v = (256ull << 20) / sizes[s];
			n = v < 2 ? 2 : (unsigned int)v;
		}
		gpu_row(&c, sizes[s], n);
	}

	ret = fc_mem_free(c.dev, c.gpu);
	if (ret)
		gpu_die("fc_mem_free", ret);
	cu_check("cuMemFree", cu.free(c.dp));
	if (pinned)
		cu_check("cuMemHostUnregister",
			 cu.host_unregister(c.host->addr));
	fc_mem_free(c.dev, c.host);
	fc_close(c.dev);
	return 0;
}
