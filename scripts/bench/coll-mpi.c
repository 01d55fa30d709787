// SPDX-License-Identifier: MIT
/*
 * coll-mpi: MPI collectives over MPI_COMM_WORLD, the counterpart of
 * `fpgacomm-bench COLLECTIVE` (tools/bench_coll.c) for
 * scripts/bench-coll.sh. It measures exactly what that measures, with the
 * same sizes, iteration counts, warm-up, input values, checks and output
 * columns (nccl-tests'), so that the two can stand side by side:
 *
 *   size: bytes of each rank's send buffer (receive buffer for allgather
 *   and bcast); per size 2 untimed runs, a barrier, ITERS timed runs
 *   (CLOCK_MONOTONIC on every rank; the largest mean is printed), then one
 *   more run whose result is checked (#wrong, summed over the ranks).
 *   ITERS is 200 unless -i is given, at most 512 MiB / size, at least 5.
 *   Out of place, then in place (MPI_IN_PLACE), except for bcast and
 *   barrier (size 0: no data).
 *
 * Built by scripts/bench-coll.sh with mpicc into build/bench/; run as
 *   mpirun -n 4 build/bench/coll-mpi allreduce -s 8,1M
 * A standalone program on purpose: it cannot link the project's library.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#define MAX_SIZES 32

enum coll { ALLREDUCE, REDUCE_SCATTER, ALLGATHER, ALLTOALL, BCAST, REDUCE,
	    SCAN, BARRIER, COLL_COUNT };

static const char *const names[COLL_COUNT] = {
	"allreduce", "reduce_scatter", "allgather", "alltoall", "bcast",
	"reduce", "scan", "barrier",
};

static enum coll coll;
static MPI_Datatype type = MPI_FLOAT;
static MPI_Op op = MPI_SUM;
static int tindex, oindex, root, rank, n;
static size_t es = 4;

static long value(int r, size_t i)
{
	return (long)(((size_t)r * 7 + i * 3) % 11) - 5;
}

static void store(void *buf, size_t i, long v)
{
	switch (tindex) {
	case 1: ((double *)buf)[i] = (double)v; break;
	case 2: ((int32_t *)buf)[i] = (int32_t)v; break;
	case 3: ((int64_t *)buf)[i] = v; break;
	default: ((float *)buf)[i] = (float)v; break;
	}
}

static long load(const void *buf, size_t i)
{
	switch (tindex) {
	case 1: return (long)((const double *)buf)[i];
	case 2: return ((const int32_t *)buf)[i];
	case 3: return (long)((const int64_t *)buf)[i];
	default: return (long)((const float *)buf)[i];
	}
}

static long reduced(int last, size_t i)
{
	long acc = value(0, i), v;

	for (int r = 1; r <= last; r++) {
		v = value(r, i);
		acc = oindex == 1 ? (v < acc ? v : acc) :
		      oindex == 2 ? (v > acc ? v : acc) : acc + v;
	}
	return acc;
}

static void counts_of(size_t size, size_t *scount, size_t *count)
{
	size_t c = size / es;

	switch (coll) {
	case ALLGATHER:
		*count = *scount = c / n;
		break;
	case REDUCE_SCATTER:
		*count = c / n;
		*scount = *count * n;
		break;
	case ALLTOALL:
		*count = c / n;
		*scount = *count * n;
		break;
	case BARRIER: /* no data: size 0 */
		*count = *scount = 0;
		break;
	default:
		*count = *scount = c;
	}
}

