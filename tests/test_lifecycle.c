// SPDX-License-Identifier: MIT
/*
 * test_lifecycle: fpgacomm.ko through a machine's life (driver/fc_reset.c,
 * docs/hardware.md section 5). Skips unless FPGACOMM_TEST_DEVICE names a
 * /dev/fpgacommN of an emulated board (the stall knob holds a chain on the
 * engine) and we are root; run in the VM by scripts/vm/run-vm-tests.sh.
 *
 * - A PCI reset through sysfs ("reset" of the board's PCI device) with 200
 *   tickets in flight, the first a 200-descriptor chain held running, and
 *   the registers and the PIO window mapped: a WAIT asleep on the running
 *   ticket ends with -EIO, so do the other 199 and a chain of another
 *   handle through libfpgacomm (fc_dma_wait() gives -EIO); the old
 *   mappings get SIGBUS; new ones work; the next chain moves data right;
 *   the device's state reads "ok" again.
 * - A board that does not come back from the reset (the deaf knob):
 *   "failed", every call -ENODEV, mappings SIGBUS; unbound, unwedged
 *   through sysfs and bound again, it works.
 * - AER through the kernel's aer_inject (/dev/aer_inject, the board
 *   behind a PCIe root port; errors are injected at the port, whose
 *   recovery reaches every device below it): a correctable error leaves a
 *   held chain running and the state "ok"; a non-fatal and a fatal
 *   uncorrectable error end it with -EIO, the state goes back to "ok" and
 *   the next chain moves data right.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <fpgacomm/fpgacomm.h>
#include <fpgacomm/hw.h>
#include <uapi/fpgacomm.h>

#include "ioctl_test.h"

#define EXIT_SKIP 77
#define TICKETS	  200
#define BUF_LEN	  (TICKETS * 4096)
/* Recovery is asynchronous (AER runs in a kernel thread): how long. */
#define RECOVER_MS 20000

static const char *path;
static int fd = -1;
static struct fc_ioc_info info;
static long page;
static char pcidir[4096]; /* /sys/devices/.../BDF */

/* ---- helpers ---- */

static int reg_write(uint32_t off, uint32_t val)
{
	struct fc_ioc_reg r = { .offset = off, .value = val };

	return xioctl(fd, FC_IOC_REG_WRITE, &r);
}

static int unregister(uint32_t handle)
{
	struct fc_ioc_mem m = { .handle = handle };

	return xioctl(fd, FC_IOC_MEM_UNREGISTER, &m);
}

static struct fc_ioc_xfer xfer_to_board(uint32_t handle, uint64_t off,
					uint64_t board, uint64_t len)
{
	struct fc_ioc_xfer x = {
		.src = { .space = FC_SPACE_HOST, .handle = handle, .addr = off },
		.dst = { .space = FC_SPACE_BOARD, .addr = board },
		.len = len,
	};
	return x;
}

static int submit(struct fc_ioc_xfer *x, uint32_t n, uint64_t *t)
{
	struct fc_ioc_submit s = { .count = n, .xfers = (uintptr_t)x };
	int rc = xioctl(fd, FC_IOC_SUBMIT, &s);

	*t = s.ticket;
	return rc;
}

/* WAIT; the ioctl's result, or the chain's status. */
static int wait_on(uint64_t t, int ms)
{
	struct fc_ioc_wait w = { .ticket = t, .timeout_ms = ms };
	int rc = xioctl(fd, FC_IOC_WAIT, &w);

	return rc ? rc : w.status;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The driver's state of the board (sysfs), e.g. "ok". */
static const char *state(void)
{
	static char buf[32];
	const char *base = strrchr(path, '/');
	char file[300];
	FILE *f;

	snprintf(file, sizeof(file), "/sys/class/fpgacomm/%s/state",
		 base ? base + 1 : path);
	buf[0] = '\0';
	f = fopen(file, "r");
	if (f) {
		if (fgets(buf, sizeof(buf), f))
			buf[strcspn(buf, "\n")] = '\0';
		fclose(f);
	}
	return buf;
}

/* Wait (bounded) for the state to read @want. */
static int state_becomes(const char *want)
{
	double end = now_ms() + RECOVER_MS;

	while (strcmp(state(), want)) {
		if (now_ms() > end)
			return -1;
		usleep(10000);
	}
	return 0;
}

static sigjmp_buf bus_jmp;

static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(bus_jmp, 1);
}

