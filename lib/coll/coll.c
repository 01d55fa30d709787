// SPDX-License-Identifier: MIT
/*
 * The collectives' public entry points: arguments are checked here, on
 * this rank, before anything is sent (a bad argument changes nothing and
 * does not count as a collective of the group); then the algorithm's
 * schedule is recorded and queued on the group, and waited for or handed
 * back as a request.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coll_internal.h"
#include "internal.h"

/* ---- Requests handed to the caller ---- */

struct live_req {
	struct live_req *next;
	struct fc_coll_req *req;
};

static struct live_req *live_reqs; /* under fc__coll_lock */

static bool req_live(struct fc_coll_req *req)
{
	struct live_req *l;

	for (l = live_reqs; l && l->req != req; l = l->next)
		;
	return req && l;
}

static void req_forget(struct fc_coll_req *req)
{
	struct live_req **pp, *l;

	for (pp = &live_reqs; (l = *pp); pp = &l->next) {
		if (l->req == req) {
			*pp = l->next;
			free(l);
			return;
		}
	}
}

/* ---- Argument checks ---- */

static bool mul_ok(size_t a, size_t b, size_t *out)
{
	return !__builtin_mul_overflow(a, b, out) && *out <= SIZE_MAX / 4;
}

/* The extent of per-rank blocks: max(displs[i] + counts[i]) elements, with
 * every byte offset representable. RETURN VALUE: 0 or -EOVERFLOW. */
static int vec_extent(const size_t *counts, const size_t *displs, uint32_t n,
		      size_t es, size_t *total)
{
	size_t end, bytes;

	*total = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (__builtin_add_overflow(counts[i], displs[i], &end) ||
		    !mul_ok(end, es, &bytes))
			return -EOVERFLOW;
		if (counts[i] && end > *total)
			*total = end;
	}
	return 0;
}

static bool rooted(enum fc__coll_kind k)
{
	return k == FC__BCAST || k == FC__REDUCE || k == FC__GATHER ||
	       k == FC__SCATTER;
}

static bool reduction(enum fc__coll_kind k)
{
	return k == FC__REDUCE || k == FC__ALLREDUCE ||
	       k == FC__REDUCE_SCATTER || k == FC__SCAN || k == FC__EXSCAN;
}

/* Which collectives take FC_IN_PLACE, and on which ranks. */
static bool in_place_ok(const struct fc_group *g, const struct fc__coll_args *a)
{
	switch (a->kind) {
	case FC__REDUCE:
	case FC__GATHER:
		return g->rank == a->root;
	case FC__ALLREDUCE:
	case FC__REDUCE_SCATTER:
	case FC__SCAN:
	case FC__EXSCAN:
	case FC__ALLGATHER:
	case FC__ALLTOALL:
		return true;
	default:
		return false;
	}
}

/* The v forms' arrays, for the ranks that read them. */
static int check_vector(const struct fc_group *g, const struct fc__coll_args *a,
			size_t es, size_t *total)
{
	bool at_root = g->rank == a->root;
	bool needs = a->kind == FC__ALLGATHER || a->kind == FC__ALLTOALL ||
		     at_root;
	int ret;

	*total = 0;
	if (!needs)
		return 0;
	if (!a->counts || !a->displs)
		return -EINVAL;
	ret = vec_extent(a->counts, a->displs, g->size, es, total);
	if (ret)
		return ret;
	if (a->kind == FC__ALLTOALL && !a->in_place) {
		size_t stotal;

		if (!a->scounts || !a->sdispls)
			return -EINVAL;
		ret = vec_extent(a->scounts, a->sdispls, g->size, es, &stotal);
		if (ret)
			return ret;
		if (stotal && !a->sendbuf)
			return -EINVAL;
		/* what this rank sends itself must fit where it lands */
		if (a->scounts[g->rank] != a->counts[g->rank])
			return -EINVAL;
	}
	/* this rank's own block, given apart from the arrays */
	if ((a->kind == FC__GATHER || a->kind == FC__ALLGATHER ||
	     a->kind == FC__SCATTER) &&
	    !a->in_place && a->sendcount != a->counts[g->rank])
		return -EINVAL;
	return 0;
}

