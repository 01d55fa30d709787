// SPDX-License-Identifier: MIT
/*
 * test_emu_model: the emulated board's DMA engine at register level, with
 * hand-built descriptor tables: every error code, "a bad chain moves no
 * data", the doorbell and reset sequences, counters, and interrupts.
 */
#include <endian.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <fpgacomm/hw.h>
#include "fcemu.h" /* emu/: the board model under test */

#define HOST_BUS  0x10000000ull /* bus address of host[0] */
#define HOST_LEN  (1u << 20)
#define TABLE_OFF 0	/* descriptor table at host[0] */
#define DATA_OFF  65536 /* data area in host memory */
#define BOARD_MEM (4u << 20)

struct rig {
	struct fcemu *emu;
	uint8_t *host; /* the only host memory the board may reach */
	uint8_t *board;
	unsigned int irqs[FC_IRQ_VECTORS];
	uint32_t doorbell;
	uint32_t reset;
};

static void *translate(void *ctx, uint64_t bus, uint64_t len)
{
	struct rig *r = ctx;

	if (bus < HOST_BUS || bus - HOST_BUS > HOST_LEN ||
	    len > HOST_LEN - (bus - HOST_BUS))
		return NULL;
	return r->host + (bus - HOST_BUS);
}

static void raise_irq(void *ctx, unsigned int vector)
{
	struct rig *r = ctx;

	r->irqs[vector]++;
}

static const struct fcemu_host_ops ops = {
	.translate = translate,
	.raise_irq = raise_irq,
};

static uint32_t rd(struct rig *r, uint32_t off)
{
	return fcemu_bar0(r->emu)[off / 4];
}

static void wr(struct rig *r, uint32_t off, uint32_t val)
{
	fcemu_bar0(r->emu)[off / 4] = val;
	fcemu_notice(r->emu);
}

static int setup(void **state)
{
	struct fcemu_config cfg;
	struct rig *r = calloc(1, sizeof(*r));
	unsigned int i;

	assert_non_null(r);
	r->host = malloc(HOST_LEN);
	assert_non_null(r->host);
	memset(r->host, 0, HOST_LEN);
	fcemu_config_default(&cfg);
	cfg.board_mem_size = BOARD_MEM;
	cfg.node_id = 5;
	assert_int_equal(fcemu_create(&r->emu, &cfg, &ops, r), 0);
	r->board = fcemu_board_mem(r->emu, NULL);
	for (i = 0; i < BOARD_MEM; i++)
		r->board[i] = (uint8_t)((i * 2654435761u) >> 24);
	for (i = DATA_OFF; i < HOST_LEN; i++)
		r->host[i] = (uint8_t)(i * 13 + 3);
	*state = r;
	return 0;
}

static int teardown(void **state)
{
	struct rig *r = *state;

	fcemu_destroy(r->emu);
	free(r->host);
	free(r);
	return 0;
}

static struct fc_hw_desc *desc(struct rig *r, unsigned int i)
{
	return (struct fc_hw_desc *)(r->host + TABLE_OFF) + i;
}

static void set_desc(struct rig *r, unsigned int i, uint32_t len,
		     unsigned int src_space, uint64_t src,
		     unsigned int dst_space, uint64_t dst, uint16_t flags)
{
	struct fc_hw_desc *d = desc(r, i);

	memset(d, 0, sizeof(*d));
	d->len = htole32(len);
	d->flags = htole16(flags);
	d->src_space = (uint8_t)src_space;
	d->dst_space = (uint8_t)dst_space;
	d->src = htole64(src);
	d->dst = htole64(dst);
}

/* Kick a chain of @count at @table_bus and run the engine until it ends. */
static void run_chain(struct rig *r, uint64_t table_bus, uint32_t count)
{
	unsigned int rounds = 0;

	wr(r, FC_DMA_REG(0, FC_DMA_DESC_LO), (uint32_t)table_bus);
	wr(r, FC_DMA_REG(0, FC_DMA_DESC_HI), (uint32_t)(table_bus >> 32));
	wr(r, FC_DMA_REG(0, FC_DMA_DESC_COUNT), count);
	wr(r, FC_DMA_REG(0, FC_DMA_DOORBELL), ++r->doorbell);
	while (fcemu_busy(r->emu)) {
		fcemu_progress(r->emu, 4096);
		assert_true(++rounds < 1000000);
	}
	assert_int_equal(rd(r, FC_DMA_REG(0, FC_DMA_DONE_SEQ)), r->doorbell);
}

