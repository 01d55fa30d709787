/* SPDX-License-Identifier: MIT */
/*
 * Private to lib/: what kind of memory a user buffer is (host or CUDA
 * device memory), how the library moves it, and the host bounce buffers
 * that device memory is staged through (lib/core/devmem.c).
 */
#ifndef FC_DEVMEM_H
#define FC_DEVMEM_H

#include <stdbool.h>
#include <stddef.h>

struct fc_dev;

/* How a user buffer is moved. */
enum fc__mem_path {
	FC__PATH_HOST,	/* host memory: the CPU and the board read it */
	FC__PATH_STAGE, /* device memory: copied through a host bounce buffer */
	FC__PATH_DIRECT, /* device memory the board moves itself */
};

/* Set once this process is known to have no CUDA driver: every pointer is
 * host memory, told by one load and one branch. */
extern int fc__devmem_none;

enum fc__mem_path fc__devmem_path_slow(struct fc_dev *dev, const void *p);

/*
 * fc__devmem_path - how the library moves the user buffer @p on @dev's
 * behalf (@dev may be NULL). NULL and FC_IN_PLACE are host memory.
 */
static inline enum fc__mem_path fc__devmem_path(struct fc_dev *dev,
						const void *p)
{
	if (__builtin_expect(
		    __atomic_load_n(&fc__devmem_none, __ATOMIC_RELAXED), 1))
		return FC__PATH_HOST;
	return fc__devmem_path_slow(dev, p);
}

/*
 * fc__devmem_to_host / fc__devmem_to_dev - copy @len bytes out of device
 * memory @dptr into host memory @host, or the other way.
 * RETURN VALUE: 0; -EFAULT (not device memory of one allocation, or past
 * its end); -ENODEV; -EIO.
 */
int fc__devmem_to_host(void *host, const void *dptr, size_t len);
int fc__devmem_to_dev(void *dptr, const void *host, size_t len);

/* A host bounce buffer, page-locked where CUDA lets it be. */
struct fc__bounce {
	void *p;
	size_t size;
	bool pinned;
	/* a receive's device buffer, the bytes' way at its end; NULL: a
	 * send's (fc__bounce_get clears it) */
	void *dst;
	struct fc__bounce *next; /* in the free list */
};

/*
 * fc__bounce_get - a bounce buffer of at least @len bytes (kept from an
 * earlier call where one fits). fc__bounce_put - give it back.
 * RETURN VALUE: 0 and *bp set, or -ENOMEM.
 */
int fc__bounce_get(size_t len, struct fc__bounce **bp);
void fc__bounce_put(struct fc__bounce *b);

/*
 * fc__bounce_end - a request staged through @b has ended with @ret: for a
 * receive (@b->dst set) its @len bytes go to that device memory when it
 * succeeded. @b is not given back (the request's free does that).
 * RETURN VALUE: @ret, or the copy's error.
 */
int fc__bounce_end(struct fc__bounce *b, size_t len, int ret);

#endif /* FC_DEVMEM_H */
