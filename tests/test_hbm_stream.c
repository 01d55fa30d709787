// SPDX-License-Identifier: MIT
/*
 * test_hbm_stream: the HBM memory system. Pseudo-channel geometry and
 * placement; stream programs encoded, decoded and refused when malformed
 * (by the library and by the board itself); the paper's benchmark as a
 * double-buffered invert, every element checked over many runs; every LS
 * and every pseudo-channel busy at once; WAIT/SIGNAL between the two
 * streams of an LS; the built-in kernels; user kernels; a failed run, a
 * hung run reset, and the LS working afterwards; idle streams cost no CPU.
 */
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

#define BUF_LEN (8u << 20)
#define CHUNK \
	(16u << 10) /* the paper's 16 Ki-element chunks are 64 KiB;
				 * smaller here: more iterations per run */
#define RUN_MS 20000

_Static_assert(sizeof(struct fc_hw_sinsn) == FC_SINSN_SIZE, "sinsn size");
_Static_assert(offsetof(struct fc_hw_sinsn, len) == 4, "sinsn len");
_Static_assert(offsetof(struct fc_hw_sinsn, hbm) == 8, "sinsn hbm");
_Static_assert(offsetof(struct fc_hw_sinsn, step) == 16, "sinsn step");
_Static_assert(offsetof(struct fc_hw_sinsn, ls) == 20, "sinsn ls");
_Static_assert(offsetof(struct fc_hw_sinsn, ls2) == 24, "sinsn ls2");
_Static_assert(offsetof(struct fc_hw_sinsn, arg) == 28, "sinsn arg");

static struct fc_mem *hbuf_a, *hbuf_b;
static struct fc_hbm_info hi;

/* ---- helpers ---- */

static void board_put(uint64_t addr, const void *src, size_t len)
{
	struct fc_xfer x;

	assert_true(len <= BUF_LEN);
	memcpy(hbuf_a->addr, src, len);
	x = xfer(fc_host(hbuf_a, 0), fc_board(addr), len);
	assert_ok(fc_dma_run(dev, &x, 1, WAIT_MS));
}

static void board_get(uint64_t addr, void *dst, size_t len)
{
	struct fc_xfer x;

	assert_true(len <= BUF_LEN);
	x = xfer(fc_board(addr), fc_host(hbuf_b, 0), len);
	assert_ok(fc_dma_run(dev, &x, 1, WAIT_MS));
	memcpy(dst, hbuf_b->addr, len);
}

static struct fc_sprog *new_prog(void)
{
	struct fc_sprog *p;

	assert_ok(fc_sprog_new(&p));
	return p;
}

/*
 * The paper's stream_for: stream @s of @nstreams inverts chunks s,
 * s + nstreams, ... of [src, src + len) into dst, in its own part of the
 * LS (double buffering when two streams share an LS).
 */
static struct fc_sprog *invert_prog(uint64_t src, uint64_t dst, uint32_t len,
				    uint32_t chunk, unsigned int s,
				    unsigned int nstreams)
{
	struct fc_sprog *p = new_prog();
	uint32_t chunks = len / chunk, mine, off = s * chunk;

	mine = (chunks - s + nstreams - 1) / nstreams;
	assert_int_equal(len % chunk, 0);
	if (!mine)
		return p;
	assert_ok(fc_sprog_for(p, mine));
	assert_ok(fc_sprog_copy_in(p, off, src + off, chunk, nstreams * chunk));
	assert_ok(fc_sprog_run(p, FC_KERN_INVERT, off, off, chunk / 4, 0));
	assert_ok(
		fc_sprog_copy_out(p, dst + off, nstreams * chunk, off, chunk));
	assert_ok(fc_sprog_end_for(p));
	return p;
}

static void start(uint32_t ls, uint32_t s, struct fc_sprog *p)
{
	assert_ok(fc_stream_start(dev, ls, s, p));
	fc_sprog_free(p);
}

static void fill_random_u32(uint32_t *v, size_t n)
{
	rnd_fill(v, n * 4);
}

static void check_inverted(const uint32_t *src, const uint32_t *got, size_t n,
			   const char *what)
{
	size_t i, bad = 0, first = 0;

	for (i = 0; i < n; i++) {
		if (got[i] != ~src[i]) {
			if (!bad++)
				first = i;
		}
	}
	if (bad)
		fail_msg(
			"%s: %zu of %zu elements wrong (lost writes), first at "
			"%zu: 0x%08x, want 0x%08x",
			what, bad, n, first, got[first], ~src[first]);
}

/* ---- geometry and placement ---- */

static void test_geometry(void **state)
{
	uint64_t a, b, c;
	uint32_t k;

	assert_int_equal(hi.pchannels, 32);
	assert_true(hi.num_ls >= 1 && hi.num_ls <= FC_MAX_LS);
	assert_true(hi.ls_size >= 4 * CHUNK);
	assert_true(hi.pch_bytes * hi.pchannels <= info.board_mem_size);
	for (k = FC_KERN_INVERT; k <= FC_KERN_SUM; k++)
		assert_true(hi.kernels & (1u << k));

	/* placement: inside the channel asked for, no overlap */
	assert_ok(fc_hbm_alloc(dev, 4096, 5, 0, &a));
	assert_ok(fc_hbm_alloc(dev, 4096, 5, 0, &b));
	assert_int_equal(FC_HBM_PCH_OF(a, hi.pch_bytes), 5);
	assert_int_equal(FC_HBM_PCH_OF(b + 4095, hi.pch_bytes), 5);
	assert_true(b >= a + 4096 || a >= b + 4096);
	assert_ok(fc_hbm_alloc(dev, hi.pch_bytes, 7, 0, &c));
	assert_int_equal(c, 7 * hi.pch_bytes);
	assert_rc(fc_hbm_alloc(dev, 1, 7, 0, &a), -ENOSPC);
	assert_rc(fc_hbm_alloc(dev, hi.pch_bytes + 1, 6, 0, &a), -E2BIG);
	assert_rc(fc_hbm_alloc(dev, 64, hi.pchannels, 0, &a), -EINVAL);
	assert_rc(fc_hbm_alloc(dev, 64, 1, 1, &a), -EINVAL);
	assert_rc(fc_hbm_alloc(dev, 0, 1, 0, &a), -EINVAL);
	assert_ok(fc_hbm_free(dev, c));
	assert_rc(fc_hbm_free(dev, c), -EINVAL);
	assert_ok(fc_hbm_free(dev, b));
	/* the second reservation's room is found again */
	assert_ok(fc_hbm_alloc(dev, 4096, 5, 0, &c));
	assert_int_equal(c, b);
	assert_ok(fc_hbm_free(dev, c));
	assert_ok(fc_hbm_free(dev, a));
	assert_ok(fc_kernel_lookup(dev, "invert", &k));
	assert_int_equal(k, FC_KERN_INVERT);
	assert_rc(fc_kernel_lookup(dev, "no-such-kernel", &k), -ENOSYS);
}

