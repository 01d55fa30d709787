// SPDX-License-Identifier: MIT
/*
 * test_libfabric: the libfabric provider "fpgacomm" (build/libfpgacomm-fi.so,
 * found through FI_PROVIDER_PATH) from outside, as programs that know
 * nothing of fpgacomm use it:
 *
 * 1. `fi_info -p fpgacomm` (libfabric-bin) lists it: FI_EP_RDM with
 *    FI_TAGGED, FI_MSG and FI_RMA with FI_READ and FI_REMOTE_READ.
 * 2. Two ranks under fpgacomm-run use the libfabric API on it, with an AV
 *    table and then an AV map: getname; a bad address in an insert
 *    (FI_ADDR_NOTAVAIL) and a send to an address not in the AV
 *    (-FI_EINVAL); tagged messages with remote CQ data read with their
 *    source (FI_SOURCE); untagged and tagged messages kept apart; a
 *    truncated receive (-FI_EAVAIL, then FI_ETRUNC with olen in the error
 *    entry, the next message whole); FI_PEEK, FI_CLAIM and the claimed
 *    message's receive; fi_cancel (FI_ECANCELED); send and receive
 *    counters; a remote write into a peer's registered buffer with its key
 *    (atomics: -FI_EOPNOTSUPP); remote reads of a peer's registered
 *    buffer (fi_read, fi_readv, fi_readmsg), checked byte for byte at
 *    sizes from 1 B to 3 MiB, with their CQ entries (FI_READ) and read
 *    counter; a key without FI_REMOTE_READ (-FI_EACCES, and a write with
 *    a read-only key too), not a key (-FI_EINVAL), a read past the
 *    registered end (an error entry, nothing read); directed receives
 *    that tell apart two endpoints of one rank (rank and port).
 *    Then a peer that dies: a receive directed at it ends with
 *    FI_EHOSTDOWN in bounded time, a send to it fails, all closes.
 * 3. `fi_pingpong` (libfabric-bin) between two ranks, msg and tagged, with
 *    its data check (-c), every size up to 1 MiB.
 * 4. tests/mpi/mpi_fabric under `mpirun --mca pml cm --mca mtl ofi` with
 *    FI_PROVIDER=fpgacomm on 2 (also with the MTL asking for auto
 *    progress), 3, 4 and 8 ranks (full mesh), 4 on a 2x2
 *    torus, and 8 on a 4x2 torus whose links drop and corrupt packets
 *    (FPGACOMM_FAULTS, read by the rank that makes the job's cluster);
 *    the board counters the provider writes at close (FPGACOMM_FI_STATS)
 *    must show the traffic went over the boards (every rank's packets, the
 *    largest message's bytes of DMA at least), so a run that fell back to
 *    another transport fails, and, with faults, that packets were sent
 *    again and some failed the CRC.
 * 5. FPGACOMM_FAULTS: bad values make a job rank's fc_open(NULL) fail with
 *    -EINVAL (the reason on stderr), a good one opens.
 * A part whose tool is missing (fi_info, fi_pingpong, mpirun) is skipped
 * saying why; all skipped: exit 77.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if __has_include(<rdma/fabric.h>)
#define HAVE_FI 1
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#endif

#include <fpgacomm/fpgacomm.h>

#include "cuda_test.h"
#include "launch.h"

#define EP_PORT	  "3" /* FPGACOMM_FI_PORT: the first round's endpoints */
#define WAIT_S	  30
#define DEAD_PORT "6" /* FPGACOMM_FI_PORT: the dead peer part */
#define DEAD_S	  20  /* how long a dead peer may take to be noticed */

static uint32_t rank;
static int failures;

#ifdef HAVE_FI

struct res {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *txcq, *rxcq;
	struct fid_cntr *scntr, *rcntr, *rdcntr;
	struct fid_ep *ep;
	fi_addr_t peer;
};

static struct res R;
static uint64_t extra_caps; /* FI_HMEM in the GPU part */

#define FI_OK(expr) CHECK_FI((expr), 0)
#define CHECK_FI(expr, want)                                                \
	do {                                                                \
		long _rc = (long)(expr), _w = (long)(want);                 \
		CHECK(_rc == _w, "%s = %ld (%s), expected %ld", #expr, _rc, \
		      fi_strerror((int)-_rc), _w);                          \
	} while (0)

/* One entry of @cq, waited for: its count (1), or -FI_EAVAIL. */
static long cq_wait(struct fid_cq *cq, struct fi_cq_tagged_entry *e,
		    fi_addr_t *src)
{
	time_t end = time(NULL) + WAIT_S;
	long rc;

	do {
		rc = fi_cq_readfrom(cq, e, 1, src);
		if (rc != -FI_EAGAIN)
			return rc;
	} while (time(NULL) < end);
	return -FI_ETIMEDOUT;
}

static void cq_expect(struct fid_cq *cq, void *ctx,
		      struct fi_cq_tagged_entry *e, fi_addr_t *src)
{
	long rc = cq_wait(cq, e, src);

	CHECK(rc == 1, "cq read: %ld (%s)", rc, fi_strerror((int)-rc));
	CHECK(rc != 1 || e->op_context == ctx, "context %p, expected %p",
	      e->op_context, ctx);
}

/* Both ranks here, and every message before it taken. */
static void sync_peer(void)
{
	struct fi_cq_tagged_entry e;
	uint64_t tag = 0x5ac0000000000000ull;
	char s = 0, r;
	int c1, c2;

	FI_OK(fi_trecv(R.ep, &r, 1, NULL, R.peer, tag, 0, &c2));
	FI_OK(fi_tsend(R.ep, &s, 1, NULL, R.peer, tag, &c1));
	cq_expect(R.txcq, &c1, &e, NULL);
	cq_expect(R.rxcq, &c2, &e, NULL);
}

