// SPDX-License-Identifier: MIT
/*
 * test_tagged: tagged messages with MPI's matching (fc_tag_*), as ranks
 * under fpgacomm-run (3 ranks full mesh, 4 on a 2x2 torus with link
 * faults): directed ping-pong of 0 B .. 17 MiB around the eager limit and
 * the channel's message limit, data checked; receives from any rank
 * (per-source order kept, every message once); ignore bits; messages
 * that came before their receive (small and large) taken by later
 * receives out of order; probe, claim and the claimed message's receive
 * (and a discard); cut-off receives (-EMSGSIZE, the first bytes there,
 * olen right, the next message whole); the two matching spaces; cancel;
 * the sender's rank and port and its data on the receive; receives that
 * name the sender's port too (fc_tag_recv_from, fc_tag_probe_from: two
 * endpoints of one rank, each message to its own receive); bad input and a
 * port already taken; last, a rank that dies without closing (a receive
 * directed at it ends with -EHOSTDOWN, a send to it is refused).
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fpgacomm/fpgacomm.h>

#include "launch.h"

#define T_MS  30000
#define PORT  5
#define PORT2 9

static struct fc_dev *dev;
static struct fc_tag_ep *ep;
static uint32_t rank, size;
static int failures;

static void fill(uint8_t *b, size_t len, uint64_t salt)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t x = mix(salt + i);

		memcpy(b + i, &x, len - i < 8 ? len - i : 8);
	}
}

static bool same(const uint8_t *b, size_t len, uint64_t salt)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t x = mix(salt + i);

		if (memcmp(b + i, &x, len - i < 8 ? len - i : 8))
			return false;
	}
	return true;
}

/* The next completion, waited for. */
static int next(struct fc_tag_cqe *c)
{
	int rc = fc_tag_wait(ep, T_MS);

	if (rc)
		return rc;
	rc = fc_tag_poll(ep, c, 1);
	return rc == 1 ? 0 : -EIO;
}

/* Wait for the completion of @ctx (others are not expected). */
static void wait_ctx(void *ctx, int want, struct fc_tag_cqe *out)
{
	struct fc_tag_cqe c;

	CHECK_RC(next(&c), 0);
	CHECK(c.ctx == ctx, "completion of %p, expected %p", c.ctx, ctx);
	CHECK(c.status == want, "status %d (%s), expected %d", c.status,
	      fc_strerror(c.status), want);
	if (out)
		*out = c;
}

static void sync_all(void)
{
	CHECK_RC(fc_barrier(dev, T_MS), 0);
}

static const size_t pp_sizes[] = { 0,
				   1,
				   8,
				   60,
				   4096,
				   16352,
				   16353,
				   16384,
				   100000,
				   (1u << 20) + 3,
				   (17u << 20) + 5 };

static void test_pingpong(uint8_t *sb, uint8_t *rb)
{
	uint32_t peer = rank ^ 1;
	struct fc_tag_cqe c;
	int s, r;

	if (peer >= size)
		goto out;
	for (size_t i = 0; i < sizeof(pp_sizes) / sizeof(pp_sizes[0]); i++) {
		size_t n = pp_sizes[i];
		uint64_t salt = (uint64_t)n << 8 | (rank & ~1u);

		if (rank & 1) {
			memset(rb, 0, n + 16);
			CHECK_RC(fc_tag_recv(ep, peer, rb, n + 16, 77, 0, 0, &r,
					     0),
				 0);
			wait_ctx(&r, 0, &c);
			CHECK(c.len == n && c.olen == 0 && c.tag == 77 &&
				      c.node == peer && c.port == PORT,
			      "size %zu: len %llu olen %llu tag %llu from %u:%u",
			      n, (unsigned long long)c.len,
			      (unsigned long long)c.olen,
			      (unsigned long long)c.tag, c.node, c.port);
			CHECK(same(rb, n, salt), "size %zu: data differ", n);
			CHECK(c.flags == FC_TAG_CQE_RECV, "flags %x", c.flags);
			CHECK_RC(fc_tag_send(ep, peer, PORT, rb, n, 78, 0, 0,
					     &s, 0),
				 0);
			wait_ctx(&s, 0, &c);
			CHECK(c.flags == FC_TAG_CQE_SEND && c.len == n,
			      "send entry flags %x len %llu", c.flags,
			      (unsigned long long)c.len);
		} else {
			fill(sb, n, salt);
			CHECK_RC(fc_tag_send(ep, peer, PORT, sb, n, 77, 0, 0,
					     &s, 0),
				 0);
			wait_ctx(&s, 0, NULL);
			memset(rb, 0, n);
			CHECK_RC(fc_tag_recv(ep, peer, rb, n, 78, 0, 0, &r, 0),
				 0);
			wait_ctx(&r, 0, &c);
			CHECK(c.len == n && same(rb, n, salt),
			      "size %zu: echo wrong (len %llu)", n,
			      (unsigned long long)c.len);
		}
	}
out:
	sync_all();
}

