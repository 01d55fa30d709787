// SPDX-License-Identifier: MIT
/*
 * fpgacomm-bench: channel latency and bandwidth between two ranks of a
 * cluster, in the columns of the OSU micro-benchmarks; collectives
 * (fpgacomm-bench allreduce, ...) are in bench_coll.c, the sort in
 * bench_sort.c. Run it as every rank
 * of the world (fpgacomm-run -n 2 -- fpgacomm-bench pingpong); rank 0 and
 * its peer measure, rank 0 prints, any others wait at the barriers.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <fpgacomm/fpgacomm.h>

#include "bench_coll.h"
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
		"       %s allreduce|reduce_scatter|allgather|alltoall|bcast|reduce|scan\n"
		"          [options]   (collectives: %s allreduce --help)\n"
		"       %s sort [options]   (the distributed sort: %s sort --help)\n"
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
		prog, prog, prog, prog, prog, WINDOW, prog);
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, fc_strerror(err));
	exit(1);
}

static unsigned int parse_sizes(const char *s, uint64_t *sizes)
{
	char *copy = strdup(s), *tok, *save = NULL;
	unsigned int n = 0;

	if (!copy)
		die("strdup", -ENOMEM);
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (n == MAX_SIZES)
			usage_error("at most %u sizes", MAX_SIZES);
		if (parse_size(tok, &sizes[n], "KM", true) || !sizes[n] ||
		    sizes[n] > FC_CHAN_MAX_MSG)
			usage_error("bad size '%s' (1..%u)", tok,
				    FC_CHAN_MAX_MSG);
		n++;
	}
	free(copy);
	if (!n)
		usage_error("no sizes");
	return n;
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

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "sizes", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'i' },
		{ "peer", required_argument, NULL, 'p' },
		{ "device", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t sizes[MAX_SIZES], v, max = 0;
	unsigned int nsizes = 0, iters = 1000, peer = 1, s, n;
	const char *devname = NULL;
	bool iters_given = false, bw, lead, part;
	struct fc_world w;
	struct fc_chan *ch = NULL;
	struct fc_dev *dev;
	uint32_t hops = 0;
	double t0, dt;
	char *buf;
	int c, ret;

	if (argc > 1 && bench_coll_is(argv[1]))
		return bench_coll_main(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "sort"))
		return bench_sort_main(argc, argv);
	while ((c = getopt_long(argc, argv, "s:i:p:d:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			nsizes = parse_sizes(optarg, sizes);
			break;
		case 'i':
			if (parse_u64(optarg, &v) || !v || v > 100000000)
				usage_error("bad iteration count '%s'", optarg);
			iters = (unsigned int)v;
			iters_given = true;
			break;
		case 'p':
			if (parse_u64(optarg, &v) || v >= FC_MAX_NODES)
				usage_error("bad peer '%s'", optarg);
			peer = (unsigned int)v;
			break;
		case 'd':
			devname = optarg;
			break;
		default:
			other_option(c, usage);
		}
	}
	if (optind != argc - 1)
		usage_error("one command: pingpong or bw");
	if (!strcmp(argv[optind], "pingpong"))
		bw = false;
	else if (!strcmp(argv[optind], "bw"))
		bw = true;
	else
		usage_error("unknown command '%s'", argv[optind]);
	if (!nsizes)
		for (v = 1; v <= (1u << 20); v <<= 1)
			sizes[nsizes++] = v;
	for (s = 0; s < nsizes; s++)
		if (sizes[s] > max)
			max = sizes[s];

	ret = fc_open(&dev, devname);
	if (ret)
		die("open", ret);
	ret = fc_world_query(dev, &w);
	if (ret)
		die("world (run it under fpgacomm-run, mpirun or srun)", ret);
	if (peer == 0 || peer >= w.size)
		usage_error(
			"peer %u: the world has ranks 0..%u and rank 0 leads",
			peer, w.size - 1);
	lead = w.rank == 0;
	part = lead || w.rank == peer;
	if (part) {
		ret = fc_chan_open(dev, lead ? peer : 0, PORT, 0, &ch);
		if (ret)
			die("channel", ret);
	}
	buf = calloc(1, max);
	if (!buf)
		die("buffer", -ENOMEM);
	fc_world_hops(dev, peer, &hops);
	if (lead) {
		printf("# %s %s: rank 0 <-> rank %u, %u hop(s), topology %s\n",
		       prog, bw ? "bw" : "pingpong", peer, hops, w.topology);
		printf("# %-10s %18s\n", "Size",
		       bw ? "Bandwidth (MB/s)" : "Latency (us)");
	}
	for (s = 0; s < nsizes; s++) {
		n = iters_for(sizes[s] * (bw ? WINDOW : 1), iters, iters_given);
		if (part)
			(bw ? bandwidth : pingpong)(ch, lead, buf, sizes[s],
						    WARMUP);
		ret = fc_barrier(dev, TIMEOUT_MS);
		if (ret)
			die("barrier", ret);
		t0 = now_us();
		if (part)
			(bw ? bandwidth : pingpong)(ch, lead, buf, sizes[s], n);
		dt = now_us() - t0;
		if (lead && bw)
			printf("%-12llu %18.2f\n", (unsigned long long)sizes[s],
			       (double)sizes[s] * WINDOW * n / dt);
		else if (lead)
			printf("%-12llu %18.3f\n", (unsigned long long)sizes[s],
			       dt / (2.0 * n));
		fflush(stdout);
	}
	ret = fc_barrier(dev, TIMEOUT_MS);
	if (ret)
		die("barrier", ret);
	if (ch)
		fc_chan_close(ch);
	free(buf);
	fc_close(dev);
	return 0;
}
