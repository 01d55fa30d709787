// SPDX-License-Identifier: MIT
/*
 * Bursts: how the emulator carries a large remote write. On a board, a PUT
 * of many kilobytes leaves as a stream of 64-byte PUT packets that
 * cut-through routers pass on behind the first; the payload crosses the
 * wire once. Copying it packet by packet through every ring would make the
 * emulated fabric measure memcpy, not the fabric. So the sending engine
 * puts one record in its injection ring instead of the run of packets:
 * destination, length and where the bytes are in the sending process. The
 * record is routed, checked and retransmitted like any packet (and on a
 * wire with faults its bytes like the packets it stands for); the
 * receiving board applies it in order with the other packets from that
 * source by copying the bytes straight from the sender's memory into the
 * destination (process_vm_readv, the kernel's cross-memory attach), one
 * copy in all.
 *
 * The sender's memory must stay put until the record is applied: a chain
 * with bursts, as any chain with PUTs, ends only after the FENCE_ACK of
 * every node it wrote to, and the receiver answers a FENCE only after the
 * bursts before it. A burst that cannot be applied (the sender's memory
 * gone, or the kernel refusing the access) is counted in EJECT_DROPS and
 * fails the sending chain through the FENCE_ACK's status.
 *
 * Copying is the cost of a burst, and in the kernel most of it is pinning
 * the other process's pages one by one, not moving bytes. Meanwhile the
 * sending process only waits for its fence. So the receiver shares the
 * work out: it publishes the burst as a job in its entry of the cluster,
 * rings the sender, and both take chunks of it until none is left, the
 * receiver reading (process_vm_readv), the sender writing
 * (process_vm_writev). The receiver goes on only when every chunk is done,
 * so packets from that source are still applied in order. A sender that
 * does not come (busy, asleep, on the same core) leaves the receiver to
 * take every chunk itself; one that dies mid-chunk fails the burst.
 * FPGACOMM_EMU_BURST_HELP=0 turns the sharing off.
 *
 * Cross-memory attach needs the receiver to be allowed to read the
 * sender (same user; under Yama, a declared ptracer): a board offers
 * bursts only after checking that it can, and FPGACOMM_EMU_BURST=0 turns
 * them off (every PUT then goes as packets).
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "emu_internal.h"
#include "cluster_internal.h"

#define CHUNK_MIN     (32u << 10)    /* shares of a burst: well above a */
#define CHUNK_MAX     (256u << 10)   /* syscall's fixed cost, about 4 */
#define HELP_SPIN_NS  (50ull * 1000) /* waiting for the sender's last chunk */
#define HELP_SLEEP_NS (1000ull * 1000)
#define HELP_BOUND_NS \
	(1000ull * 1000 * 1000) /* the sender's chunks, at least */

/* The record's payload, little-endian. */
struct burst_rec {
	uint64_t dst;	/* region and offset, as in a PUT packet */
	uint64_t src;	/* the bytes, in the sending board's process */
	uint64_t start; /* that process's start time, and pid: the */
	int32_t pid;	/* node may be claimed anew before it is read */
	uint32_t len;
	uint32_t flags; /* BURST_LANDED: the bytes came from another host */
	uint32_t slot;	/* ... and wait in this landing slot */
};

#define BURST_LANDED 1u

_Static_assert(sizeof(struct burst_rec) <= FC_PKT_PAYLOAD, "record");
_Static_assert(FCEMU_BURST_MAX <= CL_LAND_SLOT, "landing slot");

/*
 * Does the route from @self to board @node of another host stay on this
 * host up to its last link? That link's bridge carries the burst (by
 * RMA, emu/bridge_rma.c) into the process of @node itself, where it is
 * applied; a burst cannot go on from there to a third board.
 */
