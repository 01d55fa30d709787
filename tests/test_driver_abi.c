// SPDX-License-Identifier: MIT
/*
 * test_driver_abi: the raw ioctl ABI of fpgacomm.ko (include/uapi/fpgacomm.h)
 * without the library: struct layouts, bad pointers, lengths, flags,
 * reserved fields, handles, spaces and ranges, unknown commands, register
 * offsets and privileges, RLIMIT_MEMLOCK, user-address and registered
 * transfers, chains longer than 255 descriptors, the per-file descriptor
 * budget (-E2BIG, -EAGAIN), several engines (FC_SUBMIT_ENGINE: bad
 * indexes, a short ticket on engine 1 not held back by engine 0's queue),
 * eventfd and poll(2),
 * MEM_ALLOC + mmap, MEM_INFO, channel rings (CHAN_RING, CHAN_HEAD), the
 * event queue (EQ, EQ_HEAD, FC_CHAN_RING_EQ),
 * fork() with a registered buffer, close with a chain in
 * flight; with the emulator, a stalled chain and RESET.
 *
 * FPGACOMM_TEST_DEVICE must name a /dev node, else the test is skipped.
 * Extra modes for the VM scripts: --timeout-test (the driver's
 * dma_timeout_ms recovery, expects it set low) and --remove-test (PCI
 * remove with the file open and mapped, then rescan).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <linux/capability.h>

#include <fpgacomm/hw.h>
#include <uapi/fpgacomm.h>

#include "ioctl_test.h"

#include "chain_rule.h"

#define EXIT_SKIP 77
#define WAIT_MS	  20000

static const char *path;
static int fd = -1;
static struct fc_ioc_info info;
static long page;

/* ---- helpers ---- */

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int reg_read(uint32_t off, uint32_t *val)
{
	struct fc_ioc_reg r = { .offset = off };
	int rc = xioctl(fd, FC_IOC_REG_READ, &r);

	*val = r.value;
	return rc;
}

static int reg_write(uint32_t off, uint32_t val)
{
	struct fc_ioc_reg r = { .offset = off, .value = val };

	return xioctl(fd, FC_IOC_REG_WRITE, &r);
}

static int mem_info(int f, uint32_t h, struct fc_ioc_mem_info *out)
{
	struct fc_ioc_mem_info mi = { .handle = h };
	int rc = xioctl(f, FC_IOC_MEM_INFO, &mi);

	if (out)
		*out = mi;
	return rc;
}

static int chan_ring(int f, uint32_t chan, uint32_t h, uint32_t slots,
		     uint64_t off, uint32_t *head)
{
	struct fc_ioc_chan_ring r = { .chan = chan,
				      .handle = h,
				      .slots = slots,
				      .offset = off };
	int rc = xioctl(f, FC_IOC_CHAN_RING, &r);

	if (head)
		*head = r.head;
	return rc;
}

static int chan_off(int f, uint32_t chan)
{
	struct fc_ioc_chan_ring r = { .chan = chan, .flags = FC_CHAN_RING_OFF };

	return xioctl(f, FC_IOC_CHAN_RING, &r);
}

static int chan_head(int f, uint32_t chan, uint32_t head)
{
	struct fc_ioc_chan_head a = { .chan = chan, .head = head };

	return xioctl(f, FC_IOC_CHAN_HEAD, &a);
}

static int submit(struct fc_ioc_xfer *x, uint32_t n, uint64_t *t)
{
	return submit_on(fd, x, n, t);
}

/* SUBMIT on engine @e (FC_SUBMIT_ENGINE). */
static int submit_engine(int f, uint32_t e, struct fc_ioc_xfer *x, uint32_t n,
			 uint64_t *t)
{
	struct fc_ioc_submit s = { .flags = FC_SUBMIT_ENGINE,
				   .count = n,
				   .xfers = (uintptr_t)x,
				   .engine = e };
	int rc = xioctl(f, FC_IOC_SUBMIT, &s);

	*t = s.ticket;
	return rc;
}

/* The engines SUBMIT may name: 0 without FC_FEAT_ENGINES. */
static uint32_t engines(void)
{
	if (!(info.features & FC_FEAT_ENGINES))
		return 0;
	if (!info.dma_engines)
		return 1;
	return info.dma_engines < FC_DMA_MAX_ENGINES ? info.dma_engines :
						       FC_DMA_MAX_ENGINES;
}

/* WAIT; returns the ioctl's result, or the chain's status. */
static int wait_on(int f, uint64_t t, int ms, struct fc_ioc_wait *out)
{
	struct fc_ioc_wait w = { .ticket = t, .timeout_ms = ms };
	int rc = xioctl(f, FC_IOC_WAIT, &w);

	if (out)
		*out = w;
	return rc ? rc : w.status;
}

static int run_chain(struct fc_ioc_xfer *x, uint32_t n)
{
	uint64_t t;
	int rc = submit(x, n, &t);

	return rc ? rc : wait_on(fd, t, WAIT_MS, NULL);
}

static int is_emulated(void)
{
	return !!(info.hw_caps & FC_CAP_EMULATED);
}

#define need_emulator()                                                     \
	do {                                                                \
		if (!is_emulated()) {                                       \
			print_message("[   SKIP   ] needs the emulator\n"); \
			skip();                                             \
		}                                                           \
	} while (0)

/* Drop capabilities from this (child) process's effective set. */
static void drop_caps(uint64_t caps)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		_exit(90);
	d[0].effective &= ~(uint32_t)caps;
	d[1].effective &= ~(uint32_t)(caps >> 32);
	if (syscall(SYS_capset, &h, d))
		_exit(91);
}

static int child_status(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* ---- struct layout ---- */

static void test_layout(void **state)
{
	assert_int_equal(sizeof(struct fc_ioc_info), 112);
	assert_int_equal(offsetof(struct fc_ioc_info, flags), 0);
	assert_int_equal(offsetof(struct fc_ioc_info, abi_version), 4);
	assert_int_equal(offsetof(struct fc_ioc_info, features), 8);
	assert_int_equal(offsetof(struct fc_ioc_info, irq_mode), 12);
	assert_int_equal(offsetof(struct fc_ioc_info, hw_id), 16);
	assert_int_equal(offsetof(struct fc_ioc_info, hw_version), 20);
	assert_int_equal(offsetof(struct fc_ioc_info, hw_caps), 24);
	assert_int_equal(offsetof(struct fc_ioc_info, node_id), 28);
	assert_int_equal(offsetof(struct fc_ioc_info, dma_engines), 32);
	assert_int_equal(offsetof(struct fc_ioc_info, num_ports), 36);
	assert_int_equal(offsetof(struct fc_ioc_info, max_chain), 40);
	assert_int_equal(offsetof(struct fc_ioc_info, numa_node), 44);
	assert_int_equal(offsetof(struct fc_ioc_info, max_xfer_len), 48);
	assert_int_equal(offsetof(struct fc_ioc_info, board_mem_size), 56);
	assert_int_equal(offsetof(struct fc_ioc_info, regs_size), 64);
	assert_int_equal(offsetof(struct fc_ioc_info, aperture_size), 72);
	assert_int_equal(offsetof(struct fc_ioc_info, max_desc), 80);
	assert_int_equal(offsetof(struct fc_ioc_info, reserved0), 84);
	assert_int_equal(offsetof(struct fc_ioc_info, reserved), 88);

	assert_int_equal(sizeof(struct fc_ioc_mem), 48);
	assert_int_equal(offsetof(struct fc_ioc_mem, flags), 0);
	assert_int_equal(offsetof(struct fc_ioc_mem, handle), 4);
	assert_int_equal(offsetof(struct fc_ioc_mem, addr), 8);
	assert_int_equal(offsetof(struct fc_ioc_mem, len), 16);
	assert_int_equal(offsetof(struct fc_ioc_mem, mmap_offset), 24);
	assert_int_equal(offsetof(struct fc_ioc_mem, reserved), 32);

	assert_int_equal(sizeof(struct fc_ioc_loc), 16);
	assert_int_equal(offsetof(struct fc_ioc_loc, space), 0);
	assert_int_equal(offsetof(struct fc_ioc_loc, handle), 4);
	assert_int_equal(offsetof(struct fc_ioc_loc, addr), 8);

	assert_int_equal(sizeof(struct fc_ioc_xfer), 48);
	assert_int_equal(offsetof(struct fc_ioc_xfer, src), 0);
	assert_int_equal(offsetof(struct fc_ioc_xfer, dst), 16);
	assert_int_equal(offsetof(struct fc_ioc_xfer, len), 32);
	assert_int_equal(offsetof(struct fc_ioc_xfer, flags), 40);
	assert_int_equal(offsetof(struct fc_ioc_xfer, reserved), 44);

	assert_int_equal(sizeof(struct fc_ioc_submit), 48);
	assert_int_equal(offsetof(struct fc_ioc_submit, flags), 0);
	assert_int_equal(offsetof(struct fc_ioc_submit, count), 4);
	assert_int_equal(offsetof(struct fc_ioc_submit, xfers), 8);
	assert_int_equal(offsetof(struct fc_ioc_submit, eventfd), 16);
	assert_int_equal(offsetof(struct fc_ioc_submit, engine), 20);
	assert_int_equal(offsetof(struct fc_ioc_submit, ticket), 24);
	assert_int_equal(offsetof(struct fc_ioc_submit, reserved), 32);

	assert_int_equal(sizeof(struct fc_ioc_wait), 48);
	assert_int_equal(offsetof(struct fc_ioc_wait, flags), 0);
	assert_int_equal(offsetof(struct fc_ioc_wait, timeout_ms), 4);
	assert_int_equal(offsetof(struct fc_ioc_wait, ticket), 8);
	assert_int_equal(offsetof(struct fc_ioc_wait, status), 16);
	assert_int_equal(offsetof(struct fc_ioc_wait, hw_error), 20);
	assert_int_equal(offsetof(struct fc_ioc_wait, hw_index), 24);
	assert_int_equal(offsetof(struct fc_ioc_wait, reserved0), 28);
	assert_int_equal(offsetof(struct fc_ioc_wait, reserved), 32);

	assert_int_equal(sizeof(struct fc_ioc_reg), 16);
	assert_int_equal(offsetof(struct fc_ioc_reg, flags), 0);
	assert_int_equal(offsetof(struct fc_ioc_reg, offset), 4);
	assert_int_equal(offsetof(struct fc_ioc_reg, value), 8);
	assert_int_equal(offsetof(struct fc_ioc_reg, reserved), 12);

	assert_int_equal(sizeof(struct fc_ioc_reset), 8);

	assert_int_equal(sizeof(struct fc_ioc_pio_kick), 16);
	assert_int_equal(offsetof(struct fc_ioc_pio_kick, flags), 0);
	assert_int_equal(offsetof(struct fc_ioc_pio_kick, reserved0), 4);
	assert_int_equal(offsetof(struct fc_ioc_pio_kick, reserved), 8);
	assert_int_equal(_IOC_NR(FC_IOC_PIO_KICK), 0x0c);

	assert_int_equal(sizeof(struct fc_ioc_eq), 40);
	assert_int_equal(offsetof(struct fc_ioc_eq, flags), 0);
	assert_int_equal(offsetof(struct fc_ioc_eq, handle), 4);
	assert_int_equal(offsetof(struct fc_ioc_eq, slots), 8);
	assert_int_equal(offsetof(struct fc_ioc_eq, reserved0), 12);
	assert_int_equal(offsetof(struct fc_ioc_eq, offset), 16);
	assert_int_equal(offsetof(struct fc_ioc_eq, reserved), 24);
	assert_int_equal(_IOC_NR(FC_IOC_EQ), 0x0f);
	assert_int_equal(sizeof(struct fc_ioc_eq_head), 16);
	assert_int_equal(offsetof(struct fc_ioc_eq_head, flags), 0);
	assert_int_equal(offsetof(struct fc_ioc_eq_head, head), 4);
	assert_int_equal(offsetof(struct fc_ioc_eq_head, reserved), 8);
	assert_int_equal(_IOC_NR(FC_IOC_EQ_HEAD), 0x10);

	assert_int_equal(sizeof(struct fc_ioc_peer_import), 48);
	assert_int_equal(offsetof(struct fc_ioc_peer_import, flags), 0);
	assert_int_equal(offsetof(struct fc_ioc_peer_import, fd), 4);
	assert_int_equal(offsetof(struct fc_ioc_peer_import, offset), 8);
	assert_int_equal(offsetof(struct fc_ioc_peer_import, len), 16);
	assert_int_equal(offsetof(struct fc_ioc_peer_import, handle), 24);
	assert_int_equal(offsetof(struct fc_ioc_peer_import, reserved0), 28);
	assert_int_equal(offsetof(struct fc_ioc_peer_import, reserved), 32);
	assert_int_equal(_IOC_NR(FC_IOC_PEER_IMPORT), 0x0d);
	assert_int_equal(_IOC_DIR(FC_IOC_PEER_IMPORT), _IOC_READ | _IOC_WRITE);

	assert_int_equal(sizeof(struct fc_ioc_peer_export), 40);
	assert_int_equal(offsetof(struct fc_ioc_peer_export, flags), 0);
	assert_int_equal(offsetof(struct fc_ioc_peer_export, fd), 4);
	assert_int_equal(offsetof(struct fc_ioc_peer_export, offset), 8);
	assert_int_equal(offsetof(struct fc_ioc_peer_export, len), 16);
	assert_int_equal(offsetof(struct fc_ioc_peer_export, reserved), 24);
	assert_int_equal(_IOC_NR(FC_IOC_PEER_EXPORT), 0x0e);
	assert_int_equal(_IOC_DIR(FC_IOC_PEER_EXPORT), _IOC_READ | _IOC_WRITE);

	assert_int_equal(sizeof(struct fc_ioc_peer_window), 48);
	assert_int_equal(offsetof(struct fc_ioc_peer_window, op), 0);
	assert_int_equal(offsetof(struct fc_ioc_peer_window, flags), 4);
	assert_int_equal(offsetof(struct fc_ioc_peer_window, handle), 8);
	assert_int_equal(offsetof(struct fc_ioc_peer_window, entry), 12);
	assert_int_equal(offsetof(struct fc_ioc_peer_window, offset), 16);
	assert_int_equal(offsetof(struct fc_ioc_peer_window, len), 24);
	assert_int_equal(offsetof(struct fc_ioc_peer_window, reserved), 32);
	assert_int_equal(_IOC_NR(FC_IOC_PEER_WINDOW), 0x12);
	assert_int_equal(_IOC_DIR(FC_IOC_PEER_WINDOW), _IOC_READ | _IOC_WRITE);

	assert_int_equal(_IOC_SIZE(FC_IOC_INFO), sizeof(struct fc_ioc_info));
	assert_int_equal(_IOC_SIZE(FC_IOC_SUBMIT),
			 sizeof(struct fc_ioc_submit));
	assert_int_equal(_IOC_SIZE(FC_IOC_WAIT), sizeof(struct fc_ioc_wait));
	assert_int_equal(_IOC_NR(FC_IOC_REG_WRITE), 8);
}

/* ---- INFO, unknown commands ---- */

static void test_info(void **state)
{
	struct fc_ioc_info i = { .flags = 1 };

	assert_rc(xioctl(fd, FC_IOC_INFO, &i), -EINVAL);
	assert_rc(xioctl(fd, FC_IOC_INFO, NULL), -EFAULT);
	assert_rc(xioctl(fd, FC_IOC_INFO, (void *)16), -EFAULT);
	memset(&i, 0, sizeof(i));
	assert_ok(xioctl(fd, FC_IOC_INFO, &i));
	assert_int_equal(i.abi_version, FC_ABI_VERSION);
	assert_int_equal(i.hw_id, FC_HW_ID_MAGIC);
	assert_int_equal(i.max_chain, 255);
	assert_true(i.max_xfer_len >= 1 && i.max_xfer_len <= FC_DESC_MAX_LEN);
	assert_int_equal(i.regs_size, FC_BAR0_SIZE);
	assert_true(i.features & FC_FEAT_DMA);
	assert_true(i.features & FC_FEAT_MEM_REGISTER);
	assert_true(i.features & FC_FEAT_REG);
	assert_true(i.irq_mode <= FC_IRQ_MODE_MSIX);
	assert_true(i.numa_node >= -1);
	/* the per-file descriptor budget: whole tables of max_chain */
	assert_true(i.features & FC_FEAT_DESC_LIMIT);
	assert_true(i.max_desc >= i.max_chain);
	assert_int_equal(i.max_desc % i.max_chain, 0);
	assert_int_equal(i.reserved0, 0);
	for (int k = 0; k < 3; k++)
		assert_int_equal(i.reserved[k], 0);
	print_message("features 0x%x irq_mode %u node %u mem %" PRIu64
		      " aperture %" PRIu64 "\n",
		      i.features, i.irq_mode, i.node_id,
		      (uint64_t)i.board_mem_size, (uint64_t)i.aperture_size);
}

static void test_unknown_commands(void **state)
{
	char buf[256] = { 0 };

	assert_rc(xioctl(fd, _IO(FC_IOC_MAGIC, 0x7f), NULL), -ENOTTY);
	assert_rc(xioctl(fd, _IOWR(FC_IOC_MAGIC, 0x09, struct fc_ioc_reg), buf),
		  -ENOTTY);
	/* a known number with another size or direction */
	assert_rc(xioctl(fd, _IOWR(FC_IOC_MAGIC, 0x00, struct fc_ioc_reg), buf),
		  -ENOTTY);
	assert_rc(xioctl(fd, _IOR(FC_IOC_MAGIC, 0x05, struct fc_ioc_wait), buf),
		  -ENOTTY);
	assert_rc(xioctl(fd, _IOWR('x', 0x00, struct fc_ioc_info), buf),
		  -ENOTTY);
	assert_rc(xioctl(fd, 0, NULL), -ENOTTY);
	assert_rc(xioctl(fd, 0xffffffffu, NULL), -ENOTTY);
}

/* ---- registers ---- */

static void test_reg(void **state)
{
	static const uint32_t bad[] = { 1,
					2,
					3,
					0x21,
					FC_BAR0_SIZE,
					FC_BAR0_SIZE + 4,
					FC_BAR0_SIZE - 1,
					0x7ffffffc,
					0xfffffffc,
					0xffffffff };
	struct fc_ioc_reg r;
	uint32_t v;
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_rc(reg_read(bad[i], &v), -EINVAL);
		assert_rc(reg_write(bad[i], 0xbad), -EINVAL);
	}
	r = (struct fc_ioc_reg){ .offset = FC_REG_ID, .flags = 1 };
	assert_rc(xioctl(fd, FC_IOC_REG_READ, &r), -EINVAL);
	r = (struct fc_ioc_reg){ .offset = FC_REG_ID, .reserved = 1 };
	assert_rc(xioctl(fd, FC_IOC_REG_READ, &r), -EINVAL);
	assert_rc(xioctl(fd, FC_IOC_REG_WRITE, &r), -EINVAL);
	assert_rc(xioctl(fd, FC_IOC_REG_READ, NULL), -EFAULT);
	assert_rc(xioctl(fd, FC_IOC_REG_WRITE, (void *)8), -EFAULT);

	assert_ok(reg_read(FC_REG_ID, &v));
	assert_int_equal(v, FC_HW_ID_MAGIC);
	assert_ok(reg_read(FC_BAR0_SIZE - 4, &v));
	assert_ok(reg_write(FC_REG_SCRATCH, 0x12345678));
	if (is_emulated()) {
		double t0 = now_ms();

		do {
			assert_ok(reg_read(FC_REG_SCRATCH_ECHO, &v));
		} while (v != ~0x12345678u && now_ms() - t0 < 2000);
		assert_int_equal(v, ~0x12345678u);
	}
}

