// SPDX-License-Identifier: MIT
/*
 * An emulated cluster: one POSIX shared-memory object /fpgacomm-NAME with
 * a header (topology, faults, the node table, the pending-work bitmap) and,
 * per board, its register file and its rings (cluster_internal.h). Any
 * process of the cluster maps it whole, so any process can run any
 * board's router; what only a board's own process can reach (its host
 * memory, its engines) stays in that process.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cluster_internal.h"

#define PAGE	       4096ull
#define ROUND_UP(x, a) (((x) + (a)-1) / (a) * (a))
#define SCAN_NS	       (100 * 1000000ull) /* liveness check period */
#define SCAN_REUSE     10		  /* ... and pid reuse, x 10 */
#define ATTACH_TRIES   200		  /* x 5 ms: creator still busy */

static int shm_path(const char *name, char *path, size_t len)
{
	size_t n = name ? strlen(name) : 0;
	size_t i;

	if (n == 0 || n >= FCEMU_CLUSTER_NAME_MAX)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		char ch = name[i];

		if (!(ch >= 'a' && ch <= 'z') && !(ch >= 'A' && ch <= 'Z') &&
		    !(ch >= '0' && ch <= '9') && ch != '_' && ch != '-' &&
		    ch != '.')
			return -EINVAL;
	}
	snprintf(path, len, "/fpgacomm-%s", name);
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/*
 * Field 22 of /proc/PID/stat tells a pid from a later one that reuses it;
 * field 3, the state, tells a zombie (dead, not yet reaped) from the living,
 * and a stopped process ('T', not 't': a debugger's stop is left alone)
 * from a running one (*stopped, if not NULL).
 * RETURN VALUE: the start time, or 0 for a process gone or a zombie.
 */