/* Every other rank sends 20 messages to rank 0, which takes them from any
 * rank: each once, each source's in order. */
static void test_any_source(void)
{
	enum {
		N = 20
	};
	uint64_t v;
	int seen[FC_MAX_NODES] = { 0 };
	struct fc_tag_cqe c;

	if (rank == 0) {
		for (uint32_t i = 0; i < (size - 1) * N; i++) {
			CHECK_RC(fc_tag_recv(ep, FC_TAG_ANY_NODE, &v, sizeof(v),
					     0x500, 0xff, 0, &v, 0),
				 0);
			wait_ctx(&v, 0, &c);
			if (c.node == 0 || c.node >= size) {
				CHECK(0, "from rank %u", c.node);
				continue;
			}
			CHECK(c.tag == (0x500 | c.node) &&
				      (v == ((uint64_t)c.node << 32 |
					     (uint64_t)seen[c.node])),
			      "from %u: tag %llx value %llx, expected #%d",
			      c.node, (unsigned long long)c.tag,
			      (unsigned long long)v, seen[c.node]);
			seen[c.node]++;
		}
		for (uint32_t n = 1; n < size; n++)
			CHECK(seen[n] == N, "%d messages from %u", seen[n], n);
	} else {
		for (int i = 0; i < N; i++) {
			v = (uint64_t)rank << 32 | (uint64_t)i;
			/* inject: copied at once, no completion */
			CHECK_RC(fc_tag_send(ep, 0, PORT, &v, sizeof(v),
					     0x500 | rank, 0, FC_TAG_F_INJECT,
					     NULL, 0),
				 0);
		}
		CHECK_RC(fc_tag_poll(ep, &c, 1), 0);
	}
	sync_all();
}

/*
 * Rank 1 sends tags 1 (small), 2 (large), 3 (small), 4 (large), with
 * data, before rank 0 posts anything; rank 0 then takes 4, 2, 3, 1
 * (ignore bits matching none of the others), and a receive for tag 0x13
 * with ignore 0x0f matches nothing of 0x2x.
 */
static void test_unexpected(uint8_t *sb, uint8_t *rb)
{
	static const size_t len[5] = { 0, 100, 300000, 5000, 2u << 20 };
	static const uint64_t order[4] = { 4, 2, 3, 1 };
	struct fc_tag_cqe c;
	int ctx[5];

	if (size < 2)
		return;
	if (rank == 1) {
		size_t off = 0;

		for (uint64_t t = 1; t <= 4; t++) {
			fill(sb + off, len[t], t);
			CHECK_RC(fc_tag_send(ep, 0, PORT, sb + off, len[t],
					     0x20 | t, 1000 + t, FC_TAG_F_DATA,
					     &ctx[t], 0),
				 0);
			off += len[t];
		}
		for (int i = 0; i < 4; i++)
			CHECK_RC(next(&c), 0);
	}
	sync_all(); /* all of it sent: unexpected at rank 0 */
	if (rank == 0) {
		struct fc_tag_cqe info;

		CHECK_RC(fc_tag_probe(ep, 1, 0x13, 0x0f, 0, &info, NULL),
			 -ENOMSG);
		for (int i = 0; i < 4; i++) {
			uint64_t t = order[i];

			CHECK_RC(fc_tag_recv(ep, 1, rb, 4u << 20, 0x20 | t, 0,
					     0, &ctx[t], 0),
				 0);
			wait_ctx(&ctx[t], 0, &c);
			CHECK(c.len == len[t] && same(rb, len[t], t) &&
				      c.tag == (0x20 | t) &&
				      (c.flags & FC_TAG_CQE_DATA) &&
				      c.data == 1000 + t,
			      "tag %llu: len %llu data %llu flags %x",
			      (unsigned long long)t, (unsigned long long)c.len,
			      (unsigned long long)c.data, c.flags);
		}
	}
	sync_all();
}

