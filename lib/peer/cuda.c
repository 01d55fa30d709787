// SPDX-License-Identifier: MIT
/*
 * CUDA device memory as peer memory. The CUDA driver API is loaded at run
 * time (dlopen of libcuda.so.1, no build dependency). For the kernel
 * driver it is asked for a dma-buf of the range
 * (cuMemGetHandleForAddressRange, CUDA 11.7 and later, where the GPU and
 * its kernel driver support dma-buf), which the driver imports like any
 * other (fc_peer_import()). An emulated board maps the range as a device
 * window instead, and its engine moves the bytes with cuMemcpyHtoD/DtoH
 * (fc__cuda_move()).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "cuda_mem.h"

/* The few types and values of cuda.h that we need, by their ABI. */
typedef int fc__cu_result;
typedef unsigned long long fc__cu_devptr;
typedef void *fc__cu_ctx;
typedef struct {
	char reserved[FC_CUDA_IPC_HANDLE_SIZE];
} fc__cu_ipc_handle; /* CUipcMemHandle, passed by value */
#define CU_SUCCESS			    0
#define CU_ERROR_INVALID_VALUE		    1
#define CU_ERROR_NOT_INITIALIZED	    3
#define CU_ERROR_DEINITIALIZED		    4
#define CU_ERROR_NO_DEVICE		    100
#define CU_ERROR_INVALID_CONTEXT	    201
#define CU_ERROR_NOT_FOUND		    500
#define CU_ERROR_NOT_SUPPORTED		    801
#define CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD 1
#define CU_POINTER_ATTRIBUTE_CONTEXT	    1
#define CU_POINTER_ATTRIBUTE_MEMORY_TYPE    2
#define CU_MEMORYTYPE_DEVICE		    2
#define CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS  1
#define CU_MEMHOSTREGISTER_PORTABLE	    1

struct fc__cuda {
	int status; /* 0 loaded, or why not (-errno) */
	fc__cu_result (*init)(unsigned int flags);
	fc__cu_result (*get_handle)(void *handle, fc__cu_devptr dptr,
				    size_t size, int type,
				    unsigned long long flags);
	fc__cu_result (*ptr_attr)(void *data, int attr, fc__cu_devptr ptr);
	fc__cu_result (*addr_range)(fc__cu_devptr *base, size_t *size,
				    fc__cu_devptr ptr);
	fc__cu_result (*push)(fc__cu_ctx ctx);
	fc__cu_result (*pop)(fc__cu_ctx *ctx);
	fc__cu_result (*htod)(fc__cu_devptr dst, const void *src, size_t len);
	fc__cu_result (*dtoh)(void *dst, fc__cu_devptr src, size_t len);
	fc__cu_result (*dtod)(fc__cu_devptr dst, fc__cu_devptr src, size_t len);
	fc__cu_result (*stream_sync)(void *stream);
	/* CUDA IPC and what opening a handle needs */
	fc__cu_result (*ipc_get)(fc__cu_ipc_handle *h, fc__cu_devptr dptr);
	fc__cu_result (*ipc_open)(fc__cu_devptr *dptr, fc__cu_ipc_handle h,
				  unsigned int flags);
	fc__cu_result (*ipc_close)(fc__cu_devptr dptr);
	fc__cu_result (*ctx_current)(fc__cu_ctx *ctx);
	fc__cu_result (*device_get)(int *dev, int ordinal);
	fc__cu_result (*primary_retain)(fc__cu_ctx *ctx, int dev);
};

static struct fc__cuda cuda;
static pthread_once_t cuda_once = PTHREAD_ONCE_INIT;

#define CU_SYM(lib, field, name) (*(void **)&cuda.field = dlsym(lib, name))

