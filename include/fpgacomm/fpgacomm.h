/* SPDX-License-Identifier: MIT */
/*
 * libfpgacomm: host library for fpgacomm boards (real or emulated).
 *
 * Conventions: every function returns 0 (or a count where documented) on
 * success and a negative errno on failure; fc_strerror() turns one into
 * text. Results are passed back through out-parameters. A device handle may
 * be shared by threads; calls on it are serialised inside the library.
 */
#ifndef FPGACOMM_H
#define FPGACOMM_H

#include <stddef.h>
#include <stdint.h>

#include <fpgacomm/hw.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FC_API_VERSION_MAJOR	0
#define FC_API_VERSION_MINOR	5

struct fc_dev;

/* ---- Devices ---- */

/*
 * fc_open - open a board.
 * @name: "/dev/fpgacommN" (kernel driver), "emu:CLUSTER/N" (emulated board N
 *        of an emulated cluster; "emu:" alone means "emu:local/0", and
 *        the cluster "local" is each user's own, local-UID), or NULL
 *        for $FPGACOMM_DEVICE, else /dev/fpgacomm0 if present, else "emu:".
 * Emulated boards read $FPGACOMM_EMU_MEM (board memory size, e.g. "8G";
 * default 8 GiB, reserved but not backed by RAM until written).
 * RETURN VALUE: 0 and *devp set; -EINVAL bad name, -ENOENT no such board,
 * -EPROTO the board's ID or version is not one this library speaks,
 * -ENOMEM, or the error of the underlying open. An emulated cluster's
 * object that is not ours (-EPERM), has another mode (-EACCES) or is no
 * cluster object (-EBADMSG) is refused, and a line on stderr names it
 * and, if another user's, its owner.
 * fc_open never resets the board (other programs may be using it): it
 * starts each receive ring at its endpoint's TAIL, as it finds it.
 * A handle belongs to the process that opened it. In a child of fork(),
 * calls on a handle of a kernel board inherited from the parent fail with
 * -EBADFD (they would act on the parent's chains, buffers and rings, and
 * the PIO window is not mapped in the child), and fc_close() of it frees
 * the child's copy only; the child opens the board again for its own use.
 */
int fc_open(struct fc_dev **devp, const char *name);

/*
 * fc_open_flags - fc_open() with @flags:
 * FC_OPEN_THREAD_SINGLE: the program calls the library from one thread at a
 *   time (MPI_THREAD_SINGLE, FUNNELED or SERIALIZED; a program that hands
 *   the calls from one thread to another orders them itself, with a lock
 *   or a join). Channel sends, receives, request tests and waits and
 *   progress then take neither the board's lock nor its channels': a
 *   small message costs fewer instructions. Two threads inside the library at once, on this
 *   board or on any board or group of the process, are then a race.
 * The environment can declare the same for every fc_open() of the
 * process: FPGACOMM_THREAD=single (or funneled, or serialized).
 * RETURN VALUE: as fc_open(); -EINVAL also for an unknown flag.
 */
#define FC_OPEN_THREAD_SINGLE	(1u << 0)
int fc_open_flags(struct fc_dev **devp, const char *name, unsigned int flags);

/* fc_close - close a board, freeing every buffer still registered on it.
 * Channel sends that completed before it are delivered all the same: their
 * peer receives them after this board has left, even on a channel it opens
 * only then (fc_chan_open()). Sends the library itself still owes (a
 * fc_chan_send() that returned -ETIMEDOUT and goes on from a copy, the
 * collectives' and the protocols' own messages already sent on their
 * channel) are let finish first,
 * within bounds: fc_close() gives them up once none has ended for 1 s (a
 * peer that does not take them: gone, or not reading) and after 10 s in
 * all. Requests the caller still holds (fc_chan_isend() not waited for)
 * are abandoned: their handles turn stale, and a message cut off midway
 * is dropped whole by its receiver, never delivered in part.
 * RETURN VALUE: 0, or -EINVAL if @dev is NULL or not an open board (closed
 * already: a second fc_close() of the same handle is caught, unless a later
 * fc_open() got the same address). */
int fc_close(struct fc_dev *dev);

/*
 * fc_sim_time_ns - the board's simulated clock, in nanoseconds: on an
 * emulated board running a timing model (FPGACOMM_EMU_MODEL names a
 * profile, docs/model.md), the time the modelled hardware would have
 * taken so far; it moves only by the model's costs, so the same program on
 * the same input reads the same times whatever the host's load. Read it
 * beside the wall clock, e.g. before and after a ping-pong.
 * RETURN VALUE: 0 and *ns set; -EINVAL on NULL; -EOPNOTSUPP with no model
 * on (a kernel board, or FPGACOMM_EMU_MODEL unset).
 */
int fc_sim_time_ns(struct fc_dev *dev, uint64_t *ns);
/* fc_sim_time_ps - the same clock in picoseconds, its own resolution: an
 * interval between two reads is then exact (whole nanoseconds cut the
 * start and the end apart). RETURN VALUE: as fc_sim_time_ns(). */
int fc_sim_time_ps(struct fc_dev *dev, uint64_t *ps);

#define FC_NAME_MAX	64

struct fc_info {
	char name[FC_NAME_MAX];		/* as opened, e.g. "emu:local/0" */
	char backend[16];		/* "emu" or "kernel" */
	uint32_t hw_id;			/* FC_REG_ID */
	uint32_t hw_version;		/* major << 16 | minor */
	uint32_t caps;			/* FC_CAP_* from hw.h */
	uint32_t node_id;		/* fabric node */
	uint32_t dma_engines;
	uint32_t num_ports;
	uint32_t link_state;		/* bit p-1: link port p up */
	uint32_t max_chain;		/* descriptors per submit (255) */
	uint64_t max_xfer_len;		/* bytes per transfer */
	uint64_t board_mem_size;	/* bytes of board memory */
	int32_t numa_node;		/* -1 when unknown */
	uint32_t reserved[7];
};

/* fc_query - describe an open board.
 * RETURN VALUE: 0 and *info filled, -EINVAL on NULL arguments. */
int fc_query(struct fc_dev *dev, struct fc_info *info);

/* ---- Registers, for bring-up (offsets from <fpgacomm/hw.h>) ---- */

/* RETURN VALUE: 0; -EINVAL for an offset that is unaligned or beyond BAR0. */
int fc_reg_read(struct fc_dev *dev, uint32_t off, uint32_t *val);
int fc_reg_write(struct fc_dev *dev, uint32_t off, uint32_t val);

/*
 * fc_reg_lookup - find a register by name ("DMA0_STATUS", "ID", ...).
 * RETURN VALUE: 0 and *off set; -ENOENT for an unknown name.
 * fc_reg_name - the name of the register at @off, into @buf.
 * RETURN VALUE: 0; -ENOENT when no register is defined there.
 */
int fc_reg_lookup(const char *name, uint32_t *off);
int fc_reg_name(uint32_t off, char *buf, size_t len);

/*
 * fc_reg_foreach - call @fn for every named register, in offset order,
 * stopping early when @fn returns non-zero.
 * RETURN VALUE: the first non-zero value @fn returned, else 0.
 */
int fc_reg_foreach(int (*fn)(const char *name, uint32_t off, void *arg),
		   void *arg);

/* ---- Host memory the board can reach ---- */

/*
 * A buffer registered with a board. addr and len are read-only for the
 * caller; the rest belongs to the library.
 */
struct fc_mem {
	void *addr;
	size_t len;
};

#define FC_MEM_NUMA_ANY		(1u << 0)	/* do not bind to the board's node */

/*
 * fc_mem_alloc - allocate @len bytes of page-aligned host memory, zeroed,
 * on the board's NUMA node (libnuma) and register it for DMA.
 * RETURN VALUE: 0 and *memp set; -EINVAL (NULL, zero length, unknown
 * flags), -ENOMEM.
 */
int fc_mem_alloc(struct fc_dev *dev, size_t len, unsigned int flags,
		 struct fc_mem **memp);

/*
 * fc_mem_register - let the board reach the caller's memory [addr, addr+len).
 * Any alignment. The memory must stay valid until fc_mem_free().
 * RETURN VALUE: 0 and *memp set; -EINVAL, -ENOMEM, -EFAULT.
 */
int fc_mem_register(struct fc_dev *dev, void *addr, size_t len,
		    unsigned int flags, struct fc_mem **memp);

/*
 * fc_mem_free - unregister a buffer (and free it if fc_mem_alloc made it).
 * RETURN VALUE: 0; -EINVAL if @mem is not a live buffer of @dev (a double
 * free is caught this way); -EBUSY if a submitted transfer still uses it,
 * or a channel message (a collective's) moves from or into it.
 */
int fc_mem_free(struct fc_dev *dev, struct fc_mem *mem);

/* ---- Peer memory: dma-bufs and GPU memory ---- */

