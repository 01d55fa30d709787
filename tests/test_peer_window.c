// SPDX-License-Identifier: MIT
/*
 * test_peer_window: the peer window through fpgacomm.ko (PEER_WINDOW), at
 * the raw ioctl level, on two boards of one fabric (FPGACOMM_TEST_PAIR):
 * a dma-buf of the VM fixture fcvm_dmabuf.ko stands in for GPU memory on
 * board 1, imported (PEER_IMPORT) and mapped into its window; a chain on
 * board 0 PUTs into FC_PW_ADDR(node 1, entry, off) and the bytes are read
 * through the dma-buf's own mmap (only the range written changes); a GET
 * from board 0 reads them back where the boards serve read requests.
 * Revocation: after an unmap, an unregister of the region, a close of
 * the file that mapped it and the exporter's revoke (move_notify), a PUT
 * into the entry ends board 0's chain with -EACCES (FC_DMA_ERR_WINDOW)
 * and the bytes stay as they were. Bad ranges (past the entry's size, an
 * entry without write permission) are refused the same way. Arguments:
 * ops, flags, reserved fields, ranges, kinds of buffer, another file's
 * entry (-EPERM), a full table (-ENOSPC, room again after a close).
 *
 * --remove-test (for the VM script): board 1 removed from the PCI bus with
 * an entry mapped (board 0's PUT refused, the import let go), then
 * rescanned (it maps and serves entries again).
 *
 * Needs FPGACOMM_TEST_PAIR naming two /dev nodes of one fabric, the
 * driver's PEER_WINDOW, boards with FC_CAP_PEER_WINDOW, and
 * /dev/fcvm_dmabuf (the test VM loads it); skips otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <linux/dma-buf.h>

#include <fpgacomm/hw.h>
#include <uapi/fpgacomm.h>

#include "dmabuf_fixture.h"
#include "ioctl_test.h"

#include "../scripts/vm/fcvm-dmabuf/fcvm_dmabuf.h"

#define EXIT_SKIP 77
#define WAIT_MS	  20000
#define FIXTURE	  "/dev/fcvm_dmabuf"

static char dev0[64], dev1[64];
static int f0 = -1, f1 = -1; /* sender (board 0), receiver (board 1) */
static int fixture = -1;
static struct fc_ioc_info info0, info1;
static size_t page;

/* A dma-buf of @len zeroed pages of the fixture, mapped in *@p. */
static int dmabuf_new(uint64_t len, uint8_t **p)
{
	struct fcvm_dmabuf_create c = { .size = len };

	assert_ok(xioctl(fixture, FCVM_DMABUF_CREATE, &c));
	assert_true(c.fd >= 0);
	*p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, c.fd, 0);
	assert_true(*p != MAP_FAILED);
	return c.fd;
}

/* Do bytes [off, off + len) of dma-buf @dbuf at @p equal @want? */
static int dmabuf_equal(int dbuf, const uint8_t *p, size_t off,
			const void *want, size_t len)
{
	int same;

	dmabuf_sync(dbuf, DMA_BUF_SYNC_START);
	same = !memcmp(p + off, want, len);
	dmabuf_sync(dbuf, DMA_BUF_SYNC_END);
	return same;
}

static int dmabuf_zero(int dbuf, const uint8_t *p, size_t off, size_t len)
{
	int zero;

	dmabuf_sync(dbuf, DMA_BUF_SYNC_START);
	zero = all_zero(p + off, len);
	dmabuf_sync(dbuf, DMA_BUF_SYNC_END);
	return zero;
}

static int import(int f, int dbuf, uint64_t off, uint64_t len, uint32_t *h)
{
	struct fc_ioc_peer_import a = { .fd = dbuf, .offset = off, .len = len };
	int rc = xioctl(f, FC_IOC_PEER_IMPORT, &a);

	*h = a.handle;
	return rc;
}

