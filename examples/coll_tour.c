// SPDX-License-Identifier: MIT
/*
 * coll_tour: the collectives a program starts from, each checked: an
 * allreduce (the same float sum on every rank, bit for bit), an alltoallv
 * with uneven and zero counts, and a group split by row of a 2D layout
 * with a broadcast in each row, two rows at once.
 *
 *   fpgacomm-run -n 4 --topology torus:2x2 -- build/examples/coll_tour
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fpgacomm/fpgacomm.h>

#define TIMEOUT_MS 30000

static int fail(const char *what, int err)
{
	fprintf(stderr, "coll_tour: %s: %s\n", what, fc_strerror(err));
	return 1;
}

int main(void)
{
	struct fc_group *world, *row;
	struct fc_dev *dev;
	size_t sc[64], sd[64], rc[64], rd[64], total = 0, bad = 0;
	float x[1000], sum[1000];
	int rank, size, ret, i, r;
	unsigned int *sb, *rb;
	uint64_t word = 0;

	if ((ret = fc_open(&dev, NULL)) || (ret = fc_group_world(dev, &world)))
		return fail("open (run it under fpgacomm-run)", ret);
	rank = fc_group_rank(world);
	size = fc_group_size(world);
	if (size > 64)
		return fail("at most 64 ranks", -EINVAL);

	/* allreduce: every rank ends with the same bits */
	for (i = 0; i < 1000; i++)
		x[i] = (float)(rank + 1) / (float)(i + 3);
	ret = fc_allreduce(world, x, sum, 1000, FC_FLOAT32, FC_SUM, TIMEOUT_MS);
	if (ret)
		return fail("allreduce", ret);
	memcpy(&word, &sum[999], sizeof(float));
	{
		uint64_t *all = calloc(size, sizeof(*all));

		ret = fc_allgather(world, &word, all, 1, FC_UINT64, TIMEOUT_MS);
		for (r = 0; r < size && !ret; r++)
			bad += all[r] != word;
		free(all);
		if (ret)
			return fail("allgather", ret);
	}

	/* alltoallv: rank s sends (s + d) % 3 * 1000 words to rank d */
	for (r = 0; r < size; r++) {
		sc[r] = (size_t)((rank + r) % 3) * 1000;
		rc[r] = (size_t)((r + rank) % 3) * 1000;
		sd[r] = r ? sd[r - 1] + sc[r - 1] : 0;
		rd[r] = r ? rd[r - 1] + rc[r - 1] : 0;
		total += sc[r];
	}
	sb = malloc((total + 1) * sizeof(*sb));
	rb = malloc((rd[size - 1] + rc[size - 1] + 1) * sizeof(*rb));
	for (r = 0; r < size; r++)
		for (size_t k = 0; k < sc[r]; k++)
			sb[sd[r] + k] =
				(unsigned int)(rank << 24 | r << 16) + k;
	ret = fc_alltoallv(world, sb, sc, sd, rb, rc, rd, FC_UINT32,
			   TIMEOUT_MS);
	if (ret)
		return fail("alltoallv", ret);
	for (r = 0; r < size; r++)
		for (size_t k = 0; k < rc[r]; k++)
			bad += rb[rd[r] + k] !=
			       (unsigned int)(r << 24 | rank << 16) + k;

	/* rows of two: each row broadcasts from its first member */
	ret = fc_group_split(world, rank / 2, rank, TIMEOUT_MS, &row);
	if (ret)
		return fail("split", ret);
	word = fc_group_rank(row) == 0 ? 1000 + (uint64_t)rank : 0;
	ret = fc_bcast(row, &word, 1, FC_UINT64, 0, TIMEOUT_MS);
	if (ret)
		return fail("bcast", ret);
	bad += word != 1000 + (uint64_t)(rank / 2 * 2);

	ret = fc_allreduce(world, FC_IN_PLACE, &bad, 1, FC_UINT64, FC_SUM,
			   TIMEOUT_MS);
	if (ret)
		return fail("allreduce", ret);
	if (rank == 0)
		printf("coll_tour: %d ranks: allreduce (%s) bitwise equal, "
		       "alltoallv of %zu words from rank 0, row broadcasts: %s\n",
		       size, fc_coll_algo_name(world, "allreduce", sizeof(x)),
		       total, bad ? "WRONG" : "verified");
	fc_group_free(row);
	fc_group_free(world);
	free(sb);
	free(rb);
	fc_close(dev);
	return bad ? 1 : 0;
}
