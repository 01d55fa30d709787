// SPDX-License-Identifier: MIT
/*
 * A message cut off in the middle never reaches a receiver glued onto the
 * next one. The sender's engine is frozen in the middle of a large message
 * (FC_EMU_FAULT_DMA_STALL) once part of it has reached the receiver, then
 * reset (fc_dma_reset): the board owes the receiver an ABORT for the part
 * (hw.h FC_PKT_T_ABORT); so it does when the whole board is reset
 * (BOARD_RESET). The next message, sent through the PIO window or
 * as a chain, must arrive whole and alone in the receive that the cut-off
 * part had started to fill.
 *
 * Two boards of one fabric driven from one process, as in test_fabric_pair:
 * on the host two emulated boards of a cluster this program makes; in the
 * VM (FPGACOMM_TEST_PAIR="DEV0 DEV1") two boards behind fpgacomm.ko.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "pair.h" /* the two boards (emu/ makes their cluster) */

#define PORT	     9
#define BIG	     (512u << 10) /* far more than the fabric holds */
#define SMALL	     100	  /* one PIO message */
#define CHAINED	     4000	  /* above the PIO limit: a chain */
#define LANDED_MIN   64		  /* packets of the cut message seen */
#define STILL_ROUNDS 200	  /* rounds without news: fabric empty */

static struct fc_chan *tx, *rx;

static int setup(void **state)
{
	(void)state;
	/* Every message eager: the cut is in a channel message's packets. */
	setenv("FPGACOMM_RNDV_MIN", "0", 1);
	/* One engine in process (through the driver, the board's). */
	setenv("FPGACOMM_EMU_ENGINES", "1", 1);
	if (pair_open("abort"))
		return -1;
	if (bd[0] && (fc_chan_open(bd[0], world[1].rank, PORT, 0, &tx) ||
		      fc_chan_open(bd[1], world[0].rank, PORT, 0, &rx)))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (tx)
		fc_chan_close(tx);
	if (rx)
		fc_chan_close(rx);
	pair_close_clean();
	return 0;
}

/* One round for both boards: emulated ones move only when called. */
static void drive(void)
{
	fc_progress(bd[0]);
	fc_progress(bd[1]);
	usleep(200);
}

/* Cut by a board reset (BOARD_RESET) rather than fc_dma_reset(). */
static bool by_board_reset;

static void board_reset(int b)
{
	uint32_t ack = rd(b, FC_REG_BOARD_RESET_ACK);
	uint64_t deadline = now_ms() + WAIT_MS;
	int ret;

	ret = fc_reg_write(bd[b], FC_REG_BOARD_RESET, ack + 1);
	if (ret == -EPERM)
		skip_because("writing BOARD_RESET needs CAP_SYS_RAWIO");
	assert_ok(ret);
	while (rd(b, FC_REG_BOARD_RESET_ACK) != ack + 1) {
		fc_progress(bd[b]);
		assert_true(now_ms() < deadline);
	}
}

/* Bytes board 0's engines have moved: the library picks the engine (a
 * lane per engine, tests/README.md), through the driver too. */
static uint32_t sent_bytes(void)
{
	uint32_t n = rd(0, FC_REG_NUM_DMA), sum = 0, e;

	for (e = 0; e < n && e < FC_DMA_MAX_ENGINES; e++)
		sum += rd(0, FC_DMA_REG(e, FC_DMA_BYTES_LO));
	return sum;
}

/* Register @off of board @reg_b, or with @reg_b < 0 sent_bytes(). */
static uint32_t watched(int reg_b, uint32_t off)
{
	return reg_b < 0 ? sent_bytes() : rd(reg_b, off);
}

/* Drive @b alone until @off of board @reg_b (sent_bytes() if @reg_b < 0)
 * is still for a while. */
static uint32_t drive_until_still(int b, int reg_b, uint32_t off,
				  uint64_t deadline)
{
	uint32_t v = watched(reg_b, off);
	unsigned int still;

	for (still = 0; still < STILL_ROUNDS; still++) {
		if (b < 0) {
			drive();
		} else {
			fc_progress(bd[b]);
			usleep(200);
		}
		if (watched(reg_b, off) != v) {
			v = watched(reg_b, off);
			still = 0;
		}
		assert_true(now_ms() < deadline);
	}
	return v;
}

/* What counts the receiver's landed packets: its port's ring TAIL, or
 * that of the event queue the port goes to. */
static uint32_t landed_reg(void)
{
	return rd(1, FC_CHAN_REG(PORT, FC_CHAN_CTRL)) & FC_CHAN_CTRL_EQ ?
		       FC_EQ_TAIL :
		       FC_CHAN_REG(PORT, FC_CHAN_TAIL);
}

