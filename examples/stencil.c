// SPDX-License-Identifier: MIT
/*
 * stencil: a Himeno-style Jacobi solver for the pressure Poisson equation
 * on a 3D grid, the benchmark CoE ran over its channels. The grid is cut
 * into slabs along x, one per rank; every iteration exchanges the slab's
 * boundary planes with both neighbours over channels (non-blocking sends
 * and receives) and sums the residual with fc_allreduce.
 *
 *   fpgacomm-run -n 4 -- build/examples/stencil [-s 129x65x65] [-n 200]
 *
 * Rank 0 prints the residual, a checksum of the final pressure field (so
 * that runs on different rank counts can be compared: the updates are the
 * same, only the residual's summation order differs) and MFLOPS, counting
 * Himeno's 34 operations per point as the original benchmark does (with
 * its coefficients, most of those are multiplications by 0 and 1).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <fpgacomm/fpgacomm.h>

#define PORT	   1
#define TIMEOUT_MS 60000
#define OMEGA	   0.8f

struct slab {
	int nx, ny, nz; /* global grid */
	int x0, lx;	/* first global plane and planes of this rank */
	float *p, *w;	/* lx + 2 planes: a halo on each side */
};

static void die(const char *what, int err)
{
	fprintf(stderr, "stencil: %s: %s\n", what, fc_strerror(err));
	exit(1);
}

static float *plane(const struct slab *s, float *a, int x)
{
	return a + (size_t)x * s->ny * s->nz;
}

#define AT(s, a, x, y, z) ((a)[((size_t)(x) * (s)->ny + (y)) * (s)->nz + (z)])

/* Himeno's initial pressure: (i / (nx - 1))^2 along the global x. */
static void init(struct slab *s)
{
	for (int x = 0; x < s->lx + 2; x++) {
		int gx = s->x0 + x - 1;
		float v =
			gx < 0 || gx >= s->nx ?
				0 :
				(float)(gx * gx) / ((s->nx - 1) * (s->nx - 1));

		for (int y = 0; y < s->ny; y++)
			for (int z = 0; z < s->nz; z++)
				AT(s, s->p, x, y, z) = AT(s, s->w, x, y, z) = v;
	}
}

/* Exchange boundary planes with the neighbours along x. */
static void halo(struct slab *s, struct fc_chan *lo, struct fc_chan *hi)
{
	size_t bytes = (size_t)s->ny * s->nz * sizeof(float);
	struct fc_req *r[4];
	int n = 0, ret = 0;

	if (lo) {
		ret = fc_chan_irecv(lo, plane(s, s->p, 0), bytes, &r[n++]);
		if (!ret)
			ret = fc_chan_isend(lo, plane(s, s->p, 1), bytes,
					    &r[n++]);
	}
	if (hi && !ret) {
		ret = fc_chan_irecv(hi, plane(s, s->p, s->lx + 1), bytes,
				    &r[n++]);
		if (!ret)
			ret = fc_chan_isend(hi, plane(s, s->p, s->lx), bytes,
					    &r[n++]);
	}
	for (int i = 0; i < n && !ret; i++)
		ret = fc_req_wait(r[i], TIMEOUT_MS, NULL);
	if (ret)
		die("halo exchange", ret);
}

