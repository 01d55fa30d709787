// SPDX-License-Identifier: MIT
/*
 * test_credits: end-to-end flow control per (peer, port) (lib/proto/credit.c),
 * as ranks of emulated clusters.
 *
 * - unread: rank 1 never reads channel A while a stream of eager
 *   messages (1 GiB, in 16 KiB messages) flows to it
 *   on channel B from the same sender: B gets through whole and in order,
 *   and the sender's sends on A are held back (some of them have not
 *   ended when B is done: without credits the receiver would have taken
 *   them all into its buffers); once A is read, every message of it
 *   arrives in order (eager, rendezvous and small ones mixed).
 * - a2a: every rank sends to every other, message sizes around the
 *   packet and beyond the window, with the smallest window
 *   (FPGACOMM_CHAN_CREDIT=4096): nothing lost, nothing out of order, no
 *   deadlock, on a 4x4 torus and an 8-board full mesh, with and without
 *   link faults.
 * - many: every rank sends to rank 0, which reads source by source,
 *   slowly: per-source order with a small window.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fpgacomm/fpgacomm.h>
#include "harness.h"
#include "launch.h"

#define PORT_A	  11
#define PORT_B	  12
#define PORT_C	  13
#define PORT_A2A  14
#define PORT_MANY 15
#define NA	  2048 /* messages on the unread channel */
#define B_MSG	  (16u << 10)
#define A2A_MSGS  24
#define MANY_MSGS 300
#define LONG_MS	  120000
#define MAX_RANKS 16

static struct fc_dev *board;
static uint32_t rank, size;
static int failures;

/* The bytes of message @seq from @src on @port: its number first. */
static void pattern(uint8_t *p, size_t len, uint32_t src, uint32_t port,
		    uint32_t seq)
{
	size_t k;

	for (k = 0; k < len; k++)
		p[k] = (uint8_t)(src * 131 + port * 17 + seq * 7 + k);
	if (len >= sizeof(seq))
		memcpy(p, &seq, sizeof(seq));
}

static int same(const uint8_t *p, size_t len, uint32_t src, uint32_t port,
		uint32_t seq, uint8_t *scratch)
{
	pattern(scratch, len, src, port, seq);
	return !memcmp(p, scratch, len);
}

static struct fc_chan *chan(uint32_t peer, uint32_t port)
{
	struct fc_chan *ch = NULL;
	int rc = fc_chan_open(board, peer, port, 0, &ch);

	CHECK(!rc, "fc_chan_open(%u, %u): %s", peer, port, fc_strerror(rc));
	return ch;
}

static size_t a_len(uint32_t i)
{
	static const size_t lens[] = { 8192, 40000, 100, 16000 };

	return lens[i % 4];
}

static uint64_t b_bytes(void)
{
	return 1ull << 30;
}

static void unread_sender(void)
{
	struct fc_chan *a = chan(1, PORT_A), *b = chan(1, PORT_B),
		       *c = chan(1, PORT_C);
	static struct fc_req *req[NA];
	static uint8_t *abuf[NA];
	uint64_t nb = b_bytes() / B_MSG, j;
	uint8_t *buf = malloc(B_MSG), tok;
	unsigned int done = 0, i;
	size_t got;
	int rc;

	for (i = 0; i < NA; i++) {
		abuf[i] = malloc(a_len(i));
		pattern(abuf[i], a_len(i), 0, PORT_A, i);
		rc = fc_chan_isend(a, abuf[i], a_len(i), &req[i]);
		CHECK(!rc, "isend A %u: %s", i, fc_strerror(rc));
	}
	for (j = 0; j < nb && !failures; j++) {
		pattern(buf, B_MSG, 0, PORT_B, (uint32_t)j);
		rc = fc_chan_send(b, buf, B_MSG, LONG_MS);
		CHECK(!rc, "send B %lu: %s", (unsigned long)j, fc_strerror(rc));
	}
	rc = fc_chan_recv(c, &tok, 1, &got, LONG_MS);
	CHECK(!rc, "recv done: %s", fc_strerror(rc));
	for (i = 0; i < NA; i++) {
		rc = fc_req_test(req[i], NULL);
		if (rc == -EINPROGRESS)
			continue;
		CHECK(!rc, "A %u ended with %s", i, fc_strerror(rc));
		req[i] = NULL;
		done++;
	}
	printf("unread: %lu MiB on B while A unread; %u of %u sends on A "
	       "had ended\n",
	       (unsigned long)(nb * B_MSG >> 20), done, NA);
	CHECK(done < NA, "every send on the unread channel ended: no credits");
	rc = fc_chan_send(c, &tok, 1, LONG_MS);
	CHECK(!rc, "send go: %s", fc_strerror(rc));
	for (i = 0; i < NA; i++) {
		if (req[i]) {
			rc = fc_req_wait(req[i], LONG_MS, NULL);
			CHECK(!rc, "wait A %u: %s", i, fc_strerror(rc));
		}
		free(abuf[i]);
	}
	free(buf);
	fc_chan_close(a);
	fc_chan_close(b);
	fc_chan_close(c);
}

