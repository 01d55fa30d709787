// SPDX-License-Identifier: MIT
/*
 * Automatic data progress (FI_PROGRESS_AUTO): a thread per domain that
 * moves the enabled endpoints' data and puts their completions into CQs
 * and counters while the program is elsewhere. It takes the domain's lock,
 * as every call does, and sleeps in the library (fc_tag_wait spins
 * briefly, then sleeps) when nothing moves. A domain with manual progress
 * has no thread and none of this runs.
 */
#include <errno.h>
#include <time.h>

#include "fcp.h"

/* The thread waits on one endpoint at a time for this long; with several,
 * shorter, so that each one's completions are taken soon. */
#define WAIT_ONE_MS  10
#define WAIT_MANY_MS 1

/* The next endpoint to wait on, round robin (domain locked). */
static struct fcp_ep *next_ep(struct fcp_domain *d)
{
	struct fcp_ep *ep = d->rr ? d->rr->dnext : NULL;

	if (!ep)
		ep = d->eps;
	d->rr = ep;
	return ep;
}

static void *progress_main(void *arg)
{
	struct fcp_domain *d = arg;
	struct fcp_ep *ep;
	int n, ms;

	pthread_mutex_lock(&d->lock);
	while (!d->stop) {
		n = 0;
		for (ep = d->eps; ep; ep = ep->dnext)
			n += fcp_ep_progress(ep);
		if (n) {
			pthread_cond_broadcast(&d->progressed);
			continue;
		}
		ep = next_ep(d);
		if (!ep) {
			pthread_cond_wait(&d->wake, &d->lock);
			continue;
		}
		/* a write's end is no tag completion: look again soon */
		ms = d->eps->dnext || ep->rma ? WAIT_MANY_MS : WAIT_ONE_MS;
		d->waiting = ep; /* ep_close waits until we are back */
		pthread_mutex_unlock(&d->lock);
		fc_tag_wait(ep->tep, ms);
		pthread_mutex_lock(&d->lock);
		d->waiting = NULL;
		pthread_cond_broadcast(&d->progressed);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

int fcp_progress_start(struct fcp_domain *d)
{
	int ret;

	pthread_cond_init(&d->wake, NULL);
	pthread_cond_init(&d->progressed, NULL);
	ret = pthread_create(&d->thread, NULL, progress_main, d);
	if (ret) {
		pthread_cond_destroy(&d->wake);
		pthread_cond_destroy(&d->progressed);
		return -ret;
	}
	d->auto_progress = true;
	return 0;
}

void fcp_progress_stop(struct fcp_domain *d)
{
	if (!d->auto_progress)
		return;
	pthread_mutex_lock(&d->lock);
	d->stop = true;
	pthread_cond_signal(&d->wake);
	pthread_mutex_unlock(&d->lock);
	pthread_join(d->thread, NULL);
	pthread_cond_destroy(&d->wake);
	pthread_cond_destroy(&d->progressed);
	d->auto_progress = false;
}

void fcp_progress_add(struct fcp_domain *d, struct fcp_ep *ep)
{
	if (!d->auto_progress || ep->listed)
		return;
	ep->dnext = d->eps;
	d->eps = ep;
	ep->listed = true;
	pthread_cond_signal(&d->wake);
}

void fcp_progress_remove(struct fcp_domain *d, struct fcp_ep *ep)
{
	struct fcp_ep **pp;

	if (!ep->listed)
		return;
	for (pp = &d->eps; *pp; pp = &(*pp)->dnext) {
		if (*pp == ep) {
			*pp = ep->dnext;
			break;
		}
	}
	if (d->rr == ep)
		d->rr = NULL;
	ep->listed = false;
	/* the thread may be in the library on it: not closed under it */
	while (d->waiting == ep)
		pthread_cond_wait(&d->progressed, &d->lock);
}

int fcp_progress_sleep(struct fcp_domain *d, int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (long)ms * 1000000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	return pthread_cond_timedwait(&d->progressed, &d->lock, &ts) ?
		       -ETIMEDOUT :
		       0;
}
