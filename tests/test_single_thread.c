// SPDX-License-Identifier: MIT
/*
 * test_single_thread: boards opened with FC_OPEN_THREAD_SINGLE (and with
 * FPGACOMM_THREAD=single), whose channels take no lock of their own.
 * fc_open_flags refuses unknown flags and opens nothing; two such boards
 * of one cluster in this process pass messages of every way a channel
 * has (the PIO window, a chain, rendezvous) with their bytes intact, in
 * order; a closed channel, used just before, is refused with -EBADF.
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
#include "fabric.h" /* emu/: makes the emulated cluster it runs on */

enum {
	PORT = 6,
	BIG = 256 << 10 /* past the rendezvous threshold */
};

static char name[FCEMU_CLUSTER_NAME_MAX];
static struct fc_dev *bd[2];
static struct fc_chan *ch[2];
static uint8_t *out, *in;

static int open_pair(bool by_env)
{
	char board[64];
	int i, ret;

	for (i = 0; i < 2; i++) {
		snprintf(board, sizeof(board), "emu:%s/%d", name, i);
		ret = by_env ? fc_open(&bd[i], board) :
			       fc_open_flags(&bd[i], board,
					     FC_OPEN_THREAD_SINGLE);
		if (ret)
			return ret;
	}
	/* both boards open before a channel names its peer */
	for (i = 0; i < 2; i++) {
		ret = fc_chan_open(bd[i], 1 - i, PORT, 0, &ch[i]);
		if (ret)
			return ret;
	}
	return 0;
}

static void close_pair(void)
{
	int i;

	for (i = 0; i < 2; i++) {
		if (ch[i])
			fc_chan_close(ch[i]);
		if (bd[i])
			fc_close(bd[i]);
		ch[i] = NULL;
		bd[i] = NULL;
	}
}

static int setup(void **state)
{
	struct fc_topology t;
	struct fcemu_cluster *c;

	(void)state;
	snprintf(name, sizeof(name), "tst-%d", (int)getpid());
	if (fc_topo_parse("full:2", &t) ||
	    fcemu_cluster_create(&c, name, &t, NULL))
		return -1;
	fcemu_cluster_detach(c);
	out = malloc(BIG);
	in = malloc(BIG);
	return out && in ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	close_pair();
	free(out);
	free(in);
	fcemu_cluster_unlink(name);
	return 0;
}

static void test_flags(void **state)
{
	struct fc_dev *d = (struct fc_dev *)0x1;
	char board[64];

	(void)state;
	snprintf(board, sizeof(board), "emu:%s/0", name);
	assert_rc(fc_open_flags(NULL, board, FC_OPEN_THREAD_SINGLE), -EINVAL);
	assert_rc(fc_open_flags(&d, board, 1u << 31), -EINVAL);
	assert_rc(fc_open_flags(&d, board, FC_OPEN_THREAD_SINGLE | 2u),
		  -EINVAL);
	assert_ptr_equal(d, (struct fc_dev *)0x1); /* nothing opened */
}

/* @len bytes from board @from to the other, with blocking calls (a
 * message the PIO window takes: the send returns before the receive, in
 * one thread) or requests tested in turn. */
static void one_way(int from, size_t len, unsigned int base, bool blocking)
{
	struct fc_req *s, *r;
	int rs = -EINPROGRESS, rr = -EINPROGRESS;
	size_t got = 0, i;
	unsigned long spins;

	for (i = 0; i < len; i++)
		out[i] = (uint8_t)(base + i * 7);
	memset(in, 0, len);
	if (blocking) {
		assert_ok(fc_chan_send(ch[from], out, len, WAIT_MS));
		assert_ok(fc_chan_recv(ch[1 - from], in, len, &got, WAIT_MS));
	} else {
		assert_ok(fc_chan_irecv(ch[1 - from], in, len, &r));
		assert_ok(fc_chan_isend(ch[from], out, len, &s));
		for (spins = 0; (rs == -EINPROGRESS || rr == -EINPROGRESS) &&
				spins < 50000000ul;
		     spins++) {
			if (rs == -EINPROGRESS)
				rs = fc_req_test(s, NULL);
			if (rr == -EINPROGRESS)
				rr = fc_req_test(r, &got);
		}
		assert_ok(rs);
		assert_ok(rr);
	}
	assert_int_equal(got, len);
	assert_memory_equal(in, out, len);
}

static void ways(void)
{
	static const size_t sizes[] = { 1, 8, 60, 61, 1024, 4096, 65536 };
	unsigned int i, k;

	for (k = 0; k < 3; k++) {
		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			one_way(k % 2, sizes[i], i + k, sizes[i] <= 1024);
			one_way(1 - k % 2, sizes[i], i + k + 1, false);
		}
		one_way(k % 2, BIG, k, false);
	}
}

static void test_messages_flag(void **state)
{
	(void)state;
	assert_ok(open_pair(false));
	ways();
	close_pair();
}

static void test_messages_env(void **state)
{
	(void)state;
	assert_ok(setenv("FPGACOMM_THREAD", "single", 1));
	assert_ok(open_pair(true));
	unsetenv("FPGACOMM_THREAD");
	ways();
	close_pair();
}

/* A channel used a moment ago, then closed: its handle is refused. */
static void test_closed_channel(void **state)
{
	size_t got;

	(void)state;
	assert_ok(open_pair(false));
	one_way(0, 8, 1, true);
	assert_ok(fc_chan_close(ch[0]));
	assert_rc(fc_chan_send(ch[0], out, 8, 0), -EBADF);
	assert_rc(fc_chan_recv(ch[0], in, 8, &got, 0), -EBADF);
	assert_rc(fc_chan_close(ch[0]), -EBADF);
	ch[0] = NULL;
	/* a new one works, at whatever address it got */
	assert_ok(fc_chan_open(bd[0], 1, PORT, 0, &ch[0]));
	one_way(0, 8, 2, true);
	one_way(1, 8, 3, true);
	close_pair();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flags),
		cmocka_unit_test(test_messages_flag),
		cmocka_unit_test(test_messages_env),
		cmocka_unit_test(test_closed_channel),
	};

	return harness_run(tests, setup, teardown);
}
