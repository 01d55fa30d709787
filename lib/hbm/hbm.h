/* SPDX-License-Identifier: MIT */
/* Private to lib/: a device's HBM state, shared by hbm.c and stream.c. */
#ifndef FC_HBM_H
#define FC_HBM_H

#include "internal.h"

#define FC__KNAME_MAX	32
#define FC__KERNELS_MAX 64

struct fc__hbm_ext {
	uint64_t addr, len;
};

/* The reservations of one pseudo-channel, sorted by address. */
struct fc__hbm_pch {
	struct fc__hbm_ext *ext;
	unsigned int n, cap;
};

struct fc__hbm {
	/* Taken before dev->lock, never after: stream calls do DMA. */
	pthread_mutex_t lock;
	struct fc_hbm_info info;
	struct fc__hbm_pch *pch;
	uint32_t next_pch;
	uint64_t prog_base;    /* programs of every stream; 0: none yet */
	struct fc_mem *bounce; /* a program on its way to the board */
	uint32_t start_seq[FC_MAX_LS][FC_LS_STREAMS];
	bool started[FC_MAX_LS][FC_LS_STREAMS];
	bool cancelled[FC_MAX_LS][FC_LS_STREAMS];
	uint32_t reset_seq[FC_MAX_LS];
	unsigned int n_kernels;
	char knames[FC__KERNELS_MAX][FC__KNAME_MAX];
};

/* The device's HBM state, made at first use. RETURN VALUE: 0, -EOPNOTSUPP
 * on a board without FC_CAP_HBM_STREAMS, -ENOMEM. */
int fc__hbm_get(struct fc_dev *dev, struct fc__hbm **hp);
void fc__hbm_fini(struct fc_dev *dev);
/* Under h->lock. @top: the highest place that fits, else the lowest. */
int fc__hbm_reserve(struct fc__hbm *h, uint64_t len, uint32_t pch, bool top,
		    uint64_t *addr);
/* A register, read without dev->lock where the backend maps them. */
uint32_t fc__hbm_rd(struct fc_dev *dev, uint32_t off);

#endif /* FC_HBM_H */
