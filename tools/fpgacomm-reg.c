// SPDX-License-Identifier: MIT
/*
 * fpgacomm-reg: read and write a board's registers by name or offset, for
 * bring-up and debugging.
 */
#include <ctype.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fpgacomm/fpgacomm.h>
#include <fpgacomm/hw.h>

#include "tool_util.h"

#define REG_NAME_MAX 64

const char *const prog = "fpgacomm-reg";

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [-d DEV] COMMAND [ARGS] [COMMAND [ARGS]]...\n"
		"Read and write the registers of an fpgacomm board (BAR0).\n"
		"Commands run in order on one open board: an emulated board lives\n"
		"only as long as the process, e.g.\n"
		"  %s write SCRATCH 0x12345678 read SCRATCH_ECHO\n"
		"\n"
		"Commands:\n"
		"  read REG             print the register's value (hex)\n"
		"  write REG VALUE      write VALUE (decimal or 0x hex, 32 bits)\n"
		"  list                 every named register: name, offset, value\n"
		"  dump [START [LEN]]   raw words from START (default 0), LEN bytes\n"
		"                       (default 0x100; suffix K or M allowed)\n"
		"\n"
		"REG is a register name (e.g. ID, SCRATCH, DMA0_DOORBELLS; any case)\n"
		"or a byte offset (0x1038), 4-byte aligned and below 0x%x.\n"
		"\n"
		"Options:\n"
		"  -d, --device DEV  board to use (default: $FPGACOMM_DEVICE,\n"
		"                    /dev/fpgacomm0, else emu:)\n"
		"  -h, --help        show this help\n"
		"\n"
		"Exit status: 0 ok, 1 error from the board or library, 2 bad usage.\n",
		prog, prog, FC_BAR0_SIZE);
}

static void check_offset(const char *what, uint64_t off)
{
	if (off >= FC_BAR0_SIZE)
		usage_error("%s 0x%" PRIx64
			    " is beyond the register file (0x%x bytes)",
			    what, off, FC_BAR0_SIZE);
	if (off % 4)
		usage_error("%s 0x%" PRIx64 " is not 4-byte aligned", what,
			    off);
}

/* REG as an offset: a number, else a register name in any case. */
static uint32_t parse_reg(const char *s)
{
	char name[REG_NAME_MAX];
	uint64_t off;
	uint32_t o32;
	size_t i;

	if (isdigit((unsigned char)*s)) {
		if (parse_u64(s, &off))
			usage_error(
				"bad register offset '%s': expected a number like 0x20",
				s);
		check_offset("register offset", off);
		return off;
	}
	for (i = 0; s[i] && i < sizeof(name) - 1; i++)
		name[i] = toupper((unsigned char)s[i]);
	name[i] = '\0';
	if (s[i] || fc_reg_lookup(name, &o32))
		usage_error("unknown register '%s' (see '%s list')", s, prog);
	return o32;
}

static uint32_t parse_value(const char *s)
{
	uint64_t v;

	if (parse_u64(s, &v))
		usage_error(
			"bad value '%s': expected a number (decimal or 0x hex)",
			s);
	if (v > UINT32_MAX)
		usage_error("value '%s' does not fit in 32 bits", s);
	return v;
}

/* Report error @ret of @doing ("reading", "writing") register @off. */
static void reg_error(const char *doing, uint32_t off, int ret)
{
	char name[REG_NAME_MAX];

	if (fc_reg_name(off, name, sizeof(name)))
		snprintf(name, sizeof(name), "0x%04x", off);
	fprintf(stderr, "%s: %s %s: %s\n", prog, doing, name, fc_strerror(ret));
}

/* RETURN VALUE: 0 or the library's error, already reported. */
static int reg_read(struct fc_dev *dev, uint32_t off, uint32_t *val)
{
	int ret = fc_reg_read(dev, off, val);

	if (ret)
		reg_error("reading", off, ret);
	return ret;
}

static int cmd_read(struct fc_dev *dev, uint32_t off)
{
	uint32_t v;

	if (reg_read(dev, off, &v))
		return 1;
	printf("0x%08x\n", v);
	return 0;
}

static int cmd_write(struct fc_dev *dev, uint32_t off, uint32_t val)
{
	int ret = fc_reg_write(dev, off, val);

	if (ret)
		reg_error("writing", off, ret);
	return ret ? 1 : 0;
}

static int list_one(const char *name, uint32_t off, void *arg)
{
	struct fc_dev *dev = arg;
	uint32_t v;

	if (reg_read(dev, off, &v))
		return 1;
	printf("%-24s 0x%05x  0x%08x  %u\n", name, off, v, v);
	return 0;
}

static int cmd_list(struct fc_dev *dev)
{
	printf("%-24s %-7s  %-10s  %s\n", "NAME", "OFFSET", "VALUE", "DECIMAL");
	return fc_reg_foreach(list_one, dev) ? 1 : 0;
}

