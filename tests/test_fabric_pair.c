// SPDX-License-Identifier: MIT
/*
 * Two boards of one fabric driven from one process: channel messages both
 * ways, credits holding back what an unread channel would take, and a
 * remote write, verified byte for byte. In a VM
 * (scripts/vm/vm-tests-guest.sh) the boards are /dev/fpgacomm0 and
 * /dev/fpgacomm1 behind fpgacomm.ko, two fpgacomm-emud of one emulated
 * cluster: the channel goes through the driver (the event queue: EQ,
 * CHAN_RING's FC_CHAN_RING_EQ, EQ_HEAD, or rings: CHAN_RING, CHAN_HEAD;
 * SUBMIT to a channel, and the PIO window for small messages). On the
 * host, two emulated boards of a cluster this program makes, which also
 * carry the rendezvous cases: a large message announced before its
 * receive waits for it rather than being landed, and is landed once the
 * wait (FPGACOMM_RNDV_LAND_US) is over.
 *
 * Imported memory of board 1 (the VM fixture's dma-buf, a memfd on the host)
 * in its peer window, written by board 0's put and read by its get, refused
 * once freed.
 *
 * FPGACOMM_TEST_PAIR="DEV0 DEV1" names the boards; without it, with
 * FPGACOMM_TEST_DEVICE naming a real board, the test is skipped.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include <linux/dma-buf.h>

#include "harness.h"
#include "pair.h" /* the two boards (emu/ makes their cluster) */
#include "../scripts/vm/fcvm-dmabuf/fcvm_dmabuf.h"

#define PORT	  7
#define BOARD_OFF (1u << 20)

static int setup(void **state)
{
	(void)state;
	if (pair_open("pair"))
		return -1;
	if (bd[0] && !strncmp(names[0], "emu:", 4))
		return pair_pump_start();
	return 0;
}

static void need_pair(void)
{
	if (!bd[0] || !bd[1])
		skip_because("FPGACOMM_TEST_DEVICE names one real board; "
			     "FPGACOMM_TEST_PAIR names two");
}

static void test_world(void **state)
{
	int i;

	(void)state;
	need_pair();
	for (i = 0; i < 2; i++) {
		assert_ok(fc_world_query(bd[i], &world[i]));
		print_message("%s: rank %u of %u, node %u, %s\n", names[i],
			      world[i].rank, world[i].size, world[i].node_id,
			      world[i].topology);
		assert_true(world[i].size >= 2);
		assert_int_equal(world[i].size, world[0].size);
		assert_string_equal(world[i].topology, world[0].topology);
	}
	assert_int_not_equal(world[0].rank, world[1].rank);
}

/*
 * Both requests until they end. One thread drives both boards: a message
 * larger than the receive ring moves only while the receiver drains it.
 */
static void wait_both(struct fc_req *a, struct fc_req *b, size_t *len)
{
	int ra = -EINPROGRESS, rb = -EINPROGRESS, spins = 0;
	uint64_t deadline = (uint64_t)time(NULL) + WAIT_MS / 1000;

	while (ra == -EINPROGRESS || rb == -EINPROGRESS) {
		if (ra == -EINPROGRESS)
			ra = fc_req_test(a, NULL);
		if (rb == -EINPROGRESS)
			rb = fc_req_test(b, len);
		if ((uint64_t)time(NULL) > deadline) {
			print_message("still waiting: send %d, receive %d\n",
				      ra, rb);
			fail();
		}
		if (++spins % 64 == 0)
			usleep(100);
	}
	assert_ok(ra);
	assert_ok(rb);
}

/* Every request of @reqs (NULL entries done) until all end, tested in
 * turn: the libraries of both boards move. */
