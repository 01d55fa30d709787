// SPDX-License-Identifier: MIT
/*
 * fpgacomm-bench sort: the distributed sort (fc_sort) over the world, as
 * keys per second, GB/s of keys, the passes it made over the network (m)
 * and over memory (A), and what OPTWEB's model predicts from them:
 *
 *   throughput = ranks * min(Bmem / A, Bnet / m)
 *
 * with Bmem a rank's memcpy bandwidth and Bnet its alltoall bandwidth,
 * both measured in the same run, on the same bytes, with every rank
 * running at once. scripts/bench/sort-mpi.c measures the same algorithms
 * over MPI the same way, for scripts/bench-sort.sh.
 *
 * The keys: key g (g = the rank's first global index + index) is
 * mix(seed + g) cut to the key bits, the same in both programs. Any count
 * splits: each rank takes keys / ranks, and the first keys % ranks ranks
 * one more (so an even split is the MPI program's). With
 * --serial, one process (no cluster) sorts all the keys with a plain
 * local counting or radix sort, and copies them with memcpy, as the
 * single-process baselines.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <fpgacomm/fpgacomm.h>

#include "bench_sort.h"
#include "tool_util.h"

#define SORT_TIMEOUT_MS 600000
#define SORT_SEED	0x50a7ull

static void sort_die(const char *what, int err)
{
	fprintf(stderr, "%s sort: %s: %s\n", prog, what, fc_strerror(err));
	exit(1);
}

static void sort_usage(FILE *f)
{
	fprintf(f,
		"Usage: %s sort [options]\n"
		"The distributed sort over the world; run it as every rank, e.g.\n"
		"  fpgacomm-run -n 4 -- %s sort -n 16M -b 6\n"
		"Rank 0 prints one line per algorithm.\n"
		"\n"
		"Options:\n"
		"  -n, --keys N       keys in all, suffixes K/M (default 1M);\n"
		"                     each rank holds N / ranks\n"
		"  -b, --bits B       key bits, 1..32 (default 32)\n"
		"  -a, --algo LIST    counting, onepass, radix_net, comma separated\n"
		"                     (default: counting for B <= 20, else onepass)\n"
		"  -i, --iters N      timed sorts per algorithm (default 3; the\n"
		"                     median is printed), after one untimed\n"
		"      --serial       one process: a local sort and a memcpy of\n"
		"                     all the keys (no cluster needed)\n"
		"      --header       print the column header first\n"
		"  -d, --device DEV   board (default: $FPGACOMM_DEVICE, ...)\n"
		"  -h, --help         show this help\n"
		"With a timing model on (FPGACOMM_EMU_MODEL, docs/model.md) a line\n"
		"\"# model: ... sim_ms\" follows each algorithm's: the sort's simulated\n"
		"time, the slowest rank's. It is the fabric's part only: the local\n"
		"passes run on the host and cost no simulated time.\n",
		prog, prog);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t sort_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static void gen_keys(uint32_t *k, size_t n, uint64_t first, unsigned int bits)
{
	uint32_t mask = bits >= 32 ? ~0u : (1u << bits) - 1;

	for (size_t i = 0; i < n; i++)
		k[i] = (uint32_t)sort_mix(SORT_SEED + first + i) & mask;
}

static void header(void)
{
	printf("# %-9s %5s %10s %4s %-9s %10s %9s %8s %2s %2s %9s %6s %s\n",
	       "impl", "ranks", "keys", "bits", "algo", "time_ms", "Mkeys/s",
	       "GB/s", "m", "A", "model", "/model", "check");
}

static void line(const char *impl, uint32_t ranks, size_t keys,
		 unsigned int bits, const char *algo, double t, unsigned int m,
		 unsigned int A, double model, const char *check)
{
	double gbs = keys * 4.0 / t / 1e9;

	printf("%-11s %5u %10zu %4u %-9s %10.2f %9.1f %8.3f %2u %2u %9.3f %6.2f %s\n",
	       impl, ranks, keys, bits, algo, t * 1e3, keys / t / 1e6, gbs, m,
	       A, model, model > 0 ? gbs / model : 0.0, check);
	fflush(stdout);
}

/* ---- One process: the baselines ---- */

static void serial_counting(const uint32_t *in, uint32_t *out, size_t n,
			    unsigned int bits)
{
	size_t nb = (size_t)1 << bits, *h = calloc(nb, sizeof(*h)), sum = 0;

	if (!h)
		sort_die("histogram", -ENOMEM);
	for (size_t i = 0; i < n; i++)
		h[in[i]]++;
	for (size_t v = 0; v < nb; v++) {
		size_t c = h[v];

		h[v] = sum;
		sum += c;
	}
	for (size_t i = 0; i < n; i++)
		out[h[in[i]]++] = in[i];
	free(h);
}

