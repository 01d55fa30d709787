// SPDX-License-Identifier: MIT
/*
 * test_emu_trust: the emulated cluster's shared object as a trust boundary
 * (docs/security.md). A planted object (another owner, a mode wider than
 * 0600, a symbolic link) is refused; another user's object under the
 * name fc_open wants gives -EPERM and a line on stderr naming the object
 * and its owner; a garbage object of our own (too short, no magic) gives
 * -EBADMSG, said to be no cluster object; a job's cluster is named after
 * the job and the user; every header field an attacher or a
 * broken peer could write wrong (node count, topology, ports, offsets,
 * the wiring, fault rates, layout) is checked at attach and a wrong one
 * refused with -EPROTO; a header rewritten after attach steers nothing; a
 * damaged link slot is dropped and counted instead of stopping the link;
 * the ejection ring's tail moved by another process (ahead, far ahead,
 * behind) or a damaged ejection slot delivers no old slot, is counted and
 * repaired; an express slot's port tag has a field of its own; the
 * express hop's kept route follows a routing entry rewritten or a
 * router switched off on the way;
 * a dead router's move record naming rings it cannot own is ignored by
 * the repair; under Yama's ptrace scope 1, a board that offers bursts
 * lets its launcher's descendants read its memory, not any process of
 * the user; a channel's TAIL register rewritten to jump past the ring is
 * ignored by the library (no garbage, no endless drain), and the channel
 * works on once the board writes it again; a forged CTS (another node's
 * address, board memory) ends the large send with -EPROTO, and no byte
 * is written there; a peer stopped (SIGSTOP) past the bound is declared
 * down, and learns it when it resumes. No board needed.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include <fpgacomm/hw.h>
#include "fabric.h" /* emu/: the cluster object under test */
#include "cluster_internal.h"

static unsigned int seq;
static char live[8][FCEMU_CLUSTER_NAME_MAX];
static unsigned int n_live;

static const char *new_name(void)
{
	assert_true(n_live < 8);
	snprintf(live[n_live], FCEMU_CLUSTER_NAME_MAX, "tet-%d-%u",
		 (int)getpid(), seq++);
	return live[n_live++];
}

static int unlink_clusters(void **state)
{
	(void)state;
	while (n_live)
		fcemu_cluster_unlink(live[--n_live]);
	return 0;
}

static struct fcemu_cluster *make(const char *name, const char *topo)
{
	struct fc_topology t;
	struct fcemu_cluster *c;

	assert_int_equal(fc_topo_parse(topo, &t), 0);
	assert_int_equal(fcemu_cluster_create(&c, name, &t, NULL), 0);
	return c;
}

/* The object's fd, as another process of the user (or an attacker) has it. */
static int object_fd(const char *name)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/fpgacomm-%s", name);
	fd = shm_open(path, O_RDWR, 0);
	assert_true(fd >= 0);
	return fd;
}

static void attach_ok(const char *name)
{
	struct fcemu_cluster *c2;

	assert_int_equal(fcemu_cluster_attach(&c2, name), 0);
	fcemu_cluster_detach(c2);
}

/* A mode wider than 0600 (or narrower): not attached to. */
static void test_planted_mode(void **state)
{
	const char *name = new_name();
	struct fcemu_cluster *c = make(name, "ring:4"), *c2;
	int fd = object_fd(name);

	(void)state;
	assert_int_equal(fchmod(fd, 0666), 0);
	assert_int_equal(fcemu_cluster_attach(&c2, name), -EACCES);
	assert_int_equal(fchmod(fd, 0640), 0);
	assert_int_equal(fcemu_cluster_attach(&c2, name), -EACCES);
	assert_int_equal(fchmod(fd, 0600), 0);
	attach_ok(name);
	close(fd);
	fcemu_cluster_detach(c);
}

/* An object of another user: not attached to (needs root to plant one). */
static void test_planted_owner(void **state)
{
	const char *name = new_name();
	struct fcemu_cluster *c = make(name, "ring:4"), *c2;
	int fd = object_fd(name);

	(void)state;
	if (geteuid() != 0) {
		close(fd);
		fcemu_cluster_detach(c);
		skip_because("not root: cannot give the object another owner");
		return;
	}
	assert_int_equal(fchown(fd, 65534, 65534), 0);
	assert_int_equal(fcemu_cluster_attach(&c2, name), -EPERM);
	assert_int_equal(fchown(fd, 0, 0), 0);
	attach_ok(name);
	close(fd);
	fcemu_cluster_detach(c);
}

/* A symbolic link under the cluster's name: never followed. */
static void test_planted_symlink(void **state)
{
	const char *name = new_name(), *link = new_name();
	struct fcemu_cluster *c = make(name, "ring:4"), *c2;
	char from[96], to[96];

	(void)state;
	snprintf(to, sizeof(to), "/dev/shm/fpgacomm-%s", name);
	snprintf(from, sizeof(from), "/dev/shm/fpgacomm-%s", link);
	assert_int_equal(symlink(to, from), 0);
	assert_int_equal(fcemu_cluster_attach(&c2, link), -EPERM);
	assert_int_equal(fcemu_cluster_create(&c2, link,
					      fcemu_cluster_topology(c), NULL),
			 -EEXIST);
	fcemu_cluster_detach(c);
}