static uint64_t proc_stat(pid_t pid, bool *stopped)
{
	char path[64], buf[1024];
	unsigned long long start = 0;
	const char *p;
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* comm may hold spaces and parentheses: count from the last ')' */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
		return 0;
	if (stopped)
		*stopped = p[2] == 'T';
	for (field = 2; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	if (sscanf(p, "%llu", &start) != 1)
		return 0;
	return start;
}

static size_t object_size(const struct fc_topology *t, unsigned int ports)
{
	size_t board = FC_BAR0_SIZE +
		       ROUND_UP(CL_RINGS(ports) * sizeof(struct cl_ring), PAGE);

	return ROUND_UP(sizeof(struct cl_header), PAGE) + t->nodes * board;
}

static int init_lock(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;
	int ret;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	ret = pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
	return -ret;
}

/* Where each link port of board @n leads, as the topology says. */
static void wire(const struct fc_topology *t, unsigned int ports,
		 unsigned int n, uint8_t *peer, uint8_t *peer_port)
{
	unsigned int p, to, to_port;

	for (p = 0; p <= FC_MAX_PORTS; p++) {
		peer[p] = CL_NO_PEER;
		peer_port[p] = CL_NO_PEER;
	}
	for (p = 1; p <= ports; p++) {
		if (fc_topo_peer(t, n, p, &to, &to_port))
			continue;
		peer[p] = (uint8_t)to;
		peer_port[p] = (uint8_t)to_port;
	}
}

/* As a host would after power-up: tables loaded, router on; and the
 * board's side: ports up with their peers. */
static void init_board(struct fcemu_cluster *c, unsigned int n)
{
	const struct fc_topology *t = &c->topo;
	unsigned int p, peer, d;
	uint32_t links = 0;

	for (p = 1; p <= c->ports; p++) {
		peer = cl_peer(c, n, p);
		if (peer == CL_NO_PEER)
			continue;
		cl_st(cl_reg(c, n, FC_PORT_REG(p, FC_PORT_STATUS)),
		      FC_PORT_UP | (peer & FC_PORT_PEER_MASK)
					   << FC_PORT_PEER_SHIFT);
		cl_st(cl_reg(c, n, FC_PORT_REG(p, FC_PORT_CREDITS)),
		      FC_NUM_VCS * CL_RING_SLOTS);
		links |= 1u << (p - 1);
	}
	for (d = 0; d < t->nodes; d++)
		cl_st(cl_reg(c, n, FC_ROUTE_TABLE(d)), fc_topo_route(t, n, d));
	cl_st(cl_reg(c, n, FC_REG_NODE_ID), n);
	cl_st(cl_reg(c, n, FC_REG_NUM_PORTS), c->ports);
	cl_st(cl_reg(c, n, FC_REG_LINK_STATE), links);
	cl_st(cl_reg(c, n, FC_ROUTER_FABRIC_NODES), t->nodes);
	cl_st(cl_reg(c, n, FC_ROUTER_FABRIC_TOPO), fc_topo_reg(t));
	cl_st(cl_reg(c, n, FC_ROUTER_CTRL), FC_ROUTER_CTRL_ENABLE);
	cl_st(cl_reg(c, n, FC_ROUTER_STATUS), FC_ROUTER_STATUS_UP);
}

static bool faults_valid(const struct fcemu_faults *f)
{
	return f->drop_ppm <= 1000000 && f->corrupt_ppm <= 1000000 &&
	       f->drop_ppm + f->corrupt_ppm < 1000000;
}

/* A topology that parses back to itself is one create could have made. */
static bool topology_valid(const struct fc_topology *t)
{
	struct fc_topology back;
	char spec[64];

	if (t->nodes < 1 || t->nodes > FC_MAX_NODES ||
	    fc_topo_format(t, spec, sizeof(spec)) || fc_topo_parse(spec, &back))
		return false;
	return back.kind == t->kind && back.nx == t->nx && back.ny == t->ny &&
	       back.nodes == t->nodes && fc_topo_ports(t) <= FC_MAX_PORTS;
}

/* The express hop (express.c) unless FPGACOMM_EMU_EXPRESS=0. */
static bool express_wanted(void)
{
	const char *env = getenv("FPGACOMM_EMU_EXPRESS");

	return !env || strcmp(env, "0");
}

/*
 * Check every field of a mapped header against the layout its topology
 * gives, then keep the checked copy (cluster_internal.h): a header that
 * any process of the cluster, or another user who planted the object,
 * wrote must not steer this process's reads and writes.
 * RETURN VALUE: 0, or -EPROTO for a header create would not have written.
 */
static int check_layout(struct fcemu_cluster *c)
{
	const struct cl_header *h = c->hdr;
	struct fc_topology t = h->topo;
	struct fcemu_faults f = h->faults;
	unsigned int ports = h->ports, n, p;
	uint8_t peer[FC_MAX_PORTS + 1], peer_port[FC_MAX_PORTS + 1];
	size_t off, rings;

	if (h->layout != CL_LAYOUT || h->ring_slots != CL_RING_SLOTS ||
	    !topology_valid(&t) || ports != fc_topo_ports(&t) ||
	    !faults_valid(&f) || h->size != c->size ||
	    h->size != object_size(&t, ports))
		return -EPROTO;
	rings = ROUND_UP(CL_RINGS(ports) * sizeof(struct cl_ring), PAGE);
	off = ROUND_UP(sizeof(*h), PAGE);
	for (n = 0; n < t.nodes; n++) {
		const struct cl_node *nd = &h->node[n];

		if (nd->bar0_off != off || nd->rings_off != off + FC_BAR0_SIZE)
			return -EPROTO;
		off += FC_BAR0_SIZE + rings;
		wire(&t, ports, n, peer, peer_port);
		for (p = 0; p <= FC_MAX_PORTS; p++)
			if (nd->peer[p] != peer[p] ||
			    nd->peer_port[p] != peer_port[p])
				return -EPROTO;
		memcpy(c->peer[n], peer, sizeof(peer));
		memcpy(c->peer_port[n], peer_port, sizeof(peer_port));
		c->regs[n] = (uint32_t *)(c->base + nd->bar0_off);
		c->rings[n] = (struct cl_ring *)(c->base + nd->rings_off);
	}
	c->topo = t;
	c->faults = f;
	c->express = !f.drop_ppm && !f.corrupt_ppm && express_wanted();
	c->nodes = t.nodes;
	c->ports = ports;
	c->remote = h->remote;
	if (t.nodes < 64 && c->remote >> t.nodes)
		return -EPROTO;
	return 0;
}

/*
 * An object to attach to must be a plain file of ours that only we can
 * open: another local user could have created it first under the name a
 * job will use, to read or inject its traffic.
 * RETURN VALUE: 0; -EPERM another owner; -EACCES another mode; -EPROTO.
 */
static int check_object(const struct stat *st)
{
	if (!S_ISREG(st->st_mode))
		return -EPROTO;
	if (st->st_uid != geteuid())
		return -EPERM;
	if ((st->st_mode & 07777) != CL_MODE)
		return -EACCES;
	return 0;
}

static int map_object(struct fcemu_cluster **cp, const char *name, int fd,
		      size_t size)
{
	struct fcemu_cluster *c;
	void *base;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		free(c);
		return -errno;
	}
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->base = base;
	c->hdr = base;
	c->size = size;
	c->rng = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ now_ns() ^
		 (uintptr_t)c;
	if (!c->rng)
		c->rng = 1;
	*cp = c;
	return 0;
}