static int pw_map(int f, uint32_t h, uint64_t off, uint64_t len, uint32_t flags,
		  uint32_t *entry)
{
	struct fc_ioc_peer_window a = { .op = FC_PEER_WINDOW_MAP,
					.flags = flags,
					.handle = h,
					.offset = off,
					.len = len };
	int rc = xioctl(f, FC_IOC_PEER_WINDOW, &a);

	if (entry)
		*entry = a.entry;
	return rc;
}

static int pw_unmap(int f, uint32_t entry)
{
	struct fc_ioc_peer_window a = { .op = FC_PEER_WINDOW_UNMAP,
					.entry = entry };

	return xioctl(f, FC_IOC_PEER_WINDOW, &a);
}

#define RW (FC_PEER_WINDOW_READ | FC_PEER_WINDOW_WRITE)

/* Byte @off of entry @entry of board 1's window. */
static struct fc_ioc_loc win(uint32_t entry, uint64_t off)
{
	struct fc_ioc_loc l = { .space = FC_SPACE_FABRIC,
				.addr = FC_PW_ADDR(info1.node_id, entry, off) };
	return l;
}

/*
 * One chain of one transfer on board 0; the chain's status, with the
 * board's error code in *@hw_error.
 */
static int run0(struct fc_ioc_loc s, struct fc_ioc_loc d, uint64_t len,
		uint32_t *hw_error)
{
	struct fc_ioc_xfer x = { .src = s, .dst = d, .len = len };
	struct fc_ioc_submit sb = { .count = 1, .xfers = (uintptr_t)&x };
	struct fc_ioc_wait w = { .timeout_ms = WAIT_MS };
	int rc;

	rc = xioctl(f0, FC_IOC_SUBMIT, &sb);
	if (rc)
		return rc;
	w.ticket = sb.ticket;
	rc = xioctl(f0, FC_IOC_WAIT, &w);
	if (hw_error)
		*hw_error = w.hw_error;
	return rc ? rc : w.status;
}

/* A PUT of @len bytes of board 0's buffer @h into @d, refused. */
static void assert_refused(uint32_t h, struct fc_ioc_loc d, uint64_t len)
{
	uint32_t err = 0;

	assert_rc(run0(host(h, 0), d, len, &err), -EACCES);
	assert_int_equal(err, FC_DMA_ERR_WINDOW);
}

/*
 * A PUT from board 0 lands in board 1's dma-buf, in the entry's range
 * only; a GET reads it back; after UNMAP a PUT is refused and changes
 * nothing.
 */
static void test_window_put_get(void **state)
{
	size_t len = 3 * page, n = page - 8;
	uint8_t *peer, *src = host_buf(len), *back = host_buf(len);
	uint32_t hp, hs, hb, e;
	int dbuf = dmabuf_new(len, &peer);

	fill(src, len);
	memset(back, 0, len);
	assert_ok(mem_register(f0, src, len, &hs));
	assert_ok(mem_register(f0, back, len, &hb));
	assert_ok(import(f1, dbuf, 0, len, &hp));
	/* One page: always one piece of bus space (the fixture's pages
	 * are allocated one by one). */
	assert_ok(pw_map(f1, hp, page, page, RW, &e));
	assert_true(e < FC_PW_MAX_ENTRIES);

	assert_ok(run0(host(hs, 0), win(e, 8), n, NULL));
	assert_true(dmabuf_equal(dbuf, peer, page + 8, src, n));
	assert_true(dmabuf_zero(dbuf, peer, 0, page + 8));
	assert_true(dmabuf_zero(dbuf, peer, 2 * page, page));

	if ((info0.hw_caps & FC_CAP_FABRIC_GET) &&
	    (info1.hw_caps & FC_CAP_FABRIC_GET)) {
		assert_ok(run0(win(e, 8), host(hb, 0), n, NULL));
		assert_memory_equal(back, src, n);
	} else {
		print_message(
			"no read requests on these boards: GET not tried\n");
	}

	/* Unmapped: refused, nothing lands. */
	memcpy(back, src, n);
	fill(src, len);
	assert_ok(pw_unmap(f1, e));
	assert_refused(hs, win(e, 8), 64);
	assert_refused(hs, win(e, 0), page);
	assert_true(dmabuf_equal(dbuf, peer, page + 8, back, n));
	assert_true(dmabuf_zero(dbuf, peer, 0, page + 8));
	assert_rc(pw_unmap(f1, e), -ENOENT);

	assert_ok(mem_unregister(f1, hp));
	assert_ok(mem_unregister(f0, hs));
	assert_ok(mem_unregister(f0, hb));
	munmap(peer, len);
	close(dbuf);
	free(src);
	free(back);
}

