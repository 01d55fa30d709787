// SPDX-License-Identifier: MIT
/*
 * The collective engine: runs every group's schedules over the links
 * (coll_link.c).
 *
 * A schedule is a list of rounds. A round's receives are armed and its
 * sends posted together (a send once its link's handshake has ended);
 * each of its reductions and copies runs, in order, once the messages
 * recorded before it are done (so a round of pieces, each received and
 * then reduced, reduces one piece while the next moves), and the next
 * round starts when all are done. Each group runs one collective at a
 * time, in the order they were started; fc__coll_progress() moves every
 * group's, whichever request is being waited for (MPI's progress rule).
 *
 * Every message starts with a header (coll_link.c): the receiver's id for
 * the group, its context, the collective's number and signature, and the
 * payload's length. A payload of up to COMBINE_MAX bytes travels in the
 * same message, copied once; a larger one follows as a message of its
 * own, straight from and into the caller's buffers (the channel sends it
 * by rendezvous). Payloads are cut into pieces of at most PIECE_MAX bytes
 * when the schedule is made, the same way on both ends.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "coll_internal.h"
#include "internal.h"

#define COMBINE_MAX FC__COMBINE_MAX
#define PIECE_MAX   (8u << 20)

struct scratch {
	struct scratch *next;
	struct fc_mem *mem; /* registered: the memory is there */
	max_align_t data[];
};

/* ---- Recording ---- */

/*
 * A step array of FIRST_CAP steps, kept for the next schedule: an array
 * of 16 steps is a large request for malloc, which then merges its free
 * chunks and may give memory back to the system, every collective.
 */
#define FIRST_CAP 16
static struct fc__step *kept_steps;

static struct fc__step *step_add(struct fc__sched *s, enum fc__step_kind kind)
{
	struct fc__step *st;

	if (s->err)
		return NULL;
	if (!s->cap) {
		s->steps = __atomic_exchange_n(&kept_steps, NULL,
					       __ATOMIC_ACQ_REL);
		if (s->steps)
			s->cap = FIRST_CAP;
	}
	if (s->n == s->cap) {
		unsigned int cap = s->cap ? 2 * s->cap : FIRST_CAP;
		struct fc__step *p = realloc(s->steps, cap * sizeof(*p));

		if (!p) {
			s->err = -ENOMEM;
			return NULL;
		}
		s->steps = p;
		s->cap = cap;
	}
	st = &s->steps[s->n++];
	memset(st, 0, sizeof(*st));
	st->kind = (uint8_t)kind;
	return st;
}

static void comm_add(struct fc__sched *s, enum fc__step_kind kind,
		     uint32_t peer, void *dst, const void *src, size_t len)
{
	do {
		size_t piece = len < PIECE_MAX ? len : PIECE_MAX;
		struct fc__step *st = step_add(s, kind);

		if (!st)
			return;
		st->peer = peer;
		st->dst = dst;
		st->src = src;
		st->len = piece;
		len -= piece;
		if (dst)
			dst = (char *)dst + piece;
		if (src)
			src = (const char *)src + piece;
	} while (len);
}

void fc__sched_send(struct fc__sched *s, uint32_t peer, const void *buf,
		    size_t len)
{
	comm_add(s, FC__ST_SEND, peer, NULL, buf, len);
}

void fc__sched_recv(struct fc__sched *s, uint32_t peer, void *buf, size_t len)
{
	comm_add(s, FC__ST_RECV, peer, buf, NULL, len);
}

void fc__sched_reduce(struct fc__sched *s, void *dst, const void *src,
		      size_t len, bool src_first)
{
	struct fc__step *st;

	if (!len)
		return;
	st = step_add(s, FC__ST_REDUCE);
	if (st) {
		st->dst = dst;
		st->src = src;
		st->len = len;
		st->src_first = src_first;
	}
}

void fc__sched_copy(struct fc__sched *s, void *dst, const void *src, size_t len)
{
	struct fc__step *st;

	if (!len || dst == src)
		return;
	st = step_add(s, FC__ST_COPY);
	if (st) {
		st->dst = dst;
		st->src = src;
		st->len = len;
	}
}

