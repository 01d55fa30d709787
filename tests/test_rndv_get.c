// SPDX-License-Identifier: MIT
/*
 * test_rndv_get: the receiver's read of a rendezvous message (RTS_GET,
 * lib/proto/rndv.c) on two emulated boards driven from one process.
 *
 * - Sizes around the threshold, from and into unaligned buffers, the
 *   receive posted before the send: every message arrives whole, and the
 *   receiver read each large one itself (the channels' counter of reads,
 *   lib/core/chan_stats.h, grows by one a message), none of the small.
 *   (Reads are allowed up to 16 MiB here: FPGACOMM_RNDV_GET.)
 * - By default no message is read: each is written by the sender's board.
 * - The receive posted after the announcement came (the message waits,
 *   not landed): read all the same, straight into it.
 * - A blocking send that times out before any receive: -ETIMEDOUT, and
 *   the message still arrives as it was when sent although the caller
 *   then overwrites its buffer (the receiver was told not to read it,
 *   and the sender's copy goes instead); not read.
 * - The sender's board closing while the receiver's read waits for it:
 *   the receive ends with -EHOSTDOWN in bounded time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "pair.h" /* the two boards (emu/ makes their cluster) */
#include "chan_stats.h"

#define PORT	9
#define WAIT_MS 20000
#define GET_ENV "FPGACOMM_RNDV_GET"

static int setup(void **state)
{
	(void)state;
	setenv("FPGACOMM_CHAN_GREET", "0", 1);
	/* every large message read, but where a test says otherwise */
	setenv(GET_ENV, "16777216", 1);
	if (pair_open("rget"))
		return -1;
	if (bd[0] && strncmp(names[0], "emu:", 4)) {
		pair_close(); /* rendezvous is on emulated boards only */
		return 0;
	}
	if (bd[0])
		assert_int_equal(pair_pump_start(), 0);
	return 0;
}

static void need_rget(void)
{
	struct fc_info inf;

	if (!bd[0] || !bd[1])
		skip_because("no pair of emulated boards");
	if (getenv("FPGACOMM_RNDV_MIN") || getenv(PAIR_LAND_ENV))
		skip_because("the rendezvous threshold or wait is set");
	assert_ok(fc_query(bd[1], &inf));
	if (!(inf.caps & FC_CAP_FABRIC_GET))
		skip_because("the boards do not read remotely");
}

static uint64_t rgets(struct fc_dev *d)
{
	struct fc__chan_stats st;

	fc__chan_stats_get(d, &st);
	return st.rgets;
}

static void fill(uint8_t *p, size_t len, uint32_t salt)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)((i * 131u + salt) ^ (i >> 9));
}

static void check(const uint8_t *p, size_t len, uint32_t salt, const char *what)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != (uint8_t)((i * 131u + salt) ^ (i >> 9)))
			fail_msg("%s: byte %zu of %zu differs", what, i, len);
}

static void test_sizes_unaligned(void **state)
{
	static const size_t sizes[] = {
		FC_CHAN_RNDV_MIN - 1,
		FC_CHAN_RNDV_MIN,
		FC_CHAN_RNDV_MIN + 1,
		65536,
		65539,
		(1u << 20) + 5,
		FC_CHAN_MAX_MSG,
	};
	const size_t n = sizeof(sizes) / sizeof(sizes[0]);
	uint8_t *sbuf = malloc(FC_CHAN_MAX_MSG + 8);
	uint8_t *rbuf = malloc(FC_CHAN_MAX_MSG + 8);
	struct fc_chan *tx, *rx;
	struct fc_req *sr, *rr;
	uint64_t before, large = 0;
	size_t i, len;
	char what[64];

	(void)state;
	need_rget();
	assert_non_null(sbuf);
	assert_non_null(rbuf);
	pair_chans_open(PORT, &tx, &rx);
	before = rgets(bd[1]);
	for (i = 0; i < n; i++) {
		uint8_t *s = sbuf + 1 + i % 4, *r = rbuf + 3 - i % 4;

		fill(s, sizes[i], (uint32_t)i);
		memset(r, 0, sizes[i]);
		assert_ok(fc_chan_irecv(rx, r, sizes[i], &rr));
		assert_ok(fc_chan_isend(tx, s, sizes[i], &sr));
		assert_ok(fc_req_wait(rr, WAIT_MS, &len));
		assert_ok(fc_req_wait(sr, WAIT_MS, NULL));
		assert_int_equal(len, sizes[i]);
		snprintf(what, sizeof(what), "%zu bytes", sizes[i]);
		check(r, len, (uint32_t)i, what);
		large += sizes[i] >= FC_CHAN_RNDV_MIN;
	}
	/* each large one read by the receiver, no small one */
	assert_int_equal(rgets(bd[1]) - before, large);
	assert_int_equal(rgets(bd[0]), 0);
	pair_chans_close(tx, rx);
	free(sbuf);
	free(rbuf);
}

