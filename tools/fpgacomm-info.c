// SPDX-License-Identifier: MIT
/*
 * fpgacomm-info: list fpgacomm boards, the real ones found on the PCI bus
 * and the emulated ones, and describe every board that opens.
 */
#include <errno.h>
#include <getopt.h>
#include <glob.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pci/pci.h>

#include <fpgacomm/fpgacomm.h>
#include <fpgacomm/hw.h>

#include "tool_util.h"

#define PCI_NUM_BARS 6

struct bar {
	int index;
	uint64_t addr;
	uint64_t size;
	bool io;
	bool mem64;
	bool prefetch;
};

struct board {
	/* Set when the board was found on the PCI bus. */
	bool on_pci;
	char slot[32];
	uint16_t vendor, device;
	int pci_numa;
	char driver[64];
	int nbars;
	struct bar bars[PCI_NUM_BARS];

	/* The name given to fc_open(), empty when there is none to try. */
	char name[256];
	int err; /* fc_open() or fc_query() result */
	bool opened;
	struct fc_info info;
};

struct board_list {
	struct board *b;
	unsigned int n;
	unsigned int cap;
};

const char *const prog = "fpgacomm-info";

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [-d NAME]... [--no-emu] [--json]\n"
		"List fpgacomm boards and describe each one that opens.\n"
		"\n"
		"By default: boards on the PCI bus (%04x:%04x) and the emulated\n"
		"board $FPGACOMM_DEVICE names, else \"emu:\".\n"
		"\n"
		"  -d, --device NAME  describe only this board (repeatable), e.g.\n"
		"                     /dev/fpgacomm0, emu:, emu:CLUSTER/N\n"
		"      --no-emu       do not open the emulated board\n"
		"      --json         print one JSON document (an array of boards)\n"
		"  -h, --help         show this help\n"
		"\n"
		"Exit status: 0 ok, 1 a board could not be opened, 2 bad usage.\n",
		prog, FC_PCI_VENDOR_ID, FC_PCI_DEVICE_ID);
}

static struct board *board_add(struct board_list *l)
{
	struct board *b;

	if (l->n == l->cap) {
		unsigned int cap = l->cap ? 2 * l->cap : 8;

		b = realloc(l->b, cap * sizeof(*b));
		if (!b) {
			fprintf(stderr, "%s: out of memory\n", prog);
			exit(1);
		}
		l->b = b;
		l->cap = cap;
	}
	b = &l->b[l->n++];
	memset(b, 0, sizeof(*b));
	b->pci_numa = -1;
	return b;
}

/* ---- PCI ---- */

/*
 * libpci reports fatal errors through a callback that must not return; the
 * scan is optional here (containers often lack /sys/bus/pci), so jump back
 * and carry on with the other boards.
 */
static jmp_buf pci_bail;
static char pci_errmsg[256];

static void __attribute__((noreturn, format(printf, 1, 2)))
pci_error_cb(char *msg, ...)
{
	va_list ap;

	va_start(ap, msg);
	vsnprintf(pci_errmsg, sizeof(pci_errmsg), msg, ap);
	va_end(ap);
	longjmp(pci_bail, 1);
}

static void __attribute__((format(printf, 1, 2))) pci_quiet_cb(char *msg, ...)
{
}

static int sysfs_read_int(const char *slot, const char *file, int *val)
{
	char path[256];
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/%s", slot, file);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	ret = fscanf(f, "%d", val) == 1 ? 0 : -EIO;
	fclose(f);
	return ret;
}

/*
 * The driver creates its character device as a child of the PCI device, so
 * sysfs holds .../SLOT/<class>/fpgacommN whatever the class is called.
 */
static void find_devnode(struct board *b)
{
	char pattern[256];
	glob_t g;

	snprintf(pattern, sizeof(pattern),
		 "/sys/bus/pci/devices/%s/*/fpgacomm[0-9]*", b->slot);
	if (glob(pattern, 0, NULL, &g) != 0)
		return;
	snprintf(b->name, sizeof(b->name), "/dev/%s",
		 strrchr(g.gl_pathv[0], '/') + 1);
	globfree(&g);
}

