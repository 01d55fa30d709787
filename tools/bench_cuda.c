// SPDX-License-Identifier: MIT
/*
 * The CUDA driver API for the GPU benchmarks (bench_cuda.h), looked up in
 * libcuda.so.1 at run time.
 */
#include <dlfcn.h>
#include <stdio.h>

#include "bench_cuda.h"

#define CU_SYM(lib, f, name) (*(void **)&cu->f = dlsym(lib, name))

const char *bench_cu_load(struct bench_cu *cu, int *ndev)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!lib)
		return "no CUDA driver (libcuda.so.1)";
	CU_SYM(lib, init, "cuInit");
	CU_SYM(lib, count, "cuDeviceGetCount");
	CU_SYM(lib, device_get, "cuDeviceGet");
	CU_SYM(lib, device_name, "cuDeviceGetName");
	CU_SYM(lib, retain, "cuDevicePrimaryCtxRetain");
	CU_SYM(lib, set_current, "cuCtxSetCurrent");
	CU_SYM(lib, alloc, "cuMemAlloc_v2");
	CU_SYM(lib, free, "cuMemFree_v2");
	CU_SYM(lib, htod, "cuMemcpyHtoD_v2");
	CU_SYM(lib, dtoh, "cuMemcpyDtoH_v2");
	CU_SYM(lib, host_register, "cuMemHostRegister_v2");
	CU_SYM(lib, host_unregister, "cuMemHostUnregister");
	CU_SYM(lib, peer, "cuMemcpyPeer");
	CU_SYM(lib, sync, "cuCtxSynchronize");
	CU_SYM(lib, can_peer, "cuDeviceCanAccessPeer");
	CU_SYM(lib, enable_peer, "cuCtxEnablePeerAccess");
	if (!cu->init || !cu->count || !cu->device_get || !cu->device_name ||
	    !cu->retain || !cu->set_current || !cu->alloc || !cu->free ||
	    !cu->htod || !cu->dtoh)
		return "CUDA driver without the calls this benchmark uses";
	*ndev = 0;
	if (cu->init(0) || cu->count(ndev) || *ndev < 1)
		return "no usable GPU (cuInit or cuDeviceGetCount failed)";
	return NULL;
}

void bench_cu_name(struct bench_cu *cu, int dev, char *name, size_t len)
{
	if (cu->device_name(name, (int)len, dev))
		snprintf(name, len, "GPU %d", dev);
}
