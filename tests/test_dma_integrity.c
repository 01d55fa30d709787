// SPDX-License-Identifier: MIT
/*
 * test_dma_integrity: random data moved through board memory and back by the
 * chaining DMA engine arrives byte for byte: chains of 1..255 descriptors,
 * odd sizes, host offsets and board addresses, the end of board memory,
 * board-to-board copies, many chains queued before one wait, polling,
 * unaligned user memory (with guard bytes), submission order inside and
 * between chains, and the SCRATCH/SCRATCH_ECHO registers.
 *
 * FPGACOMM_TEST_DEVICE names the board (default "emu:"), FPGACOMM_TEST_SEED
 * repeats a run, FPGACOMM_TEST_FILTER picks tests by name (cmocka pattern).
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <fpgacomm/fpgacomm.h>
#include <fpgacomm/hw.h>

#include "harness.h"

#define BUF_LEN (8u << 20) /* each host staging buffer */
#define GUARD	64

static struct fc_mem *src; /* staging buffers, fc_mem_alloc'd */
static struct fc_mem *dst;

/* ---- helpers ---- */

/* A number in [lo, hi]. */
static uint64_t rnd_range(uint64_t lo, uint64_t hi)
{
	if (hi <= lo)
		return lo;
	if (hi - lo == UINT64_MAX)
		return rnd();
	return lo + rnd() % (hi - lo + 1);
}

/* An odd board address at which @len bytes fit, when one exists. */
static uint64_t rnd_board_addr(uint64_t len)
{
	uint64_t a = rnd_range(0, info.board_mem_size - len);

	if (!(a & 1) && a < info.board_mem_size - len)
		a++;
	return a;
}

static uint8_t *sbuf(uint64_t off)
{
	return (uint8_t *)src->addr + off;
}

static uint8_t *dbuf(uint64_t off)
{
	return (uint8_t *)dst->addr + off;
}

static void assert_filled(const void *p, size_t len, uint8_t byte,
			  const char *what)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i] != byte)
			fail_msg(
				"%s: byte %zu of %zu is 0x%02x, expected 0x%02x "
				"(seed %" PRIu64 ")",
				what, i, len, b[i], byte, seed);
}

/* Every byte of dst[off, off+len) different from src[soff, ...). */
static void fill_complement(uint64_t doff, uint64_t soff, uint64_t len)
{
	uint64_t i;

	for (i = 0; i < len; i++)
		dbuf(doff)[i] = (uint8_t)~sbuf(soff)[i];
}

static void run1(struct fc_xfer x)
{
	assert_ok(fc_dma_run(dev, &x, 1, WAIT_MS));
}

/* Write @len bytes at @p to the board, through the src staging buffer. */
static void board_write(uint64_t baddr, const void *p, uint64_t len)
{
	assert_true(len <= BUF_LEN);
	memcpy(sbuf(0), p, len);
	run1(xfer(fc_host(src, 0), fc_board(baddr), len));
}

/* Read @len board bytes into @p, through the dst staging buffer. */
static void board_read(uint64_t baddr, void *p, uint64_t len)
{
	assert_true(len <= BUF_LEN);
	memset(dbuf(0), 0x5a, len);
	run1(xfer(fc_board(baddr), fc_host(dst, 0), len));
	memcpy(p, dbuf(0), len);
}

/*
 * Host src+soff -> board baddr -> host dst+doff in two chains of one
 * descriptor, then compare. The destination starts as the complement of the
 * data, so every byte has to be written, and GUARD bytes either side of it
 * must not be touched.
 */
static void roundtrip(uint64_t len, uint64_t soff, uint64_t doff,
		      uint64_t baddr)
{
	char what[160];
	uint64_t glo = doff < GUARD ? doff : GUARD;
	uint64_t ghi = BUF_LEN - (doff + len) < GUARD ? BUF_LEN - (doff + len) :
							GUARD;

	assert_true(soff + len <= BUF_LEN && doff + len <= BUF_LEN);
	rnd_fill(sbuf(soff), len);
	fill_complement(doff, soff, len);
	memset(dbuf(doff - glo), 0xe7, glo);
	memset(dbuf(doff + len), 0xe7, ghi);

	run1(xfer(fc_host(src, soff), fc_board(baddr), len));
	run1(xfer(fc_board(baddr), fc_host(dst, doff), len));

	snprintf(what, sizeof(what),
		 "len %" PRIu64 " host src+%" PRIu64 " board 0x%" PRIx64
		 " host dst+%" PRIu64,
		 len, soff, baddr, doff);
	assert_same(dbuf(doff), sbuf(soff), len, what);
	assert_filled(dbuf(doff - glo), glo, 0xe7, "guard before destination");
	assert_filled(dbuf(doff + len), ghi, 0xe7, "guard after destination");
}

