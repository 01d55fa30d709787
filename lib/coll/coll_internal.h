/* SPDX-License-Identifier: MIT */
/*
 * Groups and collectives: private to lib/coll/group.c, lib/coll*.c.
 *
 * Layers: the public entry points (coll.c) check arguments and pick an
 * algorithm (coll_algo.c, coll_ring.c, coll_grid.c); an algorithm records
 * a schedule, rounds of sends and receives followed by local reductions
 * and copies; the engine (coll_sched.c) runs every group's schedules, one
 * collective of a group at a time; the links (coll_link.c) carry every
 * group's messages to a peer on one channel, each with a header that
 * names the group, the collective's number and its signature. Nothing
 * here is called from below: the channel layer knows nothing of groups,
 * and reaches the engine only through the progress engine's poller.
 */
#ifndef FC_COLL_INTERNAL_H
#define FC_COLL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <fpgacomm/fpgacomm.h>

/* Every group's messages go on this port, each naming its group by the
 * id its receiver gave it (coll_link.c); the other group ports stay the
 * library's. */
#define FC__GROUP_PORT FC_CHAN_PORT_GROUP0

/* The collectives, as they appear in signatures and algorithm names. */
enum fc__coll_kind {
	FC__BARRIER,
	FC__BCAST,
	FC__REDUCE,
	FC__ALLREDUCE,
	FC__REDUCE_SCATTER,
	FC__SCAN,
	FC__EXSCAN,
	FC__GATHER,
	FC__SCATTER,
	FC__ALLGATHER,
	FC__ALLTOALL,
	FC__SPLIT,
	FC__KIND_COUNT
};

/* What a collective was asked to do: all that its signature and its
 * algorithm need. Counts are in elements; v-forms keep their arrays. */
struct fc__coll_args {
	enum fc__coll_kind kind;
	bool vector; /* gatherv, scatterv, ... */
	bool in_place;
	enum fc_dtype dtype;
	enum fc_redop op;
	uint32_t root;
	size_t count;
	const void *sendbuf;
	void *recvbuf;
	size_t sendcount;
	const size_t *counts, *displs;	 /* receive side (or scatterv's) */
	const size_t *scounts, *sdispls; /* alltoallv's send side */
};

/* One action of a schedule. */
enum fc__step_kind {
	FC__ST_SEND,
	FC__ST_RECV,
	FC__ST_REDUCE,
	FC__ST_COPY
};

struct fc__step {
	uint8_t kind;
	bool round_end; /* the last step of its round */
	bool src_first; /* REDUCE: dst = src op dst (src ranks lower) */
	uint32_t peer;	/* SEND/RECV: member of the group */
	void *dst;
	const void *src;
	size_t len; /* bytes (REDUCE: of dst) */
	/* while posted */
	struct fc_req *req[2]; /* header (or header + payload), payload */
	void *stage;	       /* SEND: header + small payload */
	bool sent;	       /* SEND: req[] posted (its link was ready) */
	bool waiting;	       /* RECV: for its message (coll_link.c) */
	bool done;	       /* RECV: its message is in @dst */
	int err;	       /* RECV: what its message said went wrong */
	struct fc__umsg *um;   /* RECV: matched, its payload still coming */
};

/*
 * A message that came before a step took it: on its group's queue, or
 * on the device's while its group is still being made. A payload sent
 * apart from its header is the next message on the link: left in the
 * channel (@deferred) until a step takes it, or received into @data.
 */
struct fc__umsg {
	struct fc__umsg *next;
	uint32_t from; /* world rank */
	uint32_t id;   /* the group id it names */
	size_t got;    /* bytes of the header message, in @msg */
	bool deferred; /* its payload waits in the channel (link stalled) */
	struct fc_req *req; /* the payload, still arriving into @data */
	size_t len;	    /* ... its length as received */
	int status;	    /* ... how its receive ended */
	uint8_t *data;	    /* the payload, or NULL */
	uint8_t msg[];
};

