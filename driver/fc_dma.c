// SPDX-License-Identifier: GPL-2.0
/*
 * fpgacomm: DMA tickets. SUBMIT checks the transfers, pins or looks up the
 * memory they name and builds hardware descriptors from the DMA segments
 * (fc_desc.c), in tables of up to FC_DMA_MAX_CHAIN, and queues the ticket
 * on the engine it names (engine 0 without FC_SUBMIT_ENGINE; fc_engine.c
 * runs them). A ticket of more than FC_DMA_MAX_CHAIN descriptors runs as
 * several chains in a row on its engine. The tables of a file's tickets
 * that have not ended count against FC_FILE_MAX_TABLES, checked before
 * they are allocated: a SUBMIT over it gets -EAGAIN, or -E2BIG if it could
 * never fit.
 *
 * Registered memory stays mapped for DMA across chains: each chain syncs
 * it for the board before it starts and for the CPU once it is over.
 */
#include <linux/dma-mapping.h>
#include <linux/eventfd.h>
#include <linux/mm.h>
#include <linux/nospec.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "fc.h"

/* ---- chains ---- */

/*
 * Count the @ntables descriptor tables of a new ticket against the file's
 * budget, before they are allocated. The ticket fits on its own (the walk
 * stops at FC_FILE_MAX_DESC), so -EAGAIN means that tickets of the file
 * are queued or running, and their end makes room.
 */
static int fc_file_charge(struct fc_file *ff, struct fc_chain *c,
			  unsigned int ntables)
{
	int ret = 0;

	spin_lock(&ff->res_lock);
	if (ntables > FC_FILE_MAX_TABLES - ff->tables) {
		ret = -EAGAIN;
	} else {
		ff->tables += ntables;
		c->charged = ntables;
	}
	spin_unlock(&ff->res_lock);
	return ret;
}

/* ---- syncs and ends ---- */

/*
 * Note registered memory @m that @c must sync, each once (@max: the most
 * there can be). Only memory whose syncs do something is noted.
 */
static int fc_chain_add_sync(struct fc_chain *c, struct fc_mem *m,
			     bool write, unsigned int max)
{
	unsigned int i;

	if (!m || !m->need_sync)
		return 0;
	for (i = 0; i < c->nsyncs; i++) {
		if (c->syncs[i].mem == m) {
			c->syncs[i].write |= write;
			return 0;
		}
	}
	if (!c->syncs) {
		c->syncs = kvcalloc(max, sizeof(*c->syncs), GFP_KERNEL_ACCOUNT);
		if (!c->syncs)
			return -ENOMEM;
	}
	c->syncs[c->nsyncs].mem = m;
	c->syncs[c->nsyncs].write = write;
	c->nsyncs++;
	return 0;
}

/* Does @c name memory @m, or a peer region taken back (fc->lock held)? */
static bool fc_chain_uses(const struct fc_chain *c, const struct fc_mem *m)
{
	unsigned int i;

	for (i = 0; i < c->nmems; i++)
		if (c->mems[i] == m || (!m && c->mems[i]->revoked))
			return true;
	return false;
}

/* Revoke @m on one engine (fc->lock held): see fc_dma_revoke(). */
static void fc_engine_revoke(struct fc_engine *eng, struct fc_mem *m,
			     struct list_head *done)
{
	struct fc_chain *c, *tmp;

	list_for_each_entry_safe(c, tmp, &eng->queue, node) {
		if (!fc_chain_uses(c, m))
			continue;
		list_del_init(&c->node);
		fc_chain_end(c, -ENOLINK, FC_DMA_ERR_ABORTED, 0, done);
	}
	c = eng->running;
	if (c && !eng->fc->dead && fc_chain_uses(c, m)) {
		fc_engine_stop(eng, -ENOLINK, FC_DMA_ERR_ABORTED, 0, done);
		fc_engine_kick(eng);
	}
}

/*
 * The exporter of peer region @m takes its memory back (move_notify, with
 * the dma-buf's reservation held): from now on no chain may reach it. The
 * queued chains naming it end with -ENOLINK, the running one is stopped by
 * a reset of its engine, and SUBMIT refuses it. Nothing here takes the
 * reservation, and the chains' references go after fc->lock is dropped:
 * the region's own teardown, should they hold its last, is deferred.
 */
