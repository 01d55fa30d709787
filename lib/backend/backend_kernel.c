// SPDX-License-Identifier: MIT
/*
 * The kernel backend: a board behind fpgacomm.ko, reached through the ioctls
 * of <uapi/fpgacomm.h> on /dev/fpgacommN. The driver pins memory and builds
 * the descriptors; this file only translates the library's calls.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <uapi/fpgacomm.h>

#include "topology.h" /* topo/: the topology the FABRIC registers name */
#include "internal.h"

/* What the library needs from the driver. */
#define REQUIRED_FEATURES (FC_FEAT_DMA | FC_FEAT_MEM_REGISTER | FC_FEAT_REG)

struct kdev {
	int fd;
	struct fc_ioc_info info;
	bool fabric;		 /* the board is part of a fabric */
	struct fc_topology topo; /* ... this one */
	/* The PIO send pages (FC_MMAP_PIO), mapped at the first PIO send. */
	volatile uint32_t *pio;
	bool pio_tried;
	bool pio_kick_always; /* FPGACOMM_PIO_KICK=1: as before WATCH */
	uint32_t pio_tail;    /* we are PIO_TAIL's only writer */
	/* The event queue in our mapping (EQ), for idle's EQ_WAIT. */
	const struct fc_hw_pkt *eq;
	uint32_t eq_slots;
	unsigned int fork_gen; /* fork_gen when opened */
};

/*
 * A handle belongs to the process that opened it. A child of fork() shares
 * the open file with its parent, so its calls would act on the parent's
 * chains, buffers and rings; and the PIO window is not mapped in it at
 * all (the driver marks the mapping VM_DONTCOPY). There every call fails
 * with -EBADFD, and fc_close() only lets go of the child's copy.
 */
static unsigned int fork_gen; /* moves in each child, as it starts */
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void fork_child(void)
{
	fork_gen++; /* the child is one thread now */
}

static void fork_watch(void)
{
	pthread_atfork(NULL, NULL, fork_child);
}

static bool forked(const struct kdev *k)
{
	return k->fork_gen != __atomic_load_n(&fork_gen, __ATOMIC_RELAXED);
}

static struct kdev *kdev_of(struct fc_dev *dev)
{
	return dev->be_priv;
}

/* The one place a system call's failure becomes a -errno. */
static int k_ioctl(struct kdev *k, unsigned long cmd, void *arg)
{
	int ret;

	if (forked(k))
		return -EBADFD;
	do {
		ret = ioctl(k->fd, cmd, arg);
	} while (ret < 0 && errno == EINTR);
	return ret < 0 ? -errno : 0;
}

static int kernel_open(struct fc_dev *dev, const char *path)
{
	struct kdev *k;
	int ret;

	pthread_once(&fork_once, fork_watch);
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->fork_gen = __atomic_load_n(&fork_gen, __ATOMIC_RELAXED);
	k->fd = open(path, O_RDWR | O_CLOEXEC);
	if (k->fd < 0) {
		ret = -errno;
		goto err_free;
	}
	ret = k_ioctl(k, FC_IOC_INFO, &k->info);
	if (ret == -ENOTTY || ret == -EINVAL)
		ret = -ENODEV; /* some other device: not one of ours */
	if (ret)
		goto err_close;
	/* An older or newer ABI than ours, or a driver lacking what we use. */
	if (k->info.abi_version != FC_ABI_VERSION ||
	    (k->info.features & REQUIRED_FEATURES) != REQUIRED_FEATURES) {
		ret = -EPROTO;
		goto err_close;
	}
	dev->be_priv = k;
	dev->info.numa_node = k->info.numa_node;
	dev->ctrl_msgs = k->info.features & FC_FEAT_XFER_CTRL;
	dev->info.max_xfer_len = k->info.max_xfer_len;
	/* A queue per engine (the fabric's lanes), where SUBMIT can name one. */
	if (k->info.features & FC_FEAT_ENGINES)
		dev->engines = k->info.dma_engines < FC_DMA_MAX_ENGINES ?
				       k->info.dma_engines :
				       FC_DMA_MAX_ENGINES;
	return 0;

err_close:
	close(k->fd);
err_free:
	free(k);
	return ret;
}

