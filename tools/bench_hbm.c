// SPDX-License-Identifier: MIT
/*
 * fpgacomm-bench hbm: the HBM2 paper's benchmark on one board. A random
 * uint32 array in board memory, every bit inverted by stream programs on
 * the local stores, read back and checked on the host, beside a host loop
 * inverting the same array.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <fpgacomm/fpgacomm.h>

#include "bench_hbm.h"
#include "tool_util.h"

#define TIMEOUT_MS 60000

static void die(const char *what, int err)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, fc_strerror(err));
	exit(1);
}

#define HBM_MAX_LIST 16

static void hbm_usage(FILE *f)
{
	fprintf(f,
		"Usage: %s hbm [options]\n"
		"The HBM2 paper's benchmark: a random uint32 array in board memory,\n"
		"every bit inverted by stream programs on the local stores (copy\n"
		"in, invert, copy out, in chunks), read back and checked on the\n"
		"host; beside it a host loop inverting the same array. GB/s count\n"
		"the array's bytes over the time from the first start to the last\n"
		"stream's end (host loop: the loop's time). Each LS works on its\n"
		"own part of the array, placed in a pseudo-channel of its own.\n"
		"\n"
		"Options:\n"
		"  -s, --sizes LIST    array sizes (default 1M,4M,16M,64M)\n"
		"  -l, --ls LIST       local stores used (default 1,2,4,... all)\n"
		"  -S, --streams LIST  streams per LS, 1 or 2 (default 1,2)\n"
		"  -c, --chunk SIZE    bytes per step (default 64K: the paper's\n"
		"                      16 Ki elements; with 2 streams, half an LS each)\n"
		"  -r, --rounds N      timed rounds per case, best kept (default 3)\n"
		"  -p, --passes N      invert each chunk N times in the LS (odd;\n"
		"                      default 1): more work per byte of HBM, to see\n"
		"                      the cores scale where memory does not\n"
		"  -I, --in-place      invert the array where it is, as the paper's\n"
		"                      data[i] = ~data[i] (default: into a second\n"
		"                      array, in a pseudo-channel of its own)\n"
		"With a timing model on (FPGACOMM_EMU_MODEL, docs/model.md) the model's\n"
		"GB/s of the array, in simulated time, are printed beside ours.\n"
		"  -d, --device DEV    board (default: $FPGACOMM_DEVICE, ...)\n"
		"  -j, --json          one JSON object per case\n"
		"  -h, --help          show this help\n",
		prog);
}

static unsigned int hbm_list(const char *s, uint64_t *v, const char *what,
			     bool size)
{
	return parse_list(s, v, HBM_MAX_LIST, size ? "KMG" : NULL, 1,
			  UINT64_MAX, what);
}

struct hbm_case {
	uint64_t len, chunk;
	unsigned int nls, nstreams;
	unsigned int passes; /* invert passes per chunk: odd */
	bool in_place;	     /* destination = source */
};

/* The time one run of the array takes on the board, in microseconds. */
static double hbm_run(struct fc_dev *dev, const struct hbm_case *c,
		      const uint64_t *src, const uint64_t *dst)
{
	uint64_t part = c->len / c->nls;
	unsigned int l, s;
	double t0;
	int ret;

	t0 = tool_now_us();
	for (l = 0; l < c->nls; l++) {
		for (s = 0; s < c->nstreams; s++) {
			uint64_t chunks = part / c->chunk;
			uint32_t mine =
				(uint32_t)((chunks - s + c->nstreams - 1) /
					   c->nstreams);
			uint32_t off = (uint32_t)(s * c->chunk);
			uint32_t step = (uint32_t)(c->nstreams * c->chunk);
			struct fc_sprog *p;

			if (!mine)
				continue;
			/* stream_for (i = s; i < chunks; i += nstreams) */
			ret = fc_sprog_new(&p);
			if (!ret)
				ret = fc_sprog_for(p, mine);
			if (!ret)
				ret = fc_sprog_copy_in(p, off, src[l] + off,
						       (uint32_t)c->chunk,
						       step);
			/* more passes: work in the LS, not in HBM */
			if (!ret && c->passes > 1)
				ret = fc_sprog_for(p, c->passes);
			if (!ret)
				ret = fc_sprog_run(p, FC_KERN_INVERT, off, off,
						   (uint32_t)(c->chunk / 4), 0);
			if (!ret && c->passes > 1)
				ret = fc_sprog_end_for(p);
			if (!ret)
				ret = fc_sprog_copy_out(p, dst[l] + off, step,
							off,
							(uint32_t)c->chunk);
			if (!ret)
				ret = fc_sprog_end_for(p);
			if (!ret)
				ret = fc_stream_start(dev, l, s, p);
			fc_sprog_free(p);
			if (ret)
				die("stream start", ret);
		}
	}
	for (l = 0; l < c->nls; l++)
		for (s = 0; s < c->nstreams; s++) {
			ret = fc_stream_wait(dev, l, s, TIMEOUT_MS);
			if (ret)
				die("stream wait", ret);
		}
	return tool_now_us() - t0;
}

