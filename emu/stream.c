// SPDX-License-Identifier: MIT
/*
 * Local stores and their stream cores. Each LS has two streams; a stream
 * latches a program from board memory when its START moves, checks it
 * whole (fc_hw_sprog_check()), then runs it on its own: the board's cores
 * work while the host does something else. Here the cores are a pool of
 * worker threads (one per CPU by default) taking runnable streams from a
 * queue, a slice of instructions at a time, so that every busy LS moves
 * and two streams of one LS overlap as the double buffering of the
 * hardware does. Idle workers sleep on a condition variable: a board with
 * nothing to run costs no CPU. The threads start at the first START.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "emu_internal.h"

#define SLICE_INSNS 32 /* instructions before a stream yields */

struct fcemu_stream {
	unsigned int ls, s;
	uint32_t seen_start;
	uint32_t seq;	      /* START value of the run */
	bool busy;	      /* holds a run */
	bool queued, running; /* in the run queue / on a worker */
	bool abort;	      /* reset while on a worker */
	int wait_event;	      /* blocked in WAIT on it; -1 not */
	uint32_t n, pc, depth;
	uint32_t loop_pc[FC_SLOOP_DEPTH + 1];
	uint32_t loop_left[FC_SLOOP_DEPTH + 1];
	uint32_t loop_i[FC_SLOOP_DEPTH + 1];
	uint32_t insns; /* executed, not yet in FC_LS_INSNS */
	/* virtual time (docs/model.md): what this run moved, from when */
	uint64_t vt_start;	   /* ps */
	uint64_t vt_in, vt_out;	   /* bytes copied in and out */
	uint32_t vt_copies;	   /* COPY_IN instructions */
	int vt_ch_in, vt_ch_out;   /* their first pseudo-channel, -1 none */
	struct fcemu_stream *next; /* run queue */
	struct fc_hw_sinsn prog[FC_SPROG_MAX];
};

struct fcemu_ls {
	uint8_t *mem;
	uint32_t seen_reset;
	bool reset_pending;
	bool reset_ack; /* an LS reset, not a board reset */
	uint32_t reset_val;
	uint32_t events[FC_LS_EVENTS];
	struct fcemu_stream st[FC_LS_STREAMS];
};

struct fcemu_streams {
	struct fcemu *emu;
	pthread_mutex_t lock;
	pthread_cond_t work;
	pthread_cond_t ended;		  /* a run ended: for sleeping hosts */
	struct fcemu_stream *head, *tail; /* runnable, not on a worker */
	bool stop;
	bool recheck; /* a START waits for its stream */
	unsigned int nthreads;
	pthread_t *threads;
	uint32_t num_ls, ls_size;
	uint64_t pch; /* bytes of a pseudo-channel */
	uint8_t *mem; /* every LS, back to back */
	struct fcemu_ls ls[FC_MAX_LS];
};

static uint32_t sreg(const struct fcemu_stream *st, uint32_t r)
{
	return FC_LS_SREG(st->ls, st->s, r);
}

/* Queue a runnable stream; @wake: a sleeping worker should take it. */
static void enqueue_wake(struct fcemu_streams *ss, struct fcemu_stream *st,
			 bool wake)
{
	st->next = NULL;
	st->queued = true;
	if (ss->tail)
		ss->tail->next = st;
	else
		ss->head = st;
	ss->tail = st;
	if (wake)
		pthread_cond_signal(&ss->work);
}

static void enqueue(struct fcemu_streams *ss, struct fcemu_stream *st)
{
	enqueue_wake(ss, st, true);
}

static void dequeue(struct fcemu_streams *ss, struct fcemu_stream *st)
{
	struct fcemu_stream **pp, *prev = NULL;

	for (pp = &ss->head; *pp; prev = *pp, pp = &(*pp)->next) {
		if (*pp == st) {
			*pp = st->next;
			if (ss->tail == st)
				ss->tail = prev;
			break;
		}
	}
	st->queued = false;
}

