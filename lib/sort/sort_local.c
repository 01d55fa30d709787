// SPDX-License-Identifier: MIT
/*
 * The local steps of the distributed sort: digit histograms, stable
 * scatters, an LSD radix sort and a merge of sorted runs, for keys of 4 or
 * 8 bytes with values of any width.
 *
 * Each step is written once as an always-inline body taking the key and
 * value widths, and instantiated for the common widths so that the
 * compiler turns the memcpy()s into plain loads and stores; other widths
 * take the generic instance.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "sort_internal.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* Calls BODY(ks, vs) with constant widths where it can. */
#define SORT_DISPATCH(ks, vs, BODY)              \
	do {                                     \
		if ((ks) == 4 && (vs) == 0)      \
			BODY(4, 0);              \
		else if ((ks) == 8 && (vs) == 0) \
			BODY(8, 0);              \
		else if ((ks) == 4 && (vs) == 4) \
			BODY(4, 4);              \
		else if ((ks) == 4 && (vs) == 8) \
			BODY(4, 8);              \
		else if ((ks) == 8 && (vs) == 8) \
			BODY(8, 8);              \
		else if ((ks) == 8 && (vs) == 4) \
			BODY(8, 4);              \
		else                             \
			BODY(ks, vs);            \
	} while (0)

/* Buffers from this size on are aligned to, and advised into, huge pages. */
#define SORT_HUGE_ALIGN ((size_t)2 << 20)

void *fc__sort_alloc(size_t bytes)
{
	void *p;

	if (bytes < 2 * SORT_HUGE_ALIGN)
		return malloc(bytes ? bytes : 1);
	if (posix_memalign(&p, SORT_HUGE_ALIGN, bytes))
		return NULL;
	/* only advice: without transparent huge pages it is 4 KiB pages */
	madvise(p, bytes & ~(size_t)4095, MADV_HUGEPAGE);
	return p;
}

void fc__sort_free(void *buf)
{
	free(buf);
}

ALWAYS_INLINE uint64_t hist_body(struct sort_view in, size_t n, size_t ks,
				 unsigned int shift, uint64_t mask,
				 size_t *hist)
{
	uint64_t all = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t k = sort_key_at(in.keys + i * in.kstride, ks);

		all |= k;
		hist[(k >> shift) & mask]++;
	}
	return all;
}

/*
 * Few bins: four histograms of 32-bit counts, one per key of every four,
 * so that runs of equal keys do not wait on one counter's increments.
 * Chunks of at most 2^30 keys keep the counts from overflowing.
 */
#define SORT_HIST4_MAX_BITS 10

ALWAYS_INLINE uint64_t hist4_body(struct sort_view in, size_t n, size_t ks,
				  size_t stride, unsigned int shift,
				  uint64_t mask, size_t *hist)
{
	uint32_t sub[4][(size_t)1 << SORT_HIST4_MAX_BITS];
	uint64_t all = 0;

	for (size_t done = 0; done < n;) {
		size_t end = n - done > (1u << 30) ? done + (1u << 30) : n, i;

		for (int j = 0; j < 4; j++)
			memset(sub[j], 0, sizeof(uint32_t) * (mask + 1));
		for (i = done; i + 4 <= end; i += 4) {
			const uint8_t *p = in.keys + i * stride;
			uint64_t k0 = sort_key_at(p, ks);
			uint64_t k1 = sort_key_at(p + stride, ks);
			uint64_t k2 = sort_key_at(p + 2 * stride, ks);
			uint64_t k3 = sort_key_at(p + 3 * stride, ks);

			all |= k0 | k1 | k2 | k3;
			sub[0][(k0 >> shift) & mask]++;
			sub[1][(k1 >> shift) & mask]++;
			sub[2][(k2 >> shift) & mask]++;
			sub[3][(k3 >> shift) & mask]++;
		}
		for (; i < end; i++) {
			uint64_t k = sort_key_at(in.keys + i * stride, ks);

			all |= k;
			sub[0][(k >> shift) & mask]++;
		}
		for (size_t v = 0; v <= mask; v++)
			hist[v] += (size_t)sub[0][v] + sub[1][v] + sub[2][v] +
				   sub[3][v];
		done = end;
	}
	return all;
}

