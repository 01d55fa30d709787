// SPDX-License-Identifier: MIT
/*
 * The provider's entry: fi_prov_ini (libfabric loads libfpgacomm-fi.so
 * from its provider directory or FI_PROVIDER_PATH and calls it), and
 * fi_getinfo's answer: one fi_info, checked against the hints.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fcp.h"

/* The order we keep: messages from one endpoint to another in order. */
#define FCP_ORDER FI_ORDER_SAS
#define FCP_TX_FLAGS                                                          \
	(FI_INJECT | FI_COMPLETION | FI_REMOTE_CQ_DATA | FI_INJECT_COMPLETE | \
	 FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE)
#define FCP_RX_FLAGS (FI_COMPLETION | FI_PEEK | FI_CLAIM | FI_DISCARD)

int fcp_errno(int status)
{
	switch (status) {
	case 0:
		return 0;
	case -EMSGSIZE:
		return FI_ETRUNC;
	default:
		return status < 0 ? -status : FI_EOTHER;
	}
}

int fcp_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return -FI_ENOSYS;
}

int fcp_no_control(struct fid *fid, int command, void *arg)
{
	return -FI_ENOSYS;
}

int fcp_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		    void **ops, void *context)
{
	return -FI_ENOSYS;
}

/* What the hints ask that we lack. RETURN VALUE: true if any. */
static bool hints_refused(const struct fi_info *h, uint64_t *mr_mode)
{
	uint64_t caps = h->caps;

	*mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
	/* FI_HMEM where CUDA loads; device memory in RMA needs registering */
	if ((caps & FI_HMEM) && fc_cuda_available())
		return true;
	caps &= ~FI_HMEM;
	/* atomics (the board has none), collectives, multi-receive, named receive ... */
	if (caps & ~FCP_CAPS)
		return true;
	if (h->ep_attr && h->ep_attr->type != FI_EP_UNSPEC &&
	    h->ep_attr->type != FI_EP_RDM)
		return true;
	if (h->addr_format != FI_FORMAT_UNSPEC)
		return true;
	if (h->fabric_attr && h->fabric_attr->prov_name &&
	    strcasecmp(h->fabric_attr->prov_name, FCP_NAME))
		return true;
	if (h->fabric_attr && h->fabric_attr->name &&
	    strcmp(h->fabric_attr->name, FCP_NAME))
		return true;
	if (h->domain_attr) {
		int mr = h->domain_attr->mr_mode;

		if (h->domain_attr->name &&
		    strncmp(h->domain_attr->name, FCP_NAME, strlen(FCP_NAME)))
			return true;
		/* Keys are the board's: the caller must take ours. With
		 * FI_MR_BASIC, or FI_MR_PROV_KEY, we give them; offsets are
		 * addresses with FI_MR_BASIC or FI_MR_VIRT_ADDR. */
		if ((h->caps & FI_HMEM) && mr != FI_MR_UNSPEC &&
		    !(mr & FI_MR_HMEM))
			return true;
		if (mr == FI_MR_BASIC) {
			*mr_mode = FI_MR_BASIC;
		} else if (mr == FI_MR_SCALABLE) {
			if (caps & FI_RMA || !caps)
				return true;
			*mr_mode = 0;
		} else if (mr != FI_MR_UNSPEC) {
			if (!(mr & FI_MR_PROV_KEY) && (caps & FI_RMA || !caps))
				return true;
			*mr_mode = mr & (FI_MR_PROV_KEY | FI_MR_VIRT_ADDR |
					 FI_MR_HMEM);
		}
		if (h->domain_attr->av_type != FI_AV_UNSPEC &&
		    h->domain_attr->av_type != FI_AV_MAP &&
		    h->domain_attr->av_type != FI_AV_TABLE)
			return true;
	}
	if (h->tx_attr && (h->tx_attr->msg_order & ~FCP_ORDER))
		return true;
	if (h->rx_attr && (h->rx_attr->msg_order & ~FCP_ORDER))
		return true;
	if (h->tx_attr && h->tx_attr->inject_size > FC_TAG_INJECT_MAX)
		return true;
	return false;
}

static int fcp_getinfo(uint32_t version, const char *node, const char *service,
		       uint64_t flags, const struct fi_info *hints,
		       struct fi_info **info)
{
	uint64_t caps = FCP_CAPS, mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
	struct fi_info *fi;

	if (hints && hints_refused(hints, &mr_mode))
		return -FI_ENODATA;
	if (hints && hints->caps)
		caps = hints->caps & (FCP_CAPS | FI_HMEM);
	else if (!fc_cuda_available())
		caps |= FI_HMEM;
	if (caps & FI_HMEM)
		mr_mode |= FI_MR_HMEM;
	else
		mr_mode &= ~(uint64_t)FI_MR_HMEM;
	/* FI_RMA alone asks for writes and reads, both ways */
	if ((caps & FI_RMA) &&
	    !(caps & (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)))
		caps |= FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	if (!(caps & (FI_SEND | FI_RECV)))
		caps |= FI_SEND | FI_RECV;