static void flush_insns(struct fcemu *emu, struct fcemu_stream *st)
{
	emu_wr(emu, sreg(st, FC_LS_INSNS),
	       emu_rd(emu, sreg(st, FC_LS_INSNS)) + st->insns);
	st->insns = 0;
}

/*
 * Virtual time: once neither stream of @ls runs, what they did since the
 * host last looked (their chunks, and whether loads and stores met on one
 * pseudo-channel) takes fcm_stream_ns() from the later start, then the
 * interrupt. With the lock held. Chunks of one size and one kernel pass
 * each are modelled.
 */
static void vt_ls_end(struct fcemu *emu, struct fcemu_ls *ls)
{
	const struct fcm_profile *p = &emu->vt.prof;
	uint64_t in = 0, start = 0, end;
	uint32_t copies = 0;
	unsigned int s, streams = 0;
	bool shared = true;

	for (s = 0; s < FC_LS_STREAMS; s++)
		if (ls->st[s].busy)
			return;
	for (s = 0; s < FC_LS_STREAMS; s++) {
		struct fcemu_stream *o = &ls->st[s];

		if (o->vt_copies) {
			streams++;
			copies += o->vt_copies;
			in += o->vt_in;
			if (o->vt_ch_out >= 0 && o->vt_ch_out != o->vt_ch_in)
				shared = false;
			if (o->vt_start > start)
				start = o->vt_start;
		}
		o->vt_in = o->vt_out = 0;
		o->vt_copies = 0;
		o->vt_ch_in = o->vt_ch_out = -1;
	}
	if (!copies)
		return;
	end = start + fcemu__vt_ps(fcm_stream_ns(p, copies, in / copies,
						 streams, shared) +
				   fcm_pcie_write_ns(p, 4));
	fcemu__vt_async(&emu->vt, end);
}

/*
 * The host reads the clock: the LS whose streams all ended add their runs
 * to it. Here, in the host's thread, not as each run ends: whether one
 * stream of an LS ends before the host started the other is host timing.
 */
void fcemu__streams_vt_sync(struct fcemu *emu)
{
	struct fcemu_streams *ss = emu->streams;
	unsigned int l;

	if (!ss || !emu->vt.on)
		return;
	pthread_mutex_lock(&ss->lock);
	for (l = 0; l < ss->num_ls; l++)
		vt_ls_end(emu, &ss->ls[l]);
	pthread_mutex_unlock(&ss->lock);
}

/* The run ends: outcome, then DONE_SEQ, then the event (hw.h's order). */
static void run_end(struct fcemu *emu, struct fcemu_stream *st, uint32_t err,
		    uint32_t index)
{
	st->busy = false;
	st->wait_event = -1;
	flush_insns(emu, st);
	if (err) {
		emu_wr(emu, sreg(st, FC_LS_ERROR), err);
		emu_wr(emu, sreg(st, FC_LS_ERR_INDEX), index);
		emu_wr(emu, sreg(st, FC_LS_STATUS), FC_DMA_STATUS_ERROR);
	} else {
		emu_inc(emu, sreg(st, FC_LS_RUNS));
		emu_wr(emu, sreg(st, FC_LS_STATUS), FC_DMA_STATUS_IDLE);
	}
	emu_wr(emu, sreg(st, FC_LS_DONE_SEQ), st->seq);
	fcemu__raise_irq(emu, FC_IRQ_VEC_STREAM);
	pthread_cond_broadcast(&emu->streams->ended);
}

static int start_workers(struct fcemu_streams *ss);