uint64_t fc__sort_hist(struct sort_view in, size_t n, size_t ks,
		       unsigned int shift, unsigned int bits, size_t *hist)
{
	uint64_t mask = (1ull << bits) - 1;

	memset(hist, 0, sizeof(*hist) << bits);
	if (bits <= SORT_HIST4_MAX_BITS) {
		/* the counting sort's whole key: no shift (a fifth faster) */
		if (ks == 4 && in.kstride == 4 && !shift)
			return hist4_body(in, n, 4, 4, 0, mask, hist);
		if (ks == 4 && in.kstride == 4)
			return hist4_body(in, n, 4, 4, shift, mask, hist);
		if (ks == 8 && in.kstride == 8)
			return hist4_body(in, n, 8, 8, shift, mask, hist);
		return hist4_body(in, n, ks, in.kstride, shift, mask, hist);
	}
	if (ks == 4)
		return hist_body(in, n, 4, shift, mask, hist);
	return hist_body(in, n, 8, shift, mask, hist);
}

ALWAYS_INLINE void move_one(struct sort_view in, size_t i, struct sort_view out,
			    size_t j, size_t ks, size_t vs)
{
	memcpy(out.keys + j * out.kstride, in.keys + i * in.kstride, ks);
	if (vs)
		memcpy(out.vals + j * out.vstride, in.vals + i * in.vstride,
		       vs);
}

ALWAYS_INLINE void scatter_body(struct sort_view in, struct sort_view out,
				size_t n, size_t ks, size_t vs,
				unsigned int shift, uint64_t mask, size_t *offs)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t k = sort_key_at(in.keys + i * in.kstride, ks);

		move_one(in, i, out, offs[(k >> shift) & mask]++, ks, vs);
	}
}

ALWAYS_INLINE void scatter_keys_body(const uint8_t *in, uint8_t *out, size_t n,
				     size_t ks, unsigned int shift,
				     uint64_t mask, size_t *offs)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t k = sort_key_at(in + i * ks, ks);

		memcpy(out + offs[(k >> shift) & mask]++ * ks, in + i * ks, ks);
	}
}

/*
 * The scatter into packed records, write-combined: each bin gathers its
 * next cache line in a small buffer (64 bytes and room for a record that
 * runs over), and a full line goes out in one non-temporal write. A plain
 * scatter's store per element into one of many streams, each a read for
 * ownership of a line that is then evicted half written, runs at half
 * this speed or less (docs/sort.md). The first line of a bin may hold
 * another bin's records below @lo, so it is written from @lo on; the last
 * is written as far as it is filled.
 */
#define WC_LINE 64
#define WC_SLOT 128 /* bytes of buffer per bin */

struct wc_bin {
	uint8_t *dst; /* where the next record goes */
	size_t lo;    /* bytes of the current line not ours */
};

static inline void wc_write_line(uint8_t *line, const uint8_t *buf)
{
#if defined(__SSE2__)
	const __m128i *s = (const __m128i *)buf;
	__m128i *d = (__m128i *)line;

	_mm_stream_si128(d, _mm_load_si128(s));
	_mm_stream_si128(d + 1, _mm_load_si128(s + 1));
	_mm_stream_si128(d + 2, _mm_load_si128(s + 2));
	_mm_stream_si128(d + 3, _mm_load_si128(s + 3));
#else
	memcpy(line, buf, WC_LINE);
#endif
}

