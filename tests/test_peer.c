// SPDX-License-Identifier: MIT
/*
 * test_peer: peer mapping through dma-buf in fpgacomm.ko, at the raw ioctl
 * level (include/uapi/fpgacomm.h): PEER_IMPORT of a dma-buf of kernel
 * pages made by the VM fixture fcvm_dmabuf.ko (DMA into and out of it,
 * checked through the dma-buf's own mmap; trimmed ranges; bad fds, ranges
 * past the end, unaligned ranges, flags and reserved fields); the region
 * released by MEM_UNREGISTER and at close (the fixture counts no
 * attachment left); at most max_imports regions a file (-EMFILE beyond,
 * room again after an unregister or a close); the exporter revoking it
 * (move_notify) with chains queued and running: they end with -ENOLINK, no byte lands, SUBMIT
 * refuses it; PEER_EXPORT of the aperture (its mmap shows the same bytes
 * as the aperture's mmap; bad arguments); the export imported back and
 * written by the board, or with FPGACOMM_TEST_PAIR by the second board's
 * DMA, the bytes then read as board memory at APERTURE_BASE by the first
 * board's DMA, and board memory written by DMA seen through the aperture.
 *
 * Needs FPGACOMM_TEST_DEVICE naming a /dev node and /dev/fcvm_dmabuf (the
 * test VM loads it); skips otherwise. --remove-test (for the VM script):
 * the exporting board removed from the PCI bus under its importers (the
 * other board's and the fixture's) and a mapping, then rescanned.
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
#include <signal.h>
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
#define BUF_LEN	  (64u << 10)

static const char *path;
static int fd = -1; /* the board under test */
static int fixture = -1;
static struct fc_ioc_info info;
static long page;

#define cpu_begin(dbuf) dmabuf_sync(dbuf, DMA_BUF_SYNC_START)
#define cpu_end(dbuf)	dmabuf_sync(dbuf, DMA_BUF_SYNC_END)

/* A dma-buf of @len zeroed pages from the fixture; its fd. */
static int dmabuf_new(uint64_t len)
{
	struct fcvm_dmabuf_create c = { .size = len };

	assert_ok(xioctl(fixture, FCVM_DMABUF_CREATE, &c));
	assert_true(c.fd >= 0);
	return c.fd;
}

static void *map(int f, size_t len, off_t off)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, f, off);

	assert_true(p != MAP_FAILED);
	return p;
}

static int import_on(int f, int dbuf, uint64_t off, uint64_t len, uint32_t *h)
{
	struct fc_ioc_peer_import a = { .fd = dbuf, .offset = off, .len = len };
	int rc = xioctl(f, FC_IOC_PEER_IMPORT, &a);

	if (h)
		*h = a.handle;
	return rc;
}

static int import(int dbuf, uint64_t off, uint64_t len, uint32_t *h)
{
	return import_on(fd, dbuf, off, len, h);
}

static int export_on(int f, uint64_t off, uint64_t len, int *out)
{
	struct fc_ioc_peer_export a = { .offset = off, .len = len };
	int rc = xioctl(f, FC_IOC_PEER_EXPORT, &a);

	if (out)
		*out = a.fd;
	return rc;
}

/* WAIT; returns the ioctl's result, or the chain's status. */
static int wait_on(int f, uint64_t t, int ms)
{
	struct fc_ioc_wait w = { .ticket = t, .timeout_ms = ms };
	int rc = xioctl(f, FC_IOC_WAIT, &w);

	return rc ? rc : w.status;
}

static int run_on(int f, struct fc_ioc_xfer *x, uint32_t n)
{
	uint64_t t;
	int rc = submit_on(f, x, n, &t);

	return rc ? rc : wait_on(f, t, WAIT_MS);
}

static int run(struct fc_ioc_xfer *x, uint32_t n)
{
	return run_on(fd, x, n);
}

static int reg_write(uint32_t off, uint32_t val)
{
	struct fc_ioc_reg r = { .offset = off, .value = val };

	return xioctl(fd, FC_IOC_REG_WRITE, &r);
}

