// SPDX-License-Identifier: MIT
/*
 * sort_demo: OPTWEB's sort, stable: every rank holds 2^18 keys of 6 bits
 * (64 values) with the element's global index as its value; fc_sort puts
 * them in global order, balanced over the ranks, and each rank checks its
 * share: ordered, equal keys in index order, every index once and with
 * its own key. Rank 0 prints one line.
 *
 *   fpgacomm-run -n 4 --topology torus:2x2 -- build/examples/sort_demo
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <fpgacomm/fpgacomm.h>

#define PER_RANK   (1u << 18)
#define TIMEOUT_MS 60000

/* The key of the element with global index g: 6 pseudo-random bits. */
static uint32_t key_of(uint64_t g)
{
	g = (g ^ (g >> 31)) * 0x7fb5d329728ea185ull;
	return (uint32_t)(g >> 58);
}

static int fail(const char *what, int err)
{
	fprintf(stderr, "sort_demo: %s: %s\n", what, fc_strerror(err));
	return 1;
}

int main(void)
{
	struct fc_group *world;
	struct fc_dev *dev;
	uint32_t *keys, *okeys;
	uint64_t *vals, *ovals, bad[2] = { 0, 0 };
	int rank, size, ret;

	if ((ret = fc_open(&dev, NULL)) || (ret = fc_group_world(dev, &world)))
		return fail("open (run it under fpgacomm-run)", ret);
	rank = fc_group_rank(world);
	size = fc_group_size(world);
	keys = malloc(PER_RANK * sizeof(*keys));
	okeys = malloc(PER_RANK * sizeof(*okeys));
	vals = malloc(PER_RANK * sizeof(*vals));
	ovals = malloc(PER_RANK * sizeof(*ovals));
	if (!keys || !okeys || !vals || !ovals)
		return fail("buffers", -ENOMEM);
	for (uint32_t i = 0; i < PER_RANK; i++) {
		vals[i] = (uint64_t)rank * PER_RANK + i;
		keys[i] = key_of(vals[i]);
	}

	struct fc_sort_args a = {
		.key_size = 4,
		.key_bits = 6,
		.value_size = 8,
		.keys = keys,
		.values = vals,
		.count = PER_RANK,
		.out_keys = okeys,
		.out_values = ovals,
		.capacity = PER_RANK,
	};
	ret = fc_sort(world, &a, TIMEOUT_MS);
	if (ret)
		return fail("fc_sort", ret);

	/* bad[0]: wrong elements here; bad[1]: a sum of the indices */
	for (uint32_t i = 0; i < a.out_count; i++) {
		bad[0] += okeys[i] != key_of(ovals[i]);
		if (i &&
		    (okeys[i - 1] > okeys[i] ||
		     (okeys[i - 1] == okeys[i] && ovals[i - 1] >= ovals[i])))
			bad[0]++;
		bad[1] += ovals[i];
	}
	/* across ranks: each share starts after the one below ends */
	{
		uint64_t edge[4] = { okeys[0], ovals[0], okeys[a.out_count - 1],
				     ovals[a.out_count - 1] };
		uint64_t *all = malloc(4 * sizeof(*all) * size);

		if (!all)
			return fail("buffers", -ENOMEM);
		ret = fc_allgather(world, edge, all, 4, FC_UINT64, TIMEOUT_MS);
		if (ret)
			return fail("allgather", ret);
		for (int r = 1; r < size && rank == 0; r++) {
			const uint64_t *lo = all + 4 * (r - 1),
				       *hi = all + 4 * r;

			bad[0] += lo[2] > hi[0] ||
				  (lo[2] == hi[0] && lo[3] >= hi[1]);
		}
		free(all);
	}
	ret = fc_allreduce(world, FC_IN_PLACE, bad, 2, FC_UINT64, FC_SUM,
			   TIMEOUT_MS);
	if (ret)
		return fail("allreduce", ret);
	{
		uint64_t n = (uint64_t)size * PER_RANK;

		if (rank == 0)
			printf("sort_demo: %llu 6-bit keys on %d ranks, counting sort "
			       "(%u network pass, %u memory passes): %s\n",
			       (unsigned long long)n, size, a.net_passes,
			       a.mem_passes,
			       !bad[0] && bad[1] == n * (n - 1) / 2 ?
				       "sorted, stable, a permutation: OK" :
				       "WRONG");
		ret = !bad[0] && bad[1] == n * (n - 1) / 2 ? 0 : 1;
	}
	fc_group_free(world);
	fc_close(dev);
	free(keys);
	free(okeys);
	free(vals);
	free(ovals);
	return ret;
}
