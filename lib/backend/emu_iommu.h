/* SPDX-License-Identifier: MIT */
/*
 * The emulated board's view of host memory: each registered buffer gets a
 * window of bus addresses, with unmapped gaps between windows, as an IOMMU
 * would give. Anything outside a window is a fault.
 */
#ifndef FC_EMU_IOMMU_H
#define FC_EMU_IOMMU_H

#include <stddef.h>
#include <stdint.h>

struct fc__iommu_win {
	uint64_t bus;
	uint64_t len;
	void *ptr;	   /* CPU memory, or ... */
	uint64_t dev_addr; /* ... (ptr NULL) a device's, e.g. a GPU's */
	void *dev_ctx;	   /* the device API's context for it, or NULL */
	int fd;		   /* or (ptr NULL, >= 0) a file, at dev_addr */
};

struct fc__iommu {
	struct fc__iommu_win *win; /* sorted by bus address */
	size_t n, cap;
	/* the window found last: the board writes the same queue and
	 * buffers over and over (a hint, checked before it is used) */
	size_t hint;
};

int fc__iommu_map(struct fc__iommu *mmu, void *ptr, uint64_t len,
		  uint64_t *bus);
/* A window onto device memory at @dev_addr, which translate refuses. */
int fc__iommu_map_dev(struct fc__iommu *mmu, uint64_t dev_addr, void *dev_ctx,
		      uint64_t len, uint64_t *bus);
/*
 * A window onto [off, off + len) of the file @fd, which translate refuses
 * too: the engine reads and writes it by offset, so that a file cut short
 * under it gives an error rather than SIGBUS. The window owns @fd.
 */
int fc__iommu_map_file(struct fc__iommu *mmu, int fd, uint64_t off,
		       uint64_t len, uint64_t *bus);
/* The file of [bus, bus+len) in one file window (*off its offset), or -1. */
int fc__iommu_file(const struct fc__iommu *mmu, uint64_t bus, uint64_t len,
		   uint64_t *off);
/* The device address of [bus, bus+len) in one device window, or 0;
 * *dev_ctx: the context it was mapped with. */
uint64_t fc__iommu_dev(const struct fc__iommu *mmu, uint64_t bus, uint64_t len,
		       void **dev_ctx);
void fc__iommu_unmap(struct fc__iommu *mmu, uint64_t bus);
void *fc__iommu_translate(const struct fc__iommu *mmu, uint64_t bus,
			  uint64_t len);
void fc__iommu_fini(struct fc__iommu *mmu);

#endif /* FC_EMU_IOMMU_H */