static void wait_all(struct fc_req **reqs, int n)
{
	uint64_t deadline = (uint64_t)time(NULL) + WAIT_MS / 1000;
	int left = n, spins = 0, rc, i;

	while (left) {
		left = 0;
		fc_progress(bd[0]);
		fc_progress(bd[1]);
		for (i = 0; i < n; i++) {
			if (!reqs[i])
				continue;
			rc = fc_req_test(reqs[i], NULL);
			if (rc == -EINPROGRESS) {
				left++;
				continue;
			}
			assert_ok(rc);
			reqs[i] = NULL;
		}
		if (left && (uint64_t)time(NULL) > deadline) {
			print_message("%d of %d requests still running\n", left,
				      n);
			fail();
		}
		if (++spins % 64 == 0)
			usleep(100);
	}
}

/* One message of @len bytes from one board to the other, verified. */
static void one_message(struct fc_chan *tx, struct fc_chan *rx, size_t len,
			const char *what)
{
	uint8_t *out = malloc(len), *in = malloc(len + 64);
	struct fc_req *s, *r;
	size_t got = 0;

	assert_non_null(out);
	assert_non_null(in);
	rnd_fill(out, len);
	memset(in, 0xa5, len + 64);
	assert_ok(fc_chan_irecv(rx, in, len + 64, &r));
	assert_ok(fc_chan_isend(tx, out, len, &s));
	wait_both(s, r, &got);
	assert_int_equal(got, len);
	assert_same(in, out, len, what);
	free(out);
	free(in);
}

/*
 * What arrives at @d: entries of its event queue (FC_EQ_TAIL), and slots
 * of the port's ring (its FC_CHAN_TAIL).
 */
static void rx_counts(struct fc_dev *d, uint32_t *eq, uint32_t *ring)
{
	assert_ok(fc_reg_read(d, FC_EQ_TAIL, eq));
	assert_ok(fc_reg_read(d, FC_CHAN_REG(PORT, FC_CHAN_TAIL), ring));
}

/* Does the library use the board's event queue (FPGACOMM_EQ=0: rings)? */
static bool want_eq(struct fc_dev *d)
{
	const char *env = getenv("FPGACOMM_EQ");
	struct fc_info inf;

	assert_ok(fc_query(d, &inf));
	return (inf.caps & FC_CAP_EVENT_QUEUE) && !(env && !strcmp(env, "0"));
}

