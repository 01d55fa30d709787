// SPDX-License-Identifier: MIT
/*
 * test_driver_fuzz: random and mutated arguments for every FC_IOC_* of
 * /dev/fpgacommN, and random mmap offsets and sizes, from several threads
 * on several files at once, files closed and opened again under them, all
 * without CAP_SYS_RAWIO (what a member of group fpgacomm can do). Then:
 * the fuzzing process ends within a bound (no call hung), and the board
 * still moves data right for a fresh file. The VM harness checks the
 * kernel log (no BUG, WARNING or Oops) and that rmmod leaves nothing.
 *
 * Skips unless FPGACOMM_TEST_DEVICE names a device node (run in the VM by
 * `make check`, a few seconds; `make fuzz` runs it longer). Seconds:
 * FPGACOMM_FUZZ_SECONDS, else fpgacomm_fuzz=N on the kernel command line
 * (how `make fuzz` reaches the guest), else 3.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/capability.h>

#include <fpgacomm/hw.h>
#include <uapi/fpgacomm.h>

#define EXIT_SKIP 77
#define THREADS	  4
#define FILES	  3
#define POOL	  (4u << 20)
/* Drawn addresses reach 4 KiB before the pool, lengths up to half a pool
 * past its end. */
#define GUARD	(POOL / 2 + 8192)
#define HANDLES 64

static const char *path;
static struct fc_ioc_info info;
static uint8_t *pool; /* user memory the calls point into */
static void *guarded; /* the pool and its guards */
static volatile int stop;
static int files[FILES];
static pthread_mutex_t files_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t handles[HANDLES]; /* seen from REGISTER/ALLOC, any file */
static unsigned long calls;

static const unsigned long cmds[] = {
	FC_IOC_INFO,	    FC_IOC_MEM_REGISTER, FC_IOC_MEM_UNREGISTER,
	FC_IOC_MEM_ALLOC,   FC_IOC_SUBMIT,	 FC_IOC_WAIT,
	FC_IOC_RESET,	    FC_IOC_REG_READ,	 FC_IOC_REG_WRITE,
	FC_IOC_CHAN_RING,   FC_IOC_CHAN_HEAD,	 FC_IOC_MEM_INFO,
	FC_IOC_PIO_KICK,    FC_IOC_EQ,		 FC_IOC_EQ_HEAD,
	FC_IOC_PEER_WINDOW,
};

static uint64_t next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A value worth trying: edges, small numbers, handles, pool addresses. */
static uint64_t pick(uint64_t *s)
{
	static const uint64_t edge[] = {
		0,
		1,
		2,
		3,
		4,
		7,
		8,
		63,
		64,
		255,
		256,
		4095,
		4096,
		4097,
		0x7fffffff,
		0x80000000,
		0xffffffff,
		0x100000000ull,
		0x7fffffffffffffffull,
		0x8000000000000000ull,
		~0ull,
		1u << 20,
		1u << 30,
		1ull << 40,
	};
	uint64_t r = next(s);

	switch (r % 6) {
	case 0:
		return edge[(r >> 8) % (sizeof(edge) / sizeof(edge[0]))];
	case 1:
		return handles[(r >> 8) % HANDLES];
	case 2:
		return (uintptr_t)pool + (r >> 8) % (POOL + 8192) - 4096;
	case 3:
		return (r >> 8) % 64;
	case 4:
		return next(s);
	default:
		/* a channel, or a peer window entry (mapped or not) */
		if (r & 0x80)
			return FC_PW_ADDR((r >> 8) % 2, (r >> 16) % 64,
					  (r >> 24) % 8192);
		return FC_FABRIC_CHAN((r >> 8) % 2, (r >> 16) % 16);
	}
}

/* Mostly well-formed structs with a field or two made wrong. */
static void fill_arg(uint64_t *s, unsigned long cmd, uint64_t *arg,
		     struct fc_ioc_xfer *xs)
{
	unsigned int n = _IOC_SIZE(cmd) / 8 + 1, i, k;