static void fill_bars(struct board *b, struct pci_dev *d, int known)
{
	for (int i = 0; i < PCI_NUM_BARS; i++) {
		pciaddr_t base = d->base_addr[i];
		struct bar *bar;

		/* The upper half of a 64-bit BAR shows up as an empty slot. */
		if (!d->size[i] && !(base & ~(pciaddr_t)PCI_ADDR_FLAG_MASK))
			continue;
		bar = &b->bars[b->nbars++];
		bar->index = i;
		bar->size = d->size[i];
		bar->io = base & PCI_BASE_ADDRESS_SPACE_IO;
		if (known & PCI_FILL_IO_FLAGS) {
			/* The kernel's resource flags, when libpci has them. */
			bar->io = d->flags[i] & PCI_IORESOURCE_IO;
			bar->mem64 = d->flags[i] & PCI_IORESOURCE_MEM_64;
			bar->prefetch = d->flags[i] & PCI_IORESOURCE_PREFETCH;
		}
		if (bar->io) {
			bar->addr = base & PCI_ADDR_IO_MASK;
		} else {
			bar->addr = base & PCI_ADDR_MEM_MASK;
			bar->mem64 |= (base & PCI_BASE_ADDRESS_MEM_TYPE_MASK) ==
				      PCI_BASE_ADDRESS_MEM_TYPE_64;
			bar->prefetch |= base & PCI_BASE_ADDRESS_MEM_PREFETCH;
		}
	}
}

static void add_pci_dev(struct board_list *l, struct pci_dev *d)
{
	struct board *b = board_add(l);
	int known;
	char *drv;

	b->on_pci = true;
	b->vendor = d->vendor_id;
	b->device = d->device_id;
	snprintf(b->slot, sizeof(b->slot), "%04x:%02x:%02x.%d", d->domain,
		 d->bus, d->dev, d->func);

	known = pci_fill_info(d, PCI_FILL_BASES | PCI_FILL_SIZES |
					 PCI_FILL_IO_FLAGS |
					 PCI_FILL_NUMA_NODE | PCI_FILL_DRIVER);
	if (known & PCI_FILL_NUMA_NODE)
		b->pci_numa = d->numa_node;
	else if (sysfs_read_int(b->slot, "numa_node", &b->pci_numa))
		b->pci_numa = -1;

	drv = (known & PCI_FILL_DRIVER) ?
		      pci_get_string_property(d, PCI_FILL_DRIVER) :
		      NULL;
	snprintf(b->driver, sizeof(b->driver), "%s", drv ? drv : "");

	fill_bars(b, d, known);
	find_devnode(b);
}

/*
 * Boards are the devices with our IDs, plus any device the driver has
 * claimed under other IDs (an ivshmem device in a test VM).
 */
static bool is_board(struct pci_dev *d)
{
	char pattern[128];
	glob_t g;
	bool found;

	if (d->vendor_id == FC_PCI_VENDOR_ID &&
	    d->device_id == FC_PCI_DEVICE_ID)
		return true;
	if (d->vendor_id != FC_IVSHMEM_VENDOR_ID ||
	    d->device_id != FC_IVSHMEM_DEVICE_ID)
		return false;
	snprintf(pattern, sizeof(pattern),
		 "/sys/bus/pci/devices/%04x:%02x:%02x.%d/*/fpgacomm[0-9]*",
		 d->domain, d->bus, d->dev, d->func);
	found = glob(pattern, 0, NULL, &g) == 0;
	if (found)
		globfree(&g);
	return found;
}

/* RETURN VALUE: number of boards found, or -1 when the bus can't be read. */
static int scan_pci(struct board_list *l)
{
	struct pci_access *pacc;
	struct pci_dev *d;
	volatile int found = 0;

	pacc = pci_alloc();
	if (!pacc) {
		snprintf(pci_errmsg, sizeof(pci_errmsg), "out of memory");
		return -1;
	}
	pacc->error = pci_error_cb;
	pacc->warning = pci_quiet_cb;
	if (setjmp(pci_bail)) {
		/* pci_cleanup() could call back into the jump; leak instead. */
		return -1;
	}
	pci_init(pacc);
	pci_scan_bus(pacc);
	for (d = pacc->devices; d; d = d->next) {
		pci_fill_info(d, PCI_FILL_IDENT);
		if (is_board(d)) {
			add_pci_dev(l, d);
			found++;
		}
	}
	pci_cleanup(pacc);
	return found;
}

