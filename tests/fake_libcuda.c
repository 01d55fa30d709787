// SPDX-License-Identifier: MIT
/*
 * A stand-in for the CUDA driver (libcuda.so.1) so that machines without
 * a GPU, CI among them, run test_peer_gpu too: "device memory" is host
 * memory from malloc, behind the few driver API calls that the library
 * and the tests make, with the driver's checks on pointers and ranges.
 * No IPC (CUDA_ERROR_NOT_SUPPORTED), no dma-buf. With FAKE_CUDA_GUARD=1
 * in the environment a device pointer is, as on a GPU, an address the
 * CPU cannot touch (a PROT_NONE reservation; the bytes live elsewhere and
 * only the driver calls reach them), so that a library reading device
 * memory as if it were host memory crashes here too. Built as
 * build/tests/fake-cuda/libcuda.so.1; test_peer_gpu runs against it only
 * where no real driver loads, and says so.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define FAKE_MAX_ALLOCS		 1024
#define CUDA_SUCCESS		 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NOT_SUPPORTED 801
#define ATTR_CONTEXT		 1
#define ATTR_MEMORY_TYPE	 2
#define MEMORYTYPE_DEVICE	 2

typedef unsigned long long devptr;

/* The prototypes are the driver's; declared here for -Wmissing-prototypes. */
#define FAKE_API __attribute__((visibility("default")))