static int open_res(enum fi_av_type av_type, uint32_t port,
		    enum fi_progress progress)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_av_attr av_attr = { .type = av_type };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP };
	struct {
		uint32_t node, port;
	} me, addr[2];
	size_t len = sizeof(me);
	fi_addr_t fa[2];
	int rc;

	memset(&R, 0, sizeof(R));
	hints->caps = FI_TAGGED | FI_MSG | FI_RMA | FI_DIRECTED_RECV |
		      FI_SOURCE;
	hints->ep_attr->type = FI_EP_RDM;
	hints->domain_attr->av_type = av_type;
	hints->domain_attr->mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
	hints->caps |= extra_caps;
	if (extra_caps & FI_HMEM)
		hints->domain_attr->mr_mode |= FI_MR_HMEM;
	hints->domain_attr->data_progress = progress;
	hints->domain_attr->control_progress = progress;
	hints->fabric_attr->prov_name = strdup("fpgacomm");
	rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &R.info);
	fi_freeinfo(hints);
	if (rc) {
		CHECK(0, "fi_getinfo: %s", fi_strerror(-rc));
		return -1;
	}
	/* what was asked, or manual when nothing was */
	if (progress == FI_PROGRESS_UNSPEC)
		progress = FI_PROGRESS_MANUAL;
	CHECK(R.info->domain_attr->data_progress == progress &&
		      R.info->domain_attr->control_progress == progress,
	      "progress: data %d control %d, expected %d",
	      R.info->domain_attr->data_progress,
	      R.info->domain_attr->control_progress, progress);
	FI_OK(fi_fabric(R.info->fabric_attr, &R.fabric, NULL));
	FI_OK(fi_domain(R.fabric, R.info, &R.domain, NULL));
	FI_OK(fi_av_open(R.domain, &av_attr, &R.av, NULL));
	FI_OK(fi_cq_open(R.domain, &cq_attr, &R.txcq, NULL));
	FI_OK(fi_cq_open(R.domain, &cq_attr, &R.rxcq, NULL));
	FI_OK(fi_cntr_open(R.domain, &cntr_attr, &R.scntr, NULL));
	FI_OK(fi_cntr_open(R.domain, &cntr_attr, &R.rcntr, NULL));
	FI_OK(fi_cntr_open(R.domain, &cntr_attr, &R.rdcntr, NULL));
	FI_OK(fi_endpoint(R.domain, R.info, &R.ep, NULL));
	if (failures)
		return -1;
	CHECK_FI(fi_enable(R.ep), -FI_ENOAV);
	FI_OK(fi_ep_bind(R.ep, &R.av->fid, 0));
	FI_OK(fi_ep_bind(R.ep, &R.txcq->fid, FI_TRANSMIT));
	FI_OK(fi_ep_bind(R.ep, &R.rxcq->fid, FI_RECV));
	FI_OK(fi_ep_bind(R.ep, &R.scntr->fid, FI_SEND));
	FI_OK(fi_ep_bind(R.ep, &R.rcntr->fid, FI_RECV));
	FI_OK(fi_ep_bind(R.ep, &R.rdcntr->fid, FI_READ));
	FI_OK(fi_enable(R.ep));
	FI_OK(fi_getname(&R.ep->fid, &me, &len));
	CHECK(len == sizeof(me) && me.node == rank && me.port == port,
	      "getname: %u:%u (len %zu)", me.node, me.port, len);
	/* the peer's first endpoint is on the same port; node 99 is none */
	addr[0].node = rank ^ 1;
	addr[0].port = port;
	addr[1].node = 99;
	addr[1].port = port;
	CHECK_FI(fi_av_insert(R.av, addr, 2, fa, 0, NULL), 1);
	CHECK(fa[1] == FI_ADDR_NOTAVAIL, "bad address got fi_addr %llu",
	      (unsigned long long)fa[1]);
	R.peer = fa[0];
	return failures ? -1 : 0;
}

static void close_res(void)
{
	struct fid *f[] = { R.ep ? &R.ep->fid : NULL,
			    R.scntr ? &R.scntr->fid : NULL,
			    R.rcntr ? &R.rcntr->fid : NULL,
			    R.rdcntr ? &R.rdcntr->fid : NULL,
			    R.txcq ? &R.txcq->fid : NULL,
			    R.rxcq ? &R.rxcq->fid : NULL,
			    R.av ? &R.av->fid : NULL,
			    R.domain ? &R.domain->fid : NULL,
			    R.fabric ? &R.fabric->fid : NULL };

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (f[i])
			FI_OK(fi_close(f[i]));
	fi_freeinfo(R.info);
}

static void test_bad_address(void)
{
	char b[8] = { 0 };
	int c;

	/* an index the table never gave, and a packed address of no rank */
	CHECK_FI(fi_tsend(R.ep, b, 8, NULL, 12345, 1, &c), -FI_EINVAL);
	CHECK_FI(fi_tsend(R.ep, b, 8, NULL, (fi_addr_t)77 << 32 | 3, 1, &c),
		 -FI_EINVAL);
	CHECK_FI(fi_tinject(R.ep, b, 4096, R.peer, 1), -FI_EINVAL);
}

/* Tagged with data, read with its source; then untagged beside tagged. */
static void test_data_source(void)
{
	struct fi_cq_tagged_entry e;
	uint64_t v = 0, w = 0x1122334455667788ull;
	fi_addr_t src = FI_ADDR_NOTAVAIL;
	int c1, c2;

	if (rank == 1) {
		FI_OK(fi_tsenddata(R.ep, &w, 8, NULL, 0xfeed, R.peer, 0x77,
				   &c1));
		cq_expect(R.txcq, &c1, &e, NULL);
		CHECK(e.flags == (FI_SEND | FI_TAGGED), "send flags %llx",
		      (unsigned long long)e.flags);
		FI_OK(fi_send(R.ep, &w, 4, NULL, R.peer, &c1));
		cq_expect(R.txcq, &c1, &e, NULL);
		FI_OK(fi_tinject(R.ep, &w, 2, R.peer, 0));
	} else {
		FI_OK(fi_trecv(R.ep, &v, 8, NULL, R.peer, 0x70, 0x0f, &c2));
		cq_expect(R.rxcq, &c2, &e, &src);
		CHECK(v == w && e.tag == 0x77 && e.data == 0xfeed &&
			      e.len == 8 && src == R.peer &&
			      e.flags ==
				      (FI_RECV | FI_TAGGED | FI_REMOTE_CQ_DATA),
		      "v %llx tag %llx data %llx len %zu src %llu flags %llx",
		      (unsigned long long)v, (unsigned long long)e.tag,
		      (unsigned long long)e.data, e.len,
		      (unsigned long long)src, (unsigned long long)e.flags);
		/* the tagged receive for tag 0 is not given the untagged one */
		v = 0;
		FI_OK(fi_trecv(R.ep, &v, 8, NULL, FI_ADDR_UNSPEC, 0, 0, &c2));
		cq_expect(R.rxcq, &c2, &e, NULL);
		CHECK(e.len == 2 && (e.flags & FI_TAGGED), "tagged got len %zu",
		      e.len);
		FI_OK(fi_recv(R.ep, &v, 8, NULL, FI_ADDR_UNSPEC, &c1));
		cq_expect(R.rxcq, &c1, &e, NULL);
		CHECK(e.len == 4 && e.flags == (FI_RECV | FI_MSG),
		      "untagged: len %zu flags %llx", e.len,
		      (unsigned long long)e.flags);
	}
	sync_peer();
}

static void test_truncate(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	char b[100];
	int c;

	memset(b, 'x', sizeof(b));
	if (rank == 1) {
		FI_OK(fi_tsend(R.ep, b, 100, NULL, R.peer, 5, &c));
		cq_expect(R.txcq, &c, &e, NULL);
		FI_OK(fi_tsend(R.ep, b, 20, NULL, R.peer, 6, &c));
		cq_expect(R.txcq, &c, &e, NULL);
	} else {
		memset(b, 0, sizeof(b));
		FI_OK(fi_trecv(R.ep, b, 10, NULL, R.peer, 5, 0, &c));
		CHECK_FI(cq_wait(R.rxcq, &e, NULL), -FI_EAVAIL);
		memset(&err, 0, sizeof(err));
		CHECK_FI(fi_cq_readerr(R.rxcq, &err, 0), 1);
		CHECK(err.err == FI_ETRUNC && err.olen == 90 && err.len == 10 &&
			      err.op_context == &c && b[9] == 'x' && b[10] == 0,
		      "err %d (%s) olen %zu len %zu", err.err,
		      fi_strerror(err.err), err.olen, err.len);
		FI_OK(fi_trecv(R.ep, b, 100, NULL, R.peer, 6, 0, &c));
		cq_expect(R.rxcq, &c, &e, NULL);
		CHECK(e.len == 20, "after the cut: len %zu", e.len);
	}
	sync_peer();
}