static int check(const struct fc_group *g, const struct fc__coll_args *a)
{
	size_t es = fc__dtype_size(a->dtype), bytes, total = 0;
	bool at_root = g->rank == a->root;
	int ret;

	if (!es)
		return -EINVAL;
	if (reduction(a->kind) && !fc__redop_valid(a->dtype, a->op))
		return -EINVAL;
	if (rooted(a->kind) && a->root >= g->size)
		return -EINVAL;
	if (a->in_place && !in_place_ok(g, a))
		return -EINVAL;
	if (!mul_ok(a->count, es, &bytes) || !mul_ok(bytes, g->size, &total))
		return -EOVERFLOW;
	if (a->vector) {
		ret = check_vector(g, a, es, &total);
		if (ret)
			return ret;
		if (!mul_ok(a->sendcount, es, &bytes))
			return -EOVERFLOW;
	}
	switch (a->kind) {
	case FC__BARRIER:
		return 0;
	case FC__BCAST:
		return bytes && !a->recvbuf ? -EINVAL : 0;
	case FC__REDUCE:
		if (bytes && !a->in_place && !a->sendbuf)
			return -EINVAL;
		return bytes && at_root && !a->recvbuf ? -EINVAL : 0;
	case FC__GATHER:
	case FC__ALLGATHER:
		if (!a->vector)
			bytes = a->count * es;
		if (bytes && !a->in_place && !a->sendbuf)
			return -EINVAL;
		return total && !a->recvbuf &&
				       (at_root || a->kind == FC__ALLGATHER) ?
			       -EINVAL :
			       0;
	case FC__SCATTER:
		if (total && at_root && !a->sendbuf)
			return -EINVAL;
		if (!a->vector)
			bytes = a->count * es;
		return bytes && !a->recvbuf ? -EINVAL : 0;
	case FC__ALLTOALL:
		if (total && !a->recvbuf)
			return -EINVAL;
		return !a->vector && total && !a->in_place && !a->sendbuf ?
			       -EINVAL :
			       0;
	default: /* allreduce, reduce_scatter, scan, exscan */
		if (a->kind == FC__REDUCE_SCATTER)
			bytes = total;
		if (bytes && ((!a->in_place && !a->sendbuf) || !a->recvbuf))
			return -EINVAL;
		return 0;
	}
}

/* ---- Running ---- */

/* A collective has ended with @ret: its result to device memory, and the
 * request freed. RETURN VALUE: @ret, or the copy's error. */
static int req_end(struct fc_coll_req *req, int ret)
{
	ret = fc__coll_stage_out(req->dstage, ret);
	fc__coll_req_free(req);
	return ret;
}

int fc__coll_run(struct fc_group *g, const struct fc__coll_args *args,
		 int timeout_ms, struct fc_coll_req **reqp)
{
	struct fc__coll_args a = *args;
	struct live_req *l = NULL;
	struct fc_coll_req *req;
	int ret;

	if (a.sendbuf == FC_IN_PLACE) {
		a.in_place = true;
		a.sendbuf = NULL;
	}
	if (!a.vector)
		a.sendcount = a.count;
	req = calloc(1, sizeof(*req));
	if (reqp)
		l = malloc(sizeof(*l));
	if (!req || (reqp && !l)) {
		free(req);
		free(l);
		return -ENOMEM;
	}
	fc__coll_lock();
	ret = fc__group_live(g) ? check(g, &a) : -EINVAL;
	if (!ret)
		ret = fc__coll_stage_in(g, &a, &req->dstage);
	if (ret)
		goto err_free;
	req->dtype = a.dtype;
	req->op = a.op;
	req->sig = fc__coll_signature(&a);
	fc__sched_buffers(&req->sched, g, &a);
	ret = fc__coll_record(g, &a, &req->sched);
	fc__coll_start(g, req);
	if (ret) {
		/* the members' numbering must not drift: the group is lost */
		fc__group_break(g, ret);
		goto err_free;
	}
	if (reqp) {
		l->req = req;
		l->next = live_reqs;
		live_reqs = l;
		*reqp = req;
		fc__coll_unlock();
		return 0;
	}
	ret = fc__coll_wait(req, timeout_ms);
	if (ret == -ETIMEDOUT)
		fc__group_break(g, -ETIMEDOUT);
err_free:
	fc__coll_unlock();
	ret = req_end(req, ret);
	free(l);
	return ret;
}

