// SPDX-License-Identifier: MIT
/*
 * test_multihost: one emulated cluster over several simulated hosts
 * (fpgacomm-run --hosts: mount namespaces with their own /dev/shm and /tmp,
 * links between hosts over libfabric's tcp provider on 127.0.0.0/8).
 * The channel, collective (its close-and-reopen case too) and sort suites
 * on torus:2x2 over 2 hosts; on 16 boards over 4 hosts (torus:4x4) the
 * sort suite, allreduce and alltoall checked against references, and
 * the collective suite's close-and-reopen case;
 * the collective and sort suites over 2 hosts, and the collective suite
 * on 16 boards over 4 hosts, with drop and corrupt faults on every link;
 * ping-pong of 8 B, 4 KiB and 1 MiB across hosts under drop and corrupt
 * faults, the data verified and the faults seen on the links between
 * hosts (retransmits, CRC errors); 1 MiB messages crossing as RMA
 * writes (counted), written again when faults hit them and still intact;
 * replies across hosts at once, 300 us or 3 ms late, checked;
 * two boards that close while two
 * others' round trips pass through them (on their links to the other
 * host), checked; a rank that sends 100 small messages and a rendezvous
 * one to the other host and closes at once, its peer opening its channel
 * only then (told by a file) and getting each, then -EHOSTDOWN; a host whose processes are killed mid-run (the others
 * get -EHOSTDOWN, the run ends, the host's directory goes); a host stopped
 * (SIGSTOP) and resumed (both sides get -EHOSTDOWN, the resumed side
 * because it is told, nobody hangs); mpirun (PMIx) with each rank a
 * simulated host of its own (FPGACOMM_HOSTS), ping-pong checked.
 *
 * Skips (77) unless run as root (unshare needs it, as CI has it), with
 * mount namespaces and libfabric at hand. As a rank (MH_WORK set), runs
 * that workload on its board.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define RUN_LIMIT_S 300	  /* any run longer than this failed (and is killed) */
#define OP_MS	    60000 /* one operation's bound: far above detection's */
#define OUT_MAX	    65536

static char run_path[PATH_MAX + 32];
static char bin_dir[PATH_MAX];
static char self_path[PATH_MAX];
static char outdir[] = "/tmp/test_multihost-XXXXXX";

/* ---- ranks ---- */

static uint8_t pat(uint32_t from, size_t size, size_t i, unsigned int it)
{
	return (uint8_t)(from * 131 + size * 7 + i * 13 + it);
}

static int rank_fail(unsigned int rank, const char *what, int rc)
{
	printf("rank %u: %s: %d (%s)\n", rank, what, rc, fc_strerror(rc));
	fflush(stdout);
	return 1;
}

/*
 * Add the counter @reg of every link port of ours to @peer into *@sum (a
 * 2x2 torus has two). RETURN VALUE: how many ports lead there.
 */
static unsigned int ports_to(struct fc_dev *d, uint32_t peer, uint32_t reg,
			     uint32_t *sum)
{
	uint32_t ports = 0, st, v;
	unsigned int p, n = 0;

	fc_reg_read(d, FC_REG_NUM_PORTS, &ports);
	for (p = 1; p <= ports; p++) {
		if (fc_reg_read(d, FC_PORT_REG(p, FC_PORT_STATUS), &st))
			continue;
		if (!(st & FC_PORT_UP) ||
		    ((st >> FC_PORT_PEER_SHIFT) & FC_PORT_PEER_MASK) != peer)
			continue;
		if (!fc_reg_read(d, FC_PORT_REG(p, reg), &v))
			*sum += v;
		n++;
	}
	return n;
}

/* One round trip of @size bytes with @peer, data checked. */
/* MH_LATE: the answering side replies at once, after 300 us, or after
 * 3 ms, in turn (a waiting host's wait on the completion queue ends by
 * the reply, by its slice, or by the due window: fcemu_bridge_wait_reply) */
static bool late;

static void reply_late(unsigned int it)
{
	static const long ns[] = { 0, 300000, 3000000 };
	struct timespec ts = { 0, ns[it % 3] };

	if (late && ts.tv_nsec)
		nanosleep(&ts, NULL);
}

static int round_trip(struct fc_chan *ch, uint32_t me, uint32_t peer,
		      uint8_t *buf, size_t size, unsigned int it)
{
	size_t len, i;
	int rc;

	if (me < peer) {
		for (i = 0; i < size; i++)
			buf[i] = pat(me, size, i, it);
		rc = fc_chan_send(ch, buf, size, OP_MS);
		if (!rc)
			rc = fc_chan_recv(ch, buf, size, &len, OP_MS);
	} else {
		rc = fc_chan_recv(ch, buf, size, &len, OP_MS);
		if (!rc) {
			for (i = 0; i < size; i++)
				if (buf[i] != pat(peer, size, i, it))
					return -EBADMSG;
			for (i = 0; i < size; i++)
				buf[i] = pat(me, size, i, it);
			reply_late(it);
			rc = fc_chan_send(ch, buf, size, OP_MS);
		}
		return rc;
	}
	if (rc)
		return rc;
	if (len != size)
		return -EBADMSG;
	for (i = 0; i < size; i++)
		if (buf[i] != pat(peer, size, i, it))
			return -EBADMSG;
	return 0;
}