/* Without CAP_SYS_RAWIO: reads work, writes and the register mmap do not. */
static void test_reg_privilege(void **state)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		uint32_t v;
		void *p;

		drop_caps(1ull << CAP_SYS_RAWIO);
		if (reg_read(FC_REG_ID, &v) || v != FC_HW_ID_MAGIC)
			_exit(1);
		if (reg_write(FC_REG_SCRATCH, 1) != -EPERM)
			_exit(2);
		/* stream programs reach no host memory: any user may */
		if (reg_write(FC_LS_SREG(0, 1, FC_LS_PROG_LEN), 0) != 0)
			_exit(4);
		if (reg_write(FC_LS_SREG(0, 1, FC_LS_STATUS), 0) != -EPERM)
			_exit(5);
		p = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, FC_MMAP_REGS);
		if (p != MAP_FAILED || errno != EPERM)
			_exit(3);
		_exit(0);
	}
	assert_int_equal(child_status(pid), 0);
}

/* The sum of the bus-address registers of every engine and ring @ch. */
static uint64_t bus_regs(uint32_t ch)
{
	uint64_t sum = 0;
	uint32_t e, v;

	for (e = 0; e < info.dma_engines && e < FC_DMA_MAX_ENGINES; e++) {
		if (reg_read(FC_DMA_REG(e, FC_DMA_DESC_LO), &v))
			return ~0ull;
		sum += v;
		if (reg_read(FC_DMA_REG(e, FC_DMA_DESC_HI), &v))
			return ~0ull;
		sum += v;
	}
	if (reg_read(FC_CHAN_REG(ch, FC_CHAN_RING_LO), &v))
		return ~0ull;
	sum += v;
	if (reg_read(FC_CHAN_REG(ch, FC_CHAN_RING_HI), &v))
		return ~0ull;
	return sum + v;
}

/*
 * REG_READ of a register that holds a bus address (descriptor tables,
 * receive rings; stream programs alike) reads 0 without CAP_SYS_RAWIO,
 * as MEM_INFO gives no bus address; the registers beside them read true.
 */
static void test_reg_bus_masked(void **state)
{
	enum {
		CH = 7,
		SLOTS = 64
	};
	struct fc_ioc_xfer x = xfer(board(0), board(4096), 64);
	uint32_t h, count;
	pid_t pid;

	assert_ok(run_chain(&x, 1));
	assert_ok(mem_alloc(fd, SLOTS * FC_CHAN_SLOT_SIZE, &h));
	assert_ok(chan_ring(fd, CH, h, SLOTS, 0, NULL));
	assert_true(bus_regs(CH) != 0 && bus_regs(CH) != ~0ull);
	assert_ok(reg_read(FC_CHAN_REG(CH, FC_CHAN_RING_SLOTS), &count));
	assert_int_equal(count, SLOTS);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		uint32_t v;

		drop_caps(1ull << CAP_SYS_RAWIO);
		if (bus_regs(CH) != 0)
			_exit(1);
		if (reg_read(FC_CHAN_REG(CH, FC_CHAN_RING_SLOTS), &v) ||
		    v != SLOTS)
			_exit(2);
		if (reg_read(FC_REG_ID, &v) || v != FC_HW_ID_MAGIC)
			_exit(3);
		_exit(0);
	}
	assert_int_equal(child_status(pid), 0);
	assert_ok(chan_off(fd, CH));
	assert_ok(mem_unregister(fd, h));
}

/*
 * A fabric address in a host region is a raw bus address: without
 * CAP_SYS_RAWIO, SUBMIT refuses it (-EPERM) and MEM_INFO gives none, while
 * channels, board memory and peer windows (entries the receiving host
 * mapped) stay open to the group. Entry 0 of this board's own window maps
 * nothing here: the chain is taken and ends with an error.
 */
static void test_raw_bus_privilege(void **state)
{
	static uint8_t buf[4096];
	pid_t pid;
	uint32_t h;

	assert_ok(mem_register(fd, buf, sizeof(buf), &h));
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct fc_ioc_loc raw = {
			.space = FC_SPACE_FABRIC,
			.addr = FC_FABRIC_ADDR(info.node_id, FC_REGION_HOST,
					       0x1000),
		};
		struct fc_ioc_loc peer = raw;
		struct fc_ioc_xfer x;
		uint64_t t;
		int rc;

		peer.addr = FC_FABRIC_ADDR(info.node_id, FC_REGION_PEER, 0);
		drop_caps(1ull << CAP_SYS_RAWIO);
		x = xfer(raw, host(h, 0), 64); /* read a bus address */
		if (submit(&x, 1, &t) != -EPERM)
			_exit(1);
		x = xfer(host(h, 0), raw, 64); /* write one */
		if (submit(&x, 1, &t) != -EPERM)
			_exit(2);
		x = xfer(host(h, 0), peer, 64);
		if (submit(&x, 1, &t))
			_exit(3);
		rc = wait_on(fd, t, 20000, NULL);
		if (!rc || rc == -ETIMEDOUT)
			_exit(5);
		x = xfer(host(h, 0), board(0), 64); /* board memory is fine */
		if (submit(&x, 1, &t))
			_exit(4);
		_exit(0);
	}
	assert_int_equal(child_status(pid), 0);
	assert_ok(mem_unregister(fd, h));
}

static void test_mmap_regs(void **state)
{
	volatile uint32_t *r;
	void *p;

	if (!(info.features & FC_FEAT_MMAP_REGS))
		skip();
	r = mmap(NULL, FC_BAR0_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 FC_MMAP_REGS);
	assert_true(r != MAP_FAILED);
	assert_int_equal(r[FC_REG_ID / 4], FC_HW_ID_MAGIC);
	munmap((void *)r, FC_BAR0_SIZE);
	/* too long, private, at an odd place */
	p = mmap(NULL, FC_BAR0_SIZE + page, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(p == MAP_FAILED && errno == EINVAL);
	p = mmap(NULL, page, PROT_READ, MAP_PRIVATE, fd, 0);
	assert_true(p == MAP_FAILED && errno == EINVAL);
	p = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, FC_BAR0_SIZE);
	assert_true(p == MAP_FAILED && errno == EINVAL);
	if (info.aperture_size) {
		p = mmap(NULL, info.aperture_size, PROT_READ, MAP_SHARED, fd,
			 FC_MMAP_APERTURE);
		assert_true(p != MAP_FAILED);
		munmap(p, info.aperture_size);
	}
	p = mmap(NULL, page, PROT_READ, MAP_SHARED, fd,
		 FC_MMAP_APERTURE + info.aperture_size);
	assert_true(p == MAP_FAILED && errno == EINVAL);
}

/* ---- the PIO send pages ---- */

/* What the board did with the PIO window: wait for HEAD to reach @tail. */
static int pio_taken(int f, volatile uint32_t *pio, uint32_t tail)
{
	struct fc_ioc_pio_kick k = { 0 };
	double end = now_ms() + WAIT_MS;

	if ((info.features & FC_FEAT_PIO_KICK) &&
	    xioctl(f, FC_IOC_PIO_KICK, &k))
		return 10;
	while (pio[(FC_PIO_HEAD - FC_PIO_BASE) / 4] != tail)
		if (now_ms() > end)
			return 11;
		else
			usleep(1000);
	return 0;
}

/*
 * Without CAP_SYS_RAWIO: the PIO pages map for the first file only (another
 * gets -EBUSY until it closes), at their offset and size only; PIO_KICK
 * checks its argument and its caller; a packet the board refuses is counted
 * and the window moves on.
 */
static int pio_child(void)
{
	struct fc_ioc_pio_kick k = { 0 };
	volatile uint32_t *pio;
	struct fc_hw_pkt pkt;
	uint32_t tail, errors;
	int a = open(path, O_RDWR), b = open(path, O_RDWR);
	void *p;

	drop_caps(1ull << CAP_SYS_RAWIO);
	if (a < 0 || b < 0)
		return 1;
	if (xioctl(a, FC_IOC_PIO_KICK, &k) != -EACCES)
		return 2;
	/* A failed mapping (too large) leaves the pages to others. */
	p = mmap(NULL, FC_MMAP_PIO_SIZE + page, PROT_READ, MAP_SHARED, b,
		 FC_MMAP_PIO);
	if (p != MAP_FAILED || errno != EINVAL)
		return 16;
	pio = mmap(NULL, FC_MMAP_PIO_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		   a, FC_MMAP_PIO);
	if (pio == MAP_FAILED)
		return 3;
	p = mmap(NULL, FC_MMAP_PIO_SIZE, PROT_READ, MAP_SHARED, b, FC_MMAP_PIO);
	if (p != MAP_FAILED || errno != EBUSY)
		return 4;
	if (xioctl(b, FC_IOC_PIO_KICK, &k) != -EACCES)
		return 5;
	p = mmap(NULL, page, PROT_READ, MAP_SHARED, a, FC_MMAP_PIO + page);
	if (p != MAP_FAILED || errno != EINVAL)
		return 6;
	p = mmap(NULL, FC_MMAP_PIO_SIZE + page, PROT_READ, MAP_SHARED, a,
		 FC_MMAP_PIO);
	if (p != MAP_FAILED || errno != EINVAL)
		return 7;
	k.flags = 1;
	if (xioctl(a, FC_IOC_PIO_KICK, &k) != -EINVAL)
		return 8;
	k.flags = 0;
	k.reserved[0] = 1;
	if (xioctl(a, FC_IOC_PIO_KICK, &k) != -EINVAL)
		return 9;

	/* a PUT may not go through the window: refused, counted */
	if (reg_read(FC_PIO_ERRORS, &errors))
		return 12;
	memset(&pkt, 0, sizeof(pkt));
	pkt.hdr = htole32(FC_PKT_HDR(info.node_id, 0, 1, 8, FC_PKT_T_PUT) |
			  FC_PKT_EOM);
	tail = pio[(FC_PIO_TAIL - FC_PIO_BASE) / 4];
	memcpy((uint8_t *)pio + FC_PIO_SLOT(tail) - FC_PIO_BASE, &pkt,
	       sizeof(pkt));
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	pio[(FC_PIO_TAIL - FC_PIO_BASE) / 4] = ++tail;
	if (pio_taken(a, pio, tail))
		return 13;
	if (reg_read(FC_PIO_ERRORS, &tail) || tail != errors + 1)
		return 14;

	/* closed: the pages go to the next file that asks */
	munmap((void *)pio, FC_MMAP_PIO_SIZE);
	close(a);
	p = mmap(NULL, FC_MMAP_PIO_SIZE, PROT_READ, MAP_SHARED, b, FC_MMAP_PIO);
	if (p == MAP_FAILED)
		return 15;
	munmap(p, FC_MMAP_PIO_SIZE);
	close(b);
	return 0;
}

static void test_pio_pages(void **state)
{
	pid_t pid;

	if (!(info.features & FC_FEAT_PIO))
		skip();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(pio_child());
	assert_int_equal(child_status(pid), 0);
}

/* ---- memory registration ---- */

