/* SPDX-License-Identifier: MIT */
/*
 * Private to lib/backend/: how the bridges of a job spread over several hosts
 * (emu/bridge.h) learn each other's endpoint names. Under fpgacomm-run
 * --hosts, files in a directory all the simulated hosts see
 * (FPGACOMM_BRIDGE_DIR); under mpirun or srun, PMIx (bootstrap_pmix.c).
 */
#ifndef FC_BOOTSTRAP_H
#define FC_BOOTSTRAP_H

#include <stddef.h>

/* Waited for a peer's name at most this long. */
#define FC_BOOT_WAIT_MS 30000

/* Publish board @node's endpoint name. RETURN VALUE: 0 or -errno. */
int fc__boot_put(unsigned int node, const void *name, size_t len);
/*
 * Board @node's name into @name (*@len bytes at most in, its length
 * out), waiting for it up to FC_BOOT_WAIT_MS.
 * RETURN VALUE: 0; -ETIMEDOUT; -ENOSPC too long; -ENOENT no bootstrap.
 */
int fc__boot_get(unsigned int node, void *name, size_t *len);
/* Withdraw it: the board leaves (and may open again). */
void fc__boot_drop(unsigned int node);
/* The same through PMIx (bootstrap_pmix.c): the put is committed and
 * fenced with every rank's before the first get. -ENOENT without PMIx. */
int fc__boot_pmix_put(unsigned int node, const void *name, size_t len);
int fc__boot_pmix_get(unsigned int node, void *name, size_t *len);
/* The address the bridge binds to (FPGACOMM_BRIDGE_ADDR), or NULL. */
const char *fc__boot_addr(void);

#endif /* FC_BOOTSTRAP_H */
