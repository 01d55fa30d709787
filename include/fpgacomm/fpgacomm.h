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
#define FC_API_VERSION_MINOR	1

struct fc_dev;

/* ---- Devices ---- */

/*
 * fc_open - open a board.
 * @name: "/dev/fpgacommN" (kernel driver), "emu:CLUSTER/N" (emulated board N
 *        of an emulated cluster; "emu:" alone means "emu:local/0"), or NULL
 *        for $FPGACOMM_DEVICE, else /dev/fpgacomm0 if present, else "emu:".
 * Emulated boards read $FPGACOMM_EMU_MEM (board memory size, e.g. "8G";
 * default 8 GiB, reserved but not backed by RAM until written).
 * RETURN VALUE: 0 and *devp set; -EINVAL bad name, -ENOENT no such board,
 * -EPROTO the board's ID or version is not one this library speaks,
 * -ENOMEM, or the error of the underlying open.
 */
int fc_open(struct fc_dev **devp, const char *name);

/* fc_close - close a board, freeing every buffer still registered on it.
 * RETURN VALUE: 0, or -EINVAL if @dev is NULL. */
int fc_close(struct fc_dev *dev);

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
 * free is caught this way); -EBUSY if a submitted transfer still uses it.
 */
int fc_mem_free(struct fc_dev *dev, struct fc_mem *mem);

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
	uint32_t flags;		/* none defined yet: must be zero */
	uint32_t reserved;	/* must be zero */
};

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
 * reserved fields, zero or too long a transfer), -E2BIG (n out of range),
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
 * -ECANCELED) and reset the engines.
 * RETURN VALUE: 0 or -ENODEV.
 */
int fc_dma_reset(struct fc_dev *dev);

/* Convenience: submit, then wait. Same return values as both. */
int fc_dma_run(struct fc_dev *dev, const struct fc_xfer *xfers,
	       unsigned int n, int timeout_ms);

/* ---- Errors ---- */

/* fc_strerror - text for a negative errno returned by this library
 * (positive values are accepted too). Never NULL. */
const char *fc_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* FPGACOMM_H */
