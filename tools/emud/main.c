// SPDX-License-Identifier: MIT
/*
 * fpgacomm-emud: hosts an emulated board behind a QEMU ivshmem device, so
 * that the real driver can be loaded and tested in a virtual machine.
 *
 * The board's register file is the ivshmem shared memory (the guest's BAR2),
 * and the guest's RAM is a shared memory-backend file mapped here, so a
 * descriptor's bus address (a guest-physical address) is an offset into it.
 * The aperture part of that memory is the first MiB of board memory.
 * With --socket the daemon is the ivshmem server for an ivshmem-doorbell
 * device: the guest rings us after writing registers and we raise MSI-X
 * vectors. With only --shm (ivshmem-plain) we watch the registers, spinning
 * briefly and then sleeping.
 *
 * With --cluster the board is one node of an emulated cluster (emu/fabric.h,
 * docs/fabric.md), so that several daemons, e.g. the two boards of one VM,
 * are linked. The cluster object keeps the board's router and port blocks,
 * which other processes route through; the board's own blocks live in the
 * ivshmem memory (fcemu_cluster_map_regs()), so the guest sees them as the
 * board writes them. The guest's copy of the router and port blocks is a
 * mirror the daemon keeps in step on every round (sync_shared()). Packets
 * for the board ring its bell in the cluster, which a thread turns into an
 * event for the loop (bell.c); transit traffic does not, so while the
 * cluster has traffic in flight the daemon also looks every millisecond,
 * and every CLUSTER_IDLE_MS when it is quiet.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <fpgacomm/hw.h>
#include "bell.h"
#include "fabric.h"
#include "fcemu.h"
#include "ivshmem.h"

#define SHM_SIZE   FC_IVSHMEM_SHM_SIZE
#define STEP_BYTES (4ull << 20)
#define MAX_EVENTS (IVSHMEM_MAX_VECTORS + 4)
#define MAX_PEERS  8

struct emud {
	const char *socket_path;
	const char *shm_path;
	const char *ram_path;
	uint64_t ram_size;
	uint8_t *ram;
	int shm_fd;
	void *shm;
	struct fcemu *emu;
	struct ivshmem_server srv;
	bool have_srv;
	bool verbose;
	/* --cluster */
	const char *cluster_name;
	const char *topology;
	struct fcemu_cluster *cluster;
	unsigned int node;
	struct bell bell; /* packets for us wake the loop */
	/* --peer: other boards' shared memory, mapped once it exists */
	unsigned int npeers;
	const char *peer_path[MAX_PEERS];
	uint8_t *peer_shm[MAX_PEERS];
	unsigned int peer_refused[MAX_PEERS]; /* said so once */
	uint32_t shadow[(FC_CHAN_BASE - FC_ROUTER_BASE) / 4];
	uint32_t pio_seen; /* PIO_TAIL as the last round began */
	/*
	 * What the board did to the guest: ranges of its RAM reached (read
	 * or written) and interrupts sent, logged with -v at every board
	 * reset and at the end, so that a test can tell that nothing
	 * happened after the driver stopped the board (shutdown).
	 */
	uint64_t ram_reached;
	uint64_t irqs_sent;
	uint32_t reset_seen; /* BOARD_RESET_ACK last logged */
};

static const char *prog = "fpgacomm-emud";

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static void usage(FILE *f, int status)
{
	fprintf(f,
		"usage: %s (--socket PATH | --shm PATH) [options]\n"
		"Hosts an emulated fpgacomm board behind a QEMU ivshmem device.\n\n"
		"  -s, --socket PATH     be the ivshmem server at PATH (ivshmem-doorbell:\n"
		"                        doorbells and MSI-X interrupts)\n"
		"  -S, --shm PATH        register file shared memory (ivshmem-plain, or the\n"
		"                        file handed to the guest with --socket; default:\n"
		"                        an anonymous memfd)\n"
		"  -r, --guest-ram PATH  the guest's RAM file (memory-backend-file, share=on);\n"
		"                        created with --guest-ram-size if missing\n"
		"  -R, --guest-ram-size SIZE\n"
		"  -m, --mem SIZE        board memory (default 1G)\n"
		"  -n, --node N          fabric node id (default 0)\n"
		"  -c, --cluster NAME    be node N of the emulated cluster NAME\n"
		"                        (/dev/shm/fpgacomm-NAME); created with\n"
		"                        --topology if it does not exist, removed by\n"
		"                        the last daemon or program to leave it\n"
		"  -t, --topology T      ring:N, mesh:XxY, torus:XxY or full:N\n"
		"  -e, --engines N       DMA engines (default 2)\n"
		"  -V, --vectors N       interrupt vectors (default %d)\n"
		"  -p, --peer PATH       the shared memory (--shm) of another board of the\n"
		"                        VM, whose aperture our DMA may reach (repeatable)\n"
		"      --bad-id          fault: the ID register reads all-ones\n"
		"  -v, --verbose\n"
		"  -h, --help\n",
		prog, FC_IRQ_VECTORS);
	exit(status);
}