/*
 * Start a large message and cut it off in the middle by an engine reset,
 * the receive @r posted for it (or none: the library keeps the part in a
 * buffer of its own). @frozen: part of it reaches @r, the
 * sender's engine is frozen (FC_EMU_FAULT_DMA_STALL) and the fabric
 * empties before the reset. Otherwise the receiver does not take any of
 * it: the sender's engine stops on a full fabric (its injection queue
 * full, no room for the ABORT), is reset there, and then the receiver
 * drains a little, which makes room behind the sender's board but does
 * not run it.
 * RETURN VALUE: packets of the message that the receiver's ring took
 * before the reset.
 */
static uint32_t cut_message(struct fc_req *r, bool frozen)
{
	uint32_t tail_off = landed_reg();
	uint32_t tail0 = rd(1, tail_off), tail, bytes0 = sent_bytes();
	uint64_t deadline = now_ms() + WAIT_MS;
	uint8_t *big = malloc(BIG);
	struct fc_req *s;
	int i;

	assert_non_null(big);
	rnd_fill(big, BIG);
	assert_ok(fc_chan_isend(tx, big, BIG, &s));
	if (frozen) {
		while (rd(1, tail_off) - tail0 < LANDED_MIN) {
			drive();
			assert_true(now_ms() < deadline);
		}
		assert_ok(fc_reg_write(bd[0], FC_EMU_FAULT_DMA_STALL, 1));
		tail = drive_until_still(-1, 1, tail_off, deadline);
		/* The receive holds the first part; the rest never comes. */
		if (r)
			assert_rc(fc_req_test(r, NULL), -EINPROGRESS);
	} else {
		drive_until_still(0, -1, 0, deadline);
		tail = rd(1, tail_off);
	}
	assert_rc(fc_req_test(s, NULL), -EINPROGRESS);
	assert_true(sent_bytes() != bytes0);
	assert_true(sent_bytes() - bytes0 < BIG);
	if (by_board_reset)
		board_reset(0);
	else
		assert_ok(fc_dma_reset(bd[0]));
	assert_ok(fc_reg_write(bd[0], FC_EMU_FAULT_DMA_STALL, 0));
	assert_rc(fc_req_wait(s, WAIT_MS, NULL), -ECANCELED);
	if (!frozen)
		for (i = 0; i < 20; i++)
			fc_progress(bd[1]);
	free(big);
	return tail - tail0;
}

/* Drive both boards until @r ends; it must hold @want exactly. */
static void expect(struct fc_req *r, const uint8_t *got, const uint8_t *want,
		   size_t len, const char *what)
{
	uint64_t deadline = now_ms() + WAIT_MS;
	size_t n = 0;
	int ret;

	while ((ret = fc_req_test(r, &n)) == -EINPROGRESS) {
		drive();
		if (now_ms() > deadline)
			fail_msg("%s: no message", what);
	}
	if (ret)
		fail_msg("%s: the receive ended with %s", what,
			 fc_strerror(ret));
	if (n != len)
		fail_msg("%s: a message of %zu bytes where %zu were sent "
			 "(the cut-off part glued onto it?)",
			 what, n, len);
	assert_same(got, want, len, what);
}

/*
 * The next message goes through the PIO window, a path beside the engine
 * that was cut off: it must not overtake the engine's ABORT.
 */
static void cut_then_pio(bool frozen)
{
	uint8_t *in = malloc(BIG), out[SMALL];
	uint32_t pio0, landed;
	struct fc_req *r;

	pair_need_knobs();
	assert_non_null(in);
	rnd_fill(out, sizeof(out));
	assert_ok(fc_chan_irecv(rx, in, BIG, &r));
	landed = cut_message(r, frozen);
	pio0 = rd(0, FC_PIO_TAIL);
	assert_ok(fc_chan_send(tx, out, sizeof(out), WAIT_MS));
	if (rd(0, FC_PIO_TAIL) == pio0)
		print_message(
			"the small message went as a chain: no PIO window here\n");
	expect(r, in, out, sizeof(out), "after a cut, a PIO message");
	print_message("cut after %u packets had landed; the PIO message came "
		      "alone\n",
		      landed);
	free(in);
}

static void test_frozen_cut_then_pio(void **state)
{
	(void)state;
	rng_reset("frozen_cut_then_pio");
	cut_then_pio(true);
}

static void test_backed_up_cut_then_pio(void **state)
{
	(void)state;
	rng_reset("backed_up_cut_then_pio");
	cut_then_pio(false);
}

/* The same with a chain on the engine that was reset. */
static void test_cut_then_chain(void **state)
{
	uint8_t *in = malloc(BIG), *out = malloc(CHAINED);
	uint32_t landed;
	struct fc_req *r;

	(void)state;
	pair_need_knobs();
	rng_reset("cut_then_chain");
	assert_non_null(in);
	assert_non_null(out);
	rnd_fill(out, CHAINED);
	assert_ok(fc_chan_irecv(rx, in, BIG, &r));
	landed = cut_message(r, true);
	assert_ok(fc_chan_send(tx, out, CHAINED, WAIT_MS));
	expect(r, in, out, CHAINED, "after a cut, a chained message");
	print_message("cut after %u packets; the chained message came alone\n",
		      landed);
	free(out);
	free(in);
}

