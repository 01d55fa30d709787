// SPDX-License-Identifier: MIT
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ivshmem.h"

/* One protocol message: a little-endian int64, maybe with one fd. */
static int send_msg(int sock, int64_t value, int fd)
{
	char control[CMSG_SPACE(sizeof(int))];
	int64_t le = (int64_t)htole64((uint64_t)value);
	struct iovec iov = { &le, sizeof(le) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cmsg;
	ssize_t n;

	if (fd >= 0) {
		memset(control, 0, sizeof(control));
		msg.msg_control = control;
		msg.msg_controllen = sizeof(control);
		cmsg = CMSG_FIRSTHDR(&msg);
		cmsg->cmsg_level = SOL_SOCKET;
		cmsg->cmsg_type = SCM_RIGHTS;
		cmsg->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
	}
	do {
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	/* 8 bytes into an empty socket buffer: short only if it broke. */
	return n == (ssize_t)sizeof(le) ? 0 : -EIO;
}

static void close_efds(int *efd, unsigned int n)
{
	unsigned int v;

	for (v = 0; v < n; v++) {
		if (efd[v] >= 0)
			close(efd[v]);
		efd[v] = -1;
	}
}

static int open_efds(int *efd, unsigned int n)
{
	unsigned int v;

	for (v = 0; v < n; v++) {
		efd[v] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (efd[v] < 0) {
			int ret = -errno;

			close_efds(efd, v);
			return ret;
		}
	}
	return 0;
}

int ivshmem_server_init(struct ivshmem_server *s, const char *path, int shm_fd,
			unsigned int vectors)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct stat st;
	mode_t old_mask;
	int ret;

	memset(s, 0, sizeof(*s));
	s->path = path;
	s->listen_fd = -1;
	s->client_fd = -1;
	s->shm_fd = shm_fd;
	s->vectors = vectors;
	s->next_id = IVSHMEM_DAEMON_ID + 1;
	memset(s->self_efd, -1, sizeof(s->self_efd));
	memset(s->guest_efd, -1, sizeof(s->guest_efd));
	if (!vectors || vectors > IVSHMEM_MAX_VECTORS)
		return -EINVAL;
	/*
	 * Bind and listen under a temporary name, then rename: whoever waits
	 * for @path (run-vm.sh, before it starts QEMU) never finds a socket
	 * that refuses connections, and a stale one is replaced atomically.
	 */
	ret = snprintf(addr.sun_path, sizeof(addr.sun_path), "%s.%d.tmp", path,
		       (int)getpid());
	if (ret < 0 || (size_t)ret >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;

	ret = open_efds(s->self_efd, vectors);
	if (ret)
		return ret;
	s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->listen_fd < 0) {
		ret = -errno;
		goto err_close_efds;
	}
	unlink(addr.sun_path);
	/* Born 0600: whoever connects gets the board's memory. */
	old_mask = umask(077);
	ret = bind(s->listen_fd, (struct sockaddr *)&addr, sizeof(addr));
	umask(old_mask);
	if (ret) {
		ret = -errno;
		goto err_close_listen;
	}
	if (listen(s->listen_fd, 4) || stat(addr.sun_path, &st) ||
	    rename(addr.sun_path, path)) {
		ret = -errno;
		goto err_unlink_tmp;
	}
	s->sock_dev = st.st_dev;
	s->sock_ino = st.st_ino;
	return 0;

err_unlink_tmp:
	unlink(addr.sun_path);
err_close_listen:
	close(s->listen_fd);
	s->listen_fd = -1;
err_close_efds:
	close_efds(s->self_efd, vectors);
	return ret;
}

void ivshmem_server_drop_client(struct ivshmem_server *s)
{
	if (s->client_fd >= 0)
		close(s->client_fd);
	s->client_fd = -1;
	close_efds(s->guest_efd, s->vectors);
}

void ivshmem_server_fini(struct ivshmem_server *s)
{
	struct stat st;

	ivshmem_server_drop_client(s);
	close_efds(s->self_efd, s->vectors);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	s->listen_fd = -1;
	/* Another daemon may have taken the path over since: leave its file. */
	if (!lstat(s->path, &st) && st.st_dev == s->sock_dev &&
	    st.st_ino == s->sock_ino)
		unlink(s->path);
}

int ivshmem_server_accept(struct ivshmem_server *s)
{
	int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	struct ucred cred;
	socklen_t cred_len = sizeof(cred);
	int64_t id;
	unsigned int v;
	int ret;

	if (fd < 0)
		return -errno;
	/* The socket's mode keeps others out; this, a mode changed later. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) ||
	    (cred.uid != geteuid() && cred.uid != 0)) {
		close(fd);
		return -EPERM;
	}
	if (s->client_fd >= 0) {
		close(fd); /* one guest per board */
		return -EBUSY;
	}
	id = s->next_id;
	s->next_id = s->next_id == UINT16_MAX ? IVSHMEM_DAEMON_ID + 1 :
						s->next_id + 1;
	ret = open_efds(s->guest_efd, s->vectors);
	if (ret)
		goto err_close;

	/* version, its ID, the memory, then us as a peer, then its vectors */
	ret = send_msg(fd, 0, -1);
	if (!ret)
		ret = send_msg(fd, id, -1);
	if (!ret)
		ret = send_msg(fd, -1, s->shm_fd);
	for (v = 0; !ret && v < s->vectors; v++)
		ret = send_msg(fd, IVSHMEM_DAEMON_ID, s->self_efd[v]);
	for (v = 0; !ret && v < s->vectors; v++)
		ret = send_msg(fd, id, s->guest_efd[v]);
	if (ret)
		goto err_close_efds;
	s->client_fd = fd;
	return 0;

err_close_efds:
	close_efds(s->guest_efd, s->vectors);
err_close:
	close(fd);
	return ret;
}

void ivshmem_server_notify(struct ivshmem_server *s, unsigned int vector)
{
	uint64_t one = 1;

	/* A failed write means a full counter: the guest stopped listening. */
	if (vector < s->vectors && s->guest_efd[vector] >= 0)
		(void)!write(s->guest_efd[vector], &one, sizeof(one));
}

void ivshmem_server_drain(struct ivshmem_server *s, unsigned int vector)
{
	uint64_t count;

	while (read(s->self_efd[vector], &count, sizeof(count)) > 0)
		;
}