static void test_mem_register_bad(void **state)
{
	struct fc_ioc_mem m;
	uint8_t *p, buf[100];
	uint32_t h, h2;

	m = (struct fc_ioc_mem){ .addr = (uintptr_t)buf, .len = 0 };
	assert_rc(xioctl(fd, FC_IOC_MEM_REGISTER, &m), -EINVAL);
	m = (struct fc_ioc_mem){ .addr = (uintptr_t)buf, .len = 8, .flags = 1 };
	assert_rc(xioctl(fd, FC_IOC_MEM_REGISTER, &m), -EINVAL);
	m = (struct fc_ioc_mem){ .addr = (uintptr_t)buf,
				 .len = 8,
				 .reserved[1] = 1 };
	assert_rc(xioctl(fd, FC_IOC_MEM_REGISTER, &m), -EINVAL);
	assert_rc(xioctl(fd, FC_IOC_MEM_REGISTER, NULL), -EFAULT);
	/* wrapping, kernel and unmapped addresses */
	assert_rc(mem_register(fd, buf, UINT64_MAX, &h), -EINVAL);
	assert_rc(mem_register(fd, (void *)0xffff888000000000ull, 4096, &h),
		  -EFAULT);
	p = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	munmap(p + page, 2 * page);
	assert_rc(mem_register(fd, p + page, page, &h), -EFAULT);
	assert_rc(mem_register(fd, p + page - 10, 20, &h), -EFAULT);
	/* read-only memory cannot be a DMA target */
	mprotect(p, page, PROT_READ);
	assert_rc(mem_register(fd, p, page, &h), -EFAULT);
	munmap(p, page);

	/* any alignment; unregister twice; unknown handles */
	assert_ok(mem_register(fd, buf + 3, 77, &h));
	assert_true(h != 0);
	assert_ok(mem_register(fd, buf + 1, 1, &h2));
	assert_true(h2 != h);
	assert_ok(mem_unregister(fd, h));
	assert_rc(mem_unregister(fd, h), -EINVAL);
	assert_rc(mem_unregister(fd, 0), -EINVAL);
	assert_rc(mem_unregister(fd, 0xffffffffu), -EINVAL);
	m = (struct fc_ioc_mem){ .handle = h2, .flags = 2 };
	assert_rc(xioctl(fd, FC_IOC_MEM_UNREGISTER, &m), -EINVAL);
	assert_ok(mem_unregister(fd, h2));
}

/* RLIMIT_MEMLOCK holds without CAP_IPC_LOCK. */
static void test_memlock_limit(void **state)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = { 256 << 10, 256 << 10 };
		size_t len = 4 << 20;
		uint8_t *p = malloc(len);
		uint32_t h;

		drop_caps(1ull << CAP_IPC_LOCK);
		if (!p || setrlimit(RLIMIT_MEMLOCK, &rl))
			_exit(10);
		memset(p, 1, len);
		if (mem_register(fd, p, len, &h) != -ENOMEM)
			_exit(1);
		if (mem_register(fd, p, 64 << 10, &h))
			_exit(2);
		if (mem_unregister(fd, h))
			_exit(3);
		/* driver-allocated buffers count too */
		if (info.features & FC_FEAT_MEM_ALLOC) {
			struct fc_ioc_mem m = { .len = len };

			if (ioctl(fd, FC_IOC_MEM_ALLOC, &m) != -1 ||
			    errno != ENOMEM)
				_exit(4);
			m = (struct fc_ioc_mem){ .len = 64 << 10 };
			if (ioctl(fd, FC_IOC_MEM_ALLOC, &m))
				_exit(5);
			if (mem_unregister(fd, m.handle))
				_exit(6);
			/* One charge: an allocation and a registration
			 * together stay within the limit. */
			m = (struct fc_ioc_mem){ .len = 192 << 10 };
			if (ioctl(fd, FC_IOC_MEM_ALLOC, &m))
				_exit(7);
			if (mem_register(fd, p, 128 << 10, &h) != -ENOMEM)
				_exit(8);
			if (mem_register(fd, p, 32 << 10, &h))
				_exit(9);
			if (mem_unregister(fd, h) ||
			    mem_unregister(fd, m.handle))
				_exit(11);
			if (mem_register(fd, p, 128 << 10, &h) ||
			    mem_unregister(fd, h))
				_exit(12);
		}
		_exit(0);
	}
	assert_int_equal(child_status(pid), 0);
}

/*
 * Files take the engine in turn: a file's ticket queued behind at least
 * ten of another file's ends before the last of those (before, one queue
 * in submission order: it ended after all of them).
 */
static void test_engine_shared(void **state)
{
	enum {
		N = 200,
		LEN = 4 << 20
	};
	struct fc_ioc_xfer x = xfer(board(0), board(LEN), LEN);
	struct fc_ioc_xfer small = xfer(board(2 * LEN), board(3 * LEN), 64);
	uint64_t t[N], tb;
	unsigned int i;
	int b = open(path, O_RDWR);

	assert_true(b >= 0);
	if (info.board_mem_size < 4 * LEN)
		skip();
	for (i = 0; i < N; i++)
		assert_ok(submit(&x, 1, &t[i]));
	/* WAIT with no timeout only looks (a running ticket is not taken). */
	if (wait_on(fd, t[N - 10], 0, NULL) != -ETIMEDOUT) {
		for (i = 0; i < N; i++)
			wait_on(fd, t[i], WAIT_MS, NULL);
		close(b);
		print_message(
			"the engine ran 190 chains before a SUBMIT: too fast to tell\n");
		skip();
	}
	assert_ok(submit_on(b, &small, 1, &tb));
	assert_ok(wait_on(b, tb, WAIT_MS, NULL));
	assert_rc(wait_on(fd, t[N - 1], 0, NULL), -ETIMEDOUT);
	for (i = 0; i < N; i++)
		assert_ok(wait_on(fd, t[i], WAIT_MS, NULL));
	close(b);
}

/* ---- several engines (FC_SUBMIT_ENGINE) ---- */

/* The engine index: below the board's engines, and only with the flag. */
static void test_engine_bad(void **state)
{
	uint8_t buf[64];
	struct fc_ioc_xfer x =
		xfer(host(0, (uintptr_t)buf), board(0x4000), sizeof(buf));
	struct fc_ioc_submit s;
	uint32_t n = engines();
	uint64_t t;

	if (!n) {
		print_message(
			"[   SKIP   ] the driver has no FC_FEAT_ENGINES\n");
		skip();
	}
	assert_rc(submit_engine(fd, n, &x, 1, &t), -EINVAL);
	assert_rc(submit_engine(fd, FC_DMA_MAX_ENGINES, &x, 1, &t), -EINVAL);
	assert_rc(submit_engine(fd, UINT32_MAX, &x, 1, &t), -EINVAL);
	assert_rc(submit_engine(fd, 0x80000000u, &x, 1, &t), -EINVAL);
	s = (struct fc_ioc_submit){ .count = 1,
				    .xfers = (uintptr_t)&x,
				    .engine = n - 1 ? n - 1 : 1 };
	assert_rc(xioctl(fd, FC_IOC_SUBMIT, &s), -EINVAL);
	assert_ok(submit_engine(fd, n - 1, &x, 1, &t));
	assert_ok(wait_on(fd, t, WAIT_MS, NULL));
	assert_ok(submit_engine(fd, 0, &x, 1, &t));
	assert_ok(wait_on(fd, t, WAIT_MS, NULL));
}

/*
 * Engines run side by side: with a long queue of large tickets on engine
 * 0, a short ticket of the same file on engine 1 ends while they still
 * run (with the engines serialised it would end after them), and one on
 * engine 0 without the flag after all of them (as before). Engine 0's
 * tickets end in order: looked at from the last, once one has ended every
 * earlier one has. The data moved on both engines arrives.
 */
static void test_engines_side_by_side(void **state)
{
	enum {
		N = 200,
		LEN = 4 << 20
	};
	struct fc_ioc_xfer big = xfer(board(0), board(LEN), LEN);
	uint8_t in[4096], out[4096], back[4096];
	struct fc_ioc_xfer x;
	uint64_t t[N], t1, t0;
	bool ended = false;
	int i, rc;

	if (engines() < 2) {
		print_message(
			"[   SKIP   ] needs FC_FEAT_ENGINES and 2 engines\n");
		skip();
	}
	if (info.board_mem_size < 4 * LEN)
		skip();
	fill_from(in, sizeof(in), 21);
	for (i = 0; i < N; i++)
		assert_ok(submit_engine(fd, 0, &big, 1, &t[i]));
	if (wait_on(fd, t[N - 10], 0, NULL) != -ETIMEDOUT) {
		for (i = 0; i < N; i++)
			wait_on(fd, t[i], WAIT_MS, NULL);
		print_message(
			"engine 0 ran 190 chains before a SUBMIT: too fast to tell\n");
		skip();
	}
	x = xfer(host(0, (uintptr_t)in), board(3 * LEN), sizeof(in));
	assert_ok(submit_engine(fd, 1, &x, 1, &t1));
	x = xfer(host(0, (uintptr_t)in), board(3 * LEN + sizeof(in)),
		 sizeof(in));
	assert_ok(submit_on(fd, &x, 1, &t0)); /* no flag: engine 0 */
	assert_ok(wait_on(fd, t1, WAIT_MS, NULL));
	/* engine 1 did not wait for engine 0's queue */
	assert_rc(wait_on(fd, t[N - 1], 0, NULL), -ETIMEDOUT);
	assert_rc(wait_on(fd, t0, 0, NULL), -ETIMEDOUT);
	for (i = N - 1; i >= 0; i--) {
		rc = wait_on(fd, t[i], 0, NULL);
		if (ended && rc)
			fail_msg("ticket %d of engine 0 ended before %d", i + 1,
				 i);
		ended |= !rc;
	}
	assert_ok(wait_on(fd, t0, WAIT_MS, NULL));
	/* the ticket without the flag queued behind all of engine 0's */
	for (i = 0; i < N; i++)
		assert_ok(wait_on(fd, t[i], 0, NULL));
	x = xfer(board(3 * LEN), host(0, (uintptr_t)out), sizeof(out));
	assert_ok(submit_engine(fd, 1, &x, 1, &t1));
	assert_ok(wait_on(fd, t1, WAIT_MS, NULL));
	x = xfer(board(3 * LEN + sizeof(in)), host(0, (uintptr_t)back),
		 sizeof(back));
	assert_ok(run_chain(&x, 1));
	assert_memory_equal(in, out, sizeof(in));
	assert_memory_equal(in, back, sizeof(in));
}

/*
 * A stalled board (the emulator's knob stops every engine): RESET cancels
 * the file's tickets on both engines, and both work again after.
 */
static void test_engines_reset(void **state)
{
	uint8_t buf[5000];
	struct fc_ioc_xfer x =
		xfer(host(0, (uintptr_t)buf), board(0x600000), sizeof(buf));
	struct fc_ioc_reset r = { 0 };
	uint64_t t[4];
	int i;

	need_emulator();
	if (engines() < 2)
		skip();
	assert_ok(reg_write(FC_EMU_FAULT_DMA_STALL, 1));
	for (i = 0; i < 4; i++)
		assert_ok(submit_engine(fd, i & 1, &x, 1, &t[i]));
	assert_rc(wait_on(fd, t[0], 0, NULL), -ETIMEDOUT);
	assert_rc(wait_on(fd, t[1], 0, NULL), -ETIMEDOUT);
	assert_ok(xioctl(fd, FC_IOC_RESET, &r));
	for (i = 0; i < 4; i++)
		assert_rc(wait_on(fd, t[i], 0, NULL), -ECANCELED);
	assert_ok(reg_write(FC_EMU_FAULT_DMA_STALL, 0));
	for (i = 0; i < 4; i++)
		assert_ok(submit_engine(fd, i & 1, &x, 1, &t[i]));
	for (i = 0; i < 4; i++)
		assert_ok(wait_on(fd, t[i], WAIT_MS, NULL));
}

/* ---- SUBMIT and WAIT argument checks ---- */

static void test_submit_bad(void **state)
{
	static uint8_t buf[8192];
	struct fc_ioc_xfer x[256], one;
	struct fc_ioc_submit s;
	uint32_t h;
	uint64_t t;
	unsigned int i;

	assert_ok(mem_register(fd, buf, sizeof(buf), &h));
	for (i = 0; i < 256; i++)
		x[i] = xfer(host(h, i), board(0x10000 + i), 1);

	assert_rc(submit(x, 0, &t), -E2BIG);
	assert_rc(submit(x, 256, &t), -E2BIG);
	assert_rc(submit(x, UINT32_MAX, &t), -E2BIG);
	s = (struct fc_ioc_submit){ .count = 1, .xfers = 16 };
	assert_rc(xioctl(fd, FC_IOC_SUBMIT, &s), -EFAULT);
	s = (struct fc_ioc_submit){ .count = 2,
				    .xfers =
					    (uintptr_t)buf + sizeof(buf) - 48 };
	(void)s;
	assert_rc(xioctl(fd, FC_IOC_SUBMIT, NULL), -EFAULT);
	s = (struct fc_ioc_submit){ .count = 1,
				    .xfers = (uintptr_t)x,
				    .flags = 1u << 2 };
	assert_rc(xioctl(fd, FC_IOC_SUBMIT, &s), -EINVAL);
	s.flags = 1u << 31;
	assert_rc(xioctl(fd, FC_IOC_SUBMIT, &s), -EINVAL);
	/* an engine without FC_SUBMIT_ENGINE: the field was reserved */
	s = (struct fc_ioc_submit){ .count = 1,
				    .xfers = (uintptr_t)x,
				    .engine = 1 };
	assert_rc(xioctl(fd, FC_IOC_SUBMIT, &s), -EINVAL);
	s = (struct fc_ioc_submit){ .count = 1,
				    .xfers = (uintptr_t)x,
				    .reserved[1] = 1 };
	assert_rc(xioctl(fd, FC_IOC_SUBMIT, &s), -EINVAL);
	s = (struct fc_ioc_submit){ .count = 1,
				    .xfers = (uintptr_t)x,
				    .flags = FC_SUBMIT_EVENTFD,
				    .eventfd = 9999 };
	assert_rc(xioctl(fd, FC_IOC_SUBMIT, &s), -EBADF);
	s.eventfd = fd; /* not an eventfd */
	assert_rc(xioctl(fd, FC_IOC_SUBMIT, &s), -EINVAL);

	/* per transfer: flags, reserved, lengths, spaces, handles, ranges */
	one = x[0];
	one.flags = 1;
	assert_rc(submit(&one, 1, &t), -EINVAL);
	one = x[0];
	one.reserved = 1;
	assert_rc(submit(&one, 1, &t), -EINVAL);
	one = x[0];
	one.len = 0;
	assert_rc(submit(&one, 1, &t), -EINVAL);
	one.len = info.max_xfer_len + 1;
	assert_rc(submit(&one, 1, &t), -EINVAL);
	one.len = UINT64_MAX;
	assert_rc(submit(&one, 1, &t), -EINVAL);
	one = x[0];
	one.src.space = 3;
	assert_rc(submit(&one, 1, &t), -EINVAL);
	one.src.space = 0xffffffffu;
	assert_rc(submit(&one, 1, &t), -EINVAL);
	one = x[0];
	one.dst.handle = h; /* board space with a handle */
	assert_rc(submit(&one, 1, &t), -EINVAL);
	one = x[0];
	one.src.handle = h + 1000;
	assert_rc(submit(&one, 1, &t), -EINVAL);
	one = xfer(host(h, sizeof(buf) - 10), board(0), 11);
	assert_rc(submit(&one, 1, &t), -ERANGE);
	one = xfer(host(h, UINT64_MAX), board(0), 2);
	assert_rc(submit(&one, 1, &t), -ERANGE);
	one = xfer(host(h, 0), board(info.board_mem_size - 10), 11);
	assert_rc(submit(&one, 1, &t), -ERANGE);
	one = xfer(host(h, 0), board(UINT64_MAX - 1), 4);
	assert_rc(submit(&one, 1, &t), -ERANGE);
	one = xfer(host(h, 0), board(0), 4);
	one.dst.space = FC_SPACE_FABRIC;
	one.dst.addr = 1ull << 50; /* reserved fabric bits */
	assert_rc(submit(&one, 1, &t), -ERANGE);
	/* user addresses: unmapped, kernel, wrapping */
	one = xfer(host(0, 4096), board(0), 100);
	assert_rc(submit(&one, 1, &t), -EFAULT);
	one = xfer(board(0), host(0, 0xffff888000000000ull), 100);
	assert_rc(submit(&one, 1, &t), -EFAULT);
	one = xfer(board(0), host(0, UINT64_MAX - 5), 100);
	assert_rc(submit(&one, 1, &t), -ERANGE);
	/* one bad transfer at the end spoils the chain */
	x[254] = xfer(host(h, 0), board(0), 0);
	assert_rc(submit(x, 255, &t), -EINVAL);
	x[254] = xfer(host(h, 254), board(0x10000 + 254), 1);
	assert_ok(run_chain(x, 255));
	assert_ok(mem_unregister(fd, h));
}

