// SPDX-License-Identifier: MIT
/*
 * A group's first collective starts with a handshake that gives the group
 * a context number no earlier job on the same boards had, and reads away
 * what such a job left in the group's channels.
 *
 * Boards outlive the processes that use them: a message that an earlier
 * job sent on a group port and nobody read may wait for the next process
 * that opens the port, and a group made the same way has the same base
 * context, so the leftover would be taken for a message of this job. So
 * each member draws a 64-bit nonce and sends
 * it to every other member (HELLO); each member echoes every HELLO it
 * reads (ECHO) and drops anything else it finds before it. A member is
 * done with a peer once the peer has echoed its own nonce: the peer's
 * HELLO came before that echo on the same channel, so the last HELLO read
 * from the peer is this job's, whatever stale ones came before. The
 * context is then a hash of the group's base and every member's nonce,
 * the same on all members.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "coll_internal.h"
#include "internal.h"

struct hello {
	uint32_t zero;	 /* where a message's context is: never 0 */
	uint32_t lo, hi; /* the nonce, little endian */
	uint32_t kind;
};

#define KIND_HELLO 0x48454c4fu
#define KIND_ECHO  0x4543484fu

struct peer_state {
	struct fc_req *rx;
	struct hello in;
	uint64_t nonce; /* the last HELLO read */
	bool have, done;
};

static uint64_t nonce_of(const struct hello *h)
{
	return (uint64_t)le32toh(h->hi) << 32 | le32toh(h->lo);
}

static int say(struct fc_chan *ch, uint32_t kind, uint64_t nonce)
{
	struct hello h = { 0, htole32((uint32_t)nonce),
			   htole32((uint32_t)(nonce >> 32)), htole32(kind) };

	/* no wait for room or for the peer: it goes on from a copy */
	return fc__chan_send_detached(ch, &h, sizeof(h));
}

/* One message from @m: RETURN VALUE 0 or an error of the channel. */
static int take(struct fc_group *g, uint32_t m, struct peer_state *p,
		uint64_t mine, size_t got, int status)
{
	struct fc_chan *ch = g->chans[m];
	uint32_t kind = le32toh(p->in.kind);
	bool used = false;

	p->rx = NULL;
	if (status && status != -EMSGSIZE)
		return status;
	if (!status && got == sizeof(p->in) && !p->in.zero) {
		if (kind == KIND_HELLO) {
			int ret;

			p->nonce = nonce_of(&p->in);
			p->have = used = true;
			ret = say(ch, KIND_ECHO, p->nonce);
			if (ret)
				return ret;
		} else if (kind == KIND_ECHO) {
			used = nonce_of(&p->in) == mine;
			p->done = used && p->have;
		}
	}
	/* anything else was left by an earlier job: dropped */
	if (!used && getenv("FPGACOMM_COLL_DEBUG"))
		fprintf(stderr,
			"fpgacomm: group %#x handshake (rank %u): dropped from "
			"member %u: status %d, %zu bytes\n",
			g->ctx, g->rank, m, status, got);
	return p->done ? 0 : fc_chan_irecv(ch, &p->in, sizeof(p->in), &p->rx);
}

static uint32_t fold(uint32_t h, uint64_t v)
{
	for (int i = 0; i < 8; i++, v >>= 8)
		h = (h ^ (uint8_t)v) * 16777619u;
	return h;
}

int fc__group_hello(struct fc_group *g, int timeout_ms)
{
	uint64_t mine, deadline = fc__now_ns() + (uint64_t)timeout_ms * 1000000;
	struct peer_state *st;
	unsigned int round = 0, left;
	uint32_t m, ctx;
	int ret = 0;

	if (g->size == 1 || g->hello_done)
		return 0;
	if (getrandom(&mine, sizeof(mine), 0) != sizeof(mine))
		mine = fc__now_ns() ^ (uint64_t)getpid() << 32;
	st = calloc(g->size, sizeof(*st));
	if (!st)
		return -ENOMEM;
	for (m = 0; m < g->size && !ret; m++) {
		struct fc_chan *ch;

		if (m == g->rank)
			continue;
		ret = fc__group_chan(g, m, &ch);
		if (!ret)
			ret = say(ch, KIND_HELLO, mine);
		if (!ret)
			ret = fc_chan_irecv(ch, &st[m].in, sizeof(st[m].in),
					    &st[m].rx);
	}
	for (left = g->size - 1; !ret && left;) {
		bool moved = false;
		size_t got = 0;

		for (m = 0; m < g->size && !ret; m++) {
			int rc;

			if (m == g->rank || st[m].done)
				continue;
			rc = fc_req_test(st[m].rx, &got);
			if (rc == -EINPROGRESS)
				continue;
			moved = true;
			ret = take(g, m, &st[m], mine, got, rc);
			left -= st[m].done;
		}
		if (ret || !left)
			break;
		if (timeout_ms >= 0 && fc__now_ns() >= deadline) {
			ret = -ETIMEDOUT;
			break;
		}
		if (moved)
			round = 0;
		fc__coll_unlock();
		fc__backoff_dev(g->dev, &round, fc__now_ns());
		fc__coll_lock();
	}
	for (m = 0; m < g->size; m++)
		if (st[m].rx && fc_req_cancel(st[m].rx) == -EBUSY)
			fc_req_wait(st[m].rx, 1000, NULL);
	if (!ret) {
		ctx = fold(2166136261u ^ g->ctx, 0);
		for (m = 0; m < g->size; m++)
			ctx = fold(ctx, m == g->rank ? mine : st[m].nonce);
		g->ctx = ctx ? ctx : 1; /* 0 marks a handshake message */
		g->hello_done = true;
	}
	free(st);
	return ret;
}
