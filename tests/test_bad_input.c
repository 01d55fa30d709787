// SPDX-License-Identifier: MIT
/*
 * test_bad_input: every public call rejects bad input with the documented
 * -errno and leaves the board working: NULL arguments, bad device names,
 * bad lengths, chain sizes, flags, reserved fields, spaces, out-of-range
 * board and host addresses (with 64-bit wrap), double and busy frees,
 * register offsets, unknown tickets; on an emulated board, chains failed by
 * the FC_EMU_FAULT_DMA_ERROR knob (no data moved, engine recovers) and
 * stalled by FC_EMU_FAULT_DMA_STALL (timeout, reset, -ECANCELED); closing a
 * board with live buffers and a chain in flight.
 *
 * FPGACOMM_TEST_DEVICE names the board (default "emu:"), FPGACOMM_TEST_SEED
 * repeats a run, FPGACOMM_TEST_FILTER picks tests by name (cmocka pattern).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <fpgacomm/fpgacomm.h>
#include <fpgacomm/hw.h>

#include "chain_rule.h"
#include "harness.h"

#define HBUF_LEN (1u << 20)

static struct fc_mem *hbuf; /* fc_mem_alloc'd staging buffer */
static struct fc_mem *hbuf2;

/* ---- helpers ---- */

/* Either of two errors is acceptable. */
#define assert_rc2(expr, w1, w2)                                           \
	do {                                                               \
		int _rc = (expr);                                          \
		if (_rc != (w1) && _rc != (w2))                            \
			fail_msg("%s = %d (%s), expected %s or %s", #expr, \
				 _rc, fc_strerror(_rc), #w1, #w2);         \
	} while (0)

/* A transfer that is fine in every respect. */
static struct fc_xfer good(void)
{
	return xfer(fc_host(hbuf, 0), fc_board(4096), 64);
}

static uint8_t *hb(uint64_t off)
{
	return (uint8_t *)hbuf->addr + off;
}

static void board_write(uint64_t baddr, const void *p, uint64_t len)
{
	struct fc_xfer x = xfer(fc_host(hbuf2, 0), fc_board(baddr), len);

	memcpy(hbuf2->addr, p, len);
	assert_ok(fc_dma_run(dev, &x, 1, WAIT_MS));
}

static void board_read(uint64_t baddr, void *p, uint64_t len)
{
	struct fc_xfer x = xfer(fc_board(baddr), fc_host(hbuf2, 0), len);

	memset(hbuf2->addr, 0x5a, len);
	assert_ok(fc_dma_run(dev, &x, 1, WAIT_MS));
	memcpy(p, hbuf2->addr, len);
}

/*
 * After any rejected call the board must still move data: a round trip of
 * fresh random bytes through odd offsets and an odd board address.
 */
static void assert_device_works(void)
{
	const uint64_t len = 4097, baddr = 0x10001;
	struct fc_xfer x[2];

	rnd_fill(hb(3), len);
	memset(hb(8192 + 5), 0, len);
	x[0] = xfer(fc_host(hbuf, 3), fc_board(baddr), len);
	x[1] = xfer(fc_board(baddr), fc_host(hbuf, 8192 + 5), len);
	assert_ok(fc_dma_run(dev, x, 2, WAIT_MS));
	assert_same(hb(8192 + 5), hb(3), len, "round trip after an error");
}

static void need_emulator(void)
{
	uint32_t magic = 0;

	if (!is_emulated())
		skip_because(
			"needs the emulator's fault knobs (FC_CAP_EMULATED)");
	assert_ok(fc_reg_read(dev, FC_EMU_MAGIC, &magic));
	assert_int_equal(magic, FC_EMU_MAGIC_VALUE);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- tests ---- */

static int count_regs(const char *name, uint32_t off, void *arg)
{
	(*(unsigned int *)arg)++;
	return 0;
}

static void test_null_arguments(void **state)
{
	struct fc_xfer x = good();
	struct fc_dma_result res;
	struct fc_info inf;
	struct fc_mem *m = NULL;
	uint64_t t = 0;
	uint32_t v, off;
	unsigned int n = 0;
	char buf[64];

	rng_reset(__func__);
	assert_rc(fc_open(NULL, dev_name), -EINVAL);
	assert_rc(fc_close(NULL), -EINVAL);
	assert_rc(fc_query(NULL, &inf), -EINVAL);
	assert_rc(fc_query(dev, NULL), -EINVAL);

	assert_rc(fc_reg_read(NULL, FC_REG_ID, &v), -EINVAL);
	assert_rc(fc_reg_read(dev, FC_REG_ID, NULL), -EINVAL);
	assert_rc(fc_reg_write(NULL, FC_REG_SCRATCH, 1), -EINVAL);
	assert_rc(fc_reg_lookup(NULL, &off), -EINVAL);
	assert_rc(fc_reg_lookup("ID", NULL), -EINVAL);
	assert_rc(fc_reg_name(FC_REG_ID, NULL, 16), -EINVAL);
	assert_rc(fc_reg_foreach(NULL, NULL), -EINVAL);

	assert_rc(fc_mem_alloc(NULL, 4096, 0, &m), -EINVAL);
	assert_rc(fc_mem_alloc(dev, 4096, 0, NULL), -EINVAL);
	assert_rc(fc_mem_register(NULL, buf, sizeof(buf), 0, &m), -EINVAL);
	assert_rc(fc_mem_register(dev, NULL, 64, 0, &m), -EINVAL);
	assert_rc(fc_mem_register(dev, buf, sizeof(buf), 0, NULL), -EINVAL);
	assert_rc(fc_mem_free(NULL, hbuf), -EINVAL);
	assert_rc(fc_mem_free(dev, NULL), -EINVAL);

	assert_rc(fc_dma_submit(NULL, &x, 1, 0, &t), -EINVAL);
	assert_rc(fc_dma_submit(dev, NULL, 1, 0, &t), -EINVAL);
	assert_rc(fc_dma_submit(dev, &x, 1, 0, NULL), -EINVAL);
	assert_rc(fc_dma_run(NULL, &x, 1, WAIT_MS), -EINVAL);
	assert_rc(fc_dma_run(dev, NULL, 1, WAIT_MS), -EINVAL);

	/* a real ticket, so that only the NULL is wrong */
	assert_ok(fc_dma_submit(dev, &x, 1, 0, &t));
	assert_ok(fc_dma_wait(dev, t, WAIT_MS));
	assert_rc(fc_dma_wait(NULL, t, 0), -EINVAL);
	assert_rc(fc_dma_poll(NULL, t), -EINVAL);
	assert_rc(fc_dma_result(NULL, t, &res), -EINVAL);
	assert_rc(fc_dma_result(dev, t, NULL), -EINVAL);
	assert_rc(fc_dma_reset(NULL), -EINVAL);

	/* the calls that may take NULL-free arguments still work */
	assert_ok(fc_reg_foreach(count_regs, &n));
	assert_true(n > 0);
	assert_device_works();
}

static void test_strerror(void **state)
{
	static const int errs[] = {
		0,
		-EINVAL,
		-ENOENT,
		-E2BIG,
		-ERANGE,
		-EBUSY,
		-EAGAIN,
		-ETIMEDOUT,
		-ECANCELED,
		-EFAULT,
		-EHOSTUNREACH,
		-EPROTO,
		-ENODEV,
		-ENOMEM,
		-EINPROGRESS,
		EINVAL,
		ETIMEDOUT,
		-4095,
		-100000,
		100000,
		INT_MIN,
		INT_MAX,
		-1,
		1,
	};
	unsigned int i;

	for (i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		const char *s = fc_strerror(errs[i]);

		if (!s || !*s)
			fail_msg("fc_strerror(%d) is %s", errs[i],
				 s ? "empty" : "NULL");
	}
	/* a positive errno means the same as its negative */
	assert_string_equal(fc_strerror(EINVAL), fc_strerror(-EINVAL));
	assert_string_equal(fc_strerror(ETIMEDOUT), fc_strerror(-ETIMEDOUT));
	/* different errors are told apart */
	assert_string_not_equal(fc_strerror(-EINVAL), fc_strerror(-ERANGE));
	assert_string_not_equal(fc_strerror(-ENOENT), fc_strerror(-EBUSY));

	/*
	 * The text fits every call that returns the error, not DMA alone:
	 * a collective times out, a group is cancelled, an HBM allocation or
	 * a stream program is too large, a stream program's range is out of
	 * reach, a stream program is malformed.
	 */
	assert_null(strstr(fc_strerror(-ETIMEDOUT), "transfer"));
	assert_non_null(strstr(fc_strerror(-ECANCELED), "group"));
	assert_null(strstr(fc_strerror(-ECANCELED), "transfer"));
	assert_non_null(strstr(fc_strerror(-E2BIG), "HBM"));
	assert_non_null(strstr(fc_strerror(-E2BIG), "stream program"));
	assert_non_null(strstr(fc_strerror(-EFAULT), "stream program"));
	assert_non_null(
		strstr(fc_strerror(-ENOEXEC), "malformed stream program"));
	assert_non_null(strstr(fc_strerror(-ENOEXEC), "LOOP"));
	assert_non_null(strstr(fc_strerror(-EBADMSG), "peer"));
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static void test_open_bad_names(void **state)
{
	static const char *const names[] = {
		"",
		"bogus:",
		"bogus",
		"emu:x/99999",
		"emu:local/-1",
		"emu:local/64",
		"emu:local/1x",
		"/dev/nonexistent",
		"/dev/fpgacomm999",
	};
	/* exist, but are no board: any error will do ("the error of the
	 * underlying open"), as long as the open fails and leaks nothing */
	static const char *const not_boards[] = { "/dev/null", "/dev/zero" };
	int fds = count_fds();
	char longname[300];
	unsigned int i;
	struct fc_dev *d;
	int rc;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		d = NULL;
		rc = fc_open(&d, names[i]);
		if (rc != -EINVAL && rc != -ENOENT) {
			if (!rc)
				fc_close(d);
			fail_msg("fc_open(\"%s\") = %d (%s), expected -EINVAL "
				 "or -ENOENT",
				 names[i], rc, fc_strerror(rc));
		}
	}
	for (i = 0; i < sizeof(not_boards) / sizeof(not_boards[0]); i++) {
		d = NULL;
		rc = fc_open(&d, not_boards[i]);
		if (rc >= 0) {
			if (!rc)
				fc_close(d);
			fail_msg("fc_open(\"%s\") = %d", not_boards[i], rc);
		}
		print_message("fc_open(\"%s\") = %d (%s)\n", not_boards[i], rc,
			      fc_strerror(rc));
	}
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	memcpy(longname, "emu:", 4);
	d = NULL;
	rc = fc_open(&d, longname);
	if (rc >= 0) {
		fc_close(d);
		fail_msg("fc_open of a %zu-byte name succeeded",
			 strlen(longname));
	}
	/* failed opens leave no file descriptor behind */
	assert_int_equal(count_fds(), fds);
	assert_device_works();
}

static void test_bad_lengths(void **state)
{
	struct fc_xfer x[3];
	uint64_t t, big = info.max_xfer_len + 1;

	rng_reset(__func__);
	x[0] = good();
	x[0].len = 0;
	assert_rc(fc_dma_submit(dev, x, 1, 0, &t), -EINVAL);
	assert_rc(fc_dma_run(dev, x, 1, WAIT_MS), -EINVAL);

	/* a zero-length transfer in the middle spoils the whole chain */
	x[0] = good();
	x[1] = good();
	x[1].len = 0;
	x[2] = good();
	assert_rc(fc_dma_submit(dev, x, 3, 0, &t), -EINVAL);

	/*
	 * One byte over the limit. The length check comes first: such a
	 * transfer is malformed wherever it points.
	 */
	assert_true(info.max_xfer_len >= 1);
	assert_true(info.max_xfer_len <= FC_DESC_MAX_LEN);
	if (info.board_mem_size >= 2 * big) {
		/* both ends in range: only the length is wrong */
		x[0] = xfer(fc_board(0), fc_board(big), big);
	} else {
		x[0] = xfer(fc_board(0), fc_board(0), big);
		print_message("board memory smaller than max_xfer_len+1: "
			      "the oversized transfer is out of range too\n");
	}
	assert_rc(fc_dma_submit(dev, x, 1, 0, &t), -EINVAL);
	x[0] = good();
	x[0].len = big;
	assert_rc(fc_dma_submit(dev, x, 1, 0, &t), -EINVAL);
	x[0].len = UINT64_MAX;
	assert_rc(fc_dma_submit(dev, x, 1, 0, &t), -EINVAL);
	x[0].len = 1ull << 32; /* would truncate to 0 in a 32-bit field */
	assert_rc(fc_dma_submit(dev, x, 1, 0, &t), -EINVAL);
	assert_device_works();
}

static void test_chain_count(void **state)
{
	struct fc_xfer *x = calloc(FC_MAX_CHAIN + 1, sizeof(*x));
	unsigned int i;
	uint64_t t;

	rng_reset(__func__);
	assert_non_null(x);
	for (i = 0; i <= FC_MAX_CHAIN; i++)
		x[i] = xfer(fc_host(hbuf, i), fc_board(8192 + i), 1);
	assert_rc(fc_dma_submit(dev, x, 0, 0, &t), -E2BIG);
	assert_rc(fc_dma_submit(dev, x, FC_MAX_CHAIN + 1, 0, &t), -E2BIG);
	assert_rc(fc_dma_submit(dev, x, UINT_MAX, 0, &t), -E2BIG);
	assert_rc(fc_dma_run(dev, x, 0, WAIT_MS), -E2BIG);
	assert_rc(fc_dma_run(dev, x, FC_MAX_CHAIN + 1, WAIT_MS), -E2BIG);
	/* the limit itself is fine */
	assert_ok(fc_dma_run(dev, x, FC_MAX_CHAIN, WAIT_MS));
	free(x);
	assert_device_works();
}

static void test_flags_reserved_spaces(void **state)
{
	struct fc_xfer x;
	struct fc_mem *gone;
	uint64_t t;

	rng_reset(__func__);
#define REJECT(field, val)                                            \
	do {                                                          \
		x = good();                                           \
		x.field = (val);                                      \
		assert_rc(fc_dma_submit(dev, &x, 1, 0, &t), -EINVAL); \
	} while (0)
	REJECT(flags, 1);
	REJECT(flags, 0x80000000u);
	REJECT(reserved, 1);
	REJECT(reserved, 0xffffffffu);
	REJECT(src.reserved, 1);
	REJECT(dst.reserved, 0x100);
	REJECT(src.space, FC_SPACE_MAX + 1);
	REJECT(dst.space, FC_SPACE_MAX + 1);
	REJECT(src.space, 0xffffffffu);
	REJECT(dst.space, 0x80000000u);
	/* host space needs a buffer, the others must not name one */
	REJECT(src.mem, NULL);
	REJECT(dst.mem, hbuf);
#undef REJECT

	x = good();
	assert_rc(fc_dma_submit(dev, &x, 1, 1, &t), -EINVAL);
	assert_rc(fc_dma_submit(dev, &x, 1, 0x80000000u, &t), -EINVAL);
	assert_rc(fc_dma_submit(dev, &x, 1, ~0u, &t), -EINVAL);

	/* a buffer that has been freed is no buffer */
	assert_ok(fc_mem_alloc(dev, 4096, 0, &gone));
	assert_ok(fc_mem_free(dev, gone));
	x = xfer(fc_host(gone, 0), fc_board(0), 1);
	assert_rc(fc_dma_submit(dev, &x, 1, 0, &t), -EINVAL);
	x = xfer(fc_board(0), fc_host(gone, 0), 1);
	assert_rc(fc_dma_submit(dev, &x, 1, 0, &t), -EINVAL);
	assert_device_works();
}

/*
 * One bad descriptor anywhere rejects the chain: the good descriptors before
 * it do not run either.
 */
static void test_bad_last_descriptor(void **state)
{
	struct fc_xfer *x = calloc(FC_MAX_CHAIN, sizeof(*x));
	uint8_t before[512], after[512];
	const uint64_t b = 0x200000;
	unsigned int i;
	uint64_t t;

	rng_reset(__func__);
	assert_non_null(x);
	rnd_fill(before, sizeof(before));
	board_write(b, before, sizeof(before));
	rnd_fill(hb(0), sizeof(before));
	for (i = 0; i < FC_MAX_CHAIN; i++)
		x[i] = xfer(fc_host(hbuf, 0), fc_board(b), sizeof(before));

	x[FC_MAX_CHAIN - 1].len = 0;
	assert_rc(fc_dma_submit(dev, x, FC_MAX_CHAIN, 0, &t), -EINVAL);
	x[FC_MAX_CHAIN - 1] = x[0];
	x[FC_MAX_CHAIN - 1].dst.addr = info.board_mem_size;
	assert_rc(fc_dma_submit(dev, x, FC_MAX_CHAIN, 0, &t), -ERANGE);
	x[FC_MAX_CHAIN - 1] = x[0];
	x[FC_MAX_CHAIN - 1].reserved = 1;
	assert_rc(fc_dma_run(dev, x, FC_MAX_CHAIN, WAIT_MS), -EINVAL);

	board_read(b, after, sizeof(after));
	assert_same(after, before, sizeof(before),
		    "board memory after rejected chains");
	free(x);
	assert_device_works();
}

/* A chain-rule case's destination: node 63 (and 62) is routed nowhere. */
static struct fc_loc chain_dst(enum chain_dst d)
{
	struct fc_loc l = { 0 };

	chain_case_dst(d, 63, 62, &l.space, &l.addr);
	return l;
}

/*
 * The chain rule (fc_hw_chain_check()) on its own, then in fc_dma_submit():
 * a chain that breaks it is refused with -EINVAL before it reaches the
 * board; one that keeps it goes (the board, with no route to node 63,
 * ends it, and never for its flags).
 */
static void test_chain_rule(void **state)
{
	struct fc_hw_chain_step step[2];
	const struct chain_case *c;
	struct fc_xfer x[2];
	unsigned int i, k;
	int bad, rc;
	uint64_t t;

	rng_reset(__func__);
	for (i = 0; i < CHAIN_CASES; i++) {
		c = &chain_cases[i];
		for (k = 0; k < 2; k++) {
			x[k] = xfer(fc_host(hbuf, 0), chain_dst(c->dst[k]), 64);
			x[k].flags =
				(c->flags[k] & FC_DESC_F_MORE ? FC_XFER_F_MORE :
								0) |
				(c->flags[k] & FC_DESC_F_CTRL ? FC_XFER_F_CTRL :
								0);
			step[k] = (struct fc_hw_chain_step){
				.flags = c->flags[k],
				.dst_space = x[k].dst.space,
				.dst = x[k].dst.addr,
			};
		}
		bad = -1;
		if (fc_hw_chain_check(&step[0], &step[1]))
			bad = 0;
		else if (fc_hw_chain_check(&step[1], NULL))
			bad = 1;
		if (bad != c->bad)
			fail_msg("%s: fc_hw_chain_check refuses %d, not %d",
				 c->what, bad, c->bad);
		if (bad >= 0 &&
		    fc_hw_chain_check(&step[bad], bad ? NULL : &step[1]) !=
			    FC_DMA_ERR_FLAGS)
			fail_msg("%s: not FC_DMA_ERR_FLAGS", c->what);

		rc = fc_dma_submit(dev, x, 2, 0, &t);
		if (c->bad >= 0) {
			if (rc != -EINVAL)
				fail_msg("%s: submit %d, not -EINVAL", c->what,
					 rc);
			continue;
		}
		/* The ioctl ABI has no control messages yet. */
		if (rc == -EOPNOTSUPP && !strncmp(dev_name, "/dev/", 5) &&
		    (c->flags[0] | c->flags[1]) & FC_DESC_F_CTRL)
			continue;
		if (rc)
			fail_msg("%s: submit %d", c->what, rc);
		rc = fc_dma_wait(dev, t, WAIT_MS);
		if (rc == -EINVAL || rc == -ETIMEDOUT)
			fail_msg("%s: the chain ended with %d", c->what, rc);
	}
	assert_device_works();
}

static void test_board_range(void **state)
{
	const uint64_t size = info.board_mem_size;
	static const struct {
		uint64_t addr, len;
	} bad[] = {
		{ 0, 0 }, /* filled in below: size - 1, 2 */
		{ 0, 0 }, /* size, 1 */
		{ 0, 0 }, /* size + 4096, 1 */
		{ UINT64_MAX, 1 },
		{ UINT64_MAX - 1, 4 }, /* addr + len wraps to 2 */
		{ 0ull - 4096, 8192 }, /* wraps to 4096 */
		{ 1ull << 63, 1 },
		{ 1ull << 40, 1 },
	};
	uint64_t addr, len;
	struct fc_xfer x;
	unsigned int i;
	uint64_t t;

	rng_reset(__func__);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		addr = bad[i].addr;
		len = bad[i].len;
		if (i == 0) {
			addr = size - 1;
			len = 2;
		} else if (i == 1) {
			addr = size;
			len = 1;
		} else if (i == 2) {
			addr = size + 4096;
			len = 1;
		}
		x = xfer(fc_host(hbuf, 0), fc_board(addr), len);
		if (fc_dma_submit(dev, &x, 1, 0, &t) != -ERANGE)
			fail_msg("host -> board 0x%" PRIx64 " len %" PRIu64
				 " (board size 0x%" PRIx64 ") not -ERANGE",
				 addr, len, size);
		x = xfer(fc_board(addr), fc_host(hbuf, 0), len);
		if (fc_dma_submit(dev, &x, 1, 0, &t) != -ERANGE)
			fail_msg("board 0x%" PRIx64 " len %" PRIu64
				 " -> host not -ERANGE",
				 addr, len);
		x = xfer(fc_board(0), fc_board(addr), len);
		assert_rc(fc_dma_submit(dev, &x, 1, 0, &t), -ERANGE);
		x = xfer(fc_board(addr), fc_board(0), len);
		assert_rc(fc_dma_submit(dev, &x, 1, 0, &t), -ERANGE);
	}
	/* the last bytes themselves are in range */
	x = xfer(fc_host(hbuf, 0), fc_board(size - 1), 1);
	assert_ok(fc_dma_run(dev, &x, 1, WAIT_MS));
	x = xfer(fc_board(size - 4), fc_host(hbuf, 0), 4);
	assert_ok(fc_dma_run(dev, &x, 1, WAIT_MS));
	assert_device_works();
}

static void check_host_range(struct fc_mem *m)
{
	const uint64_t len = m->len;
	static const uint64_t wrap[][2] = {
		{ UINT64_MAX, 2 },
		{ UINT64_MAX - 1, 4 },
		{ 0ull - 4096, 8192 },
		{ 1ull << 63, 1 },
	};
	struct fc_xfer x;
	unsigned int i;
	uint64_t t;

	x = xfer(fc_host(m, len), fc_board(0), 1);
	assert_rc(fc_dma_submit(dev, &x, 1, 0, &t), -ERANGE);
	x = xfer(fc_host(m, len - 1), fc_board(0), 2);
	assert_rc(fc_dma_submit(dev, &x, 1, 0, &t), -ERANGE);
	x = xfer(fc_host(m, 0), fc_board(0), len + 1);
	assert_rc(fc_dma_submit(dev, &x, 1, 0, &t), -ERANGE);
	x = xfer(fc_board(0), fc_host(m, len), 1);
	assert_rc(fc_dma_submit(dev, &x, 1, 0, &t), -ERANGE);
	x = xfer(fc_board(0), fc_host(m, 1), len);
	assert_rc(fc_dma_submit(dev, &x, 1, 0, &t), -ERANGE);
	for (i = 0; i < sizeof(wrap) / sizeof(wrap[0]); i++) {
		x = xfer(fc_host(m, wrap[i][0]), fc_board(0), wrap[i][1]);
		assert_rc(fc_dma_submit(dev, &x, 1, 0, &t), -ERANGE);
		x = xfer(fc_board(0), fc_host(m, wrap[i][0]), wrap[i][1]);
		assert_rc(fc_dma_submit(dev, &x, 1, 0, &t), -ERANGE);
	}
	/* the last byte and the whole buffer are in range */
	x = xfer(fc_host(m, len - 1), fc_board(0), 1);
	assert_ok(fc_dma_run(dev, &x, 1, WAIT_MS));
	x = xfer(fc_board(0), fc_host(m, 0), len);
	assert_ok(fc_dma_run(dev, &x, 1, WAIT_MS));
}

static void test_host_range(void **state)
{
	struct fc_mem *m;
	uint8_t *raw;

	rng_reset(__func__);
	check_host_range(hbuf);

	/* an odd-sized allocation: the limit is what was asked for */
	assert_ok(fc_mem_alloc(dev, 1001, 0, &m));
	assert_true(m->len >= 1001);
	check_host_range(m);
	assert_ok(fc_mem_free(dev, m));

	/* registered memory: exactly [addr, addr+len), not whole pages */
	raw = malloc(4096);
	assert_non_null(raw);
	assert_ok(fc_mem_register(dev, raw + 3, 1001, 0, &m));
	assert_int_equal(m->len, 1001);
	check_host_range(m);
	assert_ok(fc_mem_free(dev, m));
	free(raw);
	assert_device_works();
}

static void test_mem_bad_args(void **state)
{
	struct fc_mem *m = NULL;
	uint8_t buf[64];

	rng_reset(__func__);
	assert_rc(fc_mem_alloc(dev, 0, 0, &m), -EINVAL);
	assert_rc(fc_mem_alloc(dev, 4096, 1u << 7, &m), -EINVAL);
	assert_rc(fc_mem_alloc(dev, 4096, 0x80000000u, &m), -EINVAL);
	/* sizes that overflow when rounded up to pages */
	assert_rc2(fc_mem_alloc(dev, SIZE_MAX, 0, &m), -ENOMEM, -EINVAL);
	assert_rc2(fc_mem_alloc(dev, SIZE_MAX - 4094, 0, &m), -ENOMEM, -EINVAL);
	assert_rc(fc_mem_register(dev, buf, 0, 0, &m), -EINVAL);
	assert_rc(fc_mem_register(dev, buf, sizeof(buf), 0x80000000u, &m),
		  -EINVAL);
	/* a range that wraps the address space */
	{
		int rc = fc_mem_register(dev, buf, SIZE_MAX, 0, &m);

		if (rc != -EINVAL && rc != -EFAULT && rc != -ENOMEM)
			fail_msg("fc_mem_register(buf, SIZE_MAX) = %d (%s)", rc,
				 fc_strerror(rc));
	}
	/* a known flag is accepted */
	assert_ok(fc_mem_alloc(dev, 4096, FC_MEM_NUMA_ANY, &m));
	assert_ok(fc_mem_free(dev, m));
	assert_device_works();
}

/* Memory that is not mapped cannot be registered (the driver cannot pin it). */
static void test_register_unmapped(void **state)
{
	long page = sysconf(_SC_PAGESIZE);
	struct fc_mem *m = NULL;
	uint8_t *p;
	int rc;

	rng_reset(__func__);
	p = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	assert_int_equal(munmap(p + page, 2 * page), 0);

	/* wholly unmapped, then mapped at the start only */
	rc = fc_mem_register(dev, p + page, page, 0, &m);
	if (rc == 0)
		fc_mem_free(dev, m); /* never DMA into it */
	assert_rc(rc, -EFAULT);
	rc = fc_mem_register(dev, p + page - 10, 20, 0, &m);
	if (rc == 0)
		fc_mem_free(dev, m);
	assert_rc(rc, -EFAULT);
	/* the mapped page itself is fine */
	assert_ok(fc_mem_register(dev, p + 1, page - 1, 0, &m));
	assert_ok(fc_mem_free(dev, m));
	munmap(p, page);
	assert_device_works();
}

static void test_mem_double_free(void **state)
{
	struct fc_mem *m, *r;
	void *fake = calloc(1, 4096); /* large enough to read, not a buffer */
	uint8_t *raw = malloc(100);

	rng_reset(__func__);
	assert_non_null(fake);
	assert_non_null(raw);
	assert_ok(fc_mem_alloc(dev, 8192, 0, &m));
	assert_ok(fc_mem_free(dev, m));
	assert_rc(fc_mem_free(dev, m), -EINVAL);

	assert_ok(fc_mem_register(dev, raw, 100, 0, &r));
	assert_ok(fc_mem_free(dev, r));
	assert_rc(fc_mem_free(dev, r), -EINVAL);

	((struct fc_mem *)fake)->addr = hbuf->addr;
	((struct fc_mem *)fake)->len = hbuf->len;
	assert_rc(fc_mem_free(dev, fake), -EINVAL);
	free(fake);
	free(raw);

	/* the staging buffer survived all of that */
	assert_device_works();
}

static void test_mem_free_busy(void **state)
{
	struct fc_mem *m, *m2;
	struct fc_xfer x[2];
	uint8_t got[3000];
	uint64_t t1, t2;

	need_emulator();
	rng_reset(__func__);
	assert_ok(fc_mem_alloc(dev, 8192, 0, &m));
	assert_ok(fc_mem_alloc(dev, 8192, 0, &m2));
	rnd_fill(m->addr, 3000);

	/* the stall knob keeps the chains queued for sure */
	assert_ok(fc_reg_write(dev, FC_EMU_FAULT_DMA_STALL, 1));
	x[0] = xfer(fc_host(m, 1), fc_board(0x300001), 2999);
	assert_ok(fc_dma_submit(dev, x, 1, 0, &t1));
	/* m2 only as the destination of a chain queued behind t1 */
	x[0] = xfer(fc_board(0x300001), fc_board(0x400000), 2999);
	x[1] = xfer(fc_board(0x400000), fc_host(m2, 7), 2999);
	assert_ok(fc_dma_submit(dev, x, 2, 0, &t2));

	assert_rc(fc_mem_free(dev, m), -EBUSY);
	assert_rc(fc_mem_free(dev, m2), -EBUSY);

	assert_ok(fc_reg_write(dev, FC_EMU_FAULT_DMA_STALL, 0));
	assert_ok(fc_dma_wait(dev, t2, WAIT_MS));
	assert_ok(fc_dma_wait(dev, t1, 0));
	memcpy(got, (uint8_t *)m2->addr + 7, 2999);
	assert_same(got, (uint8_t *)m->addr + 1, 2999,
		    "data of chains that held buffers busy");
	assert_ok(fc_mem_free(dev, m));
	assert_ok(fc_mem_free(dev, m2));
	assert_device_works();
}

/* lib/core/dma.c, not public: a chain on a queue of the caller's choice. */
int fc__dma_submit_on(struct fc_dev *dev, unsigned int engine,
		      const struct fc_xfer *xfers, unsigned int n,
		      uint64_t *ticket);

/*
 * Chains on different engines end in any order: a buffer named by an
 * older chain still running on engine 0 (64 MiB, several polls' work)
 * stays busy after a newer, short chain naming it on engine 1 has ended.
 */
static void test_mem_free_busy_engines(void **state)
{
	const size_t big = 64u << 20, piece = 4u << 20;
	struct fc_xfer x[16];
	struct fc_mem *m;
	uint64_t t0, t1;
	unsigned int i;
	int ret;

	/* In process, where a poll moves the engines a step at a time. */
	need_emulator();
	if (strncmp(dev_name, "emu:", 4))
		skip_because(
			"steps the engines through polls: in process only");
	if (info.dma_engines < 2 || info.board_mem_size < big + 4096 ||
	    info.max_xfer_len < piece)
		skip();
	assert_ok(fc_mem_alloc(dev, big + 4096, 0, &m));
	for (i = 0; i < big / piece; i++)
		x[i] = xfer(fc_host(m, i * piece), fc_board(i * piece), piece);
	assert_ok(fc__dma_submit_on(dev, 0, x, big / piece, &t0));
	x[0] = xfer(fc_host(m, big), fc_board(big), 64);
	assert_ok(fc__dma_submit_on(dev, 1, x, 1, &t1));
	for (i = 0; i < 1000 && (ret = fc_dma_poll(dev, t1)) == -EINPROGRESS;
	     i++)
		;
	assert_ok(ret);
	assert_int_equal(fc_dma_poll(dev, t0), -EINPROGRESS);
	assert_rc(fc_mem_free(dev, m), -EBUSY);
	assert_ok(fc_dma_wait(dev, t0, WAIT_MS));
	assert_ok(fc_mem_free(dev, m));
	assert_device_works();
}

static void test_reg_offsets(void **state)
{
	static const uint32_t bad[] = {
		1,
		2,
		3,
		FC_REG_SCRATCH + 1,
		FC_REG_SCRATCH + 2,
		FC_REG_SCRATCH + 3,
		FC_BAR0_SIZE,
		FC_BAR0_SIZE + 4,
		FC_BAR0_SIZE - 1,
		FC_BAR0_SIZE - 2,
		0x7ffffffcu,
		0xfffffffcu,
		0xffffffffu,
	};
	uint32_t v, off;
	unsigned int i;
	char name[64];

	rng_reset(__func__);
	assert_ok(fc_reg_write(dev, FC_REG_SCRATCH, 0x600dcafe));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 0x12345678;
		if (fc_reg_read(dev, bad[i], &v) != -EINVAL)
			fail_msg("fc_reg_read(0x%x) not -EINVAL", bad[i]);
		if (fc_reg_write(dev, bad[i], 0xbad0bad0u) != -EINVAL)
			fail_msg("fc_reg_write(0x%x) not -EINVAL", bad[i]);
	}
	/* no partial write landed in SCRATCH */
	assert_ok(fc_reg_read(dev, FC_REG_SCRATCH, &v));
	assert_int_equal(v, 0x600dcafe);
	assert_ok(fc_reg_read(dev, FC_REG_SCRATCH_ECHO, &v));
	assert_int_equal(v, (uint32_t)~0x600dcafeu);
	/* the last word of BAR0 is a legal (reserved, zero) register */
	assert_ok(fc_reg_read(dev, FC_BAR0_SIZE - 4, &v));
	assert_int_equal(v, 0);
	/* reserved offsets and board-owned registers ignore host writes */
	assert_ok(fc_reg_write(dev, 0x0044, 0xabcd1234u));
	assert_ok(fc_reg_read(dev, 0x0044, &v));
	assert_int_equal(v, 0);
	assert_ok(fc_reg_write(dev, FC_REG_ID, 0xabcd1234u));
	assert_ok(fc_reg_read(dev, FC_REG_ID, &v));
	assert_int_equal(v, FC_HW_ID_MAGIC);

	/* names */
	assert_rc(fc_reg_lookup("NO_SUCH_REGISTER", &off), -ENOENT);
	assert_rc(fc_reg_lookup("", &off), -ENOENT);
	assert_ok(fc_reg_lookup("ID", &off));
	assert_int_equal(off, FC_REG_ID);
	assert_ok(fc_reg_lookup("SCRATCH", &off));
	assert_int_equal(off, FC_REG_SCRATCH);
	assert_rc(fc_reg_name(FC_REG_SCRATCH + 2, name, sizeof(name)), -ENOENT);
	assert_rc(fc_reg_name(FC_BAR0_SIZE - 4, name, sizeof(name)), -ENOENT);
	assert_ok(fc_reg_name(FC_REG_SCRATCH, name, sizeof(name)));
	assert_string_equal(name, "SCRATCH");
	assert_device_works();
}