void fc_dma_revoke(struct fc_dev *fc, struct fc_mem *m)
{
	LIST_HEAD(done);
	unsigned int e;

	mutex_lock(&fc->lock);
	m->revoked = true;
	for (e = 0; e < fc->nengines; e++)
		fc_engine_revoke(&fc->engines[e], m, &done);
	mutex_unlock(&fc->lock);
	fc_chains_free(fc, &done);
}

/* ---- ioctls ---- */

/* The memory a host end names: a handle's, or the user address pinned. */
static int fc_resolve(struct fc_file *ff, struct fc_chain *c,
		      const struct fc_ioc_loc *loc, u64 len, bool write,
		      struct fc_mem **out)
{
	struct fc_mem *m;
	int ret;

	*out = NULL;
	if (loc->space != FC_SPACE_HOST)
		return 0;
	if (loc->handle) {
		m = fc_mem_lookup(ff, loc->handle);
		if (!m)
			return -EINVAL;
		if (loc->addr > m->len || len > m->len - loc->addr) {
			fc_mem_put(m);
			return -ERANGE;
		}
	} else {
		ret = fc_mem_pin(ff->fc, loc->addr, len, write, &m);
		if (ret)
			return ret;
	}
	c->mems[c->nmems++] = m;
	*out = m;
	return 0;
}

/* SUBMIT's argument: flags, reserved fields, engine and count. */
static int fc_submit_args(struct fc_dev *fc, const struct fc_ioc_submit *s,
			  struct fc_engine **eng)
{
	if (s->flags & ~(FC_SUBMIT_EVENTFD | FC_SUBMIT_ENGINE) ||
	    s->reserved[0] || s->reserved[1])
		return -EINVAL;
	/* Without the flag the field is reserved: engine 0, as before. */
	if (s->flags & FC_SUBMIT_ENGINE ? s->engine >= fc->nengines : s->engine)
		return -EINVAL;
	*eng = &fc->engines[array_index_nospec(s->engine, fc->nengines)];
	if (!s->count || s->count > FC_DMA_MAX_CHAIN)
		return -E2BIG;
	return 0;
}

/* The transfers of @s, copied in and checked one by one. */
static int fc_submit_xfers(struct fc_dev *fc, const struct fc_ioc_submit *s,
			   struct fc_ioc_xfer **out)
{
	struct fc_ioc_xfer *x;
	unsigned int i;
	int ret;

	x = memdup_user(u64_to_user_ptr(s->xfers), s->count * sizeof(*x));
	if (IS_ERR(x))
		return PTR_ERR(x);
	for (i = 0; i < s->count; i++) {
		ret = fc_check_xfer(fc, &x[i],
				    i + 1 < s->count ? &x[i + 1] : NULL);
		if (ret) {
			kfree(x);
			return ret;
		}
	}
	*out = x;
	return 0;
}

/* An empty ticket of @ff for @s, with its eventfd; fc_chain_free() undoes. */
static int fc_chain_new(struct fc_file *ff, const struct fc_ioc_submit *s,
			struct fc_chain **out)
{
	struct fc_chain *c;

	c = kzalloc(sizeof(*c), GFP_KERNEL_ACCOUNT);
	if (!c)
		return -ENOMEM;
	*out = c;
	INIT_LIST_HEAD(&c->node);
	c->ff = ff;
	c->mems = kvcalloc(2 * s->count, sizeof(*c->mems), GFP_KERNEL_ACCOUNT);
	if (!c->mems)
		return -ENOMEM;
	if (s->flags & FC_SUBMIT_EVENTFD) {
		c->efd = eventfd_ctx_fdget(s->eventfd);
		if (IS_ERR(c->efd)) {
			int ret = PTR_ERR(c->efd);

			c->efd = NULL;
			return ret;
		}
	}
	return 0;
}