static void kernel_close(struct fc_dev *dev)
{
	struct kdev *k = kdev_of(dev);

	/* In a child the range is not the window (VM_DONTCOPY): leave it. */
	if (k->pio && !forked(k))
		munmap((void *)k->pio, FC_MMAP_PIO_SIZE);
	close(k->fd);
	free(k);
}

static int kernel_reg_read(struct fc_dev *dev, uint32_t off, uint32_t *val)
{
	struct fc_ioc_reg r = { .offset = off };
	int ret = k_ioctl(kdev_of(dev), FC_IOC_REG_READ, &r);

	if (!ret)
		*val = r.value;
	return ret;
}

static int kernel_reg_write(struct fc_dev *dev, uint32_t off, uint32_t val)
{
	struct fc_ioc_reg r = { .offset = off, .value = val };

	return k_ioctl(kdev_of(dev), FC_IOC_REG_WRITE, &r);
}

static int kernel_mem_map(struct fc_dev *dev, struct fc__mem *mem)
{
	struct fc_ioc_mem m = {
		.addr = (uintptr_t)mem->pub.addr,
		.len = mem->pub.len,
	};
	int ret = k_ioctl(kdev_of(dev), FC_IOC_MEM_REGISTER, &m);

	if (!ret)
		mem->handle = m.handle;
	return ret;
}

static void kernel_mem_unmap(struct fc_dev *dev, struct fc__mem *mem)
{
	struct fc_ioc_mem m = { .handle = (uint32_t)mem->handle };

	k_ioctl(kdev_of(dev), FC_IOC_MEM_UNREGISTER, &m);
	/* The driver's memory lives on while a mapping or a ring holds it. */
	if (mem->contig)
		munmap(mem->pub.addr, mem->map_len);
}

/* Bus-contiguous memory: the driver's (MEM_ALLOC), mapped here. */
static int kernel_mem_alloc_contig(struct fc_dev *dev, struct fc__mem *mem)
{
	struct kdev *k = kdev_of(dev);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct fc_ioc_mem m = { .len = mem->pub.len };
	void *p;
	int ret;

	if (!(k->info.features & FC_FEAT_MEM_ALLOC))
		return -EOPNOTSUPP;
	ret = k_ioctl(k, FC_IOC_MEM_ALLOC, &m);
	if (ret)
		return ret;
	mem->handle = m.handle;
	mem->map_len = (mem->pub.len + page - 1) & ~(page - 1);
	p = mmap(NULL, mem->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, k->fd,
		 (off_t)m.mmap_offset);
	if (p == MAP_FAILED) {
		ret = -errno;
		mem->map_len = 0;
		mem->contig = false;
		kernel_mem_unmap(dev, mem);
		return ret;
	}
	mem->pub.addr = p;
	return 0;
}

static void to_ioc_loc(struct fc_dev *dev, const struct fc_loc *loc,
		       struct fc_ioc_loc *out)
{
	out->space = loc->space;
	out->handle = 0;
	out->addr = loc->addr;
	if (loc->space == FC_SPACE_HOST) {
		struct fc__mem *m = fc__mem_find(dev, loc->mem);

		out->handle = (uint32_t)m->handle;
		out->addr += m->peer_off;
	}
}

/* A dma-buf range as a region of the driver (PEER_IMPORT). */
static int kernel_peer_import(struct fc_dev *dev, struct fc__mem *mem, int fd,
			      uint64_t off)
{
	struct kdev *k = kdev_of(dev);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct fc_ioc_peer_import a = {
		.fd = fd,
		.offset = off,
		.len = (mem->peer_off + mem->pub.len + page - 1) & ~(page - 1),
	};
	int ret;

	if (!(k->info.features & FC_FEAT_PEER_IMPORT))
		return -EOPNOTSUPP;
	ret = k_ioctl(k, FC_IOC_PEER_IMPORT, &a);
	if (!ret)
		mem->handle = a.handle;
	return ret;
}