static void cuda_load(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!lib) {
		cuda.status = -ENODEV; /* no NVIDIA driver here */
		return;
	}
	CU_SYM(lib, init, "cuInit");
	CU_SYM(lib, get_handle, "cuMemGetHandleForAddressRange");
	CU_SYM(lib, ptr_attr, "cuPointerGetAttribute");
	CU_SYM(lib, addr_range, "cuMemGetAddressRange_v2");
	CU_SYM(lib, push, "cuCtxPushCurrent_v2");
	CU_SYM(lib, pop, "cuCtxPopCurrent_v2");
	CU_SYM(lib, htod, "cuMemcpyHtoD_v2");
	CU_SYM(lib, dtoh, "cuMemcpyDtoH_v2");
	CU_SYM(lib, dtod, "cuMemcpyDtoD_v2");
	CU_SYM(lib, stream_sync, "cuStreamSynchronize");
	CU_SYM(lib, ipc_get, "cuIpcGetMemHandle");
	if (!CU_SYM(lib, ipc_open, "cuIpcOpenMemHandle_v2"))
		CU_SYM(lib, ipc_open, "cuIpcOpenMemHandle");
	CU_SYM(lib, ipc_close, "cuIpcCloseMemHandle");
	CU_SYM(lib, ctx_current, "cuCtxGetCurrent");
	CU_SYM(lib, device_get, "cuDeviceGet");
	CU_SYM(lib, primary_retain, "cuDevicePrimaryCtxRetain");
	if (!cuda.init || !cuda.ptr_attr || !cuda.addr_range || !cuda.push ||
	    !cuda.pop || !cuda.htod || !cuda.dtoh) {
		cuda.status = -ENODEV; /* not a driver we know */
		return;
	}
	if (cuda.init(0) != CU_SUCCESS) {
		cuda.status = -ENODEV; /* no usable GPU */
		return;
	}
	/* The library stays loaded: CUDA keeps state for the process. */
}

static int cuda_errno(fc__cu_result r)
{
	switch (r) {
	case CU_SUCCESS:
		return 0;
	case CU_ERROR_INVALID_VALUE:
	case CU_ERROR_NOT_FOUND:
		return -EINVAL; /* not device memory, or a bad range */
	case CU_ERROR_NOT_SUPPORTED:
		return -EOPNOTSUPP; /* no dma-buf for this GPU or memory */
	case CU_ERROR_NOT_INITIALIZED:
	case CU_ERROR_DEINITIALIZED:
	case CU_ERROR_NO_DEVICE:
	case CU_ERROR_INVALID_CONTEXT:
		return -ENODEV;
	default:
		return -EIO;
	}
}

/*
 * Is [dptr, dptr + len) device memory of one allocation? *ctx: the context
 * that owns it. RETURN VALUE: 0, -EINVAL (not device memory), -ERANGE
 * (past the end of its allocation), -ENODEV.
 */
static int cuda_range(uint64_t dptr, uint64_t len, fc__cu_ctx *ctx)
{
	fc__cu_devptr base;
	unsigned int type;
	size_t size;
	fc__cu_result r;

	r = cuda.ptr_attr(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dptr);
	if (r != CU_SUCCESS)
		return cuda_errno(r);
	if (type != CU_MEMORYTYPE_DEVICE)
		return -EINVAL; /* pinned host memory, say */
	r = cuda.ptr_attr(ctx, CU_POINTER_ATTRIBUTE_CONTEXT, dptr);
	if (r == CU_SUCCESS && !*ctx)
		return -EOPNOTSUPP; /* memory of no context (VMM) */
	if (r == CU_SUCCESS)
		r = cuda.addr_range(&base, &size, dptr);
	if (r != CU_SUCCESS)
		return cuda_errno(r);
	if (len > size - (dptr - base))
		return -ERANGE;
	return 0;
}

