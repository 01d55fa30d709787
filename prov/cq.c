// SPDX-License-Identifier: MIT
/*
 * Completion queues. Reading one makes progress on the endpoints bound to
 * it (the library moves data while we are in it; with auto progress the
 * domain's thread does too), then
 * hands out the entries kept, in every format; an error entry stops a read
 * (-FI_EAVAIL) until fi_cq_readerr() takes it.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "fcp.h"

#define WAIT_SLICE_MS 1 /* sread looks at every endpoint this often */
/* Empty reads in a row before each further one yields the core: a caller
 * that polls in a loop must let the peer it waits for run (two cores). */
#define IDLE_READS 64

static size_t entry_size(enum fi_cq_format f)
{
	switch (f) {
	case FI_CQ_FORMAT_CONTEXT:
		return sizeof(struct fi_cq_entry);
	case FI_CQ_FORMAT_MSG:
		return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA:
		return sizeof(struct fi_cq_data_entry);
	default:
		return sizeof(struct fi_cq_tagged_entry);
	}
}

int fcp_cq_push(struct fcp_cq *cq, const struct fcp_cqe *c)
{
	if (cq->count == cq->cap) {
		size_t cap = cq->cap ? cq->cap * 2 : 256, i;
		struct fcp_cqe *q = malloc(cap * sizeof(*q));

		if (!q)
			return -FI_ENOMEM;
		for (i = 0; i < cq->count; i++)
			q[i] = cq->q[(cq->head + i) % cq->cap];
		free(cq->q);
		cq->q = q;
		cq->cap = cap;
		cq->head = 0;
	}
	cq->q[(cq->head + cq->count) % cq->cap] = *c;
	cq->count++;
	return 0;
}

static void cq_progress(struct fcp_cq *cq)
{
	int i;

	for (i = 0; i < cq->neps; i++)
		fcp_ep_progress(cq->eps[i]);
}

static ssize_t cq_readfrom(struct fid_cq *fcq, void *buf, size_t count,
			   fi_addr_t *src_addr)
{
	struct fcp_cq *cq = (struct fcp_cq *)fcq;
	size_t size = entry_size(cq->format), n = 0;
	ssize_t ret;

	if (!buf && count)
		return -FI_EINVAL;
	pthread_mutex_lock(&cq->dom->lock);
	if (cq->count < count)
		cq_progress(cq);
	while (n < count && cq->count) {
		struct fcp_cqe *c = &cq->q[cq->head];

		if (c->err)
			break;
		memcpy((uint8_t *)buf + n * size, &c->e, size);
		if (src_addr)
			src_addr[n] = c->src;
		cq->head = (cq->head + 1) % cq->cap;
		cq->count--;
		n++;
	}
	if (n)
		ret = (ssize_t)n;
	else if (cq->count)
		ret = -FI_EAVAIL;
	else
		ret = -FI_EAGAIN;
	cq->idle = ret == -FI_EAGAIN ? cq->idle + 1 : 0;
	pthread_mutex_unlock(&cq->dom->lock);
	if (cq->idle > IDLE_READS)
		sched_yield();
	return ret;
}

static ssize_t cq_read(struct fid_cq *cq, void *buf, size_t count)
{
	return cq_readfrom(cq, buf, count, NULL);
}

static ssize_t cq_readerr(struct fid_cq *fcq, struct fi_cq_err_entry *buf,
			  uint64_t flags)
{
	struct fcp_cq *cq = (struct fcp_cq *)fcq;
	struct fcp_cqe *c;
	ssize_t ret = -FI_EAGAIN;

	if (!buf)
		return -FI_EINVAL;
	pthread_mutex_lock(&cq->dom->lock);
	if (!cq->count)
		cq_progress(cq);
	c = cq->count ? &cq->q[cq->head] : NULL;
	if (c && c->err) {
		/* the caller's err_data buffer (API 1.5 on) stays unused */
		buf->op_context = c->e.op_context;
		buf->flags = c->e.flags;
		buf->len = c->e.len;
		buf->buf = c->e.buf;
		buf->data = c->e.data;
		buf->tag = c->e.tag;
		buf->olen = c->olen;
		buf->err = c->err;
		buf->prov_errno = c->prov_errno;
		buf->err_data_size = 0;
		cq->head = (cq->head + 1) % cq->cap;
		cq->count--;
		ret = 1;
	}
	pthread_mutex_unlock(&cq->dom->lock);
	return ret;
}