/* ---- A name taken before we came: refused, and said why ---- */

/*
 * fc_open of cluster @name with fd 2 caught: its result, and what it said
 * on stderr into @said.
 */
static int open_said(const char *name, char *said, size_t len)
{
	char spec[64];
	struct fc_dev *d = NULL;
	int saved, tmp, ret;
	ssize_t n;

	snprintf(spec, sizeof(spec), "emu:%s/0", name);
	tmp = memfd_create("stderr", MFD_CLOEXEC);
	assert_true(tmp >= 0);
	fflush(stderr);
	saved = dup(2);
	assert_true(saved >= 0);
	assert_int_equal(dup2(tmp, 2), 2);
	ret = fc_open(&d, spec);
	fflush(stderr);
	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
	n = pread(tmp, said, len - 1, 0);
	said[n > 0 ? n : 0] = 0;
	close(tmp);
	if (!ret)
		fc_close(d);
	return ret;
}

/* An empty object of @size bytes under @name, as a squatter makes one. */
static int plant(const char *name, off_t size)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/fpgacomm-%s", name);
	fd = shm_open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(fchmod(fd, 0600), 0);
	assert_int_equal(ftruncate(fd, size), 0);
	return fd;
}

/*
 * Another user's empty 0600 object under the name: -EPERM, and the user
 * is told which object and whose (needs root to plant one).
 */
static void test_squatted_name(void **state)
{
	const char *name = new_name();
	char said[1024], want[96];
	struct passwd *pw;
	int fd;

	(void)state;
	if (geteuid() != 0) {
		skip_because("not root: cannot give the object another owner");
		return;
	}
	fd = plant(name, 0);
	assert_int_equal(fchown(fd, 65534, 65534), 0);
	assert_int_equal(open_said(name, said, sizeof(said)), -EPERM);
	snprintf(want, sizeof(want), "/dev/shm/fpgacomm-%s", name);
	assert_non_null(strstr(said, want));
	assert_non_null(strstr(said, "uid 65534"));
	pw = getpwuid(65534);
	if (pw) {
		snprintf(want, sizeof(want), "(%s)", pw->pw_name);
		assert_non_null(strstr(said, want));
	}
	close(fd);
}

/*
 * A garbage object of our own (too short for a header; long enough but
 * never finished: no magic): -EBADMSG, said to be no cluster object, not
 * a version mismatch.
 */
static void test_garbage_object(void **state)
{
	const char *shorty = new_name(), *nomagic = new_name();
	char said[1024];
	int fd;

	(void)state;
	fd = plant(shorty, 16);
	assert_int_equal(open_said(shorty, said, sizeof(said)), -EBADMSG);
	assert_non_null(strstr(said, "not a cluster object"));
	assert_non_null(strstr(said, "too short"));
	assert_null(strstr(fc_strerror(-EBADMSG), "version"));
	close(fd);
	fd = plant(nomagic, 1 << 20);
	assert_int_equal(open_said(nomagic, said, sizeof(said)), -EBADMSG);
	assert_non_null(strstr(said, "not a cluster object"));
	assert_non_null(strstr(said, "no cluster magic"));
	close(fd);
}

/*
 * The cluster of an Open MPI job's ranks is named after the job and the
 * user (ompi-JOB-UID), so that another user's object cannot be in its way
 * by accident.
 */
static void test_job_name_per_user(void **state)
{
	const char *saved = getenv("FPGACOMM_DEVICE");
	char job[32], path[96], *keep = saved ? strdup(saved) : NULL;
	struct fc_dev *d = NULL;
	struct stat st;

	(void)state;
	snprintf(job, sizeof(job), "tet%d", (int)getpid());
	unsetenv("FPGACOMM_DEVICE");
	setenv("OMPI_COMM_WORLD_RANK", "0", 1);
	setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
	setenv("OMPI_MCA_ess_base_jobid", job, 1);
	if (!access("/dev/fpgacomm0", F_OK)) {
		skip_because("a kernel board is fc_open(NULL)'s first choice");
	} else {
		assert_int_equal(fc_open(&d, NULL), 0);
		snprintf(path, sizeof(path), "/dev/shm/fpgacomm-ompi-%s-%u",
			 job, (unsigned int)geteuid());
		assert_int_equal(stat(path, &st), 0);
		assert_int_equal(st.st_uid, geteuid());
		fc_close(d);
	}
	unsetenv("OMPI_COMM_WORLD_RANK");
	unsetenv("OMPI_COMM_WORLD_SIZE");
	unsetenv("OMPI_MCA_ess_base_jobid");
	if (keep)
		setenv("FPGACOMM_DEVICE", keep, 1);
	free(keep);
}

/* Whatever the umask, the object is made 0600 and can be attached to. */
static void test_create_mode(void **state)
{
	const char *name = new_name();
	mode_t old = umask(0277);
	struct fcemu_cluster *c = make(name, "torus:2x2");
	struct stat st;
	int fd;

	(void)state;
	umask(old);
	fd = object_fd(name);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	close(fd);
	attach_ok(name);
	fcemu_cluster_detach(c);
}