/* Probe, claim, and the claimed message's receive; a discard. */
static void test_probe_claim(uint8_t *sb, uint8_t *rb)
{
	struct fc_tag_msg *msg = NULL, *msg2 = NULL;
	struct fc_tag_cqe info, c;
	int s[3], r, r2, d;

	if (size < 2)
		return;
	if (rank == 1) {
		fill(sb, 70000, 9);
		CHECK_RC(fc_tag_send(ep, 0, PORT, sb, 70000, 0x900, 0, 0, &s[0],
				     0),
			 0);
		CHECK_RC(fc_tag_send(ep, 0, PORT, sb, 10, 0x900, 0, 0, &s[1],
				     0),
			 0);
		CHECK_RC(fc_tag_send(ep, 0, PORT, sb, 30, 0x901, 0, 0, &s[2],
				     0),
			 0);
		for (int i = 0; i < 3; i++)
			CHECK_RC(next(&c), 0);
	}
	sync_all();
	if (rank == 0) {
		CHECK_RC(fc_tag_probe(ep, 0, 0x900, 0, 0, &info, NULL),
			 -ENOMSG);
		/* a peek leaves it there */
		CHECK_RC(fc_tag_probe(ep, FC_TAG_ANY_NODE, 0x900, 0, 0, &info,
				      NULL),
			 0);
		CHECK(info.len == 70000 && info.node == 1 && info.tag == 0x900,
		      "peek: len %llu from %u", (unsigned long long)info.len,
		      info.node);
		CHECK_RC(fc_tag_probe(ep, 1, 0x900, 0, FC_TAG_F_CLAIM, &info,
				      &msg),
			 0);
		CHECK(info.len == 70000, "claimed len %llu",
		      (unsigned long long)info.len);
		/* the claimed one is no longer matched: the 10-byte one is */
		CHECK_RC(fc_tag_recv(ep, 1, rb, 100, 0x900, 0, 0, &r, 0), 0);
		wait_ctx(&r, 0, &c);
		CHECK(c.len == 10, "after the claim, len %llu",
		      (unsigned long long)c.len);
		memset(rb, 0, 70000);
		CHECK_RC(fc_tag_recv_msg(ep, msg, rb, 70000, &r2, 0), 0);
		wait_ctx(&r2, 0, &c);
		CHECK(c.len == 70000 && same(rb, 70000, 9) && c.tag == 0x900,
		      "claimed: len %llu", (unsigned long long)c.len);
		CHECK_RC(fc_tag_recv_msg(ep, msg, rb, 10, &r2, 0), -EINVAL);
		/* claim and discard */
		CHECK_RC(fc_tag_probe(ep, 1, 0x901, 0, FC_TAG_F_CLAIM, &info,
				      &msg2),
			 0);
		CHECK_RC(fc_tag_recv_msg(ep, msg2, NULL, 0, &d, 0), 0);
		wait_ctx(&d, 0, &c);
		CHECK(c.len == 0 && c.olen == 30, "discard: len %llu olen %llu",
		      (unsigned long long)c.len, (unsigned long long)c.olen);
		CHECK_RC(fc_tag_probe(ep, 1, 0x901, 0, 0, &info, NULL),
			 -ENOMSG);
	}
	sync_all();
}

/* Longer than the receive: the first bytes, the rest counted, then the
 * next message whole; small and large. */
static void test_truncate(uint8_t *sb, uint8_t *rb)
{
	static const size_t len[2] = { 100, 1u << 20 };
	struct fc_tag_cqe c;
	int s, r;

	if (size < 2)
		return;
	for (int i = 0; i < 2; i++) {
		if (rank == 1) {
			fill(sb, len[i], 50 + i);
			CHECK_RC(fc_tag_send(ep, 0, PORT, sb, len[i], 0x77, 0,
					     0, &s, 0),
				 0);
			wait_ctx(&s, 0, NULL);
			fill(sb, 64, 60 + i);
			CHECK_RC(fc_tag_send(ep, 0, PORT, sb, 64, 0x77, 0, 0,
					     &s, 0),
				 0);
			wait_ctx(&s, 0, NULL);
		} else if (rank == 0) {
			memset(rb, 0xee, 2000);
			CHECK_RC(fc_tag_recv(ep, 1, rb, 10 + 990 * i, 0x77, 0,
					     0, &r, 0),
				 0);
			wait_ctx(&r, -EMSGSIZE, &c);
			CHECK(c.len == (uint64_t)(10 + 990 * i) &&
				      c.olen == (uint64_t)len[i] - c.len &&
				      same(rb, c.len, 50 + i) &&
				      rb[c.len] == 0xee,
			      "cut: len %llu olen %llu",
			      (unsigned long long)c.len,
			      (unsigned long long)c.olen);
			CHECK_RC(fc_tag_recv(ep, 1, rb, 1000, 0x77, 0, 0, &r,
					     0),
				 0);
			wait_ctx(&r, 0, &c);
			CHECK(c.len == 64 && same(rb, 64, 60 + i),
			      "after the cut: len %llu",
			      (unsigned long long)c.len);
		}
	}
	sync_all();
}