/*
 * fc_peer_import - let the board reach [off, off + len) of another
 * device's memory, given as a dma-buf file descriptor @fd (a GPU's, a
 * NIC's, another board's from fc_peer_export()): the result is a buffer
 * like a registered one, named fc_host(*memp, o) as source or destination
 * of fc_dma_submit(); its addr is NULL (map the dma-buf to see it). The
 * board's driver attaches to the dma-buf, peer-to-peer where the board
 * can (FC_CAP_PEER_MAP), and pins it; @fd may be closed afterwards.
 * fc_mem_free() releases it. Should the exporter take the memory back,
 * chains naming the buffer end with -ENOLINK, and so do later submits:
 * free it. On a board emulated in this process, @fd is any file the
 * process can map shared and read-write (a memfd, a file, a dma-buf): the
 * emulated board reaches that mapping, so that another process's or
 * device's shared memory can stand in for a peer's.
 * RETURN VALUE: 0 and *memp set; -EINVAL (NULL, negative @fd, zero
 * length, flags, @fd not a dma-buf or, emulated, not mappable), -EBADF
 * (@fd not open), -EACCES (emulated: @fd not open read-write), -ERANGE
 * (past the dma-buf's or file's end), -EOPNOTSUPP (a driver without
 * PEER_IMPORT), -EMFILE (kernel driver: @dev holds max_imports peer
 * buffers already, 1024 by default; free one first), -ENOMEM, or the
 * exporter's error.
 */
int fc_peer_import(struct fc_dev *dev, int fd, uint64_t off, size_t len,
		   unsigned int flags, struct fc_mem **memp);

/*
 * fc_peer_export - a dma-buf of [off, off + len) of the board's aperture
 * (its window onto board memory) for another device's driver to import
 * (peer-to-peer), or to mmap. @off and @len are multiples of the page
 * size. The caller owns *fd and closes it; the dma-buf outlives the
 * device handle, not the board: when the board is removed, its importers
 * are told and its mappings fault (SIGBUS).
 * RETURN VALUE: 0 and *fd set (close-on-exec); -EINVAL (NULL, zero
 * length, flags, unaligned), -ERANGE (past the aperture), -EOPNOTSUPP (an
 * emulated board in this process, no aperture, or no PEER_EXPORT).
 */
int fc_peer_export(struct fc_dev *dev, uint64_t off, size_t len,
		   unsigned int flags, int *fd);

/*
 * fc_peer_import_cuda - fc_peer_import() of CUDA device memory
 * [dptr, dptr + len) (a CUdeviceptr; any alignment), within one
 * allocation. The CUDA driver is loaded at run time (libcuda.so.1; no
 * build dependency). For a kernel board it makes a dma-buf of the range
 * (cuMemGetHandleForAddressRange), which the board's driver imports; call
 * it from a thread with the pointer's CUDA context current. A board
 * emulated in this process maps the range as a window of bus addresses
 * that only its engine reaches: chains move its bytes with
 * cuMemcpyHtoD/DtoH in the memory's own context, so from any thread.
 * Other boards reach it by the fabric address fc_mem_fabric_addr() gives
 * (an entry of this board's peer window): fc_put() and fc_get() move GPU
 * memory between boards both ways. Should the memory be freed first,
 * chains naming it end with -EFAULT.
 * RETURN VALUE: 0 and *memp set; -EINVAL (NULL, zero, flags, not device
 * memory), -ERANGE (wraps, or runs past the allocation), -ENODEV (no
 * CUDA driver or no GPU), -EOPNOTSUPP (no dma-buf from this driver or
 * GPU, or memory of no context), -EIO (another CUDA error), or as
 * fc_peer_import().
 */
int fc_peer_import_cuda(struct fc_dev *dev, uint64_t dptr, size_t len,
			unsigned int flags, struct fc_mem **memp);

/*
 * fc_cuda_available - can this process use CUDA device memory with the
 * library (a CUDA driver, libcuda.so.1, loads and initialises)? The answer
 * is found once and kept.
 * RETURN VALUE: 0 yes; -ENODEV no CUDA driver or no usable GPU.
 */
int fc_cuda_available(void);

/* ---- GPU memory across processes: CUDA IPC handles ---- */

#define FC_CUDA_IPC_HANDLE_SIZE	64

/*
 * CUDA device memory of one process named for another (cuIpcGetMemHandle):
 * plain bytes, to be passed by any means (a pipe, a channel message).
 */
struct fc_cuda_ipc {
	uint8_t handle[FC_CUDA_IPC_HANDLE_SIZE];	/* CUDA's, opaque */
	uint64_t off;		/* the pointer's offset in its allocation */
	uint64_t len;		/* bytes from the pointer to the allocation's end */
};

/*
 * fc_cuda_ipc_export - name CUDA device memory at @dptr (made with
 * cuMemAlloc or cudaMalloc, in this process) for another process's
 * fc_peer_import_cuda_ipc(). It stays valid while the allocation lives.
 * RETURN VALUE: 0 and *ipc set; -EINVAL (NULL, zero, not device memory),
 * -ENODEV (no CUDA driver or GPU), -EOPNOTSUPP (no CUDA IPC, or memory of
 * no context), -EIO (another CUDA error).
 */
int fc_cuda_ipc_export(uint64_t dptr, struct fc_cuda_ipc *ipc);

/*
 * fc_peer_import_cuda_ipc - fc_peer_import_cuda() of [off, off + len)
 * from the pointer another process named in @ipc: the allocation is opened
 * in this process (cuIpcOpenMemHandle, in the calling thread's current
 * context, else device 0's primary context, retained for the life of the
 * process) and closed again by fc_mem_free(). The exporting process keeps
 * the allocation alive meanwhile. CUDA describes an IPC mapping no further,
 * so the range is taken from @ipc as the exporter wrote it.
 * RETURN VALUE: 0 and *memp set; -EINVAL (NULL, zero length, flags, a
 * handle CUDA does not take), -ERANGE (past the allocation's end),
 * -ENODEV, -EOPNOTSUPP, -EIO, or as fc_peer_import_cuda().
 */
int fc_peer_import_cuda_ipc(struct fc_dev *dev, const struct fc_cuda_ipc *ipc,
			    uint64_t off, size_t len, unsigned int flags,
			    struct fc_mem **memp);

/* ---- Chaining DMA ---- */

/* Where one end of a transfer is (an address space of hw.h). */
struct fc_loc {
	uint32_t space;		/* FC_SPACE_HOST, _BOARD or _FABRIC */
	uint32_t reserved;	/* must be zero */
	struct fc_mem *mem;	/* FC_SPACE_HOST: the buffer; else NULL */
	uint64_t addr;		/* offset in mem, board address or fabric address */
};

struct fc_xfer {
	struct fc_loc src;
	struct fc_loc dst;
	uint64_t len;		/* 1..fc_info.max_xfer_len */
	uint32_t flags;		/* FC_XFER_F_* */
	uint32_t reserved;	/* must be zero */
};

/*
 * The channel message this transfer sends goes on in the next transfer of
 * the chain (FC_DESC_F_MORE): a message gathered from several pieces. Only
 * for a destination that is a fabric channel address (FC_FABRIC_CHAN), and
 * never on a chain's last transfer. On the kernel backend it needs a
 * driver with FC_FEAT_XFER_MORE (-EOPNOTSUPP otherwise).
 */
#define FC_XFER_F_MORE	(1u << 0)
/*
 * The channel message this transfer sends is a control message
 * (FC_DESC_F_CTRL): it arrives as FC_PKT_T_CTRL packets, in order with the
 * channel's data but told apart from it. The library's channels use it for
 * their own protocol (a channel's peer drops control messages it does not
 * understand). Only towards a fabric channel address; F_MORE only between
 * transfers that both have it. On the kernel backend it needs a driver
 * with FC_FEAT_XFER_CTRL (-EOPNOTSUPP otherwise).
 */
#define FC_XFER_F_CTRL	(1u << 1)

static inline struct fc_loc fc_host(struct fc_mem *mem, uint64_t off)
{
	struct fc_loc l = { FC_SPACE_HOST, 0, mem, off };
	return l;
}

static inline struct fc_loc fc_board(uint64_t addr)
{
	struct fc_loc l = { FC_SPACE_BOARD, 0, NULL, addr };
	return l;
}

#define FC_MAX_CHAIN	255

/*
 * fc_dma_submit - queue @n transfers (1..FC_MAX_CHAIN) as one chain: one
 * doorbell for all of them. Chains run in submission order.
 * @ticket: set to the chain's ticket for fc_dma_wait()/fc_dma_poll().
 * RETURN VALUE: 0; -EINVAL (NULL, unknown flags or spaces, non-zero
 * reserved fields, zero or too long a transfer), -E2BIG (n out of range,
 * or on the kernel backend more descriptors than the driver lets one
 * file hold: fc_info has no field for it yet, see the driver's INFO),
 * -ERANGE (an address outside its buffer or board memory), -EAGAIN (too
 * many chains queued: wait for one), -ENODEV (board gone).
 */
int fc_dma_submit(struct fc_dev *dev, const struct fc_xfer *xfers,
		  unsigned int n, unsigned int flags, uint64_t *ticket);

/*
 * fc_dma_wait - wait until chain @ticket has ended, at most @timeout_ms
 * milliseconds (negative: no limit). Moves the emulated engine along.
 * RETURN VALUE: 0 the chain completed; -ETIMEDOUT still running (it goes
 * on); -EFAULT/-EINVAL/-E2BIG/-EHOSTUNREACH the board refused the chain (see
 * fc_dma_result()); -ECANCELED aborted by fc_dma_reset(); -ENOENT unknown
 * ticket.
 */
int fc_dma_wait(struct fc_dev *dev, uint64_t ticket, int timeout_ms);

