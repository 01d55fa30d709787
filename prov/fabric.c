// SPDX-License-Identifier: MIT
/* The fabric object: the boards' network. It only opens domains. */
#include <stdlib.h>
#include <string.h>

#include "fcp.h"

static int fabric_close(struct fid *fid)
{
	free(fid);
	return 0;
}

static struct fi_ops fabric_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = fabric_close,
	.bind = fcp_no_bind,
	.control = fcp_no_control,
	.ops_open = fcp_no_ops_open,
};

static int no_pep(struct fid_fabric *fabric, struct fi_info *info,
		  struct fid_pep **pep, void *context)
{
	return -FI_ENOSYS;
}

static int no_wait(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		   struct fid_wait **waitset)
{
	return -FI_ENOSYS;
}

static int trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	return 0; /* manual progress: nothing to wait for */
}

static int domain2(struct fid_fabric *fabric, struct fi_info *info,
		   struct fid_domain **dom, uint64_t flags, void *context)
{
	return flags ? -FI_EINVAL : fcp_domain_open(fabric, info, dom, context);
}

static struct fi_ops_fabric fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = fcp_domain_open,
	.passive_ep = no_pep,
	.eq_open = fcp_eq_open,
	.wait_open = no_wait,
	.trywait = trywait,
	.domain2 = domain2,
};

int fcp_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		    void *context)
{
	struct fcp_fabric *f;

	if (attr && attr->name && strcmp(attr->name, FCP_NAME))
		return -FI_EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -FI_ENOMEM;
	f->fabric.fid.fclass = FI_CLASS_FABRIC;
	f->fabric.fid.context = context;
	f->fabric.fid.ops = &fabric_fi_ops;
	f->fabric.ops = &fabric_ops;
	*fabric = &f->fabric;
	return 0;
}