void fc__sched_check(struct fc__sched *s, uint32_t to, uint32_t from)
{
	unsigned int n = s->n, k;

	if (to != FC__NOBODY)
		fc__sched_send(s, to, NULL, 0);
	if (from != FC__NOBODY)
		fc__sched_recv(s, from, NULL, 0);
	k = s->n - n;
	if (s->err || !n || !k)
		return;
	/* move the new steps to the front: they join the first round */
	struct fc__step pair[2] = { s->steps[n], s->steps[s->n - 1] };

	memmove(&s->steps[k], &s->steps[0], n * sizeof(*s->steps));
	s->steps[0] = pair[0];
	s->steps[k - 1] = pair[1];
}

void fc__sched_round(struct fc__sched *s)
{
	if (s->n && !s->err)
		s->steps[s->n - 1].round_end = true;
}

/* Is @buf (non-NULL) in memory the caller registered on @dev? */
static bool registered(struct fc_dev *dev, const void *buf)
{
	struct fc_mem *m;
	uint64_t off;

	if (!buf || buf == FC_IN_PLACE)
		return false;
	m = fc__mem_hold(dev, buf, 1, &off);
	if (m)
		fc__mem_unhold(dev, m);
	return m != NULL;
}

void fc__sched_buffers(struct fc__sched *s, struct fc_group *g,
		       const struct fc__coll_args *a)
{
	if (registered(g->dev, a->recvbuf) || registered(g->dev, a->sendbuf))
		s->reg_dev = g->dev;
}

void *fc__sched_scratch(struct fc__sched *s, size_t len)
{
	bool reg = s->reg_dev && len > COMBINE_MAX;
	struct scratch *sc;

	if (s->err)
		return NULL;
	sc = malloc(sizeof(*sc) + (reg ? 0 : len ? len : 1));
	if (!sc) {
		s->err = -ENOMEM;
		return NULL;
	}
	sc->mem = NULL;
	/* Payloads into it then land by DMA, as into the caller's. */
	if (reg && fc__chan_buf_get(s->reg_dev, len, &sc->mem)) {
		free(sc);
		s->err = -ENOMEM;
		return NULL;
	}
	sc->next = s->scratch;
	s->scratch = sc;
	return sc->mem ? sc->mem->addr : (void *)sc->data;
}

static void sched_free(struct fc__sched *s)
{
	struct scratch *sc, *next;
	unsigned int i;

	for (i = 0; i < s->n; i++)
		free(s->steps[i].stage);
	if (s->cap == FIRST_CAP)
		free(__atomic_exchange_n(&kept_steps, s->steps,
					 __ATOMIC_ACQ_REL));
	else
		free(s->steps);
	for (sc = s->scratch; sc; sc = next) {
		next = sc->next;
		if (sc->mem)
			fc__chan_buf_put(s->reg_dev, sc->mem);
		free(sc);
	}
	memset(s, 0, sizeof(*s));
}

/* ---- Signatures ---- */

/* A word at a time (FNV's byte loop cost more than a small collective's
 * bookkeeping); the fields' bits still reach every bit of the result. */
