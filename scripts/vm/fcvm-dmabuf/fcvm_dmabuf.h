/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * fcvm_dmabuf: the ioctls of /dev/fcvm_dmabuf, a test VM fixture that
 * exports kernel pages as dma-bufs (Debian 12's kernel has no udmabuf and
 * no DMA heaps). Shared by the module and tests/test_peer.c.
 */
#ifndef _FCVM_DMABUF_H
#define _FCVM_DMABUF_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* CREATE: @size bytes (a page multiple, at most 64 MiB) of zeroed pages. */
struct fcvm_dmabuf_create {
	__aligned_u64 size;		/* in */
	__s32 fd;			/* out: the dma-buf, close-on-exec */
	__u32 reserved;
};

/*
 * REVOKE: the exporter takes the memory back, as a GPU driver evicting a
 * buffer would: every importer gets move_notify. The pages stay (mmap
 * still shows them) until the dma-buf is released.
 */
struct fcvm_dmabuf_revoke {
	__s32 fd;			/* in: a dma-buf of this module */
	__u32 reserved;
};

/*
 * IMPORT: the fixture itself imports dma-buf @fd (any exporter's) as a
 * dynamic importer allowing peer-to-peer, as a GPU or RDMA driver would,
 * and maps it; @addr is the mapping's first bus address. One import per
 * open file of the fixture, released at close. Each move_notify it gets
 * counts in the parameter "moves".
 * REMAP: what such an importer does after a move_notify: unmap, and map
 * again (reservation held); @addr is the new first bus address, or the
 * call fails with the exporter's error (and nothing stays mapped).
 */
struct fcvm_dmabuf_import {
	__s32 fd;			/* in: IMPORT's dma-buf; REMAP: 0 */
	__u32 reserved;
	__aligned_u64 addr;		/* out */
};

#define FCVM_DMABUF_CREATE	_IOWR('F', 0x40, struct fcvm_dmabuf_create)
#define FCVM_DMABUF_REVOKE	_IOW('F', 0x41, struct fcvm_dmabuf_revoke)
#define FCVM_DMABUF_IMPORT	_IOWR('F', 0x42, struct fcvm_dmabuf_import)
#define FCVM_DMABUF_REMAP	_IOWR('F', 0x43, struct fcvm_dmabuf_import)

#endif