ALWAYS_INLINE void wc_body(struct sort_view in, uint8_t *out, size_t n,
			   size_t ks, size_t vs, unsigned int shift,
			   uint64_t mask, size_t *offs, struct wc_bin *bin,
			   uint8_t *wc)
{
	size_t rs = ks + vs;

	for (uint64_t v = 0; v <= mask; v++) {
		bin[v].dst = out + offs[v] * rs;
		bin[v].lo = (uintptr_t)bin[v].dst & (WC_LINE - 1);
	}
	for (size_t i = 0; i < n; i++) {
		const uint8_t *kp = in.keys + i * in.kstride;
		uint64_t v = (sort_key_at(kp, ks) >> shift) & mask;
		uint8_t *d = bin[v].dst, *buf = wc + v * WC_SLOT;
		size_t off = (uintptr_t)d & (WC_LINE - 1);

		memcpy(buf + off, kp, ks);
		if (vs)
			memcpy(buf + off + ks, in.vals + i * in.vstride, vs);
		bin[v].dst = d + rs;
		if (off + rs < WC_LINE)
			continue;
		/* the line is full: out it goes, the overrun moves down */
		if (bin[v].lo) {
			memcpy(d - off + bin[v].lo, buf + bin[v].lo,
			       WC_LINE - bin[v].lo);
			bin[v].lo = 0;
		} else {
			wc_write_line(d - off, buf);
		}
		if (off + rs > WC_LINE)
			memcpy(buf, buf + WC_LINE, off + rs - WC_LINE);
	}
	for (uint64_t v = 0; v <= mask; v++) {
		size_t off = (uintptr_t)bin[v].dst & (WC_LINE - 1);

		if (off > bin[v].lo)
			memcpy(bin[v].dst - off + bin[v].lo,
			       wc + v * WC_SLOT + bin[v].lo, off - bin[v].lo);
		offs[v] = (size_t)(bin[v].dst - out) / rs;
	}
#if defined(__SSE2__)
	_mm_sfence(); /* the streamed lines before anyone reads them */
#endif
}

/* Below this many elements per bin the buffers cost more than they save. */
#define WC_MIN_PER_BIN 64

/* Returns false where it does not apply (out not packed, few elements). */
static bool scatter_wc(struct sort_view in, struct sort_view out, size_t n,
		       size_t ks, size_t vs, unsigned int shift,
		       unsigned int bits, size_t *offs)
{
	size_t nb = (size_t)1 << bits, rs = ks + vs;
	uint64_t mask = nb - 1;
	struct wc_bin *bin;
	uint8_t *wc;

	if (out.kstride != rs || (vs && out.vals != out.keys + ks) ||
	    rs > WC_SLOT - WC_LINE || n / nb < WC_MIN_PER_BIN)
		return false;
	bin = malloc(nb * sizeof(*bin));
	wc = aligned_alloc(WC_LINE, nb * WC_SLOT);
	if (!bin || !wc) {
		free(bin);
		free(wc);
		return false;
	}
#define WC(K, V) wc_body(in, out.keys, n, K, V, shift, mask, offs, bin, wc)
	SORT_DISPATCH(ks, vs, WC);
#undef WC
	free(bin);
	free(wc);
	return true;
}

void fc__sort_scatter(struct sort_view in, struct sort_view out, size_t n,
		      size_t ks, size_t vs, unsigned int shift,
		      unsigned int bits, size_t *offs)
{
	uint64_t mask = (1ull << bits) - 1;

	if (scatter_wc(in, out, n, ks, vs, shift, bits, offs))
		return;

	if (!vs && in.kstride == ks && out.kstride == ks) {
		/* keys alone, contiguous: constant strides */
		in.kstride = out.kstride = ks == 4 ? 4 : 8;
		if (ks == 4)
			scatter_keys_body(in.keys, out.keys, n, 4, shift, mask,
					  offs);
		else
			scatter_keys_body(in.keys, out.keys, n, 8, shift, mask,
					  offs);
		return;
	}
#define SCATTER(K, V) scatter_body(in, out, n, K, V, shift, mask, offs)
	SORT_DISPATCH(ks, vs, SCATTER);
#undef SCATTER
}

