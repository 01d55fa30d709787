// SPDX-License-Identifier: MIT
/* Opening boards by name, identity checks, queries and register access. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "hbm.h"

#define DEFAULT_KERNEL_DEV "/dev/fpgacomm0"
#define DEFAULT_EMU_DEV	   "emu:"

/*
 * $FPGACOMM_DEVICE, else the first kernel board, else for a rank of an
 * mpirun or srun job the job's emulated cluster (@join), else "emu:".
 */
static const char *default_name(struct fc__join *join, char *buf, size_t len)
{
	const char *env = getenv("FPGACOMM_DEVICE");

	if (env && *env)
		return env;
	if (access(DEFAULT_KERNEL_DEV, R_OK | W_OK) == 0)
		return DEFAULT_KERNEL_DEV;
	switch (fc__join_from_env(join, buf, len)) {
	case 0:
		return buf;
	case -EBADMSG:
		return NULL; /* a job's, but its FPGACOMM_FAULTS is bad */
	default:
		return DEFAULT_EMU_DEV;
	}
}

/*
 * The boards open in this process, so that closing one twice (or a
 * pointer that was never a board) is an error instead of a double free.
 */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fc_dev **open_devs;
static size_t n_open, open_cap;

static int note_open(struct fc_dev *dev)
{
	struct fc_dev **grown;
	size_t cap;

	pthread_mutex_lock(&open_lock);
	if (n_open == open_cap) {
		cap = open_cap ? 2 * open_cap : 8;
		grown = realloc(open_devs, cap * sizeof(*grown));
		if (!grown) {
			pthread_mutex_unlock(&open_lock);
			return -ENOMEM;
		}
		open_devs = grown;
		open_cap = cap;
	}
	open_devs[n_open++] = dev;
	pthread_mutex_unlock(&open_lock);
	return 0;
}

