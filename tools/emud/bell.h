/* SPDX-License-Identifier: MIT */
/* The board's cluster bell as an eventfd (bell.c). */
#ifndef EMUD_BELL_H
#define EMUD_BELL_H

#include <pthread.h>
#include <stdbool.h>

#include "fabric.h"

struct bell {
	struct fcemu_cluster *cluster;
	unsigned int node;
	int fd; /* readable when the bell rang */
	bool stop;
	pthread_t thread;
};

/* RETURN VALUE: 0, or -errno. */
int bell_start(struct bell *b, struct fcemu_cluster *c, unsigned int node);
void bell_drain(struct bell *b);
/* Before the cluster is detached: the thread looks at it until then. */
void bell_stop(struct bell *b);

#endif /* EMUD_BELL_H */
