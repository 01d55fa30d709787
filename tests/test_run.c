// SPDX-License-Identifier: MIT
/*
 * test_run: the launcher, build/tools/fpgacomm-run, from outside: the exit
 * status is the worst rank's (3 from one rank, 139 for a rank that kills
 * itself with SIGSEGV, 127 for a program that does not exist) and says which
 * rank failed; every rank sees FPGACOMM_DEVICE/CLUSTER/RANK/SIZE/TOPOLOGY
 * and its cluster's shared object, and opens its own board; ranks run at
 * the same time; default topologies; --timeout (124, SIGTERM then SIGKILL,
 * a rank's own children too); SIGINT/SIGTERM passed on, a second one
 * kills; bad usage exits 2 creating nothing; a cluster name in use is left
 * alone; --faults with an empty item or a fault given twice is refused;
 * fpgacomm-bench sort runs with a key count that does not split evenly.
 * After every run, /dev/shm/fpgacomm-NAME is gone.
 *
 * Needs no board of its own. FPGACOMM_TEST_FILTER picks tests by name.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "fabric.h" /* emu/: a cluster in use, which the tool leaves alone */

#define RUN_LIMIT_S 30.0 /* any run longer than this failed */
#define OUT_MAX	    16384

static char run_path[PATH_MAX];	  /* build/tools/fpgacomm-run */
static char reg_path[PATH_MAX];	  /* build/tools/fpgacomm-reg */
static char bench_path[PATH_MAX]; /* build/tools/fpgacomm-bench */
static char tmpdir[256];	  /* per test: rank files and output */
static unsigned int name_seq;

struct result {
	int status; /* exit status, 128+S when killed by S */
	double secs;
	char out[OUT_MAX]; /* stdout */
	char err[OUT_MAX]; /* stderr */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };

	nanosleep(&ts, NULL);
}

/* A cluster name no other test or run uses. */
static const char *new_name(char *buf, size_t len)
{
	snprintf(buf, len, "trun-%d-%u", (int)getpid(), name_seq++);
	return buf;
}

static bool shm_exists(const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "/dev/shm/fpgacomm-%s", name);
	return access(path, F_OK) == 0;
}

static void read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? 0 : read(fd, buf, len - 1);

	buf[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
}

/* Start fpgacomm-run with @args (NULL-terminated), output to files. */
static pid_t start(const char *const *args)
{
	char out[PATH_MAX], err[PATH_MAX];
	const char *argv[64];
	size_t n = 0;
	pid_t pid;

	argv[n++] = run_path;
	while (*args && n < 63)
		argv[n++] = *args++;
	argv[n] = NULL;
	snprintf(out, sizeof(out), "%s/stdout", tmpdir);
	snprintf(err, sizeof(err), "%s/stderr", tmpdir);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (o < 0 || e < 0)
			_exit(99);
		dup2(o, STDOUT_FILENO);
		dup2(e, STDERR_FILENO);
		/* the launcher's own process group, as from a shell */
		setpgid(0, 0);
		execv(run_path, (char **)argv);
		_exit(98);
	}
	return pid;
}

/* Wait for @pid, killing it after RUN_LIMIT_S; collect its output. */
static void finish(pid_t pid, double t0, struct result *r)
{
	char path[PATH_MAX];
	int st;

	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);

		if (w == pid)
			break;
		if (now_s() - t0 > RUN_LIMIT_S) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			fail_msg("fpgacomm-run still running after %.0f s",
				 RUN_LIMIT_S);
		}
		sleep_s(0.01);
	}
	r->secs = now_s() - t0;
	r->status = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
	snprintf(path, sizeof(path), "%s/stdout", tmpdir);
	read_file(path, r->out, sizeof(r->out));
	snprintf(path, sizeof(path), "%s/stderr", tmpdir);
	read_file(path, r->err, sizeof(r->err));
}

static void run(struct result *r, const char *const *args)
{
	double t0 = now_s();

	finish(start(args), t0, r);
}