static uint32_t dma_error(struct rig *r)
{
	return rd(r, FC_DMA_REG(0, FC_DMA_ERROR));
}

static void reset_engine(struct rig *r)
{
	wr(r, FC_DMA_REG(0, FC_DMA_RESET), ++r->reset);
	assert_int_equal(rd(r, FC_DMA_REG(0, FC_DMA_RESET_ACK)), r->reset);
	assert_int_equal(rd(r, FC_DMA_REG(0, FC_DMA_STATUS)),
			 FC_DMA_STATUS_IDLE);
}

static void test_identity(void **state)
{
	struct rig *r = *state;

	assert_int_equal(rd(r, FC_REG_ID), FC_HW_ID_MAGIC);
	assert_int_equal(rd(r, FC_REG_VERSION), FC_HW_VERSION);
	assert_true(rd(r, FC_REG_CAPS) & FC_CAP_DMA);
	assert_true(rd(r, FC_REG_CAPS) & FC_CAP_EMULATED);
	assert_int_equal(rd(r, FC_REG_NODE_ID), 5);
	assert_int_equal(rd(r, FC_REG_MEM_SIZE_LO), BOARD_MEM);
	assert_int_equal(rd(r, FC_REG_MEM_SIZE_HI), 0);
	assert_int_equal(rd(r, FC_EMU_MAGIC), FC_EMU_MAGIC_VALUE);
	wr(r, FC_REG_SCRATCH, 0x12345678);
	assert_int_equal(rd(r, FC_REG_SCRATCH_ECHO), ~0x12345678u);

	/* trapped host writes to board-owned registers are dropped */
	fcemu_host_write(r->emu, FC_REG_ID, 5);
	fcemu_host_write(r->emu, FC_DMA_REG(0, FC_DMA_DONE_SEQ), 5);
	fcemu_host_write(r->emu, FC_REG_SCRATCH + 1, 5);
	fcemu_host_write(r->emu, FC_BAR0_SIZE, 5);
	assert_int_equal(rd(r, FC_REG_ID), FC_HW_ID_MAGIC);
	assert_int_equal(rd(r, FC_DMA_REG(0, FC_DMA_DONE_SEQ)), 0);
	fcemu_host_write(r->emu, FC_REG_SCRATCH, 9);
	assert_int_equal(rd(r, FC_REG_SCRATCH_ECHO), ~9u);
	assert_true(fcemu_host_writable(FC_DMA_REG(3, FC_DMA_DOORBELL)));
	assert_false(fcemu_host_writable(FC_DMA_REG(3, FC_DMA_STATUS)));
	assert_true(fcemu_host_writable(FC_REG_IRQ_ACK(3)));
	assert_false(fcemu_host_writable(FC_REG_IRQ_COUNT(3)));
}

static void test_good_chain(void **state)
{
	struct rig *r = *state;

	/* host -> board, board -> board, board -> host via a fabric address */
	set_desc(r, 0, 1000, FC_SPACE_HOST, HOST_BUS + DATA_OFF, FC_SPACE_BOARD,
		 4096, 0);
	set_desc(r, 1, 1000, FC_SPACE_BOARD, 4096, FC_SPACE_BOARD, 8191, 0);
	set_desc(r, 2, 1000, FC_SPACE_FABRIC,
		 FC_FABRIC_ADDR(5, FC_REGION_BOARD, 8191), FC_SPACE_HOST,
		 HOST_BUS + DATA_OFF + 4096, FC_DESC_F_EOC | FC_DESC_F_IRQ);
	wr(r, FC_DMA_REG(0, FC_DMA_IRQ_ENABLE), FC_DMA_IRQ_ALL);
	wr(r, FC_REG_IRQ_ENABLE, 1u << FC_IRQ_VEC_DMA);
	run_chain(r, HOST_BUS + TABLE_OFF, 3);

	assert_int_equal(rd(r, FC_DMA_REG(0, FC_DMA_STATUS)),
			 FC_DMA_STATUS_IDLE);
	assert_int_equal(dma_error(r), FC_DMA_ERR_NONE);
	assert_memory_equal(r->host + DATA_OFF, r->board + 4096, 1000);
	assert_memory_equal(r->host + DATA_OFF, r->host + DATA_OFF + 4096,
			    1000);
	assert_int_equal(rd(r, FC_DMA_REG(0, FC_DMA_DESC_DONE)), 3);
	assert_int_equal(rd(r, FC_DMA_REG(0, FC_DMA_CHAINS_DONE)), 1);
	assert_int_equal(rd(r, FC_DMA_REG(0, FC_DMA_DOORBELLS)), 1);
	assert_int_equal(rd(r, FC_DMA_REG(0, FC_DMA_BYTES_LO)), 3000);
	/* one IRQ for the F_IRQ descriptor, one for the chain's end */
	assert_int_equal(r->irqs[FC_IRQ_VEC_DMA], 2);
	assert_int_equal(rd(r, FC_REG_IRQ_COUNT(FC_IRQ_VEC_DMA)), 2);
}

