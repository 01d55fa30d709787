/* SPDX-License-Identifier: MIT */
/*
 * The VM's dma-buf fixture (scripts/vm/fcvm-dmabuf/) as the peer tests use
 * it: its counters in sysfs, CPU access to a dma-buf's mapping, and
 * page-aligned host buffers. Include after cmocka.h.
 */
#ifndef FC_DMABUF_FIXTURE_H
#define FC_DMABUF_FIXTURE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/dma-buf.h>

#define PARAMS "/sys/module/fcvm_dmabuf/parameters/"

/* One counter of the fixture (live_bufs, live_attach...), or -1. */
static inline int fixture_count(const char *name)
{
	char p[128];
	FILE *f;
	int n = -1;

	snprintf(p, sizeof(p), PARAMS "%s", name);
	f = fopen(p, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%d", &n) != 1)
		n = -1;
	fclose(f);
	return n;
}

/* Wait (up to 1 s) for a counter of the fixture to read @want. */
static inline int settle(const char *name, int want)
{
	for (int i = 0; i < 100 && fixture_count(name) != want; i++)
		usleep(10000);
	return fixture_count(name);
}

/*
 * CPU access to a dma-buf's mmap is bracketed by DMA_BUF_IOCTL_SYNC, so
 * that the exporter syncs its mappings (bounce buffers: swiotlb=force).
 */
static inline void dmabuf_sync(int dbuf, uint64_t flags)
{
	struct dma_buf_sync s = { .flags = flags | DMA_BUF_SYNC_RW };

	assert_int_equal(ioctl(dbuf, DMA_BUF_IOCTL_SYNC, &s), 0);
}

/* @len bytes of page-aligned host memory (the test fails without). */
static inline void *host_buf(size_t len)
{
	void *p = aligned_alloc((size_t)sysconf(_SC_PAGESIZE), len);

	assert_non_null(p);
	return p;
}

#endif /* FC_DMABUF_FIXTURE_H */
