// SPDX-License-Identifier: MIT
/*
 * The bridge's setup (emu/bridge_internal.h): the libfabric endpoint, its
 * buffers, the exchange of endpoint names, and a bridge's start and stop,
 * which carries what is still going out before it lets go of its links.
 * Without libfabric's headers there is no bridge: starting one says so.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef FCEMU_HAVE_OFI

#include "bridge.h"

int fcemu_bridge_start(struct fcemu_bridge **bp, struct fcemu_cluster *c,
		       unsigned int node, const struct fcemu_bridge_boot *boot)
{
	(void)bp;
	(void)c;
	(void)node;
	(void)boot;
	return -EOPNOTSUPP;
}

void fcemu_bridge_stop(struct fcemu_bridge *b)
{
	(void)b;
}

bool fcemu_bridge_wait_reply(struct fcemu_bridge *b, uint64_t max_ns)
{
	(void)b;
	(void)max_ns;
	return false;
}

#else

#include "bridge_internal.h"

/* ---- setup ---- */

static int open_endpoint(struct fcemu_bridge *b, const char *addr)
{
	const char *prov = getenv("FI_PROVIDER");
	struct fi_info *hints, *fi;
	struct fi_cq_attr cq_attr = {
		.format = FI_CQ_FORMAT_MSG,
		.wait_obj = FI_WAIT_UNSPEC,
		.size = 4 * (BR_RX + BR_TX),
	};
	struct fi_av_attr av_attr = { .type = FI_AV_MAP };
	int ret;

	/* The fpgacomm provider runs over these very boards. */
	if (prov && strstr(prov, "fpgacomm"))
		return -EPROTONOSUPPORT;
	hints = b->api.dupinfo(NULL);
	if (!hints)
		return -ENOMEM;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_RMA; /* bursts by RMA, where there is */
	hints->mode = FI_CONTEXT;
	hints->domain_attr->threading = FI_THREAD_SAFE;
	if (!prov || !*prov)
		hints->fabric_attr->prov_name = strdup("tcp");
	ret = b->api.getinfo(FI_VERSION(1, 9), addr, NULL, addr ? FI_SOURCE : 0,
			     hints, &b->info);
	if (ret == -FI_ENODATA) {
		hints->caps = FI_MSG;
		ret = b->api.getinfo(FI_VERSION(1, 9), addr, NULL,
				     addr ? FI_SOURCE : 0, hints, &b->info);
	}
	b->api.freeinfo(hints);
	if (ret)
		return ret == -FI_ENODATA ? -EPROTONOSUPPORT :
					    fcemu__br_ofi_err(ret);
	for (fi = b->info; fi; fi = fi->next)
		if (!strstr(fi->fabric_attr->prov_name, "fpgacomm"))
			break;
	if (!fi)
		return -EPROTONOSUPPORT;
	b->inject_size = fi->tx_attr->inject_size;
	if (b->inject_size < sizeof(struct br_hdr))
		return -EPROTONOSUPPORT;
	ret = fcemu__br_ofi_err(
		b->api.fabric(fi->fabric_attr, &b->fabric, NULL));
	if (!ret)
		ret = fcemu__br_ofi_err(
			fi_domain(b->fabric, fi, &b->domain, NULL));
	/* a wait fd lets progress read the CQ too (fcemu__br_reap()) */
	b->wait_fd = -1;
	cq_attr.wait_obj = FI_WAIT_FD;
	if (!ret && fi_cq_open(b->domain, &cq_attr, &b->cq, NULL)) {
		cq_attr.wait_obj = FI_WAIT_UNSPEC;
		ret = fcemu__br_ofi_err(
			fi_cq_open(b->domain, &cq_attr, &b->cq, NULL));
	} else if (!ret && fi_control(&b->cq->fid, FI_GETWAIT, &b->wait_fd)) {
		b->wait_fd = -1;
	}
	if (!ret)
		ret = fcemu__br_ofi_err(
			fi_av_open(b->domain, &av_attr, &b->av, NULL));
	if (!ret)
		ret = fcemu__br_ofi_err(
			fi_endpoint(b->domain, fi, &b->ep, NULL));
	if (!ret)
		ret = fcemu__br_ofi_err(
			fi_ep_bind(b->ep, &b->cq->fid, FI_TRANSMIT | FI_RECV));
	if (!ret)
		ret = fcemu__br_ofi_err(fi_ep_bind(b->ep, &b->av->fid, 0));
	if (!ret)
		ret = fcemu__br_ofi_err(fi_enable(b->ep));
	/* without RMA, bursts to other hosts go as packets */
	if (!ret && (!getenv("FPGACOMM_BRIDGE_RMA") ||
		     strcmp(getenv("FPGACOMM_BRIDGE_RMA"), "0")))
		fcemu__rma_open(&b->rma, fi, b->domain, b->ep,
				&(struct fcemu_rma_ops){ b,
							 fcemu__br_send_msg });
	return ret;
}