/* Each wrong header field, then the right one back: -EPROTO, then 0. */
static void test_bad_header(void **state)
{
	const char *name = new_name();
	struct fcemu_cluster *c = make(name, "torus:2x3"), *c2;
	struct cl_header *h = c->hdr;
	static struct cl_header save;
	unsigned int i;

	(void)state;
	memcpy(&save, h, sizeof(save));
	for (i = 0;; i++) {
		switch (i) {
		case 0:
			h->topo.nodes = 65;
			break;
		case 1:
			h->topo.nodes = 0;
			break;
		case 2:
			h->topo.nodes = 64;
			h->topo.nx = 8;
			h->topo.ny = 8;
			break;
		case 3:
			h->topo.kind = 99;
			break;
		case 4:
			h->topo.nx = 3;
			h->topo.ny = 2;
			break;
		case 5:
			h->ports = FC_MAX_PORTS + 1;
			break;
		case 6:
			h->ports = 2;
			break;
		case 7:
			h->node[1].bar0_off += 4096;
			break;
		case 8:
			h->node[5].rings_off = 1ull << 40;
			break;
		case 9:
			h->node[0].peer[1] = 200;
			break;
		case 10:
			h->node[3].peer[2] = 63;
			break;
		case 11:
			h->node[2].peer_port[4] = 7;
			break;
		case 12:
			h->node[4].peer[FC_MAX_PORTS] = 1;
			break;
		case 13:
			h->faults.drop_ppm = 2000000;
			break;
		case 14:
			h->faults.drop_ppm = 600000;
			h->faults.corrupt_ppm = 400000;
			break;
		case 15:
			h->layout = CL_LAYOUT - 1;
			break;
		case 16:
			h->ring_slots = 512;
			break;
		case 17:
			h->size += 4096;
			break;
		default:
			goto done;
		}
		if (fcemu_cluster_attach(&c2, name) != -EPROTO)
			fail_msg("header change %u attached", i);
		memcpy(h, &save, sizeof(save));
		attach_ok(name);
	}
done:
	fcemu_cluster_detach(c);
}

/* The payload came through whole (the header's VC bit may change). */
static void assert_payload(const struct fc_hw_pkt *got,
			   const struct fc_hw_pkt *want)
{
	assert_non_null(got);
	assert_memory_equal(got->payload, want->payload, FC_PKT_PAYLOAD);
}

static struct fc_hw_pkt pkt(unsigned int dst, unsigned int src, uint8_t tag)
{
	struct fc_hw_pkt p;

	memset(&p, tag, sizeof(p));
	p.hdr = htole32(FC_PKT_HDR(dst, src, 0, FC_PKT_PAYLOAD, FC_PKT_T_DATA) |
			FC_PKT_EOM);
	return p;
}

/* Route until @want packets wait at @node's ejection, or give up. */
static unsigned int pump(struct fcemu_cluster *c, unsigned int node,
			 unsigned int want)
{
	unsigned int n = 0, round;

	for (round = 0; round < 1000; round++) {
		fcemu_cluster_progress(c, 4096);
		for (n = 0; fcemu_cluster_eject_peek(c, node, n); n++)
			;
		if (n >= want)
			break;
	}
	return n;
}

/*
 * The header's wiring rewritten after attach (a peer process gone wrong):
 * this mapping keeps routing by the wiring it checked.
 */
static void test_header_rewritten(void **state)
{
	const char *name = new_name();
	struct fcemu_cluster *c = make(name, "ring:4"), *c2;
	struct fc_hw_pkt p = pkt(2, 0, 0x5a);
	unsigned int n, port;

	(void)state;
	assert_int_equal(fcemu_cluster_attach(&c2, name), 0);
	for (n = 0; n < 4; n++) {
		for (port = 0; port <= FC_MAX_PORTS; port++) {
			c->hdr->node[n].peer[port] = 0xfe;
			c->hdr->node[n].peer_port[port] = 0xfe;
		}
		c->hdr->node[n].bar0_off = 1ull << 50;
		c->hdr->node[n].rings_off = 1ull << 50;
	}
	c->hdr->topo.nodes = 64;
	assert_int_equal(fcemu_cluster_topology(c2)->nodes, 4);
	assert_int_equal(fcemu_cluster_inject(c2, 0, &p), 1);
	fcemu_cluster_inject_commit(c2, 0);
	assert_int_equal(pump(c2, 2, 1), 1);
	assert_payload(fcemu_cluster_eject_peek(c2, 2, 0), &p);
	fcemu_cluster_eject_done(c2, 2, 1);
	fcemu_cluster_detach(c2);
	fcemu_cluster_detach(c);
}

/*
 * A slot of a link ring damaged in memory (not on the wire: taking it
 * again gives the same): dropped and counted, and the packets behind it
 * go on. Before, the link stopped there for good.
 */