/* Character devices of the driver that no PCI device above accounts for. */
static void scan_devnodes(struct board_list *l)
{
	glob_t g;

	if (glob("/dev/fpgacomm[0-9]*", 0, NULL, &g) != 0)
		return;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		bool known = false;

		for (unsigned int j = 0; j < l->n; j++)
			if (!strcmp(l->b[j].name, g.gl_pathv[i]))
				known = true;
		if (!known)
			snprintf(board_add(l)->name, sizeof(l->b[0].name), "%s",
				 g.gl_pathv[i]);
	}
	globfree(&g);
}

/* ---- Opening ---- */

/* RETURN VALUE: 0, or the error of fc_open()/fc_query(). */
static int open_board(struct board *b)
{
	struct fc_dev *dev;
	int ret;

	ret = fc_open(&dev, b->name);
	if (ret)
		goto out;
	ret = fc_query(dev, &b->info);
	fc_close(dev);
out:
	b->err = ret;
	b->opened = !ret;
	return ret;
}

/* ---- Formatting ---- */

static const struct {
	uint32_t bit;
	const char *name;
} cap_names[] = {
	{ FC_CAP_DMA, "dma" },
	{ FC_CAP_BOARD_MEM, "board-mem" },
	{ FC_CAP_ROUTER, "router" },
	{ FC_CAP_CHANNELS, "channels" },
	{ FC_CAP_FABRIC_DMA, "fabric-dma" },
	{ FC_CAP_HBM_STREAMS, "hbm-streams" },
	{ FC_CAP_PEER_MAP, "peer-map" },
	{ FC_CAP_CHAN_EVENTS, "chan-events" },
	{ FC_CAP_PIO_SEND, "pio-send" },
	{ FC_CAP_CHAN_SEEN, "chan-seen" },
	{ FC_CAP_EVENT_QUEUE, "event-queue" },
	{ FC_CAP_EMULATED, "emulated" },
};

/* Name of capability bit @bit, or "bitN" for one this tool doesn't know. */
static const char *cap_name(unsigned int bit, char *buf, size_t len)
{
	for (size_t i = 0; i < sizeof(cap_names) / sizeof(cap_names[0]); i++)
		if (cap_names[i].bit == 1u << bit)
			return cap_names[i].name;
	snprintf(buf, len, "bit%u", bit);
	return buf;
}

/* The ID register spelled as its four ASCII characters, when printable. */
static const char *id_text(uint32_t id, char *buf)
{
	for (int i = 0; i < 4; i++) {
		char c = id >> (24 - 8 * i);

		if (c < 0x20 || c > 0x7e)
			return strcpy(buf, "?");
		buf[i] = c;
	}
	buf[4] = '\0';
	return buf;
}

/* Link port p (1..num_ports) is up when bit p - 1 of LINK_STATE is set. */
static bool port_up(const struct fc_info *in, unsigned int p)
{
	return p >= 1 && p <= 32 && (in->link_state >> (p - 1)) & 1;
}

static void print_info_text(const struct fc_info *in)
{
	char buf[32];

	printf("  %-15s %s\n", "backend", in->backend);
	printf("  %-15s 0x%08x (%s)\n", "ID", in->hw_id,
	       id_text(in->hw_id, buf));
	printf("  %-15s %u.%u\n", "version",
	       FC_HW_VERSION_GET_MAJOR(in->hw_version),
	       FC_HW_VERSION_GET_MINOR(in->hw_version));
	printf("  %-15s 0x%08x", "capabilities", in->caps);
	for (unsigned int i = 0; i < 32; i++)
		if (in->caps & (1u << i))
			printf(" %s", cap_name(i, buf, sizeof(buf)));
	printf("\n");
	printf("  %-15s %u\n", "node id", in->node_id);
	if (in->numa_node >= 0)
		printf("  %-15s %d\n", "NUMA node", in->numa_node);
	else
		printf("  %-15s unknown\n", "NUMA node");
	printf("  %-15s %u\n", "DMA engines", in->dma_engines);
	printf("  %-15s %u", "ports", in->num_ports);
	for (unsigned int p = 1; p <= in->num_ports; p++)
		printf("%s %u %s", p == 1 ? ":" : ",", p,
		       port_up(in, p) ? "up" : "down");
	printf("\n");
	printf("  %-15s %s\n", "board memory",
	       human_size(in->board_mem_size, 1, buf, sizeof(buf)));
	printf("  %-15s %u descriptors\n", "max chain", in->max_chain);
	printf("  %-15s %s\n", "max transfer",
	       human_size(in->max_xfer_len, 1, buf, sizeof(buf)));
}