static int cmd_dump(struct fc_dev *dev, uint32_t start, uint32_t len)
{
	uint32_t v;

	for (uint32_t off = start; off < start + len; off += 4) {
		if (reg_read(dev, off, &v))
			return 1;
		if ((off - start) % 16 == 0)
			printf("%s0x%05x:", off == start ? "" : "\n", off);
		printf(" %08x", v);
	}
	printf("\n");
	return 0;
}

static void parse_dump_range(int argc, char **argv, uint32_t *start,
			     uint32_t *len)
{
	uint64_t s = 0, l = 0x100;

	if (argc > 0) {
		if (parse_size(argv[0], &s, "KM", false))
			usage_error("bad dump start '%s': expected a number",
				    argv[0]);
		check_offset("dump start", s);
	}
	if (argc > 1) {
		if (parse_size(argv[1], &l, "KM", false))
			usage_error("bad dump length '%s': expected a number",
				    argv[1]);
		if (!l || l % 4)
			usage_error(
				"dump length '%s' must be a non-zero multiple of 4",
				argv[1]);
	}
	/* Clip the default length at the end; an explicit one must fit. */
	if (argc < 2 && l > FC_BAR0_SIZE - s)
		l = FC_BAR0_SIZE - s;
	if (l > FC_BAR0_SIZE - s)
		usage_error("dump of 0x%" PRIx64 " bytes from 0x%" PRIx64
			    " runs past the register file (0x%x bytes)",
			    l, s, FC_BAR0_SIZE);
	*start = s;
	*len = l;
}

enum op {
	OP_READ,
	OP_WRITE,
	OP_LIST,
	OP_DUMP
};

struct cmd {
	enum op op;
	uint32_t off;
	uint32_t val; /* OP_WRITE: value; OP_DUMP: length */
};

static const char *need_arg(int argc, char **argv, int i, const char *cmd,
			    const char *what)
{
	if (i >= argc)
		usage_error("'%s' needs %s", cmd, what);
	return argv[i];
}

/* Count the optional numeric arguments of dump: at most two, digits first. */
static int dump_args(int argc, char **argv, int i)
{
	int n = 0;

	while (n < 2 && i + n < argc && isdigit((unsigned char)argv[i + n][0]))
		n++;
	return n;
}

/*
 * Parse every command before the board is opened, so a typo late in the
 * line does not leave half of the writes done.
 * RETURN VALUE: number of commands in *cmds.
 */
static int parse_cmds(int argc, char **argv, struct cmd *cmds)
{
	int n = 0, i = 0;

	if (argc == 0)
		usage_error("no command given (read, write, list or dump)");
	while (i < argc) {
		const char *name = argv[i++];
		struct cmd *c = &cmds[n++];
		int nd;

		memset(c, 0, sizeof(*c));
		if (!strcmp(name, "read")) {
			c->op = OP_READ;
			c->off = parse_reg(
				need_arg(argc, argv, i++, name, "a register"));
		} else if (!strcmp(name, "write")) {
			c->op = OP_WRITE;
			c->off = parse_reg(
				need_arg(argc, argv, i++, name, "a register"));
			c->val = parse_value(
				need_arg(argc, argv, i++, name, "a value"));
		} else if (!strcmp(name, "list")) {
			c->op = OP_LIST;
		} else if (!strcmp(name, "dump")) {
			c->op = OP_DUMP;
			nd = dump_args(argc, argv, i);
			parse_dump_range(nd, argv + i, &c->off, &c->val);
			i += nd;
		} else {
			usage_error(
				"unknown command '%s' (read, write, list or dump)",
				name);
		}
	}
	return n;
}

static int run_cmd(struct fc_dev *dev, const struct cmd *c)
{
	switch (c->op) {
	case OP_READ:
		return cmd_read(dev, c->off);
	case OP_WRITE:
		return cmd_write(dev, c->off, c->val);
	case OP_LIST:
		return cmd_list(dev);
	case OP_DUMP:
		return cmd_dump(dev, c->off, c->val);
	}
	return 1;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *devname = NULL;
	struct fc_dev *dev;
	struct cmd *cmds;
	int c, n, ret = 0;

	/* '+': stop at the command, so a value is never taken for an option. */
	while ((c = getopt_long(argc, argv, "+d:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			devname = optarg;
			break;
		default:
			other_option(c, usage);
		}
	}
	cmds = calloc(argc, sizeof(*cmds));
	if (!cmds) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return 1;
	}
	n = parse_cmds(argc - optind, argv + optind, cmds);

	ret = fc_open(&dev, devname);
	if (ret) {
		fprintf(stderr, "%s: cannot open %s: %s\n", prog,
			devname ? devname : "the default board",
			fc_strerror(ret));
		free(cmds);
		return 1;
	}
	for (int i = 0; i < n && !ret; i++)
		ret = run_cmd(dev, &cmds[i]);
	fc_close(dev);
	free(cmds);
	return ret;
}