static void test_full_chain_one_doorbell(void **state)
{
	struct rig *r = *state;
	unsigned int i;

	for (i = 0; i < FC_DMA_MAX_CHAIN; i++)
		set_desc(r, i, 512, FC_SPACE_HOST,
			 HOST_BUS + DATA_OFF + 512 * i, FC_SPACE_BOARD, 512 * i,
			 i == FC_DMA_MAX_CHAIN - 1 ? FC_DESC_F_EOC : 0);
	run_chain(r, HOST_BUS + TABLE_OFF, FC_DMA_MAX_CHAIN);
	assert_int_equal(dma_error(r), FC_DMA_ERR_NONE);
	assert_memory_equal(r->host + DATA_OFF, r->board,
			    512 * FC_DMA_MAX_CHAIN);
	assert_int_equal(rd(r, FC_DMA_REG(0, FC_DMA_DOORBELLS)), 1);
	assert_int_equal(rd(r, FC_DMA_REG(0, FC_DMA_DESC_DONE)),
			 FC_DMA_MAX_CHAIN);
}

/*
 * Run a chain whose descriptor @bad is broken: the engine must stop with
 * @code and ERR_INDEX == bad, and no byte of either memory may change.
 */
static void expect_refused(struct rig *r, uint64_t table_bus, uint32_t count,
			   uint32_t code, uint32_t bad)
{
	uint8_t *host_before = malloc(HOST_LEN);
	uint8_t *board_before = malloc(BOARD_MEM);

	assert_non_null(host_before);
	assert_non_null(board_before);
	memcpy(host_before, r->host, HOST_LEN);
	memcpy(board_before, r->board, BOARD_MEM);

	run_chain(r, table_bus, count);
	assert_int_equal(rd(r, FC_DMA_REG(0, FC_DMA_STATUS)),
			 FC_DMA_STATUS_ERROR);
	assert_int_equal(dma_error(r), code);
	assert_int_equal(rd(r, FC_DMA_REG(0, FC_DMA_ERR_INDEX)), bad);
	assert_memory_equal(host_before, r->host, HOST_LEN);
	assert_memory_equal(board_before, r->board, BOARD_MEM);
	assert_int_equal(rd(r, FC_DMA_REG(0, FC_DMA_DESC_DONE)), 0);

	/* Stopped: a new doorbell is ignored until reset. */
	wr(r, FC_DMA_REG(0, FC_DMA_DOORBELL), r->doorbell + 100);
	assert_false(fcemu_busy(r->emu));
	assert_int_equal(rd(r, FC_DMA_REG(0, FC_DMA_STATUS)),
			 FC_DMA_STATUS_ERROR);
	reset_engine(r);
	r->doorbell += 100;
	free(host_before);
	free(board_before);
}

/* A two-descriptor chain: a good one, then @len/@spaces/@addrs/@flags. */
static void two(struct rig *r, uint32_t len, unsigned int ss, uint64_t src,
		unsigned int ds, uint64_t dst, uint16_t flags)
{
	set_desc(r, 0, 64, FC_SPACE_HOST, HOST_BUS + DATA_OFF, FC_SPACE_BOARD,
		 0, 0);
	set_desc(r, 1, len, ss, src, ds, dst, flags);
}

