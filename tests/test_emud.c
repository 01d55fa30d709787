// SPDX-License-Identifier: MIT
/*
 * test_emud: build/tools/fpgacomm-emud's files and socket from outside.
 * Its --shm file is never a symbolic link, another user's file or one
 * others may open (it holds the board's registers), nor is a --peer file
 * (another board's, where its engines write); its ivshmem socket is
 * born 0600, and a peer of another user that connects anyway (the mode
 * widened later) gets nothing: the board's memory goes only to its own
 * user. Root is needed to play the other user; the rest runs as anyone.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

static char emud[PATH_MAX];
static char dir[64];
/* Daemons started, ended by teardown should a test fail with them up. */
static pid_t started[8];
static unsigned int n_started;

static pid_t start(const char *opt, const char *path)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		dup2(null, 2);
		execl(emud, emud, opt, path, "--mem", "16M", (char *)NULL);
		_exit(127);
	}
	if (n_started < 8)
		started[n_started++] = pid;
	return pid;
}

/* The daemon's exit status within @ms, or -1 if it is still running. */
static int exited(pid_t pid, int ms)
{
	int status, i;

	for (i = 0; i < ms / 10; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
		usleep(10000);
	}
	return -1;
}

static void stop(pid_t pid)
{
	int status;

	kill(pid, SIGTERM);
	assert_int_equal(waitpid(pid, &status, 0), pid);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/dev/shm/tem-%d", (int)getpid());
	if (mkdir(dir, 0711))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	int status;

	(void)state;
	while (n_started) {
		pid_t pid = started[--n_started];

		if (waitpid(pid, &status, WNOHANG) == 0) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
		}
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) ? -1 : 0;
}

/* --shm: a link, a file others may open, another user's file: refused. */
static void test_shm_file(void **state)
{
	char file[96], link[96];
	pid_t pid;
	int fd;

	(void)state;
	snprintf(file, sizeof(file), "%s/bar", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	fd = open(file, O_RDWR | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(symlink(file, link), 0);
	assert_int_not_equal(exited(start("--shm", link), 10000), -1);

	assert_int_equal(fchmod(fd, 0644), 0);
	assert_int_not_equal(exited(start("--shm", file), 10000), -1);
	if (geteuid() == 0) {
		assert_int_equal(fchmod(fd, 0600), 0);
		assert_int_equal(fchown(fd, 65534, 65534), 0);
		assert_int_not_equal(exited(start("--shm", file), 10000), -1);
		assert_int_equal(fchown(fd, 0, 0), 0);
	}
	/* Ours and closed to others: it serves. */
	assert_int_equal(fchmod(fd, 0600), 0);
	pid = start("--shm", file);
	assert_int_equal(exited(pid, 1000), -1);
	stop(pid);
	close(fd);
	unlink(file);
	/* Missing: made 0600. */
	pid = start("--shm", file);
	assert_int_equal(exited(pid, 1000), -1);
	stop(pid);
	fd = open(file, O_RDONLY);
	assert_true(fd >= 0);
	{
		struct stat st;

		assert_int_equal(fstat(fd, &st), 0);
		assert_int_equal(st.st_mode & 07777, 0600);
	}
	close(fd);
}

/* Start the daemon serving @shm with one --peer @peer. */
static pid_t start_peer(const char *shm, const char *peer)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		dup2(null, 2);
		execl(emud, emud, "--shm", shm, "--peer", peer, "--mem", "16M",
		      (char *)NULL);
		_exit(127);
	}
	if (n_started < 8)
		started[n_started++] = pid;
	return pid;
}

/*
 * --peer: another board's file, which our engines write: a link, a file
 * others may open, another user's file: refused at start; one not made
 * yet (its daemon starts later) or ours and closed to others: it serves.
 */