/*
 * "pingpong": 8 B, 4 KiB and 1 MiB with the rank half the world away (on
 * another host), checked; with MH_FAULTS, the link to it (a neighbour on
 * the tori used) must have seen retransmits and CRC errors.
 * "kill" / "stop": round trips until one fails, which must be -EHOSTDOWN
 * (so must a send and a barrier after it); with "kill", the first rank of
 * the second half kills its host; with "stop", after 20 round trips each
 * waits for a message that never comes.
 */
static int run_rank(const char *work)
{
	static const size_t sizes[] = { 8, 4096, 1u << 20 };
	struct fc_world w;
	struct fc_dev *d;
	struct fc_chan *ch;
	uint32_t peer, rtx = 0, crc = 0, rma = 0, redo = 0;
	unsigned int p, i, k, big = 4;
	size_t len;
	uint8_t *buf;
	int rc;

	rc = fc_open(&d, NULL);
	if (rc)
		return rank_fail(0, "fc_open", rc);
	rc = fc_world_query(d, &w);
	if (rc)
		return rank_fail(0, "fc_world_query", rc);
	peer = (w.rank + w.size / 2) % w.size;
	buf = malloc(1u << 20);
	rc = fc_chan_open(d, peer, 5, 0, &ch);
	if (rc || !buf)
		return rank_fail(w.rank, "fc_chan_open", rc);
	if (getenv("MH_BIG"))
		big = (unsigned int)atoi(getenv("MH_BIG"));
	late = getenv("MH_LATE") != NULL;
	if (!strcmp(work, "pingpong")) {
		for (k = 0; k < 3; k++)
			for (i = 0; i < (k == 2 ? big : 50u); i++) {
				rc = round_trip(ch, w.rank, peer, buf, sizes[k],
						i);
				if (rc)
					return rank_fail(w.rank, "round trip",
							 rc);
			}
		p = ports_to(d, peer, FC_PORT_RETRANSMITS, &rtx);
		ports_to(d, peer, FC_PORT_CRC_ERRORS, &crc);
		ports_to(d, peer, FC_PORT_RMA_WRITES, &rma);
		ports_to(d, peer, FC_PORT_RMA_RETRIES, &redo);
		/* each 1 MiB message crossed as RMA writes, some written
		 * again under faults */
		if (getenv("MH_RMA") &&
		    (rma < big || (getenv("MH_FAULTS") && !redo))) {
			printf("rank %u: %u RMA writes, %u again\n", w.rank,
			       rma, redo);
			return rank_fail(w.rank, "bursts not by RMA", -ENODATA);
		}
		if (getenv("MH_FAULTS") && p) {
			if (!rtx || !crc) {
				printf("rank %u: %u ports to %u: %u "
				       "retransmits, %u CRC errors\n",
				       w.rank, p, peer, rtx, crc);
				return rank_fail(w.rank,
						 "no faults on the link",
						 -ENODATA);
			}
		}
		rc = fc_barrier(d, OP_MS);
		if (rc)
			return rank_fail(w.rank, "fc_barrier", rc);
		printf("rank %u: ok, %u ports to %u: %u retransmits, %u CRC "
		       "errors, %u RMA writes (%u again)\n",
		       w.rank, p, peer, rtx, crc, rma, redo);
	} else {
		/* until the fault ends it: never on our own (a loaded
		 * machine may take long to stop or kill the host) */
		for (i = 0;; i++) {
			if (i == 20) {
				printf("ready %u\n", w.rank);
				fflush(stdout);
			}
			if (!strcmp(work, "kill") && i == 50 &&
			    w.rank == w.size / 2)
				kill(getppid(),
				     SIGKILL); /* our host's keeper */
			/* "stop": then each waits for a message never sent,
			 * so the stopped side has nothing of its own to send
			 * when resumed: it must be told */
			if (!strcmp(work, "stop") && i == 20)
				rc = fc_chan_recv(ch, buf, 64, &len, OP_MS);
			else
				rc = round_trip(
					ch, w.rank, peer, buf,
					getenv("MH_SIZE") ? 1u << 20 : 64, i);
			if (rc)
				break;
		}
		if (rc != -EHOSTDOWN)
			return rank_fail(w.rank, "expected -EHOSTDOWN", rc);
		/* and whatever comes next with the others */
		rc = fc_chan_send(ch, buf, 64, OP_MS);
		if (rc != -EHOSTDOWN)
			return rank_fail(w.rank, "send: expected -EHOSTDOWN",
					 rc);
		rc = fc_barrier(d, OP_MS);
		if (rc != -EHOSTDOWN)
			return rank_fail(w.rank, "barrier: expected -EHOSTDOWN",
					 rc);
		printf("rank %u: EHOSTDOWN\n", w.rank);
	}
	fflush(stdout);
	fc_chan_close(ch);
	fc_close(d);
	free(buf);
	return 0;
}