/* A chain-rule case's destination: node 63 (and 62) is routed nowhere. */
static struct fc_ioc_loc chain_dst(enum chain_dst d)
{
	struct fc_ioc_loc l = { 0 };
	uint64_t addr;

	chain_case_dst(d, 63, 62, &l.space, &addr);
	l.addr = addr;
	return l;
}

/*
 * The chain rule (fc_hw_chain_check()) at SUBMIT, every case of the table
 * (FC_XFER_MORE, and FC_XFER_CTRL where the driver has FC_FEAT_XFER_CTRL):
 * a ticket that breaks it is refused with -EINVAL, one that keeps it is
 * taken (and ended by the board, which has no route to node 63).
 */
static void test_submit_chain_rule(void **state)
{
	static uint8_t buf[4096];
	const struct chain_case *c;
	struct fc_ioc_xfer x[2];
	unsigned int i, k;
	uint32_t h;
	uint64_t t;
	int rc;

	assert_ok(mem_register(fd, buf, sizeof(buf), &h));
	for (i = 0; i < CHAIN_CASES; i++) {
		c = &chain_cases[i];
		if ((c->flags[0] | c->flags[1]) & FC_DESC_F_CTRL &&
		    !(info.features & FC_FEAT_XFER_CTRL))
			continue;
		for (k = 0; k < 2; k++) {
			x[k] = xfer(host(h, 0), chain_dst(c->dst[k]), 64);
			if (c->flags[k] & FC_DESC_F_MORE)
				x[k].flags |= FC_XFER_MORE;
			if (c->flags[k] & FC_DESC_F_CTRL)
				x[k].flags |= FC_XFER_CTRL;
		}
		rc = submit(x, 2, &t);
		if (c->bad >= 0) {
			if (rc != -EINVAL)
				fail_msg("%s: SUBMIT %d, not -EINVAL", c->what,
					 rc);
			continue;
		}
		if (rc)
			fail_msg("%s: SUBMIT %d", c->what, rc);
		rc = wait_on(fd, t, WAIT_MS, NULL);
		if (rc == -EINVAL || rc == -ETIMEDOUT)
			fail_msg("%s: the ticket ended with %d", c->what, rc);
	}
	assert_ok(mem_unregister(fd, h));
}

static void test_wait_bad(void **state)
{
	struct fc_ioc_wait w;
	uint64_t t;
	uint8_t buf[64];
	struct fc_ioc_xfer x = xfer(host(0, (uintptr_t)buf), board(0), 64);
	struct fc_ioc_reset r = { .reserved = 1 };

	assert_ok(submit(&x, 1, &t));
	assert_ok(wait_on(fd, t, WAIT_MS, NULL));
	assert_rc(wait_on(fd, t + 1, 0, NULL), -ENOENT);
	assert_rc(wait_on(fd, t + 1, -1, NULL), -ENOENT);
	assert_rc(wait_on(fd, 0, -1, NULL), -ENOENT);
	assert_rc(wait_on(fd, UINT64_MAX, 100, NULL), -ENOENT);
	w = (struct fc_ioc_wait){ .ticket = t, .flags = 1 };
	assert_rc(xioctl(fd, FC_IOC_WAIT, &w), -EINVAL);
	w = (struct fc_ioc_wait){ .ticket = t, .reserved0 = 1 };
	assert_rc(xioctl(fd, FC_IOC_WAIT, &w), -EINVAL);
	w = (struct fc_ioc_wait){ .ticket = t, .reserved[0] = 1 };
	assert_rc(xioctl(fd, FC_IOC_WAIT, &w), -EINVAL);
	assert_rc(xioctl(fd, FC_IOC_WAIT, NULL), -EFAULT);
	assert_rc(xioctl(fd, FC_IOC_RESET, &r), -EINVAL);
	r = (struct fc_ioc_reset){ .flags = 1 };
	assert_rc(xioctl(fd, FC_IOC_RESET, &r), -EINVAL);
	/* a ticket is known to its file only */
	{
		int f2 = open(path, O_RDWR);

		assert_true(f2 >= 0);
		assert_rc(wait_on(f2, t, 0, NULL), -ENOENT);
		close(f2);
	}
	/* the old result stays */
	assert_ok(wait_on(fd, t, 0, NULL));
}

/* ---- transfers ---- */

static void test_user_address_roundtrip(void **state)
{
	size_t len = 300000;
	uint8_t *a = malloc(len + 7), *b = malloc(len + 7);
	struct fc_ioc_xfer x[2];

	assert_non_null(a);
	assert_non_null(b);
	fill_from(a, len + 7, 1);
	memset(b, 0, len + 7);
	x[0] = xfer(host(0, (uintptr_t)a + 3), board(0x123457), len);
	x[1] = xfer(board(0x123457), host(0, (uintptr_t)b + 5), len);
	assert_ok(run_chain(x, 2));
	assert_memory_equal(a + 3, b + 5, len);
	assert_int_equal(b[4], 0);
	assert_int_equal(b[len + 5], 0);
	/* host to host, and from read-only memory */
	memset(b, 0, len);
	x[0] = xfer(host(0, (uintptr_t)a), host(0, (uintptr_t)b), len);
	assert_ok(run_chain(x, 1));
	assert_memory_equal(a, b, len);
	{
		static const char ro[] =
			"read-only source, pinned without FOLL_WRITE";

		x[0] = xfer(host(0, (uintptr_t)ro), host(0, (uintptr_t)b),
			    sizeof(ro));
		assert_ok(run_chain(x, 1));
		assert_memory_equal(ro, b, sizeof(ro));
	}
	free(a);
	free(b);
}

/*
 * Pages touched in reverse order are rarely adjacent in physical memory:
 * one transfer then needs far more than 255 descriptors, which the driver
 * runs as several hardware chains under one ticket.
 */
static void test_many_descriptors(void **state)
{
	size_t len = 4 << 20, i;
	uint8_t *a, *b;
	uint32_t d0, d1, ha;
	struct fc_ioc_xfer x[2];

	a = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	b = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	assert_true(a != MAP_FAILED && b != MAP_FAILED);
	madvise(a, len, MADV_NOHUGEPAGE);
	madvise(b, len, MADV_NOHUGEPAGE);
	for (i = len; i > 0; i -= page) {
		a[i - page] = 1;
		b[i - page] = 1;
	}
	fill_from(a, len, 7);
	memset(b, 0, len);
	assert_ok(mem_register(fd, a, len, &ha));
	assert_ok(reg_read(FC_DMA_REG(0, FC_DMA_DOORBELLS), &d0));
	x[0] = xfer(host(ha, 1), board(0x200000), len - 1);
	x[1] = xfer(board(0x200000), host(0, (uintptr_t)b + 1), len - 1);
	assert_ok(run_chain(x, 2));
	assert_ok(reg_read(FC_DMA_REG(0, FC_DMA_DOORBELLS), &d1));
	print_message("4 MiB there and back: %u hardware chains\n", d1 - d0);
	assert_memory_equal(a + 1, b + 1, len - 1);
	assert_int_equal(b[0], 0);
	assert_ok(mem_unregister(fd, ha));
	munmap(a, len);
	munmap(b, len);
}

/*
 * @n pages at consecutive addresses, each page physically apart from the
 * one before it (their PFNs read from /proc/self/pagemap, which gives them
 * to root only): without an IOMMU each page is then a DMA segment of its
 * own, and a transfer over all of them needs exactly @n descriptors. NULL
 * when the PFNs cannot be read.
 */
static uint8_t *scattered_pages(size_t n)
{
	size_t npool = 2 * n + 64, i, k = 0;
	uint64_t *pfn = calloc(npool, sizeof(*pfn)), prev = 0;
	uint8_t *pool, *win;
	int pm;

	assert_non_null(pfn);
	pool = mmap(NULL, npool * page, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	win = mmap(NULL, n * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(pool != MAP_FAILED && win != MAP_FAILED);
	madvise(pool, npool * page, MADV_NOHUGEPAGE);
	for (i = 0; i < npool; i++)
		pool[i * page] = 1;
	pm = open("/proc/self/pagemap", O_RDONLY);
	assert_true(pm >= 0);
	assert_int_equal(pread(pm, pfn, npool * sizeof(*pfn),
			       (uintptr_t)pool / page * sizeof(*pfn)),
			 (ssize_t)(npool * sizeof(*pfn)));
	close(pm);
	for (i = 0; i < npool && k < n; i++) {
		uint64_t f = pfn[i] & ((1ull << 55) - 1);

		if (!(pfn[i] >> 63) || !f)
			break; /* not present, or PFNs hidden */
		if (k && f == prev + 1)
			continue;
		assert_true(mremap(pool + i * page, page, page,
				   MREMAP_MAYMOVE | MREMAP_FIXED,
				   win + k * page) == win + k * page);
		prev = f;
		k++;
	}
	munmap(pool, npool * page);
	free(pfn);
	if (k < n) {
		munmap(win, n * page);
		return NULL;
	}
	return win;
}

/*
 * The descriptors a file's unfinished tickets hold are bounded
 * (info.max_desc, in tables of max_chain): a ticket that needs more on its
 * own gets -E2BIG; exactly the budget is accepted.
 */
static void test_desc_limit_ticket(void **state)
{
	size_t n = info.max_desc / info.max_chain + 1;
	struct fc_ioc_xfer *x = calloc(info.max_chain, sizeof(*x));
	struct fc_ioc_reset r = { 0 };
	uint8_t *buf;
	uint64_t t;
	uint32_t h;
	unsigned int i;

	need_emulator();
	buf = scattered_pages(n);
	if (!buf) {
		print_message("[   SKIP   ] PFNs unreadable (not root?)\n");
		skip();
	}
	assert_ok(mem_register(fd, buf, n * page, &h));
	/* max_chain transfers of n descriptors: max_desc + max_chain */
	for (i = 0; i < info.max_chain; i++)
		x[i] = xfer(host(h, 0), board(0), n * page);
	assert_rc(submit(x, info.max_chain, &t), -E2BIG);
	/* one page less each: max_desc exactly, accepted (and cancelled) */
	for (i = 0; i < info.max_chain; i++)
		x[i].len = (n - 1) * page;
	assert_ok(reg_write(FC_EMU_FAULT_DMA_STALL, 1));
	assert_ok(submit(x, info.max_chain, &t));
	assert_ok(xioctl(fd, FC_IOC_RESET, &r));
	assert_ok(reg_write(FC_EMU_FAULT_DMA_STALL, 0));
	assert_rc(wait_on(fd, t, WAIT_MS, NULL), -ECANCELED);
	assert_ok(mem_unregister(fd, h));
	munmap(buf, n * page);
	free(x);
}

/*
 * Tickets that fit on their own but not beside the file's unfinished ones
 * get -EAGAIN until those end; other files have budgets of their own.
 */
static void test_desc_limit_file(void **state)
{
	size_t n = info.max_desc / info.max_chain + 1;
	/* just over half the budget per ticket: two never fit together */
	unsigned int nx = info.max_chain / 2 + 1, i;
	struct fc_ioc_xfer *x = calloc(nx, sizeof(*x)), small;
	struct fc_ioc_reset r = { 0 };
	uint64_t t1, t2, t3, t4;
	uint32_t h, h2;
	uint8_t *buf;
	int f2;

	need_emulator();
	buf = scattered_pages(n);
	if (!buf) {
		print_message("[   SKIP   ] PFNs unreadable (not root?)\n");
		skip();
	}
	f2 = open(path, O_RDWR);
	assert_true(f2 >= 0);
	assert_ok(mem_register(fd, buf, n * page, &h));
	assert_ok(mem_register(f2, buf, n * page, &h2));
	for (i = 0; i < nx; i++)
		x[i] = xfer(host(h, 0), board(0), n * page);
	small = xfer(board(0x1000), board(0x2000), 64);

	assert_ok(reg_write(FC_EMU_FAULT_DMA_STALL, 1));
	assert_ok(submit(x, nx, &t1));
	assert_rc(submit(x, nx, &t2), -EAGAIN);
	assert_rc(submit(x, nx, &t2), -EAGAIN);
	/* a small one still fits beside it */
	assert_ok(submit(&small, 1, &t2));
	/* another file's budget is its own */
	for (i = 0; i < nx; i++)
		x[i].src.handle = h2;
	assert_ok(submit_on(f2, x, nx, &t3));
	for (i = 0; i < nx; i++)
		x[i].src.handle = h;
	/* ended tickets give their tables back, collected or not */
	assert_ok(xioctl(fd, FC_IOC_RESET, &r));
	assert_rc(wait_on(fd, t1, 0, NULL), -ECANCELED);
	assert_ok(submit(x, nx, &t4));
	assert_ok(xioctl(fd, FC_IOC_RESET, &r));
	assert_ok(xioctl(f2, FC_IOC_RESET, &r));
	assert_ok(reg_write(FC_EMU_FAULT_DMA_STALL, 0));
	assert_rc(wait_on(fd, t2, 0, NULL), -ECANCELED);
	assert_rc(wait_on(fd, t4, 0, NULL), -ECANCELED);
	assert_rc(wait_on(f2, t3, 0, NULL), -ECANCELED);
	assert_ok(run_chain(&small, 1));
	close(f2);
	assert_ok(mem_unregister(fd, h));
	munmap(buf, n * page);
	free(x);
}

static void test_eventfd_poll(void **state)
{
	int efd = eventfd(0, EFD_CLOEXEC);
	uint8_t buf[4096];
	struct fc_ioc_xfer x =
		xfer(host(0, (uintptr_t)buf), board(0x3000), 4096);
	struct fc_ioc_submit s = { .count = 1,
				   .xfers = (uintptr_t)&x,
				   .flags = FC_SUBMIT_EVENTFD };
	struct pollfd p[2];
	uint64_t v;

	assert_true(efd >= 0);
	fill_from(buf, sizeof(buf), 3);
	/* no chain ended since the last WAIT: not readable */
	p[0] = (struct pollfd){ .fd = fd, .events = POLLIN };
	assert_int_equal(poll(p, 1, 0), 0);
	s.eventfd = efd;
	assert_ok(xioctl(fd, FC_IOC_SUBMIT, &s));
	p[0] = (struct pollfd){ .fd = efd, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = fd, .events = POLLIN };
	assert_int_equal(poll(p, 1, WAIT_MS), 1);
	assert_int_equal(read(efd, &v, sizeof(v)), sizeof(v));
	assert_int_equal(v, 1);
	assert_int_equal(poll(&p[1], 1, WAIT_MS), 1);
	assert_true(p[1].revents & POLLIN);
	assert_ok(wait_on(fd, s.ticket, 0, NULL));
	p[1].revents = 0;
	assert_int_equal(poll(&p[1], 1, 0), 0);
	close(efd);
}

static void test_mem_alloc_mmap(void **state)
{
	struct fc_ioc_mem m = { .len = 10000 };
	struct fc_ioc_xfer x[2];
	uint8_t *p, *q;
	void *bad;

	if (!(info.features & FC_FEAT_MEM_ALLOC))
		skip();
	assert_rc(xioctl(fd, FC_IOC_MEM_ALLOC, &(struct fc_ioc_mem){ 0 }),
		  -EINVAL);
	assert_rc(xioctl(fd, FC_IOC_MEM_ALLOC,
			 &(struct fc_ioc_mem){ .len = 1, .flags = 1 }),
		  -EINVAL);
	assert_ok(xioctl(fd, FC_IOC_MEM_ALLOC, &m));
	assert_true(m.handle != 0 && m.mmap_offset != 0);
	p = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 m.mmap_offset);
	assert_true(p != MAP_FAILED);
	bad = mmap(NULL, 4 * page, PROT_READ, MAP_SHARED, fd, m.mmap_offset);
	assert_true(bad == MAP_FAILED);
	bad = mmap(NULL, page, PROT_READ, MAP_SHARED, fd,
		   m.mmap_offset + (1ull << 32));
	assert_true(bad == MAP_FAILED);
	fill_from(p, 10000, 9);
	q = calloc(1, 10000);
	x[0] = xfer(host(m.handle, 0), board(0x5000), 10000);
	x[1] = xfer(board(0x5000), host(0, (uintptr_t)q), 10000);
	assert_ok(run_chain(x, 2));
	assert_memory_equal(p, q, 10000);
	/* unregistered while mapped: the mapping keeps the memory */
	assert_ok(mem_unregister(fd, m.handle));
	p[0] ^= 1;
	munmap(p, 3 * page);
	free(q);
}

/* MEM_INFO: fields, handles of either kind, of other files, gone. */
static void test_mem_info_bad(void **state)
{
	static uint8_t buf[5000];
	struct fc_ioc_mem_info mi;
	uint32_t ha, hr, h2[3];
	int f2, k;
	pid_t pid;

	if (!(info.features & FC_FEAT_MEM_INFO) ||
	    !(info.features & FC_FEAT_MEM_ALLOC))
		skip();
	assert_ok(mem_alloc(fd, 10000, &ha));
	assert_ok(mem_register(fd, buf + 1, sizeof(buf) - 1, &hr));

	/* an allocated buffer: contiguous, its bus address (to root) */
	assert_ok(mem_info(fd, ha, &mi));
	assert_int_equal(mi.len, 10000);
	assert_int_equal(mi.out_flags, FC_MEM_INFO_CONTIG);
	assert_true(mi.bus_addr != 0);
	assert_true(mi.reserved0 == 0 && mi.reserved[0] == 0 &&
		    mi.reserved[1] == 0);
	/* a registered one: its length, nothing else */
	assert_ok(mem_info(fd, hr, &mi));
	assert_int_equal(mi.len, sizeof(buf) - 1);
	assert_int_equal(mi.out_flags, 0);
	assert_int_equal(mi.bus_addr, 0);

	/* every field but the handle must be zero on the way in */
	mi = (struct fc_ioc_mem_info){ .handle = ha, .flags = 1 };
	assert_rc(xioctl(fd, FC_IOC_MEM_INFO, &mi), -EINVAL);
	mi = (struct fc_ioc_mem_info){ .handle = ha, .len = 1 };
	assert_rc(xioctl(fd, FC_IOC_MEM_INFO, &mi), -EINVAL);
	mi = (struct fc_ioc_mem_info){ .handle = ha, .bus_addr = 1 };
	assert_rc(xioctl(fd, FC_IOC_MEM_INFO, &mi), -EINVAL);
	mi = (struct fc_ioc_mem_info){ .handle = ha,
				       .out_flags = FC_MEM_INFO_CONTIG };
	assert_rc(xioctl(fd, FC_IOC_MEM_INFO, &mi), -EINVAL);
	mi = (struct fc_ioc_mem_info){ .handle = ha, .reserved0 = 1 };
	assert_rc(xioctl(fd, FC_IOC_MEM_INFO, &mi), -EINVAL);
	mi = (struct fc_ioc_mem_info){ .handle = ha, .reserved[0] = 1 };
	assert_rc(xioctl(fd, FC_IOC_MEM_INFO, &mi), -EINVAL);
	mi = (struct fc_ioc_mem_info){ .handle = ha, .reserved[1] = 1 };
	assert_rc(xioctl(fd, FC_IOC_MEM_INFO, &mi), -EINVAL);
	assert_rc(xioctl(fd, FC_IOC_MEM_INFO, NULL), -EFAULT);
	assert_rc(xioctl(fd, FC_IOC_MEM_INFO, (void *)16), -EFAULT);

	/* unknown handles */
	assert_rc(mem_info(fd, 0, NULL), -EINVAL);
	assert_rc(mem_info(fd, 0xffffffffu, NULL), -EINVAL);
	assert_rc(mem_info(fd, 1u << 20, NULL), -EINVAL);
	assert_rc(mem_info(fd, ha + hr + 100, NULL), -EINVAL);
	/* another file's handle, a number this file has not given out */
	f2 = open(path, O_RDWR);
	assert_true(f2 >= 0);
	for (k = 0; k < 3; k++)
		assert_ok(mem_alloc(f2, 4096, &h2[k]));
	for (k = 0; k < 3 && (h2[k] == ha || h2[k] == hr); k++)
		;
	assert_true(k < 3);
	assert_ok(mem_info(f2, h2[k], NULL));
	assert_rc(mem_info(fd, h2[k], NULL), -EINVAL);
	close(f2);

	/* without CAP_SYS_RAWIO: no bus address */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		drop_caps(1ull << CAP_SYS_RAWIO);
		if (mem_info(fd, ha, &mi) || mi.len != 10000)
			_exit(1);
		_exit(mi.out_flags || mi.bus_addr ? 2 : 0);
	}
	assert_int_equal(child_status(pid), 0);

	/* gone after unregistering */
	assert_ok(mem_unregister(fd, ha));
	assert_ok(mem_unregister(fd, hr));
	assert_rc(mem_info(fd, ha, NULL), -EINVAL);
	assert_rc(mem_info(fd, hr, NULL), -EINVAL);
}