/* An entry of the board's peer window for imported @mem (PEER_WINDOW). */
static int kernel_pw_map(struct fc_dev *dev, struct fc__mem *mem,
			 unsigned int *entry)
{
	struct kdev *k = kdev_of(dev);
	struct fc_ioc_peer_window a = {
		.op = FC_PEER_WINDOW_MAP,
		.flags = FC_PEER_WINDOW_READ | FC_PEER_WINDOW_WRITE,
		.handle = (uint32_t)mem->handle,
		.offset = mem->peer_off,
		.len = mem->pub.len,
	};
	int ret;

	if (!(k->info.features & FC_FEAT_PEER_WINDOW))
		return -EOPNOTSUPP;
	ret = k_ioctl(k, FC_IOC_PEER_WINDOW, &a);
	if (!ret)
		*entry = a.entry;
	/* The arguments are the library's own: what the driver refuses is
	 * a range with no single bus address (not one mapping segment). */
	return ret == -EINVAL ? -EOPNOTSUPP : ret;
}

static int kernel_pw_unmap(struct fc_dev *dev, struct fc__mem *mem,
			   unsigned int entry)
{
	struct fc_ioc_peer_window a = {
		.op = FC_PEER_WINDOW_UNMAP,
		.entry = entry,
	};

	return k_ioctl(kdev_of(dev), FC_IOC_PEER_WINDOW, &a);
}

static int kernel_peer_export(struct fc_dev *dev, uint64_t off, uint64_t len,
			      int *fd)
{
	struct kdev *k = kdev_of(dev);
	struct fc_ioc_peer_export a = { .offset = off, .len = len };
	int ret;

	if (!(k->info.features & FC_FEAT_PEER_EXPORT))
		return -EOPNOTSUPP;
	ret = k_ioctl(k, FC_IOC_PEER_EXPORT, &a);
	if (!ret)
		*fd = a.fd;
	return ret;
}

/*
 * On engine @engine (below dev->engines): the driver runs a file's tickets
 * on one engine in order, on different engines side by side. A driver
 * without FC_FEAT_ENGINES has one queue (dev->engines 0): @engine is 0.
 */
static int kernel_submit(struct fc_dev *dev, unsigned int engine,
			 const struct fc_xfer *xfers, unsigned int n,
			 uint64_t *ticket)
{
	struct fc_ioc_xfer x[FC_MAX_CHAIN];
	struct fc_ioc_submit s = {
		.count = n,
		.xfers = (uintptr_t)x,
	};
	unsigned int i;
	int ret;

	if (engine) {
		s.flags |= FC_SUBMIT_ENGINE;
		s.engine = engine;
	}
	memset(x, 0, n * sizeof(x[0]));
	for (i = 0; i < n; i++) {
		if (xfers[i].flags & FC_XFER_F_CTRL) {
			/* A driver older than the flag. */
			if (!(kdev_of(dev)->info.features & FC_FEAT_XFER_CTRL))
				return -EOPNOTSUPP;
			x[i].flags |= FC_XFER_CTRL;
		}
		if (xfers[i].flags & FC_XFER_F_MORE) {
			/* A driver older than the flag. */
			if (!(kdev_of(dev)->info.features & FC_FEAT_XFER_MORE))
				return -EOPNOTSUPP;
			x[i].flags |= FC_XFER_MORE;
		}
		to_ioc_loc(dev, &xfers[i].src, &x[i].src);
		to_ioc_loc(dev, &xfers[i].dst, &x[i].dst);
		x[i].len = xfers[i].len;
	}
	ret = k_ioctl(kdev_of(dev), FC_IOC_SUBMIT, &s);
	if (!ret)
		*ticket = s.ticket;
	return ret;
}

static int kernel_wait(struct fc_dev *dev, uint64_t ticket, int timeout_ms,
		       struct fc_dma_result *res)
{
	struct fc_ioc_wait w = { .ticket = ticket, .timeout_ms = timeout_ms };
	int ret = k_ioctl(kdev_of(dev), FC_IOC_WAIT, &w);

	if (ret)
		return ret;
	memset(res, 0, sizeof(*res));
	res->status = w.status;
	res->hw_error = w.hw_error;
	res->hw_index = w.hw_index;
	return 0;
}