static void test_bad_descriptors(void **state)
{
	struct rig *r = *state;
	const uint64_t h = HOST_BUS + DATA_OFF;

	two(r, 0, FC_SPACE_HOST, h, FC_SPACE_BOARD, 0, FC_DESC_F_EOC);
	expect_refused(r, HOST_BUS, 2, FC_DMA_ERR_LEN, 1);
	two(r, FC_DESC_MAX_LEN + 1, FC_SPACE_BOARD, 0, FC_SPACE_BOARD, 0,
	    FC_DESC_F_EOC);
	expect_refused(r, HOST_BUS, 2, FC_DMA_ERR_LEN, 1);
	/* board range: last byte one past the end */
	two(r, 64, FC_SPACE_HOST, h, FC_SPACE_BOARD, BOARD_MEM - 63,
	    FC_DESC_F_EOC);
	expect_refused(r, HOST_BUS, 2, FC_DMA_ERR_ADDR, 1);
	/* 64-bit wrap */
	two(r, 64, FC_SPACE_BOARD, ~0ull - 10, FC_SPACE_HOST, h, FC_DESC_F_EOC);
	expect_refused(r, HOST_BUS, 2, FC_DMA_ERR_ADDR, 1);
	/* host range outside the only mapped window */
	two(r, 64, FC_SPACE_HOST, HOST_BUS + HOST_LEN - 63, FC_SPACE_BOARD, 0,
	    FC_DESC_F_EOC);
	expect_refused(r, HOST_BUS, 2, FC_DMA_ERR_ADDR, 1);
	two(r, 64, FC_SPACE_HOST, 0, FC_SPACE_BOARD, 0, FC_DESC_F_EOC);
	expect_refused(r, HOST_BUS, 2, FC_DMA_ERR_ADDR, 1);
	/* unknown space, unknown flag, EOC missing, reserved field */
	two(r, 64, 7, 0, FC_SPACE_BOARD, 0, FC_DESC_F_EOC);
	expect_refused(r, HOST_BUS, 2, FC_DMA_ERR_SPACE, 1);
	two(r, 64, FC_SPACE_HOST, h, FC_SPACE_BOARD, 0, FC_DESC_F_EOC | 0x80);
	expect_refused(r, HOST_BUS, 2, FC_DMA_ERR_FLAGS, 1);
	two(r, 64, FC_SPACE_HOST, h, FC_SPACE_BOARD, 0, 0);
	expect_refused(r, HOST_BUS, 2, FC_DMA_ERR_FLAGS, 1);
	two(r, 64, FC_SPACE_HOST, h, FC_SPACE_BOARD, 0, FC_DESC_F_EOC);
	desc(r, 0)->flags = htole16(FC_DESC_F_EOC); /* EOC too early */
	expect_refused(r, HOST_BUS, 2, FC_DMA_ERR_FLAGS, 0);
	two(r, 64, FC_SPACE_HOST, h, FC_SPACE_BOARD, 0, FC_DESC_F_EOC);
	desc(r, 1)->reserved = htole32(1);
	expect_refused(r, HOST_BUS, 2, FC_DMA_ERR_RSVD, 1);
	/* fabric: another node (no router), a peer window, reserved bits */
	two(r, 64, FC_SPACE_HOST, h, FC_SPACE_FABRIC,
	    FC_FABRIC_ADDR(6, FC_REGION_BOARD, 0), FC_DESC_F_EOC);
	expect_refused(r, HOST_BUS, 2, FC_DMA_ERR_ROUTE, 1);
	two(r, 64, FC_SPACE_HOST, h, FC_SPACE_FABRIC,
	    FC_FABRIC_ADDR(5, FC_REGION_PEER, 0), FC_DESC_F_EOC);
	expect_refused(r, HOST_BUS, 2, FC_DMA_ERR_ROUTE, 1);
	two(r, 64, FC_SPACE_HOST, h, FC_SPACE_FABRIC, 1ull << 50,
	    FC_DESC_F_EOC);
	expect_refused(r, HOST_BUS, 2, FC_DMA_ERR_ADDR, 1);
}

