/* SPDX-License-Identifier: MIT */
/* Private to lib/: CUDA device memory moved by the CPU (lib/peer/cuda.c). */
#ifndef FC_CUDA_INTERNAL_H
#define FC_CUDA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * fc__cuda_move - copy @len bytes between CPU memory @cpu and device
 * memory at @dptr (into the GPU if @to_gpu), in context @ctx, or (NULL)
 * in the context that owns it, checking that it still does.
 * RETURN VALUE: 0; -EINVAL or -ERANGE when the range is no longer device
 * memory of one allocation; -ENODEV without CUDA; -EIO.
 */
int fc__cuda_move(void *ctx, uint64_t dptr, void *cpu, uint64_t len,
		  bool to_gpu);

/* Close an allocation fc_peer_import_cuda_ipc() opened at @base. */
void fc__cuda_ipc_close(uint64_t base, void *ctx);

/* Load CUDA as fc_peer_import_cuda() does. RETURN VALUE: 0 or -ENODEV. */
int fc__cuda_ready(void);

/*
 * fc__cuda_probe - can this process ask CUDA about pointers? Loads
 * libcuda.so.1 once, without initialising CUDA. RETURN VALUE: 0, or
 * -ENODEV (no driver: no pointer of this process is device memory).
 * fc__cuda_is_device - after a probe that gave 0: is @p CUDA device
 * memory (not host memory, registered with CUDA or not)? 1 or 0.
 */
int fc__cuda_probe(void);
int fc__cuda_is_device(const void *p);

/* Page-lock @len bytes at @p for fast copies to and from GPUs (portable
 * to every context). RETURN VALUE: 0, -ENODEV, or a CUDA error. */
int fc__cuda_pin(void *p, size_t len);
void fc__cuda_unpin(void *p);

#endif /* FC_CUDA_INTERNAL_H */
