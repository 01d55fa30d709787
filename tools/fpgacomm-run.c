// SPDX-License-Identifier: MIT
/*
 * fpgacomm-run: start a program as N ranks on an emulated cluster
 * (docs/fabric.md, "Launching"): create the cluster's shared object, run
 * the ranks, wait for all of them, and remove the object whatever happened.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "fabric.h" /* emu/: creates the emulated cluster its ranks join */
#include "tool_util.h"

/* After --timeout's SIGTERM, how long ranks get before SIGKILL. */
#define KILL_GRACE_S 2.0
/* Exit status when --timeout expired, as timeout(1) has it. */
#define EXIT_TIMEOUT 124
/* Exit status of a rank whose program could not be started, as sh has it. */
#define EXIT_NOEXEC   127
#define MAX_TIMEOUT_S 1e7
/* Where each simulated host sees the directory the bridges meet in. */
#define HOSTS_DIR "/tmp/fpgacomm-hosts"

const char *const prog = "fpgacomm-run";

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s -n N [OPTIONS] -- PROG [ARGS]...\n"
		"Run PROG as N ranks on an emulated fpgacomm cluster: each rank\n"
		"opens its board as FPGACOMM_DEVICE=emu:CLUSTER/RANK.\n"
		"\n"
		"Options:\n"
		"  -n, --ranks N         number of ranks (1..%u); may be left out\n"
		"                        when --topology gives it\n"
		"  -t, --topology T      ring:N, mesh:XxY, torus:XxY or full:N with\n"
		"                        N nodes (default: full:N up to %u ranks,\n"
		"                        else the squarest torus, else ring:N)\n"
		"  -c, --cluster NAME    cluster name (default run-PID): the shared\n"
		"                        object is /dev/shm/fpgacomm-NAME\n"
		"  -f, --faults LIST     drop=P,corrupt=P: chance that a packet taken\n"
		"                        off a link is lost or corrupted (and sent\n"
		"                        again); P as 0.01 or 1%%, below 1\n"
		"  -T, --timeout SEC     stop the ranks after SEC seconds: SIGTERM,\n"
		"                        then SIGKILL %.0f s later\n"
		"  -H, --hosts H         spread the ranks over H simulated hosts\n"
		"                        (in blocks of consecutive ranks): each a\n"
		"                        mount namespace with its own /dev/shm and\n"
		"                        /tmp and address 127.0.0.(1+h); links\n"
		"                        between hosts go over libfabric (root only)\n"
		"  -v, --verbose         say which cluster and topology run\n"
		"  -h, --help            show this help\n"
		"\n"
		"Each rank gets FPGACOMM_DEVICE, FPGACOMM_CLUSTER, FPGACOMM_RANK,\n"
		"FPGACOMM_SIZE and FPGACOMM_TOPOLOGY, runs in a process group of its\n"
		"own and dies with %s. Standard input goes to rank 0 unless it is\n"
		"a terminal; the other ranks read /dev/null. SIGINT, SIGTERM and\n"
		"SIGHUP are passed on to every rank; a second one kills them.\n"
		"\n"
		"Exit status: the worst of the ranks' (128+S for a rank killed by\n"
		"signal S, %d for a program that could not be run); %d when\n"
		"--timeout expired; at least 128+S when interrupted by signal S;\n"
		"1 when the cluster could not be set up; 2 bad usage.\n",
		prog, FC_MAX_NODES, FC_MAX_PORTS + 1, KILL_GRACE_S, prog,
		EXIT_NOEXEC, EXIT_TIMEOUT);
}

/* ---- arguments ---- */

/* A probability: "0.01" or "1%", 0 <= P < 1. RETURN VALUE: ppm or -1. */
static long parse_prob(const char *s)
{
	char *end;
	double p;

	if ((*s < '0' || *s > '9') && *s != '.')
		return -1;
	errno = 0;
	p = strtod(s, &end);
	if (errno || end == s || !isfinite(p))
		return -1;
	if (*end == '%') {
		p /= 100;
		end++;
	}
	if (*end || p < 0 || p >= 1)
		return -1;
	return (long)(p * 1e6 + 0.5); /* no libm: tools do not link it */
}

