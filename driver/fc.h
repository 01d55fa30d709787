/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fpgacomm driver: private definitions shared by the driver's files.
 */
#ifndef _FC_H
#define _FC_H

#include <linux/atomic.h>
#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/dmapool.h>
#include <linux/hrtimer.h>
#include <linux/io.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/rwsem.h>
#include <linux/scatterlist.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include <fpgacomm/hw.h>
#include <uapi/fpgacomm.h>

/*
 * Kernel interfaces that changed, chosen by what the headers declare
 * (the FC_HAVE_* probes in Kbuild), not by version numbers.
 */
static inline void fc_vm_flags_set(struct vm_area_struct *vma,
				   vm_flags_t flags)
{
#ifdef FC_HAVE_VM_FLAGS_SET
	vm_flags_set(vma, flags);	/* 6.3: vm_flags is read-only */
#else
	vma->vm_flags |= flags;
#endif
}

#ifdef FC_HAVE_CLASS_CREATE_NAME
#define fc_class_create(name)	class_create(name)	/* 6.4 */
#else
#define fc_class_create(name)	class_create(THIS_MODULE, name)
#endif

/* 6.10: it cannot fail (every bus has the parameters now). */
static inline int fc_dma_set_max_seg_size(struct device *dev, unsigned int size)
{
#ifdef FC_HAVE_DMA_SEG_SIZE_VOID
	dma_set_max_seg_size(dev, size);
	return 0;
#else
	return dma_set_max_seg_size(dev, size);
#endif
}

/* 6.8 named it INTX; LEGACY went in 6.10. A macro: probed by itself. */
#ifndef PCI_IRQ_INTX
#define PCI_IRQ_INTX	PCI_IRQ_LEGACY
#endif

#ifdef FC_HAVE_EVENTFD_SIGNAL_CTX
#define fc_eventfd_signal(ctx)	eventfd_signal(ctx)	/* 6.8: always 1 */
#else
#define fc_eventfd_signal(ctx)	eventfd_signal(ctx, 1)
#endif

#define FC_DRV_NAME		"fpgacomm"
#define FC_MAX_BOARDS		64

/*
 * Tickets of a file not yet collected by a WAIT (queued, running or ended);
 * SUBMIT gives -EAGAIN beyond. Results are kept in a ring twice as large,
 * so that an uncollected result is never overwritten.
 */
#define FC_FILE_MAX_UNCOLLECTED	512
#define FC_FILE_RESULTS		1024	/* a power of two */
/*
 * Descriptor tables (FC_DMA_MAX_CHAIN descriptors, 8 KiB of the DMA pool
 * each) that the tickets of one file may hold until they end: 8 MiB. A
 * SUBMIT needing more than all of them gets -E2BIG; one that does not fit
 * beside the file's tickets still queued or running, -EAGAIN.
 */
#define FC_FILE_MAX_TABLES	1024
#define FC_FILE_MAX_DESC	(FC_FILE_MAX_TABLES * FC_DMA_MAX_CHAIN)
/* Bytes of one hardware chain's descriptor table. */
#define FC_TABLE_BYTES		(FC_DMA_MAX_CHAIN * FC_DESC_SIZE)

/* mmap offsets of MEM_ALLOC buffers: one 4 GiB window per handle. */
#define FC_MMAP_ALLOC_BASE	(1ull << 41)
#define FC_MMAP_ALLOC_SHIFT	32
#define FC_ALLOC_MAX_LEN	(1ull << FC_MMAP_ALLOC_SHIFT)
#define FC_MAX_HANDLE		((1u << 20) - 1)

/* Where the board stands in the machine's life (fc_reset.c). */
enum fc_state {
	FC_STATE_OK,		/* chains run */
	FC_STATE_RESETTING,	/* a PCI reset or error recovery is under way */
	FC_STATE_FAILED,	/* it did not come back: gone for every file */
	FC_STATE_SUSPENDED,
	FC_STATE_OFF,		/* shut down with the machine */
};

/* What a matching PCI ID is; stored in pci_device_id.driver_data. */
enum fc_board_type {
	FC_BOARD_NATIVE,	/* the real board: registers in BAR0 */
	FC_BOARD_IVSHMEM,	/* emulated board behind QEMU ivshmem */
};