/* Latch a new START: fetch and check the program, then queue it. */
static void stream_start(struct fcemu_streams *ss, struct fcemu_stream *st)
{
	struct fcemu *emu = ss->emu;
	uint64_t prog = emu_rd(emu, sreg(st, FC_LS_PROG_LO)) |
			(uint64_t)emu_rd(emu, sreg(st, FC_LS_PROG_HI)) << 32;
	uint32_t n = emu_rd(emu, sreg(st, FC_LS_PROG_LEN));
	struct fc_hw_sgeom g = {
		.mem_size = emu->mem_size,
		.ls_size = ss->ls_size,
		.kernels = emu_rd(emu, FC_HBM_KERNELS),
		.user_kernel = fcemu__kernel_present,
		.ctx = emu,
	};
	uint32_t err, bad = 0;

	st->seen_start = st->seq = emu_rd(emu, sreg(st, FC_LS_START));
	if (!n || n > FC_SPROG_MAX)
		err = FC_LS_ERR_LEN;
	else if (prog % FC_SPROG_ALIGN)
		err = FC_LS_ERR_ALIGN;
	else if (!fc_hw_board_span_ok(prog, (uint64_t)n * FC_SINSN_SIZE,
				      emu->mem_size))
		err = FC_LS_ERR_FETCH;
	else if (start_workers(ss))
		err = FC_LS_ERR_KFAIL; /* no core to run it on */
	else {
		/* One fetch of the whole program, as the DMA engine's table. */
		memcpy(st->prog, emu->mem + prog, (size_t)n * FC_SINSN_SIZE);
		err = fc_hw_sprog_check(st->prog, n, &g, &bad);
	}
	st->busy = true;
	/* the host's START, a posted write, reaches the board */
	st->vt_start =
		emu->vt.now + fcemu__vt_ps(fcm_pcie_write_ns(&emu->vt.prof, 4));
	st->vt_in = st->vt_out = 0;
	st->vt_copies = 0;
	st->vt_ch_in = st->vt_ch_out = -1;
	if (err) {
		run_end(emu, st, err, bad);
		return;
	}
	st->n = n;
	st->pc = 0;
	st->depth = 0;
	st->wait_event = -1;
	emu_wr(emu, sreg(st, FC_LS_STATUS), FC_DMA_STATUS_BUSY);
	enqueue(ss, st);
}

static void stream_stop(struct fcemu_streams *ss, struct fcemu_stream *st)
{
	if (st->queued)
		dequeue(ss, st);
	st->busy = false;
	st->wait_event = -1;
	st->vt_copies = 0; /* a run cut off costs no simulated time */
	st->vt_in = st->vt_out = 0;
}

/* Both streams are off the workers: the reset takes effect. */
static void reset_finish(struct fcemu_streams *ss, struct fcemu_ls *ls,
			 unsigned int l)
{
	struct fcemu *emu = ss->emu;
	unsigned int s;

	memset(ls->events, 0, sizeof(ls->events));
	for (s = 0; s < FC_LS_STREAMS; s++) {
		struct fcemu_stream *st = &ls->st[s];

		flush_insns(emu, st);
		st->seen_start = emu_rd(emu, sreg(st, FC_LS_START));
		emu_wr(emu, sreg(st, FC_LS_ERROR), FC_LS_ERR_NONE);
		emu_wr(emu, sreg(st, FC_LS_ERR_INDEX), 0);
		emu_wr(emu, sreg(st, FC_LS_STATUS), FC_DMA_STATUS_IDLE);
	}
	ls->reset_pending = false;
	if (ls->reset_ack)
		emu_wr(emu, FC_LS_REG(l, FC_LS_RESET_ACK), ls->reset_val);
	ls->reset_ack = false;
}

static bool ls_on_worker(const struct fcemu_ls *ls)
{
	return ls->st[0].running || ls->st[1].running;
}

static void ls_reset(struct fcemu_streams *ss, unsigned int l, bool ack,
		     uint32_t val)
{
	struct fcemu_ls *ls = &ss->ls[l];
	unsigned int s;

	ls->reset_pending = true;
	ls->reset_ack = ls->reset_ack || ack;
	if (ack)
		ls->reset_val = val;
	for (s = 0; s < FC_LS_STREAMS; s++) {
		if (ls->st[s].running)
			ls->st[s].abort = true;
		else
			stream_stop(ss, &ls->st[s]);
	}
	if (!ls_on_worker(ls))
		reset_finish(ss, ls, l);
}

