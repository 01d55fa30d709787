// SPDX-License-Identifier: MIT
/*
 * Links: every group's messages between this board and one world peer
 * travel on one channel (FC__GROUP_PORT), so that a process may make as
 * many groups as it likes. Each message starts with a header naming the
 * group by the id its receiver gave it (members tell each other their ids
 * when the group is made) and the group's context, which is checked too;
 * a link's receiver hands each message to the step of that group that
 * waits for it, or keeps it on the group's queue until one does.
 *
 * A link starts with a handshake, so that what an earlier job left in the
 * channel is not taken for this job's: boards outlive processes, and a
 * message nobody read waits for the next process that opens the port.
 * Each side draws a nonce and sends it (HELLO); each echoes every HELLO it
 * reads (ECHO) and drops everything else until the peer has echoed its
 * own: the peer's HELLO came before that echo on the same channel, so
 * everything after it is this job's. The handshake runs as part of the
 * progress of whatever collective first needs the link: no call waits
 * for it, a send to the peer is posted once the link is ready.
 *
 * A payload sent apart from its header is always the next message on the
 * link: it is received as soon as its header is read, into the waiting
 * step's buffer (straight, by rendezvous for large ones) or, when no step
 * waits yet, into a buffer of the queued message.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "coll_internal.h"
#include "chan.h"

struct hdr {
	uint32_t id, ctx, seq, sig, len; /* little endian */
};

struct hello {
	uint32_t id;	 /* HELLO_ID: no group has it */
	uint32_t lo, hi; /* the nonce, little endian */
	uint32_t kind;
};

_Static_assert(sizeof(struct hdr) == FC__HDR_LEN, "header size");

#define HELLO_ID   0xffffffffu
#define KIND_HELLO 0x48454c4fu
#define KIND_ECHO  0x4543484fu
#define LINK_BUF   (FC__HDR_LEN + FC__COMBINE_MAX)

/* A detached message waiting for its link's handshake. */
struct fc__pend {
	struct fc__pend *next;
	size_t len;
	uint8_t data[];
};

/* Links started and not ready yet, in the process: progress looks at
 * them even with no collective queued. */
static unsigned int unready;

static bool debug(void)
{
	static int on = -1;

	if (on < 0)
		on = getenv("FPGACOMM_COLL_DEBUG") != NULL;
	return on;
}

int fc__coll_req_test(struct fc__coll_dev *cd, struct fc_req *r, size_t *len)
{
	return cd->peek ? fc__req_peek(r, len) : fc_req_test(r, len);
}

/* ---- Headers ---- */

void fc__hdr_fill(void *buf, const struct fc_coll_req *req,
		  const struct fc__step *st, uint32_t len)
{
	const struct fc_group *g = req->group;
	struct hdr *h = buf;

	h->id = htole32(g->peer_id[st->peer]);
	h->ctx = htole32(g->ctx);
	h->seq = htole32(req->seq);
	h->sig = htole32(req->sig);
	h->len = htole32(len);
}

void fc__hdr_abort(void *buf, const struct fc_group *g, uint32_t m, int err)
{
	struct hdr *h = buf;

	h->id = htole32(g->peer_id[m]);
	h->ctx = htole32(g->ctx);
	h->seq = htole32(g->seq);
	h->sig = 0;
	h->len = htole32(FC__HDR_ABORT | ((uint32_t)-err & FC__HDR_LENMASK));
}

static bool combined(const struct fc__step *st)
{
	return st->len <= FC__COMBINE_MAX;
}

/*
 * What a member disagreed on, on stderr, when $FPGACOMM_COLL_DEBUG is set:
 * a -EBADMSG alone does not say which rank or field.
 */
static int mismatch(const struct fc_coll_req *req, const struct fc__step *st,
		    const struct hdr *h, size_t got)
{
	if (debug())
		fprintf(stderr,
			"fpgacomm: collective %u of group %#x (rank %u): from "
			"member %u: %zu bytes, ctx %#x seq %u sig %#x len %#x; "
			"expected ctx %#x seq %u sig %#x len %#zx%s\n",
			req->seq, req->group->ctx, req->group->rank, st->peer,
			got, le32toh(h->ctx), le32toh(h->seq), le32toh(h->sig),
			le32toh(h->len), req->group->ctx, req->seq, req->sig,
			st->len, combined(st) ? "" : " (split)");
	return -EBADMSG;
}

