// SPDX-License-Identifier: MIT
/*
 * test_send_close: a rank that sends and then closes its board at once
 * loses nothing (as an MPI rank that sends and then calls MPI_Finalize).
 *
 * Each case makes a full:2 emulated cluster and forks two processes, the
 * sender (board 0) and the receiver (board 1). They keep in step through
 * pipes only, never the library: the receiver opens its channel once the
 * sender's process has closed its board and exited (its parent tells it,
 * after waitpid). Every message is checked byte for byte:
 * - the receiver outside the library the whole time: small messages (PIO
 *   and chains) still in the fabric after the sender left;
 * - the receiver driving its board meanwhile (its channel not open): many
 *   small messages and a rendezvous message completed by the sender before
 *   it closed, all kept by the receiver's library;
 * - after the last message, a receive gets -EHOSTDOWN (not -ETIMEDOUT),
 *   and a send to the rank that left -EHOSTDOWN;
 * - a receiver that never opens its channel: the sender's fc_close()
 *   returns 0, with completed sends behind it, a send that timed out on
 *   an engine held for good (given up after a while) and a rendezvous
 *   send still outstanding (its handle then stale); the same when the
 *   receiver's board is never opened at all;
 * - a sender killed after its sends (the receiver's channel open
 *   before): every message, then -EHOSTDOWN for a receive waiting for
 *   more than was sent; a new channel to it (another port) is refused;
 * - a sender that exits without fc_close() (a death to the others): the
 *   receiver's channel, opened after, still gets every message;
 * - a blocking send that timed out with its chain started (the engine
 *   held by FC_EMU_FAULT_DMA_STALL, then let go) just before fc_close():
 *   the board goes on with it, and fc_close() lets it finish: the
 *   receiver gets it whole after the others;
 * - tagged messages (fc_tag_send, the small ones injected with no
 *   completion) sent and closed at once; the receiver's endpoint, opened
 *   after, matches every one, then a receive ends with -EHOSTDOWN.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "fabric.h" /* emu/: makes the cluster */

#define PORT	   5
#define PORT2	   6
#define LONG_MS	   60000 /* a wait that must end by the library's choice */
#define RANK_ALARM 120	 /* s: a rank that hangs is stopped */
#define RNDV_LEN   ((1u << 20) + 3)
#define ORPHAN_LEN 4000 /* a chain, not the PIO window */

static char cluster[48];
static unsigned int cases;

/* Message @i's length in each case: PIO sizes, packet edges, chains. */
static const size_t idle_sizes[] = { 1, 8, 59, 60, 61, 200, 1000, 2880, 4000 };
static const size_t busy_sizes[] = {
	1, 61, 2880, 2881, 4096, 9000, 20000, 32767
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
#define N_IDLE	36  /* about 20 KiB: what the fabric holds unread */
#define N_BUSY	240 /* about 2 MiB: within a channel's credit */

static void fill(uint8_t *p, size_t len, uint32_t salt)
{
	uint64_t x = salt;
	size_t i;

	for (i = 0; i < len; i++) {
		if (i % 8 == 0)
			x = mix(x + i);
		p[i] = (uint8_t)(x >> (8 * (i % 8)));
	}
}

/* ---- the ranks (forked: they report by exit status) ---- */

static unsigned int failures;
static uint32_t rank;

static struct fc_dev *rank_open(uint32_t node)
{
	char name[80];
	struct fc_dev *d = NULL;

	rank = node;
	alarm(RANK_ALARM);
	snprintf(name, sizeof(name), "emu:%s/%u", cluster, node);
	CHECK_RC(fc_open(&d, name), 0);
	return d;
}

static void say(int fd, char c)
{
	if (write(fd, &c, 1) != 1)
		_exit(3);
}

/* Wait for a byte on @fd; with @d, driving that board meanwhile. */
static char hear(int fd, struct fc_dev *d)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char c = 0;

	while (d && poll(&pfd, 1, 0) == 0) {
		fc_progress(d);
		usleep(100);
	}
	if (read(fd, &c, 1) != 1)
		_exit(3);
	return c;
}

/* Send @n messages of @sizes cycling, each one blocking (completed). */
static void send_all(struct fc_chan *ch, const size_t *sizes, size_t nsizes,
		     unsigned int n, uint8_t *buf)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		size_t len = sizes[i % nsizes];

		fill(buf, len, i);
		CHECK_RC(fc_chan_send(ch, buf, len, LONG_MS), 0);
	}
}