static void test_peek_claim_cancel(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct fi_context ctx;
	struct fi_msg_tagged m;
	struct iovec iov;
	char b[64] = { 0 };
	int c, tries = 0;
	long rc;

	if (rank == 1) {
		strcpy(b, "claimed");
		FI_OK(fi_tsend(R.ep, b, 8, NULL, R.peer, 9, &c));
		cq_expect(R.txcq, &c, &e, NULL);
	} else {
		memset(&m, 0, sizeof(m));
		memset(&ctx, 0, sizeof(ctx));
		m.addr = FI_ADDR_UNSPEC;
		m.tag = 9;
		m.context = &ctx;
		/* until it is here, a peek ends in FI_ENOMSG */
		for (;;) {
			FI_OK(fi_trecvmsg(R.ep, &m, FI_PEEK | FI_CLAIM));
			rc = cq_wait(R.rxcq, &e, NULL);
			if (rc == 1)
				break;
			CHECK_FI(rc, -FI_EAVAIL);
			CHECK_FI(fi_cq_readerr(R.rxcq, &err, 0), 1);
			CHECK(err.err == FI_ENOMSG, "peek error %d", err.err);
			if (failures || ++tries > 100000)
				break;
		}
		CHECK(e.len == 8 && e.tag == 9 && e.op_context == &ctx,
		      "peek: len %zu tag %llx", e.len,
		      (unsigned long long)e.tag);
		/* claimed: another receive does not get it */
		FI_OK(fi_trecv(R.ep, b, 64, NULL, FI_ADDR_UNSPEC, 9, 0, &c));
		iov.iov_base = b;
		iov.iov_len = sizeof(b);
		m.msg_iov = &iov;
		m.iov_count = 1;
		FI_OK(fi_trecvmsg(R.ep, &m, FI_CLAIM));
		cq_expect(R.rxcq, &ctx, &e, NULL);
		CHECK(!strcmp(b, "claimed"), "claimed data '%s'", b);
		FI_OK(fi_cancel(&R.ep->fid, &c));
		CHECK_FI(cq_wait(R.rxcq, &e, NULL), -FI_EAVAIL);
		CHECK_FI(fi_cq_readerr(R.rxcq, &err, 0), 1);
		CHECK(err.err == FI_ECANCELED && err.op_context == &c,
		      "cancel: err %d", err.err);
		CHECK_FI(fi_cancel(&R.ep->fid, &c), -FI_ENOENT);
	}
	sync_peer();
}

static void test_counters(void)
{
	uint64_t s = fi_cntr_read(R.scntr), r = fi_cntr_read(R.rcntr);
	uint64_t rerr = fi_cntr_readerr(R.rcntr);
	struct fi_cq_tagged_entry e;
	char b[4] = { 0 };
	int c;

	FI_OK(fi_tinject(R.ep, b, 4, R.peer, 0x123));
	FI_OK(fi_trecv(R.ep, b, 4, NULL, R.peer, 0x123, 0, &c));
	FI_OK(fi_cntr_wait(R.rcntr, r + 1, WAIT_S * 1000));
	FI_OK(fi_cntr_wait(R.scntr, s + 1, WAIT_S * 1000));
	/* the cut-off and the cancelled receive were errors; this is not */
	CHECK(fi_cntr_readerr(R.rcntr) == rerr + 0 && (rank || rerr == 2),
	      "receive errors: %llu, before %llu",
	      (unsigned long long)fi_cntr_readerr(R.rcntr),
	      (unsigned long long)rerr);
	cq_expect(R.rxcq, &c, &e, NULL); /* counted, and its entry too */
	sync_peer();
}

/* Rank 0's registered buffer written by rank 1 with its key. */
static void test_rma_write(void)
{
	enum {
		N = 8192
	};
	struct fi_cq_tagged_entry e;
	struct fid_mr *mr = NULL;
	uint64_t kv[2];
	uint8_t *buf = calloc(1, N);
	size_t cnt;
	int c;

	CHECK_FI(fi_query_atomic(R.domain, FI_UINT64, FI_SUM, NULL, 0),
		 -FI_EOPNOTSUPP);
	CHECK_FI(fi_atomicvalid(R.ep, FI_UINT64, FI_SUM, &cnt), -FI_EOPNOTSUPP);
	FI_OK(fi_mr_reg(R.domain, buf, N, FI_REMOTE_WRITE | FI_SEND | FI_RECV,
			0, 0, 0, &mr, NULL));
	if (!mr)
		return;
	if (rank == 0) {
		kv[0] = fi_mr_key(mr);
		kv[1] = (uint64_t)(uintptr_t)buf;
		FI_OK(fi_tsend(R.ep, kv, sizeof(kv), NULL, R.peer, 0x4b, &c));
		cq_expect(R.txcq, &c, &e, NULL);
		sync_peer(); /* written by now */
		for (int i = 0; i < N; i++)
			if (buf[i] != (uint8_t)(i * 7 + 1)) {
				CHECK(0, "byte %d: %u", i, buf[i]);
				break;
			}
	} else {
		FI_OK(fi_trecv(R.ep, kv, sizeof(kv), NULL, R.peer, 0x4b, 0,
			       &c));
		cq_expect(R.rxcq, &c, &e, NULL);
		for (int i = 0; i < N; i++)
			buf[i] = (uint8_t)(i * 7 + 1);
		/* the key grants writes, not reads */
		CHECK_FI(fi_read(R.ep, buf, N, fi_mr_desc(mr), R.peer, kv[1],
				 kv[0], &c),
			 -FI_EACCES);
		/* a key of another board is refused */
		CHECK_FI(fi_write(R.ep, buf, N, fi_mr_desc(mr), R.peer, kv[1],
				  fi_mr_key(mr), &c),
			 -FI_EINVAL);
		FI_OK(fi_write(R.ep, buf, 4096, fi_mr_desc(mr), R.peer, kv[1],
			       kv[0], &c));
		cq_expect(R.txcq, &c, &e, NULL);
		CHECK(e.flags == (FI_RMA | FI_WRITE) && e.len == 4096,
		      "write: flags %llx len %zu", (unsigned long long)e.flags,
		      e.len);
		/* unregistered source, at an offset */
		FI_OK(fi_write(R.ep, buf + 4096, 4096, NULL, R.peer,
			       kv[1] + 4096, kv[0], &c));
		cq_expect(R.txcq, &c, &e, NULL);
		sync_peer();
	}
	FI_OK(fi_close(&mr->fid));
	free(buf);
	sync_peer();
}

/* A read that must fail: its error entry, the local bytes untouched. */
static void read_refused(uint8_t *buf, size_t len, uint64_t addr, uint64_t key)
{
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_tagged_entry e;
	uint64_t errs = fi_cntr_readerr(R.rdcntr);
	int c;

	memset(buf, 0xee, len);
	FI_OK(fi_read(R.ep, buf, len, NULL, R.peer, addr, key, &c));
	CHECK_FI(cq_wait(R.txcq, &e, NULL), -FI_EAVAIL);
	CHECK_FI(fi_cq_readerr(R.txcq, &err, 0), 1);
	CHECK(err.op_context == &c && err.err != 0 &&
		      err.flags == (FI_RMA | FI_READ),
	      "read past the end: ctx %p err %d flags %llx", err.op_context,
	      err.err, (unsigned long long)err.flags);
	CHECK(fi_cntr_readerr(R.rdcntr) == errs + 1, "read errors %llu",
	      (unsigned long long)fi_cntr_readerr(R.rdcntr));
	for (size_t i = 0; i < len; i++)
		if (buf[i] != 0xee) {
			CHECK(0, "refused read wrote byte %zu: %u", i, buf[i]);
			break;
		}
}