int fc__cuda_move(fc__cu_ctx ctx, uint64_t dptr, void *cpu, uint64_t len,
		  bool to_gpu)
{
	fc__cu_ctx old;
	fc__cu_result r;
	int ret;

	if (cuda.status || !cuda.init)
		return -ENODEV;
	/* Asked each time: memory freed under a region fails cleanly. */
	if (!ctx) {
		ret = cuda_range(dptr, len, &ctx);
		if (ret)
			return ret;
	}
	r = cuda.push(ctx);
	if (r != CU_SUCCESS)
		return cuda_errno(r);
	r = to_gpu ? cuda.htod(dptr, cpu, len) : cuda.dtoh(cpu, dptr, len);
	cuda.pop(&old);
	return cuda_errno(r);
}

/* The kernel driver imports the dma-buf that CUDA makes of the range. */
static int import_dmabuf(struct fc_dev *dev, uint64_t dptr, size_t len,
			 struct fc_mem **memp)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t start, end;
	fc__cu_result r;
	int fd = -1, ret;

	if (!cuda.get_handle)
		return -EOPNOTSUPP; /* a driver older than CUDA 11.7 */
	/* CUDA exports whole host pages of device memory. */
	start = dptr & ~(page - 1);
	end = (dptr + len + page - 1) & ~(page - 1);
	r = cuda.get_handle(&fd, (fc__cu_devptr)start, end - start,
			    CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
	if (r != CU_SUCCESS)
		return cuda_errno(r);
	if (dev->be != &fc__kernel_backend) {
		close(fd);
		return -EOPNOTSUPP;
	}
	ret = fc__peer_import(dev, fd, dptr - start, len, memp);
	close(fd); /* the driver holds the dma-buf */
	return ret;
}

/*
 * CUDA memory in this process as a buffer of @dev; CUDA loaded. @ctx NULL:
 * the memory's own context, checked now and at every move; else memory
 * that CUDA describes no further (an IPC mapping), moved in @ctx.
 */
static int import_range(struct fc_dev *dev, uint64_t dptr, size_t len,
			fc__cu_ctx ctx, struct fc_mem **memp)
{
	fc__cu_ctx own;
	int ret;

	if (!ctx) {
		/* Checked for every board, so that a bad pointer is told alike. */
		ret = cuda_range(dptr, len, &own);
		if (ret)
			return ret;
	}
	if (dev->be->peer_import_dev)
		return fc__peer_import_dev(dev, dptr, ctx, len, memp);
	return import_dmabuf(dev, dptr, len, memp);
}

static int cuda_ready(void)
{
	pthread_once(&cuda_once, cuda_load);
	return cuda.status;
}

int fc__cuda_ready(void)
{
	return cuda_ready();
}

FC__EXPORT int fc_cuda_available(void)
{
	return cuda_ready();
}

/* ---- What kind of memory a pointer is (lib/core/devmem.c) ---- */

static pthread_once_t primary_once; /* defined below */
static fc__cu_ctx primary;
static void primary_load(void);

/*
 * Only cuPointerGetAttribute, and no cuInit: a process that never
 * initialised CUDA holds no device memory, and the driver says so
 * (CUDA_ERROR_NOT_INITIALIZED) without the library starting CUDA for it.
 */
static struct {
	fc__cu_result (*ptr_attr)(void *data, int attr, fc__cu_devptr ptr);
	fc__cu_result (*host_register)(void *p, size_t len, unsigned int fl);
	fc__cu_result (*host_unregister)(void *p);
} probe;
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

static void probe_load(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!lib)
		return;
	*(void **)&probe.host_register = dlsym(lib, "cuMemHostRegister_v2");
	*(void **)&probe.host_unregister = dlsym(lib, "cuMemHostUnregister");
	*(void **)&probe.ptr_attr = dlsym(lib, "cuPointerGetAttribute");
	if (!probe.ptr_attr)
		dlclose(lib);
}

int fc__cuda_probe(void)
{
	pthread_once(&probe_once, probe_load);
	return probe.ptr_attr ? 0 : -ENODEV;
}

int fc__cuda_is_device(const void *p)
{
	unsigned int type = 0;

	/* host memory CUDA registered (cudaHostAlloc) is the CPU's too */
	return probe.ptr_attr(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
			      (fc__cu_devptr)(uintptr_t)p) == CU_SUCCESS &&
	       type == CU_MEMORYTYPE_DEVICE;
}