/* One Jacobi sweep over the interior; returns this slab's residual. */
static double sweep(struct slab *s)
{
	const float a3 = 1.0f / 6.0f;
	double gosa = 0;

	for (int x = 1; x <= s->lx; x++) {
		int gx = s->x0 + x - 1;

		if (gx == 0 || gx == s->nx - 1)
			continue; /* the global boundary stays fixed */
		for (int y = 1; y < s->ny - 1; y++)
			for (int z = 1; z < s->nz - 1; z++) {
				float s0 = AT(s, s->p, x + 1, y, z) +
					   AT(s, s->p, x, y + 1, z) +
					   AT(s, s->p, x, y, z + 1) +
					   AT(s, s->p, x - 1, y, z) +
					   AT(s, s->p, x, y - 1, z) +
					   AT(s, s->p, x, y, z - 1);
				float ss = s0 * a3 - AT(s, s->p, x, y, z);

				gosa += (double)ss * ss;
				AT(s, s->w, x, y, z) =
					AT(s, s->p, x, y, z) + OMEGA * ss;
			}
	}
	for (int x = 1; x <= s->lx; x++)
		memcpy(plane(s, s->p, x), plane(s, s->w, x),
		       (size_t)s->ny * s->nz * sizeof(float));
	return gosa;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct slab s = { 129, 65, 65, 0, 0, NULL, NULL };
	struct fc_chan *lo = NULL, *hi = NULL;
	struct fc_group *world;
	struct fc_dev *dev;
	double gosa = 0, sum, check, t0, t;
	int iters = 200, c, ret, rank, size;

	while ((c = getopt(argc, argv, "s:n:h")) != -1) {
		if (c == 's' &&
		    sscanf(optarg, "%dx%dx%d", &s.nx, &s.ny, &s.nz) == 3 &&
		    s.nx > 2 && s.ny > 2 && s.nz > 2)
			continue;
		if (c == 'n' && (iters = atoi(optarg)) > 0)
			continue;
		fprintf(c == 'h' ? stdout : stderr,
			"usage: stencil [-s NXxNYxNZ] [-n ITERS] (as every rank)\n");
		return c == 'h' ? 0 : 2;
	}
	ret = fc_open(&dev, NULL);
	if (ret)
		die("open", ret);
	ret = fc_group_world(dev, &world);
	if (ret)
		die("world (run it under fpgacomm-run)", ret);
	rank = fc_group_rank(world);
	size = fc_group_size(world);
	if (size > s.nx) {
		fprintf(stderr, "stencil: more ranks than planes\n");
		return 2;
	}
	/* slabs of nearly equal thickness */
	s.lx = s.nx / size + (rank < s.nx % size);
	s.x0 = rank * (s.nx / size) + (rank < s.nx % size ? rank : s.nx % size);
	s.p = calloc((size_t)(s.lx + 2) * s.ny * s.nz, sizeof(float));
	s.w = calloc((size_t)(s.lx + 2) * s.ny * s.nz, sizeof(float));
	if (!s.p || !s.w)
		die("grid", -ENOMEM);
	init(&s);
	if (rank > 0 && (ret = fc_chan_open(dev, rank - 1, PORT, 0, &lo)))
		die("channel", ret);
	if (rank < size - 1 &&
	    (ret = fc_chan_open(dev, rank + 1, PORT, 0, &hi)))
		die("channel", ret);
	ret = fc_barrier_group(world, TIMEOUT_MS);
	if (ret)
		die("barrier", ret);
	t0 = now_s();
	for (int i = 0; i < iters; i++) {
		halo(&s, lo, hi);
		gosa = sweep(&s);
		ret = fc_allreduce(world, FC_IN_PLACE, &gosa, 1, FC_FLOAT64,
				   FC_SUM, TIMEOUT_MS);
		if (ret)
			die("allreduce", ret);
	}
	t = now_s() - t0;
	/* a checksum of the field, weighted by position */
	sum = 0;
	for (int x = 1; x <= s.lx; x++)
		for (int y = 0; y < s.ny; y++)
			for (int z = 0; z < s.nz; z++)
				sum += AT(&s, s.p, x, y, z) *
				       (1 +
					((s.x0 + x - 1) * 7 + y * 3 + z) % 13);
	ret = fc_allreduce(world, &sum, &check, 1, FC_FLOAT64, FC_SUM,
			   TIMEOUT_MS);
	if (ret)
		die("allreduce", ret);
	if (rank == 0)
		printf("stencil: %dx%dx%d, %d iterations on %d rank(s): gosa %.9e, "
		       "field checksum %.9e, %.3f s, %.1f MFLOPS\n",
		       s.nx, s.ny, s.nz, iters, size, gosa, check, t,
		       34.0 * (s.nx - 2) * (s.ny - 2) * (s.nz - 2) * iters / t /
			       1e6);
	if (lo)
		fc_chan_close(lo);
	if (hi)
		fc_chan_close(hi);
	fc_group_free(world);
	fc_close(dev);
	free(s.p);
	free(s.w);
	return 0;
}