/* Move [0, len) of @mem to or from the LS parts on the board. */
static void hbm_copy(struct fc_dev *dev, struct fc_mem *mem,
		     const struct hbm_case *c, const uint64_t *at, bool in)
{
	uint64_t part = c->len / c->nls;
	struct fc_xfer x;
	unsigned int l;
	int ret;

	for (l = 0; l < c->nls; l++) {
		memset(&x, 0, sizeof(x));
		x.src = in ? fc_host(mem, l * part) : fc_board(at[l]);
		x.dst = in ? fc_board(at[l]) : fc_host(mem, l * part);
		x.len = part;
		ret = fc_dma_run(dev, &x, 1, TIMEOUT_MS);
		if (ret)
			die("dma", ret);
	}
}

/*
 * The host's loop: the emulated board's invert kernel, 4 elements to a
 * 16-byte vector (emu/kernels.c), over the whole array at once. Both
 * sides run the same inner loop, so the ratio measures the streams'
 * machinery: copies through the LS, scheduling, start and wait.
 */
typedef uint32_t v4u __attribute__((vector_size(16)));

static void invert(const uint32_t *src, uint32_t *dst, uint64_t n)
{
	uint64_t i;
	v4u x;

	for (i = 0; i + 4 <= n; i += 4) {
		memcpy(&x, src + i, 16);
		x = ~x;
		memcpy(dst + i, &x, 16);
	}
	for (; i < n; i++)
		dst[i] = ~src[i];
}

/* With more passes, chunk by chunk as the LS do: the rest in the cache. */
static double host_invert(const uint32_t *src, uint32_t *dst,
			  const struct hbm_case *c)
{
	uint64_t n = c->chunk / 4, off;
	double t0 = tool_now_us();
	unsigned int p;

	if (c->passes == 1) {
		invert(src, dst, c->len / 4);
		return tool_now_us() - t0;
	}
	for (off = 0; off < c->len / 4; off += n) {
		invert(src + off, dst + off, n);
		for (p = 1; p < c->passes; p++)
			invert(dst + off, dst + off, n);
	}
	return tool_now_us() - t0;
}

/*
 * One case: the array split over the LS, copied in, inverted in a warm-up
 * round and @rounds timed ones, each read back and checked, beside the
 * host loop. RETURN VALUE: 0, or 1 when an element was not inverted.
 */