/* One world peer, for every group (coll_link.c). */
struct fc__link {
	struct fc__coll_dev *cd;
	struct fc_chan *ch;
	bool started, ready;
	unsigned int skip; /* messages to drop: payloads of dropped headers */
	int err;	   /* the peer is gone: every step with it fails */
	struct fc_req *rx; /* the next header, into @buf */
	/* a queued message whose payload is the next message: nothing more
	 * is read until a step takes it (straight into its buffer), or a
	 * step waits for another message from this peer (then it lands in
	 * a buffer of the message's) */
	struct fc__umsg *stall;
	unsigned int waiters; /* receive steps waiting for this peer */
	/* its receive may have ended without the board moving (just
	 * posted), or a step began to wait for it: look at it next pass */
	bool look;
	uint8_t *buf;
	struct fc__pend *pend; /* detached messages waiting for ready */
};

struct fc__sched {
	struct fc__step *steps;
	unsigned int n, cap;
	unsigned int cur; /* first step of the running round */
	unsigned int ran; /* local steps before this one have run */
	bool posted;	  /* the running round's messages are posted */
	void *scratch;	  /* memory the schedule's steps point into */
	/* set before recording: the caller's buffers are registered on
	 * @dev, so large scratch is too (fc__sched_scratch) */
	struct fc_dev *reg_dev;
	int err; /* recording failed (-ENOMEM) */
};

/* One collective in flight (or queued) on a group. */
struct fc_coll_req {
	struct fc_group *group;
	struct fc_coll_req *next; /* the group's queue */
	struct fc__sched sched;
	enum fc_dtype dtype;
	enum fc_redop op;
	uint32_t seq; /* the collective's number in the group */
	uint32_t sig; /* its signature */
	int status;   /* -EINPROGRESS until it ends */
	struct fc__coll_stage *dstage; /* device buffers (coll_dev.c) */
};

struct fc_group {
	struct fc_dev *dev;
	struct fc__coll_dev *cd;
	uint32_t rank, size;
	uint32_t *world;   /* member -> world rank */
	uint32_t id;	   /* this member's name for it (coll_link.c) */
	uint32_t *peer_id; /* member -> that member's name for it */
	uint32_t ctx;	   /* checked in every header */
	uint32_t seq;	   /* collectives started */
	uint32_t children; /* groups made from it, for their ctx */
	struct fc_coll_req *head, *tail;    /* running, then queued */
	struct fc__umsg *uq_head, *uq_tail; /* messages no step took yet */
	int err;			    /* what broke it; 0 while usable */
	unsigned int refs;		    /* the world group is shared */
	bool aborted;			    /* the others were told */
	bool linked;			    /* fc__links_want() ran */
	struct fc_group *next;		    /* the device's groups */
};

/* A group id reserved for a group being made (fc__coll_dev.ids). */
#define FC__ID_RESERVED ((struct fc_group *)1)

/* Per-device state: the links to the world's members, the group ids. */
struct fc__coll_dev {
	struct fc_dev *dev;
	uint32_t size;		  /* the world's */
	struct fc__link *links;	  /* per world rank */
	uint64_t nonce;		  /* this open's, for the links' handshakes */
	struct fc_group **ids;	  /* id -> group, FC__ID_RESERVED or NULL */
	uint32_t nids, next_id;	  /* ... a freed id is reused late */
	struct fc__umsg *pending; /* for ids reserved, groups not made yet */
	/* this pass of progress moved the board once already: requests are
	 * looked at, not each given a round of progress of its own */
	bool peek;
	bool look; /* some link's @look is set */
	/* more boards of the emulated world than CPUs: 1, else 0; -1 not
	 * known yet (coll_sched.c) */
	int crowded;
	unsigned int sweeps; /* passes that looked at links, for the sweep */
	uint8_t *sbuf;	     /* a header and its payload, sent from here */
	struct fc_group *world;
	struct fc_group *groups;
	struct fc__coll_dev *next;
};

/* group.c */
struct fc__coll_dev *fc__coll_dev_get(struct fc_dev *dev, bool create);

/* coll_devs.c: the lock every collective file takes, and the devices
 * with groups (group.c adds and removes them at the head). */
