// SPDX-License-Identifier: MIT
/*
 * test_eager: the short ways of small channel messages between two boards
 * driven by one thread. A blocking send through the PIO window leaves its
 * buffer free on return (overwritten at once, the receiver still gets
 * what was sent, at every packet boundary); a blocking receive takes a
 * message that is here already with no request: queued in the library,
 * or at the head of the event queue, in order with messages of other
 * channels before it, with receives posted before it, with a buffer too
 * small (-EMSGSIZE and the length, the next message intact), and over
 * many turns of the event queue. Messages of several packets (up to the
 * rendezvous threshold) are taken the same way, straight from the event
 * queue into the caller's buffer when all of them is there (counted in
 * lib/core/chan_stats.h's `straight`): every size around a packet's and
 * the window's edges, into unaligned buffers, with nothing written past
 * the message, across the queue's turn, behind another channel's, too
 * long for the buffer, and only partly there (the long way). Receives
 * posted first take such messages in one pass, as far as they fit. A
 * blocking send of one packet takes the shortest way (counted in
 * `one_packet`), right on every port and size, and within the credits.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "pair.h"
#include "chan_stats.h"

enum {
	PORT_A = 11,
	PORT_B = 12,
	MAX = 32768,
	EQ_TURNS = 3 * 4096 + 17 /* messages: the queue turns over */
};

static struct fc_chan *tx[2], *rx[2]; /* board 0's and 1's, A and B */
static uint8_t *out, *in, *copy;

static void fill(uint8_t *p, size_t len, unsigned int salt)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(salt * 31 + i * 7 + (i >> 8));
}

static int setup(void **state)
{
	(void)state;
	if (pair_open("tea"))
		return -1;
	if (!bd[0])
		return 0;
	if (fc_chan_open(bd[0], 1, PORT_A, 0, &tx[0]) ||
	    fc_chan_open(bd[0], 1, PORT_B, 0, &tx[1]) ||
	    fc_chan_open(bd[1], 0, PORT_A, 0, &rx[0]) ||
	    fc_chan_open(bd[1], 0, PORT_B, 0, &rx[1]))
		return -1;
	out = malloc(MAX);
	in = malloc(MAX);
	copy = malloc(MAX);
	return out && in && copy ? 0 : -1;
}

static int teardown(void **state)
{
	int i;

	(void)state;
	for (i = 0; i < 2; i++) {
		if (tx[i])
			fc_chan_close(tx[i]);
		if (rx[i])
			fc_chan_close(rx[i]);
	}
	pair_close();
	free(out);
	free(in);
	free(copy);
	return 0;
}

#define SKIP_UNPAIRED()                                            \
	do {                                                       \
		if (!bd[0])                                        \
			skip_because("no pair of boards to test"); \
	} while (0)

/* Let board 1 take in everything on its way (it ends up queued there). */
static void settle(void)
{
	int quiet = 0, i;

	for (i = 0; i < 100000 && quiet < 50; i++)
		quiet = fc_progress(bd[0]) > 0 || fc_progress(bd[1]) > 0 ?
				0 :
				quiet + 1;
}

static void expect(struct fc_chan *ch, size_t len, unsigned int salt)
{
	size_t got = 0;

	fill(copy, len, salt);
	memset(in, 0xee, len);
	assert_ok(fc_chan_recv(ch, in, MAX, &got, WAIT_MS));
	assert_int_equal(got, len);
	assert_memory_equal(in, copy, len);
}

/* The send's buffer is overwritten as soon as the send returns. */
static void test_buffer_free_on_return(void **state)
{
	static const size_t sizes[] = { 1,    2,    3,	  4,   5,   7,
					8,    9,    15,	  16,  17,  59,
					60,   61,   119,  120, 121, 1000,
					2879, 2880, 2881, 4096 };
	unsigned int i;

	(void)state;
	SKIP_UNPAIRED();
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		fill(out, sizes[i], i);
		assert_ok(fc_chan_send(tx[0], out, sizes[i], WAIT_MS));
		memset(out, 0x5a, sizes[i]);
		expect(rx[0], sizes[i], i);
	}
}

