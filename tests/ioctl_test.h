/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the test programs that drive the kernel driver through its
 * ioctls (include/uapi/fpgacomm.h) rather than through the library:
 * results as negative errnos, assertions that name them, test patterns,
 * and the small argument structures every such test builds.
 */
#ifndef FC_IOCTL_TEST_H
#define FC_IOCTL_TEST_H

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>

#include <cmocka.h>

#include <uapi/fpgacomm.h>

/* An ioctl's result as 0 or a negative errno, as the library returns. */
static inline int xioctl(int f, unsigned long cmd, void *arg)
{
	return ioctl(f, cmd, arg) < 0 ? -errno : 0;
}

#define assert_rc(expr, want)                                                  \
	do {                                                                   \
		int _rc = (expr), _want = (want);                              \
		if (_rc != _want)                                              \
			fail_msg("%s = %d (%s), expected %d (%s)", #expr, _rc, \
				 strerror(-_rc), _want, strerror(-_want));     \
	} while (0)
#define assert_ok(expr) assert_rc(expr, 0)

/* @len bytes of a pattern drawn from @seed; returns the next seed. */
static inline uint32_t fill_from(void *p, size_t len, uint32_t seed)
{
	uint8_t *b = p;
	size_t i;

	for (i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		b[i] = (uint8_t)(seed >> 16);
	}
	return seed;
}

/* The next @len bytes of the program's one pattern stream. */
static inline void fill(void *p, size_t len)
{
	static uint32_t seed = 1;

	seed = fill_from(p, len, seed);
}

static inline int all_zero(const void *p, size_t len)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i])
			return 0;
	return 1;
}

static inline int mem_register(int f, const void *addr, uint64_t len,
			       uint32_t *h)
{
	struct fc_ioc_mem m = { .addr = (uintptr_t)addr, .len = len };
	int rc = xioctl(f, FC_IOC_MEM_REGISTER, &m);

	*h = m.handle;
	return rc;
}

static inline int mem_alloc(int f, uint64_t len, uint32_t *h)
{
	struct fc_ioc_mem m = { .len = len };
	int rc = xioctl(f, FC_IOC_MEM_ALLOC, &m);

	*h = m.handle;
	return rc;
}

static inline int mem_unregister(int f, uint32_t h)
{
	struct fc_ioc_mem m = { .handle = h };

	return xioctl(f, FC_IOC_MEM_UNREGISTER, &m);
}

static inline struct fc_ioc_loc host(uint32_t handle, uint64_t addr)
{
	struct fc_ioc_loc l = { .space = FC_SPACE_HOST,
				.handle = handle,
				.addr = addr };
	return l;
}

static inline struct fc_ioc_loc board(uint64_t addr)
{
	struct fc_ioc_loc l = { .space = FC_SPACE_BOARD, .addr = addr };
	return l;
}

static inline struct fc_ioc_xfer xfer(struct fc_ioc_loc s, struct fc_ioc_loc d,
				      uint64_t len)
{
	struct fc_ioc_xfer x = { .src = s, .dst = d, .len = len };
	return x;
}

/* SUBMIT of @n transfers on @f; the ticket in *@t. */
static inline int submit_on(int f, struct fc_ioc_xfer *x, uint32_t n,
			    uint64_t *t)
{
	struct fc_ioc_submit s = { .count = n, .xfers = (uintptr_t)x };
	int rc = xioctl(f, FC_IOC_SUBMIT, &s);

	*t = s.ticket;
	return rc;
}

#endif /* FC_IOCTL_TEST_H */