static void on_alarm(int sig)
{
	static const char msg[] = "fc_dma_wait on an unknown ticket hung\n";

	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(1);
}

static void test_unknown_ticket(void **state)
{
	struct fc_xfer x = good();
	struct fc_dma_result res;
	uint64_t t, bogus[3];
	unsigned int i;

	rng_reset(__func__);
	assert_ok(fc_dma_submit(dev, &x, 1, 0, &t));
	assert_ok(fc_dma_wait(dev, t, WAIT_MS));
	bogus[0] = t + 1000003;
	bogus[1] = UINT64_MAX;
	bogus[2] = t ^ (1ull << 62);

	signal(SIGALRM, on_alarm);
	alarm(30);
	for (i = 0; i < 3; i++) {
		assert_rc(fc_dma_wait(dev, bogus[i], 0), -ENOENT);
		assert_rc(fc_dma_wait(dev, bogus[i], -1), -ENOENT);
		assert_rc(fc_dma_poll(dev, bogus[i]), -ENOENT);
		assert_rc(fc_dma_result(dev, bogus[i], &res), -ENOENT);
	}
	alarm(0);
	signal(SIGALRM, SIG_DFL);
	/* the real ticket is still known */
	assert_ok(fc_dma_poll(dev, t));
	assert_device_works();
}