/* A header received for @st. RETURN VALUE: 0, or what it says went wrong. */
static int hdr_check(const struct fc_coll_req *req, const struct fc__step *st,
		     const void *msg, size_t got)
{
	const struct hdr *h = msg;
	uint32_t len = le32toh(h->len), want = (uint32_t)st->len;
	int err;

	if (len & FC__HDR_ABORT) {
		err = -(int)(len & FC__HDR_LENMASK);
		/* the sender's reason, where it is one a collective gives */
		return err == -EHOSTDOWN || err == -ETIMEDOUT ||
				       err == -ECANCELED || err == -ENOMEM ?
			       err :
			       -EBADMSG;
	}
	if (!combined(st))
		want |= FC__HDR_SPLIT;
	if (le32toh(h->seq) != req->seq || le32toh(h->sig) != req->sig ||
	    len != want || (combined(st) && got != FC__HDR_LEN + st->len))
		return mismatch(req, st, h, got);
	return 0;
}

static bool split_of(const void *msg)
{
	uint32_t len = le32toh(((const struct hdr *)msg)->len);

	return (len & FC__HDR_SPLIT) && !(len & FC__HDR_ABORT);
}

static size_t split_len(const void *msg)
{
	return le32toh(((const struct hdr *)msg)->len) & FC__HDR_LENMASK;
}

/* ---- Payloads given up ---- */

/*
 * A payload receive nobody wants any more. Its message follows a header
 * already read, so it is waited for (a while): withdrawn, a later
 * payload receive posted on the link would take its message. Where it is
 * withdrawn all the same, its message will reach the link's next header
 * receive: counted, to be dropped there.
 */
static void payload_drop(struct fc__link *l, struct fc_req *req)
{
	int rc = fc_req_wait(req, 5000, NULL);

	if (rc != -ETIMEDOUT)
		return;
	if (!fc_req_cancel(req))
		l->skip++;
}

static void link_resume(struct fc__link *l);

static void umsg_free(struct fc__coll_dev *cd, struct fc__umsg *um)
{
	struct fc__link *l = &cd->links[um->from];

	if (um->req)
		payload_drop(l, um->req);
	if (um->deferred) {
		/* its payload, still in the channel, is read and dropped */
		l->skip++;
		l->stall = NULL;
		link_resume(l);
	}
	free(um->data);
	free(um);
}

/* ---- Links ---- */

static int say(struct fc_chan *ch, uint32_t kind, uint64_t nonce)
{
	struct hello h = { HELLO_ID, htole32((uint32_t)nonce),
			   htole32((uint32_t)(nonce >> 32)), htole32(kind) };

	/* no wait for room or for the peer: it goes on from a copy */
	return fc__chan_send_detached(ch, &h, sizeof(h));
}

static void link_fail(struct fc__link *l, int err)
{
	if (!l->err && l->started && !l->ready)
		unready--;
	if (!l->err)
		l->err = err;
}

static int link_start(struct fc__coll_dev *cd, uint32_t p)
{
	struct fc__link *l = &cd->links[p];
	struct fc__fabric *fab = cd->dev->fab;
	int ret;

	l->started = true;
	unready++;
	l->buf = malloc(LINK_BUF);
	if (!l->buf) {
		link_fail(l, -ENOMEM);
		return -ENOMEM;
	}
	fc__fab_lock(fab);
	ret = fc__chan_open(cd->dev, p, FC__GROUP_PORT, &l->ch);
	fc__fab_unlock(fab);
	if (!ret)
		ret = say(l->ch, KIND_HELLO, cd->nonce);
	if (!ret)
		ret = fc_chan_irecv(l->ch, l->buf, LINK_BUF, &l->rx);
	if (ret)
		link_fail(l, ret);
	l->look = cd->look = true;
	return ret;
}

int fc__links_init(struct fc__coll_dev *cd)
{
	if (getrandom(&cd->nonce, sizeof(cd->nonce), 0) != sizeof(cd->nonce))
		cd->nonce = fc__now_ns() ^ (uint64_t)getpid() << 32;
	cd->links = calloc(cd->size, sizeof(*cd->links));
	for (uint32_t p = 0; cd->links && p < cd->size; p++)
		cd->links[p].cd = cd;
	cd->ids = calloc(16, sizeof(*cd->ids));
	cd->sbuf = malloc(LINK_BUF);
	if (!cd->links || !cd->ids || !cd->sbuf) {
		free(cd->links);
		free(cd->ids);
		free(cd->sbuf);
		cd->links = NULL;
		cd->ids = NULL;
		cd->sbuf = NULL;
		return -ENOMEM;
	}
	cd->nids = 16;
	cd->ids[0] = FC__ID_RESERVED; /* the world's, on every member */
	cd->next_id = 1;
	return 0;
}