/* The board address that aperture byte 0 shows. */
static uint64_t aperture_base(void)
{
	struct fc_ioc_reg lo = { .offset = FC_REG_APERTURE_BASE_LO };
	struct fc_ioc_reg hi = { .offset = FC_REG_APERTURE_BASE_HI };

	assert_ok(xioctl(fd, FC_IOC_REG_READ, &lo));
	assert_ok(xioctl(fd, FC_IOC_REG_READ, &hi));
	return (uint64_t)hi.value << 32 | lo.value;
}

/* ---- import ---- */

/* Host -> peer -> board -> host, through a trimmed range of the dma-buf. */
static void test_import_dma(void **state)
{
	int dbuf = dmabuf_new(BUF_LEN);
	uint8_t *peer = map(dbuf, BUF_LEN, 0);
	uint8_t *src = host_buf(BUF_LEN), *back = host_buf(BUF_LEN);
	uint64_t off = 2 * page, len = 8 * page;
	struct fc_ioc_xfer x[2];
	uint32_t hp, hs, hb;

	fill(src, BUF_LEN);
	memset(back, 0, BUF_LEN);
	assert_ok(mem_register(fd, src, BUF_LEN, &hs));
	assert_ok(mem_register(fd, back, BUF_LEN, &hb));
	assert_ok(import(dbuf, off, len, &hp));
	assert_true(hp != 0);

	/* Into the peer: offset 100 of the region is byte off + 100. */
	x[0] = xfer(host(hs, 0), host(hp, 100), len - 200);
	assert_ok(run(x, 1));
	cpu_begin(dbuf);
	assert_memory_equal(peer + off + 100, src, len - 200);
	assert_true(all_zero(peer, off + 100));
	assert_true(
		all_zero(peer + off + len - 100, BUF_LEN - off - len + 100));

	/* Out of the peer, through board memory, back to the host. */
	x[0] = xfer(host(hp, 100), board(0x10000), len - 200);
	x[1] = xfer(board(0x10000), host(hb, 7), len - 200);
	assert_ok(run(x, 2));
	assert_memory_equal(back + 7, src, len - 200);

	/* The CPU's writes through the dma-buf reach the board too. */
	fill(peer + off, len);
	cpu_end(dbuf);
	x[0] = xfer(host(hp, 0), host(hb, 0), len);
	assert_ok(run(x, 1));
	assert_memory_equal(back, peer + off, len);

	/* Not past the region's end. */
	x[0] = xfer(host(hs, 0), host(hp, 1), len);
	assert_rc(run(x, 1), -ERANGE);
	x[0] = xfer(host(hp, len), host(hs, 0), 1);
	assert_rc(run(x, 1), -ERANGE);

	assert_ok(mem_unregister(fd, hp));
	assert_ok(mem_unregister(fd, hs));
	assert_ok(mem_unregister(fd, hb));
	munmap(peer, BUF_LEN);
	close(dbuf);
	free(src);
	free(back);
}

