// SPDX-License-Identifier: MIT
/*
 * User buffers in CUDA device memory. Where a buffer lives is asked of
 * the CUDA driver (cuPointerGetAttribute) only in a process that has one:
 * without libcuda.so.1 (or with FPGACOMM_CUDA=0) every pointer is host
 * memory, told by one branch. Device memory is moved through host bounce
 * buffers, page-locked so that the GPU's copy engine reads and writes
 * them at full speed, and kept for the next call.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_mem.h"
#include "devmem.h"
#include "internal.h"

int fc__devmem_none;

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

static void probe(void)
{
	const char *env = getenv("FPGACOMM_CUDA");

	if ((env && !strcmp(env, "0")) || fc__cuda_probe())
		__atomic_store_n(&fc__devmem_none, 1, __ATOMIC_RELAXED);
}

/*
 * The one place that chooses how device memory moves. A board that
 * could send packets straight from device memory and write them into
 * another board's device memory (a peer region of the fabric address map)
 * would take FC__PATH_DIRECT here; until then it is staged.
 */
static enum fc__mem_path device_path(struct fc_dev *dev)
{
	return FC__PATH_STAGE;
}

enum fc__mem_path fc__devmem_path_slow(struct fc_dev *dev, const void *p)
{
	if ((uintptr_t)p <= 1) /* NULL, FC_IN_PLACE */
		return FC__PATH_HOST;
	pthread_once(&probe_once, probe);
	if (__atomic_load_n(&fc__devmem_none, __ATOMIC_RELAXED) ||
	    !fc__cuda_is_device(p))
		return FC__PATH_HOST;
	return device_path(dev);
}

static int devmem_copy(void *dptr, void *host, size_t len, bool to_dev)
{
	int ret;

	if (!len)
		return 0;
	/* CUDA is up: the caller's device memory says so */
	ret = fc__cuda_ready();
	if (!ret)
		ret = fc__cuda_move(NULL, (uint64_t)(uintptr_t)dptr, host, len,
				    to_dev);
	return ret == -EINVAL || ret == -ERANGE ? -EFAULT : ret;
}

int fc__devmem_to_host(void *host, const void *dptr, size_t len)
{
	return devmem_copy((void *)dptr, host, len, false);
}

int fc__devmem_to_dev(void *dptr, const void *host, size_t len)
{
	return devmem_copy(dptr, (void *)host, len, true);
}

/* ---- Bounce buffers ---- */

/*
 * Page-locking costs about as much as copying the bytes a few times over,
 * so buffers are kept for later calls: at most BOUNCE_KEPT of them, of at
 * most BOUNCE_KEEP_BYTES together (the smallest go first).
 */
#define BOUNCE_KEPT	  8
#define BOUNCE_KEEP_BYTES ((size_t)1 << 30)
#define BOUNCE_MIN	  (64u << 10)

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fc__bounce *pool; /* smallest first */
static unsigned int pooled;
static size_t pooled_bytes;

static void bounce_free(struct fc__bounce *b)
{
	if (b->pinned)
		fc__cuda_unpin(b->p);
	free(b->p);
	free(b);
}

int fc__bounce_get(size_t len, struct fc__bounce **bp)
{
	struct fc__bounce **pp, *b;
	size_t size = BOUNCE_MIN;

	pthread_mutex_lock(&pool_lock);
	for (pp = &pool; (b = *pp) && b->size < len; pp = &b->next)
		;
	if (b) {
		*pp = b->next;
		pooled--;
		pooled_bytes -= b->size;
	}
	pthread_mutex_unlock(&pool_lock);
	if (b) {
		b->dst = NULL;
		*bp = b;
		return 0;
	}
	while (size < len && size < ((size_t)1 << 62))
		size <<= 1; /* few sizes, so that kept ones fit later calls */
	b = calloc(1, sizeof(*b));
	if (!b || posix_memalign(&b->p, 4096, size)) {
		free(b);
		return -ENOMEM;
	}
	b->size = size;
	b->pinned = !fc__cuda_pin(b->p, size);
	*bp = b;
	return 0;
}

void fc__bounce_put(struct fc__bounce *b)
{
	struct fc__bounce **pp, *drop = NULL, *d;

	if (!b)
		return;
	if (b->size > BOUNCE_KEEP_BYTES) {
		bounce_free(b);
		return;
	}
	pthread_mutex_lock(&pool_lock);
	for (pp = &pool; *pp && (*pp)->size < b->size; pp = &(*pp)->next)
		;
	b->next = *pp;
	*pp = b;
	pooled++;
	pooled_bytes += b->size;
	/* the smallest go first: the cheapest to make again */
	while (pooled > BOUNCE_KEPT || pooled_bytes > BOUNCE_KEEP_BYTES) {
		d = pool;
		pool = d->next;
		pooled--;
		pooled_bytes -= d->size;
		d->next = drop;
		drop = d;
	}
	pthread_mutex_unlock(&pool_lock);
	for (; drop; drop = d) {
		d = drop->next;
		bounce_free(drop);
	}
}

int fc__bounce_end(struct fc__bounce *b, size_t len, int ret)
{
	if (ret || !b->dst)
		return ret;
	return fc__devmem_to_dev(b->dst, b->p, len);
}
