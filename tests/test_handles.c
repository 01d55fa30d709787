// SPDX-License-Identifier: MIT
/*
 * test_handles: stale handles are errors, not memory reused. Two emulated
 * boards of one cluster in this process: a send, receive or put handle
 * used again after its request ended gives -EINVAL from fc_req_test,
 * fc_req_wait and fc_req_cancel, and leaves the request that took its
 * place alone; a request's handle after fc_close() of its board, and a
 * second fc_close(), give -EINVAL too.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include <fpgacomm/hw.h>
#include "fabric.h" /* emu/: makes the emulated cluster it runs on */

enum {
	PORT = 4
};

static char name[FCEMU_CLUSTER_NAME_MAX];
static struct fc_dev *bd[2];
static struct fc_chan *ch[2];

static int setup(void **state)
{
	struct fc_topology t;
	struct fcemu_cluster *c;
	char board[64];
	int i;

	(void)state;
	snprintf(name, sizeof(name), "tha-%d", (int)getpid());
	if (fc_topo_parse("full:2", &t) ||
	    fcemu_cluster_create(&c, name, &t, NULL))
		return -1;
	fcemu_cluster_detach(c);
	for (i = 0; i < 2; i++) {
		snprintf(board, sizeof(board), "emu:%s/%d", name, i);
		if (fc_open(&bd[i], board) ||
		    fc_chan_open(bd[i], 1 - i, PORT, 0, &ch[i]))
			return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	int i;

	(void)state;
	for (i = 0; i < 2; i++) {
		if (ch[i])
			fc_chan_close(ch[i]);
		if (bd[i])
			fc_close(bd[i]);
	}
	fcemu_cluster_unlink(name);
	return 0;
}

static void assert_stale(struct fc_req *r)
{
	size_t len = 12345;

	assert_rc(fc_req_test(r, &len), -EINVAL);
	assert_rc(fc_req_wait(r, 0, &len), -EINVAL);
	assert_rc(fc_req_cancel(r), -EINVAL);
	assert_int_equal(len, 12345);
}

/* Ended requests' handles, then a new request in the recycled memory. */
static void test_ended(void **state)
{
	char out[100], in[100];
	struct fc_req *s, *r, *r2;
	size_t len = 0;
	unsigned int i;

	(void)state;
	memset(out, 0x3c, sizeof(out));
	for (i = 0; i < 3; i++) {
		assert_ok(fc_chan_irecv(ch[1], in, sizeof(in), &r));
		assert_ok(fc_chan_isend(ch[0], out, sizeof(out), &s));
		assert_ok(fc_req_wait(s, WAIT_MS, NULL));
		assert_ok(fc_req_wait(r, WAIT_MS, &len));
		assert_int_equal(len, sizeof(out));
		assert_stale(s);
		assert_stale(r);
	}
	/* The next receive takes the memory of the last: the old handle
	 * must not reach it. */
	assert_ok(fc_chan_irecv(ch[1], in, sizeof(in), &r2));
	assert_true(r2 != r);
	assert_stale(r);
	assert_rc(fc_req_test(r2, NULL), -EINPROGRESS);
	assert_ok(fc_chan_send(ch[0], out, sizeof(out), WAIT_MS));
	assert_ok(fc_req_wait(r2, WAIT_MS, &len));
	assert_stale(r2);
	/* A cancelled one is ended too. */
	assert_ok(fc_chan_irecv(ch[1], in, sizeof(in), &r));
	assert_ok(fc_req_cancel(r));
	assert_stale(r);
}

static void test_put(void **state)
{
	struct fc_mem *src, *dst;
	struct fc_req *p;
	uint64_t at;
	unsigned int i;
	int ret;

	(void)state;
	assert_ok(fc_mem_alloc(bd[0], 4096, 0, &src));
	assert_ok(fc_mem_alloc(bd[1], 4096, 0, &dst));
	assert_ok(fc_mem_fabric_addr(bd[1], dst, 0, &at));
	memset(src->addr, 0x61, 4096);
	assert_ok(fc_iput(bd[0], at, src, 0, 4096, &p));
	/* The target board applies it: let it run too. */
	for (i = 0; (ret = fc_req_test(p, NULL)) == -EINPROGRESS && i < 1000000;
	     i++)
		fc_progress(bd[1]);
	assert_ok(ret);
	assert_stale(p);
	assert_int_equal(((uint8_t *)dst->addr)[4095], 0x61);
	assert_ok(fc_mem_free(bd[0], src));
	assert_ok(fc_mem_free(bd[1], dst));
}

/* Handles of a closed board, and the board closed twice. */
static void test_closed(void **state)
{
	char in[100];
	struct fc_req *r;
	int i;

	(void)state;
	assert_ok(fc_chan_irecv(ch[1], in, sizeof(in), &r));
	assert_ok(fc_chan_close(ch[0]));
	ch[0] = NULL;
	assert_rc(fc_chan_close(ch[1]), -EBUSY);
	ch[1] = NULL; /* goes with its board */
	assert_ok(fc_close(bd[1]));
	assert_stale(r);
	assert_rc(fc_close(bd[1]), -EINVAL);
	bd[1] = NULL;
	for (i = 0; i < 3; i++)
		assert_rc(fc_close((struct fc_dev *)in), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ended),
		cmocka_unit_test(test_put),
		cmocka_unit_test(test_closed),
	};

	printf("test_handles: stale request handles and a second fc_close are errors\n");
	return harness_run(tests, setup, teardown);
}