static void unread_receiver(void)
{
	struct fc_chan *a = chan(0, PORT_A), *b = chan(0, PORT_B),
		       *c = chan(0, PORT_C);
	uint64_t nb = b_bytes() / B_MSG, j;
	uint8_t *buf = malloc(64u << 10), *want = malloc(64u << 10), tok = 1;
	unsigned int i;
	size_t got;
	int rc;

	for (j = 0; j < nb && !failures; j++) {
		rc = fc_chan_recv(b, buf, B_MSG, &got, LONG_MS);
		CHECK(!rc && got == B_MSG, "recv B %lu: %s, %zu bytes",
		      (unsigned long)j, fc_strerror(rc), got);
		CHECK(same(buf, B_MSG, 0, PORT_B, (uint32_t)j, want),
		      "B %lu: wrong bytes or order", (unsigned long)j);
	}
	rc = fc_chan_send(c, &tok, 1, LONG_MS);
	CHECK(!rc, "send done: %s", fc_strerror(rc));
	rc = fc_chan_recv(c, &tok, 1, &got, LONG_MS);
	CHECK(!rc, "recv go: %s", fc_strerror(rc));
	for (i = 0; i < NA && !failures; i++) {
		rc = fc_chan_recv(a, buf, 64u << 10, &got, LONG_MS);
		CHECK(!rc && got == a_len(i), "recv A %u: %s, %zu bytes", i,
		      fc_strerror(rc), got);
		CHECK(same(buf, a_len(i), 0, PORT_A, i, want),
		      "A %u: wrong bytes or order", i);
	}
	free(buf);
	free(want);
	fc_chan_close(a);
	fc_chan_close(b);
	fc_chan_close(c);
}

static size_t a2a_len(uint32_t src, uint32_t dst, uint32_t i)
{
	static const size_t lens[] = { 1, 60, 61, 1000, 3000, 5000, 120 };

	return lens[(src + dst + i) % 7];
}

/* Everybody to everybody on one port, all sends posted before any wait. */
static void all_to_all(void)
{
	static struct fc_chan *ch[MAX_RANKS];
	static struct fc_req *sreq[MAX_RANKS][A2A_MSGS];
	static uint8_t *sbuf[MAX_RANKS][A2A_MSGS];
	uint8_t *buf = malloc(8192), *want = malloc(8192);
	uint32_t p, i, from;
	size_t got;
	int rc;

	for (p = 0; p < size; p++)
		ch[p] = p == rank ? NULL : chan(p, PORT_A2A);
	for (i = 0; i < A2A_MSGS; i++) {
		for (p = 0; p < size; p++) {
			if (p == rank)
				continue;
			sbuf[p][i] = malloc(a2a_len(rank, p, i));
			pattern(sbuf[p][i], a2a_len(rank, p, i), rank, p, i);
			rc = fc_chan_isend(ch[p], sbuf[p][i],
					   a2a_len(rank, p, i), &sreq[p][i]);
			CHECK(!rc, "isend to %u: %s", p, fc_strerror(rc));
		}
	}
	for (i = 0; i < A2A_MSGS && !failures; i++) {
		for (from = 0; from < size; from++) {
			if (from == rank)
				continue;
			rc = fc_chan_recv(ch[from], buf, 8192, &got, LONG_MS);
			CHECK(!rc && got == a2a_len(from, rank, i),
			      "recv %u from %u: %s, %zu bytes", i, from,
			      fc_strerror(rc), got);
			CHECK(same(buf, got, from, rank, i, want),
			      "message %u from %u: wrong bytes or order", i,
			      from);
		}
	}
	for (p = 0; p < size; p++) {
		for (i = 0; p != rank && i < A2A_MSGS; i++) {
			rc = fc_req_wait(sreq[p][i], LONG_MS, NULL);
			CHECK(!rc, "send %u to %u: %s", i, p, fc_strerror(rc));
			free(sbuf[p][i]);
		}
		if (ch[p])
			fc_chan_close(ch[p]);
	}
	free(buf);
	free(want);
}