static uint64_t mixin(uint64_t h, uint64_t v)
{
	h = (h ^ v) * 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

uint32_t fc__coll_signature(const struct fc__coll_args *a)
{
	uint64_t h = 0xcbf29ce484222325ull;

	h = mixin(h, (uint64_t)a->kind << 32 | (uint64_t)a->vector << 31 |
			     a->root);
	h = mixin(h, (uint64_t)a->dtype << 32 | (uint32_t)a->op);
	if (!a->vector)
		h = mixin(h, a->count);
	return (uint32_t)(h ^ (h >> 32));
}

/* ---- Running ---- */

static bool comm(const struct fc__step *st)
{
	return st->kind == FC__ST_SEND || st->kind == FC__ST_RECV;
}

static bool combined(const struct fc__step *st)
{
	return st->len <= COMBINE_MAX;
}

/*
 * Post send step @st on its link. RETURN VALUE: 0; -EAGAIN the link's
 * handshake has not ended (posted later, in step order); an error.
 */
static int send_post(struct fc_coll_req *req, struct fc__step *st)
{
	struct fc_group *g = req->group;
	size_t hl = FC__HDR_LEN;
	struct fc_chan *ch;
	int ret;

	ret = fc__link_chan(g->cd, g->world[st->peer], &ch);
	if (ret)
		return ret;
	st->sent = true;
	if (combined(st)) {
		/* the channel takes the bytes now (into the PIO window, or
		 * a copy of its own), so one buffer serves every send; the
		 * board moves once for the pass, not once per send */
		uint8_t *b = g->cd->sbuf;

		fc__hdr_fill(b, req, st, (uint32_t)st->len);
		if (st->len)
			memcpy(b + hl, st->src, st->len);
		ret = fc__chan_isend_now(ch, b, hl + st->len, &st->req[0]);
		if (ret != -E2BIG)
			return ret;
	}
	st->stage = malloc(combined(st) ? hl + st->len : hl);
	if (!st->stage)
		return -ENOMEM;
	if (combined(st)) {
		fc__hdr_fill(st->stage, req, st, (uint32_t)st->len);
		if (st->len) /* an empty piece may have no buffer */
			memcpy((char *)st->stage + hl, st->src, st->len);
		return fc_chan_isend(ch, st->stage, hl + st->len, &st->req[0]);
	}
	fc__hdr_fill(st->stage, req, st, (uint32_t)st->len | FC__HDR_SPLIT);
	ret = fc_chan_isend(ch, st->stage, hl, &st->req[0]);
	/* @src stays as it is until the step is done: where it is
	 * registered, the board reads it without a copy */
	if (!ret)
		ret = fc__chan_isend_kept(ch, st->src, st->len, &st->req[1]);
	return ret;
}

/* Test a posted send. RETURN VALUE: 1 done, 0 not yet, or its error. */
static int send_test(struct fc__coll_dev *cd, struct fc__step *st, bool *moved)
{
	int i, ret;

	for (i = 0; i < 2; i++) {
		if (!st->req[i])
			continue;
		ret = fc__coll_req_test(cd, st->req[i], NULL);
		if (ret == -EINPROGRESS)
			return 0;
		st->req[i] = NULL;
		*moved = true;
		if (ret)
			return ret;
	}
	return 1;
}

static void step_unpost(struct fc__step *st)
{
	for (int i = 1; i >= 0; i--) {
		if (!st->req[i])
			continue;
		/* -EBUSY: the board is moving the data; it ends in bounded time */
		if (fc_req_cancel(st->req[i]) == -EBUSY &&
		    fc_req_wait(st->req[i], 5000, NULL) == -ETIMEDOUT)
			fc_req_cancel(st->req[i]);
		st->req[i] = NULL;
	}
}

static unsigned int round_end(const struct fc__sched *s)
{
	unsigned int i = s->cur;

	while (i < s->n && !s->steps[i].round_end)
		i++;
	return i < s->n ? i + 1 : s->n;
}

static void run_local(struct fc_coll_req *req, struct fc__step *st)
{
	size_t es = fc__dtype_size(req->dtype);

	if (st->kind == FC__ST_COPY)
		memmove(st->dst, st->src, st->len);
	else if (st->kind == FC__ST_REDUCE)
		fc__reduce(st->dst, st->src, st->len / es, req->dtype, req->op,
			   st->src_first);
}

static void round_unpost(struct fc_coll_req *req)
{
	struct fc__sched *s = &req->sched;
	unsigned int i, end = round_end(s);

	for (i = s->cur; i < end; i++) {
		struct fc__step *st = &s->steps[i];

		if (st->kind == FC__ST_RECV) {
			fc__recv_disarm(req, st);
			continue;
		}
		step_unpost(st);
		st->sent = false;
		free(st->stage);
		st->stage = NULL;
	}
	s->posted = false;
}

/*
 * Move @req along as far as it goes without waiting.
 * RETURN VALUE: 0 ended, -EINPROGRESS not yet, or its error.
 */
static int sched_step(struct fc_coll_req *req, bool *moved)
{
	struct fc__sched *s = &req->sched;
	unsigned int i, end;
	int ret, done;

	while (s->cur < s->n) {
		end = round_end(s);
		if (!s->posted) {
			/* receives first: messages that came early are theirs */
			s->posted = true;
			for (i = s->cur; i < end; i++)
				if (s->steps[i].kind == FC__ST_RECV)
					fc__recv_arm(req, &s->steps[i]);
			*moved = true;
		}
		done = 1;
		for (i = s->cur; i < end; i++) {
			struct fc__step *st = &s->steps[i];

			if (!comm(st)) {
				/* once the messages before it are done:
				 * later ones may still be moving */
				if (done && i >= s->ran) {
					run_local(req, st);
					s->ran = i + 1;
					*moved = true;
				}
				continue;
			}
			if (st->kind == FC__ST_RECV) {
				ret = fc__recv_test(req, st, moved);
			} else if (!st->sent) {
				ret = send_post(req, st);
				if (ret == -EAGAIN) {
					done = 0; /* its link is not ready */
					continue;
				}
				*moved = true;
				ret = ret ? ret :
					    send_test(req->group->cd, st,
						      moved);
			} else {
				ret = send_test(req->group->cd, st, moved);
			}
			if (ret < 0)
				return ret;
			done &= ret;
		}
		if (!done)
			return -EINPROGRESS;
		round_unpost(req);
		s->cur = end;
	}
	return 0;
}

/* ---- Requests and groups ---- */

/* Collectives queued on any group: progress has nothing to do without. */
static unsigned int queued;
/* A collective at the head of its group's queue has posted nothing yet:
 * the next pass posts it before it moves the board (fresh_post()). */
static bool fresh;

static void req_end(struct fc_coll_req *req, int status)
{
	struct fc_group *g = req->group;

	if (req->sched.posted)
		round_unpost(req);
	req->status = status;
	if (g->head == req) {
		queued--;
		g->head = req->next;
		if (!g->head)
			g->tail = NULL;
	}
	req->next = NULL;
}

void fc__group_break(struct fc_group *g, int err)
{
	struct fc_coll_req *req;
	uint8_t h[FC__HDR_LEN];
	uint32_t m;

	if (!g->err)
		g->err = err;
	while ((req = g->head))
		req_end(req, g->err);
	if (g->aborted)
		return;
	g->aborted = true;
	/* Tell every member, so that none waits for us until its timeout:
	 * sent from a copy, with nothing to wait for. */
	for (m = 0; m < g->size; m++) {
		if (m == g->rank)
			continue;
		fc__hdr_abort(h, g, m, err);
		fc__link_send_detached(g->cd, g->world[m], h, sizeof(h));
	}
}

void fc__group_drop(struct fc_group *g)
{
	if (g->head)
		fc__group_break(g, -ECANCELED);
}

int fc__coll_start(struct fc_group *g, struct fc_coll_req *req)
{
	req->group = g;
	req->seq = g->seq++;
	req->status = -EINPROGRESS;
	if (g->err) {
		req->status = g->err;
		return 0;
	}
	if (!g->linked)
		fc__links_want(g);
	if (g->tail) {
		g->tail->next = req;
	} else {
		g->head = req;
		fresh = true;
	}
	g->tail = req;
	queued++;
	return 0;
}

/* Move @g's collectives along as far as they go without waiting. */
static bool group_progress(struct fc_group *g)
{
	bool moved = false;

	while (g->head) {
		struct fc_coll_req *head = g->head;
		int ret = sched_step(head, &moved);

		if (ret == -EINPROGRESS)
			break;
		moved = true;
		if (ret) {
			req_end(head, ret);
			fc__group_break(g, ret);
			break;
		}
		req_end(head, 0);
	}
	return moved;
}

/*
 * Post the first round of every collective that has posted nothing yet,
 * before the board moves: its sends leave now, not after the board has
 * delivered (a copy out of the ring per message) what its peers sent
 * first, and its receives then wait for those messages, which go
 * straight into them rather than onto the group's queue.
 */
static bool fresh_post(struct fc__coll_dev *cd)
{
	struct fc_group *g;
	bool moved = false;

	for (g = cd->groups; g; g = g->next)
		if (g->head && !g->head->sched.posted && !g->head->sched.cur)
			moved |= group_progress(g);
	return moved;
}

bool fc__coll_progress(bool look)
{
	struct fc__coll_dev *cd;
	struct fc_group *g;
	bool moved = false;

	if (!queued && !fc__links_unready())
		return false;
	/* the channel waits and tests below poll nothing more */
	fc__progress_enter();
	for (cd = fc__coll_devs(); cd; cd = cd->next) {
		/* the board once, not once per request (a link per peer) */
		bool board = false;

		cd->peek = !look;
		if (fresh)
			moved |= fresh_post(cd);
		if (!look)
			board = fc_progress(cd->dev) > 0;
		moved |= board | fc__links_progress(cd, board);
		for (g = cd->groups; g; g = g->next)
			if (g->head)
				moved |= group_progress(g);
	}
	fresh = false;
	for (cd = fc__coll_devs(); cd; cd = cd->next)
		cd->peek = false;
	fc__progress_leave();
	return moved;
}

bool fc__coll_poll(void *arg)
{
	bool moved;

	if ((!__atomic_load_n(&queued, __ATOMIC_RELAXED) &&
	     !fc__links_unready()) ||
	    !fc__coll_trylock())
		return false;
	moved = fc__coll_progress(true);
	fc__coll_unlock();
	return moved;
}

int fc__coll_test(struct fc_coll_req *req)
{
	fc__coll_progress(true);
	return req->status;
}

/* Waits look at each request on its own once in this many idle rounds. */
#define FULL_LOOK 32
/* While spinning, the clock is read once in this many rounds: a read
 * costs about as much as a pass that finds nothing new. */
#define CLOCK_LOOKS 8

/*
 * Are there more ranks than CPUs here (the boards of an emulated world
 * are processes of this machine)? Then a rank that waits gives its CPU
 * away at once, not after a spin: the peer it waits for may need it, as
 * MPI libraries do when oversubscribed.
 */
static bool crowded(struct fc__coll_dev *cd)
{
	struct fc_world w;
	long cpus;

	if (cd->crowded < 0) {
		cpus = sysconf(_SC_NPROCESSORS_ONLN);
		cd->crowded = !fc_world_query(cd->dev, &w) && cpus > 0 &&
			      w.size > (unsigned long)cpus;
	}
	return cd->crowded;
}

/*
 * Is the machine busy: more tasks ready to run than CPUs, now (the
 * fourth field of /proc/loadavg, read at most every BUSY_NS)? Then a
 * spin only burns the time slice the peers need, and waits yield too.
 * Lock held: the cache is the process's.
 */
#define BUSY_NS (100 * 1000000ull)

static bool busy(uint64_t now)
{
	static uint64_t read_at;
	static bool was;
	unsigned int running = 0;
	long cpus;
	FILE *f;

	if (read_at && now - read_at < BUSY_NS)
		return was;
	read_at = now;
	was = false;
	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	f = fopen("/proc/loadavg", "re");
	if (!f)
		return false;
	if (fscanf(f, "%*s %*s %*s %u/", &running) == 1 && cpus > 0)
		was = running > (unsigned long)cpus;
	fclose(f);
	return was;
}

int fc__coll_wait(struct fc_coll_req *req, int timeout_ms)
{
	uint64_t deadline = 0, now = fc__now_ns();
	unsigned int round = 0, looks = 0, polls = 0;
	bool moved, yield, full, polled = false;

	if (timeout_ms >= 0)
		deadline = now + (uint64_t)timeout_ms * 1000000ull;
	for (;;) {
		moved = fc__coll_progress(false);
		/* now and then, and once sleeping: each request on its own,
		 * so that a dead peer is noticed; and after the process's
		 * other pollers moved the board (a peek, which looks at the
		 * links only when the board moves in it, misses that) */
		full = !moved && req->status == -EINPROGRESS &&
		       (polled || round > 1 || ++looks % FULL_LOOK == 0);
		if (full)
			moved = fc__coll_progress(true);
		polled = false;
		if (req->status != -EINPROGRESS)
			return req->status;
		if (round > 1 || polls++ % CLOCK_LOOKS == 0)
			now = fc__now_ns();
		if (timeout_ms >= 0 && now >= deadline)
			return -ETIMEDOUT;
		if (moved) {
			round = 0;
			continue;
		}
		yield = round <= 1 && (crowded(req->group->cd) || busy(now));
		/* every board of the process, and what else waits there */
		fc__coll_unlock();
		if (fc__poll_all(FC__COLL_POLL_ARG)) {
			round = 0;
			polled = true;
		} else {
			if (yield)
				sched_yield();
			/* the board hears that we wait only after a pass
			 * that looked at every link: a peek may leave what
			 * the board delivered unseen (it sleeps only with
			 * round > 1, a full pass each) */
			fc__backoff_dev(full ? req->group->dev : NULL, &round,
					now);
		}
		fc__coll_lock();
	}
}

void fc__coll_req_free(struct fc_coll_req *req)
{
	sched_free(&req->sched);
	free(req);
}