int fcemu_cluster_create(struct fcemu_cluster **cp, const char *name,
			 const struct fc_topology *t,
			 const struct fcemu_faults *faults)
{
	return fcemu_cluster_create_part(cp, name, t, faults, 0);
}

int fcemu_cluster_create_part(struct fcemu_cluster **cp, const char *name,
			      const struct fc_topology *t,
			      const struct fcemu_faults *faults,
			      uint64_t remote)
{
	struct fcemu_cluster *c;
	struct cl_header *h;
	char path[FCEMU_CLUSTER_NAME_MAX + 16];
	unsigned int ports, n;
	size_t size, off;
	int fd, ret;

	if (!cp || !t)
		return -EINVAL;
	/* full:1 is a cluster too: one board, no links */
	if (fc_topo_format(t, path, sizeof(path)))
		return -EINVAL;
	ret = shm_path(name, path, sizeof(path));
	if (ret)
		return ret;
	ports = fc_topo_ports(t);
	if (ports > FC_MAX_PORTS || !topology_valid(t) ||
	    (faults && !faults_valid(faults)))
		return -EINVAL;
	if (t->nodes < 64 && remote >> t->nodes)
		return -EINVAL;

	/* O_EXCL: never one that someone else made; the mode whatever the
	 * umask, as attach checks it. */
	fd = shm_open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		      CL_MODE);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, CL_MODE)) {
		ret = -errno;
		goto err_unlink;
	}
	size = object_size(t, ports);
	/* tmpfs: pages are allocated on first touch, idle rings cost nothing */
	if (ftruncate(fd, size)) {
		ret = -errno;
		goto err_unlink;
	}
	ret = map_object(&c, name, fd, size);
	if (ret)
		goto err_unlink;
	close(fd);

	h = c->hdr;
	h->layout = CL_LAYOUT;
	h->size = size;
	h->topo = *t;
	if (faults)
		h->faults = *faults;
	h->ports = ports;
	h->ring_slots = CL_RING_SLOTS;
	h->remote = remote;
	off = ROUND_UP(sizeof(*h), PAGE);
	for (n = 0; n < t->nodes; n++) {
		ret = init_lock(&h->node[n].lock);
		if (ret)
			goto err_detach;
		/* a board of another host is its bridge's to declare down */
		h->node[n].state = remote & (1ull << n) ? FCEMU_NODE_ALIVE :
							  FCEMU_NODE_FREE;
		h->node[n].bar0_off = off;
		off += FC_BAR0_SIZE;
		h->node[n].rings_off = off;
		off += ROUND_UP(CL_RINGS(ports) * sizeof(struct cl_ring), PAGE);
		wire(t, ports, n, h->node[n].peer, h->node[n].peer_port);
	}
	ret = check_layout(c); /* the one path that fills the cache */
	if (ret)
		goto err_detach;
	/* A zeroed slot 0 would pass for one written at index 0. */
	for (n = 0; n < t->nodes; n++)
		cl_ring(c, n, CL_RING_EJECT)->slot[0].seq = -CL_RING_SLOTS;
	for (n = 0; n < t->nodes; n++)
		init_board(c, n);
	cl_st(&h->magic, CL_MAGIC); /* last: attachers wait for it */
	*cp = c;
	return 0;

err_detach:
	fcemu_cluster_detach(c);
	shm_unlink(path);
	return ret;