static void test_import_bad(void **state)
{
	int dbuf = dmabuf_new(BUF_LEN);
	struct fc_ioc_peer_import a;
	int notbuf = open("/dev/null", O_RDONLY | O_CLOEXEC);
	uint32_t h;

	assert_true(notbuf >= 0);
	assert_rc(import(-1, 0, page, &h), -EBADF);
	assert_rc(import(1000, 0, page, &h), -EBADF);
	assert_rc(import(notbuf, 0, page, &h), -EINVAL);
	assert_rc(import(fd, 0, page, &h), -EINVAL); /* the board's file */
	assert_rc(import(dbuf, 0, 0, &h), -EINVAL);
	assert_rc(import(dbuf, 1, page, &h), -EINVAL);
	assert_rc(import(dbuf, page / 2, page, &h), -EINVAL);
	assert_rc(import(dbuf, 0, page + 1, &h), -EINVAL);
	assert_rc(import(dbuf, 0, 100, &h), -EINVAL);
	assert_rc(import(dbuf, 0, BUF_LEN + page, &h), -ERANGE);
	assert_rc(import(dbuf, BUF_LEN, page, &h), -ERANGE);
	assert_rc(import(dbuf, BUF_LEN - page, 2 * page, &h), -ERANGE);
	assert_rc(import(dbuf, page, UINT64_MAX - page + 1, &h), -ERANGE);
	assert_rc(import(dbuf, UINT64_MAX - page + 1, page, &h), -ERANGE);

	memset(&a, 0, sizeof(a));
	a.fd = dbuf;
	a.len = page;
	a.flags = 1;
	assert_rc(xioctl(fd, FC_IOC_PEER_IMPORT, &a), -EINVAL);
	a.flags = 0;
	a.handle = 5;
	assert_rc(xioctl(fd, FC_IOC_PEER_IMPORT, &a), -EINVAL);
	a.handle = 0;
	a.reserved0 = 1;
	assert_rc(xioctl(fd, FC_IOC_PEER_IMPORT, &a), -EINVAL);
	a.reserved0 = 0;
	a.reserved[1] = 1;
	assert_rc(xioctl(fd, FC_IOC_PEER_IMPORT, &a), -EINVAL);
	a.reserved[1] = 0;
	assert_rc(xioctl(fd, FC_IOC_PEER_IMPORT, NULL), -EFAULT);
	/* The number with another size or direction is another command. */
	assert_rc(xioctl(fd, _IOWR(FC_IOC_MAGIC, 0x0d, struct fc_ioc_reg), &a),
		  -ENOTTY);
	assert_rc(xioctl(fd,
			 _IOW(FC_IOC_MAGIC, 0x0e, struct fc_ioc_peer_export),
			 &a),
		  -ENOTTY);
	/* Nothing was left attached by the refusals; the good one works. */
	assert_int_equal(settle("live_attach", 0), 0);
	assert_ok(xioctl(fd, FC_IOC_PEER_IMPORT, &a));
	assert_int_equal(fixture_count("live_attach"), 1);
	assert_ok(mem_unregister(fd, a.handle));
	assert_rc(mem_unregister(fd, a.handle), -EINVAL);
	close(notbuf);
	close(dbuf);
}

/*
 * The region holds the dma-buf, not the fd; MEM_UNREGISTER and close let
 * go of it (the fixture's counters), and a released handle is refused.
 */
static void test_import_release(void **state)
{
	int dbuf, f2;
	uint8_t *src = host_buf(page);
	struct fc_ioc_xfer x;
	uint32_t hp, hs, h2;
	uint64_t t;

	fill(src, page);
	assert_ok(mem_register(fd, src, page, &hs));
	assert_int_equal(settle("live_bufs", 0), 0);
	dbuf = dmabuf_new(BUF_LEN);
	assert_ok(import(dbuf, 0, BUF_LEN, &hp));
	close(dbuf); /* the region keeps the dma-buf */
	assert_int_equal(fixture_count("live_bufs"), 1);
	x = xfer(host(hs, 0), host(hp, BUF_LEN - page), page);
	assert_ok(run(&x, 1));
	assert_ok(mem_unregister(fd, hp));
	assert_rc(submit_on(fd, &x, 1, &t), -EINVAL);

	/* Teardown is deferred a little (a work item). */
	assert_int_equal(settle("live_bufs", 0), 0);
	assert_int_equal(settle("live_attach", 0), 0);

	/* Close of the board's file releases its regions. */
	dbuf = dmabuf_new(BUF_LEN);
	f2 = open(path, O_RDWR | O_CLOEXEC);
	assert_true(f2 >= 0);
	assert_ok(import_on(f2, dbuf, 0, BUF_LEN, &h2));
	assert_ok(import_on(f2, dbuf, page, page, &h2));
	assert_int_equal(fixture_count("live_attach"), 2);
	close(dbuf);
	close(f2);
	assert_int_equal(settle("live_bufs", 0), 0);
	assert_int_equal(settle("live_attach", 0), 0);
	assert_ok(mem_unregister(fd, hs));
	free(src);
}

