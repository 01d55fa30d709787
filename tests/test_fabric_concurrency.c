// SPDX-License-Identifier: MIT
/*
 * test_fabric_concurrency: sends to different nodes in flight at once
 * (lib/fabric/fabric.c's lanes, one per DMA engine), as ranks of an emulated
 * cluster.
 *
 * A receiver that stops calling the library holds up no other node:
 * rank 0 sends to rank 1 (the sleeper) and to rank 2. Rank 1 clears a
 * large rendezvous message (its CTS has left its board: every chain it
 * rang has ended), then, in a second round, only tells rank 0 where to
 * put 4 MiB; each time it then stops calling the library until rank 2
 * says (through memory the launcher shares, not through the library)
 * that every message rank 0 sent it has arrived, checked byte for byte:
 * small ones (through the PIO window), eager chains, rendezvous messages
 * and their remote writes. Rank 0 starts those only once its write to
 * rank 1 has left its board (its engines' BYTES counted it) and waits
 * for rank 1's FENCE_ACK. With one queue of chains they would wait for
 * rank 1 to wake: rank 1 wakes anyway after SLEEP_CAP_MS and then fails.
 * Rank 1 then takes its data and checks it. The writes leave as burst
 * records (emu/burst.c), as test_channels expects them to: as plain PUT
 * packets they would fill the links to the sleeper and then the board's
 * injection queue, which every engine shares (docs/fabric.md, known
 * limits).
 *
 * Order per (source, destination, channel): every rank sends every other
 * rank, on two channels, a stream of messages of mixed sizes (PIO,
 * eager chains, rendezvous) all posted before any is waited for; each
 * receiver checks length and content of each message against its index.
 *
 * Shapes: 3 ranks on a full mesh (8 engines); 4 on a full mesh with 1%
 * drop and 1% corrupt (8 engines); 4 on a 2x2 torus with the same faults
 * and 2 engines (fewer lanes than peers: lanes change hands); 5 on a ring
 * with 1 engine (one lane, the sleeper case skipped: it needs two).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <fpgacomm/fpgacomm.h>
#include <fpgacomm/hw.h>

#define CHECK_CONTEXT what /* the case being checked */
#define CHECK_RANK    world.rank
#include "launch.h"

#define EXIT_SKIP    77
#define T_MS	     60000
#define SLEEP_CAP_MS 60000 /* the sleeper wakes by itself after this */
#define PORT_SLEEP   3
#define PORT_FLOW    4
#define PORT_ORDER_A 5
#define PORT_ORDER_B 9
#define BIG	     (8u << 20) /* the sleeper's rendezvous message */
#define PUT_LEN	     (4u << 20)
#define ORDER_MSGS   24
#define MAX_RANKS    8
#define FLAGS_ENV    "FCTEST_CONC_FLAGS"

/* Flags the launcher shares with every rank, outside the library. */
struct flags {
	uint32_t flow_done[2]; /* round r: rank 2 got everything */
	uint32_t woke[2];      /* round r: rank 1 called again */
};

static struct fc_dev *dev;
static struct fc_info info;
static struct fc_world world;
static struct flags *flags;
static int failures;
static const char *what = "";

static void flag_set(uint32_t *f)
{
	__atomic_store_n(f, 1, __ATOMIC_RELEASE);
}