static int alloc_bufs(struct fcemu_bridge *b)
{
	unsigned int i;

	b->rx = aligned_alloc(64, BR_RX * sizeof(*b->rx));
	b->tx = aligned_alloc(64, BR_TX * sizeof(*b->tx));
	if (!b->rx || !b->tx)
		return -ENOMEM;
	memset(b->rx, 0, BR_RX * sizeof(*b->rx));
	memset(b->tx, 0, BR_TX * sizeof(*b->tx));
	for (i = 0; i < BR_TX; i++) {
		b->tx[i].next = b->tx_free;
		b->tx_free = &b->tx[i];
	}
	for (i = 0; i < BR_RX; i++) {
		b->rx[i].rx = true;
		if (fi_recv(b->ep, b->rx[i].data, BR_MSG_MAX, NULL,
			    FI_ADDR_UNSPEC, &b->rx[i].ctx))
			return -EIO;
	}
	return 0;
}

/* Publish our name, learn every remote board's. */
static int exchange(struct fcemu_bridge *b,
		    const struct fcemu_bridge_boot *boot)
{
	uint8_t name[BR_NAME_MAX];
	size_t len = sizeof(name);
	uint64_t left;
	unsigned int n;
	int ret;

	/* published: our epoch, landing area, then the endpoint's name */
	len -= sizeof(b->epoch) + FCEMU_RMA_INFO_LEN;
	ret = fcemu__br_ofi_err(
		fi_getname(&b->ep->fid,
			   name + sizeof(b->epoch) + FCEMU_RMA_INFO_LEN, &len));
	if (ret)
		return ret;
	memcpy(name, &b->epoch, sizeof(b->epoch));
	fcemu__rma_info(b->rma, name + sizeof(b->epoch));
	ret = boot->put(boot->arg, b->node, name,
			len + sizeof(b->epoch) + FCEMU_RMA_INFO_LEN);
	if (ret)
		return ret;
	for (left = b->c->remote; left; left &= left - 1) {
		n = (unsigned int)__builtin_ctzll(left);
		len = sizeof(name);
		ret = boot->get(boot->arg, n, name, &len);
		if (ret)
			return ret;
		ret = fcemu__br_meet_peer(b, n, name, len);
		if (ret)
			return ret;
		/* it may have known us under an earlier name */
		fcemu__br_send_ctl(b, n, BR_HELLO, 0, 0, 0);
	}
	return 0;
}

static void close_all(struct fcemu_bridge *b)
{
	if (b->ep)
		fi_close(&b->ep->fid);
	fcemu__rma_close(b->rma);
	if (b->av)
		fi_close(&b->av->fid);
	if (b->cq)
		fi_close(&b->cq->fid);
	if (b->domain)
		fi_close(&b->domain->fid);
	if (b->fabric)
		fi_close(&b->fabric->fid);
	if (b->info)
		b->api.freeinfo(b->info);
	free(b->rx);
	free(b->tx);
	/* libfabric stays loaded: its providers may keep threads */
	pthread_mutex_destroy(&b->lock);
	free(b);
}

/*
 * The endpoint of a bridge that stopped, with its buffers, for the next
 * one of this process: libfabric's tcp provider does not take an endpoint
 * closed and another opened in the same process well (a crash in the
 * new one's fi_getname was seen), and the epochs keep the two apart.
 */