/* fc_dma_poll - as fc_dma_wait() without waiting: -EINPROGRESS if running. */
int fc_dma_poll(struct fc_dev *dev, uint64_t ticket);

/* What the board said about a chain that failed. */
struct fc_dma_result {
	int32_t status;		/* what fc_dma_wait() returns for the chain */
	uint32_t hw_error;	/* FC_DMA_ERR_* */
	uint32_t hw_index;	/* offending descriptor */
	uint32_t reserved;
};

/* fc_dma_result - details of a chain that has ended.
 * RETURN VALUE: 0; -EINPROGRESS; -ENOENT (unknown or too old ticket). */
int fc_dma_result(struct fc_dev *dev, uint64_t ticket,
		  struct fc_dma_result *res);

/*
 * fc_dma_reset - abort every queued and running chain (they end with
 * -ECANCELED) and reset the engines. A board reset (BOARD_RESET written
 * with fc_reg_write) ends the running chain with -ECANCELED too; the
 * queued ones then run.
 * RETURN VALUE: 0 or -ENODEV.
 */
int fc_dma_reset(struct fc_dev *dev);

/* Convenience: submit, then wait. Same return values as both. */
int fc_dma_run(struct fc_dev *dev, const struct fc_xfer *xfers,
	       unsigned int n, int timeout_ms);

/* ---- The fabric: world, channels, remote writes, barrier (0.2) ---- */

/*
 * Boards of one cluster (an emulated cluster made by fpgacomm-run, mpirun or
 * srun, or boards linked by cables) form a world: rank r is the board whose
 * fabric node is r, for r in 0..size-1.
 */
struct fc_world {
	uint32_t rank;			/* this board's rank (= its node) */
	uint32_t size;			/* boards in the world */
	uint32_t node_id;		/* fabric node, as in fc_info */
	char topology[32];		/* "torus:4x4", "full:4", "ring:8", ... */
	uint32_t reserved[8];
};

/*
 * fc_world_query - describe the world this board belongs to.
 * RETURN VALUE: 0 and *world filled; -EINVAL on NULL; -ENOTCONN when the
 * board is in no cluster (a standalone emulated board, or a kernel board:
 * not supported there yet).
 */
int fc_world_query(struct fc_dev *dev, struct fc_world *world);

/*
 * fc_world_hops - link hops from this board to rank @peer along the routes.
 * RETURN VALUE: 0 and *hops set (0 for itself); -EINVAL (NULL, @peer out
 * of range); -ENOTCONN in no cluster.
 */
int fc_world_hops(struct fc_dev *dev, uint32_t peer, uint32_t *hops);

/*
 * Channels. A channel is (peer rank, port): messages sent on it from this
 * board arrive on the peer's channel (our rank, port), with their
 * boundaries and in order. Port is the board's channel endpoint number,
 * 0..FC_CHAN_PORTS-1; the last 17 endpoints belong to the library (every
 * group's messages on FC_CHAN_PORT_GROUP0, the next 15 reserved, then
 * FC_CHAN_PORT_BARRIER). Every
 * endpoint of a board in a cluster receives from fc_open on, so a message
 * sent before the peer opened its channel is kept until it does. A board
 * behind the kernel driver drops what comes before its program opened
 * it: there a channel's first send waits until the peer's library has
 * answered a greeting (asked again every 20 ms; FPGACOMM_CHAN_GREET=0
 * turns it off, =1 on for emulated boards), so a message sent to a rank
 * still starting waits instead of being lost. Sending to oneself works.
 *
 * Flow control is end to end, per (peer, port): a sender has at most
 * FC_CHAN_CREDIT bytes of small (eager) messages outstanding on a channel
 * until the receiver's receives take them (the environment variable
 * FPGACOMM_CHAN_CREDIT sets it; a larger message goes when nothing else
 * is outstanding). Past that its sends on that channel wait, in order,
 * and nothing else does: a channel nobody reads never holds up another.
 * Messages keep their order per (source, destination, port). Where the
 * board cannot send the library's control messages (a kernel driver
 * without FC_FEAT_XFER_CTRL) there are no credits and a port keeps at most
 * FC_CHAN_BUFFERED bytes unasked, past which the board holds the sender
 * back.
 *
 * Progress is made by the caller: messages move while some process of the
 * cluster is in the library. A blocking call drives the board and sleeps
 * a little whenever nothing moved; fc_progress() is for callers that poll.
 * Any wait or test moves everything of the process (the progress rule,
 * before fc_ibarrier_group below).
 *
 * Large messages (FC_CHAN_RNDV_MIN bytes and more, on emulated boards) go
 * by rendezvous, as MPI libraries send theirs: the sender announces the
 * message, the receiver's library clears it into the matching receive's
 * buffer (or a buffer of its own when nobody asked yet, within
 * FC_CHAN_BUFFERED), and the board writes it there straight from the
 * sender's buffer: no staging copy, no receive-ring copy. Where the boards
 * read remotely, a receive that meets the announcement of a message up to
 * FPGACOMM_RNDV_GET bytes (none by default) reads it from the sender's
 * buffer itself instead (one trip less). So a large send
 * is done once the receiver has the data, and the environment variable
 * FPGACOMM_RNDV_MIN (bytes; 0: never) moves the threshold
 * (FPGACOMM_RNDV_GET: the largest message receivers read; 0, the
 * default: none).
 *
 * Buffers of sends and receives may be CUDA device memory: they are
 * copied through host memory (a send's when it is posted, a receive's
 * when it ends), docs/fabric.md "Device memory in channel messages". A
 * device buffer shorter than @len gets -EFAULT, and nothing is sent.
 */
#define FC_CHAN_PORTS		(FC_MAX_CHANNELS - 17)	/* 0..238 for users */
#define FC_CHAN_PORT_GROUP0	FC_CHAN_PORTS	/* 239: groups; 240..254 reserved */
#define FC_CHAN_PORT_BARRIER	(FC_MAX_CHANNELS - 1)
#define FC_CHAN_MAX_MSG		(16u << 20)	/* bytes per message */
#define FC_CHAN_BUFFERED	(32u << 20)	/* bytes kept per port unasked */
#define FC_CHAN_RNDV_MIN	(32u << 10)	/* default rendezvous threshold */
#define FC_CHAN_CREDIT		(4u << 20)	/* default window per (peer, port) */

struct fc_chan;
struct fc_req;

/*
 * fc_chan_open - open the channel to rank @peer on endpoint @port.
 * @flags: none defined, must be 0.
 * A peer that has closed its board (fc_close()) is no reason to refuse:
 * what it sent before is received on the channel, then its receives get
 * -EHOSTDOWN (and its sends at once). A peer that died (its process ended
 * without fc_close(), or was killed) refuses it unless messages it sent on
 * @port wait here (those arrived at the board are looked at first).
 * RETURN VALUE: 0 and *chanp set; -EINVAL (NULL, unknown flags, @peer not
 * below the world's size, @port not below FC_CHAN_PORTS); -EBUSY this
 * (peer, port) is already open; -ENOTCONN the board is in no cluster;
 * -EHOSTDOWN the peer has died and nothing of it waits for this channel;
 * -ENOMEM.
 */
int fc_chan_open(struct fc_dev *dev, uint32_t peer, uint32_t port,
		 unsigned int flags, struct fc_chan **chanp);

/*
 * fc_chan_close - close a channel. Messages already received for it stay
 * buffered for a later fc_chan_open() of the same (peer, port).
 * RETURN VALUE: 0; -EINVAL on NULL; -EBUSY while requests of the channel
 * are outstanding (wait for them or fc_req_cancel() them first).
 */
int fc_chan_close(struct fc_chan *chan);

/*
 * fc_chan_send - send @len bytes (1..FC_CHAN_MAX_MSG) as one message and
 * wait, at most @timeout_ms (negative: no limit), until the board has taken
 * them: @buf may then be reused. A receiver that does not keep up holds the
 * sender back; nothing is dropped.
 * RETURN VALUE: 0; -EINVAL (NULL, @len 0); -EMSGSIZE @len above
 * FC_CHAN_MAX_MSG; -ETIMEDOUT (the message may still be delivered later:
 * the board goes on with it, from a copy; a large message whose data the
 * board is already reading from @buf is waited for instead, which takes
 * bounded time); -EHOSTDOWN the peer died or left; -ENOMEM; or a DMA
 * error of the board (see fc_dma_wait()). A send that returned 0 is
 * delivered even if this board is closed right after (fc_close()).
 */
int fc_chan_send(struct fc_chan *chan, const void *buf, size_t len,
		 int timeout_ms);

/*
 * fc_chan_recv - receive the next message of the channel into @buf (@cap
 * bytes), waiting at most @timeout_ms (negative: no limit). *len is set to
 * the message's length.
 * RETURN VALUE: 0; -EINVAL on NULL; -EMSGSIZE the message is longer than
 * @cap: it is consumed and dropped (*len says how long it was; @buf may
 * hold its first bytes); -ETIMEDOUT no message yet (a large message already
 * being written into @buf is waited for instead); -EHOSTDOWN the peer
 * died or left and nothing more from it is buffered or in flight (what it
 * sent before it left is received first).
 */
int fc_chan_recv(struct fc_chan *chan, void *buf, size_t cap, size_t *len,
		 int timeout_ms);