void fcemu__streams_notice(struct fcemu *emu, bool board_reset, bool written)
{
	struct fcemu_streams *ss = emu->streams;
	bool recheck = false;
	unsigned int l, s;
	uint32_t v;

	/*
	 * Nothing for the streams to see in another block's doorbell: no
	 * register of theirs moved, and no START written while its stream
	 * ran waits to be taken. Then no scan of every LS under the lock.
	 */
	if (!ss || (!written && !board_reset &&
		    !__atomic_load_n(&ss->recheck, __ATOMIC_RELAXED)))
		return;
	pthread_mutex_lock(&ss->lock);
	for (l = 0; l < ss->num_ls; l++) {
		struct fcemu_ls *ls = &ss->ls[l];

		v = emu_rd(emu, FC_LS_REG(l, FC_LS_RESET));
		if (v != ls->seen_reset) {
			ls->seen_reset = v;
			ls_reset(ss, l, true, v);
		} else if (board_reset) {
			ls_reset(ss, l, false, 0);
		}
		if (ls->reset_pending)
			continue; /* STARTs wait for the reset to end */
		for (s = 0; s < FC_LS_STREAMS; s++) {
			struct fcemu_stream *st = &ls->st[s];

			if (emu_rd(emu, sreg(st, FC_LS_START)) ==
				    st->seen_start ||
			    emu_rd(emu, sreg(st, FC_LS_STATUS)) ==
				    FC_DMA_STATUS_ERROR)
				continue;
			if (st->busy)
				recheck = true; /* taken once the run ends */
			else
				stream_start(ss, st);
		}
	}
	__atomic_store_n(&ss->recheck, recheck, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&ss->lock);
}

bool fcemu__is_stream_command(uint32_t off)
{
	uint32_t r = off - FC_LS_BASE;

	if (off < FC_LS_BASE || r >= FC_LS_STRIDE * FC_MAX_LS)
		return false;
	r %= FC_LS_STRIDE;
	return r == FC_LS_RESET || (r < FC_LS_STREAMS * FC_LS_STREAM_STRIDE &&
				    r % FC_LS_STREAM_STRIDE == FC_LS_START);
}

void fcemu_stream_sleep(struct fcemu *emu, uint32_t seen, uint64_t max_ns)
{
	struct fcemu_streams *ss = emu->streams;
	struct timespec ts;
	uint64_t ns;

	if (!ss)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	ns = (uint64_t)ts.tv_nsec + max_ns;
	ts.tv_sec += (time_t)(ns / 1000000000ull);
	ts.tv_nsec = (long)(ns % 1000000000ull);
	pthread_mutex_lock(&ss->lock);
	while (emu_rd(emu, FC_REG_IRQ_COUNT(FC_IRQ_VEC_STREAM)) == seen)
		if (pthread_cond_timedwait(&ss->ended, &ss->lock, &ts))
			break;
	pthread_mutex_unlock(&ss->lock);
}

/* ---- Running a program ---- */

enum slice_end {
	SLICE_MORE,
	SLICE_BLOCKED,
	SLICE_DONE
};

/* Semaphores between the streams of an LS: called with the lock held. */
static bool take_event(struct fcemu_streams *ss, struct fcemu_stream *st,
		       uint32_t e)
{
	struct fcemu_ls *ls = &ss->ls[st->ls];

	if (!ls->events[e]) {
		st->wait_event = (int)e;
		return false;
	}
	ls->events[e]--;
	return true;
}

static void give_event(struct fcemu_streams *ss, struct fcemu_stream *st,
		       uint32_t e)
{
	struct fcemu_ls *ls = &ss->ls[st->ls];
	struct fcemu_stream *other = &ls->st[!st->s];

	ls->events[e]++;
	/* A waiter off the workers is queued to retry its WAIT. */
	if (other->busy && other->wait_event == (int)e && !other->running &&
	    !other->queued) {
		other->wait_event = -1;
		enqueue(ss, other);
	}
}

/*
 * Run up to SLICE_INSNS instructions of @st without the lock (WAIT and
 * SIGNAL take it). RETURN VALUE: how the slice ended; *err for DONE.
 */
static enum slice_end run_slice(struct fcemu_streams *ss,
				struct fcemu_stream *st, uint32_t *err)
{
	struct fcemu *emu = ss->emu;
	uint8_t *lsmem = ss->ls[st->ls].mem;
	unsigned int k;

