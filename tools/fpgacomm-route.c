// SPDX-License-Identifier: MIT
/*
 * fpgacomm-route: the routing tables of a fabric topology (docs/fabric.md):
 * show them, count hops, write them out as text, and load one board's table
 * into its router registers.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fpgacomm/fpgacomm.h>
#include <fpgacomm/hw.h>

#include "topology.h" /* topo/: the routing tables it prints and loads */
#include "tool_util.h"

#define LINE_MAX_LEN 256

const char *const prog = "fpgacomm-route";

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s show TOPOLOGY [--node N]\n"
		"       %s hops TOPOLOGY [A B]\n"
		"       %s gen TOPOLOGY\n"
		"       %s load [-d DEV] TABLE_FILE|TOPOLOGY\n"
		"Routing tables of an fpgacomm fabric: dimension order (X, then Y),\n"
		"the shorter way round a ring (ties going +), DATELINE on the\n"
		"wrap-around hop (docs/fabric.md).\n"
		"\n"
		"Commands:\n"
		"  show    every node's table (or node N's): per destination the\n"
		"          output port, the node it leads to, flags and hops\n"
		"  hops    link hops between every pair (matrix), or from A to B\n"
		"  gen     every table as lines \"NODE DST PORT FLAGS\", FLAGS being\n"
		"          valid or valid,dateline (the input of load)\n"
		"  load    write the board's routing table (FC_ROUTE_TABLE): the\n"
		"          lines of TABLE_FILE (\"-\" for stdin) for the board's\n"
		"          node, or its table in TOPOLOGY. Every one of the %u\n"
		"          entries is written; those not given become invalid.\n"
		"          From a TOPOLOGY, also the world the board reports\n"
		"          (FC_ROUTER_FABRIC_NODES, FC_ROUTER_FABRIC_TOPO).\n"
		"          Needs a board with a router: a real one, or a board of\n"
		"          an emulated cluster (emu:CLUSTER/N).\n"
		"\n"
		"TOPOLOGY: ring:N, mesh:XxY, torus:XxY (node = y*X + x, at most %u\n"
		"nodes) or full:N (N <= %u). An argument that parses as a topology\n"
		"is one; write ./ring:4 for a file of that name.\n"
		"In a TABLE_FILE, # starts a comment; FLAGS is a comma list of\n"
		"valid and dateline, or - for an invalid entry.\n"
		"\n"
		"Options:\n"
		"  -n, --node N       show: only node N's table\n"
		"  -d, --device DEV   load: board to use (default: $FPGACOMM_DEVICE,\n"
		"                     /dev/fpgacomm0, else emu:)\n"
		"  -h, --help         show this help\n"
		"\n"
		"Exit status: 0 ok, 1 error from the board or library, 2 bad usage\n"
		"or a bad table.\n",
		prog, prog, prog, prog, FC_MAX_NODES, FC_MAX_NODES,
		FC_MAX_PORTS + 1);
}

static void parse_topology(const char *s, struct fc_topology *t)
{
	if (fc_topo_parse(s, t))
		usage_error("bad topology '%s': expected ring:N, mesh:XxY, "
			    "torus:XxY (at most %u nodes) or full:N (N <= %u)",
			    s, FC_MAX_NODES, FC_MAX_PORTS + 1);
}

static unsigned int parse_node(const char *what, const char *s,
			       const struct fc_topology *t)
{
	uint64_t v;

	if (parse_u64(s, &v))
		usage_error("bad %s '%s': expected a node number", what, s);
	if (v >= t->nodes)
		usage_error("%s %s is not a node of the topology (0..%u)", what,
			    s, t->nodes - 1);
	return v;
}

static const char *flags_str(uint32_t e)
{
	if (!(e & FC_ROUTE_VALID))
		return "-";
	return e & FC_ROUTE_DATELINE ? "valid,dateline" : "valid";
}

/* ---- show ---- */

