// SPDX-License-Identifier: MIT
/*
 * The model's arithmetic (docs/model.md, "What each step costs"). Each
 * function is a hardware step's cost from the profile's parameters only.
 * Rates are bytes per ns (= GB/s); a missing part (0) costs nothing.
 */
#include "model.h"

/* Gb/s to bytes per ns */
static double gbps_to_bpns(double gbps)
{
	return gbps / 8.0;
}

static double or_one(double v)
{
	return v > 0 ? v : 1.0;
}

double fcm_link_payload_gbps(const struct fcm_profile *p)
{
	if (!(p->line_gbps > 0))
		return 0;
	return p->line_gbps * or_one(p->encoding) * or_one(p->framing) *
	       p->pkt_payload / p->pkt_bytes;
}

/* The endpoint's rate in payload bytes per ns, 0 if not limited. */
static double endpoint_bpns(const struct fcm_profile *p)
{
	return p->endpoint_mhz * p->endpoint_bits / 8.0 / 1000.0;
}

double fcm_pkt_ns(const struct fcm_profile *p)
{
	double link = 0, ep = 0, bpns = endpoint_bpns(p);

	if (p->line_gbps > 0)
		link = p->pkt_bytes /
		       gbps_to_bpns(p->line_gbps * or_one(p->encoding) *
				    or_one(p->framing));
	if (bpns > 0 && p->pkt_payload > 0)
		ep = p->pkt_payload / bpns;
	return link > ep ? link : ep;
}

uint64_t fcm_pkts(const struct fcm_profile *p, uint64_t bytes)
{
	uint64_t per = p->pkt_payload > 0 ? (uint64_t)p->pkt_payload : 60;

	return bytes ? (bytes + per - 1) / per : 1;
}

double fcm_router_ns(const struct fcm_profile *p)
{
	if (!(p->router_mhz > 0))
		return 0;
	return p->router_cycles * 1000.0 / p->router_mhz;
}

double fcm_path_ns(const struct fcm_profile *p, unsigned int hops)
{
	/* Store and forward of one packet on each link. */
	return (hops + 1) * fcm_router_ns(p) +
	       hops * (p->link_ns + fcm_pkt_ns(p));
}

double fcm_credit_loop_ns(const struct fcm_profile *p)
{
	/* the packet across the link and the far router's pipeline, its
	 * credit back over the link (a few bits in the other way's traffic:
	 * its latency alone) */
	return p->link_ns + fcm_pkt_ns(p) + fcm_router_ns(p) + p->link_ns;
}

unsigned int fcm_credits_full_rate(const struct fcm_profile *p)
{
	double pkt = fcm_pkt_ns(p), loop = fcm_credit_loop_ns(p);
	unsigned int n;

	if (!(pkt > 0))
		return 0;
	n = (unsigned int)(loop / pkt);
	return n * pkt < loop ? n + 1 : n;
}

double fcm_msg_ns(const struct fcm_profile *p, uint64_t bytes,
		  unsigned int hops)
{
	double ns = p->endpoint_ns + fcm_path_ns(p, hops) +
		    (fcm_pkts(p, bytes) - 1) * fcm_pkt_ns(p);

	/* A host on PCIe: the store into the board, the write into host
	 * memory at the far end. */
	if (p->pcie_lanes > 0)
		ns += 2 * fcm_pcie_write_ns(p, (uint64_t)or_one(p->pkt_bytes));
	return ns;
}

double fcm_pcie_gbs(const struct fcm_profile *p)
{
	double raw = p->pcie_lane_gbps * p->pcie_lanes / 8.0;

	if (!(raw > 0))
		return 0;
	if (p->pcie_mps > 0)
		raw *= p->pcie_mps / (p->pcie_mps + p->pcie_tlp_bytes);
	return raw;
}