/*
 * Non-blocking forms. fc_chan_isend starts a send (@buf must stay
 * untouched until the request is done: a large one is read from @buf by
 * the board); fc_chan_irecv posts a receive
 * (messages go to posted receives in the order they were posted, before
 * any fc_chan_recv() called later). Both set *reqp.
 * RETURN VALUE: 0; the argument errors of the blocking forms; -ENOMEM.
 */
int fc_chan_isend(struct fc_chan *chan, const void *buf, size_t len,
		  struct fc_req **reqp);
int fc_chan_irecv(struct fc_chan *chan, void *buf, size_t cap,
		  struct fc_req **reqp);

/*
 * fc_req_test - has the request finished? Drives progress once: of its
 * board and every group's collectives (the progress rule, below).
 * @len: may be NULL; for a receive, set to the message's length.
 * RETURN VALUE: 0 done (the request is freed); -EINPROGRESS not yet; any
 * other value is the request's error (the request is freed), as the
 * blocking form would have returned it.
 * fc_req_wait - the same, waiting at most @timeout_ms (negative: no
 * limit); -ETIMEDOUT leaves the request outstanding.
 * Both (and fc_req_cancel) return -EINVAL for NULL or a stale handle:
 * one whose request has ended, or whose board was closed (a handle names
 * one request only, never a later one).
 */
int fc_req_test(struct fc_req *req, size_t *len);
int fc_req_wait(struct fc_req *req, int timeout_ms, size_t *len);

/*
 * fc_req_cancel - give up a request and free it: a posted receive is
 * withdrawn, a send the board has not started is not sent.
 * RETURN VALUE: 0; -EINVAL on NULL or a stale handle; -EBUSY the board is
 * moving its data (a send under way, or a receive a large message is being
 * written into): wait for it instead.
 */
int fc_req_cancel(struct fc_req *req);

/*
 * fc_mem_fabric_addr - the global (PEACH2-style) address of byte @off of
 * @mem, for peers to write into with fc_put() and read with fc_get().
 * Host memory is named in the node's host region; imported peer memory
 * (fc_peer_import*(): a GPU's, a dma-buf) in its peer region, through an
 * entry of the board's peer window, given at the first call and taken back
 * by fc_mem_free() (which waits for the board's acknowledgement, so no
 * remote write lands after it): later writes and reads by that address
 * fail at their sender with -EACCES and change nothing.
 * RETURN VALUE: 0 and *addr set; -EINVAL (NULL, not a live buffer, @off
 * not below its length); -ENOTCONN in no cluster; -EOPNOTSUPP on a board
 * whose backend cannot tell bus addresses (kernel: buffers the driver
 * pinned from user pages have no single bus address; only its own,
 * bus-contiguous memory has one), or without a peer window for peer
 * memory, or (kernel) peer memory that is not one piece of bus space, which
 * one window entry cannot map; -E2BIG peer memory above 16 GiB (FC_PW_MAX_SIZE); -ENOSPC every
 * window entry in use; -EIO the board did not acknowledge the entry.
 */
int fc_mem_fabric_addr(struct fc_dev *dev, struct fc_mem *mem, uint64_t off,
		       uint64_t *addr);

/*
 * fc_put - write @len bytes of @src at @off to the fabric address @dst
 * (from a peer's fc_mem_fabric_addr(), or FC_FABRIC_ADDR(node,
 * FC_REGION_BOARD, addr) for its board memory), waiting at most
 * @timeout_ms. On 0 the data is visible at the target.
 * fc_iput - the same, returning a request (fc_req_test/wait/cancel);
 * @src must stay untouched until it is done.
 * RETURN VALUE: 0; -EINVAL (NULL, @len 0, a channel address); -ERANGE
 * (@off/@len outside @src, or @dst beyond the fabric's address layout);
 * -EHOSTDOWN the target died or left; -ETIMEDOUT; -ENOTCONN in no cluster;
 * or a DMA error (-EFAULT: the target could not reach the address;
 * -EACCES: the target's peer window refused it, nothing was written).
 * @src may be imported peer memory (a GPU's).
 */
int fc_put(struct fc_dev *dev, uint64_t dst, struct fc_mem *src, uint64_t off,
	   uint64_t len, int timeout_ms);
int fc_iput(struct fc_dev *dev, uint64_t dst, struct fc_mem *src,
	    uint64_t off, uint64_t len, struct fc_req **reqp);

/*
 * fc_put_from, fc_iput_from - fc_put() and fc_iput() from any local
 * memory: fc_host(buffer, off) (host or imported peer memory) or
 * fc_board(addr) (this board's memory).
 * RETURN VALUE: as fc_put(); -EINVAL also for another space or a
 * non-zero reserved field, -ERANGE for a range outside @src.
 */
int fc_put_from(struct fc_dev *dev, uint64_t dst, struct fc_loc src,
		uint64_t len, int timeout_ms);
int fc_iput_from(struct fc_dev *dev, uint64_t dst, struct fc_loc src,
		 uint64_t len, struct fc_req **reqp);

/*
 * fc_get - read @len bytes at the fabric address @src (another node's
 * host, board or peer memory, as fc_mem_fabric_addr() or FC_FABRIC_ADDR()
 * name it) into local memory @dst (fc_host() or fc_board()), by read
 * requests (FC_CAP_FABRIC_GET), waiting at most @timeout_ms. On 0 the
 * data is in @dst.
 * fc_iget - the same, returning a request; @dst must stay untouched until
 * it is done. fc_fence() waits for gets as for puts.
 * RETURN VALUE: as fc_put_from(), for @dst and @src; -EACCES the source's
 * peer window refused (no read permission, out of bounds, revoked):
 * nothing was read; -EFAULT the source could not be read.
 */
int fc_get(struct fc_dev *dev, struct fc_loc dst, uint64_t src, uint64_t len,
	   int timeout_ms);
int fc_iget(struct fc_dev *dev, struct fc_loc dst, uint64_t src, uint64_t len,
	    struct fc_req **reqp);

/*
 * A block-stride transfer (PEACH2's): @count blocks of @block bytes,
 * block k from src + k * @src_stride to dst + k * @dst_stride.
 */
struct fc_stride {
	uint64_t count;		/* 1..fc_info.max_chain */
	uint64_t block;		/* 1..fc_info.max_xfer_len */
	uint64_t src_stride;	/* >= block */
	uint64_t dst_stride;	/* >= block */
};

/*
 * fc_put_strided - the blocks of @st from local @src to the fabric address
 * @dst onwards, as one chain of @st->count descriptors; waits at most
 * @timeout_ms. fc_get_strided - the same from the fabric address @src
 * into local @dst, by read requests.
 * RETURN VALUE: 0; -EINVAL (NULL, a count or block of 0, a stride below
 * the block: the blocks would overlap); -E2BIG (more blocks than a chain
 * holds, a block above fc_info.max_xfer_len); otherwise as fc_put_from()
 * or fc_get(), for the whole extent of the blocks on each side.
 */
int fc_put_strided(struct fc_dev *dev, uint64_t dst, struct fc_loc src,
		   const struct fc_stride *st, int timeout_ms);
int fc_get_strided(struct fc_dev *dev, struct fc_loc dst, uint64_t src,
		   const struct fc_stride *st, int timeout_ms);

/*
 * fc_fence - wait until every put started before it (fc_put or fc_iput) is
 * visible at its target, at most @timeout_ms.
 * RETURN VALUE: 0; -EINVAL on NULL; -ENOTCONN in no cluster; -ETIMEDOUT;
 * -EHOSTDOWN a target died or left; or the first error of a put started
 * by fc_iput() since the last fence (fc_put() returns its own).
 */
int fc_fence(struct fc_dev *dev, int timeout_ms);

/*
 * fc_barrier - wait until every rank of the world has called fc_barrier
 * (a dissemination barrier on FC_CHAN_PORT_BARRIER), at most @timeout_ms.
 * Puts completed before a rank's barrier are visible to all after it.
 * RETURN VALUE: 0; -EINVAL on NULL; -ENOTCONN in no cluster; -EHOSTDOWN a
 * rank died or left; -ETIMEDOUT (the barrier is then broken: the ranks
 * disagree on how far it got).
 */
int fc_barrier(struct fc_dev *dev, int timeout_ms);

/*
 * fc_progress - let the board move packets and deliver what has arrived,
 * once, without waiting; and every group's collectives.
 * RETURN VALUE: 1 something moved, 0 nothing did; -EINVAL on NULL.
 */
int fc_progress(struct fc_dev *dev);

/* ---- Groups and collectives (0.3) ---- */

/*
 * A group is an ordered set of ranks of the world that run collectives
 * together: the world itself, or groups made from one by splitting or
 * duplicating it. Every member must call the same collectives on a group,
 * in the same order, with matching arguments; a signature travels with
 * every message, so a mismatch is reported (-EBADMSG) instead of
 * exchanging the wrong data. An error in a collective (a mismatch, a rank
 * that died, a timeout, a cancel) breaks the group: the other members are
 * told, and every later collective on it returns that error on every
 * rank. A broken group can only be freed.
 *
 * Collectives of one group run one after the other, in the order they
 * were started; collectives of different groups run at the same time.
 * Every group's messages go on one library port (FC_CHAN_PORT_GROUP0),
 * each naming its group, so a process may have as many groups as memory
 * allows.
 */