void fc__links_want(struct fc_group *g)
{
	struct fc__coll_dev *cd = g->cd;

	/* every member's at once: a send of a later round then never waits
	 * for a member to reach a round with us */
	for (uint32_t m = 0; m < g->size; m++)
		if (!cd->links[g->world[m]].started)
			link_start(cd, g->world[m]);
	g->linked = true;
}

void fc__links_fini(struct fc__coll_dev *cd)
{
	struct fc__umsg *um;
	struct fc__pend *pd;
	uint32_t p;

	for (p = 0; cd->links && p < cd->size; p++)
		link_fail(&cd->links[p], -ECANCELED);
	while ((um = cd->pending)) {
		cd->pending = um->next;
		umsg_free(cd, um);
	}
	for (p = 0; cd->links && p < cd->size; p++) {
		struct fc__link *l = &cd->links[p];

		if (l->rx && fc_req_cancel(l->rx) == -EBUSY &&
		    fc_req_wait(l->rx, 1000, NULL) == -ETIMEDOUT)
			fc_req_cancel(l->rx);
		if (l->ch)
			fc_chan_close(l->ch);
		while ((pd = l->pend)) {
			l->pend = pd->next;
			free(pd);
		}
		free(l->buf);
	}
	free(cd->links);
	free(cd->ids);
	free(cd->sbuf);
	cd->links = NULL;
	cd->ids = NULL;
	cd->sbuf = NULL;
}

int fc__link_chan(struct fc__coll_dev *cd, uint32_t peer, struct fc_chan **chp)
{
	struct fc__link *l = &cd->links[peer];

	if (l->err)
		return l->err;
	if (!l->started && link_start(cd, peer))
		return l->err;
	if (!l->ready)
		return -EAGAIN;
	*chp = l->ch;
	return 0;
}

int fc__link_err(struct fc__coll_dev *cd, uint32_t peer)
{
	return cd->links[peer].err;
}

void fc__link_send_detached(struct fc__coll_dev *cd, uint32_t peer,
			    const void *buf, size_t len)
{
	struct fc__link *l = &cd->links[peer];
	struct fc__pend *pd, **pp;

	if (l->err || (!l->started && link_start(cd, peer)))
		return;
	if (l->ready) {
		fc__chan_send_detached(l->ch, buf, len);
		return;
	}
	pd = malloc(sizeof(*pd) + len);
	if (!pd)
		return;
	pd->next = NULL;
	pd->len = len;
	memcpy(pd->data, buf, len);
	for (pp = &l->pend; *pp; pp = &(*pp)->next)
		;
	*pp = pd;
}

static void link_ready(struct fc__link *l)
{
	struct fc__pend *pd;

	l->ready = true;
	unready--;
	while ((pd = l->pend)) {
		l->pend = pd->next;
		fc__chan_send_detached(l->ch, pd->data, pd->len);
		free(pd);
	}
}

static void handshake(struct fc__coll_dev *cd, struct fc__link *l)
{
	const struct hello *h = (const void *)l->buf;
	uint64_t nonce = (uint64_t)le32toh(h->hi) << 32 | le32toh(h->lo);
	int ret;

	if (le32toh(h->kind) == KIND_HELLO) {
		ret = say(l->ch, KIND_ECHO, nonce);
		if (ret)
			link_fail(l, ret);
	} else if (le32toh(h->kind) == KIND_ECHO && nonce == cd->nonce &&
		   !l->ready) {
		link_ready(l);
	}
}

/* ---- Handing messages to steps ---- */

/* The first step of @g's running round that waits for member @m. */
static struct fc__step *waiting_step(struct fc_group *g, uint32_t m)
{
	struct fc_coll_req *req = g->head;
	struct fc__sched *s;
	unsigned int i;

	if (!req || !req->sched.posted)
		return NULL;
	s = &req->sched;
	for (i = s->cur; i < s->n; i++) {
		struct fc__step *st = &s->steps[i];

		if (st->kind == FC__ST_RECV && st->waiting && st->peer == m)
			return st;
		if (st->round_end)
			break;
	}
	return NULL;
}

