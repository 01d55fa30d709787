/* SPDX-License-Identifier: MIT */
/*
 * The CUDA driver API for tests, loaded at run time as the library loads
 * it (no build dependency): enough to allocate, fill and read GPU memory.
 */
#ifndef FC_TEST_CUDA_H
#define FC_TEST_CUDA_H

#include <dlfcn.h>
#include <stddef.h>

typedef int cu_res;
typedef unsigned long long cu_ptr;

struct cu {
	cu_res (*init)(unsigned int);
	cu_res (*device_get)(int *, int);
	cu_res (*device_name)(char *, int, int);
	cu_res (*primary_retain)(void **, int);
	cu_res (*primary_release)(int);
	cu_res (*set_current)(void *);
	cu_res (*alloc)(cu_ptr *, size_t);
	cu_res (*free)(cu_ptr);
	cu_res (*htod)(cu_ptr, const void *, size_t);
	cu_res (*dtoh)(void *, cu_ptr, size_t);
	cu_res (*memset8)(cu_ptr, unsigned char, size_t);
	cu_res (*sync)(void);
	int dev;
};

/*
 * Load libcuda, take device 0's primary context and make it current.
 * RETURN VALUE: NULL, or why CUDA cannot be used here (the skip reason).
 */
static inline const char *cu_load(struct cu *cu, void **ctx)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!lib)
		return "no CUDA driver (libcuda.so.1)";
	*(void **)&cu->init = dlsym(lib, "cuInit");
	*(void **)&cu->device_get = dlsym(lib, "cuDeviceGet");
	*(void **)&cu->device_name = dlsym(lib, "cuDeviceGetName");
	*(void **)&cu->primary_retain = dlsym(lib, "cuDevicePrimaryCtxRetain");
	*(void **)&cu->primary_release =
		dlsym(lib, "cuDevicePrimaryCtxRelease_v2");
	*(void **)&cu->set_current = dlsym(lib, "cuCtxSetCurrent");
	*(void **)&cu->alloc = dlsym(lib, "cuMemAlloc_v2");
	*(void **)&cu->free = dlsym(lib, "cuMemFree_v2");
	*(void **)&cu->htod = dlsym(lib, "cuMemcpyHtoD_v2");
	*(void **)&cu->dtoh = dlsym(lib, "cuMemcpyDtoH_v2");
	*(void **)&cu->memset8 = dlsym(lib, "cuMemsetD8_v2");
	*(void **)&cu->sync = dlsym(lib, "cuCtxSynchronize");
	if (!cu->init || !cu->device_get || !cu->device_name ||
	    !cu->primary_retain || !cu->primary_release || !cu->set_current ||
	    !cu->alloc || !cu->free || !cu->htod || !cu->dtoh || !cu->memset8 ||
	    !cu->sync)
		return "CUDA driver without the calls this test uses";
	if (cu->init(0) || cu->device_get(&cu->dev, 0))
		return "no usable GPU (cuInit or cuDeviceGet failed)";
	if (cu->primary_retain(ctx, cu->dev) || cu->set_current(*ctx))
		return "no CUDA context";
	return NULL;
}

#endif /* FC_TEST_CUDA_H */