/* Rank 1 reads rank 0's registered buffer with its key. */
static void test_rma_read(void)
{
	enum {
		M = 3 * 1024 * 1024 + 123
	};
	static const size_t sizes[] = {
		1, 63, 64, 4095, 4097, 65536, (1u << 20) + 7, M
	};
	struct fi_cq_tagged_entry e;
	struct fid_mr *mr = NULL, *wmr = NULL, *lmr = NULL;
	uint8_t *src = malloc(M), *dst = malloc(M), *wonly = calloc(1, 4096);
	uint64_t kv[4], reads = fi_cntr_read(R.rdcntr);
	struct fi_rma_iov riov;
	struct fi_msg_rma m;
	struct iovec iov;
	void *desc;
	int c;

	for (size_t i = 0; i < M; i++)
		src[i] = (uint8_t)(i * 13 + (i >> 12) + 5);
	FI_OK(fi_mr_reg(R.domain, src, M, FI_REMOTE_READ, 0, 0, 0, &mr, NULL));
	FI_OK(fi_mr_reg(R.domain, wonly, 4096, FI_REMOTE_WRITE, 0, 0, 0, &wmr,
			NULL));
	FI_OK(fi_mr_reg(R.domain, dst, M, FI_READ, 0, 0, 0, &lmr, NULL));
	if (!mr || !wmr || !lmr)
		goto out;
	if (rank == 0) {
		kv[0] = fi_mr_key(mr);
		kv[1] = (uint64_t)(uintptr_t)src;
		kv[2] = fi_mr_key(wmr);
		kv[3] = (uint64_t)(uintptr_t)wonly;
		FI_OK(fi_tsend(R.ep, kv, sizeof(kv), NULL, R.peer, 0x4c, &c));
		cq_expect(R.txcq, &c, &e, NULL);
		sync_peer(); /* rank 1 has read */
		goto out;
	}
	FI_OK(fi_trecv(R.ep, kv, sizeof(kv), NULL, R.peer, 0x4c, 0, &c));
	cq_expect(R.rxcq, &c, &e, NULL);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k], off = (M - n) / 3, bad = 0;

		memset(dst, 0, M);
		/* into a registered buffer, and into plain memory */
		FI_OK(fi_read(R.ep, dst + off, n,
			      k & 1 ? NULL : fi_mr_desc(lmr), R.peer,
			      kv[1] + off, kv[0], &c));
		cq_expect(R.txcq, &c, &e, NULL);
		CHECK(e.flags == (FI_RMA | FI_READ) && e.len == n,
		      "read %zu: flags %llx len %zu", n,
		      (unsigned long long)e.flags, e.len);
		for (size_t i = 0; i < M && !bad; i++)
			if (dst[i] != (i >= off && i < off + n ? src[i] : 0))
				bad = i + 1;
		CHECK(!bad, "read %zu at %zu: byte %zu is %u", n, off, bad - 1,
		      dst[bad ? bad - 1 : 0]);
	}
	FI_OK(fi_cntr_wait(R.rdcntr, reads + 8, WAIT_S * 1000));
	/* readv and readmsg: one iov each */
	memset(dst, 0, 256);
	iov.iov_base = dst;
	iov.iov_len = 100;
	desc = fi_mr_desc(lmr);
	FI_OK(fi_readv(R.ep, &iov, &desc, 1, R.peer, kv[1] + 7, kv[0], &c));
	cq_expect(R.txcq, &c, &e, NULL);
	CHECK(!memcmp(dst, src + 7, 100) && !dst[100], "readv data");
	riov.addr = kv[1] + 1000;
	riov.len = 200;
	riov.key = kv[0];
	memset(&m, 0, sizeof(m));
	m.msg_iov = &iov;
	m.desc = &desc;
	m.iov_count = 1;
	m.addr = R.peer;
	m.rma_iov = &riov;
	m.rma_iov_count = 1;
	m.context = &c;
	iov.iov_len = 200;
	FI_OK(fi_readmsg(R.ep, &m, FI_COMPLETION));
	cq_expect(R.txcq, &c, &e, NULL);
	CHECK(!memcmp(dst, src + 1000, 200), "readmsg data");
	CHECK(fi_cntr_read(R.rdcntr) == reads + 10 &&
		      fi_cntr_readerr(R.rdcntr) == 0,
	      "read counter %llu (errors %llu), expected %llu",
	      (unsigned long long)fi_cntr_read(R.rdcntr),
	      (unsigned long long)fi_cntr_readerr(R.rdcntr),
	      (unsigned long long)reads + 10);
	/* a key that grants writes only, and what is not a key */
	CHECK_FI(fi_read(R.ep, dst, 64, NULL, R.peer, kv[3], kv[2], &c),
		 -FI_EACCES);
	CHECK_FI(fi_write(R.ep, dst, 64, NULL, R.peer, kv[1], kv[0], &c),
		 -FI_EACCES);
	CHECK_FI(fi_read(R.ep, dst, 64, NULL, R.peer, kv[1], 0, &c),
		 -FI_EINVAL);
	CHECK_FI(fi_read(R.ep, dst, 64, NULL, R.peer, kv[1],
			 kv[0] & ~(1ull << 63), &c),
		 -FI_EINVAL);
	/* past the registered end: across it, and just after it */
	read_refused(dst, 4096, kv[1] + M - 64, kv[0]);
	read_refused(dst, 64, kv[1] + M, kv[0]);
	/* the reads before still stand: nothing was left half done */
	FI_OK(fi_read(R.ep, dst, 64, NULL, R.peer, kv[1] + M - 64, kv[0], &c));
	cq_expect(R.txcq, &c, &e, NULL);
	CHECK(!memcmp(dst, src + M - 64, 64), "last 64 bytes");
	sync_peer();
out:
	if (lmr)
		FI_OK(fi_close(&lmr->fid));
	if (wmr)
		FI_OK(fi_close(&wmr->fid));
	if (mr)
		FI_OK(fi_close(&mr->fid));
	free(src);
	free(dst);
	free(wonly);
	sync_peer();
}

#define DIR_PORT 7 /* rank 1's second endpoint in test_directed */

/* A second endpoint of rank 1's on DIR_PORT, with a CQ of its own. */
static int open_second(struct fid_ep **ep2, struct fid_cq **cq2)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_info *info = fi_dupinfo(R.info);
	uint32_t *src = malloc(2 * sizeof(uint32_t));

	if (!info || !src) {
		CHECK(0, "out of memory");
		fi_freeinfo(info);
		free(src);
		return -1;
	}
	src[0] = rank;
	src[1] = DIR_PORT;
	free(info->src_addr);
	info->src_addr = src;
	info->src_addrlen = 2 * sizeof(uint32_t);
	FI_OK(fi_cq_open(R.domain, &cq_attr, cq2, NULL));
	FI_OK(fi_endpoint(R.domain, info, ep2, NULL));
	fi_freeinfo(info);
	if (failures)
		return -1;
	FI_OK(fi_ep_bind(*ep2, &R.av->fid, 0));
	FI_OK(fi_ep_bind(*ep2, &(*cq2)->fid, FI_TRANSMIT | FI_RECV));
	FI_OK(fi_enable(*ep2));
	return failures ? -1 : 0;
}

/*
 * FI_DIRECTED_RECV names the whole source, rank and port: rank 1 sends
 * the same tag from its endpoint and from a second one on DIR_PORT; rank
 * 0's receive directed at the second is posted first, then the one
 * directed at the first; each must get its own endpoint's message, with
 * its source. Once with the receives posted before the messages come,
 * once after they came.
 */