/* The memory each of the @n transfers names, referenced by @c. */
static int fc_chain_resolve(struct fc_file *ff, struct fc_chain *c,
			    const struct fc_ioc_xfer *x,
			    struct fc_xfer_res *res, unsigned int n)
{
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++) {
		ret = fc_resolve(ff, c, &x[i].src, x[i].len, false, &res[i].src);
		if (ret)
			return ret;
		ret = fc_resolve(ff, c, &x[i].dst, x[i].len, true, &res[i].dst);
		if (ret)
			return ret;
		ret = fc_chain_add_sync(c, res[i].src, false, 2 * n);
		if (ret)
			return ret;
		ret = fc_chain_add_sync(c, res[i].dst, true, 2 * n);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * The descriptors of @c: counted, charged to the file's budget, allocated,
 * then filled in.
 */
static int fc_chain_build(struct fc_file *ff, struct fc_chain *c,
			  const struct fc_ioc_xfer *x,
			  const struct fc_xfer_res *res, unsigned int n)
{
	long ndesc;
	int ret;

	ndesc = fc_chain_walk(c, x, res, n, false);
	if (ndesc < 0)
		return ndesc;
	ret = fc_file_charge(ff, c, DIV_ROUND_UP(ndesc, FC_DMA_MAX_CHAIN));
	if (ret)
		return ret;
	ret = fc_chain_alloc_tables(ff->fc, c, ndesc);
	if (ret)
		return ret;
	fc_chain_walk(c, x, res, n, true);
	return fc_chain_mark_ends(c);
}

/*
 * Give @c a ticket and queue it on @eng, unless the board, the engine, a
 * peer region or the file's results say no. On success the engine owns it.
 */
static int fc_chain_queue(struct fc_file *ff, struct fc_engine *eng,
			  struct fc_chain *c)
{
	struct fc_dev *fc = ff->fc;
	struct fc_result *r;
	int ret;

	mutex_lock(&fc->lock);
	spin_lock(&ff->res_lock);
	r = &ff->results[(ff->last_ticket + 1) & (FC_FILE_RESULTS - 1)];
	if (fc->dead) {
		ret = -ENODEV;
	} else if (eng->broken) {
		ret = -EIO;
	} else if (fc_chain_uses(c, NULL)) {
		ret = -ENOLINK;		/* a peer region taken back */
	} else if (ff->uncollected >= FC_FILE_MAX_UNCOLLECTED ||
		   (r->ticket && !r->collected)) {
		ret = -EAGAIN;
	} else {
		c->ticket = ++ff->last_ticket;
		r->ticket = c->ticket;
		r->done = false;
		r->collected = false;
		ff->uncollected++;
		ret = 0;
	}
	spin_unlock(&ff->res_lock);
	if (!ret) {
		list_add_tail(&c->node, &eng->queue);
		fc_engine_kick(eng);
	}
	mutex_unlock(&fc->lock);
	return ret;
}

long fc_ioctl_submit(struct fc_file *ff, void __user *arg)
{
	struct fc_ioc_submit __user *uarg = arg;
	struct fc_dev *fc = ff->fc;
	struct fc_xfer_res *res = NULL;
	struct fc_chain *c = NULL;
	struct fc_ioc_submit s;
	struct fc_engine *eng;
	struct fc_ioc_xfer *x;
	u64 ticket;
	int ret;

	if (copy_from_user(&s, arg, sizeof(s)))
		return -EFAULT;
	ret = fc_submit_args(fc, &s, &eng);
	if (ret)
		return ret;
	ret = fc_submit_xfers(fc, &s, &x);
	if (ret)
		return ret;

	res = kcalloc(s.count, sizeof(*res), GFP_KERNEL_ACCOUNT);
	ret = res ? fc_chain_new(ff, &s, &c) : -ENOMEM;
	if (!ret)
		ret = fc_chain_resolve(ff, c, x, res, s.count);
	if (!ret)
		ret = fc_chain_build(ff, c, x, res, s.count);
	if (!ret)
		ret = fc_chain_queue(ff, eng, c);
	if (!ret) {
		/* Queued: it runs even if the ticket cannot be told. */
		ticket = c->ticket;
		c = NULL;
		if (put_user(ticket, &uarg->ticket))
			ret = -EFAULT;
	}

	if (c) {
		spin_lock(&ff->res_lock);
		fc_file_uncharge_locked(ff, c);
		spin_unlock(&ff->res_lock);
		fc_chain_free(fc, c);
	}
	kfree(res);
	kfree(x);
	return ret;
}

/* The result of @ticket, if it has ended; -ENOENT if unknown. */
static int fc_result_get(struct fc_file *ff, u64 ticket, struct fc_result *out)
{
	struct fc_result *r = &ff->results[ticket & (FC_FILE_RESULTS - 1)];
	int ret;

	spin_lock(&ff->res_lock);
	if (!ticket || r->ticket != ticket)
		ret = -ENOENT;
	else if (!r->done)
		ret = -EINPROGRESS;
	else
		ret = 0;
	if (out)
		*out = *r;
	spin_unlock(&ff->res_lock);
	return ret;
}

static bool fc_wait_done(struct fc_file *ff, u64 ticket)
{
	return fc_result_get(ff, ticket, NULL) != -EINPROGRESS ||
	       READ_ONCE(ff->fc->dead);
}

long fc_ioctl_wait(struct fc_file *ff, void __user *arg)
{
	struct fc_ioc_wait w;
	struct fc_result r, *r2;
	long left;
	int ret;

	if (copy_from_user(&w, arg, sizeof(w)))
		return -EFAULT;
	if (w.flags || w.reserved0 || w.reserved[0] || w.reserved[1])
		return -EINVAL;

	ret = fc_result_get(ff, w.ticket, &r);
	if (ret == -EINPROGRESS) {
		if (!w.timeout_ms)
			return -ETIMEDOUT;
		if (w.timeout_ms < 0) {
			left = wait_event_interruptible(ff->wq,
							fc_wait_done(ff, w.ticket));
		} else {
			left = wait_event_interruptible_timeout(ff->wq,
					fc_wait_done(ff, w.ticket),
					msecs_to_jiffies(w.timeout_ms));
			if (left == 0)
				return -ETIMEDOUT;
		}
		if (left < 0)
			return -EINTR;
		ret = fc_result_get(ff, w.ticket, &r);
		if (ret == -EINPROGRESS)
			return -ENODEV;
	}
	if (ret)
		return ret;

	spin_lock(&ff->res_lock);
	ff->event = false;
	r2 = &ff->results[w.ticket & (FC_FILE_RESULTS - 1)];
	if (r2->ticket == w.ticket && !r2->collected) {
		r2->collected = true;
		ff->uncollected--;
	}
	spin_unlock(&ff->res_lock);
	w.status = r.status;
	w.hw_error = r.hw_error;
	w.hw_index = r.hw_index;
	if (copy_to_user(arg, &w, sizeof(w)))
		return -EFAULT;
	return 0;
}

long fc_ioctl_reset(struct fc_file *ff, void __user *arg)
{
	struct fc_dev *fc = ff->fc;
	struct fc_ioc_reset a;
	LIST_HEAD(done);
	unsigned int e;
	int ret = 0;

	if (copy_from_user(&a, arg, sizeof(a)))
		return -EFAULT;
	if (a.flags || a.reserved)
		return -EINVAL;

	mutex_lock(&fc->lock);
	for (e = 0; e < fc->nengines; e++) {
		if (fc_engine_cancel(&fc->engines[e], ff, -ECANCELED, true,
				     &done))
			ret = -EIO;
		fc_engine_kick(&fc->engines[e]);
	}
	mutex_unlock(&fc->lock);
	fc_chains_free(fc, &done);
	return ret;
}

bool fc_dma_file_event(struct fc_file *ff)
{
	bool ev;

	spin_lock(&ff->res_lock);
	ev = ff->event;
	spin_unlock(&ff->res_lock);
	return ev;
}

/* The file is closed: stop its chains (bounded) before its memory goes. */
void fc_dma_release_file(struct fc_file *ff)
{
	struct fc_dev *fc = ff->fc;
	LIST_HEAD(done);
	unsigned int e;

	mutex_lock(&fc->lock);
	list_del_init(&ff->node);
	for (e = 0; !fc->dead && e < fc->nengines; e++) {
		fc_engine_cancel(&fc->engines[e], ff, -ECANCELED, false, &done);
		fc_engine_kick(&fc->engines[e]);
	}
	mutex_unlock(&fc->lock);
	fc_chains_free(fc, &done);
}

/*
 * The board is being removed (remove_sem held for writing, fc->dead set):
 * end every chain with -ENODEV, drop every file's memory and mappings.
 */
void fc_dma_kill(struct fc_dev *fc)
{
	struct fc_file *ff, *tmp;
	LIST_HEAD(done);
	unsigned int e;

	mutex_lock(&fc->lock);
	for (e = 0; e < fc->nengines; e++)
		fc_engine_cancel(&fc->engines[e], NULL, -ENODEV, true, &done);
	list_for_each_entry_safe(ff, tmp, &fc->files, node) {
		list_del_init(&ff->node);
		fc_mem_release_all(ff);
		if (ff->mapping)
			unmap_mapping_range(ff->mapping, 0, 0, 1);
		wake_up_interruptible_all(&ff->wq);
	}
	mutex_unlock(&fc->lock);
	fc_chains_free(fc, &done);
}