/* Messages queued in the library before anyone asks: in order. */
static void test_queued(void **state)
{
	static const size_t sizes[] = { 8, 100, 2000, 4096, 8 };
	unsigned int i;

	(void)state;
	SKIP_UNPAIRED();
	for (i = 0; i < 5; i++) {
		fill(out, sizes[i], 100 + i);
		assert_ok(fc_chan_send(tx[0], out, sizes[i], WAIT_MS));
	}
	settle();
	for (i = 0; i < 5; i++)
		expect(rx[0], sizes[i], 100 + i);
}

/* Another channel's message at the head of the queue comes first: the
 * one asked for is still found, and the other keeps its order. */
static void test_other_channel_first(void **state)
{
	(void)state;
	SKIP_UNPAIRED();
	fill(out, 8, 200);
	assert_ok(fc_chan_send(tx[0], out, 8, WAIT_MS));
	fill(out, 8, 201);
	assert_ok(fc_chan_send(tx[1], out, 8, WAIT_MS));
	fill(out, 8, 202);
	assert_ok(fc_chan_send(tx[0], out, 8, WAIT_MS));
	expect(rx[1], 8, 201);
	expect(rx[0], 8, 200);
	expect(rx[0], 8, 202);
}

/* A receive posted before: it gets the first message, the blocking
 * receive after it the second, whether they are queued or not yet. */
static void test_posted_first(void **state)
{
	struct fc_req *r;
	size_t got = 0;
	uint8_t first[64];
	int pass;

	(void)state;
	SKIP_UNPAIRED();
	for (pass = 0; pass < 2; pass++) {
		assert_ok(fc_chan_irecv(rx[0], first, sizeof(first), &r));
		fill(out, 16, 300 + pass);
		assert_ok(fc_chan_send(tx[0], out, 16, WAIT_MS));
		fill(out, 24, 310 + pass);
		assert_ok(fc_chan_send(tx[0], out, 24, WAIT_MS));
		if (pass)
			settle();
		expect(rx[0], 24, 310 + pass);
		assert_ok(fc_req_wait(r, WAIT_MS, &got));
		assert_int_equal(got, 16);
		fill(copy, 16, 300 + pass);
		assert_memory_equal(first, copy, 16);
	}
}

/* Too small a buffer: -EMSGSIZE with the length, and the next message is
 * whole, from the queue and from the head of the event queue. */
static void test_too_small(void **state)
{
	size_t got = 0;
	int pass;

	(void)state;
	SKIP_UNPAIRED();
	for (pass = 0; pass < 2; pass++) {
		fill(out, 40, 400);
		assert_ok(fc_chan_send(tx[0], out, 40, WAIT_MS));
		fill(out, 8, 401);
		assert_ok(fc_chan_send(tx[0], out, 8, WAIT_MS));
		if (pass)
			settle();
		assert_rc(fc_chan_recv(rx[0], in, 20, &got, WAIT_MS),
			  -EMSGSIZE);
		assert_int_equal(got, 40);
		expect(rx[0], 8, 401);
	}
}

/* A ping-pong long enough for the event queue to turn over three times:
 * every message whole, in order. */
static void test_queue_turns(void **state)
{
	unsigned int i;

	(void)state;
	SKIP_UNPAIRED();
	for (i = 0; i < EQ_TURNS; i++) {
		fill(out, 8 + i % 53, i);
		assert_ok(fc_chan_send(tx[0], out, 8 + i % 53, WAIT_MS));
		expect(rx[0], 8 + i % 53, i);
	}
}

/* Board 0's blocking sends of one packet by the shortest way. */
static uint64_t one_packet(void)
{
	struct fc__chan_stats st;

	fc__chan_stats_get(bd[0], &st);
	return st.one_packet;
}