/*
 * "drop=P,corrupt=P", each at most once. Items are split by hand, not with
 * strtok, which would pass over an empty one ("drop=1%,,corrupt=1%") as
 * if it were not there.
 */
static void parse_faults(const char *arg, struct fcemu_faults *f)
{
	char *copy = strdup(arg), *tok, *next, *val;
	bool seen_drop = false, seen_corrupt = false, *seen;
	long ppm;

	if (!copy) {
		fprintf(stderr, "%s: out of memory\n", prog);
		exit(1);
	}
	for (tok = copy; tok; tok = next) {
		next = strchr(tok, ',');
		if (next)
			*next++ = '\0';
		if (!*tok)
			usage_error("empty item in --faults '%s': expected "
				    "drop=P,corrupt=P",
				    arg);
		val = strchr(tok, '=');
		if (!val)
			usage_error("bad fault '%s' in --faults: expected "
				    "drop=P or corrupt=P",
				    tok);
		*val++ = '\0';
		ppm = parse_prob(val);
		if (ppm < 0)
			usage_error("bad probability '%s' for %s: expected "
				    "a number like 0.01 or 1%%, below 1",
				    val, tok);
		if (!ppm && strspn(val, "0.%") != strlen(val))
			usage_error("probability '%s' for %s is below the "
				    "least one (1 per million)",
				    val, tok);
		if (!strcmp(tok, "drop"))
			seen = &seen_drop;
		else if (!strcmp(tok, "corrupt"))
			seen = &seen_corrupt;
		else
			usage_error("unknown fault '%s' in --faults (drop or "
				    "corrupt)",
				    tok);
		if (*seen)
			usage_error("%s given twice in --faults '%s'", tok,
				    arg);
		*seen = true;
		if (seen == &seen_drop)
			f->drop_ppm = ppm;
		else
			f->corrupt_ppm = ppm;
	}
	free(copy);
	/* each packet is either lost, corrupted or delivered */
	if (f->drop_ppm + f->corrupt_ppm >= 1000000)
		usage_error("drop and corrupt add up to 1 or more: no packet "
			    "would ever arrive");
}

static double parse_timeout(const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (*s < '0' || *s > '9' || errno || *end || !(v > 0) ||
	    v > MAX_TIMEOUT_S)
		usage_error("bad timeout '%s': expected seconds above 0, "
			    "like 30 or 0.5",
			    s);
	return v;
}

/*
 * The default topology for @n ranks: a full mesh while every board can
 * have a port for each other one, then the squarest torus X x Y = n
 * (X >= Y >= 2), and a ring when n is prime.
 */
static void default_topology(unsigned int n, struct fc_topology *t)
{
	char spec[32];
	unsigned int y, best = 1;

	if (n <= FC_MAX_PORTS + 1) {
		snprintf(spec, sizeof(spec), "full:%u", n);
	} else {
		for (y = 2; y * y <= n; y++)
			if (n % y == 0)
				best = y;
		if (best > 1)
			snprintf(spec, sizeof(spec), "torus:%ux%u", n / best,
				 best);
		else
			snprintf(spec, sizeof(spec), "ring:%u", n);
	}
	if (fc_topo_parse(spec, t)) {
		fprintf(stderr, "%s: no default topology for %u ranks\n", prog,
			n);
		exit(1);
	}
}

/* What a cluster name may hold: it becomes a file name and a device name. */
static bool good_name(const char *s)
{
	size_t len = strlen(s);

	return len && len < FCEMU_CLUSTER_NAME_MAX &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789._-") == len &&
	       s[0] != '.' && s[0] != '-';
}

/*
 * Take @sig in the wait loop, unless it came ignored (nohup, a background
 * job of a non-interactive shell): then it stays ignored, for the ranks
 * too. A blocked signal is never discarded, so blocking it would catch it.
 */
static void catch_unless_ignored(sigset_t *set, int sig)
{
	struct sigaction sa;

	if (!sigaction(sig, NULL, &sa) && sa.sa_handler == SIG_IGN)
		return;
	sigaddset(set, sig);
}

/* ---- ranks ---- */

struct rank {
	pid_t pid;  /* 0 once reaped */
	int status; /* wait status */
};