/* LSD radix, 11-bit digits, all histograms in one read. */
static void serial_radix(const uint32_t *in, uint32_t *out, uint32_t *tmp,
			 size_t n, unsigned int bits)
{
	enum {
		DB = 11,
		NB = 1 << DB
	};
	unsigned int nd = (bits + DB - 1) / DB;
	size_t(*h)[NB] = calloc(nd, sizeof(*h));
	const uint32_t *src = in;
	uint32_t *dst = nd % 2 ? out : tmp;

	if (!h)
		sort_die("histogram", -ENOMEM);
	for (size_t i = 0; i < n; i++)
		for (unsigned int d = 0; d < nd; d++)
			h[d][(in[i] >> (d * DB)) & (NB - 1)]++;
	for (unsigned int d = 0; d < nd; d++) {
		size_t sum = 0;

		for (size_t v = 0; v < NB; v++) {
			size_t c = h[d][v];

			h[d][v] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[h[d][(src[i] >> (d * DB)) & (NB - 1)]++] = src[i];
		src = dst;
		dst = dst == out ? tmp : out;
	}
	free(h);
}

static int run_serial(size_t keys, unsigned int bits, unsigned int iters)
{
	uint32_t *in = malloc(keys * 4 + 4), *out = malloc(keys * 4 + 4);
	uint32_t *tmp = malloc(keys * 4 + 4);
	double *t = calloc(iters, sizeof(*t)), t0;
	bool counting = bits <= FC_SORT_COUNTING_MAX_BITS, ok = true;

	if (!in || !out || !tmp || !t)
		sort_die("buffers", -ENOMEM);
	gen_keys(in, keys, 0, bits);
	for (unsigned int it = 0; it <= iters; it++) {
		t0 = now_s();
		if (counting)
			serial_counting(in, out, keys, bits);
		else
			serial_radix(in, out, tmp, keys, bits);
		if (it)
			t[it - 1] = now_s() - t0;
	}
	for (size_t i = 1; i < keys; i++)
		if (out[i - 1] > out[i])
			ok = false;
	line("serial", 1, keys, bits, counting ? "counting" : "radix",
	     tool_median(t, iters), 0, counting ? 2 : (bits + 10) / 11 + 1, 0,
	     ok ? "ok" : "WRONG");
	for (unsigned int it = 0; it <= iters; it++) {
		t0 = now_s();
		memcpy(out, in, keys * 4);
		if (it)
			t[it - 1] = now_s() - t0;
	}
	line("memcpy", 1, keys, bits, "-", tool_median(t, iters), 0, 1, 0,
	     memcmp(out, in, keys * 4) ? "WRONG" : "ok");
	free(in);
	free(out);
	free(tmp);
	free(t);
	return ok ? 0 : 1;
}

/* ---- Every rank: the distributed sort ---- */

struct sort_bench {
	struct fc_dev *dev;
	struct fc_group *g;
	uint32_t rank, n;
	size_t count, keys; /* this rank's, and all */
	size_t first;	    /* global index of this rank's first key */
	unsigned int bits, iters;
	uint32_t algos[4]; /* --algo, in order */
	unsigned int nalgo;
	bool serial, head;
	const char *devname;
};

/* Keys per pair of the bandwidth alltoall: the same on every rank. */
static size_t pair_keys(const struct sort_bench *b)
{
	size_t per = b->keys / b->n / b->n;

	return per ? per : 1;
}

/* The largest of the ranks' times. */
static double slowest(struct sort_bench *b, double t)
{
	int rc = fc_allreduce(b->g, FC_IN_PLACE, &t, 1, FC_FLOAT64, FC_MAX,
			      SORT_TIMEOUT_MS);

	if (rc)
		sort_die("allreduce", rc);
	return t;
}

/* Bmem and Bnet of one rank, in bytes per second. */
static void bandwidths(struct sort_bench *b, const uint32_t *src, uint32_t *dst,
		       double *bmem, double *bnet)
{
	size_t bytes = b->count * 4, per = pair_keys(b);
	double t[5], t0;
	int rc;

	for (int it = 0; it < 5; it++) {
		fc_barrier_group(b->g, SORT_TIMEOUT_MS);
		t0 = now_s();
		memcpy(dst, src, bytes);
		t[it] = slowest(b, now_s() - t0);
	}
	*bmem = bytes / tool_median(t, 5);
	for (int it = 0; it < 5; it++) {
		fc_barrier_group(b->g, SORT_TIMEOUT_MS);
		t0 = now_s();
		rc = fc_alltoall(b->g, src, dst, per, FC_UINT32,
				 SORT_TIMEOUT_MS);
		if (rc)
			sort_die("alltoall", rc);
		t[it] = slowest(b, now_s() - t0);
	}
	*bnet = per * b->n * 4 / tool_median(t, 5);
}

static const char *const algo_names[] = { "auto", "counting", "onepass",
					  "radix_net" };

/* Sorted within and across ranks (empty ones skipped)? The same verdict
 * on every rank. */
static bool check_sorted(struct sort_bench *b, const uint32_t *k)
{
	uint64_t edge[3] = { b->count != 0, b->count ? k[0] : 0,
			     b->count ? k[b->count - 1] : 0 },
		 *all;
	uint64_t bad = 0, last = 0;
	bool seen = false;

	for (size_t i = 1; i < b->count; i++)
		bad += k[i - 1] > k[i];
	all = malloc(sizeof(edge) * b->n);
	if (!all ||
	    fc_allgather(b->g, edge, all, 3, FC_UINT64, SORT_TIMEOUT_MS) ||
	    fc_allreduce(b->g, FC_IN_PLACE, &bad, 1, FC_UINT64, FC_SUM,
			 SORT_TIMEOUT_MS))
		sort_die("check", -EIO);
	for (uint32_t r = 0; r < b->n; r++) {
		if (!all[3 * r])
			continue;
		bad += seen && last > all[3 * r + 1];
		last = all[3 * r + 2];
		seen = true;
	}
	free(all);
	return !bad;
}

static void run_algo(struct sort_bench *b, uint32_t algo, double bmem,
		     double bnet)
{
	size_t c = b->count;
	uint32_t *in = malloc(c * 4 + 4), *out = malloc(c * 4 + 4);
	double *t = calloc(b->iters, sizeof(*t)), t0, model;
	double *st = calloc(b->iters, sizeof(*st));
	uint64_t s0, s1;
	bool sim = fc_sim_time_ps(b->dev, &s0) == 0;
	struct fc_sort_args a = {
		.key_size = 4,
		.key_bits = b->bits,
		.algo = algo,
		.count = c,
		.capacity = c,
	};
	int rc;

	if (!in || !out || !t || !st)
		sort_die("buffers", -ENOMEM);
	gen_keys(in, c, b->first, b->bits);
	a.keys = in;
	a.out_keys = out;
	for (unsigned int it = 0; it <= b->iters; it++) {
		fc_barrier_group(b->g, SORT_TIMEOUT_MS);
		t0 = now_s();
		if (sim)
			fc_sim_time_ps(b->dev, &s0);
		rc = fc_sort(b->g, &a, SORT_TIMEOUT_MS);
		if (rc)
			sort_die(algo_names[algo], rc);
		if (sim)
			fc_sim_time_ps(b->dev, &s1);
		if (it)
			t[it - 1] = slowest(b, now_s() - t0);
		if (it && sim)
			st[it - 1] = slowest(b, (double)(s1 - s0) * 1e-12);
	}
	/* OPTWEB's model with our passes; GB/s of keys */
	model = b->n *
		(bmem / a.mem_passes <
				 bnet / (a.net_passes ? a.net_passes : 1) ?
			 bmem / a.mem_passes :
			 bnet / (a.net_passes ? a.net_passes : 1)) /
		1e9;
	rc = check_sorted(b, out);
	if (b->rank == 0)
		line("fpgacomm", b->n, b->keys, b->bits, algo_names[algo],
		     tool_median(t, b->iters), a.net_passes, a.mem_passes,
		     model, rc ? "ok" : "WRONG");
	if (b->rank == 0 && sim)
		printf("# model: %s %s sim_ms %.4f, %.3f GB/s of keys (the fabric only)\n",
		       getenv("FPGACOMM_EMU_MODEL"), algo_names[algo],
		       tool_median(st, b->iters) * 1e3,
		       b->keys * 4.0 / tool_median(st, b->iters) / 1e9);
	free(st);
	free(in);
	free(out);
	free(t);
}

/* --algo's list into b->algos (default: counting for few bits). */
static void parse_algos(struct sort_bench *b, const char *algos)
{
	char *copy, *tok, *save = NULL;

	if (!algos) {
		b->algos[b->nalgo++] = b->bits <= FC_SORT_COUNTING_MAX_BITS ?
					       FC_SORT_COUNTING :
					       FC_SORT_ONEPASS;
		return;
	}
	copy = strdup(algos);
	if (!copy)
		sort_die("arguments", -ENOMEM);
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		uint32_t i;

		for (i = 1; i < 4 && strcmp(tok, algo_names[i]); i++)
			;
		if (i == 4 || b->nalgo == 4)
			usage_error("bad algorithm '%s'", tok);
		if (i == FC_SORT_COUNTING &&
		    b->bits > FC_SORT_COUNTING_MAX_BITS)
			usage_error("counting needs --bits <= %d",
				    FC_SORT_COUNTING_MAX_BITS);
		b->algos[b->nalgo++] = i;
	}
	free(copy);
}