/* The two matching spaces never match each other. */
static void test_spaces(void)
{
	struct fc_tag_cqe c;
	uint32_t a = 1, b = 2, v;
	int r;

	if (rank == 1) {
		CHECK_RC(fc_tag_send(ep, 0, PORT, &a, 4, 7, 0,
				     FC_TAG_F_SPACE1 | FC_TAG_F_INJECT, NULL,
				     0),
			 0);
		CHECK_RC(fc_tag_send(ep, 0, PORT, &b, 4, 7, 0, FC_TAG_F_INJECT,
				     NULL, 0),
			 0);
	}
	sync_all();
	if (rank == 0) {
		CHECK_RC(fc_tag_recv(ep, 1, &v, 4, 7, 0, 0, &r, 0), 0);
		wait_ctx(&r, 0, &c);
		CHECK(v == 2, "space 0 got %u", v);
		CHECK_RC(fc_tag_recv(ep, 1, &v, 4, 7, 0, FC_TAG_F_SPACE1, &r,
				     0),
			 0);
		wait_ctx(&r, 0, &c);
		CHECK(v == 1, "space 1 got %u", v);
	}
	sync_all();
}

static void test_cancel(void)
{
	struct fc_tag_cqe c;
	char b[8];
	int r;

	CHECK_RC(fc_tag_recv(ep, FC_TAG_ANY_NODE, b, sizeof(b), 0xdead, 0, 0,
			     &r, 0),
		 0);
	CHECK_RC(fc_tag_cancel(ep, &r), 0);
	wait_ctx(&r, -ECANCELED, &c);
	CHECK_RC(fc_tag_cancel(ep, &r), -ENOENT);
	sync_all();
}

/* Sent from another port: the receive names it. */
static void test_source_port(void)
{
	struct fc_tag_ep *ep2 = NULL;
	struct fc_tag_cqe c;
	uint32_t v = 0;
	int r;

	CHECK_RC(fc_tag_open(dev, PORT2, 0, &ep2), 0);
	sync_all();
	if (rank == size - 1 && ep2) {
		v = 0xabcd;
		CHECK_RC(fc_tag_send(ep2, 0, PORT, &v, sizeof(v), 5, 6,
				     FC_TAG_F_DATA | FC_TAG_F_INJECT, NULL, 0),
			 0);
	} else if (rank == 0) {
		CHECK_RC(fc_tag_recv(ep, size - 1, &v, sizeof(v), 5, 0, 0, &r,
				     42),
			 0);
		wait_ctx(&r, 0, &c);
		CHECK(c.node == size - 1 && c.port == PORT2 && c.data == 6 &&
			      c.uflags == 42 && v == 0xabcd,
		      "from %u:%u data %llu uflags %u v %x", c.node, c.port,
		      (unsigned long long)c.data, c.uflags, v);
	}
	/* ep2's inject must have left before it closes */
	for (int i = 0; i < 50 && ep2; i++)
		fc_tag_poll(ep2, NULL, 0);
	sync_all();
	if (ep2)
		CHECK_RC(fc_tag_close(ep2), 0);
	sync_all();
}

/*
 * Two endpoints of one rank send the same tag to rank 0, whose receives
 * name the sender's port as well (fc_tag_recv_from): each takes its own
 * endpoint's message, the second endpoint's receive posted first, once
 * before the messages come and once after (probe_from finds each).
 */