struct run {
	const char *name;
	char topo[32];
	unsigned int n;
	unsigned int first; /* the first rank's number (a host's share) */
	unsigned int size;  /* ranks in all */
	const char *unit;   /* "rank", or "host" for the host keepers */
	int host;	    /* -1, or the simulated host these ranks are on */
	unsigned int hosts;
	struct rank *ranks;
	unsigned int live;
	sigset_t caught; /* blocked; taken with sigtimedwait() */
	sigset_t orig_mask;
	bool pipe_ignored; /* SIGPIPE came ignored: so it stays for ranks */
};

static void __attribute__((noreturn))
exec_rank(struct run *r, unsigned int rank, char **argv, pid_t parent)
{
	char buf[64];
	int fd;

	/* own process group: a signal reaches the program's children too */
	setpgid(0, 0);
	/* no rank outlives fpgacomm-run, which could then not clean up */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(EXIT_NOEXEC);
	/*
	 * Only one reader of the terminal, and not even one: a rank outside
	 * the foreground process group would be stopped when reading it.
	 */
	if (rank > 0 || isatty(STDIN_FILENO)) {
		fd = open("/dev/null", O_RDONLY);
		if (fd >= 0 && fd != STDIN_FILENO) {
			dup2(fd, STDIN_FILENO);
			close(fd);
		}
	}
	if (r->host >= 0) {
		setenv("FPGACOMM_BRIDGE_DIR", HOSTS_DIR, 1);
		snprintf(buf, sizeof(buf), "127.0.0.%d", r->host + 1);
		setenv("FPGACOMM_BRIDGE_ADDR", buf, 1);
		snprintf(buf, sizeof(buf), "%d", r->host);
		setenv("FPGACOMM_HOST", buf, 1);
		snprintf(buf, sizeof(buf), "%u", r->hosts);
		setenv("FPGACOMM_HOSTS", buf, 1);
	}
	snprintf(buf, sizeof(buf), "emu:%s/%u", r->name, rank);
	setenv("FPGACOMM_DEVICE", buf, 1);
	setenv("FPGACOMM_CLUSTER", r->name, 1);
	snprintf(buf, sizeof(buf), "%u", rank);
	setenv("FPGACOMM_RANK", buf, 1);
	snprintf(buf, sizeof(buf), "%u", r->size);
	setenv("FPGACOMM_SIZE", buf, 1);
	setenv("FPGACOMM_TOPOLOGY", r->topo, 1);
	if (!r->pipe_ignored)
		signal(SIGPIPE, SIG_DFL);
	sigprocmask(SIG_SETMASK, &r->orig_mask, NULL);
	execvp(argv[0], argv);
	fprintf(stderr, "%s: rank %u: cannot run %s: %s\n", prog, rank, argv[0],
		strerror(errno));
	_exit(EXIT_NOEXEC);
}

/* Send @sig to the process group of every rank still running. */
static void signal_ranks(struct run *r, int sig)
{
	for (unsigned int i = 0; i < r->n; i++)
		if (r->ranks[i].pid > 0)
			kill(-r->ranks[i].pid, sig);
}