/* Queue chains until -EAGAIN; a wait makes room again. */
static void test_queue_full(void **state)
{
	enum {
		MAXQ = 4096
	};
	uint64_t *t = calloc(MAXQ + 1, sizeof(*t));
	struct fc_xfer x = xfer(fc_host(hbuf, 0), fc_board(0x500000), 1);
	unsigned int n, i;
	int rc = 0;

	rng_reset(__func__);
	assert_non_null(t);
	for (n = 0; n < MAXQ; n++) {
		rc = fc_dma_submit(dev, &x, 1, 0, &t[n]);
		if (rc)
			break;
	}
	if (rc) {
		assert_rc(rc, -EAGAIN);
		print_message("-EAGAIN after %u queued chains\n", n);
		assert_ok(fc_dma_wait(dev, t[0], WAIT_MS));
		assert_ok(fc_dma_submit(dev, &x, 1, 0, &t[n]));
		n++;
	} else {
		print_message("%u chains queued without -EAGAIN\n", n);
	}
	assert_ok(fc_dma_wait(dev, t[n - 1], WAIT_MS));
	for (i = 0; i < n; i++)
		assert_rc(fc_dma_poll(dev, t[i]), 0);
	free(t);
	assert_device_works();
}

/* The error knob: chains fail with the code, move nothing, and then the
 * engine works again once the knob is cleared. */
