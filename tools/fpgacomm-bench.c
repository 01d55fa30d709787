// SPDX-License-Identifier: MIT
/*
 * fpgacomm-bench: channel latency and bandwidth between two ranks of a
 * cluster, in the columns of the OSU micro-benchmarks; collectives
 * (fpgacomm-bench allreduce, ...) are in bench_coll.c, DMA to and from GPU
 * memory (fpgacomm-bench gpu) in bench_gpu.c, the sort in bench_sort.c.
 * Run it as every rank of the world (fpgacomm-run -n 2 -- fpgacomm-bench
 * pingpong); rank 0 and its peer measure, rank 0 prints, any others wait
 * at the barriers.
 * fpgacomm-bench hbm: the HBM2 paper's benchmark on one board (bench_hbm.c).
 * fpgacomm-bench msgcost: a small message's cost in one process
 * (bench_msgcost.c).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <fpgacomm/fpgacomm.h>

#include "bench_coll.h"
#include "bench_gpu.h"
#include "bench_hbm.h"
#include "bench_msgcost.h"
#include "bench_sort.h"
#include "tool_util.h"

#define PORT	   0
#define WINDOW	   16 /* messages in flight in bw */
#define MAX_SIZES  64
#define TIMEOUT_MS 60000
#define WARMUP	   2

const char *const prog = "fpgacomm-bench";

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s pingpong|bw [options]\n"
		"       %s allreduce|reduce_scatter|allgather|alltoall|bcast|reduce|scan|\n"
		"          barrier [options]   (collectives: %s allreduce --help)\n"
		"       %s hbm [options]   (%s hbm --help)\n"
		"       %s gpu [options]   (DMA to and from GPU memory: %s gpu --help)\n"
		"       %s gpu-fabric [options]   (GPU to GPU across boards, 2 ranks)\n"
		"       %s sort [options]   (the distributed sort: %s sort --help)\n"
		"       %s msgcost [options]   (one process, two boards: %s msgcost --help)\n"
		"Channel latency (pingpong: half the round trip) or bandwidth (bw:\n"
		"windows of %u messages, then an ack) between rank 0 and a peer.\n"
		"Run as every rank of a cluster, e.g.\n"
		"  fpgacomm-run -n 2 -- %s pingpong\n"
		"Rank 0 prints; the others only take part.\n"
		"\n"
		"Options:\n"
		"  -s, --sizes LIST   message sizes, comma separated, suffixes K/M\n"
		"                     (default 1,2,4,...,1M)\n"
		"  -i, --iters N      iterations per size (default 1000, fewer for\n"
		"                     large messages: at most 64 MiB moved)\n"
		"  -p, --peer R       the rank that answers (default 1)\n"
		"  -d, --device DEV   board (default: $FPGACOMM_DEVICE, ...)\n"
		"  -h, --help         show this help\n",
		prog, prog, prog, prog, prog, prog, prog, prog, prog, prog,
		prog, prog, WINDOW, prog);
}

static void die(const char *what, int err)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, fc_strerror(err));
	exit(1);
}

static unsigned int parse_sizes(const char *s, uint64_t *sizes)
{
	return parse_list(s, sizes, MAX_SIZES, "KM", 1, FC_CHAN_MAX_MSG,
			  "size");
}

static unsigned int iters_for(uint64_t size, unsigned int iters, bool given)
{
	uint64_t cap = (64ull << 20) / size;

	if (given)
		return iters;
	if (cap < 10)
		cap = 10;
	return iters < cap ? iters : (unsigned int)cap;
}

static void pingpong(struct fc_chan *ch, bool lead, char *buf, uint64_t size,
		     unsigned int iters)
{
	size_t len;
	unsigned int i;
	int ret;

	for (i = 0; i < iters; i++) {
		if (lead) {
			ret = fc_chan_send(ch, buf, size, TIMEOUT_MS);
			if (!ret)
				ret = fc_chan_recv(ch, buf, size, &len,
						   TIMEOUT_MS);
		} else {
			ret = fc_chan_recv(ch, buf, size, &len, TIMEOUT_MS);
			if (!ret)
				ret = fc_chan_send(ch, buf, size, TIMEOUT_MS);
		}
		if (ret)
			die("pingpong", ret);
	}
}

/*
 * In simulated time nothing may reach rank 0 while it measures but the
 * messages measured: a barrier message of a rank that only waits, or of
 * the peer right after its last answer, taken by rank 0 before it reads
 * its clock, would move that clock by an amount that depends on when the
 * host ran it. So with a model on every other rank waits for rank 0's
 * word, on a port of its own, before the next barrier.
 */
