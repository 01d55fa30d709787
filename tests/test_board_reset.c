// SPDX-License-Identifier: MIT
/*
 * What a board reset (BOARD_RESET) does, as docs/hardware.md section 5
 * settles it: the running chain is aborted and the library or driver ends
 * it with -ECANCELED at once (not at a timeout), the next chain runs; the
 * engines' RESET_ACK and the interrupt counters stay; channel endpoints
 * keep TAIL, DROPS and CTRL (SEEN shows CTRL), so messages that arrived
 * before the reset, unread, are received after it, and later ones too.
 *
 * Two boards of one fabric driven from one process, as in test_fabric_pair:
 * on the host two emulated boards of a cluster this program makes; in the
 * VM (FPGACOMM_TEST_PAIR="DEV0 DEV1") two boards behind fpgacomm.ko, where
 * writing BOARD_RESET needs CAP_SYS_RAWIO (skipped without it).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "pair.h" /* the two boards (emu/ makes their cluster) */

#define PORT	     11
#define CHAIN_LEN    (64u << 10)
#define MSGS	     3
#define MSG_LEN	     1000
#define STILL_ROUNDS 200

static int setup(void **state)
{
	(void)state;
	if (pair_open("breset"))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pair_close_clean();
	return 0;
}

/* Reset board @b as a bring-up tool does; skip where we may not. */
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
		usleep(100);
	}
}

/*
 * A chain stalled on the board when the board is reset ends with
 * -ECANCELED straight away; what the reset must leave alone is left.
 */
static void test_reset_ends_running_chain(void **state)
{
	struct fc_mem *a, *back;
	uint32_t rack, irq;
	struct fc_xfer x;
	uint64_t ticket;

	(void)state;
	pair_need_knobs();
	rack = rd(0, FC_DMA_REG(0, FC_DMA_RESET_ACK));
	irq = rd(0, FC_REG_IRQ_COUNT(FC_IRQ_VEC_DMA));
	rng_reset("reset_ends_running_chain");
	assert_ok(fc_mem_alloc(bd[0], CHAIN_LEN, 0, &a));
	assert_ok(fc_mem_alloc(bd[0], CHAIN_LEN, 0, &back));
	rnd_fill(a->addr, CHAIN_LEN);
	assert_ok(fc_reg_write(bd[0], FC_EMU_FAULT_DMA_STALL, 1));
	x = xfer(fc_host(a, 0), fc_board(0), CHAIN_LEN);
	assert_ok(fc_dma_submit(bd[0], &x, 1, 0, &ticket));
	assert_rc(fc_dma_wait(bd[0], ticket, 50), -ETIMEDOUT);
	board_reset(0);
	/* Well before the driver's dma_timeout_ms (300 ms at least). */
	assert_rc(fc_dma_wait(bd[0], ticket, 200), -ECANCELED);
	assert_int_equal(rd(0, FC_DMA_REG(0, FC_DMA_RESET_ACK)), rack);
	assert_true(rd(0, FC_REG_IRQ_COUNT(FC_IRQ_VEC_DMA)) - irq < 1000);
	assert_int_equal(rd(0, FC_DMA_REG(0, FC_DMA_STATUS)),
			 FC_DMA_STATUS_IDLE);
	assert_int_equal(rd(0, FC_DMA_REG(0, FC_DMA_ERROR)), FC_DMA_ERR_NONE);
	/* The engine takes the next chain. */
	assert_ok(fc_reg_write(bd[0], FC_EMU_FAULT_DMA_STALL, 0));
	assert_ok(fc_dma_run(bd[0], &x, 1, WAIT_MS));
	x = xfer(fc_board(0), fc_host(back, 0), CHAIN_LEN);
	assert_ok(fc_dma_run(bd[0], &x, 1, WAIT_MS));
	assert_same(back->addr, a->addr, CHAIN_LEN, "a chain after the reset");
	assert_ok(fc_mem_free(bd[0], a));
	assert_ok(fc_mem_free(bd[0], back));
}