/* The header @msg of @got bytes, from @l, for step @st of @req. */
static void take_into(struct fc__link *l, struct fc_coll_req *req,
		      struct fc__step *st, const void *msg, size_t got)
{
	bool split = split_of(msg);
	int ret;

	st->waiting = false;
	l->waiters--;
	ret = hdr_check(req, st, msg, got);
	if (ret) {
		st->err = ret;
		if (split)
			l->skip++;
		return;
	}
	if (!split) {
		if (st->len)
			memcpy(st->dst, (const uint8_t *)msg + FC__HDR_LEN,
			       st->len);
		st->done = true;
		return;
	}
	/* straight into the caller's buffer: the next message is it */
	ret = fc_chan_irecv(l->ch, st->dst, st->len, &st->req[1]);
	if (ret) {
		st->err = ret;
		l->skip++;
	}
}

/* The header in @l's buffer, kept; a payload it announces is left in
 * the channel, and the link stalls behind it. */
static struct fc__umsg *umsg_new(struct fc__link *l, uint32_t from, uint32_t id,
				 size_t got)
{
	struct fc__umsg *um = malloc(sizeof(*um) + got);

	if (!um) {
		if (split_of(l->buf))
			l->skip++;
		return NULL;
	}
	memset(um, 0, sizeof(*um));
	um->from = from;
	um->id = id;
	um->got = got;
	memcpy(um->msg, l->buf, got);
	if (split_of(l->buf)) {
		um->deferred = true;
		l->stall = um;
	}
	return um;
}

/* A stalled link's payload into a buffer of its message: a step waits
 * for something behind it. */
static void land(struct fc__link *l)
{
	struct fc__umsg *um = l->stall;
	size_t plen = split_len(um->msg);
	int ret;

	um->deferred = false;
	l->stall = NULL;
	um->data = malloc(plen ? plen : 1);
	ret = um->data ? fc_chan_irecv(l->ch, um->data, plen, &um->req) :
			 -ENOMEM;
	if (ret) {
		um->status = ret;
		l->skip++;
	}
	link_resume(l);
}

static void queue(struct fc__umsg **head, struct fc__umsg **tail,
		  struct fc__umsg *um)
{
	um->next = NULL;
	if (*tail)
		(*tail)->next = um;
	else
		*head = um;
	*tail = um;
}

static bool member_of(const struct fc_group *g, uint32_t world, uint32_t *m)
{
	for (uint32_t i = 0; i < g->size; i++) {
		if (g->world[i] == world) {
			*m = i;
			return true;
		}
	}
	return false;
}

static void dropped(struct fc__link *l, uint32_t p, size_t got, const char *why)
{
	if (got >= FC__HDR_LEN && l->ready && split_of(l->buf))
		l->skip++;
	if (debug())
		fprintf(stderr, "fpgacomm: link to %u: dropped %zu bytes: %s\n",
			p, got, why);
}

/* A message of a group from @p, in @l's buffer. */
static void route(struct fc__coll_dev *cd, struct fc__link *l, uint32_t p,
		  size_t got)
{
	const struct hdr *h = (const void *)l->buf;
	uint32_t id = le32toh(h->id), m;
	struct fc_group *g = id < cd->nids ? cd->ids[id] : NULL;
	struct fc__umsg *um, **pp;
	struct fc__step *st;

	if (g == FC__ID_RESERVED) {
		/* its group is being made here: kept until it is */
		um = umsg_new(l, p, id, got);
		if (!um)
			return;
		for (pp = &cd->pending; *pp; pp = &(*pp)->next)
			;
		*pp = um;
		return;
	}
	if (!g || le32toh(h->ctx) != g->ctx || !member_of(g, p, &m)) {
		/* a group freed here, or an earlier one with its id */
		dropped(l, p, got, "no such group");
		return;
	}
	st = waiting_step(g, m);
	if (st) {
		take_into(l, g->head, st, l->buf, got);
		return;
	}
	um = umsg_new(l, p, id, got);
	if (um)
		queue(&g->uq_head, &g->uq_tail, um);
}

/* What @l's receive brought: @got bytes, or @too_long. */
static void take(struct fc__coll_dev *cd, struct fc__link *l, uint32_t p,
		 size_t got, bool too_long)
{
	const struct hdr *h = (const void *)l->buf;

	if (l->skip) {
		l->skip--; /* a payload whose header was dropped */
		return;
	}
	if (too_long)
		dropped(l, p, 0, "too long");
	else if (got == sizeof(struct hello) && le32toh(h->id) == HELLO_ID)
		handshake(cd, l);
	else if (!l->ready)
		dropped(l, p, got,
			"before the handshake"); /* an earlier job's */
	else if (got < FC__HDR_LEN)
		dropped(l, p, got, "short");
	else
		route(cd, l, p, got);
}

