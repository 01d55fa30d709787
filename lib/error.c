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
		return "board identity or version not supported by this library";
	case E2BIG:
		return "chain too long (1..255 transfers, and within the driver's descriptor budget)";
	case ERANGE:
		return "address range outside its buffer or board memory";
	case EFAULT:
		return "the board could not reach an address of the chain";
	case EHOSTUNREACH:
		return "no route to the fabric node";
	case ECANCELED:
		return "transfer cancelled by an engine reset";
	case ETIMEDOUT:
		return "transfer still running after the timeout";
	case EINPROGRESS:
		return "transfer still running";
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

	if (err == INT_MIN)	/* -INT_MIN does not exist */
		return "unknown error";
	if (err < 0)
		err = -err;
	if (err == 0)
		return "success";
	text = own_text(err);
	/* strerror() is safe here: glibc returns static or per-thread text. */
	return text ? text : strerror(err);
}
