/* SPDX-License-Identifier: MIT */
/* Private to lib/: the device, its buffers, and the backend interface. */
#ifndef FC_INTERNAL_H
#define FC_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <fpgacomm/fpgacomm.h>
#include <fpgacomm/hw.h>

#include "chan_stats.h"
#include "lock.h"

#define FC__EXPORT __attribute__((visibility("default")))

#define fc__container_of(ptr, type, member) \
	((type *)((char *)(ptr)-offsetof(type, member)))

struct fc_dev;
struct fc__fabric;
struct fc__hbm;

/* A board's membership of its cluster, as the backend reports it. */
enum fc__node_state {
	FC__NODE_FREE, /* nobody has joined as this node yet */
	FC__NODE_ALIVE,
	FC__NODE_EXITED, /* closed its board */
	FC__NODE_DEAD,	 /* its process died holding the board */
};

/*
 * How fc_open(NULL) joins a cluster for ranks of a parallel job (mpirun,
 * srun): rank 0 creates the cluster, the others wait for it, the last to
 * leave removes it.
 */
struct fc__join {
	bool job;    /* the cluster is the job's: remove when last */
	bool create; /* this rank creates it */
	uint32_t size;
	char topology[32];
	uint32_t drop_ppm, corrupt_ppm; /* link faults (FPGACOMM_FAULTS) */
	/* the job's boards on other hosts (FPGACOMM_HOSTS): bit per rank */
	uint64_t remote;
};

/* A registered buffer: the public part first, then the library's. */
struct fc__mem {
	struct fc_mem pub;
	struct fc__mem *next;
	bool owned;	 /* allocated by fc_mem_alloc */
	bool numa;	 /* ... through libnuma */
	bool contig;	 /* ... by the backend, bus-contiguous */
	size_t map_len;	 /* bytes mapped when owned */
	uint64_t handle; /* the backend's name for it: emu bus address,
				 * or the driver's registration handle */
	/* newest chain naming this buffer on each engine (chains on one
	 * engine end in order; on different engines in any order) */
	uint64_t last_ticket[FC_DMA_MAX_ENGINES];
	/* channel requests moving data straight from or into it (found by
	 * fc__mem_hold): fc_mem_free() gives -EBUSY meanwhile */
	unsigned int users;
	bool transient;	       /* the library's registration of a caller's
				 * buffer for one message: never found */
	bool peer;	       /* fc_peer_import: another device's memory */
	uint64_t peer_off;     /* byte 0 of pub is this far into the region */
	bool device;	       /* ... a GPU's, which the CPU cannot map */
	void *dev_ctx;	       /* ... in this CUDA context (NULL: its own) */
	uint64_t ipc_base;     /* ... opened from a CUDA IPC handle: close */
	unsigned int pw_entry; /* 1 + its peer window entry, 0: none */
};

/* The peer window's entries as this host gave them out (lib/core/window.c). */
struct fc__pw {
	uint64_t used;			      /* bit e: entry e maps a buffer */
	uint64_t freed_at[FC_PW_MAX_ENTRIES]; /* reuse the oldest first */
	uint64_t clock;
	uint16_t gen[FC_PW_MAX_ENTRIES];
};

/*
 * A backend drives one kind of board. Every op but open, close and wait is
 * called with dev->lock held. wait, called without it, may sleep in the
 * kernel; it may be NULL: fc_dma_wait() then calls poll in a loop, backing
 * off when poll moved nothing.
 */
struct fc__backend {
	const char *name;
	int (*open)(struct fc_dev *dev, const char *spec);
	void (*close)(struct fc_dev *dev);
	int (*reg_read)(struct fc_dev *dev, uint32_t off, uint32_t *val);
	int (*reg_write)(struct fc_dev *dev, uint32_t off, uint32_t val);
	int (*mem_map)(struct fc_dev *dev, struct fc__mem *mem);
	void (*mem_unmap)(struct fc_dev *dev, struct fc__mem *mem);
	/*
	 * Queue a chain on @engine, below dev->engines (0 where that is 0 or
	 * 1): an engine's chains run in order, different engines' side by
	 * side and end in any order.
	 */
	int (*submit)(struct fc_dev *dev, unsigned int engine,
		      const struct fc_xfer *xfers, unsigned int n,
		      uint64_t *ticket);
	/* 0 ended (*res filled), -EINPROGRESS, -ENOENT; *moved: progress
	 * (@moved NULL: only look, move nothing) */
	int (*poll)(struct fc_dev *dev, uint64_t ticket,
		    struct fc_dma_result *res, uint64_t *moved);
	int (*wait)(struct fc_dev *dev, uint64_t ticket, int timeout_ms,
		    struct fc_dma_result *res);
	int (*reset)(struct fc_dev *dev);

