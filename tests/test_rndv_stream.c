// SPDX-License-Identifier: MIT
/*
 * test_rndv_stream: streams of middling and large channel messages
 * (rendezvous, lib/proto/rndv.c) on two emulated boards driven from one
 * process.
 *
 * - Announcements pass remote writes: while the first message of a
 *   stream is being written (its chain waits for the receiver's fence),
 *   the next ones are announced through the PIO window all the same, no
 *   chain (the channels' counter rts_pio, lib/core/chan_stats.h, counts
 *   every one), and then all arrive byte for byte.
 * - ... but never eager messages: streams mixing sizes on both sides of
 *   the threshold and of the PIO window's limit (1 B .. 1 MiB + 5) keep
 *   their order, every message checked byte for byte and by its length.
 * - Sizes around the threshold and the batch (16 messages to a chain):
 *   20 messages of each of 32 KiB - 1, 32 KiB, + 1, 64 KiB - 1, 64 KiB,
 *   + 1 and 256 KiB + 3, receives posted first.
 * - A receiver that posts late: the stream sent with no receive posted,
 *   the receives posted afterwards, once with the default landing wait
 *   (messages landed in library buffers) and once with a long one (they
 *   wait announced).
 * - The same mixed stream over a link that drops and corrupts packets:
 *   whole and in order, the link's RETRANSMITS moved.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "pair.h" /* the two boards (emu/ makes their cluster) */
#include "chan_stats.h"

#define PORT 11
#define MAXN 64

static int setup(void **state)
{
	(void)state;
	setenv("FPGACOMM_CHAN_GREET", "0", 1);
	if (pair_open("rstream"))
		return -1;
	if (bd[0] && strncmp(names[0], "emu:", 4))
		pair_close(); /* rendezvous is on emulated boards only */
	return 0;
}

static void need_pair(void)
{
	if (!bd[0] || !bd[1])
		skip_because("no pair of emulated boards");
	if (getenv("FPGACOMM_RNDV_MIN") || getenv(PAIR_LAND_ENV))
		skip_because("the rendezvous threshold or wait is set");
	pair_reopen("rstream", NULL, NULL,
		    false); /* nothing left of an earlier test */
}

static uint64_t rts_pio(struct fc_dev *d)
{
	struct fc__chan_stats st;

	fc__chan_stats_get(d, &st);
	return st.rts_pio;
}

static void fill(uint8_t *p, size_t len, uint32_t salt)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)((i * 131u + salt * 7u) ^ (i >> 9) ^ salt);
}

static void check(const uint8_t *p, size_t len, uint32_t salt, const char *what)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != (uint8_t)((i * 131u + salt * 7u) ^ (i >> 9) ^ salt))
			fail_msg("%s: message %u, byte %zu of %zu differs",
				 what, salt, i, len);
}

/* Wait for @r (*@len its length) with both boards moved from this
 * thread (no pump). RETURN VALUE: as fc_req_test(). */
static int wait_here(struct fc_req *r, size_t *len)
{
	uint64_t end = now_ms() + WAIT_MS;
	int ret;

	do {
		fc_progress(bd[0]);
		fc_progress(bd[1]);
		ret = fc_req_test(r, len);
	} while (ret == -EINPROGRESS && now_ms() < end);
	return ret;
}

/*
 * A stream of @n messages of @sizes[i] bytes from board 0 to board 1, each
 * checked byte for byte and by its length at the receiver in sending
 * order. @late: the receives are posted only once every send is (and the
 * boards had 50 ms to move); else first.
 */
static void stream(const size_t *sizes, unsigned int n, bool late,
		   const char *what)
{
	struct fc_req *sr[MAXN], *rr[MAXN];
	uint8_t *sbuf[MAXN], *rbuf[MAXN];
	struct fc_chan *tx, *rx;
	size_t len, cap;
	unsigned int i;

	assert_true(n <= MAXN);
	pair_chans_open(PORT, &tx, &rx);
	for (i = 0; i < n; i++) {
		/* every receive takes any message of the stream: a message
		 * out of order shows as the wrong length or bytes */
		cap = (2u << 20);
		sbuf[i] = malloc(sizes[i]);
		rbuf[i] = malloc(cap);
		assert_non_null(sbuf[i]);
		assert_non_null(rbuf[i]);
		fill(sbuf[i], sizes[i], i + 1);
		memset(rbuf[i], 0xee, cap);
		if (!late)
			assert_ok(fc_chan_irecv(rx, rbuf[i], cap, &rr[i]));
	}
	for (i = 0; i < n; i++)
		assert_ok(fc_chan_isend(tx, sbuf[i], sizes[i], &sr[i]));
	if (late) {
		usleep(50000);
		for (i = 0; i < n; i++)
			assert_ok(fc_chan_irecv(rx, rbuf[i], 2u << 20, &rr[i]));
	}
	for (i = 0; i < n; i++) {
		assert_ok(fc_req_wait(rr[i], WAIT_MS, &len));
		if (len != sizes[i])
			fail_msg("%s: message %u: %zu bytes, sent %zu", what,
				 i + 1, len, sizes[i]);
		check(rbuf[i], len, i + 1, what);
		/* nothing past the message's end written */
		assert_int_equal(rbuf[i][len], 0xee);
	}
	for (i = 0; i < n; i++) {
		assert_ok(fc_req_wait(sr[i], WAIT_MS, NULL));
		free(sbuf[i]);
		free(rbuf[i]);
	}
	pair_chans_close(tx, rx);
}

/* Sizes on both sides of the PIO window's limit (2880) and of the
 * rendezvous threshold, large and small in turn. */