	memset(arg, 0, 8 * n);
	switch (cmd) {
	case FC_IOC_MEM_REGISTER: {
		struct fc_ioc_mem *m = (void *)arg;

		m->addr = (uintptr_t)pool + next(s) % POOL;
		m->len = next(s) % (POOL / 2) + 1;
		break;
	}
	case FC_IOC_MEM_ALLOC:
		((struct fc_ioc_mem *)arg)->len = next(s) % (1u << 20) + 1;
		break;
	case FC_IOC_SUBMIT: {
		struct fc_ioc_submit *sb = (void *)arg;

		k = next(s) % 8 + 1;
		for (i = 0; i < k; i++) {
			memset(&xs[i], 0, sizeof(xs[i]));
			xs[i].src.space = next(s) % 4;
			xs[i].src.handle = (uint32_t)pick(s);
			xs[i].src.addr = pick(s);
			xs[i].dst.space = next(s) % 4;
			xs[i].dst.handle = (uint32_t)pick(s);
			xs[i].dst.addr = pick(s);
			xs[i].len = next(s) % 3 ? next(s) % 65536 + 1 : pick(s);
			xs[i].flags = next(s) % 8 ? 0 : (uint32_t)pick(s);
		}
		sb->count = next(s) % 8 ? k : (uint32_t)pick(s);
		sb->xfers = next(s) % 16 ? (uintptr_t)xs : pick(s);
		if (next(s) % 8 == 0) {
			sb->flags = FC_SUBMIT_EVENTFD;
			sb->eventfd = (int32_t)pick(s);
		}
		/* an engine: mostly one of the board's, some out of range */
		if (next(s) % 4 == 0) {
			sb->flags |= FC_SUBMIT_ENGINE;
			sb->engine = next(s) % 4 ? next(s) % 4 :
						   (uint32_t)pick(s);
		}
		break;
	}
	case FC_IOC_WAIT: {
		struct fc_ioc_wait *w = (void *)arg;

		w->ticket = next(s) % 4 ? next(s) % 64 : pick(s);
		w->timeout_ms = (int32_t)(next(s) % 50) - 1;
		break;
	}
	case FC_IOC_REG_READ:
	case FC_IOC_REG_WRITE: {
		struct fc_ioc_reg *r = (void *)arg;

		r->offset = next(s) % 2 ?
				    (uint32_t)(next(s) % FC_BAR0_SIZE) & ~3u :
				    (uint32_t)pick(s);
		r->value = (uint32_t)pick(s);
		break;
	}
	case FC_IOC_CHAN_RING: {
		struct fc_ioc_chan_ring *c = (void *)arg;

		c->chan = (uint32_t)(next(s) % 300);
		c->handle = (uint32_t)pick(s);
		c->slots = 1u << (next(s) % 22);
		c->offset = next(s) % 4 ? 0 : pick(s);
		c->flags = next(s) % 4 ? 0 : 1u << (next(s) % 3);
		if (c->flags == FC_CHAN_RING_EQ && next(s) % 2)
			c->handle = c->slots = 0; /* a good EQ endpoint */
		break;
	}
	case FC_IOC_EQ: {
		struct fc_ioc_eq *q = (void *)arg;

		q->handle = (uint32_t)pick(s);
		q->slots = 1u << (next(s) % 18);
		q->offset = next(s) % 4 ? 0 : pick(s);
		q->flags = next(s) % 4 ? 0 : FC_EQ_OFF;
		break;
	}
	case FC_IOC_EQ_HEAD:
		((uint32_t *)arg)[1] = (uint32_t)pick(s); /* head */
		break;
	case FC_IOC_CHAN_HEAD: {
		struct fc_ioc_chan_head *h = (void *)arg;

		h->chan = (uint32_t)(next(s) % 300);
		h->head = (uint32_t)pick(s);
		break;
	}
	case FC_IOC_PEER_WINDOW: {
		struct fc_ioc_peer_window *w = (void *)arg;

		w->op = next(s) % 8 ? next(s) % 2 + 1 : (uint32_t)pick(s);
		if (w->op == FC_PEER_WINDOW_UNMAP) {
			w->entry = next(s) % 4 ? next(s) % 64 :
						 (uint32_t)pick(s);
			break;
		}
		w->flags = next(s) % 8 ? next(s) % 3 + 1 : (uint32_t)pick(s);
		w->handle = (uint32_t)pick(s);
		w->offset = next(s) % 2 ? 0 : pick(s);
		w->len = next(s) % 2 ? (next(s) % 16 + 1) * 4096 : pick(s);
		break;
	}
	case FC_IOC_MEM_UNREGISTER:
	case FC_IOC_MEM_INFO:
		((uint32_t *)arg)[1] = (uint32_t)pick(s); /* handle */
		break;
	default:
		break;
	}
	/* Now and then, one word of it anything at all. */
	if (next(s) % 4 == 0)
		arg[next(s) % n] = pick(s);
}