static void test_damaged_slot(void **state)
{
	const char *name = new_name();
	struct fcemu_cluster *c = make(name, "full:2");
	volatile uint32_t *r1 = fcemu_cluster_bar0(c, 1);
	struct cl_ring *in =
		cl_ring(c, 1, CL_RING_LINK(cl_peer_port(c, 0, 1), 0));
	uint32_t crc0 = r1[FC_PORT_REG(1, FC_PORT_CRC_ERRORS) / 4];
	uint32_t drops0 = r1[FC_ROUTER_DROPS / 4];
	struct fc_hw_pkt p[3];
	unsigned int k;

	(void)state;
	/* Node 1's router off: the packets stop in its link input. */
	r1[FC_ROUTER_CTRL / 4] = 0;
	for (k = 0; k < 3; k++) {
		p[k] = pkt(1, 0, (uint8_t)(0x10 + k));
		assert_int_equal(fcemu_cluster_inject(c, 0, &p[k]), 1);
	}
	fcemu_cluster_inject_commit(c, 0);
	for (k = 0; k < 100 && in->tail - in->head < 3; k++)
		fcemu_cluster_progress(c, 4096);
	assert_int_equal(in->tail - in->head, 3);
	in->slot[in->head % CL_RING_SLOTS].pkt.payload[7] ^= 0x40;

	r1[FC_ROUTER_CTRL / 4] = FC_ROUTER_CTRL_ENABLE;
	__atomic_fetch_or(&c->hdr->pending, 2ull, __ATOMIC_SEQ_CST);
	assert_int_equal(pump(c, 1, 2), 2);
	assert_payload(fcemu_cluster_eject_peek(c, 1, 0), &p[1]);
	assert_payload(fcemu_cluster_eject_peek(c, 1, 1), &p[2]);
	assert_int_equal(in->tail, in->head);
	assert_int_equal(r1[FC_PORT_REG(1, FC_PORT_CRC_ERRORS) / 4], crc0 + 1);
	assert_int_equal(r1[FC_ROUTER_DROPS / 4], drops0 + 1);
	fcemu_cluster_detach(c);
}

/* The packets waiting at @node's ejection, as the board's own ejection
 * finds them (fabric_io.c): a run at a time from the head. */
static unsigned int eject_waiting(struct fcemu_cluster *c, unsigned int node,
				  const struct fc_hw_pkt **run,
				  unsigned int max)
{
	return fcemu_cluster_eject_peek_run(c, node, 0, run, max);
}

/*
 * The ejection ring's TAIL, in shared memory, moved by something that is
 * not its router: less than a ring ahead (slots never written behind it),
 * then far past the ring, then behind the head. The board takes none of
 * those slots (no stale packet delivered again, nothing read past the
 * ring), counts what it dropped in EJECT_DROPS, and the next real
 * packets arrive. Before, each forged TAIL delivered old slots again.
 */
static void test_eject_tail_forged(void **state)
{
	const char *name = new_name();
	struct fcemu_cluster *c = make(name, "full:2");
	volatile uint32_t *r1 = fcemu_cluster_bar0(c, 1);
	struct cl_ring *ej = cl_ring(c, 1, CL_RING_EJECT);
	const struct fc_hw_pkt *run[64];
	static const uint32_t jump[] = { 10, 100000, (uint32_t)-5 };
	uint32_t drops0 = r1[FC_ROUTER_EJECT_DROPS / 4], drops;
	struct fc_hw_pkt p[2];
	unsigned int k, i, round;

	(void)state;
	for (round = 0; round < 3; round++) {
		for (k = 0; k < 2; k++) {
			p[k] = pkt(1, 0, (uint8_t)(0x20 + 2 * round + k));
			assert_int_equal(fcemu_cluster_inject(c, 0, &p[k]), 1);
		}
		fcemu_cluster_inject_commit(c, 0);
		assert_int_equal(pump(c, 1, 2), 2);
		assert_int_equal(eject_waiting(c, 1, run, 64), 2);
		assert_payload(run[0], &p[0]);
		assert_payload(run[1], &p[1]);
		fcemu_cluster_eject_done(c, 1, 2);

		/* Nothing waits; TAIL moved anyway. */
		drops = r1[FC_ROUTER_EJECT_DROPS / 4];
		__atomic_store_n(&ej->tail, ej->tail + jump[round],
				 __ATOMIC_RELEASE);
		for (i = 0; i < 4; i++) {
			k = eject_waiting(c, 1, run, 64);
			if (k)
				fail_msg(
					"round %u: %u slots behind a forged TAIL taken",
					round, k);
		}
		assert_true(r1[FC_ROUTER_EJECT_DROPS / 4] > drops);

		/* The ring works on: a real packet after the damage. */
		p[0] = pkt(1, 0, (uint8_t)(0x60 + round));
		assert_int_equal(fcemu_cluster_inject(c, 0, &p[0]), 1);
		fcemu_cluster_inject_commit(c, 0);
		assert_int_equal(pump(c, 1, 1), 1);
		assert_int_equal(eject_waiting(c, 1, run, 64), 1);
		assert_payload(run[0], &p[0]);
		fcemu_cluster_eject_done(c, 1, 1);
	}
	print_message("%u ejection slots dropped\n",
		      r1[FC_ROUTER_EJECT_DROPS / 4] - drops0);
	fcemu_cluster_detach(c);
}

/*
 * A slot of the ejection ring damaged in memory (its sequence number, as
 * a stray write would leave it): dropped and counted, the packet behind
 * it taken.
 */
