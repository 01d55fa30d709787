// SPDX-License-Identifier: MIT
/*
 * A stand-in for the CUDA driver (libcuda.so.1) so that machines without
 * a GPU, CI among them, run test_peer_gpu too: "device memory" is host
 * memory from malloc, behind the few driver API calls that the library
 * and the tests make, with the driver's checks on pointers and ranges.
 * No dma-buf. No IPC (CUDA_ERROR_NOT_SUPPORTED) unless FAKE_CUDA_IPC=1:
 * then device memory is a shared memory file (memfd) that a handle names
 * by process and descriptor, opened by mapping /proc/PID/fd/FD, and
 * fake_cuda_ipc_opens() counts the handles opened. With FAKE_CUDA_GUARD=1
 * in the environment a device pointer is, as on a GPU, an address the
 * CPU cannot touch (a PROT_NONE reservation; the bytes live elsewhere and
 * only the driver calls reach them), so that a library reading device
 * memory as if it were host memory crashes here too. Built as
 * build/tests/fake-cuda/libcuda.so.1; test_peer_gpu runs against it only
 * where no real driver loads, and says so.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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
	int fd;	     /* FAKE_CUDA_IPC: its memfd (-1: opened from a handle) */
	int ipc;     /* 1: a memfd mapping, 2: opened from a handle */
} allocs[FAKE_MAX_ALLOCS];
static int ipc_opens;
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
static int ipc_on(void)
{
	const char *env = getenv("FAKE_CUDA_IPC");

	return env && !strcmp(env, "1") && !guarded();
}

/* A slot for [addr, addr + size), or -1. */
static int add_alloc(void *addr, size_t size, char *bytes, int fd, int ipc)
{
	int i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < FAKE_MAX_ALLOCS && allocs[i].base; i++)
		;
	if (i < FAKE_MAX_ALLOCS) {
		allocs[i].base = (uintptr_t)addr;
		allocs[i].size = size;
		allocs[i].bytes = bytes;
		allocs[i].fd = fd;
		allocs[i].ipc = ipc;
	}
	pthread_mutex_unlock(&lock);
	return i < FAKE_MAX_ALLOCS ? i : -1;
}

static int alloc_shared(devptr *p, size_t size)
{
	int fd = size ? memfd_create("fake-cuda", MFD_CLOEXEC) : -1;
	void *m = MAP_FAILED;

	if (fd >= 0 && !ftruncate(fd, (off_t)size))
		m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED || add_alloc(m, size, m, fd, 1) < 0) {
		if (m != MAP_FAILED)
			munmap(m, size);
		if (fd >= 0)
			close(fd);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*p = (uintptr_t)m;
	return CUDA_SUCCESS;
}