/*
 * The shortest way of a blocking send (one packet, lib/proto/eager.c):
 * every size of 1 to 60 bytes takes it (counted) on two ports in turn,
 * each message arriving on its own port with its length and bytes (the
 * header it writes names port, length and end); 61 bytes does not.
 */
static void test_one_packet_way(void **state)
{
	uint64_t before;
	unsigned int n;

	(void)state;
	SKIP_UNPAIRED();
	before = one_packet();
	for (n = 1; n <= 61; n++) {
		fill(out, n, 400 + n);
		assert_ok(fc_chan_send(tx[n & 1], out, n, WAIT_MS));
		memset(out, 0x5a, n);
	}
	for (n = 1; n <= 61; n += 2)
		expect(rx[1], n, 400 + n);
	for (n = 2; n <= 61; n += 2)
		expect(rx[0], n, 400 + n);
	assert_int_equal(one_packet() - before, 60);
}

/*
 * The shortest way keeps to the credits (lib/proto/credit.c): with a
 * window of 4096 bytes and nobody reading, exactly 4096 / (8 + 64)
 * messages of 8 B go; the next one waits and gives up (-ETIMEDOUT,
 * withdrawn from the credits' queue, never sent); once they are read,
 * sends go again and every message arrives once, in order. Boards
 * opened anew for the window, last of all.
 */
static void test_one_packet_credit(void **state)
{
	const unsigned int fit = 4096 / (8 + 64);
	unsigned int i;
	uint64_t before;
	int ret;

	(void)state;
	SKIP_UNPAIRED();
	for (i = 0; i < 2; i++) {
		assert_ok(fc_chan_close(tx[i]));
		assert_ok(fc_chan_close(rx[i]));
		tx[i] = rx[i] = NULL;
	}
	pair_close();
	setenv("FPGACOMM_CHAN_CREDIT", "4096", 1);
	ret = pair_open("teb");
	unsetenv("FPGACOMM_CHAN_CREDIT");
	assert_ok(ret);
	assert_ok(fc_chan_open(bd[0], 1, PORT_A, 0, &tx[0]));
	assert_ok(fc_chan_open(bd[1], 0, PORT_A, 0, &rx[0]));
	before = one_packet();
	for (i = 0; i < fit; i++) {
		fill(out, 8, 500 + i);
		assert_ok(fc_chan_send(tx[0], out, 8, WAIT_MS));
	}
	assert_int_equal(one_packet() - before, fit);
	fill(out, 8, 999);
	assert_int_equal(fc_chan_send(tx[0], out, 8, 20), -ETIMEDOUT);
	for (i = 0; i < fit; i++)
		expect(rx[0], 8, 500 + i);
	for (i = 0; i < 3; i++) {
		fill(out, 8, 600 + i);
		assert_ok(fc_chan_send(tx[0], out, 8, WAIT_MS));
		expect(rx[0], 8, 600 + i);
	}
}

static uint64_t straight(void)
{
	struct fc__chan_stats st;

	fc__chan_stats_get(bd[1], &st);
	return st.straight;
}

/* Receive into in + @shift, guarded: nothing is written past the
 * message, and the bytes are the ones sent. */
static void expect_at(struct fc_chan *ch, size_t len, unsigned int salt,
		      size_t shift)
{
	size_t got = 0;

	fill(copy, len, salt);
	memset(in, 0xee, MAX);
	assert_ok(fc_chan_recv(ch, in + shift, MAX - shift, &got, WAIT_MS));
	assert_int_equal(got, len);
	assert_memory_equal(in + shift, copy, len);
	if (shift)
		assert_int_equal(in[shift - 1], 0xee);
	if (shift + len < MAX)
		assert_int_equal(in[shift + len], 0xee);
}

/* Several packets, all here (the send ended): straight into the buffer,
 * every size around a packet's edge, the PIO window's (48 packets, 64
 * slots) and a chain's, aligned or not, the send's buffer overwritten at
 * once. */
