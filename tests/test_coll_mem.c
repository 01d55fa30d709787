// SPDX-License-Identifier: MIT
/*
 * test_coll_mem: collectives and the sort on buffers of fc_mem_alloc()
 * (and fc_mem_register(), at an odd offset) give what they give on plain
 * memory, and their payloads then move by DMA straight from and into
 * those registrations: the channels' counters (lib/core/chan_stats.h) show no
 * staging copy of an eager payload and no registration per rendezvous
 * message in the fc_mem run, and both in the plain run, so a lookup that
 * finds nothing fails here. fc_mem_free() of a buffer a running bcast
 * sends from gives -EBUSY, and works once it ended.
 *
 * The collectives' sends (fc__chan_isend_now, lib/core/internal.h): from
 * a registered buffer overwritten as soon as each call returns, every
 * message arrives as it was when sent (the channel took its bytes in the
 * call, it never reads the buffer later); a small one the PIO window took
 * leaves no request; one of rendezvous size is refused (-E2BIG) and
 * nothing of it is sent.
 *
 * Run alone, it starts itself under build/tools/fpgacomm-run as 2, 3 and
 * 4 ranks. Skips on a kernel board (no rendezvous there, and the ranks
 * need an emulated cluster).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fpgacomm/fpgacomm.h>

#include "launch.h"
#include "chan_stats.h" /* lib/: the channels' counters */
#include "internal.h"	/* lib/: fc__chan_isend_now */

#define T_MS 60000

static struct fc_dev *dev;
static struct fc_group *world;
static uint32_t rank, size;
static int failures;

static uint32_t mix32(uint64_t x)
{
	return (uint32_t)mix(x);
}

/* Word @i that rank @r contributes to case @tag (to rank @to). */
static uint32_t word(uint32_t tag, uint32_t r, uint32_t to, size_t i)
{
	return mix32((uint64_t)tag << 56 ^ (uint64_t)r << 44 ^
		     (uint64_t)to << 32 ^ i);
}

/* ---- Buffers: plain, or registered ---- */

enum kind {
	PLAIN,
	ALLOC,
	REGISTER,
	KINDS
};
static const char *const kind_name[KINDS] = { "plain", "fc_mem_alloc",
					      "fc_mem_register" };

struct buf {
	void *p;
	struct fc_mem *mem;
	void *raw; /* REGISTER: the malloc'd block */
};

/* REGISTER buffers start this far into their registration. */
#define REG_SKEW 12

static void *buf_get(struct buf *b, enum kind k, size_t len)
{
	memset(b, 0, sizeof(*b));
	if (!len)
		len = 1;
	if (k == PLAIN) {
		b->p = malloc(len);
	} else if (k == ALLOC) {
		if (!fc_mem_alloc(dev, len, 0, &b->mem))
			b->p = b->mem->addr;
	} else {
		b->raw = malloc(len + 2 * REG_SKEW);
		if (b->raw && !fc_mem_register(dev, b->raw, len + 2 * REG_SKEW,
					       0, &b->mem))
			b->p = (char *)b->raw + REG_SKEW;
	}
	if (!b->p) {
		fprintf(stderr, "rank %u: no %s buffer of %zu bytes\n", rank,
			kind_name[k], len);
		exit(1);
	}
	return b->p;
}

static void buf_put(struct buf *b)
{
	if (b->mem)
		CHECK_RC(fc_mem_free(dev, b->mem), 0);
	if (b->raw)
		free(b->raw);
	else if (!b->mem)
		free(b->p);
	memset(b, 0, sizeof(*b));
}

/* ---- The counters ---- */

static struct fc__chan_stats before;

static void count_start(void)
{
	fc__chan_stats_get(dev, &before);
}

static struct fc__chan_stats count_end(void)
{
	struct fc__chan_stats now, d;

	fc__chan_stats_get(dev, &now);
	d.kept_copies = now.kept_copies - before.kept_copies;
	d.rndv_regs = now.rndv_regs - before.rndv_regs;
	d.direct = now.direct - before.direct;
	return d;
}

/*
 * What case @what did on this rank with buffers of kind @k: registered
 * buffers copy and register nothing and move something straight; plain
 * ones do what @copies and @regs say they must (eager payloads of 8 to
 * 32 KiB copied, rendezvous ones registered).
 */