#define RUN(r, ...)                                             \
	do {                                                    \
		const char *const _a[] = { __VA_ARGS__, NULL }; \
		run(r, _a);                                     \
	} while (0)

#define assert_status(r, want)                                               \
	do {                                                                 \
		if ((r)->status != (want))                                   \
			fail_msg("exit status %d, expected %d; stderr:\n%s", \
				 (r)->status, (want), (r)->err);             \
	} while (0)

#define assert_contains(hay, needle)                                   \
	do {                                                           \
		if (!strstr((hay), (needle)))                          \
			fail_msg("'%s' not in:\n%s", (needle), (hay)); \
	} while (0)

/* Wait up to 10 s for @n files @prefix.0 ... in tmpdir. */
static void wait_files(const char *prefix, unsigned int n)
{
	char path[PATH_MAX];
	double t0 = now_s();

	for (unsigned int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s.%u", tmpdir, prefix, i);
		while (access(path, F_OK)) {
			if (now_s() - t0 > 10)
				fail_msg("rank %u never wrote %s", i, path);
			sleep_s(0.01);
		}
	}
}

/* Is @pid gone (or a zombie nobody has reaped yet)? */
static bool process_gone(pid_t pid)
{
	char path[64], buf[256], *p;

	if (kill(pid, 0) && errno == ESRCH)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	read_file(path, buf, sizeof(buf));
	p = strrchr(buf, ')');
	return !p || p[2] == 'Z' || p[2] == 'X';
}

static void assert_pid_file_gone(const char *prefix, unsigned int rank)
{
	char path[PATH_MAX], buf[32];
	double t0 = now_s();
	pid_t pid;

	snprintf(path, sizeof(path), "%s/%s.%u", tmpdir, prefix, rank);
	read_file(path, buf, sizeof(buf));
	pid = atoi(buf);
	assert_true(pid > 0);
	while (!process_gone(pid)) {
		if (now_s() - t0 > 5) {
			kill(pid, SIGKILL);
			fail_msg("rank %u's child %d outlived the run", rank,
				 (int)pid);
		}
		sleep_s(0.01);
	}
}

/* ---- fixtures ---- */

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	return remove(path);
}