static void test_from_port(void)
{
	const uint32_t from = size - 1;
	struct fc_tag_ep *ep2 = NULL;
	struct fc_tag_cqe c, info;
	uint32_t v[2], got[2];
	int r[2];

	CHECK_RC(fc_tag_open(dev, PORT2, 0, &ep2), 0);
	for (int late = 0; late < 2 && ep2; late++) {
		sync_all();
		if (rank == from) {
			v[0] = 0xa0 + late;
			v[1] = 0xb0 + late;
			CHECK_RC(fc_tag_send(ep, 0, PORT, &v[0], 4, 0x7e, 0,
					     FC_TAG_F_INJECT, NULL, 0),
				 0);
			CHECK_RC(fc_tag_send(ep2, 0, PORT, &v[1], 4, 0x7e, 0,
					     FC_TAG_F_INJECT, NULL, 0),
				 0);
			for (int i = 0; i < 50; i++)
				fc_tag_poll(ep2, NULL, 0);
		} else if (rank == 0) {
			got[0] = got[1] = 0;
			if (late) {
				/* both here before a receive names them */
				for (int p = 0; p < 2; p++) {
					int rc = -ENOMSG;

					for (int i = 0;
					     i < 30000 && rc == -ENOMSG; i++) {
						rc = fc_tag_probe_from(
							ep, from,
							p ? PORT2 : PORT, 0x7e,
							0, 0, &info, NULL);
						if (rc == -ENOMSG)
							usleep(1000);
					}
					CHECK(rc == 0 &&
						      info.port == (p ? PORT2 :
									PORT),
					      "probe_from port %u: %d, port %u",
					      p ? PORT2 : PORT, rc, info.port);
				}
			}
			CHECK_RC(fc_tag_recv_from(ep, from, PORT2, &got[1], 4,
						  0x7e, 0, 0, &r[1], 0),
				 0);
			CHECK_RC(fc_tag_recv_from(ep, from, PORT, &got[0], 4,
						  0x7e, 0, 0, &r[0], 0),
				 0);
			for (int k = 0; k < 2; k++) {
				CHECK_RC(next(&c), 0);
				CHECK(c.status == 0 &&
					      (c.ctx == &r[0] ||
					       c.ctx == &r[1]) &&
					      c.port == (c.ctx == &r[1] ?
								 PORT2 :
								 PORT),
				      "completion %p status %d port %u", c.ctx,
				      c.status, c.port);
			}
			CHECK(got[0] == 0xa0u + late && got[1] == 0xb0u + late,
			      "%s: port %u's receive got %x, port %u's %x",
			      late ? "after" : "before", PORT, got[0], PORT2,
			      got[1]);
		}
		sync_all();
	}
	if (ep2)
		CHECK_RC(fc_tag_close(ep2), 0);
	sync_all();
}

static void test_bad_input(void)
{
	struct fc_tag_ep *ep2;
	struct fc_tag_cqe c;
	struct fc_chan *ch;
	char b[4] = { 0 };

	CHECK_RC(fc_tag_open(NULL, 1, 0, &ep2), -EINVAL);
	CHECK_RC(fc_tag_open(dev, FC_CHAN_PORTS, 0, &ep2), -EINVAL);
	CHECK_RC(fc_tag_open(dev, 1, 1, &ep2), -EINVAL);
	CHECK_RC(fc_tag_open(dev, PORT, 0, &ep2), -EBUSY);
	CHECK_RC(fc_chan_open(dev, 0, PORT, 0, &ch), -EBUSY);
	CHECK_RC(fc_tag_send(ep, size, PORT, b, 1, 0, 0, 0, NULL, 0), -EINVAL);
	CHECK_RC(fc_tag_send(ep, 0, PORT, NULL, 1, 0, 0, 0, NULL, 0), -EINVAL);
	CHECK_RC(fc_tag_send(ep, 0, PORT, b, 1, 0, 0, 1u << 9, NULL, 0),
		 -EINVAL);
	CHECK_RC(fc_tag_send(ep, 0, PORT, b, FC_TAG_INJECT_MAX + 1, 0, 0,
			     FC_TAG_F_INJECT, NULL, 0),
		 -EMSGSIZE);
	CHECK_RC(fc_tag_send(ep, 0, PORT, b, FC_TAG_MAX_MSG + 1, 0, 0, 0, NULL,
			     0),
		 -EMSGSIZE);
	CHECK_RC(fc_tag_recv(ep, size, b, 1, 0, 0, 0, NULL, 0), -EINVAL);
	CHECK_RC(fc_tag_recv(ep, 0, NULL, 1, 0, 0, 0, NULL, 0), -EINVAL);
	CHECK_RC(fc_tag_recv_from(ep, 0, FC_CHAN_PORTS, b, 1, 0, 0, 0, NULL, 0),
		 -EINVAL);
	CHECK_RC(fc_tag_probe_from(ep, 0, FC_CHAN_PORTS, 0, 0, 0, &c, NULL),
		 -EINVAL);
	CHECK_RC(fc_tag_probe(ep, 0, 0, 0, FC_TAG_F_CLAIM, &c, NULL), -EINVAL);
	CHECK_RC(fc_tag_poll(NULL, &c, 1), -EINVAL);
	CHECK_RC(fc_tag_poll(ep, NULL, 1), -EINVAL);
	CHECK_RC(fc_tag_wait(ep, 0), -ETIMEDOUT);
	CHECK_RC(fc_tag_cancel(NULL, NULL), -EINVAL);
	CHECK_RC(fc_tag_close(NULL), -EINVAL);
	sync_all();
}