static bool lands_direct(struct fcemu_cluster *c, unsigned int self,
			 unsigned int node)
{
	uint8_t hop[FC_MAX_NODES], port[FC_MAX_NODES];
	unsigned int hops = fcemu__route_links(c, self, node, hop, port), h;

	if (!hops)
		return false;
	for (h = 0; h + 1 < hops; h++)
		if (c->remote & (1ull << hop[h]))
			return false;
	return true;
}

bool fcemu__burst_usable(struct fcemu *emu, unsigned int node)
{
	struct fcemu_cluster *c = emu->cluster;

	/* a stand-in's flag: the bridges here carry bursts to it by RMA */
	return cl_ld(&c->hdr->node[emu->cfg.node_id].burst) &&
	       cl_ld(&c->hdr->node[node].burst) &&
	       (!(c->remote & (1ull << node)) ||
		lands_direct(c, emu->cfg.node_id, node));
}

bool fcemu__burst_view(const struct fc_hw_pkt *pkt, struct fcemu_burst_view *v)
{
	uint32_t hdr = le32toh(pkt->hdr);
	struct burst_rec rec;

	if (((hdr >> FC_PKT_TYPE_SHIFT) & FC_PKT_TYPE_MASK) !=
	    FCEMU_PKT_T_BURST)
		return false;
	memcpy(&rec, pkt->payload, sizeof(rec));
	if (le32toh(rec.flags) & BURST_LANDED)
		return false;
	v->src = le64toh(rec.src);
	v->start = le64toh(rec.start);
	v->pid = (int32_t)le32toh((uint32_t)rec.pid);
	v->len = le32toh(rec.len);
	return true;
}

void fcemu__burst_land(struct fc_hw_pkt *pkt, uint32_t slot)
{
	struct burst_rec rec;

	memcpy(&rec, pkt->payload, sizeof(rec));
	rec.src = 0;
	rec.start = 0;
	rec.pid = 0;
	rec.flags = htole32(BURST_LANDED);
	rec.slot = htole32(slot);
	memcpy(pkt->payload, &rec, sizeof(rec));
}

int fcemu__burst_inject(struct fcemu *emu, unsigned int chan, unsigned int node,
			uint64_t dst, const void *src, uint32_t len)
{
	struct burst_rec rec;
	struct fc_hw_pkt pkt;

	/* No stale byte leaves the board, padding included. */
	memset(&rec, 0, sizeof(rec));
	rec.dst = htole64(dst);
	rec.src = htole64((uintptr_t)src);
	rec.start =
		htole64(emu->cluster->hdr->node[emu->cfg.node_id].starttime);
	rec.pid = (int32_t)htole32((uint32_t)getpid());
	rec.len = htole32(len);
	memset(&pkt, 0, sizeof(pkt));
	memcpy(pkt.payload, &rec, sizeof(rec));
	pkt.hdr = htole32(FC_PKT_HDR(node, emu->cfg.node_id, chan, sizeof(rec),
				     FCEMU_PKT_T_BURST));
	return fcemu_cluster_inject(emu->cluster, emu->cfg.node_id, &pkt);
}

/* Copy @len bytes between @pid's memory at @remote and ours at @local,
 * reading or writing. RETURN VALUE: 0 or -errno. */