/* 1 if reading @p gets SIGBUS, else 0. */
static int sigbus_on(volatile uint8_t *p)
{
	struct sigaction sa = { .sa_handler = on_sigbus }, old;
	volatile int hit = 1;

	sigaction(SIGBUS, &sa, &old);
	if (!sigsetjmp(bus_jmp, 1)) {
		(void)*p;
		hit = 0;
	}
	sigaction(SIGBUS, &old, NULL);
	return hit;
}

/* A chain after the trouble moves a pattern to board memory and back. */
static void next_chain_works(void)
{
	static uint8_t out[65536], in[65536];
	struct fc_ioc_mem a = { .addr = (uintptr_t)out, .len = sizeof(out) };
	struct fc_ioc_mem b = { .addr = (uintptr_t)in, .len = sizeof(in) };
	struct fc_ioc_xfer x[2];
	uint64_t t;
	size_t i;

	for (i = 0; i < sizeof(out); i++)
		out[i] = (uint8_t)(i * 31 + 5);
	memset(in, 0, sizeof(in));
	assert_ok(xioctl(fd, FC_IOC_MEM_REGISTER, &a));
	assert_ok(xioctl(fd, FC_IOC_MEM_REGISTER, &b));
	x[0] = xfer_to_board(a.handle, 0, 3u << 20, sizeof(out));
	x[1].src = x[0].dst;
	x[1].dst = (struct fc_ioc_loc){ .space = FC_SPACE_HOST,
					.handle = b.handle };
	x[1].len = sizeof(in);
	x[1].flags = 0;
	x[1].reserved = 0;
	assert_ok(submit(x, 2, &t));
	assert_ok(wait_on(t, 20000));
	assert_memory_equal(out, in, sizeof(in));
	assert_ok(unregister(a.handle));
	assert_ok(unregister(b.handle));
}

/* ---- tickets held in flight ---- */

struct flight {
	uint8_t *buf;
	struct fc_ioc_mem reg;
	uint64_t t[TICKETS];
	pthread_t waiter;
	int waited; /* what the sleeper's WAIT gave */
};

static void *waiter(void *arg)
{
	struct flight *f = arg;

	f->waited = wait_on(f->t[0], -1);
	return NULL;
}

/*
 * With the engines held (stall knob): one 200-descriptor chain running,
 * 199 one-descriptor tickets queued behind it, a thread asleep in WAIT
 * on the first.
 */
static void flight_start(struct flight *f)
{
	struct fc_ioc_xfer x[TICKETS];
	unsigned int i;

	f->buf = aligned_alloc(page, BUF_LEN);
	assert_non_null(f->buf);
	memset(f->buf, 0x3c, BUF_LEN);
	f->reg = (struct fc_ioc_mem){ .addr = (uintptr_t)f->buf,
				      .len = BUF_LEN };
	assert_ok(xioctl(fd, FC_IOC_MEM_REGISTER, &f->reg));
	assert_ok(reg_write(FC_EMU_FAULT_DMA_STALL, 1));
	for (i = 0; i < TICKETS; i++)
		x[i] = xfer_to_board(f->reg.handle, i * 4096ull, i * 4096ull,
				     4096);
	assert_ok(submit(x, TICKETS, &f->t[0]));
	for (i = 1; i < TICKETS; i++)
		assert_ok(submit(&x[i], 1, &f->t[i]));
	assert_int_equal(pthread_create(&f->waiter, NULL, waiter, f), 0);
	usleep(100000); /* it sleeps, the chain is on the engine */
	assert_rc(wait_on(f->t[0], 0), -ETIMEDOUT);
}

/* Every ticket ended with @want; the engines let go again. */
static void flight_end(struct flight *f, int want)
{
	unsigned int i;

	pthread_join(f->waiter, NULL);
	assert_rc(f->waited, want);
	for (i = 1; i < TICKETS; i++)
		assert_rc(wait_on(f->t[i], 5000), want);
	assert_ok(reg_write(FC_EMU_FAULT_DMA_STALL, 0));
	assert_ok(unregister(f->reg.handle));
	free(f->buf);
}

