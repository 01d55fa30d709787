/* SPDX-License-Identifier: MIT */
/*
 * The chain rule of channel messages (fc_hw_chain_check() in hw.h,
 * docs/hardware.md section 8) as a table of two-descriptor chains, so that
 * the library (test_bad_input), the driver (test_driver_abi) and the
 * emulated board (test_fabric_emu) are held to the same cases.
 */
#ifndef FC_TEST_CHAIN_RULE_H
#define FC_TEST_CHAIN_RULE_H

#include <stdint.h>

#include <fpgacomm/hw.h>

/* Where a descriptor of a case goes; each test maps these to addresses. */
enum chain_dst {
	CHAIN_TO_CHAN,	      /* channel A of node N */
	CHAIN_TO_CHAN_OTHER,  /* another channel of node N */
	CHAIN_TO_NODE_OTHER,  /* channel A of another node */
	CHAIN_TO_FABRIC_HOST, /* node N's host window: not a channel */
	CHAIN_TO_BOARD,	      /* this board's memory: not a channel */
};

#define M_ FC_DESC_F_MORE
#define C_ FC_DESC_F_CTRL

struct chain_case {
	const char *what;
	uint16_t flags[2]; /* FC_DESC_F_MORE, FC_DESC_F_CTRL */
	enum chain_dst dst[2];
	int bad; /* the descriptor refused, -1 for none */
};

static const struct chain_case chain_cases[] = {
	{ "two messages", { 0, 0 }, { CHAIN_TO_CHAN, CHAIN_TO_CHAN }, -1 },
	{ "MORE, same channel",
	  { M_, 0 },
	  { CHAIN_TO_CHAN, CHAIN_TO_CHAN },
	  -1 },
	{ "MORE on the last", { 0, M_ }, { CHAIN_TO_CHAN, CHAIN_TO_CHAN }, 1 },
	{ "MORE on both", { M_, M_ }, { CHAIN_TO_CHAN, CHAIN_TO_CHAN }, 1 },
	{ "MORE, other channel",
	  { M_, 0 },
	  { CHAIN_TO_CHAN, CHAIN_TO_CHAN_OTHER },
	  0 },
	{ "MORE, other node",
	  { M_, 0 },
	  { CHAIN_TO_CHAN, CHAIN_TO_NODE_OTHER },
	  0 },
	{ "MORE, then board memory",
	  { M_, 0 },
	  { CHAIN_TO_CHAN, CHAIN_TO_BOARD },
	  0 },
	{ "MORE to a host window",
	  { M_, 0 },
	  { CHAIN_TO_FABRIC_HOST, CHAIN_TO_FABRIC_HOST },
	  0 },
	{ "MORE to board memory",
	  { M_, 0 },
	  { CHAIN_TO_BOARD, CHAIN_TO_BOARD },
	  0 },
	{ "CTRL", { C_, 0 }, { CHAIN_TO_CHAN, CHAIN_TO_CHAN }, -1 },
	{ "CTRL and MORE, CTRL next",
	  { C_ | M_, C_ },
	  { CHAIN_TO_CHAN, CHAIN_TO_CHAN },
	  -1 },
	{ "CTRL and MORE, DATA next",
	  { C_ | M_, 0 },
	  { CHAIN_TO_CHAN, CHAIN_TO_CHAN },
	  0 },
	{ "MORE, CTRL next", { M_, C_ }, { CHAIN_TO_CHAN, CHAIN_TO_CHAN }, 0 },
	{ "CTRL to a host window",
	  { C_, 0 },
	  { CHAIN_TO_FABRIC_HOST, CHAIN_TO_CHAN },
	  0 },
	{ "CTRL to board memory, last",
	  { 0, C_ },
	  { CHAIN_TO_CHAN, CHAIN_TO_BOARD },
	  1 },
};

#undef M_
#undef C_

#define CHAIN_CASES (sizeof(chain_cases) / sizeof(chain_cases[0]))

/*
 * Where @d goes, as a descriptor names it: channels 9 and 10 of @node,
 * channel 9 of @other, @node's host window, this board's memory.
 */
static inline void chain_case_dst(enum chain_dst d, unsigned int node,
				  unsigned int other, uint32_t *space,
				  uint64_t *addr)
{
	*space = FC_SPACE_FABRIC;
	*addr = 0;
	switch (d) {
	case CHAIN_TO_CHAN:
		*addr = FC_FABRIC_CHAN(node, 9);
		break;
	case CHAIN_TO_CHAN_OTHER:
		*addr = FC_FABRIC_CHAN(node, 10);
		break;
	case CHAIN_TO_NODE_OTHER:
		*addr = FC_FABRIC_CHAN(other, 9);
		break;
	case CHAIN_TO_FABRIC_HOST:
		*addr = FC_FABRIC_ADDR(node, FC_REGION_HOST, 0);
		break;
	case CHAIN_TO_BOARD:
		*space = FC_SPACE_BOARD;
		*addr = 4096;
		break;
	}
}

#endif /* FC_TEST_CHAIN_RULE_H */
