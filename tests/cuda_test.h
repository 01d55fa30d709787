/* SPDX-License-Identifier: MIT */
/*
 * The CUDA driver API for tests, loaded at run time as the library loads
 * it (no build dependency): enough to allocate, fill and read GPU memory.
 */
#ifndef FC_TEST_CUDA_H
#define FC_TEST_CUDA_H

#include <dlfcn.h>
#include <libgen.h>
#include <stdbool.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

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

/*
 * cu_use_stand_in - where no CUDA driver loads (CI), put the stand-in
 * beside the program @self (build/tests/fake-cuda/libcuda.so.1, from
 * tests/fake_libcuda.c) first on LD_LIBRARY_PATH, for the processes
 * started from now on: ranks, or this program run again.
 * RETURN VALUE: 0 there is a real driver (nothing changed), 1 the stand-in
 * is on the path, 77 neither (said on stdout), or -1 out of memory.
 */
static inline int cu_use_stand_in(const char *self)
{
	char path[PATH_MAX + 64], dir[PATH_MAX + 32];
	const char *old = getenv("LD_LIBRARY_PATH");
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	char *env;

	if (lib) {
		dlclose(lib);
		return 0;
	}
	snprintf(path, sizeof(path), "%s", self);
	snprintf(dir, sizeof(dir), "%s/fake-cuda", dirname(path));
	snprintf(path, sizeof(path), "%s/libcuda.so.1", dir);
	if (access(path, R_OK)) {
		printf("SKIP: no CUDA driver, and no %s\n", path);
		return 77;
	}
	if (asprintf(&env, "%s%s%s", dir, old ? ":" : "", old ? old : "") < 0)
		return -1;
	setenv("LD_LIBRARY_PATH", env, 1);
	free(env);
	printf("no CUDA driver: against the stand-in %s\n", path);
	return 1;
}

/*
 * cu_run_again_with_stand_in - where no CUDA driver loads, run this
 * program again (@argv) against the stand-in; with @guard, its device
 * pointers cannot be touched by the CPU (FAKE_CUDA_GUARD), so a path that
 * forgets they are device memory crashes. Returns only where there is a
 * real driver, no stand-in, or this is already the second run.
 */
static inline void cu_run_again_with_stand_in(char **argv, bool guard)
{
	char self[PATH_MAX];
	ssize_t n;

	if (getenv("FPGACOMM_TEST_FAKE_CUDA"))
		return;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return;
	self[n] = 0;
	if (cu_use_stand_in(self) != 1)
		return;
	setenv("FPGACOMM_TEST_FAKE_CUDA", "1", 1);
	if (guard)
		setenv("FAKE_CUDA_GUARD", "1", 1);
	fflush(stdout);
	execv(self, argv); /* failed: run on, skipping */
}

#endif /* FC_TEST_CUDA_H */
