// SPDX-License-Identifier: MIT
/*
 * osu-mpi: MPI point-to-point latency and bandwidth between two ranks, the
 * counterpart of tools/fpgacomm-bench for scripts/bench-fabric.sh. It
 * measures exactly what fpgacomm-bench measures, with the same sizes,
 * iteration counts, warm-up, window and output, so that the two can stand
 * side by side:
 *
 *   pingpong  rank 0 sends SIZE bytes to the peer and waits for SIZE bytes
 *             back (MPI_Send, MPI_Recv), ITERS times; latency is the time
 *             over 2 * ITERS (half the round trip), in microseconds.
 *   bw        rank 0 posts WINDOW (16) non-blocking sends of SIZE bytes, the
 *             peer as many receives; both wait for all of them, then the
 *             peer sends a 1-byte ack; ITERS times. Bandwidth is
 *             SIZE * WINDOW * ITERS over the time, in MB/s (10^6 bytes/s).
 *
 * Per size: WARMUP untimed iterations, an MPI_Barrier, then the timed
 * iterations, timed by rank 0 alone (CLOCK_MONOTONIC) from just after the
 * barrier to the last reply or ack. ITERS is 1000 unless -i is given, but
 * never more than moves 64 MiB (WINDOW * SIZE per bw iteration), and never
 * fewer than 10. Ranks other than 0 and the peer only join the barriers.
 *
 * Built by scripts/bench-fabric.sh with mpicc into build/; run as
 *   mpirun -n 2 --mca btl self,vader build/bench/osu-mpi pingpong -s 8,4K
 * Written for this project after the OSU micro-benchmarks' method; none of
 * their code.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

/* The same constants as tools/fpgacomm-bench.c. */
#define WINDOW	  16
#define MAX_SIZES 64
#define MAX_MSG	  (16u << 20) /* FC_CHAN_MAX_MSG */
#define WARMUP	  2
#define TAG	  7

static const char *const prog = "osu-mpi";

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s pingpong|bw [-s LIST] [-i N] [-p PEER]\n"
		"MPI latency (pingpong: half the round trip) or bandwidth (bw:\n"
		"windows of %u messages, then an ack) between rank 0 and a peer,\n"
		"measured as tools/fpgacomm-bench measures a channel.\n"
		"  -s, --sizes LIST   message sizes, comma separated, suffixes K/M\n"
		"                     (default 1,2,4,...,1M)\n"
		"  -i, --iters N      iterations per size (default 1000, fewer for\n"
		"                     large messages: at most 64 MiB moved)\n"
		"  -p, --peer R       the rank that answers (default 1)\n",
		prog, WINDOW);
}

static void fail(const char *fmt, const char *arg)
{
	int rank = 0;

	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (!rank) {
		fprintf(stderr, "%s: ", prog);
		fprintf(stderr, fmt, arg);
		fputc('\n', stderr);
	}
	MPI_Finalize();
	exit(2);
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* "8", "4K", "4KiB", "1M": RETURN VALUE 0, or -1 for anything else. */
static int parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	if (shift)
		end++;
	if (shift && (!strcmp(end, "iB") || !strcmp(end, "B")))
		end += strlen(end);
	if (*end || v > (MAX_MSG >> shift))
		return -1;
	*out = v << shift;
	return 0;
}

static unsigned int parse_sizes(const char *s, uint64_t *sizes)
{
	char *copy = strdup(s), *tok, *save = NULL;
	unsigned int n = 0;

	if (!copy)
		fail("%s", "out of memory");
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (n == MAX_SIZES)
			fail("too many sizes in '%s'", s);
		if (parse_size(tok, &sizes[n]) || !sizes[n])
			fail("bad size '%s' (1 to 16M)", tok);
		n++;
	}
	free(copy);
	if (!n)
		fail("%s", "no sizes");
	return n;
}

/* As fpgacomm-bench's iters_for(). */
static unsigned int iters_for(uint64_t size, unsigned int iters, bool given)
{
	uint64_t cap = (64ull << 20) / size;

	if (given)
		return iters;
	if (cap < 10)
		cap = 10;
	return iters < cap ? iters : (unsigned int)cap;
}