static void test_channel_both_ways(void **state)
{
	static const size_t sizes[] = {
		1, 59, 60, 61, 1000, 4096, 65539, 200000
	};
	struct fc_chan *c0, *c1;
	struct fc_info inf;
	uint32_t tail0, tail1, pkts = 0, eq0, eq1, ring0, ring1, ctrl;
	/* the largest message a receiver reads (none by default) */
	const char *get_env = getenv("FPGACOMM_RNDV_GET");
	size_t rget_max = get_env ? strtoull(get_env, NULL, 0) : 0;
	char what[64];
	unsigned int i;

	(void)state;
	need_pair();
	rng_reset("channel_both_ways");
	assert_ok(fc_query(bd[0], &inf));
	assert_ok(fc_reg_read(bd[0], FC_PIO_TAIL, &tail0));
	assert_ok(fc_world_query(bd[0], &world[0]));
	assert_ok(fc_world_query(bd[1], &world[1]));
	assert_ok(fc_chan_open(bd[0], world[1].rank, PORT, 0, &c0));
	assert_ok(fc_chan_open(bd[1], world[0].rank, PORT, 0, &c1));
	rx_counts(bd[1], &eq0, &ring0);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		snprintf(what, sizeof(what), "%zu bytes, 0 -> 1", sizes[i]);
		one_message(c0, c1, sizes[i], what);
		snprintf(what, sizeof(what), "%zu bytes, 1 -> 0", sizes[i]);
		one_message(c1, c0, sizes[i], what);
		if (sizes[i] <= 48 * FC_PKT_PAYLOAD)
			pkts += (sizes[i] + FC_PKT_PAYLOAD - 1) /
				FC_PKT_PAYLOAD;
		/* rendezvous: board 0 announces its large one (RTS),
		 * answers board 1's (CTS: written by board 1; GOT where
		 * FPGACOMM_RNDV_GET has board 0 read it) and, having
		 * written its own, says so (FIN; none where board 1 read
		 * it): a control packet each through the window */
		else if (sizes[i] >= FC_CHAN_RNDV_MIN &&
			 !strncmp(names[0], "emu:", 4))
			pkts += 2 + (sizes[i] > rget_max);
	}
	/* Sent one at a time, the small ones went through the PIO window. */
	assert_ok(fc_reg_read(bd[0], FC_PIO_TAIL, &tail1));
	if ((inf.caps & FC_CAP_PIO_SEND) && !getenv("FPGACOMM_RNDV_MIN"))
		assert_int_equal(tail1 - tail0, pkts);
	/*
	 * Board 1 received by its event queue where it has one (through the
	 * driver too): the queue's TAIL moved, the port's ring TAIL did not;
	 * else by the port's ring.
	 */
	rx_counts(bd[1], &eq1, &ring1);
	assert_ok(fc_reg_read(bd[1], FC_EQ_CTRL, &ctrl));
	if (want_eq(bd[1])) {
		assert_int_equal(ctrl, FC_EQ_CTRL_ENABLE);
		assert_true(eq1 - eq0 >= i);
		assert_int_equal(ring1, ring0);
	} else {
		assert_int_equal(ctrl & FC_EQ_CTRL_ENABLE, 0);
		assert_true(ring1 - ring0 >= i);
	}
	print_message("board 1 received %u queue entries, %u ring slots\n",
		      eq1 - eq0, ring1 - ring0);
	print_message("%u messages each way, %zu to %zu bytes\n", i, sizes[0],
		      sizes[i - 1]);
	assert_ok(fc_chan_close(c0));
	assert_ok(fc_chan_close(c1));
}

/* Several messages in flight before the receiver looks: order kept. */
static void test_channel_queue(void **state)
{
	enum {
		N = 16,
		LEN = 3000
	};
	struct fc_req *req[N];
	uint8_t out[N][LEN], in[LEN];
	struct fc_chan *c0, *c1;
	size_t got;
	int i;

	(void)state;
	need_pair();
	rng_reset("channel_queue");
	assert_ok(fc_chan_open(bd[1], world[0].rank, PORT + 1, 0, &c1));
	assert_ok(fc_chan_open(bd[0], world[1].rank, PORT + 1, 0, &c0));
	for (i = 0; i < N; i++) {
		rnd_fill(out[i], LEN);
		assert_ok(fc_chan_isend(c1, out[i], LEN, &req[i]));
	}
	for (i = 0; i < N; i++)
		assert_ok(fc_req_wait(req[i], WAIT_MS, NULL));
	for (i = 0; i < N; i++) {
		assert_ok(fc_chan_recv(c0, in, sizeof(in), &got, WAIT_MS));
		assert_int_equal(got, LEN);
		assert_same(in, out[i], LEN, "queued message");
	}
	assert_ok(fc_chan_close(c0));
	assert_ok(fc_chan_close(c1));
}

/*
 * End-to-end credits, through the driver too (control messages by
 * FC_XFER_CTRL): on a channel nobody reads, the sender's messages past the
 * window (FC_CHAN_CREDIT) wait while another channel between the same
 * boards goes on; once read, they all come, in order. Without credits the
 * receiver's library would take them all (up to FC_CHAN_BUFFERED) and
 * none would wait.
 */