static void check_injected_error(uint32_t code, int want)
{
	uint8_t bpat[3000], hpat[3000], got[3000];
	struct fc_dma_result res;
	struct fc_xfer x[3];
	uint64_t t, t2;
	int rc;

	rnd_fill(bpat, sizeof(bpat));
	board_write(0x700001, bpat, sizeof(bpat));
	rnd_fill(hb(0), 2 * sizeof(hpat));
	memcpy(hpat, hb(sizeof(hpat)), sizeof(hpat));

	assert_ok(fc_reg_write(dev, FC_EMU_FAULT_DMA_ERROR, code));
	x[0] = xfer(fc_host(hbuf, 0), fc_board(0x700001), 3000);
	x[1] = xfer(fc_board(0x800000), fc_host(hbuf, 3000), 3000);
	x[2] = xfer(fc_board(0x800000), fc_board(0x700001), 3000);
	assert_ok(fc_dma_submit(dev, x, 3, 0, &t));
	rc = fc_dma_wait(dev, t, WAIT_MS);
	if (code == FC_DMA_ERR_COUNT && rc == -EINVAL)
		want = -EINVAL;
	if (rc != want)
		fail_msg("FC_EMU_FAULT_DMA_ERROR=%u: fc_dma_wait = %d (%s), "
			 "expected %d (%s)",
			 code, rc, fc_strerror(rc), want, fc_strerror(want));
	assert_rc(fc_dma_poll(dev, t), want);
	assert_ok(fc_dma_result(dev, t, &res));
	assert_int_equal(res.status, want);
	assert_int_equal(res.hw_error, code);
	assert_true(res.hw_index < 3);

	/* the knob holds for the next chain too */
	assert_ok(fc_dma_submit(dev, x, 1, 0, &t2));
	assert_rc(fc_dma_wait(dev, t2, WAIT_MS), want);

	assert_ok(fc_reg_write(dev, FC_EMU_FAULT_DMA_ERROR, 0));
	/* the host buffer was not written */
	assert_same(hb(3000), hpat, sizeof(hpat),
		    "host memory after a failed chain");
	/* nor the board (and the engine works again to tell) */
	board_read(0x700001, got, sizeof(got));
	assert_same(got, bpat, sizeof(got),
		    "board memory after a failed chain");
	/* the failed ticket keeps its result */
	assert_rc(fc_dma_poll(dev, t), want);
	assert_device_works();
}