int cuMemAlloc_v2(devptr *p, size_t size)
{
	void *m, *addr;
	int i;

	if (ipc_on())
		return alloc_shared(p, size);
	m = size ? malloc(size) : NULL;
	addr = m;
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
	i = add_alloc(addr, size, m, -1, 0);
	if (i < 0) {
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

	if (i < 0 || allocs[i].base != p || allocs[i].ipc == 2)
		return CUDA_ERROR_INVALID_VALUE;
	if (allocs[i].ipc) {
		munmap((void *)(uintptr_t)p, allocs[i].size);
		close(allocs[i].fd);
		pthread_mutex_lock(&lock);
		allocs[i].base = 0;
		pthread_mutex_unlock(&lock);
		return CUDA_SUCCESS;
	}
	if (allocs[i].bytes != (char *)(uintptr_t)p)
		munmap((void *)(uintptr_t)p, allocs[i].size);
	free(allocs[i].bytes);
	pthread_mutex_lock(&lock);
	allocs[i].base = 0;
	pthread_mutex_unlock(&lock);
	return CUDA_SUCCESS;
}

/*
 * Into another process's memory: with FAKE_CUDA_IPC_COPY_US=N, half, a
 * pause of N us, the other half, so that tests can revoke mid-copy.
 */
static void copy_in(int i, devptr dst, const void *src, size_t len)
{
	const char *env = getenv("FAKE_CUDA_IPC_COPY_US");
	size_t half = len / 2;

	if (allocs[i].ipc != 2 || !env) {
		memmove(bytes_of(i, dst), src, len);
		return;
	}
	memmove(bytes_of(i, dst), src, half);
	usleep((useconds_t)atoi(env));
	memmove(bytes_of(i, dst + half), (const char *)src + half, len - half);
}

FAKE_API int cuMemcpyHtoD_v2(devptr dst, const void *src, size_t len);
int cuMemcpyHtoD_v2(devptr dst, const void *src, size_t len)
{
	int i = find(dst, len);

	if (i < 0)
		return CUDA_ERROR_INVALID_VALUE;
	copy_in(i, dst, src, len);
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

/* CUipcMemHandle: 64 bytes, passed by value. */
typedef struct {
	char reserved[64];
} ipc_handle;

struct fake_handle {
	int pid, fd;
	size_t size;
};

FAKE_API int cuIpcGetMemHandle(ipc_handle *handle, devptr p);
int cuIpcGetMemHandle(ipc_handle *handle, devptr p)
{
	struct fake_handle h;
	int i = find(p, 1);

	if (i < 0 || allocs[i].base != p)
		return CUDA_ERROR_INVALID_VALUE;
	if (allocs[i].ipc != 1)
		return CUDA_ERROR_NOT_SUPPORTED; /* malloc'd: per process */
	memset(handle, 0, sizeof(*handle));
	h.pid = getpid();
	h.fd = allocs[i].fd;
	h.size = allocs[i].size;
	memcpy(handle->reserved, &h, sizeof(h));
	return CUDA_SUCCESS;
}

FAKE_API int cuIpcOpenMemHandle_v2(devptr *p, ipc_handle handle,
				   unsigned int flags);
int cuIpcOpenMemHandle_v2(devptr *p, ipc_handle handle, unsigned int flags)
{
	struct fake_handle h;
	char path[64];
	void *m;
	int fd;

	memcpy(&h, handle.reserved, sizeof(h));
	if (!ipc_on() || !h.size)
		return CUDA_ERROR_NOT_SUPPORTED;
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", h.pid, h.fd);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return CUDA_ERROR_INVALID_VALUE;
	m = mmap(NULL, h.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (add_alloc(m, h.size, m, -1, 2) < 0) {
		munmap(m, h.size);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	__atomic_fetch_add(&ipc_opens, 1, __ATOMIC_RELAXED);
	*p = (uintptr_t)m;
	return CUDA_SUCCESS;
}

FAKE_API int cuIpcCloseMemHandle(devptr p);
int cuIpcCloseMemHandle(devptr p)
{
	int i = find(p, 1);

	if (i < 0 || allocs[i].base != p || allocs[i].ipc != 2)
		return CUDA_ERROR_INVALID_VALUE;
	munmap((void *)(uintptr_t)p, allocs[i].size);
	pthread_mutex_lock(&lock);
	allocs[i].base = 0;
	pthread_mutex_unlock(&lock);
	return CUDA_SUCCESS;
}

FAKE_API int cuMemcpyDtoD_v2(devptr dst, devptr src, size_t len);
int cuMemcpyDtoD_v2(devptr dst, devptr src, size_t len)
{
	int d = find(dst, len), s = find(src, len);

	if (d < 0 || s < 0)
		return CUDA_ERROR_INVALID_VALUE;
	copy_in(d, dst, bytes_of(s, src), len);
	return CUDA_SUCCESS;
}

FAKE_API int cuStreamSynchronize(void *stream);
int cuStreamSynchronize(void *stream)
{
	return CUDA_SUCCESS; /* every copy here is done on return */
}

/* Not CUDA's: how many handles this process opened (tests). */
FAKE_API int fake_cuda_ipc_opens(void);
int fake_cuda_ipc_opens(void)
{
	return __atomic_load_n(&ipc_opens, __ATOMIC_RELAXED);
}
