// SPDX-License-Identifier: MIT
/*
 * fpgacomm-bench COLLECTIVE: collectives over the world, in nccl-tests'
 * columns. Every rank runs it (fpgacomm-run -n N -- fpgacomm-bench
 * allreduce); rank 0 prints. scripts/bench/coll-mpi.c measures MPI's
 * collectives the same way, so that scripts/bench-coll.sh can set them
 * side by side: the same sizes, warm-up, iteration counts, input values
 * and checks.
 *
 * Size is the bytes of each rank's send buffer (of its receive buffer for
 * allgather and bcast), as in nccl-tests; time is the mean of one
 * collective over the iterations, the largest of the ranks'; algbw is
 * size / time; busbw scales it by what each rank must move (2(n-1)/n for
 * allreduce, (n-1)/n for allgather, reduce_scatter and alltoall, 1 for
 * bcast and reduce). #wrong counts elements that differ from the
 * expected result after one more collective, summed over the ranks.
 * barrier moves no data: give it size 0 (-s 0).
 * --mem fc_mem (or both) runs on buffers of fc_mem_alloc(), which the
 * channels move straight from and into (docs/collectives.md, Buffers);
 * --mem cuda on CUDA device memory (cuMemAlloc on GPU rank % GPUs, the
 * driver API loaded at run time), e.g. --mem plain,cuda for device beside
 * host buffers in one run.
 */
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <fpgacomm/fpgacomm.h>

#include "bench_coll.h"
#include "tool_util.h"

#define COLL_MAX_SIZES	32
#define COLL_TIMEOUT_MS 600000
#define COLL_EXIT_SKIP	77 /* --mem cuda without a GPU */
#define MEM_KINDS	3  /* plain, fc_mem, cuda */

enum coll {
	ALLREDUCE,
	REDUCE_SCATTER,
	ALLGATHER,
	ALLTOALL,
	BCAST,
	REDUCE,
	SCAN,
	BARRIER,
	COLL_COUNT
};

static const char *const coll_names[COLL_COUNT] = {
	"allreduce", "reduce_scatter", "allgather", "alltoall",
	"bcast",     "reduce",	       "scan",	    "barrier",
};

struct bench {
	struct fc_group *g;
	enum coll coll;
	enum fc_dtype type;
	enum fc_redop op;
	uint32_t root, rank, n;
	size_t es;
};

static void coll_die(const char *what, int err)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, fc_strerror(err));
	exit(1);
}

/* ---- CUDA device buffers (--mem cuda) ---- */

typedef int cu_res;
typedef unsigned long long cu_ptr;

static struct {
	cu_res (*alloc)(cu_ptr *, size_t);
	cu_res (*free)(cu_ptr);
	cu_res (*htod)(cu_ptr, const void *, size_t);
	cu_res (*dtoh)(void *, cu_ptr, size_t);
} cu;

/* GPU @rank % count's primary context made current. RETURN VALUE: NULL,
 * or why there is no GPU to use. */
static const char *cuda_open(uint32_t rank)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	cu_res (*init)(unsigned int), (*count)(int *), (*get)(int *, int);
	cu_res (*retain)(void **, int), (*set)(void *);
	int n = 0, d;
	void *ctx;

	if (!lib)
		return "no CUDA driver (libcuda.so.1)";
	*(void **)&init = dlsym(lib, "cuInit");
	*(void **)&count = dlsym(lib, "cuDeviceGetCount");
	*(void **)&get = dlsym(lib, "cuDeviceGet");
	*(void **)&retain = dlsym(lib, "cuDevicePrimaryCtxRetain");
	*(void **)&set = dlsym(lib, "cuCtxSetCurrent");
	*(void **)&cu.alloc = dlsym(lib, "cuMemAlloc_v2");
	*(void **)&cu.free = dlsym(lib, "cuMemFree_v2");
	*(void **)&cu.htod = dlsym(lib, "cuMemcpyHtoD_v2");
	*(void **)&cu.dtoh = dlsym(lib, "cuMemcpyDtoH_v2");
	if (!init || !get || !retain || !set || !cu.alloc || !cu.free ||
	    !cu.htod || !cu.dtoh)
		return "a CUDA driver without the calls used";
	if (init(0))
		return "no usable GPU (cuInit)";
	if (!count || count(&n) || n < 1)
		n = 1;
	if (get(&d, (int)(rank % (uint32_t)n)) || retain(&ctx, d) || set(ctx))
		return "no CUDA context";
	return NULL;
}