static void test_credits_unread(void **state)
{
	enum {
		LEN = 16 << 10,
		N = FC_CHAN_CREDIT / (LEN + 64) + 16
	};
	uint8_t *out = malloc((size_t)N * LEN), *in = malloc((size_t)N * LEN);
	struct fc_req **req = calloc(2 * N, sizeof(*req)), **rreq = req + N;
	struct fc_chan *a0, *a1, *b0, *b1;
	uint32_t h, t, stalls;
	int i, rc, done = 0;

	(void)state;
	need_pair();
	if (getenv("FPGACOMM_CHAN_CREDIT") || getenv("FPGACOMM_RNDV_MIN"))
		skip_because("the window or the rendezvous threshold is set");
	assert_non_null(out);
	assert_non_null(in);
	assert_non_null(req);
	rng_reset("credits_unread");
	assert_ok(fc_chan_open(bd[1], world[0].rank, PORT + 2, 0, &a1));
	assert_ok(fc_chan_open(bd[0], world[1].rank, PORT + 2, 0, &a0));
	assert_ok(fc_chan_open(bd[1], world[0].rank, PORT + 3, 0, &b1));
	assert_ok(fc_chan_open(bd[0], world[1].rank, PORT + 3, 0, &b0));
	rnd_fill(out, (size_t)N * LEN);
	for (i = 0; i < N; i++)
		assert_ok(
			fc_chan_isend(a0, out + (size_t)i * LEN, LEN, &req[i]));
	/* the other channel goes on meanwhile, both ways */
	one_message(b0, b1, 1000, "channel B beside an unread A");
	one_message(b1, b0, 70000, "channel B back");
	for (i = 0; i < N; i++) {
		rc = fc_req_wait(req[i], i < N - 16 ? WAIT_MS : 200, NULL);
		if (rc == -ETIMEDOUT)
			break;
		assert_ok(rc);
		req[i] = NULL;
		done++;
	}
	assert_ok(fc_reg_read(bd[1], FC_EQ_HEAD, &h));
	assert_ok(fc_reg_read(bd[1], FC_EQ_TAIL, &t));
	assert_ok(fc_reg_read(bd[1], FC_EQ_STALLS, &stalls));
	print_message("%d of %d messages of %d bytes sent to a channel nobody "
		      "reads (receiver's queue %u..%u, %u stalls)\n",
		      done, N, LEN, h, t, stalls);
	assert_true(done >= N - 16 && done < N);
	/*
	 * Read them: credits go back and the held ones follow. Both
	 * libraries must run for that (the sender's takes the credits):
	 * one thread tests both sides' requests in turn.
	 */
	for (i = 0; i < N; i++)
		assert_ok(
			fc_chan_irecv(a1, in + (size_t)i * LEN, LEN, &rreq[i]));
	wait_all(req, 2 * N);
	assert_same(in, out, (size_t)N * LEN, "messages held, then read");
	assert_ok(fc_chan_close(a0));
	assert_ok(fc_chan_close(a1));
	assert_ok(fc_chan_close(b0));
	assert_ok(fc_chan_close(b1));
	free(req);
	free(in);
	free(out);
}

/*
 * A receiver that opens its board after the messages were sent: through
 * the driver its endpoints are off until then, so without the greeting
 * (FPGACOMM_CHAN_GREET, on there by default) the board would drop them.
 * With it the sends wait, held, until the new program's library answers,
 * and then arrive whole and in order. Through the driver only.
 */