static int kernel_poll(struct fc_dev *dev, uint64_t ticket,
		       struct fc_dma_result *res, uint64_t *moved)
{
	int ret = kernel_wait(dev, ticket, 0, res);

	if (moved)
		*moved = 0; /* the board moves data on its own */
	return ret == -ETIMEDOUT ? -EINPROGRESS : ret;
}

static int kernel_reset(struct fc_dev *dev)
{
	struct fc_ioc_reset r = { 0 };

	return k_ioctl(kdev_of(dev), FC_IOC_RESET, &r);
}

/* ---- The fabric ---- */

/* The board moves packets on its own: nothing to do in the caller. */
static int kernel_progress(struct fc_dev *dev, uint64_t *moved)
{
	*moved = 0;
	return 0;
}

/*
 * The world from the registers a fabric manager set (hw.h
 * FC_ROUTER_FABRIC_*): the node is the rank. A board with no channel
 * endpoints, or a driver that cannot program them, is in no world.
 */
static int kernel_world(struct fc_dev *dev, struct fc_world *w)
{
	struct kdev *k = kdev_of(dev);
	uint32_t nodes = 0, topo = 0;
	int ret;

	k->fabric = false;
	if (!(k->info.hw_caps & FC_CAP_CHANNELS) ||
	    !(k->info.features & FC_FEAT_CHAN_RING))
		return -ENOTCONN;
	ret = kernel_reg_read(dev, FC_ROUTER_FABRIC_NODES, &nodes);
	if (!ret)
		ret = kernel_reg_read(dev, FC_ROUTER_FABRIC_TOPO, &topo);
	if (ret)
		return ret;
	if (!nodes || nodes > FC_MAX_NODES || k->info.node_id >= nodes ||
	    fc_topo_from_reg(nodes, topo, &k->topo))
		return -ENOTCONN;
	memset(w, 0, sizeof(*w));
	w->rank = k->info.node_id;
	w->size = nodes;
	w->node_id = k->info.node_id;
	ret = fc_topo_format(&k->topo, w->topology, sizeof(w->topology));
	if (!ret)
		k->fabric = true;
	return ret;
}

static int kernel_hops(struct fc_dev *dev, uint32_t node, uint32_t *hops)
{
	struct kdev *k = kdev_of(dev);

	if (!k->fabric)
		return -ENOTCONN;
	*hops = fc_topo_hops(&k->topo, k->info.node_id, node);
	return 0;
}

/* Known for the driver's own memory only (MEM_ALLOC: one bus range). */
static int kernel_mem_bus(struct fc_dev *dev, struct fc__mem *mem,
			  uint64_t *bus)
{
	struct kdev *k = kdev_of(dev);
	struct fc_ioc_mem_info mi = { .handle = (uint32_t)mem->handle };
	int ret;

	if (!(k->info.features & FC_FEAT_MEM_INFO))
		return -EOPNOTSUPP;
	ret = k_ioctl(k, FC_IOC_MEM_INFO, &mi);
	if (ret)
		return ret;
	if (!(mi.out_flags & FC_MEM_INFO_CONTIG))
		return -EOPNOTSUPP;
	*bus = mi.bus_addr;
	return 0;
}

static int kernel_chan_ring(struct fc_dev *dev, uint32_t chan,
			    struct fc__mem *mem, uint64_t off, uint32_t slots,
			    uint32_t *head)
{
	struct fc_ioc_chan_ring r = { .chan = chan };
	int ret;

	if (mem) {
		r.handle = (uint32_t)mem->handle;
		r.offset = off;
		r.slots = slots;
	} else {
		r.flags = FC_CHAN_RING_OFF;
	}
	ret = k_ioctl(kdev_of(dev), FC_IOC_CHAN_RING, &r);
	if (!ret && head)
		*head = r.head;
	return ret;
}

static int kernel_chan_head(struct fc_dev *dev, uint32_t chan, uint32_t head)
{
	struct fc_ioc_chan_head h = { .chan = chan, .head = head };

	return k_ioctl(kdev_of(dev), FC_IOC_CHAN_HEAD, &h);
}