static void *cuda_buf(size_t len)
{
	cu_ptr p;

	if (cu.alloc(&p, len))
		coll_die("cuMemAlloc", -ENOMEM);
	return (void *)(uintptr_t)p;
}

static void cuda_copy(void *dst, const void *src, size_t len, bool to_dev)
{
	cu_res r = to_dev ? cu.htod((cu_ptr)(uintptr_t)dst, src, len) :
			    cu.dtoh(dst, (cu_ptr)(uintptr_t)src, len);

	if (r) {
		fprintf(stderr, "%s: cuMemcpy: CUDA error %d\n", prog, r);
		exit(1);
	}
}

bool bench_coll_is(const char *name)
{
	for (int c = 0; c < COLL_COUNT; c++)
		if (!strcmp(name, coll_names[c]))
			return true;
	return false;
}

static void coll_usage(FILE *f)
{
	fprintf(f,
		"Usage: %s allreduce|reduce_scatter|allgather|alltoall|bcast|reduce|scan|\n"
		"          barrier [options]\n"
		"A collective over the world, in nccl-tests' columns; run it as\n"
		"every rank, e.g. fpgacomm-run -n 4 -- %s allreduce\n"
		"\n"
		"Options:\n"
		"  -s, --sizes LIST   bytes of each rank's buffer, comma separated,\n"
		"                     suffixes K/M (default 8,1K,64K,1M)\n"
		"  -i, --iters N      iterations per size (default: 200, fewer for\n"
		"                     large sizes, at least 5)\n"
		"  -t, --type T       float32 (default), float64, int32, int64\n"
		"  -o, --op OP        sum (default), min, max\n"
		"  -r, --root R       root of bcast and reduce (default 0)\n"
		"  -m, --mem M        buffers: plain (malloc, default), fc_mem\n"
		"                     (fc_mem_alloc: moved by DMA with no copy),\n"
		"                     cuda (CUDA device memory), a comma list of\n"
		"                     them, or both (plain,fc_mem): one row each\n"
		"  -d, --device DEV   board (default: $FPGACOMM_DEVICE, ...)\n"
		"  -h, --help         show this help\n",
		prog, prog);
}

/* The input value of element @i on rank @r: small integers, exact in any
 * order of summation. */
static long coll_value(uint32_t r, size_t i)
{
	return (long)((r * 7 + i * 3) % 11) - 5;
}

static void store(void *buf, size_t i, enum fc_dtype t, long v)
{
	switch (t) {
	case FC_FLOAT64:
		((double *)buf)[i] = (double)v;
		break;
	case FC_INT32:
		((int32_t *)buf)[i] = (int32_t)v;
		break;
	case FC_INT64:
		((int64_t *)buf)[i] = v;
		break;
	default:
		((float *)buf)[i] = (float)v;
		break;
	}
}

static long load(const void *buf, size_t i, enum fc_dtype t)
{
	switch (t) {
	case FC_FLOAT64:
		return (long)((const double *)buf)[i];
	case FC_INT32:
		return ((const int32_t *)buf)[i];
	case FC_INT64:
		return (long)((const int64_t *)buf)[i];
	default:
		return (long)((const float *)buf)[i];
	}
}

static long combine(enum fc_redop op, long a, long b)
{
	if (op == FC_MIN)
		return a < b ? a : b;
	if (op == FC_MAX)
		return a > b ? a : b;
	return a + b;
}

/* The reduction over ranks 0..@last of element @i. */
static long reduced(const struct bench *b, uint32_t last, size_t i)
{
	long acc = coll_value(0, i);

	for (uint32_t r = 1; r <= last; r++)
		acc = combine(b->op, acc, coll_value(r, i));
	return acc;
}

/* Elements of the send and receive buffers for @size bytes. */
static void counts_of(const struct bench *b, size_t size, size_t *scount,
		      size_t *rcount, size_t *count)
{
	size_t c = size / b->es;

	switch (b->coll) {
	case ALLGATHER:
		*count = c / b->n;
		*scount = *count;
		*rcount = *count * b->n;
		break;
	case REDUCE_SCATTER:
		*count = c / b->n;
		*scount = *count * b->n;
		*rcount = *count;
		break;
	case ALLTOALL:
		*count = c / b->n;
		*scount = *rcount = *count * b->n;
		break;
	case BARRIER: /* no data: size 0 */
		*count = *scount = *rcount = 0;
		break;
	default:
		*count = *scount = *rcount = c;
	}
}

