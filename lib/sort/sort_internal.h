/* SPDX-License-Identifier: MIT */
/*
 * Private to lib/sort*.c: the local steps of the distributed sort
 * (lib/sort/sort_local.c), which lib/sort/sort.c strings together over the group's
 * collectives.
 *
 * An element is a key of ks bytes (4 or 8) and a value of vs bytes
 * (0 for keys alone). Between steps elements are kept packed as records
 * of rs = ks + vs bytes; the caller's arrays are "split": keys in one,
 * values in another. A struct sort_view names either.
 */
#ifndef FC_SORT_INTERNAL_H
#define FC_SORT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct sort_view {
	uint8_t *keys;	/* first key */
	uint8_t *vals;	/* first value (unused when vs is 0) */
	size_t kstride; /* bytes from one key to the next */
	size_t vstride;
};

/* Packed records at @buf. */
static inline struct sort_view sort_packed(void *buf, size_t ks, size_t vs)
{
	struct sort_view v = { buf, (uint8_t *)buf + ks, ks + vs, ks + vs };
	return v;
}

/* The caller's split arrays. */
static inline struct sort_view sort_split(const void *keys, const void *vals,
					  size_t ks, size_t vs)
{
	struct sort_view v = { (uint8_t *)keys, (uint8_t *)vals, ks, vs };
	return v;
}

static inline uint64_t sort_key_at(const uint8_t *p, size_t ks)
{
	if (ks == 4) {
		uint32_t k;

		memcpy(&k, p, 4);
		return k;
	} else {
		uint64_t k;

		memcpy(&k, p, 8);
		return k;
	}
}

/* Digits of the local radix sort. */
#define SORT_LOCAL_DIGIT_BITS 11

/*
 * fc__sort_hist - count the keys of @in[0..n) by digit (key >> shift) &
 * (2^bits - 1) into @hist (2^bits entries, zeroed first); returns the OR
 * of all keys, for range checks.
 */
uint64_t fc__sort_hist(struct sort_view in, size_t n, size_t ks,
		       unsigned int shift, unsigned int bits, size_t *hist);

/*
 * fc__sort_hist_digits - the histograms of @ndig digits of @db bits each,
 * digit d being (key >> d * db) & (2^db - 1), in one read: digit d's
 * 2^db counts at @hist + d * 2^db.
 */
void fc__sort_hist_digits(struct sort_view in, size_t n, size_t ks,
			  unsigned int ndig, unsigned int db, size_t *hist);

/*
 * fc__sort_alloc - a work buffer of @bytes; large ones asked for in huge
 * pages (a sort touches every page of a fresh buffer once, and on 4 KiB
 * pages the faults cost as much as a pass over the data).
 * fc__sort_free - give it back (NULL is fine).
 */
void *fc__sort_alloc(size_t bytes);
void fc__sort_free(void *buf);

/*
 * fc__sort_scatter - stable scatter of @in[0..n) by digit: element with
 * digit v goes to @out at position offs[v]++ (offs has 2^bits entries).
 */
void fc__sort_scatter(struct sort_view in, struct sort_view out, size_t n,
		      size_t ks, size_t vs, unsigned int shift,
		      unsigned int bits, size_t *offs);

/*
 * fc__sort_place - lay out @nruns runs of packed records, each sorted by
 * digit (key >> shift) & (2^bits - 1), into @out: the records of digit v
 * go to @out at place[v] onwards (bins vlo..vhi only), run 0's first, then
 * run 1's, ... So it does what a stable scatter of the runs in order does,
 * but by copying each run's segment of a digit whole, found by galloping:
 * worth it where segments are long. Bin v has room up to place[v + 1]
 * (bin vhi up to @out_n): a run with more of a bin than that, or with
 * records outside vlo..vhi (runs not as their senders counted them), stops
 * it before it writes out of its room.
 * RETURN VALUE: true when every record was placed within its room.
 */
bool fc__sort_place(uint8_t *const *runs, const size_t *lens,
		    unsigned int nruns, struct sort_view out, size_t ks,
		    size_t vs, unsigned int shift, unsigned int bits,
		    size_t vlo, size_t vhi, const size_t *place, size_t out_n);

/* fc__sort_copy - copy @n elements from @in to @out (packing or not). */
void fc__sort_copy(struct sort_view in, struct sort_view out, size_t n,
		   size_t ks, size_t vs);

/*
 * fc__sort_radix - stable LSD radix sort of @n elements of @in on their
 * low @key_bits bits, into packed records in @buf_a or @buf_b (each n
 * records), by digits of at most SORT_LOCAL_DIGIT_BITS bits. @in is not
 * changed (it may be the caller's). With @key_hist (the histogram of the
 * whole keys, 2^key_bits entries) the digits' histograms come from it
 * instead of a read of the keys. Digits on which every key agrees are
 * skipped.
 * RETURN VALUE: the buffer holding the result, NULL without memory;
 * *passes gets the passes over the data (histogram read included).
 */
uint8_t *fc__sort_radix(struct sort_view in, size_t n, size_t ks, size_t vs,
			unsigned int key_bits, const size_t *key_hist,
			uint8_t *buf_a, uint8_t *buf_b, unsigned int *passes);

/*
 * fc__sort_merge - merge @nruns runs of packed records (run r is
 * [starts[r], starts[r+1]) of @recs, each sorted by key) into @out,
 * stably: equal keys in run order. More than two runs are merged in pairs,
 * round after round (one n-way pass if memory for that is short), between
 * two buffers of starts[nruns] records: @scratch's, where it is not NULL
 * (an entry may be NULL), else its own.
 * RETURN VALUE: the passes made over the data.
 */
unsigned int fc__sort_merge(const uint8_t *recs, const size_t *starts,
			    unsigned int nruns, struct sort_view out, size_t ks,
			    size_t vs, uint8_t *const scratch[2]);

/* Index of the first record of sorted @recs[0..n) whose key is >= @key
 * (with @upper, > @key). */
size_t fc__sort_bound(const uint8_t *recs, size_t n, size_t ks, size_t rs,
		      uint64_t key, int upper);

#endif /* FC_SORT_INTERNAL_H */
