// SPDX-License-Identifier: MIT
/*
 * mpi_fabric: an MPI program run by tests/test_libfabric under
 *   mpirun --mca pml cm --mca mtl ofi -x FI_PROVIDER=fpgacomm
 * on 2 to 8 ranks, so that Open MPI's matching engine (the ofi MTL) runs
 * over the fpgacomm provider: point-to-point with MPI_ANY_SOURCE and
 * MPI_ANY_TAG (status checked), MPI_Probe, MPI_Iprobe and MPI_Mprobe /
 * MPI_Mrecv, messages of 0 B to 64 MiB with their data checked,
 * non-blocking sends and receives to every rank with work between, a
 * truncated receive (MPI_ERR_TRUNCATE), and Open MPI's collectives
 * (MPI_Allreduce, MPI_Bcast, MPI_Alltoall) on top. Prints "mpi_fabric: ok"
 * on rank 0 and exits 0, else says what failed and exits 1. argv[1], if
 * given, is the largest ping-pong message (1 MiB to 64 MiB; default 64 MiB),
 * for runs on many ranks on few cores.
 * Whether the traffic went over the board is checked by the caller, from
 * the board's counters the provider writes at close (FPGACOMM_FI_STATS).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

static int rank, size, failures;
static size_t max_size = 64u << 20; /* argv[1] may lower it */

#define CHECK(cond, ...)                                                    \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "rank %d: %s:%d: ", rank, __func__, \
				__LINE__);                                  \
			fprintf(stderr, __VA_ARGS__);                       \
			fputc('\n', stderr);                                \
			failures++;                                         \
		}                                                           \
	} while (0)

static uint8_t byte_at(uint64_t salt, size_t i)
{
	uint64_t x = (salt + i / 8) * 0x9e3779b97f4a7c15ull;

	x ^= x >> 29;
	return (uint8_t)(x >> (8 * (i % 8)));
}

static void fill(uint8_t *b, size_t n, uint64_t salt)
{
	for (size_t i = 0; i < n; i++)
		b[i] = byte_at(salt, i);
}

static size_t first_bad(const uint8_t *b, size_t n, uint64_t salt)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != byte_at(salt, i))
			return i;
	return n;
}

/* Every rank sends one message to the next; each takes it from any
 * source with any tag and checks who sent it and with which tag. */
static void test_any_source(void)
{
	int to = (rank + 1) % size, from = (rank + size - 1) % size;
	int v = rank * 1000 + 7, got = -1;
	MPI_Status st;
	MPI_Request r;

	MPI_Isend(&v, 1, MPI_INT, to, 100 + rank, MPI_COMM_WORLD, &r);
	MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
		 &st);
	MPI_Wait(&r, MPI_STATUS_IGNORE);
	CHECK(st.MPI_SOURCE == from && st.MPI_TAG == 100 + from &&
		      got == from * 1000 + 7,
	      "from %d tag %d value %d", st.MPI_SOURCE, st.MPI_TAG, got);
	MPI_Barrier(MPI_COMM_WORLD);
}

/* Rank 0 and 1: ping-pong of every size, data checked both ways. */
static void test_sizes(uint8_t *a, uint8_t *b)
{
	static const size_t sizes[] = { 0,	  1,	     8,	       60,
					4096,	  16352,     16385,    65536,
					1u << 20, 17u << 20, 64u << 20 };
	MPI_Status st;
	int count;

	if (rank > 1)
		goto out;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i], bad;

		if (n > max_size)
			break;
		if (rank == 0) {
			fill(a, n, n + 1);
			MPI_Send(a, (int)n, MPI_BYTE, 1, 5, MPI_COMM_WORLD);
			memset(b, 0, n);
			MPI_Recv(b, (int)n, MPI_BYTE, 1, 6, MPI_COMM_WORLD,
				 &st);
			bad = first_bad(b, n, n + 2);
		} else {
			memset(b, 0, n);
			MPI_Recv(b, (int)n, MPI_BYTE, 0, 5, MPI_COMM_WORLD,
				 &st);
			bad = first_bad(b, n, n + 1);
			fill(a, n, n + 2);
			MPI_Send(a, (int)n, MPI_BYTE, 0, 6, MPI_COMM_WORLD);
		}
		MPI_Get_count(&st, MPI_BYTE, &count);
		CHECK(bad == n && (size_t)count == n,
		      "size %zu: count %d, first wrong byte %zu", n, count,
		      bad);
	}
out:
	MPI_Barrier(MPI_COMM_WORLD);
}