/* ---- encoding ---- */

static void test_encode_decode(void **state)
{
	struct fc_hw_sinsn code[FC_SPROG_MAX], again[FC_SPROG_MAX];
	struct fc_sprog *p = new_prog(), *q;
	size_t n, m, bad;

	assert_ok(fc_sprog_for(p, 3));
	assert_ok(fc_sprog_copy_in(p, 64, 0x1000, 256, 512));
	assert_ok(fc_sprog_run(p, FC_KERN_AXPY, 64, 1024, 64, 0x40000000));
	assert_ok(fc_sprog_signal(p, 2));
	assert_ok(fc_sprog_wait(p, 3));
	assert_ok(fc_sprog_copy_out(p, 0x9000, 512, 64, 256));
	assert_ok(fc_sprog_end_for(p));
	assert_ok(fc_sprog_encode(p, code, FC_SPROG_MAX, &n));
	assert_int_equal(n, 8);
	assert_int_equal(code[0].op, FC_SOP_LOOP);
	assert_int_equal(le32toh(code[0].len), 3);
	assert_int_equal(code[1].op, FC_SOP_COPY_IN);
	assert_int_equal(le64toh(code[1].hbm), 0x1000);
	assert_int_equal(le32toh(code[1].step), 512);
	assert_int_equal(le32toh(code[1].ls), 64);
	assert_int_equal(le32toh(code[1].len), 256);
	assert_int_equal(code[2].op, FC_SOP_RUN);
	assert_int_equal(le16toh(code[2].kernel), FC_KERN_AXPY);
	assert_int_equal(le32toh(code[2].ls2), 1024);
	assert_int_equal(le32toh(code[2].arg), 0x40000000);
	assert_int_equal(code[3].op, FC_SOP_SIGNAL);
	assert_int_equal(le32toh(code[3].len), 2);
	assert_int_equal(code[4].op, FC_SOP_WAIT);
	assert_int_equal(code[5].op, FC_SOP_COPY_OUT);
	assert_int_equal(code[6].op, FC_SOP_ENDLOOP);
	assert_int_equal(code[7].op, FC_SOP_END);
	assert_rc(fc_sprog_encode(p, code, 7, &m), -E2BIG);

	/* decode gives back the same program */
	assert_ok(fc_sprog_decode(code, n, &q, &bad));
	assert_ok(fc_sprog_encode(q, again, FC_SPROG_MAX, &m));
	assert_int_equal(m, n);
	assert_memory_equal(code, again, n * sizeof(code[0]));
	fc_sprog_free(q);

#define REJECT(i, field, val, at)                                         \
	do {                                                              \
		memcpy(again, code, sizeof(code));                        \
		again[i].field = (val);                                   \
		assert_rc(fc_sprog_decode(again, n, &q, &bad), -ENOEXEC); \
		assert_int_equal(bad, at);                                \
	} while (0)
	REJECT(2, op, FC_SOP_MAX + 1, 2); /* unknown opcode */
	REJECT(2, op, 0xff, 2);
	REJECT(1, flags, 1, 1); /* reserved fields */
	REJECT(1, arg, 1, 1);
	REJECT(3, hbm, 1, 3);
	REJECT(3, len, htole32(FC_LS_EVENTS), 3); /* event */
	REJECT(0, len, 0, 0);			  /* LOOP of 0 */
	REJECT(7, len, htole32(1), 7);		  /* END with a field */
	/* a loop without end: found at the END */
	REJECT(6, op, FC_SOP_SIGNAL, 7);
	/* END inside a loop */
	memcpy(again, code, sizeof(code));
	memset(&again[4], 0, sizeof(again[4]));
	assert_rc(fc_sprog_decode(again, n, &q, &bad), -ENOEXEC);
	assert_int_equal(bad, 4);
	/* END not last */
	memcpy(again, code + 3, 2 * sizeof(code[0])); /* SIGNAL, WAIT */
	memcpy(again + 2, code + 7, sizeof(code[0])); /* END */
	memcpy(again + 3, code + 3, sizeof(code[0])); /* SIGNAL */
	memcpy(again + 4, code + 7, sizeof(code[0])); /* END */
	assert_rc(fc_sprog_decode(again, 5, &q, &bad), -ENOEXEC);
	assert_int_equal(bad, 2);
	assert_ok(fc_sprog_decode(again, 3, &q, &bad));
	fc_sprog_free(q);
	/* END missing, ENDLOOP with no LOOP */
	memcpy(again, code, sizeof(code));
	assert_rc(fc_sprog_decode(again, n - 1, &q, &bad), -ENOEXEC);
	assert_int_equal(bad, n - 2);
	again[0].op = FC_SOP_SIGNAL;
	again[0].len = 0;
	assert_rc(fc_sprog_decode(again, n, &q, &bad), -ENOEXEC);
	assert_int_equal(bad, 6);
	/* too long, too short */
	assert_rc(fc_sprog_decode(code, 0, &q, &bad), -E2BIG);
	assert_rc(fc_sprog_decode(code, FC_SPROG_MAX + 1, &q, &bad), -E2BIG);
	fc_sprog_free(p);
}

