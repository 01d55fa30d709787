// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "emu_iommu.h"

#define BUS_BASE  0x100000000ull /* above 4 GiB: catches 32-bit truncation */
#define BUS_PAGE  4096ull
#define BUS_GUARD BUS_PAGE /* unmapped gap after every window */

static uint64_t page_up(uint64_t v)
{
	return (v + BUS_PAGE - 1) & ~(BUS_PAGE - 1);
}

/* Index of the last window starting at or below @bus, or -1. */
static long find_below(const struct fc__iommu *mmu, uint64_t bus)
{
	long lo = 0, hi = (long)mmu->n - 1, found = -1;

	while (lo <= hi) {
		long mid = lo + (hi - lo) / 2;

		if (mmu->win[mid].bus <= bus) {
			found = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return found;
}

/*
 * Map @len bytes at @ptr. The bus address keeps ptr's offset within its
 * page, as a real IOMMU mapping of pinned pages does.
 */
static int map_window(struct fc__iommu *mmu, void *ptr, uint64_t dev_addr,
		      void *dev_ctx, uint64_t len, uint64_t *bus)
{
	uint64_t in_page = (ptr ? (uintptr_t)ptr : dev_addr) & (BUS_PAGE - 1);
	uint64_t need = page_up(in_page + len) + BUS_GUARD;
	uint64_t start = BUS_BASE;
	size_t i;

	if (!len)
		return -EINVAL;
	/* First fit: the gap before window i, or after the last one. */
	for (i = 0; i < mmu->n; i++) {
		if (mmu->win[i].bus - (mmu->win[i].bus & (BUS_PAGE - 1)) >=
		    start + need)
			break;
		start = page_up(mmu->win[i].bus + mmu->win[i].len) + BUS_GUARD;
	}
	if (start + need < start)
		return -ENOMEM;
	if (mmu->n == mmu->cap) {
		size_t cap = mmu->cap ? mmu->cap * 2 : 16;
		struct fc__iommu_win *w = realloc(mmu->win, cap * sizeof(*w));

		if (!w)
			return -ENOMEM;
		mmu->win = w;
		mmu->cap = cap;
	}
	memmove(&mmu->win[i + 1], &mmu->win[i],
		(mmu->n - i) * sizeof(*mmu->win));
	mmu->win[i].bus = start + in_page;
	mmu->win[i].len = len;
	mmu->win[i].ptr = ptr;
	mmu->win[i].dev_addr = dev_addr;
	mmu->win[i].dev_ctx = dev_ctx;
	mmu->win[i].fd = -1;
	mmu->n++;
	*bus = start + in_page;
	return 0;
}

int fc__iommu_map(struct fc__iommu *mmu, void *ptr, uint64_t len, uint64_t *bus)
{
	if (!ptr)
		return -EINVAL;
	return map_window(mmu, ptr, 0, NULL, len, bus);
}

int fc__iommu_map_dev(struct fc__iommu *mmu, uint64_t dev_addr, void *dev_ctx,
		      uint64_t len, uint64_t *bus)
{
	if (!dev_addr)
		return -EINVAL;
	return map_window(mmu, NULL, dev_addr, dev_ctx, len, bus);
}

int fc__iommu_map_file(struct fc__iommu *mmu, int fd, uint64_t off,
		       uint64_t len, uint64_t *bus)
{
	int ret;
	long i;

	if (fd < 0)
		return -EINVAL;
	ret = map_window(mmu, NULL, off, NULL, len, bus);
	if (ret)
		return ret;
	i = find_below(mmu, *bus);
	mmu->win[i].fd = fd;
	return 0;
}

void fc__iommu_unmap(struct fc__iommu *mmu, uint64_t bus)
{
	long i = find_below(mmu, bus);

	if (i < 0 || mmu->win[i].bus != bus)
		return;
	memmove(&mmu->win[i], &mmu->win[i + 1],
		(mmu->n - i - 1) * sizeof(*mmu->win));
	mmu->n--;
}

/* The window holding all of [bus, bus+len), or NULL. */
static const struct fc__iommu_win *window(const struct fc__iommu *mmu,
					  uint64_t bus, uint64_t len)
{
	size_t h = __atomic_load_n(&mmu->hint, __ATOMIC_RELAXED);
	const struct fc__iommu_win *w;
	long i;

	/* the last one found, if it holds @bus and the next one does not */
	if (h < mmu->n && mmu->win[h].bus <= bus &&
	    (h + 1 == mmu->n || mmu->win[h + 1].bus > bus)) {
		i = (long)h;
	} else {
		i = find_below(mmu, bus);
		if (i < 0)
			return NULL;
		__atomic_store_n((size_t *)&mmu->hint, (size_t)i,
				 __ATOMIC_RELAXED);
	}
	w = &mmu->win[i];
	if (bus - w->bus > w->len || len > w->len - (bus - w->bus))
		return NULL;
	return w;
}

void *fc__iommu_translate(const struct fc__iommu *mmu, uint64_t bus,
			  uint64_t len)
{
	const struct fc__iommu_win *w = window(mmu, bus, len);

	if (!w || !w->ptr)
		return NULL;
	return (char *)w->ptr + (bus - w->bus);
}

uint64_t fc__iommu_dev(const struct fc__iommu *mmu, uint64_t bus, uint64_t len,
		       void **dev_ctx)
{
	const struct fc__iommu_win *w = window(mmu, bus, len);

	if (!w || w->ptr || w->fd >= 0)
		return 0;
	*dev_ctx = w->dev_ctx;
	return w->dev_addr + (bus - w->bus);
}

int fc__iommu_file(const struct fc__iommu *mmu, uint64_t bus, uint64_t len,
		   uint64_t *off)
{
	const struct fc__iommu_win *w = window(mmu, bus, len);

	if (!w || w->ptr || w->fd < 0)
		return -1;
	*off = w->dev_addr + (bus - w->bus);
	return w->fd;
}

void fc__iommu_fini(struct fc__iommu *mmu)
{
	free(mmu->win);
	memset(mmu, 0, sizeof(*mmu));
}