static void test_straight_sizes(void **state)
{
	static const size_t sizes[] = { 61,   119,  120,   121,	 179,
					180,  181,  2879,  2880, 2881,
					3839, 3840, 3841,  4095, 4096,
					4097, 8191, 16384, 32767 };
	uint64_t before;
	unsigned int i, shift;

	(void)state;
	SKIP_UNPAIRED();
	for (shift = 0; shift < 3; shift++) {
		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			if (sizes[i] + shift > MAX)
				continue;
			fill(out + shift, sizes[i], i * 3 + shift);
			assert_ok(fc_chan_send(tx[0], out + shift, sizes[i],
					       WAIT_MS));
			memset(out, 0x5a, MAX);
			before = straight();
			expect_at(rx[0], sizes[i], i * 3 + shift, shift);
			/* the longest is only partly in after one step of
			 * the board: the long way (test_straight_partial) */
			if (sizes[i] <= 16384)
				assert_int_equal(straight(), before + 1);
		}
	}
}

/* Multi-packet messages over many turns of the event queue, so that
 * messages start and end at every place in it and some cross its end. */
static void test_straight_turns(void **state)
{
	uint64_t before;
	unsigned int i;
	size_t len;

	(void)state;
	SKIP_UNPAIRED();
	before = straight();
	for (i = 0; i < 600; i++) {
		len = 61 + (size_t)(i * 613) % 4100;
		fill(out, len, i);
		assert_ok(fc_chan_send(tx[0], out, len, WAIT_MS));
		expect_at(rx[0], len, i, i % 5);
	}
	/* All but the few whose receive found a credit message of its own
	 * under way (the long way then, so as not to pass it). */
	assert_true(straight() - before >= 590);
}

/* Another channel's long message first, then a message too long for its
 * buffer: neither is taken straight; each ends as the long way says. */
static void test_straight_others(void **state)
{
	uint64_t before;
	size_t got = 0;

	(void)state;
	SKIP_UNPAIRED();
	fill(out, 4096, 500);
	assert_ok(fc_chan_send(tx[0], out, 4096, WAIT_MS));
	fill(out, 3000, 501);
	assert_ok(fc_chan_send(tx[1], out, 3000, WAIT_MS));
	fill(out, 200, 502);
	assert_ok(fc_chan_send(tx[0], out, 200, WAIT_MS));
	before = straight();
	expect_at(rx[1], 3000, 501, 1); /* behind rx[0]'s: the long way */
	assert_int_equal(straight(), before);
	expect_at(rx[0], 4096, 500, 0); /* queued by now */
	expect_at(rx[0], 200, 502, 0);
	/* too long: -EMSGSIZE with its length, the next one whole */
	fill(out, 4096, 503);
	assert_ok(fc_chan_send(tx[0], out, 4096, WAIT_MS));
	fill(out, 130, 504);
	assert_ok(fc_chan_send(tx[0], out, 130, WAIT_MS));
	before = straight();
	assert_rc(fc_chan_recv(rx[0], in, 4095, &got, WAIT_MS), -EMSGSIZE);
	assert_int_equal(got, 4096);
	expect_at(rx[0], 130, 504, 0);
}

/* A message only partly in the event queue is not taken straight: the
 * receive waits for the rest the long way. 547 packets, more than one
 * step of board 1 ejects (the send has ended: they are on their way). */
static void test_straight_partial(void **state)
{
	uint64_t before;

	(void)state;
	SKIP_UNPAIRED();
	fill(out, 32767, 600);
	assert_ok(fc_chan_send(tx[0], out, 32767, WAIT_MS));
	memset(out, 0x5a, 32767);
	before = straight();
	expect_at(rx[0], 32767, 600, 0);
	assert_int_equal(straight(), before);
}

