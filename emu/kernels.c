// SPDX-License-Identifier: MIT
/*
 * The kernels a stream's RUN instruction calls: the built-in set of
 * hw.h (FC_KERN_*), and user kernels an emulated board's host loads as C
 * functions (fcemu_kernel_register()).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "emu_internal.h"

/*
 * Element-wise kernels work 16 elements at a time in GCC vectors (loads and
 * stores by memcpy: any alignment), so that the emulated core costs what a
 * vectorised host loop does. dst and src are the same range or disjoint.
 */
typedef uint32_t v4u __attribute__((vector_size(16)));
typedef float v4f __attribute__((vector_size(16)));

#define VEC_LOOP(T, d, s, n, i, body_vec, body_one) \
	do {                                        \
		for (i = 0; i + 4 <= (n); i += 4) { \
			T x, y;                     \
                                                    \
			memcpy(&x, (s) + i, 16);    \
			memcpy(&y, (d) + i, 16);    \
			body_vec;                   \
			memcpy((d) + i, &y, 16);    \
		}                                   \
		for (; i < (n); i++)                \
			body_one;                   \
	} while (0)

static int k_invert(void *dst, const void *src, uint32_t n, uint32_t arg,
		    void *ctx)
{
	uint32_t *d = dst, i;
	const uint32_t *s = src;

	VEC_LOOP(v4u, d, s, n, i, (void)y; y = ~x, d[i] = ~s[i]);
	return 0;
}

static float f32(uint32_t bits)
{
	float f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}

static int k_add(void *dst, const void *src, uint32_t n, uint32_t arg,
		 void *ctx)
{
	float *d = dst;
	const float *s = src;
	uint32_t i;

	VEC_LOOP(v4f, d, s, n, i, y = y + x, d[i] += s[i]);
	return 0;
}

static int k_scale(void *dst, const void *src, uint32_t n, uint32_t arg,
		   void *ctx)
{
	float *d = dst, a = f32(arg);
	const float *s = src;
	uint32_t i;

	VEC_LOOP(v4f, d, s, n, i, (void)y; y = a * x, d[i] = a * s[i]);
	return 0;
}

static int k_axpy(void *dst, const void *src, uint32_t n, uint32_t arg,
		  void *ctx)
{
	float *d = dst, a = f32(arg);
	const float *s = src;
	uint32_t i;

	VEC_LOOP(v4f, d, s, n, i, y = a * x + y, d[i] = a * s[i] + d[i]);
	return 0;
}

static int k_sum(void *dst, const void *src, uint32_t n, uint32_t arg,
		 void *ctx)
{
	const float *s = src;
	float sum = 0;
	uint32_t i;

	for (i = 0; i < n; i++)
		sum += s[i];
	memcpy(dst, &sum, sizeof(sum));
	return 0;
}

static const fcemu_kernel_fn builtin[] = {
	[FC_KERN_INVERT] = k_invert, [FC_KERN_ADD] = k_add,
	[FC_KERN_SCALE] = k_scale,   [FC_KERN_AXPY] = k_axpy,
	[FC_KERN_SUM] = k_sum,
};

uint32_t fcemu__kernels_builtin(void)
{
	uint32_t bits = 0;
	unsigned int k;

	for (k = 0; k < sizeof(builtin) / sizeof(builtin[0]); k++)
		if (builtin[k])
			bits |= 1u << k;
	return bits;
}

/* The user kernel @id, or NULL. Entries are only ever added. */
static const struct fcemu_ukernel *user_find(struct fcemu *emu, uint32_t id)
{
	unsigned int n = __atomic_load_n(&emu->n_ukernels, __ATOMIC_ACQUIRE);
	unsigned int i;

	for (i = 0; i < n; i++)
		if (emu->ukernels[i].id == id)
			return &emu->ukernels[i];
	return NULL;
}

int fcemu__kernel_present(void *ctx, uint32_t id)
{
	return user_find(ctx, id) != NULL;
}

int fcemu_kernel_register(struct fcemu *emu, uint32_t id, fcemu_kernel_fn fn,
			  void *ctx)
{
	struct fcemu_ukernel *k;
	int ret = 0;

	if (!emu || !fn || id < FC_KERN_USER || id > UINT16_MAX)
		return -EINVAL;
	pthread_mutex_lock(&emu->kernel_lock);
	if (user_find(emu, id)) {
		ret = -EEXIST;
	} else if (emu->n_ukernels == FCEMU_MAX_UKERNELS) {
		ret = -ENOSPC;
	} else {
		k = &emu->ukernels[emu->n_ukernels];
		k->id = id;
		k->fn = fn;
		k->ctx = ctx;
		__atomic_store_n(&emu->n_ukernels, emu->n_ukernels + 1,
				 __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&emu->kernel_lock);
	return ret;
}

int fcemu__kernel_run(struct fcemu *emu, uint32_t id, void *dst,
		      const void *src, uint32_t n, uint32_t arg)
{
	const struct fcemu_ukernel *k;

	if (id < sizeof(builtin) / sizeof(builtin[0]) && builtin[id])
		return builtin[id](dst, src, n, arg, NULL);
	k = user_find(emu, id);
	if (!k)
		return -ENOSYS; /* checked at START; cannot happen */
	return k->fn(dst, src, n, arg, k->ctx);
}