FC__EXPORT int fc_coll_test(struct fc_coll_req *req)
{
	int ret;

	/* every board of the process first: the progress rule */
	fc__poll_all(FC__COLL_POLL_ARG);
	fc__coll_lock();
	if (!req_live(req)) {
		fc__coll_unlock();
		return -EINVAL;
	}
	ret = fc__coll_test(req);
	if (ret != -EINPROGRESS)
		req_forget(req);
	fc__coll_unlock();
	if (ret != -EINPROGRESS)
		ret = req_end(req, ret);
	return ret;
}

FC__EXPORT int fc_coll_wait(struct fc_coll_req *req, int timeout_ms)
{
	int ret;

	fc__coll_lock();
	if (!req_live(req)) {
		fc__coll_unlock();
		return -EINVAL;
	}
	ret = fc__coll_wait(req, timeout_ms);
	if (ret != -ETIMEDOUT && ret != -EINPROGRESS)
		req_forget(req);
	fc__coll_unlock();
	if (ret != -ETIMEDOUT && ret != -EINPROGRESS)
		ret = req_end(req, ret);
	return ret;
}

FC__EXPORT int fc_coll_cancel(struct fc_coll_req *req)
{
	fc__coll_lock();
	if (!req_live(req)) {
		fc__coll_unlock();
		return -EINVAL;
	}
	if (req->status == -EINPROGRESS)
		fc__group_break(req->group, -ECANCELED);
	req_forget(req);
	fc__coll_unlock();
	req_end(req, -ECANCELED);
	return 0;
}

FC__EXPORT const char *fc_coll_algo_name(struct fc_group *g, const char *coll,
					 size_t bytes)
{
	const char *name = NULL;

	if (!coll)
		return NULL;
	fc__coll_lock();
	for (int k = 0; k < FC__SPLIT && fc__group_live(g); k++)
		if (!strcmp(fc__coll_kind_names[k], coll))
			name = fc__coll_algo(g, (enum fc__coll_kind)k, bytes);
	fc__coll_unlock();
	return name;
}

/* ---- The collectives ---- */

static struct fc__coll_args red(enum fc__coll_kind kind, const void *sendbuf,
				void *recvbuf, size_t count,
				enum fc_dtype dtype, enum fc_redop op,
				uint32_t root)
{
	struct fc__coll_args a = {
		.kind = kind,
		.sendbuf = sendbuf,
		.recvbuf = recvbuf,
		.count = count,
		.dtype = dtype,
		.op = op,
		.root = root,
	};
	return a;
}

static struct fc__coll_args vec(enum fc__coll_kind kind, const void *sendbuf,
				size_t sendcount, void *recvbuf,
				const size_t *counts, const size_t *displs,
				enum fc_dtype dtype, uint32_t root)
{
	struct fc__coll_args a = {
		.kind = kind,
		.vector = true,
		.sendbuf = sendbuf,
		.sendcount = sendcount,
		.recvbuf = recvbuf,
		.counts = counts,
		.displs = displs,
		.dtype = dtype,
		.root = root,
	};
	return a;
}

static int run(struct fc_group *g, struct fc__coll_args a, int timeout_ms)
{
	return fc__coll_run(g, &a, timeout_ms, NULL);
}

static int start(struct fc_group *g, struct fc__coll_args a,
		 struct fc_coll_req **reqp)
{
	return reqp ? fc__coll_run(g, &a, 0, reqp) : -EINVAL;
}

