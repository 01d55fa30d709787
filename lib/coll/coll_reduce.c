// SPDX-License-Identifier: MIT
/*
 * Element arithmetic of the reductions: every (type, operator) pair as a
 * plain loop the compiler can vectorise. 16-bit floats are widened to
 * float32, combined and rounded back (to nearest, ties to even), so a sum
 * of two halves is what float32 hardware gives, rounded once.
 *
 * Minimum and maximum return a NaN when either operand is one, whatever
 * their order, so that a reduction's result does not depend on which rank
 * holds which operand.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "coll_internal.h"
#include "internal.h"

static const unsigned char sizes[FC_DTYPE_COUNT] = {
	[FC_INT8] = 1,	  [FC_INT16] = 2,    [FC_INT32] = 4,   [FC_INT64] = 8,
	[FC_UINT8] = 1,	  [FC_UINT16] = 2,   [FC_UINT32] = 4,  [FC_UINT64] = 8,
	[FC_FLOAT16] = 2, [FC_BFLOAT16] = 2, [FC_FLOAT32] = 4, [FC_FLOAT64] = 8,
};

size_t fc__dtype_size(enum fc_dtype dtype)
{
	return (unsigned int)dtype < FC_DTYPE_COUNT ? sizes[dtype] : 0;
}

FC__EXPORT int fc_dtype_size(enum fc_dtype dtype)
{
	size_t n = fc__dtype_size(dtype);

	return n ? (int)n : -EINVAL;
}

static bool is_float(enum fc_dtype dtype)
{
	return dtype >= FC_FLOAT16;
}

bool fc__redop_valid(enum fc_dtype dtype, enum fc_redop op)
{
	if ((unsigned int)dtype >= FC_DTYPE_COUNT ||
	    (unsigned int)op >= FC_REDOP_COUNT)
		return false;
	return !(is_float(dtype) && op >= FC_BAND);
}

/* ---- 16-bit floats ---- */

static float f32_from_bits(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

static uint32_t f32_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static float bf16_to_f32(uint16_t h)
{
	return f32_from_bits((uint32_t)h << 16);
}

static uint16_t f32_to_bf16(float f)
{
	uint32_t u = f32_bits(f);

	if ((u & 0x7fffffff) > 0x7f800000) /* NaN: keep it quiet */
		return (uint16_t)((u >> 16) | 0x40);
	u += 0x7fff + ((u >> 16) & 1); /* round to nearest even */
	return (uint16_t)(u >> 16);
}

static float f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;

	if (exp == 0x1f) /* infinity, NaN */
		return f32_from_bits(sign | 0x7f800000 | man << 13);
	if (exp == 0) { /* zero, subnormal */
		float v = (float)man * 0x1p-24f;

		return sign ? -v : v;
	}
	return f32_from_bits(sign | (exp + 112) << 23 | man << 13);
}

static uint16_t f32_to_f16(float f)
{
	uint32_t u = f32_bits(f), sign = (u >> 16) & 0x8000;
	uint32_t a = u & 0x7fffffff, man, exp, half, rest;

	if (a > 0x7f800000) /* NaN */
		return (uint16_t)(sign | 0x7e00 | (a >> 13 & 0x3ff));
	if (a >= 0x477ff000) /* rounds past 65504: inf */
		return (uint16_t)(sign | 0x7c00);
	if (a < 0x38800000) { /* below 2^-14: subnormal */
		/* in units of 2^-24, rounded to nearest even */
		float v = f32_from_bits(a) * 0x1p24f;
		uint32_t q = (uint32_t)v;
		float frac = v - (float)q;

		if (frac > 0.5f || (frac == 0.5f && (q & 1)))
			q++;
		return (uint16_t)(sign | q);
	}
	exp = (a >> 23) - 112;
	man = a & 0x7fffff;
	half = (exp << 10) | (man >> 13);
	rest = man & 0x1fff;
	if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
		half++; /* may carry into the exponent */
	return (uint16_t)(sign | half);
}

/* ---- The loops ---- */

#define SUM(a, b)  ((a) + (b))
#define PROD(a, b) ((a) * (b))
/* 1u: uint16_t operands would be multiplied as int, and overflow. */
#define UPROD(a, b) (1u * (a) * (b))
#define IMIN(a, b)  ((a) < (b) ? (a) : (b))
#define IMAX(a, b)  ((a) > (b) ? (a) : (b))
#define FMIN(a, b)  (isnan(a) ? (a) : isnan(b) ? (b) : (a) < (b) ? (a) : (b))
#define FMAX(a, b)  (isnan(a) ? (a) : isnan(b) ? (b) : (a) > (b) ? (a) : (b))
#define BAND(a, b)  ((a) & (b))
#define BOR(a, b)   ((a) | (b))
#define BXOR(a, b)  ((a) ^ (b))

/*
 * Integer arithmetic wraps: done in the unsigned type of the same width.
 * One function per type and operator, with restrict operands and the
 * operand order fixed outside the loop: at -O2 the compiler vectorises
 * only loops whose operands cannot overlap and that need no scalar
 * epilogue, so the elements up to a multiple of BLOCK go in one loop (a
 * loop of BLOCK inside one of blocks cost 2.7 instructions a float32 sum,
 * this 1.75) and the rest in another. Each element is still computed
 * alone, from the same two operands in the same order: the same bits as a
 * plain loop.
 */
#define BLOCK 16
/* the vector loop four times a pass: its count and branch per four */
#define UNROLL _Pragma("GCC unroll 4")