/*
 * Last: the highest rank leaves without closing anything (as if it
 * crashed). Rank 0's receive directed at it ends with -EHOSTDOWN in
 * bounded time, a receive from any rank stays posted, and a send to it
 * is refused.
 */
static void test_dead_rank(uint8_t *sb)
{
	uint32_t dead = size - 1;
	struct fc_tag_cqe c;
	int r, a, rc = 0;
	char b[8];

	sync_all();
	if (rank == dead)
		_exit(failures ? 1 : 0);
	if (rank != 0)
		return;
	CHECK_RC(fc_tag_recv(ep, FC_TAG_ANY_NODE, b, 8, 0xd0, 0, 0, &a, 0), 0);
	CHECK_RC(fc_tag_recv(ep, dead, b, 8, 0xd1, 0, 0, &r, 0), 0);
	wait_ctx(&r, -EHOSTDOWN, &c);
	for (int i = 0; i < 100 && rc != -EHOSTDOWN; i++) {
		rc = fc_tag_send(ep, dead, PORT, sb, 8, 1, 0, 0, NULL, 0);
		if (!rc)
			usleep(20 * 1000);
	}
	CHECK(rc == -EHOSTDOWN, "send to a dead rank: %d", rc);
	CHECK_RC(fc_tag_cancel(ep, &a), 0);
}

static int run_rank(void)
{
	struct fc_world w;
	uint8_t *sb, *rb;
	const char *name = getenv("FPGACOMM_DEVICE");

	if (fc_open(&dev, name) || fc_world_query(dev, &w)) {
		fprintf(stderr, "no board or world\n");
		return 1;
	}
	rank = w.rank;
	size = w.size;
	sb = malloc(24u << 20);
	rb = malloc(24u << 20);
	if (!sb || !rb)
		return 1;
	CHECK_RC(fc_tag_open(dev, PORT, 0, &ep), 0);
	if (!ep)
		return 1;
	sync_all();
	test_pingpong(sb, rb);
	test_any_source();
	test_unexpected(sb, rb);
	test_probe_claim(sb, rb);
	test_truncate(sb, rb);
	test_spaces();
	test_cancel();
	test_source_port();
	test_from_port();
	test_bad_input();
	test_dead_rank(sb);
	CHECK_RC(fc_tag_close(ep), 0);
	if (rank == 0 || failures)
		printf("rank %u: %s (%d failures)\n", rank,
		       failures ? "FAIL" : "ok", failures);
	free(sb);
	free(rb);
	fc_close(dev);
	return failures ? 1 : 0;
}

int main(void)
{
	char self[PATH_MAX], run[PATH_MAX + 32];
	int worst = 0, rc;

	if (getenv("FPGACOMM_RANK"))
		return run_rank();
	printf("test_tagged: tagged messages with MPI's matching (fc_tag_*)\n");
	rc = harness_find_run(self, sizeof(self), run, sizeof(run));
	if (rc)
		return rc;
	printf("== 3 ranks, full mesh\n");
	fflush(stdout);
	rc = harness_launch_ranks(run, self, 3, "full:3", NULL, NULL);
	worst = rc > worst ? rc : worst;
	printf("== 4 ranks, torus 2x2, link faults\n");
	fflush(stdout);
	rc = harness_launch_ranks(run, self, 4, "torus:2x2",
				  "drop=0.01,corrupt=0.01", NULL);
	worst = rc > worst ? rc : worst;
	return worst;
}