static struct fcemu_bridge *spare;
static pthread_mutex_t spare_lock = PTHREAD_MUTEX_INITIALIZER;

/* The spare's state of a bridge, as a new one starts it. */
static void reset_incarnation(struct fcemu_bridge *b)
{
	memset(b->addr, 0, sizeof(b->addr));
	memset(b->epoch_of, 0, sizeof(b->epoch_of));
	memset(b->heard, 0, sizeof(b->heard));
	memset(b->sent, 0, sizeof(b->sent));
	memset(b->acked, 0, sizeof(b->acked));
	memset(b->reported, 0, sizeof(b->reported));
	memset(b->left_at, 0, sizeof(b->left_at));
	/* down_epoch stays: a bridge declared down is not met again */
	b->peers = b->links = b->spoke = b->left = b->reborn = 0;
	b->moved_at = 0;
	b->next_hb = b->last_tick = 0;
	b->thread_on = false;
	b->stop = false;
}

int fcemu_bridge_start(struct fcemu_bridge **bp, struct fcemu_cluster *c,
		       unsigned int node, const struct fcemu_bridge_boot *boot)
{
	struct fcemu_bridge *b;
	unsigned int p, peer, vc;
	bool fresh = false;
	int ret;

	if (!bp || !c || !boot || !boot->put || !boot->get ||
	    node >= c->nodes || !(c->mine & (1ull << node)) ||
	    (c->remote & (1ull << node)) || c->pump)
		return -EINVAL;
	pthread_mutex_lock(&spare_lock);
	b = spare;
	spare = NULL;
	pthread_mutex_unlock(&spare_lock);
	if (b) {
		reset_incarnation(b);
	} else {
		b = calloc(1, sizeof(*b));
		if (!b)
			return -ENOMEM;
		pthread_mutex_init(&b->lock, NULL);
		fresh = true;
	}
	b->c = c;
	b->node = node;
	b->boot = *boot;
	/* apart from the board's earlier bridges, and never 0 (unknown) */
	b->epoch = (uint32_t)(fcemu__br_now_ns() ^ ((uint64_t)getpid() << 16)) |
		   1;
	for (p = 1; p <= c->ports; p++) {
		peer = cl_peer(c, node, p);
		if (peer == CL_NO_PEER || !(c->remote & (1ull << peer)))
			continue;
		b->links |= 1ull << p;
		/* an earlier job's bridge may have left the rings moved */
		for (vc = 0; vc < FC_NUM_VCS; vc++)
			b->reported[p][vc] = cl_ld(
				&cl_ring(c, node, CL_RING_LINK(p, vc))->head);
	}
	ret = 0;
	if (fresh) {
		ret = fcemu__br_load_api(b);
		if (!ret)
			ret = open_endpoint(b, boot->addr);
		if (!ret)
			ret = alloc_bufs(b);
	}
	if (!ret && b->rma)
		fcemu__rma_start(b->rma, c, node);
	if (!ret)
		ret = exchange(b, boot);
	if (ret)
		goto err_close;
	b->next_hb = fcemu__br_now_ns();
	ret = -pthread_create(&b->thread, NULL, fcemu__br_bridge_thread, b);
	if (ret)
		goto err_close;
	b->thread_on = true;
	c->pump_arg = b;
	__atomic_store_n(&c->pump, fcemu__br_pump, __ATOMIC_RELEASE);
	*bp = b;
	return 0;

err_close:
	close_all(b);
	return ret;
}

/* Is anything of ours still on its way out? Lock held. */
static bool links_busy(struct fcemu_bridge *b)
{
	struct fcemu_cluster *c = b->c;
	unsigned int p, vc, r;
	uint64_t links;

	if (b->tx_busy || (b->rma && fcemu__rma_busy(b->rma)))
		return true;
	for (links = b->links; links; links &= links - 1) {
		p = (unsigned int)__builtin_ctzll(links);
		r = cl_peer(c, b->node, p);
		/* one that left takes what it can while it stays (moved_at) */
		if (cl_gone(c, r))
			continue;
		for (vc = 0; vc < FC_NUM_VCS; vc++)
			if (!fcemu__ring_empty(
				    fcemu__link_ring(c, b->node, p, vc)))
				return true;
	}
	return false;
}