static void test_record_limits(void **state)
{
	struct fc_hw_sinsn code[FC_SPROG_MAX];
	struct fc_sprog *p = new_prog();
	unsigned int i;
	size_t n;

	assert_rc(fc_sprog_for(p, 0), -ENOEXEC);
	assert_rc(fc_sprog_end_for(p), -ENOEXEC);
	assert_rc(fc_sprog_wait(p, FC_LS_EVENTS), -EINVAL);
	assert_rc(fc_sprog_signal(p, FC_LS_EVENTS), -EINVAL);
	assert_rc(fc_sprog_run(p, 0, 0, 0, 1, 0), -EINVAL);
	assert_rc(fc_sprog_run(p, FC_KERN_INVERT, 0, 0, 0, 0), -EINVAL);
	assert_rc(fc_sprog_copy_in(p, 0, 0, 0, 0), -EINVAL);
	for (i = 0; i < FC_SLOOP_DEPTH; i++)
		assert_ok(fc_sprog_for(p, 2));
	assert_rc(fc_sprog_for(p, 2), -ENOEXEC); /* too deep */
	assert_rc(fc_sprog_encode(p, code, FC_SPROG_MAX, &n), -ENOEXEC);
	for (i = 0; i < FC_SLOOP_DEPTH; i++)
		assert_ok(fc_sprog_end_for(p));
	/* room for FC_SPROG_MAX - 1 and the END */
	while (fc_sprog_signal(p, 0) == 0)
		;
	assert_rc(fc_sprog_signal(p, 0), -E2BIG);
	assert_ok(fc_sprog_encode(p, code, FC_SPROG_MAX, &n));
	assert_int_equal(n, FC_SPROG_MAX);
	assert_rc(fc_sprog_encode(NULL, code, FC_SPROG_MAX, &n), -EINVAL);
	fc_sprog_free(p);
}

/* The library refuses before anything reaches the board. */
static void test_board_check(void **state)
{
	struct fc_sprog *p;
	uint64_t mem = info.board_mem_size;
	size_t bad;

	p = new_prog();
	assert_ok(fc_sprog_copy_in(p, hi.ls_size - 60, 0, 64, 0));
	assert_rc(fc_stream_check(dev, p, &bad), -EFAULT); /* past the LS */
	assert_int_equal(bad, 0);
	assert_rc(fc_stream_start(dev, 0, 0, p), -EFAULT);
	fc_sprog_free(p);

	p = new_prog();
	assert_ok(fc_sprog_copy_in(p, 2, 0, 64, 0)); /* unaligned LS */
	assert_rc(fc_stream_check(dev, p, &bad), -EFAULT);
	fc_sprog_free(p);

	p = new_prog();
	assert_ok(fc_sprog_signal(p, 0));
	assert_ok(fc_sprog_copy_out(p, mem - 32, 0, 0, 64)); /* past HBM */
	assert_rc(fc_stream_check(dev, p, &bad), -EFAULT);
	assert_int_equal(bad, 1);
	fc_sprog_free(p);

	/* the last iteration of a loop past HBM; the first ones fit */
	p = new_prog();
	assert_ok(fc_sprog_for(p, 5));
	assert_ok(fc_sprog_copy_in(p, 0, mem - 4 * 4096, 4096, 4096));
	assert_ok(fc_sprog_end_for(p));
	assert_rc(fc_stream_check(dev, p, &bad), -EFAULT);
	assert_int_equal(bad, 1);
	fc_sprog_free(p);
	p = new_prog();
	assert_ok(fc_sprog_for(p, 4));
	assert_ok(fc_sprog_copy_in(p, 0, mem - 4 * 4096, 4096, 4096));
	assert_ok(fc_sprog_end_for(p));
	assert_ok(fc_stream_check(dev, p, &bad));
	fc_sprog_free(p);

	/* a kernel the board lacks: a clear error at load time */
	p = new_prog();
	assert_ok(fc_sprog_run(p, FC_KERN_USER + 63, 0, 0, 1, 0));
	assert_rc(fc_stream_check(dev, p, &bad), -ENOSYS);
	assert_rc(fc_stream_start(dev, 0, 0, p), -ENOSYS);
	fc_sprog_free(p);
	p = new_prog();
	assert_ok(fc_sprog_run(p, 31, 0, 0, 1, 0));
	assert_rc(fc_stream_check(dev, p, &bad), -ENOSYS);
	fc_sprog_free(p);

	/* kernel operands past the LS */
	p = new_prog();
	assert_ok(fc_sprog_run(p, FC_KERN_INVERT, 0, 0, hi.ls_size / 4 + 1, 0));
	assert_rc(fc_stream_check(dev, p, &bad), -EFAULT);
	fc_sprog_free(p);

	p = new_prog();
	assert_rc(fc_stream_start(dev, hi.num_ls, 0, p), -EINVAL);
	assert_rc(fc_stream_start(dev, 0, FC_LS_STREAMS, p), -EINVAL);
	assert_rc(fc_stream_start(dev, 0, 0, NULL), -EINVAL);
	assert_rc(fc_stream_wait(dev, hi.num_ls, 0, 0), -EINVAL);
	fc_sprog_free(p);
}

/*
 * The board checks on its own: programs written straight into board
 * memory and started by the registers, past the library's checks.
 */