static void test_emu_dma_error(void **state)
{
	static const struct {
		uint32_t code;
		int err;
	} cases[] = {
		{ FC_DMA_ERR_ADDR, -EFAULT },
		{ FC_DMA_ERR_FETCH, -EFAULT },
		{ FC_DMA_ERR_ROUTE, -EHOSTUNREACH },
		{ FC_DMA_ERR_LEN, -EINVAL },
		{ FC_DMA_ERR_FLAGS, -EINVAL },
		{ FC_DMA_ERR_SPACE, -EINVAL },
		{ FC_DMA_ERR_RSVD, -EINVAL },
		{ FC_DMA_ERR_ALIGN, -EINVAL },
		/*
		 * fpgacomm.h lists -EFAULT/-EINVAL/-EHOSTUNREACH for a refused
		 * chain; the library reports a bad count as -E2BIG, as
		 * fc_dma_submit() does. Either is accepted here.
		 */
		{ FC_DMA_ERR_COUNT, -E2BIG },
		{ FC_DMA_ERR_ADDR, -EFAULT }, /* again, after the others */
	};
	unsigned int i;

	need_emulator();
	rng_reset(__func__);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		print_message("injecting FC_DMA_ERR code %u\n", cases[i].code);
		check_injected_error(cases[i].code, cases[i].err);
	}
}

