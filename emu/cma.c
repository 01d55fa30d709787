// SPDX-License-Identifier: MIT
/*
 * Cross-memory attach (process_vm_readv/writev) between the processes of
 * an emulated cluster, with which bursts (emu/burst.c) copy: may this
 * process's peers read its memory? Asked once, when a process claims its
 * board (emu/cluster.c), which so needs nothing of burst.c.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cluster_internal.h"

#ifndef PR_SET_PTRACER
#define PR_SET_PTRACER 0x59616d61
#endif

/* Yama's ptrace_scope, or 0 without Yama. */
static int yama_scope(void)
{
	char buf[8] = "";
	int fd = open("/proc/sys/kernel/yama/ptrace_scope",
		      O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	if (read(fd, buf, sizeof(buf) - 1) <= 0)
		buf[0] = 0;
	close(fd);
	return atoi(buf);
}

/*
 * Under Yama's scope 1 only our ancestors may read our memory, and the
 * peers are not. They are the descendants of our launcher (fpgacomm-run,
 * mpirun's daemon, slurmstepd), and Yama lets a named process and its
 * descendants in: name the launcher, never any process of the user.
 */
static void let_peers_read(void)
{
	pid_t launcher = getppid();

	if (yama_scope() == 1 && launcher > 1)
		prctl(PR_SET_PTRACER, (unsigned long)launcher, 0, 0, 0);
}

/* Can this process read memory by cross-memory attach at all? */
static bool cma_works(void)
{
	static const uint64_t probe = 0x46434d41u; /* "FCMA" */
	uint64_t got = 0;
	struct iovec local = { &got, sizeof(got) };
	struct iovec remote = { (void *)&probe, sizeof(probe) };

	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) ==
		       (ssize_t)sizeof(got) &&
	       got == probe;
}

bool fcemu__cma_offer(void)
{
	const char *env = getenv("FPGACOMM_EMU_BURST");

	if (env && !strcmp(env, "0"))
		return false;
	let_peers_read();
	return cma_works();
}
