// SPDX-License-Identifier: MIT
/*
 * Event queues. An RDM endpoint has no connections, so the provider
 * raises no events of its own: an EQ holds what fi_eq_write() puts in it
 * (one at a time), for programs that open one as a matter of course.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fi_eq.h>

#include "fcp.h"

#define EQ_ENTRY_MAX 256 /* bytes of one written event */

struct fcp_eq {
	struct fid_eq eq;
	pthread_mutex_t lock;
	bool full;
	uint32_t event;
	size_t len;
	uint8_t buf[EQ_ENTRY_MAX];
};

static ssize_t eq_read(struct fid_eq *feq, uint32_t *event, void *buf,
		       size_t len, uint64_t flags)
{
	struct fcp_eq *eq = (struct fcp_eq *)feq;
	ssize_t ret = -FI_EAGAIN;

	if (flags & ~FI_PEEK)
		return -FI_EBADFLAGS;
	pthread_mutex_lock(&eq->lock);
	if (eq->full) {
		if (len < eq->len) {
			ret = -FI_ETOOSMALL;
		} else {
			memcpy(buf, eq->buf, eq->len);
			if (event)
				*event = eq->event;
			ret = (ssize_t)eq->len;
			if (!(flags & FI_PEEK))
				eq->full = false;
		}
	}
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

static ssize_t eq_readerr(struct fid_eq *eq, struct fi_eq_err_entry *buf,
			  uint64_t flags)
{
	return -FI_EAGAIN; /* no errors are raised */
}

static ssize_t eq_write(struct fid_eq *feq, uint32_t event, const void *buf,
			size_t len, uint64_t flags)
{
	struct fcp_eq *eq = (struct fcp_eq *)feq;
	ssize_t ret;

	if (len > EQ_ENTRY_MAX || (!buf && len))
		return -FI_EINVAL;
	pthread_mutex_lock(&eq->lock);
	if (eq->full) {
		ret = -FI_EAGAIN;
	} else {
		eq->full = true;
		eq->event = event;
		eq->len = len;
		if (len)
			memcpy(eq->buf, buf, len);
		ret = (ssize_t)len;
	}
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

static ssize_t eq_sread(struct fid_eq *feq, uint32_t *event, void *buf,
			size_t len, int timeout, uint64_t flags)
{
	struct timespec ts = { 0, 1000000 };
	int waited = 0;
	ssize_t ret;

	for (;;) {
		ret = eq_read(feq, event, buf, len, flags);
		if (ret != -FI_EAGAIN || (timeout >= 0 && waited >= timeout))
			return ret;
		nanosleep(&ts, NULL); /* only another thread can write */
		waited++;
	}
}

static const char *eq_strerror(struct fid_eq *eq, int prov_errno,
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

static struct fi_ops_eq eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = eq_read,
	.readerr = eq_readerr,
	.write = eq_write,
	.sread = eq_sread,
	.strerror = eq_strerror,
};

static int eq_close(struct fid *fid)
{
	struct fcp_eq *eq = (struct fcp_eq *)fid;

	pthread_mutex_destroy(&eq->lock);
	free(eq);
	return 0;
}

static struct fi_ops eq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = eq_close,
	.bind = fcp_no_bind,
	.control = fcp_no_control,
	.ops_open = fcp_no_ops_open,
};

int fcp_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		struct fid_eq **feq, void *context)
{
	struct fcp_eq *eq;

	if (!attr || !feq)
		return -FI_EINVAL;
	if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC)
		return -FI_ENOSYS;
	eq = calloc(1, sizeof(*eq));
	if (!eq)
		return -FI_ENOMEM;
	pthread_mutex_init(&eq->lock, NULL);
	eq->eq.fid.fclass = FI_CLASS_EQ;
	eq->eq.fid.context = context;
	eq->eq.fid.ops = &eq_fi_ops;
	eq->eq.ops = &eq_ops;
	*feq = &eq->eq;
	return 0;
}
