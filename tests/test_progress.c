// SPDX-License-Identifier: MIT
/*
 * test_progress: the progress rule of the library, across the ranks of an
 * emulated cluster. Waiting on or testing any request moves every
 * outstanding operation of the process: two groups' non-blocking
 * allreduces started in opposite orders on different ranks, each rank
 * waiting on the one it started first, both end; a collective moves while
 * its rank waits on a channel receive. A non-blocking call never blocks:
 * the first collective of a process, and the first on a new group, return
 * from their start before another member has joined (ordered by files the
 * ranks share, not by time) and end once it has; a large payload of one
 * group that nobody asked for yet does not hold up another group's
 * message behind it on the same link. Groups are not limited
 * by library ports: 1000 dups of the world at once, each with an allreduce
 * started in a different order on every rank, then freed, and 1000 more.
 *
 * Run alone, it starts itself under build/tools/fpgacomm-run (5 ranks on
 * a full mesh, 2 ranks on a ring) and exits with the worst status.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fpgacomm/fpgacomm.h>

#include "launch.h"

#define EXIT_SKIP 77
/* Bounds that end a failing case instead of hanging it, not timings. */
#define T_MS	  60000
#define T_SHORT	  15000
#define NGROUPS	  1000
#define USER_PORT 7

static struct fc_dev *dev;
static struct fc_group *world;
static uint32_t rank, size;
static int failures;

/* ---- Flags the ranks share, outside the fabric ---- */

static void flag_path(char *path, size_t len, const char *name, uint32_t r)
{
	const char *d = getenv("TMPDIR"), *cl = getenv("FPGACOMM_CLUSTER");

	snprintf(path, len, "%s/tp-%s-%s-%u", d && *d ? d : "/tmp",
		 cl ? cl : "x", name, r);
}

static void flag_set(const char *name)
{
	char path[PATH_MAX];
	int fd;

	flag_path(path, sizeof(path), name, rank);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	if (fd >= 0)
		close(fd);
}

/* Has rank @r set @name, looking for at most @ms? */
static bool flag_seen(const char *name, uint32_t r, int ms)
{
	char path[PATH_MAX];

	flag_path(path, sizeof(path), name, r);
	for (int i = 0; i <= ms / 5; i++) {
		if (!access(path, F_OK))
			return true;
		usleep(5000);
	}
	return false;
}

static void flag_clear(const char *name)
{
	char path[PATH_MAX];

	flag_path(path, sizeof(path), name, rank);
	unlink(path);
}

/* ---- A non-blocking call never blocks ---- */

/*
 * Rank 0 starts an allreduce on @g before any other member has called
 * one on it: the others wait until rank 0's start has returned (its flag
 * @name), so a start that waited for them could not return before its
 * bound. It then cannot end before they join, and ends once they have.
 */
static void start_alone(struct fc_group *g, const char *name)
{
	struct fc_coll_req *req = NULL;
	int64_t in = (int64_t)rank + 1, out = 0;
	int rc;

	if (rank == 0) {
		CHECK_RC(fc_iallreduce(g, &in, &out, 1, FC_INT64, FC_SUM, &req),
			 0);
		/*
		 * Tested before the flag lets the others in: once it is set
		 * they may join and end it at any moment.
		 */
		rc = req && size > 1 ? fc_coll_test(req) : -EINPROGRESS;
		flag_set(name);
		if (!req)
			return;
		CHECK(rc == -EINPROGRESS,
		      "%s: ended before the others joined: %d", name, rc);
		if (rc != -EINPROGRESS)
			return;
		CHECK_RC(fc_coll_wait(req, T_MS), 0);
	} else {
		CHECK(flag_seen(name, 0, T_SHORT),
		      "%s: rank 0's non-blocking start did not return before "
		      "this rank joined",
		      name);
		CHECK_RC(fc_allreduce(g, &in, &out, 1, FC_INT64, FC_SUM, T_MS),
			 0);
	}
	CHECK(out == (int64_t)size * (size + 1) / 2, "%s: sum %" PRId64, name,
	      out);
}

/* The first collective of the process: nothing has met yet. */
static void test_first_start(void)
{
	start_alone(world, "first");
	CHECK_RC(fc_barrier_group(world, T_MS), 0);
	flag_clear("first");
}

/* The first collective on a new group. */
static void test_new_group_start(void)
{
	struct fc_group *g = NULL;

	CHECK_RC(fc_group_dup(world, T_MS, &g), 0);
	if (!g)
		return;
	start_alone(g, "newgroup");
	CHECK_RC(fc_barrier_group(world, T_MS), 0);
	flag_clear("newgroup");
	CHECK_RC(fc_group_free(g), 0);
}

/* ---- Waiting on one request moves the others ---- */

/*
 * Two groups, an allreduce on each, started in opposite orders on even
 * and odd ranks; each rank waits on the one it started first. The even
 * ranks' wait must move group b's allreduce for the odd ranks, and the
 * other way round. One operator per group, so that the values say which
 * group's collective each is: a gets SUM, b gets MAX.
 */