/* The board's event queue, through the driver (FC_FEAT_EQ). */
static int kernel_eq_set(struct fc_dev *dev, struct fc__mem *mem, uint64_t off,
			 uint32_t slots)
{
	struct kdev *k = kdev_of(dev);
	struct fc_ioc_eq a = { .flags = FC_EQ_OFF };

	if (!(k->info.features & FC_FEAT_EQ))
		return -EOPNOTSUPP;
	int ret;

	if (mem) {
		a.flags = 0;
		a.handle = (uint32_t)mem->handle;
		a.offset = off;
		a.slots = slots;
	}
	k->eq = NULL;
	ret = k_ioctl(k, FC_IOC_EQ, &a);
	if (!ret && mem) {
		k->eq = (const struct fc_hw_pkt *)((uint8_t *)mem->pub.addr +
						   off);
		k->eq_slots = slots;
	}
	return ret;
}

/*
 * Sleep at most @max_ns. Where the driver can (EQ_WAIT), wake as soon as
 * the event queue's next entry lands: a message ends the sleep at once,
 * by the queue's interrupt. With that entry already there (news the
 * library has not taken yet), or no queue, a plain sleep.
 */
static void kernel_idle(struct fc_dev *dev, uint64_t max_ns)
{
	struct kdev *k = kdev_of(dev);
	struct fc_ioc_eq_wait w = {
		.entry = dev->eq_next,
		.timeout_us = max_ns >= 1000 ? (uint32_t)(max_ns / 1000) : 1,
	};
	struct timespec ts = { 0, (long)max_ns };
	uint32_t hdr;
	int ret;

	if (k->eq && (k->info.features & FC_FEAT_EQ_WAIT)) {
		hdr = le32toh(
			__atomic_load_n(&k->eq[w.entry & (k->eq_slots - 1)].hdr,
					__ATOMIC_ACQUIRE));
		if ((hdr & FC_EQ_PHASE) !=
		    FC_EQ_PHASE_OF(w.entry, k->eq_slots)) {
			ret = k_ioctl(k, FC_IOC_EQ_WAIT, &w);
			if (!ret || ret == -ETIMEDOUT || ret == -EINTR)
				return;
		}
	}
	nanosleep(&ts, NULL);
}

static int kernel_chan_eq(struct fc_dev *dev, uint32_t chan)
{
	struct fc_ioc_chan_ring r = { .chan = chan, .flags = FC_CHAN_RING_EQ };

	return k_ioctl(kdev_of(dev), FC_IOC_CHAN_RING, &r);
}

static int kernel_eq_head(struct fc_dev *dev, uint32_t head)
{
	struct fc_ioc_eq_head h = { .head = head };

	return k_ioctl(kdev_of(dev), FC_IOC_EQ_HEAD, &h);
}

/* What the board knows of the node: down (left or died), else alive. */
static int kernel_node_state(struct fc_dev *dev, uint32_t node)
{
	uint32_t off = node < 32 ? FC_ROUTER_NODES_DOWN_LO :
				   FC_ROUTER_NODES_DOWN_HI;
	uint32_t down = 0;
	int ret;

	if (node >= FC_MAX_NODES)
		return -EINVAL;
	ret = kernel_reg_read(dev, off, &down);
	if (ret)
		return ret;
	return down & (1u << (node % 32)) ? FC__NODE_DEAD : FC__NODE_ALIVE;
}

/*
 * Map the PIO pages once, at the first small send: a board's pages go to
 * the first file that maps them, and a tool that opens the board for a
 * look should not take them from the program that sends.
 */
static int pio_map(struct kdev *k)
{
	void *p;

	if (forked(k))
		return -EBADFD;
	if (k->pio)
		return 0;
	if (k->pio_tried)
		return -EOPNOTSUPP;
	k->pio_tried = true;
	if (!(k->info.features & FC_FEAT_PIO) ||
	    !(k->info.hw_caps & FC_CAP_PIO_SEND))
		return -EOPNOTSUPP;
	p = mmap(NULL, FC_MMAP_PIO_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		 k->fd, FC_MMAP_PIO);
	if (p == MAP_FAILED)
		return -errno; /* -EBUSY: another file of this board has them */
	k->pio = p;
	k->pio_tail = k->pio[(FC_PIO_TAIL - FC_PIO_BASE) / 4];
	/* For comparison (scripts/vm/bench-pio.sh): kick whatever WATCH says. */
	k->pio_kick_always = fc__env_size("FPGACOMM_PIO_KICK", 0) != 0;
	return 0;
}