/* A free channel for the ring tests, far from those the library uses. */
#define TEST_CHAN 211

/*
 * CHAN_RING and CHAN_HEAD: fields, channels, slots, offsets and ranges in
 * the buffer, handles of the wrong kind or file, ownership between files,
 * HEAD moving backwards or beyond TAIL, and a result that cannot be told.
 */
static void test_chan_ring_bad(void **state)
{
	static uint8_t rbuf[8192];
	static const uint32_t bad_slots[] = { 0,	  3,	    6,
					      100,	  1u << 21, 1u << 31,
					      0xffffffffu };
	static const uint32_t bad_chans[] = { FC_MAX_CHANNELS, 1000,
					      0x80000000u, 0xffffffffu };
	const uint64_t len = 64 << 10; /* 1024 slots */
	struct fc_ioc_chan_ring r;
	struct fc_ioc_chan_head hd;
	uint32_t h, hodd, hr, h2[4], head, head2, tail;
	uint8_t *ro;
	unsigned int i;
	int f2, k;

	if (!(info.features & FC_FEAT_CHAN_RING) ||
	    !(info.features & FC_FEAT_MEM_ALLOC))
		skip();
	assert_ok(mem_alloc(fd, len, &h));
	if (!(info.hw_caps & FC_CAP_CHANNELS)) {
		assert_rc(chan_ring(fd, TEST_CHAN, h, 16, 0, NULL),
			  -EOPNOTSUPP);
		assert_rc(chan_head(fd, TEST_CHAN, 0), -EOPNOTSUPP);
		assert_ok(mem_unregister(fd, h));
		print_message("[   SKIP   ] no channel endpoints\n");
		skip();
	}
	assert_ok(mem_alloc(fd, 10000, &hodd));
	assert_ok(mem_register(fd, rbuf, sizeof(rbuf), &hr));
	f2 = open(path, O_RDWR);
	assert_true(f2 >= 0);
	for (k = 0; k < 4; k++)
		assert_ok(mem_alloc(f2, len, &h2[k]));

	/* fields */
	r = (struct fc_ioc_chan_ring){ .chan = TEST_CHAN,
				       .handle = h,
				       .slots = 16,
				       .flags = 2 };
	assert_rc(xioctl(fd, FC_IOC_CHAN_RING, &r), -EINVAL);
	r.flags = 0x80000000u;
	assert_rc(xioctl(fd, FC_IOC_CHAN_RING, &r), -EINVAL);
	r.flags = 0;
	r.head = 1;
	assert_rc(xioctl(fd, FC_IOC_CHAN_RING, &r), -EINVAL);
	r.head = 0;
	r.reserved0 = 1;
	assert_rc(xioctl(fd, FC_IOC_CHAN_RING, &r), -EINVAL);
	r.reserved0 = 0;
	r.reserved[0] = 1;
	assert_rc(xioctl(fd, FC_IOC_CHAN_RING, &r), -EINVAL);
	r.reserved[0] = 0;
	r.reserved[1] = 1;
	assert_rc(xioctl(fd, FC_IOC_CHAN_RING, &r), -EINVAL);
	assert_rc(xioctl(fd, FC_IOC_CHAN_RING, NULL), -EFAULT);
	/* channels, slots, slot alignment */
	for (i = 0; i < sizeof(bad_chans) / sizeof(bad_chans[0]); i++) {
		assert_rc(chan_ring(fd, bad_chans[i], h, 16, 0, NULL), -EINVAL);
		assert_rc(chan_off(fd, bad_chans[i]), -EINVAL);
		assert_rc(chan_head(fd, bad_chans[i], 0), -EINVAL);
	}
	for (i = 0; i < sizeof(bad_slots) / sizeof(bad_slots[0]); i++)
		assert_rc(chan_ring(fd, TEST_CHAN, h, bad_slots[i], 0, NULL),
			  -EINVAL);
	assert_rc(chan_ring(fd, TEST_CHAN, h, 16, 1, NULL), -EINVAL);
	assert_rc(chan_ring(fd, TEST_CHAN, h, 16, FC_CHAN_SLOT_SIZE / 2, NULL),
		  -EINVAL);
	assert_rc(chan_ring(fd, TEST_CHAN, h, 16, UINT64_MAX, NULL), -EINVAL);
	/* the ring must lie within the buffer's length */
	assert_rc(chan_ring(fd, TEST_CHAN, h, 2048, 0, NULL), -ERANGE);
	assert_rc(chan_ring(fd, TEST_CHAN, h, 1u << 20, 0, NULL), -ERANGE);
	assert_rc(chan_ring(fd, TEST_CHAN, h, 1, len, NULL), -ERANGE);
	assert_rc(chan_ring(fd, TEST_CHAN, h, 2, len - FC_CHAN_SLOT_SIZE, NULL),
		  -ERANGE);
	assert_rc(chan_ring(fd, TEST_CHAN, h, 1,
			    UINT64_MAX & ~(uint64_t)(FC_CHAN_SLOT_SIZE - 1),
			    NULL),
		  -ERANGE);
	assert_rc(chan_ring(fd, TEST_CHAN, h, 1, 1ull << 63, NULL), -ERANGE);
	/* the length asked for, not the pages behind it (10000 bytes) */
	assert_rc(chan_ring(fd, TEST_CHAN, hodd, 128, 1856, NULL), -ERANGE);
	/* handles: none, unknown, registered memory, another file's */
	assert_rc(chan_ring(fd, TEST_CHAN, 0, 16, 0, NULL), -EINVAL);
	assert_rc(chan_ring(fd, TEST_CHAN, 0xffffffffu, 16, 0, NULL), -EINVAL);
	assert_rc(chan_ring(fd, TEST_CHAN, hr, 16, 0, NULL), -EINVAL);
	for (k = 0; k < 4 && (h2[k] == h || h2[k] == hodd || h2[k] == hr); k++)
		;
	assert_true(k < 4);
	assert_rc(chan_ring(fd, TEST_CHAN, h2[k], 16, 0, NULL), -EINVAL);
	/* switching off takes no ring */
	r = (struct fc_ioc_chan_ring){ .chan = TEST_CHAN,
				       .flags = FC_CHAN_RING_OFF,
				       .handle = h };
	assert_rc(xioctl(fd, FC_IOC_CHAN_RING, &r), -EINVAL);
	r = (struct fc_ioc_chan_ring){ .chan = TEST_CHAN,
				       .flags = FC_CHAN_RING_OFF,
				       .slots = 16 };
	assert_rc(xioctl(fd, FC_IOC_CHAN_RING, &r), -EINVAL);
	r = (struct fc_ioc_chan_ring){ .chan = TEST_CHAN,
				       .flags = FC_CHAN_RING_OFF,
				       .offset = 64 };
	assert_rc(xioctl(fd, FC_IOC_CHAN_RING, &r), -EINVAL);
	/* HEAD of an endpoint nobody owns */
	assert_rc(chan_head(fd, TEST_CHAN, 0), -EPERM);

	/* the last fitting ring of the odd-sized buffer; then the full one */
	assert_ok(chan_ring(fd, TEST_CHAN, hodd, 128, 1792, &head));
	assert_ok(chan_ring(fd, TEST_CHAN, h, 1024, 0, &head));
	assert_ok(reg_read(FC_CHAN_REG(TEST_CHAN, FC_CHAN_TAIL), &tail));
	assert_int_equal(head, tail);
	/* owned: other files get -EBUSY, and may not move HEAD */
	assert_rc(chan_ring(f2, TEST_CHAN, h2[0], 16, 0, NULL), -EBUSY);
	assert_rc(chan_off(f2, TEST_CHAN), -EBUSY);
	assert_rc(chan_head(f2, TEST_CHAN, head), -EPERM);
	/* another endpoint is free for them */
	assert_ok(chan_ring(f2, TEST_CHAN + 1, h2[0], 16, 0, NULL));
	assert_rc(chan_head(fd, TEST_CHAN + 1, 0), -EPERM);
	assert_rc(chan_ring(fd, TEST_CHAN + 1, h, 16, 0, NULL), -EBUSY);

	/* CHAN_HEAD: fields; forward only, and never beyond TAIL */
	hd = (struct fc_ioc_chan_head){ .chan = TEST_CHAN,
					.head = head,
					.flags = 1 };
	assert_rc(xioctl(fd, FC_IOC_CHAN_HEAD, &hd), -EINVAL);
	hd = (struct fc_ioc_chan_head){ .chan = TEST_CHAN,
					.head = head,
					.reserved = 1 };
	assert_rc(xioctl(fd, FC_IOC_CHAN_HEAD, &hd), -EINVAL);
	assert_rc(xioctl(fd, FC_IOC_CHAN_HEAD, NULL), -EFAULT);
	assert_rc(chan_head(fd, TEST_CHAN, head + 1), -ERANGE);
	assert_rc(chan_head(fd, TEST_CHAN, head + 1024), -ERANGE);
	assert_rc(chan_head(fd, TEST_CHAN, head + 0x80000000u), -ERANGE);
	assert_rc(chan_head(fd, TEST_CHAN, head - 1), -ERANGE);
	assert_ok(chan_head(fd, TEST_CHAN, head));
	assert_ok(reg_read(FC_CHAN_REG(TEST_CHAN, FC_CHAN_HEAD), &head2));
	assert_int_equal(head2, head);

	/* the owner programs it again; unregistering keeps the ring's memory */
	assert_ok(chan_ring(fd, TEST_CHAN, h, 16, 64 * FC_CHAN_SLOT_SIZE,
			    &head2));
	assert_ok(mem_unregister(fd, h));
	assert_ok(chan_head(fd, TEST_CHAN, head2));
	assert_ok(chan_off(fd, TEST_CHAN));
	assert_ok(chan_off(fd, TEST_CHAN)); /* off twice */
	assert_rc(chan_head(fd, TEST_CHAN, head2), -EPERM);
	/* free now: the other file takes it; closing gives both back */
	assert_ok(chan_ring(f2, TEST_CHAN, h2[1], 16, 0, NULL));
	assert_rc(chan_ring(fd, TEST_CHAN, hodd, 16, 0, NULL), -EBUSY);
	close(f2);
	assert_ok(chan_ring(fd, TEST_CHAN, hodd, 16, 0, NULL));
	assert_ok(chan_ring(fd, TEST_CHAN + 1, hodd, 16, 1024, NULL));
	assert_ok(chan_off(fd, TEST_CHAN + 1));

	/*
	 * A head that cannot be returned (read-only argument): -EFAULT, and
	 * the endpoint is left off, free for another file.
	 */
	ro = mmap(NULL, page, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(ro != MAP_FAILED);
	r = (struct fc_ioc_chan_ring){ .chan = TEST_CHAN,
				       .handle = hodd,
				       .slots = 16 };
	memcpy(ro, &r, sizeof(r));
	assert_int_equal(mprotect(ro, page, PROT_READ), 0);
	assert_rc(xioctl(fd, FC_IOC_CHAN_RING, ro), -EFAULT);
	munmap(ro, page);
	assert_rc(chan_head(fd, TEST_CHAN, head2), -EPERM);
	f2 = open(path, O_RDWR);
	assert_true(f2 >= 0);
	assert_ok(mem_alloc(f2, len, &h2[0]));
	assert_ok(chan_ring(f2, TEST_CHAN, h2[0], 16, 0, NULL));
	close(f2);

	assert_ok(mem_unregister(fd, hodd));
	assert_ok(mem_unregister(fd, hr));
}

static int eq_set(int f, uint32_t h, uint32_t slots, uint64_t off)
{
	struct fc_ioc_eq q = { .handle = h, .slots = slots, .offset = off };

	return xioctl(f, FC_IOC_EQ, &q);
}

static int eq_off(int f)
{
	struct fc_ioc_eq q = { .flags = FC_EQ_OFF };

	return xioctl(f, FC_IOC_EQ, &q);
}

static int eq_head(int f, uint32_t head)
{
	struct fc_ioc_eq_head a = { .head = head };

	return xioctl(f, FC_IOC_EQ_HEAD, &a);
}

static int eq_wait(int f, uint32_t entry, uint32_t timeout_us, uint32_t flags)
{
	struct fc_ioc_eq_wait a = { .flags = flags,
				    .entry = entry,
				    .timeout_us = timeout_us };

	return xioctl(f, FC_IOC_EQ_WAIT, &a);
}

static int chan_eq(int f, uint32_t chan)
{
	struct fc_ioc_chan_ring r = { .chan = chan, .flags = FC_CHAN_RING_EQ };

	return xioctl(f, FC_IOC_CHAN_RING, &r);
}

/* Wait (boundedly) until register @off reads @want. */
static int reg_wait(uint32_t off, uint32_t want)
{
	uint32_t v = ~want;
	int i;

	for (i = 0; i < 2000; i++) {
		if (reg_read(off, &v))
			return -EIO;
		if (v == want)
			return 0;
		usleep(1000);
	}
	print_message("register 0x%x reads 0x%x, expected 0x%x\n", off, v,
		      want);
	return -ETIMEDOUT;
}

/*
 * A message to this board's own channel @chan through the fabric: @len
 * bytes of @buf, with FC_XFER_* @flags. RETURN VALUE: the chain's status
 * (*hw_error its FC_DMA_ERR_*), or -errno.
 */
static int send_self_flags(uint32_t chan, const void *buf, uint64_t len,
			   uint32_t flags, uint32_t *hw_error)
{
	struct fc_ioc_loc dst = { .space = FC_SPACE_FABRIC,
				  .addr = FC_FABRIC_CHAN(info.node_id, chan) };
	struct fc_ioc_xfer x = xfer(host(0, (uintptr_t)buf), dst, len);
	struct fc_ioc_wait w = { .timeout_ms = WAIT_MS };
	uint64_t t;
	int rc;

	x.flags = flags;
	rc = submit(&x, 1, &t);

	*hw_error = 0;
	if (rc)
		return rc;
	w.ticket = t;
	rc = xioctl(fd, FC_IOC_WAIT, &w);
	*hw_error = w.hw_error;
	return rc ? rc : w.status;
}

static int send_self(uint32_t chan, const void *buf, uint64_t len,
		     uint32_t *hw_error)
{
	return send_self_flags(chan, buf, len, 0, hw_error);
}

/* A message to our own channel TEST_CHAN, 50 ms from now. */
static void *send_self_later(void *arg)
{
	static const uint8_t late[8] = { 7 };
	uint32_t hw;

	usleep(50000);
	*(int *)arg = send_self(TEST_CHAN, late, sizeof(late), &hw);
	return NULL;
}

/*
 * EQ, EQ_HEAD and FC_CHAN_RING_EQ: fields, slots, offsets and ranges in
 * the buffer, handles of the wrong kind or file, one holder at a time,
 * endpoints joining only the holder's queue; then a message to our own
 * channel lands in the queue (entries by phase in the mapping, EQ_TAIL
 * moves, the channel's ring TAIL does not), HEAD moves forward only and
 * not past TAIL, and switching off (or closing) frees queue and endpoint.
 */
static void test_eq_bad(void **state)
{
	static const uint32_t bad_slots[] = {
		0,	  1,	      32, 63, 96, 100, FC_EQ_MAX_SLOTS * 2,
		1u << 31, 0xffffffffu
	};
	const uint64_t len = 64 << 10; /* 1024 entries */
	struct fc_ioc_mem m = { .len = len };
	static uint8_t rbuf[8192], msg[100];
	const struct fc_hw_pkt *e;
	struct fc_ioc_eq q;
	struct fc_ioc_eq_head hd;
	uint32_t h, hr, h2, v, ctail, hdr;
	uint8_t *map;
	unsigned int i;
	int f2, rc;

	if (!(info.features & FC_FEAT_EQ))
		skip();
	assert_ok(xioctl(fd, FC_IOC_MEM_ALLOC, &m));
	h = m.handle;
	if (!(info.hw_caps & FC_CAP_EVENT_QUEUE)) {
		assert_rc(eq_set(fd, h, 64, 0), -EOPNOTSUPP);
		assert_rc(eq_head(fd, 0), -EOPNOTSUPP);
		if (info.hw_caps & FC_CAP_CHANNELS)
			assert_rc(chan_eq(fd, TEST_CHAN), -EOPNOTSUPP);
		assert_ok(mem_unregister(fd, h));
		print_message("[   SKIP   ] no event queue\n");
		skip();
	}
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		   m.mmap_offset);
	assert_true(map != MAP_FAILED);
	memset(map, 0xa5, len); /* EQ must zero what it uses */
	assert_ok(mem_register(fd, rbuf, sizeof(rbuf), &hr));
	f2 = open(path, O_RDWR);
	assert_true(f2 >= 0);
	assert_ok(mem_alloc(f2, len, &h2));

	/* fields */
	q = (struct fc_ioc_eq){ .handle = h, .slots = 64, .flags = 2 };
	assert_rc(xioctl(fd, FC_IOC_EQ, &q), -EINVAL);
	q.flags = 0x80000000u;
	assert_rc(xioctl(fd, FC_IOC_EQ, &q), -EINVAL);
	q.flags = 0;
	q.reserved0 = 1;
	assert_rc(xioctl(fd, FC_IOC_EQ, &q), -EINVAL);
	q.reserved0 = 0;
	q.reserved[0] = 1;
	assert_rc(xioctl(fd, FC_IOC_EQ, &q), -EINVAL);
	q.reserved[0] = 0;
	q.reserved[1] = 1;
	assert_rc(xioctl(fd, FC_IOC_EQ, &q), -EINVAL);
	assert_rc(xioctl(fd, FC_IOC_EQ, NULL), -EFAULT);
	/* slots: out of range, not a power of 2; entry alignment */
	for (i = 0; i < sizeof(bad_slots) / sizeof(bad_slots[0]); i++)
		assert_rc(eq_set(fd, h, bad_slots[i], 0), -EINVAL);
	assert_rc(eq_set(fd, h, 64, 1), -EINVAL);
	assert_rc(eq_set(fd, h, 64, FC_EQ_ENTRY_SIZE / 2), -EINVAL);
	/* the queue must lie within the buffer's length */
	assert_rc(eq_set(fd, h, 2048, 0), -ERANGE);
	assert_rc(eq_set(fd, h, 64, len - 63 * FC_EQ_ENTRY_SIZE), -ERANGE);
	assert_rc(eq_set(fd, h, 64, len), -ERANGE);
	assert_rc(eq_set(fd, h, 64, UINT64_MAX & ~(uint64_t)63), -ERANGE);
	/* handles: none, unknown, registered memory, another file's */
	assert_rc(eq_set(fd, 0, 64, 0), -EINVAL);
	assert_rc(eq_set(fd, 0xffffffffu, 64, 0), -EINVAL);
	assert_rc(eq_set(fd, hr, 64, 0), -EINVAL);
	if (h2 != h && h2 != hr)
		assert_rc(eq_set(fd, h2, 64, 0), -EINVAL);
	/* switching off takes nothing */
	q = (struct fc_ioc_eq){ .flags = FC_EQ_OFF, .handle = h };
	assert_rc(xioctl(fd, FC_IOC_EQ, &q), -EINVAL);
	q = (struct fc_ioc_eq){ .flags = FC_EQ_OFF, .slots = 64 };
	assert_rc(xioctl(fd, FC_IOC_EQ, &q), -EINVAL);
	q = (struct fc_ioc_eq){ .flags = FC_EQ_OFF, .offset = 64 };
	assert_rc(xioctl(fd, FC_IOC_EQ, &q), -EINVAL);
	/* EQ_HEAD: fields; nobody holds the queue */
	hd = (struct fc_ioc_eq_head){ .flags = 1 };
	assert_rc(xioctl(fd, FC_IOC_EQ_HEAD, &hd), -EINVAL);
	hd = (struct fc_ioc_eq_head){ .reserved = 1 };
	assert_rc(xioctl(fd, FC_IOC_EQ_HEAD, &hd), -EINVAL);
	assert_rc(xioctl(fd, FC_IOC_EQ_HEAD, NULL), -EFAULT);
	assert_rc(eq_head(fd, 0), -EPERM);
	/* FC_CHAN_RING_EQ: takes no ring, needs the queue */
	assert_rc(chan_eq(fd, TEST_CHAN), -EPERM);
	assert_rc(chan_ring(fd, TEST_CHAN, 0, 0, 0, NULL), -EINVAL);
	{
		struct fc_ioc_chan_ring r = { .chan = TEST_CHAN,
					      .flags = FC_CHAN_RING_EQ,
					      .handle = h };

		assert_rc(xioctl(fd, FC_IOC_CHAN_RING, &r), -EINVAL);
		r = (struct fc_ioc_chan_ring){ .chan = TEST_CHAN,
					       .slots = 16,
					       .flags = FC_CHAN_RING_EQ };
		assert_rc(xioctl(fd, FC_IOC_CHAN_RING, &r), -EINVAL);
		r = (struct fc_ioc_chan_ring){ .chan = TEST_CHAN,
					       .flags = FC_CHAN_RING_EQ |
							FC_CHAN_RING_OFF };
		assert_rc(xioctl(fd, FC_IOC_CHAN_RING, &r), -EINVAL);
		r = (struct fc_ioc_chan_ring){ .chan = FC_MAX_CHANNELS,
					       .flags = FC_CHAN_RING_EQ };
		assert_rc(xioctl(fd, FC_IOC_CHAN_RING, &r), -EINVAL);
	}

	/* the last fitting queue of the buffer; then one at its start */
	assert_ok(eq_set(fd, h, 64, len - 64 * FC_EQ_ENTRY_SIZE));
	assert_ok(eq_set(fd, h, 64, 0));
	for (i = 0; i < 64 * FC_EQ_ENTRY_SIZE; i++)
		if (map[i])
			fail_msg("byte %u of the queue is 0x%02x, not zeroed",
				 i, map[i]);
	assert_int_equal(map[64 * FC_EQ_ENTRY_SIZE], 0xa5);
	assert_ok(reg_read(FC_EQ_SLOTS, &v));
	assert_int_equal(v, 64);
	assert_ok(reg_read(FC_EQ_CTRL, &v));
	assert_int_equal(v, FC_EQ_CTRL_ENABLE);
	assert_ok(reg_wait(FC_EQ_SEEN, FC_EQ_CTRL_ENABLE));
	assert_ok(reg_read(FC_EQ_TAIL, &v));
	assert_int_equal(v, 0);
	/* held: other files get -EBUSY and may neither move HEAD nor join */
	assert_rc(eq_set(f2, h2, 64, 0), -EBUSY);
	assert_rc(eq_off(f2), -EBUSY);
	assert_rc(eq_head(f2, 0), -EPERM);
	assert_rc(chan_eq(f2, TEST_CHAN), -EPERM);

	/* an endpoint in the queue: owned as a ring is, with no HEAD */
	assert_ok(reg_read(FC_CHAN_REG(TEST_CHAN, FC_CHAN_TAIL), &ctail));
	assert_ok(chan_eq(fd, TEST_CHAN));
	assert_ok(reg_read(FC_CHAN_REG(TEST_CHAN, FC_CHAN_CTRL), &v));
	assert_int_equal(v, FC_CHAN_CTRL_ENABLE | FC_CHAN_CTRL_EQ);
	assert_rc(chan_head(fd, TEST_CHAN, ctail), -EINVAL);
	assert_rc(chan_ring(f2, TEST_CHAN, h2, 16, 0, NULL), -EBUSY);
	/* HEAD: nothing written yet */
	assert_rc(eq_head(fd, 1), -ERANGE);
	assert_rc(eq_head(fd, 64), -ERANGE);
	assert_rc(eq_head(fd, 0xffffffffu), -ERANGE);
	assert_ok(eq_head(fd, 0));

	/* a message of two packets to ourselves: two entries, phase 1 */
	fill_from(msg, sizeof(msg), 10);
	rc = send_self(TEST_CHAN, msg, sizeof(msg), &v);
	if (rc && v == FC_DMA_ERR_ROUTE) {
		print_message(
			"[   SKIP   ] no route to ourselves: no message\n");
	} else {
		assert_ok(rc);
		assert_ok(reg_wait(FC_EQ_TAIL, 2));
		for (i = 0; i < 2; i++) {
			e = (const struct fc_hw_pkt *)map + i;
			hdr = __atomic_load_n(&e->hdr, __ATOMIC_ACQUIRE);
			assert_int_equal(hdr & FC_EQ_PHASE, FC_EQ_PHASE);
			assert_int_equal((hdr >> FC_PKT_CHAN_SHIFT) &
						 FC_PKT_CHAN_MASK,
					 TEST_CHAN);
			assert_int_equal((hdr >> FC_PKT_SRC_SHIFT) &
						 FC_PKT_NODE_MASK,
					 info.node_id);
			assert_int_equal((hdr >> FC_PKT_LEN_SHIFT) &
						 FC_PKT_LEN_MASK,
					 i ? 40 : 60);
			assert_int_equal(!!(hdr & FC_PKT_EOM), i);
			assert_memory_equal(e->payload, msg + 60 * i,
					    i ? 40 : 60);
		}
		e = (const struct fc_hw_pkt *)map + 2;
		assert_int_equal(e->hdr, 0);
		/* the ring's TAIL did not move: the queue took them */
		assert_ok(reg_read(FC_CHAN_REG(TEST_CHAN, FC_CHAN_TAIL), &v));
		assert_int_equal(v, ctail);
		/* forward only, never past TAIL */
		assert_rc(eq_head(fd, 3), -ERANGE);
		assert_ok(eq_head(fd, 1));
		assert_rc(eq_head(fd, 0), -ERANGE);
		assert_ok(eq_head(fd, 2));
		assert_ok(reg_read(FC_EQ_HEAD, &v));
		assert_int_equal(v, 2);
		/* a control message (FC_XFER_CTRL): CTRL packets, in order */
		if (info.features & FC_FEAT_XFER_CTRL) {
			assert_ok(send_self_flags(TEST_CHAN, msg, 8,
						  FC_XFER_CTRL, &v));
			assert_ok(reg_wait(FC_EQ_TAIL, 3));
			e = (const struct fc_hw_pkt *)map + 2;
			hdr = __atomic_load_n(&e->hdr, __ATOMIC_ACQUIRE);
			assert_int_equal((hdr >> FC_PKT_TYPE_SHIFT) &
						 FC_PKT_TYPE_MASK,
					 FC_PKT_T_CTRL);
			assert_int_equal(
				(hdr >> FC_PKT_LEN_SHIFT) & FC_PKT_LEN_MASK, 8);
			assert_true(hdr & FC_PKT_EOM);
			assert_memory_equal(e->payload, msg, 8);
			assert_ok(eq_head(fd, 3));
		}
		/*
		 * EQ_WAIT: its checks (an entry behind HEAD, or more than
		 * the queue ahead); nothing coming, the timeout; a message
		 * 50 ms later wakes it (the queue's interrupt, or its
		 * polling without one); an entry already there, at once.
		 */
		if (info.features & FC_FEAT_EQ_WAIT) {
			uint32_t next =
				(info.features & FC_FEAT_XFER_CTRL) ? 3 : 2;
			pthread_t th;
			int sent = -1;

			assert_rc(eq_wait(fd, next, 1000, 1), -EINVAL);
			assert_rc(eq_wait(fd, next + 64 + 1, 1000, 0), -EINVAL);
			assert_rc(eq_wait(f2, next, 1000, 0), -EPERM);
			assert_rc(eq_wait(fd, next - 1, 0, 0), -EINVAL);
			assert_rc(eq_wait(fd, next, 20000, 0), -ETIMEDOUT);
			assert_int_equal(pthread_create(&th, NULL,
							send_self_later, &sent),
					 0);
			assert_ok(eq_wait(fd, next, 10000000, 0));
			e = (const struct fc_hw_pkt *)map + next;
			hdr = __atomic_load_n(&e->hdr, __ATOMIC_ACQUIRE);
			assert_int_equal(hdr & FC_EQ_PHASE, FC_EQ_PHASE);
			pthread_join(th, NULL);
			assert_ok(sent);
			assert_ok(eq_wait(fd, next, 0, 0)); /* there */
			assert_ok(eq_head(fd, next + 1));
		}
	}

	/* off: the endpoint goes with it; the other file may take both */
	assert_ok(eq_off(fd));
	assert_ok(reg_read(FC_EQ_CTRL, &v));
	assert_int_equal(v, 0);
	assert_ok(reg_read(FC_EQ_SEEN, &v));
	assert_int_equal(v, 0);
	assert_ok(reg_read(FC_CHAN_REG(TEST_CHAN, FC_CHAN_CTRL), &v));
	assert_int_equal(v, 0);
	assert_rc(chan_head(fd, TEST_CHAN, ctail), -EPERM);
	assert_rc(eq_head(fd, 2), -EPERM);
	assert_ok(eq_off(fd)); /* off twice */
	assert_ok(eq_set(f2, h2, 64, 0));
	assert_ok(chan_eq(f2, TEST_CHAN));
	assert_rc(eq_set(fd, h, 64, 0), -EBUSY);
	/* closing gives both back; unregistering keeps the queue's memory */
	close(f2);
	assert_ok(reg_read(FC_EQ_CTRL, &v));
	assert_int_equal(v, 0);
	assert_ok(eq_set(fd, h, 64, 0));
	assert_ok(chan_eq(fd, TEST_CHAN));
	assert_ok(mem_unregister(fd, h));
	assert_ok(eq_head(fd, 0));
	assert_ok(chan_off(fd, TEST_CHAN));
	assert_ok(eq_off(fd));
	munmap(map, len);
	assert_ok(mem_unregister(fd, hr));
}

