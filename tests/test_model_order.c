// SPDX-License-Identifier: MIT
/*
 * test_model_order: the multi-rank suites with the CIRCUS timing model on
 * and the boards taking their packets in simulated-time order (its
 * default; docs/model.md, "Order of delivery"). test_channels' ranks on
 * 2, 3 and 4 boards of a full mesh and 4 of a 2x2 torus (among them
 * every rank sending 50 messages to every rank before receiving any:
 * rings fill in host time, and the order must not stall), then
 * test_tagged, test_coll_mem, test_credits, test_sort, test_collectives
 * and test_progress whole, each launching its own shapes. Each must pass
 * as it does in host order.
 *
 * Not here: test_fabric_concurrency, whose sleeping receiver waits outside
 * the library while its peers need its promise (docs/model.md says why
 * that cannot be ordered in time).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "launch.h"

#define MODEL "circus"

/* The test program @name beside this one into @path. RETURN VALUE: 0,
 * EXIT_SKIP (said why) without it or without fpgacomm-run. */
static int find(const char *name, char *path, size_t len, char *run,
		size_t run_len)
{
	char self[PATH_MAX], *slash;
	int rc = harness_find_run(self, sizeof(self), run, run_len);

	if (rc)
		return rc;
	slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	snprintf(path, len, "%s/%s", slash ? self : ".", name);
	if (access(path, X_OK)) {
		print_message("%s: not built\n", path);
		return EXIT_SKIP;
	}
	return 0;
}

/* The ranks of @name on @topo under the model, in simulated-time order. */
static int ranks_in_order(const char *name, int ranks, const char *topo)
{
	const char *env[] = { "FPGACOMM_EMU_MODEL", MODEL, NULL };
	char path[PATH_MAX + 64], run[PATH_MAX + 32];
	int rc = find(name, path, sizeof(path), run, sizeof(run));

	if (rc)
		return rc;
	print_message(
		"== FPGACOMM_EMU_MODEL=%s fpgacomm-run -n %d -t %s -- %s\n",
		MODEL, ranks, topo, name);
	unsetenv("FPGACOMM_EMU_MODEL_ORDER");
	unsetenv("FPGACOMM_TEST_FILTER");
	return harness_launch_ranks(run, path, ranks, topo, NULL, env);
}

/* Program @name whole (it launches its own ranks) under the model. */
static int suite_in_order(const char *name)
{
	char path[PATH_MAX + 64], run[PATH_MAX + 32];
	int rc = find(name, path, sizeof(path), run, sizeof(run)), st;
	pid_t pid;

	if (rc)
		return rc;
	print_message("== FPGACOMM_EMU_MODEL=%s %s\n", MODEL, name);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		setenv("FPGACOMM_EMU_MODEL", MODEL, 1);
		unsetenv("FPGACOMM_EMU_MODEL_ORDER");
		unsetenv("FPGACOMM_TEST_FILTER");
		execl(path, name, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 1;
	st = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	print_message("== %s: status %d\n", name, st);
	return st;
}

static void check(int rc, const char *what)
{
	if (rc == EXIT_SKIP)
		skip_because("no fpgacomm-run or suite to run (or not on an "
			     "emulated board)");
	if (rc)
		fail_msg("%s in simulated-time order: exit %d", what, rc);
}

static void test_channels_2(void **state)
{
	check(ranks_in_order("test_channels", 2, "full:2"),
	      "test_channels -n 2");
}

static void test_channels_3(void **state)
{
	check(ranks_in_order("test_channels", 3, "full:3"),
	      "test_channels -n 3");
}

static void test_channels_4(void **state)
{
	check(ranks_in_order("test_channels", 4, "full:4"),
	      "test_channels -n 4");
}

static void test_channels_torus(void **state)
{
	check(ranks_in_order("test_channels", 4, "torus:2x2"),
	      "test_channels -t torus:2x2");
}

#define SUITE(name)                                  \
	static void name##_whole(void **state)       \
	{                                            \
		check(suite_in_order(#name), #name); \
	}
SUITE(test_tagged)
SUITE(test_coll_mem)
SUITE(test_credits)
SUITE(test_sort)
SUITE(test_collectives)
SUITE(test_progress)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_channels_2),
		cmocka_unit_test(test_channels_3),
		cmocka_unit_test(test_channels_4),
		cmocka_unit_test(test_channels_torus),
		cmocka_unit_test(test_tagged_whole),
		cmocka_unit_test(test_coll_mem_whole),
		cmocka_unit_test(test_credits_whole),
		cmocka_unit_test(test_sort_whole),
		cmocka_unit_test(test_collectives_whole),
		cmocka_unit_test(test_progress_whole),
	};
	const char *tdev = getenv("FPGACOMM_TEST_DEVICE");

	printf("test_model_order: the multi-rank suites in simulated-time "
	       "order\n");
	if (tdev && *tdev && strncmp(tdev, "emu:", 4)) {
		printf("SKIP: %s: the ranks need an emulated cluster\n", tdev);
		return EXIT_SKIP;
	}
	if (getenv("FPGACOMM_TEST_FILTER"))
		cmocka_set_test_filter(getenv("FPGACOMM_TEST_FILTER"));
	if (cmocka_run_group_tests(tests, NULL, NULL))
		return 1;
	return n_skipped == sizeof(tests) / sizeof(tests[0]) ? EXIT_SKIP : 0;
}