static void pingpong(int other, bool lead, char *buf, uint64_t size,
		     unsigned int iters)
{
	for (unsigned int i = 0; i < iters; i++) {
		if (lead) {
			MPI_Send(buf, (int)size, MPI_CHAR, other, TAG,
				 MPI_COMM_WORLD);
			MPI_Recv(buf, (int)size, MPI_CHAR, other, TAG,
				 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(buf, (int)size, MPI_CHAR, other, TAG,
				 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(buf, (int)size, MPI_CHAR, other, TAG,
				 MPI_COMM_WORLD);
		}
	}
}

static void bandwidth(int other, bool lead, char *buf, uint64_t size,
		      unsigned int iters)
{
	MPI_Request req[WINDOW];
	char ack = 0;

	for (unsigned int i = 0; i < iters; i++) {
		for (unsigned int w = 0; w < WINDOW; w++) {
			if (lead)
				MPI_Isend(buf, (int)size, MPI_CHAR, other, TAG,
					  MPI_COMM_WORLD, &req[w]);
			else
				MPI_Irecv(buf, (int)size, MPI_CHAR, other, TAG,
					  MPI_COMM_WORLD, &req[w]);
		}
		MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
		if (lead)
			MPI_Recv(&ack, 1, MPI_CHAR, other, TAG + 1,
				 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		else
			MPI_Send(&ack, 1, MPI_CHAR, other, TAG + 1,
				 MPI_COMM_WORLD);
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "sizes", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'i' },
		{ "peer", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t sizes[MAX_SIZES], max = 0;
	unsigned int nsizes = 0, iters = 1000, n, s;
	bool iters_given = false, bw, lead, part;
	int rank, size, peer = 1, c;
	char *buf, *end;
	double t0, dt;
	long v;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	while ((c = getopt_long(argc, argv, "s:i:p:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			nsizes = parse_sizes(optarg, sizes);
			break;
		case 'i':
			v = strtol(optarg, &end, 10);
			if (*end || v < 1 || v > 100000000)
				fail("bad iteration count '%s'", optarg);
			iters = (unsigned int)v;
			iters_given = true;
			break;
		case 'p':
			v = strtol(optarg, &end, 10);
			if (*end || v < 1 || v >= size)
				fail("bad peer '%s': 1 .. size-1", optarg);
			peer = (int)v;
			break;
		case 'h':
			if (!rank)
				usage(stdout);
			MPI_Finalize();
			return 0;
		default:
			if (!rank)
				usage(stderr);
			MPI_Finalize();
			return 2;
		}
	}
	if (optind != argc - 1)
		fail("%s", "one command: pingpong or bw");
	if (!strcmp(argv[optind], "pingpong"))
		bw = false;
	else if (!strcmp(argv[optind], "bw"))
		bw = true;
	else
		fail("unknown command '%s'", argv[optind]);
	if (size < 2 || peer >= size)
		fail("%s", "needs at least 2 ranks, the peer among them");
	if (!nsizes)
		for (uint64_t x = 1; x <= (1u << 20); x <<= 1)
			sizes[nsizes++] = x;
	for (s = 0; s < nsizes; s++)
		if (sizes[s] > max)
			max = sizes[s];

	lead = rank == 0;
	part = lead || rank == peer;
	buf = calloc(1, max);
	if (!buf) {
		fprintf(stderr, "%s: out of memory\n", prog);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	if (lead) {
		printf("# %s %s: rank 0 <-> rank %d, %d ranks\n", prog,
		       bw ? "bw" : "pingpong", peer, size);
		printf("# %-10s %18s\n", "Size",
		       bw ? "Bandwidth (MB/s)" : "Latency (us)");
	}
	for (s = 0; s < nsizes; s++) {
		n = iters_for(sizes[s] * (bw ? WINDOW : 1), iters, iters_given);
		if (part)
			(bw ? bandwidth : pingpong)(lead ? peer : 0, lead, buf,
						    sizes[s], WARMUP);
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = now_us();
		if (part)
			(bw ? bandwidth : pingpong)(lead ? peer : 0, lead, buf,
						    sizes[s], n);
		dt = now_us() - t0;
		if (lead && bw)
			printf("%-12llu %18.2f\n", (unsigned long long)sizes[s],
			       (double)sizes[s] * WINDOW * n / dt);
		else if (lead)
			printf("%-12llu %18.3f\n", (unsigned long long)sizes[s],
			       dt / (2.0 * n));
		fflush(stdout);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	free(buf);
	MPI_Finalize();
	return 0;
}