/*
 * A failed chain stays failed: however many chains end after it, its ticket
 * reports the failure or is forgotten (-ENOENT), never success.
 */
static void test_old_failure_not_success(void **state)
{
	struct fc_xfer x = good();
	struct fc_dma_result res;
	uint64_t t0, t;
	unsigned int i;
	int rc;

	need_emulator();
	rng_reset(__func__);
	assert_ok(fc_reg_write(dev, FC_EMU_FAULT_DMA_ERROR, FC_DMA_ERR_ADDR));
	assert_ok(fc_dma_submit(dev, &x, 1, 0, &t0));
	assert_rc(fc_dma_wait(dev, t0, WAIT_MS), -EFAULT);
	for (i = 0; i < 300; i++) {
		assert_ok(fc_dma_submit(dev, &x, 1, 0, &t));
		assert_rc(fc_dma_wait(dev, t, WAIT_MS), -EFAULT);
	}
	assert_ok(fc_reg_write(dev, FC_EMU_FAULT_DMA_ERROR, 0));

	rc = fc_dma_poll(dev, t0);
	if (rc != -EFAULT && rc != -ENOENT)
		fail_msg("failed chain, 300 failures later: fc_dma_poll = %d "
			 "(%s), expected -EFAULT or -ENOENT",
			 rc, fc_strerror(rc));
	rc = fc_dma_wait(dev, t0, 0);
	if (rc != -EFAULT && rc != -ENOENT)
		fail_msg("failed chain, 300 failures later: fc_dma_wait = %d "
			 "(%s)",
			 rc, fc_strerror(rc));
	rc = fc_dma_result(dev, t0, &res);
	if (rc == 0)
		assert_int_equal(res.status, -EFAULT);
	else
		assert_rc(rc, -ENOENT);
	assert_device_works();
}