int fc__cuda_pin(void *p, size_t len)
{
	fc__cu_ctx ctx = NULL, old;
	fc__cu_result r;

	if (!probe.host_register || !probe.host_unregister || cuda_ready() ||
	    !cuda.ctx_current)
		return -ENODEV;
	/* the calling thread's context, or device 0's primary */
	if (cuda.ctx_current(&ctx) != CU_SUCCESS || !ctx) {
		pthread_once(&primary_once, primary_load);
		if (!primary || cuda.push(primary) != CU_SUCCESS)
			return -ENODEV;
		r = probe.host_register(p, len, CU_MEMHOSTREGISTER_PORTABLE);
		cuda.pop(&old);
	} else {
		r = probe.host_register(p, len, CU_MEMHOSTREGISTER_PORTABLE);
	}
	return cuda_errno(r);
}

void fc__cuda_unpin(void *p)
{
	if (probe.host_unregister)
		probe.host_unregister(p);
}

FC__EXPORT int fc_peer_import_cuda(struct fc_dev *dev, uint64_t dptr,
				   size_t len, unsigned int flags,
				   struct fc_mem **memp)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	int ret;

	if (!dev || !memp || !dptr || !len || flags)
		return -EINVAL;
	if (dptr + len < dptr || dptr + len > UINT64_MAX - page)
		return -ERANGE;
	ret = cuda_ready();
	if (ret)
		return ret;
	return import_range(dev, dptr, len, NULL, memp);
}

/* ---- Across processes: CUDA IPC handles ---- */

FC__EXPORT int fc_cuda_ipc_export(uint64_t dptr, struct fc_cuda_ipc *ipc)
{
	fc__cu_ipc_handle h;
	fc__cu_devptr base;
	fc__cu_ctx ctx, old;
	fc__cu_result r;
	size_t size;
	int ret;

	if (!dptr || !ipc)
		return -EINVAL;
	ret = cuda_ready();
	if (ret)
		return ret;
	ret = cuda_range(dptr, 1, &ctx);
	if (ret)
		return ret;
	if (!cuda.ipc_get || !cuda.ipc_open || !cuda.ipc_close)
		return -EOPNOTSUPP;
	/* A handle names a whole allocation, by its base. */
	r = cuda.addr_range(&base, &size, dptr);
	if (r == CU_SUCCESS)
		r = cuda.push(ctx);
	if (r != CU_SUCCESS)
		return cuda_errno(r);
	r = cuda.ipc_get(&h, base);
	cuda.pop(&old);
	if (r != CU_SUCCESS)
		return cuda_errno(r);
	memcpy(ipc->handle, &h, sizeof(ipc->handle));
	ipc->off = dptr - base;
	ipc->len = size - ipc->off;
	return 0;
}

static pthread_once_t primary_once = PTHREAD_ONCE_INIT;
static fc__cu_ctx primary;

/* Device 0's primary context, retained for the life of the process. */
static void primary_load(void)
{
	int d;

	if (cuda.device_get && cuda.primary_retain &&
	    cuda.device_get(&d, 0) == CU_SUCCESS &&
	    cuda.primary_retain(&primary, d) != CU_SUCCESS)
		primary = NULL;
}

/*
 * Open @ipc's allocation in the current context, or device 0's primary:
 * *base and *ctx, the context it is open in.
 */