struct fc_group;
struct fc_coll_req;

/* Element types. 16-bit floats are summed (and multiplied) in float32. */
enum fc_dtype {
	FC_INT8, FC_INT16, FC_INT32, FC_INT64,
	FC_UINT8, FC_UINT16, FC_UINT32, FC_UINT64,
	FC_FLOAT16, FC_BFLOAT16, FC_FLOAT32, FC_FLOAT64,
	FC_DTYPE_COUNT
};

/* Reduction operators; the bitwise ones are for integer types only. */
enum fc_redop {
	FC_SUM, FC_PROD, FC_MIN, FC_MAX, FC_BAND, FC_BOR, FC_BXOR,
	FC_REDOP_COUNT
};

/* Give as the send buffer to work in place (see each collective). */
#define FC_IN_PLACE	((const void *)1)

/* fc_group_split() color of a rank that joins no new group. */
#define FC_GROUP_NONE	(-1)

/* Bytes of one element of @dtype, or -EINVAL for an unknown type. */
int fc_dtype_size(enum fc_dtype dtype);

/*
 * fc_group_world - the world as a group (the same handle each time; each
 * call needs its fc_group_free()).
 * RETURN VALUE: 0 and *groupp set; -EINVAL on NULL; -ENOTCONN the board
 * is in no cluster; -ENOMEM.
 */
int fc_group_world(struct fc_dev *dev, struct fc_group **groupp);

/*
 * fc_group_split - collective over @group: the members that give the same
 * @color (>= 0) form a new group, ranked by @key, ties by their rank in
 * @group (as MPI_Comm_split). A member giving FC_GROUP_NONE gets NULL.
 * fc_group_dup - a new group of the same members, for collectives that
 * must not be ordered with @group's (as MPI_Comm_dup).
 * Both wait at most @timeout_ms (negative: no limit).
 * RETURN VALUE: 0 and *newp set; -EINVAL (NULL, color below
 * FC_GROUP_NONE); -ENOMEM; the errors of the collectives (-EBADMSG,
 * -EHOSTDOWN, -ETIMEDOUT, ...).
 */
int fc_group_split(struct fc_group *group, int color, int key,
		   int timeout_ms, struct fc_group **newp);
int fc_group_dup(struct fc_group *group, int timeout_ms,
		 struct fc_group **newp);

/*
 * fc_group_free - leave a group (local: no other member waits). Its
 * collectives still running are given up, which breaks it for the others.
 * RETURN VALUE: 0; -EINVAL on NULL or a group already freed.
 */
int fc_group_free(struct fc_group *group);

/* This rank's rank in @group, and the number of members. RETURN VALUE:
 * the number (>= 0, resp. >= 1), or -EINVAL on NULL. */
int fc_group_rank(const struct fc_group *group);
int fc_group_size(const struct fc_group *group);
/* The world rank of @group's member @rank. RETURN VALUE: 0 and *world set;
 * -EINVAL (NULL, @rank out of range). */
int fc_group_world_rank(const struct fc_group *group, uint32_t rank,
			uint32_t *world);

/*
 * The collectives. Each has a blocking form, which waits at most
 * @timeout_ms (negative: no limit), and a non-blocking form (fc_i...)
 * that returns a request for fc_coll_test/wait/cancel. Counts are in
 * elements of @dtype; buffers are host or CUDA device memory of the
 * caller, untouched by the caller until the collective ends (device
 * buffers are copied through host memory at the start and the end, and
 * reductions run on the host: docs/collectives.md, "Device memory"; one
 * shorter than the collective needs gets -EFAULT). A count may be 0. Buffers inside
 * memory registered with the group's board (fc_mem_alloc, fc_mem_register)
 * are moved by DMA straight from and into it, with no staging copy and no
 * registration per message; fc_mem_free() of such memory gives -EBUSY
 * while a collective's message moves from or into it.
 *
 * RETURN VALUE (all of them): 0; -EINVAL (NULL buffers with a non-zero
 * count, unknown type or operator, a bitwise operator on floats, root
 * out of range, FC_IN_PLACE where it has no meaning); -EOVERFLOW counts
 * too large for memory; -ENOMEM; -EBADMSG the members disagree (another
 * collective, root, count, type or operator); -EHOSTDOWN a member died
 * or left; -ETIMEDOUT; -ECANCELED the group was broken by a cancel; the
 * error that broke the group earlier.
 *
 * In place: FC_IN_PLACE as @sendbuf (allreduce, reduce at the root,
 * scan, exscan, reduce_scatter: the input is taken from @recvbuf; for
 * reduce_scatter from the whole of @recvbuf, size * count elements;
 * gather(v) at the root, allgather(v), alltoall(v): this rank's
 * contribution is already in place in @recvbuf).
 */
int fc_barrier_group(struct fc_group *g, int timeout_ms);
int fc_bcast(struct fc_group *g, void *buf, size_t count,
	     enum fc_dtype dtype, uint32_t root, int timeout_ms);
int fc_reduce(struct fc_group *g, const void *sendbuf, void *recvbuf,
	      size_t count, enum fc_dtype dtype, enum fc_redop op,
	      uint32_t root, int timeout_ms);
int fc_allreduce(struct fc_group *g, const void *sendbuf, void *recvbuf,
		 size_t count, enum fc_dtype dtype, enum fc_redop op,
		 int timeout_ms);
/*
 * @sendbuf holds size * count elements (in place, @recvbuf does); rank i
 * gets block i of the reduction, count elements, at the start of @recvbuf
 * (out of place, only those count are written).
 */
int fc_reduce_scatter(struct fc_group *g, const void *sendbuf, void *recvbuf,
		      size_t count, enum fc_dtype dtype, enum fc_redop op,
		      int timeout_ms);
/* Inclusive and exclusive prefix reductions in rank order (exscan leaves
 * rank 0's @recvbuf untouched). */
int fc_scan(struct fc_group *g, const void *sendbuf, void *recvbuf,
	    size_t count, enum fc_dtype dtype, enum fc_redop op,
	    int timeout_ms);
int fc_exscan(struct fc_group *g, const void *sendbuf, void *recvbuf,
	      size_t count, enum fc_dtype dtype, enum fc_redop op,
	      int timeout_ms);
/* @count elements from each rank; recvbuf (at the root) holds size * count. */
int fc_gather(struct fc_group *g, const void *sendbuf, void *recvbuf,
	      size_t count, enum fc_dtype dtype, uint32_t root,
	      int timeout_ms);
int fc_scatter(struct fc_group *g, const void *sendbuf, void *recvbuf,
	       size_t count, enum fc_dtype dtype, uint32_t root,
	       int timeout_ms);
int fc_allgather(struct fc_group *g, const void *sendbuf, void *recvbuf,
		 size_t count, enum fc_dtype dtype, int timeout_ms);
/* The v forms: per-rank @counts and @displs (in elements), as MPI's. */
int fc_gatherv(struct fc_group *g, const void *sendbuf, size_t sendcount,
	       void *recvbuf, const size_t *counts, const size_t *displs,
	       enum fc_dtype dtype, uint32_t root, int timeout_ms);
int fc_scatterv(struct fc_group *g, const void *sendbuf, const size_t *counts,
		const size_t *displs, void *recvbuf, size_t recvcount,
		enum fc_dtype dtype, uint32_t root, int timeout_ms);
int fc_allgatherv(struct fc_group *g, const void *sendbuf, size_t sendcount,
		  void *recvbuf, const size_t *counts, const size_t *displs,
		  enum fc_dtype dtype, int timeout_ms);
/* @count elements to each rank, from each rank. */
int fc_alltoall(struct fc_group *g, const void *sendbuf, void *recvbuf,
		size_t count, enum fc_dtype dtype, int timeout_ms);
int fc_alltoallv(struct fc_group *g, const void *sendbuf,
		 const size_t *sendcounts, const size_t *sdispls,
		 void *recvbuf, const size_t *recvcounts,
		 const size_t *rdispls, enum fc_dtype dtype, int timeout_ms);

/*
 * The progress rule (as MPI's). A non-blocking call (fc_i..., and
 * fc_chan_isend/irecv, fc_iput) never blocks: it records the operation,
 * may start it, and returns. Operations then move whenever this process
 * is inside the library: waiting on or testing any request (fc_coll_wait,
 * fc_coll_test, fc_req_wait, fc_req_test, and the blocking calls, which
 * wait inside) moves every outstanding operation of the process: every
 * group's collectives, and the channel messages, puts and emulated board
 * of the board waited on and of every board with groups (a wait on one
 * board does not move another board's channels). So a rank may wait on
 * one group's collective while another group's, started earlier or
 * later, goes on, and may wait on a channel receive while its
 * collectives go on. Waits
 * spin briefly, then sleep: an idle process costs no CPU. There is no
 * progress thread: a process that never enters the library holds up the
 * others, and fc_progress() is there for one that computes for long.
 * The first collective on a new group (and the very first of a process)
 * starts the same way: meeting the other members is part of its
 * schedule, not of the call.
 */
int fc_ibarrier_group(struct fc_group *g, struct fc_coll_req **reqp);
int fc_ibcast(struct fc_group *g, void *buf, size_t count,
	      enum fc_dtype dtype, uint32_t root, struct fc_coll_req **reqp);