static int hbm_case(struct fc_dev *dev, const struct fc_hbm_info *hi,
		    const struct hbm_case *cs, struct fc_mem *in,
		    struct fc_mem *out, uint32_t *host_out, unsigned int rounds,
		    bool json)
{
	uint64_t src[FC_MAX_LS], dst[FC_MAX_LS], part = cs->len / cs->nls, i,
						 bad;
	const uint32_t *want = in->addr, *got = out->addr;
	double best = 0, hbest = 0, t, sim_us = 0;
	uint64_t s0, s1;
	unsigned int l, r;
	char size[16];
	bool sim;
	int ret;

	if (part % cs->chunk || part > hi->pch_bytes) {
		fprintf(stderr,
			"%s: %llu bytes over %u LS: parts must be whole "
			"chunks within a pseudo-channel; skipped\n",
			prog, (unsigned long long)cs->len, cs->nls);
		return 0;
	}
	for (l = 0; l < cs->nls; l++) {
		ret = fc_hbm_alloc(dev, part, (2 * l) % hi->pchannels, 0,
				   &src[l]);
		dst[l] = src[l];
		if (!ret && !cs->in_place)
			ret = fc_hbm_alloc(dev, part,
					   (2 * l + 1) % hi->pchannels, 0,
					   &dst[l]);
		if (ret)
			die("board memory", ret);
	}
	hbm_copy(dev, in, cs, src, true);
	sim = fc_sim_time_ns(dev, &s0) == 0;
	/* round 0 warms up: board pages are backed on first write */
	for (r = 0; r <= rounds; r++) {
		memset(out->addr, 0, cs->len);
		if (cs->in_place && r)
			hbm_copy(dev, in, cs, src, true);
		if (sim)
			fc_sim_time_ps(dev, &s0);
		t = hbm_run(dev, cs, src, dst);
		if (sim && !fc_sim_time_ps(dev, &s1))
			sim_us = (double)(s1 - s0) /
				 1e6; /* the same each round */
		hbm_copy(dev, out, cs, dst, false);
		for (i = 0, bad = 0; i < cs->len / 4; i++)
			bad += got[i] != ~want[i];
		if (bad) {
			fprintf(stderr,
				"%s: %llu of %llu elements not inverted "
				"(lost writes)\n",
				prog, (unsigned long long)bad,
				(unsigned long long)cs->len / 4);
			return 1;
		}
		if (r && (!best || t < best))
			best = t;
		t = host_invert(want, host_out, cs);
		if (r && (!hbest || t < hbest))
			hbest = t;
	}
	for (l = 0; l < cs->nls; l++) {
		fc_hbm_free(dev, src[l]);
		if (!cs->in_place)
			fc_hbm_free(dev, dst[l]);
	}
	if (json) {
		printf("{\"size\": %llu, \"ls\": %u, \"streams\": %u, \"passes\": %u, "
		       "\"in_place\": %s, \"board_gbps\": %.3f, \"host_gbps\": %.3f, "
		       "\"ratio\": %.3f, \"verify\": \"ok\"",
		       (unsigned long long)cs->len, cs->nls, cs->nstreams,
		       cs->passes, cs->in_place ? "true" : "false",
		       cs->len / best / 1e3, cs->len / hbest / 1e3,
		       hbest / best);
		/* the model's: the array, and the bytes read and written */
		if (sim_us > 0)
			printf(", \"model_gbps\": %.3f, \"model_moved_gbps\": %.3f",
			       cs->len / sim_us / 1e3,
			       2 * cs->len / sim_us / 1e3);
		printf("}\n");
	} else {
		printf("%-8s %4u %7u %10.2f %10.2f %8.2f",
		       human_size(cs->len, 0, size, sizeof(size)), cs->nls,
		       cs->nstreams, cs->len / best / 1e3,
		       cs->len / hbest / 1e3, hbest / best);
		if (sim_us > 0)
			printf(" %10.2f", cs->len / sim_us / 1e3);
		printf("\n");
	}
	fflush(stdout);
	return 0;
}

/* What the command line asks for. */
struct hbm_args {
	uint64_t sizes[HBM_MAX_LIST], nls[HBM_MAX_LIST], nst[HBM_MAX_LIST];
	unsigned int n_sizes, n_ls, n_st, rounds, passes;
	uint64_t chunk;
	const char *devname;
	bool json, in_place;
};

static void hbm_parse_args(int argc, char **argv, struct hbm_args *a)
{
	static const struct option opts[] = {
		{ "sizes", required_argument, NULL, 's' },
		{ "ls", required_argument, NULL, 'l' },
		{ "streams", required_argument, NULL, 'S' },
		{ "chunk", required_argument, NULL, 'c' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "passes", required_argument, NULL, 'p' },
		{ "in-place", no_argument, NULL, 'I' },
		{ "device", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const uint64_t default_sizes[] = { 1 << 20, 4 << 20, 16 << 20,
						  64 << 20 };
	unsigned int k;
	uint64_t v;
	int c;

	memset(a, 0, sizeof(*a));
	memcpy(a->sizes, default_sizes, sizeof(default_sizes));
	a->n_sizes = 4;
	a->nst[0] = 1;
	a->nst[1] = 2;
	a->n_st = 2;
	a->chunk = 64 << 10;
	a->rounds = 3;
	a->passes = 1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "s:l:S:c:r:p:d:jIh", opts, NULL)) !=
	       -1) {
		switch (c) {
		case 's':
			a->n_sizes = hbm_list(optarg, a->sizes, "size", true);
			break;
		case 'l':
			a->n_ls = hbm_list(optarg, a->nls, "LS count", false);
			break;
		case 'S':
			a->n_st =
				hbm_list(optarg, a->nst, "stream count", false);
			for (k = 0; k < a->n_st; k++)
				if (a->nst[k] > FC_LS_STREAMS)
					usage_error("streams per LS: 1 or 2");
			break;
		case 'c':
			if (parse_size(optarg, &a->chunk, "K", true) ||
			    !a->chunk || a->chunk % 4)
				usage_error("bad chunk '%s'", optarg);
			break;
		case 'r':
			if (parse_u64(optarg, &v) || !v || v > 1000)
				usage_error("bad rounds '%s'", optarg);
			a->rounds = (unsigned int)v;
			break;
		case 'p':
			if (parse_u64(optarg, &v) || !(v % 2) || v > 1001)
				usage_error("bad passes '%s' (odd, 1..1001)",
					    optarg);
			a->passes = (unsigned int)v;
			break;
		case 'd':
			a->devname = optarg;
			break;
		case 'j':
			a->json = true;
			break;
		case 'I':
			a->in_place = true;
			break;
		default:
			other_option(c, hbm_usage);
		}
	}
	if (optind != argc)
		usage_error("unexpected argument '%s'", argv[optind]);
}

