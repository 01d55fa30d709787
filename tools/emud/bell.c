// SPDX-License-Identifier: MIT
/*
 * The board's bell in the cluster (emu/cluster.c), turned into an eventfd
 * the daemon's epoll loop can wait on: packets for this board then wake
 * the daemon at once, as a doorbell from the guest does, instead of at its
 * next look at the cluster. A thread of its own waits on the futex; it is
 * counted as a sleeper for as long as it runs, so no arrival goes unrung.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "bell.h"

#define BELL_LOOK_NS (20ull * 1000000) /* and look at the stop flag */

static void *bell_thread(void *arg)
{
	struct bell *b = arg;
	uint32_t seen = fcemu_cluster_bell_wait(b->cluster, b->node, 0, 0);
	uint32_t now;

	while (!__atomic_load_n(&b->stop, __ATOMIC_ACQUIRE)) {
		now = fcemu_cluster_bell_wait(b->cluster, b->node, seen,
					      BELL_LOOK_NS);
		if (now != seen && eventfd_write(b->fd, 1) && errno != EAGAIN)
			break;
		seen = now;
	}
	return NULL;
}

int bell_start(struct bell *b, struct fcemu_cluster *c, unsigned int node)
{
	int ret;

	b->cluster = c;
	b->node = node;
	b->stop = false;
	b->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (b->fd < 0)
		return -errno;
	fcemu_cluster_watch(c, node, true);
	ret = pthread_create(&b->thread, NULL, bell_thread, b);
	if (ret) {
		fcemu_cluster_watch(c, node, false);
		close(b->fd);
		return -ret;
	}
	return 0;
}

void bell_drain(struct bell *b)
{
	eventfd_t v;

	eventfd_read(b->fd, &v);
}

void bell_stop(struct bell *b)
{
	__atomic_store_n(&b->stop, true, __ATOMIC_RELEASE);
	pthread_join(b->thread, NULL);
	fcemu_cluster_watch(b->cluster, b->node, false);
	close(b->fd);
}