/* Receive @n messages as send_all() sent them, byte for byte. */
static void recv_all(struct fc_chan *ch, const size_t *sizes, size_t nsizes,
		     unsigned int n, uint8_t *buf, uint8_t *want)
{
	unsigned int i;
	size_t len, k;
	int rc;

	for (i = 0; i < n; i++) {
		size_t exp = sizes[i % nsizes];

		len = 0;
		memset(buf, 0xa5, exp + 1);
		rc = fc_chan_recv(ch, buf, RNDV_LEN, &len, LONG_MS);
		CHECK(rc == 0, "message %u of %u: %d (%s)", i, n, rc,
		      fc_strerror(rc));
		if (rc)
			return;
		CHECK(len == exp, "message %u: %zu bytes, sent %zu", i, len,
		      exp);
		fill(want, exp, i);
		for (k = 0; k < exp && buf[k] == want[k]; k++)
			;
		CHECK(k == exp, "message %u: byte %zu of %zu differs", i, k,
		      exp);
	}
}

/* After the last message: the sender left, nothing more will come. */
static void expect_gone(struct fc_chan *ch, uint8_t *buf)
{
	size_t len = 0;

	CHECK_RC(fc_chan_recv(ch, buf, RNDV_LEN, &len, LONG_MS), -EHOSTDOWN);
	CHECK_RC(fc_chan_send(ch, buf, 1, LONG_MS), -EHOSTDOWN);
}

enum mode {
	IDLE,
	BUSY,
	NEVER,
	KILLED,
	EXITED,
	ORPHAN,
	TAGGED,
	NO_BOARD /* as NEVER, the receiver's board never opened at all */
};

/* Tagged messages (MPI's way): the small ones injected (no completion,
 * copied at once), the rest waited for; the endpoint closed, then the
 * board. */
static void tag_sender(struct fc_dev *d, uint8_t *buf)
{
	struct fc_tag_ep *ep = NULL;
	struct fc_tag_cqe cqe;
	unsigned int i, waited = 0, done = 0;

	CHECK_RC(fc_tag_open(d, PORT2, 0, &ep), 0);
	if (!ep)
		return;
	for (i = 0; i < N_IDLE; i++) {
		size_t len = idle_sizes[i % N_OF(idle_sizes)];
		bool inject = len <= FC_TAG_INJECT_MAX;

		fill(buf, len, i);
		CHECK_RC(fc_tag_send(ep, 1, PORT2, buf, len, i, 0,
				     inject ? FC_TAG_F_INJECT : 0, NULL, 0),
			 0);
		if (inject)
			continue;
		waited++;
		while (done < waited && !failures) {
			CHECK_RC(fc_tag_wait(ep, LONG_MS), 0);
			if (fc_tag_poll(ep, &cqe, 1) == 1) {
				CHECK_RC(cqe.status, 0);
				done++;
			}
		}
	}
	CHECK_RC(fc_tag_close(ep), 0);
}

static void tag_receiver(struct fc_dev *d, uint8_t *buf, uint8_t *want)
{
	struct fc_tag_ep *ep = NULL;
	struct fc_tag_cqe cqe;
	unsigned int i;
	size_t k;

	CHECK_RC(fc_tag_open(d, PORT2, 0, &ep), 0);
	if (!ep)
		return;
	for (i = 0; i <= N_IDLE; i++) {
		size_t exp = idle_sizes[i % N_OF(idle_sizes)];

		memset(&cqe, 0, sizeof(cqe));
		CHECK_RC(fc_tag_recv(ep, 0, buf, RNDV_LEN, i, 0, 0, NULL, 0),
			 0);
		CHECK_RC(fc_tag_wait(ep, LONG_MS), 0);
		CHECK_RC(fc_tag_poll(ep, &cqe, 1), 1);
		if (i == N_IDLE) { /* past the last: the sender left */
			CHECK_RC(cqe.status, -EHOSTDOWN);
			break;
		}
		CHECK(cqe.status == 0 && cqe.len == exp,
		      "tagged message %u: status %d, %llu bytes, sent %zu", i,
		      cqe.status, (unsigned long long)cqe.len, exp);
		fill(want, exp, i);
		for (k = 0; k < exp && buf[k] == want[k]; k++)
			;
		CHECK(k == exp, "tagged message %u: byte %zu differs", i, k);
		if (failures)
			break;
	}
	CHECK_RC(fc_tag_close(ep), 0);
}