static void test_eject_slot_damaged(void **state)
{
	const char *name = new_name();
	struct fcemu_cluster *c = make(name, "full:2");
	volatile uint32_t *r1 = fcemu_cluster_bar0(c, 1);
	struct cl_ring *ej = cl_ring(c, 1, CL_RING_EJECT);
	uint32_t drops0 = r1[FC_ROUTER_EJECT_DROPS / 4];
	const struct fc_hw_pkt *run[8];
	struct fc_hw_pkt p[2];
	unsigned int k;

	(void)state;
	for (k = 0; k < 2; k++) {
		p[k] = pkt(1, 0, (uint8_t)(0x30 + k));
		assert_int_equal(fcemu_cluster_inject(c, 0, &p[k]), 1);
	}
	fcemu_cluster_inject_commit(c, 0);
	assert_int_equal(pump(c, 1, 2), 2);
	ej->slot[ej->head % CL_RING_SLOTS].seq += CL_RING_SLOTS;
	assert_int_equal(eject_waiting(c, 1, run, 8), 1);
	assert_payload(run[0], &p[1]);
	assert_int_equal(r1[FC_ROUTER_EJECT_DROPS / 4], drops0 + 1);
	fcemu_cluster_eject_done(c, 1, 1);
	assert_int_equal(ej->head, ej->tail);
	fcemu_cluster_detach(c);
}

/* The express hop turned off by the environment: @c let go, the test
 * skipped. */
static bool express_off(struct fcemu_cluster *c)
{
	const char *e = getenv("FPGACOMM_EMU_EXPRESS");

	if (!e || strcmp(e, "0"))
		return false;
	fcemu_cluster_detach(c);
	skip_because("the express hop is off (FPGACOMM_EMU_EXPRESS=0)");
	return true;
}

/*
 * A packet that took the express hop: its ejection slot names the port
 * it came by (the slot's tag, in the place a link slot has its CRC), and
 * that link's RX_PKTS counts it as the board takes it.
 */
static void test_express_tag(void **state)
{
	const char *name = new_name();
	struct fcemu_cluster *c = make(name, "full:2");
	struct cl_ring *ej = cl_ring(c, 1, CL_RING_EJECT);
	struct fc_hw_pkt p = pkt(1, 0, 0x44);
	const struct fc_hw_pkt *one = &p;
	unsigned int port = cl_peer_port(c, 0, 1);
	volatile uint32_t *rx = &fcemu_cluster_bar0(
		c, 1)[FC_PORT_REG(port, FC_PORT_RX_PKTS) / 4];
	const struct cl_slot *s;
	uint32_t rx0;

	(void)state;
	if (express_off(c))
		return;
	assert_int_equal(fcemu_cluster_claim(c, 0), 0);
	assert_true(fcemu_cluster_express(c, 0, &one, 1));
	s = &ej->slot[ej->head % CL_RING_SLOTS];
	assert_int_equal(s->tag, port + 1);
	assert_int_equal(s->seq, ej->head);
	rx0 = *rx;
	assert_payload(fcemu_cluster_eject_peek(c, 1, 0), &p);
	fcemu_cluster_eject_done(c, 1, 1);
	assert_int_equal(*rx, rx0 + 1);
	fcemu_cluster_release(c, 0);
	fcemu_cluster_detach(c);
}

/* Board @n's link port that leads to board @to (0: none). */
static unsigned int port_to(struct fcemu_cluster *c, unsigned int n,
			    unsigned int to)
{
	unsigned int p;

	for (p = 1; p <= c->ports; p++)
		if (cl_peer(c, n, p) == to)
			return p;
	return 0;
}

/* Send @p from board 0 to 2 by the express hop, take it at 2: the port
 * it arrived by there, from its slot's tag. */
static unsigned int express_0_to_2(struct fcemu_cluster *c,
				   const struct fc_hw_pkt *p)
{
	struct cl_ring *ej = cl_ring(c, 2, CL_RING_EJECT);
	const struct fc_hw_pkt *one = p;
	unsigned int tag;

	assert_true(fcemu_cluster_express(c, 0, &one, 1));
	tag = ej->slot[ej->head % CL_RING_SLOTS].tag;
	assert_payload(fcemu_cluster_eject_peek(c, 2, 0), p);
	fcemu_cluster_eject_done(c, 2, 1);
	return tag - 1;
}

/*
 * The express hop keeps the route it walked last to each board, and
 * checks it at every use: a routing entry rewritten on the way sends the
 * next packet the new way (0 -> 1 -> 2 instead of 0 -> 2, counted on
 * those links), a router on it switched off stops the hop, and back on
 * the hop goes again.
 */
