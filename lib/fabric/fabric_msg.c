// SPDX-License-Identifier: MIT
/*
 * Messages per (port, source): the state of what arrives from one node on
 * one port, the message being put together from its packets, the
 * complete ones nobody has asked for yet, and the posted receives they
 * are matched against, in order. fabric_rx.c reads the packets and hands
 * them here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport_internal.h"

/* ---- Per-source state ---- */

struct fc__src *fc__src_find(struct fc__fabric *fab, uint32_t port,
			     uint32_t node)
{
	struct fc__port *pt = fab->ports[port];

	return pt ? pt->src[node] : NULL;
}

struct fc__src *fc__src_make(struct fc__fabric *fab, uint32_t port,
			     uint32_t node)
{
	struct fc__port *pt = fab->ports[port];

	if (!pt) {
		pt = calloc(1, sizeof(*pt));
		if (!pt)
			return NULL;
		fab->ports[port] = pt;
	}
	if (!pt->src[node]) {
		struct fc__src *s = calloc(1, sizeof(*s));
		unsigned int id;

		if (!s)
			return NULL;
		s->node = node;
		for (id = 0; id < FC__PROTO_IDS; id++) {
			if (!fab->proto[id].src_init ||
			    !fab->proto[id].src_init(fab, s))
				continue;
			while (id-- > 0)
				if (fab->proto[id].src_fini)
					fab->proto[id].src_fini(fab, s);
			free(s);
			return NULL;
		}
		pt->src[node] = s;
	}
	return pt->src[node];
}

static void posted_pop(struct fc__src *s)
{
	s->posted_head = s->posted_head->next;
	if (!s->posted_head)
		s->posted_tail = NULL;
}

static void deliver(struct fc__port *pt, struct fc__msg *m, struct fc_req *r)
{
	r->len = m->len;
	if (m->len > r->cap) {
		r->status = -EMSGSIZE;
	} else {
		memcpy(r->buf, m->data, m->len);
		r->status = 0;
	}
	pt->buffered -= m->len;
	free(m);
}

/*
 * Hand queued messages to posted receives, oldest to oldest. A protocol's
 * message (announced by rendezvous, say) goes to its protocol with the
 * receive it meets (up.msg_take), unless the protocol says it is not ready
 * (still landing): then it holds up those behind it.
 */
void fc__src_match(struct fc__fabric *fab, uint32_t port, struct fc__src *s)
{
	struct fc__port *pt = fab->ports[port];

	while (s->q_head && s->posted_head && s->posted_head != s->into) {
		struct fc__msg *m = s->q_head;
		struct fc_req *r = s->posted_head;

		if (m->proto && !fab->up.msg_ready(m))
			break;
		s->q_head = m->next;
		if (!s->q_head)
			s->q_tail = NULL;
		posted_pop(s);
		r->next = NULL;
		if (m->proto) {
			fab->up.msg_take(fab->dev, port, s, m, r);
			continue;
		}
		if (fab->up.consumed)
			fab->up.consumed(fab->dev, port, s, m->len);
		deliver(pt, m, r);
	}
	if (fab->up.msg_land)
		fab->up.msg_land(fab->dev, port, s);
}

int fc__src_detach_req(struct fc__fabric *fab, uint32_t port, struct fc__src *s)
{
	struct fc__port *pt = fab->ports[port];
	struct fc_req *r = s->into;
	struct fc__msg *m;
	size_t cap;

	if (!r)
		return 0;
	if (!s->drop) {
		cap = s->cur_len > FC__MSG_MIN_CAP ? s->cur_len :
						     FC__MSG_MIN_CAP;
		m = malloc(sizeof(*m) + cap);
		if (!m)
			return -ENOMEM;
		memcpy(m->data, r->buf, s->cur_len);
		m->len = s->cur_len;
		m->proto = NULL;
		s->cur = (uint8_t *)m;
		s->cur_cap = cap;
		pt->buffered += s->cur_len;
	}
	s->into = NULL;
	return 0;
}

void fc__src_queue(struct fc__src *s, struct fc__msg *m)
{
	m->next = NULL;
	if (s->q_tail)
		s->q_tail->next = m;
	else
		s->q_head = m;
	s->q_tail = m;
}

void fc__src_post(struct fc__fabric *fab, uint32_t port, struct fc__src *s,
		  struct fc_req *r)
{
	fc__req_append(&s->posted_head, &s->posted_tail, r);
	if (s->q_head) /* else nothing to match */
		fc__src_match(fab, port, s);
}

