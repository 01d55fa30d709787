/* SPDX-License-Identifier: MIT */
/* Private to lib/: CUDA device memory moved by the CPU (lib/peer/cuda.c). */
#ifndef FC_CUDA_INTERNAL_H
#define FC_CUDA_INTERNAL_H

#include <stdbool.h>
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

#endif /* FC_CUDA_INTERNAL_H */