/* First index in [p, e) of packed @recs whose digit is above @v. */
static size_t gallop_past(const uint8_t *recs, size_t p, size_t e, size_t ks,
			  size_t rs, unsigned int shift, uint64_t mask,
			  uint64_t v)
{
	size_t step = 1, lo, hi;

#define DIGIT(i) ((sort_key_at(recs + (i)*rs, ks) >> shift) & mask)
	if (p == e || DIGIT(p) > v)
		return p;
	/* DIGIT(lo) <= v; find hi with DIGIT(hi) > v or hi == e */
	lo = p;
	for (;;) {
		hi = e - lo > step ? lo + step : e;
		if (hi == e || DIGIT(hi) > v)
			break;
		lo = hi;
		step *= 2;
	}
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (DIGIT(mid) > v)
			hi = mid;
		else
			lo = mid;
	}
#undef DIGIT
	return hi;
}

bool fc__sort_place(uint8_t *const *runs, const size_t *lens,
		    unsigned int nruns, struct sort_view out, size_t ks,
		    size_t vs, unsigned int shift, unsigned int bits,
		    size_t vlo, size_t vhi, const size_t *place, size_t out_n)
{
	size_t rs = ks + vs, pos[nruns ? nruns : 1], placed = 0, want = 0;
	uint64_t mask = (1ull << bits) - 1;

	memset(pos, 0, sizeof(pos));
	for (unsigned int r = 0; r < nruns; r++)
		want += lens[r];
	for (size_t v = vlo; v <= vhi; v++) {
		size_t at = place[v], room = v < vhi ? place[v + 1] : out_n;

		for (unsigned int r = 0; r < nruns; r++) {
			size_t end = gallop_past(runs[r], pos[r], lens[r], ks,
						 rs, shift, mask, v);
			struct sort_view dst = out;

			if (end == pos[r])
				continue;
			/* more of bin v than it has room for: not as counted */
			if (end - pos[r] > room - at)
				return false;
			dst.keys += at * out.kstride;
			if (vs)
				dst.vals += at * out.vstride;
			fc__sort_copy(sort_packed(runs[r] + pos[r] * rs, ks,
						  vs),
				      dst, end - pos[r], ks, vs);
			at += end - pos[r];
			placed += end - pos[r];
			pos[r] = end;
		}
	}
	return placed == want; /* none left out of the share's bins */
}

ALWAYS_INLINE void copy_body(struct sort_view in, struct sort_view out,
			     size_t n, size_t ks, size_t vs)
{
	for (size_t i = 0; i < n; i++)
		move_one(in, i, out, i, ks, vs);
}

void fc__sort_copy(struct sort_view in, struct sort_view out, size_t n,
		   size_t ks, size_t vs)
{
	if (in.kstride == out.kstride && in.kstride == ks + vs &&
	    in.vals == in.keys + ks && out.vals == out.keys + ks) {
		memmove(out.keys, in.keys, n * (ks + vs)); /* both packed */
		return;
	}
	if (!vs && in.kstride == ks && out.kstride == ks) {
		memmove(out.keys, in.keys, n * ks);
		return;
	}
#define COPY(K, V) copy_body(in, out, n, K, V)
	SORT_DISPATCH(ks, vs, COPY);
#undef COPY
}

ALWAYS_INLINE void hist_all_body(struct sort_view in, size_t n, size_t ks,
				 size_t stride, unsigned int ndig,
				 unsigned int db, size_t *hist)
{
	const size_t nb = (size_t)1 << db;

	for (size_t i = 0; i < n; i++) {
		uint64_t k = sort_key_at(in.keys + i * stride, ks);

		for (unsigned int d = 0; d < ndig; d++)
			hist[d * nb + ((k >> (d * db)) & (nb - 1))]++;
	}
}

void fc__sort_hist_digits(struct sort_view in, size_t n, size_t ks,
			  unsigned int ndig, unsigned int db, size_t *hist)
{
	memset(hist, 0, (sizeof(*hist) * ndig) << db);
	if (ks == 4)
		hist_all_body(in, n, 4, in.kstride, ndig, db, hist);
	else
		hist_all_body(in, n, 8, in.kstride, ndig, db, hist);
}