int fc_ireduce(struct fc_group *g, const void *sendbuf, void *recvbuf,
	       size_t count, enum fc_dtype dtype, enum fc_redop op,
	       uint32_t root, struct fc_coll_req **reqp);
int fc_iallreduce(struct fc_group *g, const void *sendbuf, void *recvbuf,
		  size_t count, enum fc_dtype dtype, enum fc_redop op,
		  struct fc_coll_req **reqp);
int fc_ireduce_scatter(struct fc_group *g, const void *sendbuf,
		       void *recvbuf, size_t count, enum fc_dtype dtype,
		       enum fc_redop op, struct fc_coll_req **reqp);
int fc_iscan(struct fc_group *g, const void *sendbuf, void *recvbuf,
	     size_t count, enum fc_dtype dtype, enum fc_redop op,
	     struct fc_coll_req **reqp);
int fc_iexscan(struct fc_group *g, const void *sendbuf, void *recvbuf,
	       size_t count, enum fc_dtype dtype, enum fc_redop op,
	       struct fc_coll_req **reqp);
int fc_igather(struct fc_group *g, const void *sendbuf, void *recvbuf,
	       size_t count, enum fc_dtype dtype, uint32_t root,
	       struct fc_coll_req **reqp);
int fc_iscatter(struct fc_group *g, const void *sendbuf, void *recvbuf,
		size_t count, enum fc_dtype dtype, uint32_t root,
		struct fc_coll_req **reqp);
int fc_iallgather(struct fc_group *g, const void *sendbuf, void *recvbuf,
		  size_t count, enum fc_dtype dtype,
		  struct fc_coll_req **reqp);
int fc_igatherv(struct fc_group *g, const void *sendbuf, size_t sendcount,
		void *recvbuf, const size_t *counts, const size_t *displs,
		enum fc_dtype dtype, uint32_t root,
		struct fc_coll_req **reqp);
int fc_iscatterv(struct fc_group *g, const void *sendbuf,
		 const size_t *counts, const size_t *displs, void *recvbuf,
		 size_t recvcount, enum fc_dtype dtype, uint32_t root,
		 struct fc_coll_req **reqp);
int fc_iallgatherv(struct fc_group *g, const void *sendbuf,
		   size_t sendcount, void *recvbuf, const size_t *counts,
		   const size_t *displs, enum fc_dtype dtype,
		   struct fc_coll_req **reqp);
int fc_ialltoall(struct fc_group *g, const void *sendbuf, void *recvbuf,
		 size_t count, enum fc_dtype dtype,
		 struct fc_coll_req **reqp);
int fc_ialltoallv(struct fc_group *g, const void *sendbuf,
		  const size_t *sendcounts, const size_t *sdispls,
		  void *recvbuf, const size_t *recvcounts,
		  const size_t *rdispls, enum fc_dtype dtype,
		  struct fc_coll_req **reqp);

/*
 * fc_coll_test - has the collective ended? Moves every outstanding
 * operation of the process along once (the progress rule above).
 * fc_coll_wait - the same, waiting at most @timeout_ms (negative: no
 * limit).
 * RETURN VALUE: 0 done (the request is freed); -EINPROGRESS not yet
 * (test), -ETIMEDOUT not yet (wait; the request stays); any other value is
 * the collective's error (the request is freed).
 * Collectives move only while their members are in the library: a
 * member that never tests or waits (on anything) holds the others up.
 */
int fc_coll_test(struct fc_coll_req *req);
int fc_coll_wait(struct fc_coll_req *req, int timeout_ms);

/*
 * fc_coll_cancel - give up a collective and free the request. The other
 * members cannot finish it without this rank, so the group is broken
 * (-ECANCELED for them and for every later collective).
 * RETURN VALUE: 0; -EINVAL on NULL.
 */
int fc_coll_cancel(struct fc_coll_req *req);

/*
 * The algorithm of each collective is chosen by group size, message size
 * and topology (docs/collectives.md). $FPGACOMM_COLL_ALGO forces one,
 * e.g. "allreduce=ring,bcast=binomial"; a name a collective does not have
 * is ignored. fc_coll_algo_name() tells what a collective would use.
 * RETURN VALUE: the name, or NULL for an unknown collective.
 */
const char *fc_coll_algo_name(struct fc_group *g, const char *coll,
			      size_t bytes);

/* ---- Distributed sort (0.3) ---- */

/*
 * fc_sort sorts the keys (and the values that go with them) that the
 * members of a group hold between them, as one sequence: rank 0's
 * elements, then rank 1's, ... The sort is stable: equal keys keep their
 * order by (rank, index). It is a collective over @g (every member calls
 * it, in the same order as the group's other collectives) and works on
 * host memory. docs/sort.md gives the algorithms and their cost.
 *
 * Layouts of the result:
 *  - FC_SORT_BALANCED: each rank ends with as many elements as it gave,
 *    the lowest ones on rank 0 (capacity >= count).
 *  - FC_SORT_PARTITIONED: each rank owns a range of keys, rank r's below
 *    rank r+1's, and equal keys never straddle two ranks; the ranges are
 *    chosen to balance the counts, which are returned (out_count, and
 *    rank_counts when given). A rank whose share would not fit its
 *    capacity fails the sort on every rank (-ENOSPC) before any data
 *    moves: out_count then says what it would have needed.
 *
 * Algorithms (FC_SORT_AUTO picks counting for key_bits up to
 * FC_SORT_COUNTING_MAX_BITS, else onepass):
 *  - FC_SORT_COUNTING: OPTWEB's counting sort for small key ranges
 *    (key_bits <= FC_SORT_COUNTING_MAX_BITS, 20: where it stops being
 *    faster than onepass): a histogram, its allreduce and exscan, one
 *    alltoallv that puts every element at its place.
 *  - FC_SORT_ONEPASS: full-width keys, over the network once: a local
 *    stable radix sort, exact splitters by a distributed binary search on
 *    the keys, one alltoallv, a merge of the runs that arrive.
 *  - FC_SORT_RADIX_NET: a radix sort that crosses the network on every
 *    8-bit digit (as OPTWEB's projected 32-bit sort; for comparison).
 *    Partitioned, the last crossing hands out the bins of the most
 *    significant differing digit whole, so shares balance only to that
 *    digit's 256 bins.
 */
enum fc_sort_layout { FC_SORT_BALANCED, FC_SORT_PARTITIONED };
enum fc_sort_algo { FC_SORT_AUTO, FC_SORT_COUNTING, FC_SORT_ONEPASS,
		    FC_SORT_RADIX_NET };

#define FC_SORT_COUNTING_MAX_BITS	20

struct fc_sort_args {
	uint32_t key_size;	/* 4 (uint32_t keys) or 8 (uint64_t) */
	uint32_t key_bits;	/* keys are below 2^key_bits; 0: full width */
	uint32_t value_size;	/* bytes of each key's value; 0: keys alone */
	uint32_t layout;	/* enum fc_sort_layout */
	uint32_t algo;		/* enum fc_sort_algo */
	uint32_t flags;		/* none defined: 0 */
	const void *keys;	/* @count keys (may alias out_keys) */
	const void *values;	/* @count values (may alias out_values), or
				 * NULL when value_size is 0 */
	size_t count;
	void *out_keys;		/* room for @capacity keys */
	void *out_values;	/* room for @capacity values, or NULL */
	size_t capacity;
	size_t *rank_counts;	/* PARTITIONED: NULL, or every rank's count */
	/* set by fc_sort() */
	size_t out_count;	/* elements this rank ends with */
	uint32_t net_passes;	/* times the data crossed the network (m) */
	uint32_t mem_passes;	/* passes over the data in memory (A) */
	uint32_t used_algo;	/* the enum fc_sort_algo that ran */
	uint32_t reserved[5];	/* must be zero */
};

/*
 * fc_sort - sort as described above, waiting at most @timeout_ms
 * (negative: no limit) for the group's collectives.
 * RETURN VALUE: 0 and the output filled; on this rank alone, before any
 * collective: -EINVAL (NULL @g or @args, NULL buffers with a non-zero
 * count or capacity, key_size not 4 or 8, key_bits above the key's width,
 * values without value_size or the other way round, unknown layout,
 * algorithm or flags, non-zero reserved fields, FC_SORT_BALANCED with
 * capacity below count, FC_SORT_COUNTING with key_bits 0 or above
 * FC_SORT_COUNTING_MAX_BITS); on every rank, with nothing moved: -ERANGE a key
 * of some rank is not below 2^key_bits, -EBADMSG the ranks disagree on
 * key_size, key_bits, value_size, layout or algorithm, -ENOSPC a rank's
 * share of a partitioned result exceeds its capacity, -ENOMEM a rank
 * could not get its work buffers; the errors
 * of the collectives (-EHOSTDOWN, -ETIMEDOUT, ...), after which the output
 * buffers may hold partial results and the group is broken.
 */
int fc_sort(struct fc_group *g, struct fc_sort_args *args, int timeout_ms);

/*
 * fc_sort_u32, fc_sort_u64 - the common case: keys alone, balanced, in
 * place (@keys holds this rank's @count keys and gets its share of the
 * result), automatic algorithm; @key_bits as in struct fc_sort_args.
 * RETURN VALUE: as fc_sort().
 */