static uint64_t parse_size(const char *s, const char *what)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *s == '-')
		die("bad %s '%s'", what, s);
	switch (*end) {
	case 'K':
	case 'k':
		v <<= 10;
		end++;
		break;
	case 'M':
	case 'm':
		v <<= 20;
		end++;
		break;
	case 'G':
	case 'g':
		v <<= 30;
		end++;
		break;
	}
	if (*end || !v)
		die("bad %s '%s' (a number with K, M or G)", what, s);
	return v;
}

static unsigned int parse_uint(const char *s, unsigned int max,
			       const char *what)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v > max)
		die("bad %s '%s' (0..%u)", what, s, max);
	return (unsigned int)v;
}

static void *map_file(const char *path, uint64_t *size, uint64_t create_size,
		      int *fdp)
{
	struct stat st;
	void *p;
	int fd;

	/*
	 * These files hold the guest's memory and the board's registers: a
	 * file someone else made first, or a link to one, would let them
	 * read or steer the board. Make it ours, or take only one that is
	 * ours already and closed to everyone else.
	 */
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	if (fd < 0 && errno == EEXIST)
		fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		die("open %s: %s", path, strerror(errno));
	if (fstat(fd, &st))
		die("stat %s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077))
		die("%s: not a file of ours closed to others (mode 0600)",
		    path);
	if ((uint64_t)st.st_size < create_size && ftruncate(fd, create_size))
		die("size %s: %s", path, strerror(errno));
	if (fstat(fd, &st) || st.st_size == 0)
		die("%s is empty: give --guest-ram-size", path);
	*size = st.st_size;
	p = mmap(NULL, *size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mmap %s: %s", path, strerror(errno));
	if (fdp)
		*fdp = fd;
	else
		close(fd);
	return p;
}

/*
 * The aperture of the board whose shared memory is @shm, if [bus, bus +
 * len) lies in it: its guest driver wrote where the BAR is (FC_EMU_SHM_BUS).
 */
static void *aperture_at(const uint8_t *shm, uint64_t bus, uint64_t len)
{
	const volatile uint32_t *regs =
		(const volatile uint32_t *)(shm + FC_IVSHMEM_REGS_OFF);
	uint64_t base = regs[FC_EMU_SHM_BUS_LO / 4] |
			(uint64_t)regs[FC_EMU_SHM_BUS_HI / 4] << 32;
	uint64_t lo = base + FC_IVSHMEM_APERTURE_OFF;

	if (!base || bus < lo ||
	    bus - lo > SHM_SIZE - FC_IVSHMEM_APERTURE_OFF ||
	    len > SHM_SIZE - FC_IVSHMEM_APERTURE_OFF - (bus - lo))
		return NULL;
	return (uint8_t *)shm + FC_IVSHMEM_APERTURE_OFF + (bus - lo);
}

/*
 * Open a peer board's shared memory: as --shm, never through a link and
 * only a regular file of ours that no one else may open (it holds that
 * board's registers and memory, where our engines write).
 * RETURN VALUE: the fd, or -1 with errno set (ENOENT: not made yet;
 * EPERM: a file we must not take).
 */
static int open_peer(const char *path, struct stat *st)
{
	int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (fstat(fd, st) || !S_ISREG(st->st_mode) || st->st_uid != geteuid() ||
	    (st->st_mode & 077)) {
		close(fd);
		errno = EPERM;
		return -1;
	}
	return fd;
}

/* Refuse at start a --peer file that exists and is not ours to take. */
static void check_peers(const struct emud *d)
{
	struct stat st;
	int fd;

	for (unsigned int i = 0; i < d->npeers; i++) {
		fd = open_peer(d->peer_path[i], &st);
		if (fd >= 0)
			close(fd);
		else if (errno != ENOENT)
			die("--peer %s: %s", d->peer_path[i],
			    errno == ELOOP ?
				    "a symbolic link" :
			    errno == EPERM ?
				    "not a file of ours closed to others (mode 0600)" :
				    strerror(errno));
	}
}

/* Map peer @i's shared memory, if its daemon has made it yet. */
static uint8_t *peer_shm(struct emud *d, unsigned int i)
{
	struct stat st;
	void *p;
	int fd;

	if (d->peer_shm[i])
		return d->peer_shm[i];
	fd = open_peer(d->peer_path[i], &st);
	if (fd < 0) {
		if (errno != ENOENT && !d->peer_refused[i]++)
			fprintf(stderr, "%s: --peer %s refused: %s\n", prog,
				d->peer_path[i],
				errno == ELOOP ?
					"a symbolic link" :
					"not a file of ours "
					"closed to others (mode 0600)");
		return NULL;
	}
	if (st.st_size < SHM_SIZE) {
		close(fd);
		return NULL;
	}
	p = mmap(NULL, SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return NULL;
	d->peer_shm[i] = p;
	return p;
}

/*
 * A guest-physical range to a pointer: into the RAM file, or, as a PCIe
 * peer would reach a BAR, into the aperture of this board or of a --peer
 * board of the same VM. NULL if none holds it.
 */
static void *translate(void *ctx, uint64_t bus, uint64_t len)
{
	struct emud *d = ctx;
	unsigned int i;
	uint8_t *shm;
	void *p;

	if (d->ram && bus <= d->ram_size && len <= d->ram_size - bus) {
		d->ram_reached++;
		return d->ram + bus;
	}
	if (d->shm && (p = aperture_at(d->shm, bus, len)))
		return p;
	for (i = 0; i < d->npeers; i++) {
		shm = peer_shm(d, i);
		if (shm && (p = aperture_at(shm, bus, len)))
			return p;
	}
	return NULL;
}

/*
 * The aperture (BAR2 from FC_IVSHMEM_APERTURE_OFF) shows board memory: the
 * first bytes of board memory are the aperture's pages of the shared
 * memory, mapped over it, so that a store by the guest or a DMA from a
 * peer board lands in board memory and the engines see it. The window
 * stays at board address 0: an APERTURE_BASE of another value is not
 * followed (docs/hardware.md, section 16).
 */
static void back_aperture(struct emud *d)
{
	uint64_t size, len = SHM_SIZE - FC_IVSHMEM_APERTURE_OFF;
	void *mem = fcemu_board_mem(d->emu, &size);

	if (size < len)
		len = size;
	if (mmap(mem, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
		 d->shm_fd, FC_IVSHMEM_APERTURE_OFF) == MAP_FAILED)
		die("aperture: %s", strerror(errno));
}

static void raise_irq(void *ctx, unsigned int vector)
{
	struct emud *d = ctx;

	d->irqs_sent++;
	if (d->have_srv)
		ivshmem_server_notify(&d->srv, vector);
}

/* -v: a board reset acted on, and what the board had done by then. */
static void log_board_reset(struct emud *d)
{
	uint32_t ack = fcemu_bar0(d->emu)[FC_REG_BOARD_RESET_ACK / 4];

	if (!d->verbose || ack == d->reset_seen)
		return;
	d->reset_seen = ack;
	fprintf(stderr,
		"%s: board reset %u: guest RAM reached %llu times, %llu interrupts\n",
		prog, ack, (unsigned long long)d->ram_reached,
		(unsigned long long)d->irqs_sent);
}

static const struct fcemu_host_ops host_ops = {
	.translate = translate,
	.raise_irq = raise_irq,
};

static void setup_shm(struct emud *d)
{
	uint64_t size;

	if (d->shm_path) {
		d->shm = map_file(d->shm_path, &size, SHM_SIZE, &d->shm_fd);
		if (size < SHM_SIZE)
			die("%s: smaller than %u bytes", d->shm_path, SHM_SIZE);
	} else {
		d->shm_fd = memfd_create("fpgacomm-board", MFD_CLOEXEC);
		if (d->shm_fd < 0 || ftruncate(d->shm_fd, SHM_SIZE))
			die("memfd: %s", strerror(errno));
		d->shm = mmap(NULL, SHM_SIZE, PROT_READ | PROT_WRITE,
			      MAP_SHARED, d->shm_fd, 0);
		if (d->shm == MAP_FAILED)
			die("mmap memfd: %s", strerror(errno));
	}
	/* A fresh board: no stale doorbells from an earlier run. */
	memset(d->shm, 0, SHM_SIZE);
}

static int add_fd(int ep, int fd, uint64_t tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = tag };

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

enum {
	TAG_SIGNAL = 1000,
	TAG_LISTEN,
	TAG_CLIENT,
	TAG_BELL
};

/*
 * How long to sleep before looking again. While an engine moves data, only
 * look for events. With the ivshmem server, a doorbell wakes us; a stalled
 * engine (the fault knob) waits for one too, as the host rings after it
 * clears the knob. ivshmem-plain tells us of no write: poll the registers,
 * spinning briefly after activity, then every 1 ms, then every 10 ms.
 */
#define PLAIN_SPIN_ROUNDS 64
#define PLAIN_FAST_ROUNDS 1000 /* about a second at 1 ms */
#define PLAIN_SLOW_MS	  10
/*
 * In a cluster, packets for us ring the board's bell (bell.c), which wakes
 * the loop; transit traffic through our router does not: while any router
 * has input waiting, look every millisecond at most, and when the cluster
 * is quiet every CLUSTER_IDLE_MS.
 */
#define CLUSTER_IDLE_MS 20

static int wait_ms(const struct emud *d, uint64_t moved, unsigned int idle)
{
	if (moved)
		return 0;
	if (d->cluster) {
		if (idle < PLAIN_SPIN_ROUNDS)
			return 0;
		if (idle < PLAIN_SPIN_ROUNDS + PLAIN_FAST_ROUNDS ||
		    fcemu_cluster_pending(d->cluster))
			return 1;
		return CLUSTER_IDLE_MS;
	}
	if (d->have_srv)
		return -1;
	if (idle < PLAIN_SPIN_ROUNDS)
		return 0;
	if (idle < PLAIN_SPIN_ROUNDS + PLAIN_FAST_ROUNDS)
		return 1;
	return PLAIN_SLOW_MS;
}

/*
 * PIO_WATCH (hw.h): while the loop spins (sleeps of 0 ms) it takes the
 * window at every round (fcemu_progress), so the guest need not kick.
 * Before a real sleep it clears WATCH and, after a full barrier, looks at
 * PIO_TAIL once more: a TAIL the last round did not see (written before
 * the guest read WATCH as 1) is found here, and one written after the
 * guest read 0 is kicked. A window that waits for room in the injection
 * queue is not a reason to stay up: room rings the bell. RETURN VALUE:
 * the sleep to take, 0 when PIO_TAIL moved after all.
 */
static int pio_watch(struct emud *d, int ms)
{
	volatile uint32_t *r = fcemu_bar0(d->emu);
	uint32_t watch = ms == 0;

	if (!d->cluster)
		return ms;
	if (r[FC_PIO_WATCH / 4] != watch)
		__atomic_store_n(&r[FC_PIO_WATCH / 4], watch, __ATOMIC_RELAXED);
	if (watch)
		return ms;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&r[FC_PIO_TAIL / 4], __ATOMIC_RELAXED) !=
	    d->pio_seen)
		return 0;
	return ms;
}

/*
 * The router and port blocks live in the cluster, where any process's
 * router updates them; the guest sees the copy in the ivshmem memory. Keep
 * the two in step: board-written registers go to the guest; a host-written
 * one (routing table, FABRIC_*) goes whichever way it last changed, the
 * guest's write through the driver or a fabric manager's on the host.
 */
static void sync_shared(struct emud *d)
{
	volatile uint32_t *g = (volatile uint32_t *)d->shm;
	volatile uint32_t *c = fcemu_cluster_bar0(d->cluster, d->node);
	uint32_t off, cv, gv, *s;

	for (off = FC_ROUTER_BASE; off < FC_CHAN_BASE; off += 4) {
		cv = __atomic_load_n(&c[off / 4], __ATOMIC_ACQUIRE);
		gv = g[off / 4];
		if (!fc_hw_host_writable(off)) {
			if (gv != cv)
				g[off / 4] = cv;
			continue;
		}
		s = &d->shadow[(off - FC_ROUTER_BASE) / 4];
		if (gv != *s) {
			__atomic_store_n(&c[off / 4], gv, __ATOMIC_RELEASE);
			*s = gv;
		} else if (cv != *s) {
			g[off / 4] = cv;
			*s = cv;
		}
	}
}

static void join_cluster(struct emud *d, struct fcemu_config *cfg)
{
	struct fc_topology t;
	int ret;

	ret = fcemu_cluster_attach(&d->cluster, d->cluster_name);
	if (ret == -ENOENT && d->topology) {
		if (fc_topo_parse(d->topology, &t))
			die("bad topology '%s'", d->topology);
		ret = fcemu_cluster_create(&d->cluster, d->cluster_name, &t,
					   NULL);
		if (ret == -EEXIST) /* another daemon was quicker */
			ret = fcemu_cluster_attach(&d->cluster,
						   d->cluster_name);
	}
	if (ret == -ENOENT)
		die("cluster %s: no such cluster (give --topology to create it)",
		    d->cluster_name);
	if (ret)
		die("cluster %s: %s", d->cluster_name, strerror(-ret));
	if (d->node >= fcemu_cluster_topology(d->cluster)->nodes)
		die("cluster %s has no node %u", d->cluster_name, d->node);
	ret = fcemu_cluster_claim(d->cluster, d->node);
	if (ret)
		die("cluster %s node %u: %s", d->cluster_name, d->node,
		    ret == -EBUSY ? "taken by a live process" : strerror(-ret));
	ret = bell_start(&d->bell, d->cluster, d->node);
	if (ret)
		die("cluster %s: bell: %s", d->cluster_name, strerror(-ret));
	cfg->cluster = d->cluster;
	cfg->node_id = d->node;
}

/* Release our node; the last to leave removes the cluster. */
static void leave_cluster(struct emud *d)
{
	const struct fc_topology *t = fcemu_cluster_topology(d->cluster);
	unsigned int n;

	bell_stop(&d->bell);
	fcemu_cluster_release(d->cluster, d->node);
	for (n = 0; n < t->nodes; n++) {
		enum fcemu_node_state s =
			fcemu_cluster_node_state(d->cluster, n);

		if (s == FCEMU_NODE_ALIVE)
			break;
	}
	if (n == t->nodes)
		fcemu_cluster_unlink(d->cluster_name);
	fcemu_cluster_detach(d->cluster);
	d->cluster = NULL;
}

static void accept_guest(struct emud *d, int ep)
{
	int ret = ivshmem_server_accept(&d->srv);

	if (ret == -EBUSY) {
		fprintf(stderr, "%s: a second guest was turned away\n", prog);
		return;
	}
	if (ret) {
		fprintf(stderr, "%s: guest setup: %s\n", prog, strerror(-ret));
		return;
	}
	if (add_fd(ep, d->srv.client_fd, TAG_CLIENT))
		die("epoll: %s", strerror(errno));
	if (d->verbose)
		fprintf(stderr, "%s: guest connected\n", prog);
}

static void run(struct emud *d, int sfd)
{
	struct epoll_event ev[MAX_EVENTS];
	unsigned int idle = 0, v;
	uint64_t moved = 0;
	int ep, n, i;

	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0 || add_fd(ep, sfd, TAG_SIGNAL))
		die("epoll: %s", strerror(errno));
	if (d->have_srv) {
		if (add_fd(ep, d->srv.listen_fd, TAG_LISTEN))
			die("epoll: %s", strerror(errno));
		for (v = 0; v < d->srv.vectors; v++)
			if (add_fd(ep, d->srv.self_efd[v], v))
				die("epoll: %s", strerror(errno));
	}
	if (d->cluster && add_fd(ep, d->bell.fd, TAG_BELL))
		die("epoll: %s", strerror(errno));

	for (;;) {
		bool rung = false;

		n = epoll_wait(ep, ev, MAX_EVENTS,
			       pio_watch(d, wait_ms(d, moved, idle)));
		if (n < 0) {
			if (errno != EINTR)
				die("epoll_wait: %s", strerror(errno));
			n = 0;
		}
		for (i = 0; i < n; i++) {
			uint64_t tag = ev[i].data.u64;

			if (tag == TAG_SIGNAL) {
				close(ep);
				return;
			} else if (tag == TAG_BELL) {
				bell_drain(&d->bell);
			} else if (tag == TAG_LISTEN) {
				accept_guest(d, ep);
			} else if (tag == TAG_CLIENT) {
				/* The protocol is one-way: input means hangup. */
				epoll_ctl(ep, EPOLL_CTL_DEL, d->srv.client_fd,
					  NULL);
				ivshmem_server_drop_client(&d->srv);
				if (d->verbose)
					fprintf(stderr, "%s: guest gone\n",
						prog);
			} else {
				ivshmem_server_drain(&d->srv,
						     (unsigned int)tag);
				rung = true;
			}
		}
		if (d->cluster)
			sync_shared(d);
		/*
		 * As the hardware, we act on register writes once rung (a
		 * driver that forgets to ring would hang); we also wake for
		 * the fabric, which must not stand in for the doorbell.
		 */
		/* This round takes the window up to here at least. */
		d->pio_seen = __atomic_load_n(
			&fcemu_bar0(d->emu)[FC_PIO_TAIL / 4], __ATOMIC_RELAXED);
		if (rung || !d->have_srv)
			fcemu_notice(d->emu);
		moved = fcemu_progress(d->emu, STEP_BYTES);
		log_board_reset(d);
		if (d->cluster)
			sync_shared(d);
		if (moved || n > 0)
			idle = 0;
		else if (idle < PLAIN_SPIN_ROUNDS + PLAIN_FAST_ROUNDS)
			idle++;
	}
}

