// SPDX-License-Identifier: MIT
/*
 * Counters: completed operations and errors of the endpoints bound to
 * them (sends, receives, writes). Reading one makes progress on them.
 */
#include <stdlib.h>

#include "fcp.h"

#define WAIT_SLICE_MS 1

void fcp_cntr_inc(struct fcp_cntr *c, bool err)
{
	if (!c)
		return;
	if (err)
		c->err++;
	else
		c->val++;
}

static void cntr_progress(struct fcp_cntr *c)
{
	int i;

	for (i = 0; i < c->neps; i++)
		fcp_ep_progress(c->eps[i]);
}

static uint64_t cntr_read(struct fid_cntr *fc)
{
	struct fcp_cntr *c = (struct fcp_cntr *)fc;
	uint64_t v;

	pthread_mutex_lock(&c->dom->lock);
	cntr_progress(c);
	v = c->val;
	pthread_mutex_unlock(&c->dom->lock);
	return v;
}

static uint64_t cntr_readerr(struct fid_cntr *fc)
{
	struct fcp_cntr *c = (struct fcp_cntr *)fc;
	uint64_t v;

	pthread_mutex_lock(&c->dom->lock);
	cntr_progress(c);
	v = c->err;
	pthread_mutex_unlock(&c->dom->lock);
	return v;
}

static int cntr_add(struct fid_cntr *fc, uint64_t value)
{
	struct fcp_cntr *c = (struct fcp_cntr *)fc;

	pthread_mutex_lock(&c->dom->lock);
	c->val += value;
	pthread_mutex_unlock(&c->dom->lock);
	return 0;
}

static int cntr_set(struct fid_cntr *fc, uint64_t value)
{
	struct fcp_cntr *c = (struct fcp_cntr *)fc;

	pthread_mutex_lock(&c->dom->lock);
	c->val = value;
	pthread_mutex_unlock(&c->dom->lock);
	return 0;
}

static int cntr_adderr(struct fid_cntr *fc, uint64_t value)
{
	struct fcp_cntr *c = (struct fcp_cntr *)fc;

	pthread_mutex_lock(&c->dom->lock);
	c->err += value;
	pthread_mutex_unlock(&c->dom->lock);
	return 0;
}

static int cntr_seterr(struct fid_cntr *fc, uint64_t value)
{
	struct fcp_cntr *c = (struct fcp_cntr *)fc;

	pthread_mutex_lock(&c->dom->lock);
	c->err = value;
	pthread_mutex_unlock(&c->dom->lock);
	return 0;
}

static int cntr_wait(struct fid_cntr *fc, uint64_t threshold, int timeout)
{
	struct fcp_cntr *c = (struct fcp_cntr *)fc;
	uint64_t err0 = cntr_readerr(fc);
	int waited = 0;

	for (;;) {
		if (cntr_read(fc) >= threshold)
			return 0;
		if (cntr_readerr(fc) != err0)
			return -FI_EAVAIL;
		if (timeout >= 0 && waited >= timeout)
			return -FI_ETIMEDOUT;
		if (c->dom->auto_progress) {
			/* the thread moves the data: sleep until it did */
			pthread_mutex_lock(&c->dom->lock);
			fcp_progress_sleep(c->dom, WAIT_SLICE_MS);
			pthread_mutex_unlock(&c->dom->lock);
		} else if (c->neps) {
			fc_tag_wait(c->eps[0]->tep, WAIT_SLICE_MS);
		}
		waited += WAIT_SLICE_MS;
	}
}

static struct fi_ops_cntr cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = cntr_read,
	.readerr = cntr_readerr,
	.add = cntr_add,
	.set = cntr_set,
	.wait = cntr_wait,
	.adderr = cntr_adderr,
	.seterr = cntr_seterr,
};

static int cntr_close(struct fid *fid)
{
	struct fcp_cntr *c = (struct fcp_cntr *)fid;

	if (c->refs)
		return -FI_EBUSY;
	pthread_mutex_lock(&c->dom->lock);
	c->dom->refs--;
	pthread_mutex_unlock(&c->dom->lock);
	free(c);
	return 0;
}

static struct fi_ops cntr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = cntr_close,
	.bind = fcp_no_bind,
	.control = fcp_no_control,
	.ops_open = fcp_no_ops_open,
};

int fcp_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		  struct fid_cntr **fc, void *context)
{
	struct fcp_domain *d = (struct fcp_domain *)domain;
	struct fcp_cntr *c;

	if (!fc)
		return -FI_EINVAL;
	if (attr && attr->events != FI_CNTR_EVENTS_COMP)
		return -FI_ENOSYS;
	if (attr && attr->wait_obj != FI_WAIT_NONE &&
	    attr->wait_obj != FI_WAIT_UNSPEC)
		return -FI_ENOSYS;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -FI_ENOMEM;
	c->dom = d;
	c->cntr.fid.fclass = FI_CLASS_CNTR;
	c->cntr.fid.context = context;
	c->cntr.fid.ops = &cntr_fi_ops;
	c->cntr.ops = &cntr_ops;
	pthread_mutex_lock(&d->lock);
	d->refs++;
	pthread_mutex_unlock(&d->lock);
	*fc = &c->cntr;
	return 0;
}