static int sender(enum mode m, int ready_fd)
{
	struct fc_dev *d;
	struct fc_chan *ch = NULL;
	struct fc_req *r = NULL;
	uint8_t *buf = malloc(RNDV_LEN);

	hear(ready_fd, NULL); /* the receiver's board is open */
	d = rank_open(0);
	if (!d || !buf)
		return 1;
	CHECK_RC(fc_chan_open(d, 1, PORT, 0, &ch), 0);
	if (!ch)
		return 1;
	switch (m) {
	case IDLE:
	case NEVER:
	case NO_BOARD:
		send_all(ch, idle_sizes, N_OF(idle_sizes), N_IDLE, buf);
		break;
	case BUSY:
		send_all(ch, busy_sizes, N_OF(busy_sizes), N_BUSY / 2, buf);
		fill(buf, RNDV_LEN, 9999);
		CHECK_RC(fc_chan_send(ch, buf, RNDV_LEN, LONG_MS), 0);
		send_all(ch, busy_sizes, N_OF(busy_sizes), N_BUSY / 2, buf);
		break;
	case KILLED:
		send_all(ch, idle_sizes, N_OF(idle_sizes), N_IDLE, buf);
		raise(SIGKILL);
		break;
	case TAGGED:
		tag_sender(d, buf);
		CHECK_RC(fc_chan_close(ch), 0);
		CHECK_RC(fc_close(d), 0);
		free(buf);
		return failures ? 1 : 0;
	case EXITED:
		/* the program ends without fc_close(): a death to the rest */
		send_all(ch, idle_sizes, N_OF(idle_sizes), N_IDLE, buf);
		_exit(failures ? 1 : 0);
	case ORPHAN:
		send_all(ch, idle_sizes, N_OF(idle_sizes), N_IDLE, buf);
		/* the engine held: the send times out with its chain started,
		 * and the board goes on with it, from a copy */
		CHECK_RC(fc_reg_write(d, FC_EMU_FAULT_DMA_STALL, 1), 0);
		fill(buf, ORPHAN_LEN, 7777);
		CHECK_RC(fc_chan_send(ch, buf, ORPHAN_LEN, 100), -ETIMEDOUT);
		memset(buf, 0, ORPHAN_LEN);
		CHECK_RC(fc_reg_write(d, FC_EMU_FAULT_DMA_STALL, 0), 0);
		break;
	}
	if (m == NEVER || m == NO_BOARD) {
		/* a send left to the board that can never end (the engine
		 * stays held): fc_close() gives it up after a while */
		CHECK_RC(fc_reg_write(d, FC_EMU_FAULT_DMA_STALL, 1), 0);
		CHECK_RC(fc_chan_send(ch, buf, ORPHAN_LEN, 100), -ETIMEDOUT);
		/* announced, never cleared: still going at the close */
		fill(buf, RNDV_LEN, 9999);
		CHECK_RC(fc_chan_isend(ch, buf, RNDV_LEN, &r), 0);
		CHECK_RC(fc_chan_close(ch), -EBUSY);
	} else {
		CHECK_RC(fc_chan_close(ch), 0);
	}
	CHECK_RC(fc_close(d), 0);
	if (r)
		CHECK_RC(fc_req_test(r, NULL), -EINVAL);
	free(buf);
	return failures ? 1 : 0;
}