/* What the command line asks for, beyond the board's own settings. */
struct emud_args {
	unsigned int vectors;
	uint64_t ram_create;
};

static void parse_args(int argc, char **argv, struct emud *d,
		       struct fcemu_config *cfg, struct emud_args *a)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "shm", required_argument, NULL, 'S' },
		{ "guest-ram", required_argument, NULL, 'r' },
		{ "guest-ram-size", required_argument, NULL, 'R' },
		{ "mem", required_argument, NULL, 'm' },
		{ "node", required_argument, NULL, 'n' },
		{ "cluster", required_argument, NULL, 'c' },
		{ "topology", required_argument, NULL, 't' },
		{ "engines", required_argument, NULL, 'e' },
		{ "vectors", required_argument, NULL, 'V' },
		{ "bad-id", no_argument, NULL, 'B' },
		{ "peer", required_argument, NULL, 'p' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int c;

	a->vectors = FC_IRQ_VECTORS;
	a->ram_create = 0;
	fcemu_config_default(cfg);
	cfg->board_mem_size = 1ull << 30;
	while ((c = getopt_long(argc, argv, "s:S:r:R:m:n:c:t:e:V:p:vh", opts,
				NULL)) != -1) {
		switch (c) {
		case 's':
			d->socket_path = optarg;
			break;
		case 'S':
			d->shm_path = optarg;
			break;
		case 'r':
			d->ram_path = optarg;
			break;
		case 'R':
			a->ram_create = parse_size(optarg, "guest RAM size");
			break;
		case 'm':
			cfg->board_mem_size = parse_size(optarg, "memory size");
			break;
		case 'n':
			cfg->node_id =
				parse_uint(optarg, FC_MAX_NODES - 1, "node");
			break;
		case 'c':
			d->cluster_name = optarg;
			break;
		case 't':
			d->topology = optarg;
			break;
		case 'e':
			cfg->dma_engines = parse_uint(
				optarg, FC_DMA_MAX_ENGINES, "engines");
			break;
		case 'V':
			a->vectors = parse_uint(optarg, IVSHMEM_MAX_VECTORS,
						"vectors");
			break;
		case 'B':
			cfg->bad_id = 1;
			break;
		case 'p':
			if (d->npeers == MAX_PEERS)
				die("at most %d --peer", MAX_PEERS);
			d->peer_path[d->npeers++] = optarg;
			break;
		case 'v':
			d->verbose = true;
			break;
		case 'h':
			usage(stdout, 0);
			break;
		default:
			usage(stderr, 2);
		}
	}
	if (optind != argc || (!d->socket_path && !d->shm_path))
		usage(stderr, 2);
	if (!a->vectors)
		die("at least one vector is needed");
	if (d->topology && !d->cluster_name)
		die("--topology goes with --cluster");
	d->node = cfg->node_id;
}