	/* The fabric. Each may be NULL: the feature is then missing. */
	/* Move the board along with no ticket in mind; *moved: progress. */
	int (*progress)(struct fc_dev *dev, uint64_t *moved);
	/* rank, size, node_id, topology; -ENOTCONN in no cluster */
	int (*world)(struct fc_dev *dev, struct fc_world *world);
	int (*hops)(struct fc_dev *dev, uint32_t node, uint32_t *hops);
	/* The board's simulated clock in ps (docs/model.md); -EOPNOTSUPP:
	 * none */
	int (*sim_time)(struct fc_dev *dev, uint64_t *ps);
	/* enum fc__node_state of @node, or -errno */
	int (*node_state)(struct fc_dev *dev, uint32_t node);
	/* The bus address the board uses for byte 0 of @mem. */
	int (*mem_bus)(struct fc_dev *dev, struct fc__mem *mem, uint64_t *bus);
	/*
	 * Where the host may not write the FC_CHAN_* registers itself (the
	 * kernel driver programs them: userspace never sees bus addresses):
	 * mem_alloc_contig allocates mem->pub.len bytes of bus-contiguous
	 * memory (pub.addr, map_len and handle set; contig memory is freed by
	 * mem_unmap); chan_ring gives endpoint @chan a ring of @slots packets
	 * at @off in such memory and switches it on, *head where HEAD starts
	 * (@mem NULL: switches it off); chan_head moves HEAD. Closing the device switches the endpoints
	 * off. NULL: the library programs the registers with mem_bus.
	 */
	int (*mem_alloc_contig)(struct fc_dev *dev, struct fc__mem *mem);
	int (*chan_ring)(struct fc_dev *dev, uint32_t chan, struct fc__mem *mem,
			 uint64_t off, uint32_t slots, uint32_t *head);
	int (*chan_head)(struct fc_dev *dev, uint32_t chan, uint32_t head);
	/*
	 * The event queue where the driver programs it: eq_set gives it
	 * @slots entries at @off in contig memory @mem, zeroed, and switches
	 * it on (@mem NULL: off, with its endpoints); chan_eq switches
	 * endpoint @chan into it; eq_head moves FC_EQ_HEAD (-ERANGE: TAIL
	 * has not caught up yet). -EOPNOTSUPP: the driver has no queue. NULL:
	 * the library programs FC_EQ_* with mem_bus.
	 */
	int (*eq_set)(struct fc_dev *dev, struct fc__mem *mem, uint64_t off,
		      uint32_t slots);
	int (*chan_eq)(struct fc_dev *dev, uint32_t chan);
	int (*eq_head)(struct fc_dev *dev, uint32_t head);
	/*
	 * Control messages (dev->ctrl_msgs) and remote writes into any
	 * registered memory: large channel messages may go by rendezvous.
	 */
	bool rendezvous;
	/*
	 * The board's endpoints are off until a program opens it, dropping
	 * what comes before (the driver switches them on at open): a
	 * channel's first send waits for the peer's answer (credit.c).
	 */
	bool endpoints_off_unopened;
	/* Sleep at most @max_ns, less if the board has news (NULL: sleep). */
	void (*idle)(struct fc_dev *dev, uint64_t max_ns);
	/*
	 * The program waits: nothing of its own moved, and it sends nothing
	 * until the board brings something (a timing model's board may then
	 * take its next packet, docs/model.md). NULL: nothing to tell.
	 */
	void (*waiting)(struct fc_dev *dev);
	/*
	 * The PIO window (FC_CAP_PIO_SEND), under dev->lock. pio_room: room
	 * for @n packets, whole messages; the caller writes packet i straight
	 * into slot (*tail + i) % FC_PIO_SLOTS of the window returned (no copy
	 * on the way), then pio_post() hands the packets up to @end (PIO_TAIL)
	 * to the board. RETURN VALUE of pio_room: the window's first slot, or
	 * NULL when it has no room for all of them (write none); of
	 * pio_post: FC_PIO_HEAD just after (as pio_head()).
	 */
	struct fc_hw_pkt *(*pio_room)(struct fc_dev *dev, unsigned int n,
				      uint32_t *tail);
	uint32_t (*pio_post)(struct fc_dev *dev, uint32_t end);
	/* FC_PIO_HEAD: the packets the board has taken (no lock needed). */
	uint32_t (*pio_head)(struct fc_dev *dev);
	/*
	 * Peer memory (NULL: -EOPNOTSUPP). peer_import makes [off, off +
	 * mem->pub.len + mem->peer_off) of dma-buf @fd a region named by
	 * mem->handle, released by mem_unmap; peer_export gives a dma-buf of
	 * [off, off + len) of the aperture in *fd.
	 */
	int (*peer_import)(struct fc_dev *dev, struct fc__mem *mem, int fd,
			   uint64_t off);
	int (*peer_export)(struct fc_dev *dev, uint64_t off, uint64_t len,
			   int *fd);
	/* Load a C function as stream kernel @id (NULL: boards can't). */
	int (*kernel_register)(struct fc_dev *dev, uint32_t id, fc_kernel_fn fn,
			       void *ctx);
	/* Sleep until a stream run ends (the stream event count moves off
	 * @seen), at most @max_ns; no lock needed. NULL: poll. */
	void (*stream_sleep)(struct fc_dev *dev, uint32_t seen,
			     uint64_t max_ns);
	/*
	 * Device memory that the board's engine moves through the device's
	 * own API (an emulated board and CUDA memory): makes [dev_addr,
	 * dev_addr + mem->pub.len) a region named by mem->handle, released
	 * by mem_unmap, moved in mem->dev_ctx. NULL: such memory must come
	 * as a dma-buf.
	 */
	int (*peer_import_dev)(struct fc_dev *dev, struct fc__mem *mem,
			       uint64_t dev_addr);
	/* The library programs the peer window (FC_PW_*) itself through
	 * reg_write, with mem_bus's addresses (an emulated board). */
	bool peer_window;
	/*
	 * Where the driver owns the window (a kernel board): pw_map gives
	 * imported @mem (its pub.len bytes, peer_off into the region) an
	 * entry with read and write permission, *entry; pw_unmap revokes it
	 * once the board acknowledged. Errors as fc__pw_map's. NULL: the
	 * library programs it (peer_window) or there is none.
	 */
	int (*pw_map)(struct fc_dev *dev, struct fc__mem *mem,
		      unsigned int *entry);
	int (*pw_unmap)(struct fc_dev *dev, struct fc__mem *mem,
			unsigned int entry);
	/*
	 * An emulated board: before the library makes entry @entry VALID
	 * for @mem under generation @gen, the backend may name the memory
	 * to other processes' boards (a GPU's CUDA IPC handle: emu/ipc.c).
	 * Emulator-only, no part of the contract. NULL: nothing to do.
	 */
	void (*pw_publish)(struct fc_dev *dev, struct fc__mem *mem,
			   unsigned int entry, uint16_t gen);
};