/* Everybody to rank 0, which reads one source after the other. */
static void many_to_one(void)
{
	uint8_t *buf = malloc(8192), *want = malloc(8192);
	struct fc_chan *ch;
	uint32_t p, i;
	size_t got, len;
	int rc;

	if (rank) {
		ch = chan(0, PORT_MANY);
		for (i = 0; i < MANY_MSGS && !failures; i++) {
			len = a2a_len(rank, 0, i);
			pattern(buf, len, rank, PORT_MANY, i);
			rc = fc_chan_send(ch, buf, len, LONG_MS);
			CHECK(!rc, "send %u: %s", i, fc_strerror(rc));
		}
		fc_chan_close(ch);
	}
	for (p = 1; rank == 0 && p < size; p++) {
		ch = chan(p, PORT_MANY);
		for (i = 0; i < MANY_MSGS && !failures; i++) {
			rc = fc_chan_recv(ch, buf, 8192, &got, LONG_MS);
			CHECK(!rc && got == a2a_len(p, 0, i),
			      "recv %u from %u: %s, %zu bytes", i, p,
			      fc_strerror(rc), got);
			CHECK(same(buf, got, p, PORT_MANY, i, want),
			      "message %u from %u: wrong bytes or order", i, p);
			if (i % 64 == 0)
				usleep(1000);
		}
		fc_chan_close(ch);
	}
	free(buf);
	free(want);
}

static int run_rank(const char *mode)
{
	struct fc_world w;
	int rc = fc_open(&board, NULL);

	if (rc) {
		fprintf(stderr, "fc_open: %s\n", fc_strerror(rc));
		return 1;
	}
	rc = fc_world_query(board, &w);
	if (rc || w.size > MAX_RANKS) {
		fprintf(stderr, "fc_world_query: %s\n", fc_strerror(rc));
		return 1;
	}
	rank = w.rank;
	size = w.size;
	if (!strcmp(mode, "unread"))
		rank ? unread_receiver() : unread_sender();
	else if (!strcmp(mode, "a2a"))
		all_to_all();
	else
		many_to_one();
	rc = fc_barrier(board, LONG_MS);
	CHECK(!rc, "barrier: %s", fc_strerror(rc));
	if (rank == 0 || failures)
		printf("rank %u: %s %s (%d failures)\n", rank, mode,
		       failures ? "FAIL" : "ok", failures);
	fc_close(board);
	return failures ? 1 : 0;
}

struct shape {
	const char *mode;
	int ranks;
	const char *topo, *faults, *window;
	const char *greet; /* FPGACOMM_CHAN_GREET */
};

static const struct shape shapes[] = {
	{ "unread", 2, NULL, NULL, NULL, NULL },
	{ "a2a", 16, "torus:4x4", NULL, "4096", NULL },
	{ "a2a", 8, "full:8", NULL, "4096", NULL },
	{ "a2a", 8, "full:8", "drop=0.01,corrupt=0.01", "4096", "1" },
	{ "a2a", 16, "torus:4x4", "drop=0.005,corrupt=0.005", "4096", NULL },
	{ "many", 5, "torus:5x1", NULL, "4096", "1" },
};

int main(int argc, char **argv)
{
	char self[PATH_MAX], run[PATH_MAX + 32];
	const char *mode = getenv("FPGACOMM_CREDIT_TEST");
	int worst = 0, rc;
	size_t i;

	(void)argc;
	(void)argv;
	if (getenv("FPGACOMM_RANK"))
		return run_rank(mode ? mode : "many");
	printf("test_credits: end-to-end flow control per (peer, port)\n");
	rc = harness_find_run(self, sizeof(self), run, sizeof(run));
	if (rc)
		return rc;
	for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		const struct shape *s = &shapes[i];
		const char *const env[] = {
			"FPGACOMM_CREDIT_TEST",
			s->mode,
			"FPGACOMM_CHAN_CREDIT",
			s->window,
			"FPGACOMM_CHAN_GREET",
			s->greet,
			NULL,
		};

		printf("== %s: %d ranks, %s%s%s%s\n", s->mode, s->ranks,
		       s->topo ? s->topo : "default",
		       s->faults ? ", faults " : "", s->faults ? s->faults : "",
		       s->greet ? ", greeting" : "");
		rc = harness_launch_ranks(run, self, s->ranks, s->topo,
					  s->faults, env);
		worst = rc > worst ? rc : worst;
	}
	return worst;
}