static bool link_progress(struct fc__coll_dev *cd, uint32_t p)
{
	struct fc__link *l = &cd->links[p];
	bool moved = false;
	size_t got;
	int rc;

	while (l->rx && !l->err) {
		got = 0;
		rc = fc__coll_req_test(cd, l->rx, &got);
		if (rc == -EINPROGRESS)
			break;
		l->rx = NULL;
		moved = true;
		if (rc && rc != -EMSGSIZE) {
			link_fail(l, rc); /* the peer died or left */
			break;
		}
		/* a payload it announces is posted for first */
		take(cd, l, p, rc ? 0 : got, rc == -EMSGSIZE);
		link_resume(l);
	}
	return moved;
}

/* The next header's receive, unless the link stalls or failed. */
static void link_resume(struct fc__link *l)
{
	int rc;

	if (l->rx || l->stall || l->err || !l->ch)
		return;
	rc = fc_chan_irecv(l->ch, l->buf, LINK_BUF, &l->rx);
	if (rc)
		link_fail(l, rc);
	l->look = l->cd->look = true;
}

/* Every link is looked at once in this many passes that look at links:
 * messages nobody waits for yet leave the channel, and the peers'
 * credits come back. */
#define LINK_SWEEP 16

bool fc__links_progress(struct fc__coll_dev *cd, bool board_moved)
{
	bool moved = false, any, all;

	/* a receive ends when the board delivers, or at once when posted */
	any = !cd->peek || board_moved;
	if (!any && !cd->look) {
		for (uint32_t p = 0; p < cd->size; p++) {
			struct fc__link *l = &cd->links[p];

			if (l->stall && l->waiters) {
				land(l);
				moved = true;
			}
		}
		return moved;
	}
	cd->look = false;
	/* Each look costs a lock and a handle; with many peers, looking at
	 * all of them every pass made small collectives slower. */
	all = any && ++cd->sweeps % LINK_SWEEP == 0;
	for (uint32_t p = 0; p < cd->size; p++) {
		struct fc__link *l = &cd->links[p];

		if (l->stall && l->waiters) {
			land(l);
			moved = true;
		}
		if (!l->rx)
			continue;
		if (l->look || (any && (all || l->waiters || !l->ready))) {
			l->look = false;
			moved |= link_progress(cd, p);
		}
	}
	return moved;
}

bool fc__links_unready(void)
{
	return __atomic_load_n(&unready, __ATOMIC_RELAXED) != 0;
}

/* ---- Receive steps ---- */

/* A queued split message's payload has come: into @st. */
static void finish_um(struct fc__coll_dev *cd, struct fc__step *st,
		      struct fc__umsg *um)
{
	if (um->status)
		st->err = um->status == -EMSGSIZE ? -EBADMSG : um->status;
	else if (um->len != st->len)
		st->err = -EBADMSG;
	else if (st->len)
		memcpy(st->dst, um->data, st->len);
	st->done = !st->err;
	umsg_free(cd, um);
}

void fc__recv_arm(struct fc_coll_req *req, struct fc__step *st)
{
	struct fc_group *g = req->group;
	uint32_t p = g->world[st->peer];
	struct fc__umsg *um, *prev = NULL;
	int ret;

	for (um = g->uq_head; um && um->from != p; prev = um, um = um->next)
		;
	if (!um) {
		/* its message may be in the link's receive already */
		st->waiting = true;
		g->cd->links[p].waiters++;
		g->cd->links[p].look = g->cd->look = true;
		return;
	}
	if (prev)
		prev->next = um->next;
	else
		g->uq_head = um->next;
	if (g->uq_tail == um)
		g->uq_tail = prev;
	ret = hdr_check(req, st, um->msg, um->got);
	if (ret) {
		st->err = ret;
		umsg_free(g->cd, um);
	} else if (um->deferred) {
		/* the link's next message: straight into the caller's buffer */
		struct fc__link *l = &g->cd->links[p];

		ret = fc_chan_irecv(l->ch, st->dst, st->len, &st->req[1]);
		if (ret) {
			st->err = ret;
			l->skip++;
		}
		um->deferred = false;
		l->stall = NULL;
		link_resume(l);
		umsg_free(g->cd, um);
	} else if (!split_of(um->msg)) {
		if (st->len)
			memcpy(st->dst, um->msg + FC__HDR_LEN, st->len);
		st->done = true;
		umsg_free(g->cd, um);
	} else if (um->req) {
		st->um = um; /* its payload is still coming */
	} else {
		finish_um(g->cd, st, um);
	}
}