/*
 * The driver's view of the board (/sys/class/fpgacomm/NAME/state): ok,
 * resetting, failed, suspended, off or removed. Empty for an emulated
 * board or an older driver.
 */
static const char *board_state(const char *name, char *buf, size_t len)
{
	const char *base = strrchr(name, '/');
	char path[300];
	FILE *f;

	buf[0] = '\0';
	if (!base || strncmp(name, "/dev/", 5))
		return buf;
	snprintf(path, sizeof(path), "/sys/class/fpgacomm/%s/state", base + 1);
	f = fopen(path, "r");
	if (!f)
		return buf;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
	return buf;
}

static void print_pci_text(const struct board *b)
{
	char buf[32];

	printf("PCI %s [%04x:%04x]\n", b->slot, b->vendor, b->device);
	if (b->pci_numa >= 0)
		printf("  %-15s %d\n", "NUMA node", b->pci_numa);
	else
		printf("  %-15s unknown\n", "NUMA node");
	for (int i = 0; i < b->nbars; i++) {
		const struct bar *bar = &b->bars[i];
		char label[8];

		snprintf(label, sizeof(label), "BAR%d", bar->index);
		printf("  %-15s %s 0x%" PRIx64 ", %s%s%s\n", label,
		       bar->io ? "io" : "mem", bar->addr,
		       human_size(bar->size, 1, buf, sizeof(buf)),
		       bar->mem64 ? ", 64-bit" : "",
		       bar->prefetch ? ", prefetchable" : "");
	}
	printf("  %-15s %s\n", "driver", b->driver[0] ? b->driver : "none");
	printf("  %-15s %s\n", "device", b->name[0] ? b->name : "none");
}

static void print_text(const struct board_list *l, int pci_found, bool scanned)
{
	bool sep = false;

	if (scanned && pci_found <= 0) {
		if (pci_found == 0)
			printf("No fpgacomm boards on the PCI bus (%04x:%04x).\n",
			       FC_PCI_VENDOR_ID, FC_PCI_DEVICE_ID);
		else
			printf("PCI bus not scanned: %s\n", pci_errmsg);
		sep = true;
	}

	for (unsigned int i = 0; i < l->n; i++) {
		const struct board *b = &l->b[i];

		if (sep)
			printf("\n");
		sep = true;
		if (b->on_pci)
			print_pci_text(b);
		else if (b->opened && strcmp(b->name, b->info.name))
			printf("%s (opened as %s)\n", b->info.name, b->name);
		else
			printf("%s\n", b->name);
		char state[32];

		if (*board_state(b->name, state, sizeof(state)))
			printf("  %-15s %s\n", "state", state);
		if (b->opened) {
			if (b->on_pci)
				printf("  %-15s %s\n", "name", b->info.name);
			print_info_text(&b->info);
		} else if (b->name[0] && b->err) {
			printf("  %-15s cannot open: %s\n", "error",
			       fc_strerror(b->err));
		}
	}
}

/* ---- JSON ---- */

static void json_pci(const struct board *b)
{
	printf("    \"pci\": {\n      \"slot\": ");
	json_str(b->slot);
	printf(",\n      \"vendor\": \"%04x\",\n      \"device\": \"%04x\",\n",
	       b->vendor, b->device);
	printf("      \"numa_node\": %d,\n      \"driver\": ", b->pci_numa);
	if (b->driver[0])
		json_str(b->driver);
	else
		printf("null");
	printf(",\n      \"bars\": [");
	for (int i = 0; i < b->nbars; i++) {
		const struct bar *bar = &b->bars[i];

		printf("%s\n        { \"bar\": %d, \"type\": \"%s\", "
		       "\"addr\": %" PRIu64 ", \"size\": %" PRIu64
		       ", \"mem64\": %s, \"prefetchable\": %s }",
		       i ? "," : "", bar->index, bar->io ? "io" : "mem",
		       bar->addr, bar->size, bar->mem64 ? "true" : "false",
		       bar->prefetch ? "true" : "false");
	}
	printf("%s]\n    },\n", b->nbars ? "\n      " : "");
}

