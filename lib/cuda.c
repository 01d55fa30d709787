// SPDX-License-Identifier: MIT
/*
 * CUDA device memory as peer memory: the CUDA driver API is loaded at run
 * time (dlopen of libcuda.so.1, no build dependency) and asked for a
 * dma-buf of the range (cuMemGetHandleForAddressRange, CUDA 11.7 and
 * later, where the GPU and its kernel driver support dma-buf), which the
 * board's driver then imports like any other (fc_peer_import()).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#include "internal.h"

/* The few types and values of cuda.h that we need, by their ABI. */
typedef int fc__cu_result;
typedef unsigned long long fc__cu_devptr;
#define CU_SUCCESS			0
#define CU_ERROR_INVALID_VALUE		1
#define CU_ERROR_NOT_INITIALIZED	3
#define CU_ERROR_DEINITIALIZED		4
#define CU_ERROR_NO_DEVICE		100
#define CU_ERROR_INVALID_CONTEXT	201
#define CU_ERROR_NOT_SUPPORTED		801
#define CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD	1

struct fc__cuda {
	int status;			/* 0 loaded, or why not (-errno) */
	fc__cu_result (*init)(unsigned int flags);
	fc__cu_result (*get_handle)(void *handle, fc__cu_devptr dptr,
				    size_t size, int type,
				    unsigned long long flags);
};

static struct fc__cuda cuda;
static pthread_once_t cuda_once = PTHREAD_ONCE_INIT;

static void cuda_load(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!lib) {
		cuda.status = -ENODEV;		/* no NVIDIA driver here */
		return;
	}
	*(void **)&cuda.init = dlsym(lib, "cuInit");
	*(void **)&cuda.get_handle = dlsym(lib, "cuMemGetHandleForAddressRange");
	if (!cuda.init) {
		cuda.status = -ENODEV;
		return;
	}
	if (cuda.init(0) != CU_SUCCESS) {
		cuda.status = -ENODEV;		/* no usable GPU */
		return;
	}
	/* A driver older than CUDA 11.7 has no dma-buf export. */
	cuda.status = cuda.get_handle ? 0 : -EOPNOTSUPP;
	/* The library stays loaded: CUDA keeps state for the process. */
}

static int cuda_errno(fc__cu_result r)
{
	switch (r) {
	case CU_SUCCESS:
		return 0;
	case CU_ERROR_INVALID_VALUE:
		return -EINVAL;		/* not device memory, or a bad range */
	case CU_ERROR_NOT_SUPPORTED:
		return -EOPNOTSUPP;	/* no dma-buf for this GPU or memory */
	case CU_ERROR_NOT_INITIALIZED:
	case CU_ERROR_DEINITIALIZED:
	case CU_ERROR_NO_DEVICE:
	case CU_ERROR_INVALID_CONTEXT:
		return -ENODEV;
	default:
		return -EIO;
	}
}

FC__EXPORT int fc_peer_import_cuda(struct fc_dev *dev, uint64_t dptr,
				   size_t len, unsigned int flags,
				   struct fc_mem **memp)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t start, end;
	fc__cu_result r;
	int fd = -1, ret;

	if (!dev || !memp || !dptr || !len || flags)
		return -EINVAL;
	if (dptr + len < dptr || dptr + len > UINT64_MAX - page)
		return -ERANGE;
	pthread_once(&cuda_once, cuda_load);
	if (cuda.status)
		return cuda.status;
	/*
	 * CUDA is asked even for a board that cannot import (-EOPNOTSUPP
	 * below), so that a bad pointer is told as such everywhere.
	 * CUDA exports whole host pages of device memory.
	 */
	start = dptr & ~(page - 1);
	end = (dptr + len + page - 1) & ~(page - 1);
	r = cuda.get_handle(&fd, (fc__cu_devptr)start, end - start,
			    CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
	if (r != CU_SUCCESS)
		return cuda_errno(r);
	/* Only the driver imports GPU memory; an emulated board would map it. */
	if (dev->be != &fc__kernel_backend) {
		close(fd);
		return -EOPNOTSUPP;
	}
	ret = fc__peer_import(dev, fd, dptr - start, len, memp);
	close(fd);			/* the driver holds the dma-buf */
	return ret;
}