/*
 * A full queue through the driver: a message of 70 packets into a queue
 * of 64 stops at entry 64 (the board holds the rest back and counts a
 * stall), nothing is lost once EQ_HEAD makes room, and the entries of the
 * second pass carry phase 0.
 */
static void test_eq_full(void **state)
{
	enum {
		SLOTS = 64,
		PKTS = 70
	};
	const uint64_t len = SLOTS * FC_EQ_ENTRY_SIZE;
	struct fc_ioc_mem m = { .len = len };
	struct fc_ioc_loc dst;
	struct fc_ioc_xfer x;
	struct fc_ioc_wait w = { .timeout_ms = WAIT_MS };
	static uint8_t msg[PKTS * FC_PKT_PAYLOAD];
	const struct fc_hw_pkt *e;
	uint32_t stalls0, stalls, v, hdr, n;
	uint64_t t;
	uint8_t *map;

	if (!(info.features & FC_FEAT_EQ) ||
	    !(info.hw_caps & FC_CAP_EVENT_QUEUE))
		skip();
	assert_ok(xioctl(fd, FC_IOC_MEM_ALLOC, &m));
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, m.mmap_offset);
	assert_true(map != MAP_FAILED);
	assert_ok(eq_set(fd, m.handle, SLOTS, 0));
	assert_ok(chan_eq(fd, TEST_CHAN));
	assert_ok(reg_read(FC_EQ_STALLS, &stalls0));

	fill_from(msg, sizeof(msg), 11);
	dst = (struct fc_ioc_loc){ .space = FC_SPACE_FABRIC,
				   .addr = FC_FABRIC_CHAN(info.node_id,
							  TEST_CHAN) };
	x = xfer(host(0, (uintptr_t)msg), dst, sizeof(msg));
	assert_ok(submit(&x, 1, &t));
	w.ticket = t;
	/* The queue fills and stays full while HEAD stays. */
	if (reg_wait(FC_EQ_TAIL, SLOTS)) {
		assert_ok(xioctl(fd, FC_IOC_WAIT, &w));
		if (w.hw_error == FC_DMA_ERR_ROUTE) {
			print_message("[   SKIP   ] no route to ourselves\n");
			goto out;
		}
		fail_msg("the queue did not fill");
	}
	usleep(50000);
	assert_ok(reg_read(FC_EQ_TAIL, &v));
	assert_int_equal(v, SLOTS);
	assert_ok(reg_read(FC_EQ_STALLS, &stalls));
	assert_true(stalls != stalls0);
	assert_rc(eq_head(fd, SLOTS + 1), -ERANGE);
	/* Room for all: the rest lands, wrapping with phase 0. */
	assert_ok(eq_head(fd, SLOTS));
	assert_ok(reg_wait(FC_EQ_TAIL, PKTS));
	assert_ok(xioctl(fd, FC_IOC_WAIT, &w));
	assert_int_equal(w.status, 0);
	for (n = SLOTS; n < PKTS; n++) {
		e = (const struct fc_hw_pkt *)map + n % SLOTS;
		hdr = __atomic_load_n(&e->hdr, __ATOMIC_ACQUIRE);
		assert_int_equal(hdr & FC_EQ_PHASE, 0);
		assert_int_equal((hdr >> FC_PKT_LEN_SHIFT) & FC_PKT_LEN_MASK,
				 FC_PKT_PAYLOAD);
		assert_int_equal(!!(hdr & FC_PKT_EOM), n == PKTS - 1);
		assert_memory_equal(e->payload, msg + n * FC_PKT_PAYLOAD,
				    FC_PKT_PAYLOAD);
	}
	/* The first pass's entries past the second's: phase 1, in order. */
	e = (const struct fc_hw_pkt *)map + (PKTS - SLOTS);
	hdr = __atomic_load_n(&e->hdr, __ATOMIC_ACQUIRE);
	assert_int_equal(hdr & FC_EQ_PHASE, FC_EQ_PHASE);
	assert_memory_equal(e->payload, msg + (PKTS - SLOTS) * FC_PKT_PAYLOAD,
			    FC_PKT_PAYLOAD);
	assert_ok(eq_head(fd, PKTS));