static void json_info(const struct fc_info *in)
{
	char buf[32];
	bool first = true;

	printf("    \"backend\": ");
	json_str(in->backend);
	printf(",\n    \"id\": %u,\n", in->hw_id);
	printf("    \"version\": \"%u.%u\",\n",
	       FC_HW_VERSION_GET_MAJOR(in->hw_version),
	       FC_HW_VERSION_GET_MINOR(in->hw_version));
	printf("    \"caps\": %u,\n    \"cap_names\": [", in->caps);
	for (unsigned int i = 0; i < 32; i++) {
		if (!(in->caps & (1u << i)))
			continue;
		printf("%s\"%s\"", first ? "" : ", ",
		       cap_name(i, buf, sizeof(buf)));
		first = false;
	}
	printf("],\n");
	printf("    \"node_id\": %u,\n", in->node_id);
	printf("    \"numa_node\": %d,\n", in->numa_node);
	printf("    \"dma_engines\": %u,\n", in->dma_engines);
	printf("    \"num_ports\": %u,\n", in->num_ports);
	printf("    \"link_state\": %u,\n    \"ports\": [", in->link_state);
	for (unsigned int p = 1; p <= in->num_ports; p++)
		printf("%s{ \"port\": %u, \"up\": %s }", p > 1 ? ", " : "", p,
		       port_up(in, p) ? "true" : "false");
	printf("],\n");
	printf("    \"board_mem_size\": %" PRIu64 ",\n", in->board_mem_size);
	printf("    \"max_chain\": %u,\n", in->max_chain);
	printf("    \"max_xfer_len\": %" PRIu64 ",\n", in->max_xfer_len);
}

/* "state": the driver's, where it says (board_state()). */
static void json_state(const struct board *b)
{
	char state[32];

	if (!*board_state(b->name, state, sizeof(state)))
		return;
	printf("    \"state\": ");
	json_str(state);
	printf(",\n");
}

static void print_json(const struct board_list *l)
{
	printf("[");
	for (unsigned int i = 0; i < l->n; i++) {
		const struct board *b = &l->b[i];

		printf("%s\n  {\n", i ? "," : "");
		if (b->on_pci)
			json_pci(b);
		printf("    \"name\": ");
		if (b->opened)
			json_str(b->info.name);
		else if (b->name[0])
			json_str(b->name);
		else
			printf("null");
		printf(",\n");
		json_state(b);
		if (b->opened)
			json_info(&b->info);
		printf("    \"opened\": %s", b->opened ? "true" : "false");
		if (b->name[0] && b->err) {
			printf(",\n    \"error\": ");
			json_str(fc_strerror(b->err));
		}
		printf("\n  }");
	}
	printf("%s]\n", l->n ? "\n" : "");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "no-emu", no_argument, NULL, 'E' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct board_list l = { 0 };
	bool json = false, emu = true, named = false;
	int pci_found = 0, failed = 0, c;

	while ((c = getopt_long(argc, argv, "d:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			if (!*optarg || strlen(optarg) >= sizeof(l.b[0].name))
				usage_error("bad board name '%s'", optarg);
			snprintf(board_add(&l)->name, sizeof(l.b[0].name), "%s",
				 optarg);
			named = true;
			break;
		case 'E':
			emu = false;
			break;
		case 'j':
			json = true;
			break;
		default:
			other_option(c, usage);
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);

	/* Named boards replace the default list: show only what was asked. */
	if (!named) {
		pci_found = scan_pci(&l);
		scan_devnodes(&l);
		/* An emulated board: the one this process was given, if any. */
		const char *env = getenv("FPGACOMM_DEVICE");

		if (emu)
			snprintf(board_add(&l)->name, sizeof(l.b[0].name), "%s",
				 env && !strncmp(env, "emu:", 4) ? env :
								   "emu:");
	}

	for (unsigned int i = 0; i < l.n; i++) {
		struct board *b = &l.b[i];

		if (!b->name[0] || !open_board(b))
			continue;
		fprintf(stderr, "%s: cannot open %s: %s\n", prog, b->name,
			fc_strerror(b->err));
		failed++;
	}

	if (json)
		print_json(&l);
	else
		print_text(&l, pci_found, !named);
	free(l.b);
	return failed ? 1 : 0;
}