FC__EXPORT int fc_barrier_group(struct fc_group *g, int timeout_ms)
{
	return run(g, red(FC__BARRIER, NULL, NULL, 0, FC_UINT8, 0, 0),
		   timeout_ms);
}

FC__EXPORT int fc_ibarrier_group(struct fc_group *g, struct fc_coll_req **reqp)
{
	return start(g, red(FC__BARRIER, NULL, NULL, 0, FC_UINT8, 0, 0), reqp);
}

FC__EXPORT int fc_bcast(struct fc_group *g, void *buf, size_t count,
			enum fc_dtype dtype, uint32_t root, int timeout_ms)
{
	return run(g, red(FC__BCAST, NULL, buf, count, dtype, 0, root),
		   timeout_ms);
}

FC__EXPORT int fc_ibcast(struct fc_group *g, void *buf, size_t count,
			 enum fc_dtype dtype, uint32_t root,
			 struct fc_coll_req **reqp)
{
	return start(g, red(FC__BCAST, NULL, buf, count, dtype, 0, root), reqp);
}

FC__EXPORT int fc_reduce(struct fc_group *g, const void *sendbuf, void *recvbuf,
			 size_t count, enum fc_dtype dtype, enum fc_redop op,
			 uint32_t root, int timeout_ms)
{
	return run(g, red(FC__REDUCE, sendbuf, recvbuf, count, dtype, op, root),
		   timeout_ms);
}

FC__EXPORT int fc_ireduce(struct fc_group *g, const void *sendbuf,
			  void *recvbuf, size_t count, enum fc_dtype dtype,
			  enum fc_redop op, uint32_t root,
			  struct fc_coll_req **reqp)
{
	return start(g,
		     red(FC__REDUCE, sendbuf, recvbuf, count, dtype, op, root),
		     reqp);
}

FC__EXPORT int fc_allreduce(struct fc_group *g, const void *sendbuf,
			    void *recvbuf, size_t count, enum fc_dtype dtype,
			    enum fc_redop op, int timeout_ms)
{
	return run(g, red(FC__ALLREDUCE, sendbuf, recvbuf, count, dtype, op, 0),
		   timeout_ms);
}

FC__EXPORT int fc_iallreduce(struct fc_group *g, const void *sendbuf,
			     void *recvbuf, size_t count, enum fc_dtype dtype,
			     enum fc_redop op, struct fc_coll_req **reqp)
{
	return start(g,
		     red(FC__ALLREDUCE, sendbuf, recvbuf, count, dtype, op, 0),
		     reqp);
}

FC__EXPORT int fc_reduce_scatter(struct fc_group *g, const void *sendbuf,
				 void *recvbuf, size_t count,
				 enum fc_dtype dtype, enum fc_redop op,
				 int timeout_ms)
{
	return run(g,
		   red(FC__REDUCE_SCATTER, sendbuf, recvbuf, count, dtype, op,
		       0),
		   timeout_ms);
}

FC__EXPORT int fc_ireduce_scatter(struct fc_group *g, const void *sendbuf,
				  void *recvbuf, size_t count,
				  enum fc_dtype dtype, enum fc_redop op,
				  struct fc_coll_req **reqp)
{
	return start(g,
		     red(FC__REDUCE_SCATTER, sendbuf, recvbuf, count, dtype, op,
			 0),
		     reqp);
}

FC__EXPORT int fc_scan(struct fc_group *g, const void *sendbuf, void *recvbuf,
		       size_t count, enum fc_dtype dtype, enum fc_redop op,
		       int timeout_ms)
{
	return run(g, red(FC__SCAN, sendbuf, recvbuf, count, dtype, op, 0),
		   timeout_ms);
}

FC__EXPORT int fc_iscan(struct fc_group *g, const void *sendbuf, void *recvbuf,
			size_t count, enum fc_dtype dtype, enum fc_redop op,
			struct fc_coll_req **reqp)
{
	return start(g, red(FC__SCAN, sendbuf, recvbuf, count, dtype, op, 0),
		     reqp);
}