static void test_directed(void)
{
	struct {
		uint32_t node, port;
	} a2 = { 1, DIR_PORT };
	struct fi_cq_tagged_entry e;
	struct fid_ep *ep2 = NULL;
	struct fid_cq *cq2 = NULL;
	fi_addr_t peer2 = FI_ADDR_NOTAVAIL, src;
	uint32_t v[2], got[2];
	int c[2];

	if (rank == 1 && open_second(&ep2, &cq2))
		goto out;
	if (rank == 0)
		CHECK_FI(fi_av_insert(R.av, &a2, 1, &peer2, 0, NULL), 1);
	for (int late = 0; late < 2; late++) {
		if (rank == 1) {
			sync_peer();
			v[0] = 0xa0 + late;
			v[1] = 0xb0 + late;
			FI_OK(fi_tsend(R.ep, &v[0], 4, NULL, R.peer, 0xd1,
				       &c[0]));
			FI_OK(fi_tsend(ep2, &v[1], 4, NULL, R.peer, 0xd1,
				       &c[1]));
			cq_expect(R.txcq, &c[0], &e, NULL);
			cq_expect(cq2, &c[1], &e, NULL);
			sync_peer();
			continue;
		}
		got[0] = got[1] = 0;
		if (late) {
			sync_peer();
			sync_peer(); /* both sent by now */
		}
		FI_OK(fi_trecv(R.ep, &got[1], 4, NULL, peer2, 0xd1, 0, &c[1]));
		FI_OK(fi_trecv(R.ep, &got[0], 4, NULL, R.peer, 0xd1, 0, &c[0]));
		if (!late)
			sync_peer();
		for (int k = 0; k < 2; k++) {
			long rc = cq_wait(R.rxcq, &e, &src);
			bool second = e.op_context == &c[1];

			CHECK(rc == 1 && src == (second ? peer2 : R.peer),
			      "directed: %ld, src %llu", rc,
			      (unsigned long long)src);
		}
		CHECK(got[0] == 0xa0u + late && got[1] == 0xb0u + late,
		      "%s: the receive from port %s got %x, from port %d "
		      "got %x",
		      late ? "after" : "before", EP_PORT, got[0], DIR_PORT,
		      got[1]);
		if (!late)
			sync_peer();
	}
out:
	if (ep2)
		FI_OK(fi_close(&ep2->fid));
	if (cq2)
		FI_OK(fi_close(&cq2->fid));
	sync_peer();
}

/* The byte @i of what rank @r sends in test_auto_progress. */
static uint8_t auto_byte(uint32_t r, size_t i)
{
	return (uint8_t)(i * 7 + (i >> 12) + r * 101 + 1);
}

/* Does @b hold all @n bytes of @r's message? Read as memory only. */
static bool auto_arrived(const volatile uint8_t *b, size_t n, uint32_t r)
{
	for (size_t i = n; i-- > 0;)
		if (b[i] != auto_byte(r, i))
			return false;
	return true;
}

/*
 * FI_PROGRESS_AUTO: both ranks post a receive and a send (a small message
 * in one channel message, a large one in pieces by rendezvous), then never
 * call libfabric while they look at their receive buffer: only the
 * domain's thread can put the peer's data there. Then fi_cq_sread alone
 * hands out the completions.
 */
static void test_auto_progress(void)
{
	static const size_t lens[] = { 64, 512 << 10 };
	struct fi_cq_tagged_entry e;

	for (size_t k = 0; k < 2; k++) {
		size_t n = lens[k];
		uint8_t *out = malloc(n), *in = calloc(1, n);
		time_t end = time(NULL) + WAIT_S;
		bool arrived;
		int c1, c2;
		long rc;

		if (!out || !in) {
			CHECK(0, "out of memory");
			free(out);
			free(in);
			return;
		}
		for (size_t i = 0; i < n; i++)
			out[i] = auto_byte(rank, i);
		FI_OK(fi_trecv(R.ep, in, n, NULL, R.peer, 0xa0 + k, 0, &c2));
		FI_OK(fi_tsend(R.ep, out, n, NULL, R.peer, 0xa0 + k, &c1));
		while (!(arrived = auto_arrived(in, n, rank ^ 1)) &&
		       time(NULL) < end)
			usleep(1000);
		CHECK(arrived,
		      "%zu B: the peer's data never came while the "
		      "program was out of the provider",
		      n);
		rc = fi_cq_sread(R.rxcq, &e, 1, NULL, WAIT_S * 1000);
		CHECK(rc == 1 && e.op_context == &c2 && e.len == n,
		      "sread rx: %ld (%s) len %zu", rc, fi_strerror((int)-rc),
		      e.len);
		rc = fi_cq_sread(R.txcq, &e, 1, NULL, WAIT_S * 1000);
		CHECK(rc == 1 && e.op_context == &c1, "sread tx: %ld (%s)", rc,
		      fi_strerror((int)-rc));
		sync_peer();
		free(out);
		free(in);
	}
}

/* GPU memory (FI_HMEM_CUDA) registered for RMA. */
static struct fid_mr *reg_cuda(cu_ptr p, size_t len)
{
	struct iovec iov = { (void *)(uintptr_t)p, len };
	struct fi_mr_attr attr = { 0 };
	struct fid_mr *mr = NULL;

	attr.mr_iov = &iov;
	attr.iov_count = 1;
	attr.access = FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	attr.iface = FI_HMEM_CUDA;
	FI_OK(fi_mr_regattr(R.domain, &attr, 0, &mr));
	return mr;
}

static uint8_t pat(size_t i, unsigned int seed)
{
	return (uint8_t)(i * 31 + (i >> 10) + seed);
}

/* Is @len bytes of GPU memory at @p (offset @base of its pattern) @seed's? */
static void check_gpu(struct cu *cu, cu_ptr p, size_t len, size_t base,
		      unsigned int seed, const char *what)
{
	uint8_t *h = malloc(len);

	CHECK(h && !cu->dtoh(h, p, len), "%s: dtoh", what);
	for (size_t i = 0; h && i < len; i++)
		if (h[i] != pat(base + i, seed)) {
			CHECK(0, "%s: byte %zu is %u, expected %u", what, i,
			      h[i], pat(base + i, seed));
			break;
		}
	free(h);
}

/* Fill GPU memory at @p with @seed's pattern from @base on. */
static void fill_gpu(struct cu *cu, cu_ptr p, size_t len, size_t base,
		     unsigned int seed)
{
	uint8_t *h = malloc(len);

	for (size_t i = 0; h && i < len; i++)
		h[i] = pat(base + i, seed);
	CHECK(h && !cu->htod(p, h, len), "htod");
	free(h);
}

/*
 * FI_HMEM: a tagged message and an untagged one between GPU buffers, and
 * remote writes and reads of a peer's registered GPU buffer (peer window).
 */