static void show_node(const struct fc_topology *t, unsigned int node)
{
	unsigned int ports = fc_topo_ports(t), p, peer, pp;

	printf("node %u", node);
	if (t->kind == FC_TOPOLOGY_MESH || t->kind == FC_TOPOLOGY_TORUS)
		printf(" (x=%u, y=%u)", node % t->nx, node / t->nx);
	printf("\n  links:");
	for (p = 1; p <= ports; p++) {
		if (fc_topo_peer(t, node, p, &peer, &pp))
			printf(" %u:-", p);
		else
			printf(" %u:%u", p, peer);
	}
	if (!ports)
		printf(" none");
	printf("\n  %4s %4s %5s %-15s %4s\n", "DST", "PORT", "NEXT", "FLAGS",
	       "HOPS");
	for (unsigned int d = 0; d < t->nodes; d++) {
		uint32_t e = fc_topo_route(t, node, d);
		unsigned int port = e & FC_ROUTE_PORT_MASK;
		char next[16] = "local";

		if (port && !fc_topo_peer(t, node, port, &peer, &pp))
			snprintf(next, sizeof(next), "%u", peer);
		printf("  %4u %4u %5s %-15s %4u\n", d, port, next, flags_str(e),
		       fc_topo_hops(t, node, d));
	}
}

static int cmd_show(const struct fc_topology *t, const char *spec,
		    const char *node_arg)
{
	unsigned int ports = fc_topo_ports(t);

	if (node_arg) {
		show_node(t, parse_node("node", node_arg, t));
		return 0;
	}
	printf("%s: %u node%s, %u link port%s each\n", spec, t->nodes,
	       t->nodes == 1 ? "" : "s", ports, ports == 1 ? "" : "s");
	for (unsigned int n = 0; n < t->nodes; n++) {
		printf("\n");
		show_node(t, n);
	}
	return 0;
}

/* ---- hops ---- */

static int cmd_hops(const struct fc_topology *t, int argc, char **argv)
{
	unsigned int worst = 0, a, b, h;
	uint64_t sum = 0;

	if (argc == 2) {
		a = parse_node("node A", argv[0], t);
		b = parse_node("node B", argv[1], t);
		printf("%u\n", fc_topo_hops(t, a, b));
		return 0;
	}
	if (argc)
		usage_error("'hops' takes a topology and either no node or two "
			    "(A B)");
	printf("%4s", "");
	for (b = 0; b < t->nodes; b++)
		printf(" %2u", b);
	printf("\n");
	for (a = 0; a < t->nodes; a++) {
		printf("%3u:", a);
		for (b = 0; b < t->nodes; b++) {
			h = fc_topo_hops(t, a, b);
			printf(" %2u", h);
			sum += h;
			if (h > worst)
				worst = h;
		}
		printf("\n");
	}
	/* the mean over distinct pairs: what a random message travels */
	printf("diameter %u, mean %.2f hops\n", worst,
	       t->nodes > 1 ? (double)sum / (t->nodes * (t->nodes - 1.0)) : 0);
	return 0;
}

/* ---- gen ---- */

static int cmd_gen(const struct fc_topology *t, const char *spec)
{
	printf("# fpgacomm-route gen %s\n# node dst port flags\n", spec);
	for (unsigned int n = 0; n < t->nodes; n++)
		for (unsigned int d = 0; d < t->nodes; d++) {
			uint32_t e = fc_topo_route(t, n, d);

			printf("%u %u %u %s\n", n, d, e & FC_ROUTE_PORT_MASK,
			       flags_str(e));
		}
	return 0;
}

/* ---- load ---- */

static void __attribute__((noreturn, format(printf, 3, 4)))
table_error(const char *file, unsigned int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: %s:%u: ", prog, file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(EXIT_USAGE);
}

/* FLAGS of a table line. RETURN VALUE: 0, or -EINVAL. */
static int parse_flags(char *s, uint32_t *flags)
{
	char *tok, *save;

	*flags = 0;
	if (!strcmp(s, "-"))
		return 0;
	for (tok = strtok_r(s, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "valid"))
			*flags |= FC_ROUTE_VALID;
		else if (!strcmp(tok, "dateline"))
			*flags |= FC_ROUTE_DATELINE;
		else
			return -EINVAL;
	}
	return *flags ? 0 : -EINVAL;
}