static void test_bad_tables(void **state)
{
	struct rig *r = *state;

	two(r, 64, FC_SPACE_HOST, HOST_BUS + DATA_OFF, FC_SPACE_BOARD, 0,
	    FC_DESC_F_EOC);
	expect_refused(r, HOST_BUS, 0, FC_DMA_ERR_COUNT, 0);
	expect_refused(r, HOST_BUS, FC_DMA_MAX_CHAIN + 1, FC_DMA_ERR_COUNT, 0);
	expect_refused(r, HOST_BUS + 8, 2, FC_DMA_ERR_ALIGN, 0);
	expect_refused(r, 0x1000, 2, FC_DMA_ERR_FETCH, 0);
	/* table runs off the end of the mapped window */
	expect_refused(r, HOST_BUS + HOST_LEN - FC_DESC_SIZE, 2,
		       FC_DMA_ERR_FETCH, 0);
	/* and the engine works again after each reset */
	run_chain(r, HOST_BUS, 2);
	assert_int_equal(dma_error(r), FC_DMA_ERR_NONE);
	assert_memory_equal(r->host + DATA_OFF, r->board, 64);
}

static void test_reset_aborts_running_chain(void **state)
{
	struct rig *r = *state;

	set_desc(r, 0, 1 << 20, FC_SPACE_BOARD, 0, FC_SPACE_BOARD, 2 << 20,
		 FC_DESC_F_EOC);
	wr(r, FC_DMA_REG(0, FC_DMA_DESC_LO), (uint32_t)HOST_BUS);
	wr(r, FC_DMA_REG(0, FC_DMA_DESC_HI), (uint32_t)(HOST_BUS >> 32));
	wr(r, FC_DMA_REG(0, FC_DMA_DESC_COUNT), 1);
	wr(r, FC_DMA_REG(0, FC_DMA_DOORBELL), ++r->doorbell);
	assert_true(fcemu_busy(r->emu));
	assert_int_equal(fcemu_progress(r->emu, 4096), 4096);
	reset_engine(r);
	assert_false(fcemu_busy(r->emu));
	assert_int_equal(fcemu_progress(r->emu, 4096), 0);
	/* only the first 4 KiB moved */
	assert_memory_equal(r->board, r->board + (2 << 20), 4096);
	assert_memory_not_equal(r->board + 4096, r->board + (2 << 20) + 4096,
				4096);
}

static void test_stall_knob(void **state)
{
	struct rig *r = *state;

	set_desc(r, 0, 4096, FC_SPACE_BOARD, 0, FC_SPACE_BOARD, 8192,
		 FC_DESC_F_EOC);
	wr(r, FC_EMU_FAULT_DMA_STALL, 1);
	wr(r, FC_DMA_REG(0, FC_DMA_DESC_LO), (uint32_t)HOST_BUS);
	wr(r, FC_DMA_REG(0, FC_DMA_DESC_HI), (uint32_t)(HOST_BUS >> 32));
	wr(r, FC_DMA_REG(0, FC_DMA_DESC_COUNT), 1);
	wr(r, FC_DMA_REG(0, FC_DMA_DOORBELL), ++r->doorbell);
	assert_int_equal(fcemu_progress(r->emu, 1 << 20), 0);
	assert_true(fcemu_busy(r->emu));
	wr(r, FC_EMU_FAULT_DMA_STALL, 0);
	assert_int_equal(fcemu_progress(r->emu, 1 << 20), 4096);
	assert_false(fcemu_busy(r->emu));
}

static void test_bad_config(void **state)
{
	struct fcemu_config cfg;
	struct fcemu *emu;

	(void)state;
	fcemu_config_default(&cfg);
	cfg.dma_engines = 0;
	assert_int_equal(fcemu_create(&emu, &cfg, &ops, NULL), -22);
	fcemu_config_default(&cfg);
	cfg.node_id = FC_MAX_NODES;
	assert_int_equal(fcemu_create(&emu, &cfg, &ops, NULL), -22);
	fcemu_config_default(&cfg);
	cfg.bad_id = 1;
	assert_int_equal(fcemu_create(&emu, &cfg, &ops, NULL), 0);
	assert_int_equal(fcemu_bar0(emu)[FC_REG_ID / 4], 0xffffffffu);
	fcemu_destroy(emu);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_identity, setup, teardown),
		cmocka_unit_test_setup_teardown(test_good_chain, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_full_chain_one_doorbell,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_descriptors, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bad_tables, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_reset_aborts_running_chain,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_stall_knob, setup,
						teardown),
		cmocka_unit_test(test_bad_config),
	};

	return cmocka_run_group_tests_name("emu_model", tests, NULL, NULL);
}
