// SPDX-License-Identifier: MIT
/*
 * fill-regs: write a static fpgacomm register file into a shared memory file
 * (the ivshmem backing file of a test VM), so that the driver can probe a
 * board before the emulator daemon exists. Only the identity block is
 * filled; nothing answers doorbells.
 *
 * usage: fill-regs [options] FILE
 *   --all-ones     every byte 0xff: a board that does not respond
 *   --id X         ID register (default FC_HW_ID_MAGIC)
 *   --version X    VERSION register (default FC_HW_VERSION)
 *   --caps X       CAPS register (default FC_CAP_EMULATED)
 *   --node N       NODE_ID register (default 0)
 *   --mem BYTES    board memory size (default 0; K, M, G suffixes)
 *   --dma N        number of DMA engines (default 1)
 *   --ports N      number of link ports (default 0)
 *   --size BYTES   size of FILE when it is created (default 2M)
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fpgacomm/hw.h>

static void print_usage(FILE *f)
{
	fprintf(f, "usage: %s [--all-ones] [--id X] [--version X] [--caps X]\n"
		   "                 [--node N] [--mem BYTES] [--dma N] [--ports N]\n"
		   "                 [--size BYTES] FILE\n", "fill-regs");
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;
	unsigned long long n;

	errno = 0;
	n = strtoull(s, &end, 0);
	if (errno || end == s)
		return -EINVAL;
	if (*end) {
		const char *units = "KMG", *u = strchr(units, *end & ~0x20);

		if (!u || end[1])
			return -EINVAL;
		n <<= 10 * (u - units + 1);
	}
	*v = n;
	return 0;
}

static void wr32(void *regs, uint32_t off, uint32_t val)
{
	uint32_t le = htole32(val);

	memcpy((char *)regs + off, &le, sizeof(le));
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "all-ones", no_argument, NULL, 'a' },
		{ "id", required_argument, NULL, 'i' },
		{ "version", required_argument, NULL, 'v' },
		{ "caps", required_argument, NULL, 'c' },
		{ "node", required_argument, NULL, 'n' },
		{ "mem", required_argument, NULL, 'm' },
		{ "dma", required_argument, NULL, 'd' },
		{ "ports", required_argument, NULL, 'p' },
		{ "size", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t id = FC_HW_ID_MAGIC, version = FC_HW_VERSION;
	uint64_t caps = FC_CAP_EMULATED, node = 0, mem = 0, dma = 1, ports = 0;
	uint64_t size = 2u << 20, *arg;
	int all_ones = 0, fd, c;
	struct stat st;
	void *regs;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'a':
			all_ones = 1;
			continue;
		case 'i':
			arg = &id;
			break;
		case 'v':
			arg = &version;
			break;
		case 'c':
			arg = &caps;
			break;
		case 'n':
			arg = &node;
			break;
		case 'm':
			arg = &mem;
			break;
		case 'd':
			arg = &dma;
			break;
		case 'p':
			arg = &ports;
			break;
		case 's':
			arg = &size;
			break;
		case 'h':
			print_usage(stdout);
			return 0;
		default:
			print_usage(stderr);
			return 2;
		}
		if (parse_u64(optarg, arg)) {
			fprintf(stderr, "fill-regs: bad number '%s'\n", optarg);
			return 2;
		}
	}
	if (optind != argc - 1) {
		print_usage(stderr);
		return 2;
	}

	fd = open(argv[optind], O_RDWR | O_CREAT, 0600);
	if (fd < 0 || fstat(fd, &st)) {
		perror(argv[optind]);
		return 1;
	}
	if (st.st_size == 0 && ftruncate(fd, (off_t)size)) {
		perror("ftruncate");
		return 1;
	}
	if (fstat(fd, &st) || st.st_size < FC_BAR0_SIZE) {
		fprintf(stderr, "fill-regs: %s is smaller than the %u-byte register file\n",
			argv[optind], FC_BAR0_SIZE);
		return 1;
	}
	regs = mmap(NULL, FC_BAR0_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (regs == MAP_FAILED) {
		perror("mmap");
		return 1;
	}

	if (all_ones) {
		memset(regs, 0xff, FC_BAR0_SIZE);
	} else {
		/* Reserved and host-written registers read as zero. */
		memset(regs, 0, FC_BAR0_SIZE);
		wr32(regs, FC_REG_ID, (uint32_t)id);
		wr32(regs, FC_REG_VERSION, (uint32_t)version);
		wr32(regs, FC_REG_CAPS, (uint32_t)caps);
		wr32(regs, FC_REG_NODE_ID, (uint32_t)node);
		wr32(regs, FC_REG_NUM_DMA, (uint32_t)dma);
		wr32(regs, FC_REG_NUM_PORTS, (uint32_t)ports);
		wr32(regs, FC_REG_MEM_SIZE_LO, (uint32_t)mem);
		wr32(regs, FC_REG_MEM_SIZE_HI, (uint32_t)(mem >> 32));
		wr32(regs, FC_REG_SCRATCH_ECHO, ~0u);
		wr32(regs, FC_EMU_MAGIC, FC_EMU_MAGIC_VALUE);
	}

	if (msync(regs, FC_BAR0_SIZE, MS_SYNC) || munmap(regs, FC_BAR0_SIZE) ||
	    close(fd)) {
		perror(argv[optind]);
		return 1;
	}
	return 0;
}