/* Messages unread across the receiver's reset, and one sent after it. */
static void test_reset_keeps_rings(void **state)
{
	uint32_t tail_off = FC_CHAN_REG(PORT, FC_CHAN_TAIL), tail, v;
	uint8_t out[MSGS + 1][MSG_LEN], in[MSG_LEN + 1];
	uint64_t deadline = now_ms() + WAIT_MS;
	struct fc_chan *tx, *rx;
	uint32_t drops, ctrl;
	unsigned int i, still;
	size_t n;

	(void)state;
	pair_need_knobs();
	rng_reset("reset_keeps_rings");
	assert_ok(fc_chan_open(bd[0], world[1].rank, PORT, 0, &tx));
	assert_ok(fc_chan_open(bd[1], world[0].rank, PORT, 0, &rx));
	/* A library on the event queue: its TAIL counts what landed. */
	if (rd(1, FC_CHAN_REG(PORT, FC_CHAN_CTRL)) & FC_CHAN_CTRL_EQ)
		tail_off = FC_EQ_TAIL;
	rnd_fill(out, sizeof(out));
	/* TAIL away from its power-up 0 first: messages sent and read. */
	for (i = 0; i < MSGS; i++) {
		assert_ok(fc_chan_send(tx, out[i], MSG_LEN, WAIT_MS));
		fc_progress(bd[0]);
		assert_ok(fc_chan_recv(rx, in, sizeof(in), &n, WAIT_MS));
	}
	assert_true(rd(1, tail_off) != 0);
	for (i = 0; i < MSGS; i++)
		assert_ok(fc_chan_send(tx, out[i], MSG_LEN, WAIT_MS));
	/* Let them land where they will without the receiver reading. */
	for (tail = rd(1, tail_off), still = 0; still < STILL_ROUNDS; still++) {
		fc_progress(bd[0]);
		usleep(200);
		v = rd(1, tail_off);
		if (v != tail) {
			tail = v;
			still = 0;
		}
		assert_true(now_ms() < deadline);
	}
	drops = rd(1, FC_CHAN_REG(PORT, FC_CHAN_DROPS));
	ctrl = rd(1, FC_CHAN_REG(PORT, FC_CHAN_CTRL));
	assert_true(ctrl & FC_CHAN_CTRL_ENABLE);
	board_reset(1);
	assert_int_equal(rd(1, tail_off), tail);
	assert_int_equal(rd(1, FC_CHAN_REG(PORT, FC_CHAN_DROPS)), drops);
	assert_int_equal(rd(1, FC_CHAN_REG(PORT, FC_CHAN_CTRL)), ctrl);
	if (rd(1, FC_REG_CAPS) & FC_CAP_CHAN_SEEN)
		assert_int_equal(rd(1, FC_CHAN_REG(PORT, FC_CHAN_SEEN)), ctrl);
	assert_ok(fc_chan_send(tx, out[MSGS], MSG_LEN, WAIT_MS));
	for (i = 0; i <= MSGS; i++) {
		n = 0;
		/* fc_chan_recv drives the receiver; the sender's board too */
		fc_progress(bd[0]);
		assert_ok(fc_chan_recv(rx, in, sizeof(in), &n, WAIT_MS));
		assert_int_equal(n, MSG_LEN);
		assert_same(in, out[i], MSG_LEN,
			    i < MSGS ? "a message unread across the reset" :
				       "a message sent after the reset");
	}
	assert_ok(fc_chan_close(tx));
	assert_ok(fc_chan_close(rx));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reset_ends_running_chain),
		cmocka_unit_test(test_reset_keeps_rings),
	};
	int rc;

	seed = (uint64_t)getpid() * 2654435761u;
	print_message("test_board_reset: what BOARD_RESET does to chains and "
		      "channel endpoints\n");
	rc = cmocka_run_group_tests_name("board_reset", tests, setup, teardown);
	if (!rc && n_skipped == sizeof(tests) / sizeof(tests[0]))
		return EXIT_SKIP;
	return rc;
}
