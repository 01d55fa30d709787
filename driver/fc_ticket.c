// SPDX-License-Identifier: GPL-2.0
/*
 * fpgacomm: a ticket's chains once built (fc_dma.c builds them): synced
 * for the board before they run and for the CPU after, ended wherever
 * they end (the engine that ran them, a cancel, a board reset), with the
 * result published and the file woken, then freed. Below the engines and
 * the submission, so that both call it and it calls neither.
 */
#include <linux/dma-mapping.h>
#include <linux/dmapool.h>
#include <linux/eventfd.h>
#include <linux/mm.h>
#include <linux/slab.h>

#include "fc.h"

void fc_chain_free(struct fc_dev *fc, struct fc_chain *c)
{
	unsigned int i;

	if (c->tables) {
		for (i = 0; i < c->ntables; i++)
			if (c->tables[i].desc)
				dma_pool_free(fc->desc_pool, c->tables[i].desc,
					      c->tables[i].dma);
		kvfree(c->tables);
	}
	kvfree(c->syncs);
	for (i = 0; i < c->nmems; i++)
		fc_mem_put(c->mems[i]);
	kvfree(c->mems);
	if (c->efd)
		eventfd_ctx_put(c->efd);
	kfree(c);
}

void fc_chains_free(struct fc_dev *fc, struct list_head *list)
{
	struct fc_chain *c, *tmp;

	list_for_each_entry_safe(c, tmp, list, node) {
		list_del(&c->node);
		fc_chain_free(fc, c);
	}
}

/*
 * Hand the registered memory of @c to the board before it starts. Memory
 * the board writes goes bidirectional: swiotlb then fills its bounce
 * buffer, so that the bytes the board leaves alone come back unchanged
 * from the sync for the CPU.
 */
void fc_chain_sync_for_device(struct fc_dev *fc, struct fc_chain *c)
{
	unsigned int i;

	for (i = 0; i < c->nsyncs; i++)
		dma_sync_sgtable_for_device(&fc->pdev->dev,
					    &c->syncs[i].mem->sgt.sgt,
					    c->syncs[i].write ?
					    DMA_BIDIRECTIONAL : DMA_TO_DEVICE);
}

/* Give it back to the CPU once the board is done with it. */
void fc_chain_sync_for_cpu(struct fc_dev *fc, struct fc_chain *c)
{
	unsigned int i;

	for (i = 0; i < c->nsyncs; i++)
		dma_sync_sgtable_for_cpu(&fc->pdev->dev,
					 &c->syncs[i].mem->sgt.sgt,
					 c->syncs[i].write ?
					 DMA_FROM_DEVICE : DMA_TO_DEVICE);
}

/* A ticket ended: publish its result and keep it on @done to be freed. */
void fc_chain_end(struct fc_chain *c, int status, u32 hw_error,
		  u32 hw_index, struct list_head *done)
{
	struct fc_file *ff = c->ff;
	struct fc_result *r = &ff->results[c->ticket & (FC_FILE_RESULTS - 1)];

	spin_lock(&ff->res_lock);
	if (r->ticket == c->ticket) {
		r->status = status;
		r->hw_error = hw_error;
		r->hw_index = hw_index;
		r->done = true;
	}
	/* Its tables are freed now, or parked with the board's memory. */
	fc_file_uncharge_locked(ff, c);
	ff->event = true;
	spin_unlock(&ff->res_lock);
	wake_up_interruptible_all(&ff->wq);
	if (c->efd)
		fc_eventfd_signal(c->efd);
	list_add_tail(&c->node, done);
}