static uint32_t raw_run(uint64_t at, const struct fc_hw_sinsn *code,
			uint32_t nput, uint32_t n, uint32_t ls, uint32_t *index)
{
	uint32_t seq, v;
	unsigned int tries;

	if (nput)
		board_put(at, code, nput * sizeof(*code));
	assert_ok(fc_reg_read(dev, FC_LS_SREG(ls, 1, FC_LS_START), &seq));
	assert_ok(fc_reg_write(dev, FC_LS_SREG(ls, 1, FC_LS_PROG_LO),
			       (uint32_t)at));
	assert_ok(
		fc_reg_write(dev, FC_LS_SREG(ls, 1, FC_LS_PROG_HI), at >> 32));
	assert_ok(fc_reg_write(dev, FC_LS_SREG(ls, 1, FC_LS_PROG_LEN), n));
	assert_ok(fc_reg_write(dev, FC_LS_SREG(ls, 1, FC_LS_START), ++seq));
	for (tries = 0; tries < 5000; tries++) {
		assert_ok(fc_reg_read(dev, FC_LS_SREG(ls, 1, FC_LS_DONE_SEQ),
				      &v));
		if (v == seq)
			break;
		usleep(1000);
	}
	assert_int_equal(v, seq);
	assert_ok(fc_reg_read(dev, FC_LS_SREG(ls, 1, FC_LS_ERR_INDEX), index));
	assert_ok(fc_reg_read(dev, FC_LS_SREG(ls, 1, FC_LS_ERROR), &v));
	return v;
}

static void test_board_rejects(void **state)
{
	struct fc_hw_sinsn code[4];
	struct fc_stream_state st;
	struct fc_sprog *p;
	uint32_t ls = hi.num_ls - 1, idx;
	uint64_t at;

	assert_ok(fc_hbm_alloc(dev, 4096, FC_HBM_PCH_ANY, 0, &at));
	memset(code, 0, sizeof(code));
	code[0].op = FC_SOP_SIGNAL;
	code[1].op = FC_SOP_MAX + 1;
	code[2].op = FC_SOP_END;
	assert_int_equal(raw_run(at, code, 3, 3, ls, &idx), FC_LS_ERR_OP);
	assert_int_equal(idx, 1);
	assert_ok(fc_stream_query(dev, ls, 1, &st));
	assert_int_equal(st.status, FC_DMA_STATUS_ERROR);
	assert_int_equal(st.hw_error, FC_LS_ERR_OP);
	/* in error: the stream takes no program until its LS is reset */
	p = new_prog();
	assert_ok(fc_sprog_signal(p, 0));
	assert_rc(fc_stream_start(dev, ls, 1, p), -EBADFD);
	assert_ok(fc_stream_reset(dev, ls));
	assert_ok(fc_stream_query(dev, ls, 1, &st));
	assert_int_equal(st.status, FC_DMA_STATUS_IDLE);
	assert_int_equal(st.hw_error, FC_LS_ERR_NONE);

	code[1].op = FC_SOP_RUN; /* a kernel the board lacks */
	code[1].kernel = htole16(FC_KERN_USER + 62);
	code[1].len = htole32(1);
	assert_int_equal(raw_run(at, code, 3, 3, ls, &idx), FC_LS_ERR_KERNEL);
	assert_int_equal(idx, 1);
	assert_ok(fc_stream_reset(dev, ls));
	code[1].op = FC_SOP_LOOP; /* a loop without end */
	code[1].kernel = 0;
	assert_int_equal(raw_run(at, code, 3, 3, ls, &idx), FC_LS_ERR_LOOP);
	assert_ok(fc_stream_reset(dev, ls));
	code[1].op = FC_SOP_COPY_IN; /* past board memory */
	code[1].len = htole32(64);
	code[1].hbm = htole64(info.board_mem_size - 32);
	assert_int_equal(raw_run(at, code, 3, 3, ls, &idx), FC_LS_ERR_HBM_ADDR);
	assert_ok(fc_stream_reset(dev, ls));
	code[1].hbm = 0;
	code[1].ls = htole32(hi.ls_size - 32); /* past the LS */
	assert_int_equal(raw_run(at, code, 3, 3, ls, &idx), FC_LS_ERR_LS_ADDR);
	assert_ok(fc_stream_reset(dev, ls));
	assert_int_equal(raw_run(at, code, 0, 0, ls, &idx), FC_LS_ERR_LEN);
	assert_ok(fc_stream_reset(dev, ls));
	assert_int_equal(raw_run(at, code, 0, FC_SPROG_MAX + 1, ls, &idx),
			 FC_LS_ERR_LEN);
	assert_ok(fc_stream_reset(dev, ls));
	/* one END: at an unaligned address, at the end, past board memory */
	code[0].op = FC_SOP_END;
	assert_int_equal(raw_run(at + 4, code, 1, 1, ls, &idx),
			 FC_LS_ERR_ALIGN);
	assert_ok(fc_stream_reset(dev, ls));
	assert_int_equal(raw_run(info.board_mem_size - 4096, code, 1, 1, ls,
				 &idx),
			 FC_LS_ERR_NONE);
	assert_int_equal(raw_run(info.board_mem_size - 32, code, 0, 2, ls,
				 &idx),
			 FC_LS_ERR_FETCH);
	assert_ok(fc_stream_reset(dev, ls));
	assert_int_equal(raw_run(info.board_mem_size, code, 0, 1, ls, &idx),
			 FC_LS_ERR_FETCH);
	assert_ok(fc_stream_reset(dev, ls));

	/* the LS works after the resets */
	assert_ok(fc_stream_start(dev, ls, 1, p));
	assert_ok(fc_stream_wait(dev, ls, 1, RUN_MS));
	fc_sprog_free(p);
	assert_ok(fc_hbm_free(dev, at));
}

/* ---- running ---- */