	*err = FC_LS_ERR_NONE;
	for (k = 0; k < SLICE_INSNS; k++) {
		const struct fc_hw_sinsn *in = &st->prog[st->pc];
		uint32_t len = le32toh(in->len), ls = le32toh(in->ls);
		uint64_t hbm = le64toh(in->hbm) + (uint64_t)le32toh(in->step) *
							  st->loop_i[st->depth];
		bool ok;

		switch (in->op) {
		case FC_SOP_COPY_IN:
			/* into the cache: the LS is on-chip memory */
			memcpy(lsmem + ls, emu->mem + hbm, len);
			st->vt_in += len;
			st->vt_copies++;
			if (st->vt_ch_in < 0)
				st->vt_ch_in = (int)(hbm / ss->pch);
			break;
		case FC_SOP_COPY_OUT:
			/* large ones past the cache, as the engines write */
			fcemu__copy(emu->mem + hbm, lsmem + ls, len);
			st->vt_out += len;
			if (st->vt_ch_out < 0)
				st->vt_ch_out = (int)(hbm / ss->pch);
			break;
		case FC_SOP_RUN:
			if (fcemu__kernel_run(emu, le16toh(in->kernel),
					      lsmem + ls,
					      lsmem + le32toh(in->ls2), len,
					      le32toh(in->arg))) {
				*err = FC_LS_ERR_KFAIL;
				return SLICE_DONE;
			}
			break;
		case FC_SOP_LOOP:
			st->depth++;
			st->loop_pc[st->depth] = st->pc;
			st->loop_left[st->depth] = len;
			st->loop_i[st->depth] = 0;
			break;
		case FC_SOP_ENDLOOP:
			if (--st->loop_left[st->depth]) {
				st->loop_i[st->depth]++;
				st->pc = st->loop_pc[st->depth];
			} else {
				st->depth--;
			}
			break;
		case FC_SOP_WAIT:
			pthread_mutex_lock(&ss->lock);
			ok = take_event(ss, st, len);
			pthread_mutex_unlock(&ss->lock);
			if (!ok)
				return SLICE_BLOCKED;
			break;
		case FC_SOP_SIGNAL:
			pthread_mutex_lock(&ss->lock);
			give_event(ss, st, len);
			pthread_mutex_unlock(&ss->lock);
			break;
		case FC_SOP_END:
			st->insns++;
			return SLICE_DONE;
		}
		st->insns++;
		st->pc++;
	}
	return SLICE_MORE;
}

static void *worker(void *arg)
{
	struct fcemu_streams *ss = arg;
	struct fcemu_stream *st;
	enum slice_end end;
	uint32_t err;

	pthread_mutex_lock(&ss->lock);
	for (;;) {
		while (!ss->head && !ss->stop)
			pthread_cond_wait(&ss->work, &ss->lock);
		if (ss->stop)
			break;
		st = ss->head;
		dequeue(ss, st);
		st->running = true;
		pthread_mutex_unlock(&ss->lock);

		end = run_slice(ss, st, &err);

		pthread_mutex_lock(&ss->lock);
		st->running = false;
		if (st->abort) {
			/* A reset came meanwhile: the run is dropped. */
			st->abort = false;
			stream_stop(ss, st);
			if (!ls_on_worker(&ss->ls[st->ls]))
				reset_finish(ss, &ss->ls[st->ls], st->ls);
		} else if (end == SLICE_DONE) {
			run_end(ss->emu, st, err, st->pc);
		} else if (end == SLICE_MORE) {
			/*
			 * Back in the queue behind the others. Alone there, this
			 * worker takes it again at once: waking another would
			 * only move the stream (and its LS) to another core.
			 */
			enqueue_wake(ss, st, ss->head != NULL);
		} else if (ss->ls[st->ls].events[st->wait_event]) {
			/* signalled while we were on our way here */
			st->wait_event = -1;
			enqueue(ss, st);
		}
	}
	pthread_mutex_unlock(&ss->lock);
	return NULL;
}