out:
	assert_ok(eq_off(fd));
	munmap(map, len);
	assert_ok(mem_unregister(fd, m.handle));
}

/*
 * fork() with a registered buffer: the pinned pages stay the parent's, so
 * a transfer after the fork lands where the parent sees it, even after the
 * parent wrote to the buffer (which would break copy-on-write).
 */
static void test_fork(void **state)
{
	size_t len = 64 * 1024;
	uint8_t *buf = aligned_alloc(page, len), *pat = malloc(len);
	struct fc_ioc_xfer x;
	int pipefd[2];
	uint32_t h;
	pid_t pid;
	char c;

	assert_non_null(buf);
	assert_non_null(pat);
	memset(buf, 0xaa, len);
	fill_from(pat, len, 11);
	assert_ok(mem_register(fd, buf, len, &h));
	x = xfer(host(0, (uintptr_t)pat), board(0x400000), len);
	assert_ok(run_chain(&x, 1));
	assert_int_equal(pipe(pipefd), 0);

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* the child scribbles over its copy, then waits */
		memset(buf, 0xcc, len);
		close(pipefd[1]);
		if (read(pipefd[0], &c, 1) != 1)
			_exit(5);
		/* the parent's DMA must not have reached the child's copy */
		_exit(buf[0] == 0xcc && buf[len - 1] == 0xcc ? 0 : 1);
	}
	close(pipefd[0]);
	memset(buf, 0xbb, len); /* the parent writes too */
	x = xfer(board(0x400000), host(h, 0), len);
	assert_ok(run_chain(&x, 1));
	assert_memory_equal(buf, pat, len);
	assert_int_equal(write(pipefd[1], "x", 1), 1);
	close(pipefd[1]);
	assert_int_equal(child_status(pid), 0);
	assert_ok(mem_unregister(fd, h));
	free(buf);
	free(pat);
}

/* ---- emulator fault knobs: stalls, RESET, close in flight ---- */

static void test_stall_reset(void **state)
{
	uint8_t buf[5000];
	struct fc_ioc_xfer x =
		xfer(host(0, (uintptr_t)buf), board(0x600000), sizeof(buf));
	struct fc_ioc_reset r = { 0 };
	struct fc_ioc_wait w;
	uint64_t t1, t2, t3;
	double t0;

	need_emulator();
	assert_ok(reg_write(FC_EMU_FAULT_DMA_STALL, 1));
	assert_ok(submit(&x, 1, &t1));
	assert_ok(submit(&x, 1, &t2));
	assert_rc(wait_on(fd, t1, 0, NULL), -ETIMEDOUT);
	t0 = now_ms();
	assert_rc(wait_on(fd, t1, 50, NULL), -ETIMEDOUT);
	assert_true(now_ms() - t0 >= 45);
	assert_ok(xioctl(fd, FC_IOC_RESET, &r));
	assert_rc(wait_on(fd, t1, 0, &w), -ECANCELED);
	assert_int_equal(w.hw_error, FC_DMA_ERR_ABORTED);
	assert_rc(wait_on(fd, t2, 0, NULL), -ECANCELED);
	assert_ok(reg_write(FC_EMU_FAULT_DMA_STALL, 0));
	assert_ok(submit(&x, 1, &t3));
	assert_ok(wait_on(fd, t3, WAIT_MS, NULL));
}

static void test_error_index(void **state)
{
	uint8_t buf[300];
	struct fc_ioc_xfer x[3];
	struct fc_ioc_wait w;
	uint64_t t;

	need_emulator();
	x[0] = xfer(host(0, (uintptr_t)buf), board(0x7000), 100);
	x[1] = xfer(host(0, (uintptr_t)buf + 100), board(0x8000), 100);
	x[2] = xfer(host(0, (uintptr_t)buf + 200), board(0x9000), 100);
	assert_ok(reg_write(FC_EMU_FAULT_DMA_ERROR, FC_DMA_ERR_ROUTE));
	assert_ok(submit(x, 3, &t));
	assert_rc(wait_on(fd, t, WAIT_MS, &w), -EHOSTUNREACH);
	assert_int_equal(w.hw_error, FC_DMA_ERR_ROUTE);
	assert_true(w.hw_index < 3);
	assert_ok(reg_write(FC_EMU_FAULT_DMA_ERROR, 0));
	assert_ok(run_chain(x, 3));
}

/* Close a file whose chains are queued and running: close is prompt. */
static void test_close_in_flight(void **state)
{
	size_t len = 1 << 20;
	uint8_t *a = malloc(len), *b = malloc(len);
	struct fc_ioc_xfer x;
	uint64_t t;
	uint32_t h;
	double t0;
	int f2, i;

	need_emulator();
	assert_non_null(a);
	assert_non_null(b);
	f2 = open(path, O_RDWR);
	assert_true(f2 >= 0);
	assert_ok(mem_register(f2, b, len, &h));
	assert_ok(reg_write(FC_EMU_FAULT_DMA_STALL, 1));
	for (i = 0; i < 8; i++) {
		x = xfer(host(0, (uintptr_t)a), host(h, 0), len);
		/* on both engines where there are two */
		if (engines() >= 2)
			assert_ok(submit_engine(f2, i & 1, &x, 1, &t));
		else
			assert_ok(submit_on(f2, &x, 1, &t));
	}
	t0 = now_ms();
	close(f2);
	print_message("close with 8 chains in flight: %.1f ms\n",
		      now_ms() - t0);
	assert_true(now_ms() - t0 < 3000);
	assert_ok(reg_write(FC_EMU_FAULT_DMA_STALL, 0));
	free(a); /* the closed file must not touch these any more */
	free(b);
	/* the engines go on for the others */
	{
		uint8_t c[100];

		x = xfer(host(0, (uintptr_t)c), board(0), sizeof(c));
		assert_ok(run_chain(&x, 1));
		if (engines() >= 2) {
			assert_ok(submit_engine(fd, 1, &x, 1, &t));
			assert_ok(wait_on(fd, t, WAIT_MS, NULL));
		}
	}
}

/* A process killed with chains in flight. */
static void test_killed_in_flight(void **state)
{
	int pipefd[2];
	pid_t pid;
	char c;

	need_emulator();
	assert_int_equal(pipe(pipefd), 0);
	assert_ok(reg_write(FC_EMU_FAULT_DMA_STALL, 1));
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int f = open(path, O_RDWR);
		static uint8_t buf[65536];
		struct fc_ioc_xfer x = xfer(host(0, (uintptr_t)buf),
					    board(0x1000), sizeof(buf));
		uint64_t t;

		if (f < 0 || submit_on(f, &x, 1, &t) || submit_on(f, &x, 1, &t))
			_exit(1);
		if (write(pipefd[1], "x", 1) != 1)
			_exit(2);
		wait_on(f, t, -1, NULL); /* killed in here */
		_exit(3);
	}
	close(pipefd[1]);
	assert_int_equal(read(pipefd[0], &c, 1), 1);
	close(pipefd[0]);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	assert_ok(reg_write(FC_EMU_FAULT_DMA_STALL, 0));
	{
		uint8_t b[100];
		struct fc_ioc_xfer x =
			xfer(host(0, (uintptr_t)b), board(0), sizeof(b));

		assert_ok(run_chain(&x, 1));
	}
}

/* ---- modes for the VM scripts ---- */

/* dma_timeout_ms set low by the caller: a stalled chain fails by itself. */
static int timeout_test(void)
{
	uint8_t buf[4096], back[4096];
	struct fc_ioc_xfer x =
		xfer(host(0, (uintptr_t)buf), board(0x1000), sizeof(buf));
	struct fc_ioc_wait w;
	uint64_t t;
	double t0;
	int rc;

	if (!is_emulated()) {
		printf("SKIP: needs the emulator's stall knob\n");
		return EXIT_SKIP;
	}
	fill_from(buf, sizeof(buf), 5);
	if (reg_write(FC_EMU_FAULT_DMA_STALL, 1) || submit(&x, 1, &t))
		return 1;
	t0 = now_ms();
	rc = wait_on(fd, t, -1, &w);
	printf("stalled chain: WAIT gave %d (%s) hw_error %u after %.0f ms\n",
	       rc, strerror(-rc), w.hw_error, now_ms() - t0);
	reg_write(FC_EMU_FAULT_DMA_STALL, 0);
	if (rc != -ETIMEDOUT)
		return 1;
	x = xfer(host(0, (uintptr_t)buf), board(0x1000), sizeof(buf));
	if (run_chain(&x, 1))
		return 1;
	x = xfer(board(0x1000), host(0, (uintptr_t)back), sizeof(back));
	if (run_chain(&x, 1) || memcmp(buf, back, sizeof(buf)))
		return 1;
	printf("the next transfers work\n");
	return 0;
}

