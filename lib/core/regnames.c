// SPDX-License-Identifier: MIT
/*
 * Register names for bring-up tools, derived from the offsets in hw.h. A
 * family is one register repeated per engine, port, vector, etc.; its name
 * is PREFIX, the index (for repeated ones), then SUFFIX: "DMA0_STATUS".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

struct reg_family {
	const char *prefix;
	const char *suffix;
	uint32_t base;
	uint32_t stride;
	uint32_t count; /* 0: a single register, no index */
	uint32_t first; /* index of the first instance */
};

#define ONE(name, off)                 \
	{                              \
		name, "", off, 0, 0, 0 \
	}
#define DMA(r)                                                           \
	{                                                                \
		"DMA", "_" #r, FC_DMA_REG(0, FC_DMA_##r), FC_DMA_STRIDE, \
			FC_DMA_MAX_ENGINES, 0                            \
	}
#define PORT(r)                                                              \
	{                                                                    \
		"PORT", "_" #r, FC_PORT_REG(1, FC_PORT_##r), FC_PORT_STRIDE, \
			FC_MAX_PORTS, 1                                      \
	}
#define CHAN(r)                                                              \
	{                                                                    \
		"CHAN", "_" #r, FC_CHAN_REG(0, FC_CHAN_##r), FC_CHAN_STRIDE, \
			FC_MAX_CHANNELS, 0                                   \
	}
#define LS(r)                                                        \
	{                                                            \
		"LS", "_" #r, FC_LS_REG(0, FC_LS_##r), FC_LS_STRIDE, \
			FC_MAX_LS, 0                                 \
	}
#define LS1(r)                                                              \
	{                                                                   \
		"LS", "_S1_" #r, FC_LS_SREG(0, 1, FC_LS_##r), FC_LS_STRIDE, \
			FC_MAX_LS, 0                                        \
	}

#define PW(r)                                                        \
	{                                                            \
		"PW", "_" #r, FC_PW_REG(0, FC_PW_##r), FC_PW_STRIDE, \
			FC_PW_MAX_ENTRIES, 0                         \
	}

