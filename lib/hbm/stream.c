// SPDX-License-Identifier: MIT
/*
 * Stream programs: recorded here as the board reads them (struct
 * fc_hw_sinsn), checked against the board with the contract's own checker
 * (fc_hw_sprog_check()), copied into board memory by DMA, and started by
 * the LS registers. Then the board runs them on its own; the host only
 * waits for DONE_SEQ.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hbm.h"

#define PROG_BYTES    ((uint64_t)FC_SPROG_MAX * FC_SINSN_SIZE)
#define RESET_WAIT_NS 1000000000ull
#define DMA_WAIT_MS   10000
#define SLEEP_MAX_NS  1000000ull /* 1 ms */

struct fc_sprog {
	uint32_t n;	/* instructions, END not included */
	uint32_t depth; /* loops open */
	struct fc_hw_sinsn insn[FC_SPROG_MAX];
};

FC__EXPORT int fc_sprog_new(struct fc_sprog **progp)
{
	if (!progp)
		return -EINVAL;
	*progp = calloc(1, sizeof(**progp));
	return *progp ? 0 : -ENOMEM;
}

FC__EXPORT void fc_sprog_free(struct fc_sprog *prog)
{
	free(prog);
}

/* A zeroed instruction to fill, or NULL when full (END needs a place). */
static struct fc_hw_sinsn *append(struct fc_sprog *p, uint8_t op)
{
	struct fc_hw_sinsn *in;

	if (p->n + 1 >= FC_SPROG_MAX)
		return NULL;
	in = &p->insn[p->n++];
	memset(in, 0, sizeof(*in));
	in->op = op;
	return in;
}

static int copy(struct fc_sprog *p, uint8_t op, uint32_t ls_off, uint64_t hbm,
		uint32_t len, uint32_t step)
{
	struct fc_hw_sinsn *in;

	if (!p || !len)
		return -EINVAL;
	in = append(p, op);
	if (!in)
		return -E2BIG;
	in->len = htole32(len);
	in->hbm = htole64(hbm);
	in->step = htole32(step);
	in->ls = htole32(ls_off);
	return 0;
}

FC__EXPORT int fc_sprog_copy_in(struct fc_sprog *prog, uint32_t ls_off,
				uint64_t hbm, uint32_t len, uint32_t step)
{
	return copy(prog, FC_SOP_COPY_IN, ls_off, hbm, len, step);
}

FC__EXPORT int fc_sprog_copy_out(struct fc_sprog *prog, uint64_t hbm,
				 uint32_t step, uint32_t ls_off, uint32_t len)
{
	return copy(prog, FC_SOP_COPY_OUT, ls_off, hbm, len, step);
}

FC__EXPORT int fc_sprog_run(struct fc_sprog *prog, uint32_t kernel,
			    uint32_t dst_off, uint32_t src_off, uint32_t n,
			    uint32_t arg)
{
	struct fc_hw_sinsn *in;

	if (!prog || !kernel || kernel > UINT16_MAX || !n)
		return -EINVAL;
	in = append(prog, FC_SOP_RUN);
	if (!in)
		return -E2BIG;
	in->kernel = htole16((uint16_t)kernel);
	in->len = htole32(n);
	in->ls = htole32(dst_off);
	in->ls2 = htole32(src_off);
	in->arg = htole32(arg);
	return 0;
}

static int simple(struct fc_sprog *p, uint8_t op, uint32_t len)
{
	struct fc_hw_sinsn *in;

	in = append(p, op);
	if (!in)
		return -E2BIG;
	in->len = htole32(len);
	return 0;
}

FC__EXPORT int fc_sprog_for(struct fc_sprog *prog, uint32_t iterations)
{
	int ret;

	if (!prog)
		return -EINVAL;
	if (!iterations || prog->depth == FC_SLOOP_DEPTH)
		return -ENOEXEC; /* the program would be malformed */
	ret = simple(prog, FC_SOP_LOOP, iterations);
	if (!ret)
		prog->depth++;
	return ret;
}