int fc_sort_u32(struct fc_group *g, uint32_t *keys, size_t count,
		unsigned int key_bits, int timeout_ms);
int fc_sort_u64(struct fc_group *g, uint64_t *keys, size_t count,
		unsigned int key_bits, int timeout_ms);

/* ---- Errors ---- */

/* fc_strerror - text for a negative errno returned by this library
 * (positive values are accepted too). Never NULL. */
const char *fc_strerror(int err);

/* ---- Tagged messages: MPI's matching beside the channels (0.4) ---- */

/*
 * A tag endpoint receives, on one port, messages from every rank of the
 * world, each with a 64-bit tag (and optionally 64 bits of data), and
 * hands them to receives by matching, as MPI does: a receive names a
 * source rank or FC_TAG_ANY_NODE, a tag and ignore bits (a message matches
 * when (its tag ^ tag) & ~ignore is 0). Receives are matched in the order
 * they were posted; messages nobody asked for wait in an unexpected queue
 * in the order they arrived, and messages from one source are matched in
 * the order they were sent. It is built on channels (one per (rank,
 * port)): the endpoint owns its port, which no fc_chan_open() may take
 * meanwhile. Small messages go in one channel message; larger ones as a
 * header and then the payload in pieces of FC_CHAN_MAX_MSG, the board
 * writing them straight into the receive's buffer when it was posted
 * first (rendezvous).
 *
 * Completions: every operation ends in one entry (struct fc_tag_cqe) that
 * fc_tag_poll() returns, with the caller's @ctx and @uflags as given
 * (except a send with FC_TAG_F_INJECT, which ends silently). Progress is
 * made by fc_tag_poll() and fc_tag_wait() (and every blocking call of the
 * library on the same board). All calls on one endpoint are thread safe.
 * Buffers may be CUDA device memory, copied through host memory (a send's
 * when it is posted, a receive's before its completion is queued).
 */
#define FC_TAG_ANY_NODE		UINT32_MAX	/* receive from any rank */
#define FC_TAG_ANY_PORT		UINT32_MAX	/* ... from any port (_from) */
#define FC_TAG_MAX_MSG		(1ull << 31)	/* bytes per message */
#define FC_TAG_INJECT_MAX	1024		/* bytes for FC_TAG_F_INJECT */

/* Flags of fc_tag_send(). */
#define FC_TAG_F_DATA		(1u << 0)	/* @data goes with the message */
#define FC_TAG_F_INJECT		(1u << 1)	/* no completion; copied at once */
/* Flags of fc_tag_probe(). */
#define FC_TAG_F_CLAIM		(1u << 2)	/* take the message found (*msgp) */
/* Flag of fc_tag_send(), fc_tag_recv() and fc_tag_probe(): the second of
 * an endpoint's two matching spaces, which never match each other (a
 * libfabric endpoint's untagged messages beside its tagged ones). */
#define FC_TAG_F_SPACE1		(1u << 3)

/* fc_tag_cqe.flags */
#define FC_TAG_CQE_SEND		(1u << 0)
#define FC_TAG_CQE_RECV		(1u << 1)
#define FC_TAG_CQE_DATA		(1u << 2)	/* @data came with the message */

struct fc_tag_cqe {
	void *ctx;			/* the operation's, as given */
	uint64_t tag;			/* receive, probe: the message's */
	uint64_t data;			/* ... with FC_TAG_CQE_DATA */
	uint64_t len;			/* bytes sent; bytes placed in the buffer */
	uint64_t olen;			/* receive: bytes cut off (-EMSGSIZE) */
	uint32_t node, port;		/* receive, probe: the sender's */
	uint32_t flags;			/* FC_TAG_CQE_* */
	uint32_t uflags;		/* the caller's, as given */
	int status;			/* 0 or -errno (see fc_tag_poll()) */
	uint32_t reserved[3];
};

struct fc_tag_ep;
struct fc_tag_msg;

/*
 * fc_tag_open - a tag endpoint on @port (0..FC_CHAN_PORTS-1).
 * @flags: none defined, must be 0.
 * RETURN VALUE: 0 and *epp set; -EINVAL (NULL, unknown flags, @port out of
 * range); -ENOTCONN in no cluster; -EBUSY a channel of @port is open (a
 * channel user or another endpoint has it); -ENOMEM.
 */
int fc_tag_open(struct fc_dev *dev, uint32_t port, unsigned int flags,
		struct fc_tag_ep **epp);

/*
 * fc_tag_close - close an endpoint: posted receives and messages not yet
 * received are dropped, sends not yet started are not sent, and
 * completions not polled are lost.
 * RETURN VALUE: 0; -EINVAL on NULL.
 */
int fc_tag_close(struct fc_tag_ep *ep);

/*
 * fc_tag_send - send @len bytes (0..FC_TAG_MAX_MSG) of @buf with @tag (and
 * @data with FC_TAG_F_DATA) to the endpoint on @port of rank @node. @buf
 * must stay untouched until the send's completion; with FC_TAG_F_INJECT
 * (@len at most FC_TAG_INJECT_MAX) it is copied before the call returns and
 * the send has no completion at all.
 * RETURN VALUE: 0; -EINVAL (NULL @ep, NULL @buf with @len, unknown flags,
 * @node or @port out of range); -EMSGSIZE (@len too long, or too long to
 * inject); -EHOSTDOWN the rank died or left; -EBUSY @port is a channel of
 * this process's own (fc_chan_open); -ENOMEM.
 */
int fc_tag_send(struct fc_tag_ep *ep, uint32_t node, uint32_t port,
		const void *buf, size_t len, uint64_t tag, uint64_t data,
		unsigned int flags, void *ctx, uint32_t uflags);

/*
 * fc_tag_recv - post a receive of at most @cap bytes into @buf for the
 * first message from @node (or FC_TAG_ANY_NODE) whose tag matches @tag
 * outside @ignore. @flags: 0 or FC_TAG_F_SPACE1.
 * RETURN VALUE: 0; -EINVAL (NULL @ep, NULL @buf with @cap, unknown flags,
 * @node out of range); -ENOMEM.
 */
int fc_tag_recv(struct fc_tag_ep *ep, uint32_t node, void *buf, size_t cap,
		uint64_t tag, uint64_t ignore, unsigned int flags, void *ctx,
		uint32_t uflags);

/*
 * fc_tag_recv_from - fc_tag_recv() for messages sent by the endpoint on
 * @port of @node only (FC_TAG_ANY_PORT: any of its endpoints; the port is
 * the one the sender's endpoint was opened on). (0.5)
 * RETURN VALUE: as fc_tag_recv(); -EINVAL also for @port out of range.
 */
int fc_tag_recv_from(struct fc_tag_ep *ep, uint32_t node, uint32_t port,
		     void *buf, size_t cap, uint64_t tag, uint64_t ignore,
		     unsigned int flags, void *ctx, uint32_t uflags);

/*
 * fc_tag_probe - is a message that fc_tag_recv() with these arguments would
 * match already here (progress is made once first)? *info gets its source,
 * tag, data and length (len). With FC_TAG_F_CLAIM the message is taken
 * off the unexpected queue, so that no receive matches it, and *msgp set:
 * receive it with fc_tag_recv_msg().
 * RETURN VALUE: 0 found; -ENOMSG none; -EINVAL (NULL, unknown flags, NULL
 * @msgp with FC_TAG_F_CLAIM, @node out of range).
 */
int fc_tag_probe(struct fc_tag_ep *ep, uint32_t node, uint64_t tag,
		 uint64_t ignore, unsigned int flags, struct fc_tag_cqe *info,
		 struct fc_tag_msg **msgp);

/*
 * fc_tag_probe_from - fc_tag_probe() for messages of the endpoint on @port
 * of @node only (FC_TAG_ANY_PORT: any). (0.5)
 * RETURN VALUE: as fc_tag_probe(); -EINVAL also for @port out of range.
 */
int fc_tag_probe_from(struct fc_tag_ep *ep, uint32_t node, uint32_t port,
		      uint64_t tag, uint64_t ignore, unsigned int flags,
		      struct fc_tag_cqe *info, struct fc_tag_msg **msgp);

/*
 * fc_tag_recv_msg - receive the claimed message @msg into @buf (@cap bytes;
 * @buf NULL and @cap 0 discard it), ending as a receive does.
 * RETURN VALUE: 0 (@msg is then gone); -EINVAL (NULL, @buf NULL with @cap).
 */
int fc_tag_recv_msg(struct fc_tag_ep *ep, struct fc_tag_msg *msg, void *buf,
		    size_t cap, void *ctx, uint32_t uflags);

/*
 * fc_tag_cancel - withdraw the posted, not yet matched receive whose
 * context is @ctx; it ends with status -ECANCELED.
 * RETURN VALUE: 0; -ENOENT no such receive (matched, or never posted);
 * -EINVAL on NULL @ep.
 */
int fc_tag_cancel(struct fc_tag_ep *ep, void *ctx);

/*
 * fc_tag_poll - make progress once and take up to @n completions, oldest
 * first (@n 0: progress only). An entry's status: 0; -EMSGSIZE the message
 * was longer than the receive's buffer (its first @cap bytes are there,
 * olen says how many more it had); -ECANCELED (fc_tag_cancel()); -EHOSTDOWN
 * the peer died or left; or a DMA error of the board.
 * RETURN VALUE: the number of entries taken (0..@n); -EINVAL (NULL @ep, or
 * NULL @cqe with @n).
 */