static void test_late_receiver(void **state)
{
	enum {
		N = 3,
		LEN = 200
	};
	uint8_t out[N][LEN], in[N][LEN];
	struct fc_req *req[2 * N];
	struct fc_chan *c0, *c1;
	uint64_t until;
	int i;

	(void)state;
	need_pair();
	/* An emulated board whose program closed it counts as gone (its
	 * node down); one never opened keeps what comes for it. */
	if (!strncmp(names[1], "emu:", 4))
		skip_because("emulated boards keep messages until opened");
	rng_reset("late_receiver");
	for (i = 0; i < 2; i++) {
		fc_close(bd[i]);
		bd[i] = NULL;
	}
	setenv("FPGACOMM_CHAN_GREET", "1", 1);
	assert_ok(fc_open(&bd[0], names[0]));
	assert_ok(fc_chan_open(bd[0], world[1].rank, PORT + 4, 0, &c0));
	for (i = 0; i < N; i++) {
		rnd_fill(out[i], LEN);
		assert_ok(fc_chan_isend(c0, out[i], LEN, &req[i]));
	}
	/* nobody there: they wait (a board emulated here keeps them too) */
	until = (uint64_t)time(NULL) + 1;
	while ((uint64_t)time(NULL) <= until) {
		fc_progress(bd[0]);
		usleep(1000);
	}
	assert_int_equal(fc_req_test(req[N - 1], NULL), -EINPROGRESS);
	assert_ok(fc_open(&bd[1], names[1]));
	assert_ok(fc_chan_open(bd[1], world[0].rank, PORT + 4, 0, &c1));
	for (i = 0; i < N; i++)
		assert_ok(fc_chan_irecv(c1, in[i], LEN, &req[N + i]));
	wait_all(req, 2 * N);
	for (i = 0; i < N; i++)
		assert_same(in[i], out[i], LEN,
			    "a message sent before the "
			    "receiver opened its board");
	assert_ok(fc_chan_close(c0));
	assert_ok(fc_chan_close(c1));
}

/* ---- Rendezvous: a message announced before its receive ---- */

static void need_rndv(void)
{
	need_pair();
	if (strncmp(names[0], "emu:", 4) || strncmp(names[1], "emu:", 4))
		skip_because("rendezvous is on emulated boards only");
	if (getenv("FPGACOMM_RNDV_MIN") || getenv(PAIR_LAND_ENV))
		skip_because("the rendezvous threshold or wait is set");
}

enum {
	BIG = 1 << 20,
	SMALL1 = 1000,
	SMALL2 = 2000
};

/* Receive what send_three() sent, in order, and check it. */
static void recv_three(struct fc_chan *rx, uint8_t *out, struct fc_req **req)
{
	uint8_t *in = malloc(BIG + SMALL1 + SMALL2);
	size_t len[3] = { SMALL1, BIG, SMALL2 }, off = 0;
	int i;

	assert_non_null(in);
	memset(in, 0x5a, BIG + SMALL1 + SMALL2);
	for (i = 0; i < 3; off += len[i], i++)
		assert_ok(fc_chan_irecv(rx, in + off, len[i], &req[3 + i]));
	wait_all(req, 6);
	assert_same(in, out, BIG + SMALL1 + SMALL2,
		    "eager, rendezvous and eager messages, in order");
	free(in);
}

/* An eager message, a rendezvous one and another eager one on @tx. */
static uint8_t *send_three(struct fc_chan *tx, struct fc_req **req)
{
	uint8_t *out = malloc(BIG + SMALL1 + SMALL2);

	assert_non_null(out);
	rnd_fill(out, BIG + SMALL1 + SMALL2);
	assert_ok(fc_chan_isend(tx, out, SMALL1, &req[0]));
	assert_ok(fc_chan_isend(tx, out + SMALL1, BIG, &req[1]));
	assert_ok(fc_chan_isend(tx, out + SMALL1 + BIG, SMALL2, &req[2]));
	return out;
}

/*
 * A rendezvous message whose receive comes within the wait is not landed
 * in a library buffer (that would copy it twice, and end its send before
 * any receive): its send waits for the receive, then the data goes
 * straight there, in order with eager messages before and after it.
 */
static void test_rndv_waits_for_receive(void **state)
{
	struct fc_req *req[6];
	struct fc_chan *c0, *c1;
	uint64_t until;
	uint8_t *out;

	(void)state;
	need_rndv();
	rng_reset("rndv_waits");
	pair_reopen("pair", "60000000", NULL, true); /* a minute per MiB */
	assert_ok(fc_chan_open(bd[0], world[1].rank, PORT + 5, 0, &c0));
	assert_ok(fc_chan_open(bd[1], world[0].rank, PORT + 5, 0, &c1));
	out = send_three(c0, req);
	/* both libraries run (the pump), nobody asks: the send waits */
	until = now_ms() + 300;
	while (now_ms() < until)
		usleep(1000);
	assert_int_equal(fc_req_test(req[1], NULL), -EINPROGRESS);
	recv_three(c1, out, req);
	free(out);
	assert_ok(fc_chan_close(c0));
	assert_ok(fc_chan_close(c1));
	pair_reopen("pair", NULL, NULL, true);
}