static void test_peer_file(void **state)
{
	char shm[96], peer[96], link[96], later[96];
	pid_t pid;
	int fd;

	(void)state;
	snprintf(shm, sizeof(shm), "%s/bar", dir);
	snprintf(peer, sizeof(peer), "%s/peer", dir);
	snprintf(link, sizeof(link), "%s/plink", dir);
	snprintf(later, sizeof(later), "%s/later", dir);
	fd = open(peer, O_RDWR | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(symlink(peer, link), 0);
	assert_int_not_equal(exited(start_peer(shm, link), 10000), -1);
	assert_int_equal(fchmod(fd, 0644), 0);
	assert_int_not_equal(exited(start_peer(shm, peer), 10000), -1);
	if (geteuid() == 0) {
		assert_int_equal(fchmod(fd, 0600), 0);
		assert_int_equal(fchown(fd, 65534, 65534), 0);
		assert_int_not_equal(exited(start_peer(shm, peer), 10000), -1);
		assert_int_equal(fchown(fd, 0, 0), 0);
	}
	assert_int_equal(fchmod(fd, 0600), 0);
	pid = start_peer(shm, peer);
	assert_int_equal(exited(pid, 1000), -1);
	stop(pid);
	pid = start_peer(shm, later);
	assert_int_equal(exited(pid, 1000), -1);
	stop(pid);
	close(fd);
}

/* Connect to @path as @uid (-1: ourselves). RETURN VALUE: bytes the
 * server sent within 2 s (the first message is 8), or -errno of connect. */
static int connect_as(const char *path, int uid)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int pipefd[2], got = 0, status;
	pid_t pid;

	assert_int_equal(pipe(pipefd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct timeval tv = { 2, 0 };
		char buf[64];
		int fd, n = 0;

		if (uid >= 0 && (setgid(uid) || setuid(uid)))
			_exit(3);
		snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)))
			n = -errno;
		else {
			setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv,
				   sizeof(tv));
			n = (int)recv(fd, buf, sizeof(buf), 0);
			if (n < 0)
				n = 0;
		}
		if (write(pipefd[1], &n, sizeof(n)) != sizeof(n))
			_exit(4);
		_exit(0);
	}
	close(pipefd[1]);
	assert_int_equal(read(pipefd[0], &got, sizeof(got)), sizeof(got));
	close(pipefd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return got;
}

/* The socket: born 0600, and another user's peer gets nothing. */
static void test_socket(void **state)
{
	char sock[96];
	struct stat st;
	pid_t pid;
	int i;

	(void)state;
	snprintf(sock, sizeof(sock), "%s/sock", dir);
	umask(0); /* the daemon must not depend on the caller's umask */
	pid = start("--socket", sock);
	umask(022);
	for (i = 0; i < 1000 && lstat(sock, &st); i++)
		usleep(10000);
	assert_int_equal(lstat(sock, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 077, 0);
	if (geteuid() == 0) {
		assert_int_equal(connect_as(sock, 65534), -EACCES);
		/* Widened by someone: the peer check still turns them away. */
		assert_int_equal(chmod(sock, 0666), 0);
		assert_int_equal(connect_as(sock, 65534), 0);
	} else {
		print_message(
			"not root: another user's connection not tried\n");
	}
	/* Its own user: the protocol's first message (version 0). */
	assert_true(connect_as(sock, -1) >= 8);
	stop(pid);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_shm_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_file, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_socket, setup, teardown),
	};
	char exe[PATH_MAX - 32];
	ssize_t n;

	printf("test_emud: fpgacomm-emud's shared files and socket keep other users out\n");
	/* build/tests/test_emud -> build/tools/fpgacomm-emud */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		return 1;
	exe[n] = 0;
	*strrchr(exe, '/') = 0;
	snprintf(emud, sizeof(emud), "%s/../tools/fpgacomm-emud", exe);
	if (access(emud, X_OK)) {
		printf("SKIP: no %s\n", emud);
		return EXIT_SKIP;
	}
	return harness_run(tests, NULL, NULL);
}
