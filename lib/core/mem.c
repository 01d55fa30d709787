// SPDX-License-Identifier: MIT
/* Host memory the board can reach: allocation on the board's node, and
 * registration of the caller's memory. */
#include <errno.h>
#include <numa.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"
#include "cuda_mem.h"

#define KNOWN_MEM_FLAGS FC_MEM_NUMA_ANY

struct fc__mem *fc__mem_find(struct fc_dev *dev, const struct fc_mem *mem)
{
	struct fc__mem *m;

	/* Compare pointers only: @mem may be stale and must not be read. */
	for (m = dev->mems; m; m = m->next)
		if (&m->pub == mem)
			return m;
	return NULL;
}

static void unlink_mem(struct fc_dev *dev, struct fc__mem *mem)
{
	struct fc__mem **pp;

	if (dev->mem_hit == mem)
		dev->mem_hit = NULL;
	for (pp = &dev->mems; *pp; pp = &(*pp)->next) {
		if (*pp == mem) {
			*pp = mem->next;
			return;
		}
	}
}

/* Zeroed pages, on @node when the board has one and libnuma works. */
static void *alloc_pages(size_t len, int node, unsigned int flags, bool *numa)
{
	void *p;

	*numa = node >= 0 && !(flags & FC_MEM_NUMA_ANY) &&
		numa_available() >= 0;
	if (*numa)
		return numa_alloc_onnode(len, node);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void free_pages(void *p, size_t len, bool numa)
{
	if (numa)
		numa_free(p, len);
	else
		munmap(p, len);
}

/*
 * Hands @m, filled in by the caller, to the backend's @setup (mem_map or
 * mem_alloc_contig) and lists it; frees it if that fails.
 */
static int publish_mem(struct fc_dev *dev, struct fc__mem *m,
		       int (*setup)(struct fc_dev *dev, struct fc__mem *mem),
		       struct fc_mem **memp)
{
	int ret;

	fc__lock(&dev->lock);
	ret = setup(dev, m);
	if (!ret) {
		m->next = dev->mems;
		dev->mems = m;
	}
	fc__unlock(&dev->lock);
	if (ret) {
		free(m);
		return ret;
	}
	*memp = &m->pub;
	return 0;
}

static int add_mem(struct fc_dev *dev, void *addr, size_t len, bool owned,
		   size_t map_len, bool numa, bool transient,
		   struct fc_mem **memp)
{
	struct fc__mem *m;

	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->pub.addr = addr;
	m->pub.len = len;
	m->owned = owned;
	m->map_len = map_len;
	m->numa = numa;
	m->transient = transient;
	return publish_mem(dev, m, dev->be->mem_map, memp);
}

FC__EXPORT int fc_mem_alloc(struct fc_dev *dev, size_t len, unsigned int flags,
			    struct fc_mem **memp)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t map_len;
	bool numa;
	void *p;
	int ret;

	if (!dev || !memp || !len || (flags & ~KNOWN_MEM_FLAGS))
		return -EINVAL;
	if (len > SIZE_MAX - page)
		return -ENOMEM;
	map_len = (len + page - 1) & ~(page - 1);
	p = alloc_pages(map_len, dev->info.numa_node, flags, &numa);
	if (!p)
		return -ENOMEM;
	ret = add_mem(dev, p, len, true, map_len, numa, false, memp);
	if (ret)
		free_pages(p, map_len, numa);
	return ret;
}

int fc__mem_alloc_contig(struct fc_dev *dev, size_t len, struct fc_mem **memp)
{
	struct fc__mem *m;

	if (!dev->be->mem_alloc_contig)
		return fc_mem_alloc(dev, len, 0, memp);
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->pub.len = len;
	m->contig = true;
	return publish_mem(dev, m, dev->be->mem_alloc_contig, memp);
}

FC__EXPORT int fc_mem_register(struct fc_dev *dev, void *addr, size_t len,
			       unsigned int flags, struct fc_mem **memp)
{
	if (!dev || !addr || !memp || !len || (flags & ~KNOWN_MEM_FLAGS))
		return -EINVAL;
	if ((uintptr_t)addr + len < (uintptr_t)addr)
		return -EFAULT;
	return add_mem(dev, addr, len, false, 0, false, false, memp);
}