static const size_t mixed[] = {
	65536,
	1,
	FC_CHAN_RNDV_MIN,
	2880,
	65537,
	2881,
	4096,
	65536,
	FC_CHAN_RNDV_MIN - 1,
	(1u << 20) + 5,
	100,
	65535,
	65536,
	60,
	65536,
	FC_CHAN_RNDV_MIN + 1,
	16384,
	262147,
	8,
	65536,
	65536,
	4097,
};
#define N_MIXED (sizeof(mixed) / sizeof(mixed[0]))

/*
 * While the first message's write waits for the receiver's fence (the
 * receiver's library does not run meanwhile), seven more are announced:
 * each through the PIO window. Then all arrive whole.
 */
static void test_announce_while_writing(void **state)
{
	enum {
		N = 8,
		LEN = 65536
	};
	struct fc_req *sr[N], *rr[N];
	uint8_t *sbuf[N], *rbuf[N];
	struct fc_chan *tx, *rx;
	uint64_t before;
	unsigned int i;
	uint32_t tx0;
	size_t len;

	(void)state;
	need_pair();
	pair_pump_stop();
	pair_chans_open(PORT, &tx, &rx);
	for (i = 0; i < N; i++) {
		sbuf[i] = malloc(LEN);
		rbuf[i] = malloc(LEN);
		assert_non_null(sbuf[i]);
		assert_non_null(rbuf[i]);
		fill(sbuf[i], LEN, 40 + i);
		assert_ok(fc_chan_irecv(rx, rbuf[i], LEN, &rr[i]));
	}
	before = rts_pio(bd[0]);
	tx0 = rd(0, FC_PORT_REG(1, FC_PORT_TX_PKTS));
	/* announced; cleared by the receiver; the write goes out: its
	 * burst record and its fence leave (the announcement was one) */
	assert_ok(fc_chan_isend(tx, sbuf[0], LEN, &sr[0]));
	assert_int_equal(rts_pio(bd[0]) - before, 1);
	fc_progress(bd[1]);
	for (i = 0;
	     i < 1000 && rd(0, FC_PORT_REG(1, FC_PORT_TX_PKTS)) - tx0 < 3; i++)
		fc_progress(bd[0]);
	assert_true(rd(0, FC_PORT_REG(1, FC_PORT_TX_PKTS)) - tx0 >= 3);
	/* its fence needs the receiver, which has not run since */
	assert_int_equal(fc_req_test(sr[0], NULL), -EINPROGRESS);
	for (i = 1; i < N; i++)
		assert_ok(fc_chan_isend(tx, sbuf[i], LEN, &sr[i]));
	assert_int_equal(rts_pio(bd[0]) - before, N);
	for (i = 0; i < N; i++) {
		assert_ok(wait_here(rr[i], &len));
		assert_int_equal(len, LEN);
		check(rbuf[i], LEN, 40 + i, "announced while writing");
	}
	for (i = 0; i < N; i++) {
		assert_ok(wait_here(sr[i], NULL));
		free(sbuf[i]);
		free(rbuf[i]);
	}
	pair_chans_close(tx, rx);
}

static void test_mixed_order(void **state)
{
	(void)state;
	need_pair();
	assert_int_equal(pair_pump_start(), 0);
	stream(mixed, N_MIXED, false, "mixed, receives first");
}

static void test_boundaries(void **state)
{
	static const size_t each[] = {
		FC_CHAN_RNDV_MIN - 1,
		FC_CHAN_RNDV_MIN,
		FC_CHAN_RNDV_MIN + 1,
		65535,
		65536,
		65537,
		262147,
	};
	size_t sizes[20];
	unsigned int i, k;
	char what[64];

	(void)state;
	need_pair();
	assert_int_equal(pair_pump_start(), 0);
	for (k = 0; k < sizeof(each) / sizeof(each[0]); k++) {
		for (i = 0; i < 20; i++)
			sizes[i] = each[k];
		snprintf(what, sizeof(what), "20 of %zu bytes", each[k]);
		stream(sizes, 20, false, what);
	}
}

static void test_late_receiver(void **state)
{
	(void)state;
	need_pair();
	assert_int_equal(pair_pump_start(), 0);
	stream(mixed, N_MIXED, true, "receives late, default wait");
	pair_reopen("rstream", "60000000", NULL,
		    false); /* a minute per MiB: not landed */
	assert_int_equal(pair_pump_start(), 0);
	stream(mixed, N_MIXED, true, "receives late, announced only");
	pair_reopen("rstream", NULL, NULL, false);
}

/* Packets the two boards sent again on their link (full:2: port 1). */
static uint32_t retransmits(void)
{
	return rd(0, FC_PORT_REG(1, FC_PORT_RETRANSMITS)) +
	       rd(1, FC_PORT_REG(1, FC_PORT_RETRANSMITS));
}

static void test_faults(void **state)
{
	const struct fcemu_faults f = { .drop_ppm = 20000,
					.corrupt_ppm = 20000 };
	uint32_t before, after;

	(void)state;
	need_pair();
	pair_reopen("rstream", NULL, &f, false);
	before = retransmits();
	assert_int_equal(pair_pump_start(), 0);
	stream(mixed, N_MIXED, false, "mixed, faults");
	stream(mixed, N_MIXED, true, "mixed, faults, receives late");
	pair_pump_stop();
	after = retransmits();
	assert_true(after > before);
	pair_reopen("rstream", NULL, NULL, false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_announce_while_writing),
		cmocka_unit_test(test_mixed_order),
		cmocka_unit_test(test_boundaries),
		cmocka_unit_test(test_late_receiver),
		cmocka_unit_test(test_faults),
	};

	return harness_run(tests, setup, pair_teardown);
}