FC__EXPORT int fc_sprog_end_for(struct fc_sprog *prog)
{
	int ret;

	if (!prog)
		return -EINVAL;
	if (!prog->depth)
		return -ENOEXEC; /* no loop open */
	ret = simple(prog, FC_SOP_ENDLOOP, 0);
	if (!ret)
		prog->depth--;
	return ret;
}

FC__EXPORT int fc_sprog_wait(struct fc_sprog *prog, uint32_t event)
{
	if (!prog || event >= FC_LS_EVENTS)
		return -EINVAL;
	return simple(prog, FC_SOP_WAIT, event);
}

FC__EXPORT int fc_sprog_signal(struct fc_sprog *prog, uint32_t event)
{
	if (!prog || event >= FC_LS_EVENTS)
		return -EINVAL;
	return simple(prog, FC_SOP_SIGNAL, event);
}

FC__EXPORT int fc_sprog_encode(const struct fc_sprog *prog,
			       struct fc_hw_sinsn *out, size_t max, size_t *n)
{
	if (!prog || !out || !n)
		return -EINVAL;
	if (prog->depth)
		return -ENOEXEC; /* a loop left open */
	if (max < prog->n + 1)
		return -E2BIG;
	memcpy(out, prog->insn, prog->n * sizeof(*out));
	memset(&out[prog->n], 0, sizeof(*out));
	out[prog->n].op = FC_SOP_END;
	*n = prog->n + 1;
	return 0;
}

static int any_kernel(void *ctx, uint32_t id)
{
	return 1;
}

FC__EXPORT int fc_sprog_decode(const struct fc_hw_sinsn *in, size_t n,
			       struct fc_sprog **progp, size_t *bad)
{
	/* Structure only: every address and kernel passes. */
	struct fc_hw_sgeom any = {
		.mem_size = UINT64_MAX,
		.ls_size = UINT32_MAX & ~3u,
		.kernels = ~1u,
		.user_kernel = any_kernel,
	};
	struct fc_sprog *p;
	uint32_t err, at;
	size_t i;

	if (!in || !progp || !bad)
		return -EINVAL;
	*bad = 0;
	if (!n || n > FC_SPROG_MAX)
		return -E2BIG;
	err = fc_hw_sprog_check(in, (uint32_t)n, &any, &at);
	if (err) {
		*bad = at;
		return fc_hw_ls_errno(err);
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->n = (uint32_t)n - 1;
	memcpy(p->insn, in, p->n * sizeof(*in));
	for (i = 0; i < p->n; i++)
		p->depth += in[i].op == FC_SOP_LOOP    ? 1 :
			    in[i].op == FC_SOP_ENDLOOP ? -1 :
							 0;
	*progp = p;
	return 0;
}

/* ---- Kernels ---- */

static const char *const builtin_names[] = {
	[FC_KERN_INVERT] = "invert", [FC_KERN_ADD] = "add",
	[FC_KERN_SCALE] = "scale",   [FC_KERN_AXPY] = "axpy",
	[FC_KERN_SUM] = "sum",
};

#define N_BUILTIN (sizeof(builtin_names) / sizeof(builtin_names[0]))

static bool name_ok(const char *name)
{
	return name && *name && strlen(name) < FC__KNAME_MAX;
}

/* Under h->lock. RETURN VALUE: the id, or 0 when unknown. */
static uint32_t kernel_id(struct fc__hbm *h, const char *name)
{
	unsigned int i;

	for (i = 1; i < N_BUILTIN; i++)
		if (builtin_names[i] && !strcmp(builtin_names[i], name))
			return i;
	for (i = 0; i < h->n_kernels; i++)
		if (!strcmp(h->knames[i], name))
			return FC_KERN_USER + i;
	return 0;
}

FC__EXPORT int fc_kernel_lookup(struct fc_dev *dev, const char *name,
				uint32_t *id)
{
	struct fc__hbm *h;
	uint32_t k;
	int ret;

	if (!dev || !name_ok(name) || !id)
		return -EINVAL;
	ret = fc__hbm_get(dev, &h);
	if (ret)
		return ret;
	pthread_mutex_lock(&h->lock);
	k = kernel_id(h, name);
	pthread_mutex_unlock(&h->lock);
	/* A built-in name the board does not have is as unknown. */
	if (!k || (k < 32 && !(h->info.kernels & (1u << k))))
		return -ENOSYS;
	*id = k;
	return 0;
}

FC__EXPORT int fc_kernel_register(struct fc_dev *dev, const char *name,
				  fc_kernel_fn fn, void *ctx, uint32_t *id)
{
	struct fc__hbm *h;
	uint32_t k;
	int ret;

	if (!dev || !name_ok(name) || !fn || !id)
		return -EINVAL;
	ret = fc__hbm_get(dev, &h);
	if (ret)
		return ret;
	if (!dev->be->kernel_register)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&h->lock);
	if (kernel_id(h, name)) {
		ret = -EEXIST;
	} else if (h->n_kernels == FC__KERNELS_MAX) {
		ret = -ENOSPC;
	} else {
		k = FC_KERN_USER + h->n_kernels;
		fc__lock(&dev->lock);
		ret = dev->be->kernel_register(dev, k, fn, ctx);
		fc__unlock(&dev->lock);
		if (!ret) {
			strcpy(h->knames[h->n_kernels++], name);
			*id = k;
		}
	}
	pthread_mutex_unlock(&h->lock);
	return ret;
}