err_unlink:
	close(fd);
	shm_unlink(path);
	return ret;
}

int fcemu_cluster_attach(struct fcemu_cluster **cp, const char *name)
{
	char path[FCEMU_CLUSTER_NAME_MAX + 16];
	const struct timespec nap = { 0, 5 * 1000000 };
	struct fcemu_cluster *c;
	struct cl_header *h;
	struct stat st;
	int fd, ret, tries;

	if (!cp)
		return -EINVAL;
	ret = shm_path(name, path, sizeof(path));
	if (ret)
		return ret;
	fd = shm_open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0)
		return errno == ELOOP ? -EPERM : -errno;
	/* The creator sizes, then fills, then sets the magic: wait for it. */
	for (tries = 0;; tries++) {
		if (fstat(fd, &st)) {
			ret = -errno;
			goto err_close;
		}
		ret = check_object(&st);
		if (ret)
			goto err_close;
		if ((size_t)st.st_size >= sizeof(*h))
			break;
		if (tries == ATTACH_TRIES) {
			ret = -EBADMSG; /* too short for a header */
			goto err_close;
		}
		nanosleep(&nap, NULL);
	}
	ret = map_object(&c, name, fd, st.st_size);
	if (ret)
		goto err_close;
	close(fd);
	h = c->hdr;
	for (tries = 0; cl_ld(&h->magic) != CL_MAGIC; tries++) {
		if (tries == ATTACH_TRIES) {
			fcemu_cluster_detach(c);
			return -EBADMSG; /* no creator ever finished it */
		}
		nanosleep(&nap, NULL);
	}
	if (check_layout(c))
		goto err_proto;
	*cp = c;
	return 0;

err_proto:
	fcemu_cluster_detach(c);
	return -EPROTO;
err_close:
	close(fd);
	return ret;
}

/* Who owns uid @uid, by name, or "" (no such user, or no memory). */
static void user_name(uid_t uid, char *buf, size_t len)
{
	struct passwd pw, *found = NULL;
	char strings[1024];

	buf[0] = 0;
	if (!getpwuid_r(uid, &pw, strings, sizeof(strings), &found) && found)
		snprintf(buf, len, " (%s)", found->pw_name);
}