/* The paper's benchmark, many times over, on one LS with 2 streams. */
static void test_double_buffered_invert(void **state)
{
	uint32_t *src = malloc(BUF_LEN), *got = malloc(BUF_LEN);
	uint64_t a, b;
	unsigned int run, s, ls;
	char what[64];

	assert_non_null(src);
	assert_non_null(got);
	assert_ok(fc_hbm_alloc(dev, BUF_LEN, 0, 0, &a));
	assert_ok(fc_hbm_alloc(dev, BUF_LEN, 1, 0, &b));
	for (run = 0; run < 24; run++) {
		/* sizes from one chunk to the whole buffer */
		uint32_t len =
			CHUNK * (1 + (uint32_t)(rnd() % (BUF_LEN / CHUNK)));

		if (run == 0)
			len = CHUNK;
		if (run == 1)
			len = BUF_LEN;
		ls = run % hi.num_ls;
		fill_random_u32(src, len / 4);
		board_put(a, src, len);
		/* poison the destination: a write that never lands shows */
		memset(got, 0x5a, len);
		board_put(b, got, len);
		for (s = 0; s < FC_LS_STREAMS; s++)
			start(ls, s,
			      invert_prog(a, b, len, CHUNK, s, FC_LS_STREAMS));
		for (s = 0; s < FC_LS_STREAMS; s++)
			assert_ok(fc_stream_wait(dev, ls, s, RUN_MS));
		board_get(b, got, len);
		snprintf(what, sizeof(what), "run %u, %u bytes, LS %u", run,
			 len, ls);
		check_inverted(src, got, len / 4, what);
	}
	assert_ok(fc_hbm_free(dev, a));
	assert_ok(fc_hbm_free(dev, b));
	free(src);
	free(got);
}

/* Every LS's two streams at once, their data on all pseudo-channels. */
static void test_all_ls_all_channels(void **state)
{
	unsigned int n = hi.num_ls * FC_LS_STREAMS, i, p;
	uint32_t len = 4 * CHUNK;
	uint64_t *src = calloc(n, sizeof(*src)), *dst = calloc(n, sizeof(*dst));
	uint32_t *data = malloc((size_t)n * len), *got = malloc(len);
	uint32_t before[2 * FC_MAX_LS];
	struct fc_stream_state st;
	bool used[64] = { false };
	char what[64];

	assert_non_null(data);
	assert_non_null(got);
	for (i = 0; i < n; i++) {
		/* stream i reads channel i and writes channel i + 1 */
		assert_ok(fc_hbm_alloc(dev, len, i % hi.pchannels, 0, &src[i]));
		assert_ok(fc_hbm_alloc(dev, len, (i + 1) % hi.pchannels, 0,
				       &dst[i]));
		used[FC_HBM_PCH_OF(src[i], hi.pch_bytes)] = true;
		fill_random_u32(data + (size_t)i * len / 4, len / 4);
		board_put(src[i], data + (size_t)i * len / 4, len);
		assert_ok(fc_stream_query(dev, i / 2, i % 2, &st));
		before[i] = st.insns;
	}
	for (p = 0; p < hi.pchannels; p++)
		assert_true(used[p]);
	for (i = 0; i < n; i++) {
		struct fc_sprog *pr = new_prog();

		/* each stream inverts its own chunks in its LS half */
		assert_ok(fc_sprog_for(pr, len / CHUNK));
		assert_ok(fc_sprog_copy_in(pr, (i % 2) * CHUNK, src[i], CHUNK,
					   CHUNK));
		assert_ok(fc_sprog_run(pr, FC_KERN_INVERT, (i % 2) * CHUNK,
				       (i % 2) * CHUNK, CHUNK / 4, 0));
		assert_ok(fc_sprog_copy_out(pr, dst[i], CHUNK, (i % 2) * CHUNK,
					    CHUNK));
		assert_ok(fc_sprog_end_for(pr));
		start(i / 2, i % 2, pr);
	}
	for (i = 0; i < n; i++)
		assert_ok(fc_stream_wait(dev, i / 2, i % 2, RUN_MS));
	for (i = 0; i < n; i++) {
		board_get(dst[i], got, len);
		snprintf(what, sizeof(what), "LS %u stream %u", i / 2, i % 2);
		check_inverted(data + (size_t)i * len / 4, got, len / 4, what);
		/* LOOP, then 4 instructions per chunk but the last ENDLOOP, END */
		assert_ok(fc_stream_query(dev, i / 2, i % 2, &st));
		assert_int_equal(st.insns - before[i],
				 1 + 4 * (len / CHUNK) + 1);
		assert_ok(fc_hbm_free(dev, src[i]));
		assert_ok(fc_hbm_free(dev, dst[i]));
	}
	free(src);
	free(dst);
	free(data);
	free(got);
}

/* Order stamps a user kernel takes: when each stream began and ended. */
static uint32_t stamp_seq;
static uint32_t stamps[4 * FC_MAX_LS];

static int k_stamp(void *dst, const void *src, uint32_t n, uint32_t arg,
		   void *ctx)
{
	stamps[arg] = __atomic_add_fetch(&stamp_seq, 1, __ATOMIC_SEQ_CST);
	return 0;
}

/* Every stream of every LS is running before any of them ends. */
static void test_all_busy_at_once(void **state)
{
	unsigned int n = hi.num_ls * FC_LS_STREAMS, i;
	uint32_t stamp, first_end = UINT32_MAX, last_begin = 0;
	uint64_t area;
	int ret;

	if (!(info.caps & FC_CAP_EMULATED) || strcmp(info.backend, "emu"))
		skip_because("user kernels need an emulated board in process");
	ret = fc_kernel_register(dev, "stamp", k_stamp, NULL, &stamp);
	if (ret == -EEXIST)
		assert_ok(fc_kernel_lookup(dev, "stamp", &stamp));
	else
		assert_ok(ret);
	assert_ok(fc_hbm_alloc(dev, 4 * CHUNK, FC_HBM_PCH_ANY, 0, &area));
	memset(stamps, 0, sizeof(stamps));
	for (i = 0; i < n; i++) {
		struct fc_sprog *p = new_prog();

		/*
		 * Long enough that every stream gets its first slice in,
		 * even when the starting thread waits for a core behind the
		 * workers (4096 rounds were once too few on 2 busy cores).
		 */
		assert_ok(fc_sprog_run(p, stamp, 0, 0, 1, 2 * i));
		assert_ok(fc_sprog_for(p, 16384));
		assert_ok(fc_sprog_copy_in(p, (i % 2) * 4 * CHUNK, area,
					   4 * CHUNK, 0));
		assert_ok(fc_sprog_end_for(p));
		assert_ok(fc_sprog_run(p, stamp, 0, 0, 1, 2 * i + 1));
		start(i / 2, i % 2, p);
	}
	for (i = 0; i < n; i++)
		assert_ok(fc_stream_wait(dev, i / 2, i % 2, RUN_MS));
	for (i = 0; i < n; i++) {
		assert_true(stamps[2 * i] && stamps[2 * i + 1]);
		if (stamps[2 * i] > last_begin)
			last_begin = stamps[2 * i];
		if (stamps[2 * i + 1] < first_end)
			first_end = stamps[2 * i + 1];
	}
	if (last_begin > first_end)
		fail_msg("a stream ended (stamp %u) before the last began (%u)",
			 first_end, last_begin);
	assert_ok(fc_hbm_free(dev, area));
}