/* ---- Running programs ---- */

static int kernel_on_board(void *ctx, uint32_t id)
{
	struct fc__hbm *h = ctx;

	return id >= FC_KERN_USER && id - FC_KERN_USER < h->n_kernels;
}

static int get_ls(struct fc_dev *dev, uint32_t ls, uint32_t stream,
		  struct fc__hbm **hp)
{
	int ret;

	if (!dev)
		return -EINVAL;
	ret = fc__hbm_get(dev, hp);
	if (ret)
		return ret;
	if (ls >= (*hp)->info.num_ls || stream >= FC_LS_STREAMS)
		return -EINVAL;
	return 0;
}

/* Under h->lock. */
static int check(struct fc_dev *dev, struct fc__hbm *h,
		 const struct fc_sprog *prog, struct fc_hw_sinsn *code,
		 size_t *n, size_t *bad)
{
	struct fc_hw_sgeom g = {
		.mem_size = dev->info.board_mem_size,
		.ls_size = h->info.ls_size,
		.kernels = h->info.kernels,
		.user_kernel = kernel_on_board,
		.ctx = h,
	};
	uint32_t err, at;
	int ret;

	if (bad)
		*bad = 0;
	ret = fc_sprog_encode(prog, code, FC_SPROG_MAX, n);
	if (ret)
		return ret;
	err = fc_hw_sprog_check(code, (uint32_t)*n, &g, &at);
	if (err && bad)
		*bad = at;
	return fc_hw_ls_errno(err);
}

FC__EXPORT int fc_stream_check(struct fc_dev *dev, const struct fc_sprog *prog,
			       size_t *bad)
{
	struct fc_hw_sinsn code[FC_SPROG_MAX];
	struct fc__hbm *h;
	size_t n;
	int ret;

	if (!dev || !prog)
		return -EINVAL;
	ret = fc__hbm_get(dev, &h);
	if (ret)
		return ret;
	pthread_mutex_lock(&h->lock);
	ret = check(dev, h, prog, code, &n, bad);
	pthread_mutex_unlock(&h->lock);
	return ret;
}

/* Board memory for every stream's program, and the host buffer to load
 * them from: made at the first start. Under h->lock. */