static void test_opposite_orders(void)
{
	struct fc_group *a = NULL, *b = NULL;
	struct fc_coll_req *ra = NULL, *rb = NULL;
	int64_t in = (int64_t)rank + 1, sa = -1, sb = -1;

	CHECK_RC(fc_group_dup(world, T_MS, &a), 0);
	CHECK_RC(fc_group_dup(world, T_MS, &b), 0);
	if (!a || !b)
		goto out;
	CHECK_RC(fc_barrier_group(a, T_MS), 0);
	CHECK_RC(fc_barrier_group(b, T_MS), 0);
	if (rank % 2 == 0) {
		CHECK_RC(fc_iallreduce(a, &in, &sa, 1, FC_INT64, FC_SUM, &ra),
			 0);
		CHECK_RC(fc_iallreduce(b, &in, &sb, 1, FC_INT64, FC_MAX, &rb),
			 0);
		if (ra)
			CHECK_RC(fc_coll_wait(ra, T_SHORT), 0);
		if (rb)
			CHECK_RC(fc_coll_wait(rb, T_SHORT), 0);
	} else {
		CHECK_RC(fc_iallreduce(b, &in, &sb, 1, FC_INT64, FC_MAX, &rb),
			 0);
		CHECK_RC(fc_iallreduce(a, &in, &sa, 1, FC_INT64, FC_SUM, &ra),
			 0);
		if (rb)
			CHECK_RC(fc_coll_wait(rb, T_SHORT), 0);
		if (ra)
			CHECK_RC(fc_coll_wait(ra, T_SHORT), 0);
	}
	CHECK(sa == (int64_t)size * (size + 1) / 2, "sum on a %" PRId64, sa);
	CHECK(sb == (int64_t)size, "max on b %" PRId64, sb);
out:
	if (a)
		CHECK_RC(fc_group_free(a), 0);
	if (b)
		CHECK_RC(fc_group_free(b), 0);
}

/*
 * Rank 0 waits on a channel receive whose message rank 1 sends only once
 * its allreduce has ended, which needs rank 0's part: rank 0's wait on
 * the channel must move the collective.
 */
static void test_channel_wait_moves_collective(void)
{
	struct fc_coll_req *req = NULL;
	struct fc_chan *ch = NULL;
	struct fc_req *rr = NULL;
	int64_t in = (int64_t)rank + 1, out = 0;
	uint32_t msg = 0;
	size_t len = 0;

	if (size < 2)
		return;
	if (rank < 2)
		CHECK_RC(fc_chan_open(dev, 1 - rank, USER_PORT, 0, &ch), 0);
	CHECK_RC(fc_iallreduce(world, &in, &out, 1, FC_INT64, FC_SUM, &req), 0);
	if (rank == 0 && ch) {
		CHECK_RC(fc_chan_irecv(ch, &msg, sizeof(msg), &rr), 0);
		if (rr)
			CHECK_RC(fc_req_wait(rr, T_SHORT, &len), 0);
		CHECK(msg == 0xabcd && len == sizeof(msg),
		      "message %#x, %zu bytes", msg, len);
	}
	if (req)
		CHECK_RC(fc_coll_wait(req, T_SHORT), 0);
	if (rank == 1 && ch) {
		msg = 0xabcd;
		CHECK_RC(fc_chan_send(ch, &msg, sizeof(msg), T_MS), 0);
	}
	CHECK(out == (int64_t)size * (size + 1) / 2, "sum %" PRId64, out);
	if (ch) {
		CHECK_RC(fc_barrier_group(world, T_MS), 0);
		CHECK_RC(fc_chan_close(ch), 0);
	} else {
		CHECK_RC(fc_barrier_group(world, T_MS), 0);
	}
}

/*
 * A large payload nobody here asked for yet, ahead of a message that is
 * asked for: rank 1 starts a 256 KiB bcast on group a (its payload goes
 * apart from its header, by rendezvous) and then one on group b; rank 0
 * starts and waits for b's first, while a's payload stands before b's
 * message on the same link. b must end, then a with its data whole.
 */
static void test_payload_ahead(void)
{
	size_t n = 64 << 10, i;
	uint32_t *big = calloc(n, sizeof(*big));
	struct fc_group *a = NULL, *b = NULL;
	struct fc_coll_req *ra = NULL, *rb = NULL;
	uint64_t small = rank == 1 ? 0x5eed : 0;

	if (size < 2 || !big)
		goto out;
	CHECK_RC(fc_group_dup(world, T_MS, &a), 0);
	CHECK_RC(fc_group_dup(world, T_MS, &b), 0);
	if (!a || !b)
		goto out;
	for (i = 0; rank == 1 && i < n; i++)
		big[i] = (uint32_t)mix(i);
	if (rank == 0) {
		CHECK_RC(fc_ibcast(b, &small, 1, FC_UINT64, 1, &rb), 0);
		if (rb)
			CHECK_RC(fc_coll_wait(rb, T_SHORT), 0);
		CHECK_RC(fc_ibcast(a, big, n, FC_UINT32, 1, &ra), 0);
	} else {
		CHECK_RC(fc_ibcast(a, big, n, FC_UINT32, 1, &ra), 0);
		/* its first round posted before b's starts */
		if (ra)
			CHECK(fc_coll_test(ra) == -EINPROGRESS || rank != 1,
			      "bcast on a ended before rank 0 joined");
		CHECK_RC(fc_ibcast(b, &small, 1, FC_UINT64, 1, &rb), 0);
		if (rb)
			CHECK_RC(fc_coll_wait(rb, T_SHORT), 0);
	}
	if (ra)
		CHECK_RC(fc_coll_wait(ra, T_SHORT), 0);
	CHECK(small == 0x5eed, "bcast on b: %#" PRIx64, small);
	for (i = 0; i < n && big[i] == (uint32_t)mix(i); i++)
		;
	CHECK(i == n, "bcast on a: element %zu wrong", i);
out:
	if (a)
		CHECK_RC(fc_group_free(a), 0);
	if (b)
		CHECK_RC(fc_group_free(b), 0);
	free(big);
}