/* Room in the window (mapped write-combined): the library writes the
 * packets in place, then kernel_pio_post(). */
static struct fc_hw_pkt *kernel_pio_room(struct fc_dev *dev, unsigned int n,
					 uint32_t *tail)
{
	struct kdev *k = kdev_of(dev);
	uint32_t head;

	if (pio_map(k))
		return NULL;
	head = k->pio[(FC_PIO_HEAD - FC_PIO_BASE) / 4];
	if (FC_PIO_SLOTS - (k->pio_tail - head) < n)
		return NULL;
	*tail = k->pio_tail;
	return (struct fc_hw_pkt *)((uint8_t *)k->pio + FC_PIO_WINDOW -
				    FC_PIO_BASE);
}

/* PIO_TAIL after the packets (and a kick where it is needed). */
static uint32_t kernel_pio_post(struct fc_dev *dev, uint32_t end)
{
	struct kdev *k = kdev_of(dev);
	struct fc_ioc_pio_kick kick = { 0 };

	k->pio_tail = end;
	/* The write-combined packets reach the board before the TAIL. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	k->pio[(FC_PIO_TAIL - FC_PIO_BASE) / 4] = k->pio_tail;
	/*
	 * The packets are the board's now, kicked or not (sending them again
	 * as a chain would send them twice): a board that missed the kick
	 * finds them at its next look. A board that watches TAIL needs none:
	 * TAIL, a full barrier, then WATCH (hw.h FC_PIO_WATCH).
	 */
	if (k->info.features & FC_FEAT_PIO_KICK) {
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (k->pio_kick_always ||
		    !__atomic_load_n(&k->pio[(FC_PIO_WATCH - FC_PIO_BASE) / 4],
				     __ATOMIC_RELAXED))
			k_ioctl(k, FC_IOC_PIO_KICK, &kick);
	}
	return __atomic_load_n(&k->pio[(FC_PIO_HEAD - FC_PIO_BASE) / 4],
			       __ATOMIC_ACQUIRE);
}

static uint32_t kernel_pio_head(struct fc_dev *dev)
{
	struct kdev *k = kdev_of(dev);

	/* A child's copies of the parent's sends: not its to wait for. */
	if (!k->pio || forked(k))
		return k->pio_tail;
	return __atomic_load_n(&k->pio[(FC_PIO_HEAD - FC_PIO_BASE) / 4],
			       __ATOMIC_ACQUIRE);
}

const struct fc__backend fc__kernel_backend = {
	.name = "kernel",
	.open = kernel_open,
	.close = kernel_close,
	.reg_read = kernel_reg_read,
	.reg_write = kernel_reg_write,
	.mem_map = kernel_mem_map,
	.mem_unmap = kernel_mem_unmap,
	.submit = kernel_submit,
	.poll = kernel_poll,
	.wait = kernel_wait,
	.reset = kernel_reset,
	.progress = kernel_progress,
	.world = kernel_world,
	.hops = kernel_hops,
	.node_state = kernel_node_state,
	.mem_bus = kernel_mem_bus,
	.mem_alloc_contig = kernel_mem_alloc_contig,
	.chan_ring = kernel_chan_ring,
	.chan_head = kernel_chan_head,
	.eq_set = kernel_eq_set,
	.chan_eq = kernel_chan_eq,
	.eq_head = kernel_eq_head,
	.pio_room = kernel_pio_room,
	.pio_post = kernel_pio_post,
	.pio_head = kernel_pio_head,
	.peer_import = kernel_peer_import,
	.pw_map = kernel_pw_map,
	.pw_unmap = kernel_pw_unmap,
	.peer_export = kernel_peer_export,
	.endpoints_off_unopened = true,
	.idle = kernel_idle,
};