static int ipc_open(const struct fc_cuda_ipc *ipc, uint64_t *base,
		    fc__cu_ctx *ctx)
{
	fc__cu_ctx cur = NULL, old;
	fc__cu_ipc_handle h;
	fc__cu_devptr p;
	fc__cu_result r;

	if (!cuda.ipc_open || !cuda.ipc_close || !cuda.ctx_current)
		return -EOPNOTSUPP;
	memcpy(&h, ipc->handle, sizeof(h));
	if (cuda.ctx_current(&cur) != CU_SUCCESS || !cur) {
		pthread_once(&primary_once, primary_load);
		if (!primary)
			return -ENODEV;
		r = cuda.push(primary);
		if (r != CU_SUCCESS)
			return cuda_errno(r);
		r = cuda.ipc_open(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
		cuda.pop(&old);
		cur = primary;
	} else {
		r = cuda.ipc_open(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
	}
	if (r != CU_SUCCESS)
		return cuda_errno(r);
	*base = p;
	*ctx = cur;
	return 0;
}

/* Closed in the context it was opened in. */
void fc__cuda_ipc_close(uint64_t base, fc__cu_ctx ctx)
{
	fc__cu_ctx old;

	if (cuda.push(ctx) != CU_SUCCESS)
		return;
	cuda.ipc_close(base);
	cuda.pop(&old);
}

FC__EXPORT int fc_peer_import_cuda_ipc(struct fc_dev *dev,
				       const struct fc_cuda_ipc *ipc,
				       uint64_t off, size_t len,
				       unsigned int flags, struct fc_mem **memp)
{
	fc__cu_ctx ctx;
	uint64_t base;
	int ret;

	if (!dev || !ipc || !memp || !len || flags)
		return -EINVAL;
	if (off > ipc->len || len > ipc->len - off)
		return -ERANGE;
	ret = cuda_ready();
	if (ret)
		return ret;
	ret = ipc_open(ipc, &base, &ctx);
	if (ret)
		return ret;
	/*
	 * CUDA tells nothing of an IPC mapping (no context, no range, as
	 * seen on an H100 with driver 580): the exporter's range stands.
	 */
	ret = import_range(dev, base + ipc->off + off, len, ctx, memp);
	if (ret) {
		fc__cuda_ipc_close(base, ctx);
		return ret;
	}
	fc__container_of(*memp, struct fc__mem, pub)->ipc_base = base;
	return 0;
}

/* ---- An emulated engine's copies into another process's GPU memory ---- */

int fc__cuda_ipc_open(const void *handle, void *ctx, uint64_t near,
		      uint64_t *base, void **opened)
{
	struct fc_cuda_ipc ipc;
	fc__cu_ipc_handle h;
	fc__cu_devptr p;
	fc__cu_ctx old;
	fc__cu_result r;
	int ret;

	ret = cuda_ready();
	if (ret)
		return ret;
	if (!cuda.ipc_open || !cuda.ipc_close || !cuda.dtod ||
	    !cuda.stream_sync)
		return -EOPNOTSUPP;
	/* Where the source is: a copy from there needs no hop. */
	if (!ctx && near && cuda_range(near, 1, &ctx))
		ctx = NULL;
	if (!ctx) {
		memset(&ipc, 0, sizeof(ipc));
		memcpy(ipc.handle, handle, sizeof(ipc.handle));
		return ipc_open(&ipc, base, opened);
	}
	memcpy(&h, handle, sizeof(h));
	r = cuda.push(ctx);
	if (r != CU_SUCCESS)
		return cuda_errno(r);
	r = cuda.ipc_open(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
	cuda.pop(&old);
	if (r != CU_SUCCESS)
		return cuda_errno(r);
	*base = p;
	*opened = ctx;
	return 0;
}

int fc__cuda_copy_in(void *ctx, uint64_t dst, const void *cpu, uint64_t src,
		     uint64_t len)
{
	fc__cu_ctx old;
	fc__cu_result r;

	if (cuda.status || !cuda.dtod || !cuda.stream_sync)
		return -ENODEV;
	r = cuda.push(ctx);
	if (r != CU_SUCCESS)
		return cuda_errno(r);
	r = cpu ? cuda.htod(dst, cpu, len) : cuda.dtod(dst, src, len);
	/* Finished before the engine lets go of the entry. */
	if (r == CU_SUCCESS)
		r = cuda.stream_sync(NULL);
	cuda.pop(&old);
	return cuda_errno(r);
}
