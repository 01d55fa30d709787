/* SPDX-License-Identifier: MIT */
/*
 * sort-mpi: the distributed sort's algorithms over MPI, the counterpart of
 * `fpgacomm-bench sort` (tools/bench_sort.c) for scripts/bench-sort.sh.
 * The same keys (key g = mix(seed + g) cut to the key bits, g = rank *
 * per-rank count + index), the same steps and the same output columns:
 *
 *   counting: histogram, MPI_Allreduce and MPI_Exscan of it, a local
 *     scatter by key, MPI_Alltoall of the counts, one MPI_Alltoallv,
 *     a scatter into place (m = 1, A = 3);
 *   onepass: a local LSD radix sort (11-bit digits), exact splitters by a
 *     radix select (8 bits a round, one MPI_Allreduce each), the equal
 *     keys at a boundary split by MPI_Exscan, one MPI_Alltoallv, a merge
 *     of the runs in pairs (m = 1, A = radix passes + merge rounds).
 *
 * Timing: one untimed sort, then ITERS timed ones, each after a barrier;
 * the slowest rank's time; the median is printed. The model's Bmem and
 * Bnet are a memcpy and an MPI_Alltoall of each rank's keys, all ranks at
 * once. Keys are 32-bit, balanced output (each rank keeps its count).
 *
 * Built by scripts/bench-sort.sh with mpicc into build/bench/; run as
 *   mpirun -n 4 build/bench/sort-mpi -n 16777216 -b 6 -a counting
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

#define SEED	0x50a7ull
#define DB	11		/* local radix digit bits */
#define RB	8		/* splitter bits per round */