/* A channel endpoint's receive ring, owned by the file that programmed it. */
struct fc_chan_ep {
	struct fc_file *owner;		/* NULL: switched off */
	struct fc_mem *mem;		/* the ring's buffer, referenced */
	u32 head;			/* last HEAD written */
	bool stale;			/* off; mem still held for the grace */
	bool eq;			/* delivers into the event queue */
};

/*
 * One DMA engine of the board and the tickets queued for it, all under
 * fc->lock (seq and deadline are also read by its timer).
 */
struct fc_engine {
	struct fc_dev *fc;
	unsigned int index;		/* FC_DMA_REG(index, ...) */
	struct list_head queue;		/* fc_chain waiting for the engine */
	struct fc_chain *running;	/* on the engine, or NULL */
	u64 starts;			/* tickets started on the engine */
	u32 seq;			/* last DOORBELL value written */
	u32 reset_seq;			/* last RESET value written */
	unsigned long deadline;		/* jiffies: the running chain's limit */
	/*
	 * Its reset went unacknowledged: the board may still be DMAing, so no
	 * chain starts on it and SUBMIT to it gives -EIO until the board is
	 * reset (fc_reset.c) or removed. The other engines go on.
	 */
	bool broken;
	struct hrtimer timer;		/* DONE_SEQ polling, and the deadline */
	u32 poll_ns;			/* current polling interval */
};

/* One entry of the board's peer window (fc_window.c), under win_lock. */
struct fc_pw_entry {
	struct fc_file *owner;		/* the file that mapped it; NULL: none */
	struct fc_mem *mem;		/* referenced; NULL: free */
	u32 handle;			/* the owner's handle of mem */
	u32 ctrl;			/* the last CTRL written */
	u16 gen;			/* its GEN */
	bool stuck;			/* revocation unacknowledged: kept */
	u64 freed;			/* win_clock when last freed */
};

struct fc_dev {
	struct device dev;	/* /dev/fpgacommN; its refcount frees us */
	struct cdev cdev;
	struct pci_dev *pdev;
	enum fc_board_type type;
	int minor;
	int regs_bar;
	void __iomem *regs;	/* FC_BAR0_SIZE bytes of registers */
	void __iomem *ivregs;	/* ivshmem's own registers, or NULL */
	phys_addr_t regs_phys;
	phys_addr_t aper_phys;
	u64 aper_size;

	/* Read once at probe. */
	u32 id;
	u32 version;
	u32 caps;
	u32 node_id;
	u32 num_dma;
	u32 num_ports;
	u64 mem_size;

	/* Held for reading by ioctls, for writing by remove. */
	struct rw_semaphore remove_sem;
	bool dead;		/* removed: every call gives -ENODEV */
	/*
	 * FC_STATE_*, written under mmap_lock: nothing starts, no BAR page
	 * goes in unless OK. BAR mappings made before the last quiesce
	 * (bar_gen, in their vm_private_data) get SIGBUS.
	 */
	int state;
	unsigned long bar_gen;
	/*
	 * mmap and BAR page faults against remove (dead), and mmap_mms:
	 * every process (struct fc_mm) that mapped a MEM_ALLOC buffer.
	 */
	struct mutex mmap_lock;
	struct list_head mmap_mms;
	/* The file holding the PIO send pages (FC_MMAP_PIO), under mmap_lock. */
	struct fc_file *pio_owner;
	/* Live MEM_ALLOC buffers (fc_mem.alloc_node), to free at remove. */
	struct mutex alloc_lock;
	struct list_head allocs;

	/* The DMA engines' queues (fc_engine.c), all under lock. */
	struct mutex lock;
	struct list_head files;		/* open fc_file */
	unsigned int nengines;		/* engines[] in use, at least 1 */
	struct fc_engine engines[FC_DMA_MAX_ENGINES];
	/* Ended chains the board may still reach (broken): kept to remove. */
	struct list_head parked;
	struct dma_pool *desc_pool;
	struct workqueue_struct *wq;
	struct work_struct work;	/* completion and timeout processing */

	int irq_mode;			/* FC_IRQ_MODE_* */
	int irq;			/* Linux irq of FC_IRQ_VEC_DMA, or -1 */
	int chan_irq;			/* of FC_IRQ_VEC_CHAN (MSI, MSI-X), or -1 */