FC__EXPORT int fc_exscan(struct fc_group *g, const void *sendbuf, void *recvbuf,
			 size_t count, enum fc_dtype dtype, enum fc_redop op,
			 int timeout_ms)
{
	return run(g, red(FC__EXSCAN, sendbuf, recvbuf, count, dtype, op, 0),
		   timeout_ms);
}

FC__EXPORT int fc_iexscan(struct fc_group *g, const void *sendbuf,
			  void *recvbuf, size_t count, enum fc_dtype dtype,
			  enum fc_redop op, struct fc_coll_req **reqp)
{
	return start(g, red(FC__EXSCAN, sendbuf, recvbuf, count, dtype, op, 0),
		     reqp);
}

FC__EXPORT int fc_gather(struct fc_group *g, const void *sendbuf, void *recvbuf,
			 size_t count, enum fc_dtype dtype, uint32_t root,
			 int timeout_ms)
{
	return run(g, red(FC__GATHER, sendbuf, recvbuf, count, dtype, 0, root),
		   timeout_ms);
}

FC__EXPORT int fc_igather(struct fc_group *g, const void *sendbuf,
			  void *recvbuf, size_t count, enum fc_dtype dtype,
			  uint32_t root, struct fc_coll_req **reqp)
{
	return start(g,
		     red(FC__GATHER, sendbuf, recvbuf, count, dtype, 0, root),
		     reqp);
}

FC__EXPORT int fc_scatter(struct fc_group *g, const void *sendbuf,
			  void *recvbuf, size_t count, enum fc_dtype dtype,
			  uint32_t root, int timeout_ms)
{
	return run(g, red(FC__SCATTER, sendbuf, recvbuf, count, dtype, 0, root),
		   timeout_ms);
}

FC__EXPORT int fc_iscatter(struct fc_group *g, const void *sendbuf,
			   void *recvbuf, size_t count, enum fc_dtype dtype,
			   uint32_t root, struct fc_coll_req **reqp)
{
	return start(g,
		     red(FC__SCATTER, sendbuf, recvbuf, count, dtype, 0, root),
		     reqp);
}

FC__EXPORT int fc_allgather(struct fc_group *g, const void *sendbuf,
			    void *recvbuf, size_t count, enum fc_dtype dtype,
			    int timeout_ms)
{
	return run(g, red(FC__ALLGATHER, sendbuf, recvbuf, count, dtype, 0, 0),
		   timeout_ms);
}

FC__EXPORT int fc_iallgather(struct fc_group *g, const void *sendbuf,
			     void *recvbuf, size_t count, enum fc_dtype dtype,
			     struct fc_coll_req **reqp)
{
	return start(g,
		     red(FC__ALLGATHER, sendbuf, recvbuf, count, dtype, 0, 0),
		     reqp);
}

FC__EXPORT int fc_gatherv(struct fc_group *g, const void *sendbuf,
			  size_t sendcount, void *recvbuf, const size_t *counts,
			  const size_t *displs, enum fc_dtype dtype,
			  uint32_t root, int timeout_ms)
{
	return run(g,
		   vec(FC__GATHER, sendbuf, sendcount, recvbuf, counts, displs,
		       dtype, root),
		   timeout_ms);
}

FC__EXPORT int fc_igatherv(struct fc_group *g, const void *sendbuf,
			   size_t sendcount, void *recvbuf,
			   const size_t *counts, const size_t *displs,
			   enum fc_dtype dtype, uint32_t root,
			   struct fc_coll_req **reqp)
{
	return start(g,
		     vec(FC__GATHER, sendbuf, sendcount, recvbuf, counts,
			 displs, dtype, root),
		     reqp);
}

/* scatterv: the arrays describe the root's send buffer; recvcount is this
 * rank's block, kept in sendcount like gatherv's. */
static struct fc__coll_args scatterv(const void *sendbuf, const size_t *counts,
				     const size_t *displs, void *recvbuf,
				     size_t recvcount, enum fc_dtype dtype,
				     uint32_t root)
{
	return vec(FC__SCATTER, sendbuf, recvcount, recvbuf, counts, displs,
		   dtype, root);
}