/*
 * A pipeline between the streams of one LS: stream 0 brings chunks in,
 * stream 1 inverts and writes them out, each waiting for the other. Two
 * LS buffers alternate, so the semaphores alone keep the data right.
 */
static void test_wait_signal_pipeline(void **state)
{
	uint32_t chunks = 64, len = chunks * CHUNK;
	uint32_t *src = malloc(len), *got = malloc(len);
	struct fc_sprog *p0 = new_prog(), *p1 = new_prog();
	uint64_t a, b;
	uint32_t ls = 0;

	assert_ok(fc_hbm_alloc(dev, len, 2, 0, &a));
	assert_ok(fc_hbm_alloc(dev, len, 3, 0, &b));
	fill_random_u32(src, len / 4);
	board_put(a, src, len);
	/* event 0: buffer full; event 1: buffer free (two to start with) */
	assert_ok(fc_sprog_signal(p1, 1));
	assert_ok(fc_sprog_signal(p1, 1));
	assert_ok(fc_sprog_for(p0, chunks / 2));
	assert_ok(fc_sprog_wait(p0, 1));
	assert_ok(fc_sprog_copy_in(p0, 0, a, CHUNK, 2 * CHUNK));
	assert_ok(fc_sprog_signal(p0, 0));
	assert_ok(fc_sprog_wait(p0, 1));
	assert_ok(fc_sprog_copy_in(p0, CHUNK, a + CHUNK, CHUNK, 2 * CHUNK));
	assert_ok(fc_sprog_signal(p0, 0));
	assert_ok(fc_sprog_end_for(p0));
	assert_ok(fc_sprog_for(p1, chunks / 2));
	assert_ok(fc_sprog_wait(p1, 0));
	assert_ok(fc_sprog_run(p1, FC_KERN_INVERT, 2 * CHUNK, 0, CHUNK / 4, 0));
	assert_ok(fc_sprog_signal(p1, 1));
	assert_ok(fc_sprog_copy_out(p1, b, 2 * CHUNK, 2 * CHUNK, CHUNK));
	assert_ok(fc_sprog_wait(p1, 0));
	assert_ok(fc_sprog_run(p1, FC_KERN_INVERT, 3 * CHUNK, CHUNK, CHUNK / 4,
			       0));
	assert_ok(fc_sprog_signal(p1, 1));
	assert_ok(
		fc_sprog_copy_out(p1, b + CHUNK, 2 * CHUNK, 3 * CHUNK, CHUNK));
	assert_ok(fc_sprog_end_for(p1));
	/* the consumer first: it waits for the producer's first chunk */
	start(ls, 1, p1);
	start(ls, 0, p0);
	assert_ok(fc_stream_wait(dev, ls, 0, RUN_MS));
	assert_ok(fc_stream_wait(dev, ls, 1, RUN_MS));
	board_get(b, got, len);
	check_inverted(src, got, len / 4, "pipeline");
	/* the two spare "free" events are left: reset clears them */
	assert_ok(fc_stream_reset(dev, ls));
	assert_ok(fc_hbm_free(dev, a));
	assert_ok(fc_hbm_free(dev, b));
	free(src);
	free(got);
}

static float f32_of(uint32_t u)
{
	float f;

	memcpy(&f, &u, 4);
	return f;
}

