/* SPDX-License-Identifier: MIT */
/*
 * Private to prov/: the libfabric provider "fpgacomm", a thin layer over
 * libfpgacomm's tagged messages (fc_tag_*), remote writes (fc_iput) and
 * buffers (fc_mem_register). One file per libfabric object, as libfabric's
 * own providers have them. All objects of a domain share its lock; the
 * library below has its own.
 */
#ifndef FCP_H
#define FCP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_prov.h>

#include <fpgacomm/fpgacomm.h>

#define FCP_NAME       "fpgacomm"
#define FCP_VERSION    FI_VERSION(0, 1)
#define FCP_MAX_CQ_EPS 16   /* endpoints bound to one CQ or counter */
#define FCP_QUEUE_SIZE 4096 /* tx and rx queue depth, as told */

/* An endpoint's address: the board's rank and the endpoint's port. */
struct fcp_addr {
	uint32_t node;
	uint32_t port;
};

/* The capabilities we have. */
#define FCP_CAPS                                                              \
	(FI_MSG | FI_TAGGED | FI_RMA | FI_WRITE | FI_REMOTE_WRITE | FI_READ | \
	 FI_REMOTE_READ | FI_SEND | FI_RECV | FI_DIRECTED_RECV | FI_SOURCE |  \
	 FI_LOCAL_COMM | FI_REMOTE_COMM)
/* fc_tag_cqe.uflags of our operations */
#define FCP_UF_TAGGED (1u << 0)
#define FCP_UF_NOCQ   (1u << 1) /* selective completion: no entry */

extern struct fi_provider fcp_prov;

struct fcp_fabric {
	struct fid_fabric fabric;
};

/* The board's own counts (domain.c). */
struct fcp_board_counts {
	uint64_t dma_bytes;
	uint32_t tx_pkts, retransmits, crc_errors; /* wrap, as the board's */
};

struct fcp_domain {
	struct fid_domain domain;
	struct fcp_fabric *fab;
	pthread_mutex_t lock;
	struct fc_dev *dev;
	struct fc_world world;
	uint64_t mr_mode;
	uint32_t next_port;
	int refs;			 /* objects opened on it */
	struct fcp_board_counts at_open; /* the board's, for FPGACOMM_FI_STATS */
	/* FI_PROGRESS_AUTO (progress.c): all under lock */
	bool auto_progress;
	bool stop;
	pthread_t thread;
	pthread_cond_t wake;	   /* to the thread: an endpoint, or stop */
	pthread_cond_t progressed; /* from it: entries pushed, a wait over */
	struct fcp_ep *eps, *rr;   /* enabled endpoints; the last waited on */
	struct fcp_ep *waiting;	   /* the one it waits on, unlocked */
};

struct fcp_av {
	struct fid_av av;
	struct fcp_domain *dom;
	enum fi_av_type type;
	struct fcp_addr *tab; /* FI_AV_TABLE */
	size_t n, cap;
	int refs;
};

/* One completion, as kept until read. */
struct fcp_cqe {
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	int err;	/* positive FI_E*; 0: success */
	int prov_errno; /* the library's -errno */
	size_t olen;
};

struct fcp_ep;

struct fcp_cq {
	struct fid_cq cq;
	struct fcp_domain *dom;
	enum fi_cq_format format;
	struct fcp_cqe *q;
	size_t head, count, cap;
	struct fcp_ep *eps[FCP_MAX_CQ_EPS];
	int neps;
	int refs;
	unsigned int idle; /* empty reads in a row */
};

struct fcp_cntr {
	struct fid_cntr cntr;
	struct fcp_domain *dom;
	uint64_t val, err;
	struct fcp_ep *eps[FCP_MAX_CQ_EPS];
	int neps;
	int refs;
};

struct fcp_mr {
	struct fid_mr mr;
	struct fcp_domain *dom;
	struct fc_mem *mem;
	const uint8_t *base;
	size_t len;
	bool cuda; /* CUDA device memory (FI_HMEM_CUDA), imported */
};

/* Does @mr hold [buf, buf + len)? */
static inline bool fcp_mr_holds(const struct fcp_mr *mr, const void *buf,
				size_t len)
{
	const uint8_t *p = buf;

	return p >= mr->base && len <= mr->len &&
	       (size_t)(p - mr->base) <= mr->len - len;
}

/*
 * A key (mr.c): the registered buffer's fabric address, less its virtual
 * address with FI_MR_VIRT_ADDR, modulo 2^48 (the address's width), and
 * above it what the owner let peers do with it.
 */