/* Called with the lock held, at the first START. */
static int start_workers(struct fcemu_streams *ss)
{
	unsigned int n = ss->emu->cfg.stream_cores, i;
	long cpus;

	if (ss->threads)
		return 0;
	if (!n) {
		cpus = sysconf(_SC_NPROCESSORS_ONLN);
		n = cpus > 0 ? (unsigned int)cpus : 1;
	}
	if (n > FC_LS_STREAMS * ss->num_ls)
		n = FC_LS_STREAMS * ss->num_ls;
	ss->threads = calloc(n, sizeof(*ss->threads));
	if (!ss->threads)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		if (pthread_create(&ss->threads[i], NULL, worker, ss))
			break;
	ss->nthreads = i;
	if (!i) {
		free(ss->threads);
		ss->threads = NULL;
		return -EAGAIN;
	}
	return 0;
}

int fcemu__streams_create(struct fcemu *emu)
{
	struct fcemu_streams *ss;
	uint64_t pch = emu->mem_size / FCEMU_PCHANNELS;
	unsigned int l, s;

	if (!emu->cfg.num_ls)
		return 0;
	ss = calloc(1, sizeof(*ss));
	if (!ss)
		return -ENOMEM;
	ss->emu = emu;
	ss->num_ls = emu->cfg.num_ls;
	ss->ls_size = FCEMU_LS_SIZE;
	ss->pch = pch ? pch : 1;
	/* Reserved like board memory: an LS costs RAM once used. Page
	 * aligned: copies in and out of it run on whole cache lines. */
	ss->mem = mmap(NULL, (size_t)ss->num_ls * ss->ls_size,
		       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		       0);
	if (ss->mem == MAP_FAILED) {
		free(ss);
		return -ENOMEM;
	}
	pthread_mutex_init(&ss->lock, NULL);
	pthread_cond_init(&ss->work, NULL);
	pthread_cond_init(&ss->ended, NULL);
	for (l = 0; l < ss->num_ls; l++) {
		ss->ls[l].mem = ss->mem + (size_t)l * ss->ls_size;
		ss->ls[l].seen_reset = emu_rd(emu, FC_LS_REG(l, FC_LS_RESET));
		for (s = 0; s < FC_LS_STREAMS; s++) {
			struct fcemu_stream *st = &ss->ls[l].st[s];

			st->ls = l;
			st->s = s;
			st->wait_event = -1;
			st->seen_start = emu_rd(emu, sreg(st, FC_LS_START));
		}
	}
	emu_wr(emu, FC_HBM_PCHANNELS, FCEMU_PCHANNELS);
	emu_wr(emu, FC_HBM_NUM_LS, ss->num_ls);
	emu_wr(emu, FC_HBM_LS_SIZE, ss->ls_size);
	emu_wr(emu, FC_HBM_KERNELS, fcemu__kernels_builtin());
	emu_wr(emu, FC_HBM_PCH_BYTES_LO, (uint32_t)pch);
	emu_wr(emu, FC_HBM_PCH_BYTES_HI, (uint32_t)(pch >> 32));
	emu_wr(emu, FC_REG_CAPS, emu_rd(emu, FC_REG_CAPS) | FC_CAP_HBM_STREAMS);
	emu->streams = ss;
	return 0;
}

void fcemu__streams_destroy(struct fcemu *emu)
{
	struct fcemu_streams *ss = emu->streams;
	unsigned int i;

	if (!ss)
		return;
	pthread_mutex_lock(&ss->lock);
	ss->stop = true;
	pthread_cond_broadcast(&ss->work);
	pthread_mutex_unlock(&ss->lock);
	for (i = 0; i < ss->nthreads; i++)
		pthread_join(ss->threads[i], NULL);
	free(ss->threads);
	pthread_cond_destroy(&ss->ended);
	pthread_cond_destroy(&ss->work);
	pthread_mutex_destroy(&ss->lock);
	munmap(ss->mem, (size_t)ss->num_ls * ss->ls_size);
	free(ss);
	emu->streams = NULL;
}