static void remember(unsigned long cmd, const uint64_t *arg, uint64_t *s)
{
	const struct fc_ioc_mem *m = (const void *)arg;

	if (cmd == FC_IOC_MEM_REGISTER || cmd == FC_IOC_MEM_ALLOC)
		handles[next(s) % HANDLES] = m->handle;
}

static int some_file(uint64_t *s)
{
	int f;

	pthread_mutex_lock(&files_lock);
	f = files[next(s) % FILES];
	pthread_mutex_unlock(&files_lock);
	return f;
}

/* Close a file and open it again, while the others may be using it. */
static void reopen(uint64_t *s)
{
	unsigned int i = next(s) % FILES;
	int old, f = open(path, O_RDWR | O_CLOEXEC);

	pthread_mutex_lock(&files_lock);
	old = files[i];
	files[i] = f;
	pthread_mutex_unlock(&files_lock);
	if (old >= 0)
		close(old);
}

static void one_mmap(uint64_t *s, int f)
{
	static const uint64_t offs[] = {
		FC_MMAP_REGS, FC_MMAP_APERTURE, FC_MMAP_PIO,
		1ull << 41, /* MEM_ALLOC buffers */
	};
	uint64_t off = next(s) % 2 ? offs[next(s) % 4] + (next(s) % 4) * 4096 :
				     pick(s) & ~4095ull;
	size_t len = (next(s) % 4 + 1) * 4096;
	void *p = mmap(NULL, len, PROT_READ, MAP_SHARED, f, (off_t)off);

	if (p != MAP_FAILED)
		munmap(p, len);
}

static void *fuzz_thread(void *argp)
{
	uint64_t s = (uintptr_t)argp, arg[16];
	struct fc_ioc_xfer xs[8];
	struct pollfd pfd;
	unsigned long cmd, n = 0;
	unsigned int what;
	int f;

	while (!stop) {
		f = some_file(&s);
		what = next(&s) % 100;
		if (what < 2) {
			reopen(&s);
		} else if (what < 6) {
			one_mmap(&s, f);
		} else if (what < 8) {
			pfd = (struct pollfd){ .fd = f, .events = POLLIN };
			poll(&pfd, 1, 0);
		} else if (what < 10) {
			/* An unknown or misdirected command. */
			cmd = _IOC(next(&s) % 4,
				   next(&s) % 2 ?
					   FC_IOC_MAGIC :
					   (unsigned int)(next(&s) & 0xff),
				   next(&s) % 0x20, next(&s) % 128);
			fill_arg(&s, cmd, arg, xs);
			ioctl(f, cmd, arg);
		} else {
			cmd = cmds[next(&s) % (sizeof(cmds) / sizeof(cmds[0]))];
			fill_arg(&s, cmd, arg, xs);
			if (ioctl(f, cmd,
				  next(&s) % 64 ?
					  (void *)arg :
					  (void *)(uintptr_t)pick(&s)) == 0)
				remember(cmd, arg, &s);
		}
		n++;
	}
	__atomic_fetch_add(&calls, n, __ATOMIC_RELAXED);
	return NULL;
}

static void drop_caps(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return;
	d[0].effective &= ~(1u << CAP_SYS_RAWIO | 1u << CAP_IPC_LOCK);
	d[0].permitted &= ~(1u << CAP_SYS_RAWIO | 1u << CAP_IPC_LOCK);
	syscall(SYS_capset, &h, d);
}

static int fuzz(unsigned int seconds, uint64_t seed)
{
	struct rlimit rl = { 16u << 20, 16u << 20 };
	pthread_t t[THREADS];
	unsigned int i;

	drop_caps();
	setrlimit(RLIMIT_MEMLOCK, &rl);
	/*
	 * The pool amid inaccessible guard memory as wide as any address or
	 * length drawn past it reaches: the board writes only into the pool,
	 * never into a neighbouring mapping (a thread's stack, the heap).
	 */
	guarded = mmap(NULL, POOL + 2 * GUARD, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (guarded == MAP_FAILED)
		return 2;
	pool = (uint8_t *)guarded + GUARD;
	if (mprotect(pool, POOL, PROT_READ | PROT_WRITE))
		return 2;
	memset(pool, 0x5a, POOL);
	for (i = 0; i < FILES; i++) {
		files[i] = open(path, O_RDWR | O_CLOEXEC);
		if (files[i] < 0)
			return 3;
	}
	for (i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, fuzz_thread,
				   (void *)(uintptr_t)(seed + i * 7919)))
			return 4;
	sleep(seconds);
	stop = 1;
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	printf("%lu calls in %u s, %d threads on %d files\n", calls, seconds,
	       THREADS, FILES);
	for (i = 0; i < FILES; i++)
		if (files[i] >= 0)
			close(files[i]);
	return 0;
}