static int run_once(const struct bench *b, const void *sb, void *rb,
		    size_t count, bool in_place)
{
	const void *s = in_place ? FC_IN_PLACE : sb;

	switch (b->coll) {
	case ALLREDUCE:
		return fc_allreduce(b->g, s, rb, count, b->type, b->op,
				    COLL_TIMEOUT_MS);
	case REDUCE_SCATTER:
		return fc_reduce_scatter(b->g, s, rb, count, b->type, b->op,
					 COLL_TIMEOUT_MS);
	case ALLGATHER:
		return fc_allgather(b->g, s, rb, count, b->type,
				    COLL_TIMEOUT_MS);
	case ALLTOALL:
		return fc_alltoall(b->g, s, rb, count, b->type,
				   COLL_TIMEOUT_MS);
	case BCAST:
		return fc_bcast(b->g, rb, count, b->type, b->root,
				COLL_TIMEOUT_MS);
	case REDUCE:
		return fc_reduce(b->g, in_place && b->rank != b->root ? sb : s,
				 rb, count, b->type, b->op, b->root,
				 COLL_TIMEOUT_MS);
	case BARRIER:
		return fc_barrier_group(b->g, COLL_TIMEOUT_MS);
	default:
		return fc_scan(b->g, s, rb, count, b->type, b->op,
			       COLL_TIMEOUT_MS);
	}
}

/* Fill the buffers for one run: in place, the input goes where the
 * collective reads it from. */
static void prepare(const struct bench *b, void *sb, void *rb, size_t scount,
		    size_t count, bool in_place)
{
	size_t i;

	for (i = 0; i < scount; i++)
		store(sb, i, b->type, coll_value(b->rank, i));
	if (b->coll == BCAST)
		for (i = 0; i < count; i++)
			store(rb, i, b->type,
			      b->rank == b->root ? coll_value(b->root, i) : 0);
	if (!in_place)
		return;
	if (b->coll == ALLGATHER)
		memcpy((char *)rb + b->rank * count * b->es, sb, count * b->es);
	else if (b->coll != BCAST && (b->coll != REDUCE || b->rank == b->root))
		memcpy(rb, sb, scount * b->es);
}

/* Elements of @rb that are not what the collective should give. */
static size_t wrong(const struct bench *b, const void *rb, size_t count)
{
	size_t i, bad = 0, n = b->n;
	uint32_t r;

	switch (b->coll) {
	case ALLREDUCE:
		for (i = 0; i < count; i++)
			bad += load(rb, i, b->type) != reduced(b, b->n - 1, i);
		break;
	case REDUCE_SCATTER:
		for (i = 0; i < count; i++)
			bad += load(rb, i, b->type) !=
			       reduced(b, b->n - 1, b->rank * count + i);
		break;
	case ALLGATHER:
		for (r = 0; r < n; r++)
			for (i = 0; i < count; i++)
				bad += load(rb, r * count + i, b->type) !=
				       coll_value(r, i);
		break;
	case ALLTOALL:
		for (r = 0; r < n; r++)
			for (i = 0; i < count; i++)
				bad += load(rb, r * count + i, b->type) !=
				       coll_value(r, b->rank * count + i);
		break;
	case BCAST:
		for (i = 0; i < count; i++)
			bad += load(rb, i, b->type) != coll_value(b->root, i);
		break;
	case REDUCE:
		for (i = 0; i < count && b->rank == b->root; i++)
			bad += load(rb, i, b->type) != reduced(b, b->n - 1, i);
		break;
	case BARRIER:
		break;
	default:
		for (i = 0; i < count; i++)
			bad += load(rb, i, b->type) != reduced(b, b->rank, i);
	}
	return bad;
}

static double bus_factor(const struct bench *b)
{
	double n = b->n;

	switch (b->coll) {
	case ALLREDUCE:
		return 2 * (n - 1) / n;
	case BCAST:
	case REDUCE:
	case SCAN:
		return 1;
	default:
		return (n - 1) / n;
	}
}