static bool flag_get(const uint32_t *f)
{
	return __atomic_load_n(f, __ATOMIC_ACQUIRE);
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static void pattern(void *p, size_t len, uint32_t salt)
{
	uint64_t x = salt * 0x9e3779b97f4a7c15ull + 1;
	uint8_t *b = p;
	size_t i;

	for (i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b[i] = (uint8_t)x;
	}
}

static bool pattern_ok(const void *p, size_t len, uint32_t salt)
{
	uint8_t *want = malloc(len ? len : 1);
	bool ok;

	if (!want)
		return false;
	pattern(want, len, salt);
	ok = !memcmp(p, want, len);
	free(want);
	return ok;
}

static uint32_t salt(uint32_t from, uint32_t to, uint32_t port, uint32_t i)
{
	return ((from * 64 + to) * 256 + port) * 4096 + i;
}

/* Every engine's BYTES: what the board's engines have moved. */
static uint64_t engine_bytes(void)
{
	uint64_t sum = 0;
	uint32_t lo, hi, e;

	for (e = 0; e < info.dma_engines; e++) {
		if (fc_reg_read(dev, FC_DMA_REG(e, FC_DMA_BYTES_LO), &lo) ||
		    fc_reg_read(dev, FC_DMA_REG(e, FC_DMA_BYTES_HI), &hi))
			return 0;
		sum += (uint64_t)hi << 32 | lo;
	}
	return sum;
}

/* Has every chain rung on every engine ended? */
static bool engines_idle(void)
{
	uint32_t rung, done, e;

	for (e = 0; e < info.dma_engines; e++) {
		if (fc_reg_read(dev, FC_DMA_REG(e, FC_DMA_DOORBELL), &rung) ||
		    fc_reg_read(dev, FC_DMA_REG(e, FC_DMA_DONE_SEQ), &done))
			return false;
		if (rung != done)
			return false;
	}
	return true;
}

/* ---- A sleeping receiver holds up no other node ---- */

/* The sizes rank 0 sends rank 2 while rank 1 sleeps: the PIO window,
 * eager chains, rendezvous (remote writes with fences). */
static const size_t flow_sizes[] = { 8,	   1000,     2880,   2881,
				     4096, 20000,    40000,  300000,
				     61,   1u << 20, 100000, 59 };
#define FLOW_N (sizeof(flow_sizes) / sizeof(flow_sizes[0]))

/* Rank 0: the stream to rank 2, started while its write to rank 1 waits. */
static void flow_send(uint32_t round)
{
	struct fc_req *req[FLOW_N];
	uint8_t *buf[FLOW_N];
	struct fc_chan *ch;
	unsigned int i;

	CHECK_RC(fc_chan_open(dev, 2, PORT_FLOW, 0, &ch), 0);
	for (i = 0; i < FLOW_N; i++) {
		buf[i] = malloc(flow_sizes[i]);
		CHECK(buf[i], "out of memory");
		pattern(buf[i], flow_sizes[i], salt(0, 2, round, i));
		CHECK_RC(fc_chan_isend(ch, buf[i], flow_sizes[i], &req[i]), 0);
	}
	for (i = 0; i < FLOW_N; i++) {
		CHECK_RC(fc_req_wait(req[i], T_MS, NULL), 0);
		free(buf[i]);
	}
	CHECK_RC(fc_chan_close(ch), 0);
}

/* Rank 2: every message checked, then the flag rank 1 sleeps on. */
static void flow_recv(uint32_t round)
{
	size_t cap = 1u << 20, len;
	uint8_t *buf = malloc(cap);
	struct fc_chan *ch;
	unsigned int i;

	CHECK(buf, "out of memory");
	CHECK_RC(fc_chan_open(dev, 0, PORT_FLOW, 0, &ch), 0);
	for (i = 0; i < FLOW_N; i++) {
		CHECK_RC(fc_chan_recv(ch, buf, cap, &len, T_MS), 0);
		CHECK(len == flow_sizes[i], "message %u: %zu bytes, sent %zu",
		      i, len, flow_sizes[i]);
		CHECK(pattern_ok(buf, len, salt(0, 2, round, i)),
		      "message %u: wrong data", i);
	}
	CHECK(!flag_get(&flags->woke[round]),
	      "rank 1 called the library again before rank 2 had its messages");
	flag_set(&flags->flow_done[round]);
	CHECK_RC(fc_chan_close(ch), 0);
	free(buf);
}

/* Rank 1: no library call until rank 2 has it all (or the cap). */
static void sleep_until_flow(uint32_t round)
{
	unsigned int ms;

	for (ms = 0; ms < SLEEP_CAP_MS && !flag_get(&flags->flow_done[round]);
	     ms++)
		sleep_ms(1);
	CHECK(flag_get(&flags->flow_done[round]),
	      "rank 2's messages from rank 0 did not arrive while rank 1 "
	      "slept (%u s) with rank 0's write to it waiting for its "
	      "FENCE_ACK",
	      SLEEP_CAP_MS / 1000);
	flag_set(&flags->woke[round]);
}

/* Rank 0: until the write to rank 1 has left the board (@len more bytes
 * through the engines), driving @req. RETURN VALUE: false when @req
 * ended meanwhile (it is freed). */
static bool until_written(struct fc_req *req, uint64_t before, uint64_t len)
{
	uint64_t deadline = (uint64_t)time(NULL) + T_MS / 1000;
	int rc = -EINPROGRESS;

	while (engine_bytes() - before < len &&
	       (uint64_t)time(NULL) < deadline) {
		rc = fc_req_test(req, NULL);
		CHECK(rc == -EINPROGRESS,
		      "the write to rank 1 ended (%d) with rank 1 asleep", rc);
		if (rc != -EINPROGRESS)
			return false;
	}
	CHECK(engine_bytes() - before >= len,
	      "the write to rank 1 never left the board");
	return true;
}

/* Round 0: a rendezvous message to rank 1, cleared before it sleeps. */
static void sleeper_rndv(void)
{
	struct fc_req *big_req, *small_req;
	uint8_t *big = malloc(BIG), small[16];
	struct fc_chan *ch;
	uint64_t before;
	size_t len;

	what = "sleeper, rendezvous";
	CHECK(big, "out of memory");
	if (world.rank == 0) {
		pattern(big, BIG, salt(0, 1, PORT_SLEEP, 0));
		pattern(small, sizeof(small), salt(0, 1, PORT_SLEEP, 1));
		CHECK_RC(fc_chan_open(dev, 1, PORT_SLEEP, 0, &ch), 0);
		before = engine_bytes();
		CHECK_RC(fc_chan_isend(ch, big, BIG, &big_req), 0);
		/* After the announcement: rank 1 has cleared it when this
		 * is in. */
		CHECK_RC(fc_chan_send(ch, small, sizeof(small), T_MS), 0);
		if (until_written(big_req, before, BIG)) {
			flow_send(0);
			CHECK_RC(fc_req_wait(big_req, T_MS, NULL), 0);
		}
		CHECK_RC(fc_chan_close(ch), 0);
	} else if (world.rank == 1) {
		CHECK_RC(fc_chan_open(dev, 0, PORT_SLEEP, 0, &ch), 0);
		CHECK_RC(fc_chan_irecv(ch, big, BIG, &big_req), 0);
		CHECK_RC(fc_chan_irecv(ch, small, sizeof(small), &small_req),
			 0);
		CHECK_RC(fc_req_wait(small_req, T_MS, &len), 0);
		/* The CTS is queued; once every chain rung has ended, it has
		 * left the board. */
		for (len = 0; !engines_idle() && len < 1000000; len++)
			CHECK_RC(fc_req_test(big_req, NULL), -EINPROGRESS);
		CHECK(engines_idle(), "the CTS never left the board");
		sleep_until_flow(0);
		CHECK_RC(fc_req_wait(big_req, T_MS, &len), 0);
		CHECK(len == BIG &&
			      pattern_ok(big, BIG, salt(0, 1, PORT_SLEEP, 0)),
		      "the large message arrived wrong (%zu bytes)", len);
		CHECK(pattern_ok(small, sizeof(small),
				 salt(0, 1, PORT_SLEEP, 1)),
		      "the small message arrived wrong");
		CHECK_RC(fc_chan_close(ch), 0);
	} else if (world.rank == 2) {
		flow_recv(0);
	}
	free(big);
	CHECK_RC(fc_barrier(dev, T_MS), 0);
}

/* Round 1: a put of 4 MiB into rank 1, which does not call at all. */
static void sleeper_put(void)
{
	struct fc_mem *mem = NULL;
	struct fc_chan *ch;
	struct fc_req *req;
	uint64_t addr = 0, before;
	size_t len;

	what = "sleeper, put";
	CHECK_RC(fc_mem_alloc(dev, PUT_LEN, 0, &mem), 0);
	if (!mem)
		return;
	if (world.rank == 0) {
		pattern(mem->addr, PUT_LEN, salt(0, 1, 0, 77));
		CHECK_RC(fc_chan_open(dev, 1, PORT_SLEEP, 0, &ch), 0);
		CHECK_RC(fc_chan_recv(ch, &addr, sizeof(addr), &len, T_MS), 0);
		before = engine_bytes();
		CHECK_RC(fc_iput(dev, addr, mem, 0, PUT_LEN, &req), 0);
		if (until_written(req, before, PUT_LEN)) {
			flow_send(1);
			CHECK_RC(fc_req_wait(req, T_MS, NULL), 0);
		}
		CHECK_RC(fc_chan_close(ch), 0);
	} else if (world.rank == 1) {
		memset(mem->addr, 0, PUT_LEN);
		CHECK_RC(fc_mem_fabric_addr(dev, mem, 0, &addr), 0);
		CHECK_RC(fc_chan_open(dev, 0, PORT_SLEEP, 0, &ch), 0);
		CHECK_RC(fc_chan_send(ch, &addr, sizeof(addr), T_MS), 0);
		sleep_until_flow(1);
		CHECK_RC(fc_chan_close(ch), 0);
	} else if (world.rank == 2) {
		flow_recv(1);
	}
	/* Rank 0's put ended before its barrier: visible after it. */
	CHECK_RC(fc_barrier(dev, T_MS), 0);
	if (world.rank == 1)
		CHECK(pattern_ok(mem->addr, PUT_LEN, salt(0, 1, 0, 77)),
		      "the put's data is wrong");
	CHECK_RC(fc_mem_free(dev, mem), 0);
	CHECK_RC(fc_barrier(dev, T_MS), 0);
}

/* ---- Order per (source, destination, channel) ---- */

static size_t order_size(uint32_t from, uint32_t to, uint32_t port, uint32_t i)
{
	static const size_t sizes[] = { 1,    59,   60,	   61,	  2880,
					2881, 5000, 33000, 70000, 200000 };
	uint32_t h = salt(from, to, port, i) * 2654435761u;

	return sizes[(h >> 16) % (sizeof(sizes) / sizeof(sizes[0]))];
}

static void test_order(void)
{
	static const uint32_t ports[2] = { PORT_ORDER_A, PORT_ORDER_B };
	uint32_t n = world.size, me = world.rank, p, k, i, peer, port;
	unsigned int total = (n - 1) * 2 * ORDER_MSGS, s = 0, r = 0;
	struct fc_req **sreq = calloc(total, sizeof(*sreq));
	struct fc_req **rreq = calloc(total, sizeof(*rreq));
	uint8_t **sbuf = calloc(total, sizeof(*sbuf));
	uint8_t **rbuf = calloc(total, sizeof(*rbuf));
	size_t *rlen = calloc(total, sizeof(*rlen));
	struct fc_chan *ch[MAX_RANKS][2] = { { NULL } };
	size_t len;

	what = "order";
	CHECK(sreq && rreq && sbuf && rbuf && rlen, "out of memory");
	for (peer = 0; peer < n; peer++)
		for (k = 0; k < 2 && peer != me; k++)
			CHECK_RC(fc_chan_open(dev, peer, ports[k], 0,
					      &ch[peer][k]),
				 0);
	/* Receives first, in order, each with room for any size. */
	for (peer = 0; peer < n; peer++) {
		for (k = 0; k < 2 && peer != me; k++) {
			for (i = 0; i < ORDER_MSGS; i++, r++) {
				rbuf[r] = malloc(200000);
				CHECK_RC(fc_chan_irecv(ch[peer][k], rbuf[r],
						       200000, &rreq[r]),
					 0);
			}
		}
	}
	CHECK_RC(fc_barrier(dev, T_MS), 0);
	/* Then every send, interleaved over peers and channels. */
	for (i = 0; i < ORDER_MSGS; i++) {
		for (p = 1; p < n; p++) {
			peer = (me + p) % n;
			for (k = 0; k < 2; k++) {
				len = order_size(me, peer, ports[k], i);
				sbuf[s] = malloc(len);
				pattern(sbuf[s], len,
					salt(me, peer, ports[k], i));
				CHECK_RC(fc_chan_isend(ch[peer][k], sbuf[s],
						       len, &sreq[s]),
					 0);
				s++;
			}
		}
	}
	r = 0;
	for (peer = 0; peer < n; peer++) {
		for (k = 0; k < 2 && peer != me; k++) {
			port = ports[k];
			for (i = 0; i < ORDER_MSGS; i++, r++) {
				CHECK_RC(fc_req_wait(rreq[r], T_MS, &rlen[r]),
					 0);
				len = order_size(peer, me, port, i);
				CHECK(rlen[r] == len &&
					      pattern_ok(rbuf[r], len,
							 salt(peer, me, port,
							      i)),
				      "from rank %u on channel %u: message %u "
				      "is not the one sent %u-th (%zu bytes, "
				      "sent %zu)",
				      peer, port, i, i, rlen[r], len);
				free(rbuf[r]);
			}
		}
	}
	for (s = 0; s < total; s++) {
		CHECK_RC(fc_req_wait(sreq[s], T_MS, NULL), 0);
		free(sbuf[s]);
	}
	CHECK_RC(fc_barrier(dev, T_MS), 0);
	for (peer = 0; peer < n; peer++)
		for (k = 0; k < 2 && peer != me; k++)
			CHECK_RC(fc_chan_close(ch[peer][k]), 0);
	free(sreq);
	free(rreq);
	free(sbuf);
	free(rbuf);
	free(rlen);
}

/* ---- Ranks and launcher ---- */

static int run_rank(void)
{
	const char *path = getenv(FLAGS_ENV);
	FILE *f = path ? fopen(path, "r+") : NULL;
	int rc;

	if (!f) {
		fprintf(stderr, "no flags file (%s)\n", FLAGS_ENV);
		return 1;
	}
	flags = mmap(NULL, sizeof(*flags), PROT_READ | PROT_WRITE, MAP_SHARED,
		     fileno(f), 0);
	fclose(f);
	if (flags == MAP_FAILED)
		return 1;
	/* The sleeper's round is about the sender's remote write (CTS): a
	 * receive that reads its message itself (RTS_GET) is not waited for
	 * by the sender's engines at all. */
	setenv("FPGACOMM_RNDV_GET", "0", 1);
	rc = fc_open(&dev, NULL);
	if (!rc)
		rc = fc_query(dev, &info);
	if (!rc)
		rc = fc_world_query(dev, &world);
	if (rc) {
		fprintf(stderr, "fc_open/query: %s\n", fc_strerror(rc));
		return 1;
	}
	if (world.size > MAX_RANKS) {
		fprintf(stderr, "at most %d ranks\n", MAX_RANKS);
		return 1;
	}
	if (world.size >= 3 && info.dma_engines >= 2) {
		sleeper_rndv();
		sleeper_put();
	} else if (world.rank == 0) {
		printf("sleeper: skipped (%u ranks, %u engines: needs 3 and 2)\n",
		       world.size, info.dma_engines);
	}
	test_order();
	if (world.rank == 0 || failures)
		printf("rank %u: %s (%d failures)\n", world.rank,
		       failures ? "FAIL" : "ok", failures);
	fc_close(dev);
	return failures ? 1 : 0;
}

struct shape {
	int ranks;
	const char *topo, *faults, *engines;
};

static const struct shape shapes[] = {
	{ 3, "full:3", NULL, NULL },
	{ 4, "full:4", "drop=0.01,corrupt=0.01", NULL },
	{ 4, "torus:2x2", "drop=0.01,corrupt=0.01", "2" },
	{ 5, "ring:5", NULL, "1" },
};

static int launch(const char *run, const char *self, const struct shape *s,
		  const char *path)
{
	const char *const env[] = { FLAGS_ENV, path, "FPGACOMM_EMU_ENGINES",
				    s->engines, NULL };
	int fd = open(path, O_RDWR | O_TRUNC);
	struct flags zero;
	int rc;

	memset(&zero, 0, sizeof(zero));
	if (fd < 0 || write(fd, &zero, sizeof(zero)) != sizeof(zero)) {
		if (fd >= 0)
			close(fd);
		return 1;
	}
	close(fd);
	printf("== %d ranks, %s%s%s, %s engine(s)\n", s->ranks, s->topo,
	       s->faults ? ", faults " : "", s->faults ? s->faults : "",
	       s->engines ? s->engines : "default");
	rc = harness_launch_ranks(run, self, s->ranks, s->topo, s->faults, env);
	return rc;
}

int main(void)
{
	char self[PATH_MAX], run[PATH_MAX + 32];
	char path[] = "/dev/shm/fctest-conc-XXXXXX";
	const char *tdev = getenv("FPGACOMM_TEST_DEVICE");
	int worst = 0, rc, fd;
	size_t i;

	if (getenv("FPGACOMM_RANK"))
		return run_rank();
	printf("test_fabric_concurrency: sends to different nodes at once\n");
	if (tdev && *tdev && strncmp(tdev, "emu:", 4)) {
		printf("SKIP: %s: the ranks need an emulated cluster\n", tdev);
		return EXIT_SKIP;
	}
	rc = harness_find_run(self, sizeof(self), run, sizeof(run));
	if (rc)
		return rc;
	fd = mkstemp(path);
	if (fd < 0) {
		perror("mkstemp");
		return 1;
	}
	close(fd);
	for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		rc = launch(run, self, &shapes[i], path);
		worst = rc > worst ? rc : worst;
	}
	unlink(path);
	return worst;
}
