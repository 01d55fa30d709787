// SPDX-License-Identifier: MIT
/*
 * Puts straight into another process's GPU memory. A board whose host
 * maps GPU memory at a peer window entry publishes the allocation's CUDA
 * IPC handle in the cluster, next to the entry's generation. A sender with
 * a large PUT into that entry checks it as the receiving board would (its
 * SEEN and CTRL agree, VALID, WRITE, in bounds: fc_hw_pw_check()), opens
 * the handle once per (node, entry, generation) and copies GPU to GPU (or
 * host to GPU) itself: one copy instead of a staging copy, a cross-memory
 * read and a bounce buffer. Revocation: the sender raises its bit in the
 * entry's @busy before it looks at CTRL and drops it once its copy has
 * finished; the receiving board moves SEEN only once no live sender's bit
 * is up (fcemu__ipc_drain()), so an acknowledged revoke has no copy behind
 * it. FPGACOMM_EMU_GPU_IPC=0 turns it off.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "emu_internal.h"
#include "cluster_internal.h"

#define DRAIN_SPINS    64
#define DRAIN_SLEEP_NS (20ull * 1000)
#define DRAIN_BOUND_NS (2000ull * 1000 * 1000) /* a copy takes ms */

/* A handle opened in this process. */
struct fcemu_ipc_map {
	uint32_t gen; /* CL_IPC_PUBLISHED | generation; 0: none */
	/* the handle itself: a new process of that node starts its
	 * generations again, with another allocation */
	uint8_t handle[FCEMU_IPC_HANDLE_SIZE];
	bool failed; /* could not be opened: not tried again this gen */
	uint64_t base;
	void *token;
};

static bool ipc_wanted(void)
{
	static int on = -1;
	const char *env;

	if (on < 0) {
		env = getenv("FPGACOMM_EMU_GPU_IPC");
		on = !(env && !strcmp(env, "0"));
	}
	return on;
}

static struct cl_pw_ipc *slot_of(struct fcemu_cluster *c, unsigned int node,
				 unsigned int entry)
{
	return &c->hdr->node[node].pw_ipc[entry];
}

