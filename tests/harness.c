// SPDX-License-Identifier: MIT
/*
 * The setup and helpers shared by the library test programs; see harness.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

const char *dev_name;
struct fc_dev *dev;
struct fc_info info;
uint64_t seed;
unsigned int n_skipped;

static uint64_t rng;

uint64_t rnd(void)
{
	/* splitmix64 */
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void rnd_fill(void *p, size_t len)
{
	uint8_t *b = p;
	uint64_t v;

	while (len >= 8) {
		v = rnd();
		memcpy(b, &v, 8);
		b += 8;
		len -= 8;
	}
	v = rnd();
	memcpy(b, &v, len);
}

void rng_reset(const char *name)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (*name)
		h = (h ^ (uint8_t)*name++) * 0x100000001b3ull;
	rng = seed ^ h;
}

struct fc_xfer xfer(struct fc_loc s, struct fc_loc d, uint64_t len)
{
	struct fc_xfer x;

	memset(&x, 0, sizeof(x));
	x.src = s;
	x.dst = d;
	x.len = len;
	return x;
}

void assert_same(const void *got, const void *want, size_t len,
		 const char *what)
{
	const uint8_t *g = got, *w = want;
	size_t i;

	if (!memcmp(g, w, len))
		return;
	for (i = 0; i < len && g[i] == w[i]; i++)
		;
	fail_msg("%s: byte %zu of %zu differs: got 0x%02x, expected 0x%02x "
		 "(seed %" PRIu64 ")",
		 what, i, len, g[i], w[i], seed);
}

int is_emulated(void)
{
	return !!(info.caps & FC_CAP_EMULATED);
}

int harness_open(const char *prog)
{
	const char *s = getenv("FPGACOMM_TEST_SEED");
	int rc;

	dev_name = getenv("FPGACOMM_TEST_DEVICE");
	if (!dev_name || !*dev_name)
		dev_name = "emu:";
	setenv("FPGACOMM_EMU_MEM", "512M", 0);
	seed = s && *s ? strtoull(s, NULL, 0) :
			 (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	printf("%s: device %s, seed %" PRIu64
	       " (FPGACOMM_TEST_SEED repeats it)\n",
	       prog, dev_name, seed);

	rc = fc_open(&dev, dev_name);
	if (rc) {
		/* no such board is a skip; a broken emulator is a failure */
		if (strncmp(dev_name, "emu:", 4) &&
		    (rc == -ENOENT || rc == -ENODEV)) {
			printf("SKIP: no board %s (%s)\n", dev_name,
			       fc_strerror(rc));
			return EXIT_SKIP;
		}
		printf("fc_open(\"%s\"): %s\n", dev_name, fc_strerror(rc));
		return 1;
	}
	rc = fc_query(dev, &info);
	if (rc) {
		printf("fc_query: %s\n", fc_strerror(rc));
		return 1;
	}
	return 0;
}

int harness_alloc(size_t len, struct fc_mem **a, struct fc_mem **b)
{
	if (fc_mem_alloc(dev, len, 0, a) || !*a)
		return -1;
	if (fc_mem_alloc(dev, len, 0, b) || !*b)
		return -1;
	return 0;
}

int harness_close(struct fc_mem *a, struct fc_mem *b)
{
	int ret = 0;

	/* a test that closes the board may have failed to open it again */
	if (!dev)
		return -1;
	if (a && fc_mem_free(dev, a))
		ret = -1;
	if (b && fc_mem_free(dev, b))
		ret = -1;
	if (fc_close(dev))
		ret = -1;
	return ret;
}

int harness_run_group(const char *name, const struct CMUnitTest *tests,
		      size_t n, CMFixtureFunction setup,
		      CMFixtureFunction teardown)
{
	const char *filter = getenv("FPGACOMM_TEST_FILTER");

	if (filter)
		cmocka_set_test_filter(filter);
	/* what cmocka_run_group_tests() expands to, for an array it can't size */
	if (_cmocka_run_group_tests(name, tests, n, setup, teardown))
		return 1;
	return n_skipped == n ? EXIT_SKIP : 0;
}

int harness_rank_world(struct fc_dev **devp, struct fc_group **world,
		       uint32_t *rank, uint32_t *size)
{
	int rc = fc_open(devp, NULL);

	if (rc) {
		fprintf(stderr, "fc_open: %s\n", fc_strerror(rc));
		return 1;
	}
	rc = fc_group_world(*devp, world);
	if (rc) {
		fprintf(stderr, "fc_group_world: %s\n", fc_strerror(rc));
		fc_close(*devp);
		return 1;
	}
	*rank = (uint32_t)fc_group_rank(*world);
	*size = (uint32_t)fc_group_size(*world);
	return 0;
}

int harness_find_run(char *self, size_t self_len, char *run, size_t run_len)
{
	const char *tdev = getenv("FPGACOMM_TEST_DEVICE");
	char dir[PATH_MAX];
	ssize_t len;

	if (tdev && *tdev && strncmp(tdev, "emu:", 4)) {
		printf("SKIP: %s: the ranks need an emulated cluster\n", tdev);
		return EXIT_SKIP;
	}
	len = readlink("/proc/self/exe", self, self_len - 1);
	if (len < 0 || (size_t)len >= sizeof(dir))
		return 1;
	self[len] = 0;
	strcpy(dir, self);
	snprintf(run, run_len, "%s/../tools/fpgacomm-run", dirname(dir));
	if (access(run, X_OK)) {
		printf("SKIP: no %s\n", run);
		return EXIT_SKIP;
	}
	return 0;
}

int harness_launch_ranks(const char *run, const char *self, int ranks,
			 const char *topology, const char *faults,
			 const char *const *env)
{
	const char *argv[16];
	char n[12];
	int i = 0, st;
	pid_t pid;

	snprintf(n, sizeof(n), "%d", ranks);
	argv[i++] = run;
	argv[i++] = "-n";
	argv[i++] = n;
	argv[i++] = "--timeout";
	argv[i++] = "300";
	if (topology) {
		argv[i++] = "--topology";
		argv[i++] = topology;
	}
	if (faults) {
		argv[i++] = "--faults";
		argv[i++] = faults;
	}
	argv[i++] = "--";
	argv[i++] = self;
	argv[i] = NULL;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		for (; env && env[0]; env += 2)
			if (env[1])
				setenv(env[0], env[1], 1);
		execv(run, (char *const *)argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0)
		return 1;
	st = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	printf("== status %d\n", st);
	return st;
}