/* Every node's table, as a file gives it or a topology defines it. */
struct tables {
	uint32_t entry[FC_MAX_NODES][FC_MAX_NODES];
	unsigned int count[FC_MAX_NODES];    /* entries given per node */
	unsigned int max_port[FC_MAX_NODES]; /* highest port used */
};

/*
 * Read TABLE_FILE whole before the board is opened, so a bad line is
 * reported whichever board it is meant for and nothing is half written.
 */
static void read_table(const char *file, struct tables *tb)
{
	bool seen[FC_MAX_NODES][FC_MAX_NODES];
	char buf[LINE_MAX_LEN], *fields[5], *save, *p;
	unsigned int line = 0, nf;
	uint64_t v[3];
	uint32_t flags;
	FILE *f;

	memset(seen, 0, sizeof(seen));
	f = strcmp(file, "-") ? fopen(file, "r") : stdin;
	if (!f) {
		fprintf(stderr, "%s: cannot read %s: %s\n", prog, file,
			strerror(errno));
		exit(EXIT_USAGE);
	}
	while (fgets(buf, sizeof(buf), f)) {
		line++;
		if (!strchr(buf, '\n') && !feof(f))
			table_error(file, line, "line too long");
		p = strchr(buf, '#');
		if (p)
			*p = '\0';
		nf = 0;
		for (p = strtok_r(buf, " \t\r\n", &save); p && nf < 5;
		     p = strtok_r(NULL, " \t\r\n", &save))
			fields[nf++] = p;
		if (!nf)
			continue;
		if (nf != 4)
			table_error(file, line,
				    "expected \"NODE DST PORT FLAGS\", found "
				    "%s%u fields",
				    nf == 5 ? "more than " : "", nf);
		for (int i = 0; i < 3; i++)
			if (parse_u64(fields[i], &v[i]))
				table_error(file, line, "bad number '%s'",
					    fields[i]);
		if (v[0] >= FC_MAX_NODES || v[1] >= FC_MAX_NODES)
			table_error(file, line, "node numbers go up to %u",
				    FC_MAX_NODES - 1);
		if (v[2] > FC_MAX_PORTS)
			table_error(file, line,
				    "port %" PRIu64 ": ports go up to %u", v[2],
				    FC_MAX_PORTS);
		if (parse_flags(fields[3], &flags))
			table_error(file, line,
				    "bad flags '%s': expected valid, "
				    "valid,dateline or -",
				    fields[3]);
		if (seen[v[0]][v[1]])
			table_error(file, line,
				    "second entry for node %" PRIu64
				    " destination %" PRIu64,
				    v[0], v[1]);
		seen[v[0]][v[1]] = true;
		tb->entry[v[0]][v[1]] = flags | v[2];
		tb->count[v[0]]++;
		if (v[2] > tb->max_port[v[0]])
			tb->max_port[v[0]] = v[2];
	}
	if (ferror(f))
		table_error(file, line, "read error: %s", strerror(errno));
	if (f != stdin)
		fclose(f);
}

static void topology_tables(const struct fc_topology *t, struct tables *tb)
{
	for (unsigned int n = 0; n < t->nodes; n++) {
		for (unsigned int d = 0; d < t->nodes; d++)
			tb->entry[n][d] = fc_topo_route(t, n, d);
		tb->count[n] = t->nodes;
		tb->max_port[n] = fc_topo_ports(t);
	}
}