	fi = fi_allocinfo();
	if (!fi)
		return -FI_ENOMEM;
	fi->caps = caps;
	fi->mode = 0;
	fi->addr_format = FI_FORMAT_UNSPEC;
	fi->tx_attr->caps = caps;
	fi->tx_attr->op_flags = hints && hints->tx_attr ?
					hints->tx_attr->op_flags &
						FCP_TX_FLAGS :
					0;
	fi->tx_attr->msg_order = FCP_ORDER;
	fi->tx_attr->comp_order = FI_ORDER_NONE;
	fi->tx_attr->inject_size = FC_TAG_INJECT_MAX;
	fi->tx_attr->size = FCP_QUEUE_SIZE;
	fi->tx_attr->iov_limit = 1;
	fi->tx_attr->rma_iov_limit = 1;
	fi->rx_attr->caps = caps;
	fi->rx_attr->op_flags = hints && hints->rx_attr ?
					hints->rx_attr->op_flags &
						FCP_RX_FLAGS :
					0;
	fi->rx_attr->msg_order = FCP_ORDER;
	fi->rx_attr->comp_order = FI_ORDER_NONE;
	fi->rx_attr->total_buffered_recv = 0;
	fi->rx_attr->size = FCP_QUEUE_SIZE;
	fi->rx_attr->iov_limit = 1;
	fi->ep_attr->type = FI_EP_RDM;
	fi->ep_attr->protocol = FI_PROTO_UNSPEC;
	fi->ep_attr->protocol_version = 1;
	fi->ep_attr->max_msg_size = FC_TAG_MAX_MSG;
	fi->ep_attr->msg_prefix_size = 0;
	fi->ep_attr->max_order_raw_size = 0;
	fi->ep_attr->max_order_war_size = 0;
	fi->ep_attr->max_order_waw_size = 0;
	fi->ep_attr->mem_tag_format = 0xaaaaaaaaaaaaaaaaull;
	fi->ep_attr->tx_ctx_cnt = 1;
	fi->ep_attr->rx_ctx_cnt = 1;
	fi->domain_attr->name = strdup(FCP_NAME "0");
	fi->domain_attr->threading = FI_THREAD_SAFE;
	/* Manual unless asked: a thread costs a core's time that polling
	 * callers (MPI) do not need. Control operations end in the call, so
	 * either is true of them. */
	fi->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	fi->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	if (hints && hints->domain_attr) {
		if (hints->domain_attr->control_progress == FI_PROGRESS_AUTO)
			fi->domain_attr->control_progress = FI_PROGRESS_AUTO;
		if (hints->domain_attr->data_progress == FI_PROGRESS_AUTO)
			fi->domain_attr->data_progress = FI_PROGRESS_AUTO;
	}
	fi->domain_attr->resource_mgmt = FI_RM_ENABLED;
	fi->domain_attr->av_type = hints && hints->domain_attr &&
						   hints->domain_attr->av_type ?
					   hints->domain_attr->av_type :
					   FI_AV_UNSPEC;
	fi->domain_attr->mr_mode = (int)mr_mode;
	fi->domain_attr->mr_key_size = sizeof(uint64_t);
	fi->domain_attr->cq_data_size = sizeof(uint64_t);
	fi->domain_attr->cq_cnt = 256;
	fi->domain_attr->ep_cnt = 128;
	fi->domain_attr->tx_ctx_cnt = 128;
	fi->domain_attr->rx_ctx_cnt = 128;
	fi->domain_attr->max_ep_tx_ctx = 1;
	fi->domain_attr->max_ep_rx_ctx = 1;
	fi->domain_attr->mr_iov_limit = 1;
	fi->domain_attr->mr_cnt = 1 << 16;
	fi->domain_attr->caps = FI_LOCAL_COMM | FI_REMOTE_COMM;
	fi->fabric_attr->name = strdup(FCP_NAME);
	fi->fabric_attr->prov_version = FCP_VERSION;
	fi->fabric_attr->api_version =
		FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
	if (!fi->domain_attr->name || !fi->fabric_attr->name) {
		fi_freeinfo(fi);
		return -FI_ENOMEM;
	}
	*info = fi;
	return 0;
}

static void fcp_cleanup(void)
{
	fcp_board_close();
}

struct fi_provider fcp_prov = {
	.name = FCP_NAME,
	.version = FCP_VERSION,
	.fi_version = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION),
	.getinfo = fcp_getinfo,
	.fabric = fcp_fabric_open,
	.cleanup = fcp_cleanup,
};

FI_EXT_INI
{
	return &fcp_prov;
}