static uint64_t clamp_len(uint64_t len)
{
	if (len > info.max_xfer_len)
		len = info.max_xfer_len;
	if (len > BUF_LEN - 2 * 4096)
		len = BUF_LEN - 2 * 4096;
	return len;
}

/* ---- tests ---- */

static void test_scratch_echo(void **state)
{
	uint32_t vals[] = {
		0, 1, 0xffffffffu, 0xdeadbeefu, 0x80000000u, 0x12345678u, 0
	};
	uint32_t v, i;

	rng_reset(__func__);
	vals[6] = (uint32_t)rnd();

	assert_ok(fc_reg_read(dev, FC_REG_ID, &v));
	assert_int_equal(v, FC_HW_ID_MAGIC);
	assert_int_equal(info.hw_id, FC_HW_ID_MAGIC);

	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		assert_ok(fc_reg_write(dev, FC_REG_SCRATCH, vals[i]));
		assert_ok(fc_reg_read(dev, FC_REG_SCRATCH, &v));
		assert_int_equal(v, vals[i]);
		assert_ok(fc_reg_read(dev, FC_REG_SCRATCH_ECHO, &v));
		assert_int_equal(v, (uint32_t)~vals[i]);
	}
}

static void test_sizes_and_offsets(void **state)
{
	static const uint64_t sizes[] = {
		1,
		2,
		3,
		4,
		5,
		7,
		8,
		15,
		16,
		17,
		31,
		32,
		33,
		63,
		64,
		65,
		127,
		128,
		129,
		511,
		512,
		513,
		4095,
		4096,
		4097,
		8191,
		8193,
		65535,
		65536,
		65537,
		(1u << 20) - 1,
		(1u << 20) + 3,
		(3u << 20) + 5,
	};
	static const uint64_t hoffs[] = { 0, 1, 3, 5, 7, 9, 4093, 4095, 4097 };
	unsigned int i;

	rng_reset(__func__);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t len = clamp_len(sizes[i]);
		uint64_t soff = hoffs[i % 9];
		uint64_t doff = hoffs[(i * 5 + 3) % 9];

		/* an odd board address, then an aligned one */
		roundtrip(len, soff, doff, rnd_board_addr(len));
		roundtrip(len, doff, soff, rnd_board_addr(len) & ~4095ull);
	}
}

/*
 * One chain of n descriptors scatters pieces of src over the board in
 * reverse order, a second chain gathers them into dst in another layout.
 * Bytes of dst no piece covers must keep their fill.
 */