/* ---- Draining the receive rings ---- */

int fc__src_append(struct fc__port *pt, struct fc__src *s, const uint8_t *data,
		   size_t len)
{
	struct fc__msg *m;
	size_t cap;

	if (s->drop) {
		s->cur_len += len;
		return 0;
	}
	if (s->into) {
		if (s->cur_len + len > s->into->cap)
			s->drop = true;
		else
			memcpy((uint8_t *)s->into->buf + s->cur_len, data, len);
		s->cur_len += len;
		return 0;
	}
	if (s->cur_len + len > FC_CHAN_MAX_MSG) {
		/* Longer than any sender may send: not ours to keep. */
		pt->buffered -= s->cur_len;
		free(s->cur);
		s->cur = NULL;
		s->cur_cap = 0;
		s->drop = true;
		s->cur_len += len;
		return 0;
	}
	if (!s->cur || s->cur_len + len > s->cur_cap) {
		cap = s->cur_cap ? s->cur_cap * 2 : FC__MSG_MIN_CAP;
		m = realloc(s->cur, sizeof(*m) + cap);
		if (!m)
			return -ENOMEM;
		s->cur = (uint8_t *)m;
		s->cur_cap = cap;
	}
	m = fc__src_msg(s);
	memcpy(m->data + s->cur_len, data, len);
	s->cur_len += len;
	pt->buffered += len;
	return 0;
}

void fc__src_finish(struct fc__fabric *fab, uint32_t port, struct fc__src *s)
{
	struct fc_req *r = s->into;
	struct fc__msg *m;

	if (r) {
		posted_pop(s);
		r->next = NULL;
		r->len = s->cur_len;
		r->status = s->drop ? -EMSGSIZE : 0;
	} else if (s->cur && !s->drop) {
		m = fc__src_msg(s);
		m->len = s->cur_len;
		m->proto = NULL;
		fc__src_queue(s, m);
	} else {
		free(s->cur);
	}
	/* Taken by a receive, or dropped: the sender may send that again. */
	if ((r || s->drop || !s->cur) && fab->up.consumed)
		fab->up.consumed(fab->dev, port, s, s->cur_len);
	s->active = false;
	s->drop = false;
	s->into = NULL;
	s->cur = NULL;
	s->cur_len = 0;
	s->cur_cap = 0;
	if (s->q_head) /* else nothing to match */
		fc__src_match(fab, port, s);
}

bool fc__src_take_whole(struct fc__fabric *fab, uint32_t port, uint32_t node,
			const uint8_t *data, size_t len)
{
	struct fc__port *pt = fab->ports[port];
	struct fc__src *s = pt ? pt->src[node] : NULL;
	struct fc_req *r;

	/* a message under way, or older ones queued: in order, the long way */
	if (!s || s->active || s->q_head)
		return false;
	r = s->posted_head;
	if (!r || len > r->cap)
		return false;
	memcpy(r->buf, data, len);
	posted_pop(s);
	r->next = NULL;
	r->len = len;
	r->status = 0;
	if (fab->up.consumed)
		fab->up.consumed(fab->dev, port, s, len);
	return true;
}

int fc__src_take_queued(struct fc__fabric *fab, uint32_t port,
			struct fc__src *s, void *buf, size_t cap, size_t *len)
{
	struct fc__msg *m = s->q_head;

	if (m->proto || m->len > cap)
		return -EAGAIN;
	s->q_head = m->next;
	if (!s->q_head)
		s->q_tail = NULL;
	memcpy(buf, m->data, m->len);
	*len = m->len;
	if (fab->up.consumed)
		fab->up.consumed(fab->dev, port, s, m->len);
	fab->ports[port]->buffered -= m->len;
	free(m);
	return 0;
}

void fc__src_abort(struct fc__fabric *fab, uint32_t port, uint32_t node)
{
	struct fc__src *s = fc__src_find(fab, port, node);

	if (!s || !s->active)
		return;
	if (s->cur && !s->into && !s->drop)
		fab->ports[port]->buffered -= s->cur_len;
	free(s->cur);
	s->cur = NULL;
	s->cur_len = 0;
	s->cur_cap = 0;
	s->into = NULL;
	s->drop = false;
	s->active = false;
	fc__src_match(fab, port, s);
}