static void test_express_route_changes(void **state)
{
	const char *name = new_name();
	struct fcemu_cluster *c = make(name, "full:3");
	volatile uint32_t *r0 = fcemu_cluster_bar0(c, 0);
	volatile uint32_t *r1 = fcemu_cluster_bar0(c, 1);
	unsigned int p02 = port_to(c, 0, 2), p01 = port_to(c, 0, 1);
	unsigned int p12 = port_to(c, 1, 2);
	struct fc_hw_pkt p = pkt(2, 0, 0x55);
	const struct fc_hw_pkt *one = &p;
	uint32_t tx01, tx12, direct;

	(void)state;
	if (express_off(c))
		return;
	assert_true(p02 && p01 && p12);
	assert_int_equal(fcemu_cluster_claim(c, 0), 0);
	/* the direct link, twice (the second by the route kept) */
	assert_int_equal(express_0_to_2(c, &p), cl_peer_port(c, 0, p02));
	assert_int_equal(express_0_to_2(c, &p), cl_peer_port(c, 0, p02));
	/* board 0 now routes 2 by way of 1 */
	direct = r0[FC_ROUTE_TABLE(2) / 4];
	tx01 = r0[FC_PORT_REG(p01, FC_PORT_TX_PKTS) / 4];
	tx12 = r1[FC_PORT_REG(p12, FC_PORT_TX_PKTS) / 4];
	r0[FC_ROUTE_TABLE(2) / 4] = FC_ROUTE_VALID | p01;
	assert_int_equal(express_0_to_2(c, &p), cl_peer_port(c, 1, p12));
	assert_int_equal(r0[FC_PORT_REG(p01, FC_PORT_TX_PKTS) / 4], tx01 + 1);
	assert_int_equal(r1[FC_PORT_REG(p12, FC_PORT_TX_PKTS) / 4], tx12 + 1);
	/* board 1's router off: no hop through it */
	r1[FC_ROUTER_CTRL / 4] &= ~FC_ROUTER_CTRL_ENABLE;
	assert_false(fcemu_cluster_express(c, 0, &one, 1));
	r1[FC_ROUTER_CTRL / 4] |= FC_ROUTER_CTRL_ENABLE;
	assert_int_equal(express_0_to_2(c, &p), cl_peer_port(c, 1, p12));
	/* and the direct way again */
	r0[FC_ROUTE_TABLE(2) / 4] = direct;
	assert_int_equal(express_0_to_2(c, &p), cl_peer_port(c, 0, p02));
	fcemu_cluster_release(c, 0);
	fcemu_cluster_detach(c);
}

/*
 * A router's process dies holding its lock with a move record that names
 * no ring of its (written by a broken peer): the repair ignores it, and
 * the board routes on.
 */
static void test_repair_bounds(void **state)
{
	const char *name = new_name();
	struct fcemu_cluster *c = make(name, "ring:3");
	struct cl_node *nd = &c->hdr->node[1];
	struct fc_hw_pkt p = pkt(2, 0, 0x77);
	unsigned int i;
	int status;
	pid_t pid;

	(void)state;
	for (i = 0; i < 4; i++) {
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			if (fcemu__cluster_lock(c, 1, true))
				_exit(2);
			nd->move_count = i == 3 ? 100000 : 5;
			nd->move_in = i == 1 ? 999 : 0;
			nd->move_head = nd->move_tail = 0;
			nd->move_ring = i == 0 ? 1ull << 50 :
					i == 2 ? 64 : /* inside the header */
					(uint64_t)((uint8_t *)cl_ring(c, 1, CL_RING_EJECT) -
						   c->base);
			_exit(0); /* the lock dies with us */
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		assert_int_equal(fcemu__cluster_lock(c, 1, true), 0);
		assert_int_equal(nd->move_count, 0);
		fcemu__cluster_unlock(c, 1);
	}
	assert_int_equal(fcemu_cluster_inject(c, 0, &p), 1);
	fcemu_cluster_inject_commit(c, 0);
	assert_int_equal(pump(c, 2, 1), 1);
	assert_payload(fcemu_cluster_eject_peek(c, 2, 0), &p);
	fcemu_cluster_detach(c);
}

/*
 * Board 1's channel TAIL, in the cluster's shared memory, made to jump
 * far past the ring: nothing is delivered for it, and the next real
 * message arrives whole. Before, the library took the jump as packets.
 */
static void test_tail_jump(void **state)
{
	enum {
		PORT = 3
	};
	const char *name = new_name();
	struct fcemu_cluster *c = make(name, "full:2");
	volatile uint32_t *tail =
		&fcemu_cluster_bar0(c, 1)[FC_CHAN_REG(PORT, FC_CHAN_TAIL) / 4];
	char dev0[64], dev1[64], msg[100], in[200];
	struct fc_dev *bd0, *bd1;
	struct fc_chan *c0, *c1;
	size_t got = 0;

	(void)state;
	snprintf(dev0, sizeof(dev0), "emu:%s/0", name);
	snprintf(dev1, sizeof(dev1), "emu:%s/1", name);
	assert_ok(fc_open(&bd0, dev0));
	assert_ok(fc_open(&bd1, dev1));
	assert_ok(fc_chan_open(bd0, 1, PORT, 0, &c0));
	assert_ok(fc_chan_open(bd1, 0, PORT, 0, &c1));
	memset(msg, 0xab, sizeof(msg));
	assert_ok(fc_chan_send(c0, msg, sizeof(msg), WAIT_MS));
	assert_ok(fc_chan_recv(c1, in, sizeof(in), &got, WAIT_MS));
	assert_int_equal(got, sizeof(msg));

	*tail += 100000; /* and the board's next event makes it look */
	fcemu_cluster_bar0(
		c, 1)[FC_REG_CHAN_EVENTS(PORT / FC_CHAN_GROUP_SIZE) / 4] += 1;
	fcemu_cluster_bar0(c, 1)[FC_REG_IRQ_COUNT(FC_IRQ_VEC_CHAN) / 4] += 1;
	assert_rc(fc_chan_recv(c1, in, sizeof(in), &got, 100), -ETIMEDOUT);

	memset(msg, 0xcd, sizeof(msg));
	assert_ok(fc_chan_send(c0, msg, sizeof(msg), WAIT_MS));
	assert_ok(fc_chan_recv(c1, in, sizeof(in), &got, WAIT_MS));
	assert_int_equal(got, sizeof(msg));
	assert_memory_equal(in, msg, sizeof(msg));
	assert_ok(fc_chan_close(c0));
	assert_ok(fc_chan_close(c1));
	fc_close(bd1);
	fc_close(bd0);
	fcemu_cluster_detach(c);
}