static void scatter_gather(unsigned int n)
{
	struct fc_xfer *x = calloc(n, sizeof(*x));
	uint64_t *len = calloc(n, sizeof(*len));
	uint64_t *soff = calloc(n, sizeof(*soff));
	uint64_t *doff = calloc(n, sizeof(*doff));
	uint64_t *boff = calloc(n, sizeof(*boff));
	uint64_t s = 1, d = 3, b, total = 0, prev;
	struct fc_dma_result res;
	uint64_t t1, t2;
	unsigned int i;
	char what[96];

	assert_non_null(x);
	assert_non_null(len);
	assert_non_null(soff);
	assert_non_null(doff);
	assert_non_null(boff);
	for (i = 0; i < n; i++) {
		len[i] = rnd_range(1, n > 8 ? 8192 : 200000);
		soff[i] = s;
		doff[i] = d;
		s += len[i] + rnd_range(0, 7);
		d += len[i] + rnd_range(1, 9); /* a gap after each piece */
		total += len[i] + 16;
	}
	assert_true(s <= BUF_LEN && d <= BUF_LEN);
	b = rnd_board_addr(total);
	for (i = n; i-- > 0;) { /* reverse order on the board */
		boff[i] = b;
		b += len[i] + rnd_range(0, 15);
	}

	rnd_fill(sbuf(0), s);
	memset(dbuf(0), 0x3c, d + 64);

	for (i = 0; i < n; i++)
		x[i] = xfer(fc_host(src, soff[i]), fc_board(boff[i]), len[i]);
	assert_ok(fc_dma_submit(dev, x, n, 0, &t1));
	for (i = 0; i < n; i++)
		x[i] = xfer(fc_board(boff[i]), fc_host(dst, doff[i]), len[i]);
	assert_ok(fc_dma_submit(dev, x, n, 0, &t2));
	assert_true(t1 != t2);
	assert_ok(fc_dma_wait(dev, t2, WAIT_MS));
	assert_ok(fc_dma_wait(dev, t1, WAIT_MS));

	assert_ok(fc_dma_result(dev, t2, &res));
	assert_int_equal(res.status, 0);
	assert_int_equal(res.hw_error, FC_DMA_ERR_NONE);

	prev = 0;
	for (i = 0; i < n; i++) {
		snprintf(what, sizeof(what),
			 "chain of %u: descriptor %u (len %" PRIu64 ")", n, i,
			 len[i]);
		assert_filled(dbuf(prev), doff[i] - prev, 0x3c,
			      "gap between gathered pieces");
		assert_same(dbuf(doff[i]), sbuf(soff[i]), len[i], what);
		prev = doff[i] + len[i];
	}
	assert_filled(dbuf(prev), 64, 0x3c, "after the last piece");

	free(x);
	free(len);
	free(soff);
	free(doff);
	free(boff);
}

static void test_chain_lengths(void **state)
{
	static const unsigned int ns[] = { 1, 2, 3, 16, 254, FC_MAX_CHAIN };
	unsigned int i;

	rng_reset(__func__);
	assert_true(info.max_chain >= FC_MAX_CHAIN);
	for (i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
		scatter_gather(ns[i]);
}

static void test_board_end(void **state)
{
	static const uint64_t lens[] = { 1, 2, 3, 4, 4095, 4096, 4097, 65537 };
	uint64_t size = info.board_mem_size;
	uint8_t *a, *b;
	unsigned int i;

	rng_reset(__func__);
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		roundtrip(lens[i], 2 * i + 1, 3 * i + 7, size - lens[i]);

	/* a board-to-board copy that ends on the last byte, both ways */
	a = malloc(4097);
	b = malloc(4097);
	assert_non_null(a);
	assert_non_null(b);
	rnd_fill(a, 4097);
	board_write(12345, a, 4097);
	run1(xfer(fc_board(12345), fc_board(size - 4097), 4097));
	board_read(size - 4097, b, 4097);
	assert_same(b, a, 4097, "board copy to the end of board memory");

	rnd_fill(a, 4097);
	board_write(size - 4097, a, 4097);
	run1(xfer(fc_board(size - 4097), fc_board(99999), 4097));
	board_read(99999, b, 4097);
	assert_same(b, a, 4097, "board copy from the end of board memory");
	free(a);
	free(b);
}

static void test_board_to_board(void **state)
{
	static const uint64_t lens[] = {
		1, 3, 64, 4095, 4097, 65537, (1u << 20) + 1
	};
	uint8_t *want = malloc(BUF_LEN), *got = malloc(BUF_LEN);
	unsigned int i;

	rng_reset(__func__);
	assert_non_null(want);
	assert_non_null(got);
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		uint64_t len = lens[i];
		uint64_t half = info.board_mem_size / 2;
		uint64_t a = rnd_range(0, half - len) | 1;
		uint64_t b = half + (rnd_range(0, half - len - 1) | 1);
		char what[96];

		rnd_fill(want, len);
		board_write(a, want, len);
		/* stale data at b must be replaced */
		for (uint64_t k = 0; k < len; k++)
			got[k] = (uint8_t)~want[k];
		board_write(b, got, len);

		run1(xfer(fc_board(a), fc_board(b), len));
		snprintf(what, sizeof(what),
			 "board copy len %" PRIu64 " 0x%" PRIx64
			 " -> 0x%" PRIx64,
			 len, a, b);
		board_read(b, got, len);
		assert_same(got, want, len, what);
		board_read(a, got, len);
		assert_same(got, want, len, "board copy source afterwards");
	}

	/*
	 * One descriptor bigger than anything else here (an emulated engine
	 * moves it in several steps): 20 MiB + 1, staged in pieces.
	 */
	{
		uint64_t big = (20u << 20) + 1, a = 3, b, k, piece;
		uint8_t *w2 = malloc(big), *g2 = malloc(big);

		if (big > info.max_xfer_len)
			big = info.max_xfer_len;
		b = info.board_mem_size - big - 1;
		assert_non_null(w2);
		assert_non_null(g2);
		rnd_fill(w2, big);
		for (k = 0; k < big; k += piece) {
			piece = big - k < BUF_LEN ? big - k : BUF_LEN;
			board_write(a + k, w2 + k, piece);
		}
		run1(xfer(fc_board(a), fc_board(b), big));
		for (k = 0; k < big; k += piece) {
			piece = big - k < BUF_LEN ? big - k : BUF_LEN;
			board_read(b + k, g2 + k, piece);
		}
		assert_same(g2, w2, big, "one large board-to-board descriptor");
		free(w2);
		free(g2);
	}

	/* host -> A -> B -> C -> host in one chain */
	{
		uint64_t len = 70001, a = 1001, b = 300001, c = 900007;
		struct fc_xfer x[4];

		rnd_fill(sbuf(5), len);
		fill_complement(11, 5, len);
		x[0] = xfer(fc_host(src, 5), fc_board(a), len);
		x[1] = xfer(fc_board(a), fc_board(b), len);
		x[2] = xfer(fc_board(b), fc_board(c), len);
		x[3] = xfer(fc_board(c), fc_host(dst, 11), len);
		assert_ok(fc_dma_run(dev, x, 4, WAIT_MS));
		assert_same(dbuf(11), sbuf(5), len,
			    "host->A->B->C->host chain");
	}
	free(want);
	free(got);
}