void fcemu_pw_publish(struct fcemu *emu, unsigned int entry, uint32_t gen,
		      const void *handle, uint64_t off)
{
	struct cl_pw_ipc *s;

	if (!emu || !emu->cluster || entry >= FC_PW_MAX_ENTRIES)
		return;
	s = slot_of(emu->cluster, emu->cfg.node_id, entry);
	/* A seqlock of one writer: readers take it only whole. */
	__atomic_store_n(&s->gen, 0, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	if (!handle || !ipc_wanted())
		return;
	memcpy(s->handle, handle, FCEMU_IPC_HANDLE_SIZE);
	__atomic_store_n(&s->off, off, __ATOMIC_RELAXED);
	__atomic_store_n(&s->gen, CL_IPC_PUBLISHED | (gen & 0xffffu),
			 __ATOMIC_RELEASE);
}

void fcemu__ipc_claim(struct fcemu *emu)
{
	struct fcemu_cluster *c = emu->cluster;
	unsigned int self, n, e;
	uint64_t bit;

	if (!c)
		return;
	self = emu->cfg.node_id;
	bit = 1ull << self;
	/* What an earlier process of this node left: its bits, its handles. */
	for (n = 0; n < c->nodes; n++)
		for (e = 0; e < FC_PW_MAX_ENTRIES; e++)
			__atomic_fetch_and(&slot_of(c, n, e)->busy, ~bit,
					   __ATOMIC_RELAXED);
	for (e = 0; e < FC_PW_MAX_ENTRIES; e++)
		__atomic_store_n(&slot_of(c, self, e)->gen, 0,
				 __ATOMIC_RELEASE);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

bool fcemu__ipc_drain(struct fcemu *emu, unsigned int entry)
{
	struct fcemu_cluster *c = emu->cluster;
	struct timespec nap = { 0, DRAIN_SLEEP_NS };
	unsigned int round = 0, n;
	uint64_t busy, live, start = 0;
	struct cl_pw_ipc *s;

	if (!c || entry >= FC_PW_MAX_ENTRIES)
		return true;
	s = slot_of(c, emu->cfg.node_id, entry);
	/* CTRL is stored: a sender that raises its bit after this sees it. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (;;) {
		busy = __atomic_load_n(&s->busy, __ATOMIC_SEQ_CST);
		/* A dead sender's copy died with its CUDA context. */
		for (live = 0; busy; busy &= busy - 1) {
			n = (unsigned int)__builtin_ctzll(busy);
			if (!fcemu_cluster_gone(c, n))
				live |= 1ull << n;
		}
		if (!live)
			return true;
		if (!start)
			start = now_ns();
		else if (now_ns() - start > DRAIN_BOUND_NS)
			return false;
		if (++round > DRAIN_SPINS)
			nanosleep(&nap, NULL);
	}
}

/* Our mapping of @node's entry @entry under @gen, opened on first use. */
static struct fcemu_ipc_map *mapping(struct fcemu *emu, unsigned int node,
				     unsigned int entry, uint32_t gen,
				     const uint8_t *handle, uint64_t src_bus)
{
	struct fcemu_ipc_map *m;

	if (!emu->ipc) {
		emu->ipc = calloc((size_t)FC_MAX_NODES * FC_PW_MAX_ENTRIES,
				  sizeof(*emu->ipc));
		if (!emu->ipc)
			return NULL;
	}
	m = &emu->ipc[node * FC_PW_MAX_ENTRIES + entry];
	if (m->gen == gen && !memcmp(m->handle, handle, sizeof(m->handle)))
		return m->failed ? NULL : m;
	/* The entry was remapped: the old allocation is closed. */
	if (m->gen && !m->failed)
		emu->ops->ipc_close(emu->ctx, m->token, m->base);
	m->gen = gen;
	memcpy(m->handle, handle, sizeof(m->handle));
	m->failed = emu->ops->ipc_open(emu->ctx, handle, src_bus, &m->base,
				       &m->token) != 0;
	return m->failed ? NULL : m;
}

void fcemu__ipc_fini(struct fcemu *emu)
{
	struct fcemu_ipc_map *m;
	size_t i;

	if (!emu->ipc)
		return;
	for (i = 0; i < (size_t)FC_MAX_NODES * FC_PW_MAX_ENTRIES; i++) {
		m = &emu->ipc[i];
		if (m->gen && !m->failed)
			emu->ops->ipc_close(emu->ctx, m->token, m->base);
	}
	free(emu->ipc);
	emu->ipc = NULL;
}

static uint64_t pw_reg64(struct fcemu_cluster *c, unsigned int node,
			 unsigned int e, uint32_t lo)
{
	return fcemu_cluster_reg(c, node, FC_PW_REG(e, lo)) |
	       (uint64_t)fcemu_cluster_reg(c, node, FC_PW_REG(e, lo + 4)) << 32;
}

/*
 * With our bit up: may we write [off, off + len) of @node's entry @e, and
 * where? *@handle, *@aoff and *@gen from its side table. RETURN VALUE: true.
 */
static bool entry_open(struct fcemu_cluster *c, unsigned int node,
		       unsigned int e, uint64_t off, uint64_t len,
		       uint8_t *handle, uint64_t *aoff, uint32_t *gen)
{
	struct cl_pw_ipc *s = slot_of(c, node, e);
	uint32_t ctrl, seen, g;
	uint64_t size;

	ctrl = fcemu_cluster_reg(c, node, FC_PW_REG(e, FC_PW_CTRL));
	seen = fcemu_cluster_reg(c, node, FC_PW_REG(e, FC_PW_SEEN));
	size = pw_reg64(c, node, e, FC_PW_SIZE_LO);
	/* A change under way is the receiver's to judge. */
	if (ctrl != seen || size > FC_PW_MAX_SIZE ||
	    fc_hw_pw_check(seen, size, off, len, true))
		return false;
	g = __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE);
	if (g != (CL_IPC_PUBLISHED | (seen >> FC_PW_GEN_SHIFT)))
		return false;
	memcpy(handle, s->handle, FCEMU_IPC_HANDLE_SIZE);
	*aoff = __atomic_load_n(&s->off, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	*gen = g;
	return __atomic_load_n(&s->gen, __ATOMIC_RELAXED) == g;
}

uint64_t fcemu__ipc_put(struct fcemu *emu, unsigned int node, uint64_t off,
			const struct fcemu_span *at, uint64_t len)
{
	struct fcemu_cluster *c = emu->cluster;
	unsigned int self = emu->cfg.node_id, e;
	uint8_t handle[FCEMU_IPC_HANDLE_SIZE];
	struct fcemu_ipc_map *m;
	uint64_t bit = 1ull << self, aoff;
	uint32_t gen;
	bool ok = false;
	struct cl_pw_ipc *s;

	if (!c || node == self || node >= FC_MAX_NODES || !emu->ops->ipc_open ||
	    !emu->ops->ipc_copy || !emu->ops->ipc_close || !ipc_wanted())
		return 0;
	e = (unsigned int)((off >> FC_PW_ENTRY_SHIFT) & FC_PW_ENTRY_MASK);
	s = slot_of(c, node, e);
	/* Nothing published: no need to raise our bit. */
	if (!(__atomic_load_n(&s->gen, __ATOMIC_RELAXED) & CL_IPC_PUBLISHED))
		return 0;
	__atomic_fetch_or(&s->busy, bit, __ATOMIC_SEQ_CST);
	/* Up before CTRL is read: the receiver's drain sees it, or we see
	 * its new CTRL (fcemu__ipc_drain()). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (entry_open(c, node, e, off, len, handle, &aoff, &gen)) {
		m = mapping(emu, node, e, gen, handle, at->ptr ? 0 : at->bus);
		ok = m &&
		     !emu->ops->ipc_copy(emu->ctx, m->token,
					 m->base + aoff + FC_PW_OFF_OF(off),
					 at->ptr, at->bus, len);
	}
	__atomic_fetch_and(&s->busy, ~bit, __ATOMIC_RELEASE);
	return ok ? len : 0;
}