/* /sys/class/fpgacomm/NAME/device/FILE of the board under test. */
static void class_file(char *buf, size_t len, const char *file)
{
	const char *name = strrchr(path, '/');

	snprintf(buf, len, "/sys/class/fpgacomm/%s/device%s%s",
		 name ? name + 1 : path, *file ? "/" : "", file);
}

static int sysfs_write(const char *file)
{
	int f = open(file, O_WRONLY);
	int ok = f >= 0 && write(f, "1", 1) == 1;

	if (!ok)
		perror(file);
	if (f >= 0)
		close(f);
	return ok ? 0 : -1;
}

/*
 * Engine 0 is out of use (its reset went unheeded): engine 1 still moves
 * data (@x, host to board, and back), engine 0 still refuses.
 */
static int deaf_other_engine(const struct fc_ioc_xfer *x)
{
	static uint8_t back[8192];
	struct fc_ioc_xfer y = *x, z;
	uint64_t t;
	int rc;

	rc = submit_engine(fd, 1, &y, 1, &t);
	if (!rc)
		rc = wait_on(fd, t, WAIT_MS, NULL);
	z = xfer(y.dst, host(0, (uintptr_t)back), y.len);
	if (!rc)
		rc = submit_engine(fd, 1, &z, 1, &t);
	if (!rc)
		rc = wait_on(fd, t, WAIT_MS, NULL);
	printf("engine 1 beside the broken engine 0: %d (%s)\n", rc,
	       strerror(-rc));
	if (rc || memcmp((void *)(uintptr_t)y.src.addr, back, y.len))
		return 1;
	rc = submit_engine(fd, 0, &y, 1, &t);
	printf("engine 0 still: %d (%s)\n", rc, strerror(-rc));
	return rc != -EIO;
}

/*
 * A board that never acknowledges an engine reset (the emulator's
 * RESET_DEAF knob): the stalled chain still ends (-ETIMEDOUT), its engine
 * then refuses new chains (-EIO) rather than reuse memory the board may
 * still write, the other engines go on (FC_FEAT_ENGINES), and a PCI
 * remove and rescan bring back a working board.
 * Needs dma_timeout_ms set short by the caller.
 */
static int deaf_reset_test(void)
{
	static uint8_t buf[8192], back[8192];
	struct fc_ioc_xfer x =
		xfer(host(0, (uintptr_t)buf), board(0x2000), sizeof(buf));
	struct fc_ioc_info i = { 0 };
	char remove[600];
	struct fc_ioc_wait w;
	uint64_t t;
	int rc, tries;

	if (!is_emulated()) {
		printf("SKIP: needs the emulator's RESET_DEAF knob\n");
		return EXIT_SKIP;
	}
	fill_from(buf, sizeof(buf), 9);
	if (reg_write(FC_EMU_FAULT_DMA_STALL, 1) ||
	    reg_write(FC_EMU_FAULT_RESET_DEAF, 1) || submit(&x, 1, &t))
		return 1;
	rc = wait_on(fd, t, -1, &w);
	printf("stalled chain, reset unheeded: WAIT gave %d (%s)\n", rc,
	       strerror(-rc));
	if (rc != -ETIMEDOUT)
		return 1;
	rc = submit(&x, 1, &t);
	printf("next SUBMIT on the broken device: %d (%s)\n", rc,
	       strerror(-rc));
	if (rc != -EIO || xioctl(fd, FC_IOC_INFO, &i))
		return 1;
	reg_write(FC_EMU_FAULT_RESET_DEAF, 0);
	reg_write(FC_EMU_FAULT_DMA_STALL, 0);
	if (engines() >= 2 && deaf_other_engine(&x))
		return 1;

	/* Remove (freeing what was parked) and probe again. */
	close(fd);
	fd = -1;
	class_file(remove, sizeof(remove), "remove");
	if (sysfs_write(remove) || sysfs_write("/sys/bus/pci/rescan"))
		return 1;
	for (tries = 0; fd < 0 && tries < 100; tries++) {
		fd = open(path, O_RDWR);
		if (fd < 0)
			usleep(20000);
	}
	if (fd < 0) {
		perror(path);
		return 1;
	}
	if (run_chain(&x, 1))
		return 1;
	x = xfer(board(0x2000), host(0, (uintptr_t)back), sizeof(back));
	if (run_chain(&x, 1) || memcmp(buf, back, sizeof(buf)))
		return 1;
	printf("after remove and rescan: %s works again\n", path);
	return 0;
}

static sigjmp_buf bus_jmp;

static void on_sigbus(int sig)
{
	siglongjmp(bus_jmp, 1);
}

/* Does a load (or a store, with @write) at @p raise SIGBUS? */
static int sigbus_on(volatile uint8_t *p, int write)
{
	struct sigaction sa = { .sa_handler = on_sigbus }, old;
	volatile int hit = 1;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &old);
	if (!sigsetjmp(bus_jmp, 1)) {
		if (write)
			*p = 0x5a;
		else
			(void)*p;
		hit = 0;
	}
	sigaction(SIGBUS, &old, NULL);
	return hit;
}

/*
 * Map, touch and unmap a register page and a MEM_ALLOC buffer over and
 * over while the board is removed, until mmap says it is gone: a mapping
 * made just before the remove must end up empty like the others. A touch
 * may get SIGBUS; 0 when mmap ended with ENODEV.
 */
static int remove_hammer(uint64_t alloc_off, size_t alloc_len)
{
	unsigned long rounds;

	for (rounds = 0; rounds < 10000000; rounds++) {
		uint8_t *r, *a;

		r = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, FC_MMAP_REGS);
		if (r == MAP_FAILED)
			return errno == ENODEV ? 0 : 1;
		a = mmap(NULL, alloc_len, PROT_READ | PROT_WRITE, MAP_SHARED,
			 fd, (off_t)alloc_off);
		if (a == MAP_FAILED) {
			munmap(r, page);
			return errno == ENODEV ? 0 : 2;
		}
		sigbus_on(r, 0);
		sigbus_on(a + alloc_len - 1, 1);
		munmap(a, alloc_len);
		munmap(r, page);
	}
	return 3;
}

/* remove_test's sleeper in EQ_WAIT, and what it got. */
static int remove_eq_rc = 1;

static void *remove_eq_waiter(void *arg)
{
	(void)arg;
	remove_eq_rc = eq_wait(fd, 0, 30000000, 0);
	return NULL;
}

/*
 * PCI remove with the file open, a chain stalled and another queued, a
 * channel ring, a sleeper in EQ_WAIT, and mappings of the registers, the
 * aperture and a
 * MEM_ALLOC buffer, in this process and in a child (and a second child
 * mapping and unmapping all along). After the remove every call gives
 * -ENODEV, a touch of any mapping gets SIGBUS, and munmap and close are
 * clean (the VM script checks the kernel log). Then a rescan brings the
 * board back.
 */
static int remove_test(void)
{
	struct fc_ioc_info i = { 0 };
	static uint8_t buf[8192];
	struct fc_ioc_xfer x =
		xfer(host(0, (uintptr_t)buf), board(0x1000), sizeof(buf));
	const size_t alen = 3 * page;
	struct fc_ioc_mem am = { .len = 3 * page };
	char pcidir[512], file[600];
	volatile uint32_t *regs;
	uint8_t *ap = MAP_FAILED, *al;
	uint64_t t, t2, t3 = 0;
	uint32_t h, v;
	pid_t child, hammer;
	pthread_t eq_th;
	bool eq_waiting = false;
	int go[2], st;
	ssize_t n;
	int f, rc = 0;

	class_file(file, sizeof(file), "");
	n = readlink(file, pcidir, sizeof(pcidir) - 1);
	if (n < 0)
		return 1;
	pcidir[n] = 0;
	class_file(file, sizeof(file), "remove");
	if (mem_register(fd, buf, sizeof(buf), &h))
		return 1;
	if (reg_write(FC_EMU_FAULT_DMA_STALL, 1) || submit(&x, 1, &t))
		return 1;

#define EXPECT(expr, want)                                                  \
	do {                                                                \
		long _r = (long)(expr);                                     \
		if (_r != (long)(want)) {                                   \
			printf("FAIL: %s = %ld, expected %ld\n", #expr, _r, \
			       (long)(want));                               \
			rc = 1;                                             \
		}                                                           \
	} while (0)

	/* Mappings of every kind, touched: their pages are in. */
	regs = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		    FC_MMAP_REGS);
	if (regs == MAP_FAILED || xioctl(fd, FC_IOC_MEM_ALLOC, &am))
		return 1;
	EXPECT(regs[FC_REG_ID / 4], FC_HW_ID_MAGIC);
	if (info.aperture_size) {
		ap = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			  FC_MMAP_APERTURE);
		EXPECT(ap == MAP_FAILED, 0);
		if (ap != MAP_FAILED)
			EXPECT(sigbus_on(ap, 0), 0);
	}
	al = mmap(NULL, alen, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		  (off_t)am.mmap_offset);
	if (al == MAP_FAILED)
		return 1;
	memset(al, 0xa5, alen);
	/* The buffer in a queued chain and under a channel ring. */
	x = xfer(board(0x1000), host(am.handle, 0), 4096);
	EXPECT(submit(&x, 1, &t2), 0);
	/* ... and running on engine 1, where there is one */
	if (engines() >= 2)
		EXPECT(submit_engine(fd, 1, &x, 1, &t3), 0);
	if (info.hw_caps & FC_CAP_CHANNELS)
		EXPECT(chan_ring(fd, TEST_CHAN, am.handle, 16, page, NULL), 0);
	/* A thread asleep on the event queue: the remove must end it. */
	if ((info.features & FC_FEAT_EQ_WAIT) &&
	    !eq_set(fd, am.handle, 64, 2 * page))
		eq_waiting =
			!pthread_create(&eq_th, NULL, remove_eq_waiter, NULL);

	/* A child holding the buffer's mapping too, and one hammering. */
	if (pipe(go))
		return 1;
	child = fork();
	if (child == 0) {
		char c;

		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(5);
		_exit(sigbus_on(al + page, 1) ? 0 : 1);
	}
	close(go[0]);
	hammer = fork();
	if (hammer == 0)
		_exit(remove_hammer(am.mmap_offset, alen));
	usleep(50000);

	f = open(file, O_WRONLY);
	if (f < 0 || write(f, "1", 1) != 1) {
		perror("remove");
		return 1;
	}
	close(f);
	printf("removed %s with the file open and mapped\n", pcidir);
	if (eq_waiting) {
		pthread_join(eq_th, NULL);
		EXPECT(remove_eq_rc, -ENODEV);
		printf("the sleeper in EQ_WAIT: %d\n", remove_eq_rc);
	}

	EXPECT(xioctl(fd, FC_IOC_INFO, &i), -ENODEV);
	EXPECT(reg_read(FC_REG_ID, &v), -ENODEV);
	x = xfer(host(0, (uintptr_t)buf), board(0x1000), sizeof(buf));
	EXPECT(submit(&x, 1, &t), -ENODEV);
	EXPECT(wait_on(fd, t, -1, NULL), -ENODEV);
	EXPECT(wait_on(fd, t2, -1, NULL), -ENODEV);
	if (t3)
		EXPECT(wait_on(fd, t3, -1, NULL), -ENODEV);
	EXPECT(mem_unregister(fd, h), -ENODEV);
	EXPECT(mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED, 1);
	EXPECT(mmap(NULL, alen, PROT_READ, MAP_SHARED, fd,
		    (off_t)am.mmap_offset) == MAP_FAILED,
	       1);
	/* The mappings are still there, emptied: touching them gets SIGBUS. */
	EXPECT(sigbus_on((volatile uint8_t *)regs, 0), 1);
	EXPECT(sigbus_on((volatile uint8_t *)regs, 1), 1);
	if (ap != MAP_FAILED)
		EXPECT(sigbus_on(ap, 0), 1);
	EXPECT(sigbus_on(al, 0), 1);
	EXPECT(sigbus_on(al + alen - 1, 1), 1);
	printf("registers%s and MEM_ALLOC mappings: SIGBUS after the remove\n",
	       ap != MAP_FAILED ? ", aperture" : "");
	EXPECT(write(go[1], "x", 1), 1);
	close(go[1]);
	EXPECT(child_status(child), 0);
	EXPECT(waitpid(hammer, &st, 0), hammer);
	EXPECT(WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st), 0);
	/* The last references go: at munmap, and at close. */
	EXPECT(munmap((void *)regs, page), 0);
	if (ap != MAP_FAILED)
		EXPECT(munmap(ap, page), 0);
	EXPECT(munmap(al, alen), 0);
	close(fd);
	fd = -1;

	f = open("/sys/bus/pci/rescan", O_WRONLY);
	if (f < 0 || write(f, "1", 1) != 1) {
		perror("rescan");
		return 1;
	}
	close(f);
	fd = open(path, O_RDWR);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	EXPECT(xioctl(fd, FC_IOC_INFO, &i), 0);
	EXPECT(reg_write(FC_EMU_FAULT_DMA_STALL, 0), 0);
	x = xfer(host(0, (uintptr_t)buf), board(0x1000), sizeof(buf));
	EXPECT(run_chain(&x, 1), 0);
	printf("after rescan: %s works again\n", path);
	return rc;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_info),
		cmocka_unit_test(test_unknown_commands),
		cmocka_unit_test(test_reg),
		cmocka_unit_test(test_reg_privilege),
		cmocka_unit_test(test_reg_bus_masked),
		cmocka_unit_test(test_raw_bus_privilege),
		cmocka_unit_test(test_mmap_regs),
		cmocka_unit_test(test_pio_pages),
		cmocka_unit_test(test_mem_register_bad),
		cmocka_unit_test(test_memlock_limit),
		cmocka_unit_test(test_engine_shared),
		cmocka_unit_test(test_engine_bad),
		cmocka_unit_test(test_engines_side_by_side),
		cmocka_unit_test(test_submit_bad),
		cmocka_unit_test(test_submit_chain_rule),
		cmocka_unit_test(test_wait_bad),
		cmocka_unit_test(test_user_address_roundtrip),
		cmocka_unit_test(test_many_descriptors),
		cmocka_unit_test(test_desc_limit_ticket),
		cmocka_unit_test(test_desc_limit_file),
		cmocka_unit_test(test_eventfd_poll),
		cmocka_unit_test(test_mem_alloc_mmap),
		cmocka_unit_test(test_mem_info_bad),
		cmocka_unit_test(test_chan_ring_bad),
		cmocka_unit_test(test_eq_bad),
		cmocka_unit_test(test_eq_full),
		cmocka_unit_test(test_fork),
		cmocka_unit_test(test_stall_reset),
		cmocka_unit_test(test_engines_reset),
		cmocka_unit_test(test_error_index),
		cmocka_unit_test(test_close_in_flight),
		cmocka_unit_test(test_killed_in_flight),
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
	if (argc > 1 && !strcmp(argv[1], "--timeout-test"))
		return timeout_test();
	if (argc > 1 && !strcmp(argv[1], "--remove-test"))
		return remove_test();
	if (argc > 1 && !strcmp(argv[1], "--deaf-reset-test"))
		return deaf_reset_test();
	if (getenv("FPGACOMM_TEST_FILTER"))
		cmocka_set_test_filter(getenv("FPGACOMM_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