/* Submit, retrying after waiting for the oldest chain on -EAGAIN. */
static void submit_retry(const struct fc_xfer *x, unsigned int n,
			 uint64_t *tickets, unsigned int i,
			 unsigned int *oldest)
{
	int rc;

	for (;;) {
		rc = fc_dma_submit(dev, x, n, 0, &tickets[i]);
		if (rc != -EAGAIN)
			break;
		assert_true(*oldest < i);
		assert_ok(fc_dma_wait(dev, tickets[(*oldest)++], WAIT_MS));
	}
	assert_rc(rc, 0);
}

static void test_many_chains_queued(void **state)
{
	enum {
		K = 48
	};
	uint64_t tickets[K], soff[K], doff[K], boff[K], len[K];
	uint64_t s = 3, d = 1, b;
	unsigned int i, j, oldest = 0;
	struct fc_dma_result res;
	char what[64];

	rng_reset(__func__);
	b = rnd_board_addr(K * 70000);
	for (i = 0; i < K; i++) {
		struct fc_xfer x[2];

		len[i] = rnd_range(1, 65536);
		soff[i] = s;
		doff[i] = d;
		boff[i] = b;
		s += len[i] + 1;
		d += len[i] + 3;
		b += len[i] + 5;
		rnd_fill(sbuf(soff[i]), len[i]);
		fill_complement(doff[i], soff[i], len[i]);
		x[0] = xfer(fc_host(src, soff[i]), fc_board(boff[i]), len[i]);
		x[1] = xfer(fc_board(boff[i]), fc_host(dst, doff[i]), len[i]);
		submit_retry(x, 2, tickets, i, &oldest);
		for (j = 0; j < i; j++)
			assert_true(tickets[j] != tickets[i]);
	}
	if (oldest)
		print_message("queue full after %u chains (-EAGAIN)\n",
			      K - oldest);

	/* chains end in submission order: the last done means all done */
	assert_ok(fc_dma_wait(dev, tickets[K - 1], WAIT_MS));
	for (i = 0; i < K; i++) {
		assert_rc(fc_dma_poll(dev, tickets[i]), 0);
		assert_ok(fc_dma_result(dev, tickets[i], &res));
		assert_int_equal(res.status, 0);
		snprintf(what, sizeof(what), "queued chain %u of %u", i, K);
		assert_same(dbuf(doff[i]), sbuf(soff[i]), len[i], what);
	}
	for (i = 0; i < K; i++)
		assert_ok(fc_dma_wait(dev, tickets[i], 0));
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_poll(void **state)
{
	enum {
		N = 16
	};
	uint64_t chunk = clamp_len(BUF_LEN / N);
	struct fc_xfer x[N];
	unsigned int i, inprogress = 0, polls = 0;
	uint64_t t;
	double deadline;
	int rc;

	rng_reset(__func__);
	rnd_fill(sbuf(0), chunk * N);
	fill_complement(0, 0, chunk * N);
	for (i = 0; i < N; i++)
		x[i] = xfer(fc_host(src, i * chunk), fc_board(i * chunk + 7),
			    chunk);
	assert_ok(fc_dma_submit(dev, x, N, 0, &t));
	for (i = 0; i < N; i++)
		x[i] = xfer(fc_board(i * chunk + 7), fc_host(dst, i * chunk),
			    chunk);
	assert_ok(fc_dma_submit(dev, x, N, 0, &t));

	/* poll alone must see the chain through, without fc_dma_wait */
	deadline = now_s() + 20;
	for (;;) {
		rc = fc_dma_poll(dev, t);
		polls++;
		if (rc == 0)
			break;
		if (rc != -EINPROGRESS)
			fail_msg("fc_dma_poll = %d (%s), expected -EINPROGRESS "
				 "or 0",
				 rc, fc_strerror(rc));
		inprogress++;
		if (now_s() > deadline)
			fail_msg("chain still running after 20 s of polling");
		usleep(50);
	}
	print_message("%u polls, %u in progress\n", polls, inprogress);
	assert_same(dbuf(0), sbuf(0), chunk * N, "data of a polled chain");
	assert_rc(fc_dma_poll(dev, t), 0);
	assert_ok(fc_dma_wait(dev, t, 0));
}

static void test_poll_while_stalled(void **state)
{
	struct fc_dma_result res;
	struct fc_xfer x[2];
	uint64_t t;
	int i;

	if (!is_emulated())
		skip_because("needs the emulator's FC_EMU_FAULT_DMA_STALL");
	rng_reset(__func__);
	rnd_fill(sbuf(100), 5000);
	fill_complement(200, 100, 5000);
	assert_ok(fc_reg_write(dev, FC_EMU_FAULT_DMA_STALL, 1));
	x[0] = xfer(fc_host(src, 100), fc_board(777), 5000);
	x[1] = xfer(fc_board(777), fc_host(dst, 200), 5000);
	assert_ok(fc_dma_submit(dev, x, 2, 0, &t));
	for (i = 0; i < 5; i++) {
		assert_rc(fc_dma_poll(dev, t), -EINPROGRESS);
		assert_rc(fc_dma_result(dev, t, &res), -EINPROGRESS);
		usleep(2000);
	}
	assert_rc(fc_dma_wait(dev, t, 10), -ETIMEDOUT);
	assert_ok(fc_reg_write(dev, FC_EMU_FAULT_DMA_STALL, 0));
	assert_ok(fc_dma_wait(dev, t, WAIT_MS));
	assert_rc(fc_dma_poll(dev, t), 0);
	assert_same(dbuf(200), sbuf(100), 5000, "chain resumed after a stall");
}

static void test_unaligned_user_memory(void **state)
{
	static const size_t lens[] = { 1, 2, 3, 4095, 4096, 4097, 65537 };
	unsigned int i;

	rng_reset(__func__);
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		size_t len = lens[i];
		uint8_t *raw = malloc(len + 2 * GUARD + 1);
		uint8_t *u = raw + GUARD + 1; /* malloc is 16-aligned: odd */
		uint8_t *want = malloc(len), *got = malloc(len);
		struct fc_mem *m;
		uint64_t baddr = rnd_board_addr(len);
		size_t off;

		assert_non_null(raw);
		assert_non_null(want);
		assert_non_null(got);
		assert_true((uintptr_t)u & 1);
		memset(raw, 0xc3, len + 2 * GUARD + 1);
		assert_ok(fc_mem_register(dev, u, len, 0, &m));
		assert_ptr_equal(m->addr, u);
		assert_int_equal(m->len, len);

		/* as a source: exactly [u, u+len) reaches the board */
		rnd_fill(u, len);
		memcpy(want, u, len);
		run1(xfer(fc_host(m, 0), fc_board(baddr), len));
		board_read(baddr, got, len);
		assert_same(got, want, len, "registered memory as source");

		/* as a destination: whole range, guards kept */
		rnd_fill(want, len);
		board_write(baddr, want, len);
		memset(u, 0, len);
		run1(xfer(fc_board(baddr), fc_host(m, 0), len));
		assert_same(u, want, len, "registered memory as destination");
		assert_filled(raw, GUARD + 1, 0xc3,
			      "guard before registered range");
		assert_filled(u + len, GUARD, 0xc3,
			      "guard after registered range");

		/* the tail from an odd offset up to the last byte */
		off = len / 2 | 1;
		if (off < len) {
			rnd_fill(want, len - off);
			board_write(baddr, want, len - off);
			run1(xfer(fc_board(baddr), fc_host(m, off), len - off));
			assert_same(u + off, want, len - off,
				    "tail of registered memory");
			assert_filled(u + len, GUARD, 0xc3,
				      "guard after registered range (tail)");
		}
		assert_ok(fc_mem_free(dev, m));
		assert_filled(raw, GUARD + 1, 0xc3, "guard before, after free");
		assert_filled(u + len, GUARD, 0xc3, "guard after, after free");
		free(raw);
		free(want);
		free(got);
	}
}