static bool read_header(const char *full, struct cl_header *h)
{
	int fd = open(full, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	bool ok;

	if (fd < 0)
		return false;
	ok = pread(fd, h, sizeof(*h), 0) == (ssize_t)sizeof(*h);
	close(fd);
	return ok;
}

void fcemu_cluster_explain(const char *name, int err, char *buf, size_t len)
{
	char path[FCEMU_CLUSTER_NAME_MAX + 16],
		full[FCEMU_CLUSTER_NAME_MAX + 32];
	char who[64];
	struct cl_header h;
	struct stat st;

	if (shm_path(name, path, sizeof(path))) {
		snprintf(buf, len, "bad cluster name '%s'", name ? name : "");
		return;
	}
	/* where glibc's shm_open keeps it */
	snprintf(full, sizeof(full), "/dev/shm%s", path);
	if (lstat(full, &st)) {
		snprintf(buf, len, "/dev/shm%s: %s", path, strerror(errno));
		return;
	}
	user_name(st.st_uid, who, sizeof(who));
	if (S_ISLNK(st.st_mode) || !S_ISREG(st.st_mode)) {
		snprintf(buf, len, "/dev/shm%s is %s, not a cluster object",
			 path,
			 S_ISLNK(st.st_mode) ? "a symbolic link" :
					       "not a regular file");
	} else if (st.st_uid != geteuid()) {
		snprintf(buf, len,
			 "/dev/shm%s belongs to uid %u%s, not to us "
			 "(uid %u): another user took the name",
			 path, (unsigned int)st.st_uid, who,
			 (unsigned int)geteuid());
	} else if ((st.st_mode & 07777) != CL_MODE) {
		snprintf(buf, len, "/dev/shm%s has mode %04o, not %04o", path,
			 (unsigned int)(st.st_mode & 07777), CL_MODE);
	} else if ((size_t)st.st_size < sizeof(h)) {
		snprintf(buf, len,
			 "/dev/shm%s is not a cluster object "
			 "(%lld bytes, too short for its header)",
			 path, (long long)st.st_size);
	} else if (!read_header(full, &h) || h.magic != CL_MAGIC) {
		snprintf(buf, len,
			 "/dev/shm%s is not a cluster object "
			 "(no cluster magic)",
			 path);
	} else if (h.layout != CL_LAYOUT) {
		snprintf(buf, len,
			 "/dev/shm%s has layout version %u, this "
			 "library speaks %u",
			 path, h.layout, CL_LAYOUT);
	} else {
		snprintf(buf, len, "/dev/shm%s: %s", path,
			 err == -EPROTO ?
				 "its header does not match its topology" :
				 strerror(err < 0 ? -err : err));
	}
}

void fcemu_cluster_detach(struct fcemu_cluster *c)
{
	unsigned int n;

	if (!c)
		return;
	for (n = 0; n < FC_MAX_NODES; n++)
		fcemu__vt_spill_free(c, n);
	munmap(c->base, c->size);
	free(c);
}

void fcemu_cluster_test_faults(struct fcemu_cluster *c,
			       const struct fcemu_test_faults *f)
{
	if (f)
		c->test = *f;
	else
		memset(&c->test, 0, sizeof(c->test));
}

int fcemu_cluster_unlink(const char *name)
{
	char path[FCEMU_CLUSTER_NAME_MAX + 16];
	int ret = shm_path(name, path, sizeof(path));

	if (ret)
		return ret;
	return shm_unlink(path) ? -errno : 0;
}

const struct fc_topology *fcemu_cluster_topology(const struct fcemu_cluster *c)
{
	return &c->topo;
}

volatile uint32_t *fcemu_cluster_bar0(struct fcemu_cluster *c,
				      unsigned int node)
{
	if (node >= c->nodes)
		return NULL;
	return (volatile uint32_t *)cl_reg(c, node, 0);
}

uint32_t fcemu_cluster_reg(struct fcemu_cluster *c, unsigned int node,
			   uint32_t off)
{
	return cl_rd(c, node, off);
}

bool fcemu_cluster_gone(struct fcemu_cluster *c, unsigned int node)
{
	return node >= c->nodes || cl_gone(c, node);
}

int fcemu_cluster_map_regs(struct fcemu_cluster *c, unsigned int node, int fd,
			   uint64_t off)
{
	static const struct {
		uint32_t start, end;
	} own[] = {
		{ 0, FC_ROUTER_BASE },
		{ FC_CHAN_BASE, FC_BAR0_SIZE },
	};
	uint8_t *bar, *tmp;
	unsigned int i;

	if (!c || node >= c->nodes || fd < 0 || off % PAGE)
		return -EINVAL;
	bar = (uint8_t *)cl_reg(c, node, 0);
	tmp = mmap(NULL, FC_BAR0_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		   (off_t)off);
	if (tmp == MAP_FAILED)
		return -errno;
	memcpy(tmp, bar, FC_BAR0_SIZE);
	munmap(tmp, FC_BAR0_SIZE);
	for (i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		void *p = mmap(bar + own[i].start, own[i].end - own[i].start,
			       PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
			       fd, (off_t)(off + own[i].start));

		/* MAP_FIXED over our own mapping: it cannot move, only fail */
		if (p == MAP_FAILED)
			return -errno;
	}
	return 0;
}

uint64_t fcemu_cluster_pending(const struct fcemu_cluster *c)
{
	return __atomic_load_n(&c->hdr->pending, __ATOMIC_ACQUIRE);
}

/* ---- Locks ---- */

static void repair(struct fcemu_cluster *c, unsigned int node)
{
	unsigned int p;

	/*
	 * The holder died inside the router. Every ring index moves after
	 * its slot is written, so the rings are whole; a run it had
	 * published but not taken off its input is taken off now; and it
	 * may have pushed packets without flagging the receiver, so flag all
	 * neighbours.
	 */
	fcemu__router_repair(c, node);
	cl_set_pending(c, node);
	for (p = 1; p <= c->ports; p++)
		if (cl_peer(c, node, p) != CL_NO_PEER)
			cl_set_pending(c, cl_peer(c, node, p));
}

int fcemu__cluster_lock(struct fcemu_cluster *c, unsigned int node, bool wait)
{
	pthread_mutex_t *m = &c->hdr->node[node].lock;
	int ret = wait ? pthread_mutex_lock(m) : pthread_mutex_trylock(m);

	if (ret == EOWNERDEAD) {
		repair(c, node);
		pthread_mutex_consistent(m);
		ret = 0;
	}
	return -ret;
}

void fcemu__cluster_unlock(struct fcemu_cluster *c, unsigned int node)
{
	pthread_mutex_unlock(&c->hdr->node[node].lock);
}

/* ---- Claims and liveness ---- */

/*
 * Is the process that claimed @nd gone? Never true for ourselves. With
 * @reuse, also tell a new process under a reused pid (reads /proc, so the
 * periodic scan does it only every SCAN_REUSE-th time).
 */
static bool owner_gone(const struct cl_node *nd, bool reuse)
{
	pid_t pid = nd->pid;

	if (pid == getpid())
		return false;
	if (pid <= 0 || (kill(pid, 0) && errno == ESRCH))
		return true;
	/* Alive, or a zombie (start time 0), or a reused pid. */
	return reuse && proc_stat(pid, NULL) != nd->starttime;
}

int fcemu_cluster_claim(struct fcemu_cluster *c, unsigned int node)
{
	struct cl_node *nd;
	int ret;

	if (!c || node >= c->nodes)
		return -EINVAL;
	nd = &c->hdr->node[node];
	ret = fcemu__cluster_lock(c, node, true);
	if (ret)
		return ret;
	if (cl_ld(&nd->state) == FCEMU_NODE_ALIVE && !owner_gone(nd, true) &&
	    nd->pid != getpid()) {
		fcemu__cluster_unlock(c, node);
		return -EBUSY;
	}
	nd->pid = getpid();
	nd->starttime = proc_stat(nd->pid, NULL);
	/* Bursts only where peers can read us; a job a dead owner left
	 * open must not be taken by anyone. */
	__atomic_fetch_or(&nd->job.claim, 0xffffffffull, __ATOMIC_SEQ_CST);
	cl_st(&nd->burst, fcemu__cma_offer());
	cl_st(&nd->state, FCEMU_NODE_ALIVE);
	__atomic_fetch_add(&c->hdr->state_gen, 1, __ATOMIC_RELEASE);
	c->mine |= 1ull << node;
	fcemu__cluster_unlock(c, node);
	return 0;
}

void fcemu_cluster_release(struct fcemu_cluster *c, unsigned int node)
{
	struct cl_node *nd;

	if (!c || node >= c->nodes)
		return;
	nd = &c->hdr->node[node];
	if (fcemu__cluster_lock(c, node, true))
		return;
	if (nd->pid == getpid()) {
		cl_st(&nd->state, FCEMU_NODE_EXITED);
		__atomic_fetch_add(&c->hdr->state_gen, 1, __ATOMIC_RELEASE);
		cl_st(&nd->burst, 0);
		nd->pid = 0;
	}
	c->mine &= ~(1ull << node);
	fcemu__cluster_unlock(c, node);
}

/*
 * Has @node's process been stopped (SIGSTOP) for longer than
 * FCEMU_STOP_NS, as seen by this mapping's reads of /proc? A stopped
 * process holds its links and its peers' sends as a dead one would, but
 * kill(pid, 0) cannot tell it from a running one.
 */
static bool owner_stopped(struct fcemu_cluster *c, unsigned int node)
{
	const struct cl_node *nd = &c->hdr->node[node];
	bool stopped = false;
	uint64_t now;

	if (nd->pid == getpid() || nd->pid <= 0 ||
	    !proc_stat(nd->pid, &stopped) || !stopped) {
		c->stopped_since[node] = 0;
		return false;
	}
	now = now_ns();
	if (!c->stopped_since[node])
		c->stopped_since[node] = now;
	return now - c->stopped_since[node] >= FCEMU_STOP_NS;
}

/* Mark @node DEAD if its process is gone, or stopped past the bound.
 * Cheap reads first: no lock for the common case of a live board. */
static enum fcemu_node_state check_node(struct fcemu_cluster *c,
					unsigned int node, bool reuse)
{
	struct cl_node *nd = &c->hdr->node[node];
	uint32_t s = cl_ld(&nd->state);
	bool stopped = false;

	/* another host's board: no process here; its bridge tells */
	if (s != FCEMU_NODE_ALIVE || (c->remote & (1ull << node)))
		return s;
	if (!owner_gone(nd, reuse)) {
		stopped = reuse && owner_stopped(c, node);
		if (!stopped)
			return s;
	}
	/* a stopped process may hold its lock: never wait for it */
	if (fcemu__cluster_lock(c, node, !stopped))
		return s;
	if (cl_ld(&nd->state) == FCEMU_NODE_ALIVE &&
	    (stopped || owner_gone(nd, reuse))) {
		cl_st(&nd->state, FCEMU_NODE_DEAD);
		__atomic_fetch_add(&c->hdr->state_gen, 1, __ATOMIC_RELEASE);
	}
	s = cl_ld(&nd->state);
	fcemu__cluster_unlock(c, node);
	return s;
}

enum fcemu_node_state fcemu_cluster_node_state(struct fcemu_cluster *c,
					       unsigned int node)
{
	if (!c || node >= c->nodes)
		return FCEMU_NODE_FREE;
	return check_node(c, node, true);
}

uint64_t fcemu_cluster_remote(const struct fcemu_cluster *c)
{
	return c->remote;
}

int fcemu_cluster_set_remote_state(struct fcemu_cluster *c, unsigned int node,
				   enum fcemu_node_state state)
{
	struct cl_node *nd;
	int ret;

	if (!c || node >= c->nodes || !(c->remote & (1ull << node)) ||
	    state == FCEMU_NODE_FREE)
		return -EINVAL;
	nd = &c->hdr->node[node];
	ret = fcemu__cluster_lock(c, node, true);
	if (ret)
		return ret;
	/*
	 * Down is for good for the bridge declared down (what it sends later
	 * goes nowhere); a board that opened again, under a new bridge, comes
	 * back whatever it was, as a local one claimed again does.
	 */
	ret = -EINVAL;
	if (state == FCEMU_NODE_ALIVE ? cl_ld(&nd->state) != FCEMU_NODE_ALIVE :
					cl_ld(&nd->state) == FCEMU_NODE_ALIVE) {
		cl_st(&nd->state, state);
		__atomic_fetch_add(&c->hdr->state_gen, 1, __ATOMIC_RELEASE);
		ret = 0;
	}
	fcemu__cluster_unlock(c, node);
	return ret;
}

/* Every SCAN_NS at most: find boards whose process died. */
void fcemu__cluster_scan(struct fcemu_cluster *c)
{
	uint64_t now = now_ns();
	unsigned int n;
	bool reuse;

	if (now < c->next_scan_ns)
		return;
	c->next_scan_ns = now + SCAN_NS;
	reuse = ++c->scans % SCAN_REUSE == 0;
	for (n = 0; n < c->nodes; n++)
		check_node(c, n, reuse);
}

/*
 * Board @node's FC_ROUTER_NODES_DOWN, from the boards' states: written by
 * the board's own process when a state moved since it last looked.
 */
void fcemu_cluster_note_down(struct fcemu_cluster *c, unsigned int node)
{
	uint32_t gen = __atomic_load_n(&c->hdr->state_gen, __ATOMIC_ACQUIRE);
	uint64_t down = 0;
	unsigned int n;

	if (gen == c->down_gen[node] && c->down_known & (1ull << node))
		return;
	c->down_gen[node] = gen;
	c->down_known |= 1ull << node;
	for (n = 0; n < c->nodes; n++)
		if (cl_gone(c, n))
			down |= 1ull << n;
	/*
	 * Our own board declared down while we live (we were stopped): the
	 * others dropped what they sent us meanwhile, so every node is down
	 * to us, and requests fail instead of waiting for it.
	 */
	if (c->mine & down & (1ull << node))
		down = c->nodes < 64 ? (1ull << c->nodes) - 1 : ~0ull;
	cl_st(cl_reg(c, node, FC_ROUTER_NODES_DOWN_LO), (uint32_t)down);
	cl_st(cl_reg(c, node, FC_ROUTER_NODES_DOWN_HI), (uint32_t)(down >> 32));
}
