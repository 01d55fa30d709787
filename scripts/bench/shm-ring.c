// SPDX-License-Identifier: MIT
/*
 * shm-ring: the floor for scripts/bench-fabric.sh's ping-pong. Two
 * processes (this one and a child it forks) pass messages through two
 * single-producer single-consumer rings in shared memory, one each way:
 * the sender copies the message in and publishes its tail, the receiver
 * sees the tail move, copies the message out and publishes its head. Two
 * copies and two cache lines bounced per message: about the least any
 * transport through shared memory does on these cores.
 *
 * It measures exactly as osu-mpi.c and fpgacomm-bench pingpong do, with
 * the same sizes, iteration counts, warm-up and output: per size WARMUP
 * untimed round trips, a barrier (a 1-byte round trip here), then ITERS
 * timed round trips, timed by the parent (CLOCK_MONOTONIC); latency is the
 * time over 2 * ITERS, in microseconds. ITERS is 1000 unless -i is given,
 * but never more than moves 64 MiB, and never fewer than 10.
 *
 * A waiting side waits as the library does (wait_change()): it polls,
 * yielding now and then, and sleeps on a futex only after a while, so
 * that a stalled peer costs no CPU. The two processes are bound to the
 * first two CPUs they may run on, one each, as mpirun binds two ranks
 * (--no-bind leaves them to the scheduler, as fpgacomm-run does).
 *
 * Built by scripts/bench-fabric.sh with cc into build/bench/; run as
 *   build/bench/shm-ring pingpong -s 8,4K,64K
 */
#define _GNU_SOURCE /* sched_setaffinity */
#include <errno.h>
#include <getopt.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The same constants as tools/fpgacomm-bench.c and osu-mpi.c. */
#define MAX_SIZES 64
#define MAX_MSG	  (16u << 20) /* FC_CHAN_MAX_MSG */
#define WARMUP	  2
/* How a waiting side waits: as lib/core/util.c's fc__backoff(). */
#define SPIN_NS	      (50 * 1000ull)
#define SPIN_YIELD_NS (5 * 1000ull)
#define YIELD_ROUNDS  16
#define LINE	      64
/* Bytes of a ring, and the most one copy moves before it is published. */
#ifndef RING_BYTES
#define RING_BYTES (256u << 10)
#endif
#ifndef CHUNK
#define CHUNK (16u << 10)
#endif

static const char *const prog = "shm-ring";

/*
 * One direction. Counters are byte positions, modulo 2^32 (the ring's
 * size divides it); each on a cache line of its own, as the two sides
 * write them. The bytes are a stream: a message is its 8-byte length, then
 * its bytes; a large one goes through in chunks, both sides copying at once.
 */
struct ring {
	_Alignas(LINE) _Atomic uint32_t tail; /* written by the producer */
	_Atomic uint32_t tail_sleeper;	      /* the consumer sleeps on tail */
	_Alignas(LINE) _Atomic uint32_t head; /* written by the consumer */
	_Atomic uint32_t head_sleeper;	      /* the producer sleeps on head */
	_Alignas(LINE) unsigned char data[];
};

static void die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(errno));
	exit(1);
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s pingpong [-s LIST] [-i N] [--no-bind]\n"
		"Ping-pong latency (half the round trip) between this process and\n"
		"a child through a ring in shared memory each way, measured as\n"
		"tools/fpgacomm-bench and osu-mpi measure a channel.\n"
		"  -s, --sizes LIST   message sizes, comma separated, suffixes K/M\n"
		"                     (default 1,2,4,...,1M)\n"
		"  -i, --iters N      iterations per size (default 1000, fewer for\n"
		"                     large messages: at most 64 MiB moved)\n"
		"  -n, --no-bind      leave the processes unbound (default: one\n"
		"                     on each of the first two CPUs allowed)\n",
		prog);
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/*
 * Wait until *@word is no longer @old, as the library waits (lib/core/util.c),
 * so that the two differ in their transports, not in how they wait: poll
 * with a pause for SPIN_NS, yielding every SPIN_YIELD_NS (a peer waiting
 * for our core runs), then yield YIELD_ROUNDS times, then sleep on the
 * word. The other side stores the word, then wakes a sleeper it sees
 * flagged; both sequentially consistent, so either it sees the flag or
 * the futex sees the new value.
 */
static void wait_change(_Atomic uint32_t *word, _Atomic uint32_t *sleeper,
			uint32_t old)
{
	uint64_t start = 0, yielded = 0, t;
	unsigned int i, yields = 0;

	for (;;) {
		for (i = 0; i < 16; i++) {
			if (atomic_load_explicit(word, memory_order_acquire) !=
			    old)
				return;
			cpu_relax();
		}
		t = now_ns();
		if (!start)
			start = yielded = t;
		if (t - start < SPIN_NS) {
			if (t - yielded >= SPIN_YIELD_NS) {
				yielded = t;
				sched_yield();
			}
		} else if (yields < YIELD_ROUNDS) {
			yields++;
			sched_yield();
		} else {
			atomic_store(sleeper, 1);
			if (atomic_load(word) == old)
				syscall(SYS_futex, word, FUTEX_WAIT, old, NULL,
					NULL, 0);
			atomic_store(sleeper, 0);
		}
	}
}

