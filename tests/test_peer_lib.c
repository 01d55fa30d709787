// SPDX-License-Identifier: MIT
/*
 * test_peer_lib: the library's peer memory API (fc_peer_import,
 * fc_peer_export, fc_peer_import_cuda). Everywhere: bad arguments
 * (-EINVAL, -ERANGE); a memfd: on an emulated board in this process a
 * peer region written and read by DMA (checked through its own mapping),
 * export -EOPNOTSUPP; through the driver -EINVAL (not a dma-buf). An
 * emulated board refuses an empty memfd or a range past its end, and a
 * memfd cut short after the import gives -EFAULT for DMA past its new end
 * (the importer lives on, the rest of the file and the board still work).
 * With CUDA and a GPU: a host pointer is refused (-EINVAL); a device
 * buffer, through the CUDA driver's dma-buf on a kernel board or as a
 * device window of an emulated one (test_peer_gpu tests that further),
 * makes a DMA round trip checked with cuMemcpy; without, the CUDA test
 * skips saying why. On a kernel board with the VM's fixture
 * (/dev/fcvm_dmabuf): a dma-buf imported at an unaligned offset and used
 * as source and destination of fc_dma_submit (checked through its mmap),
 * and the board's aperture exported, imported back and written by DMA.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/dma-buf.h>

#include "harness.h"
#include "cuda_test.h"
#include "../scripts/vm/fcvm-dmabuf/fcvm_dmabuf.h"

#define BUF_LEN (64u << 10)

static struct fc_mem *host_a, *host_b;
static long page;

static int kernel_board(void)
{
	return !strncmp(dev_name, "/dev/", 5);
}

static void test_bad_args(void **state)
{
	struct fc_mem *m;
	int fd;

	assert_rc(fc_peer_import(NULL, 0, 0, 4096, 0, &m), -EINVAL);
	assert_rc(fc_peer_import(dev, 0, 0, 4096, 0, NULL), -EINVAL);
	assert_rc(fc_peer_import(dev, -1, 0, 4096, 0, &m), -EINVAL);
	assert_rc(fc_peer_import(dev, 0, 0, 0, 0, &m), -EINVAL);
	assert_rc(fc_peer_import(dev, 0, 0, 4096, 1, &m), -EINVAL);
	assert_rc(fc_peer_import(dev, 0, UINT64_MAX - 10, 4096, 0, &m),
		  -ERANGE);
	assert_rc(fc_peer_export(NULL, 0, 4096, 0, &fd), -EINVAL);
	assert_rc(fc_peer_export(dev, 0, 4096, 0, NULL), -EINVAL);
	assert_rc(fc_peer_export(dev, 0, 0, 0, &fd), -EINVAL);
	assert_rc(fc_peer_export(dev, 0, 4096, 1, &fd), -EINVAL);
	assert_rc(fc_peer_import_cuda(NULL, 0x10000, 4096, 0, &m), -EINVAL);
	assert_rc(fc_peer_import_cuda(dev, 0, 4096, 0, &m), -EINVAL);
	assert_rc(fc_peer_import_cuda(dev, 0x10000, 0, 0, &m), -EINVAL);
	assert_rc(fc_peer_import_cuda(dev, 0x10000, 4096, 2, &m), -EINVAL);
	assert_rc(fc_peer_import_cuda(dev, 0x10000, 4096, 0, NULL), -EINVAL);
	assert_rc(fc_peer_import_cuda(dev, UINT64_MAX - 10, 4096, 0, &m),
		  -ERANGE);
}

/*
 * Shared memory that is not a dma-buf (a memfd): an emulated board maps it
 * and reaches it by DMA; the driver refuses it (-EINVAL).
 */