static int rank, n;
static unsigned int bits = 32;
static size_t count;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static void *xmalloc(size_t len)
{
	void *p = malloc(len + 8);

	if (!p) {
		fprintf(stderr, "sort-mpi: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	return p;
}

static void exchange(const uint32_t *send, const size_t *sc, uint32_t *recv,
		     size_t *rc)
{
	int *s = xmalloc(4 * sizeof(int) * n), *sd = s + n, *r = sd + n,
	    *rd = r + n;
	unsigned long long *sl = xmalloc(sizeof(*sl) * 2 * n), *rl = sl + n;
	int so = 0, ro = 0;

	for (int d = 0; d < n; d++)
		sl[d] = sc[d];
	MPI_Alltoall(sl, 1, MPI_UNSIGNED_LONG_LONG, rl, 1,
		     MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD);
	for (int d = 0; d < n; d++) {
		rc[d] = rl[d];
		s[d] = (int)sc[d];
		r[d] = (int)rc[d];
		sd[d] = so;
		rd[d] = ro;
		so += s[d];
		ro += r[d];
	}
	MPI_Alltoallv(send, s, sd, MPI_UINT32_T, recv, r, rd, MPI_UINT32_T,
		      MPI_COMM_WORLD);
	free(s);
	free(sl);
}

/* ---- counting ---- */

static void sort_counting(const uint32_t *in, uint32_t *out, unsigned int *A)
{
	size_t nb = (size_t)1 << bits;
	unsigned long long *h = calloc(nb, 8), *H = calloc(nb, 8),
			   *E = calloc(nb, 8);
	size_t *place = xmalloc(nb * sizeof(size_t)), *sc = calloc(n, 8),
	       *rc = calloc(n, 8), *G = xmalloc(nb * sizeof(size_t));
	uint32_t *send = xmalloc(count * 4), *recv = xmalloc(count * 4);
	size_t sum = 0, lo = (size_t)rank * count;
	int d = 0;

	for (size_t i = 0; i < count; i++)
		h[in[i]]++;
	MPI_Allreduce(h, H, (int)nb, MPI_UNSIGNED_LONG_LONG, MPI_SUM,
		      MPI_COMM_WORLD);
	MPI_Exscan(h, E, (int)nb, MPI_UNSIGNED_LONG_LONG, MPI_SUM,
		   MPI_COMM_WORLD);
	if (rank == 0)
		memset(E, 0, nb * 8);
	for (size_t v = 0; v < nb; v++) {
		size_t s, hv = h[v];

		G[v] = sum;
		sum += H[v];
		s = G[v] + E[v];
		while (hv) {
			size_t take;

			while ((size_t)(d + 1) * count <= s)
				d++;
			take = (size_t)(d + 1) * count - s;
			take = take < hv ? take : hv;
			sc[d] += take;
			s += take;
			hv -= take;
		}
	}
	sum = 0;
	for (size_t v = 0; v < nb; v++) {
		place[v] = sum;
		sum += h[v];
	}
	for (size_t i = 0; i < count; i++)
		send[place[in[i]]++] = in[i];
	exchange(send, sc, recv, rc);
	for (size_t v = 0; v < nb; v++)
		place[v] = G[v] > lo ? G[v] - lo : 0;
	for (size_t i = 0; i < count; i++)
		out[place[recv[i]]++] = recv[i];
	*A = 3;
	free(h); free(H); free(E); free(place); free(sc); free(rc); free(G);
	free(send); free(recv);
}

/* ---- onepass ---- */

static uint32_t *radix(const uint32_t *in, uint32_t *a, uint32_t *b,
		       unsigned int *passes)
{
	unsigned int nd = (bits + DB - 1) / DB;
	size_t (*h)[1 << DB] = calloc(nd, sizeof(*h));
	const uint32_t *src = in;
	uint32_t *dst = a, *res = NULL;

	for (size_t i = 0; i < count; i++)
		for (unsigned int dg = 0; dg < nd; dg++)
			h[dg][(in[i] >> (dg * DB)) & ((1 << DB) - 1)]++;
	*passes = 1;
	for (unsigned int dg = 0; dg < nd; dg++) {
		size_t sum = 0;
		bool trivial = false;

		for (size_t v = 0; v < (1 << DB); v++) {
			size_t c = h[dg][v];

			trivial |= c == count;
			h[dg][v] = sum;
			sum += c;
		}
		if (trivial)
			continue;
		for (size_t i = 0; i < count; i++)
			dst[h[dg][(src[i] >> (dg * DB)) & ((1 << DB) - 1)]++] = src[i];
		(*passes)++;
		res = dst;
		src = dst;
		dst = dst == a ? b : a;
	}
	if (!res) {
		memcpy(a, in, count * 4);
		(*passes)++;
		res = a;
	}
	free(h);
	return res;
}

static size_t upper(const uint32_t *k, size_t len, uint64_t key)
{
	size_t lo = 0, hi = len;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k[mid] <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static size_t lower(const uint32_t *k, size_t len, uint64_t key)
{
	return key ? upper(k, len, key - 1) : 0;
}

static void merge2(const uint32_t *a, size_t na, const uint32_t *b,
		   size_t nb, uint32_t *out)
{
	size_t i = 0, j = 0, o = 0;

	while (i < na && j < nb) {
		size_t takeb = b[j] < a[i];

		out[o++] = takeb ? b[j] : a[i];
		j += takeb;
		i += !takeb;
	}
	while (i < na)
		out[o++] = a[i++];
	while (j < nb)
		out[o++] = b[j++];
}

static void sort_onepass(const uint32_t *in, uint32_t *out, unsigned int *A)
{
	int nbd = n - 1;
	uint32_t *x = xmalloc(count * 4), *y = xmalloc(count * 4), *s;
	uint32_t *recv = xmalloc(count * 4), *tmp = xmalloc(count * 4);
	unsigned long long *cnt = calloc((size_t)n << RB, 8),
			   *sum = calloc((size_t)n << RB, 8);
	unsigned long long *lb = calloc(n, 8), *eq = calloc(n, 8),
			   *L = calloc(n, 8), *E = calloc(n, 8);
	uint64_t *K = calloc(n, 8);
	size_t *sc = calloc(n, 8), *rc = calloc(n, 8), *cut = calloc(n + 1, 8);
	size_t *st = calloc(n + 1, 8), total = count * n;
	unsigned int passes, left = bits;

	s = radix(in, x, y, &passes);
	while (left && nbd) {
		unsigned int w = left < RB ? left : RB, shift = left - w;
		uint64_t below = shift ? (1ull << shift) - 1 : 0;

		for (int d = 0; d < nbd; d++)
			for (size_t j = 0; j < ((size_t)1 << w); j++)
				cnt[((size_t)d << RB) + j] = upper(s, count,
					K[d] | (uint64_t)j << shift | below);
		MPI_Allreduce(cnt, sum, nbd << RB, MPI_UNSIGNED_LONG_LONG,
			      MPI_SUM, MPI_COMM_WORLD);
		for (int d = 0; d < nbd; d++) {
			size_t j = 0, target = (size_t)(d + 1) * count;

			while (j + 1 < ((size_t)1 << w) &&
			       sum[((size_t)d << RB) + j] <= target)
				j++;
			K[d] |= (uint64_t)j << shift;
		}
		left -= w;
	}
	for (int d = 0; d < nbd; d++) {
		lb[d] = lower(s, count, K[d]);
		eq[d] = upper(s, count, K[d]) - lb[d];
	}
	if (nbd) {
		MPI_Allreduce(lb, L, nbd, MPI_UNSIGNED_LONG_LONG, MPI_SUM,
			      MPI_COMM_WORLD);
		MPI_Exscan(eq, E, nbd, MPI_UNSIGNED_LONG_LONG, MPI_SUM,
			   MPI_COMM_WORLD);
	}
	if (rank == 0)
		memset(E, 0, n * 8);
	cut[n] = count;
	for (int d = 0; d < nbd; d++) {
		size_t target = (size_t)(d + 1) * count, before = 0;

		if (target > L[d] + E[d]) {
			before = target - L[d] - E[d];
			before = before < eq[d] ? before : eq[d];
		}
		cut[d + 1] = lb[d] + before;
	}
	for (int d = 0; d < n; d++)
		sc[d] = cut[d + 1] - cut[d];
	exchange(s, sc, recv, rc);
	/* pairwise merges of the runs, the last into out */
	st[0] = 0;
	for (int d = 0; d < n; d++)
		st[d + 1] = st[d] + rc[d];
	{
		int runs = n;
		uint32_t *src = recv, *bufs[2] = { tmp, x };
		int cur = 0;

		if (runs == 1)
			memcpy(out, recv, count * 4);
		while (runs > 1) {
			int next = (runs + 1) / 2;
			uint32_t *dst = next == 1 ? out : bufs[cur];

			for (int r = 0; r < runs; r += 2) {
				if (r + 1 < runs)
					merge2(src + st[r], st[r + 1] - st[r],
					       src + st[r + 1], st[r + 2] - st[r + 1],
					       dst + st[r]);
				else
					memcpy(dst + st[r], src + st[r],
					       (st[r + 1] - st[r]) * 4);
				st[r / 2] = st[r];
			}
			st[next] = total / n;
			runs = next;
			src = dst;
			cur ^= 1;
		}
	}
	(void)total;
	*A = passes + 1;	/* the merge: one pass per round of pairs */
	for (int runs = n; runs > 2; runs = (runs + 1) / 2)
		(*A)++;
	free(x); free(y); free(recv); free(tmp); free(cnt); free(sum);
	free(lb); free(eq); free(L); free(E); free(K); free(sc); free(rc);
	free(cut); free(st);
}

static double slowest(double t)
{
	MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	return t;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *t, int k)
{
	qsort(t, k, sizeof(*t), cmp_double);
	return k % 2 ? t[k / 2] : (t[k / 2 - 1] + t[k / 2]) / 2;
}

int main(int argc, char **argv)
{
	size_t keys = 1 << 20;
	int iters = 3, c, nalgo = 0;
	const char *algos[4];
	bool head = false;
	uint32_t *in, *out;
	double t[64], bmem, bnet, t0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	while ((c = getopt(argc, argv, "n:b:a:i:H")) != -1) {
		switch (c) {
		case 'n': keys = strtoull(optarg, NULL, 0); break;
		case 'b': bits = (unsigned int)atoi(optarg); break;
		case 'a':
			for (char *tok = strtok(optarg, ","); tok && nalgo < 4;
			     tok = strtok(NULL, ","))
				algos[nalgo++] = tok;
			break;
		case 'i': iters = atoi(optarg); break;
		case 'H': head = true; break;
		default:
			if (!rank)
				fprintf(stderr, "usage: sort-mpi [-n KEYS] [-b BITS] "
					"[-a counting,onepass] [-i ITERS] [-H]\n");
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
	}
	if (!nalgo)
		algos[nalgo++] = bits <= 20 ? "counting" : "onepass";
	if (iters < 1 || iters > 64 || bits < 1 || bits > 32 || keys % n) {
		if (!rank)
			fprintf(stderr, "sort-mpi: bad arguments\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	count = keys / n;
	in = xmalloc(count * 4);
	out = xmalloc(count * 4);
	for (size_t i = 0; i < count; i++)
		in[i] = (uint32_t)mix(SEED + (uint64_t)rank * count + i) &
			(bits >= 32 ? ~0u : (1u << bits) - 1);
	for (int it = 0; it < 5; it++) {
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = now_s();
		memcpy(out, in, count * 4);
		t[it] = slowest(now_s() - t0);
	}
	bmem = count * 4 / median(t, 5);
	for (int it = 0; it < 5; it++) {
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = now_s();
		MPI_Alltoall(in, (int)(count / n), MPI_UINT32_T, out,
			     (int)(count / n), MPI_UINT32_T, MPI_COMM_WORLD);
		t[it] = slowest(now_s() - t0);
	}
	bnet = count / n * n * 4 / median(t, 5);
	if (!rank && head)
		printf("# %-9s %5s %10s %4s %-9s %10s %9s %8s %2s %2s %9s %6s %s\n",
		       "impl", "ranks", "keys", "bits", "algo", "time_ms",
		       "Mkeys/s", "GB/s", "m", "A", "model", "/model", "check");
	if (!rank)
		printf("# ranks %d: memcpy %.2f GB/s, alltoall %.2f GB/s per rank\n",
		       n, bmem / 1e9, bnet / 1e9);
	for (int a = 0; a < nalgo; a++) {
		bool counting = !strcmp(algos[a], "counting");
		unsigned int A = 0;
		unsigned long long bad = 0;
		uint32_t edge[2], *edges = xmalloc(8 * n);
		double tm, gbs, model;

		if (counting && bits > 20) {
			if (!rank)
				fprintf(stderr, "sort-mpi: counting needs -b <= 20\n");
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
		for (int it = 0; it <= iters; it++) {
			MPI_Barrier(MPI_COMM_WORLD);
			t0 = now_s();
			(counting ? sort_counting : sort_onepass)(in, out, &A);
			if (it)
				t[it - 1] = slowest(now_s() - t0);
		}
		for (size_t i = 1; i < count; i++)
			bad += out[i - 1] > out[i];
		edge[0] = out[0];
		edge[1] = out[count - 1];
		MPI_Allgather(edge, 2, MPI_UINT32_T, edges, 2, MPI_UINT32_T,
			      MPI_COMM_WORLD);
		for (int r = 1; r < n; r++)
			bad += edges[2 * r - 1] > edges[2 * r];
		MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_UNSIGNED_LONG_LONG,
			      MPI_SUM, MPI_COMM_WORLD);
		tm = median(t, iters);
		gbs = keys * 4.0 / tm / 1e9;
		model = n * (bmem / A < bnet ? bmem / A : bnet) / 1e9;
		if (!rank)
			printf("%-11s %5d %10zu %4u %-9s %10.2f %9.1f %8.3f %2u %2u %9.3f %6.2f %s\n",
			       "mpi", n, keys, bits, algos[a], tm * 1e3,
			       keys / tm / 1e6, gbs, 1, A, model, gbs / model,
			       bad ? "WRONG" : "ok");
		fflush(stdout);
		free(edges);
	}
	free(in);
	free(out);
	MPI_Finalize();
	return 0;
}