/* A control message from @from to channel (@to, @port), as the library's
 * rendezvous writes one (lib/proto/rndv.c): kind, pad, cookie, value. */
static void send_ctrl(struct fc_dev *from, unsigned int to, unsigned int port,
		      uint8_t kind, uint32_t cookie, uint64_t val)
{
	struct fc_mem *m;
	struct fc_xfer x;
	uint8_t *b;
	uint64_t ticket;

	assert_ok(fc_mem_alloc(from, 4096, 0, &m));
	b = m->addr;
	b[0] = kind;
	cookie = htole32(cookie);
	memcpy(b + 4, &cookie, 4);
	val = htole64(val);
	memcpy(b + 8, &val, 8);
	memset(&x, 0, sizeof(x));
	x.src = fc_host(m, 0);
	x.dst.space = FC_SPACE_FABRIC;
	x.dst.addr = FC_FABRIC_CHAN(to, port);
	x.len = 16;
	x.flags = FC_XFER_F_CTRL;
	assert_ok(fc_dma_submit(from, &x, 1, 0, &ticket));
	assert_ok(fc_dma_wait(from, ticket, WAIT_MS));
	assert_ok(fc_mem_free(from, m));
}

/*
 * A CTS for board 0's large send, forged by board 1 before its library
 * answers, naming memory the receiver cannot have meant: board 0's own
 * host memory, then board 1's board memory. The send ends with -EPROTO
 * and nothing is written there.
 */
static void test_forged_cts(void **state)
{
	enum {
		PORT = 5,
		LEN = 256 << 10,
		CTS = 2
	};
	const char *name = new_name();
	struct fcemu_cluster *c = make(name, "full:2");
	char dev0[64], dev1[64];
	struct fc_dev *bd0, *bd1;
	struct fc_chan *c0;
	struct fc_mem *victim, *big;
	uint64_t at;
	struct fc_req *req;
	unsigned int round;
	uint32_t cookie;
	int ret;

	(void)state;
	snprintf(dev0, sizeof(dev0), "emu:%s/0", name);
	snprintf(dev1, sizeof(dev1), "emu:%s/1", name);
	assert_ok(fc_open(&bd0, dev0));
	assert_ok(fc_open(&bd1, dev1));
	assert_ok(fc_chan_open(bd0, 1, PORT, 0, &c0));
	assert_ok(fc_mem_alloc(bd0, LEN, 0, &victim));
	assert_ok(fc_mem_alloc(bd0, LEN, 0, &big));
	memset(big->addr, 0xee, LEN);
	assert_ok(fc_mem_fabric_addr(bd0, victim, 0, &at));
	for (round = 0; round < 2; round++) {
		memset(victim->addr, 0, LEN);
		assert_ok(fc_chan_isend(c0, big->addr, LEN, &req));
		/* Let the RTS go out; board 1's library never sees it. */
		assert_rc(fc_req_wait(req, 50, NULL), -ETIMEDOUT);
		cookie = round + 1; /* the sender counts them from 1 */
		send_ctrl(bd1, 0, PORT, CTS, cookie,
			  round == 0 ? at :
				       FC_FABRIC_ADDR(1, FC_REGION_BOARD, 0));
		ret = fc_req_wait(req, WAIT_MS, NULL);
		if (ret != -EPROTO)
			fail_msg("round %u: forged CTS gave %d (%s)", round,
				 ret, fc_strerror(ret));
		assert_int_equal(((uint8_t *)victim->addr)[0], 0);
		assert_int_equal(((uint8_t *)victim->addr)[LEN - 1], 0);
	}
	assert_ok(fc_mem_free(bd0, big));
	assert_ok(fc_mem_free(bd0, victim));
	fc_chan_close(c0);
	fc_close(bd1);
	fc_close(bd0);
	fcemu_cluster_detach(c);
}

static int yama_scope(void)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
	int scope = 0;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &scope) != 1)
		scope = -1;
	fclose(f);
	return scope;
}

/* Without CAP_SYS_PTRACE, which lets root past Yama. */
static void drop_ptrace_cap(void)
{
	struct __user_cap_header_struct hd = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &hd, d))
		_exit(3);
	d[CAP_SYS_PTRACE / 32].effective &= ~(1u << (CAP_SYS_PTRACE % 32));
	d[CAP_SYS_PTRACE / 32].permitted &= ~(1u << (CAP_SYS_PTRACE % 32));
	if (syscall(SYS_capset, &hd, d))
		_exit(3);
}

/*
 * A process of the same user that is not a descendant of our launcher
 * (a grandchild whose parent exited: reparented away) must not read this
 * process's memory once a board here offers bursts.
 */