int fc__mem_register_transient(struct fc_dev *dev, void *addr, size_t len,
			       struct fc_mem **memp)
{
	if ((uintptr_t)addr + len < (uintptr_t)addr)
		return -EFAULT;
	fc__stat_inc(&dev->stats.rndv_regs);
	return add_mem(dev, addr, len, false, 0, false, true, memp);
}

/* Host memory of the caller's that covers [p, p + len)? */
static bool covers(const struct fc__mem *m, uintptr_t p, size_t len)
{
	uintptr_t a = (uintptr_t)m->pub.addr;

	return !m->transient && !m->peer && a && p >= a && len <= m->pub.len &&
	       p - a <= m->pub.len - len;
}

/*
 * A collective's messages come from the same few buffers: the last one
 * found is looked at first, the list (a handful of buffers) only then.
 */
struct fc_mem *fc__mem_hold(struct fc_dev *dev, const void *buf, size_t len,
			    uint64_t *off)
{
	uintptr_t p = (uintptr_t)buf;
	struct fc__mem *m;

	if (!buf || !len)
		return NULL;
	fc__lock(&dev->lock);
	m = dev->mem_hit;
	if (!m || !covers(m, p, len))
		for (m = dev->mems; m && !covers(m, p, len); m = m->next)
			;
	if (m) {
		dev->mem_hit = m;
		m->users++;
		*off = p - (uintptr_t)m->pub.addr;
	}
	fc__unlock(&dev->lock);
	return m ? &m->pub : NULL;
}

bool fc__mem_held(struct fc_dev *dev, struct fc_mem *mem)
{
	struct fc__mem *m = fc__container_of(mem, struct fc__mem, pub);
	bool held;

	fc__lock(&dev->lock);
	held = m->users != 0;
	fc__unlock(&dev->lock);
	return held;
}

void fc__mem_unhold(struct fc_dev *dev, struct fc_mem *mem)
{
	struct fc__mem *m = fc__container_of(mem, struct fc__mem, pub);

	fc__lock(&dev->lock);
	m->users--;
	fc__unlock(&dev->lock);
}

static void release(struct fc_dev *dev, struct fc__mem *m)
{
	fc__pw_unmap(dev, m);
	dev->be->mem_unmap(dev, m);
	if (m->ipc_base)
		fc__cuda_ipc_close(m->ipc_base, m->dev_ctx);
	if (m->owned)
		free_pages(m->pub.addr, m->map_len, m->numa);
	free(m);
}

/* Is a chain naming @m still running, on any engine? Only looks (moves
 * nothing). Lock held. */
static bool chains_use(struct fc_dev *dev, const struct fc__mem *m)
{
	struct fc_dma_result res;
	unsigned int e;

	for (e = 0; e < FC_DMA_MAX_ENGINES; e++)
		if (m->last_ticket[e] &&
		    dev->be->poll(dev, m->last_ticket[e], &res, NULL) ==
			    -EINPROGRESS)
			return true;
	return false;
}

FC__EXPORT int fc_mem_free(struct fc_dev *dev, struct fc_mem *mem)
{
	struct fc__mem *m;
	int ret = 0;

	if (!dev || !mem)
		return -EINVAL;
	fc__lock(&dev->lock);
	m = fc__mem_find(dev, mem);
	if (!m) {
		ret = -EINVAL;
		goto out_unlock;
	}
	/* A message on its way from or into it, or a chain naming it. */
	if (m->users || chains_use(dev, m)) {
		ret = -EBUSY;
		goto out_unlock;
	}
	/* Revoked first: no remote write lands once it is gone. */
	ret = fc__pw_unmap(dev, m);
	if (ret)
		goto out_unlock;
	unlink_mem(dev, m);
	release(dev, m);
out_unlock:
	fc__unlock(&dev->lock);
	return ret;
}

/* At close: engines are reset, so every buffer can go. Lock held. */
void fc__mem_release_all(struct fc_dev *dev)
{
	dev->mem_hit = NULL;
	while (dev->mems) {
		struct fc__mem *m = dev->mems;

		dev->mems = m->next;
		release(dev, m);
	}
}