/* Two registrations that share one page stay independent. */
static void test_registrations_share_page(void **state)
{
	uint8_t *raw = aligned_alloc(4096, 8192);
	uint8_t *a = raw + 1000, *b = raw + 1100; /* [1000,1100) [1100,1300) */
	struct fc_mem *ma, *mb;
	uint8_t want[200];

	rng_reset(__func__);
	assert_non_null(raw);
	memset(raw, 0x77, 8192);
	assert_ok(fc_mem_register(dev, a, 100, 0, &ma));
	assert_ok(fc_mem_register(dev, b, 200, 0, &mb));

	rnd_fill(want, sizeof(want));
	board_write(4242, want, 200);
	run1(xfer(fc_board(4242), fc_host(ma, 0), 100));
	run1(xfer(fc_board(4242), fc_host(mb, 0), 200));
	assert_same(a, want, 100, "first of two registrations in a page");
	assert_same(b, want, 200, "second of two registrations in a page");

	/* freeing one must leave the other usable */
	assert_ok(fc_mem_free(dev, ma));
	rnd_fill(want, sizeof(want));
	board_write(4242, want, 200);
	run1(xfer(fc_board(4242), fc_host(mb, 0), 200));
	assert_same(b, want, 200, "registration after its page-mate was freed");
	assert_filled(raw, 1000, 0x77, "bytes before both registrations");
	assert_filled(raw + 1300, 8192 - 1300, 0x77,
		      "bytes after both registrations");
	assert_ok(fc_mem_free(dev, mb));
	free(raw);
}