static void publish(_Atomic uint32_t *word, _Atomic uint32_t *sleeper,
		    uint32_t val)
{
	atomic_store(word, val);
	if (atomic_load(sleeper))
		syscall(SYS_futex, word, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* Copy between the ring at position @pos and @buf, around its end. */
static void copy_in(struct ring *r, uint32_t pos, const void *buf, size_t len)
{
	uint32_t at = pos & (RING_BYTES - 1);
	size_t first = len < RING_BYTES - at ? len : RING_BYTES - at;

	memcpy(r->data + at, buf, first);
	memcpy(r->data, (const char *)buf + first, len - first);
}

static void copy_out(struct ring *r, uint32_t pos, void *buf, size_t len)
{
	uint32_t at = pos & (RING_BYTES - 1);
	size_t first = len < RING_BYTES - at ? len : RING_BYTES - at;

	memcpy(buf, r->data + at, first);
	memcpy((char *)buf + first, r->data, len - first);
}

/*
 * Append @len bytes at *@tail, CHUNK at a time, each chunk published as it
 * is in, so that the receiver copies one out while the next goes in. With
 * @hold, the last piece stays unpublished (a header waiting for its data).
 */
static void ring_write(struct ring *r, uint32_t *tail, const void *src,
		       size_t len, bool hold)
{
	uint32_t head, room, n;

	while (len) {
		head = atomic_load_explicit(&r->head, memory_order_acquire);
		room = RING_BYTES - (*tail - head);
		if (!room) {
			if (atomic_load_explicit(&r->tail,
						 memory_order_relaxed) != *tail)
				publish(&r->tail, &r->tail_sleeper, *tail);
			wait_change(&r->head, &r->head_sleeper, head);
			continue;
		}
		n = len < room ? (uint32_t)len : room;
		n = n < CHUNK ? n : CHUNK;
		copy_in(r, *tail, src, n);
		*tail += n;
		src = (const char *)src + n;
		len -= n;
		if (len || !hold)
			publish(&r->tail, &r->tail_sleeper, *tail);
	}
}

/* Take @len bytes from *@head, as they come, freeing room as it goes. */
static void ring_read(struct ring *r, uint32_t *head, void *dst, size_t len,
		      bool hold)
{
	uint32_t tail, n;

	while (len) {
		tail = atomic_load_explicit(&r->tail, memory_order_acquire);
		if (tail == *head) {
			if (atomic_load_explicit(&r->head,
						 memory_order_relaxed) != *head)
				publish(&r->head, &r->head_sleeper, *head);
			wait_change(&r->tail, &r->tail_sleeper, tail);
			continue;
		}
		n = tail - *head < len ? tail - *head : (uint32_t)len;
		copy_out(r, *head, dst, n);
		*head += n;
		dst = (char *)dst + n;
		len -= n;
		if (len || !hold)
			publish(&r->head, &r->head_sleeper, *head);
	}
}

/* A message: its length (8 bytes), then its bytes. */
static void ring_send(struct ring *r, const void *buf, size_t len)
{
	uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	uint64_t hdr = len;

	ring_write(r, &tail, &hdr, sizeof(hdr), true);
	ring_write(r, &tail, buf, len, false);
}

static size_t ring_recv(struct ring *r, void *buf, size_t cap)
{
	uint32_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	uint64_t hdr;

	ring_read(r, &head, &hdr, sizeof(hdr), true);
	if (hdr > cap) {
		fprintf(stderr, "%s: a message of %llu bytes for %zu\n", prog,
			(unsigned long long)hdr, cap);
		exit(1);
	}
	ring_read(r, &head, buf, hdr, false);
	return hdr;
}

static void pingpong(struct ring *out, struct ring *in, bool lead, char *buf,
		     uint64_t size, unsigned int iters)
{
	for (unsigned int i = 0; i < iters; i++) {
		if (lead) {
			ring_send(out, buf, size);
			ring_recv(in, buf, size);
		} else {
			ring_recv(in, buf, size);
			ring_send(out, buf, size);
		}
	}
}

/* A pattern that differs by size and by position. */
static void fill(char *buf, uint64_t size, unsigned int salt)
{
	for (uint64_t i = 0; i < size; i++)
		buf[i] = (char)(i * 131 + salt * 7 + (i >> 8));
}

static bool check(const char *buf, uint64_t size, unsigned int salt)
{
	for (uint64_t i = 0; i < size; i++)
		if (buf[i] != (char)(i * 131 + salt * 7 + (i >> 8)))
			return false;
	return true;
}

/* The first two CPUs this process may run on, or -1s if it has one. */
static void first_two_cpus(int cpu[2])
{
	unsigned int n = 0;
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		die("sched_getaffinity");
	for (int i = 0; i < CPU_SETSIZE && n < 2; i++)
		if (CPU_ISSET(i, &set))
			cpu[n++] = i;
	if (n < 2)
		cpu[0] = cpu[1] = -1;
}

/* "8", "4K", "4KiB", "1M": RETURN VALUE 0, or -1 for anything else. */
static int parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	if (shift)
		end++;
	if (shift && (!strcmp(end, "iB") || !strcmp(end, "B")))
		end += strlen(end);
	if (*end || v > (MAX_MSG >> shift))
		return -1;
	*out = v << shift;
	return 0;
}

static unsigned int parse_sizes(const char *s, uint64_t *sizes)
{
	char *copy = strdup(s), *tok, *save = NULL;
	unsigned int n = 0;

	if (!copy)
		die("strdup");
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (n == MAX_SIZES || parse_size(tok, &sizes[n]) || !sizes[n]) {
			fprintf(stderr,
				"%s: bad size '%s' (1 to 16M, at most %u)\n",
				prog, tok, MAX_SIZES);
			exit(2);
		}
		n++;
	}
	free(copy);
	if (!n) {
		fprintf(stderr, "%s: no sizes\n", prog);
		exit(2);
	}
	return n;
}