	/* Channel endpoints (FC_CAP_CHANNELS), under chan_lock. */
	struct mutex chan_lock;
	struct fc_chan_ep chans[FC_MAX_CHANNELS];

	/*
	 * The event queue (FC_CAP_EVENT_QUEUE). eq_lock serialises its
	 * setup, HEAD and release (held while the board leaves it);
	 * eq_owner is also read and cleared under chan_lock, which
	 * CHAN_RING checks it under.
	 */
	struct mutex eq_lock;
	struct fc_file *eq_owner;	/* NULL: off */
	struct fc_mem *eq_mem;		/* the queue's buffer, referenced */
	u32 eq_slots;
	u64 eq_off;			/* the queue's offset in eq_mem */
	u32 eq_head;			/* last HEAD written */
	wait_queue_head_t eq_wq;	/* EQ_WAIT sleepers */
	atomic_t eq_waiters;		/* in EQ_WAIT: a removal waits for them */

	/* The peer window (FC_CAP_PEER_WINDOW, fc_window.c). */
	struct mutex win_lock;
	struct fc_pw_entry win[FC_PW_MAX_ENTRIES];
	u64 win_clock;
	/* Called by fc_peer.c when an exporter takes a region back. */
	void (*win_revoke_mem)(struct fc_dev *fc, struct fc_mem *m);
};

/* One registered, allocated or temporarily pinned piece of user memory. */
struct fc_mem {
	struct kref ref;
	struct fc_dev *fc;
	bool alloc;			/* MEM_ALLOC: coherent memory */
	u64 len;
	/* Pinned user memory. */
	struct sg_append_table sgt;
	enum dma_data_direction dir;
	bool mapped;
	bool need_sync;			/* registered, and syncs are not no-ops */
	bool dirty;			/* the board may have written it */
	unsigned long npages;		/* pinned and accounted */
	struct mm_struct *mm;		/* accounted to; mmgrab()bed */
	/* MEM_ALLOC memory; cpu is NULL once freed (remove). */
	struct list_head alloc_node;	/* in fc->allocs, under alloc_lock */
	void *cpu;
	dma_addr_t dma;
	size_t alloc_len;
	/* PEER_IMPORT: a dma-buf range, its bus addresses in sgt.sgt; freed
	 * by @release (fc_peer.c) once its last reference goes. */
	struct fc_peer *peer;
	void (*release)(struct fc_mem *m);
	bool revoked;			/* the exporter took it back (fc->lock) */
};

struct fc_result {
	u64 ticket;
	bool done;
	bool collected;			/* a WAIT returned it */
	s32 status;
	u32 hw_error;
	u32 hw_index;
};

/* An open file of /dev/fpgacommN. */
struct fc_file {
	struct fc_dev *fc;
	struct list_head node;		/* in fc->files, under fc->lock */
	struct address_space *mapping;	/* zapped when the board goes */
	struct xarray mems;		/* handle -> struct fc_mem */
	wait_queue_head_t wq;		/* chain ends */
	u64 last_ticket;		/* under fc->lock */
	/* Per engine, its starts when one of ours last started there,
	   under fc->lock; 0 never. */
	u64 served[FC_DMA_MAX_ENGINES];
	spinlock_t res_lock;		/* results, uncollected, event, tables */
	unsigned int uncollected;
	unsigned int tables;		/* held by tickets not ended */
	bool event;			/* a chain ended since the last WAIT */
	struct fc_result *results;	/* FC_FILE_RESULTS, by ticket */
	atomic_t peer_imports;		/* PEER_IMPORT handles held (max_imports) */
};

/* One hardware chain: up to FC_DMA_MAX_CHAIN descriptors. */
struct fc_table {
	struct fc_hw_desc *desc;
	dma_addr_t dma;
	unsigned int count;
};

/* Registered memory that a chain uses and syncs around its run. */
struct fc_sync {
	struct fc_mem *mem;		/* its reference is in fc_chain.mems */
	bool write;			/* the board may write it */
};

/* One ticket: the chains of one SUBMIT, run in order on one engine. */
struct fc_chain {
	struct list_head node;		/* an engine's queue, or a list to free */
	struct fc_file *ff;		/* valid while queued or running */
	u64 ticket;
	struct eventfd_ctx *efd;
	unsigned int nmems;
	struct fc_mem **mems;		/* references held */
	unsigned int nsyncs;
	struct fc_sync *syncs;		/* each need_sync mem once */
	unsigned int ntables;
	unsigned int charged;		/* tables counted in ff->tables */
	unsigned int cur;		/* table on the engine */
	struct fc_table *tables;
};

