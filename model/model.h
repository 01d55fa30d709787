/* SPDX-License-Identifier: MIT */
/*
 * The timing model (docs/model.md): a machine's hardware parameters as
 * data (model/profiles/NAME.prof) and the pure arithmetic of what each
 * hardware step costs. No state and no clock here: the emulator's virtual
 * time (emu/vtime.c) and make model call these functions.
 *
 * Times are in nanoseconds, rates in bytes per nanosecond (= GB/s).
 */
#ifndef FCM_MODEL_H
#define FCM_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FCM_NAME_MAX 32

/*
 * One machine. A parameter left out of a profile is 0: that part of the
 * machine is not there (no PCIe between program and board, no link
 * framing, ...) and costs nothing. Each field is one profile key, below.
 */
struct fcm_profile {
	char name[FCM_NAME_MAX];
	/* the link between boards */
	double line_gbps;   /* line_gbps: line rate, Gb/s */
	double encoding;    /* encoding: payload bits per line bit (64/67) */
	double framing;	    /* framing: the link protocol's own efficiency */
	double pkt_bytes;   /* pkt_bytes: a packet on the wire */
	double pkt_payload; /* pkt_payload: its payload bytes */
	double link_ns;	    /* link_ns: wire + PHY latency of one link */
	/* link_credits: packets the receiving end of a link buffers, the
	 * sender's credits on it; 0: unbounded (no credit ever missing) */
	double link_credits;
	/* the router on every board */
	double router_cycles; /* router_cycles: input to output */
	double router_mhz;    /* router_mhz */
	double router_bits;   /* router_bits: the router's bus width */
	/* the program's own port into the fabric (kernel channel) */
	double endpoint_ns;  /* endpoint_ns: program to router and back */
	double endpoint_mhz; /* endpoint_mhz, endpoint_bits: its rate */
	double endpoint_bits;
	/* PCIe between host and board */
	double pcie_lane_gbps; /* pcie_lane_gbps: after line encoding */
	double pcie_lanes;     /* pcie_lanes */
	double pcie_mps;       /* pcie_mps: max payload per TLP, bytes */
	double pcie_tlp_bytes; /* pcie_tlp_bytes: header + framing per TLP */
	double pcie_ns;	       /* pcie_ns: one traversal, one way */
	double desc_bytes;     /* desc_bytes: one DMA descriptor */
	/* HBM and the local stores */
	double hbm_mhz;	     /* hbm_mhz: the FPGA side of a channel */
	double hbm_bits;     /* hbm_bits: its data bus */
	double hbm_channels; /* hbm_channels: channels (one LS each) */
	double ls_mhz;	     /* ls_mhz, ls_bits: the kernel's port on an LS */
	double ls_bits;
	double ls_step_ns; /* ls_step_ns: the control core's step */
	/* OPTWEB's sort model, T = N * min(W*M*C/A, B/m) */
	double sort_w;	      /* sort_w: bytes per channel per cycle */
	double sort_m;	      /* sort_m: memory channels per node */
	double sort_mhz;      /* sort_mhz: C */
	double sort_node_gbs; /* sort_node_gbs: B, GB/s per node */
	double sort_eff;      /* sort_eff: measured over W*M*C/A (fitted) */
	double nodes;	      /* nodes: the paper's machine */
};

/*
 * Load the profile NAME (model/profiles/NAME.prof as built into the
 * library, or NAME.prof in the directory $FPGACOMM_MODEL_DIR names) or the
 * file PATH (a spec with a '/' or ending in ".prof").
 * RETURN VALUE: 0; -ENOENT no such profile; -EINVAL a bad line (its
 * number and why in @err, @errlen bytes, if @err is not NULL).
 */
int fcm_profile_load(struct fcm_profile *p, const char *spec, char *err,
		     size_t errlen);
/* The same from text in memory (@text NUL-terminated). */
int fcm_profile_parse(struct fcm_profile *p, const char *name, const char *text,
		      char *err, size_t errlen);
/* The profile named by $FPGACOMM_EMU_MODEL: 0 loaded, 1 none set, -errno
 * (the reason printed to stderr once). */
int fcm_profile_from_env(struct fcm_profile *p);

/* ---- The arithmetic: pure functions of a profile ---- */

/* Payload rate of a link after encoding, framing and packet headers. */
double fcm_link_payload_gbps(const struct fcm_profile *p);
/* One packet's time on the link (pkt_bytes at line rate after encoding
 * and framing), or on the endpoint if that is slower; 0 without a link. */
double fcm_pkt_ns(const struct fcm_profile *p);
/* Packets that carry @bytes of payload (at least one). */
uint64_t fcm_pkts(const struct fcm_profile *p, uint64_t bytes);
/* The router's pipeline, one board. */
double fcm_router_ns(const struct fcm_profile *p);
/* A packet's latency from the source's router input to the destination's
 * router output over @hops links (hops + 1 routers). */
double fcm_path_ns(const struct fcm_profile *p, unsigned int hops);
/* A link's credit loop: from a packet entering a link to its credit
 * being back with the sender, the packet not held at the far router. */
double fcm_credit_loop_ns(const struct fcm_profile *p);
/* The credits a link needs to carry one packet after another (0: no
 * link); with link_credits fewer, a flow sends link_credits packets a
 * loop. */
unsigned int fcm_credits_full_rate(const struct fcm_profile *p);
/* One message of @bytes over @hops, program to program, alone on the
 * fabric: endpoints, path, and the packets behind the first. */
double fcm_msg_ns(const struct fcm_profile *p, uint64_t bytes,
		  unsigned int hops);

/* PCIe: payload rate after TLP overheads (GB/s), and a transfer's time. */
double fcm_pcie_gbs(const struct fcm_profile *p);
double fcm_pcie_bytes_ns(const struct fcm_profile *p, uint64_t bytes);
/* A posted write of @bytes, issue to landing. */
double fcm_pcie_write_ns(const struct fcm_profile *p, uint64_t bytes);
/* A read of @bytes: request out, completions back. */
double fcm_pcie_read_ns(const struct fcm_profile *p, uint64_t bytes);
/*
 * A chain of @d descriptors of @bytes each, board to host (writes) or
 * host to board (reads), doorbell to completion interrupt: the doorbell,
 * one fetch of the table, the data, the interrupt.
 */
double fcm_chain_ns(const struct fcm_profile *p, unsigned int d, uint64_t bytes,
		    bool to_host);

/* HBM: one channel's rate (GB/s) and all channels' together. */
double fcm_hbm_channel_gbs(const struct fcm_profile *p);
double fcm_hbm_peak_gbs(const struct fcm_profile *p);
/* The kernel's rate over a local store (GB/s). */
double fcm_ls_gbs(const struct fcm_profile *p);
/*
 * One local store's stream program over @c chunks of @chunk bytes with
 * @streams streams (1 or 2): load a chunk from HBM, run the kernel over
 * it, store it back. @shared: loads and stores use one channel (an array
 * updated in place, as the paper's benchmark), else one channel each.
 */
double fcm_stream_ns(const struct fcm_profile *p, uint64_t c, uint64_t chunk,
		     unsigned int streams, bool shared);

/* OPTWEB: the sort's rate (GB/s) for @nodes nodes, @a memory passes and
 * @m network passes: N * min(W*M*C/A, B/m). */
double fcm_sort_gbs(const struct fcm_profile *p, unsigned int nodes,
		    unsigned int a, unsigned int m);

#endif /* FCM_MODEL_H */