#define HOLD_PORT 1
static struct fc_chan *hold[FC_MAX_NODES];

static void hold_open(struct fc_dev *dev, uint32_t size, uint32_t rank)
{
	uint32_t r;
	int ret;

	for (r = 1; r < size; r++) {
		if (rank != 0 && rank != r)
			continue;
		ret = fc_chan_open(dev, rank ? 0 : r, HOLD_PORT, 0, &hold[r]);
		if (ret)
			die("channel", ret);
	}
}

static void hold_step(uint32_t size, uint32_t rank)
{
	char word = 0;
	size_t len;
	uint32_t r;
	int ret = 0;

	for (r = 1; r < size && !ret; r++) {
		if (!hold[r])
			continue;
		ret = rank ? fc_chan_recv(hold[r], &word, 1, &len, TIMEOUT_MS) :
			     fc_chan_send(hold[r], &word, 1, TIMEOUT_MS);
	}
	if (ret)
		die("hold", ret);
}

static void bandwidth(struct fc_chan *ch, bool lead, char *buf, uint64_t size,
		      unsigned int iters)
{
	struct fc_req *req[WINDOW];
	unsigned int i, w;
	char ack = 0;
	size_t len;
	int ret = 0;

	for (i = 0; i < iters && !ret; i++) {
		for (w = 0; w < WINDOW && !ret; w++)
			ret = lead ? fc_chan_isend(ch, buf, size, &req[w]) :
				     fc_chan_irecv(ch, buf, size, &req[w]);
		for (w = 0; w < WINDOW && !ret; w++)
			ret = fc_req_wait(req[w], TIMEOUT_MS, NULL);
		if (ret)
			break;
		ret = lead ? fc_chan_recv(ch, &ack, 1, &len, TIMEOUT_MS) :
			     fc_chan_send(ch, &ack, 1, TIMEOUT_MS);
	}
	if (ret)
		die("bw", ret);
}

/* What the command line asks for. */
struct chan_args {
	uint64_t sizes[MAX_SIZES];
	unsigned int nsizes, iters, peer;
	bool iters_given, bw;
	const char *devname;
};