/*
 * Transfers of one chain whose board ranges overlap take effect in
 * submission order: write-after-write, read-after-write and
 * write-after-read all hold.
 */
static void test_overlap_in_chain(void **state)
{
	const uint64_t n = 4097, h = n / 2;
	uint64_t a, c;
	uint8_t *X = sbuf(0), *Y = sbuf(n), *Z = sbuf(2 * n);
	uint8_t *want = malloc(2 * n);
	struct fc_xfer x[6];

	rng_reset(__func__);
	assert_non_null(want);
	a = rnd_board_addr(4 * n);
	c = a + 2 * n + 1;
	rnd_fill(sbuf(0), 3 * n);
	memset(dbuf(0), 0, 4 * n);

	x[0] = xfer(fc_host(src, 0), fc_board(a), n);	      /* X -> A */
	x[1] = xfer(fc_host(src, n), fc_board(a + h), n);     /* Y -> A+h */
	x[2] = xfer(fc_board(a), fc_board(c), n + h);	      /* A -> C */
	x[3] = xfer(fc_host(src, 2 * n), fc_board(a), n);     /* Z -> A */
	x[4] = xfer(fc_board(a), fc_host(dst, 0), n + h);     /* A -> h1 */
	x[5] = xfer(fc_board(c), fc_host(dst, 2 * n), n + h); /* C -> h2 */
	assert_ok(fc_dma_run(dev, x, 6, WAIT_MS));

	/* A = Z ++ Y[h..n) */
	memcpy(want, Z, n);
	memcpy(want + n, Y + (n - h), h);
	assert_same(dbuf(0), want, n + h, "overlapping writes then a read");
	/* C = X[0..h) ++ Y, copied before Z landed */
	memcpy(want, X, h);
	memcpy(want + h, Y, n);
	assert_same(dbuf(2 * n), want, n + h,
		    "board copy before a later overlapping write");
	free(want);
}

