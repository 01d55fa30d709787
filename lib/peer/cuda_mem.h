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

/*
 * fc__cuda_ipc_open - open the allocation CUDA IPC handle @handle
 * (FC_CUDA_IPC_HANDLE_SIZE bytes) names, in context @ctx, else in the one
 * that owns device memory @near, else as fc_peer_import_cuda_ipc() does:
 * *@base, and *@opened the context to copy and close in.
 * fc__cuda_copy_in - @len bytes to device memory @dst (of such a
 * mapping) from CPU memory @cpu, else from device memory @src (of
 * context @src_ctx, or NULL: its own), finished on return.
 * RETURN VALUE: 0, -EOPNOTSUPP (no such CUDA call), -ENODEV, -EINVAL, -EIO.
 */
int fc__cuda_ipc_open(const void *handle, void *ctx, uint64_t near,
		      uint64_t *base, void **opened);
int fc__cuda_copy_in(void *ctx, uint64_t dst, const void *cpu, uint64_t src,
		     uint64_t len);

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