static void check_counts(const char *what, enum kind k, struct fc__chan_stats d,
			 bool copies, bool regs)
{
	if (k != PLAIN) {
		CHECK(d.kept_copies == 0 && d.rndv_regs == 0 && d.direct > 0,
		      "%s on %s: %" PRIu64 " copies, %" PRIu64
		      " registrations, %" PRIu64 " direct",
		      what, kind_name[k], d.kept_copies, d.rndv_regs, d.direct);
		return;
	}
	CHECK(d.direct == 0, "%s on plain memory: %" PRIu64 " direct", what,
	      d.direct);
	if (copies)
		CHECK(d.kept_copies > 0, "%s on plain memory: no copy", what);
	if (regs)
		CHECK(d.rndv_regs > 0, "%s on plain memory: no registration",
		      what);
}

/* ---- The cases ---- */

/* allreduce of @count words; the rendezvous ones only from 32 KiB. */
static void test_allreduce(enum kind k, size_t count, bool copies, bool regs)
{
	struct buf in, out;
	uint32_t *x = buf_get(&in, k, count * 4);
	uint32_t *y = buf_get(&out, k, count * 4);
	size_t bad = 0;

	for (size_t i = 0; i < count; i++)
		x[i] = word(1, rank, 0, i);
	count_start();
	CHECK_RC(fc_allreduce(world, x, y, count, FC_UINT32, FC_SUM, T_MS), 0);
	check_counts("allreduce", k, count_end(), copies, regs);
	for (size_t i = 0; i < count; i++) {
		uint32_t want = 0;

		for (uint32_t r = 0; r < size; r++)
			want += word(1, r, 0, i);
		bad += y[i] != want;
	}
	CHECK(!bad, "allreduce of %zu on %s: %zu words wrong", count,
	      kind_name[k], bad);
	buf_put(&in);
	buf_put(&out);
}

/*
 * bcast of @count words from every root in turn. Counted over all of
 * them: a rank that only receives may find the message announced before
 * its receive was posted, landed in a buffer of the library's (and copied
 * out, as an eager one), but each rank is the root once, and sends.
 */
static void test_bcast(enum kind k, size_t count)
{
	struct buf b;
	uint32_t *x = buf_get(&b, k, count * 4);

	count_start();
	for (uint32_t root = 0; root < size; root++) {
		size_t bad = 0;

		for (size_t i = 0; i < count; i++)
			x[i] = rank == root ? word(2, root, 0, i) : 0;
		CHECK_RC(fc_bcast(world, x, count, FC_UINT32, root, T_MS), 0);
		for (size_t i = 0; i < count; i++)
			bad += x[i] != word(2, root, 0, i);
		CHECK(!bad, "bcast from %u on %s: %zu words wrong", root,
		      kind_name[k], bad);
	}
	/* pieces of 64 KiB and more: rendezvous */
	check_counts("bcast", k, count_end(), false, true);
	buf_put(&b);
}

/* Words from rank @from to rank @to: @base, 2 @base or 3 @base. */
static size_t vcount(size_t base, uint32_t from, uint32_t to)
{
	return base * (1 + (from + 2 * to) % 3);
}

/*
 * alltoallv with @base, 2 @base or 3 @base words a pair, laid out with
 * gaps in both buffers (the gaps must stay as they were).
 */
static void test_alltoallv(enum kind k, size_t base, bool copies, bool regs)
{
	size_t sc[size], sd[size], rc[size], rd[size], st = 0, rt = 0;
	size_t bad = 0, gap = 5;
	struct buf in, out;
	uint32_t *x, *y;

	for (uint32_t j = 0; j < size; j++) {
		sc[j] = vcount(base, rank, j);
		sd[j] = st + gap;
		st = sd[j] + sc[j];
		rc[j] = vcount(base, j, rank);
		rd[j] = rt + gap;
		rt = rd[j] + rc[j];
	}
	x = buf_get(&in, k, st * 4);
	y = buf_get(&out, k, rt * 4);
	memset(x, 0x5a, st * 4);
	memset(y, 0xa5, rt * 4);
	for (uint32_t j = 0; j < size; j++)
		for (size_t i = 0; i < sc[j]; i++)
			x[sd[j] + i] = word(3, rank, j, i);
	count_start();
	CHECK_RC(fc_alltoallv(world, x, sc, sd, y, rc, rd, FC_UINT32, T_MS), 0);
	check_counts("alltoallv", k, count_end(), copies, regs);
	for (uint32_t j = 0; j < size; j++) {
		for (size_t i = 0; i < rc[j]; i++)
			bad += y[rd[j] + i] != word(3, j, rank, i);
		for (size_t i = rd[j] - gap; i < rd[j]; i++)
			bad += y[i] != 0xa5a5a5a5u;
	}
	CHECK(!bad, "alltoallv of %zu on %s: %zu words wrong", base,
	      kind_name[k], bad);
	buf_put(&in);
	buf_put(&out);
}

