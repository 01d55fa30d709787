// SPDX-License-Identifier: MIT
/*
 * The domain: this process's board, opened as fc_open(NULL) opens it
 * ($FPGACOMM_DEVICE, or the emulated cluster of an mpirun or srun job).
 * A process has one board: domains share it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fpgacomm/hw.h>

#include "fcp.h"

/*
 * What the board moved: bytes of its DMA engines, packets its ports sent,
 * and the link faults they met (packets sent again, packets that failed
 * the CRC), from its own counters. With FPGACOMM_FI_STATS=PREFIX, a domain's
 * close writes the board's counts since the domain opened to PREFIX.RANK,
 * so that a test can tell the traffic went over the board.
 */
static void counts_read(struct fc_dev *dev, struct fcp_board_counts *c)
{
	struct fc_info info;
	uint32_t e, p, lo, hi;

	memset(c, 0, sizeof(*c));
	if (fc_query(dev, &info))
		return;
	for (e = 0; e < info.dma_engines; e++) {
		if (!fc_reg_read(dev, FC_DMA_REG(e, FC_DMA_BYTES_LO), &lo) &&
		    !fc_reg_read(dev, FC_DMA_REG(e, FC_DMA_BYTES_HI), &hi))
			c->dma_bytes += (uint64_t)hi << 32 | lo;
	}
	for (p = 1; p <= info.num_ports; p++) {
		if (!fc_reg_read(dev, FC_PORT_REG(p, FC_PORT_TX_PKTS), &lo))
			c->tx_pkts += lo;
		if (!fc_reg_read(dev, FC_PORT_REG(p, FC_PORT_RETRANSMITS), &lo))
			c->retransmits += lo;
		if (!fc_reg_read(dev, FC_PORT_REG(p, FC_PORT_CRC_ERRORS), &lo))
			c->crc_errors += lo;
	}
}

static void counts_write(struct fcp_domain *d)
{
	const char *prefix = getenv("FPGACOMM_FI_STATS");
	struct fcp_board_counts now;
	char path[4096];
	FILE *f;

	if (!prefix || !*prefix)
		return;
	counts_read(d->dev, &now);
	snprintf(path, sizeof(path), "%s.%u", prefix, d->world.rank);
	f = fopen(path, "w");
	if (!f)
		return;
	fprintf(f,
		"dma_bytes %llu\ntx_pkts %u\nretransmits %u\ncrc_errors %u\n",
		(unsigned long long)(now.dma_bytes - d->at_open.dma_bytes),
		now.tx_pkts - d->at_open.tx_pkts,
		now.retransmits - d->at_open.retransmits,
		now.crc_errors - d->at_open.crc_errors);
	fclose(f);
}

static pthread_mutex_t board_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fc_dev *board;
static unsigned int board_users;

static int board_get(struct fc_dev **devp)
{
	int ret = 0;

	pthread_mutex_lock(&board_lock);
	if (!board)
		ret = fc_open(&board, NULL);
	if (!ret) {
		board_users++;
		*devp = board;
	}
	pthread_mutex_unlock(&board_lock);
	return ret;
}

/*
 * The board stays open once opened, until the provider is unloaded
 * (fcp_board_close): a board closed and opened again skips what arrived
 * meanwhile (fc_open starts at each ring's TAIL), so a program that
 * closes its domain and opens another would lose its peers' messages.
 */
static void board_put(void)
{
	pthread_mutex_lock(&board_lock);
	board_users--;
	pthread_mutex_unlock(&board_lock);
}

void fcp_board_close(void)
{
	pthread_mutex_lock(&board_lock);
	if (board && !board_users) {
		fc_close(board);
		board = NULL;
	}
	pthread_mutex_unlock(&board_lock);
}

static int domain_close(struct fid *fid)
{
	struct fcp_domain *d = (struct fcp_domain *)fid;

	if (d->refs)
		return -FI_EBUSY;
	fcp_progress_stop(d);
	counts_write(d);
	board_put();
	pthread_mutex_destroy(&d->lock);
	free(d);
	return 0;
}

static struct fi_ops domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = domain_close,
	.bind = fcp_no_bind,
	.control = fcp_no_control,
	.ops_open = fcp_no_ops_open,
};

static int no_sep(struct fid_domain *domain, struct fi_info *info,
		  struct fid_ep **sep, void *context)
{
	return -FI_ENOSYS;
}

static int no_poll(struct fid_domain *domain, struct fi_poll_attr *attr,
		   struct fid_poll **pollset)
{
	return -FI_ENOSYS;
}

static int no_stx(struct fid_domain *domain, struct fi_tx_attr *attr,
		  struct fid_stx **stx, void *context)
{
	return -FI_ENOSYS;
}

static int no_srx(struct fid_domain *domain, struct fi_rx_attr *attr,
		  struct fid_ep **rx_ep, void *context)
{
	return -FI_ENOSYS;
}

/* The board has no atomic operations. */
static int query_atomic(struct fid_domain *domain, enum fi_datatype datatype,
			enum fi_op op, struct fi_atomic_attr *attr,
			uint64_t flags)
{
	return -FI_EOPNOTSUPP;
}

static int no_coll(struct fid_domain *domain, enum fi_collective_op coll,
		   struct fi_collective_attr *attr, uint64_t flags)
{
	return -FI_ENOSYS;
}

static int endpoint2(struct fid_domain *domain, struct fi_info *info,
		     struct fid_ep **ep, uint64_t flags, void *context)
{
	return flags ? -FI_EINVAL : fcp_ep_open(domain, info, ep, context);
}

static struct fi_ops_domain domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = fcp_av_open,
	.cq_open = fcp_cq_open,
	.endpoint = fcp_ep_open,
	.scalable_ep = no_sep,
	.cntr_open = fcp_cntr_open,
	.poll_open = no_poll,
	.stx_ctx = no_stx,
	.srx_ctx = no_srx,
	.query_atomic = query_atomic,
	.query_collective = no_coll,
	.endpoint2 = endpoint2,
};

int fcp_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		    struct fid_domain **dom, void *context)
{
	struct fcp_domain *d;
	int ret;

	if (!info || !dom)
		return -FI_EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -FI_ENOMEM;
	ret = board_get(&d->dev);
	if (ret) {
		free(d);
		return ret == -ENOENT ? -FI_ENODEV : ret;
	}
	ret = fc_world_query(d->dev, &d->world);
	if (ret) {
		/* a board in no cluster reaches nobody */
		board_put();
		free(d);
		return ret;
	}
	counts_read(d->dev, &d->at_open);
	pthread_mutex_init(&d->lock, NULL);
	if (info->domain_attr &&
	    info->domain_attr->data_progress == FI_PROGRESS_AUTO) {
		ret = fcp_progress_start(d);
		if (ret) {
			pthread_mutex_destroy(&d->lock);
			board_put();
			free(d);
			return ret;
		}
	}
	d->fab = (struct fcp_fabric *)fabric;
	d->mr_mode = info->domain_attr ? (uint64_t)info->domain_attr->mr_mode :
					 FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
	if (d->mr_mode == FI_MR_BASIC)
		d->mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
	d->domain.fid.fclass = FI_CLASS_DOMAIN;
	d->domain.fid.context = context;
	d->domain.fid.ops = &domain_fi_ops;
	d->domain.ops = &domain_ops;
	d->domain.mr = &fcp_mr_ops;
	*dom = &d->domain;
	return 0;
}