/* Probe, iprobe and mprobe/mrecv from any rank. */
static void test_probe(void)
{
	MPI_Message msg;
	MPI_Status st;
	int count, flag = 0, v[1000];

	if (rank == 1) {
		for (int i = 0; i < 1000; i++)
			v[i] = i;
		MPI_Send(v, 1000, MPI_INT, 0, 42, MPI_COMM_WORLD);
		MPI_Send(v, 300, MPI_INT, 0, 43, MPI_COMM_WORLD);
	} else if (rank == 0) {
		MPI_Probe(MPI_ANY_SOURCE, 42, MPI_COMM_WORLD, &st);
		MPI_Get_count(&st, MPI_INT, &count);
		CHECK(st.MPI_SOURCE == 1 && count == 1000,
		      "probe: from %d count %d", st.MPI_SOURCE, count);
		while (!flag)
			MPI_Iprobe(1, 43, MPI_COMM_WORLD, &flag, &st);
		MPI_Get_count(&st, MPI_INT, &count);
		CHECK(count == 300, "iprobe: count %d", count);
		MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &msg,
			   &st);
		CHECK(st.MPI_TAG == 42, "mprobe: tag %d", st.MPI_TAG);
		memset(v, 0xff, sizeof(v));
		MPI_Mrecv(v, 1000, MPI_INT, &msg, &st);
		CHECK(v[0] == 0 && v[999] == 999, "mrecv: %d .. %d", v[0],
		      v[999]);
		MPI_Recv(v, 300, MPI_INT, 1, 43, MPI_COMM_WORLD, &st);
		CHECK(v[299] == 299, "after mrecv: %d", v[299]);
	}
	MPI_Barrier(MPI_COMM_WORLD);
}

/* Receives from and sends to every rank at once, with work between. */
static void test_overlap(void)
{
	enum {
		N = 1 << 18
	}; /* ints: 1 MiB each */
	MPI_Request *req = calloc(2 * (size_t)size, sizeof(*req));
	int **in = calloc((size_t)size, sizeof(*in));
	int *out = malloc(N * sizeof(int));
	volatile double work = 0;
	int nreq = 0;

	if (!req || !in || !out) {
		CHECK(0, "out of memory");
		return;
	}
	for (int i = 0; i < N; i++)
		out[i] = rank * 7 + i;
	for (int p = 0; p < size; p++) {
		in[p] = malloc(N * sizeof(int));
		MPI_Irecv(in[p], N, MPI_INT, p, 9, MPI_COMM_WORLD,
			  &req[nreq++]);
	}
	for (int p = 0; p < size; p++)
		MPI_Isend(out, N, MPI_INT, (rank + p) % size, 9, MPI_COMM_WORLD,
			  &req[nreq++]);
	for (int i = 0; i < 200000; i++)
		work += i * 0.5;
	MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
	for (int p = 0; p < size; p++) {
		CHECK(in[p][0] == p * 7 && in[p][N - 1] == p * 7 + N - 1,
		      "from %d: %d .. %d", p, in[p][0], in[p][N - 1]);
		free(in[p]);
	}
	free(in);
	free(out);
	free(req);
	MPI_Barrier(MPI_COMM_WORLD);
}

static void test_truncate(void)
{
	int v[100] = { 0 }, rc;
	MPI_Status st;

	if (rank == 0) {
		MPI_Send(v, 100, MPI_INT, 1, 77, MPI_COMM_WORLD);
		MPI_Send(v, 1, MPI_INT, 1, 78, MPI_COMM_WORLD);
	} else if (rank == 1) {
		rc = MPI_Recv(v, 10, MPI_INT, 0, 77, MPI_COMM_WORLD, &st);
		CHECK(rc != MPI_SUCCESS, "a cut-off receive succeeded");
		if (rc != MPI_SUCCESS) {
			int cls;

			MPI_Error_class(rc, &cls);
			CHECK(cls == MPI_ERR_TRUNCATE, "error class %d", cls);
		}
		rc = MPI_Recv(v, 1, MPI_INT, 0, 78, MPI_COMM_WORLD, &st);
		CHECK(rc == MPI_SUCCESS, "the next message: %d", rc);
	}
	MPI_Barrier(MPI_COMM_WORLD);
}

static void test_collectives(void)
{
	enum {
		B = 1 << 20
	};
	long sum = 0, want = (long)size * (size - 1) / 2, me = rank;
	uint8_t *buf = malloc(B);
	int *a = malloc((size_t)size * sizeof(int));
	int *b = malloc((size_t)size * sizeof(int));

	MPI_Allreduce(&me, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	CHECK(sum == want, "allreduce %ld, expected %ld", sum, want);
	if (rank == size - 1)
		fill(buf, B, 99);
	MPI_Bcast(buf, B, MPI_BYTE, size - 1, MPI_COMM_WORLD);
	CHECK(first_bad(buf, B, 99) == B, "bcast data wrong");
	for (int p = 0; p < size; p++)
		a[p] = rank * 100 + p;
	MPI_Alltoall(a, 1, MPI_INT, b, 1, MPI_INT, MPI_COMM_WORLD);
	for (int p = 0; p < size; p++)
		CHECK(b[p] == p * 100 + rank, "alltoall from %d: %d", p, b[p]);
	free(buf);
	free(a);
	free(b);
}

int main(int argc, char **argv)
{
	uint8_t *a, *b;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	if (argc > 1)
		max_size = strtoull(argv[1], NULL, 0);
	if (max_size < (1u << 20) || max_size > (64u << 20))
		max_size = 64u << 20;
	a = malloc(max_size);
	b = malloc(max_size);
	if (!a || !b)
		MPI_Abort(MPI_COMM_WORLD, 2);
	test_any_source();
	test_sizes(a, b);
	test_probe();
	test_overlap();
	test_truncate();
	test_collectives();
	free(a);
	free(b);
	MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM,
		      MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpi_fabric: %s (%d ranks, %d failures)\n",
		       failures ? "FAIL" : "ok", size, failures);
	MPI_Finalize();
	return failures ? 1 : 0;
}
