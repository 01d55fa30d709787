// SPDX-License-Identifier: MIT
/*
 * The world: which cluster a board belongs to and where it sits in it. For
 * ranks of a parallel job started without FPGACOMM_DEVICE (Open MPI's
 * mpirun, Slurm's srun), fc_open(NULL) names an emulated cluster after the
 * job: rank 0 creates it, the others wait for it, and the last to leave
 * removes it (backend_emu.c). FPGACOMM_FAULTS gives its links faults, as
 * fpgacomm-run --faults does.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport_internal.h"

#define JOB_NAME_MAX  32 /* as FCEMU_CLUSTER_NAME_MAX, NUL included */
#define FULL_MESH_MAX 9	 /* full:N up to here, then a torus */

static int env_u32(const char *name, uint32_t *out)
{
	const char *s = getenv(name);
	unsigned long v;
	char *end;

	if (!s || !*s)
		return -ENOENT;
	v = strtoul(s, &end, 10);
	if (*end || v > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

/*
 * PREFIX, the job's id and the user's uid, keeping only what a cluster
 * name may hold: [A-Za-z0-9_.-], at most @len - 1. The uid makes the name
 * each user's own, so that one user's job never meets another's object
 * (every rank of a job runs as the same user).
 */
static void clean_name(char *dst, size_t len, const char *prefix,
		       const char *id, unsigned int uid)
{
	size_t n = 0, i;
	uint64_t h = 0xcbf29ce484222325ull;
	char tail[16];

	snprintf(tail, sizeof(tail), "-%u", uid);
	n = (size_t)snprintf(dst, len, "%s", prefix);
	for (i = 0; id[i]; i++)
		h = (h ^ (uint8_t)id[i]) * 0x100000001b3ull;
	if (n + strlen(id) + strlen(tail) >= len) {
		/* Too long (PMIx namespaces are): a hash names it as well. */
		snprintf(dst + n, len - n, "%012llx%s",
			 (unsigned long long)(h >> 16), tail);
		return;
	}
	for (i = 0; id[i]; i++) {
		char c = id[i];

		if (!(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') &&
		    !(c >= '0' && c <= '9') && c != '_' && c != '.')
			c = '-';
		dst[n++] = c;
	}
	snprintf(dst + n, len - n, "%s", tail);
}

/* ---- FPGACOMM_FAULTS: link faults of a job's cluster ---- */

/* "0.01" or "1%", below 1, to parts per million; -1 if not that. */
static long fault_ppm(const char *s, const char *end)
{
	char buf[32], *e;
	double p;

	if (end - s <= 0 || end - s >= (long)sizeof(buf) ||
	    ((*s < '0' || *s > '9') && *s != '.'))
		return -1;
	memcpy(buf, s, (size_t)(end - s));
	buf[end - s] = '\0';
	errno = 0;
	p = strtod(buf, &e);
	if (errno || e == buf || !isfinite(p))
		return -1;
	if (*e == '%') {
		p /= 100;
		e++;
	}
	if (*e || p < 0 || p >= 1)
		return -1;
	/* a chance that rounds to none was still asked for */
	if (p > 0 && p * 1e6 < 0.5)
		return -1;
	return (long)(p * 1e6 + 0.5);
}

/*
 * "drop=P,corrupt=P" (each at most once, either may be left out) into
 * @join. RETURN VALUE: 0 (also when unset); -EINVAL, said on stderr.
 */
static int faults_from_env(struct fc__join *join)
{
	const char *s = getenv("FPGACOMM_FAULTS"), *p, *end, *eq;
	bool seen_drop = false, seen_corrupt = false;
	long ppm;

	if (!s || !*s)
		return 0;
	for (p = s; *p; p = *end ? end + 1 : end) {
		end = strchr(p, ',');
		if (!end)
			end = p + strlen(p);
		eq = memchr(p, '=', (size_t)(end - p));
		ppm = eq ? fault_ppm(eq + 1, end) : -1;
		if (ppm < 0)
			goto bad;
		if (eq - p == 4 && !strncmp(p, "drop", 4) && !seen_drop) {
			join->drop_ppm = (uint32_t)ppm;
			seen_drop = true;
		} else if (eq - p == 7 && !strncmp(p, "corrupt", 7) &&
			   !seen_corrupt) {
			join->corrupt_ppm = (uint32_t)ppm;
			seen_corrupt = true;
		} else {
			goto bad;
		}
		if (*end && !end[1])
			goto bad; /* a trailing comma */
	}
	/* each packet is lost, corrupted or delivered: some must arrive */
	if (join->drop_ppm + join->corrupt_ppm < 1000000)
		return 0;
bad:
	fprintf(stderr,
		"fpgacomm: FPGACOMM_FAULTS='%s': expected drop=P,corrupt=P "
		"(each at most once, P like 0.01 or 1%%, together below 1)\n",
		s);
	join->drop_ppm = join->corrupt_ppm = 0;
	return -EINVAL;
}

/* full:N up to 9 ranks; else the squarest torus, or a ring for a prime. */
static void default_topology(uint32_t size, char *buf, size_t len)
{
	uint32_t x, y = 1, d;

	if (size <= FULL_MESH_MAX) {
		snprintf(buf, len, "full:%u", size);
		return;
	}
	for (d = 2; d * d <= size; d++)
		if (size % d == 0)
			y = d;
	x = size / y;
	if (y == 1)
		snprintf(buf, len, "ring:%u", size);
	else
		snprintf(buf, len, "torus:%ux%u", x, y);
}

/*
 * A job over several hosts (FPGACOMM_HOSTS=H, ranks in blocks of
 * consecutive ranks, as fpgacomm-run --hosts places them): the first rank
 * of each host creates that host's part of the cluster, and the other
 * hosts' boards are remote to it. RETURN VALUE: 0; -EINVAL bad H.
 */
static int split_hosts(struct fc__join *join, uint32_t rank, uint32_t size)
{
	uint32_t hosts, h, first = 0, next = size, n;

	if (env_u32("FPGACOMM_HOSTS", &hosts))
		return 0;
	if (!hosts || hosts > size)
		return -EINVAL;
	for (h = 0; h < hosts; h++) {
		first = (uint32_t)((uint64_t)h * size / hosts);
		next = (uint32_t)((uint64_t)(h + 1) * size / hosts);
		if (rank >= first && rank < next)
			break;
	}
	join->create = rank == first;
	for (n = 0; n < size; n++)
		if (n < first || n >= next)
			join->remote |= 1ull << n;
	return 0;
}

/*
 * Ranks of a job: fill @join and put "emu:CLUSTER/RANK" into @name.
 * RETURN VALUE: 0; -ENOENT not a rank of a job we know; -EINVAL bad
 * environment (a rank or size out of range); -EBADMSG a bad
 * FPGACOMM_FAULTS (said on stderr).
 */
int fc__join_from_env(struct fc__join *join, char *name, size_t len)
{
	char cluster[JOB_NAME_MAX + 1], id[64];
	unsigned int uid = (unsigned int)geteuid();
	uint32_t rank, size;
	const char *s, *topo;
	int ret;

	memset(join, 0, sizeof(*join));
	if (!env_u32("OMPI_COMM_WORLD_RANK", &rank) &&
	    !env_u32("OMPI_COMM_WORLD_SIZE", &size)) {
		s = getenv("OMPI_MCA_ess_base_jobid");
		if (!s || !*s)
			s = getenv("PMIX_NAMESPACE");
		if (s && *s)
			snprintf(id, sizeof(id), "%s", s);
		else /* ranks of one node share their mpirun */
			snprintf(id, sizeof(id), "p%ld", (long)getppid());
		clean_name(cluster, JOB_NAME_MAX, "ompi-", id, uid);
	} else if (!env_u32("SLURM_PROCID", &rank) &&
		   !env_u32("SLURM_NTASKS", &size)) {
		s = getenv("SLURM_JOB_ID");
		snprintf(id, sizeof(id), "%s.%s", s ? s : "0",
			 getenv("SLURM_STEP_ID") ? getenv("SLURM_STEP_ID") :
						   "0");
		clean_name(cluster, JOB_NAME_MAX, "slurm-", id, uid);
	} else {
		return -ENOENT;
	}
	if (!size || size > FC_MAX_NODES || rank >= size)
		return -EINVAL;

	topo = getenv("FPGACOMM_TOPOLOGY");
	if (topo && *topo)
		snprintf(join->topology, sizeof(join->topology), "%s", topo);
	else
		default_topology(size, join->topology, sizeof(join->topology));
	if (faults_from_env(join))
		return -EBADMSG;
	join->job = true;
	join->create = rank == 0;
	join->size = size;
	ret = split_hosts(join, rank, size);
	if (ret)
		return ret;
	snprintf(name, len, "emu:%s/%u", cluster, rank);
	return 0;
}

FC__EXPORT int fc_world_query(struct fc_dev *dev, struct fc_world *world)
{
	if (!dev || !world)
		return -EINVAL;
	if (!dev->fab)
		return -ENOTCONN;
	*world = dev->fab->world;
	return 0;
}

FC__EXPORT int fc_world_hops(struct fc_dev *dev, uint32_t peer, uint32_t *hops)
{
	int ret;

	if (!dev || !hops)
		return -EINVAL;
	if (!dev->fab)
		return -ENOTCONN;
	if (peer >= dev->fab->world.size)
		return -EINVAL;
	if (!dev->be->hops)
		return -EOPNOTSUPP;
	fc__lock(&dev->lock);
	ret = dev->be->hops(dev, peer, hops);
	fc__unlock(&dev->lock);
	return ret;
}