/* The driver's bound on a file's peer regions (module parameter). */
#define MAX_IMPORTS_PARAM   "/sys/module/fpgacomm/parameters/max_imports"
#define MAX_IMPORTS_DEFAULT 1024

static unsigned int max_imports(void)
{
	unsigned int n = MAX_IMPORTS_DEFAULT;
	FILE *f = fopen(MAX_IMPORTS_PARAM, "r");

	if (f) {
		if (fscanf(f, "%u", &n) != 1)
			n = MAX_IMPORTS_DEFAULT;
		fclose(f);
	}
	return n;
}

/*
 * A file holds at most max_imports peer regions: the next import gets
 * -EMFILE, while another file still imports; unregistering one makes room
 * for exactly one more; close releases every one of them (the fixture
 * counts no attachment left) and a new file imports again.
 */
static void test_import_limit(void **state)
{
	unsigned int n = max_imports(), i;
	uint32_t *h = calloc(n, sizeof(*h)), extra;
	int dbuf = dmabuf_new(page), f2;

	assert_non_null(h);
	print_message("max_imports %u\n", n);
	f2 = open(path, O_RDWR | O_CLOEXEC);
	assert_true(f2 >= 0);
	for (i = 0; i < n; i++)
		assert_ok(import_on(f2, dbuf, 0, page, &h[i]));
	assert_rc(import_on(f2, dbuf, 0, page, &extra), -EMFILE);
	assert_int_equal(fixture_count("live_attach"), n);
	/* The bound is per file. */
	assert_ok(import(dbuf, 0, page, &extra));
	assert_ok(mem_unregister(fd, extra));
	/* Failed imports took nothing: one freed handle, one more import. */
	assert_ok(mem_unregister(f2, h[n / 2]));
	assert_ok(import_on(f2, dbuf, 0, page, &h[n / 2]));
	assert_rc(import_on(f2, dbuf, 0, page, &extra), -EMFILE);
	close(f2);
	assert_int_equal(settle("live_attach", 0), 0);
	f2 = open(path, O_RDWR | O_CLOEXEC);
	assert_true(f2 >= 0);
	assert_ok(import_on(f2, dbuf, 0, page, &extra));
	close(f2);
	close(dbuf);
	assert_int_equal(settle("live_bufs", 0), 0);
	assert_int_equal(settle("live_attach", 0), 0);
	free(h);
}

static int exporter_revoke(int dbuf)
{
	struct fcvm_dmabuf_revoke r = { .fd = dbuf };

	return xioctl(fixture, FCVM_DMABUF_REVOKE, &r);
}

/*
 * The exporter takes the memory back with chains queued and one running
 * (held by the emulator's stall knob): those naming the region end with
 * -ENOLINK and leave it untouched, the others run; SUBMIT refuses it.
 */