/* Chains take effect in submission order, too. */
static void test_order_between_chains(void **state)
{
	const uint64_t n = 10007;
	uint64_t a, d, t[5];
	struct fc_xfer x;
	unsigned int i;

	rng_reset(__func__);
	a = rnd_board_addr(n);
	d = rnd_board_addr(n);
	if (d < a + n && a < d + n)
		d = a < info.board_mem_size / 2 ? a + n + 1 : a - n - 1;
	rnd_fill(sbuf(0), 3 * n);
	memset(dbuf(0), 0, 3 * n);

	x = xfer(fc_host(src, 0), fc_board(a), n); /* X -> A */
	assert_ok(fc_dma_submit(dev, &x, 1, 0, &t[0]));
	x = xfer(fc_host(src, n), fc_board(a), n); /* Y -> A */
	assert_ok(fc_dma_submit(dev, &x, 1, 0, &t[1]));
	x = xfer(fc_board(a), fc_host(dst, 0), n); /* A -> h */
	assert_ok(fc_dma_submit(dev, &x, 1, 0, &t[2]));
	x = xfer(fc_host(dst, 0), fc_board(d), n); /* h -> D */
	assert_ok(fc_dma_submit(dev, &x, 1, 0, &t[3]));
	x = xfer(fc_board(d), fc_host(dst, n), n); /* D -> h' */
	assert_ok(fc_dma_submit(dev, &x, 1, 0, &t[4]));

	assert_ok(fc_dma_wait(dev, t[4], WAIT_MS));
	for (i = 0; i < 5; i++)
		assert_rc(fc_dma_poll(dev, t[i]), 0);
	assert_same(dbuf(0), sbuf(n), n, "read after two chained writes");
	assert_same(dbuf(n), sbuf(n), n,
		    "chain reading host memory an earlier chain wrote");
}

/* ---- main ---- */

/* A failed test must not leave a fault knob set for the next one. */
static int clear_knobs(void **state)
{
	if (is_emulated()) {
		fc_reg_write(dev, FC_EMU_FAULT_DMA_STALL, 0);
		fc_reg_write(dev, FC_EMU_FAULT_DMA_ERROR, 0);
	}
	return 0;
}

#define T(f) cmocka_unit_test_teardown(f, clear_knobs)

static int group_setup(void **state)
{
	return harness_alloc(BUF_LEN, &src, &dst);
}

static int group_teardown(void **state)
{
	return harness_close(src, dst);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_scratch_echo),
		T(test_sizes_and_offsets),
		T(test_chain_lengths),
		T(test_board_end),
		T(test_board_to_board),
		T(test_many_chains_queued),
		T(test_poll),
		T(test_poll_while_stalled),
		T(test_unaligned_user_memory),
		T(test_registrations_share_page),
		T(test_overlap_in_chain),
		T(test_order_between_chains),
	};
	int rc;

	rc = harness_open("test_dma_integrity");
	if (rc)
		return rc;
	if (!(info.caps & FC_CAP_DMA) || !(info.caps & FC_CAP_BOARD_MEM)) {
		printf("SKIP: board has no DMA engine or no board memory "
		       "(caps 0x%x)\n",
		       info.caps);
		fc_close(dev);
		return EXIT_SKIP;
	}
	printf("backend %s, board memory %" PRIu64
	       " bytes, max transfer %" PRIu64 ", max chain %u\n",
	       info.backend, info.board_mem_size, info.max_xfer_len,
	       info.max_chain);
	if (info.board_mem_size < (64u << 20)) {
		printf("SKIP: board memory below 64 MiB\n");
		fc_close(dev);
		return EXIT_SKIP;
	}

	return harness_run(tests, group_setup, group_teardown);
}