/* ---- launching ---- */

struct result {
	int status; /* exit status, 128+S when killed by S */
	pid_t pid;
	char out[OUT_MAX], err[OUT_MAX];
};

static void slurp(const char *path, char *buf)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;

	if (f) {
		n = fread(buf, 1, OUT_MAX - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
}

/* Start fpgacomm-run with @args, NULL-terminated; @env "K=V" pairs too. */
static pid_t start(char *const *args, char *const *env)
{
	char path[PATH_MAX + 16];
	pid_t pid;
	int fd;

	/* gone before we return: nothing of an earlier run is read for ours */
	snprintf(path, sizeof(path), "%s/out", outdir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/err", outdir);
	unlink(path);
	pid = fork();
	if (pid)
		return pid;
	/* a filter picks this program's tests, not the ranks' */
	unsetenv("FPGACOMM_TEST_FILTER");
	for (; env && *env; env++)
		putenv(*env);
	snprintf(path, sizeof(path), "%s/out", outdir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	dup2(fd, STDOUT_FILENO);
	snprintf(path, sizeof(path), "%s/err", outdir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	dup2(fd, STDERR_FILENO);
	execv(run_path, args);
	_exit(127);
}

static void finish(struct result *r, pid_t pid)
{
	char path[PATH_MAX + 16];
	int st, i;

	for (i = 0; i < RUN_LIMIT_S * 10; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			break;
		usleep(100000);
	}
	if (i == RUN_LIMIT_S * 10) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	r->pid = pid;
	r->status = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
	snprintf(path, sizeof(path), "%s/out", outdir);
	slurp(path, r->out);
	snprintf(path, sizeof(path), "%s/err", outdir);
	slurp(path, r->err);
	if (i == RUN_LIMIT_S * 10)
		fail_msg("the run hung (killed after %d s)\n%s", RUN_LIMIT_S,
			 r->err);
}

/* The launcher's directory for the hosts is gone after the run. */
static void assert_clean(const struct result *r)
{
	char prefix[64];
	struct dirent *e;
	DIR *d = opendir("/tmp");

	snprintf(prefix, sizeof(prefix), "fpgacomm-hosts-%d-", (int)r->pid);
	while (d && (e = readdir(d)))
		if (!strncmp(e->d_name, prefix, strlen(prefix)))
			fail_msg("/tmp/%s left behind", e->d_name);
	if (d)
		closedir(d);
}

/* The last @n bytes of @s: where a failing run says why. */
static const char *tail_of(const char *s, size_t n)
{
	size_t len = strlen(s);

	return len > n ? s + len - n : s;
}

static void run_ok(char *const *args, char *const *env)
{
	static struct result r;

	finish(&r, start(args, env));
	if (r.status)
		fail_msg(
			"status %d\n--- stdout (end)\n%s\n--- stderr (end)\n%s",
			r.status, tail_of(r.out, 8000), tail_of(r.err, 4000));
	assert_clean(&r);
}

static char *bin(const char *name)
{
	static char paths[8][PATH_MAX + 64];
	static unsigned int next;
	char *p = paths[next++ % 8];

	snprintf(p, PATH_MAX + 64, "%s/%s", bin_dir, name);
	return p;
}

/* ---- tests ---- */

/* Run @prog under fpgacomm-run on @hosts simulated hosts of topology
 * @topo, with link faults @faults (NULL: none); it must pass. */
static void run_hosts(const char *hosts, const char *topo, const char *faults,
		      char *prog, char **env)
{
	char *args[12];
	unsigned int n = 0;

	args[n++] = run_path;
	args[n++] = "--hosts";
	args[n++] = (char *)hosts;
	args[n++] = "-t";
	args[n++] = (char *)topo;
	if (faults) {
		args[n++] = "--faults";
		args[n++] = (char *)faults;
	}
	args[n++] = "--";
	args[n++] = prog;
	args[n] = NULL;
	run_ok(args, env);
}

/* Ranks of test_collectives meet through files: in the directory all
 * hosts see. */
static char *coll_env[] = { "TMPDIR=/tmp/fpgacomm-hosts", NULL };

static void test_channels_2hosts(void **state)
{
	/* bursts on: those between hosts cross by RMA */
	run_hosts("2", "torus:2x2", NULL, bin("test_channels"), NULL);
}

/* The whole suite on 16 boards over 4 hosts: pairs two hops apart on
 * other hosts, a slow receiver among them, and a dead rank. */
static void test_channels_16_on_4hosts(void **state)
{
	run_hosts("4", "torus:4x4", NULL, bin("test_channels"), NULL);
}

/* Its close-and-reopen case too: a board that leaves and opens again in
 * the same process (a later job) is met again across hosts. */
static void test_collectives_2hosts(void **state)
{
	run_hosts("2", "torus:2x2", NULL, bin("test_collectives"), coll_env);
}

/* Its close-and-reopen case alone, on 16 boards over 4 hosts. */
static void test_reopen_16_on_4hosts(void **state)
{
	char *env[] = { "TMPDIR=/tmp/fpgacomm-hosts",
			"FPGACOMM_COLL_TEST=earlier", NULL };

	run_hosts("4", "torus:4x4", NULL, bin("test_collectives"), env);
}

/* The collective and sort suites with faults on every link, those
 * between hosts among them: on torus:2x2 over 2 hosts; and the collective
 * and channel suites on 16 boards over 4 hosts, the channel suite's runs
 * under faults (FPGACOMM_TEST_FAULTS: the faults reach the data, a slow
 * receiver across hosts holds its sender back) as in its own. */
static void test_suites_under_faults(void **state)
{
	static const char faults[] = "drop=0.01,corrupt=0.01";
	char *chan_env[] = { "FPGACOMM_TEST_FAULTS=1",
			     "FPGACOMM_EMU_BURST_HELP=0", NULL };

	run_hosts("2", "torus:2x2", faults, bin("test_collectives"), coll_env);
	run_hosts("2", "torus:2x2", faults, bin("test_sort"), NULL);
	run_hosts("4", "torus:4x4", faults, bin("test_collectives"), coll_env);
	run_hosts("4", "torus:4x4", faults, bin("test_channels"), chan_env);
}

static void test_sort_2hosts(void **state)
{
	run_hosts("2", "torus:2x2", NULL, bin("test_sort"), NULL);
}

static void test_sort_16_on_4hosts(void **state)
{
	run_hosts("4", "torus:4x4", NULL, bin("test_sort"), NULL);
}

static void test_coll_16_on_4hosts(void **state)
{
	char *env[] = { "MH_WORK=coll", NULL };

	run_hosts("4", "torus:4x4", NULL, self_path, env);
}

static void test_faults_between_hosts(void **state)
{
	char *args[] = { run_path,
			 "--hosts",
			 "2",
			 "-t",
			 "torus:2x2",
			 "--faults",
			 "drop=0.01,corrupt=0.01",
			 "--",
			 self_path,
			 NULL };
	char *env[] = { "MH_WORK=pingpong", "MH_FAULTS=1", NULL };
	static struct result r;

	finish(&r, start(args, env));
	if (r.status)
		fail_msg("status %d\n%.4000s\n%.4000s", r.status, r.out, r.err);
	assert_clean(&r);
	for (int i = 0; i < 4; i++) {
		char want[32];

		snprintf(want, sizeof(want), "rank %d: ok", i);
		assert_non_null(strstr(r.out, want));
	}
}

/*
 * Replies from the other host that come at once, after 300 us or after
 * 3 ms, in turn: the waiting host sleeps on its bridge's completion queue
 * while a reply is due (woken by it, or by its slice ending), then on its
 * board's bell with the bridge's thread taking what comes. 8 B, 4 KiB and
 * 1 MiB, data checked, both ranks through to the end.
 */
static void test_late_replies_between_hosts(void **state)
{
	char *args[] = { run_path, "--hosts", "2",  "-n",      "2",
			 "-t",	   "full:2",  "--", self_path, NULL };
	char *env[] = { "MH_WORK=pingpong", "MH_LATE=1", "MH_BIG=6", NULL };
	static struct result r;

	finish(&r, start(args, env));
	if (r.status)
		fail_msg("status %d\n%.4000s\n%.4000s", r.status, r.out, r.err);
	assert_clean(&r);
	assert_non_null(strstr(r.out, "rank 0: ok"));
	assert_non_null(strstr(r.out, "rank 1: ok"));
}

/*
 * Bursts between hosts go by RMA: 300 round trips of 1 MiB between two
 * hosts, each way a burst written into the far host's landing slot
 * (FC_PORT_RMA_WRITES), data checked; under heavy drop and corrupt faults
 * some writes fail the far bridge's check and are written again
 * (FC_PORT_RMA_RETRIES), and still every byte arrives intact. More bursts
 * than the far ring has slots: one credit lost per burst would stall.
 */
static void test_rma_between_hosts(void **state)
{
	char *args[] = { run_path, "--hosts",  "2",
			 "-n",	   "2",	       "-t",
			 "full:2", "--faults", "drop=0.1,corrupt=0.1",
			 "--",	   self_path,  NULL };
	char *env[] = { "MH_WORK=pingpong", "MH_FAULTS=1", "MH_RMA=1",
			"MH_BIG=300", NULL };
	static struct result r;

	(void)state;
	finish(&r, start(args, env));
	if (r.status)
		fail_msg("status %d\n%.4000s\n%.4000s", r.status, r.out, r.err);
	assert_clean(&r);
	assert_non_null(strstr(r.out, "rank 0: ok"));
	assert_non_null(strstr(r.out, "rank 1: ok"));
}

/* Is there a line of @text holding both @a and @b? */
static bool line_with(const char *text, const char *a, const char *b)
{
	const char *s = text, *end;

	while ((s = strstr(s, a))) {
		end = strchr(s, '\n');
		if (!end)
			end = s + strlen(s);
		const char *f = strstr(s, b);

		if (f && f < end)
			return true;
		s = end;
	}
	return false;
}

/* Host 1 killed while its ranks exchange messages with host 0's. */
static void host_killed(char *const *env)
{
	char *args[] = { run_path,    "-v", "--hosts", "2", "-t",
			 "torus:2x2", "--", self_path, NULL };
	static struct result r;

	finish(&r, start(args, env));
	/* host 1 was killed: the run says so; host 0's ranks saw it */
	assert_int_equal(r.status, 128 + SIGKILL);
	assert_non_null(strstr(r.err, "host 1"));
	assert_non_null(strstr(r.err, "killed by signal 9"));
	/* ... and host 0's ranks ended well */
	assert_false(line_with(r.err, "host 0 (pid", "exited"));
	assert_false(line_with(r.err, "rank 0 (pid", ""));
	assert_false(line_with(r.err, "rank 1 (pid", ""));
	assert_non_null(strstr(r.out, "rank 0: EHOSTDOWN"));
	assert_non_null(strstr(r.out, "rank 1: EHOSTDOWN"));
	assert_clean(&r);
}

static void test_host_killed(void **state)
{
	char *env[] = { "MH_WORK=kill", NULL };

	(void)state;
	host_killed(env);
}

/* ... while they exchange 1 MiB messages: bursts by RMA under way */
static void test_host_killed_mid_burst(void **state)
{
	char *env[] = { "MH_WORK=kill", "MH_SIZE=1", NULL };

	(void)state;
	host_killed(env);
}

/* The pid of host @h's keeper, from fpgacomm-run -v's words, or 0. */
static pid_t keeper_pid(unsigned int h)
{
	char path[PATH_MAX + 16], err[OUT_MAX], want[32], *s;

	snprintf(path, sizeof(path), "%s/err", outdir);
	slurp(path, err);
	snprintf(want, sizeof(want), "host %u (pid ", h);
	s = strstr(err, want);
	return s ? (pid_t)atoi(s + strlen(want)) : 0;
}

/* Signal @pid and its children (a keeper and its ranks). */
static void signal_tree(pid_t pid, int sig)
{
	char path[64];
	FILE *f;
	int child;

	kill(pid, sig);
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid,
		 (int)pid);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fscanf(f, "%d", &child) == 1)
		kill(child, sig);
	fclose(f);
}

static bool out_has(const char *what)
{
	char path[PATH_MAX + 16];
	static char out[OUT_MAX];

	snprintf(path, sizeof(path), "%s/out", outdir);
	slurp(path, out);
	return strstr(out, what);
}

/*
 * Host 1 stopped (SIGSTOP) until host 0's ranks saw it down and left (their
 * host gone), then resumed: its ranks must be told they were declared
 * down (host 0's goodbye says so, not a silence of their own), and end
 * with -EHOSTDOWN; the run ends, the directory goes.
 */
static void test_host_stopped(void **state)
{
	char *args[] = { run_path,    "-v", "--hosts", "2", "-t",
			 "torus:2x2", "--", self_path, NULL };
	char *env[] = { "MH_WORK=stop", "FPGACOMM_BRIDGE_VERBOSE=1", NULL };
	static struct result r;
	pid_t pid, k = 0, k0 = 0;
	int i;

	pid = start(args, env);

	/* all ranks going, then host 1 stopped until host 0 noticed */
	for (i = 0; i < 600 && !(out_has("ready 0") && out_has("ready 1") &&
				 out_has("ready 2") && out_has("ready 3"));
	     i++)
		usleep(100000);
	k = keeper_pid(1);
	k0 = keeper_pid(0);
	if (k > 0)
		signal_tree(k, SIGSTOP);
	for (i = 0; i < 600 && !(out_has("rank 0: EHOSTDOWN") &&
				 out_has("rank 1: EHOSTDOWN"));
	     i++)
		usleep(100000);
	/* host 0 gone (its keeper reaped): nobody there answers any more */
	for (i = 0; i < 600 && k0 > 0 && kill(k0, 0) == 0; i++)
		usleep(100000);
	if (k > 0)
		signal_tree(k, SIGCONT);
	finish(&r, pid);
	assert_true(k > 0 && k0 > 0);
	if (r.status)
		fail_msg("status %d\n%.4000s\n%.4000s", r.status, r.out, r.err);
	assert_clean(&r);
	/* host 0 saw host 1's boards down, and the stopped side, resumed,
	 * was told so by host 0's boards */
	for (i = 0; i < 4; i++) {
		char want[32];

		snprintf(want, sizeof(want), "rank %d: EHOSTDOWN", i);
		assert_non_null(strstr(r.out, want));
	}
	if (!line_with(r.err, "board 0 is down", "it declared us down") ||
	    !line_with(r.err, "board 1 is down", "it declared us down"))
		fail_msg("host 1 was not told it was declared down\n%.4000s",
			 r.err);
}

/* ---- boards that close while others route through them ---- */

/*
 * "relay", torus:2x2 over 2 hosts: ranks 1 and 2 close right after a
 * barrier, while ranks 0 and 3 (diagonal: every route between them goes
 * through board 1 or 2, and crosses the hosts there) go on with checked
 * round trips. A board that closes must carry them while they pass.
 */
static int run_relay(void)
{
	struct fc_world w;
	struct fc_chan *ch;
	struct fc_dev *d;
	uint32_t hops = 0;
	unsigned int i;
	uint8_t *buf = malloc(4096);
	int rc;

	rc = fc_open(&d, NULL);
	if (!rc)
		rc = fc_world_query(d, &w);
	if (rc || !buf)
		return rank_fail(0, "open", rc);
	if (w.rank == 0 || w.rank == 3) {
		rc = fc_world_hops(d, 3 - w.rank, &hops);
		if (rc || hops != 2)
			return rank_fail(w.rank, "not two hops apart",
					 rc ? rc : -EPROTO);
		rc = fc_chan_open(d, 3 - w.rank, 5, 0, &ch);
		if (rc)
			return rank_fail(w.rank, "fc_chan_open", rc);
	}
	rc = fc_barrier(d, OP_MS);
	if (rc)
		return rank_fail(w.rank, "fc_barrier", rc);
	if (w.rank == 1 || w.rank == 2) {
		/* what passes through our board still needs us */
		fc_close(d);
		printf("rank %u: closed\n", w.rank);
		free(buf);
		return 0;
	}
	for (i = 0; i < 200; i++) {
		rc = round_trip(ch, w.rank, 3 - w.rank, buf, 4096, i);
		if (rc)
			return rank_fail(w.rank, "round trip", rc);
	}
	printf("rank %u: ok\n", w.rank);
	fc_chan_close(ch);
	fc_close(d);
	free(buf);
	return 0;
}

static void test_relay_closed(void **state)
{
	char *args[] = { run_path,    "--hosts", "2",	    "-t",
			 "torus:2x2", "--",	 self_path, NULL };
	char *env[] = { "MH_WORK=relay", NULL };
	static struct result r;

	finish(&r, start(args, env));
	if (r.status)
		fail_msg("status %d\n%.4000s\n%.4000s", r.status, r.out, r.err);
	assert_clean(&r);
	assert_non_null(strstr(r.out, "rank 0: ok"));
	assert_non_null(strstr(r.out, "rank 3: ok"));
}

/* ---- a rank that sends and closes at once, across hosts ---- */

#define SC_MSGS	  100
#define SC_BIG	  ((256u << 10) + 5) /* rendezvous: RMA between the hosts */
#define SC_FLAG	  "/tmp/fpgacomm-hosts/sendclose-closed" /* seen by both */
#define SC_LEN(i) ((i) == SC_MSGS ? SC_BIG : 1 + ((size_t)(i)*977) % 4000)

/*
 * "sendclose", full:2 over 2 hosts: rank 0 sends small messages and a
 * rendezvous one to rank 1 on the other host, closes its board and says
 * so in a file of the hosts' shared directory (not through the library);
 * rank 1 drives its board meanwhile with no channel open, opens it only
 * then, and must get every message whole, then -EHOSTDOWN.
 */
static int run_sendclose(void)
{
	uint8_t *buf = malloc(SC_BIG);
	struct fc_world w;
	struct fc_chan *ch;
	struct fc_dev *d;
	unsigned int i, polls = 0;
	size_t len, k;
	int rc, fd;

	rc = fc_open(&d, NULL);
	if (!rc)
		rc = fc_world_query(d, &w);
	if (rc || !buf)
		return rank_fail(0, "open", rc);
	rc = fc_barrier(d, OP_MS); /* both boards met across the hosts */
	if (rc)
		return rank_fail(w.rank, "fc_barrier", rc);
	if (w.rank == 0) {
		rc = fc_chan_open(d, 1, 5, 0, &ch);
		for (i = 0; !rc && i <= SC_MSGS; i++) {
			for (k = 0; k < SC_LEN(i); k++)
				buf[k] = pat(0, SC_LEN(i), k, i);
			rc = fc_chan_send(ch, buf, SC_LEN(i), OP_MS);
		}
		if (rc)
			return rank_fail(0, "send", rc);
		fc_chan_close(ch);
		fc_close(d);
		fd = open(SC_FLAG, O_WRONLY | O_CREAT, 0600);
		if (fd < 0)
			return rank_fail(0, SC_FLAG, -errno);
		close(fd);
		printf("rank 0: sent and closed\n");
		free(buf);
		return 0;
	}
	while (access(SC_FLAG, F_OK) && polls++ < OP_MS) {
		fc_progress(d);
		usleep(1000);
	}
	rc = fc_chan_open(d, 0, 5, 0, &ch);
	if (rc)
		return rank_fail(1, "fc_chan_open after the sender closed", rc);
	for (i = 0; i <= SC_MSGS; i++) {
		rc = fc_chan_recv(ch, buf, SC_BIG, &len, OP_MS);
		if (rc)
			return rank_fail(1, "receive", rc);
		for (k = 0; k < len && buf[k] == pat(0, SC_LEN(i), k, i); k++)
			;
		if (len != SC_LEN(i) || k != len)
			return rank_fail(1, "message differs", -EBADMSG);
	}
	rc = fc_chan_recv(ch, buf, SC_BIG, &len, OP_MS);
	if (rc != -EHOSTDOWN)
		return rank_fail(1, "a receive past the last message", rc);
	printf("rank 1: ok\n");
	fc_chan_close(ch);
	fc_close(d);
	free(buf);
	return 0;
}

static void test_send_then_close(void **state)
{
	char *args[] = { run_path, "--hosts", "2",	 "-t",
			 "full:2", "--",      self_path, NULL };
	char *env[] = { "MH_WORK=sendclose", NULL };
	static struct result r;

	finish(&r, start(args, env));
	if (r.status)
		fail_msg("status %d\n%.4000s\n%.4000s", r.status, r.out, r.err);
	assert_clean(&r);
	assert_non_null(strstr(r.out, "rank 1: ok"));
}

/* ---- a collective workload of our own, for 16 ranks ---- */

static int run_coll(void)
{
	struct fc_group *g;
	struct fc_dev *d;
	int rank, size, rc, i, j, n = 1000;
	int32_t *in, *out;

	rc = fc_open(&d, NULL);
	if (!rc)
		rc = fc_group_world(d, &g);
	if (rc)
		return rank_fail(0, "open", rc);
	rank = fc_group_rank(g);
	size = fc_group_size(g);
	in = calloc((size_t)n * size, sizeof(*in));
	out = calloc((size_t)n * size, sizeof(*out));
	for (i = 0; i < n; i++)
		in[i] = rank * 1000 + i;
	rc = fc_allreduce(g, in, out, (size_t)n, FC_INT32, FC_SUM, OP_MS);
	if (rc)
		return rank_fail(rank, "allreduce", rc);
	for (i = 0; i < n; i++)
		if (out[i] != 1000 * size * (size - 1) / 2 + size * i)
			return rank_fail(rank, "allreduce result", -EBADMSG);
	for (j = 0; j < size; j++)
		for (i = 0; i < n; i++)
			in[j * n + i] = rank * 100000 + j * 1000 + i % 1000;
	rc = fc_alltoall(g, in, out, (size_t)n, FC_INT32, OP_MS);
	if (rc)
		return rank_fail(rank, "alltoall", rc);
	for (j = 0; j < size; j++)
		for (i = 0; i < n; i++)
			if (out[j * n + i] !=
			    j * 100000 + rank * 1000 + i % 1000)
				return rank_fail(rank, "alltoall result",
						 -EBADMSG);
	rc = fc_barrier_group(g, OP_MS);
	if (rc)
		return rank_fail(rank, "barrier", rc);
	printf("rank %d: ok\n", rank);
	fc_group_free(g);
	fc_close(d);
	free(in);
	free(out);
	return 0;
}

/*
 * Under mpirun, each rank a simulated host of its own: a mount namespace
 * with its own /dev/shm and address 127.0.0.(1+rank), made before the
 * program runs. /tmp stays the machine's: it holds mpirun's session
 * directory, which PMIx clients on a host share with their daemon.
 */
static int wrap_rank(void)
{
	const char *r = getenv("OMPI_COMM_WORLD_RANK");
	char addr[32], self[PATH_MAX];
	ssize_t n;

	if (!r || unshare(CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("tmpfs", "/dev/shm", "tmpfs", 0, "mode=1777")) {
		printf("rank %s: cannot make a host: %s\n", r ? r : "?",
		       strerror(errno));
		return 1;
	}
	snprintf(addr, sizeof(addr), "127.0.0.%d", atoi(r) + 1);
	setenv("FPGACOMM_BRIDGE_ADDR", addr, 1);
	unsetenv("MH_WRAP");
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 1;
	self[n] = '\0';
	execl(self, self, (char *)NULL);
	return 127;
}

/* mpirun (Open MPI, PMIx) with 4 ranks each on a host: ping-pong checked. */
static void test_pmix_mpirun(void **state)
{
	char *args[] = { "/bin/sh", "-c",
			 "exec mpirun --allow-run-as-root --oversubscribe "
			 "--mca btl self,tcp -np 4 -x MH_WRAP=1 "
			 "-x MH_WORK=pingpong -x FPGACOMM_HOSTS=4 "
			 "-x FPGACOMM_TOPOLOGY=torus:2x2 \"$0\"",
			 self_path, NULL };
	static struct result r;
	pid_t pid;

	if (access("/usr/bin/mpirun", X_OK) && system("command -v mpirun"))
		skip_because("no mpirun (Open MPI)");
	pid = fork();
	if (!pid) {
		char path[PATH_MAX + 16];
		int fd;

		snprintf(path, sizeof(path), "%s/out", outdir);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, STDOUT_FILENO);
		snprintf(path, sizeof(path), "%s/err", outdir);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, STDERR_FILENO);
		execv(args[0], args);
		_exit(127);
	}
	finish(&r, pid);
	if (r.status)
		fail_msg("status %d\n%.4000s\n%.4000s", r.status, r.out, r.err);
	for (int i = 0; i < 4; i++) {
		char want[32];

		snprintf(want, sizeof(want), "rank %d: ok", i);
		assert_non_null(strstr(r.out, want));
	}
}

/* Can we make simulated hosts here? NULL if so, else why not. */
static const char *why_not(void)
{
	pid_t pid;
	int st;

	if (geteuid())
		return "simulated hosts need root (unshare, mount)";
	if (!dlopen("libfabric.so.1", RTLD_NOW))
		return "no libfabric (libfabric1)";
	pid = fork();
	if (!pid)
		_exit(unshare(CLONE_NEWNS) ? 1 : 0);
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st))
		return "no mount namespaces (unshare)";
	return NULL;
}