static void test_revoke(void **state)
{
	int dbuf = dmabuf_new(BUF_LEN);
	uint8_t *peer = map(dbuf, BUF_LEN, 0);
	uint8_t *src = host_buf(BUF_LEN), *back = host_buf(BUF_LEN);
	struct fc_ioc_xfer x;
	uint64_t ta, tb, tc, td;
	uint32_t hp, hs, hb;

	if (!(info.hw_caps & FC_CAP_EMULATED)) {
		print_message("[   SKIP   ] needs the emulator's stall knob\n");
		skip();
	}
	fill(src, BUF_LEN);
	memset(back, 0, BUF_LEN);
	assert_ok(mem_register(fd, src, BUF_LEN, &hs));
	assert_ok(mem_register(fd, back, BUF_LEN, &hb));
	assert_ok(import(dbuf, 0, BUF_LEN, &hp));

	/* Queued behind a chain that does not name the region. */
	assert_ok(reg_write(FC_EMU_FAULT_DMA_STALL, 1));
	x = xfer(host(hs, 0), board(0), BUF_LEN);
	assert_ok(submit_on(fd, &x, 1, &ta));
	x = xfer(host(hs, 0), host(hp, 0), BUF_LEN);
	assert_ok(submit_on(fd, &x, 1, &tb));
	x = xfer(host(hp, 0), host(hb, 0), BUF_LEN);
	assert_ok(submit_on(fd, &x, 1, &tc));
	assert_ok(exporter_revoke(dbuf));
	assert_rc(wait_on(fd, tb, 0), -ENOLINK);
	assert_rc(wait_on(fd, tc, 0), -ENOLINK);
	assert_rc(wait_on(fd, ta, 0), -ETIMEDOUT); /* still stalled */
	assert_ok(reg_write(FC_EMU_FAULT_DMA_STALL, 0));
	assert_ok(wait_on(fd, ta, WAIT_MS));
	cpu_begin(dbuf);
	assert_true(all_zero(peer, BUF_LEN));
	cpu_end(dbuf);
	assert_true(all_zero(back, BUF_LEN));
	x = xfer(host(hs, 0), host(hp, 0), page);
	assert_rc(submit_on(fd, &x, 1, &td), -ENOLINK);
	assert_ok(mem_unregister(fd, hp));

	/* The running chain: stopped by a reset, nothing lands. */
	assert_ok(import(dbuf, 0, BUF_LEN, &hp));
	assert_ok(reg_write(FC_EMU_FAULT_DMA_STALL, 1));
	x = xfer(host(hs, 0), host(hp, 0), BUF_LEN);
	assert_ok(submit_on(fd, &x, 1, &ta));
	x = xfer(host(hs, 0), board(0), page);
	assert_ok(submit_on(fd, &x, 1, &tb));
	usleep(50000);
	assert_ok(exporter_revoke(dbuf));
	assert_rc(wait_on(fd, ta, 0), -ENOLINK);
	assert_ok(reg_write(FC_EMU_FAULT_DMA_STALL, 0));
	assert_ok(wait_on(fd, tb, WAIT_MS)); /* the next one runs */
	usleep(50000);
	cpu_begin(dbuf);
	assert_true(all_zero(peer, BUF_LEN));
	cpu_end(dbuf);
	assert_ok(mem_unregister(fd, hp));

	assert_ok(mem_unregister(fd, hs));
	assert_ok(mem_unregister(fd, hb));
	munmap(peer, BUF_LEN);
	close(dbuf);
	free(src);
	free(back);
}

/* A failed test_revoke must not leave the board stalled for the next. */
static int clear_stall(void **state)
{
	if (info.hw_caps & FC_CAP_EMULATED)
		reg_write(FC_EMU_FAULT_DMA_STALL, 0);
	return 0;
}

/* ---- export ---- */

static void test_export_bad(void **state)
{
	struct fc_ioc_peer_export a;
	uint64_t aper = info.aperture_size;
	int e;

	if (!aper) {
		assert_rc(export_on(fd, 0, page, &e), -EOPNOTSUPP);
		return;
	}
	assert_rc(export_on(fd, 0, 0, &e), -EINVAL);
	assert_rc(export_on(fd, 1, page, &e), -EINVAL);
	assert_rc(export_on(fd, 0, page - 1, &e), -EINVAL);
	assert_rc(export_on(fd, 0, aper + page, &e), -ERANGE);
	assert_rc(export_on(fd, aper, page, &e), -ERANGE);
	assert_rc(export_on(fd, aper - page, 2 * page, &e), -ERANGE);
	assert_rc(export_on(fd, page, UINT64_MAX - page + 1, &e), -ERANGE);
	memset(&a, 0, sizeof(a));
	a.len = page;
	a.flags = 1;
	assert_rc(xioctl(fd, FC_IOC_PEER_EXPORT, &a), -EINVAL);
	a.flags = 0;
	a.fd = 3;
	assert_rc(xioctl(fd, FC_IOC_PEER_EXPORT, &a), -EINVAL);
	a.fd = 0;
	a.reserved[0] = 1;
	assert_rc(xioctl(fd, FC_IOC_PEER_EXPORT, &a), -EINVAL);
	assert_rc(xioctl(fd, FC_IOC_PEER_EXPORT, NULL), -EFAULT);
}