/*
 * Past the entry's size, or without WRITE: refused, and nothing lands
 * outside the entry. The board checks each packet: a chain crossing the
 * end lands the packets wholly inside and fails for the rest.
 */
static void test_window_bad_range(void **state)
{
	size_t len = 2 * page;
	uint8_t *peer, *src = host_buf(len);
	uint32_t hp, hs, e, ro;
	int dbuf = dmabuf_new(len, &peer);

	fill(src, len);
	assert_ok(mem_register(f0, src, len, &hs));
	assert_ok(import(f1, dbuf, 0, len, &hp));
	assert_ok(pw_map(f1, hp, 0, page, FC_PEER_WINDOW_WRITE, &e));

	assert_refused(hs, win(e, page - 8), 64);  /* crosses the end */
	assert_refused(hs, win(e, page), 8);	   /* starts at it */
	assert_refused(hs, win(e, 1ull << 20), 8); /* far beyond */
	assert_true(dmabuf_zero(dbuf, peer, 0, len));
	assert_refused(hs, win(e, 0), page + 1); /* one byte over */
	assert_true(dmabuf_zero(dbuf, peer, page, page));
	/* The last byte is in, the whole entry is in. */
	assert_ok(run0(host(hs, 0), win(e, page - 1), 1, NULL));
	assert_ok(run0(host(hs, 0), win(e, 0), page, NULL));
	assert_true(dmabuf_equal(dbuf, peer, 0, src, page));
	assert_true(dmabuf_zero(dbuf, peer, page, page));

	/* Read-only: a PUT is refused; a GET of a write-only entry too. */
	assert_ok(pw_map(f1, hp, page, page, FC_PEER_WINDOW_READ, &ro));
	assert_true(ro != e);
	assert_refused(hs, win(ro, 0), 64);
	assert_true(dmabuf_zero(dbuf, peer, page, page));
	if ((info0.hw_caps & FC_CAP_FABRIC_GET) &&
	    (info1.hw_caps & FC_CAP_FABRIC_GET)) {
		uint32_t err = 0;

		assert_rc(run0(win(e, 0), host(hs, 0), 64, &err), -EACCES);
		assert_int_equal(err, FC_DMA_ERR_WINDOW);
	}

	assert_ok(pw_unmap(f1, ro));
	assert_ok(pw_unmap(f1, e));
	assert_ok(mem_unregister(f1, hp));
	assert_ok(mem_unregister(f0, hs));
	munmap(peer, len);
	close(dbuf);
	free(src);
}

/*
 * The driver revokes an entry when its region is unregistered, when the
 * file that mapped it is closed and when the exporter takes the memory
 * back: a PUT is refused after each and changes nothing.
 */