/* RETURN VALUE: true if @dev was open (and is no longer noted so). */
static bool note_closed(struct fc_dev *dev)
{
	bool found = false;
	size_t i;

	pthread_mutex_lock(&open_lock);
	for (i = 0; i < n_open; i++) {
		if (open_devs[i] == dev) {
			open_devs[i] = open_devs[--n_open];
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&open_lock);
	return found;
}

/* Pick the backend for @name; *spec is what the backend parses. */
static int pick_backend(const char *name, const struct fc__backend **be,
			const char **spec)
{
	if (strncmp(name, "emu:", 4) == 0) {
		*be = &fc__emu_backend;
		*spec = name + 4;
		return 0;
	}
	if (strncmp(name, "/dev/", 5) == 0) {
		*be = &fc__kernel_backend;
		*spec = name;
		return 0;
	}
	return -EINVAL;
}

static uint32_t reg(struct fc_dev *dev, uint32_t off)
{
	uint32_t val = 0;

	dev->be->reg_read(dev, off, &val);
	return val;
}

/* Read identity and sizes from the board; refuse what we do not speak. */
static int identify(struct fc_dev *dev)
{
	struct fc_info *info = &dev->info;

	info->hw_id = reg(dev, FC_REG_ID);
	info->hw_version = reg(dev, FC_REG_VERSION);
	if (info->hw_id != FC_HW_ID_MAGIC ||
	    FC_HW_VERSION_GET_MAJOR(info->hw_version) != FC_HW_VERSION_MAJOR)
		return -EPROTO;
	info->caps = reg(dev, FC_REG_CAPS);
	info->node_id = reg(dev, FC_REG_NODE_ID);
	info->dma_engines = reg(dev, FC_REG_NUM_DMA);
	info->num_ports = reg(dev, FC_REG_NUM_PORTS);
	info->board_mem_size = reg(dev, FC_REG_MEM_SIZE_LO) |
			       (uint64_t)reg(dev, FC_REG_MEM_SIZE_HI) << 32;
	info->max_chain = FC_MAX_CHAIN;
	if (!(info->caps & FC_CAP_DMA) || !info->dma_engines)
		return -EPROTO;
	return 0;
}

#define THREAD_ENV "FPGACOMM_THREAD" /* "single": as FC_OPEN_THREAD_SINGLE */

/* Has the environment declared one thread (FPGACOMM_THREAD=single)? */
static bool env_single(void)
{
	const char *v = getenv(THREAD_ENV);

	return v && (!strcmp(v, "single") || !strcmp(v, "funneled") ||
		     !strcmp(v, "serialized"));
}

FC__EXPORT int fc_open(struct fc_dev **devp, const char *name)
{
	return fc_open_flags(devp, name, 0);
}

FC__EXPORT int fc_open_flags(struct fc_dev **devp, const char *name,
			     unsigned int flags)
{
	const struct fc__backend *be;
	char job_name[FC_NAME_MAX];
	struct fc__join join;
	const char *spec;
	struct fc_dev *dev;
	int ret;

	if (!devp || (flags & ~FC_OPEN_THREAD_SINGLE))
		return -EINVAL;
	memset(&join, 0, sizeof(join));
	if (!name)
		name = default_name(&join, job_name, sizeof(job_name));
	if (!name)
		return -EINVAL;
	if (strlen(name) >= FC_NAME_MAX)
		return -EINVAL;
	ret = pick_backend(name, &be, &spec);
	if (ret)
		return ret;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	fc__lock_init(&dev->lock);
	dev->single = (flags & FC_OPEN_THREAD_SINGLE) || env_single();
	dev->be = be;
	dev->join = join;
	dev->info.numa_node = -1;
	strcpy(dev->info.name, name);
	strncpy(dev->info.backend, be->name, sizeof(dev->info.backend) - 1);

	ret = be->open(dev, spec);
	if (ret)
		goto err_free_dev;
	ret = identify(dev);
	if (ret)
		goto err_close_backend;
	ret = fc__fabric_init(dev);
	if (ret)
		goto err_release_mem;
	ret = fc__chan_protocols(dev);
	if (ret)
		goto err_fabric_fini;
	ret = note_open(dev);
	if (ret)
		goto err_fabric_fini;
	*devp = dev;
	return 0;

err_fabric_fini:
	fc__chan_forget_dev(dev);
	fc__fabric_fini(dev);
err_release_mem:
	fc__mem_release_all(dev);
err_close_backend:
	be->close(dev);
err_free_dev:
	free(dev);
	return ret;
}

FC__EXPORT int fc_close(struct fc_dev *dev)
{
	if (!dev || !note_closed(dev))
		return -EINVAL;
	if (dev->on_close)
		dev->on_close(dev);
	fc__fabric_linger(dev);
	fc__chan_forget_dev(dev);
	fc__fabric_fini(dev);
	fc__hbm_fini(dev);
	fc__lock(&dev->lock);
	dev->be->reset(dev);
	fc__mem_release_all(dev);
	fc__unlock(&dev->lock);
	dev->be->close(dev);
	free(dev);
	return 0;
}

FC__EXPORT int fc_query(struct fc_dev *dev, struct fc_info *info)
{
	if (!dev || !info)
		return -EINVAL;
	fc__lock(&dev->lock);
	dev->info.link_state = reg(dev, FC_REG_LINK_STATE);
	*info = dev->info;
	fc__unlock(&dev->lock);
	return 0;
}

static int check_reg(const struct fc_dev *dev, uint32_t off)
{
	if (!dev || off % 4 || off >= FC_BAR0_SIZE)
		return -EINVAL;
	return 0;
}

FC__EXPORT int fc_reg_read(struct fc_dev *dev, uint32_t off, uint32_t *val)
{
	int ret = check_reg(dev, off);

	if (ret || !val)
		return ret ? ret : -EINVAL;
	fc__lock(&dev->lock);
	ret = dev->be->reg_read(dev, off, val);
	fc__unlock(&dev->lock);
	return ret;
}

FC__EXPORT int fc_reg_write(struct fc_dev *dev, uint32_t off, uint32_t val)
{
	int ret = check_reg(dev, off);

	if (ret)
		return ret;
	fc__lock(&dev->lock);
	ret = dev->be->reg_write(dev, off, val);
	fc__unlock(&dev->lock);
	return ret;
}

FC__EXPORT int fc_sim_time_ps(struct fc_dev *dev, uint64_t *ps)
{
	int ret;

	if (!dev || !ps)
		return -EINVAL;
	if (!dev->be->sim_time)
		return -EOPNOTSUPP;
	fc__lock(&dev->lock);
	ret = dev->be->sim_time(dev, ps);
	fc__unlock(&dev->lock);
	return ret;
}

FC__EXPORT int fc_sim_time_ns(struct fc_dev *dev, uint64_t *ns)
{
	uint64_t ps;
	int ret;

	if (!ns)
		return -EINVAL;
	ret = fc_sim_time_ps(dev, &ps);
	if (!ret)
		*ns = ps / 1000;
	return ret;
}