static void test_emu_dma_stall_reset(void **state)
{
	uint8_t bpat[5000], got[5000];
	struct fc_dma_result res;
	struct fc_xfer x;
	uint64_t t1, t2, t3;
	double t0, el;

	need_emulator();
	rng_reset(__func__);
	rnd_fill(bpat, sizeof(bpat));
	board_write(0x900003, bpat, sizeof(bpat));
	rnd_fill(hb(0), sizeof(bpat));

	assert_ok(fc_reg_write(dev, FC_EMU_FAULT_DMA_STALL, 1));
	x = xfer(fc_host(hbuf, 0), fc_board(0x900003), sizeof(bpat));
	assert_ok(fc_dma_submit(dev, &x, 1, 0, &t1));
	assert_ok(fc_dma_submit(dev, &x, 1, 0, &t2)); /* queued behind */

	t0 = now_ms();
	assert_rc(fc_dma_wait(dev, t1, 50), -ETIMEDOUT);
	el = now_ms() - t0;
	if (el < 45 || el > 5000)
		fail_msg("fc_dma_wait(50 ms) returned after %.1f ms", el);
	assert_rc(fc_dma_poll(dev, t1), -EINPROGRESS);
	assert_rc(fc_dma_poll(dev, t2), -EINPROGRESS);
	assert_rc(fc_dma_result(dev, t1, &res), -EINPROGRESS);
	/* the chain goes on after a timeout */
	assert_rc(fc_dma_wait(dev, t1, 0), -ETIMEDOUT);

	assert_ok(fc_dma_reset(dev));
	assert_rc(fc_dma_wait(dev, t1, 0), -ECANCELED);
	assert_rc(fc_dma_wait(dev, t2, WAIT_MS), -ECANCELED);
	assert_rc(fc_dma_poll(dev, t1), -ECANCELED);
	assert_ok(fc_dma_result(dev, t1, &res));
	assert_int_equal(res.status, -ECANCELED);
	assert_ok(fc_dma_result(dev, t2, &res));
	assert_int_equal(res.status, -ECANCELED);

	assert_ok(fc_reg_write(dev, FC_EMU_FAULT_DMA_STALL, 0));
	assert_device_works();
	/* the cancelled chains never ran, not even after the knob cleared */
	board_read(0x900003, got, sizeof(got));
	assert_same(got, bpat, sizeof(got),
		    "board memory after cancelled chains");

	/* a reset of an idle engine is harmless */
	assert_ok(fc_dma_reset(dev));
	x = xfer(fc_host(hbuf, 0), fc_board(0x900003), sizeof(bpat));
	assert_ok(fc_dma_submit(dev, &x, 1, 0, &t3));
	assert_ok(fc_dma_wait(dev, t3, WAIT_MS));
	board_read(0x900003, got, sizeof(got));
	assert_same(got, hb(0), sizeof(got), "transfer after a reset");
	assert_device_works();
}