/*
 * ... and one whose receive does not come is landed once the wait is
 * over, though nothing more arrives from its sender to look at it then
 * (from progress): its send ends without a receive, no sooner than the
 * wait, and the receive later gets it, in order.
 */
static void test_rndv_lands_after_wait(void **state)
{
	const uint64_t wait_ms = 30;
	struct fc_req *req[6];
	struct fc_chan *c0, *c1;
	uint64_t t0, deadline;
	uint8_t *out;
	int rc;

	(void)state;
	need_rndv();
	rng_reset("rndv_lands");
	pair_reopen("pair", "30000", NULL, true); /* 30 ms for 1 MiB */
	assert_ok(fc_chan_open(bd[0], world[1].rank, PORT + 6, 0, &c0));
	assert_ok(fc_chan_open(bd[1], world[0].rank, PORT + 6, 0, &c1));
	t0 = now_ms();
	out = send_three(c0, req);
	deadline = t0 + WAIT_MS;
	while ((rc = fc_req_test(req[1], NULL)) == -EINPROGRESS) {
		assert_true(now_ms() < deadline);
		usleep(200);
	}
	assert_ok(rc);
	req[1] = NULL; /* ended: wait_all() passes it */
	print_message("a 1 MiB message nobody asked for landed after %llu ms "
		      "(wait: %llu ms)\n",
		      (unsigned long long)(now_ms() - t0),
		      (unsigned long long)wait_ms);
	assert_true(now_ms() - t0 >= wait_ms);
	recv_three(c1, out, req);
	free(out);
	assert_ok(fc_chan_close(c0));
	assert_ok(fc_chan_close(c1));
	pair_reopen("pair", NULL, NULL, true);
}

/* A remote write into the peer's board memory, read back by the peer. */
static void test_put_board(void **state)
{
	enum {
		LEN = 10000
	};
	struct fc_mem *src, *back;
	struct fc_xfer x;

	(void)state;
	need_pair();
	rng_reset("put_board");
	assert_ok(fc_mem_alloc(bd[0], LEN, 0, &src));
	assert_ok(fc_mem_alloc(bd[1], LEN, 0, &back));
	rnd_fill(src->addr, LEN);
	memset(back->addr, 0, LEN);
	assert_ok(fc_put(bd[0],
			 FC_FABRIC_ADDR(world[1].node_id, FC_REGION_BOARD,
					BOARD_OFF),
			 src, 0, LEN, WAIT_MS));
	x = xfer(fc_board(BOARD_OFF), fc_host(back, 0), LEN);
	assert_ok(fc_dma_run(bd[1], &x, 1, WAIT_MS));
	assert_same(back->addr, src->addr, LEN, "put into board memory");
	assert_ok(fc_mem_free(bd[0], src));
	assert_ok(fc_mem_free(bd[1], back));
}

/*
 * A file standing for GPU memory on board 1: the VM fixture's dma-buf
 * behind the driver, a memfd on emulated boards; mapped in *@map.
 */
static int peer_file(size_t len, uint8_t **map)
{
	struct fcvm_dmabuf_create c = { .size = len };
	int fd, fx;

	if (!strncmp(names[1], "emu:", 4)) {
		fd = memfd_create("pw", MFD_CLOEXEC);
		assert_true(fd >= 0);
		assert_int_equal(ftruncate(fd, (off_t)len), 0);
	} else {
		fx = open("/dev/fcvm_dmabuf", O_RDWR | O_CLOEXEC);
		if (fx < 0)
			skip_because(
				"no /dev/fcvm_dmabuf (the test VM's fixture)");
		assert_int_equal(ioctl(fx, FCVM_DMABUF_CREATE, &c), 0);
		close(fx);
		fd = c.fd;
	}
	*map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(*map != MAP_FAILED);
	return fd;
}