static int setup(void **state)
{
	snprintf(tmpdir, sizeof(tmpdir), "%s/fpgacomm-test-run.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	return nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- tests ---- */

static void test_help(void **state)
{
	struct result r;

	RUN(&r, "--help");
	assert_status(&r, 0);
	assert_contains(r.out, "Usage: fpgacomm-run -n N");
}

static void test_worst_status(void **state)
{
	struct result r;
	char name[64];

	RUN(&r, "-n", "4", "-c", new_name(name, sizeof(name)), "--", "sh", "-c",
	    "[ \"$FPGACOMM_RANK\" = 2 ] && exit 3; exit 0");
	assert_status(&r, 3);
	assert_contains(r.err, "rank 2 (pid ");
	assert_contains(r.err, "exited with status 3");
	/* only the rank that failed is reported */
	assert_null(strstr(r.err, "rank 0"));
	assert_null(strstr(r.err, "rank 1"));
	assert_null(strstr(r.err, "rank 3"));
	assert_false(shm_exists(name));

	/* the worst of several */
	RUN(&r, "-n", "3", "-c", name, "--", "sh", "-c",
	    "exit $((FPGACOMM_RANK * 2 + 1))");
	assert_status(&r, 5);
	assert_false(shm_exists(name));
}

/*
 * Every rank: the right environment, the shared object there before it
 * starts, all ranks at the same time (each waits for the others' files),
 * and a clean run removes the object and says nothing.
 */
static void test_env_and_cleanup(void **state)
{
	static const char script[] =
		"d=$1; r=$FPGACOMM_RANK;"
		"env | grep -E '^FPGACOMM_(CLUSTER|DEVICE|RANK|SIZE|TOPOLOGY)=' | sort > $d/env.$r;"
		"test -e /dev/shm/fpgacomm-$FPGACOMM_CLUSTER && "
		"echo present >> $d/env.$r;"
		"touch $d/up.$r; i=0;"
		"while [ $(ls $d | grep -c '^up\\.') -lt $FPGACOMM_SIZE ]; do "
		"  i=$((i + 1)); [ $i -gt 500 ] && exit 9; sleep 0.02; "
		"done";
	char name[64], path[PATH_MAX], got[1024], want[1024];
	struct result r;

	RUN(&r, "-n", "4", "--cluster", new_name(name, sizeof(name)), "--",
	    "sh", "-c", script, "sh", tmpdir);
	assert_status(&r, 0);
	assert_string_equal(r.err, "");
	for (unsigned int i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "%s/env.%u", tmpdir, i);
		read_file(path, got, sizeof(got));
		snprintf(want, sizeof(want),
			 "FPGACOMM_CLUSTER=%s\n"
			 "FPGACOMM_DEVICE=emu:%s/%u\n"
			 "FPGACOMM_RANK=%u\n"
			 "FPGACOMM_SIZE=4\n"
			 "FPGACOMM_TOPOLOGY=full:4\n"
			 "present\n",
			 name, name, i, i);
		assert_string_equal(got, want);
	}
	assert_false(shm_exists(name));
}

/* Without --cluster: run-PID, removed too. */
static void test_default_name(void **state)
{
	char path[PATH_MAX], got[256], want[64];
	struct result r;
	double t0 = now_s();
	pid_t pid;

	{
		const char *const a[] = {
			"-n",
			"2",
			"--",
			"sh",
			"-c",
			"test -e /dev/shm/fpgacomm-$FPGACOMM_CLUSTER && "
			"echo $FPGACOMM_CLUSTER > $1/name.$FPGACOMM_RANK",
			"sh",
			tmpdir,
			NULL
		};

		pid = start(a);
	}
	finish(pid, t0, &r);
	assert_status(&r, 0);
	snprintf(want, sizeof(want), "run-%d\n", (int)pid);
	snprintf(path, sizeof(path), "%s/name.1", tmpdir);
	read_file(path, got, sizeof(got));
	assert_string_equal(got, want);
	want[strlen(want) - 1] = '\0';
	assert_false(shm_exists(want));
}

static void test_default_topology(void **state)
{
	static const struct {
		const char *n, *topo;
	} cases[] = {
		{ "2", "full:2" },     { "9", "full:9" },
		{ "10", "torus:5x2" }, { "11", "ring:11" },
		{ "12", "torus:4x3" }, { "16", "torus:4x4" },
		{ "64", "torus:8x8" },
	};
	char name[64], want[64];
	struct result r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		RUN(&r, "-n", cases[i].n, "-c", new_name(name, sizeof(name)),
		    "--", "sh", "-c",
		    "[ $FPGACOMM_RANK = 0 ] && echo $FPGACOMM_TOPOLOGY "
		    "$FPGACOMM_SIZE; exit 0");
		assert_status(&r, 0);
		snprintf(want, sizeof(want), "%s %s\n", cases[i].topo,
			 cases[i].n);
		assert_string_equal(r.out, want);
		assert_false(shm_exists(name));
	}
	/* --topology alone gives the number of ranks */
	RUN(&r, "--topology", "mesh:2x3", "-c", name, "--", "sh", "-c",
	    "[ $FPGACOMM_RANK = 5 ] && echo $FPGACOMM_TOPOLOGY $FPGACOMM_SIZE;"
	    "exit 0");
	assert_status(&r, 0);
	assert_string_equal(r.out, "mesh:2x3 6\n");
}

/* One rank: full:1, a board with no links, is a cluster too. */
static void test_single_rank(void **state)
{
	char name[64];
	struct result r;

	RUN(&r, "-n", "1", "-c", new_name(name, sizeof(name)), "--", "sh", "-c",
	    "echo $FPGACOMM_TOPOLOGY $FPGACOMM_SIZE $FPGACOMM_DEVICE");
	assert_status(&r, 0);
	assert_contains(r.out, "full:1 1 emu:trun-");
	assert_false(shm_exists(name));
}