/* Runs last: closes the shared board and opens it again. */
static void test_close(void **state)
{
	struct fc_mem *m[3], *r;
	struct fc_xfer x;
	uint8_t *raw = malloc(10000);
	uint64_t t;
	int i;

	rng_reset(__func__);
	assert_non_null(raw);
	assert_rc(fc_close(NULL), -EINVAL);

	/* live buffers, alloc'd and registered, and a chain not waited for */
	for (i = 0; i < 3; i++)
		assert_ok(fc_mem_alloc(dev, 4096 << i, 0, &m[i]));
	assert_ok(fc_mem_register(dev, raw + 1, 9000, 0, &r));
	rnd_fill(raw, 10000);
	x = xfer(fc_host(r, 0), fc_board(0xa00000), 9000);
	assert_ok(fc_dma_submit(dev, &x, 1, 0, &t));

	assert_ok(fc_close(dev));
	dev = NULL;
	hbuf = hbuf2 = NULL;
	free(raw); /* the closed board must not touch it any more */

	assert_ok(fc_open(&dev, dev_name));
	assert_ok(fc_query(dev, &info));
	assert_ok(fc_mem_alloc(dev, HBUF_LEN, 0, &hbuf));
	assert_ok(fc_mem_alloc(dev, HBUF_LEN, 0, &hbuf2));
	assert_device_works();
}

/* ---- main ---- */

static int group_setup(void **state)
{
	return harness_alloc(HBUF_LEN, &hbuf, &hbuf2);
}

static int group_teardown(void **state)
{
	return harness_close(hbuf, hbuf2);
}

/* A failed test must not leave a fault knob set or a chain stalled. */
static int clear_knobs(void **state)
{
	uint32_t stall = 0, err = 0;

	if (!dev || !is_emulated())
		return 0;
	fc_reg_read(dev, FC_EMU_FAULT_DMA_STALL, &stall);
	fc_reg_read(dev, FC_EMU_FAULT_DMA_ERROR, &err);
	if (stall || err) {
		fc_reg_write(dev, FC_EMU_FAULT_DMA_STALL, 0);
		fc_reg_write(dev, FC_EMU_FAULT_DMA_ERROR, 0);
		fc_dma_reset(dev);
	}
	return 0;
}

#define T(f) cmocka_unit_test_teardown(f, clear_knobs)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_null_arguments),
		T(test_strerror),
		T(test_open_bad_names),
		T(test_bad_lengths),
		T(test_chain_count),
		T(test_flags_reserved_spaces),
		T(test_bad_last_descriptor),
		T(test_chain_rule),
		T(test_board_range),
		T(test_host_range),
		T(test_mem_bad_args),
		T(test_register_unmapped),
		T(test_mem_double_free),
		T(test_mem_free_busy),
		T(test_mem_free_busy_engines),
		T(test_reg_offsets),
		T(test_unknown_ticket),
		T(test_queue_full),
		T(test_emu_dma_error),
		T(test_old_failure_not_success),
		T(test_emu_dma_stall_reset),
		T(test_close), /* last: reopens the board */
	};
	int rc;

	rc = harness_open("test_bad_input");
	if (rc)
		return rc;
	if (!(info.caps & FC_CAP_DMA) || !(info.caps & FC_CAP_BOARD_MEM) ||
	    info.board_mem_size < (16u << 20)) {
		printf("SKIP: needs DMA and 16 MiB of board memory "
		       "(caps 0x%x)\n",
		       info.caps);
		fc_close(dev);
		return EXIT_SKIP;
	}

	return harness_run(tests, group_setup, group_teardown);
}
