/* SPDX-License-Identifier: MIT */
/*
 * The CUDA driver API calls the GPU benchmarks use, loaded at run time so
 * that fpgacomm-bench runs (and says why it skips) where there is no CUDA.
 */
#ifndef FC_BENCH_CUDA_H
#define FC_BENCH_CUDA_H

#include <stddef.h>

typedef int cu_res;
typedef unsigned long long cu_ptr;

struct bench_cu {
	cu_res (*init)(unsigned int);
	cu_res (*count)(int *);
	cu_res (*device_get)(int *, int);
	cu_res (*device_name)(char *, int, int);
	cu_res (*retain)(void **, int);
	cu_res (*set_current)(void *);
	cu_res (*alloc)(cu_ptr *, size_t);
	cu_res (*free)(cu_ptr);
	cu_res (*htod)(cu_ptr, const void *, size_t);
	cu_res (*dtoh)(void *, cu_ptr, size_t);
	/* Those below may be missing from an old driver: check before use. */
	cu_res (*host_register)(void *, size_t, unsigned int);
	cu_res (*host_unregister)(void *);
	cu_res (*peer)(cu_ptr, void *, cu_ptr, void *, size_t);
	cu_res (*sync)(void);
	cu_res (*can_peer)(int *, int, int);
	cu_res (*enable_peer)(void *, unsigned int);
};

/*
 * bench_cu_load - dlopen libcuda.so.1, look every call up and cuInit it;
 * *@ndev is the number of devices (at least 1).
 * RETURN VALUE: NULL, or why there is nothing to measure (to print before
 * exiting with the skip status).
 */
const char *bench_cu_load(struct bench_cu *cu, int *ndev);

/* cuDeviceGetName, or "GPU N" where the driver does not say. */
void bench_cu_name(struct bench_cu *cu, int dev, char *name, size_t len);

#endif /* FC_BENCH_CUDA_H */