static int sysfs_write(const char *file, const char *val)
{
	int f = open(file, O_WRONLY);
	int rc = 0;

	if (f < 0)
		return -errno;
	if (write(f, val, strlen(val)) < 0)
		rc = -errno;
	close(f);
	return rc;
}

/* ---- the tests ---- */

static int need(void **st)
{
	(void)st;
	if (!(info.hw_caps & FC_CAP_EMULATED) || geteuid() != 0 || !pcidir[0]) {
		print_message(
			"[   SKIP   ] needs root and an emulated board on PCI\n");
		skip();
	}
	return 0;
}

static void test_reset_sysfs(void **st)
{
	char file[sizeof(pcidir) + 8];
	struct flight f;
	struct fc_dev *dev = NULL;
	struct fc_mem *m = NULL;
	static uint8_t lbuf[4096];
	struct fc_xfer lx;
	volatile uint32_t *regs, *regs2;
	volatile uint8_t *pio = MAP_FAILED, *pio2;
	uint64_t lt;

	need(st);
	snprintf(file, sizeof(file), "%s/reset", pcidir);
	if (access(file, W_OK)) {
		print_message(
			"[   SKIP   ] %s: no reset method for the board\n",
			file);
		skip();
	}
	regs = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, FC_MMAP_REGS);
	assert_true(regs != MAP_FAILED);
	assert_int_equal(regs[FC_REG_ID / 4], FC_HW_ID_MAGIC);
	if (info.features & FC_FEAT_PIO) {
		pio = mmap(NULL, FC_MMAP_PIO_SIZE, PROT_READ | PROT_WRITE,
			   MAP_SHARED, fd, FC_MMAP_PIO);
		assert_true(pio != MAP_FAILED);
		assert_int_equal(sigbus_on(pio), 0);
	}
	flight_start(&f);
	/* Another handle, through the library, queued behind them. */
	assert_ok(fc_open(&dev, path));
	assert_ok(fc_mem_register(dev, lbuf, sizeof(lbuf), 0, &m));
	lx = (struct fc_xfer){ .src = fc_host(m, 0),
			       .dst = fc_board(1u << 20),
			       .len = sizeof(lbuf) };
	assert_ok(fc_dma_submit(dev, &lx, 1, 0, &lt));

	/* Returns once the reset is done (reset_prepare, reset_done). */
	assert_ok(sysfs_write(file, "1"));
	print_message("reset through %s\n", file);
	assert_string_equal(state(), "ok");
	flight_end(&f, -EIO);
	assert_rc(fc_dma_wait(dev, lt, 5000), -EIO);

	/* Mappings from before the reset are revoked; new ones work. */
	assert_int_equal(sigbus_on((volatile uint8_t *)regs), 1);
	regs2 = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, FC_MMAP_REGS);
	assert_true(regs2 != MAP_FAILED);
	assert_int_equal(regs2[FC_REG_ID / 4], FC_HW_ID_MAGIC);
	if (pio != MAP_FAILED) {
		assert_int_equal(sigbus_on(pio), 1);
		pio2 = mmap(NULL, FC_MMAP_PIO_SIZE, PROT_READ | PROT_WRITE,
			    MAP_SHARED, fd, FC_MMAP_PIO);
		assert_true(pio2 != MAP_FAILED);
		assert_int_equal(sigbus_on(pio2), 0);
		munmap((void *)pio2, FC_MMAP_PIO_SIZE);
		munmap((void *)pio, FC_MMAP_PIO_SIZE);
	}
	munmap((void *)regs2, page);
	munmap((void *)regs, page);

	next_chain_works();
	assert_ok(fc_dma_run(dev, &lx, 1, 5000));
	assert_ok(fc_mem_free(dev, m));
	assert_ok(fc_close(dev));
}

/*
 * A board that does not come back from a reset (the deaf knob: it never
 * acknowledges BOARD_RESET) is gone for every open file: calls give
 * -ENODEV, mappings SIGBUS, the state reads "failed". The knob is then
 * cleared through sysfs's resource2 with the driver unbound (the device
 * cannot be reached through it any more), and a bind brings it back.
 */