static void test_hmem(struct cu *cu)
{
	enum {
		N = (1u << 20) + 17,  /* tagged: large enough for rendezvous */
		S = 100,	      /* untagged: eager */
		G = (256u << 10) + 5, /* the registered GPU buffers */
		W = (64u << 10) + 3,  /* written at WOFF */
		WOFF = 1000,
	};
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_tagged_entry e;
	struct fid_mr *gmr = NULL;
	cu_ptr msg = 0, win = 0;
	uint64_t kv[2];
	uint8_t *host = calloc(1, G);
	int c;

	CHECK(R.info->caps & FI_HMEM, "caps %llx lack FI_HMEM",
	      (unsigned long long)R.info->caps);
	CHECK(R.info->domain_attr->mr_mode & FI_MR_HMEM, "mr_mode %x",
	      R.info->domain_attr->mr_mode);
	CHECK(!cu->alloc(&msg, N) && !cu->alloc(&win, G), "cuMemAlloc");
	if (failures)
		goto out;
	/* GPU to GPU: rank 0 sends, rank 1 receives, then back, untagged */
	if (rank == 0) {
		fill_gpu(cu, msg, N, 0, 1);
		FI_OK(fi_tsend(R.ep, (void *)(uintptr_t)msg, N, NULL, R.peer,
			       0x61, &c));
		cq_expect(R.txcq, &c, &e, NULL);
		cu->memset8(msg, 0, S);
		FI_OK(fi_recv(R.ep, (void *)(uintptr_t)msg, S, NULL, R.peer,
			      &c));
		cq_expect(R.rxcq, &c, &e, NULL);
		CHECK(e.len == S, "untagged len %zu", e.len);
		check_gpu(cu, msg, S, 7, 2, "untagged GPU message");
	} else {
		cu->memset8(msg, 0, N);
		FI_OK(fi_trecv(R.ep, (void *)(uintptr_t)msg, N, NULL, R.peer,
			       0x61, 0, &c));
		cq_expect(R.rxcq, &c, &e, NULL);
		CHECK(e.len == N && e.tag == 0x61, "tagged len %zu tag %llx",
		      e.len, (unsigned long long)e.tag);
		check_gpu(cu, msg, N, 0, 1, "tagged GPU message");
		fill_gpu(cu, msg, S, 7, 2);
		FI_OK(fi_send(R.ep, (void *)(uintptr_t)msg, S, NULL, R.peer,
			      &c));
		cq_expect(R.txcq, &c, &e, NULL);
	}
	/* each rank's GPU buffer registered; rank 1 writes and reads 0's */
	fill_gpu(cu, win, G, 0, rank ? 4 : 3);
	gmr = reg_cuda(win, G);
	if (!gmr)
		goto out;
	kv[0] = fi_mr_key(gmr);
	kv[1] = (uint64_t)win;
	FI_OK(fi_tsend(R.ep, kv, sizeof(kv), NULL, R.peer, 0x62, &c));
	cq_expect(R.txcq, &c, &e, NULL);
	FI_OK(fi_trecv(R.ep, kv, sizeof(kv), NULL, R.peer, 0x62, 0, &c));
	cq_expect(R.rxcq, &c, &e, NULL);
	if (rank == 1) {
		void *d = fi_mr_desc(gmr);

		FI_OK(fi_write(R.ep, (void *)(uintptr_t)(win + WOFF), W, d,
			       R.peer, kv[1] + WOFF, kv[0], &c));
		cq_expect(R.txcq, &c, &e, NULL);
		/* rank 0's own bytes past the write, into our GPU buffer */
		FI_OK(fi_read(R.ep, (void *)(uintptr_t)win, G - WOFF - W, d,
			      R.peer, kv[1] + WOFF + W, kv[0], &c));
		cq_expect(R.txcq, &c, &e, NULL);
		CHECK(e.flags == (FI_RMA | FI_READ), "read flags %llx",
		      (unsigned long long)e.flags);
		check_gpu(cu, win, G - WOFF - W, WOFF + W, 3,
			  "GPU read of the peer's GPU");
		/* the written bytes, read back into host memory */
		FI_OK(fi_read(R.ep, host, W, NULL, R.peer, kv[1] + WOFF, kv[0],
			      &c));
		cq_expect(R.txcq, &c, &e, NULL);
		for (size_t i = 0; i < W; i++)
			if (host[i] != pat(WOFF + i, 4)) {
				CHECK(0, "read back: byte %zu is %u", i,
				      host[i]);
				break;
			}
		/* past the peer's GPU buffer: its window refuses */
		memset(host, 0xee, 128);
		FI_OK(fi_read(R.ep, host, 128, NULL, R.peer, kv[1] + G - 64,
			      kv[0], &c));
		CHECK_FI(cq_wait(R.txcq, &e, NULL), -FI_EAVAIL);
		CHECK_FI(fi_cq_readerr(R.txcq, &err, 0), 1);
		CHECK(err.op_context == &c && err.err == FI_EACCES,
		      "read past the GPU buffer: err %d", err.err);
		CHECK(host[0] == 0xee && host[127] == 0xee,
		      "refused read wrote");
		/* GPU memory beyond its registration is refused */
		CHECK_FI(fi_write(R.ep, (void *)(uintptr_t)(win + G - 10), 100,
				  d, R.peer, kv[1], kv[0], &c),
			 -FI_EINVAL);
	}
	sync_peer();
	if (rank == 0) {
		check_gpu(cu, win, WOFF, 0, 3, "before the write");
		check_gpu(cu, win + WOFF, W, WOFF, 4, "the write");
		check_gpu(cu, win + WOFF + W, G - WOFF - W, WOFF + W, 3,
			  "after the write");
	}
	sync_peer();
out:
	if (gmr)
		FI_OK(fi_close(&gmr->fid));
	if (msg)
		cu->free(msg);
	if (win)
		cu->free(win);
	free(host);
}

/* A rank of the GPU part: CUDA (or its stand-in) and FI_HMEM. */
static int hmem_rank(void)
{
	struct cu cu;
	const char *why;
	void *ctx;

	rank = (uint32_t)atoi(getenv("FPGACOMM_RANK"));
	why = cu_load(&cu, &ctx);
	if (why) {
		printf("SKIP: %s\n", why);
		return 77;
	}
	extra_caps = FI_HMEM;
	if (!open_res(FI_AV_TABLE, 3, FI_PROGRESS_UNSPEC)) {
		sync_peer();
		test_hmem(&cu);
	}
	close_res();
	cu.primary_release(cu.dev);
	if (rank == 0 || failures)
		printf("rank %u: FI_HMEM %s (%d failures)\n", rank,
		       failures ? "FAIL" : "ok", failures);
	return failures ? 1 : 0;
}

static int run_rank(void)
{
	enum fi_av_type types[3] = { FI_AV_TABLE, FI_AV_MAP, FI_AV_TABLE };
	enum fi_progress progs[3] = { FI_PROGRESS_UNSPEC, FI_PROGRESS_MANUAL,
				      FI_PROGRESS_AUTO };
	static const char *const ports[3] = { EP_PORT, "4", "5" };

	rank = (uint32_t)atoi(getenv("FPGACOMM_RANK"));
	for (int t = 0; t < 3 && !failures; t++) {
		/* a port of its own each round: what the peer sends to the
		 * next round's endpoint must not reach this one, closing */
		setenv("FPGACOMM_FI_PORT", ports[t], 1);
		if (open_res(types[t], 3 + t, progs[t])) {
			close_res();
			break;
		}
		sync_peer();
		test_bad_address();
		test_data_source();
		test_truncate();
		test_peek_claim_cancel();
		test_counters();
		if (t == 0) {
			test_rma_write();
			test_rma_read();
			test_directed();
		}
		if (progs[t] == FI_PROGRESS_AUTO)
			test_auto_progress();
		close_res();
	}
	if (rank == 0 || failures)
		printf("rank %u: libfabric API %s (%d failures)\n", rank,
		       failures ? "FAIL" : "ok", failures);
	return failures ? 1 : 0;
}

/*
 * A peer that dies: rank 1 is up (one message each way), then leaves
 * without closing anything, as if it crashed. Rank 0's tagged receive
 * directed at it ends with an error entry, FI_EHOSTDOWN, within DEAD_S;
 * a send to it then fails (at once or with an error entry, FI_EHOSTDOWN
 * too) rather than hang; and rank 0 closes everything.
 */
static void test_dead_peer(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	char b[8] = "dead";
	long rc;
	int c;

	sync_peer();
	if (rank == 1)
		_exit(failures ? 1 : 0);
	FI_OK(fi_trecv(R.ep, b, sizeof(b), NULL, R.peer, 0xd1, 0, &c));
	rc = fi_cq_sread(R.rxcq, &e, 1, NULL, DEAD_S * 1000);
	CHECK_FI(rc, -FI_EAVAIL);
	memset(&err, 0, sizeof(err));
	if (rc == -FI_EAVAIL)
		CHECK_FI(fi_cq_readerr(R.rxcq, &err, 0), 1);
	CHECK(err.err == FI_EHOSTDOWN && err.op_context == &c &&
		      (err.flags & FI_RECV),
	      "receive from a dead peer: err %d (%s) context %p", err.err,
	      fi_strerror(err.err), err.op_context);
	rc = fi_tsend(R.ep, b, sizeof(b), NULL, R.peer, 0xd2, &c);
	if (!rc) { /* taken: its completion must say it failed */
		rc = fi_cq_sread(R.txcq, &e, 1, NULL, DEAD_S * 1000);
		CHECK_FI(rc, -FI_EAVAIL);
		memset(&err, 0, sizeof(err));
		if (rc == -FI_EAVAIL)
			CHECK_FI(fi_cq_readerr(R.txcq, &err, 0), 1);
		rc = -err.err;
	}
	CHECK_FI(rc, -FI_EHOSTDOWN);
}