/* The board behind the shared memory, in its cluster if it has one. */
static void start_board(struct emud *d, struct fcemu_config *cfg,
			const struct emud_args *a)
{
	int ret;

	if (d->ram_path)
		d->ram = map_file(d->ram_path, &d->ram_size, a->ram_create,
				  NULL);
	setup_shm(d);
	if (d->cluster_name)
		join_cluster(d, cfg);
	else
		cfg->bar0 = d->shm;
	ret = fcemu_create(&d->emu, cfg, &host_ops, d);
	if (ret)
		die("board: %s", strerror(-ret));
	d->reset_seen = fcemu_bar0(d->emu)[FC_REG_BOARD_RESET_ACK / 4];
	back_aperture(d);
	if (d->cluster) {
		/* Our blocks into the guest's memory, the shared ones mirrored. */
		ret = fcemu_cluster_map_regs(d->cluster, d->node, d->shm_fd,
					     FC_IVSHMEM_REGS_OFF);
		if (ret)
			die("register file: %s", strerror(-ret));
		memcpy(d->shadow, (uint8_t *)d->shm + FC_ROUTER_BASE,
		       sizeof(d->shadow));
	}
}

/* With -v: what the board cost and what it did to the guest. */
static void say_stopping(const struct emud *d)
{
	struct rusage ru;

	if (!d->verbose)
		return;
	/* How much CPU the board cost: near zero while idle. */
	getrusage(RUSAGE_SELF, &ru);
	fprintf(stderr, "%s: stopping; cpu %ld.%03lds user %ld.%03lds system\n",
		prog, (long)ru.ru_utime.tv_sec,
		(long)ru.ru_utime.tv_usec / 1000, (long)ru.ru_stime.tv_sec,
		(long)ru.ru_stime.tv_usec / 1000);
	fprintf(stderr,
		"%s: at the end: guest RAM reached %llu times, %llu interrupts\n",
		prog, (unsigned long long)d->ram_reached,
		(unsigned long long)d->irqs_sent);
}