/* The ranks' boards open and are the cluster's: node id = rank. */
static void test_ranks_open_boards(void **state)
{
	char name[64], path[PATH_MAX], got[64], want[64];
	struct result r;

	if (access(reg_path, X_OK))
		skip_because("no build/tools/fpgacomm-reg");
	RUN(&r, "-n", "4", "-t", "ring:4", "-c", new_name(name, sizeof(name)),
	    "--", "sh", "-c",
	    "\"$2\" read NODE_ID read NUM_PORTS > $1/node.$FPGACOMM_RANK", "sh",
	    tmpdir, reg_path);
	assert_status(&r, 0);
	for (unsigned int i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "%s/node.%u", tmpdir, i);
		read_file(path, got, sizeof(got));
		snprintf(want, sizeof(want), "0x%08x\n0x00000002\n", i);
		assert_string_equal(got, want);
	}
	assert_false(shm_exists(name));
}

static void test_crash(void **state)
{
	char name[64];
	struct result r;

	RUN(&r, "-n", "3", "-c", new_name(name, sizeof(name)), "--", "sh", "-c",
	    "[ $FPGACOMM_RANK = 1 ] && kill -SEGV $$; exit 0");
	assert_status(&r, 128 + SIGSEGV);
	assert_contains(r.err, "rank 1 (pid ");
	assert_contains(r.err, "killed by signal 11");
	assert_null(strstr(r.err, "rank 0"));
	assert_false(shm_exists(name));

	/* all of them */
	RUN(&r, "-n", "2", "-c", name, "--", "sh", "-c", "kill -KILL $$");
	assert_status(&r, 128 + SIGKILL);
	assert_contains(r.err, "rank 0");
	assert_contains(r.err, "rank 1");
	assert_false(shm_exists(name));
}

static void test_exec_failure(void **state)
{
	char name[64];
	struct result r;

	RUN(&r, "-n", "2", "-c", new_name(name, sizeof(name)), "--",
	    "/nonexistent/program");
	assert_status(&r, 127);
	assert_contains(r.err, "cannot run /nonexistent/program");
	assert_false(shm_exists(name));
}

/* --timeout stops the ranks and their children: 124, object removed. */
static void test_timeout(void **state)
{
	char name[64];
	struct result r;

	RUN(&r, "-n", "2", "--timeout", "0.5", "-c",
	    new_name(name, sizeof(name)), "--", "sh", "-c",
	    "sleep 30 & echo $! > $1/child.$FPGACOMM_RANK; wait", "sh", tmpdir);
	assert_status(&r, 124);
	assert_contains(r.err, "timeout after 0.5 s");
	assert_true(r.secs >= 0.5 && r.secs < 5);
	assert_false(shm_exists(name));
	assert_pid_file_gone("child", 0);
	assert_pid_file_gone("child", 1);

	/* ranks that ignore SIGTERM get SIGKILL after the grace period */
	RUN(&r, "-n", "2", "-T", "0.3", "-c", name, "--", "sh", "-c",
	    "trap '' TERM; while :; do sleep 0.05; done");
	assert_status(&r, 124);
	assert_contains(r.err, "killing");
	assert_true(r.secs < 10);
	assert_false(shm_exists(name));
}

/* SIGINT/SIGTERM to fpgacomm-run reach every rank; the object goes. */
static void test_interrupt(void **state)
{
	static const int sigs[] = { SIGINT, SIGTERM };
	char name[64], path[PATH_MAX];
	struct result r;

	for (size_t i = 0; i < 2; i++) {
		double t0 = now_s();
		pid_t pid;

		for (unsigned int k = 0; k < 3; k++) {
			snprintf(path, sizeof(path), "%s/up.%u", tmpdir, k);
			unlink(path);
		}
		{
			const char *const a[] = {
				"-n",
				"3",
				"-c",
				new_name(name, sizeof(name)),
				"--",
				"sh",
				"-c",
				"touch $1/up.$FPGACOMM_RANK; exec sleep 30",
				"sh",
				tmpdir,
				NULL
			};

			pid = start(a);
		}
		wait_files("up", 3);
		assert_true(shm_exists(name));
		kill(pid, sigs[i]);
		finish(pid, t0, &r);
		assert_status(&r, 128 + sigs[i]);
		assert_true(r.secs < 10);
		assert_contains(r.err, "rank 2");
		assert_false(shm_exists(name));
	}
}