/* Buffers of one kind; device ones (@dev) are filled and checked through
 * host mirrors @hs and @hr. */
struct coll_bufs {
	char *sb, *rb;
	char *hs, *hr;
	bool dev;
};

/* prepare() on the buffers the collective reads. */
static void fill_bufs(const struct bench *b, const struct coll_bufs *m,
		      size_t scount, size_t rcount, size_t count, bool in_place)
{
	if (!m->dev) {
		prepare(b, m->sb, m->rb, scount, count, in_place);
		return;
	}
	prepare(b, m->hs, m->hr, scount, count, in_place);
	cuda_copy(m->sb, m->hs, scount * b->es, true);
	cuda_copy(m->rb, m->hr, (rcount > scount ? rcount : scount) * b->es,
		  true);
}

/* One size, out of place or in place: prints time, algbw, busbw, #wrong. */
static void measure(const struct bench *b, const struct coll_bufs *m,
		    size_t size, unsigned int iters, bool in_place)
{
	char *sb = m->sb, *rb = m->rb;
	size_t scount, rcount, count, bad;
	double t0, t, tmax;
	uint64_t bad_all;
	unsigned int i;
	int ret;

	counts_of(b, size, &scount, &rcount, &count);
	fill_bufs(b, m, scount, rcount, count, in_place);
	for (i = 0; i < 2; i++) { /* warm-up */
		ret = run_once(b, sb, rb, count, in_place);
		if (ret)
			coll_die(coll_names[b->coll], ret);
	}
	ret = fc_barrier_group(b->g, COLL_TIMEOUT_MS);
	if (ret)
		coll_die("barrier", ret);
	t0 = tool_now_us();
	for (i = 0; i < iters; i++) {
		ret = run_once(b, sb, rb, count, in_place);
		if (ret)
			coll_die(coll_names[b->coll], ret);
	}
	t = (tool_now_us() - t0) / iters;
	fill_bufs(b, m, scount, rcount, count, in_place);
	ret = run_once(b, sb, rb, count, in_place);
	if (ret)
		coll_die(coll_names[b->coll], ret);
	if (m->dev) {
		cuda_copy(m->hr, rb,
			  (rcount > scount ? rcount : scount) * b->es, false);
		rb = m->hr;
	}
	bad = wrong(b, rb, count);
	bad_all = bad;
	ret = fc_allreduce(b->g, &t, &tmax, 1, FC_FLOAT64, FC_MAX,
			   COLL_TIMEOUT_MS);
	if (!ret)
		ret = fc_allreduce(b->g, FC_IN_PLACE, &bad_all, 1, FC_UINT64,
				   FC_SUM, COLL_TIMEOUT_MS);
	if (ret)
		coll_die("allreduce of the results", ret);
	if (b->rank == 0)
		printf("  %10.2f %7.3f %7.3f %6llu", tmax, size / tmax / 1e3,
		       size / tmax / 1e3 * bus_factor(b),
		       (unsigned long long)bad_all);
}

static const char *const tnames[] = { "float32", "float64", "int32", "int64" };
static const enum fc_dtype types[] = { FC_FLOAT32, FC_FLOAT64, FC_INT32,
				       FC_INT64 };
static const char *const onames[] = { "sum", "min", "max" };
static const enum fc_redop ops[] = { FC_SUM, FC_MIN, FC_MAX };
static const char *const mnames[MEM_KINDS] = { "plain", "fc_mem", "cuda" };

/* What the command line asks for, beyond what struct bench holds. */
struct coll_args {
	uint64_t sizes[COLL_MAX_SIZES];
	unsigned int nsizes, iters, ti, oi;
	unsigned int mem; /* bit 0: plain, 1: fc_mem, 2: cuda */
	bool iters_given, mem_given;
	const char *devname;
};

static unsigned int coll_sizes(const char *list, uint64_t *sizes)
{
	return parse_list(list, sizes, COLL_MAX_SIZES, "KM", 0, UINT64_MAX,
			  "size");
}