static void stop_board(struct emud *d)
{
	if (d->have_srv)
		ivshmem_server_fini(&d->srv);
	fcemu_destroy(d->emu);
	if (d->cluster)
		leave_cluster(d);
	munmap(d->shm, SHM_SIZE);
	if (d->ram)
		munmap(d->ram, d->ram_size);
	for (unsigned int i = 0; i < d->npeers; i++)
		if (d->peer_shm[i])
			munmap(d->peer_shm[i], SHM_SIZE);
	close(d->shm_fd);
}

int main(int argc, char **argv)
{
	struct emud d = { .shm_fd = -1 };
	struct fcemu_config cfg;
	struct emud_args a;
	sigset_t mask;
	int sfd, ret;

	parse_args(argc, argv, &d, &cfg, &a);
	check_peers(&d);
	/*
	 * Before the bell's thread starts (join_cluster): a SIGTERM must
	 * reach the loop's signalfd, not end the process in that thread.
	 */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);

	start_board(&d, &cfg, &a);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0)
		die("signalfd: %s", strerror(errno));

	if (d.socket_path) {
		ret = ivshmem_server_init(&d.srv, d.socket_path, d.shm_fd,
					  a.vectors);
		if (ret)
			die("%s: %s", d.socket_path, strerror(-ret));
		d.have_srv = true;
	}
	if (d.verbose)
		fprintf(stderr,
			"%s: board node %u%s%s, %llu MiB, %s%s, ready\n", prog,
			cfg.node_id, d.cluster ? " of cluster " : "",
			d.cluster ? d.cluster_name : "",
			(unsigned long long)(cfg.board_mem_size >> 20),
			d.have_srv ? "ivshmem server at " : "polling ",
			d.have_srv ? d.socket_path : d.shm_path);

	run(&d, sfd);
	say_stopping(&d);
	stop_board(&d);
	close(sfd);
	return 0;
}