/* Ranks that ignore the signal: a second one kills them. */
static void test_interrupt_twice(void **state)
{
	double t0 = now_s();
	char name[64];
	struct result r;
	pid_t pid;

	{
		const char *const a[] = {
			"-n",
			"2",
			"-c",
			new_name(name, sizeof(name)),
			"--",
			"sh",
			"-c",
			"trap '' INT TERM; touch $1/up.$FPGACOMM_RANK;"
			"while :; do sleep 0.05; done",
			"sh",
			tmpdir,
			NULL
		};

		pid = start(a);
	}
	wait_files("up", 2);
	kill(pid, SIGTERM);
	sleep_s(0.3);
	assert_int_equal(waitpid(pid, NULL, WNOHANG), 0); /* still waiting */
	kill(pid, SIGTERM);
	finish(pid, t0, &r);
	assert_status(&r, 128 + SIGTERM);
	assert_contains(r.err, "killing the ranks");
	assert_contains(r.err, "killed by signal 9");
	assert_false(shm_exists(name));
}

/* Bad usage: exit 2, a message, and no shared object made. */
static void test_usage(void **state)
{
	static const char *const bad[][12] = {
		{ NULL },
		{ "-n", "2", NULL },
		{ "-n", "2", "--", NULL },
		{ "--", "true", NULL },
		{ "-n", "0", "--", "true", NULL },
		{ "-n", "65", "--", "true", NULL },
		{ "-n", "x", "--", "true", NULL },
		{ "-n", "4", "-t", "torus:2x3", "--", "true", NULL },
		{ "-n", "4", "-t", "cube:4", "--", "true", NULL },
		{ "-n", "2", "--faults", "drop=2", "--", "true", NULL },
		{ "-n", "2", "--faults", "drop=100%", "--", "true", NULL },
		{ "-n", "2", "--faults", "drop=-0.1", "--", "true", NULL },
		{ "-n", "2", "--faults", "drop=x", "--", "true", NULL },
		{ "-n", "2", "--faults", "loss=0.1", "--", "true", NULL },
		{ "-n", "2", "--faults", "drop", "--", "true", NULL },
		{ "-n", "2", "--faults", "drop=0.0000001", "--", "true", NULL },
		{ "-n", "2", "--faults", "drop=60%,corrupt=0.4", "--", "true",
		  NULL },
		{ "-n", "2", "--timeout", "0", "--", "true", NULL },
		{ "-n", "2", "--timeout", "-1", "--", "true", NULL },
		{ "-n", "2", "--timeout", "1s", "--", "true", NULL },
		{ "-n", "2", "--cluster", "a/b", "--", "true", NULL },
		{ "-n", "2", "--cluster", "", "--", "true", NULL },
		{ "-n", "2", "--cluster", "0123456789012345678901234567890123",
		  "--", "true", NULL },
		{ "--bogus", NULL },
	};
	struct result r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		run(&r, bad[i]);
		if (r.status != 2)
			fail_msg("case %zu (%s %s ...): exit %d, expected 2; "
				 "stderr:\n%s",
				 i, bad[i][0] ? bad[i][0] : "",
				 bad[i][0] && bad[i][1] ? bad[i][1] : "",
				 r.status, r.err);
		assert_contains(r.err, "fpgacomm-run");
		assert_contains(r.err, "--help");
	}
}