#define FCP_KEY_ADDR_MASK ((1ull << 48) - 1)
#define FCP_KEY_VALID	  (1ull << 63)
#define FCP_KEY_READ	  (1ull << 62) /* FI_REMOTE_READ */
#define FCP_KEY_WRITE	  (1ull << 61) /* FI_REMOTE_WRITE */

/* A remote write or read in flight. */
struct fcp_rma {
	struct fcp_rma *next;
	struct fc_req *req;
	struct fc_mem *own; /* registered for it alone */
	void *ctx;
	size_t len;
	uint32_t uflags;
	bool read;
};

struct fcp_ep {
	struct fid_ep ep;
	struct fcp_domain *dom;
	struct fcp_av *av;
	struct fcp_cq *txcq, *rxcq;
	bool tx_selective, rx_selective;
	struct fcp_cntr *send_cntr, *recv_cntr, *write_cntr, *read_cntr;
	uint64_t tx_op_flags, rx_op_flags;
	struct fc_tag_ep *tep;
	uint32_t port;
	bool enabled;
	bool directed; /* FI_DIRECTED_RECV: honour src_addr */
	struct fcp_rma *rma;
	struct fcp_ep *dnext; /* the domain's enabled endpoints (auto) */
	bool listed;
};

/* fabric.c */
int fcp_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		    void *context);
/* eq.c */
int fcp_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		struct fid_eq **eq, void *context);
/* domain.c */
int fcp_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		    struct fid_domain **dom, void *context);
/* The board, closed when the provider is unloaded. */
void fcp_board_close(void);
/* av.c */
int fcp_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		struct fid_av **av, void *context);
/* @fi_addr to (node, port). RETURN VALUE: 0 or -FI_EINVAL. */
int fcp_av_lookup_addr(struct fcp_av *av, fi_addr_t fi_addr,
		       struct fcp_addr *out);
/* (node, port) back to its fi_addr, FI_ADDR_NOTAVAIL if not inserted. */
fi_addr_t fcp_av_reverse(struct fcp_av *av, uint32_t node, uint32_t port);
/* cq.c */
int fcp_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		struct fid_cq **cq, void *context);
/* An entry into @cq (domain locked). RETURN VALUE: 0 or -FI_ENOMEM. */
int fcp_cq_push(struct fcp_cq *cq, const struct fcp_cqe *c);
/* cntr.c */
int fcp_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		  struct fid_cntr **cntr, void *context);
void fcp_cntr_inc(struct fcp_cntr *c, bool err);
/* mr.c */
extern struct fi_ops_mr fcp_mr_ops;
/* ep.c */
int fcp_ep_open(struct fid_domain *domain, struct fi_info *info,
		struct fid_ep **ep, void *context);
/* Completions of @ep's operations into its CQs and counters (domain
 * locked). RETURN VALUE: how many. */
int fcp_ep_progress(struct fcp_ep *ep);
/* msg.c: FI_MSG and FI_TAGGED operations; rma.c: FI_RMA */
extern struct fi_ops_msg fcp_msg_ops;
extern struct fi_ops_tagged fcp_tagged_ops;
extern struct fi_ops_rma fcp_rma_ops;
int fcp_rma_progress(struct fcp_ep *ep);
void fcp_rma_drop(struct fcp_ep *ep);
/* progress.c: the thread of a domain with FI_PROGRESS_AUTO. */
/* RETURN VALUE: 0 or -errno (no thread). */
int fcp_progress_start(struct fcp_domain *d);
void fcp_progress_stop(struct fcp_domain *d);
/* An enabled endpoint in or out of the thread's care (domain locked;
 * nothing without a thread). Removing waits until the thread is not in
 * the library on @ep. */
void fcp_progress_add(struct fcp_domain *d, struct fcp_ep *ep);
void fcp_progress_remove(struct fcp_domain *d, struct fcp_ep *ep);
/* Sleep (domain locked) until the thread moved something or @ms passed.
 * RETURN VALUE: 0 or -ETIMEDOUT. */
int fcp_progress_sleep(struct fcp_domain *d, int ms);
/* The library's -errno as libfabric's positive error. */
int fcp_errno(int status);

/* Stubs for what we do not have. */
int fcp_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int fcp_no_control(struct fid *fid, int command, void *arg);
int fcp_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		    void **ops, void *context);

#endif /* FCP_H */