/*
 * fc_sort of @count keys with values, in and out of buffers of kind @k:
 * the result must be the plain run's (@ref, filled by it), and sorted.
 */
static void test_sort(enum kind k, size_t count, uint32_t *ref)
{
	struct buf kb, vb, okb, ovb;
	uint32_t *keys = buf_get(&kb, k, count * 4);
	uint32_t *vals = buf_get(&vb, k, count * 4);
	uint32_t *ok = buf_get(&okb, k, count * 4);
	uint32_t *ov = buf_get(&ovb, k, count * 4);
	struct fc_sort_args a = {
		.key_size = 4,
		.value_size = 4,
		.layout = FC_SORT_BALANCED,
		.keys = keys,
		.values = vals,
		.count = count,
		.out_keys = ok,
		.out_values = ov,
		.capacity = count,
	};
	size_t bad = 0;

	for (size_t i = 0; i < count; i++) {
		keys[i] = word(4, rank, 0, i) % 100000;
		vals[i] = (uint32_t)(rank * count + i);
	}
	CHECK_RC(fc_sort(world, &a, T_MS), 0);
	CHECK(a.out_count == count, "sort on %s: %zu of %zu", kind_name[k],
	      a.out_count, count);
	for (size_t i = 1; i < a.out_count && i < count; i++)
		bad += ok[i - 1] > ok[i];
	if (k == PLAIN) {
		memcpy(ref, ok, count * 4);
		memcpy(ref + count, ov, count * 4);
	} else {
		bad += memcmp(ref, ok, count * 4) != 0;
		bad += memcmp(ref + count, ov, count * 4) != 0;
	}
	CHECK(!bad, "sort on %s: %zu wrong", kind_name[k], bad);
	buf_put(&kb);
	buf_put(&vb);
	buf_put(&okb);
	buf_put(&ovb);
}

/*
 * The root frees the buffer of a bcast it has started while the others
 * have not joined yet (they sleep first): its rendezvous sends hold the
 * buffer, -EBUSY; once the bcast ended, the free works.
 */
static void test_free_busy(void)
{
	size_t count = 256 << 10, bad = 0;
	struct fc_coll_req *req;
	struct buf b;
	uint32_t *x = buf_get(&b, ALLOC, count * 4);

	for (size_t i = 0; i < count; i++)
		x[i] = rank == 0 ? word(5, 0, 0, i) : 0;
	CHECK_RC(fc_barrier_group(world, T_MS), 0);
	if (rank == 0) {
		CHECK_RC(fc_ibcast(world, x, count, FC_UINT32, 0, &req), 0);
		for (int i = 0; i < 4; i++)
			CHECK_RC(fc_coll_test(req), -EINPROGRESS);
		CHECK_RC(fc_mem_free(dev, b.mem), -EBUSY);
		CHECK_RC(fc_coll_wait(req, T_MS), 0);
	} else {
		usleep(300 * 1000);
		CHECK_RC(fc_bcast(world, x, count, FC_UINT32, 0, T_MS), 0);
		for (size_t i = 0; i < count; i++)
			bad += x[i] != word(5, 0, 0, i);
		CHECK(!bad, "bcast after a refused free: %zu words wrong", bad);
	}
	buf_put(&b); /* fc_mem_free: 0 now */
}

/* Byte @i of message @m of the send-now case. */
static uint8_t now_byte(unsigned int m, size_t i)
{
	return (uint8_t)(mix32((uint64_t)m << 32 | i) | 1);
}