static void run_once(void *sb, void *rb, size_t count, bool in_place)
{
	const void *s = in_place ? MPI_IN_PLACE : sb;
	int c = (int)count;

	switch (coll) {
	case ALLREDUCE:
		MPI_Allreduce(s, rb, c, type, op, MPI_COMM_WORLD);
		break;
	case REDUCE_SCATTER:
		MPI_Reduce_scatter_block(s, rb, c, type, op, MPI_COMM_WORLD);
		break;
	case ALLGATHER:
		MPI_Allgather(s, c, type, rb, c, type, MPI_COMM_WORLD);
		break;
	case ALLTOALL:
		MPI_Alltoall(s, c, type, rb, c, type, MPI_COMM_WORLD);
		break;
	case BCAST:
		MPI_Bcast(rb, c, type, root, MPI_COMM_WORLD);
		break;
	case REDUCE:
		MPI_Reduce(in_place && rank != root ? sb : s, rb, c, type, op,
			   root, MPI_COMM_WORLD);
		break;
	case BARRIER:
		MPI_Barrier(MPI_COMM_WORLD);
		break;
	default:
		MPI_Scan(s, rb, c, type, op, MPI_COMM_WORLD);
	}
}

static void prepare(void *sb, void *rb, size_t scount, size_t count,
		    bool in_place)
{
	size_t i;

	for (i = 0; i < scount; i++)
		store(sb, i, value(rank, i));
	if (coll == BCAST)
		for (i = 0; i < count; i++)
			store(rb, i, rank == root ? value(root, i) : 0);
	if (!in_place)
		return;
	if (coll == ALLGATHER)
		memcpy((char *)rb + (size_t)rank * count * es, sb, count * es);
	else if (coll != BCAST && (coll != REDUCE || rank == root))
		memcpy(rb, sb, scount * es);
}

static unsigned long long wrong(const void *rb, size_t count)
{
	unsigned long long bad = 0;
	size_t i;
	int r;

	switch (coll) {
	case ALLREDUCE:
		for (i = 0; i < count; i++)
			bad += load(rb, i) != reduced(n - 1, i);
		break;
	case REDUCE_SCATTER:
		for (i = 0; i < count; i++)
			bad += load(rb, i) != reduced(n - 1, rank * count + i);
		break;
	case ALLGATHER:
		for (r = 0; r < n; r++)
			for (i = 0; i < count; i++)
				bad += load(rb, r * count + i) != value(r, i);
		break;
	case ALLTOALL:
		for (r = 0; r < n; r++)
			for (i = 0; i < count; i++)
				bad += load(rb, r * count + i) !=
				       value(r, rank * count + i);
		break;
	case BCAST:
		for (i = 0; i < count; i++)
			bad += load(rb, i) != value(root, i);
		break;
	case REDUCE:
		for (i = 0; i < count && rank == root; i++)
			bad += load(rb, i) != reduced(n - 1, i);
		break;
	case BARRIER:
		break;
	default:
		for (i = 0; i < count; i++)
			bad += load(rb, i) != reduced(rank, i);
	}
	return bad;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static double bus_factor(void)
{
	if (coll == ALLREDUCE)
		return 2.0 * (n - 1) / n;
	if (coll == BCAST || coll == REDUCE || coll == SCAN)
		return 1;
	return (double)(n - 1) / n;
}

static void measure(void *sb, void *rb, size_t size, unsigned int iters,
		    bool in_place)
{
	size_t scount, count;
	unsigned long long bad, bad_all;
	double t0, t, tmax;

	counts_of(size, &scount, &count);
	prepare(sb, rb, scount, count, in_place);
	for (int i = 0; i < 2; i++)
		run_once(sb, rb, count, in_place);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = now_us();
	for (unsigned int i = 0; i < iters; i++)
		run_once(sb, rb, count, in_place);
	t = (now_us() - t0) / iters;
	prepare(sb, rb, scount, count, in_place);
	run_once(sb, rb, count, in_place);
	bad = wrong(rb, count);
	MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	MPI_Allreduce(&bad, &bad_all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM,
		      MPI_COMM_WORLD);
	if (rank == 0)
		printf("  %10.2f %7.3f %7.3f %6llu", tmax, size / tmax / 1e3,
		       size / tmax / 1e3 * bus_factor(), bad_all);
}

static size_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (*end == 'K' || *end == 'k')
		v <<= 10;
	else if (*end == 'M' || *end == 'm')
		v <<= 20;
	return (size_t)v;
}

