// SPDX-License-Identifier: MIT
/*
 * test_channels: the fabric API across the ranks of an emulated cluster:
 * world and hops; ping-pong of 1 B .. 1 MiB (59/60/61 and other packet
 * boundaries) with data verified; message boundaries and order between
 * every pair; many small messages; isend/irecv with fc_req_test/wait and
 * fc_req_cancel; a slow receiver (the sender is held back, nothing lost);
 * fc_put/fc_iput + fc_fence visible at the target after a barrier;
 * barriers; bad input (-EINVAL, -EBADF, -EBUSY, -EMSGSIZE, -ETIMEDOUT,
 * -ENOTCONN); and a rank that dies without closing (-EHOSTDOWN within a
 * bound, never a hang).
 *
 * Large messages go by rendezvous (order with eager ones, too long for the
 * receive, more than the port keeps unasked) and large puts as bursts.
 *
 * Run alone, it starts itself as 4 ranks under build/tools/fpgacomm-run
 * three times: full mesh, a 2x2 torus with bursts off
 * (FPGACOMM_EMU_BURST=0: remote writes as packets), and with link faults
 * (drop=0.01,corrupt=0.01: ping-pong, order, put, barrier and a slow
 * receiver, data verified; FPGACOMM_EMU_BURST_HELP=0: bursts applied by
 * the receiver alone); then it starts the ranks itself as an mpirun would
 * (OMPI_COMM_WORLD_RANK/SIZE) and as srun would (SLURM_PROCID/NTASKS),
 * which tests the library's job join (without fpgacomm-run, only the
 * mpirun way), and exits with the worst status. As a rank (FPGACOMM_RANK,
 * OMPI_COMM_WORLD_RANK or SLURM_PROCID set) it runs the tests on its board.
 *
 * FPGACOMM_TEST_SEED is accepted for symmetry; the data is a function of
 * (sender, size, index) so that every rank can check what it receives.
 */
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <fpgacomm/fpgacomm.h>

#include "harness.h"

#define RANKS	      4
#define TMO	      20000 /* ms: generous, 4 ranks share 2 cores */
#define DEAD_BOUND_MS 5000  /* -EHOSTDOWN must come sooner than this */
#define PORT_A	      1
#define PORT_B	      7
#define MAX_MSG	      (1u << 20)

static struct fc_world world;
static struct fc_chan *chan[FC_MAX_NODES]; /* PORT_A to every rank */
static uint8_t *sbuf, *rbuf;
static bool faults;

#define T(f) cmocka_unit_test(f)

/* ---- helpers ---- */

static void pattern(void *p, size_t len, uint32_t salt)
{
	uint32_t x = salt * 2654435761u + 0x9e3779b9u;
	uint8_t *b = p;
	size_t i;

	for (i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		b[i] = (uint8_t)(x >> 16);
	}
}

static uint32_t salt(uint32_t from, uint32_t to, uint32_t a, uint32_t b)
{
	return ((from * 64 + to) * 65599u + a) * 31u + b;
}

static void check_pattern(const void *got, size_t len, uint32_t s,
			  const char *what)
{
	pattern(sbuf, len, s);
	assert_same(got, sbuf, len, what);
}