/* Bracket CPU reads of a dma-buf (a no-op error on a memfd). */
static void peer_sync(int fd, uint64_t flags)
{
	struct dma_buf_sync s = { .flags = flags | DMA_BUF_SYNC_RW };

	(void)ioctl(fd, DMA_BUF_IOCTL_SYNC, &s);
}

/*
 * Imported memory of board 1 in its peer window, through the library on
 * either backend (the driver's PEER_WINDOW behind the kernel): board 0's
 * put lands there and is read back through the file's own mapping, and
 * by a get where the boards serve read requests; once freed, a put by the
 * same address fails with -EACCES and changes nothing.
 */
static void test_put_peer_window(void **state)
{
	enum {
		LEN = 4096,
		N = 1000,
		OFF = 8
	};
	uint8_t *map, old[N];
	struct fc_mem *pm, *src, *back;
	struct fc_info bi;
	uint64_t addr;
	int fd, rc;

	(void)state;
	need_pair();
	assert_ok(fc_query(bd[1], &bi));
	rng_reset("put_peer_window");
	fd = peer_file(LEN, &map);
	assert_ok(fc_peer_import(bd[1], fd, 0, LEN, 0, &pm));
	rc = fc_mem_fabric_addr(bd[1], pm, 0, &addr);
	if (rc == -EOPNOTSUPP && !(bi.caps & FC_CAP_PEER_WINDOW)) {
		assert_ok(fc_mem_free(bd[1], pm));
		close(fd);
		skip_because("board 1 has no peer window");
	}
	assert_ok(rc);
	assert_int_equal(FC_FABRIC_REGION(addr), FC_REGION_PEER);
	assert_int_equal(FC_FABRIC_NODE(addr), world[1].node_id);
	assert_ok(fc_mem_alloc(bd[0], LEN, 0, &src));
	assert_ok(fc_mem_alloc(bd[0], LEN, 0, &back));
	rnd_fill(src->addr, LEN);
	assert_ok(fc_put(bd[0], addr + OFF, src, 0, N, WAIT_MS));
	peer_sync(fd, DMA_BUF_SYNC_START);
	assert_same(map + OFF, src->addr, N, "put into board 1's window");
	memcpy(old, map + OFF, N);
	peer_sync(fd, DMA_BUF_SYNC_END);
	rc = fc_get(bd[0], fc_host(back, 0), addr + OFF, N, WAIT_MS);
	if (rc != -EOPNOTSUPP) {
		assert_ok(rc);
		assert_same(back->addr, src->addr, N, "get from the window");
	}

	assert_ok(fc_mem_free(bd[1], pm));
	rnd_fill(src->addr, LEN);
	assert_int_equal(fc_put(bd[0], addr + OFF, src, 0, N, WAIT_MS),
			 -EACCES);
	peer_sync(fd, DMA_BUF_SYNC_START);
	assert_same(map + OFF, old, N, "nothing lands once freed");
	peer_sync(fd, DMA_BUF_SYNC_END);
	assert_ok(fc_mem_free(bd[0], src));
	assert_ok(fc_mem_free(bd[0], back));
	munmap(map, LEN);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_world),
		cmocka_unit_test(test_channel_both_ways),
		cmocka_unit_test(test_channel_queue),
		cmocka_unit_test(test_credits_unread),
		cmocka_unit_test(test_put_board),
		cmocka_unit_test(test_put_peer_window),
		cmocka_unit_test(test_rndv_waits_for_receive),
		cmocka_unit_test(test_rndv_lands_after_wait),
		cmocka_unit_test(test_late_receiver),
	};

	seed = (uint64_t)getpid() * 2654435761u;
	return harness_run(tests, setup, pair_teardown);
}