/* ---- Many groups ---- */

/* Group i's input on this rank, and the sum over the ranks. */
static int64_t many_in(uint32_t r, uint32_t i)
{
	return (int64_t)(mix((uint64_t)i << 8 | r) % 1000);
}

static void many_round(struct fc_group **g, int64_t *out,
		       struct fc_coll_req **req, uint32_t seed)
{
	int64_t *in = calloc(NGROUPS, sizeof(*in));
	uint32_t i, k, start = (rank * 397 + seed) % NGROUPS;

	if (!in)
		return;
	/* started from a different group on every rank, and waited for in
	 * the opposite order */
	for (k = 0; k < NGROUPS; k++) {
		i = (start + k) % NGROUPS;
		in[i] = many_in(rank, i + seed);
		out[i] = -1;
		req[i] = NULL;
		CHECK_RC(fc_iallreduce(g[i], &in[i], &out[i], 1, FC_INT64,
				       FC_SUM, &req[i]),
			 0);
	}
	for (k = NGROUPS; k-- > 0;) {
		i = (start + k) % NGROUPS;
		if (req[i])
			CHECK_RC(fc_coll_wait(req[i], T_MS), 0);
	}
	for (i = 0; i < NGROUPS && !failures; i++) {
		int64_t want = 0;

		for (uint32_t r = 0; r < size; r++)
			want += many_in(r, i + seed);
		CHECK(out[i] == want, "group %u: %" PRId64 ", want %" PRId64, i,
		      out[i], want);
	}
	free(in);
}

static void test_many_groups(void)
{
	struct fc_group **g = calloc(NGROUPS, sizeof(*g));
	struct fc_coll_req **req = calloc(NGROUPS, sizeof(*req));
	int64_t *out = calloc(NGROUPS, sizeof(*out));
	uint32_t i, made;

	if (!g || !req || !out) {
		CHECK(0, "out of memory");
		goto out;
	}
	for (int pass = 0; pass < 2 && !failures; pass++) {
		for (made = 0; made < NGROUPS; made++) {
			int rc = fc_group_dup(world, T_MS, &g[made]);

			if (rc) {
				CHECK(0, "dup %u: %d (%s)", made, rc,
				      fc_strerror(rc));
				break;
			}
		}
		if (made == NGROUPS)
			many_round(g, out, req, (uint32_t)pass * 7919);
		for (i = 0; i < made; i++)
			CHECK_RC(fc_group_free(g[i]), 0);
	}
	CHECK_RC(fc_barrier_group(world, T_MS), 0);
out:
	free(g);
	free(req);
	free(out);
}

static int run_rank(void)
{
	const char *only = getenv("FPGACOMM_PROGRESS_TEST");

	if (harness_rank_world(&dev, &world, &rank, &size))
		return 1;
	/* first: no collective may have run in this process before */
	if (!only || !strcmp(only, "start"))
		test_first_start();
	if (!only || !strcmp(only, "orders")) {
		test_opposite_orders();
		test_channel_wait_moves_collective();
		test_payload_ahead();
	}
	if (!only || !strcmp(only, "start"))
		test_new_group_start();
	if (!only || !strcmp(only, "many"))
		test_many_groups();
	if (rank == 0 || failures)
		printf("rank %u: %s (%d failures)\n", rank,
		       failures ? "FAIL" : "ok", failures);
	fc_group_free(world);
	fc_close(dev);
	return failures ? 1 : 0;
}

int main(void)
{
	char self[PATH_MAX], run[PATH_MAX + 32];
	static const struct {
		int ranks;
		const char *topo;
	} shapes[] = { { 5, "full:5" }, { 2, "ring:2" } };
	int worst = 0, rc;

	if (getenv("FPGACOMM_RANK"))
		return run_rank();
	printf("test_progress: progress across groups and channels\n");
	rc = harness_find_run(self, sizeof(self), run, sizeof(run));
	if (rc)
		return rc;
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		printf("== %d ranks, %s\n", shapes[i].ranks, shapes[i].topo);
		fflush(stdout);
		rc = harness_launch_ranks(run, self, shapes[i].ranks,
					  shapes[i].topo, NULL, NULL);
		worst = rc > worst ? rc : worst;
	}
	return worst;
}