int main(int argc, char **argv)
{
	static const char *const tnames[] = { "float32", "float64", "int32",
					      "int64" };
	static const char *const onames[] = { "sum", "min", "max" };
	size_t sizes[MAX_SIZES] = { 8, 1024, 65536, 1048576 }, max = 0;
	unsigned int nsizes = 4, iters = 200;
	bool iters_given = false;
	char *sb, *rb, *tok, *save = NULL;
	int c;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	if (argc < 2) {
		fprintf(stderr, "usage: coll-mpi COLLECTIVE [-s LIST] [-i N] [-t T] [-o OP] [-r R]\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	for (coll = 0; coll < COLL_COUNT && strcmp(argv[1], names[coll]); coll++)
		;
	if (coll == COLL_COUNT)
		MPI_Abort(MPI_COMM_WORLD, 2);
	optind = 2;
	while ((c = getopt(argc, argv, "s:i:t:o:r:")) != -1) {
		switch (c) {
		case 's':
			nsizes = 0;
			for (tok = strtok_r(optarg, ",", &save);
			     tok && nsizes < MAX_SIZES;
			     tok = strtok_r(NULL, ",", &save))
				sizes[nsizes++] = parse_size(tok);
			break;
		case 'i':
			iters = (unsigned int)atoi(optarg);
			iters_given = true;
			break;
		case 't':
			for (tindex = 0; tindex < 4 && strcmp(optarg, tnames[tindex]);
			     tindex++)
				;
			break;
		case 'o':
			for (oindex = 0; oindex < 3 && strcmp(optarg, onames[oindex]);
			     oindex++)
				;
			break;
		case 'r':
			root = atoi(optarg);
			break;
		default:
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
	}
	if (tindex > 3 || oindex > 2)
		MPI_Abort(MPI_COMM_WORLD, 2);
	type = (MPI_Datatype[]){ MPI_FLOAT, MPI_DOUBLE, MPI_INT32_T,
				 MPI_INT64_T }[tindex];
	es = tindex == 0 || tindex == 2 ? 4 : 8;
	op = (MPI_Op[]){ MPI_SUM, MPI_MIN, MPI_MAX }[oindex];
	for (unsigned int s = 0; s < nsizes; s++)
		if (sizes[s] > max)
			max = sizes[s];
	sb = calloc(1, max + es);
	rb = calloc(1, max + es);
	if (rank == 0) {
		printf("# coll-mpi %s: %d ranks, %s %s\n", names[coll], n,
		       tnames[tindex], onames[oindex]);
		printf("# %10s %12s %8s %6s %4s  %10s %7s %7s %6s  %10s %7s %7s %6s\n",
		       "size", "count", "type", "redop", "root", "time(us)",
		       "algbw", "busbw", "#wrong", "time(us)", "algbw", "busbw",
		       "#wrong");
	}
	for (unsigned int s = 0; s < nsizes; s++) {
		size_t sc, count, cap = (512ull << 20) / (sizes[s] ? sizes[s] : 1);
		unsigned int it = iters_given ? iters :
				  cap < 5 ? 5 : cap < iters ? (unsigned int)cap :
							      iters;

		counts_of(sizes[s], &sc, &count);
		if (rank == 0)
			printf("  %10zu %12zu %8s %6s %4d", sizes[s], count,
			       tnames[tindex], onames[oindex],
			       coll == BCAST || coll == REDUCE ? root : -1);
		measure(sb, rb, sizes[s], it, false);
		if (coll != BCAST && coll != BARRIER)
			measure(sb, rb, sizes[s], it, true);
		if (rank == 0) {
			printf("\n");
			fflush(stdout);
		}
	}
	free(sb);
	free(rb);
	MPI_Finalize();
	return 0;
}