static int prog_area(struct fc_dev *dev, struct fc__hbm *h)
{
	uint64_t len = PROG_BYTES * FC_LS_STREAMS * h->info.num_ls;
	int ret;

	if (h->prog_base)
		return 0;
	if (!h->bounce) {
		ret = fc_mem_alloc(dev, PROG_BYTES, FC_MEM_NUMA_ANY,
				   &h->bounce);
		if (ret)
			return ret;
	}
	/*
	 * The top of the last channel: where other processes' libraries put
	 * theirs too, so that programs of different LS never overlap (board
	 * memory is not shared out between processes otherwise).
	 */
	ret = fc__hbm_reserve(h, len, h->info.pchannels - 1, true,
			      &h->prog_base);
	if (ret == -ENOSPC || ret == -E2BIG)
		ret = fc__hbm_reserve(h, len, FC_HBM_PCH_ANY, true,
				      &h->prog_base);
	return ret;
}

static int wr(struct fc_dev *dev, uint32_t off, uint32_t val)
{
	int ret;

	fc__lock(&dev->lock);
	ret = dev->be->reg_write(dev, off, val);
	fc__unlock(&dev->lock);
	return ret;
}

static bool running(struct fc_dev *dev, struct fc__hbm *h, uint32_t ls,
		    uint32_t s)
{
	return h->started[ls][s] && !h->cancelled[ls][s] &&
	       fc__hbm_rd(dev, FC_LS_SREG(ls, s, FC_LS_DONE_SEQ)) !=
		       h->start_seq[ls][s];
}

FC__EXPORT int fc_stream_start(struct fc_dev *dev, uint32_t ls, uint32_t stream,
			       const struct fc_sprog *prog)
{
	struct fc_hw_sinsn code[FC_SPROG_MAX];
	struct fc__hbm *h;
	struct fc_xfer x;
	uint64_t at;
	size_t n;
	int ret;

	ret = get_ls(dev, ls, stream, &h);
	if (ret)
		return ret;
	if (!prog)
		return -EINVAL;
	pthread_mutex_lock(&h->lock);
	ret = -EBUSY;
	if (running(dev, h, ls, stream))
		goto out;
	ret = -EBADFD;
	if (fc__hbm_rd(dev, FC_LS_SREG(ls, stream, FC_LS_STATUS)) ==
	    FC_DMA_STATUS_ERROR)
		goto out;
	ret = check(dev, h, prog, code, &n, NULL);
	if (ret)
		goto out;
	ret = prog_area(dev, h);
	if (ret)
		goto out;
	at = h->prog_base + PROG_BYTES * (ls * FC_LS_STREAMS + stream);
	memcpy(h->bounce->addr, code, n * sizeof(code[0]));
	memset(&x, 0, sizeof(x));
	x.src = fc_host(h->bounce, 0);
	x.dst = fc_board(at);
	x.len = n * sizeof(code[0]);
	ret = fc_dma_run(dev, &x, 1, DMA_WAIT_MS);
	if (ret)
		goto out;
	wr(dev, FC_LS_SREG(ls, stream, FC_LS_PROG_LO), (uint32_t)at);
	wr(dev, FC_LS_SREG(ls, stream, FC_LS_PROG_HI), (uint32_t)(at >> 32));
	wr(dev, FC_LS_SREG(ls, stream, FC_LS_PROG_LEN), (uint32_t)n);
	/* from the register: anyone may have started it since */
	h->start_seq[ls][stream] =
		fc__hbm_rd(dev, FC_LS_SREG(ls, stream, FC_LS_START)) + 1;
	ret = wr(dev, FC_LS_SREG(ls, stream, FC_LS_START),
		 h->start_seq[ls][stream]);
	h->started[ls][stream] = true;
	h->cancelled[ls][stream] = false;
out:
	pthread_mutex_unlock(&h->lock);
	return ret;
}

