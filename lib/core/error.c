// SPDX-License-Identifier: MIT
/* Error text: the library's own wording where errno's is too vague. */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "internal.h"

static const char *own_text(int err)
{
	switch (err) {
	case EPROTO:
		return "not a protocol or version this library speaks (a board's identity, a cluster's layout, a peer's message)";
	case E2BIG:
		return "too large: a chain over 255 transfers or the driver's descriptor budget, a stream program over FC_SPROG_MAX instructions, or an HBM allocation over a pseudo-channel";
	case ERANGE:
		return "address range outside its buffer or board memory";
	case EFAULT:
		return "an address the board could not reach (in a chain, a put, or a stream program's LS or board range)";
	case EACCES:
		return "access refused: by the target's peer window (its entry unmapped or revoked, the range past its end, or no read or write permission; nothing moved), or a file not opened for reading and writing";
	case EHOSTUNREACH:
		return "no route to the fabric node";
	case ECANCELED:
		return "cancelled: by a reset of the engines or the board, or by a cancel that broke the group";
	case ETIMEDOUT:
		return "timed out before the operation finished";
	case EINPROGRESS:
		return "still running";
	case ENOEXEC:
		return "malformed stream program: a LOOP of 0, loops too deep or unbalanced, END missing or not last, an unknown opcode or event, or a reserved field set";
	case EBADMSG:
		return "a peer's data does not add up: the ranks disagree on the call or its arguments, or a peer or shared object sent what it should not";
	case EAGAIN:
		return "too many chains queued: wait for one to end";
	case ENODEV:
		return "no usable board (is the fpgacomm driver loaded?)";
	case EIO:
		return "board I/O error: a reset or bus error ended the transfer (run it again), or the engine is out of use";
	case ENOSYS:
		return "the board has no such kernel (stream program refused)";
	case EBADFD:
		return "the stream's last run failed: reset its local store first";
	default:
		return NULL;
	}
}

FC__EXPORT const char *fc_strerror(int err)
{
	const char *text;

	if (err == INT_MIN) /* -INT_MIN does not exist */
		return "unknown error";
	if (err < 0)
		err = -err;
	if (err == 0)
		return "success";
	text = own_text(err);
	/* strerror() is safe here: glibc returns static or per-thread text. */
	return text ? text : strerror(err);
}