int fc__recv_test(struct fc_coll_req *req, struct fc__step *st, bool *moved)
{
	struct fc_group *g = req->group;
	size_t got = 0;
	int rc;

	if (st->err)
		return st->err;
	if (st->done)
		return 1;
	if (st->um) {
		rc = fc__coll_req_test(g->cd, st->um->req, &got);
		if (rc == -EINPROGRESS)
			return 0;
		*moved = true;
		st->um->req = NULL;
		st->um->status = rc;
		st->um->len = got;
		finish_um(g->cd, st, st->um);
		st->um = NULL;
		return st->err ? st->err : 1;
	}
	if (st->req[1]) {
		rc = fc__coll_req_test(g->cd, st->req[1], &got);
		if (rc == -EINPROGRESS)
			return 0;
		st->req[1] = NULL;
		*moved = true;
		if (rc == -EMSGSIZE)
			return -EBADMSG; /* longer than the members agreed */
		if (rc)
			return rc;
		if (got != st->len)
			return -EBADMSG;
		st->done = true;
		return 1;
	}
	/* waiting: for a message from a peer that is gone, in vain */
	rc = fc__link_err(g->cd, g->world[st->peer]);
	return rc ? rc : 0;
}

void fc__recv_disarm(struct fc_coll_req *req, struct fc__step *st)
{
	struct fc__coll_dev *cd = req->group->cd;

	struct fc__link *l = &cd->links[req->group->world[st->peer]];

	if (st->um)
		umsg_free(cd, st->um);
	if (st->req[1])
		payload_drop(l, st->req[1]);
	if (st->waiting)
		l->waiters--;
	st->um = NULL;
	st->req[1] = NULL;
	st->waiting = st->done = false;
	st->err = 0;
}

void fc__group_msgs_drop(struct fc_group *g)
{
	struct fc__umsg *um;

	while ((um = g->uq_head)) {
		g->uq_head = um->next;
		umsg_free(g->cd, um);
	}
	g->uq_tail = NULL;
}

/* ---- Group ids ---- */

int fc__id_reserve(struct fc__coll_dev *cd, uint32_t *id)
{
	uint32_t i, n = cd->nids;

	for (i = 0; i < n; i++) {
		uint32_t k = (cd->next_id + i) % n;

		if (k && !cd->ids[k]) {
			*id = k;
			goto found;
		}
	}
	/* all taken: twice as many */
	{
		uint32_t cap = n ? 2 * n : 16;
		struct fc_group **t;

		if (cap >= HELLO_ID)
			return -ENOSPC;
		t = realloc(cd->ids, cap * sizeof(*t));
		if (!t)
			return -ENOMEM;
		memset(t + n, 0, (cap - n) * sizeof(*t));
		cd->ids = t;
		cd->nids = cap;
		*id = n ? n : 1;
	}
found:
	cd->ids[*id] = FC__ID_RESERVED;
	cd->next_id = *id + 1; /* a freed id is reused late */
	return 0;
}

void fc__id_bind(struct fc__coll_dev *cd, struct fc_group *g)
{
	struct fc__umsg **pp = &cd->pending, *um;
	uint32_t m;

	cd->ids[g->id] = g;
	/* what came for it while it was being made, in order */
	while ((um = *pp)) {
		if (um->id != g->id) {
			pp = &um->next;
			continue;
		}
		*pp = um->next;
		if (le32toh(((struct hdr *)um->msg)->ctx) == g->ctx &&
		    member_of(g, um->from, &m))
			queue(&g->uq_head, &g->uq_tail, um);
		else
			umsg_free(cd, um);
	}
}

void fc__id_release(struct fc__coll_dev *cd, uint32_t id)
{
	struct fc__umsg **pp = &cd->pending, *um;

	/* id 0 is the world's, on every member */
	cd->ids[id] = id ? NULL : FC__ID_RESERVED;
	while ((um = *pp)) {
		if (um->id == id) {
			*pp = um->next;
			umsg_free(cd, um);
		} else {
			pp = &um->next;
		}
	}
}