static struct {
	devptr base;
	size_t size;
	char *bytes; /* where they are: base itself, or (guard) elsewhere */
} allocs[FAKE_MAX_ALLOCS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int the_context; /* one device, one context */

/* The allocation holding [p, p + len), or -1. */
static int find(devptr p, size_t len)
{
	int i, found = -1;

	pthread_mutex_lock(&lock);
	for (i = 0; i < FAKE_MAX_ALLOCS; i++) {
		if (allocs[i].base && p >= allocs[i].base &&
		    p - allocs[i].base < allocs[i].size &&
		    len <= allocs[i].size - (p - allocs[i].base)) {
			found = i;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	return found;
}

/* The bytes of device address @p, in allocation @i. */
static void *bytes_of(int i, devptr p)
{
	return allocs[i].bytes + (p - allocs[i].base);
}

static int guarded(void)
{
	const char *env = getenv("FAKE_CUDA_GUARD");

	return env && !strcmp(env, "1");
}

FAKE_API int cuInit(unsigned int flags);
int cuInit(unsigned int flags)
{
	return flags ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

FAKE_API int cuDeviceGet(int *dev, int ordinal);
int cuDeviceGet(int *dev, int ordinal)
{
	if (ordinal)
		return CUDA_ERROR_INVALID_VALUE;
	*dev = 0;
	return CUDA_SUCCESS;
}

FAKE_API int cuDeviceGetCount(int *count);
int cuDeviceGetCount(int *count)
{
	*count = 1;
	return CUDA_SUCCESS;
}

FAKE_API int cuDeviceGetName(char *name, int len, int dev);
int cuDeviceGetName(char *name, int len, int dev)
{
	strncpy(name, "fake CUDA device (host memory)", (size_t)len);
	name[len - 1] = 0;
	return CUDA_SUCCESS;
}

FAKE_API int cuDevicePrimaryCtxRetain(void **ctx, int dev);
int cuDevicePrimaryCtxRetain(void **ctx, int dev)
{
	*ctx = &the_context;
	return CUDA_SUCCESS;
}

FAKE_API int cuDevicePrimaryCtxRelease_v2(int dev);
int cuDevicePrimaryCtxRelease_v2(int dev)
{
	return CUDA_SUCCESS;
}

FAKE_API int cuCtxSetCurrent(void *ctx);
int cuCtxSetCurrent(void *ctx)
{
	return CUDA_SUCCESS;
}

FAKE_API int cuCtxGetCurrent(void **ctx);
int cuCtxGetCurrent(void **ctx)
{
	*ctx = &the_context;
	return CUDA_SUCCESS;
}

FAKE_API int cuCtxPushCurrent_v2(void *ctx);
int cuCtxPushCurrent_v2(void *ctx)
{
	return ctx == &the_context ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FAKE_API int cuCtxPopCurrent_v2(void **ctx);
int cuCtxPopCurrent_v2(void **ctx)
{
	*ctx = &the_context;
	return CUDA_SUCCESS;
}

FAKE_API int cuCtxSynchronize(void);
int cuCtxSynchronize(void)
{
	return CUDA_SUCCESS;
}

FAKE_API int cuMemAlloc_v2(devptr *p, size_t size);
int cuMemAlloc_v2(devptr *p, size_t size)
{
	void *m = size ? malloc(size) : NULL, *addr = m;
	int i;

	if (m && guarded()) {
		addr = mmap(NULL, size, PROT_NONE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (addr == MAP_FAILED) {
			free(m);
			m = NULL;
		}
	}
	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&lock);
	for (i = 0; i < FAKE_MAX_ALLOCS && allocs[i].base; i++)
		;
	if (i < FAKE_MAX_ALLOCS) {
		allocs[i].base = (uintptr_t)addr;
		allocs[i].size = size;
		allocs[i].bytes = m;
	}
	pthread_mutex_unlock(&lock);
	if (i == FAKE_MAX_ALLOCS) {
		if (addr != m)
			munmap(addr, size);
		free(m);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*p = (uintptr_t)addr;
	return CUDA_SUCCESS;
}

FAKE_API int cuMemFree_v2(devptr p);
int cuMemFree_v2(devptr p)
{
	int i = find(p, 1);

	if (i < 0 || allocs[i].base != p)
		return CUDA_ERROR_INVALID_VALUE;
	if (allocs[i].bytes != (char *)(uintptr_t)p)
		munmap((void *)(uintptr_t)p, allocs[i].size);
	free(allocs[i].bytes);
	pthread_mutex_lock(&lock);
	allocs[i].base = 0;
	pthread_mutex_unlock(&lock);
	return CUDA_SUCCESS;
}

FAKE_API int cuMemcpyHtoD_v2(devptr dst, const void *src, size_t len);
int cuMemcpyHtoD_v2(devptr dst, const void *src, size_t len)
{
	int i = find(dst, len);

	if (i < 0)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(bytes_of(i, dst), src, len);
	return CUDA_SUCCESS;
}

FAKE_API int cuMemcpyDtoH_v2(void *dst, devptr src, size_t len);
int cuMemcpyDtoH_v2(void *dst, devptr src, size_t len)
{
	int i = find(src, len);

	if (i < 0)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(dst, bytes_of(i, src), len);
	return CUDA_SUCCESS;
}

/* One device: a peer copy is a copy inside it (for fpgacomm-bench). */
FAKE_API int cuMemcpyPeer(devptr dst, void *dctx, devptr src, void *sctx,
			  size_t len);
int cuMemcpyPeer(devptr dst, void *dctx, devptr src, void *sctx, size_t len)
{
	if (find(dst, len) < 0 || find(src, len) < 0)
		return CUDA_ERROR_INVALID_VALUE;
	memmove((void *)(uintptr_t)dst, (void *)(uintptr_t)src, len);
	return CUDA_SUCCESS;
}

FAKE_API int cuMemsetD8_v2(devptr dst, unsigned char v, size_t len);
int cuMemsetD8_v2(devptr dst, unsigned char v, size_t len)
{
	int i = find(dst, len);

	if (i < 0)
		return CUDA_ERROR_INVALID_VALUE;
	memset(bytes_of(i, dst), v, len);
	return CUDA_SUCCESS;
}

FAKE_API int cuPointerGetAttribute(void *data, int attr, devptr p);
int cuPointerGetAttribute(void *data, int attr, devptr p)
{
	if (find(p, 1) < 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (attr == ATTR_CONTEXT)
		*(void **)data = &the_context;
	else if (attr == ATTR_MEMORY_TYPE)
		*(unsigned int *)data = MEMORYTYPE_DEVICE;
	else
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

FAKE_API int cuMemGetAddressRange_v2(devptr *base, size_t *size, devptr p);
int cuMemGetAddressRange_v2(devptr *base, size_t *size, devptr p)
{
	int i = find(p, 1);

	if (i < 0)
		return CUDA_ERROR_INVALID_VALUE;
	*base = allocs[i].base;
	*size = allocs[i].size;
	return CUDA_SUCCESS;
}

FAKE_API int cuMemHostRegister_v2(void *p, size_t size, unsigned int flags);
int cuMemHostRegister_v2(void *p, size_t size, unsigned int flags)
{
	return CUDA_SUCCESS;
}

FAKE_API int cuMemHostUnregister(void *p);
int cuMemHostUnregister(void *p)
{
	return CUDA_SUCCESS;
}

FAKE_API int cuIpcGetMemHandle(void *handle, devptr p);
int cuIpcGetMemHandle(void *handle, devptr p)
{
	return CUDA_ERROR_NOT_SUPPORTED; /* malloc'd memory is per process */
}