static const struct reg_family families[] = {
	ONE("ID", FC_REG_ID),
	ONE("VERSION", FC_REG_VERSION),
	ONE("CAPS", FC_REG_CAPS),
	ONE("NODE_ID", FC_REG_NODE_ID),
	ONE("NUM_DMA", FC_REG_NUM_DMA),
	ONE("NUM_PORTS", FC_REG_NUM_PORTS),
	ONE("MEM_SIZE_LO", FC_REG_MEM_SIZE_LO),
	ONE("MEM_SIZE_HI", FC_REG_MEM_SIZE_HI),
	ONE("SCRATCH", FC_REG_SCRATCH),
	ONE("SCRATCH_ECHO", FC_REG_SCRATCH_ECHO),
	ONE("LINK_STATE", FC_REG_LINK_STATE),
	ONE("APERTURE_BASE_LO", FC_REG_APERTURE_BASE_LO),
	ONE("APERTURE_BASE_HI", FC_REG_APERTURE_BASE_HI),
	ONE("APERTURE_SIZE", FC_REG_APERTURE_SIZE),
	ONE("BOARD_RESET", FC_REG_BOARD_RESET),
	ONE("BOARD_RESET_ACK", FC_REG_BOARD_RESET_ACK),
	ONE("IRQ_ENABLE", FC_REG_IRQ_ENABLE),
	{ "IRQ", "_COUNT", FC_REG_IRQ_COUNT(0), 4, FC_IRQ_VECTORS, 0 },
	{ "IRQ", "_ACK", FC_REG_IRQ_ACK(0), 4, FC_IRQ_VECTORS, 0 },
	{ "CHAN_EVENTS", "", FC_REG_CHAN_EVENTS(0), 4, FC_CHAN_GROUPS, 0 },
	ONE("EQ_BASE_LO", FC_EQ_BASE_LO),
	ONE("EQ_BASE_HI", FC_EQ_BASE_HI),
	ONE("EQ_SLOTS", FC_EQ_SLOTS),
	ONE("EQ_CTRL", FC_EQ_CTRL),
	ONE("EQ_HEAD", FC_EQ_HEAD),
	ONE("EQ_TAIL", FC_EQ_TAIL),
	ONE("EQ_IRQ_AT", FC_EQ_IRQ_AT),
	ONE("EQ_SEEN", FC_EQ_SEEN),
	ONE("EQ_STALLS", FC_EQ_STALLS),
	DMA(DESC_LO),
	DMA(DESC_HI),
	DMA(DESC_COUNT),
	DMA(DOORBELL),
	DMA(IRQ_ENABLE),
	DMA(RESET),
	DMA(STATUS),
	DMA(ERROR),
	DMA(ERR_INDEX),
	DMA(DONE_SEQ),
	DMA(DESC_DONE),
	DMA(CHAINS_DONE),
	DMA(DOORBELLS),
	DMA(RESET_ACK),
	DMA(BYTES_LO),
	DMA(BYTES_HI),
	ONE("ROUTER_CTRL", FC_ROUTER_CTRL),
	ONE("ROUTER_STATUS", FC_ROUTER_STATUS),
	ONE("ROUTER_DROPS", FC_ROUTER_DROPS),
	ONE("ROUTER_EJECT_DROPS", FC_ROUTER_EJECT_DROPS),
	ONE("ROUTER_FABRIC_NODES", FC_ROUTER_FABRIC_NODES),
	ONE("ROUTER_FABRIC_TOPO", FC_ROUTER_FABRIC_TOPO),
	ONE("PIO_TAIL", FC_PIO_TAIL),
	ONE("PIO_HEAD", FC_PIO_HEAD),
	ONE("PIO_ERRORS", FC_PIO_ERRORS),
	ONE("PIO_WATCH", FC_PIO_WATCH),
	ONE("PW_ENTRIES", FC_PW_ENTRIES),
	ONE("PW_REFUSED", FC_PW_REFUSED),
	ONE("PW_LAST_REFUSED", FC_PW_LAST_REFUSED),
	PW(BASE_LO),
	PW(BASE_HI),
	PW(SIZE_LO),
	PW(SIZE_HI),
	PW(CTRL),
	PW(SEEN),
	ONE("ROUTER_NODES_DOWN_LO", FC_ROUTER_NODES_DOWN_LO),
	ONE("ROUTER_NODES_DOWN_HI", FC_ROUTER_NODES_DOWN_HI),
	{ "ROUTE", "", FC_ROUTE_TABLE(0), 4, FC_MAX_NODES, 0 },
	PORT(STATUS),
	PORT(TX_PKTS),
	PORT(RX_PKTS),
	PORT(CRC_ERRORS),
	PORT(RETRANSMITS),
	PORT(CREDITS),
	CHAN(RING_LO),
	CHAN(RING_HI),
	CHAN(RING_SLOTS),
	CHAN(CTRL),
	CHAN(HEAD),
	CHAN(TAIL),
	CHAN(DROPS),
	CHAN(SEEN),
	ONE("HBM_PCHANNELS", FC_HBM_PCHANNELS),
	ONE("HBM_NUM_LS", FC_HBM_NUM_LS),
	ONE("HBM_LS_SIZE", FC_HBM_LS_SIZE),
	ONE("HBM_KERNELS", FC_HBM_KERNELS),
	ONE("HBM_PCH_BYTES_LO", FC_HBM_PCH_BYTES_LO),
	ONE("HBM_PCH_BYTES_HI", FC_HBM_PCH_BYTES_HI),
	/* stream 0's registers keep the LS's first names */
	LS(PROG_LO),
	LS(PROG_HI),
	LS(PROG_LEN),
	LS(START),
	LS(STATUS),
	LS(ERROR),
	LS(DONE_SEQ),
	LS(ERR_INDEX),
	LS(INSNS),
	LS(RUNS),
	LS1(PROG_LO),
	LS1(PROG_HI),
	LS1(PROG_LEN),
	LS1(START),
	LS1(STATUS),
	LS1(ERROR),
	LS1(DONE_SEQ),
	LS1(ERR_INDEX),
	LS1(INSNS),
	LS1(RUNS),
	LS(RESET),
	LS(RESET_ACK),
	ONE("EMU_MAGIC", FC_EMU_MAGIC),
	ONE("EMU_FAULT_DMA_STALL", FC_EMU_FAULT_DMA_STALL),
	ONE("EMU_FAULT_DMA_ERROR", FC_EMU_FAULT_DMA_ERROR),
	ONE("EMU_FAULT_RESET_DEAF", FC_EMU_FAULT_RESET_DEAF),
	ONE("EMU_SHM_BUS_LO", FC_EMU_SHM_BUS_LO),
	ONE("EMU_SHM_BUS_HI", FC_EMU_SHM_BUS_HI),
};