static void test_memfd(void **state)
{
	uint8_t *src = host_a->addr, *back = host_b->addr, *shm;
	uint64_t off = page + 100, len = 3 * page;
	struct fc_xfer x[2];
	struct fc_mem *m;
	int fd = -1, mfd, p[2];

	mfd = memfd_create("test_peer_lib", MFD_CLOEXEC);
	assert_true(mfd >= 0);
	assert_int_equal(ftruncate(mfd, BUF_LEN), 0);
	shm = mmap(NULL, BUF_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	assert_true(shm != MAP_FAILED);
	if (kernel_board()) {
		assert_rc(fc_peer_import(dev, mfd, 0, page, 0, &m), -EINVAL);
		goto out;
	}
	assert_rc(fc_peer_export(dev, 0, 4096, 0, &fd), -EOPNOTSUPP);
	assert_int_equal(fd, -1);
	assert_int_equal(pipe(p), 0);
	assert_rc(fc_peer_import(dev, p[0], 0, page, 0, &m), -EACCES);
	close(p[0]);
	close(p[1]);
	p[0] = open("/dev/null", O_RDWR | O_CLOEXEC); /* no mmap */
	assert_true(p[0] >= 0);
	assert_rc(fc_peer_import(dev, p[0], 0, page, 0, &m), -EINVAL);
	close(p[0]);
	assert_rc(fc_peer_import(dev, mfd, BUF_LEN - page, 2 * page, 0, &m),
		  -ERANGE);
	assert_rc(fc_peer_import(dev, mfd, BUF_LEN, page, 0, &m), -ERANGE);

	assert_ok(fc_peer_import(dev, mfd, off, len, 0, &m));
	assert_null(m->addr);
	rnd_fill(src, BUF_LEN);
	x[0] = xfer(fc_host(host_a, 0), fc_host(m, 0), len);
	assert_ok(fc_dma_run(dev, x, 1, WAIT_MS));
	assert_same(shm + off, src, len, "host -> memfd");
	assert_true(shm[off - 1] == 0 && shm[off + len] == 0);
	memset(back, 0, BUF_LEN);
	x[0] = xfer(fc_host(m, 7), fc_board(0x4000), len - 7);
	x[1] = xfer(fc_board(0x4000), fc_host(host_b, 0), len - 7);
	assert_ok(fc_dma_run(dev, x, 2, WAIT_MS));
	assert_same(back, shm + off + 7, len - 7, "memfd -> board -> host");
	x[0] = xfer(fc_host(host_a, 0), fc_host(m, 1), len);
	assert_rc(fc_dma_submit(dev, x, 1, 0, &(uint64_t){ 0 }), -ERANGE);
	assert_ok(fc_mem_free(dev, m));
	assert_rc(fc_mem_free(dev, m), -EINVAL);
out:
	munmap(shm, BUF_LEN);
	close(mfd);
}

/*
 * A memfd that is empty, or shrinks after the import, on an emulated
 * board: an empty file or a range past its end is refused (-ERANGE); a
 * DMA into or out of the part cut off fails with -EFAULT and the process
 * lives on (the board took SIGBUS where it mapped the file), a DMA
 * within what is left still works, and so does the board.
 */
static void test_memfd_shrinks(void **state)
{
	uint8_t *src = host_a->addr, *back = host_b->addr;
	struct fc_xfer x[1];
	struct fc_mem *m;
	uint8_t byte;
	int mfd;

	if (kernel_board())
		skip(); /* the driver refuses a memfd (test_memfd) */
	mfd = memfd_create("test_peer_lib", MFD_CLOEXEC);
	assert_true(mfd >= 0);
	assert_rc(fc_peer_import(dev, mfd, 0, page, 0, &m), -ERANGE);
	assert_rc(fc_peer_import(dev, mfd, page, page, 0, &m), -ERANGE);
	assert_int_equal(ftruncate(mfd, 4 * page), 0);
	assert_rc(fc_peer_import(dev, mfd, 3 * page + 1, page, 0, &m), -ERANGE);
	assert_ok(fc_peer_import(dev, mfd, 0, 4 * page, 0, &m));

	assert_int_equal(ftruncate(mfd, page), 0);
	rnd_fill(src, BUF_LEN);
	x[0] = xfer(fc_host(host_a, 0), fc_host(m, 2 * page), page);
	assert_rc(fc_dma_run(dev, x, 1, WAIT_MS), -EFAULT);
	x[0] = xfer(fc_host(m, page), fc_host(host_b, 0), page);
	assert_rc(fc_dma_run(dev, x, 1, WAIT_MS), -EFAULT);
	/* what is left of the file, and the board, still work */
	x[0] = xfer(fc_host(host_a, 0), fc_host(m, 0), page);
	assert_ok(fc_dma_run(dev, x, 1, WAIT_MS));
	assert_int_equal(pread(mfd, &byte, 1, page - 1), 1);
	assert_int_equal(byte, src[page - 1]);
	memset(back, 0, BUF_LEN);
	x[0] = xfer(fc_host(host_a, 0), fc_host(host_b, 0), BUF_LEN);
	assert_ok(fc_dma_run(dev, x, 1, WAIT_MS));
	assert_same(back, src, BUF_LEN, "host -> host after the faults");
	assert_ok(fc_mem_free(dev, m));
	close(mfd);
}

/* ---- CUDA, through the driver API loaded here as the library does ---- */

static void test_cuda(void **state)
{
	uint8_t *src = host_a->addr, *back = host_b->addr;
	struct fc_xfer x[2];
	struct cu cu = { 0 };
	struct fc_mem *m;
	const char *why;
	void *ctx;
	cu_ptr dp;
	int rc;

	why = cu_load(&cu, &ctx);
	if (why) {
		/* The library must say as much. */
		rc = fc_peer_import_cuda(dev, 0x10000, 4096, 0, &m);
		assert_true(rc == -ENODEV || rc == -EOPNOTSUPP);
		skip_because(why);
	}
	assert_int_equal(cu.alloc(&dp, BUF_LEN), 0);
	rnd_fill(src, BUF_LEN);
	assert_int_equal(cu.htod(dp, src, BUF_LEN), 0);

	/* Host memory is not device memory: CUDA refuses it. */
	assert_rc(fc_peer_import_cuda(dev, (uintptr_t)src, 4096, 0, &m),
		  -EINVAL);
	/* A kernel board imports CUDA's dma-buf, an emulated one maps it. */
	assert_ok(fc_peer_import_cuda(dev, dp + 100, BUF_LEN - 200, 0, &m));
	assert_null(m->addr);
	assert_int_equal(m->len, BUF_LEN - 200);
	memset(back, 0, BUF_LEN);
	x[0] = xfer(fc_host(m, 0), fc_host(host_b, 0), BUF_LEN - 200);
	assert_ok(fc_dma_run(dev, x, 1, WAIT_MS));
	assert_same(back, src + 100, BUF_LEN - 200, "GPU -> host");
	rnd_fill(src, BUF_LEN);
	x[0] = xfer(fc_host(host_a, 0), fc_host(m, 8), 4096);
	assert_ok(fc_dma_run(dev, x, 1, WAIT_MS));
	assert_int_equal(cu.dtoh(back, dp + 108, 4096), 0);
	assert_same(back, src, 4096, "host -> GPU");
	assert_ok(fc_mem_free(dev, m));
	assert_int_equal(cu.free(dp), 0);
}

/* ---- dma-bufs of the VM's fixture ---- */

/*
 * CPU access to a dma-buf's mmap is bracketed by DMA_BUF_IOCTL_SYNC, so
 * that the exporter syncs its mappings (bounce buffers: swiotlb=force).
 */
static void dmabuf_sync(int dbuf, uint64_t flags)
{
	struct dma_buf_sync s = { .flags = flags | DMA_BUF_SYNC_RW };

	assert_int_equal(ioctl(dbuf, DMA_BUF_IOCTL_SYNC, &s), 0);
}

#define cpu_begin(dbuf) dmabuf_sync(dbuf, DMA_BUF_SYNC_START)
#define cpu_end(dbuf)	dmabuf_sync(dbuf, DMA_BUF_SYNC_END)

static int fixture_buf(uint64_t len, uint8_t **map)
{
	struct fcvm_dmabuf_create c = { .size = len };
	int f = open("/dev/fcvm_dmabuf", O_RDWR | O_CLOEXEC);

	if (f < 0)
		return -1;
	if (ioctl(f, FCVM_DMABUF_CREATE, &c)) {
		close(f);
		return -1;
	}
	close(f);
	*map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, c.fd, 0);
	assert_true(*map != MAP_FAILED);
	return c.fd;
}

