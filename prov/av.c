// SPDX-License-Identifier: MIT
/*
 * Address vectors. An address is (rank, port), 8 bytes. FI_AV_MAP packs
 * it into the fi_addr itself (rank above, port below); FI_AV_TABLE keeps
 * a table and hands out indices.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fcp.h"

#define MAP_ADDR(node, port) ((fi_addr_t)(node) << 32 | (port))

static bool addr_ok(const struct fcp_av *av, const struct fcp_addr *a)
{
	return a->node < av->dom->world.size && a->port < FC_CHAN_PORTS;
}

int fcp_av_lookup_addr(struct fcp_av *av, fi_addr_t fi_addr,
		       struct fcp_addr *out)
{
	if (!av || fi_addr == FI_ADDR_NOTAVAIL)
		return -FI_EINVAL;
	if (av->type == FI_AV_TABLE) {
		if (fi_addr >= av->n || !addr_ok(av, &av->tab[fi_addr]))
			return -FI_EINVAL;
		*out = av->tab[fi_addr];
		return 0;
	}
	out->node = (uint32_t)(fi_addr >> 32);
	out->port = (uint32_t)fi_addr;
	return addr_ok(av, out) ? 0 : -FI_EINVAL;
}

fi_addr_t fcp_av_reverse(struct fcp_av *av, uint32_t node, uint32_t port)
{
	size_t i;

	if (!av)
		return FI_ADDR_NOTAVAIL;
	if (av->type != FI_AV_TABLE)
		return MAP_ADDR(node, port);
	for (i = 0; i < av->n; i++)
		if (av->tab[i].node == node && av->tab[i].port == port)
			return i;
	return FI_ADDR_NOTAVAIL;
}

static int av_insert(struct fid_av *fav, const void *addr, size_t count,
		     fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct fcp_av *av = (struct fcp_av *)fav;
	const struct fcp_addr *a = addr;
	int done = 0;
	size_t i;

	if (!addr && count)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	pthread_mutex_lock(&av->dom->lock);
	for (i = 0; i < count; i++) {
		fi_addr_t fa = FI_ADDR_NOTAVAIL;

		if (!addr_ok(av, &a[i]))
			goto next;
		if (av->type != FI_AV_TABLE) {
			fa = MAP_ADDR(a[i].node, a[i].port);
		} else {
			if (av->n == av->cap) {
				size_t cap = av->cap ? av->cap * 2 : 64;
				struct fcp_addr *t =
					realloc(av->tab, cap * sizeof(*t));

				if (!t)
					goto next;
				av->tab = t;
				av->cap = cap;
			}
			av->tab[av->n] = a[i];
			fa = av->n++;
		}
		done++;
next:
		if (fi_addr)
			fi_addr[i] = fa;
	}
	pthread_mutex_unlock(&av->dom->lock);
	return done;
}

static int av_insertsvc(struct fid_av *av, const char *node,
			const char *service, fi_addr_t *fi_addr, uint64_t flags,
			void *context)
{
	return -FI_ENOSYS;
}

static int av_insertsym(struct fid_av *av, const char *node, size_t nodecnt,
			const char *service, size_t svccnt, fi_addr_t *fi_addr,
			uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

static int av_remove(struct fid_av *fav, fi_addr_t *fi_addr, size_t count,
		     uint64_t flags)
{
	struct fcp_av *av = (struct fcp_av *)fav;
	size_t i;

	if (flags)
		return -FI_EBADFLAGS;
	if (av->type != FI_AV_TABLE)
		return 0;
	pthread_mutex_lock(&av->dom->lock);
	/* an index stays taken: the entry names nobody from now on */
	for (i = 0; i < count; i++)
		if (fi_addr[i] < av->n)
			av->tab[fi_addr[i]].node = UINT32_MAX;
	pthread_mutex_unlock(&av->dom->lock);
	return 0;
}

static int av_lookup(struct fid_av *fav, fi_addr_t fi_addr, void *addr,
		     size_t *addrlen)
{
	struct fcp_av *av = (struct fcp_av *)fav;
	struct fcp_addr a;
	int ret;

	pthread_mutex_lock(&av->dom->lock);
	ret = fcp_av_lookup_addr(av, fi_addr, &a);
	pthread_mutex_unlock(&av->dom->lock);
	if (ret)
		return ret;
	memcpy(addr, &a, *addrlen < sizeof(a) ? *addrlen : sizeof(a));
	*addrlen = sizeof(a);
	return 0;
}

static const char *av_straddr(struct fid_av *av, const void *addr, char *buf,
			      size_t *len)
{
	const struct fcp_addr *a = addr;
	char s[40];
	int n = snprintf(s, sizeof(s), "fpgacomm://%u:%u", a->node, a->port);

	if (*len)
		snprintf(buf, *len, "%s", s);
	*len = (size_t)n + 1;
	return buf;
}

static int no_av_set(struct fid_av *av, struct fi_av_set_attr *attr,
		     struct fid_av_set **av_set, void *context)
{
	return -FI_ENOSYS;
}

static struct fi_ops_av av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = av_insert,
	.insertsvc = av_insertsvc,
	.insertsym = av_insertsym,
	.remove = av_remove,
	.lookup = av_lookup,
	.straddr = av_straddr,
	.av_set = no_av_set,
};

static int av_close(struct fid *fid)
{
	struct fcp_av *av = (struct fcp_av *)fid;

	if (av->refs)
		return -FI_EBUSY;
	pthread_mutex_lock(&av->dom->lock);
	av->dom->refs--;
	pthread_mutex_unlock(&av->dom->lock);
	free(av->tab);
	free(av);
	return 0;
}

static struct fi_ops av_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = av_close,
	.bind = fcp_no_bind,
	.control = fcp_no_control,
	.ops_open = fcp_no_ops_open,
};

int fcp_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		struct fid_av **fav, void *context)
{
	struct fcp_domain *d = (struct fcp_domain *)domain;
	struct fcp_av *av;

	if (!attr || !fav)
		return -FI_EINVAL;
	if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_MAP &&
	    attr->type != FI_AV_TABLE)
		return -FI_EINVAL;
	if (attr->flags & ~FI_SYMMETRIC)
		return -FI_EBADFLAGS;
	av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	av->dom = d;
	av->type = attr->type == FI_AV_TABLE ? FI_AV_TABLE : FI_AV_MAP;
	av->av.fid.fclass = FI_CLASS_AV;
	av->av.fid.context = context;
	av->av.fid.ops = &av_fi_ops;
	av->av.ops = &av_ops;
	pthread_mutex_lock(&d->lock);
	d->refs++;
	pthread_mutex_unlock(&d->lock);
	*fav = &av->av;
	return 0;
}