uint8_t *fc__sort_radix(struct sort_view in, size_t n, size_t ks, size_t vs,
			unsigned int key_bits, const size_t *key_hist,
			uint8_t *buf_a, uint8_t *buf_b, unsigned int *passes)
{
	/* digits of at most SORT_LOCAL_DIGIT_BITS, as even as they come */
	unsigned int ndig =
		(key_bits + SORT_LOCAL_DIGIT_BITS - 1) / SORT_LOCAL_DIGIT_BITS;
	unsigned int db = ndig ? (key_bits + ndig - 1) / ndig : 1;
	size_t nb = (size_t)1 << db;
	size_t *hist = calloc((size_t)(ndig ? ndig : 1) * nb, sizeof(*hist));
	struct sort_view src = in;
	uint8_t *cur = NULL, *next = buf_a;

	if (!hist)
		return NULL;
	*passes = 0;
	if (key_hist) {
		/* every digit's histogram from the whole key's */
		for (size_t v = 0; v < (size_t)1 << key_bits; v++)
			for (unsigned int d = 0; d < ndig; d++)
				hist[d * nb + ((v >> (d * db)) & (nb - 1))] +=
					key_hist[v];
	} else {
		/* every digit's histogram in one read */
		if (ks == 4 && ndig == 3 && db == 11 && in.kstride == 4)
			hist_all_body(in, n, 4, 4, 3, 11, hist);
		else if (ks == 8 && ndig == 6 && db == 11 && in.kstride == 8)
			hist_all_body(in, n, 8, 8, 6, 11, hist);
		else
			hist_all_body(in, n, ks, in.kstride, ndig, db, hist);
		*passes = 1;
	}
	for (unsigned int d = 0; d < ndig; d++) {
		size_t *h = hist + d * nb, sum = 0;
		unsigned int bits = d * db + db > key_bits ? key_bits - d * db :
							     db;
		int trivial = 0;

		for (size_t v = 0; v < nb; v++) {
			size_t c = h[v];

			if (c == n)
				trivial = 1;
			h[v] = sum;
			sum += c;
		}
		if (trivial)
			continue;
		fc__sort_scatter(src, sort_packed(next, ks, vs), n, ks, vs,
				 d * db, bits, h);
		(*passes)++;
		cur = next;
		next = cur == buf_a ? buf_b : buf_a;
		src = sort_packed(cur, ks, vs);
	}
	if (!cur) { /* already in order: pack it */
		fc__sort_copy(in, sort_packed(buf_a, ks, vs), n, ks, vs);
		(*passes)++;
		cur = buf_a;
	}
	free(hist);
	return cur;
}

ALWAYS_INLINE void merge_body(const uint8_t *recs, const size_t *starts,
			      unsigned int nruns, struct sort_view out,
			      size_t ks, size_t vs, size_t *pos)
{
	struct sort_view in = sort_packed((void *)recs, ks, vs);
	size_t j = 0;

	for (;;) {
		unsigned int best = nruns;
		uint64_t bk = 0;

		for (unsigned int r = 0; r < nruns; r++) {
			uint64_t k;

			if (pos[r] == starts[r + 1])
				continue;
			k = sort_key_at(recs + pos[r] * (ks + vs), ks);
			if (best == nruns || k < bk) {
				best = r;
				bk = k;
			}
		}
		if (best == nruns)
			break;
		move_one(in, pos[best]++, out, j++, ks, vs);
	}
}

/* Two runs: the common case, without the scan over heads. */
ALWAYS_INLINE void merge2_body(const uint8_t *recs, const size_t *starts,
			       struct sort_view out, size_t ks, size_t vs)
{
	struct sort_view in = sort_packed((void *)recs, ks, vs);
	size_t a = starts[0], ae = starts[1], b = starts[1], be = starts[2];
	size_t j = 0, rs = ks + vs;

