// SPDX-License-Identifier: MIT
/*
 * Bursts: how the emulator carries a large remote write. On a board, a PUT
 * of many kilobytes leaves as a stream of 64-byte PUT packets that
 * cut-through routers pass on behind the first; the payload crosses the
 * wire once. Copying it packet by packet through every ring would make the
 * emulated fabric measure memcpy, not the fabric. So the sending engine
 * puts one record in its injection ring instead of the run of packets:
 * destination, length and where the bytes are in the sending process. The
 * record is routed, checked and retransmitted like any packet; the
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
 * Cross-memory attach needs the receiver to be allowed to read the
 * sender (same user; under Yama, a declared ptracer): a board offers
 * bursts only after checking that it can, and FPGACOMM_EMU_BURST=0 turns
 * them off (every PUT then goes as packets).
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "emu_internal.h"
#include "cluster_internal.h"

/* The record's payload, little-endian. */
struct burst_rec {
	uint64_t dst;		/* region and offset, as in a PUT packet */
	uint64_t src;		/* the bytes, in the sending board's process */
	uint32_t len;
};

#ifndef PR_SET_PTRACER
#define PR_SET_PTRACER		0x59616d61
#endif
#ifndef PR_SET_PTRACER_ANY
#define PR_SET_PTRACER_ANY	((unsigned long)-1)
#endif

/* Can this process read memory by cross-memory attach at all? */
static bool cma_works(void)
{
	static const uint64_t probe = 0x46434d41u;	/* "FCMA" */
	uint64_t got = 0;
	struct iovec local = { &got, sizeof(got) };
	struct iovec remote = { (void *)&probe, sizeof(probe) };

	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) ==
		       (ssize_t)sizeof(got) && got == probe;
}

void fcemu__burst_offer(struct fcemu_cluster *c, unsigned int node)
{
	const char *env = getenv("FPGACOMM_EMU_BURST");
	bool on = !(env && !strcmp(env, "0"));

	if (on) {
		/* Under Yama, peers are not our ancestors: let them read us. */
		prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
		on = cma_works();
	}
	cl_st(&c->hdr->node[node].burst, on);
}

bool fcemu__burst_usable(struct fcemu *emu, unsigned int node)
{
	struct fcemu_cluster *c = emu->cluster;

	return cl_ld(&c->hdr->node[emu->cfg.node_id].burst) &&
	       cl_ld(&c->hdr->node[node].burst);
}

int fcemu__burst_inject(struct fcemu *emu, struct fcemu_dma *dma,
			unsigned int node, uint64_t dst, const void *src,
			uint32_t len)
{
	struct burst_rec rec;
	struct fc_hw_pkt pkt;

	/* No stale byte leaves the board, padding included. */
	memset(&rec, 0, sizeof(rec));
	rec.dst = htole64(dst);
	rec.src = htole64((uintptr_t)src);
	rec.len = htole32(len);
	memset(&pkt, 0, sizeof(pkt));
	memcpy(pkt.payload, &rec, sizeof(rec));
	pkt.hdr = htole32(FC_PKT_HDR(node, emu->cfg.node_id, dma->index,
				     sizeof(rec), CL_PKT_T_BURST));
	return fcemu_cluster_inject(emu->cluster, emu->cfg.node_id, &pkt);
}

/* Copy @len bytes at @src in @pid's memory to @to. RETURN VALUE: 0/-errno. */
static int cma_read(pid_t pid, void *to, uint64_t src, size_t len)
{
	struct iovec local, remote;
	ssize_t n;

	while (len) {
		local = (struct iovec){ to, len };
		remote = (struct iovec){ (void *)(uintptr_t)src, len };
		n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
		if (n <= 0)
			return n < 0 ? -errno : -EFAULT;
		to = (uint8_t *)to + n;
		src += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

bool fcemu__burst_apply(struct fcemu *emu, const struct fc_hw_pkt *pkt,
			uint32_t hdr)
{
	struct fcemu_cluster *c = emu->cluster;
	unsigned int src = (hdr >> FC_PKT_SRC_SHIFT) & FC_PKT_NODE_MASK;
	struct burst_rec rec;
	void *to;

	memcpy(&rec, pkt->payload, sizeof(rec));
	to = fcemu__put_target(emu, le64toh(rec.dst), le32toh(rec.len));
	if (!to || cl_gone(c, src))
		return false;
	return !cma_read(c->hdr->node[src].pid, to, le64toh(rec.src),
			 le32toh(rec.len));
}