/* Two cuts in a row, then both ways in order: nothing left over. */
static void test_cut_twice_then_both(void **state)
{
	uint8_t *in = malloc(BIG), *in2 = malloc(BIG), out[SMALL];
	uint8_t *out2 = malloc(CHAINED);
	struct fc_req *r, *r2;

	(void)state;
	pair_need_knobs();
	rng_reset("cut_twice");
	assert_non_null(in);
	assert_non_null(in2);
	assert_non_null(out2);
	rnd_fill(out, sizeof(out));
	rnd_fill(out2, CHAINED);
	assert_ok(fc_chan_irecv(rx, in, BIG, &r));
	assert_ok(fc_chan_irecv(rx, in2, BIG, &r2));
	cut_message(r, true);
	cut_message(r, false);
	assert_ok(fc_chan_send(tx, out2, CHAINED, WAIT_MS));
	assert_ok(fc_chan_send(tx, out, sizeof(out), WAIT_MS));
	expect(r, in, out2, CHAINED, "after two cuts, a chained message");
	expect(r2, in2, out, sizeof(out), "then a PIO message");
	free(out2);
	free(in2);
	free(in);
}

/* The sender's whole board reset in the middle of the message. */
static void test_board_reset_cut_then_pio(void **state)
{
	(void)state;
	rng_reset("board_reset_cut_then_pio");
	by_board_reset = true;
	cut_then_pio(true);
	cut_then_pio(false);
	by_board_reset = false;
}

/*
 * The sender closes its board in the middle of the message (fc_close
 * resets its engine) and opens it again: the receiver is told of the cut
 * before the board goes, and the new handle's first message comes alone.
 */
static void test_close_mid_message(void **state)
{
	uint32_t tail_off, tail0;
	uint8_t *big = malloc(BIG), *in = malloc(BIG), out[SMALL];
	uint64_t deadline = now_ms() + WAIT_MS;
	struct fc_req *s, *r;

	(void)state;
	pair_need_knobs();
	tail_off = landed_reg();
	rng_reset("close_mid_message");
	assert_non_null(big);
	assert_non_null(in);
	rnd_fill(big, BIG);
	rnd_fill(out, sizeof(out));
	assert_ok(fc_chan_irecv(rx, in, BIG, &r));
	tail0 = rd(1, tail_off);
	assert_ok(fc_chan_isend(tx, big, BIG, &s));
	while (rd(1, tail_off) - tail0 < LANDED_MIN) {
		drive();
		assert_true(now_ms() < deadline);
	}
	assert_ok(fc_reg_write(bd[0], FC_EMU_FAULT_DMA_STALL, 1));
	drive_until_still(-1, 1, tail_off, deadline);
	assert_rc(fc_req_test(r, NULL), -EINPROGRESS);
	assert_rc(fc_chan_close(tx), -EBUSY); /* s is out */
	tx = NULL;
	assert_ok(fc_close(bd[0])); /* ends s and the channel */
	bd[0] = NULL;
	assert_ok(fc_open(&bd[0], names[0]));
	/* Behind the driver the board stays, and so does its knob. */
	assert_ok(fc_reg_write(bd[0], FC_EMU_FAULT_DMA_STALL, 0));
	assert_ok(fc_chan_open(bd[0], world[1].rank, PORT, 0, &tx));
	assert_ok(fc_chan_send(tx, out, sizeof(out), WAIT_MS));
	expect(r, in, out, sizeof(out), "after a close mid-message");
	free(in);
	free(big);
}

/* No receive posted: the part waits in the library's buffer, and goes. */
static void test_cut_unposted(void **state)
{
	uint8_t out[SMALL], in[SMALL + 1];
	size_t n = 0;

	(void)state;
	pair_need_knobs();
	rng_reset("cut_unposted");
	rnd_fill(out, sizeof(out));
	cut_message(NULL, true);
	assert_ok(fc_chan_send(tx, out, sizeof(out), WAIT_MS));
	assert_ok(fc_chan_recv(rx, in, sizeof(in), &n, WAIT_MS));
	assert_int_equal(n, sizeof(out));
	assert_same(in, out, sizeof(out), "after a cut, unposted");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frozen_cut_then_pio),
		cmocka_unit_test(test_backed_up_cut_then_pio),
		cmocka_unit_test(test_cut_then_chain),
		cmocka_unit_test(test_cut_twice_then_both),
		cmocka_unit_test(test_cut_unposted),
		cmocka_unit_test(test_close_mid_message),
		cmocka_unit_test(test_board_reset_cut_then_pio),
	};
	int rc;

	seed = (uint64_t)getpid() * 2654435761u;
	print_message("test_chan_abort: a message cut off mid-way never glued "
		      "onto the next\n");
	rc = cmocka_run_group_tests_name("chan_abort", tests, setup, teardown);
	if (!rc && n_skipped == sizeof(tests) / sizeof(tests[0]))
		return EXIT_SKIP;
	return rc;
}