static void remove_outdir(void)
{
	char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/out", outdir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/err", outdir);
	unlink(path);
	rmdir(outdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_channels_2hosts),
		cmocka_unit_test(test_channels_16_on_4hosts),
		cmocka_unit_test(test_collectives_2hosts),
		cmocka_unit_test(test_reopen_16_on_4hosts),
		cmocka_unit_test(test_sort_2hosts),
		cmocka_unit_test(test_sort_16_on_4hosts),
		cmocka_unit_test(test_coll_16_on_4hosts),
		cmocka_unit_test(test_faults_between_hosts),
		cmocka_unit_test(test_suites_under_faults),
		cmocka_unit_test(test_rma_between_hosts),
		cmocka_unit_test(test_late_replies_between_hosts),
		cmocka_unit_test(test_relay_closed),
		cmocka_unit_test(test_send_then_close),
		cmocka_unit_test(test_host_killed),
		cmocka_unit_test(test_host_killed_mid_burst),
		cmocka_unit_test(test_host_stopped),
		cmocka_unit_test(test_pmix_mpirun),
	};
	const char *work = getenv("MH_WORK"), *why;
	char *slash;
	ssize_t n;
	int rc;

	if (getenv("MH_WRAP"))
		return wrap_rank();
	if (work && *work) {
		setvbuf(stdout, NULL, _IOLBF, 0);
		if (!strcmp(work, "relay"))
			return run_relay();
		if (!strcmp(work, "sendclose"))
			return run_sendclose();
		return !strcmp(work, "coll") ? run_coll() : run_rank(work);
	}
	printf("test_multihost: one cluster over simulated hosts\n");
	why = why_not();
	if (why) {
		printf("SKIP: %s\n", why);
		return EXIT_SKIP;
	}
	n = readlink("/proc/self/exe", self_path, sizeof(self_path) - 1);
	if (n <= 0)
		return 1;
	self_path[n] = '\0';
	snprintf(bin_dir, sizeof(bin_dir), "%s", self_path);
	slash = strrchr(bin_dir, '/');
	*slash = '\0';
	snprintf(run_path, sizeof(run_path), "%s/../tools/fpgacomm-run",
		 bin_dir);
	if (access(run_path, X_OK)) {
		printf("SKIP: no fpgacomm-run at %s (make tools)\n", run_path);
		return EXIT_SKIP;
	}
	if (!mkdtemp(outdir))
		return 1;
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	rc = harness_run(tests, NULL, NULL);
	remove_outdir();
	return rc;
}