static void test_dmabuf_import(void **state)
{
	uint8_t *src = host_a->addr, *back = host_b->addr, *peer = NULL;
	uint64_t off = 3 * page + 100, len = 5 * page;
	struct fc_xfer x[2];
	struct fc_mem *m;
	int dbuf;

	if (!kernel_board())
		skip_because("needs a kernel board");
	dbuf = fixture_buf(BUF_LEN, &peer);
	if (dbuf < 0)
		skip_because("no /dev/fcvm_dmabuf (the test VM's fixture)");
	assert_rc(fc_peer_import(dev, dbuf, BUF_LEN - page, 2 * page, 0, &m),
		  -ERANGE);
	assert_ok(fc_peer_import(dev, dbuf, off, len, 0, &m));
	assert_null(m->addr);
	assert_int_equal(m->len, len);

	rnd_fill(src, BUF_LEN);
	x[0] = xfer(fc_host(host_a, 0), fc_host(m, 0), len);
	assert_ok(fc_dma_run(dev, x, 1, WAIT_MS));
	cpu_begin(dbuf);
	assert_same(peer + off, src, len, "host -> dma-buf");
	assert_true(peer[off - 1] == 0 && peer[off + len] == 0);
	cpu_end(dbuf);

	memset(back, 0, BUF_LEN);
	x[0] = xfer(fc_host(m, 10), fc_board(0x2000), len - 10);
	x[1] = xfer(fc_board(0x2000), fc_host(host_b, 0), len - 10);
	assert_ok(fc_dma_run(dev, x, 2, WAIT_MS));
	assert_same(back, peer + off + 10, len - 10,
		    "dma-buf -> board -> host");
	x[0] = xfer(fc_host(host_a, 0), fc_host(m, 1), len);
	assert_rc(fc_dma_submit(dev, x, 1, 0, &(uint64_t){ 0 }), -ERANGE);
	assert_ok(fc_mem_free(dev, m));
	assert_rc(fc_mem_free(dev, m), -EINVAL);
	munmap(peer, BUF_LEN);
	close(dbuf);
}