static void parse_args(struct sort_bench *b, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "keys", required_argument, NULL, 'n' },
		{ "bits", required_argument, NULL, 'b' },
		{ "algo", required_argument, NULL, 'a' },
		{ "iters", required_argument, NULL, 'i' },
		{ "serial", no_argument, NULL, 'S' },
		{ "header", no_argument, NULL, 'H' },
		{ "device", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *algos = NULL;
	uint64_t v;
	int c;

	optind = 2;
	while ((c = getopt_long(argc, argv, "n:b:a:i:d:h", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (parse_size(optarg, &v, "KM", false) || !v ||
			    v > (1ull << 32))
				usage_error("bad key count '%s'", optarg);
			b->keys = v;
			break;
		case 'b':
			if (parse_u64(optarg, &v) || !v || v > 32)
				usage_error("bad key bits '%s' (1..32)",
					    optarg);
			b->bits = (unsigned int)v;
			break;
		case 'a':
			algos = optarg;
			break;
		case 'i':
			if (parse_u64(optarg, &v) || !v || v > 1000)
				usage_error("bad iteration count '%s'", optarg);
			b->iters = (unsigned int)v;
			break;
		case 'S':
			b->serial = true;
			break;
		case 'H':
			b->head = true;
			break;
		case 'd':
			b->devname = optarg;
			break;
		default:
			other_option(c, sort_usage);
		}
	}
	if (optind != argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	parse_algos(b, algos);
}

/* This rank's share of the keys: any count splits. */
static void split_keys(struct sort_bench *b)
{
	size_t base = b->keys / b->n, extra = b->keys % b->n;

	b->count = base + (b->rank < extra);
	b->first = b->rank * base + (b->rank < extra ? b->rank : extra);
}

/* Bmem and Bnet, measured on this rank's keys. */
static void measure(struct sort_bench *b, double *bmem, double *bnet)
{
	size_t n = b->count > pair_keys(b) * b->n ? b->count :
						    pair_keys(b) * b->n;
	uint32_t *src = calloc(n + 1, 4), *dst = calloc(n + 1, 4);

	if (!src || !dst)
		sort_die("buffers", -ENOMEM);
	gen_keys(src, n, 0, b->bits);
	bandwidths(b, src, dst, bmem, bnet);
	free(src);
	free(dst);
}

int bench_sort_main(int argc, char **argv)
{
	struct sort_bench b = { .keys = 1 << 20, .bits = 32, .iters = 3 };
	double bmem, bnet;
	struct fc_dev *dev;
	int rc;

	parse_args(&b, argc, argv);
	if (b.serial) {
		if (b.head)
			header();
		return run_serial(b.keys, b.bits, b.iters);
	}
	rc = fc_open(&dev, b.devname);
	if (rc)
		sort_die("open", rc);
	b.dev = dev;
	rc = fc_group_world(dev, &b.g);
	if (rc)
		sort_die("world (run it under fpgacomm-run, mpirun or srun)",
			 rc);
	b.rank = (uint32_t)fc_group_rank(b.g);
	b.n = (uint32_t)fc_group_size(b.g);
	split_keys(&b);
	measure(&b, &bmem, &bnet);
	if (b.rank == 0 && b.head)
		header();
	if (b.rank == 0)
		printf("# ranks %u: memcpy %.2f GB/s, alltoall %.2f GB/s per rank\n",
		       b.n, bmem / 1e9, bnet / 1e9);
	for (unsigned int i = 0; i < b.nalgo; i++)
		run_algo(&b, b.algos[i], bmem, bnet);
	fc_group_free(b.g);
	fc_close(dev);
	return 0;
}