/* fc__chan_isend_now() from rank 0 to rank 1 (port 7). */
static void test_send_now(void)
{
	static const size_t lens[] = { 8,    8,	   8,	 8,	100,
				       2000, 4116, 8212, 20000, 30000 };
	const unsigned int n = sizeof(lens) / sizeof(lens[0]);
	struct fc_req *reqs[sizeof(lens) / sizeof(lens[0])] = { NULL };
	unsigned int m, none = 0;
	struct fc_mem *mem = NULL;
	struct fc_chan *ch = NULL;
	uint8_t *buf, *rx;
	size_t len, i, bad;

	if (rank > 1)
		return;
	CHECK_RC(fc_chan_open(dev, !rank, 7, 0, &ch), 0);
	CHECK_RC(fc_mem_alloc(dev, 64 << 10, 0, &mem), 0);
	if (!ch || !mem)
		return;
	buf = mem->addr;
	if (rank == 0) {
		for (m = 0; m < n; m++) {
			for (i = 0; i < lens[m]; i++)
				buf[i] = now_byte(m, i);
			CHECK_RC(fc__chan_isend_now(ch, buf, lens[m], &reqs[m]),
				 0);
			/* free again at once: a later read sends these */
			memset(buf, 0xee, lens[m]);
			none += lens[m] == 8 && !reqs[m];
		}
		/* would go by rendezvous, reading @buf after the call */
		reqs[0] = (struct fc_req *)1;
		CHECK_RC(fc__chan_isend_now(ch, buf, 40000, &reqs[0]), -E2BIG);
		CHECK(reqs[0] == (struct fc_req *)1, "*reqp set on -E2BIG");
		reqs[0] = NULL;
		for (m = 0; m < n; m++)
			if (reqs[m])
				CHECK_RC(fc_req_wait(reqs[m], T_MS, NULL), 0);
		CHECK(none > 0, "no 8-byte send left without a request");
		/* the last one: nothing of the refused message came before */
		buf[0] = 0x5a;
		CHECK_RC(fc_chan_send(ch, buf, 1, T_MS), 0);
	} else {
		rx = malloc(64 << 10);
		if (!rx)
			return;
		for (m = 0; m <= n; m++) {
			len = 0;
			CHECK_RC(fc_chan_recv(ch, rx, 64 << 10, &len, T_MS), 0);
			if (m == n) {
				CHECK(len == 1 && rx[0] == 0x5a,
				      "after the sends: %zu bytes, not the last",
				      len);
				break;
			}
			CHECK(len == lens[m], "message %u: %zu bytes, not %zu",
			      m, len, lens[m]);
			for (i = 0, bad = 0; i < len && i < lens[m]; i++)
				bad += rx[i] != now_byte(m, i);
			CHECK(!bad, "message %u (%zu B): %zu bytes wrong", m,
			      lens[m], bad);
		}
		free(rx);
	}
	fc_mem_free(dev, mem);
	fc_chan_close(ch);
}

static int run_rank(void)
{
	size_t sort_n = 20000;
	uint32_t *ref;

	if (harness_rank_world(&dev, &world, &rank, &size))
		return 1;
	ref = malloc(2 * sort_n * 4);
	if (!ref)
		return 1;
	/* the handshake of the group's first collective, out of the counts */
	CHECK_RC(fc_barrier_group(world, T_MS), 0);
	for (enum kind k = PLAIN; k < KINDS; k++) {
		/* payloads of 10 to 30 KiB a pair: eager, copied when
		 * plain; of 160 KiB and more: rendezvous, registered */
		test_alltoallv(k, 2500, true, false);
		test_alltoallv(k, 40000, false, true);
		test_allreduce(k, 300000, false, true);
		test_bcast(k, 64 << 10);
		test_sort(k, sort_n, ref);
	}
	test_free_busy();
	test_send_now();
	if (rank == 0 || failures)
		printf("rank %u: %s (%d failures)\n", rank,
		       failures ? "FAIL" : "ok", failures);
	free(ref);
	fc_group_free(world);
	fc_close(dev);
	return failures ? 1 : 0;
}

int main(void)
{
	static const int ranks[] = { 2, 3, 4 };
	/* the counts expected assume the default rendezvous threshold */
	static const char *const env[] = { "FPGACOMM_RNDV_MIN", "32K", NULL };
	char self[PATH_MAX], run[PATH_MAX + 32];
	int worst = 0, rc;

	if (getenv("FPGACOMM_RANK"))
		return run_rank();
	printf("test_coll_mem: collectives and the sort on fc_mem buffers\n");
	rc = harness_find_run(self, sizeof(self), run, sizeof(run));
	if (rc)
		return rc;
	for (size_t i = 0; i < sizeof(ranks) / sizeof(ranks[0]); i++) {
		printf("== %d ranks\n", ranks[i]);
		fflush(stdout);
		rc = harness_launch_ranks(run, self, ranks[i], NULL, NULL, env);
		worst = rc > worst ? rc : worst;
	}
	return worst;
}