/* Does any other board still run (here or on another host)? */
static bool others_running(struct fcemu_bridge *b)
{
	struct fcemu_cluster *c = b->c;
	unsigned int n;

	for (n = 0; n < c->nodes; n++)
		if (n != b->node &&
		    cl_ld(&c->hdr->node[n].state) == FCEMU_NODE_ALIVE)
			return true;
	return false;
}

void fcemu_bridge_stop(struct fcemu_bridge *b)
{
	const struct timespec nap = { 0, 1000000 };
	uint64_t start = fcemu__br_now_ns(), peers, now;
	bool busy, running;

	if (!b)
		return;
	/* our name goes first: whoever looks next waits for the new one */
	if (b->boot.drop)
		b->boot.drop(b->boot.arg, b->node);
	/*
	 * Each goodbye must go, to boards that left before us too (they wait
	 * for us): a lost one reads as a death later. A board down here is
	 * told so instead (a host stopped meanwhile learns it when resumed).
	 */
	for (peers = b->c->remote; peers;) {
		unsigned int n = (unsigned int)__builtin_ctzll(peers);
		bool down;
		int ret = 0;

		pthread_mutex_lock(&b->lock);
		b->moved_at = start;
		/* a new bridge of a board down here has done nothing wrong */
		down = fcemu__br_dead(b->c, n) && !(b->reborn & (1ull << n));
		if (b->epoch_of[n])
			ret = fcemu__br_send_ctl(b, n, down ? BR_DOWN : BR_BYE,
						 0, 0, 0);
		pthread_mutex_unlock(&b->lock);
		if (ret == -FI_EAGAIN &&
		    fcemu__br_now_ns() - start < BR_HB_NS) {
			nanosleep(&nap, NULL);
			continue;
		}
		peers &= peers - 1;
	}
	/*
	 * Our board's links still carry what other boards route through it
	 * (its router runs wherever there is progress), and nobody else
	 * carries them to the other hosts: until every other board has left,
	 * or our links have been idle for BR_QUIET_NS (what passed through
	 * them is over), BR_STOP_NS at most. What our board sent goes first.
	 */
	for (;;) {
		pthread_mutex_lock(&b->lock);
		fcemu__br_pump_locked(b);
		busy = links_busy(b);
		running = others_running(b);
		now = fcemu__br_now_ns();
		if (running && now - b->moved_at >= BR_QUIET_NS)
			running = false;
		pthread_mutex_unlock(&b->lock);
		if ((!busy && !running) || now - start >= BR_STOP_NS)
			break;
		if (running)
			fcemu_cluster_progress(b->c, 256);
		nanosleep(&nap, NULL);
	}
	b->c->pump = NULL;
	pthread_mutex_lock(&b->lock);
	b->stop = true;
	pthread_mutex_unlock(&b->lock);
	fi_cq_signal(b->cq);
	if (b->thread_on)
		pthread_join(b->thread, NULL);
	/* what is still in flight completes under the next bridge (or at
	 * exit, with the process) */
	pthread_mutex_lock(&spare_lock);
	if (!spare) {
		spare = b;
		b = NULL;
	}
	pthread_mutex_unlock(&spare_lock);
	if (b)
		close_all(b);
}

bool fcemu_bridge_wait_reply(struct fcemu_bridge *b, uint64_t max_ns)
{
	uint64_t until;

	if (!b || b->wait_fd < 0)
		return false;
	until = __atomic_load_n(&b->due_until, __ATOMIC_RELAXED);
	if (!until || fcemu__br_now_ns() >= until)
		return false;
	/* the thread may have taken some just before: they are news */
	if (!fcemu__br_inputs_waiting(b))
		fcemu__br_wait_cq(b, max_ns < FCEMU_BRIDGE_POLL_NS ?
					     max_ns :
					     FCEMU_BRIDGE_POLL_NS);
	return true;
}

#endif /* FCEMU_HAVE_OFI */