/* check_pattern for buffers larger than sbuf. */
static void check_pattern_big(const void *got, size_t len, uint32_t s)
{
	uint8_t *want = malloc(len);

	assert_non_null(want);
	pattern(want, len, s);
	assert_same(got, want, len, "large message");
	free(want);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void sync_all(void)
{
	assert_ok(fc_barrier(dev, TMO));
}

/* The rank across the world: several hops on a torus. */
static uint32_t partner(void)
{
	/* an odd world's last rank sits out: the others pair among them */
	uint32_t n = world.size - world.size % 2;

	return world.rank < n ? (world.rank + n / 2) % n : world.rank;
}

/* ---- tests ---- */

static void test_world(void **state)
{
	const char *env = getenv("FPGACOMM_SIZE");
	struct fc_world w;
	uint32_t hops, r;

	assert_ok(fc_world_query(dev, &w));
	assert_int_equal(w.rank, world.rank);
	assert_int_equal(w.node_id, info.node_id);
	if (env)
		assert_int_equal(w.size, strtoul(env, NULL, 10));
	env = getenv("FPGACOMM_TOPOLOGY");
	if (env)
		assert_string_equal(w.topology, env);
	assert_ok(fc_world_hops(dev, w.rank, &hops));
	assert_int_equal(hops, 0);
	for (r = 0; r < w.size; r++) {
		if (r == w.rank)
			continue;
		assert_ok(fc_world_hops(dev, r, &hops));
		assert_true(hops >= 1 && hops < w.size);
	}
	assert_rc(fc_world_hops(dev, w.size, &hops), -EINVAL);
	assert_rc(fc_world_hops(dev, 0, NULL), -EINVAL);
	assert_rc(fc_world_query(dev, NULL), -EINVAL);
	assert_rc(fc_world_query(NULL, &w), -EINVAL);
	sync_all();
}

static const size_t pp_sizes[] = {
	1,     2,     3,     52,     59,	  60,	   61,
	119,   120,   121,   1000,   4095,	  4096,	   4097,
	65535, 65536, 65537, 100000, MAX_MSG - 1, MAX_MSG,
};

static void test_pingpong(void **state)
{
	uint32_t p = partner(), i,
		 nsizes = sizeof(pp_sizes) / sizeof(pp_sizes[0]);
	bool lead = world.rank < p;
	size_t len;

	if (faults)
		nsizes -= 2; /* a retransmitted MiB is slow: enough below */
	if (p != world.rank) {
		for (i = 0; i < nsizes; i++) {
			size_t n = pp_sizes[i];

			if (lead) {
				pattern(rbuf, n, salt(world.rank, p, n, 0));
				assert_ok(fc_chan_send(chan[p], rbuf, n, TMO));
				memset(rbuf, 0, n);
				assert_ok(fc_chan_recv(chan[p], rbuf, MAX_MSG,
						       &len, TMO));
				assert_int_equal(len, n);
				check_pattern(rbuf, n,
					      salt(p, world.rank, n, 1),
					      "pong");
			} else {
				assert_ok(fc_chan_recv(chan[p], rbuf, MAX_MSG,
						       &len, TMO));
				assert_int_equal(len, n);
				check_pattern(rbuf, n,
					      salt(p, world.rank, n, 0),
					      "ping");
				pattern(rbuf, n, salt(world.rank, p, n, 1));
				assert_ok(fc_chan_send(chan[p], rbuf, n, TMO));
			}
		}
	}
	sync_all();
}

/* Every rank sends to every rank (itself too), then receives from each. */
static void test_order_all_pairs(void **state)
{
	const unsigned int count = faults ? 20 : 50;
	uint32_t r, i;
	size_t len;

	for (r = 0; r < world.size; r++) {
		for (i = 0; i < count; i++) {
			size_t n = 1 + (i * 37 + r * 11) % 250;

			pattern(rbuf, n, salt(world.rank, r, i, 2));
			assert_ok(fc_chan_send(chan[r], rbuf, n, TMO));
		}
	}
	for (r = 0; r < world.size; r++) {
		for (i = 0; i < count; i++) {
			size_t n = 1 + (i * 37 + world.rank * 11) % 250;

			assert_ok(fc_chan_recv(chan[r], rbuf, MAX_MSG, &len,
					       TMO));
			assert_int_equal(len, n);
			check_pattern(rbuf, n, salt(r, world.rank, i, 2),
				      "ordered message");
		}
	}
	sync_all();
}

/*
 * Small messages go through the board's PIO window when no chain of ours
 * is queued or running, larger ones as chains: posted back to back without
 * waiting, none may pass another. On an emulated board the small blocking
 * sends must have taken the window (its TAIL moved).
 */
static void test_order_mixed_paths(void **state)
{
	/* 30000 B: eager, and more packets than the rings on the way hold */
	static const size_t mix[] = { 4096,  8,	 2881,	1,    2880, 30000, 3,
				      30000, 60, 30000, 1000, 2,    70000, 5 };
	enum {
		N = sizeof(mix) / sizeof(mix[0])
	};
	uint32_t p = partner(), i, tail0, tail1;
	struct fc_req *req[N];
	uint8_t *bufs[N];
	size_t len;

	if (p == world.rank) {
		sync_all();
		return;
	}
	for (i = 0; i < N; i++) {
		bufs[i] = malloc(mix[i]);
		assert_non_null(bufs[i]);
		pattern(bufs[i], mix[i], salt(world.rank, p, i, 7));
	}
	for (i = 0; i < N; i++)
		assert_ok(fc_chan_isend(chan[p], bufs[i], mix[i], &req[i]));
	for (i = 0; i < N; i++) {
		assert_ok(fc_chan_recv(chan[p], rbuf, MAX_MSG, &len, TMO));
		assert_int_equal(len, mix[i]);
		check_pattern(rbuf, len, salt(p, world.rank, i, 7), "mixed");
	}
	for (i = 0; i < N; i++) {
		assert_ok(fc_req_wait(req[i], TMO, NULL));
		free(bufs[i]);
	}
	/* nothing of ours in flight now: small sends take the window */
	assert_ok(fc_reg_read(dev, FC_PIO_TAIL, &tail0));
	for (i = 0; i < 4; i++)
		assert_ok(fc_chan_send(chan[p], &i, sizeof(i), TMO));
	assert_ok(fc_reg_read(dev, FC_PIO_TAIL, &tail1));
	if (info.caps & FC_CAP_PIO_SEND)
		assert_int_equal(tail1 - tail0, 4);
	for (i = 0; i < 4; i++) {
		uint32_t v;

		assert_ok(fc_chan_recv(chan[p], &v, sizeof(v), &len, TMO));
		assert_int_equal(v, i);
	}
	sync_all();
}

/* Two ports to the same peer are independent channels. */
static void test_two_ports(void **state)
{
	uint32_t p = partner();
	struct fc_chan *b;
	uint32_t v;
	size_t len;

	if (p == world.rank) {
		sync_all();
		return;
	}
	assert_ok(fc_chan_open(dev, p, PORT_B, 0, &b));
	v = 1000 + world.rank;
	assert_ok(fc_chan_send(b, &v, sizeof(v), TMO));
	v = 2000 + world.rank;
	assert_ok(fc_chan_send(chan[p], &v, sizeof(v), TMO));
	/* Receive in the other order: port A's message first. */
	assert_ok(fc_chan_recv(chan[p], &v, sizeof(v), &len, TMO));
	assert_int_equal(v, 2000 + p);
	assert_ok(fc_chan_recv(b, &v, sizeof(v), &len, TMO));
	assert_int_equal(v, 1000 + p);
	assert_ok(fc_chan_close(b));
	sync_all();
}

static void test_many_messages(void **state)
{
	const uint32_t count = 3000;
	uint32_t p = partner(), i, v;
	size_t len;

	if (p != world.rank) {
		if (world.rank < p) {
			for (i = 0; i < count; i++)
				assert_ok(fc_chan_send(chan[p], &i, sizeof(i),
						       TMO));
		} else {
			for (i = 0; i < count; i++) {
				assert_ok(fc_chan_recv(chan[p], &v, sizeof(v),
						       &len, TMO));
				assert_int_equal(len, sizeof(v));
				assert_int_equal(v, i);
			}
		}
	}
	sync_all();
}

static void test_nonblocking(void **state)
{
	enum {
		N = 8
	};
	uint32_t p = partner(), i;
	struct fc_req *req[N], *idle;
	size_t len, sizes[N];
	uint8_t *bufs[N];
	int rc;

	for (i = 0; i < N; i++) {
		sizes[i] = 1 + i * 9000; /* 1 .. 63001: crosses a slot */
		bufs[i] = malloc(sizes[i]);
		assert_non_null(bufs[i]);
	}
	if (p != world.rank) {
		/* A receive nobody answers: in progress, then withdrawn. */
		assert_ok(fc_chan_irecv(chan[p], bufs[0], 1, &idle));
		assert_rc(fc_req_test(idle, &len), -EINPROGRESS);
		assert_rc(fc_req_wait(idle, 20, &len), -ETIMEDOUT);
		assert_ok(fc_req_cancel(idle));
		sync_all();

		if (world.rank > p) {
			/* Receives posted before the messages are sent. */
			for (i = 0; i < N; i++)
				assert_ok(fc_chan_irecv(chan[p], bufs[i],
							sizes[i], &req[i]));
			sync_all();
			/* test() until done, in reverse order */
			for (i = N; i-- > 0;) {
				while ((rc = fc_req_test(req[i], &len)) ==
				       -EINPROGRESS)
					;
				assert_ok(rc);
				assert_int_equal(len, sizes[i]);
				check_pattern(bufs[i], sizes[i],
					      salt(p, world.rank, i, 3),
					      "irecv");
			}
			/* Messages that arrived before their irecv. */
			sync_all();
			for (i = 0; i < N; i++)
				assert_ok(fc_chan_irecv(chan[p], bufs[i],
							sizes[i], &req[i]));
			for (i = 0; i < N; i++) {
				assert_ok(fc_req_wait(req[i], TMO, &len));
				assert_int_equal(len, sizes[i]);
				check_pattern(bufs[i], sizes[i],
					      salt(p, world.rank, i, 4),
					      "late irecv");
			}
		} else {
			sync_all();
			for (i = 0; i < N; i++) {
				pattern(bufs[i], sizes[i],
					salt(world.rank, p, i, 3));
				assert_ok(fc_chan_isend(chan[p], bufs[i],
							sizes[i], &req[i]));
			}
			for (i = 0; i < N; i++)
				assert_ok(fc_req_wait(req[i], TMO, &len));
			for (i = 0; i < N; i++) {
				pattern(bufs[i], sizes[i],
					salt(world.rank, p, i, 4));
				assert_ok(fc_chan_isend(chan[p], bufs[i],
							sizes[i], &req[i]));
			}
			/* The buffers are the caller's again once done. */
			for (i = 0; i < N; i++) {
				assert_ok(fc_req_wait(req[i], TMO, NULL));
				memset(bufs[i], 0xee, sizes[i]);
			}
			sync_all();
		}
	} else {
		sync_all();
		sync_all();
		sync_all();
	}
	for (i = 0; i < N; i++)
		free(bufs[i]);
	sync_all();
}

/*
 * What the fabric can hold between this board and @p, in packets, from
 * what the contract states: a link holds what FC_PORT_CREDITS reads while
 * it is idle (its receiver's free slots, both VCs), and a link carried
 * between hosts twice that (the stand-in's ring and what the bridge has
 * in flight, docs/fabric.md); the board's injection and ejection rings
 * (the local port's, one each) no more than a link, and the PIO window
 * FC_PIO_SLOTS.
 */
static uint64_t fabric_holds(uint32_t p)
{
	uint32_t hops, port, v, link = 0;

	assert_ok(fc_world_hops(dev, p, &hops));
	for (port = 1; port <= info.num_ports; port++) {
		assert_ok(fc_reg_read(dev, FC_PORT_REG(port, FC_PORT_CREDITS),
				      &v));
		link = v > link ? v : link;
	}
	return (2ull * hops + 2) * link + FC_PIO_SLOTS;
}

static uint32_t packets_of(uint32_t size)
{
	return (size + FC_PKT_PAYLOAD - 1) / FC_PKT_PAYLOAD;
}

/* The receiver sleeps; the sender must be held back, and nothing lost. */
/*
 * A receiver that sleeps holds its sender back: 4096-byte messages go as
 * chains, 2880-byte ones through the PIO window, and a send that returned
 * has left the window (the board took it: closing now loses nothing).
 *
 * The receiver takes its first message, then stays out of the library
 * for 500 ms before reading the rest. Its partner's sends that end
 * meanwhile can only have gone into the fabric: no more than it holds.
 * And the sender is held back: its last send ends only once the receiver
 * reads again (whatever its library took before the sleep, at most what
 * the fabric held then). Times are CLOCK_MONOTONIC, which every rank of
 * an emulated cluster shares, and are compared, not measured: a rank that
 * leaves the barrier late does not change what they show.
 */
static void slow_receiver(uint32_t count, uint32_t size)
{
	uint32_t p = partner(), i, head, tail, during = 0;
	uint64_t holds;
	double *done, t[2];
	size_t len;

	if (p == world.rank)
		goto out;
	if (world.rank < p) {
		holds = fabric_holds(p);
		/* more than a receiver's library and the fabric can take */
		if ((uint64_t)count * packets_of(size) <=
		    2 * holds + packets_of(size))
			count = (2 * holds) / packets_of(size) + 2;
		assert_ok(fc_chan_send(chan[p], &count, sizeof(count), TMO));
		done = calloc(count, sizeof(*done));
		assert_non_null(done);
		for (i = 0; i < count; i++) {
			pattern(rbuf, size, salt(world.rank, p, i, 5));
			assert_ok(fc_chan_send(chan[p], rbuf, size, TMO));
			done[i] = now_ms();
			assert_ok(fc_reg_read(dev, FC_PIO_HEAD, &head));
			assert_ok(fc_reg_read(dev, FC_PIO_TAIL, &tail));
			assert_int_equal(head, tail);
		}
		/* when the receiver went to sleep, and when it woke */
		assert_ok(fc_chan_recv(chan[p], t, sizeof(t), &len, TMO));
		assert_int_equal(len, sizeof(t));
		for (i = 1; i < count; i++)
			during += done[i] > t[0] && done[i] <= t[1];
		print_message(
			"slow receiver: %u x %u B, %u sent while it slept "
			"(the fabric holds %" PRIu64 " packets), the last "
			"%.0f ms after it woke\n",
			count, size, during, holds, done[count - 1] - t[1]);
		assert_true((uint64_t)during * packets_of(size) <= holds);
		assert_true(done[count - 1] > t[1]);
		free(done);
	} else {
		assert_ok(fc_chan_recv(chan[p], &count, sizeof(count), &len,
				       TMO));
		assert_int_equal(len, sizeof(count));
		for (i = 0; i < count; i++) {
			assert_ok(fc_chan_recv(chan[p], rbuf, MAX_MSG, &len,
					       TMO));
			if (!i) {
				t[0] = now_ms();
				usleep(500 * 1000);
				t[1] = now_ms();
			}
			assert_int_equal(len, size);
			check_pattern(rbuf, size, salt(p, world.rank, i, 5),
				      "slow");
		}
		assert_ok(fc_chan_send(chan[p], t, sizeof(t), TMO));
	}
out:
	sync_all();
}

static void test_slow_receiver(void **state)
{
	slow_receiver(200, 4096);
	slow_receiver(280, 2880);
}

/* Every rank puts a slice into every rank's window; fence; barrier; check. */
static void test_put_fence(void **state)
{
	const size_t slice = 3000; /* not a multiple of 52 */
	uint64_t addr[FC_MAX_NODES], mine;
	struct fc_mem *win, *src;
	struct fc_req *req;
	uint32_t r;
	size_t len;

	assert_ok(fc_mem_alloc(dev, slice * world.size + 64, 0, &win));
	assert_ok(fc_mem_alloc(dev, slice * world.size, 0, &src));
	assert_ok(fc_mem_fabric_addr(dev, win, 0, &mine));
	assert_int_equal(FC_FABRIC_NODE(mine), world.rank);
	assert_int_equal(FC_FABRIC_REGION(mine), FC_REGION_HOST);
	/* Tell everyone where our window is. */
	for (r = 0; r < world.size; r++)
		assert_ok(fc_chan_send(chan[r], &mine, sizeof(mine), TMO));
	for (r = 0; r < world.size; r++) {
		assert_ok(fc_chan_recv(chan[r], &addr[r], sizeof(addr[r]), &len,
				       TMO));
		assert_int_equal(len, sizeof(addr[r]));
		assert_int_equal(FC_FABRIC_NODE(addr[r]), r);
	}
	/* Half blocking, half not; the fence covers both. */
	for (r = 0; r < world.size; r++) {
		uint64_t off = slice * r;

		pattern((uint8_t *)src->addr + off, slice,
			salt(world.rank, r, 0, 6));
		if (r % 2) {
			assert_ok(fc_put(dev, addr[r] + slice * world.rank, src,
					 off, slice, TMO));
		} else {
			assert_ok(fc_iput(dev, addr[r] + slice * world.rank,
					  src, off, slice, &req));
			assert_ok(fc_req_wait(req, TMO, NULL));
		}
	}
	/* One more, waited for only by the fence: the last 64 bytes. */
	assert_ok(fc_iput(dev, addr[partner()] + slice * world.size, src, 0, 64,
			  &req));
	assert_ok(fc_fence(dev, TMO));
	assert_ok(fc_req_wait(req, TMO, NULL));
	sync_all();
	for (r = 0; r < world.size; r++)
		check_pattern((uint8_t *)win->addr + slice * r, slice,
			      salt(r, world.rank, 0, 6), "put");
	sync_all();
	assert_ok(fc_mem_free(dev, src));
	assert_ok(fc_mem_free(dev, win));
}

/* ---- large messages: rendezvous (lib/proto/rndv.c) and bursts (emu/burst.c) ---- */

/* Eager and rendezvous messages interleaved on one channel keep their
 * order, whether the receive was posted before or after they came. */
static void test_rndv_order(void **state)
{
	static const size_t sizes[] = {
		100, 40000, 7, 300000, 32767, 32768, 1, 2u << 20, 60, 65536,
	};
	enum {
		N = sizeof(sizes) / sizeof(sizes[0])
	};
	uint32_t p = partner(), i;
	struct fc_req *req[N];
	uint8_t *bufs[N];
	size_t len;

	if (p == world.rank)
		goto out;
	for (i = 0; i < N; i++) {
		bufs[i] = malloc(sizes[i]);
		assert_non_null(bufs[i]);
	}
	if (world.rank < p) {
		for (i = 0; i < N; i++) {
			pattern(bufs[i], sizes[i], salt(world.rank, p, i, 8));
			assert_ok(fc_chan_isend(chan[p], bufs[i], sizes[i],
						&req[i]));
		}
		for (i = 0; i < N; i++)
			assert_ok(fc_req_wait(req[i], TMO, NULL));
	} else {
		/* The first half posted at once, the rest late. */
		for (i = 0; i < N / 2; i++)
			assert_ok(fc_chan_irecv(chan[p], bufs[i], sizes[i],
						&req[i]));
		for (i = 0; i < N / 2; i++)
			assert_ok(fc_req_wait(req[i], TMO, &len));
		usleep(50 * 1000);
		for (i = N / 2; i < N; i++)
			assert_ok(fc_chan_recv(chan[p], bufs[i], sizes[i], &len,
					       TMO));
		for (i = 0; i < N; i++)
			check_pattern_big(bufs[i], sizes[i],
					  salt(p, world.rank, i, 8));
	}
	for (i = 0; i < N; i++)
		free(bufs[i]);
out:
	sync_all();
}

/*
 * A stream of rendezvous messages in flight at once, of sizes around the
 * burst chunks (64 KiB, shared in two; 1 MiB + 13, in four): their writes
 * go several to a chain, their bursts shared between the two boards, and
 * they arrive whole and in order, posted before or after they came.
 */
static void test_rndv_stream(void **state)
{
	static const size_t sizes[] = {
		65536,
		65537,
		300000,
		(1u << 20) + 13,
	};
	enum {
		N = 24,
		K = sizeof(sizes) / sizeof(sizes[0])
	};
	uint32_t p = partner(), i;
	struct fc_req *req[N];
	uint8_t *bufs[N];
	size_t len;

	if (p == world.rank)
		goto out;
	for (i = 0; i < N; i++) {
		bufs[i] = malloc(sizes[i % K]);
		assert_non_null(bufs[i]);
	}
	if (world.rank < p) {
		for (i = 0; i < N; i++) {
			pattern(bufs[i], sizes[i % K],
				salt(world.rank, p, i, 12));
			assert_ok(fc_chan_isend(chan[p], bufs[i], sizes[i % K],
						&req[i]));
		}
		for (i = 0; i < N; i++)
			assert_ok(fc_req_wait(req[i], TMO, NULL));
	} else {
		for (i = 0; i < N - 4; i++)
			assert_ok(fc_chan_irecv(chan[p], bufs[i], sizes[i % K],
						&req[i]));
		for (i = 0; i < N - 4; i++) {
			assert_ok(fc_req_wait(req[i], TMO, &len));
			assert_int_equal(len, sizes[i % K]);
		}
		for (i = N - 4; i < N; i++) {
			assert_ok(fc_chan_recv(chan[p], bufs[i], sizes[i % K],
					       &len, TMO));
			assert_int_equal(len, sizes[i % K]);
		}
		for (i = 0; i < N; i++)
			check_pattern_big(bufs[i], sizes[i % K],
					  salt(p, world.rank, i, 12));
	}
	for (i = 0; i < N; i++)
		free(bufs[i]);
out:
	sync_all();
}

/* A large message longer than the receive: -EMSGSIZE and its length; the
 * sender is not held up and the next message arrives whole. */
static void test_rndv_too_long(void **state)
{
	const size_t big = 100000, next = 50000;
	uint32_t p = partner();
	size_t len = 0;

	if (p == world.rank)
		goto out;
	if (world.rank < p) {
		pattern(sbuf, big, salt(world.rank, p, 0, 9));
		assert_ok(fc_chan_send(chan[p], sbuf, big, TMO));
		pattern(sbuf, next, salt(world.rank, p, 1, 9));
		assert_ok(fc_chan_send(chan[p], sbuf, next, TMO));
	} else {
		assert_rc(fc_chan_recv(chan[p], rbuf, 1000, &len, TMO),
			  -EMSGSIZE);
		assert_int_equal(len, big);
		assert_ok(fc_chan_recv(chan[p], rbuf, MAX_MSG, &len, TMO));
		assert_int_equal(len, next);
		check_pattern(rbuf, next, salt(p, world.rank, 1, 9), "next");
	}
out:
	sync_all();
}

/*
 * Messages nobody asked for are landed in library buffers up to
 * FC_CHAN_BUFFERED bytes per port; past that the sender waits for a
 * receive, and nothing is lost.
 */
static void test_rndv_buffered(void **state)
{
	enum {
		N = 3
	};
	const size_t size = 12u << 20; /* 3 x 12 MiB > FC_CHAN_BUFFERED */
	uint32_t p = partner(), i;
	struct fc_req *req[N];
	uint8_t *bufs[N];
	size_t len;

	if (p == world.rank) {
		sync_all();
		sync_all();
		goto out;
	}
	for (i = 0; i < N; i++) {
		bufs[i] = malloc(size);
		assert_non_null(bufs[i]);
	}
	if (world.rank < p) {
		for (i = 0; i < N; i++) {
			pattern(bufs[i], size, salt(world.rank, p, i, 10));
			assert_ok(
				fc_chan_isend(chan[p], bufs[i], size, &req[i]));
		}
		sync_all(); /* the receiver lands what it may keep */
		assert_ok(fc_req_wait(req[0], TMO, NULL));
		assert_ok(fc_req_wait(req[1], TMO, NULL));
		usleep(100 * 1000);
		assert_rc(fc_req_test(req[2], NULL), -EINPROGRESS);
		sync_all();
		assert_ok(fc_req_wait(req[2], TMO, NULL));
	} else {
		sync_all();
		sync_all();
		for (i = 0; i < N; i++) {
			assert_ok(fc_chan_recv(chan[p], bufs[i], size, &len,
					       TMO));
			assert_int_equal(len, size);
			check_pattern_big(bufs[i], size,
					  salt(p, world.rank, i, 10));
		}
	}
	for (i = 0; i < N; i++)
		free(bufs[i]);
out:
	sync_all();
}

/* Port register @reg summed over this board's link ports. */
static uint64_t ports_sum(uint32_t reg)
{
	uint64_t sum = 0;
	uint32_t port, v;

	for (port = 1; port <= info.num_ports; port++) {
		assert_ok(fc_reg_read(dev, FC_PORT_REG(port, reg), &v));
		sum += v;
	}
	return sum;
}

static uint64_t tx_packets(void)
{
	return ports_sum(FC_PORT_TX_PKTS);
}

/*
 * Under link faults, the bursts' bytes cross the links as the run of PUT
 * packets they stand for: this board's resends (RETRANSMITS counts them
 * at the sending end of a link) since @rtx0 outnumber the packets it sent
 * since @tx0, which only a burst's pieces can make them do.
 */
static void faults_hit_bursts(const char *what, uint64_t tx0, uint64_t rtx0)
{
	const char *env = getenv("FPGACOMM_EMU_BURST");
	uint64_t tx = tx_packets() - tx0;
	uint64_t rtx = ports_sum(FC_PORT_RETRANSMITS) - rtx0;

	print_message("%s under faults: %" PRIu64 " retransmits, %" PRIu64
		      " link packets sent\n",
		      what, rtx, tx);
	if (faults && !(env && !strcmp(env, "0")))
		assert_true(rtx > tx);
}

/*
 * Where rank 0 sends its bursts, which every rank calls to learn: its
 * partner, or, when the cluster spans simulated hosts and the partner is
 * more than a hop away, its first neighbour in rank order (on its own
 * host, the ranks going to hosts in blocks). A burst reaches a board of
 * another host only when its route stays on the sender's host up to the
 * last link (docs/fabric.md, "Bursts between hosts"), else it goes as
 * packets; and the resends of a burst landed from another host are
 * counted in the receiving host's view of the sender's links, which
 * faults_hit_bursts cannot read.
 */
static uint32_t burst_target(void)
{
	const char *hosts = getenv("FPGACOMM_HOSTS");
	uint32_t t = partner(), r, hops;
	size_t len;

	if (world.rank != 0) {
		assert_ok(fc_chan_recv(chan[0], &t, sizeof(t), &len, TMO));
		assert_int_equal(len, sizeof(t));
		return t;
	}
	assert_ok(fc_world_hops(dev, t, &hops));
	if (hosts && atoi(hosts) > 1 && hops > 1) {
		for (r = 1; r < world.size; r++) {
			assert_ok(fc_world_hops(dev, r, &hops));
			if (hops == 1) {
				t = r;
				break;
			}
		}
	}
	for (r = 1; r < world.size; r++)
		assert_ok(fc_chan_send(chan[r], &t, sizeof(t), TMO));
	return t;
}

/* A 1 MiB put leaves as a few burst records, or with
 * FPGACOMM_EMU_BURST=0 as 52-byte PUT packets; the data is the same. */
static void test_put_bursts(void **state)
{
	const char *env = getenv("FPGACOMM_EMU_BURST");
	bool bursts = !(env && !strcmp(env, "0"));
	const size_t len = (1u << 20) + 13;
	uint32_t p = burst_target();
	struct fc_mem *win, *src;
	uint64_t addr, mine, before, sent, rtx0;
	size_t got;

	assert_ok(fc_mem_alloc(dev, len, 0, &win));
	assert_ok(fc_mem_alloc(dev, len, 0, &src));
	assert_ok(fc_mem_fabric_addr(dev, win, 0, &mine));
	/* The target tells rank 0 where its window is. */
	if (world.rank == p && p != 0)
		assert_ok(fc_chan_send(chan[0], &mine, sizeof(mine), TMO));
	if (world.rank == 0 && p != 0) {
		assert_ok(
			fc_chan_recv(chan[p], &addr, sizeof(addr), &got, TMO));
		assert_int_equal(got, sizeof(addr));
	}
	sync_all();
	if (world.rank == 0 && p != 0) {
		pattern(src->addr, len, salt(0, p, 0, 11));
		before = tx_packets();
		rtx0 = ports_sum(FC_PORT_RETRANSMITS);
		assert_ok(fc_put(dev, addr, src, 0, len, TMO));
		assert_ok(fc_fence(dev, TMO));
		faults_hit_bursts("1 MiB put", before, rtx0);
		sent = tx_packets() - before;
		print_message("put of %zu B to rank %u: %" PRIu64
			      " link packets%s\n",
			      len, p, sent, bursts ? "" : " (bursts off)");
		if (bursts)
			assert_true(sent < 1000);
		else
			assert_true(sent >= len / FC_PKT_PUT_DATA);
	}
	sync_all();
	if (world.rank == p && p != 0)
		check_pattern_big(win->addr, len, salt(0, world.rank, 0, 11));
	sync_all();
	assert_ok(fc_mem_free(dev, src));
	assert_ok(fc_mem_free(dev, win));
}

/*
 * A 1 MiB message (rendezvous: its bytes go as a PUT, in bursts) from
 * rank 0 to its burst target under link faults: whole, and the faults
 * reached its bytes (faults_hit_bursts).
 */
static void test_faults_rndv(void **state)
{
	uint32_t p = burst_target();
	uint64_t tx0, rtx0;
	size_t len;

	sync_all();
	if (world.rank == 0 && p != 0) {
		pattern(sbuf, MAX_MSG, salt(0, p, 0, 23));
		tx0 = tx_packets();
		rtx0 = ports_sum(FC_PORT_RETRANSMITS);
		assert_ok(fc_chan_send(chan[p], sbuf, MAX_MSG, TMO));
		/* The receiver's answer: its data has landed. */
		assert_ok(fc_chan_recv(chan[p], rbuf, MAX_MSG, &len, TMO));
		assert_int_equal(len, 1);
		faults_hit_bursts("1 MiB message", tx0, rtx0);
	} else if (world.rank == p) {
		assert_ok(fc_chan_recv(chan[0], rbuf, MAX_MSG, &len, TMO));
		assert_int_equal(len, MAX_MSG);
		check_pattern(rbuf, MAX_MSG, salt(0, world.rank, 0, 23),
			      "1 MiB message");
		assert_ok(fc_chan_send(chan[0], "k", 1, TMO));
	}
	sync_all();
}

static void test_barrier(void **state)
{
	double arrived, left;
	uint32_t r;
	size_t len;
	int i;

	for (i = 0; i < 20; i++)
		assert_ok(fc_barrier(dev, TMO));
	/*
	 * Nobody leaves before the last one arrives: rank 0, late. The times
	 * (CLOCK_MONOTONIC, shared by the ranks of an emulated cluster) are
	 * compared, not measured, so a rank that left the barrier before
	 * late does not change what they show.
	 */
	if (world.rank == 0)
		usleep(300 * 1000);
	arrived = now_ms();
	assert_ok(fc_barrier(dev, TMO));
	left = now_ms();
	if (world.rank == 0) {
		for (r = 1; r < world.size; r++)
			assert_ok(fc_chan_send(chan[r], &arrived,
					       sizeof(arrived), TMO));
	} else {
		assert_ok(fc_chan_recv(chan[0], &arrived, sizeof(arrived), &len,
				       TMO));
		assert_int_equal(len, sizeof(arrived));
		assert_true(left >= arrived);
	}
	sync_all();
}

static void test_bad_input(void **state)
{
	uint32_t p = partner();
	struct fc_chan *ch, *dup;
	struct fc_dev *solo;
	struct fc_world w;
	struct fc_mem *m;
	struct fc_req *req;
	uint64_t a;
	size_t len;
	int v = 7;

	/* opening */
	assert_rc(fc_chan_open(NULL, 0, 2, 0, &ch), -EINVAL);
	assert_rc(fc_chan_open(dev, 0, 2, 0, NULL), -EINVAL);
	assert_rc(fc_chan_open(dev, world.size, 2, 0, &ch), -EINVAL);
	assert_rc(fc_chan_open(dev, UINT32_MAX, 2, 0, &ch), -EINVAL);
	assert_rc(fc_chan_open(dev, 0, FC_CHAN_PORT_BARRIER, 0, &ch), -EINVAL);
	assert_rc(fc_chan_open(dev, 0, FC_MAX_CHANNELS, 0, &ch), -EINVAL);
	assert_rc(fc_chan_open(dev, 0, 2, 1, &ch), -EINVAL);
	assert_rc(fc_chan_open(dev, 0, PORT_A, 0, &dup), -EBUSY);

	/* sending */
	assert_rc(fc_chan_send(NULL, &v, 1, TMO), -EINVAL);
	assert_rc(fc_chan_send(chan[p], NULL, 1, TMO), -EINVAL);
	assert_rc(fc_chan_send(chan[p], &v, 0, TMO), -EINVAL);
	assert_rc(fc_chan_send(chan[p], rbuf, FC_CHAN_MAX_MSG + 1ull, TMO),
		  -EMSGSIZE);
	assert_rc(fc_chan_isend(chan[p], &v, 1, NULL), -EINVAL);
	assert_rc(fc_chan_recv(chan[p], &v, sizeof(v), NULL, TMO), -EINVAL);
	assert_rc(fc_chan_recv(NULL, &v, sizeof(v), &len, TMO), -EINVAL);
	assert_rc(fc_chan_irecv(chan[p], NULL, 4, &req), -EINVAL);
	assert_rc(fc_req_test(NULL, &len), -EINVAL);
	assert_rc(fc_req_wait(NULL, 0, &len), -EINVAL);
	assert_rc(fc_req_cancel(NULL), -EINVAL);
	assert_rc(fc_progress(NULL), -EINVAL);
	assert_true(fc_progress(dev) >= 0);

	/* closed channels; nothing sent: a timeout */
	assert_ok(fc_chan_open(dev, 0, 2, 0, &ch));
	assert_rc(fc_chan_recv(ch, &v, sizeof(v), &len, 50), -ETIMEDOUT);
	assert_ok(fc_chan_close(ch));
	assert_rc(fc_chan_send(ch, &v, sizeof(v), TMO), -EBADF);
	assert_rc(fc_chan_recv(ch, &v, sizeof(v), &len, TMO), -EBADF);
	assert_rc(fc_chan_close(ch), -EBADF);
	assert_rc(fc_chan_close(NULL), -EINVAL);
	/* -EBUSY while a request is outstanding */
	assert_ok(fc_chan_open(dev, 0, 2, 0, &ch));
	assert_ok(fc_chan_irecv(ch, &v, sizeof(v), &req));
	assert_rc(fc_chan_close(ch), -EBUSY);
	assert_ok(fc_req_cancel(req));
	assert_ok(fc_chan_close(ch));

	/* a message longer than the buffer: -EMSGSIZE, consumed, dropped */
	if (p != world.rank) {
		pattern(rbuf, 1000, 1);
		assert_ok(fc_chan_send(chan[p], rbuf, 1000, TMO));
		v = 42;
		assert_ok(fc_chan_send(chan[p], &v, sizeof(v), TMO));
		memset(sbuf, 0x5a, 100);
		assert_rc(fc_chan_recv(chan[p], sbuf, 100, &len, TMO),
			  -EMSGSIZE);
		assert_int_equal(len, 1000);
		v = 0;
		assert_ok(fc_chan_recv(chan[p], &v, sizeof(v), &len, TMO));
		assert_int_equal(v, 42);
	}

	/* puts */
	assert_ok(fc_mem_alloc(dev, 4096, 0, &m));
	assert_rc(fc_mem_fabric_addr(dev, m, 4096, &a), -EINVAL);
	assert_rc(fc_mem_fabric_addr(NULL, m, 0, &a), -EINVAL);
	assert_ok(fc_mem_fabric_addr(dev, m, 0, &a));
	assert_rc(fc_put(dev, a, NULL, 0, 1, TMO), -EINVAL);
	assert_rc(fc_put(dev, a, m, 0, 0, TMO), -EINVAL);
	assert_rc(fc_put(dev, a, m, 4000, 97, TMO), -ERANGE);
	assert_rc(fc_put(dev, FC_FABRIC_CHAN(p, 1), m, 0, 1, TMO), -EINVAL);
	assert_rc(fc_put(dev, FC_FABRIC_ADDR(world.size, 0, 0), m, 0, 1, TMO),
		  -EINVAL);
	assert_rc(fc_put(dev, a | (1ull << 60), m, 0, 1, TMO), -ERANGE);
	assert_rc(fc_iput(dev, a, m, 0, 1, NULL), -EINVAL);
	assert_rc(fc_fence(NULL, TMO), -EINVAL);
	assert_rc(fc_barrier(NULL, TMO), -EINVAL);
	/* a put to ourselves works */
	memset(m->addr, 0x11, 64);
	assert_ok(fc_put(dev, a + 2048, m, 0, 64, TMO));
	assert_int_equal(((uint8_t *)m->addr)[2048 + 63], 0x11);
	assert_ok(fc_fence(dev, TMO));
	assert_ok(fc_mem_free(dev, m));

	/* a board in no cluster */
	assert_ok(fc_open(&solo, "emu:no-such-cluster-tc/0"));
	assert_rc(fc_world_query(solo, &w), -ENOTCONN);
	assert_rc(fc_world_hops(solo, 0, &p), -ENOTCONN);
	assert_rc(fc_chan_open(solo, 0, 0, 0, &ch), -ENOTCONN);
	assert_rc(fc_barrier(solo, TMO), -ENOTCONN);
	assert_rc(fc_fence(solo, TMO), -ENOTCONN);
	assert_ok(fc_close(solo));
	sync_all();
}

/* Under --faults: the links really lost and corrupted packets. */
static void test_faults_seen(void **state)
{
	uint32_t p, v, crc = 0, again = 0;

	for (p = 1; p <= info.num_ports; p++) {
		assert_ok(fc_reg_read(dev, FC_PORT_REG(p, FC_PORT_CRC_ERRORS),
				      &v));
		crc += v;
		assert_ok(fc_reg_read(dev, FC_PORT_REG(p, FC_PORT_RETRANSMITS),
				      &v));
		again += v;
	}
	print_message("rank %u: %u CRC errors, %u retransmits\n", world.rank,
		      crc, again);
	assert_true(crc > 0 && again > 0);
	sync_all();
}

/* Messages rank 0 streams to the dying rank: two it takes, two it keeps
 * unasked (FC_CHAN_BUFFERED), two that must wait for a receive. */
#define DEAD_STREAM 6
#define DEAD_MSG    FC_CHAN_MAX_MSG

/*
 * The dying rank: takes two of rank 0's stream, sends rank 0 one large
 * message whole and starts another, then dies without closing its board.
 */
static void die_mid_stream(void)
{
	uint8_t *buf = malloc(DEAD_MSG);
	struct fc_req *r;
	size_t len;
	int i;

	if (!buf)
		_exit(1);
	for (i = 0; i < 2; i++)
		if (fc_chan_recv(chan[0], buf, DEAD_MSG, &len, TMO) ||
		    len != DEAD_MSG)
			_exit(1);
	pattern(sbuf, MAX_MSG, salt(world.rank, 0, 0, 13));
	if (fc_chan_send(chan[0], sbuf, MAX_MSG, TMO) ||
	    fc_chan_isend(chan[0], sbuf, MAX_MSG, &r))
		_exit(1);
	fflush(NULL);
	_exit(0);
}

/* Rank 0's side of it: the sends in flight end, well or with -EHOSTDOWN
 * (those past what the dead rank kept, for sure), and the receive whose
 * sender died mid-way with -EHOSTDOWN; never a hang. */
static void stream_to_dead(uint32_t dead)
{
	uint8_t *buf = malloc(DEAD_MSG);
	struct fc_req *r[DEAD_STREAM];
	int i, ret, lost = 0;
	double t0;
	size_t len;

	assert_non_null(buf);
	memset(buf, 0x5a, DEAD_MSG);
	for (i = 0; i < DEAD_STREAM; i++)
		assert_ok(fc_chan_isend(chan[dead], buf, DEAD_MSG, &r[i]));
	assert_ok(fc_chan_recv(chan[dead], rbuf, MAX_MSG, &len, TMO));
	assert_int_equal(len, MAX_MSG);
	check_pattern(rbuf, MAX_MSG, salt(dead, 0, 0, 13), "before death");
	t0 = now_ms();
	assert_rc(fc_chan_recv(chan[dead], rbuf, MAX_MSG, &len, 3 * TMO),
		  -EHOSTDOWN);
	for (i = 0; i < DEAD_STREAM; i++) {
		ret = fc_req_wait(r[i], 3 * TMO, NULL);
		if (i < 2)
			assert_ok(ret);
		else if (ret)
			assert_rc(ret, -EHOSTDOWN);
		lost += ret != 0;
	}
	print_message(
		"dead rank: %d of %d sends lost, all ended after %.0f ms\n",
		lost, DEAD_STREAM, now_ms() - t0);
	assert_true(lost >= DEAD_STREAM - 4);
	assert_true(now_ms() - t0 < DEAD_BOUND_MS);
	free(buf);
}

/* Last: the highest rank dies without closing its board. */
static void test_dead_rank(void **state)
{
	uint32_t dead = world.size - 1;
	struct fc_mem *m;
	double t0, dt;
	size_t len;
	int v = 0;

	sync_all();
	if (world.rank == dead)
		die_mid_stream();
	if (world.rank == 0)
		stream_to_dead(dead);
	t0 = now_ms();
	assert_rc(fc_chan_recv(chan[dead], &v, sizeof(v), &len, 3 * TMO),
		  -EHOSTDOWN);
	dt = now_ms() - t0;
	print_message("dead rank: -EHOSTDOWN after %.0f ms\n", dt);
	assert_true(dt < DEAD_BOUND_MS);
	assert_rc(fc_chan_send(chan[dead], &v, sizeof(v), TMO), -EHOSTDOWN);
	assert_ok(fc_mem_alloc(dev, 4096, 0, &m));
	assert_rc(fc_put(dev, FC_FABRIC_ADDR(dead, FC_REGION_BOARD, 0), m, 0,
			 4096, TMO),
		  -EHOSTDOWN);
	assert_ok(fc_fence(dev, TMO));
	assert_ok(fc_mem_free(dev, m));
	assert_rc(fc_barrier(dev, TMO), -EHOSTDOWN);
	assert_rc(fc_chan_open(dev, dead, PORT_B, 0, &chan[dead]), -EHOSTDOWN);
}

/* ---- setup ---- */

static int group_setup(void **state)
{
	uint32_t r;

	sbuf = malloc(MAX_MSG);
	rbuf = malloc(MAX_MSG);
	if (!sbuf || !rbuf)
		return -1;
	for (r = 0; r < world.size; r++)
		if (fc_chan_open(dev, r, PORT_A, 0, &chan[r]))
			return -1;
	/* Everyone's channels are open before anything is sent. */
	return fc_barrier(dev, TMO) ? -1 : 0;
}

static int group_teardown(void **state)
{
	uint32_t r;

	for (r = 0; r < world.size; r++)
		if (chan[r])
			fc_chan_close(chan[r]);
	free(sbuf);
	free(rbuf);
	return fc_close(dev) ? -1 : 0;
}

static int run_rank(void)
{
	const struct CMUnitTest all[] = {
		T(test_world),		 T(test_pingpong),
		T(test_order_all_pairs), T(test_order_mixed_paths),
		T(test_two_ports),	 T(test_many_messages),
		T(test_nonblocking),	 T(test_slow_receiver),
		T(test_put_fence),	 T(test_rndv_order),
		T(test_rndv_stream),	 T(test_rndv_too_long),
		T(test_rndv_buffered),	 T(test_put_bursts),
		T(test_barrier),	 T(test_bad_input),
		T(test_dead_rank),
	};
	const struct CMUnitTest with_faults[] = {
		T(test_world),		 T(test_pingpong),
		T(test_order_all_pairs), T(test_order_mixed_paths),
		T(test_put_fence),	 T(test_rndv_order),
		T(test_rndv_stream),	 T(test_put_bursts),
		T(test_faults_rndv),	 T(test_barrier),
		T(test_slow_receiver),	 T(test_faults_seen),
	};
	const char *name = getenv("FPGACOMM_DEVICE");
	int rc;

	faults = getenv("FPGACOMM_TEST_FAULTS") != NULL;
	/* A rank that hangs is stopped, with a message, before the runner. */
	alarm(240);
	rc = fc_open(&dev, name && *name ? name : NULL);
	if (!rc)
		rc = fc_query(dev, &info);
	if (!rc)
		rc = fc_world_query(dev, &world);
	if (rc) {
		printf("rank: open/query %s: %s\n", name ? name : "(job)",
		       fc_strerror(rc));
		return 1;
	}
	printf("rank %u of %u, %s, topology %s%s\n", world.rank, world.size,
	       info.name, world.topology, faults ? ", link faults" : "");
	if (faults)
		return harness_run(with_faults, group_setup, group_teardown);
	return harness_run(all, group_setup, group_teardown);
}

/* ---- launching the ranks ---- */

static int status_of(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static int launch(const char *run, const char *self, const char *topo,
		  bool with_faults, bool bursts)
{
	char n[8];
	const char *argv[16];
	int i = 0, st;
	pid_t pid;

	snprintf(n, sizeof(n), "%d", RANKS);
	argv[i++] = run;
	argv[i++] = "-n";
	argv[i++] = n;
	argv[i++] = "--timeout";
	argv[i++] = "250";
	if (topo) {
		argv[i++] = "--topology";
		argv[i++] = topo;
	}
	if (with_faults) {
		argv[i++] = "--faults";
		argv[i++] = "drop=0.01,corrupt=0.01";
	}
	argv[i++] = "--";
	argv[i++] = self;
	argv[i] = NULL;
	printf("== %s%s%s -n %s%s%s%s -- test_channels\n",
	       bursts ? "" : "FPGACOMM_EMU_BURST=0 ",
	       with_faults ? "FPGACOMM_EMU_BURST_HELP=0 " : "", run, n,
	       topo ? " --topology " : "", topo ? topo : "",
	       with_faults ? " --faults drop=0.01,corrupt=0.01" : "");
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		if (with_faults) {
			setenv("FPGACOMM_TEST_FAULTS", "1", 1);
			/* and the receiver applies every burst alone */
			setenv("FPGACOMM_EMU_BURST_HELP", "0", 1);
		}
		if (!bursts)
			setenv("FPGACOMM_EMU_BURST", "0", 1);
		execv(run, (char *const *)argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0)
		return 1;
	printf("== status %d\n", status_of(st));
	return status_of(st);
}

/* Without the launcher: start the ranks as mpirun (or srun) would. */
static int launch_as_job(const char *self, bool slurm)
{
	char job[32], rank[8], size[8], shm[80];
	pid_t pid;
	int i, st, worst = 0, s;

	snprintf(job, sizeof(job), "tc%ld", (long)getpid());
	snprintf(size, sizeof(size), "%d", RANKS);
	printf("== %d ranks as %s job %s (no fpgacomm-run)\n", RANKS,
	       slurm ? "a SLURM" : "an Open MPI", job);
	fflush(stdout);
	for (i = 0; i < RANKS; i++) {
		pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			snprintf(rank, sizeof(rank), "%d", i);
			unsetenv("FPGACOMM_DEVICE");
			if (slurm) {
				setenv("SLURM_PROCID", rank, 1);
				setenv("SLURM_NTASKS", size, 1);
				setenv("SLURM_JOB_ID", job, 1);
				setenv("SLURM_STEP_ID", "3", 1);
			} else {
				setenv("OMPI_COMM_WORLD_RANK", rank, 1);
				setenv("OMPI_COMM_WORLD_SIZE", size, 1);
				setenv("OMPI_MCA_ess_base_jobid", job, 1);
			}
			execl(self, self, (char *)NULL);
			_exit(127);
		}
	}
	/* Reap each as it ends, as mpirun does: a zombie is not dead yet. */
	for (i = 0; i < RANKS; i++) {
		if (waitpid(-1, &st, 0) < 0)
			return 1;
		s = status_of(st);
		worst = s > worst ? s : worst;
	}
	/* The last rank to leave removes the cluster: check that it did. */
	if (slurm)
		snprintf(shm, sizeof(shm), "/dev/shm/fpgacomm-slurm-%s.3-%u",
			 job, (unsigned int)geteuid());
	else
		snprintf(shm, sizeof(shm), "/dev/shm/fpgacomm-ompi-%s-%u", job,
			 (unsigned int)geteuid());
	if (!access(shm, F_OK)) {
		printf("== %s left behind\n", shm);
		unlink(shm);
		worst = worst ? worst : 1;
	}
	printf("== status %d\n", worst);
	return worst;
}

int main(void)
{
	char self[PATH_MAX], run[PATH_MAX + 32], dir[PATH_MAX];
	const char *tdev = getenv("FPGACOMM_TEST_DEVICE");
	ssize_t n;
	int rc, worst = 0;

	if (getenv("FPGACOMM_RANK") || getenv("OMPI_COMM_WORLD_RANK") ||
	    getenv("SLURM_PROCID"))
		return run_rank();

	printf("test_channels: channels, puts and barriers across ranks\n");
	if (tdev && *tdev && strncmp(tdev, "emu:", 4)) {
		printf("SKIP: %s: the ranks need an emulated cluster\n", tdev);
		return EXIT_SKIP;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		return 1;
	self[n] = 0;
	strcpy(dir, self);
	snprintf(run, sizeof(run), "%s/../tools/fpgacomm-run", dirname(dir));
	if (access(run, X_OK))
		return launch_as_job(self, false);

	rc = launch(run, self, NULL, false, true);
	worst = rc > worst ? rc : worst;
	/* Remote writes as packets (no bursts) on the torus. */
	rc = launch(run, self, "torus:2x2", false, false);
	worst = rc > worst ? rc : worst;
	rc = launch(run, self, NULL, true, true);
	worst = rc > worst ? rc : worst;
	rc = launch_as_job(self, false);
	worst = rc > worst ? rc : worst;
	rc = launch_as_job(self, true);
	worst = rc > worst ? rc : worst;
	return worst;
}