/* After it all, a fresh file moves 64 KiB to board memory and back. */
static int board_works(void)
{
	static uint8_t out[65536], in[65536];
	struct fc_ioc_mem a = { .addr = (uintptr_t)out, .len = sizeof(out) };
	struct fc_ioc_mem b = { .addr = (uintptr_t)in, .len = sizeof(in) };
	struct fc_ioc_xfer x[2];
	struct fc_ioc_submit sb = { .count = 2, .xfers = (uintptr_t)x };
	struct fc_ioc_wait w = { .timeout_ms = 20000 };
	unsigned int i;
	int f = open(path, O_RDWR | O_CLOEXEC);

	if (f < 0)
		return 10;
	for (i = 0; i < sizeof(out); i++)
		out[i] = (uint8_t)(i * 13 + 7);
	if (ioctl(f, FC_IOC_MEM_REGISTER, &a) ||
	    ioctl(f, FC_IOC_MEM_REGISTER, &b))
		return 11;
	memset(x, 0, sizeof(x));
	x[0].src = (struct fc_ioc_loc){ FC_SPACE_HOST, a.handle, 0 };
	x[0].dst = (struct fc_ioc_loc){ FC_SPACE_BOARD, 0, 1u << 20 };
	x[0].len = sizeof(out);
	x[1].src = x[0].dst;
	x[1].dst = (struct fc_ioc_loc){ FC_SPACE_HOST, b.handle, 0 };
	x[1].len = sizeof(in);
	if (ioctl(f, FC_IOC_SUBMIT, &sb))
		return 12;
	w.ticket = sb.ticket;
	if (ioctl(f, FC_IOC_WAIT, &w) || w.status)
		return 13;
	if (memcmp(out, in, sizeof(in)))
		return 14;
	close(f);
	return 0;
}

static unsigned int fuzz_seconds(void)
{
	const char *env = getenv("FPGACOMM_FUZZ_SECONDS");
	char line[4096], *p;
	unsigned int n = 3;
	FILE *c;

	if (env && *env)
		return (unsigned int)atoi(env);
	c = fopen("/proc/cmdline", "r");
	if (c) {
		if (fgets(line, sizeof(line), c) &&
		    (p = strstr(line, "fpgacomm_fuzz=")))
			n = (unsigned int)atoi(p + strlen("fpgacomm_fuzz="));
		fclose(c);
	}
	return n;
}

int main(void)
{
	unsigned int seconds = fuzz_seconds(), waited;
	uint64_t seed = (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid();
	const char *env_seed = getenv("FPGACOMM_TEST_SEED");
	struct stat st;
	int status, fd, rc;
	pid_t pid;

	path = getenv("FPGACOMM_TEST_DEVICE");
	if (!path || stat(path, &st) || !S_ISCHR(st.st_mode)) {
		printf("SKIP: FPGACOMM_TEST_DEVICE (%s) is not a /dev node\n",
		       path ? path : "unset");
		return EXIT_SKIP;
	}
	if (env_seed && *env_seed)
		seed = strtoull(env_seed, NULL, 0);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0 || ioctl(fd, FC_IOC_INFO, &info)) {
		printf("%s: %s\n", path, strerror(errno));
		return 1;
	}
	close(fd);
	printf("test_driver_fuzz: %s for %u s, seed %llu (FPGACOMM_TEST_SEED repeats it)\n",
	       path, seconds, (unsigned long long)seed);
	fflush(stdout);

	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0)
		_exit(fuzz(seconds, seed));
	/* Every call ends: WAIT at most 50 ms, a chain at most its timeout. */
	for (waited = 0; waitpid(pid, &status, WNOHANG) != pid; waited++) {
		if (waited > (seconds + 60) * 10) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			printf("FAIL: the fuzzing process hung\n");
			return 1;
		}
		usleep(100000);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		printf("FAIL: the fuzzing process ended with status %#x\n",
		       status);
		return 1;
	}
	rc = board_works();
	if (rc) {
		printf("FAIL: the board no longer moves data right (%d)\n", rc);
		return 1;
	}
	printf("PASS: no call hung, and the board moves data right afterwards\n");
	return 0;
}