void fc__coll_lock(void);
void fc__coll_unlock(void);
/* RETURN VALUE: true and the lock held, or false (another holds it). */
bool fc__coll_trylock(void);
struct fc__coll_dev *fc__coll_devs(void);
struct fc__coll_dev **fc__coll_devs_head(void);
bool fc__group_live(const struct fc_group *g);

/* coll_reduce.c: dst[i] = dst[i] op src[i] (src_first: src[i] op dst[i]) */
size_t fc__dtype_size(enum fc_dtype dtype);

/*
 * Device buffers of a collective (coll_dev.c). fc__coll_stage_in - at its
 * start, after the argument checks: @a's device buffers are swapped for
 * host bounce buffers holding their input; *stp NULL when none is.
 * RETURN VALUE: 0; -ENOMEM; -EFAULT (a device buffer shorter than the
 * collective needs). fc__coll_stage_out - at its end (@ret): the result
 * back into the device buffer when @ret is 0; frees @st (may be NULL).
 * RETURN VALUE: @ret, or the copy's error.
 */
struct fc__coll_stage;
int fc__coll_stage_in(struct fc_group *g, struct fc__coll_args *a,
		      struct fc__coll_stage **stp);
int fc__coll_stage_out(struct fc__coll_stage *st, int ret);
bool fc__redop_valid(enum fc_dtype dtype, enum fc_redop op);
void fc__reduce(void *dst, const void *src, size_t count, enum fc_dtype dtype,
		enum fc_redop op, bool src_first);

/* coll_sched.c: recording */
void fc__sched_send(struct fc__sched *s, uint32_t peer, const void *buf,
		    size_t len);
void fc__sched_recv(struct fc__sched *s, uint32_t peer, void *buf, size_t len);
void fc__sched_reduce(struct fc__sched *s, void *dst, const void *src,
		      size_t len, bool src_first);
void fc__sched_copy(struct fc__sched *s, void *dst, const void *src,
		    size_t len);
/*
 * Header-only messages to @to and from @from, put first in the first
 * round: where the members' data alone might not flow (two ranks that
 * both think they are the root), these still meet and compare signatures.
 * FC__NOBODY for either: that message is left out.
 */
#define FC__NOBODY UINT32_MAX
void fc__sched_check(struct fc__sched *s, uint32_t to, uint32_t from);
/* End the round: its messages must all be done before what follows. */
void fc__sched_round(struct fc__sched *s);
/* Scratch memory that lives as long as the schedule. RETURN VALUE: it,
 * or NULL (the schedule then fails with -ENOMEM). */
void *fc__sched_scratch(struct fc__sched *s, size_t len);
/* Before recording @a on @g into @s: where the caller's buffers lie in
 * its registered memory, large scratch is registered too, so that every
 * payload moves straight between registrations. */
void fc__sched_buffers(struct fc__sched *s, struct fc_group *g,
		       const struct fc__coll_args *a);

/* coll_sched.c: running. fc__coll_start queues @req on its group. */
int fc__coll_start(struct fc_group *g, struct fc_coll_req *req);
int fc__coll_test(struct fc_coll_req *req);
int fc__coll_wait(struct fc_coll_req *req, int timeout_ms);
/*
 * Every group's collectives moved along as far as they go, lock held.
 * Tests and waits run it, not only for their own request: MPI's progress
 * rule. @look: each request tested on its own (its peer's death noticed),
 * else the board moved once and the requests looked at. RETURN VALUE:
 * true if anything moved.
 */
bool fc__coll_progress(bool look);
/* The same as a poller of the process's progress engine (progress.c),
 * registered with FC__COLL_POLL_ARG; takes the lock if free. */
bool fc__coll_poll(void *arg);
#define FC__COLL_POLL_ARG ((void *)&fc__coll_poll)
void fc__coll_req_free(struct fc_coll_req *req);
/* Break @g with @err: everything queued fails, the members are told. */
void fc__group_break(struct fc_group *g, int err);
/* Give up everything in flight on @g (group free). */
void fc__group_drop(struct fc_group *g);
uint32_t fc__coll_signature(const struct fc__coll_args *a);

