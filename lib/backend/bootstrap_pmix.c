// SPDX-License-Identifier: MIT
/*
 * Endpoint names of the bridges through PMIx, for ranks started by mpirun
 * or srun across hosts (bootstrap.h): each rank puts its name under
 * its own key, commits, and the first get fences with every rank of the
 * job (so that all names are there), then reads the peer's. libpmix is
 * loaded with dlopen: only jobs spread over hosts need it. A board that
 * opens again in the same process is not met again (no second fence).
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "bootstrap.h"

#ifndef FC_HAVE_PMIX

int fc__boot_pmix_put(unsigned int node, const void *name, size_t len)
{
	(void)node;
	(void)name;
	(void)len;
	return -ENOENT;
}

int fc__boot_pmix_get(unsigned int node, void *name, size_t *len)
{
	(void)node;
	(void)name;
	(void)len;
	return -ENOENT;
}

#else

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include <pmix.h>

#define KEY "fpgacomm.bridge"

static struct {
	pthread_mutex_t lock;
	void *dl;
	bool up, fenced;
	pmix_proc_t self;
	pmix_status_t (*init)(pmix_proc_t *, pmix_info_t[], size_t);
	pmix_status_t (*put)(pmix_scope_t, const char[], pmix_value_t *);
	pmix_status_t (*commit)(void);
	pmix_status_t (*fence)(const pmix_proc_t[], size_t, const pmix_info_t[],
			       size_t);
	pmix_status_t (*get)(const pmix_proc_t *, const char[],
			     const pmix_info_t[], size_t, pmix_value_t **);
	pmix_status_t (*finalize)(const pmix_info_t[], size_t);
} px = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* A client that joined must say goodbye, or its launcher fails the job. */
static void pmix_down(void)
{
	if (px.up)
		px.finalize(NULL, 0);
	px.up = false;
}

/* Load libpmix and join the job's PMIx server. Lock held. */
static int pmix_up(void)
{
	if (px.up)
		return 0;
	if (!getenv("PMIX_NAMESPACE"))
		return -ENOENT; /* not started by a PMIx launcher */
	if (!px.dl)
		px.dl = dlopen("libpmix.so.2", RTLD_NOW | RTLD_GLOBAL);
	if (!px.dl)
		return -ENOENT;
	px.init = (__typeof__(px.init))dlsym(px.dl, "PMIx_Init");
	px.put = (__typeof__(px.put))dlsym(px.dl, "PMIx_Put");
	px.commit = (__typeof__(px.commit))dlsym(px.dl, "PMIx_Commit");
	px.fence = (__typeof__(px.fence))dlsym(px.dl, "PMIx_Fence");
	px.get = (__typeof__(px.get))dlsym(px.dl, "PMIx_Get");
	px.finalize = (__typeof__(px.finalize))dlsym(px.dl, "PMIx_Finalize");
	if (!px.init || !px.put || !px.commit || !px.fence || !px.get ||
	    !px.finalize)
		return -ENOENT;
	if (px.init(&px.self, NULL, 0) != PMIX_SUCCESS)
		return -ECONNREFUSED;
	px.up = true;
	atexit(pmix_down);
	return 0;
}

int fc__boot_pmix_put(unsigned int node, const void *name, size_t len)
{
	pmix_value_t v;
	int ret;

	(void)node; /* a rank's board is its rank: the key is per rank */
	pthread_mutex_lock(&px.lock);
	ret = pmix_up();
	if (!ret) {
		memset(&v, 0, sizeof(v));
		v.type = PMIX_BYTE_OBJECT;
		v.data.bo.bytes = (char *)name;
		v.data.bo.size = len;
		if (px.put(PMIX_GLOBAL, KEY, &v) != PMIX_SUCCESS ||
		    px.commit() != PMIX_SUCCESS)
			ret = -EIO;
	}
	pthread_mutex_unlock(&px.lock);
	return ret;
}

int fc__boot_pmix_get(unsigned int node, void *name, size_t *len)
{
	pmix_value_t *v = NULL;
	pmix_proc_t peer;
	int ret;

	pthread_mutex_lock(&px.lock);
	ret = pmix_up();
	if (!ret && !px.fenced) {
		/* every rank of the job has put its name past this */
		if (px.fence(NULL, 0, NULL, 0) != PMIX_SUCCESS)
			ret = -EIO;
		else
			px.fenced = true;
	}
	if (!ret) {
		memset(&peer, 0, sizeof(peer));
		memcpy(peer.nspace, px.self.nspace, sizeof(peer.nspace));
		peer.rank = node;
		if (px.get(&peer, KEY, NULL, 0, &v) != PMIX_SUCCESS || !v ||
		    v->type != PMIX_BYTE_OBJECT)
			ret = -ETIMEDOUT;
		else if (v->data.bo.size > *len)
			ret = -ENOSPC;
		else {
			memcpy(name, v->data.bo.bytes, v->data.bo.size);
			*len = v->data.bo.size;
		}
		/* the value is libpmix's: freed by its own allocator */
		if (v) {
			free(v->data.bo.bytes);
			free(v);
		}
	}
	pthread_mutex_unlock(&px.lock);
	return ret;
}

#endif /* FC_HAVE_PMIX */