static void test_window_revoke(void **state)
{
	size_t len = page;
	uint8_t *peer, *src = host_buf(len), old[64];
	uint32_t hp, hs, e;
	int dbuf = dmabuf_new(len, &peer), f;
	struct fcvm_dmabuf_revoke r = { .fd = dbuf };

	fill(src, len);
	assert_ok(mem_register(f0, src, len, &hs));

	/* MEM_UNREGISTER of the region. */
	assert_ok(import(f1, dbuf, 0, len, &hp));
	assert_ok(pw_map(f1, hp, 0, len, RW, &e));
	assert_ok(mem_unregister(f1, hp));
	assert_refused(hs, win(e, 0), 64);
	assert_true(dmabuf_zero(dbuf, peer, 0, len));
	assert_rc(pw_unmap(f1, e), -ENOENT);

	/* Close of the file that mapped it. */
	f = open(dev1, O_RDWR | O_CLOEXEC);
	assert_true(f >= 0);
	assert_ok(import(f, dbuf, 0, len, &hp));
	assert_ok(pw_map(f, hp, 0, len, RW, &e));
	close(f);
	assert_refused(hs, win(e, 0), 64);
	assert_true(dmabuf_zero(dbuf, peer, 0, len));

	/* The exporter's revoke (move_notify); the entry is free after. */
	assert_ok(import(f1, dbuf, 0, len, &hp));
	assert_ok(pw_map(f1, hp, 0, len, RW, &e));
	assert_ok(run0(host(hs, 0), win(e, 0), 64, NULL));
	assert_true(dmabuf_equal(dbuf, peer, 0, src, 64));
	memcpy(old, src, 64);
	fill(src, len);
	assert_ok(xioctl(fixture, FCVM_DMABUF_REVOKE, &r));
	assert_refused(hs, win(e, 0), 64);
	assert_true(dmabuf_equal(dbuf, peer, 0, old, 64));
	assert_rc(pw_unmap(f1, e), -ENOENT);
	/* A region its exporter took back cannot be mapped again. */
	assert_rc(pw_map(f1, hp, 0, len, RW, &e), -ENOLINK);
	assert_ok(mem_unregister(f1, hp));

	assert_ok(mem_unregister(f0, hs));
	munmap(peer, len);
	close(dbuf);
	free(src);
	assert_int_equal(settle("live_attach", 0), 0);
}

/* Arguments, kinds of buffer, owners, a full table. */
static void test_window_args(void **state)
{
	struct fc_ioc_peer_window a;
	uint8_t *peer, *buf = host_buf(page);
	uint32_t hp, hr, ha, hf, e, es[FC_PW_MAX_ENTRIES];
	int dbuf = dmabuf_new(2 * page, &peer), f, i, n;

	assert_ok(import(f1, dbuf, 0, 2 * page, &hp));
	assert_ok(mem_register(f1, buf, page, &hr));
	assert_ok(mem_alloc(f1, page, &ha));

	memset(&a, 0, sizeof(a));
	assert_rc(xioctl(f1, FC_IOC_PEER_WINDOW, &a), -EINVAL); /* op 0 */
	a.op = 3;
	assert_rc(xioctl(f1, FC_IOC_PEER_WINDOW, &a), -EINVAL);
	assert_rc(xioctl(f1, FC_IOC_PEER_WINDOW, NULL), -EFAULT);
	assert_rc(pw_map(f1, hp, 0, page, 0, NULL), -EINVAL);
	assert_rc(pw_map(f1, hp, 0, page, 1u << 2, NULL), -EINVAL);
	assert_rc(pw_map(f1, hp, 0, 0, RW, NULL), -EINVAL);
	assert_rc(pw_map(f1, 0, 0, page, RW, NULL), -EINVAL);
	assert_rc(pw_map(f1, 0xfffff, 0, page, RW, NULL), -EINVAL);
	assert_rc(pw_map(f1, hp, page, 2 * page, RW, NULL), -ERANGE);
	assert_rc(pw_map(f1, hp, 3 * page, 8, RW, NULL), -ERANGE);
	assert_rc(pw_map(f1, hp, 0, FC_PW_MAX_SIZE + 1, RW, NULL), -ERANGE);
	assert_rc(pw_map(f1, hr, 0, page, RW, NULL), -EINVAL); /* pinned */
	/* Another file's handle is not this file's buffer. */
	assert_rc(pw_map(f0, hp, 0, page, RW, NULL), -EINVAL);
	a = (struct fc_ioc_peer_window){ .op = FC_PEER_WINDOW_MAP,
					 .flags = RW,
					 .handle = hp,
					 .len = page,
					 .reserved = { 1 } };
	assert_rc(xioctl(f1, FC_IOC_PEER_WINDOW, &a), -EINVAL);
	a.reserved[0] = 0;
	a.entry = 1; /* an output */
	assert_rc(xioctl(f1, FC_IOC_PEER_WINDOW, &a), -EINVAL);
	a = (struct fc_ioc_peer_window){ .op = FC_PEER_WINDOW_UNMAP,
					 .handle = hp };
	assert_rc(xioctl(f1, FC_IOC_PEER_WINDOW, &a), -EINVAL);
	assert_rc(pw_unmap(f1, FC_PW_MAX_ENTRIES), -ERANGE);

	/* A MEM_ALLOC buffer maps; only its owner unmaps it. */
	assert_ok(pw_map(f1, ha, 8, 64, RW, &e));
	f = open(dev1, O_RDWR | O_CLOEXEC);
	assert_true(f >= 0);
	assert_rc(pw_unmap(f, e), -EPERM);
	assert_ok(pw_unmap(f1, e));
	assert_rc(pw_unmap(f1, e), -ENOENT);

	/* A full table: -ENOSPC, room again once the holder closes. */
	assert_ok(mem_alloc(f, page, &hf));
	for (n = 0; n < FC_PW_MAX_ENTRIES; n++) {
		int rc = pw_map(f, hf, 0, page, RW, &es[n]);

		if (rc == -ENOSPC)
			break;
		assert_ok(rc);
	}
	assert_true(n > 0);
	assert_rc(pw_map(f1, hp, 0, page, RW, NULL), -ENOSPC);
	for (i = 1; i < n; i++)
		assert_true(es[i] != es[0]);
	close(f);
	assert_ok(pw_map(f1, hp, 0, page, RW, &e));
	assert_ok(pw_unmap(f1, e));

	assert_ok(mem_unregister(f1, hp));
	assert_ok(mem_unregister(f1, hr));
	assert_ok(mem_unregister(f1, ha));
	munmap(peer, 2 * page);
	close(dbuf);
	free(buf);
}

