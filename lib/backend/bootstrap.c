// SPDX-License-Identifier: MIT
/*
 * Endpoint names of the bridges (bootstrap.h) through files: one per
 * board, DIR/ep.N, written whole under another name and renamed, so that
 * a reader sees all of it or nothing. The launcher (fpgacomm-run --hosts)
 * makes the directory and shows it to every simulated host.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap.h"
#include "internal.h"

static const char *boot_dir(void)
{
	const char *d = getenv("FPGACOMM_BRIDGE_DIR");

	return d && *d ? d : NULL;
}

const char *fc__boot_addr(void)
{
	const char *a = getenv("FPGACOMM_BRIDGE_ADDR");

	return a && *a ? a : NULL;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int fc__boot_put(unsigned int node, const void *name, size_t len)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	const char *dir = boot_dir();
	int fd, ret;

	if (!dir)
		return fc__boot_pmix_put(node, name, len);
	snprintf(path, sizeof(path), "%s/ep.%u", dir, node);
	snprintf(tmp, sizeof(tmp), "%s/.ep.%u.%d", dir, node, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	ret = write_all(fd, name, len);
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
	return ret;
}

void fc__boot_drop(unsigned int node)
{
	const char *dir = boot_dir();
	char path[PATH_MAX];

	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s/ep.%u", dir, node);
	unlink(path);
}

int fc__boot_get(unsigned int node, void *name, size_t *len)
{
	uint64_t end = fc__now_ns() + FC_BOOT_WAIT_MS * 1000000ull;
	const char *dir = boot_dir();
	unsigned int round = 0;
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	if (!dir)
		return fc__boot_pmix_get(node, name, len);
	snprintf(path, sizeof(path), "%s/ep.%u", dir, node);
	while ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		if (errno != ENOENT)
			return -errno;
		if (fc__now_ns() >= end)
			return -ETIMEDOUT;
		fc__backoff(&round);
	}
	n = read(fd, name, *len);
	if (n >= 0 && (size_t)n == *len) {
		char extra;

		if (read(fd, &extra, 1) > 0)
			n = -2;
	}
	close(fd);
	if (n == -2)
		return -ENOSPC;
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	*len = (size_t)n;
	return 0;
}