#define NFAMILIES (sizeof(families) / sizeof(families[0]))

static uint32_t instances(const struct reg_family *f)
{
	return f->count ? f->count : 1;
}

static uint32_t offset_of(const struct reg_family *f, uint32_t i)
{
	return f->base + (i - f->first) * f->stride;
}

static void format_name(const struct reg_family *f, uint32_t i, char *buf,
			size_t len)
{
	if (f->count)
		snprintf(buf, len, "%s%u%s", f->prefix, i, f->suffix);
	else
		snprintf(buf, len, "%s%s", f->prefix, f->suffix);
}

/* Does @name name instance i of @f? */
static bool match(const struct reg_family *f, const char *name, uint32_t *i)
{
	size_t plen = strlen(f->prefix);
	unsigned long idx;
	char *end;

	if (strncasecmp(name, f->prefix, plen))
		return false;
	name += plen;
	if (!f->count) {
		*i = 0;
		return strcasecmp(name, f->suffix) == 0;
	}
	if (*name < '0' || *name > '9')
		return false;
	idx = strtoul(name, &end, 10);
	if (idx < f->first || idx >= f->first + f->count)
		return false;
	*i = (uint32_t)idx;
	return strcasecmp(end, f->suffix) == 0;
}

FC__EXPORT int fc_reg_lookup(const char *name, uint32_t *off)
{
	uint32_t i;
	size_t k;

	if (!name || !off)
		return -EINVAL;
	for (k = 0; k < NFAMILIES; k++) {
		if (match(&families[k], name, &i)) {
			*off = offset_of(&families[k], i);
			return 0;
		}
	}
	return -ENOENT;
}

FC__EXPORT int fc_reg_name(uint32_t off, char *buf, size_t len)
{
	size_t k;

	if (!buf || !len)
		return -EINVAL;
	for (k = 0; k < NFAMILIES; k++) {
		const struct reg_family *f = &families[k];
		uint32_t i, delta;

		if (off < f->base)
			continue;
		delta = off - f->base;
		if (!f->count) {
			if (delta)
				continue;
			i = 0;
		} else {
			if (delta % f->stride || delta / f->stride >= f->count)
				continue;
			i = f->first + delta / f->stride;
		}
		format_name(f, i, buf, len);
		return 0;
	}
	return -ENOENT;
}

struct named_reg {
	uint32_t off;
	uint16_t family;
	uint16_t index;
};

static int by_offset(const void *a, const void *b)
{
	const struct named_reg *x = a, *y = b;

	return (x->off > y->off) - (x->off < y->off);
}

FC__EXPORT int
fc_reg_foreach(int (*fn)(const char *name, uint32_t off, void *arg), void *arg)
{
	struct named_reg *regs;
	size_t n = 0, k, j;
	char name[48];
	int ret = 0;

	if (!fn)
		return -EINVAL;
	for (k = 0; k < NFAMILIES; k++)
		n += instances(&families[k]);
	regs = calloc(n, sizeof(*regs));
	if (!regs)
		return -ENOMEM;
	n = 0;
	for (k = 0; k < NFAMILIES; k++) {
		const struct reg_family *f = &families[k];

		for (j = 0; j < instances(f); j++) {
			regs[n].family = (uint16_t)k;
			regs[n].index = (uint16_t)(f->first + j);
			regs[n].off = offset_of(f, f->first + j);
			n++;
		}
	}
	qsort(regs, n, sizeof(*regs), by_offset);
	for (k = 0; k < n && !ret; k++) {
		format_name(&families[regs[k].family], regs[k].index, name,
			    sizeof(name));
		ret = fn(name, regs[k].off, arg);
	}
	free(regs);
	return ret;
}