static inline u32 fc_rd32(const struct fc_dev *fc, u32 reg)
{
	return ioread32(fc->regs + reg);
}

static inline void fc_wr32(const struct fc_dev *fc, u32 reg, u32 val)
{
	iowrite32(val, fc->regs + reg);
}

/*
 * Tell the board that registers changed. Behind ivshmem the daemon hosting
 * the board is rung (ivshmem-plain ignores it; the daemon polls there).
 */
static inline void fc_ring(const struct fc_dev *fc)
{
	if (fc->ivregs)
		iowrite32(FC_IVSHMEM_DAEMON_PEER << 16 | 0,
			  fc->ivregs + FC_IVSHMEM_DOORBELL);
}

static inline struct fc_dev *to_fc_dev(struct device *dev)
{
	return container_of(dev, struct fc_dev, dev);
}

/* fc_main.c */
extern bool fc_param_poll;
extern unsigned int fc_param_dma_timeout_ms;
extern struct class *fc_class;
extern dev_t fc_devt;
extern struct ida fc_minors;

/* fc_pci.c */
int fc_pci_probe(struct pci_dev *pdev, const struct pci_device_id *ent);
void fc_pci_remove(struct pci_dev *pdev);

/* fc_reset.c: PCI reset and error recovery */
extern const struct pci_error_handlers fc_err_handlers;
void fc_quiesce(struct fc_dev *fc, int state, bool mmio);
int fc_restart(struct fc_dev *fc);
void fc_fail(struct fc_dev *fc, int why);
void fc_kill_files(struct fc_dev *fc);
void fc_board_set_shm_bus(struct fc_dev *fc);
const char *fc_state_name(const struct fc_dev *fc);

/* fc_pm.c: shutdown and power */
extern const struct dev_pm_ops fc_pm_ops;
void fc_pci_shutdown(struct pci_dev *pdev);

/* fc_cdev.c */
extern const struct file_operations fc_fops;

/* fc_mem.c */
int fc_mem_pin(struct fc_dev *fc, u64 addr, u64 len, bool write,
	       struct fc_mem **out);
void fc_mem_put(struct fc_mem *m);
struct fc_mem *fc_mem_lookup(struct fc_file *ff, u32 handle);
int fc_mem_get_span(struct fc_file *ff, u32 handle, u64 offset, u64 bytes,
		    struct fc_mem **out);
long fc_ioctl_mem_register(struct fc_file *ff, void __user *arg);
long fc_ioctl_mem_alloc(struct fc_file *ff, void __user *arg);
long fc_ioctl_mem_unregister(struct fc_file *ff, void __user *arg);
long fc_ioctl_mem_info(struct fc_file *ff, void __user *arg);
int fc_mmap_alloc(struct fc_file *ff, struct vm_area_struct *vma, u64 off);
void fc_mmap_settle(struct list_head *mms);
void fc_mem_release_all(struct fc_file *ff);
void fc_mem_kill_allocs(struct fc_dev *fc);

/* fc_dma.c: tickets */
void fc_dma_kill(struct fc_dev *fc);
long fc_ioctl_submit(struct fc_file *ff, void __user *arg);
long fc_ioctl_wait(struct fc_file *ff, void __user *arg);
long fc_ioctl_reset(struct fc_file *ff, void __user *arg);
/* fc_ticket.c: a ticket's chains once built */
void fc_chain_sync_for_device(struct fc_dev *fc, struct fc_chain *c);
void fc_chain_sync_for_cpu(struct fc_dev *fc, struct fc_chain *c);
void fc_chain_free(struct fc_dev *fc, struct fc_chain *c);
void fc_chains_free(struct fc_dev *fc, struct list_head *list);
void fc_chain_end(struct fc_chain *c, int status, u32 hw_error,
		  u32 hw_index, struct list_head *done);
/* Give the tables of @c back to the file's budget (res_lock held). */
static inline void fc_file_uncharge_locked(struct fc_file *ff,
					   struct fc_chain *c)
{
	ff->tables -= c->charged;
	c->charged = 0;
}