#define DEF(T, F)                                                              \
	static void red_##T##_##F(T *restrict d, const T *restrict s,          \
				  size_t count, bool first)                    \
	{                                                                      \
		size_t i = 0, whole = count & ~(size_t)(BLOCK - 1);            \
		if (first) {                                                   \
			UNROLL for (; i < whole; i++) d[i] = (T)F(s[i], d[i]); \
			for (; i < count; i++)                                 \
				d[i] = (T)F(s[i], d[i]);                       \
		} else {                                                       \
			UNROLL for (; i < whole; i++) d[i] = (T)F(d[i], s[i]); \
			for (; i < count; i++)                                 \
				d[i] = (T)F(d[i], s[i]);                       \
		}                                                              \
	}                                                                      \
	static void red_##T##_##F##_any(T *d, const T *s, size_t count,        \
					bool first)                            \
	{                                                                      \
		for (size_t i = 0; i < count; i++)                             \
			d[i] = first ? (T)F(s[i], d[i]) : (T)F(d[i], s[i]);    \
	}

#define DEF_U(U)  DEF(U, SUM) DEF(U, UPROD) DEF(U, BAND) DEF(U, BOR) DEF(U, BXOR)
#define DEF_MM(T) DEF(T, IMIN) DEF(T, IMAX)
#define DEF_F(T)  DEF(T, SUM) DEF(T, PROD) DEF(T, FMIN) DEF(T, FMAX)

DEF_U(uint8_t)
DEF_U(uint16_t)
DEF_U(uint32_t)
DEF_U(uint64_t)
DEF_MM(int8_t)
DEF_MM(int16_t)
DEF_MM(int32_t)
DEF_MM(int64_t)
DEF_MM(uint8_t)
DEF_MM(uint16_t)
DEF_MM(uint32_t)
DEF_MM(uint64_t)
DEF_F(float)
DEF_F(double)

static bool overlap(const void *a, const void *b, size_t len)
{
	uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

	return x < y + len && y < x + len;
}

/* restrict is kept: the blocks only where dst and src lie apart */
#define LOOP(T, F)                                                   \
	do {                                                         \
		if (overlap(dst, src, count * sizeof(T)))            \
			red_##T##_##F##_any(dst, src, count, first); \
		else                                                 \
			red_##T##_##F(dst, src, count, first);       \
	} while (0)

#define INT_OPS(T, U)           \
	switch (op) {           \
	case FC_SUM:            \
		LOOP(U, SUM);   \
		return;         \
	case FC_PROD:           \
		LOOP(U, UPROD); \
		return;         \
	case FC_MIN:            \
		LOOP(T, IMIN);  \
		return;         \
	case FC_MAX:            \
		LOOP(T, IMAX);  \
		return;         \
	case FC_BAND:           \
		LOOP(U, BAND);  \
		return;         \
	case FC_BOR:            \
		LOOP(U, BOR);   \
		return;         \
	case FC_BXOR:           \
		LOOP(U, BXOR);  \
		return;         \
	default:                \
		return;         \
	}

#define FLOAT_OPS(T)           \
	switch (op) {          \
	case FC_SUM:           \
		LOOP(T, SUM);  \
		return;        \
	case FC_PROD:          \
		LOOP(T, PROD); \
		return;        \
	case FC_MIN:           \
		LOOP(T, FMIN); \
		return;        \
	case FC_MAX:           \
		LOOP(T, FMAX); \
		return;        \
	default:               \
		return;        \
	}

static float op_f32(float a, float b, enum fc_redop op)
{
	switch (op) {
	case FC_SUM:
		return a + b;
	case FC_PROD:
		return a * b;
	case FC_MIN:
		return FMIN(a, b);
	default:
		return FMAX(a, b);
	}
}

static void reduce_half(uint16_t *d, const uint16_t *s, size_t count,
			enum fc_redop op, bool first, bool brain)
{
	for (size_t i = 0; i < count; i++) {
		float a = brain ? bf16_to_f32(d[i]) : f16_to_f32(d[i]);
		float b = brain ? bf16_to_f32(s[i]) : f16_to_f32(s[i]);
		float r = first ? op_f32(b, a, op) : op_f32(a, b, op);

		d[i] = brain ? f32_to_bf16(r) : f32_to_f16(r);
	}
}

void fc__reduce(void *dst, const void *src, size_t count, enum fc_dtype dtype,
		enum fc_redop op, bool first)
{
	switch (dtype) {
	case FC_INT8:
		INT_OPS(int8_t, uint8_t);
	case FC_INT16:
		INT_OPS(int16_t, uint16_t);
	case FC_INT32:
		INT_OPS(int32_t, uint32_t);
	case FC_INT64:
		INT_OPS(int64_t, uint64_t);
	case FC_UINT8:
		INT_OPS(uint8_t, uint8_t);
	case FC_UINT16:
		INT_OPS(uint16_t, uint16_t);
	case FC_UINT32:
		INT_OPS(uint32_t, uint32_t);
	case FC_UINT64:
		INT_OPS(uint64_t, uint64_t);
	case FC_FLOAT32:
		FLOAT_OPS(float);
	case FC_FLOAT64:
		FLOAT_OPS(double);
	case FC_FLOAT16:
		reduce_half(dst, src, count, op, first, false);
		return;
	case FC_BFLOAT16:
		reduce_half(dst, src, count, op, first, true);
		return;
	default:
		return;
	}
}