static int dead_rank(void)
{
	rank = (uint32_t)atoi(getenv("FPGACOMM_RANK"));
	setenv("FPGACOMM_FI_PORT", DEAD_PORT, 1);
	if (!open_res(FI_AV_TABLE, atoi(DEAD_PORT), FI_PROGRESS_UNSPEC))
		test_dead_peer();
	close_res();
	printf("rank %u: a dead peer %s (%d failures)\n", rank,
	       failures ? "FAIL" : "ok", failures);
	return failures ? 1 : 0;
}

#else /* !HAVE_FI */

static int run_rank(void)
{
	return 77;
}

static int hmem_rank(void)
{
	return 77;
}

static int dead_rank(void)
{
	return 77;
}

#endif

/* ---- the parts run from outside ---- */

static char builddir[PATH_MAX];

/* Run @cmd in a shell, its output into @out (may be NULL). */
static int sh(const char *cmd, char *out, size_t len)
{
	FILE *p = popen(cmd, "r");
	size_t n = 0;
	char tmp[4096];
	int st;

	if (!p)
		return -1;
	if (!out) {
		out = tmp;
		len = sizeof(tmp);
	}
	while (n + 1 < len && fgets(out + n, (int)(len - n), p))
		n += strlen(out + n);
	out[n] = '\0';
	while (fgets(tmp, sizeof(tmp), p))
		; /* the rest */
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static bool have(const char *tool)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", tool);
	return sh(cmd, NULL, 0) == 0;
}

static int part_fi_info(void)
{
	char out[16384];
	int rc;

	if (!have("fi_info")) {
		printf("SKIP fi_info: not installed (libfabric-bin)\n");
		return 77;
	}
	rc = sh("fi_info -p fpgacomm -v 2>&1", out, sizeof(out));
	if (rc || !strstr(out, "prov_name: fpgacomm") ||
	    !strstr(out, "FI_EP_RDM") || !strstr(out, "FI_TAGGED") ||
	    !strstr(out, "FI_RMA") || !strstr(out, "FI_DIRECTED_RECV") ||
	    !strstr(out, "FI_READ") || !strstr(out, "FI_REMOTE_READ")) {
		printf("FAIL fi_info -p fpgacomm (exit %d):\n%s\n", rc, out);
		return 1;
	}
	printf("ok fi_info -p fpgacomm\n");
	return 0;
}

/* As a rank of fi_pingpong's pair: server on rank 0, client on rank 1. */
static int pingpong_rank(void)
{
	const char *mode = getenv("FC_TEST_PP_MODE");
	const char *port = getenv("FC_TEST_PP_PORT");

	if (!strcmp(getenv("FPGACOMM_RANK"), "0"))
		execlp("fi_pingpong", "fi_pingpong", "-p", "fpgacomm", "-e",
		       "rdm", "-m", mode, "-c", "-I", "50", "-B", port,
		       (char *)NULL);
	else {
		usleep(500 * 1000); /* the server listens by then */
		execlp("fi_pingpong", "fi_pingpong", "-p", "fpgacomm", "-e",
		       "rdm", "-m", mode, "-c", "-I", "50", "-P", port,
		       "127.0.0.1", (char *)NULL);
	}
	return 127;
}

static int part_pingpong(const char *run, const char *self)
{
	static const char *const modes[] = { "msg", "tagged" };
	char port[16];
	int worst = 0;

	if (!have("fi_pingpong")) {
		printf("SKIP fi_pingpong: not installed (libfabric-bin)\n");
		return 77;
	}
	for (int m = 0; m < 2; m++) {
		const char *env[] = { "FC_TEST_PP",
				      "1",
				      "FC_TEST_PP_MODE",
				      modes[m],
				      "FC_TEST_PP_PORT",
				      port,
				      NULL };
		int rc;

		snprintf(port, sizeof(port), "%d",
			 20000 + (int)(getpid() % 20000) + m);
		printf("== fi_pingpong -m %s -c between two ranks\n", modes[m]);
		fflush(stdout);
		rc = harness_launch_ranks(run, self, 2, NULL, NULL, env);
		worst = rc > worst ? rc : worst;
	}
	return worst;
}

/*
 * Each rank's counts: all moved packets, and one moved the largest
 * message (@least bytes); with link faults (@faults), packets were sent
 * again and, with corruption, some failed the CRC.
 */
static int check_stats(const char *prefix, int n, unsigned long long least,
		       const char *faults)
{
	unsigned long long dma, pkts, most = 0, re, crc, re_all = 0,
				      crc_all = 0;
	char path[PATH_MAX + 16];
	int bad = 0;

	for (int r = 0; r < n; r++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s.%d", prefix, r);
		f = fopen(path, "r");
		if (!f || fscanf(f,
				 "dma_bytes %llu tx_pkts %llu retransmits %llu "
				 "crc_errors %llu",
				 &dma, &pkts, &re, &crc) != 4) {
			printf("FAIL rank %d wrote no board counts (%s): the "
			       "provider was not used\n",
			       r, path);
			bad = 1;
		} else if (!pkts || !dma) {
			printf("FAIL rank %d: the board moved %llu bytes, %llu "
			       "packets\n",
			       r, dma, pkts);
			bad = 1;
		}
		if (f) {
			fclose(f);
			unlink(path);
		}
		most = dma > most ? dma : most;
		re_all += bad ? 0 : re;
		crc_all += bad ? 0 : crc;
	}
	if (!bad && most < least) {
		printf("FAIL no board moved the %llu-byte message (%llu "
		       "bytes)\n",
		       least, most);
		bad = 1;
	}
	if (!bad && faults &&
	    (!re_all || (strstr(faults, "corrupt") && !crc_all))) {
		printf("FAIL faults %s: the links sent %llu packets again, "
		       "%llu failed the CRC: the faults were not there\n",
		       faults, re_all, crc_all);
		bad = 1;
	}
	return bad;
}

/*
 * FPGACOMM_FAULTS as a job's rank reads it (a job of one rank, in a child
 * so that its environment stays there): bad values make fc_open(NULL)
 * fail with -EINVAL; a good one opens the job's cluster.
 */
static int part_faults_env(void)
{
	static const char *const bad[] = { "drop",
					   "drop=",
					   "drop=1",
					   "drop=2%x",
					   "loss=1%",
					   "drop=1%,drop=1%",
					   "drop=1%,",
					   "drop=1%,,corrupt=1%",
					   "drop=60%,corrupt=40%",
					   "drop=0.0000001" };
	int worst = 0;

	for (size_t i = 0; i <= sizeof(bad) / sizeof(bad[0]); i++) {
		const char *v = i < sizeof(bad) / sizeof(bad[0]) ?
					bad[i] :
					"drop=0.5%,corrupt=0.001";
		int want = i < sizeof(bad) / sizeof(bad[0]) ? -EINVAL : 0;
		pid_t pid = fork();
		int st;

		if (pid == 0) {
			struct fc_dev *dev = NULL;
			int rc;

			unsetenv("FPGACOMM_DEVICE");
			setenv("OMPI_COMM_WORLD_RANK", "0", 1);
			setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
			setenv("FPGACOMM_FAULTS", v, 1);
			rc = fc_open(&dev, NULL);
			if (!rc)
				fc_close(dev);
			if (rc != want)
				printf("FAIL FPGACOMM_FAULTS='%s': fc_open %d "
				       "(%s), expected %d\n",
				       v, rc, fc_strerror(rc), want);
			_exit(rc == want ? 0 : 1);
		}
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
		    WEXITSTATUS(st))
			worst = 1;
	}
	printf("%s FPGACOMM_FAULTS: bad values refused, a good one taken\n",
	       worst ? "FAIL" : "ok");
	return worst;
}