/* The aperture exported, imported back, written by the board's DMA. */
static void test_export_import(void **state)
{
	uint8_t *src = host_a->addr, *aper;
	uint64_t len = 2 * page;
	struct fc_xfer x;
	struct fc_mem *m;
	int fd, rc;

	if (!kernel_board())
		skip_because("needs a kernel board");
	rc = fc_peer_export(dev, 0, len, 0, &fd);
	if (rc == -EOPNOTSUPP)
		skip_because("the board has no aperture to export");
	assert_ok(rc);
	close(fd);
	assert_rc(fc_peer_export(dev, 1, len, 0, &fd), -EINVAL);
	assert_rc(fc_peer_export(dev, 1ull << 40, len, 0, &fd), -ERANGE);
	assert_ok(fc_peer_export(dev, 0, len, 0, &fd));
	aper = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(aper != MAP_FAILED);
	memset(aper, 0, len);
	assert_ok(fc_peer_import(dev, fd, 64, page, 0, &m));
	rnd_fill(src, page);
	x = xfer(fc_host(host_a, 0), fc_host(m, 0), page);
	assert_ok(fc_dma_run(dev, &x, 1, WAIT_MS));
	assert_same(aper + 64, src, page, "host -> exported aperture");
	assert_ok(fc_mem_free(dev, m));
	munmap(aper, len);
	close(fd);
}

static int setup(void **state)
{
	page = sysconf(_SC_PAGESIZE);
	return harness_alloc(BUF_LEN, &host_a, &host_b);
}

static int teardown(void **state)
{
	return harness_close(host_a, host_b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_args),
		cmocka_unit_test(test_memfd),
		cmocka_unit_test(test_memfd_shrinks),
		cmocka_unit_test(test_cuda),
		cmocka_unit_test(test_dmabuf_import),
		cmocka_unit_test(test_export_import),
	};
	int rc = harness_open("test_peer_lib");

	if (rc)
		return rc;
	return harness_run(tests, setup, teardown);
}