static void test_reset_board_gone(void **st)
{
	char file[sizeof(pcidir) + 16], bdf[64];
	struct fc_ioc_info i2 = { 0 };
	struct fc_dev *dev = NULL;
	volatile uint32_t *regs, *res;
	const char *slash = strrchr(pcidir, '/');
	uint64_t t;
	int f, tries;

	need(st);
	snprintf(file, sizeof(file), "%s/reset", pcidir);
	if (access(file, W_OK) || !slash) {
		print_message(
			"[   SKIP   ] %s: no reset method for the board\n",
			file);
		skip();
	}
	snprintf(bdf, sizeof(bdf), "%s", slash + 1);
	{
		struct fc_ioc_xfer x;
		static uint8_t buf[4096];
		struct fc_ioc_mem m = { .addr = (uintptr_t)buf,
					.len = sizeof(buf) };

		assert_ok(xioctl(fd, FC_IOC_MEM_REGISTER, &m));
		x = xfer_to_board(m.handle, 0, 0, sizeof(buf));
		assert_ok(reg_write(FC_EMU_FAULT_DMA_STALL, 1));
		assert_ok(submit(&x, 1, &t));
	}
	regs = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, FC_MMAP_REGS);
	assert_true(regs != MAP_FAILED);
	assert_int_equal(regs[FC_REG_ID / 4], FC_HW_ID_MAGIC);
	assert_ok(reg_write(FC_EMU_FAULT_RESET_DEAF, 1));

	assert_ok(sysfs_write(file, "1"));
	assert_string_equal(state(), "failed");
	assert_rc(wait_on(t, 5000), -ENODEV);
	assert_rc(xioctl(fd, FC_IOC_INFO, &i2), -ENODEV);
	assert_true(mmap(NULL, page, PROT_READ, MAP_SHARED, fd, FC_MMAP_REGS) ==
		    MAP_FAILED);
	assert_int_equal(sigbus_on((volatile uint8_t *)regs), 1);
	assert_rc(fc_open(&dev, path), -ENODEV);
	munmap((void *)regs, page);
	close(fd);
	fd = -1;

	/* Unbound, the registers are reachable through sysfs: unwedge. */
	assert_ok(sysfs_write("/sys/bus/pci/drivers/fpgacomm/unbind", bdf));
	snprintf(file, sizeof(file), "%s/resource2", pcidir);
	f = open(file, O_RDWR | O_SYNC);
	assert_true(f >= 0);
	res = mmap(NULL, FC_BAR0_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, f,
		   0);
	assert_true(res != MAP_FAILED);
	res[FC_EMU_FAULT_RESET_DEAF / 4] = 0;
	res[FC_EMU_FAULT_DMA_STALL / 4] = 0;
	munmap((void *)res, FC_BAR0_SIZE);
	close(f);
	assert_ok(sysfs_write("/sys/bus/pci/drivers/fpgacomm/bind", bdf));
	for (tries = 0; fd < 0 && tries < 200; tries++) {
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			usleep(20000);
	}
	assert_true(fd >= 0);
	assert_string_equal(state(), "ok");
	next_chain_works();
}

/* ---- AER ---- */

/* struct aer_error_inj of the kernel's aer_inject.c (its ABI). */
struct aer_error_inj {
	uint8_t bus;
	uint8_t dev;
	uint8_t fn;
	uint32_t uncor_status;
	uint32_t cor_status;
	uint32_t header_log0;
	uint32_t header_log1;
	uint32_t header_log2;
	uint32_t header_log3;
	uint32_t domain;
};

#define AER_COR_BAD_TLP	  0x00000040 /* PCI_ERR_COR_BAD_TLP */
#define AER_UNC_COMP_TIME 0x00004000 /* non-fatal by default */
#define AER_UNC_DLP	  0x00000010 /* fatal by default */

/* The root port above the board (the parent of pcidir); -ENODEV if none. */
static int aer_port(unsigned int *dom, unsigned int *bus, unsigned int *dev,
		    unsigned int *fn)
{
	char port[sizeof(pcidir)];
	char *slash;

	snprintf(port, sizeof(port), "%s", pcidir);
	slash = strrchr(port, '/');
	if (!slash)
		return -ENODEV;
	*slash = '\0';
	slash = strrchr(port, '/');
	if (!slash || sscanf(slash + 1, "%x:%x:%x.%x", dom, bus, dev, fn) != 4)
		return -ENODEV; /* on the root bus: no port */
	return 0;
}

