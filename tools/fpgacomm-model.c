// SPDX-License-Identifier: MIT
/*
 * fpgacomm-model: the timing model's arithmetic from the command line
 * (docs/model.md), for make model's analytic rows and for a look at a
 * profile: what a profile says, and what one step costs on its machine.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "tool_util.h"

const char *const prog = "fpgacomm-model";

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [-p PROFILE] COMMAND [ARGS]\n"
		"The timing model's arithmetic (docs/model.md). PROFILE is a name in\n"
		"model/profiles (circus, peach2, hbm2, optweb, coe) or a file.\n"
		"\n"
		"Commands (times in ns, rates in GB/s unless said):\n"
		"  show                     the profile's derived figures\n"
		"  msg BYTES HOPS           one message, program to program (ns)\n"
		"  link                     a link's payload rate (Gb/s)\n"
		"  pcie                     PCIe payload rate after TLP overheads\n"
		"  chain D BYTES w|r        a chain of D descriptors: GB/s\n"
		"  stream BYTES CHUNK S     HBM: BYTES over every channel in CHUNK\n"
		"                           chunks with S streams per LS, in place:\n"
		"                           GB/s of bytes read and written\n"
		"  sort NODES A MHZ B M     the sort: N * min(W*M*C/A, B/m), GB/s;\n"
		"                           C = MHZ, node bandwidth B GB/s, m = M\n"
		"\n"
		"Options:\n"
		"  -p, --profile P  the machine (default circus)\n"
		"  -h, --help       show this help\n",
		prog);
}

static double num(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || v < 0)
		usage_error("bad number '%s'", s);
	return v;
}

static void need(int argc, int n)
{
	if (argc != n)
		usage_error("wrong number of arguments");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "profile", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *spec = "circus", *cmd;
	struct fcm_profile p;
	char err[512];
	int c, ret;

	while ((c = getopt_long(argc, argv, "+p:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			spec = optarg;
			break;
		default:
			other_option(c, usage);
		}
	}
	if (optind >= argc)
		usage_error("no command");
	ret = fcm_profile_load(&p, spec, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 1;
	}
	cmd = argv[optind];
	argc -= optind + 1;
	argv += optind + 1;
	if (!strcmp(cmd, "show")) {
		need(argc, 0);
		printf("profile %s\n", p.name);
		printf("link payload      %10.3f Gb/s\n",
		       fcm_link_payload_gbps(&p));
		printf("packet on a link  %10.4f ns\n", fcm_pkt_ns(&p));
		printf("router            %10.4f ns\n", fcm_router_ns(&p));
		printf("credit loop       %10.4f ns (%u credits for full rate; "
		       "link_credits ",
		       fcm_credit_loop_ns(&p), fcm_credits_full_rate(&p));
		if (p.link_credits > 0)
			printf("%g)\n", p.link_credits);
		else
			printf("unbounded)\n");
		printf("PCIe payload      %10.4f GB/s\n", fcm_pcie_gbs(&p));
		printf("HBM peak          %10.2f GB/s\n", fcm_hbm_peak_gbs(&p));
		printf("LS kernel         %10.2f GB/s\n", fcm_ls_gbs(&p));
	} else if (!strcmp(cmd, "msg")) {
		need(argc, 2);
		printf("%.4f\n", fcm_msg_ns(&p, (uint64_t)num(argv[0]),
					    (unsigned int)num(argv[1])));
	} else if (!strcmp(cmd, "link")) {
		need(argc, 0);
		printf("%.4f\n", fcm_link_payload_gbps(&p));
	} else if (!strcmp(cmd, "pcie")) {
		need(argc, 0);
		printf("%.4f\n", fcm_pcie_gbs(&p));
	} else if (!strcmp(cmd, "chain")) {
		unsigned int d;
		uint64_t b;

		need(argc, 3);
		d = (unsigned int)num(argv[0]);
		b = (uint64_t)num(argv[1]);
		if (!d || strlen(argv[2]) != 1 || !strchr("wr", argv[2][0]))
			usage_error("chain D BYTES w|r");
		printf("%.4f\n",
		       (double)d * b /
			       fcm_chain_ns(&p, d, b, argv[2][0] == 'w'));
	} else if (!strcmp(cmd, "stream")) {
		uint64_t bytes, chunk, per;
		unsigned int s;

		need(argc, 3);
		bytes = (uint64_t)num(argv[0]);
		chunk = (uint64_t)num(argv[1]);
		s = (unsigned int)num(argv[2]);
		if (!chunk || !(p.hbm_channels > 0) || s < 1 || s > 2)
			usage_error(
				"stream BYTES CHUNK 1|2, on a profile with HBM");
		per = bytes / (uint64_t)p.hbm_channels / chunk;
		/* each LS reads and writes its part: bytes moved both ways */
		printf("%.4f\n",
		       2.0 * bytes / fcm_stream_ns(&p, per, chunk, s, true));
	} else if (!strcmp(cmd, "sort")) {
		need(argc, 5);
		p.sort_mhz = num(argv[2]);
		p.sort_node_gbs = num(argv[3]);
		printf("%.4f\n", fcm_sort_gbs(&p, (unsigned int)num(argv[0]),
					      (unsigned int)num(argv[1]),
					      (unsigned int)num(argv[4])));
	} else {
		usage_error("unknown command '%s'", cmd);
	}
	return 0;
}