/* Receives posted before their messages of several packets: filled as
 * the packets come, one pass; exactly the buffer's size, one byte short
 * (-EMSGSIZE with the length, nothing written past the buffer, the next
 * message whole), unaligned. */
static void test_posted_sizes(void **state)
{
	static const size_t sizes[] = { 61,   120,  121,  2880, 2881,
					3840, 3841, 4096, 8191, 16384 };
	struct fc_req *r;
	unsigned int i, shift;
	size_t got, len;

	(void)state;
	SKIP_UNPAIRED();
	for (shift = 0; shift < 3; shift++) {
		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			len = sizes[i];
			memset(in, 0xee, MAX);
			fill(copy, len, 700 + i);
			assert_ok(fc_chan_irecv(rx[0], in + shift, len, &r));
			fill(out, len, 700 + i);
			assert_ok(fc_chan_send(tx[0], out, len, WAIT_MS));
			got = 0;
			assert_ok(fc_req_wait(r, WAIT_MS, &got));
			assert_int_equal(got, len);
			assert_memory_equal(in + shift, copy, len);
			if (shift)
				assert_int_equal(in[shift - 1], 0xee);
			assert_int_equal(in[shift + len], 0xee);
			/* one byte short */
			memset(in, 0xee, MAX);
			assert_ok(
				fc_chan_irecv(rx[0], in + shift, len - 1, &r));
			assert_ok(fc_chan_send(tx[0], out, len, WAIT_MS));
			got = 0;
			assert_rc(fc_req_wait(r, WAIT_MS, &got), -EMSGSIZE);
			assert_int_equal(got, len);
			assert_int_equal(in[shift + len - 1], 0xee);
			fill(out, 100, 800 + i);
			assert_ok(fc_chan_send(tx[0], out, 100, WAIT_MS));
			expect_at(rx[0], 100, 800 + i, shift);
		}
	}
}

/* Over many turns of the event queue, messages of several packets into
 * receives posted first, and queued ones (sent before anyone asks, taken
 * by the library into its buffers), in turn: every byte in place. */
static void test_posted_turns(void **state)
{
	struct fc_req *r;
	unsigned int i;
	size_t got, len;

	(void)state;
	SKIP_UNPAIRED();
	for (i = 0; i < 600; i++) {
		len = 61 + (size_t)(i * 409) % 4100;
		fill(out, len, 900 + i);
		if (i % 2) {
			fill(copy, len, 900 + i);
			memset(in, 0xee, MAX);
			assert_ok(fc_chan_irecv(rx[0], in + i % 3, len, &r));
			assert_ok(fc_chan_send(tx[0], out, len, WAIT_MS));
			got = 0;
			assert_ok(fc_req_wait(r, WAIT_MS, &got));
			assert_int_equal(got, len);
			assert_memory_equal(in + i % 3, copy, len);
			assert_int_equal(in[i % 3 + len], 0xee);
		} else {
			assert_ok(fc_chan_send(tx[0], out, len, WAIT_MS));
			settle();
			expect_at(rx[0], len, 900 + i, i % 3);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buffer_free_on_return),
		cmocka_unit_test(test_queued),
		cmocka_unit_test(test_other_channel_first),
		cmocka_unit_test(test_posted_first),
		cmocka_unit_test(test_too_small),
		cmocka_unit_test(test_queue_turns),
		cmocka_unit_test(test_straight_sizes),
		cmocka_unit_test(test_straight_turns),
		cmocka_unit_test(test_straight_others),
		cmocka_unit_test(test_straight_partial),
		cmocka_unit_test(test_posted_sizes),
		cmocka_unit_test(test_posted_turns),
		cmocka_unit_test(test_one_packet_way),
		cmocka_unit_test(test_one_packet_credit), /* last: reopens */
	};

	int rc;

	rc = cmocka_run_group_tests_name("eager", tests, setup, teardown);
	if (!rc && n_skipped == sizeof(tests) / sizeof(tests[0]))
		return EXIT_SKIP;
	return rc;
}