FC__EXPORT int fc_scatterv(struct fc_group *g, const void *sendbuf,
			   const size_t *counts, const size_t *displs,
			   void *recvbuf, size_t recvcount, enum fc_dtype dtype,
			   uint32_t root, int timeout_ms)
{
	return run(g,
		   scatterv(sendbuf, counts, displs, recvbuf, recvcount, dtype,
			    root),
		   timeout_ms);
}

FC__EXPORT int fc_iscatterv(struct fc_group *g, const void *sendbuf,
			    const size_t *counts, const size_t *displs,
			    void *recvbuf, size_t recvcount,
			    enum fc_dtype dtype, uint32_t root,
			    struct fc_coll_req **reqp)
{
	return start(g,
		     scatterv(sendbuf, counts, displs, recvbuf, recvcount,
			      dtype, root),
		     reqp);
}

FC__EXPORT int fc_allgatherv(struct fc_group *g, const void *sendbuf,
			     size_t sendcount, void *recvbuf,
			     const size_t *counts, const size_t *displs,
			     enum fc_dtype dtype, int timeout_ms)
{
	return run(g,
		   vec(FC__ALLGATHER, sendbuf, sendcount, recvbuf, counts,
		       displs, dtype, 0),
		   timeout_ms);
}

FC__EXPORT int fc_iallgatherv(struct fc_group *g, const void *sendbuf,
			      size_t sendcount, void *recvbuf,
			      const size_t *counts, const size_t *displs,
			      enum fc_dtype dtype, struct fc_coll_req **reqp)
{
	return start(g,
		     vec(FC__ALLGATHER, sendbuf, sendcount, recvbuf, counts,
			 displs, dtype, 0),
		     reqp);
}

FC__EXPORT int fc_alltoall(struct fc_group *g, const void *sendbuf,
			   void *recvbuf, size_t count, enum fc_dtype dtype,
			   int timeout_ms)
{
	return run(g, red(FC__ALLTOALL, sendbuf, recvbuf, count, dtype, 0, 0),
		   timeout_ms);
}

FC__EXPORT int fc_ialltoall(struct fc_group *g, const void *sendbuf,
			    void *recvbuf, size_t count, enum fc_dtype dtype,
			    struct fc_coll_req **reqp)
{
	return start(g, red(FC__ALLTOALL, sendbuf, recvbuf, count, dtype, 0, 0),
		     reqp);
}

static struct fc__coll_args
alltoallv(const void *sendbuf, const size_t *sendcounts, const size_t *sdispls,
	  void *recvbuf, const size_t *recvcounts, const size_t *rdispls,
	  enum fc_dtype dtype)
{
	struct fc__coll_args a = vec(FC__ALLTOALL, sendbuf, 0, recvbuf,
				     recvcounts, rdispls, dtype, 0);

	a.scounts = sendcounts;
	a.sdispls = sdispls;
	return a;
}

FC__EXPORT int fc_alltoallv(struct fc_group *g, const void *sendbuf,
			    const size_t *sendcounts, const size_t *sdispls,
			    void *recvbuf, const size_t *recvcounts,
			    const size_t *rdispls, enum fc_dtype dtype,
			    int timeout_ms)
{
	return run(g,
		   alltoallv(sendbuf, sendcounts, sdispls, recvbuf, recvcounts,
			     rdispls, dtype),
		   timeout_ms);
}

FC__EXPORT int fc_ialltoallv(struct fc_group *g, const void *sendbuf,
			     const size_t *sendcounts, const size_t *sdispls,
			     void *recvbuf, const size_t *recvcounts,
			     const size_t *rdispls, enum fc_dtype dtype,
			     struct fc_coll_req **reqp)
{
	return start(g,
		     alltoallv(sendbuf, sendcounts, sdispls, recvbuf,
			       recvcounts, rdispls, dtype),
		     reqp);
}
