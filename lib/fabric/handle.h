/* SPDX-License-Identifier: MIT */
/*
 * Request handles (lib/fabric/handle.c): what fc_chan_isend(), fc_chan_irecv()
 * and fc_iput() give the caller is not the request's address but a slot
 * number and that slot's generation, so a handle kept after its request
 * ended (the memory reused for the next one) or after fc_close() is told
 * apart from a live one instead of being followed.
 */
#ifndef FC_LIB_HANDLE_H
#define FC_LIB_HANDLE_H

#include "internal.h"

struct fc_req;

/* A handle for @r, noted in @r. RETURN VALUE: 0, or -ENOMEM. */
int fc__handle_new(struct fc_req *r, struct fc_req **handle);
/* The live request @handle names, and its device in *@dev, or NULL
 * (never given, ended, closed). */
struct fc_req *fc__handle_get(struct fc_req *handle, struct fc_dev **dev);
/* @r ended: its handle names nothing from now on. */
void fc__handle_put(struct fc_req *r);
/* @dev closes: every handle of its requests names nothing from now on. */
void fc__handle_drop_dev(struct fc_dev *dev);

#endif /* FC_LIB_HANDLE_H */