/* Inject at the root port above the board. */
static int aer_inject(uint32_t cor, uint32_t uncor)
{
	struct aer_error_inj e = { .cor_status = cor, .uncor_status = uncor };
	unsigned int dom, bus, dev, fn;
	int f, rc = 0;

	if (aer_port(&dom, &bus, &dev, &fn))
		return -ENODEV;
	e.domain = dom;
	e.bus = (uint8_t)bus;
	e.dev = (uint8_t)dev;
	e.fn = (uint8_t)fn;
	f = open("/dev/aer_inject", O_WRONLY);
	if (f < 0)
		return -errno;
	if (write(f, &e, sizeof(e)) != (ssize_t)sizeof(e))
		rc = -errno;
	close(f);
	return rc;
}

static void need_aer(void **st)
{
	unsigned int dom, bus, dev, fn;

	need(st);
	if (access("/dev/aer_inject", W_OK) ||
	    aer_port(&dom, &bus, &dev, &fn)) {
		print_message(
			"[   SKIP   ] no /dev/aer_inject (modprobe aer_inject), or the board is not behind a root port\n");
		skip();
	}
}

static void test_aer_correctable(void **st)
{
	struct flight f;

	need_aer(st);
	flight_start(&f);
	assert_ok(aer_inject(AER_COR_BAD_TLP, 0));
	/* Logged by the kernel; nothing for the driver to do. */
	usleep(300000);
	assert_string_equal(state(), "ok");
	assert_rc(wait_on(f.t[0], 0), -ETIMEDOUT);
	assert_ok(reg_write(FC_EMU_FAULT_DMA_STALL, 0));
	flight_end(&f, 0);
	next_chain_works();
}

static void aer_uncorrectable(uint32_t status)
{
	struct flight f;
	double end;

	flight_start(&f);
	assert_ok(aer_inject(0, status));
	pthread_join(f.waiter, NULL);
	assert_rc(f.waited, -EIO);
	f.waited = -EIO;
	assert_int_equal(pthread_create(&f.waiter, NULL, waiter, &f), 0);
	if (state_becomes("ok"))
		fail_msg("state %s, not ok after %d ms", state(), RECOVER_MS);
	/* Calls during the recovery get -EIO: retry until it is over. */
	end = now_ms() + RECOVER_MS;
	while (reg_write(FC_EMU_FAULT_DMA_STALL, 0) == -EIO && now_ms() < end)
		usleep(10000);
	flight_end(&f, -EIO);
	next_chain_works();
}

static void test_aer_nonfatal(void **st)
{
	need_aer(st);
	aer_uncorrectable(AER_UNC_COMP_TIME);
}

static void test_aer_fatal(void **st)
{
	need_aer(st);
	aer_uncorrectable(AER_UNC_DLP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reset_sysfs),
		cmocka_unit_test(test_reset_board_gone),
		cmocka_unit_test(test_aer_correctable),
		cmocka_unit_test(test_aer_nonfatal),
		cmocka_unit_test(test_aer_fatal),
	};
	const char *base;
	char link[400];
	struct stat st;

	page = sysconf(_SC_PAGESIZE);
	path = getenv("FPGACOMM_TEST_DEVICE");
	if (!path || stat(path, &st) || !S_ISCHR(st.st_mode)) {
		printf("SKIP: FPGACOMM_TEST_DEVICE (%s) is not a /dev node\n",
		       path ? path : "unset");
		return EXIT_SKIP;
	}
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0 || xioctl(fd, FC_IOC_INFO, &info)) {
		printf("%s: %s\n", path, strerror(errno));
		return 1;
	}
	base = strrchr(path, '/');
	snprintf(link, sizeof(link), "/sys/class/fpgacomm/%s/device",
		 base ? base + 1 : path);
	/* /sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0 */
	if (!realpath(link, pcidir))
		pcidir[0] = '\0';
	if (getenv("FPGACOMM_TEST_FILTER"))
		cmocka_set_test_filter(getenv("FPGACOMM_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