	while (a < ae && b < be) {
		uint64_t ka = sort_key_at(recs + a * rs, ks);
		uint64_t kb = sort_key_at(recs + b * rs, ks);

		size_t takeb = kb < ka;

		move_one(in, takeb ? b : a, out, j++, ks, vs);
		b += takeb;
		a += !takeb;
	}
	while (a < ae)
		move_one(in, a++, out, j++, ks, vs);
	while (b < be)
		move_one(in, b++, out, j++, ks, vs);
}

static void merge2(const uint8_t *recs, const size_t *starts,
		   struct sort_view out, size_t ks, size_t vs)
{
#define MERGE2(K, V) merge2_body(recs, starts, out, K, V)
	SORT_DISPATCH(ks, vs, MERGE2);
#undef MERGE2
}

/*
 * More than two runs: merge neighbours pairwise, round after round,
 * between two packed buffers (neighbours keep equal keys in run order),
 * the last round into @out. Returns -1 without memory for the buffers.
 */
static int merge_tree(const uint8_t *recs, const size_t *starts,
		      unsigned int nruns, struct sort_view out, size_t ks,
		      size_t vs, uint8_t *const scratch[2])
{
	size_t rs = ks + vs, total = starts[nruns];
	size_t *st = malloc((nruns + 1) * sizeof(*st));
	uint8_t *own[2] = { NULL, NULL }, *buf[2];
	const uint8_t *src = recs;
	unsigned int cur = 0;

	for (int i = 0; i < 2; i++) {
		buf[i] = scratch ? scratch[i] : NULL;
		if (!buf[i])
			buf[i] = own[i] = malloc(total * rs + 1);
	}
	if (!st || !buf[0] || !buf[1]) {
		free(st);
		free(own[0]);
		free(own[1]);
		return -1;
	}
	memcpy(st, starts, (nruns + 1) * sizeof(*st));
	while (nruns > 1) {
		unsigned int next = (nruns + 1) / 2;
		bool last = next == 1;
		uint8_t *dst = buf[cur];

		for (unsigned int r = 0; r < nruns; r += 2) {
			size_t off = st[r];
			struct sort_view o =
				last ? out :
				       sort_packed(dst + off * rs, ks, vs);

			if (r + 1 < nruns) {
				size_t sub[3] = { 0, st[r + 1] - off,
						  st[r + 2] - off };

				merge2(src + off * rs, sub, o, ks, vs);
			} else {
				fc__sort_copy(
					sort_packed((void *)(src + off * rs),
						    ks, vs),
					o, st[r + 1] - off, ks, vs);
			}
			st[r / 2] = off;
		}
		st[next] = total;
		nruns = next;
		src = dst;
		cur ^= 1;
	}
	free(st);
	free(own[0]);
	free(own[1]);
	return 0;
}

unsigned int fc__sort_merge(const uint8_t *recs, const size_t *starts,
			    unsigned int nruns, struct sort_view out, size_t ks,
			    size_t vs, uint8_t *const scratch[2])
{
	unsigned int rounds = 0;

	size_t pos[nruns ? nruns : 1];

	if (nruns == 1) {
		fc__sort_copy(
			sort_packed((void *)(recs + starts[0] * (ks + vs)), ks,
				    vs),
			out, starts[1] - starts[0], ks, vs);
		return 1;
	}
	if (nruns == 2) {
		merge2(recs, starts, out, ks, vs);
		return 1;
	}
	if (merge_tree(recs, starts, nruns, out, ks, vs, scratch) == 0) {
		while (nruns > 1) {
			nruns = (nruns + 1) / 2;
			rounds++;
		}
		return rounds;
	}
	for (unsigned int r = 0; r < nruns; r++)
		pos[r] = starts[r];
#define MERGE(K, V) merge_body(recs, starts, nruns, out, K, V, pos)
	SORT_DISPATCH(ks, vs, MERGE);
#undef MERGE
	return 1;
}

size_t fc__sort_bound(const uint8_t *recs, size_t n, size_t ks, size_t rs,
		      uint64_t key, int upper)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t k = sort_key_at(recs + mid * rs, ks);

		if (k < key || (upper && k == key))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}
