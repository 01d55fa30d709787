// SPDX-License-Identifier: MIT
/*
 * Data movement for the engines. Large copies use non-temporal stores: a
 * DMA engine's writes do not displace the CPU's cache, and for long chains
 * it is also the faster way to move memory on x86.
 */
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "emu_internal.h"

#define NT_MIN_BYTES (64u << 10)

static bool overlaps(const void *dst, const void *src, size_t len)
{
	uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;

	return d < s + len && s < d + len;
}

#ifdef __SSE2__
static void copy_nt(uint8_t *dst, const uint8_t *src, size_t len)
{
	size_t head = (16 - ((uintptr_t)dst & 15)) & 15;
	size_t i;

	memcpy(dst, src, head);
	dst += head;
	src += head;
	len -= head;
	for (i = 0; i + 64 <= len; i += 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)(src + i));
		__m128i b = _mm_loadu_si128((const __m128i *)(src + i + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(src + i + 32));
		__m128i d = _mm_loadu_si128((const __m128i *)(src + i + 48));

		_mm_stream_si128((__m128i *)(dst + i), a);
		_mm_stream_si128((__m128i *)(dst + i + 16), b);
		_mm_stream_si128((__m128i *)(dst + i + 32), c);
		_mm_stream_si128((__m128i *)(dst + i + 48), d);
	}
	_mm_sfence(); /* the data lands before the board says "done" */
	memcpy(dst + i, src + i, len - i);
}
#endif

void fcemu__copy(void *dst, const void *src, size_t len)
{
#ifdef __SSE2__
	if (len >= NT_MIN_BYTES && !overlaps(dst, src, len)) {
		copy_nt(dst, src, len);
		return;
	}
#endif
	memmove(dst, src, len);
}