/* --faults: an empty item or a fault given twice is refused, and said so. */
static void test_faults_malformed(void **state)
{
	static const struct {
		const char *list, *says;
	} bad[] = {
		{ "drop=1%,drop=2%", "drop given twice" },
		{ "corrupt=0.01,drop=0.01,corrupt=0.02",
		  "corrupt given twice" },
		{ "drop=1%,,corrupt=1%", "empty item" },
		{ ",drop=1%", "empty item" },
		{ "drop=1%,", "empty item" },
		{ "", "empty item" },
	};
	struct result r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		RUN(&r, "-n", "2", "--faults", bad[i].list, "--", "true");
		if (r.status != 2)
			fail_msg(
				"--faults '%s': exit %d, expected 2; stderr:\n%s",
				bad[i].list, r.status, r.err);
		assert_contains(r.err, bad[i].says);
		assert_contains(r.err, "--faults");
	}
}

static void test_faults_accepted(void **state)
{
	char name[64];
	struct result r;

	RUN(&r, "-n", "2", "-v", "--faults", "drop=1%,corrupt=0.005", "-c",
	    new_name(name, sizeof(name)), "--", "true");
	assert_status(&r, 0);
	assert_contains(r.err, "drop 10000 corrupt 5000 ppm");
	assert_false(shm_exists(name));
}

/*
 * fpgacomm-bench sort takes any key count, as fc_sort does: 1000 keys over
 * 3 ranks (333, 333, 334) and 2 keys over 3 (one rank has none) sort, and
 * the result is checked sorted across the ranks.
 */
static void test_bench_sort_any_count(void **state)
{
	static const char *const keys[] = { "1000", "2" };
	struct result r;

	if (access(bench_path, X_OK))
		skip_because("no fpgacomm-bench (make tools)");
	for (size_t i = 0; i < 2; i++) {
		RUN(&r, "-n", "3", "--", bench_path, "sort", "--keys", keys[i],
		    "--bits", "12", "--algo", "counting,onepass,radix_net",
		    "--iters", "1");
		assert_status(&r, 0);
		assert_contains(r.out, "counting");
		assert_contains(r.out, "radix_net");
		assert_contains(r.out, " ok");
		if (strstr(r.out, "WRONG"))
			fail_msg("%s keys: a result out of order:\n%s", keys[i],
				 r.out);
	}
}

/* A name in use belongs to someone else: refuse, and leave it there. */
static void test_name_taken(void **state)
{
	struct fc_topology t;
	struct fcemu_cluster *c;
	char name[64];
	struct result r;

	assert_ok(fc_topo_parse("full:2", &t));
	assert_ok(fcemu_cluster_create(&c, new_name(name, sizeof(name)), &t,
				       NULL));
	RUN(&r, "-n", "2", "-c", name, "--", "true");
	fcemu_cluster_detach(c);
	assert_true(shm_exists(name));
	assert_ok(fcemu_cluster_unlink(name));
	assert_status(&r, 1);
	assert_contains(r.err, "cannot create cluster");
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_help, setup, teardown),
		cmocka_unit_test_setup_teardown(test_worst_status, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_env_and_cleanup, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_default_name, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_default_topology, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_single_rank, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_ranks_open_boards, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_crash, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec_failure, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_interrupt, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_interrupt_twice, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_usage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_faults_malformed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_faults_accepted, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_name_taken, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bench_sort_any_count,
						setup, teardown),
	};
	char exe[PATH_MAX - 64], *slash;
	ssize_t n;

	/* build/tests/test_run -> build/tools/fpgacomm-run */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		printf("readlink /proc/self/exe: %s\n", strerror(errno));
		return 1;
	}
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	*slash = '\0';
	snprintf(run_path, sizeof(run_path), "%s/../tools/fpgacomm-run", exe);
	snprintf(reg_path, sizeof(reg_path), "%s/../tools/fpgacomm-reg", exe);
	snprintf(bench_path, sizeof(bench_path), "%s/../tools/fpgacomm-bench",
		 exe);
	printf("test_run: %s\n", run_path);
	if (access(run_path, X_OK)) {
		printf("SKIP: no fpgacomm-run at %s (make tools)\n", run_path);
		return EXIT_SKIP;
	}
	/* ranks and the launcher must not inherit an ignored SIGINT */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	return harness_run(tests, NULL, NULL);
}