FC__EXPORT int fc_stream_wait(struct fc_dev *dev, uint32_t ls, uint32_t stream,
			      int timeout_ms)
{
	uint64_t start = fc__now_ns(), now;
	unsigned int round = 0;
	struct fc__hbm *h;
	uint32_t seq, events;
	int ret;

	ret = get_ls(dev, ls, stream, &h);
	if (ret)
		return ret;
	pthread_mutex_lock(&h->lock);
	seq = h->start_seq[ls][stream];
	if (!h->started[ls][stream]) {
		pthread_mutex_unlock(&h->lock);
		return 0;
	}
	pthread_mutex_unlock(&h->lock);
	for (;;) {
		/* read before DONE_SEQ: an end after it moves this count */
		events = fc__hbm_rd(dev, FC_REG_IRQ_COUNT(FC_IRQ_VEC_STREAM));
		if (fc__hbm_rd(dev, FC_LS_SREG(ls, stream, FC_LS_DONE_SEQ)) ==
		    seq)
			break;
		if (__atomic_load_n(&h->cancelled[ls][stream],
				    __ATOMIC_ACQUIRE))
			return -ECANCELED;
		now = fc__now_ns();
		if (timeout_ms >= 0 &&
		    now - start >= (uint64_t)timeout_ms * 1000000ull)
			return -ETIMEDOUT;
		/* A board that can wake us sleeps until a run ends; a reset
		 * (no run end) is seen within SLEEP_MAX_NS. */
		if (dev->be->stream_sleep)
			dev->be->stream_sleep(dev, events, SLEEP_MAX_NS);
		else
			fc__backoff_at(&round, now);
	}
	if (fc__hbm_rd(dev, FC_LS_SREG(ls, stream, FC_LS_STATUS)) !=
	    FC_DMA_STATUS_ERROR)
		return 0;
	return fc_hw_ls_errno(
		fc__hbm_rd(dev, FC_LS_SREG(ls, stream, FC_LS_ERROR)));
}

FC__EXPORT int fc_stream_query(struct fc_dev *dev, uint32_t ls, uint32_t stream,
			       struct fc_stream_state *st)
{
	struct fc__hbm *h;
	int ret;

	ret = get_ls(dev, ls, stream, &h);
	if (ret)
		return ret;
	if (!st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	st->status = fc__hbm_rd(dev, FC_LS_SREG(ls, stream, FC_LS_STATUS));
	st->hw_error = fc__hbm_rd(dev, FC_LS_SREG(ls, stream, FC_LS_ERROR));
	st->hw_index = fc__hbm_rd(dev, FC_LS_SREG(ls, stream, FC_LS_ERR_INDEX));
	st->insns = fc__hbm_rd(dev, FC_LS_SREG(ls, stream, FC_LS_INSNS));
	st->runs = fc__hbm_rd(dev, FC_LS_SREG(ls, stream, FC_LS_RUNS));
	return 0;
}

FC__EXPORT int fc_stream_reset(struct fc_dev *dev, uint32_t ls)
{
	uint64_t start = fc__now_ns(), now;
	unsigned int round = 0, s;
	struct fc__hbm *h;
	uint32_t seq;
	int ret;

	ret = get_ls(dev, ls, 0, &h);
	if (ret)
		return ret;
	pthread_mutex_lock(&h->lock);
	for (s = 0; s < FC_LS_STREAMS; s++)
		if (running(dev, h, ls, s))
			__atomic_store_n(&h->cancelled[ls][s], true,
					 __ATOMIC_RELEASE);
	seq = h->reset_seq[ls] =
		fc__hbm_rd(dev, FC_LS_REG(ls, FC_LS_RESET)) + 1;
	ret = wr(dev, FC_LS_REG(ls, FC_LS_RESET), seq);
	while (!ret && fc__hbm_rd(dev, FC_LS_REG(ls, FC_LS_RESET_ACK)) != seq) {
		now = fc__now_ns();
		if (now - start >= RESET_WAIT_NS)
			ret = -ETIMEDOUT;
		else
			fc__backoff_at(&round, now);
	}
	pthread_mutex_unlock(&h->lock);
	return ret;
}