double fcm_pcie_bytes_ns(const struct fcm_profile *p, uint64_t bytes)
{
	double gbs = fcm_pcie_gbs(p);

	return gbs > 0 ? bytes / gbs : 0;
}

double fcm_pcie_write_ns(const struct fcm_profile *p, uint64_t bytes)
{
	return p->pcie_ns + fcm_pcie_bytes_ns(p, bytes);
}

double fcm_pcie_read_ns(const struct fcm_profile *p, uint64_t bytes)
{
	return 2 * p->pcie_ns + fcm_pcie_bytes_ns(p, bytes);
}

double fcm_chain_ns(const struct fcm_profile *p, unsigned int d, uint64_t bytes,
		    bool to_host)
{
	uint64_t data = (uint64_t)d * bytes;
	/* doorbell (a posted write), the table in one read */
	double ns = fcm_pcie_write_ns(p, 4) +
		    fcm_pcie_read_ns(p, (uint64_t)(d * p->desc_bytes));

	/* Writes stream back to back and the last lands one traversal
	 * later; reads wait one round trip for the first completion. */
	ns += to_host ? fcm_pcie_write_ns(p, data) : fcm_pcie_read_ns(p, data);
	return ns + fcm_pcie_write_ns(p, 4); /* the interrupt (MSI) */
}

double fcm_hbm_channel_gbs(const struct fcm_profile *p)
{
	return p->hbm_mhz * p->hbm_bits / 8.0 / 1000.0;
}

double fcm_hbm_peak_gbs(const struct fcm_profile *p)
{
	return fcm_hbm_channel_gbs(p) * p->hbm_channels;
}

double fcm_ls_gbs(const struct fcm_profile *p)
{
	return p->ls_mhz * p->ls_bits / 8.0 / 1000.0;
}

double fcm_stream_ns(const struct fcm_profile *p, uint64_t c, uint64_t chunk,
		     unsigned int streams, bool shared)
{
	double ch = fcm_hbm_channel_gbs(p), ls = fcm_ls_gbs(p);
	double io = ch > 0 ? chunk / ch : 0;
	double k = (ls > 0 ? chunk / ls : 0) + p->ls_step_ns;
	double rd = 0, wr = 0, *in = &rd, *out = shared ? &rd : &wr;
	double kern = 0, loaded, stored[2] = { 0, 0 }, t;
	uint64_t j;

	if (!c)
		return 0;
	/*
	 * A channel serves its loads and stores in the program's order: with
	 * one stream L0 S0 L1 S1 ...; with two (chunk j on stream j % 2)
	 * L0 L1 S0 L2 S1 ..., a stream loading its next chunk once it
	 * stored its last one, so one stream's transfers overlap the other's
	 * kernel. One kernel per LS.
	 */
	loaded = *in = io; /* L0 */
	for (j = 0; j < c; j++) {
		double next_loaded = 0;

		t = loaded > kern ? loaded : kern; /* kernel j */
		kern = t + k;
		if (streams >= 2 && j + 1 < c) { /* L(j+1) */
			t = stored[(j + 1) % 2] > *in ? stored[(j + 1) % 2] :
							*in;
			next_loaded = *in = t + io;
		}
		t = kern > *out ? kern : *out; /* S(j) */
		stored[j % 2] = *out = t + io;
		if (streams < 2 && j + 1 < c) { /* L(j+1) */
			t = stored[j % 2] > *in ? stored[j % 2] : *in;
			next_loaded = *in = t + io;
		}
		loaded = next_loaded;
	}
	return stored[0] > stored[1] ? stored[0] : stored[1];
}

double fcm_sort_gbs(const struct fcm_profile *p, unsigned int nodes,
		    unsigned int a, unsigned int m)
{
	double mem, net;

	if (!a || !m)
		return 0;
	mem = p->sort_w * p->sort_m * p->sort_mhz / 1000.0 / a;
	net = p->sort_node_gbs / m;
	return nodes * (mem < net ? mem : net);
}