/* The local-store counts against the board's; by default 1, 2, 4, ... all. */
static void hbm_check_board(struct hbm_args *a, const struct fc_hbm_info *hi)
{
	unsigned int k;
	uint64_t v;

	if (a->chunk * FC_LS_STREAMS > hi->ls_size)
		usage_error("chunk: two must fit an LS of %u bytes",
			    hi->ls_size);
	if (!a->n_ls)
		for (v = 1; v <= hi->num_ls; v *= 2)
			a->nls[a->n_ls++] = v;
	for (k = 0; k < a->n_ls; k++)
		if (a->nls[k] > hi->num_ls)
			usage_error("the board has %u local stores",
				    hi->num_ls);
}

/* The input array of random elements and the output, @max bytes each. */
static void hbm_buffers(struct fc_dev *dev, uint64_t max, struct fc_mem **in,
			struct fc_mem **out, uint32_t **host_out)
{
	uint64_t i;
	int ret;

	ret = fc_mem_alloc(dev, max, 0, in);
	if (!ret)
		ret = fc_mem_alloc(dev, max, 0, out);
	*host_out = malloc(max);
	if (ret || !*host_out)
		die("host memory", ret ? ret : -ENOMEM);
	srandom(1);
	for (i = 0; i < max / 4; i++)
		((uint32_t *)(*in)->addr)[i] = (uint32_t)random() ^
					       ((uint32_t)random() << 16);
}

int bench_hbm_main(int argc, char **argv)
{
	struct fc_mem *in, *out;
	struct fc_hbm_info hi;
	struct hbm_args a;
	struct fc_dev *dev;
	unsigned int i, b, k;
	uint32_t *host_out;
	uint64_t max = 0, v;
	int ret;

	hbm_parse_args(argc, argv, &a);
	ret = fc_open(&dev, a.devname);
	if (ret)
		die("open", ret);
	ret = fc_hbm_query(dev, &hi);
	if (ret)
		die("hbm", ret);
	hbm_check_board(&a, &hi);
	for (i = 0; i < a.n_sizes; i++)
		if (a.sizes[i] > max)
			max = a.sizes[i];
	hbm_buffers(dev, max, &in, &out, &host_out);

	if (!a.json) {
		printf("# %s hbm: %u LS of %u KiB, %u pseudo-channels, chunk %llu KiB, "
		       "%u pass(es), best of %u rounds\n",
		       prog, hi.num_ls, hi.ls_size >> 10, hi.pchannels,
		       (unsigned long long)a.chunk >> 10, a.passes, a.rounds);
		printf("%-8s %4s %7s %10s %10s %8s%s\n", "size", "LS",
		       "streams", "board GB/s", "host GB/s", "ratio",
		       fc_sim_time_ns(dev, &v) ? "" : " model GB/s");
	}
	for (i = 0; i < a.n_sizes; i++) {
		for (b = 0; b < a.n_ls; b++) {
			for (k = 0; k < a.n_st; k++) {
				struct hbm_case cs = { a.sizes[i],
						       a.chunk,
						       (unsigned int)a.nls[b],
						       (unsigned int)a.nst[k],
						       a.passes,
						       a.in_place };

				ret = hbm_case(dev, &hi, &cs, in, out, host_out,
					       a.rounds, a.json);
				if (ret)
					return ret;
			}
		}
	}
	if (!a.json)
		printf("# ratio: board GB/s over host GB/s, each the best of its rounds;\n"
		       "# every round's result read back and checked element by element\n");
	free(host_out);
	fc_mem_free(dev, in);
	fc_mem_free(dev, out);
	fc_close(dev);
	return 0;
}