/* By default no message is read: the sender's board writes each. */
static void test_default_cap(void **state)
{
	static const size_t sizes[] = { 65536, 131072, 131073, 1u << 20 };
	uint8_t *sbuf = malloc(1u << 20), *rbuf = malloc(1u << 20);
	struct fc_chan *tx, *rx;
	struct fc_req *sr;
	uint64_t before;
	size_t i, len;

	(void)state;
	need_rget();
	unsetenv(GET_ENV);
	pair_reopen("rget", NULL, NULL, true);
	assert_non_null(sbuf);
	assert_non_null(rbuf);
	pair_chans_open(PORT, &tx, &rx);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		before = rgets(bd[1]);
		fill(sbuf, sizes[i], (uint32_t)i + 20);
		assert_ok(fc_chan_isend(tx, sbuf, sizes[i], &sr));
		assert_ok(fc_chan_recv(rx, rbuf, sizes[i], &len, WAIT_MS));
		assert_ok(fc_req_wait(sr, WAIT_MS, NULL));
		assert_int_equal(len, sizes[i]);
		check(rbuf, len, (uint32_t)i + 20, "default cap");
		assert_int_equal(rgets(bd[1]) - before, 0);
	}
	pair_chans_close(tx, rx);
	free(sbuf);
	free(rbuf);
	setenv(GET_ENV, "16777216", 1);
	pair_reopen("rget", NULL, NULL, true);
}

/* The receive comes after the announcement, which waits (not landed). */
static void test_recv_after_rts(void **state)
{
	const size_t big = (1u << 20) + 17;
	uint8_t *sbuf = malloc(big), *rbuf = malloc(big);
	struct fc_chan *tx, *rx;
	struct fc_req *sr;
	uint64_t before;
	size_t len;

	(void)state;
	need_rget();
	pair_reopen("rget", "60000000", NULL,
		    true); /* a minute per MiB before landing */
	assert_non_null(sbuf);
	assert_non_null(rbuf);
	pair_chans_open(PORT, &tx, &rx);
	before = rgets(bd[1]);
	fill(sbuf, big, 5);
	assert_ok(fc_chan_isend(tx, sbuf, big, &sr));
	usleep(50000); /* the announcement comes, and waits */
	assert_int_equal(fc_req_wait(sr, 0, NULL), -ETIMEDOUT);
	assert_int_equal(rgets(bd[1]), before);
	assert_ok(fc_chan_recv(rx, rbuf, big, &len, WAIT_MS));
	assert_int_equal(len, big);
	check(rbuf, len, 5, "received after its announcement");
	assert_ok(fc_req_wait(sr, WAIT_MS, NULL));
	assert_int_equal(rgets(bd[1]) - before, 1);
	pair_chans_close(tx, rx);
	free(sbuf);
	free(rbuf);
	pair_reopen("rget", NULL, NULL, true);
}

/* A blocking send gives up before any receive: the receiver must not
 * read the caller's buffer after that. */
static void test_send_timeout_revokes(void **state)
{
	const size_t big = 1u << 20;
	uint8_t *sbuf = malloc(big), *rbuf = malloc(big);
	struct fc_chan *tx, *rx;
	uint64_t before;
	size_t len;

	(void)state;
	need_rget();
	pair_reopen("rget", "60000000", NULL, true);
	assert_non_null(sbuf);
	assert_non_null(rbuf);
	pair_chans_open(PORT, &tx, &rx);
	before = rgets(bd[1]);
	fill(sbuf, big, 11);
	assert_int_equal(fc_chan_send(tx, sbuf, big, 50), -ETIMEDOUT);
	memset(sbuf, 0xee, big); /* the caller's again */
	assert_ok(fc_chan_recv(rx, rbuf, big, &len, WAIT_MS));
	assert_int_equal(len, big);
	check(rbuf, len, 11, "sent before the timeout");
	assert_int_equal(rgets(bd[1]), before); /* cleared, not read */
	pair_chans_close(tx, rx);
	free(sbuf);
	free(rbuf);
	pair_reopen("rget", NULL, NULL, true);
}

/* The sender's board goes while the receiver's read waits for it. */
static void test_sender_gone(void **state)
{
	const size_t big = 4u << 20;
	uint8_t *sbuf = malloc(big), *rbuf = malloc(big);
	struct fc_chan *tx, *rx;
	struct fc_req *sr, *rr;
	uint64_t before;
	int i, rc;

	(void)state;
	need_rget();
	assert_non_null(sbuf);
	assert_non_null(rbuf);
	pair_chans_open(PORT, &tx, &rx);
	pair_pump_stop(); /* each board moves only when told */
	before = rgets(bd[1]);
	fill(sbuf, big, 3);
	assert_ok(fc_chan_irecv(rx, rbuf, big, &rr));
	assert_ok(fc_chan_isend(tx, sbuf, big, &sr));
	/* The announcement leaves board 0; board 1 starts its read, which
	 * board 0 (not driven any more) never answers. */
	for (i = 0; i < 20000 && rgets(bd[1]) == before; i++) {
		fc_progress(bd[0]);
		fc_progress(bd[1]);
	}
	assert_int_equal(rgets(bd[1]) - before, 1);
	for (i = 0; i < 100; i++)
		fc_progress(bd[1]);
	assert_int_equal(fc_req_test(rr, NULL), -EINPROGRESS);
	assert_int_equal(fc_req_cancel(rr), -EBUSY); /* its data is coming */
	fc_close(bd[0]); /* the sender leaves, its send never waited for */
	bd[0] = NULL;
	rc = fc_req_wait(rr, WAIT_MS, NULL);
	assert_int_equal(rc, -EHOSTDOWN);
	assert_ok(fc_chan_close(rx));
	(void)tx;
	(void)sr;
	free(sbuf);
	free(rbuf);
	pair_reopen("rget", NULL, NULL, true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes_unaligned),
		cmocka_unit_test(test_default_cap),
		cmocka_unit_test(test_recv_after_rts),
		cmocka_unit_test(test_send_timeout_revokes),
		cmocka_unit_test(test_sender_gone),
	};

	return harness_run(tests, setup, pair_teardown);
}