/* The dma-buf's mmap and the file's aperture mmap show the same bytes. */
static void test_export_mmap(void **state)
{
	uint64_t off = 4 * page, len = 4 * page;
	uint8_t *aper, *exp, *pat = host_buf(len);
	int e;

	if (!info.aperture_size || !(info.features & FC_FEAT_PEER_EXPORT)) {
		print_message("[   SKIP   ] no aperture to export\n");
		skip();
	}
	assert_ok(export_on(fd, off, len, &e));
	assert_true(e >= 0);
	assert_true(fcntl(e, F_GETFD) & FD_CLOEXEC);
	aper = map(fd, info.aperture_size, FC_MMAP_APERTURE);
	exp = map(e, len, 0);
	fill(pat, len);
	memcpy(exp, pat, len);
	assert_memory_equal(aper + off, pat, len);
	fill(pat, len);
	memcpy(aper + off + page, pat, page);
	assert_memory_equal(exp + page, pat, page);
	/* Not beyond the exported range. */
	assert_true(mmap(NULL, len + page, PROT_READ, MAP_SHARED, e, 0) ==
		    MAP_FAILED);
	munmap(exp, len);
	munmap(aper, info.aperture_size);
	close(e);
	free(pat);
}

/*
 * Board memory exported, imported into a board, written by its DMA: the
 * bytes must show in the first board's aperture. With FPGACOMM_TEST_PAIR
 * ("A B"), B's DMA writes A's aperture (peer-to-peer); else the board
 * writes its own. Where the board cannot reach the BAR, the chain fails
 * (-EFAULT), which is reported as such.
 */
static void test_export_import(void **state)
{
	const char *pair = getenv("FPGACOMM_TEST_PAIR");
	uint64_t len = 4 * page, base;
	uint8_t *aper, *back, *src = host_buf(len);
	struct fc_ioc_xfer x;
	char other[64] = "";
	uint32_t hp, hs, hb;
	int e, f2 = fd;

	if (!info.aperture_size || !(info.features & FC_FEAT_PEER_EXPORT)) {
		print_message("[   SKIP   ] no aperture to export\n");
		skip();
	}
	if (pair && sscanf(pair, "%*s %63s", other) == 1) {
		f2 = open(other, O_RDWR | O_CLOEXEC);
		assert_true(f2 >= 0);
	}
	print_message("exporter %s, importer %s\n", path,
		      f2 == fd ? path : other);
	assert_ok(export_on(fd, 0, len, &e));
	aper = map(fd, info.aperture_size, FC_MMAP_APERTURE);
	memset(aper, 0, len);
	assert_ok(import_on(f2, e, page, 2 * page, &hp));
	close(e);
	fill(src, len);
	assert_ok(mem_register(f2, src, len, &hs));
	x = xfer(host(hs, 0), host(hp, 8), 2 * page - 8);
	assert_ok(run_on(f2, &x, 1));
	assert_memory_equal(aper + page + 8, src, 2 * page - 8);
	assert_true(all_zero(aper, page + 8));
	assert_true(all_zero(aper + 3 * page, page));
	assert_ok(mem_unregister(f2, hp));
	assert_ok(mem_unregister(f2, hs));

	/* The aperture is board memory from APERTURE_BASE: both ways. */
	base = aperture_base();
	back = host_buf(len);
	memset(back, 0, len);
	assert_ok(mem_register(fd, back, len, &hb));
	x = xfer(board(base + page + 8), host(hb, 0), 2 * page - 8);
	assert_ok(run(&x, 1));
	assert_memory_equal(back, src, 2 * page - 8);
	fill(src, len);
	assert_ok(mem_register(fd, src, len, &hs));
	x = xfer(host(hs, 0), board(base + 3 * page), page);
	assert_ok(run(&x, 1));
	assert_memory_equal(aper + 3 * page, src, page);
	assert_ok(mem_unregister(fd, hs));
	assert_ok(mem_unregister(fd, hb));
	free(back);
	munmap(aper, info.aperture_size);
	if (f2 != fd)
		close(f2);
	free(src);
}