/* The MPI runs: ranks, topology ("": the default, a full mesh), link
 * faults (FPGACOMM_FAULTS) and the largest ping-pong message. Eight ranks
 * share two cores: their messages stay small. */
static const struct mpi_run {
	int n;
	const char *topo, *faults;
	size_t max;
	bool auto_progress; /* the ofi MTL asks for FI_PROGRESS_AUTO */
} mpi_runs[] = {
	{ 2, "", NULL, 64u << 20, false },
	{ 2, "", NULL, 1u << 20, true },
	{ 3, "", NULL, 64u << 20, false },
	{ 4, "", NULL, 64u << 20, false },
	{ 4, "torus:2x2", NULL, 64u << 20, false }, /* two hops */
	{ 8, "", NULL, 1u << 20, false },
	{ 8, "torus:4x2", "drop=1%,corrupt=1%", 1u << 20, false },
};

static int part_mpi(void)
{
	char prog[PATH_MAX + 32], cmd[3 * PATH_MAX], out[16384];
	char prefix[PATH_MAX];
	int worst = 0;

	snprintf(prog, sizeof(prog), "%s/tests/mpi/mpi_fabric", builddir);
	if (!have("mpirun") || access(prog, X_OK)) {
		printf("SKIP MPI: no mpirun or %s (scripts/install-deps.sh "
		       "--mpi)\n",
		       prog);
		return 77;
	}
	snprintf(prefix, sizeof(prefix), "/tmp/fc-test-libfabric-%d",
		 (int)getpid());
	for (size_t i = 0; i < sizeof(mpi_runs) / sizeof(mpi_runs[0]); i++) {
		const struct mpi_run *m = &mpi_runs[i];
		const char *faults = m->faults ? m->faults : "";
		int rc;

		const char *prog_mca =
			m->auto_progress ? " --mca mtl_ofi_data_progress auto" :
					   "";

		printf("== mpirun -n %d --mca pml cm --mca mtl ofi%s, "
		       "FI_PROVIDER=fpgacomm%s%s%s%s\n",
		       m->n, prog_mca, *m->topo ? ", " : "", m->topo,
		       *faults ? ", faults " : "", faults);
		fflush(stdout);
		snprintf(
			cmd, sizeof(cmd),
			"timeout 240 mpirun --allow-run-as-root --oversubscribe "
			"-n %d --mca pml cm --mca mtl ofi%s -x FI_PROVIDER=fpgacomm "
			"-x FI_PROVIDER_PATH -x FPGACOMM_FI_STATS=%s "
			"-x FPGACOMM_TOPOLOGY=%s -x FPGACOMM_FAULTS=%s %s %zu "
			"2>&1",
			m->n, prog_mca, prefix, m->topo, faults, prog, m->max);
		rc = sh(cmd, out, sizeof(out));
		fputs(out, stdout);
		if (rc || !strstr(out, "mpi_fabric: ok")) {
			printf("FAIL mpirun -n %d: exit %d\n", m->n, rc);
			rc = 1;
		}
		rc |= check_stats(prefix, m->n, m->max, m->faults);
		worst = rc > worst ? rc : worst;
	}
	return worst;
}

/*
 * The FI_HMEM part on 2 ranks: with the CUDA driver, or without one the
 * stand-in tests/fake_libcuda.c beside this program (each process's own
 * memory as its "GPU").
 */
static int part_hmem(const char *run, const char *self)
{
	const char *old = getenv("LD_LIBRARY_PATH");
	char *saved = old ? strdup(old) : NULL;
	int rc, stand_in;

	printf("== FI_HMEM: GPU memory between two ranks\n");
	stand_in = cu_use_stand_in(self);
	if (stand_in == 77 || stand_in < 0) {
		free(saved);
		return stand_in < 0 ? 1 : 77;
	}
	fflush(stdout);
	setenv("FC_TEST_HMEM", "1", 1);
	rc = harness_launch_ranks(run, self, 2, NULL, NULL, NULL);
	unsetenv("FC_TEST_HMEM");
	if (stand_in && saved)
		setenv("LD_LIBRARY_PATH", saved, 1);
	else if (stand_in)
		unsetenv("LD_LIBRARY_PATH");
	free(saved);
	return rc;
}

int main(void)
{
	static const char *const dead_env[] = { "FC_TEST_DEAD", "1", NULL };
	char self[PATH_MAX], run[PATH_MAX + 32], so[PATH_MAX + 32];
	int rc, worst = 0, skips = 0, parts = 0;

	if (getenv("FC_TEST_PP"))
		return pingpong_rank();
	if (getenv("FC_TEST_HMEM") && getenv("FPGACOMM_RANK"))
		return hmem_rank();
	if (getenv("FC_TEST_DEAD") && getenv("FPGACOMM_RANK"))
		return dead_rank();
	if (getenv("FPGACOMM_RANK"))
		return run_rank();
	printf("test_libfabric: the libfabric provider fpgacomm\n");
#ifndef HAVE_FI
	printf("SKIP: built without libfabric's headers (libfabric-dev)\n");
	return 77;
#endif
	rc = harness_find_run(self, sizeof(self), run, sizeof(run));
	if (rc)
		return rc;
	{
		char tmp[PATH_MAX];

		/* build/tests/test_libfabric: build/ */
		snprintf(tmp, sizeof(tmp), "%s", self);
		snprintf(builddir, sizeof(builddir), "%s",
			 dirname(dirname(tmp)));
	}
	snprintf(so, sizeof(so), "%s/libfpgacomm-fi.so", builddir);
	if (access(so, R_OK)) {
		printf("SKIP: no %s (make prov)\n", so);
		return 77;
	}
	setenv("FI_PROVIDER_PATH", builddir, 1);
	setenv("FI_PROVIDER", "fpgacomm", 1);
	setenv("FPGACOMM_FI_PORT", EP_PORT, 1);

	rc = part_fi_info();
	parts++;
	skips += rc == 77;
	worst = rc != 77 && rc > worst ? rc : worst;

	printf("== the libfabric API between two ranks\n");
	fflush(stdout);
	rc = harness_launch_ranks(run, self, 2, NULL, NULL, NULL);
	parts++;
	worst = rc > worst ? rc : worst;

	printf("== a peer that dies\n");
	fflush(stdout);
	rc = harness_launch_ranks(run, self, 2, NULL, NULL, dead_env);
	parts++;
	worst = rc > worst ? rc : worst;

	rc = part_hmem(run, self);
	parts++;
	skips += rc == 77;
	worst = rc != 77 && rc > worst ? rc : worst;

	rc = part_pingpong(run, self);
	parts++;
	skips += rc == 77;
	worst = rc != 77 && rc > worst ? rc : worst;

	rc = part_faults_env();
	parts++;
	worst = rc > worst ? rc : worst;

	rc = part_mpi();
	parts++;
	skips += rc == 77;
	worst = rc != 77 && rc > worst ? rc : worst;

	if (skips == parts)
		return 77;
	return worst;
}