/* As fpgacomm-bench's iters_for(). */
static unsigned int iters_for(uint64_t size, unsigned int iters, bool given)
{
	uint64_t cap = (64ull << 20) / size;

	if (given)
		return iters;
	if (cap < 10)
		cap = 10;
	return iters < cap ? iters : (unsigned int)cap;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "sizes", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'i' },
		{ "no-bind", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t sizes[MAX_SIZES], max = 0;
	unsigned int nsizes = 0, iters = 1000, n, s;
	struct ring *ring[2], *out, *in;
	bool iters_given = false, lead, bind = true;
	int cpu[2] = { -1, -1 };
	size_t ring_size;
	int c, status;
	char *buf, *end;
	double t0, dt;
	void *shm;
	pid_t pid;
	long v;

	while ((c = getopt_long(argc, argv, "s:i:nh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			nsizes = parse_sizes(optarg, sizes);
			break;
		case 'i':
			v = strtol(optarg, &end, 10);
			if (*end || v < 1 || v > 100000000) {
				fprintf(stderr,
					"%s: bad iteration count '%s'\n", prog,
					optarg);
				return 2;
			}
			iters = (unsigned int)v;
			iters_given = true;
			break;
		case 'n':
			bind = false;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1 || strcmp(argv[optind], "pingpong")) {
		usage(stderr);
		return 2;
	}
	if (!nsizes)
		for (uint64_t x = 1; x <= (1u << 20); x <<= 1)
			sizes[nsizes++] = x;
	for (s = 0; s < nsizes; s++)
		if (sizes[s] > max)
			max = sizes[s];

	ring_size = sizeof(struct ring) + RING_BYTES;
	shm = mmap(NULL, 2 * ring_size, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shm == MAP_FAILED)
		die("mmap");
	/* no page faults in the timed loops */
	memset(shm, 0, 2 * ring_size);
	ring[0] = shm;
	ring[1] = (struct ring *)((char *)shm + ring_size);
	buf = calloc(1, max);
	if (!buf)
		die("calloc");
	memset(buf, 1, max);

	if (bind)
		first_two_cpus(cpu);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork");
	lead = pid > 0;
	if (!lead && prctl(PR_SET_PDEATHSIG, SIGKILL))
		die("prctl");
	out = ring[!lead];
	in = ring[lead];
	if (cpu[!lead] >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu[!lead], &set);
		if (sched_setaffinity(0, sizeof(set), &set))
			die("sched_setaffinity");
	}
	if (lead) {
		if (cpu[1] >= 0)
			printf("# %s pingpong: parent (CPU %d) <-> child (CPU %d)\n",
			       prog, cpu[0], cpu[1]);
		else
			printf("# %s pingpong: parent <-> child, unbound\n",
			       prog);
		printf("# %-10s %18s\n", "Size", "Latency (us)");
	}
	for (s = 0; s < nsizes; s++) {
		n = iters_for(sizes[s], iters, iters_given);
		if (lead)
			fill(buf, sizes[s], s);
		pingpong(out, in, lead, buf, sizes[s], WARMUP);
		pingpong(out, in, lead, buf, 1, 1); /* the barrier */
		t0 = now_us();
		pingpong(out, in, lead, buf, sizes[s], n);
		dt = now_us() - t0;
		/* every message came back as it went */
		if (lead && !check(buf, sizes[s], s)) {
			fprintf(stderr,
				"%s: %llu-byte messages came back changed\n",
				prog, (unsigned long long)sizes[s]);
			return 1;
		}
		if (lead) {
			printf("%-12llu %18.3f\n", (unsigned long long)sizes[s],
			       dt / (2.0 * n));
			fflush(stdout);
		}
	}
	if (!lead)
		_exit(0);
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "%s: the child failed (status 0x%x)\n", prog,
			status);
		return 1;
	}
	free(buf);
	return 0;
}