/* One more in a counter of struct fc__chan_stats. */
static inline void fc__stat_inc(uint64_t *counter)
{
	__atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

struct fc_dev {
	struct fc__lock lock;
	/* FC_OPEN_THREAD_SINGLE: one thread at a time calls the library, so
	 * the hot paths (channel sends, receives and progress) skip the
	 * fabric's and the board's locks. Set at open, never changed. */
	bool single;
	const struct fc__backend *be;
	void *be_priv;
	/*
	 * The register file, where the backend has it mapped: polling paths
	 * read it directly, with no call and no lock (each register is one
	 * 32-bit word with a single writer). NULL: through reg_read.
	 */
	const volatile uint32_t *regs;
	struct fc_info info;
	/* Chain queues the backend runs side by side (be->submit's @engine);
	 * 0 or 1: one, in submission order. Set by open. */
	unsigned int engines;
	/* Chains may send control messages (FC_XFER_F_CTRL): the channels'
	 * credits travel in them. Set by open. */
	bool ctrl_msgs;
	/* The event queue entry the library reads next (fabric_rx.c): what
	 * a backend's idle may sleep on. */
	uint32_t eq_next;
	struct fc__mem *mems;	 /* live buffers */
	struct fc__mem *mem_hit; /* the one fc__mem_hold found last */
	struct fc__chan_stats stats;
	struct fc__join join;	/* set by fc_open before the backend opens */
	struct fc__fabric *fab; /* channels, puts; NULL in no cluster */
	/* Set by a layer above that keeps state per device (groups). */
	void (*on_close)(struct fc_dev *dev);
	struct fc__hbm *hbm; /* lib/hbm/hbm.c: made at first use */
	struct fc__pw pw;    /* lib/core/window.c */
};

/* dev->lock around a backend call on a hot path: none where the caller
 * declared a single thread (dev->single). */
/*
 * Copy @n bytes, at most a packet's payload (a small message): a few
 * overlapping word moves, where memcpy() of a length not known at compile
 * time is a call or a string instruction.
 */
static inline void fc__copy_small(void *dst, const void *src, size_t n)
{
	uint8_t *d = dst;
	const uint8_t *s = src;
	uint64_t w, w2;
	uint32_t h, h2;
	size_t i;

	if (n >= 8) {
		for (i = 0; i + 8 < n; i += 8) {
			__builtin_memcpy(&w, s + i, 8);
			__builtin_memcpy(d + i, &w, 8);
		}
		__builtin_memcpy(&w2, s + n - 8, 8);
		__builtin_memcpy(d + n - 8, &w2, 8);
	} else if (n >= 4) {
		__builtin_memcpy(&h, s, 4);
		__builtin_memcpy(&h2, s + n - 4, 4);
		__builtin_memcpy(d, &h, 4);
		__builtin_memcpy(d + n - 4, &h2, 4);
	} else if (n) {
		d[0] = s[0];
		d[n / 2] = s[n / 2];
		d[n - 1] = s[n - 1];
	}
}

static inline void fc__dev_lock(struct fc_dev *dev)
{
	if (!dev->single)
		fc__lock(&dev->lock);
}

static inline void fc__dev_unlock(struct fc_dev *dev)
{
	if (!dev->single)
		fc__unlock(&dev->lock);
}

extern const struct fc__backend fc__emu_backend;
extern const struct fc__backend fc__kernel_backend;

/* lib/core/window.c, lock held: give imported @m a peer window entry (0, or
 * -EOPNOTSUPP, -E2BIG over FC_PW_MAX_SIZE, -ENOSPC, -EIO no ack); take
 * it back, once the board acknowledged (0 or -EIO). */
int fc__pw_map(struct fc_dev *dev, struct fc__mem *m);
int fc__pw_unmap(struct fc_dev *dev, struct fc__mem *m);

/* lib/core/mem.c */
struct fc__mem *fc__mem_find(struct fc_dev *dev, const struct fc_mem *mem);
/* fc_mem_alloc() of bus-contiguous memory where the backend tells apart. */
int fc__mem_alloc_contig(struct fc_dev *dev, size_t len, struct fc_mem **memp);
void fc__mem_release_all(struct fc_dev *dev);
/*
 * The caller's registration (fc_mem_alloc, fc_mem_register) that covers
 * [buf, buf + len), held (fc_mem_free: -EBUSY) until fc__mem_unhold, with
 * @buf's offset in it in *off; NULL where none does. Takes dev->lock.
 */
struct fc_mem *fc__mem_hold(struct fc_dev *dev, const void *buf, size_t len,
			    uint64_t *off);
void fc__mem_unhold(struct fc_dev *dev, struct fc_mem *mem);
/* Does a message still move from or into @mem (a buffer of @dev)? */
bool fc__mem_held(struct fc_dev *dev, struct fc_mem *mem);
/* fc_mem_register() of a caller's buffer for one message: fc__mem_hold
 * never finds it (it goes when the message does). */
int fc__mem_register_transient(struct fc_dev *dev, void *addr, size_t len,
			       struct fc_mem **memp);

/* lib/core/dma.c: fc_dma_submit() on queue @engine (below dev->engines, or 0) */
int fc__dma_submit_on(struct fc_dev *dev, unsigned int engine,
		      const struct fc_xfer *xfers, unsigned int n,
		      uint64_t *ticket);
/* fc_dma_poll() that moves nothing: for a caller that has just made the
 * board move (fabric progress). */
int fc__dma_ended(struct fc_dev *dev, uint64_t ticket);

/* lib/peer/peer.c: [off, off + len) of dma-buf @fd as a buffer (any @off) */
int fc__peer_import(struct fc_dev *dev, int fd, uint64_t off, size_t len,
		    struct fc_mem **memp);
/* ... and device memory at @dev_addr, through be->peer_import_dev */
int fc__peer_import_dev(struct fc_dev *dev, uint64_t dev_addr, void *dev_ctx,
			size_t len, struct fc_mem **memp);

/* lib/fabric/world.c */
int fc__join_from_env(struct fc__join *join, char *name, size_t len);

/* lib/fabric/fabric.c: set up at open when the board is in a cluster */
int fc__fabric_init(struct fc_dev *dev);
void fc__fabric_fini(struct fc_dev *dev);
/* at fc_close, first: sends nobody waits for finish (bounded) */
void fc__fabric_linger(struct fc_dev *dev);
/* lib/chan/chan.c: the channel protocols above it (rendezvous, credits; 0
 * or -ENOMEM); at close, its channels forgotten before the
 * fabric goes */
int fc__chan_protocols(struct fc_dev *dev);
void fc__chan_forget_dev(struct fc_dev *dev);

/*
 * lib/chan/chan.c: send @buf (a small message: copied now) and let it go on
 * without the caller, with no request to wait for; a send held for
 * credit or the greeting goes when its turn comes, where fc_chan_send()
 * with a timeout of 0 would drop it. RETURN VALUE: 0 or -errno.
 */
int fc__chan_send_detached(struct fc_chan *ch, const void *buf, size_t len);
/* lib/chan/chan.c: fc_chan_isend() for a caller that leaves @buf alone until
 * the send ends (the collectives): an eager message from a registered
 * buffer is sent straight from it, with no staging copy. */
int fc__chan_isend_kept(struct fc_chan *ch, const void *buf, size_t len,
			struct fc_req **reqp);
/*
 * lib/chan/chan.c: a send of a small message whose bytes are taken now
 * (written into the PIO window, or copied), so @buf is free on return,
 * with no move of the board: a caller that sends many moves it once
 * after. *reqp NULL: the message is sent and nothing waits (the window
 * took it). RETURN VALUE: 0, -E2BIG (it would go by rendezvous: use
 * fc_chan_isend()), or fc_chan_isend()'s errors.
 */
int fc__chan_isend_now(struct fc_chan *ch, const void *buf, size_t len,
		       struct fc_req **reqp);
/* A registered buffer of at least @len bytes from those the channels keep
 * for large sends (allocated when none fits), and back. RETURN VALUE: 0,
 * -ENOMEM. */
int fc__chan_buf_get(struct fc_dev *dev, size_t len, struct fc_mem **memp);
void fc__chan_buf_put(struct fc_dev *dev, struct fc_mem *mem);

/* lib/core/util.c */
int fc__parse_size(const char *s, uint64_t *out);
uint64_t fc__env_size(const char *name, uint64_t dflt);
uint64_t fc__now_ns(void);
/* The same clock to a tick (a few ms; no time stamp counter read): for
 * checks that come at most every few ms. Behind fc__now_ns() by up to a
 * tick. */
uint64_t fc__now_coarse_ns(void);
/*
 * A clock for "has about this long passed?" asked on every message: the
 * time stamp counter where there is one (one instruction, no call), else
 * the coarse clock in ns. Counters run at 1 GHz or more, so a span of N
 * ticks is at most N ns: a check every N ticks comes at least as often
 * as one every N ns would.
 */
static inline uint64_t fc__ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();
#else
	return fc__now_coarse_ns();
#endif
}
void fc__backoff(unsigned int *round);
/* The same, for a caller that has just read the clock: @now. */
void fc__backoff_at(unsigned int *round, uint64_t now);
/* The same, sleeping in the backend's idle op where it has one. */
void fc__backoff_dev(struct fc_dev *dev, unsigned int *round, uint64_t now);

/*
 * progress.c: the process's progress engine (see there). A poller moves
 * what its part has in flight without waiting and says whether anything
 * moved; it must not block on a lock (trylock: a busy lock means another
 * thread is moving that part).
 */
typedef bool (*fc__poll_fn)(void *arg);
int fc__poller_add(fc__poll_fn fn, void *arg);
/* After it returns, @fn no longer runs; not from inside a poller. */
void fc__poller_del(fc__poll_fn fn, void *arg);
/* Run every poller but those of @skip (their arg), once: what a wait
 * does each time its own look moved nothing. RETURN VALUE: true if
 * anything moved; false at once inside a pass or another thread's. */
bool fc__poll_all(const void *skip);
/* Around a layer's own progress: waits below it poll nothing more. */
void fc__progress_enter(void);
void fc__progress_leave(void);

#endif /* FC_INTERNAL_H */