static int cmd_load(const char *devname, const char *arg)
{
	static struct tables tb;
	struct fc_topology t;
	struct fc_info info;
	struct fc_dev *dev;
	unsigned int node;
	int ret, status = 1;
	uint32_t got;
	bool topo;

	topo = !fc_topo_parse(arg, &t);
	if (topo)
		topology_tables(&t, &tb);
	else
		read_table(arg, &tb);

	ret = fc_open(&dev, devname);
	if (ret) {
		fprintf(stderr, "%s: cannot open %s: %s\n", prog,
			devname ? devname : "the default board",
			fc_strerror(ret));
		return 1;
	}
	ret = fc_query(dev, &info);
	if (ret) {
		fprintf(stderr, "%s: %s: %s\n", prog,
			devname ? devname : "board", fc_strerror(ret));
		goto err_close;
	}
	if (!(info.caps & FC_CAP_ROUTER)) {
		fprintf(stderr,
			"%s: %s has no router (FC_CAP_ROUTER): open a real "
			"board or one of an emulated cluster (emu:CLUSTER/N)\n",
			prog, info.name);
		goto err_close;
	}
	node = info.node_id;
	if (node >= FC_MAX_NODES || !tb.count[node]) {
		fprintf(stderr, "%s: %s has no table for node %u (%s)\n", prog,
			arg, node, info.name);
		status = EXIT_USAGE;
		goto err_close;
	}
	if (tb.max_port[node] > info.num_ports) {
		fprintf(stderr, "%s: %s uses link port %u, %s has %u\n", prog,
			arg, tb.max_port[node], info.name, info.num_ports);
		status = EXIT_USAGE;
		goto err_close;
	}
	/*
	 * Every entry, so that no stale route from an earlier table stays;
	 * read back, as a board is free to ignore a write it does not take.
	 */
	for (unsigned int d = 0; d < FC_MAX_NODES; d++) {
		uint32_t e = tb.entry[node][d];

		ret = fc_reg_write(dev, FC_ROUTE_TABLE(d), e);
		if (!ret)
			ret = fc_reg_read(dev, FC_ROUTE_TABLE(d), &got);
		if (ret) {
			fprintf(stderr, "%s: %s: route entry %u: %s\n", prog,
				info.name, d, fc_strerror(ret));
			goto err_close;
		}
		if (got != e) {
			fprintf(stderr,
				"%s: %s: route entry %u reads 0x%x after "
				"writing 0x%x\n",
				prog, info.name, d, got, e);
			goto err_close;
		}
	}
	/* From a topology, the world as well (hw.h FC_ROUTER_FABRIC_*). */
	if (topo) {
		ret = fc_reg_write(dev, FC_ROUTER_FABRIC_TOPO, fc_topo_reg(&t));
		if (!ret)
			ret = fc_reg_write(dev, FC_ROUTER_FABRIC_NODES,
					   t.nodes);
		if (ret) {
			fprintf(stderr, "%s: %s: fabric registers: %s\n", prog,
				info.name, fc_strerror(ret));
			goto err_close;
		}
	}
	printf("%s: node %u: %u route%s loaded from %s\n", info.name, node,
	       tb.count[node], tb.count[node] == 1 ? "" : "s", arg);
	fc_close(dev);
	return 0;

err_close:
	fc_close(dev);
	return status;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "node", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *devname = NULL, *node_arg = NULL, *cmd;
	struct fc_topology t;
	int c;

	/* options may come anywhere: "show torus:4x4 --node 5" */
	while ((c = getopt_long(argc, argv, "d:n:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			devname = optarg;
			break;
		case 'n':
			node_arg = optarg;
			break;
		default:
			other_option(c, usage);
		}
	}
	argc -= optind;
	argv += optind;
	if (!argc)
		usage_error("no command given (show, hops, gen or load)");
	cmd = argv[0];
	if (strcmp(cmd, "show") && strcmp(cmd, "hops") && strcmp(cmd, "gen") &&
	    strcmp(cmd, "load"))
		usage_error("unknown command '%s' (show, hops, gen or load)",
			    cmd);
	if (node_arg && strcmp(cmd, "show"))
		usage_error("--node goes with 'show'");
	if (devname && strcmp(cmd, "load"))
		usage_error("--device goes with 'load'");
	if (argc < 2)
		usage_error("'%s' needs a %s", cmd,
			    strcmp(cmd, "load") ? "topology" :
						  "table file or topology");

	if (!strcmp(cmd, "load")) {
		if (argc > 2)
			usage_error("'load' takes one table file or topology");
		return cmd_load(devname, argv[1]);
	}
	parse_topology(argv[1], &t);
	if (!strcmp(cmd, "hops"))
		return cmd_hops(&t, argc - 2, argv + 2);
	if (argc > 2)
		usage_error("'%s' takes only a topology", cmd);
	if (!strcmp(cmd, "show"))
		return cmd_show(&t, argv[1], node_arg);
	return cmd_gen(&t, argv[1]);
}