/* ---- --remove-test: the receiving board removed under its window ---- */

#define EXPECT(expr, want)                                                  \
	do {                                                                \
		long _v = (long)(expr), _w = (long)(want);                  \
		if (_v != _w) {                                             \
			printf("%s:%d: %s = %ld, expected %ld\n", __FILE__, \
			       __LINE__, #expr, _v, _w);                    \
			rc = 1;                                             \
		}                                                           \
	} while (0)

static int write_one(const char *file)
{
	int f = open(file, O_WRONLY);

	if (f < 0 || write(f, "1", 1) != 1) {
		perror(file);
		if (f >= 0)
			close(f);
		return -1;
	}
	close(f);
	return 0;
}

/*
 * Board 1 removed with a dma-buf in its window: a PUT from board 0 is
 * refused from then on and the bytes stay; the import is let go (the
 * fixture counts no attachment). Rescanned, board 1 maps and serves
 * entries again.
 */
static int remove_test(void)
{
	const char *name = strrchr(dev1, '/');
	uint8_t *peer, src[64], old[64];
	char file[256];
	uint32_t hp, hs, e, err = 0;
	int rc = 0, dbuf;
	struct fcvm_dmabuf_create c = { .size = page };

	if (xioctl(fixture, FCVM_DMABUF_CREATE, &c))
		return 1;
	dbuf = c.fd;
	peer = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, dbuf, 0);
	EXPECT(peer == MAP_FAILED, 0);
	memset(src, 0x5a, sizeof(src));
	EXPECT(mem_register(f0, src, sizeof(src), &hs), 0);
	EXPECT(import(f1, dbuf, 0, page, &hp), 0);
	EXPECT(pw_map(f1, hp, 0, page, RW, &e), 0);
	EXPECT(run0(host(hs, 0), win(e, 0), sizeof(src), NULL), 0);
	memcpy(old, peer, sizeof(old));
	EXPECT(memcmp(old, src, sizeof(src)), 0);

	snprintf(file, sizeof(file), "/sys/class/fpgacomm/%s/device/remove",
		 name ? name + 1 : dev1);
	if (write_one(file))
		return 1;
	printf("removed %s with entry %u of its window mapped\n", dev1, e);
	memset(src, 0xa5, sizeof(src));
	EXPECT(run0(host(hs, 0), win(e, 0), sizeof(src), &err), -EACCES);
	EXPECT(err, FC_DMA_ERR_WINDOW);
	EXPECT(memcmp(peer, old, sizeof(old)), 0);
	EXPECT(pw_unmap(f1, e), -ENODEV);
	EXPECT(settle("live_attach", 0), 0);
	close(f1);

	if (write_one("/sys/bus/pci/rescan"))
		return 1;
	f1 = open(dev1, O_RDWR | O_CLOEXEC);
	EXPECT(f1 >= 0, 1);
	EXPECT(xioctl(f1, FC_IOC_INFO, &info1), 0);
	printf("after rescan: %s is back\n", dev1);
	EXPECT(import(f1, dbuf, 0, page, &hp), 0);
	EXPECT(pw_map(f1, hp, 0, page, RW, &e), 0);
	EXPECT(run0(host(hs, 0), win(e, 0), sizeof(src), NULL), 0);
	EXPECT(memcmp(peer, src, sizeof(src)), 0);
	EXPECT(mem_unregister(f1, hp), 0);
	EXPECT(mem_unregister(f0, hs), 0);
	munmap(peer, page);
	close(dbuf);
	EXPECT(settle("live_attach", 0), 0);
	return rc;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_window_put_get),
		cmocka_unit_test(test_window_bad_range),
		cmocka_unit_test(test_window_revoke),
		cmocka_unit_test(test_window_args),
	};
	const char *pair = getenv("FPGACOMM_TEST_PAIR");

	page = (size_t)sysconf(_SC_PAGESIZE);
	if (!pair || sscanf(pair, "%63s %63s", dev0, dev1) != 2) {
		printf("SKIP: FPGACOMM_TEST_PAIR does not name two boards\n");
		return EXIT_SKIP;
	}
	f0 = open(dev0, O_RDWR | O_CLOEXEC);
	f1 = open(dev1, O_RDWR | O_CLOEXEC);
	if (f0 < 0 || f1 < 0) {
		printf("SKIP: %s, %s: %s\n", dev0, dev1, strerror(errno));
		return EXIT_SKIP;
	}
	if (xioctl(f0, FC_IOC_INFO, &info0) ||
	    xioctl(f1, FC_IOC_INFO, &info1)) {
		printf("INFO: %s\n", strerror(errno));
		return 1;
	}
	if (!(info1.features & FC_FEAT_PEER_WINDOW) ||
	    !(info1.features & FC_FEAT_PEER_IMPORT)) {
		printf("SKIP: the driver has no PEER_WINDOW\n");
		return EXIT_SKIP;
	}
	if (!(info1.hw_caps & FC_CAP_PEER_WINDOW) ||
	    !(info0.hw_caps & FC_CAP_FABRIC_DMA)) {
		printf("SKIP: the boards have no peer window (caps 0x%x, 0x%x)\n",
		       info0.hw_caps, info1.hw_caps);
		return EXIT_SKIP;
	}
	fixture = open(FIXTURE, O_RDWR | O_CLOEXEC);
	if (fixture < 0) {
		printf("SKIP: %s: %s (the test VM's fixture fcvm_dmabuf.ko)\n",
		       FIXTURE, strerror(errno));
		return EXIT_SKIP;
	}
	if (argc > 1 && !strcmp(argv[1], "--remove-test"))
		return remove_test();
	if (getenv("FPGACOMM_TEST_FILTER"))
		cmocka_set_test_filter(getenv("FPGACOMM_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