/* fc_engine.c: the engines that run them */
int fc_dma_init(struct fc_dev *fc);
void fc_dma_fini(struct fc_dev *fc);
void fc_dma_process(struct fc_dev *fc);
int fc_dma_board_reset(struct fc_dev *fc, u32 val);
int fc_board_reset_wait(struct fc_dev *fc, u32 val);
void fc_engine_kick(struct fc_engine *eng);
void fc_engine_stop(struct fc_engine *eng, int status, u32 hw_error,
		    u32 hw_index, struct list_head *done);
int fc_engine_cancel(struct fc_engine *eng, struct fc_file *ff, int status,
		     bool reset_idle, struct list_head *done);

/* fc_desc.c: a SUBMIT's transfers checked, its descriptors built from
 * what it resolved for each transfer */
struct fc_xfer_res {
	struct fc_mem *src;
	struct fc_mem *dst;
};
int fc_check_xfer(struct fc_dev *fc, const struct fc_ioc_xfer *x,
		  const struct fc_ioc_xfer *next);
long fc_chain_walk(struct fc_chain *c, const struct fc_ioc_xfer *x,
		   const struct fc_xfer_res *res, unsigned int n, bool fill);
int fc_chain_alloc_tables(struct fc_dev *fc, struct fc_chain *c,
			  unsigned long ndesc);
int fc_chain_mark_ends(struct fc_chain *c);
void fc_dma_release_file(struct fc_file *ff);
bool fc_dma_file_event(struct fc_file *ff);

/* fc_chan.c */
long fc_ioctl_chan_ring(struct fc_file *ff, void __user *arg);
long fc_ioctl_chan_head(struct fc_file *ff, void __user *arg);
void fc_chan_release_file(struct fc_file *ff);
void fc_chan_leave_eq(struct fc_file *ff);

/* fc_eq.c */
long fc_ioctl_eq(struct fc_file *ff, void __user *arg);
long fc_ioctl_eq_head(struct fc_file *ff, void __user *arg);
long fc_ioctl_eq_wait(struct fc_file *ff, void __user *arg);
void fc_eq_release_file(struct fc_file *ff);
void fc_eq_kill(struct fc_dev *fc);

/* fc_pio.c */
bool fc_pio_offered(const struct fc_dev *fc);
int fc_pio_window(const struct fc_dev *fc, u64 off, phys_addr_t *phys,
		  u64 *left);
int fc_pio_claim(struct fc_file *ff);
void fc_pio_release_file(struct fc_file *ff);
long fc_ioctl_pio_kick(struct fc_file *ff, void __user *arg);
void fc_chan_kill(struct fc_dev *fc);

/* fc_peer.c: dma-bufs imported as peer regions */
extern unsigned int fc_param_max_imports;
int fc_peer_init(void);
void fc_peer_exit(void);
void fc_peer_flush(void);
long fc_ioctl_peer_import(struct fc_file *ff, void __user *arg);

/* fc_window.c: the board's peer window */
int fc_window_init(struct fc_dev *fc);
long fc_ioctl_peer_window(struct fc_file *ff, void __user *arg);
long fc_window_mem_unregister(struct fc_file *ff, void __user *arg);
void fc_window_release_file(struct fc_file *ff);
void fc_window_kill(struct fc_dev *fc);
void fc_window_off(struct fc_dev *fc);
bool fc_window_busy(struct fc_dev *fc);
/* fc_dma.c, for peer regions */
void fc_dma_revoke(struct fc_dev *fc, struct fc_mem *m);
/* fc_mem.c, for peer regions */
struct fc_mem *fc_mem_new(struct fc_dev *fc);
int fc_mem_publish_handle(struct fc_file *ff, struct fc_mem *m, u32 *handle);

/* fc_export.c: the aperture exported as dma-bufs */
long fc_ioctl_peer_export(struct fc_file *ff, void __user *arg);
void fc_export_kill(struct fc_dev *fc);

/* fc_irq.c */
int fc_irq_init(struct fc_dev *fc);
void fc_irq_fini(struct fc_dev *fc);
void fc_irq_arm(struct fc_engine *eng);
void fc_irq_mask(struct fc_dev *fc);
void fc_irq_unmask(struct fc_dev *fc);
const char *fc_irq_mode_name(int mode);

/* fc_sysfs.c */
extern const struct attribute_group *fc_groups[];

#endif /* _FC_H */