/* coll_algo.c: record the schedule of @a on @g into @s. */
int fc__coll_record(struct fc_group *g, const struct fc__coll_args *a,
		    struct fc__sched *s);
const char *fc__coll_algo(struct fc_group *g, enum fc__coll_kind kind,
			  size_t bytes);
extern const char *const fc__coll_kind_names[FC__KIND_COUNT];

/*
 * coll_link.c: every group's messages between this board and a world
 * peer go on one channel, the link, which starts with a handshake (a
 * nonce each way and its echo: what an earlier job left on it is read
 * away) and then hands each message to the group whose id it names.
 * Lock held for all of these.
 */
#define FC__HDR_LEN	20u	   /* the header of every message */
#define FC__COMBINE_MAX (8u << 10) /* payloads up to this follow it */
#define FC__HDR_SPLIT	(1u << 31) /* the payload is the next message */
#define FC__HDR_ABORT	(1u << 30) /* sender's group broke; len = -errno */
#define FC__HDR_LENMASK ((1u << 28) - 1)
/* Make @cd's links and id table. RETURN VALUE: 0, -ENOMEM. */
int fc__links_init(struct fc__coll_dev *cd);
/* Start the handshakes of the links to @g's members (its first
 * collective): nothing waits for them. */
void fc__links_want(struct fc_group *g);
void fc__links_fini(struct fc__coll_dev *cd);
/* Move the links' handshakes and receives along; @board_moved: the board
 * moved since the last look (else, in a peek pass, only a link marked to
 * be looked at can have news). Only the links that a step waits for, that
 * are marked, or whose handshake runs are looked at, and every link once
 * in a while: the others' messages can wait in the channel. RETURN
 * VALUE: moved. */
bool fc__links_progress(struct fc__coll_dev *cd, bool board_moved);
/* The link to world rank @peer, for a send. RETURN VALUE: 0 ready (its
 * channel in *chp), -EAGAIN not yet, or the peer's error. */
int fc__link_chan(struct fc__coll_dev *cd, uint32_t peer, struct fc_chan **chp);
/* A message from a copy, sent once the link is ready; nobody waits. */
void fc__link_send_detached(struct fc__coll_dev *cd, uint32_t peer,
			    const void *buf, size_t len);
/* The error of the link to @peer, or 0. */
int fc__link_err(struct fc__coll_dev *cd, uint32_t peer);
/* fc_req_test(), or a look only in a pass that moved the board. */
int fc__coll_req_test(struct fc__coll_dev *cd, struct fc_req *r, size_t *len);
/* Links started whose handshake has not ended, in the process. */
bool fc__links_unready(void);
/* Receive step @st of @req's running round: armed, taking a message
 * that came before it if there is one. */
void fc__recv_arm(struct fc_coll_req *req, struct fc__step *st);
/* RETURN VALUE: 1 its message is in, 0 not yet, or the step's error. */
int fc__recv_test(struct fc_coll_req *req, struct fc__step *st, bool *moved);
/* Let go of what a receive step holds (its round ended). */
void fc__recv_disarm(struct fc_coll_req *req, struct fc__step *st);
/* Group ids: reserve one for a group being made, give it to @g, let go. */
int fc__id_reserve(struct fc__coll_dev *cd, uint32_t *id);
void fc__id_bind(struct fc__coll_dev *cd, struct fc_group *g);
void fc__id_release(struct fc__coll_dev *cd, uint32_t id);
/* Drop the messages @g's queue holds (it is being freed). */
void fc__group_msgs_drop(struct fc_group *g);
/* The header of a message of @req for @st's peer, into @buf. */
void fc__hdr_fill(void *buf, const struct fc_coll_req *req,
		  const struct fc__step *st, uint32_t len);
/* A header telling @g's member @m that the group broke with @err. */
void fc__hdr_abort(void *buf, const struct fc_group *g, uint32_t m, int err);

/* coll.c: run a collective described by @a, blocking or not. */
int fc__coll_run(struct fc_group *g, const struct fc__coll_args *a,
		 int timeout_ms, struct fc_coll_req **reqp);

#endif /* FC_COLL_INTERNAL_H */