static void coll_buffers_arg(const char *arg, struct coll_args *a)
{
	char *copy = strdup(arg), *tok, *save = NULL;
	unsigned int k;

	if (!copy)
		coll_die("strdup", -ENOMEM);
	a->mem_given = true;
	a->mem = 0;
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "both")) {
			a->mem |= 3;
			continue;
		}
		for (k = 0; k < MEM_KINDS && strcmp(tok, mnames[k]); k++)
			;
		if (k == MEM_KINDS)
			usage_error("unknown buffers '%s'", tok);
		a->mem |= 1u << k;
	}
	free(copy);
	if (!a->mem)
		usage_error("unknown buffers '%s'", arg);
}

static void coll_parse_args(int argc, char **argv, struct coll_args *a,
			    struct bench *b)
{
	static const struct option opts[] = {
		{ "sizes", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'i' },
		{ "type", required_argument, NULL, 't' },
		{ "op", required_argument, NULL, 'o' },
		{ "root", required_argument, NULL, 'r' },
		{ "device", required_argument, NULL, 'd' },
		{ "mem", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const uint64_t default_sizes[] = { 8, 1024, 65536, 1048576 };
	uint64_t v;
	int c;

	memset(a, 0, sizeof(*a));
	a->mem = 1;
	memcpy(a->sizes, default_sizes, sizeof(default_sizes));
	a->nsizes = 4;
	a->iters = 200;
	optind = 2;
	while ((c = getopt_long(argc, argv, "s:i:t:o:r:d:m:h", opts, NULL)) !=
	       -1) {
		switch (c) {
		case 's':
			a->nsizes = coll_sizes(optarg, a->sizes);
			break;
		case 'i':
			if (parse_u64(optarg, &v) || !v || v > 1000000)
				usage_error("bad iteration count '%s'", optarg);
			a->iters = (unsigned int)v;
			a->iters_given = true;
			break;
		case 't':
			for (a->ti = 0;
			     a->ti < 4 && strcmp(optarg, tnames[a->ti]);
			     a->ti++)
				;
			if (a->ti == 4)
				usage_error("unknown type '%s'", optarg);
			b->type = types[a->ti];
			break;
		case 'o':
			for (a->oi = 0;
			     a->oi < 3 && strcmp(optarg, onames[a->oi]);
			     a->oi++)
				;
			if (a->oi == 3)
				usage_error("unknown op '%s'", optarg);
			b->op = ops[a->oi];
			break;
		case 'r':
			if (parse_u64(optarg, &v) || v >= FC_MAX_NODES)
				usage_error("bad root '%s'", optarg);
			b->root = (uint32_t)v;
			break;
		case 'd':
			a->devname = optarg;
			break;
		case 'm':
			coll_buffers_arg(optarg, a);
			break;
		default:
			other_option(c, coll_usage);
		}
	}
	if (optind != argc)
		usage_error("unexpected argument '%s'", argv[optind]);
}

/* Send and receive buffers of @max bytes of each kind asked for: plain,
 * fc_mem (their fc_mem in @smem and @rmem), cuda (with host mirrors). */
static void coll_buffers(struct fc_dev *dev, const struct coll_args *a,
			 const struct bench *b, uint64_t max,
			 struct coll_bufs bufs[MEM_KINDS], struct fc_mem **smem,
			 struct fc_mem **rmem)
{
	const char *why;
	int ret;

	if (a->mem & 1) {
		bufs[0].sb = calloc(1, max + b->es);
		bufs[0].rb = calloc(1, max + b->es);
		if (!bufs[0].sb || !bufs[0].rb)
			coll_die("buffers", -ENOMEM);
	}
	if (a->mem & 2) {
		ret = fc_mem_alloc(dev, max + b->es, 0, smem);
		if (!ret)
			ret = fc_mem_alloc(dev, max + b->es, 0, rmem);
		if (ret)
			coll_die("fc_mem_alloc", ret);
		bufs[1].sb = (*smem)->addr;
		bufs[1].rb = (*rmem)->addr;
	}
	if (a->mem & 4) {
		why = cuda_open(b->rank);
		if (why) {
			fprintf(stderr, "%s: --mem cuda: %s\n", prog, why);
			exit(COLL_EXIT_SKIP);
		}
		bufs[2].dev = true;
		bufs[2].sb = cuda_buf(max + b->es);
		bufs[2].rb = cuda_buf(max + b->es);
		bufs[2].hs = calloc(1, max + b->es);
		bufs[2].hr = calloc(1, max + b->es);
		if (!bufs[2].hs || !bufs[2].hr)
			coll_die("buffers", -ENOMEM);
	}
}

static void coll_print_header(const struct coll_args *a, const struct bench *b)
{
	printf("# %s %s: %u ranks, %s %s, algorithm for 1 MiB: %s\n", prog,
	       coll_names[b->coll], b->n, tnames[a->ti], onames[a->oi],
	       fc_coll_algo_name(b->g, coll_names[b->coll], 1u << 20));
	printf("# %10s %12s %8s %6s %4s  %10s %7s %7s %6s  %10s %7s %7s %6s\n",
	       "", "", "", "", "", "out-of-place", "", "", "", "in-place", "",
	       "", "");
	printf("# %10s %12s %8s %6s %4s  %10s %7s %7s %6s  %10s %7s %7s %6s%s\n",
	       "size", "count", "type", "redop", "root", "time(us)", "algbw",
	       "busbw", "#wrong", "time(us)", "algbw", "busbw", "#wrong",
	       a->mem_given ? "  buffers" : "");
}

/* One size, on each kind of buffer asked for; rank 0 prints a row each. */
static void coll_run_size(struct bench *b, const struct coll_args *a,
			  struct coll_bufs bufs[MEM_KINDS], uint64_t size)
{
	uint64_t cap = (512ull << 20) / (size ? size : 1);
	unsigned int n = a->iters_given ? a->iters :
			 cap < 5	? 5 :
			 cap < a->iters ? (unsigned int)cap :
					  a->iters;
	size_t sc, rc, count;
	unsigned int m;

	counts_of(b, size, &sc, &rc, &count);
	for (m = 0; m < MEM_KINDS; m++) {
		if (!(a->mem & (1u << m)))
			continue;
		if (b->rank == 0)
			printf("  %10llu %12zu %8s %6s %4d",
			       (unsigned long long)size, count, tnames[a->ti],
			       onames[a->oi],
			       b->coll == BCAST || b->coll == REDUCE ?
				       (int)b->root :
				       -1);
		measure(b, &bufs[m], size, n, false);
		if (b->coll != BCAST && b->coll != BARRIER)
			measure(b, &bufs[m], size, n, true);
		if (b->rank == 0) {
			printf("%s%s\n", a->mem_given ? "  " : "",
			       a->mem_given ? mnames[m] : "");
			fflush(stdout);
		}
	}
}

int bench_coll_main(int argc, char **argv)
{
	struct bench b = { .type = FC_FLOAT32, .op = FC_SUM };
	struct coll_bufs bufs[MEM_KINDS] = { { 0 } };
	struct fc_mem *smem = NULL, *rmem = NULL;
	struct coll_args a;
	struct fc_dev *dev;
	uint64_t max = 0;
	unsigned int s;
	int ret;

	for (b.coll = 0; strcmp(argv[1], coll_names[b.coll]); b.coll++)
		;
	coll_parse_args(argc, argv, &a, &b);
	ret = fc_open(&dev, a.devname);
	if (ret)
		coll_die("open", ret);
	ret = fc_group_world(dev, &b.g);
	if (ret)
		coll_die("world (run it under fpgacomm-run, mpirun or srun)",
			 ret);
	b.rank = (uint32_t)fc_group_rank(b.g);
	b.n = (uint32_t)fc_group_size(b.g);
	b.es = (size_t)fc_dtype_size(b.type);
	if (b.root >= b.n)
		usage_error("root %u: the world has ranks 0..%u", b.root,
			    b.n - 1);
	for (s = 0; s < a.nsizes; s++)
		if (a.sizes[s] > max)
			max = a.sizes[s];
	coll_buffers(dev, &a, &b, max, bufs, &smem, &rmem);
	if (b.rank == 0)
		coll_print_header(&a, &b);
	for (s = 0; s < a.nsizes; s++)
		coll_run_size(&b, &a, bufs, a.sizes[s]);
	free(bufs[0].sb);
	free(bufs[0].rb);
	if (bufs[2].dev) {
		cu.free((cu_ptr)(uintptr_t)bufs[2].sb);
		cu.free((cu_ptr)(uintptr_t)bufs[2].rb);
		free(bufs[2].hs);
		free(bufs[2].hr);
	}
	if (smem)
		fc_mem_free(dev, smem);
	if (rmem)
		fc_mem_free(dev, rmem);
	fc_group_free(b.g);
	fc_close(dev);
	return 0;
}
