/* SPDX-License-Identifier: MIT */
/*
 * The server side of QEMU's ivshmem client-server protocol (QEMU's
 * docs/specs/ivshmem-spec.rst), with the daemon itself as peer 0: a guest's
 * ivshmem-doorbell device rings us on our eventfds, and we interrupt the
 * guest through the eventfds we hand it.
 */
#ifndef EMUD_IVSHMEM_H
#define EMUD_IVSHMEM_H

#include <stdint.h>
#include <sys/types.h>

#include <fpgacomm/hw.h>

#define IVSHMEM_MAX_VECTORS 16
#define IVSHMEM_DAEMON_ID   FC_IVSHMEM_DAEMON_PEER /* guests ring us */

struct ivshmem_server {
	const char *path;
	dev_t sock_dev; /* our socket file, to remove only it */
	ino_t sock_ino;
	int listen_fd;
	int client_fd; /* one guest at a time; -1 if none */
	int shm_fd;
	unsigned int vectors;
	int self_efd[IVSHMEM_MAX_VECTORS];  /* guest -> daemon */
	int guest_efd[IVSHMEM_MAX_VECTORS]; /* daemon -> guest (MSI-X) */
	uint16_t next_id;
};

/*
 * Listen at @path. The socket file appears there only once it accepts
 * connections, so a launcher may start QEMU as soon as it sees the file.
 * RETURN VALUE: 0 or -errno (-ENAMETOOLONG: @path too long for a socket).
 */
int ivshmem_server_init(struct ivshmem_server *s, const char *path, int shm_fd,
			unsigned int vectors);
/* Drop the guest, close everything, remove the socket file if still ours. */
void ivshmem_server_fini(struct ivshmem_server *s);

/*
 * Accept a guest (QEMU) and send it the setup messages.
 * RETURN VALUE: 0; -EBUSY if a guest is already connected (the new one is
 * turned away); other -errno from the socket or eventfd calls.
 */
int ivshmem_server_accept(struct ivshmem_server *s);
void ivshmem_server_drop_client(struct ivshmem_server *s);

/* Interrupt the guest on @vector; no-op without a guest. */
void ivshmem_server_notify(struct ivshmem_server *s, unsigned int vector);

/* Consume the doorbells rung on our eventfd for @vector. */
void ivshmem_server_drain(struct ivshmem_server *s, unsigned int vector);

#endif /* EMUD_IVSHMEM_H */
