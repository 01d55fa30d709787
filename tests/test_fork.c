// SPDX-License-Identifier: MIT
/*
 * test_fork: a board handle across fork() on a kernel board. The child
 * shares the parent's open file but not its PIO window (the driver maps
 * it VM_DONTCOPY): every call on the inherited handle fails with -EBADFD
 * (a small send does not touch the window's address), fc_close() of it
 * leaves the parent's chains, buffers and window alone, and the child's
 * own fc_open() works. The parent then goes on: its buffers still DMA,
 * its small messages still go through the window, and larger ones as
 * chains. Skips on an emulated board (the board is the process: a child
 * opens its own).
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define PORT	13
#define LEN	(64u << 10)
#define SMALL	200
#define CHAINED 5000

static struct fc_mem *a, *b;

static int group_setup(void **state)
{
	(void)state;
	return harness_alloc(LEN, &a, &b);
}

static int group_teardown(void **state)
{
	(void)state;
	return harness_close(a, b);
}

/* Host -> board -> host on @d with @src and @dst. RETURN VALUE: as
 * fc_dma_run, or 1 when the bytes came back wrong. */
static int round_trip(struct fc_dev *d, struct fc_mem *src, struct fc_mem *dst)
{
	struct fc_xfer x = xfer(fc_host(src, 0), fc_board(0), LEN);
	int ret;

	rnd_fill(src->addr, LEN);
	memset(dst->addr, 0, LEN);
	ret = fc_dma_run(d, &x, 1, WAIT_MS);
	if (ret)
		return ret;
	x = xfer(fc_board(0), fc_host(dst, 0), LEN);
	ret = fc_dma_run(d, &x, 1, WAIT_MS);
	if (ret)
		return ret;
	return memcmp(src->addr, dst->addr, LEN) ? 1 : 0;
}

/* One message to ourselves and back; *pio: it went through the window. */
static void self_message(struct fc_chan *ch, size_t len, bool *pio)
{
	uint8_t *out = malloc(len), *in = malloc(len + 1);
	uint32_t t0 = 0, t1 = 0;
	size_t n = 0;

	assert_non_null(out);
	assert_non_null(in);
	rnd_fill(out, len);
	assert_ok(fc_reg_read(dev, FC_PIO_TAIL, &t0));
	assert_ok(fc_chan_send(ch, out, len, WAIT_MS));
	assert_ok(fc_reg_read(dev, FC_PIO_TAIL, &t1));
	assert_ok(fc_chan_recv(ch, in, len + 1, &n, WAIT_MS));
	assert_int_equal(n, len);
	assert_same(in, out, len, "a message to ourselves");
	*pio = t1 != t0;
	free(out);
	free(in);
}

/*
 * The child's side. RETURN VALUE (its exit status): 0, else the bit of
 * the first check that failed, so that the parent can say which.
 */
static int child(struct fc_chan *ch)
{
	uint8_t msg[SMALL] = { 1 };
	struct fc_mem *own_a, *own_b;
	struct fc_dev *own;
	uint32_t v;

	if (ch && fc_chan_send(ch, msg, sizeof(msg), 1000) != -EBADFD)
		return 2;
	if (round_trip(dev, a, b) != -EBADFD)
		return 3;
	if (fc_reg_read(dev, FC_REG_ID, &v) != -EBADFD)
		return 4;
	if (fc_close(dev))
		return 5;
	if (fc_open(&own, dev_name))
		return 6;
	if (fc_mem_alloc(own, LEN, 0, &own_a) ||
	    fc_mem_alloc(own, LEN, 0, &own_b))
		return 7;
	if (round_trip(own, own_a, own_b))
		return 8;
	if (fc_close(own))
		return 9;
	return 0;
}

static void test_fork(void **state)
{
	struct fc_chan *ch = NULL;
	struct fc_world w;
	bool pio = false;
	int status, ret;
	pid_t pid;

	(void)state;
	if (strcmp(info.backend, "kernel"))
		skip_because("an emulated board lives in its process: fork "
			     "copies it (a child opens its own)");
	rng_reset("fork");
	assert_ok(round_trip(dev, a, b));
	ret = fc_world_query(dev, &w);
	if (!ret) {
		assert_ok(fc_chan_open(dev, w.rank, PORT, 0, &ch));
		/* a channel's first send may wait for the greeting, then go
		 * as a chain (lib/proto/credit.c): the path is the second's */
		self_message(ch, SMALL, &pio);
		self_message(ch, SMALL, &pio);
		print_message("before fork: a small message %s\n",
			      pio ? "through the PIO window" : "as a chain");
	} else {
		print_message("no fabric (%s): DMA only\n", fc_strerror(ret));
	}

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		/* A fault is the child's death, not a test's failure. */
		signal(SIGSEGV, SIG_DFL);
		signal(SIGBUS, SIG_DFL);
		_exit(child(ch));
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status))
		fail_msg("the child died of signal %d", WTERMSIG(status));
	if (WEXITSTATUS(status))
		fail_msg("the child's check %d failed", WEXITSTATUS(status));

	/* The parent's handle, buffers and window are as they were. */
	assert_ok(round_trip(dev, a, b));
	if (ch) {
		bool again = false, chained = true;

		self_message(ch, SMALL, &again);
		assert_int_equal(again, pio);
		self_message(ch, CHAINED, &chained);
		assert_false(chained);
		assert_ok(fc_chan_close(ch));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fork),
	};
	int rc = harness_open("test_fork");

	if (rc)
		return rc;
	return harness_run(tests, group_setup, group_teardown);
}