static int cma_copy(pid_t pid, void *local, uint64_t remote, size_t len,
		    bool write)
{
	struct iovec l, r;
	ssize_t n;

	while (len) {
		l = (struct iovec){ local, len };
		r = (struct iovec){ (void *)(uintptr_t)remote, len };
		n = write ? process_vm_writev(pid, &l, 1, &r, 1, 0) :
			    process_vm_readv(pid, &l, 1, &r, 1, 0);
		if (n <= 0)
			return n < 0 ? -errno : -EFAULT;
		local = (uint8_t *)local + n;
		remote += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

/* ---- Sharing a burst between receiver and sender ---- */

/* The share of a burst of @len bytes: about a quarter, whole pages. */
static uint32_t chunk_of(uint32_t len)
{
	uint32_t chunk = (len / 4 + 4095) & ~4095u;

	return chunk < CHUNK_MIN ? CHUNK_MIN :
	       chunk > CHUNK_MAX ? CHUNK_MAX :
				   chunk;
}

static uint32_t chunks_of(uint32_t len)
{
	uint32_t chunk = chunk_of(len);

	return (len + chunk - 1) / chunk;
}

/* Chunk @i of a burst of @len bytes: its offset, and its length. */
static size_t chunk_at(uint32_t len, uint32_t i, size_t *n)
{
	size_t chunk = chunk_of(len), off = (size_t)i * chunk;

	*n = len - off < chunk ? len - off : chunk;
	return off;
}

static uint64_t ld64(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* Take the next chunk of job @seq of @n chunks. RETURN VALUE: its index,
 * or @n when none is left (or the job is no longer @seq, or closed). */
static uint32_t take_chunk(struct cl_burst_job *job, uint32_t seq, uint32_t n)
{
	uint64_t cl = ld64(&job->claim);

	while ((uint32_t)(cl >> 32) == seq && (uint32_t)cl < n) {
		if (__atomic_compare_exchange_n(&job->claim, &cl, cl + 1, false,
						__ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			return (uint32_t)cl;
	}
	return n;
}

/* Count a chunk the sender did in job @seq, unless the job moved on (its
 * owner gave up waiting and failed it). */
static void count_helped(struct cl_burst_job *job, uint32_t seq, bool failed)
{
	uint64_t h = ld64(&job->helped);

	while ((uint32_t)(h >> 32) == seq &&
	       !__atomic_compare_exchange_n(
		       &job->helped, &h, (h + 1) | (failed ? CL_JOB_FAILED : 0),
		       false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		;
}

static bool help_wanted(void)
{
	static int on = -1;
	const char *env;

	if (on < 0) {
		env = getenv("FPGACOMM_EMU_BURST_HELP");
		on = !(env && !strcmp(env, "0"));
	}
	return on;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Tests interleave with the sharing here (fcemu_cluster_test_faults). */
static int hook(struct fcemu_cluster *c, enum fcemu_burst_stage stage)
{
	return c->test.burst_stage ? c->test.burst_stage(c, stage) : 0;
}

/* Is the process of @node still the one that sent the burst? A node
 * claimed anew, even under the same pid, is not. */
static bool sender_is(struct fcemu_cluster *c, unsigned int node, pid_t pid,
		      uint64_t start)
{
	const struct cl_node *nd = &c->hdr->node[node];

	return !cl_gone(c, node) &&
	       __atomic_load_n(&nd->pid, __ATOMIC_ACQUIRE) == pid &&
	       __atomic_load_n(&nd->starttime, __ATOMIC_ACQUIRE) == start;
}

struct helped_wait {
	struct cl_burst_job *job;
	uint64_t want; /* seq << 32 | chunks */
};

static bool helped_all(void *arg)
{
	struct helped_wait *w = arg;

	return (ld64(&w->job->helped) & ~CL_JOB_FAILED) >= w->want;
}

/*
 * Wait for the sender's chunks: a chunk's time at most, unless the sender
 * was taken off its core (then sleep on our bell, which it rings). Bounded:
 * a sender that died, was claimed anew or is stopped must not hold up this
 * board (its router lock, everyone's traffic behind it) for ever.
 * RETURN VALUE: 0, -ESRCH (the sender is gone) or -ETIMEDOUT.
 */
static int wait_helper(struct fcemu_cluster *c, unsigned int self,
		       unsigned int src, struct cl_burst_job *job, uint32_t seq,
		       uint32_t theirs, uint64_t bound_ns)
{
	struct helped_wait w = { job, (uint64_t)seq << 32 | theirs };
	pid_t pid = job->src_pid;
	uint64_t start = mono_ns(), now, st = job->src_start;

	while (!helped_all(&w)) {
		fcemu__cluster_scan(c);
		if (!sender_is(c, src, pid, st))
			return -ESRCH;
		now = mono_ns();
		if (now - start >= bound_ns)
			return -ETIMEDOUT;
		if (now - start < HELP_SPIN_NS)
			sched_yield();
		else
			fcemu_cluster_wait(c, self, HELP_SLEEP_NS, helped_all,
					   &w);
	}
	return 0;
}

/* Apply a burst of @len bytes from @src (@from in process @spid) to @to
 * together with the sender. RETURN VALUE: 0 or -errno. */
static int shared_apply(struct fcemu_cluster *c, unsigned int self,
			unsigned int src, pid_t spid, uint64_t sstart, void *to,
			uint64_t from, uint32_t len)
{
	struct cl_burst_job *job = &c->hdr->node[self].job;
	uint32_t n = chunks_of(len), mine = 0, seq, i;
	uint64_t t0 = mono_ns(), bound;
	size_t off, cn;
	int ret = 0, r;

	/* Closed first, as a seqlock: no helper takes a chunk of this job
	 * on the last one's claim while the fields are half rewritten. */
	seq = (uint32_t)(ld64(&job->claim) >> 32) + 1;
	__atomic_store_n(&job->claim, (uint64_t)seq << 32 | CL_JOB_CLOSED,
			 __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&job->to, (uintptr_t)to, __ATOMIC_RELAXED);
	__atomic_store_n(&job->from, from, __ATOMIC_RELAXED);
	__atomic_store_n(&job->len, len, __ATOMIC_RELAXED);
	__atomic_store_n(&job->src, src, __ATOMIC_RELAXED);
	__atomic_store_n(&job->src_pid, (int32_t)spid, __ATOMIC_RELAXED);
	__atomic_store_n(&job->src_start, sstart, __ATOMIC_RELAXED);
	__atomic_store_n(&job->pid, (int32_t)getpid(), __ATOMIC_RELAXED);
	__atomic_store_n(&job->helped, (uint64_t)seq << 32, __ATOMIC_RELAXED);
	hook(c, FCEMU_BURST_STAGE_FIELDS);
	/* Locked: the job is out before the look at the sender's sleepers. */
	__atomic_exchange_n(&job->claim, (uint64_t)seq << 32, __ATOMIC_SEQ_CST);
	fcemu__cluster_ring_fenced(c, src);
	hook(c, FCEMU_BURST_STAGE_PUBLISHED);
	while ((i = take_chunk(job, seq, n)) < n) {
		off = chunk_at(len, i, &cn);
		r = cma_copy(spid, (uint8_t *)to + off, from + off, cn, false);
		if (r && !ret)
			ret = r;
		mine++;
	}
	/* Generous: 16 times our own pace for each of theirs, 1 s at least. */
	bound = mine ? (mono_ns() - t0) / mine * 16 * (n - mine) : 0;
	if (bound < HELP_BOUND_NS)
		bound = HELP_BOUND_NS;
	r = wait_helper(c, self, src, job, seq, n - mine, bound);
	/* A chunk still out is not ours to finish: its sender may be
	 * writing it. Move @helped on, so that it no longer counts. */
	if (r)
		__atomic_store_n(&job->helped, 0, __ATOMIC_RELEASE);
	if (r)
		return r;
	return ret ? ret : ld64(&job->helped) & CL_JOB_FAILED ? -EFAULT : 0;
}

/* Take chunks of @node's job if it is a burst of ours. */
static void help_node(struct fcemu *emu, unsigned int node)
{
	struct fcemu_cluster *c = emu->cluster;
	struct cl_burst_job *job = &c->hdr->node[node].job;
	unsigned int self = emu->cfg.node_id;
	uint32_t len, n, i, seq;
	uint64_t cl, to, from;
	size_t off, cn;
	bool ours;
	pid_t pid;

	for (;;) {
		cl = ld64(&job->claim);
		if ((uint32_t)cl == CL_JOB_CLOSED)
			return;
		seq = (uint32_t)(cl >> 32);
		ours = __atomic_load_n(&job->src, __ATOMIC_RELAXED) == self &&
		       __atomic_load_n(&job->src_pid, __ATOMIC_RELAXED) ==
			       (int32_t)getpid() &&
		       __atomic_load_n(&job->src_start, __ATOMIC_RELAXED) ==
			       c->hdr->node[self].starttime;
		len = __atomic_load_n(&job->len, __ATOMIC_RELAXED);
		to = __atomic_load_n(&job->to, __ATOMIC_RELAXED);
		from = __atomic_load_n(&job->from, __ATOMIC_RELAXED);
		pid = __atomic_load_n(&job->pid, __ATOMIC_RELAXED);
		/* The fields are job @seq's only if the claim did not move. */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&job->claim, __ATOMIC_RELAXED) >> 32 != seq)
			continue;
		n = chunks_of(len);
		if (!ours || (uint32_t)cl >= n)
			return;
		/* Taken only if the job is still @seq, and open. */
		i = take_chunk(job, seq, n);
		if (i >= n)
			return;
		if (hook(c, FCEMU_BURST_STAGE_TAKEN))
			return; /* tests: a helper stopped mid-chunk */
		off = chunk_at(len, i, &cn);
		count_helped(job, seq,
			     cma_copy(pid, (uint8_t *)(uintptr_t)from + off,
				      to + off, cn, true) != 0);
		fcemu__cluster_ring_fenced(c, node);
	}
}

bool fcemu__burst_shared(uint64_t len)
{
	return len >= 2 * CHUNK_MIN && help_wanted();
}

void fcemu__burst_help(struct fcemu *emu, uint64_t nodes)
{
	unsigned int node;

	/* Only nodes a running chain wrote to: its source is still ours. */
	for (; nodes; nodes &= nodes - 1) {
		node = (unsigned int)__builtin_ctzll(nodes);
		help_node(emu, node);
	}
}

/*
 * A burst stands for a run of PUT packets, and on a wire with faults it is
 * treated as one (docs/hardware.md, section 9): each FC_PKT_PUT_DATA-byte
 * piece that landed at @to crosses every link of the route from @src, each
 * try drawn as a packet's; one lost or caught by its CRC is taken again
 * from the sender's memory, which stays put until the FENCE_ACK (it is
 * the replay buffer). RETURN VALUE: 0, or -errno of a retake.
 */
static int wire_pieces(struct fcemu_cluster *c, unsigned int src,
		       unsigned int self, pid_t pid, uint8_t *to, uint64_t from,
		       uint32_t len)
{
	uint8_t node[FC_MAX_NODES], port[FC_MAX_NODES];
	unsigned int hops = fcemu__route_links(c, src, self, node, port), h;
	uint32_t off, n;
	int r;

	for (h = 0; h < hops; h++) {
		for (off = 0; off < len; off += n) {
			n = len - off < FC_PKT_PUT_DATA ? len - off :
							  FC_PKT_PUT_DATA;
			while (!fcemu__link_wire_piece(c, node[h], port[h],
						       to + off, n)) {
				r = cma_copy(pid, to + off, from + off, n,
					     false);
				if (r)
					return r;
			}
		}
	}
	return 0;
}

/*
 * A burst into peer memory the CPU cannot store to (a GPU's): read from
 * the sender into the bounce buffer, then written through the host's
 * peer_move, a bounce buffer's worth at a time. Not shared out: the
 * sender could not write there either.
 */
static int peer_apply(struct fcemu *emu, pid_t pid, uint64_t bus, uint64_t from,
		      uint32_t len)
{
	uint32_t done, n;
	int r;

	if (!emu->bounce) {
		emu->bounce = malloc(FCEMU_BOUNCE);
		if (!emu->bounce)
			return -ENOMEM;
	}
	for (done = 0; done < len; done += n) {
		n = len - done < FCEMU_BOUNCE ? len - done : FCEMU_BOUNCE;
		r = cma_copy(pid, emu->bounce, from + done, n, false);
		if (!r && emu->ops->peer_move(emu->ctx, bus + done, emu->bounce,
					      n, true))
			r = -EFAULT;
		if (r)
			return r;
	}
	return 0;
}

/*
 * A burst from a board of another host, whose bytes the bridge of this
 * process landed in slot @slot (emu/bridge_rma.c), checked on their way:
 * copied from there, the wire's faults drawn on the links of this host's
 * view of the route as for any burst. The slot is given back applied or
 * not. RETURN VALUE: FC_DMA_ERR_*.
 */
static int landed_apply(struct fcemu *emu, unsigned int src, uint64_t dst,
			uint32_t len, uint32_t slot)
{
	struct fcemu_cluster *c = emu->cluster;
	struct fcemu_span span;
	uint8_t *from;
	int ret;

	/* only the bridge lands bursts, from boards of other hosts */
	if (!c->land || slot >= c->land_slots || len > CL_LAND_SLOT ||
	    !(c->remote & (1ull << src)))
		return FC_DMA_ERR_ADDR;
	from = c->land + (size_t)slot * CL_LAND_SLOT;
	ret = fcemu__put_locate(emu, dst, len, FCEMU_PW_WRITE, src, &span);
	if (!ret && !span.ptr)
		ret = peer_apply(emu, getpid(), span.bus, (uintptr_t)from,
				 len) ?
			      FC_DMA_ERR_ADDR :
			      FC_DMA_ERR_NONE;
	else if (!ret)
		memcpy(span.ptr, from, len);
	if (!ret && span.ptr && (c->faults.drop_ppm || c->faults.corrupt_ppm))
		ret = wire_pieces(c, src, emu->cfg.node_id, getpid(), span.ptr,
				  (uintptr_t)from, len) ?
			      FC_DMA_ERR_ADDR :
			      FC_DMA_ERR_NONE;
	cl_st(&c->land_done[slot], 1);
	return ret;
}

int fcemu__burst_apply(struct fcemu *emu, const struct fc_hw_pkt *pkt,
		       uint32_t hdr)
{
	struct fcemu_cluster *c = emu->cluster;
	unsigned int src = (hdr >> FC_PKT_SRC_SHIFT) & FC_PKT_NODE_MASK;
	struct fcemu_span span;
	struct burst_rec rec;
	uint64_t from, start;
	uint32_t len;
	pid_t pid;
	void *to;
	int ret;

	memcpy(&rec, pkt->payload, sizeof(rec));
	len = le32toh(rec.len);
	if (le32toh(rec.flags) & BURST_LANDED)
		return landed_apply(emu, src, le64toh(rec.dst), len,
				    le32toh(rec.slot));
	from = le64toh(rec.src);
	start = le64toh(rec.start);
	pid = (pid_t)le32toh((uint32_t)rec.pid);
	ret = fcemu__put_locate(emu, le64toh(rec.dst), len, FCEMU_PW_WRITE, src,
				&span);
	if (ret)
		return ret;
	/* Not another process's memory at the dead sender's addresses. */
	if (!sender_is(c, src, pid, start))
		return FC_DMA_ERR_ADDR;
	to = span.ptr;
	if (!to)
		ret = peer_apply(emu, pid, span.bus, from, len);
	else if (fcemu__burst_shared(len))
		ret = shared_apply(c, emu->cfg.node_id, src, pid, start, to,
				   from, len);
	else
		ret = cma_copy(pid, to, from, len, false);
	if (to && !ret && (c->faults.drop_ppm || c->faults.corrupt_ppm))
		ret = wire_pieces(c, src, emu->cfg.node_id, pid, to, from, len);
	return ret ? FC_DMA_ERR_ADDR : FC_DMA_ERR_NONE;
}