static uint32_t u32_of(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

/* One kernel on n floats x (LS 0) and y (LS CHUNK): y is the result. */
static void run_kernel(uint32_t kernel, uint32_t arg, const float *x,
		       const float *y, float *out, uint32_t n)
{
	uint64_t area;
	struct fc_sprog *p = new_prog();

	assert_ok(fc_hbm_alloc(dev, 2 * CHUNK, FC_HBM_PCH_ANY, 0, &area));
	board_put(area, x, n * 4);
	board_put(area + CHUNK, y, n * 4);
	assert_ok(fc_sprog_copy_in(p, 0, area, n * 4, 0));
	assert_ok(fc_sprog_copy_in(p, CHUNK, area + CHUNK, n * 4, 0));
	assert_ok(fc_sprog_run(p, kernel, CHUNK, 0, n, arg));
	assert_ok(fc_sprog_copy_out(p, area + CHUNK, 0, CHUNK, n * 4));
	start(1 % hi.num_ls, 0, p);
	assert_ok(fc_stream_wait(dev, 1 % hi.num_ls, 0, RUN_MS));
	board_get(area + CHUNK, out, n * 4);
	assert_ok(fc_hbm_free(dev, area));
}

static void test_builtin_kernels(void **state)
{
	uint32_t n = CHUNK / 4 - 3, i; /* not a whole number of vectors */
	float *x = malloc(CHUNK), *y = malloc(CHUNK), *out = malloc(CHUNK);
	float a = 2.5f, sum = 0;
	volatile float want;

	for (i = 0; i < n; i++) {
		x[i] = (float)(rnd() % 2001) / 8 - 125;
		y[i] = (float)(rnd() % 2001) / 16 - 62;
	}
	run_kernel(FC_KERN_ADD, 0, x, y, out, n);
	for (i = 0; i < n; i++)
		assert_true(out[i] == x[i] + y[i]);
	run_kernel(FC_KERN_SCALE, u32_of(a), x, y, out, n);
	for (i = 0; i < n; i++)
		assert_true(out[i] == a * x[i]);
	run_kernel(FC_KERN_AXPY, u32_of(a), x, y, out, n);
	for (i = 0; i < n; i++) {
		want = a * x[i];
		want = want + y[i];
		assert_true(fabsf(out[i] - want) <= 1e-6f * fabsf(want));
	}
	run_kernel(FC_KERN_SUM, 0, x, y, out, n);
	for (i = 0; i < n; i++)
		sum += x[i];
	assert_true(out[0] == sum);
	assert_true(out[1] == y[1]); /* only dst[0] is written */
	assert_true(f32_of(u32_of(a)) == a);
	free(x);
	free(y);
	free(out);
}

static int k_xor(void *dst, const void *src, uint32_t n, uint32_t arg,
		 void *ctx)
{
	uint32_t *d = dst, i;
	const uint32_t *s = src;

	(*(unsigned int *)ctx)++;
	for (i = 0; i < n; i++)
		d[i] = s[i] ^ arg;
	return 0;
}

static int k_fail(void *dst, const void *src, uint32_t n, uint32_t arg,
		  void *ctx)
{
	return -1;
}

/* C functions as kernels, by name; a failing one; the LS afterwards. */
static void test_user_kernels(void **state)
{
	static unsigned int calls;
	uint32_t n = CHUNK / 4, xor_id, fail_id, id, i;
	uint32_t *x = malloc(CHUNK), *out = malloc(CHUNK);
	struct fc_stream_state st;
	struct fc_sprog *p;
	uint64_t area;
	int ret;

	if (!(info.caps & FC_CAP_EMULATED) || strcmp(info.backend, "emu")) {
		assert_rc(fc_kernel_register(dev, "xor", k_xor, &calls, &id),
			  -EOPNOTSUPP);
		skip_because("user kernels need an emulated board in process");
	}
	ret = fc_kernel_register(dev, "xor", k_xor, &calls, &xor_id);
	assert_ok(ret);
	assert_rc(fc_kernel_register(dev, "xor", k_xor, &calls, &id), -EEXIST);
	assert_rc(fc_kernel_register(dev, "invert", k_xor, &calls, &id),
		  -EEXIST);
	assert_rc(fc_kernel_register(dev, "", k_xor, &calls, &id), -EINVAL);
	assert_ok(fc_kernel_register(dev, "fail", k_fail, NULL, &fail_id));
	assert_ok(fc_kernel_lookup(dev, "xor", &id));
	assert_int_equal(id, xor_id);
	assert_true(xor_id >= FC_KERN_USER);

	assert_ok(fc_hbm_alloc(dev, CHUNK, FC_HBM_PCH_ANY, 0, &area));
	fill_random_u32(x, n);
	board_put(area, x, CHUNK);
	p = new_prog();
	assert_ok(fc_sprog_copy_in(p, 0, area, CHUNK, 0));
	assert_ok(fc_sprog_run(p, xor_id, 0, 0, n, 0xdeadbeef));
	assert_ok(fc_sprog_copy_out(p, area, 0, 0, CHUNK));
	start(0, 0, p);
	assert_ok(fc_stream_wait(dev, 0, 0, RUN_MS));
	board_get(area, out, CHUNK);
	for (i = 0; i < n; i++)
		assert_int_equal(out[i], x[i] ^ 0xdeadbeef);
	assert_int_equal(calls, 1);

	p = new_prog();
	assert_ok(fc_sprog_signal(p, 0));
	assert_ok(fc_sprog_run(p, fail_id, 0, 0, 1, 0));
	assert_ok(fc_sprog_signal(p, 0));
	start(0, 0, p);
	assert_rc(fc_stream_wait(dev, 0, 0, RUN_MS), -EIO);
	assert_ok(fc_stream_query(dev, 0, 0, &st));
	assert_int_equal(st.status, FC_DMA_STATUS_ERROR);
	assert_int_equal(st.hw_error, FC_LS_ERR_KFAIL);
	assert_int_equal(st.hw_index, 1);
	assert_ok(fc_stream_reset(dev, 0));
	p = new_prog();
	assert_ok(fc_sprog_run(p, xor_id, 0, 0, n, 0));
	start(0, 0, p);
	assert_ok(fc_stream_wait(dev, 0, 0, RUN_MS));
	assert_int_equal(calls, 2);
	assert_ok(fc_hbm_free(dev, area));
	free(x);
	free(out);
}

/* A run that never ends (a WAIT nobody signals), reset; then good runs. */
static void test_hung_stream_reset(void **state)
{
	uint32_t ls = hi.num_ls > 2 ? 2 : 0, len = 8 * CHUNK;
	uint32_t *src = malloc(len), *got = malloc(len);
	struct fc_stream_state st;
	struct fc_sprog *p = new_prog();
	uint64_t a, b;
	unsigned int s;

	assert_ok(fc_sprog_wait(p, 3));
	start(ls, 0, p);
	assert_rc(fc_stream_wait(dev, ls, 0, 50), -ETIMEDOUT);
	assert_ok(fc_stream_query(dev, ls, 0, &st));
	assert_int_equal(st.status, FC_DMA_STATUS_BUSY);
	p = new_prog();
	assert_ok(fc_sprog_signal(p, 0));
	assert_rc(fc_stream_start(dev, ls, 0, p), -EBUSY);
	fc_sprog_free(p);
	assert_ok(fc_stream_reset(dev, ls));
	assert_rc(fc_stream_wait(dev, ls, 0, RUN_MS), -ECANCELED);
	assert_ok(fc_stream_query(dev, ls, 0, &st));
	assert_int_equal(st.status, FC_DMA_STATUS_IDLE);

	assert_ok(fc_hbm_alloc(dev, len, FC_HBM_PCH_ANY, 0, &a));
	assert_ok(fc_hbm_alloc(dev, len, FC_HBM_PCH_ANY, 0, &b));
	fill_random_u32(src, len / 4);
	board_put(a, src, len);
	for (s = 0; s < FC_LS_STREAMS; s++)
		start(ls, s, invert_prog(a, b, len, CHUNK, s, FC_LS_STREAMS));
	for (s = 0; s < FC_LS_STREAMS; s++)
		assert_ok(fc_stream_wait(dev, ls, s, RUN_MS));
	board_get(b, got, len);
	check_inverted(src, got, len / 4, "after reset");
	assert_ok(fc_hbm_free(dev, a));
	assert_ok(fc_hbm_free(dev, b));
	free(src);
	free(got);
}

/* A board reset resets every LS as an LS reset does, without its ack. */
static void test_board_reset_resets_ls(void **state)
{
	uint32_t ls = hi.num_ls - 1, ack, lsack, v;
	struct fc_stream_state st;
	struct fc_sprog *p = new_prog();
	unsigned int tries;

	if (!(info.caps & FC_CAP_EMULATED) || strcmp(info.backend, "emu"))
		skip_because("resets the whole board: in process only");
	assert_ok(fc_sprog_wait(p, 1));
	start(ls, 1, p);
	assert_rc(fc_stream_wait(dev, ls, 1, 20), -ETIMEDOUT);
	assert_ok(fc_reg_read(dev, FC_LS_REG(ls, FC_LS_RESET_ACK), &lsack));
	assert_ok(fc_reg_read(dev, FC_REG_BOARD_RESET_ACK, &ack));
	assert_ok(fc_reg_write(dev, FC_REG_BOARD_RESET, ack + 1));
	for (tries = 0; tries < 1000; tries++) {
		assert_ok(fc_reg_read(dev, FC_REG_BOARD_RESET_ACK, &v));
		if (v == ack + 1)
			break;
		usleep(1000);
	}
	assert_int_equal(v, ack + 1);
	assert_ok(fc_stream_query(dev, ls, 1, &st));
	assert_int_equal(st.status, FC_DMA_STATUS_IDLE);
	assert_ok(fc_reg_read(dev, FC_LS_REG(ls, FC_LS_RESET_ACK), &v));
	assert_int_equal(v, lsack);
	/* the library learns of it from its own reset; then the LS works */
	assert_ok(fc_stream_reset(dev, ls));
	p = new_prog();
	assert_ok(fc_sprog_signal(p, 1));
	assert_ok(fc_sprog_wait(p, 1)); /* the old run's events are gone */
	start(ls, 1, p);
	assert_ok(fc_stream_wait(dev, ls, 1, RUN_MS));
}

static uint64_t cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
	       ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

/*
 * The LS cores never spin: with streams blocked in WAIT and others idle,
 * and while the host waits for them, the process uses (almost) no CPU.
 */
static void test_idle_costs_no_cpu(void **state)
{
	uint64_t before;
	unsigned int l;

	if (strcmp(info.backend, "emu"))
		skip_because("the board's cores run in another process");
	for (l = 0; l < hi.num_ls; l += 4) {
		struct fc_sprog *p = new_prog();

		assert_ok(fc_sprog_wait(p, 0));
		start(l, 0, p);
	}
	before = cpu_us();
	/* a wait that sleeps: the stream never ends */
	assert_rc(fc_stream_wait(dev, 0, 0, 300), -ETIMEDOUT);
	usleep(200000);
	/* 500 ms of wall time; a spinning thread would burn most of it */
	if (cpu_us() - before > 50000)
		fail_msg("%" PRIu64 " us of CPU in 500 ms of idle streams",
			 cpu_us() - before);
	for (l = 0; l < hi.num_ls; l += 4) {
		assert_ok(fc_stream_reset(dev, l));
		assert_rc(fc_stream_wait(dev, l, 0, RUN_MS), -ECANCELED);
	}
}

static int group_setup(void **state)
{
	/*
	 * A board behind the driver outlives the test programs, and an
	 * earlier one (the ioctl fuzzer: the local stores' registers need no
	 * privilege) may have left a stream in error: start from reset ones.
	 */
	for (uint32_t ls = 0; ls < hi.num_ls; ls++)
		if (fc_stream_reset(dev, ls))
			return -1;
	return harness_alloc(BUF_LEN, &hbuf_a, &hbuf_b);
}

static int group_teardown(void **state)
{
	return harness_close(hbuf_a, hbuf_b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_geometry),
		cmocka_unit_test(test_encode_decode),
		cmocka_unit_test(test_record_limits),
		cmocka_unit_test(test_board_check),
		cmocka_unit_test(test_board_rejects),
		cmocka_unit_test(test_double_buffered_invert),
		cmocka_unit_test(test_all_ls_all_channels),
		cmocka_unit_test(test_all_busy_at_once),
		cmocka_unit_test(test_wait_signal_pipeline),
		cmocka_unit_test(test_builtin_kernels),
		cmocka_unit_test(test_user_kernels),
		cmocka_unit_test(test_hung_stream_reset),
		cmocka_unit_test(test_idle_costs_no_cpu),
		cmocka_unit_test(test_board_reset_resets_ls),
	};
	int rc;

	/* line by line: a run killed by the timeout still shows how far it got */
	setvbuf(stdout, NULL, _IOLBF, 0);
	rc = harness_open("test_hbm_stream");
	if (rc)
		return rc;
	rc = fc_hbm_query(dev, &hi);
	if (rc == -EOPNOTSUPP) {
		printf("SKIP: board has no HBM streams (caps 0x%x)\n",
		       info.caps);
		fc_close(dev);
		return EXIT_SKIP;
	}
	if (rc) {
		printf("fc_hbm_query: %s\n", fc_strerror(rc));
		fc_close(dev);
		return 1;
	}
	printf("backend %s: %u pseudo-channels of %" PRIu64 " bytes, %u LS of "
	       "%u bytes, kernels 0x%x\n",
	       info.backend, hi.pchannels, hi.pch_bytes, hi.num_ls, hi.ls_size,
	       hi.kernels);
	if (hi.pch_bytes < 2 * BUF_LEN) {
		printf("SKIP: pseudo-channels below %u bytes\n", 2 * BUF_LEN);
		fc_close(dev);
		return EXIT_SKIP;
	}
	return harness_run(tests, group_setup, group_teardown);
}