static void chan_parse_args(int argc, char **argv, struct chan_args *a)
{
	static const struct option opts[] = {
		{ "sizes", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'i' },
		{ "peer", required_argument, NULL, 'p' },
		{ "device", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int c;

	memset(a, 0, sizeof(*a));
	a->iters = 1000;
	a->peer = 1;
	while ((c = getopt_long(argc, argv, "s:i:p:d:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			a->nsizes = parse_sizes(optarg, a->sizes);
			break;
		case 'i':
			if (parse_u64(optarg, &v) || !v || v > 100000000)
				usage_error("bad iteration count '%s'", optarg);
			a->iters = (unsigned int)v;
			a->iters_given = true;
			break;
		case 'p':
			if (parse_u64(optarg, &v) || v >= FC_MAX_NODES)
				usage_error("bad peer '%s'", optarg);
			a->peer = (unsigned int)v;
			break;
		case 'd':
			a->devname = optarg;
			break;
		default:
			other_option(c, usage);
		}
	}
	if (optind != argc - 1)
		usage_error("one command: pingpong or bw");
	if (!strcmp(argv[optind], "pingpong"))
		a->bw = false;
	else if (!strcmp(argv[optind], "bw"))
		a->bw = true;
	else
		usage_error("unknown command '%s'", argv[optind]);
	if (!a->nsizes)
		for (v = 1; v <= (1u << 20); v <<= 1)
			a->sizes[a->nsizes++] = v;
}

/* One run of pingpong or bw between rank 0 and its peer. */
struct chan_run {
	const struct chan_args *a;
	struct fc_dev *dev;
	struct fc_world w;
	struct fc_chan *ch;
	bool lead, part, sim;
	char *buf;
};

static void chan_print_header(const struct chan_run *r)
{
	const struct chan_args *a = r->a;
	uint32_t hops = 0;

	fc_world_hops(r->dev, a->peer, &hops);
	printf("# %s %s: rank 0 <-> rank %u, %u hop(s), topology %s\n", prog,
	       a->bw ? "bw" : "pingpong", a->peer, hops, r->w.topology);
	/* A timing model on (docs/model.md): its figures beside ours. */
	if (r->sim)
		printf("# model: %s (simulated time, FPGACOMM_EMU_MODEL)\n",
		       getenv("FPGACOMM_EMU_MODEL"));
	printf("# %-10s %18s%s\n", "Size",
	       a->bw ? "Bandwidth (MB/s)" : "Latency (us)",
	       !r->sim ? "" :
	       a->bw   ? "        Model (MB/s)" :
			 "          Model (us)");
}

/* One size: warm-up, a barrier, the timed iterations; rank 0 prints. */
static void chan_measure(const struct chan_run *r, uint64_t size)
{
	const struct chan_args *a = r->a;
	void (*fn)(struct fc_chan *, bool, char *, uint64_t, unsigned int) =
		a->bw ? bandwidth : pingpong;
	unsigned int n = iters_for(size * (a->bw ? WINDOW : 1), a->iters,
				   a->iters_given);
	uint64_t s0 = 0, s1 = 0;
	double t0, dt;
	int ret;

	if (r->part)
		fn(r->ch, r->lead, r->buf, size, WARMUP);
	ret = fc_barrier(r->dev, TIMEOUT_MS);
	if (ret)
		die("barrier", ret);
	/*
	 * In simulated time the barrier leaves the two clocks apart: one
	 * round trip first, after which each message finds its receiver
	 * waiting, as on the hardware.
	 */
	if (r->sim && r->part)
		fn(r->ch, r->lead, r->buf, size, 1);
	t0 = tool_now_us();
	if (r->sim)
		fc_sim_time_ps(r->dev, &s0);
	if (r->part)
		fn(r->ch, r->lead, r->buf, size, n);
	dt = tool_now_us() - t0;
	if (r->sim)
		fc_sim_time_ps(r->dev, &s1);
	if (r->lead && a->bw)
		printf("%-12llu %18.2f", (unsigned long long)size,
		       (double)size * WINDOW * n / dt);
	else if (r->lead)
		printf("%-12llu %18.3f", (unsigned long long)size,
		       dt / (2.0 * n));
	if (r->lead && r->sim && a->bw)
		printf(" %19.2f",
		       (double)size * WINDOW * n * 1e6 / (double)(s1 - s0));
	else if (r->lead && r->sim)
		printf(" %19.4f", (double)(s1 - s0) / (2e6 * n));
	if (r->lead)
		printf("\n");
	if (r->sim)
		hold_step(r->w.size, r->w.rank);
	fflush(stdout);
}

static int chan_main(int argc, char **argv)
{
	struct chan_run r = { 0 };
	struct chan_args a;
	uint64_t max = 0, s0;
	unsigned int s;
	int ret;

	chan_parse_args(argc, argv, &a);
	r.a = &a;
	for (s = 0; s < a.nsizes; s++)
		if (a.sizes[s] > max)
			max = a.sizes[s];
	ret = fc_open(&r.dev, a.devname);
	if (ret)
		die("open", ret);
	ret = fc_world_query(r.dev, &r.w);
	if (ret)
		die("world (run it under fpgacomm-run, mpirun or srun)", ret);
	if (a.peer == 0 || a.peer >= r.w.size)
		usage_error(
			"peer %u: the world has ranks 0..%u and rank 0 leads",
			a.peer, r.w.size - 1);
	r.lead = r.w.rank == 0;
	r.part = r.lead || r.w.rank == a.peer;
	if (r.part) {
		ret = fc_chan_open(r.dev, r.lead ? a.peer : 0, PORT, 0, &r.ch);
		if (ret)
			die("channel", ret);
	}
	r.sim = fc_sim_time_ns(r.dev, &s0) == 0;
	if (r.sim)
		hold_open(r.dev, r.w.size, r.w.rank);
	r.buf = calloc(1, max);
	if (!r.buf)
		die("buffer", -ENOMEM);
	if (r.lead)
		chan_print_header(&r);
	for (s = 0; s < a.nsizes; s++)
		chan_measure(&r, a.sizes[s]);
	ret = fc_barrier(r.dev, TIMEOUT_MS);
	if (ret)
		die("barrier", ret);
	if (r.ch)
		fc_chan_close(r.ch);
	free(r.buf);
	fc_close(r.dev);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && bench_coll_is(argv[1]))
		return bench_coll_main(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "hbm"))
		return bench_hbm_main(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "gpu"))
		return bench_gpu_main(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "gpu-fabric"))
		return bench_gpu_fabric_main(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "sort"))
		return bench_sort_main(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "msgcost"))
		return bench_msgcost_main(argc, argv);
	return chan_main(argc, argv);
}