int fc_tag_poll(struct fc_tag_ep *ep, struct fc_tag_cqe *cqe, unsigned int n);

/*
 * fc_tag_wait - wait at most @timeout_ms (negative: no limit) until a
 * completion waits to be polled, making progress meanwhile (spinning a
 * little, then sleeping).
 * RETURN VALUE: 0; -ETIMEDOUT; -EINVAL on NULL.
 */
int fc_tag_wait(struct fc_tag_ep *ep, int timeout_ms);

/* ---- HBM: pseudo-channels, local stores and stream programs (0.3) ---- */

/*
 * Board memory is FC_HBM_PCHANNELS pseudo-channels end to end (hw.h); on
 * the board, local stores (LS) of a few hundred KiB each have two streams
 * that run programs recorded here: copy board memory into the LS, run a
 * kernel on it, copy it back, in loops (the paper's stream_for), without
 * the host. Boards with FC_CAP_HBM_STREAMS only: every call below returns
 * -EOPNOTSUPP on others.
 */
struct fc_hbm_info {
	uint32_t pchannels;		/* pseudo-channels */
	uint32_t num_ls;		/* local stores */
	uint32_t ls_size;		/* bytes per LS */
	uint32_t kernels;		/* bit k: built-in kernel k (FC_KERN_*) */
	uint64_t pch_bytes;		/* bytes per pseudo-channel */
	uint32_t reserved[6];
};

/* fc_hbm_query - the board's HBM geometry.
 * RETURN VALUE: 0 and *info filled; -EINVAL on NULL; -EOPNOTSUPP. */
int fc_hbm_query(struct fc_dev *dev, struct fc_hbm_info *info);

#define FC_HBM_PCH_ANY	UINT32_MAX	/* the channel with room, round robin */

/*
 * fc_hbm_alloc - reserve @len bytes of board memory inside pseudo-channel
 * @pch (0..pchannels-1, or FC_HBM_PCH_ANY), 64-byte aligned, for this
 * device handle: *addr is its board address (fc_board(), stream programs).
 * Spread an array over channels by one allocation per channel.
 * RETURN VALUE: 0; -EINVAL (NULL, zero length, flags, bad @pch);
 * -E2BIG longer than a pseudo-channel; -ENOSPC no room; -EOPNOTSUPP.
 */
int fc_hbm_alloc(struct fc_dev *dev, uint64_t len, uint32_t pch,
		 unsigned int flags, uint64_t *addr);

/* fc_hbm_free - release an fc_hbm_alloc() reservation by its address.
 * RETURN VALUE: 0; -EINVAL if @addr is not one; -EOPNOTSUPP. */
int fc_hbm_free(struct fc_dev *dev, uint64_t addr);

/* A stream program being recorded (up to FC_SPROG_MAX instructions). */
struct fc_sprog;

/* RETURN VALUE: 0 and *progp set; -EINVAL on NULL; -ENOMEM. */
int fc_sprog_new(struct fc_sprog **progp);
void fc_sprog_free(struct fc_sprog *prog);

/*
 * Recording. Each appends one instruction; @step is added to the board
 * address on each iteration of the innermost fc_sprog_for() loop.
 * Addresses are checked against the board at fc_stream_start().
 * RETURN VALUE: 0; -EINVAL (NULL, event >= FC_LS_EVENTS, zero count,
 * kernel 0); -ENOEXEC the program would be malformed (fc_sprog_for() of
 * 0 iterations or deeper than FC_SLOOP_DEPTH, fc_sprog_end_for() with no
 * loop open); -E2BIG the program is full.
 */
int fc_sprog_copy_in(struct fc_sprog *prog, uint32_t ls_off, uint64_t hbm,
		     uint32_t len, uint32_t step);
int fc_sprog_copy_out(struct fc_sprog *prog, uint64_t hbm, uint32_t step,
		      uint32_t ls_off, uint32_t len);
/* kernel @kernel (FC_KERN_* or fc_kernel_register()'s id) on @n elements */
int fc_sprog_run(struct fc_sprog *prog, uint32_t kernel, uint32_t dst_off,
		 uint32_t src_off, uint32_t n, uint32_t arg);
int fc_sprog_for(struct fc_sprog *prog, uint32_t iterations);
int fc_sprog_end_for(struct fc_sprog *prog);
int fc_sprog_wait(struct fc_sprog *prog, uint32_t event);
int fc_sprog_signal(struct fc_sprog *prog, uint32_t event);

/*
 * fc_sprog_encode - the program as the board reads it, FC_SPROG_MAX
 * instructions at most, END appended: into @out (room for @max), *n set.
 * fc_sprog_decode - the reverse: a program from @n instructions ending
 * with END, structure checked (opcodes, reserved fields, loops, END;
 * not addresses or kernels, which are the board's).
 * RETURN VALUE: 0; -EINVAL (NULL); -ENOEXEC (a loop left open; a
 * malformed program, *bad set to the instruction); -E2BIG (@max or @n
 * too small or too large); -ENOMEM.
 */
int fc_sprog_encode(const struct fc_sprog *prog, struct fc_hw_sinsn *out,
		    size_t max, size_t *n);
int fc_sprog_decode(const struct fc_hw_sinsn *in, size_t n,
		    struct fc_sprog **progp, size_t *bad);

/*
 * fc_stream_check - check @prog against this board as its START will:
 * LS and board ranges, kernels present, structure.
 * RETURN VALUE: 0; -EFAULT (an address range), -ENOSYS (a kernel the
 * board lacks), -ENOEXEC (structure), -EINVAL (not 32-byte aligned),
 * -E2BIG; *bad (may be NULL) the
 * instruction; -EOPNOTSUPP.
 */
int fc_stream_check(struct fc_dev *dev, const struct fc_sprog *prog,
		    size_t *bad);

/*
 * fc_stream_start - load @prog into stream @stream (0..FC_LS_STREAMS-1)
 * of local store @ls and start it; it runs on the board until it ends.
 * RETURN VALUE: 0; fc_stream_check()'s errors (nothing started);
 * -EINVAL (NULL, @ls or @stream out of range); -EBUSY the stream still
 * runs; -EBADFD the stream's last run failed: fc_stream_reset() first;
 * -EOPNOTSUPP; or the DMA error loading it.
 */
int fc_stream_start(struct fc_dev *dev, uint32_t ls, uint32_t stream,
		    const struct fc_sprog *prog);

/*
 * fc_stream_wait - wait at most @timeout_ms (negative: no limit) for the
 * run last started on (@ls, @stream) to end; 0 when none was started.
 * Spins briefly, then sleeps.
 * RETURN VALUE: 0 it ended well; -ETIMEDOUT still running; the board's
 * error as an errno (fc_stream_query() has the code and instruction):
 * -EFAULT, -ENOEXEC, -EINVAL, -E2BIG, -ENOSYS, -EIO (a kernel failed);
 * -ECANCELED reset before it ended; -EINVAL bad arguments; -EOPNOTSUPP.
 */
int fc_stream_wait(struct fc_dev *dev, uint32_t ls, uint32_t stream,
		   int timeout_ms);

struct fc_stream_state {
	uint32_t status;		/* FC_DMA_STATUS_* */
	uint32_t hw_error;		/* FC_LS_ERR_* */
	uint32_t hw_index;		/* instruction the error names */
	uint32_t insns;			/* instructions executed (wraps) */
	uint32_t runs;			/* runs ended well (wraps) */
	uint32_t reserved[3];
};

/* fc_stream_query - what the board says of (@ls, @stream).
 * RETURN VALUE: 0 and *st filled; -EINVAL; -EOPNOTSUPP. */
int fc_stream_query(struct fc_dev *dev, uint32_t ls, uint32_t stream,
		    struct fc_stream_state *st);

/*
 * fc_stream_reset - abort both streams of @ls (their runs end with
 * -ECANCELED), clear their errors and events; returns once the board
 * has done it.
 * RETURN VALUE: 0; -EINVAL; -ETIMEDOUT the board did not acknowledge
 * within a second; -EOPNOTSUPP.
 */
int fc_stream_reset(struct fc_dev *dev, uint32_t ls);

/* A user kernel: @n 4-byte elements; non-zero fails the run (KFAIL). */
typedef int (*fc_kernel_fn)(void *dst, const void *src, uint32_t n,
			    uint32_t arg, void *ctx);

/*
 * fc_kernel_register - load C function @fn into an emulated board as
 * kernel @name; *id is the number to fc_sprog_run() it with.
 * fc_kernel_lookup - the id of kernel @name: the built-ins are "invert",
 * "add", "scale", "axpy" and "sum".
 * RETURN VALUE: 0 and *id set; -EINVAL (NULL, empty or too long a name);
 * -EEXIST name taken; -ENOSPC; -EOPNOTSUPP not an emulated board (register);
 * -ENOSYS the board has no kernel of that name (lookup).
 */
int fc_kernel_register(struct fc_dev *dev, const char *name, fc_kernel_fn fn,
		       void *ctx, uint32_t *id);
int fc_kernel_lookup(struct fc_dev *dev, const char *name, uint32_t *id);

#ifdef __cplusplus
}
#endif

#endif /* FPGACOMM_H */