static int receiver(enum mode m, int ready_fd, int closed_fd)
{
	uint8_t *buf = malloc(RNDV_LEN + 1), *want = malloc(RNDV_LEN);
	struct fc_chan *ch = NULL, *ch2 = NULL;
	struct fc_dev *d;
	size_t len = 0;

	if (m == NO_BOARD) {
		say(ready_fd, 'r');
		hear(closed_fd, NULL);
		return 0;
	}
	d = rank_open(1);
	if (!d || !buf || !want)
		return 1;
	if (m == KILLED)
		CHECK_RC(fc_chan_open(d, 0, PORT, 0, &ch), 0);
	say(ready_fd, 'r');
	/* Outside the library until the sender's process has exited, or
	 * (BUSY) driving the board with no channel open. */
	hear(closed_fd, m == BUSY ? d : NULL);
	if (m == NEVER)
		return fc_close(d) ? 1 : 0;
	if (m == TAGGED) {
		tag_receiver(d, buf, want);
		CHECK_RC(fc_close(d), 0);
		return failures ? 1 : 0;
	}
	if (!ch)
		CHECK_RC(fc_chan_open(d, 0, PORT, 0, &ch), 0);
	if (!ch)
		return 1;
	if (m == BUSY) {
		recv_all(ch, busy_sizes, N_OF(busy_sizes), N_BUSY / 2, buf,
			 want);
		CHECK_RC(fc_chan_recv(ch, buf, RNDV_LEN + 1, &len, LONG_MS), 0);
		CHECK(len == RNDV_LEN, "rendezvous message: %zu bytes", len);
		fill(want, RNDV_LEN, 9999);
		CHECK(!memcmp(buf, want, RNDV_LEN),
		      "rendezvous message differs");
		recv_all(ch, busy_sizes, N_OF(busy_sizes), N_BUSY / 2, buf,
			 want);
	} else {
		recv_all(ch, idle_sizes, N_OF(idle_sizes), N_IDLE, buf, want);
	}
	if (m == ORPHAN) {
		len = 0;
		CHECK_RC(fc_chan_recv(ch, buf, RNDV_LEN, &len, LONG_MS), 0);
		fill(want, ORPHAN_LEN, 7777);
		CHECK(len == ORPHAN_LEN && !memcmp(buf, want, ORPHAN_LEN),
		      "the send that timed out: %zu bytes, or not its own",
		      len);
	}
	expect_gone(ch, buf);
	if (m == KILLED || m == EXITED)
		CHECK_RC(fc_chan_open(d, 0, PORT2, 0, &ch2), -EHOSTDOWN);
	CHECK_RC(fc_chan_close(ch), 0);
	CHECK_RC(fc_close(d), 0);
	free(buf);
	free(want);
	return failures ? 1 : 0;
}

/* ---- the cases, run from cmocka in the parent ---- */

static int status_of(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static void run_case(enum mode m)
{
	int ready[2], closed[2], st;
	struct fcemu_cluster *c;
	struct fc_topology t;
	pid_t a, b;

	snprintf(cluster, sizeof(cluster), "sendclose-%d-%u", (int)getpid(),
		 cases++);
	fcemu_cluster_unlink(cluster);
	assert_ok(fc_topo_parse("full:2", &t));
	assert_ok(fcemu_cluster_create(&c, cluster, &t, NULL));
	fcemu_cluster_detach(c);
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(closed), 0);
	fflush(stdout);
	b = fork();
	assert_true(b >= 0);
	if (b == 0)
		_exit(receiver(m, ready[1], closed[0]));
	a = fork();
	assert_true(a >= 0);
	if (a == 0)
		_exit(sender(m, ready[0]));
	assert_int_equal(waitpid(a, &st, 0), a);
	/* The sender's process is gone: now the receiver may look. */
	if (write(closed[1], "c", 1) != 1)
		st = -1;
	if (m == KILLED)
		assert_int_equal(status_of(st), 128 + SIGKILL);
	else
		assert_int_equal(status_of(st), 0);
	assert_int_equal(waitpid(b, &st, 0), b);
	assert_int_equal(status_of(st), 0);
	close(ready[0]);
	close(ready[1]);
	close(closed[0]);
	close(closed[1]);
	fcemu_cluster_unlink(cluster);
}

static void test_idle_receiver(void **state)
{
	(void)state;
	run_case(IDLE);
}

static void test_busy_receiver(void **state)
{
	(void)state;
	run_case(BUSY);
}

static void test_never_opened(void **state)
{
	(void)state;
	run_case(NEVER);
}

static void test_no_receiver_board(void **state)
{
	(void)state;
	run_case(NO_BOARD);
}

static void test_killed_sender(void **state)
{
	(void)state;
	run_case(KILLED);
}

static void test_timed_out_send(void **state)
{
	(void)state;
	run_case(ORPHAN);
}

static void test_tagged(void **state)
{
	(void)state;
	run_case(TAGGED);
}

static void test_exit_without_close(void **state)
{
	(void)state;
	run_case(EXITED);
}

int main(void)
{
	const char *tdev = getenv("FPGACOMM_TEST_DEVICE");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_idle_receiver),
		cmocka_unit_test(test_busy_receiver),
		cmocka_unit_test(test_never_opened),
		cmocka_unit_test(test_no_receiver_board),
		cmocka_unit_test(test_killed_sender),
		cmocka_unit_test(test_exit_without_close),
		cmocka_unit_test(test_timed_out_send),
		cmocka_unit_test(test_tagged),
	};

	printf("test_send_close: messages sent before their sender closed\n");
	if (tdev && *tdev && strncmp(tdev, "emu:", 4)) {
		printf("SKIP: %s: the ranks need an emulated cluster\n", tdev);
		return EXIT_SKIP;
	}
	setenv("FPGACOMM_EMU_MEM", "512M", 0);
	return harness_run(tests, NULL, NULL);
}