/* Last: everything the tests made is gone from the fixture. */
static void test_nothing_left(void **state)
{
	assert_int_equal(settle("live_bufs", 0), 0);
	assert_int_equal(settle("live_attach", 0), 0);
}

/* ---- --remove-test: the exporting board removed under its importer ---- */

static sigjmp_buf bus_jmp;

static void on_sigbus(int sig)
{
	siglongjmp(bus_jmp, 1);
}

/* Does a load at @p get SIGBUS? */
static int sigbus_on(volatile uint8_t *p)
{
	struct sigaction sa = { .sa_handler = on_sigbus }, old;
	int hit;

	sigaction(SIGBUS, &sa, &old);
	if (sigsetjmp(bus_jmp, 1)) {
		hit = 1;
	} else {
		(void)*p;
		hit = 0;
	}
	sigaction(SIGBUS, &old, NULL);
	return hit;
}

#define EXPECT(expr, want)                                                  \
	do {                                                                \
		long _got = (long)(expr), _want = (long)(want);             \
		if (_got != _want) {                                        \
			printf("%s:%d: %s = %ld, expected %ld\n", __FILE__, \
			       __LINE__, #expr, _got, _want);               \
			rc = 1;                                             \
		}                                                           \
	} while (0)

/*
 * Board A (FPGACOMM_TEST_DEVICE) exports its aperture, board B (the second
 * of FPGACOMM_TEST_PAIR) imports it and writes it; then A is removed from
 * the PCI bus: the dma-buf's CPU mapping gets SIGBUS, B's SUBMIT into the
 * region -ENOLINK (the importer was told), a dynamic importer of another
 * driver (the fixture's) is told too and its map again gets -ENODEV, not
 * the BAR's old bus address, and A comes back on a rescan.
 */
static int remove_test(void)
{
	const char *pair = getenv("FPGACOMM_TEST_PAIR");
	const char *name = strrchr(path, '/');
	uint8_t src[4096];
	char other[64], file[256];
	struct fc_ioc_xfer x;
	volatile uint8_t *exp;
	struct fcvm_dmabuf_import ia = { 0 };
	uint32_t hp, hs;
	uint64_t t, stale;
	int rc = 0, f2, e, f, imp, moves;

	if (!pair || sscanf(pair, "%*s %63s", other) != 1) {
		printf("SKIP: FPGACOMM_TEST_PAIR names no second board\n");
		return EXIT_SKIP;
	}
	f2 = open(other, O_RDWR | O_CLOEXEC);
	if (f2 < 0 || export_on(fd, 0, page, &e)) {
		printf("%s: open or PEER_EXPORT failed\n", other);
		return 1;
	}
	exp = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, e, 0);
	EXPECT(exp == MAP_FAILED, 0);
	EXPECT(import_on(f2, e, 0, page, &hp), 0);
	memset(src, 0x5a, sizeof(src));
	EXPECT(mem_register(f2, src, sizeof(src), &hs), 0);
	x = xfer(host(hs, 0), host(hp, 0), page);
	EXPECT(run_on(f2, &x, 1), 0);
	EXPECT(exp[page - 1], 0x5a);
	/* A dynamic importer of another driver, as a GPU's or an RDMA NIC's. */
	imp = open(FIXTURE, O_RDWR | O_CLOEXEC);
	EXPECT(imp >= 0, 1);
	ia.fd = e;
	EXPECT(xioctl(imp, FCVM_DMABUF_IMPORT, &ia), 0);
	stale = ia.addr;
	ia.fd = 0;
	ia.addr = 0;
	EXPECT(xioctl(imp, FCVM_DMABUF_REMAP, &ia), 0);
	EXPECT(ia.addr == stale, 1);
	moves = fixture_count("moves");

	snprintf(file, sizeof(file), "/sys/class/fpgacomm/%s/device/remove",
		 name ? name + 1 : path);
	f = open(file, O_WRONLY);
	if (f < 0 || write(f, "1", 1) != 1) {
		perror(file);
		return 1;
	}
	close(f);
	printf("removed %s with its aperture exported, imported and mapped\n",
	       path);
	EXPECT(sigbus_on(exp), 1);
	EXPECT(submit_on(f2, &x, 1, &t), -ENOLINK);
	EXPECT(export_on(fd, 0, page, &f), -ENODEV);
	/* Told, and a map again gets an error, not the BAR's old address. */
	EXPECT(fixture_count("moves") - moves, 1);
	ia.addr = 0;
	EXPECT(xioctl(imp, FCVM_DMABUF_REMAP, &ia), -ENODEV);
	if (ia.addr)
		printf("REMAP after the remove: bus address %#" PRIx64
		       " (the BAR's was %#" PRIx64 ")\n",
		       (uint64_t)ia.addr, stale);
	close(imp);
	printf("after the remove: the mapping SIGBUS, the importer -ENOLINK, "
	       "a dynamic importer's map again -ENODEV\n");
	EXPECT(mem_unregister(f2, hp), 0);
	EXPECT(mem_unregister(f2, hs), 0);
	munmap((void *)exp, page);
	close(e);
	close(f2);
	close(fd);

	f = open("/sys/bus/pci/rescan", O_WRONLY);
	if (f < 0 || write(f, "1", 1) != 1) {
		perror("rescan");
		return 1;
	}
	close(f);
	fd = open(path, O_RDWR | O_CLOEXEC);
	EXPECT(fd >= 0, 1);
	EXPECT(xioctl(fd, FC_IOC_INFO, &info), 0);
	printf("after rescan: %s is back\n", path);
	return rc;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_import_dma),
		cmocka_unit_test(test_import_bad),
		cmocka_unit_test(test_import_release),
		cmocka_unit_test(test_import_limit),
		cmocka_unit_test_teardown(test_revoke, clear_stall),
		cmocka_unit_test(test_export_bad),
		cmocka_unit_test(test_export_mmap),
		cmocka_unit_test(test_export_import),
		cmocka_unit_test(test_nothing_left),
	};
	struct stat st;

	page = sysconf(_SC_PAGESIZE);
	path = getenv("FPGACOMM_TEST_DEVICE");
	if (!path || stat(path, &st) || !S_ISCHR(st.st_mode)) {
		printf("SKIP: FPGACOMM_TEST_DEVICE (%s) is not a /dev node\n",
		       path ? path : "unset");
		return EXIT_SKIP;
	}
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		printf("SKIP: %s: %s\n", path, strerror(errno));
		return EXIT_SKIP;
	}
	if (xioctl(fd, FC_IOC_INFO, &info)) {
		printf("%s: INFO: %s\n", path, strerror(errno));
		return 1;
	}
	if (!(info.features & FC_FEAT_PEER_IMPORT)) {
		printf("SKIP: %s: the driver has no PEER_IMPORT\n", path);
		return EXIT_SKIP;
	}
	fixture = open(FIXTURE, O_RDWR | O_CLOEXEC);
	if (fixture < 0) {
		printf("SKIP: %s: %s (the test VM's fixture fcvm_dmabuf.ko)\n",
		       FIXTURE, strerror(errno));
		return EXIT_SKIP;
	}
	if (fixture_count("live_bufs") || fixture_count("live_attach")) {
		printf("%s: the fixture holds buffers before the test\n",
		       FIXTURE);
		return 1;
	}
	if (argc > 1 && !strcmp(argv[1], "--remove-test"))
		return remove_test();
	if (getenv("FPGACOMM_TEST_FILTER"))
		cmocka_set_test_filter(getenv("FPGACOMM_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