static void report(const char *unit, unsigned int rank, pid_t pid, int status)
{
	if (WIFEXITED(status) && WEXITSTATUS(status))
		fprintf(stderr, "%s: %s %u (pid %d) exited with status %d\n",
			prog, unit, rank, (int)pid, WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		fprintf(stderr,
			"%s: %s %u (pid %d) killed by signal %d (%s)%s\n", prog,
			unit, rank, (int)pid, WTERMSIG(status),
			strsignal(WTERMSIG(status)),
			WCOREDUMP(status) ? ", core dumped" : "");
}

/* Collect every rank that has ended. */
static void reap(struct run *r)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (unsigned int i = 0; i < r->n; i++) {
			if (r->ranks[i].pid != pid)
				continue;
			r->ranks[i].pid = 0;
			r->ranks[i].status = status;
			r->live--;
			report(r->unit, r->first + i, pid, status);
		}
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Wait for every rank, passing signals on and enforcing @timeout (0: none).
 * RETURN VALUE: the exit status of the run.
 */
static int wait_ranks(struct run *r, double timeout)
{
	double deadline = timeout ? now_s() + timeout : 0, kill_at = 0;
	int worst = 0, interrupted = 0, st;
	bool timed_out = false;
	struct timespec ts;
	siginfo_t si;
	double left;
	int sig;

	while (r->live) {
		/* the nearer of the two deadlines, if any */
		left = -1;
		if (kill_at)
			left = kill_at - now_s();
		else if (deadline)
			left = deadline - now_s();
		if (left < 0 && (kill_at || deadline))
			left = 0;
		if (left >= 0) {
			ts.tv_sec = left;
			ts.tv_nsec = (left - ts.tv_sec) * 1e9;
			sig = sigtimedwait(&r->caught, &si, &ts);
		} else {
			sig = sigwaitinfo(&r->caught, &si);
		}
		if (sig == SIGCHLD) {
			reap(r);
		} else if (sig > 0) {
			/* a second interrupt: the ranks did not stop */
			if (interrupted || timed_out) {
				fprintf(stderr, "%s: %s: killing the ranks\n",
					prog, strsignal(sig));
				signal_ranks(r, SIGKILL);
			} else {
				signal_ranks(r, sig);
			}
			if (!interrupted)
				interrupted = sig;
		} else if (errno == EAGAIN && kill_at) {
			fprintf(stderr,
				"%s: %u rank%s still running %.0f s "
				"after SIGTERM: killing\n",
				prog, r->live, r->live == 1 ? "" : "s",
				KILL_GRACE_S);
			signal_ranks(r, SIGKILL);
			kill_at = 0;
			deadline = 0;
		} else if (errno == EAGAIN && deadline) {
			fprintf(stderr,
				"%s: timeout after %g s: stopping %u "
				"rank%s\n",
				prog, timeout, r->live,
				r->live == 1 ? "" : "s");
			timed_out = true;
			signal_ranks(r, SIGTERM);
			kill_at = now_s() + KILL_GRACE_S;
		}
	}
	for (unsigned int i = 0; i < r->n; i++) {
		int s = r->ranks[i].status;

		st = WIFSIGNALED(s) ? 128 + WTERMSIG(s) : WEXITSTATUS(s);
		if (st > worst)
			worst = st;
	}
	if (timed_out)
		return EXIT_TIMEOUT;
	if (interrupted && worst < 128 + interrupted)
		return 128 + interrupted;
	return worst;
}

/*
 * Start the ranks. A failure part of the way kills those already started.
 * RETURN VALUE: 0 or -errno.
 */
static int start_ranks(struct run *r, char **argv)
{
	pid_t parent = getpid(), pid;
	int err;

	for (unsigned int i = 0; i < r->n; i++) {
		fflush(NULL);
		pid = fork();
		if (pid < 0) {
			err = -errno;
			fprintf(stderr, "%s: cannot start rank %u: %s\n", prog,
				i, strerror(errno));
			signal_ranks(r, SIGKILL);
			return err;
		}
		if (!pid)
			exec_rank(r, r->first + i, argv, parent);
		/* both sides set the group: either may run first */
		setpgid(pid, pid);
		r->ranks[i].pid = pid;
		r->live++;
	}
	return 0;
}

/* What the command line asks for. */
struct run_args {
	const char *topo_arg;
	const char *name;
	struct fcemu_faults faults;
	double timeout;
	bool verbose;
	uint64_t n;
	uint64_t hosts; /* 0: one host, no namespaces */
	char **argv;	/* the program and its arguments */
};

static void parse_args(int argc, char **argv, struct run_args *a)
{
	static const struct option opts[] = {
		{ "ranks", required_argument, NULL, 'n' },
		{ "topology", required_argument, NULL, 't' },
		{ "cluster", required_argument, NULL, 'c' },
		{ "faults", required_argument, NULL, 'f' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "hosts", required_argument, NULL, 'H' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(a, 0, sizeof(*a));
	/* '+': the program's own options are not ours */
	while ((c = getopt_long(argc, argv, "+n:t:c:f:T:H:vh", opts, NULL)) !=
	       -1) {
		switch (c) {
		case 'n':
			if (parse_u64(optarg, &a->n) || !a->n ||
			    a->n > FC_MAX_NODES)
				usage_error(
					"bad number of ranks '%s': expected "
					"1 to %u",
					optarg, FC_MAX_NODES);
			break;
		case 't':
			a->topo_arg = optarg;
			break;
		case 'c':
			a->name = optarg;
			break;
		case 'f':
			parse_faults(optarg, &a->faults);
			break;
		case 'T':
			a->timeout = parse_timeout(optarg);
			break;
		case 'H':
			if (parse_u64(optarg, &a->hosts) || !a->hosts ||
			    a->hosts > FC_MAX_NODES)
				usage_error(
					"bad number of hosts '%s': expected "
					"1 to %u",
					optarg, FC_MAX_NODES);
			break;
		case 'v':
			a->verbose = true;
			break;
		default:
			other_option(c, usage);
		}
	}
	if (optind >= argc)
		usage_error("no program given: %s -n N -- PROG [ARGS]...",
			    prog);
	a->argv = argv + optind;
}

/* The topology of --topology, else a default for -n ranks. */
static void choose_topology(struct run_args *a, struct fc_topology *t)
{
	if (!a->topo_arg) {
		if (!a->n)
			usage_error("how many ranks? -n N (or --topology)");
		default_topology(a->n, t);
		return;
	}
	if (fc_topo_parse(a->topo_arg, t))
		usage_error("bad topology '%s': expected ring:N, "
			    "mesh:XxY, torus:XxY (at most %u nodes) "
			    "or full:N (N <= %u)",
			    a->topo_arg, FC_MAX_NODES, FC_MAX_PORTS + 1);
	if (!a->n)
		a->n = t->nodes;
	if (t->nodes != a->n)
		usage_error("topology %s has %u nodes, not the %u ranks of -n",
			    a->topo_arg, t->nodes, (unsigned int)a->n);
}

/*
 * The signals that end a run are taken synchronously from here on, so that
 * none can end fpgacomm-run between creating the shared object and removing
 * it (only SIGKILL can: the ranks then die with it, by PR_SET_PDEATHSIG, but
 * the object stays). SIGCHLD must not be ignored (inherited SIG_IGN would
 * reap the ranks behind our back).
 */
static void take_signals(struct run *r)
{
	signal(SIGCHLD, SIG_DFL);
	/* a closed stderr must not end us before the clean-up */
	r->pipe_ignored = signal(SIGPIPE, SIG_IGN) == SIG_IGN;
	sigemptyset(&r->caught);
	sigaddset(&r->caught, SIGCHLD);
	catch_unless_ignored(&r->caught, SIGINT);
	catch_unless_ignored(&r->caught, SIGTERM);
	catch_unless_ignored(&r->caught, SIGHUP);
	sigprocmask(SIG_BLOCK, &r->caught, &r->orig_mask);
}

/*
 * Create the cluster, run the ranks in it, remove it.
 * RETURN VALUE: the exit status of fpgacomm-run.
 */
static int run_cluster(struct run *r, const struct run_args *a,
		       const struct fc_topology *t)
{
	struct fcemu_cluster *cluster;
	uint64_t remote = 0;
	unsigned int i;
	int ret, status;

	/* a host's share: the other ranks' boards are other hosts' */
	for (i = 0; r->host >= 0 && i < t->nodes; i++)
		if (i < r->first || i >= r->first + r->n)
			remote |= 1ull << i;
	ret = fcemu_cluster_create_part(&cluster, r->name, t, &a->faults,
					remote);
	if (ret) {
		fprintf(stderr, "%s: cannot create cluster %s: %s%s\n", prog,
			r->name, strerror(-ret),
			ret == -EEXIST ? " (another run uses the name, or one "
					 "left /dev/shm/fpgacomm-NAME behind)" :
					 "");
		return 1;
	}
	if (a->verbose)
		fprintf(stderr,
			"%s: cluster %s, %s, %u rank%s, faults drop "
			"%u corrupt %u ppm\n",
			prog, r->name, r->topo, r->n, r->n == 1 ? "" : "s",
			a->faults.drop_ppm, a->faults.corrupt_ppm);

	/* the ranks already started are being killed if this fails */
	ret = start_ranks(r, a->argv);
	status = wait_ranks(r, ret ? 0 : a->timeout);
	if (ret && !status)
		status = 1;

	fcemu_cluster_detach(cluster);
	ret = fcemu_cluster_unlink(r->name);
	/* a rank may have removed it already; anything else is worth a word */
	if (ret && ret != -ENOENT) {
		fprintf(stderr, "%s: cannot remove cluster %s: %s\n", prog,
			r->name, strerror(-ret));
		if (!status)
			status = 1;
	}
	return status;
}

/* ---- simulated hosts ---- */

/*
 * The directory right under /tmp that @path lies in ("/tmp/ci" for
 * "/tmp/ci/build/tests/x") into @top, or "" when it lies elsewhere.
 */
static void tmp_top(const char *path, char *top, size_t len)
{
	size_t n;

	top[0] = '\0';
	if (strncmp(path, "/tmp/", 5))
		return;
	n = strcspn(path + 5, "/");
	if (n && n + 6 <= len)
		snprintf(top, len, "/tmp/%.*s", (int)n, path + 5);
}

/* Where @path (a file or a directory) leaves /tmp, opened to be mounted
 * again inside a private /tmp; -1 when it is not under /tmp. */
static int tmp_keep_open(const char *path, char *top, size_t len)
{
	char real[PATH_MAX];

	if (!path || !realpath(path, real))
		return -1;
	tmp_top(real, top, len);
	return top[0] ? open(top, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
}

/* Mount directory @fd again at @top, inside the new /tmp. */
static int tmp_keep(int fd, const char *top)
{
	char src[64];

	if (fd < 0)
		return 0;
	if (mkdir(top, 0755) && errno != EEXIST)
		return -errno;
	snprintf(src, sizeof(src), "/proc/self/fd/%d", fd);
	return mount(src, top, NULL, MS_BIND | MS_REC, NULL) ? -errno : 0;
}

/*
 * Become simulated host @h: a mount namespace of our own with private
 * /dev/shm and /tmp, in which the directory @dir (the bridges' meeting
 * place, made outside) is seen as HOSTS_DIR. The ranks' program @argv0
 * and the working directory stay where they are when they lie under /tmp
 * (their directory right under it is mounted again inside), as a real
 * host's shared file system would have them. RETURN VALUE: 0 or -errno.
 */
static int enter_host(const char *dir, const char *argv0)
{
	char src[64], cwd[PATH_MAX], top[2][PATH_MAX];
	int dirfd, keep[2] = { -1, -1 }, ret = 0;

	if (unshare(CLONE_NEWNS))
		return -errno;
	/* nothing mounted here reaches the machine's namespace */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return -errno;
	/* opened in our namespace: a bind mount takes no other's */
	dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return -errno;
	keep[0] = tmp_keep_open(getcwd(cwd, sizeof(cwd)), top[0], PATH_MAX);
	if (argv0 && strchr(argv0, '/'))
		keep[1] = tmp_keep_open(argv0, top[1], PATH_MAX);
	if (keep[1] >= 0 && keep[0] >= 0 && !strcmp(top[0], top[1])) {
		close(keep[1]);
		keep[1] = -1;
	}
	if (mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV,
		  "mode=1777") ||
	    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777"))
		ret = -errno;
	for (int i = 0; i < 2 && !ret; i++)
		ret = tmp_keep(keep[i], top[i]);
	if (!ret && mkdir(HOSTS_DIR, 0700))
		ret = -errno;
	snprintf(src, sizeof(src), "/proc/self/fd/%d", dirfd);
	if (!ret && mount(src, HOSTS_DIR, NULL, MS_BIND, NULL))
		ret = -errno;
	close(dirfd);
	for (int i = 0; i < 2; i++)
		if (keep[i] >= 0)
			close(keep[i]);
	return ret;
}

/* The keeper of host @h: its namespace, its share of the ranks, and its
 * part of the cluster, removed when they are done. Never returns. */
static void __attribute__((noreturn))
keeper(struct run *top, const struct run_args *a, const struct fc_topology *t,
       unsigned int h, const char *dir, pid_t parent)
{
	struct run r = *top;
	int ret;

	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	ret = enter_host(dir, a->argv[0]);
	if (ret) {
		fprintf(stderr,
			"%s: host %u: cannot make its namespace: %s%s\n", prog,
			h, strerror(-ret),
			ret == -EPERM ? " (--hosts needs root)" : "");
		_exit(1);
	}
	r.first = (unsigned int)((uint64_t)h * top->n / top->hosts);
	r.n = (unsigned int)((uint64_t)(h + 1) * top->n / top->hosts) - r.first;
	r.ranks += r.first;
	r.live = 0;
	r.unit = "rank";
	r.host = (int)h;
	if (a->verbose)
		fprintf(stderr,
			"%s: host %u (pid %d): ranks %u..%u at 127.0.0.%u\n",
			prog, h, (int)getpid(), r.first, r.first + r.n - 1,
			h + 1);
	_exit(run_cluster(&r, a, t));
}

/* Remove the bridges' names and their directory. */
static void remove_dir(const char *dir)
{
	char path[PATH_MAX];
	struct dirent *e;
	DIR *d = opendir(dir);

	/* the ranks' files too (a program may meet its peers there) */
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			unlink(path);
		}
	if (d)
		closedir(d);
	rmdir(dir);
}

/*
 * Run the ranks on a->hosts simulated hosts: a keeper process per host
 * (enter_host, then run_cluster for its share), waited for as ranks are.
 * RETURN VALUE: the exit status of fpgacomm-run.
 */
static int run_hosts(struct run *r, const struct run_args *a,
		     const struct fc_topology *t)
{
	char dir[64];
	struct rank *keepers;
	struct run top = *r;
	pid_t parent = getpid(), pid;
	int status;
	unsigned int h;

	/* named after us: a test can tell it is gone */
	snprintf(dir, sizeof(dir), "/tmp/fpgacomm-hosts-%d-XXXXXX",
		 (int)getpid());
	r->hosts = (unsigned int)a->hosts;
	keepers = calloc(r->hosts, sizeof(*keepers));
	if (!keepers || !mkdtemp(dir)) {
		fprintf(stderr,
			"%s: cannot make a directory for the hosts: %s\n", prog,
			strerror(errno));
		free(keepers);
		return 1;
	}
	top = *r;
	top.n = r->hosts;
	top.ranks = keepers;
	top.unit = "host";
	for (h = 0; h < r->hosts; h++) {
		fflush(NULL);
		pid = fork();
		if (pid < 0) {
			fprintf(stderr, "%s: cannot start host %u: %s\n", prog,
				h, strerror(errno));
			signal_ranks(&top, SIGKILL);
			break;
		}
		if (!pid)
			keeper(r, a, t, h, dir, parent);
		setpgid(pid, pid);
		keepers[h].pid = pid;
		top.live++;
	}
	/* a host's ranks die with it (PR_SET_PDEATHSIG), its memory too */
	status = wait_ranks(&top, a->timeout);
	if (h < r->hosts && !status)
		status = 1;
	remove_dir(dir);
	free(keepers);
	return status;
}

int main(int argc, char **argv)
{
	char default_name[FCEMU_CLUSTER_NAME_MAX];
	struct run_args a;
	struct fc_topology t;
	struct run r;
	int status;

	parse_args(argc, argv, &a);
	choose_topology(&a, &t);
	if (!a.name) {
		snprintf(default_name, sizeof(default_name), "run-%d",
			 (int)getpid());
		a.name = default_name;
	}
	if (!good_name(a.name))
		usage_error("bad cluster name '%s': 1 to %u letters, digits, "
			    "'.', '_' or '-', not starting with '.' or '-'",
			    a.name, FCEMU_CLUSTER_NAME_MAX - 1);

	if (a.hosts > a.n)
		usage_error("%u hosts for %u ranks: at most one host a rank",
			    (unsigned int)a.hosts, (unsigned int)a.n);
	memset(&r, 0, sizeof(r));
	r.name = a.name;
	r.n = a.n;
	r.size = a.n;
	r.unit = "rank";
	r.host = -1;
	fc_topo_format(&t, r.topo, sizeof(r.topo));
	r.ranks = calloc(a.n, sizeof(*r.ranks));
	if (!r.ranks) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return 1;
	}
	take_signals(&r);
	status = a.hosts ? run_hosts(&r, &a, &t) : run_cluster(&r, &a, &t);
	free(r.ranks);
	return status;
}