static ssize_t cq_sreadfrom(struct fid_cq *fcq, void *buf, size_t count,
			    fi_addr_t *src_addr, const void *cond, int timeout)
{
	struct fcp_cq *cq = (struct fcp_cq *)fcq;
	int waited = 0;
	ssize_t ret;

	for (;;) {
		ret = cq_readfrom(fcq, buf, count, src_addr);
		if (ret != -FI_EAGAIN)
			return ret;
		if (timeout >= 0 && waited >= timeout)
			return -FI_EAGAIN;
		if (cq->dom->auto_progress) {
			/* the thread moves the data: sleep until it did */
			pthread_mutex_lock(&cq->dom->lock);
			if (!cq->count)
				fcp_progress_sleep(cq->dom, WAIT_SLICE_MS);
			pthread_mutex_unlock(&cq->dom->lock);
		} else if (cq->neps) {
			/* the library sleeps while nothing moves */
			fc_tag_wait(cq->eps[0]->tep, WAIT_SLICE_MS);
		}
		waited += WAIT_SLICE_MS;
	}
}

static ssize_t cq_sread(struct fid_cq *cq, void *buf, size_t count,
			const void *cond, int timeout)
{
	return cq_sreadfrom(cq, buf, count, NULL, cond, timeout);
}

static int cq_signal(struct fid_cq *cq)
{
	return 0;
}

static const char *cq_strerror(struct fid_cq *cq, int prov_errno,
			       const void *err_data, char *buf, size_t len)
{
	const char *s = fc_strerror(prov_errno);

	if (buf && len) {
		strncpy(buf, s, len - 1);
		buf[len - 1] = '\0';
		return buf;
	}
	return s;
}

static struct fi_ops_cq cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = cq_read,
	.readfrom = cq_readfrom,
	.readerr = cq_readerr,
	.sread = cq_sread,
	.sreadfrom = cq_sreadfrom,
	.signal = cq_signal,
	.strerror = cq_strerror,
};

static int cq_close(struct fid *fid)
{
	struct fcp_cq *cq = (struct fcp_cq *)fid;

	if (cq->refs)
		return -FI_EBUSY;
	pthread_mutex_lock(&cq->dom->lock);
	cq->dom->refs--;
	pthread_mutex_unlock(&cq->dom->lock);
	free(cq->q);
	free(cq);
	return 0;
}

static struct fi_ops cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = cq_close,
	.bind = fcp_no_bind,
	.control = fcp_no_control,
	.ops_open = fcp_no_ops_open,
};

int fcp_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		struct fid_cq **fcq, void *context)
{
	struct fcp_domain *d = (struct fcp_domain *)domain;
	struct fcp_cq *cq;

	if (!attr || !fcq)
		return -FI_EINVAL;
	if (attr->format > FI_CQ_FORMAT_TAGGED)
		return -FI_ENOSYS;
	if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC)
		return -FI_ENOSYS;
	if (attr->flags & ~FI_AFFINITY)
		return -FI_EBADFLAGS;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	cq->dom = d;
	cq->format = attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_TAGGED :
							   attr->format;
	cq->cq.fid.fclass = FI_CLASS_CQ;
	cq->cq.fid.context = context;
	cq->cq.fid.ops = &cq_fi_ops;
	cq->cq.ops = &cq_ops;
	pthread_mutex_lock(&d->lock);
	d->refs++;
	pthread_mutex_unlock(&d->lock);
	*fcq = &cq->cq;
	return 0;
}