static void test_ptracer(void **state)
{
	static const uint64_t secret = 0x5ec2e7;
	const char *name = new_name();
	struct fcemu_cluster *c;
	int status, pipefd[2];
	pid_t me = getpid(), pid;
	char res = 0;

	(void)state;
	if (yama_scope() != 1) {
		skip_because(
			"Yama's ptrace_scope is not 1: any process of the user may read us");
		return;
	}
	c = make(name, "full:2");
	setenv("FPGACOMM_EMU_BURST", "1", 1);
	assert_int_equal(fcemu_cluster_claim(c, 0), 0);
	assert_int_equal(pipe(pipefd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (fork() == 0) {
			uint64_t got = 0;
			struct iovec l = { &got, sizeof(got) };
			struct iovec r = { (void *)&secret, sizeof(secret) };
			int tries;

			for (tries = 0; getppid() != 1 && tries < 1000; tries++)
				usleep(1000);
			drop_ptrace_cap();
			res = process_vm_readv(me, &l, 1, &r, 1, 0) < 0 &&
					      errno == EPERM ?
				      'y' :
				      'n';
			if (write(pipefd[1], &res, 1) != 1)
				_exit(4);
			_exit(0);
		}
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	close(pipefd[1]);
	assert_int_equal(read(pipefd[0], &res, 1), 1);
	close(pipefd[0]);
	fcemu_cluster_release(c, 0);
	fcemu_cluster_detach(c);
	assert_int_equal(res, 'y');
}

/* ---- A peer stopped (SIGSTOP) ---- */

/*
 * A peer stopped longer than FCEMU_STOP_NS is declared down like a dead
 * one: its state goes DEAD and the other boards' NODES_DOWN show it. When
 * it resumes, it learns that it was: its own NODES_DOWN shows every node,
 * so that its requests fail rather than wait for messages the others
 * dropped while it slept.
 */
static void test_stopped_peer(void **state)
{
	const char *name = new_name();
	struct fcemu_cluster *c = make(name, "full:2"), *c2;
	int up[2], down[2], status, round;
	char ch = 0;
	pid_t pid;

	(void)state;
	assert_int_equal(fcemu_cluster_claim(c, 0), 0);
	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(up[0]);
		close(down[1]);
		if (fcemu_cluster_attach(&c2, name) ||
		    fcemu_cluster_claim(c2, 1))
			_exit(1);
		if (write(up[1], "x", 1) != 1 || read(down[0], &ch, 1) != 1)
			_exit(1);
		/* resumed: cut off from node 0 */
		fcemu_cluster_note_down(c2, 1);
		_exit(fcemu_cluster_reg(c2, 1, FC_ROUTER_NODES_DOWN_LO) & 1 ?
			      0 :
			      2);
	}
	close(up[1]);
	close(down[0]);
	assert_int_equal(read(up[0], &ch, 1), 1);
	assert_int_equal(kill(pid, SIGSTOP), 0);
	assert_int_equal(waitpid(pid, &status, WUNTRACED), pid);
	assert_true(WIFSTOPPED(status));
	/* bounded: well past FCEMU_STOP_NS plus a scan period */
	for (round = 0; round < 300; round++) {
		if (fcemu_cluster_node_state(c, 1) == FCEMU_NODE_DEAD)
			break;
		usleep(50 * 1000);
	}
	if (fcemu_cluster_node_state(c, 1) != FCEMU_NODE_DEAD) {
		kill(pid, SIGKILL); /* never leave it stopped */
		waitpid(pid, &status, 0);
		fail_msg("a peer stopped for %d ms is still ALIVE", round * 50);
	}
	fcemu_cluster_note_down(c, 0);
	assert_int_equal(fcemu_cluster_reg(c, 0, FC_ROUTER_NODES_DOWN_LO), 2);
	assert_int_equal(kill(pid, SIGCONT), 0);
	assert_int_equal(write(down[1], "x", 1), 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	close(up[0]);
	close(down[1]);
	fcemu_cluster_release(c, 0);
	fcemu_cluster_detach(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_planted_mode, unlink_clusters),
		cmocka_unit_test_teardown(test_planted_owner, unlink_clusters),
		cmocka_unit_test_teardown(test_planted_symlink,
					  unlink_clusters),
		cmocka_unit_test_teardown(test_squatted_name, unlink_clusters),
		cmocka_unit_test_teardown(test_garbage_object, unlink_clusters),
		cmocka_unit_test_teardown(test_job_name_per_user,
					  unlink_clusters),
		cmocka_unit_test_teardown(test_create_mode, unlink_clusters),
		cmocka_unit_test_teardown(test_bad_header, unlink_clusters),
		cmocka_unit_test_teardown(test_header_rewritten,
					  unlink_clusters),
		cmocka_unit_test_teardown(test_damaged_slot, unlink_clusters),
		cmocka_unit_test_teardown(test_eject_tail_forged,
					  unlink_clusters),
		cmocka_unit_test_teardown(test_eject_slot_damaged,
					  unlink_clusters),
		cmocka_unit_test_teardown(test_express_tag, unlink_clusters),
		cmocka_unit_test_teardown(test_express_route_changes,
					  unlink_clusters),
		cmocka_unit_test_teardown(test_repair_bounds, unlink_clusters),
		cmocka_unit_test_teardown(test_tail_jump, unlink_clusters),
		cmocka_unit_test_teardown(test_forged_cts, unlink_clusters),
		cmocka_unit_test_teardown(test_ptracer, unlink_clusters),
		cmocka_unit_test_teardown(test_stopped_peer, unlink_clusters),
	};

	printf("test_emu_trust: the emulated cluster's shared object as a trust boundary\n");
	return harness_run(tests, NULL, NULL);
}
