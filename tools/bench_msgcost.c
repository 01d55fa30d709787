// SPDX-License-Identifier: MIT
/*
 * fpgacomm-bench msgcost: what one small channel message costs the host,
 * with both ends in one process. Two boards of one cluster are opened here
 * and driven by this one thread, so nothing waits on another core and
 * the work per message is the same from run to run: run under valgrind's
 * instruction counter (scripts/bench-msgcost.sh runs it for two
 * iteration counts and divides the difference) it counts the instructions
 * of a message exactly; without valgrind it prints the wall time of a
 * one-way message in this setup, where nothing crosses cores.
 *
 * A ping-pong: board 0 sends SIZE bytes to board 1, which receives them
 * and sends them back; one-way = round trip / 2, as fpgacomm-bench
 * pingpong has it, and with the same calls (fc_chan_send, then
 * fc_chan_recv on the other board). Emulated boards move only while their
 * process is in the library; one thread serves both here, which works
 * because a small send returns once its board has taken the message and
 * the receiving board's progress routes it. With --mode isend every
 * message is instead a posted receive and a send, each tested in turn
 * until both are done (fc_req_test drives its board once).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <fpgacomm/fpgacomm.h>

#include "bench_msgcost.h"
#include "tool_util.h"

#define MC_PORT	     0
#define MC_WARMUP    100
#define MC_TIMEOUT_S 60
#define MC_NAME_MAX  128
#define MC_SIZE_MAX  (16u << 20)

static void msgcost_usage(FILE *f)
{
	fprintf(f,
		"Usage: %s msgcost [options]\n"
		"Ping-pong of small channel messages between two boards of one\n"
		"cluster, both driven by this one process and thread: the\n"
		"host's cost of a message with nothing crossing cores. Prints\n"
		"the one-way time (round trip / 2) in microseconds, as\n"
		"\"SIZE US\". Under valgrind --tool=callgrind, run with two\n"
		"iteration counts, the difference is the instructions of the\n"
		"extra messages (scripts/bench-msgcost.sh does that).\n"
		"Run it as rank 0 of a cluster of 2 (fpgacomm-run -n 2); other\n"
		"ranks exit at once, taking no part.\n"
		"\n"
		"Options:\n"
		"  -s, --size SIZE    message size (default 8, at most 16M;\n"
		"                     a rendezvous size needs -m isend: one\n"
		"                     thread cannot block in a send its own\n"
		"                     receive has to clear)\n"
		"  -i, --iters N      ping-pongs timed (default 10000), after %u\n"
		"                     untimed ones\n"
		"  -m, --mode M       send: fc_chan_send and fc_chan_recv, as\n"
		"                     fpgacomm-bench pingpong (default); isend:\n"
		"                     fc_chan_irecv, fc_chan_isend, fc_req_test\n"
		"  -d, --devices A,B  the two boards (default emu:CLUSTER/0 and\n"
		"                     emu:CLUSTER/1, CLUSTER from $FPGACOMM_CLUSTER)\n"
		"  -h, --help         show this help\n",
		prog, MC_WARMUP);
}

static void __attribute__((noreturn)) mc_die(const char *what, int err)
{
	fprintf(stderr, "%s msgcost: %s: %s\n", prog, what, fc_strerror(err));
	exit(1);
}

/* One message from @tx to @rx, into @in, as the ping-pong sends it. */
static void one_way_send(struct fc_chan *tx, struct fc_chan *rx,
			 const char *out, char *in, size_t size)
{
	size_t len = 0;
	int ret;

	ret = fc_chan_send(tx, out, size, MC_TIMEOUT_S * 1000);
	if (ret)
		mc_die("send", ret);
	ret = fc_chan_recv(rx, in, size, &len, MC_TIMEOUT_S * 1000);
	if (ret)
		mc_die("receive", ret);
	if (len != size)
		mc_die("receive length", -EBADMSG);
}

/*
 * The same as a posted receive and a send, each tested (one step of its
 * board) until both are done.
 */
static void one_way_isend(struct fc_chan *tx, struct fc_chan *rx,
			  const char *out, char *in, size_t size)
{
	int rs = -EINPROGRESS, rr = -EINPROGRESS, ret;
	struct fc_req *s, *r;
	unsigned long spins = 0;
	time_t deadline = 0;
	size_t len = 0;

	ret = fc_chan_irecv(rx, in, size, &r);
	if (ret)
		mc_die("irecv", ret);
	ret = fc_chan_isend(tx, out, size, &s);
	if (ret)
		mc_die("isend", ret);
	while (rs == -EINPROGRESS || rr == -EINPROGRESS) {
		if (rs == -EINPROGRESS)
			rs = fc_req_test(s, NULL);
		if (rr == -EINPROGRESS)
			rr = fc_req_test(r, &len);
		/* a lost message must not spin forever: look at the clock
		 * only now and then, so that it does not count per message */
		if (++spins % 100000 == 0) {
			if (!deadline)
				deadline = time(NULL) + MC_TIMEOUT_S;
			else if (time(NULL) > deadline)
				mc_die("message", -ETIMEDOUT);
		}
	}
	if (rs)
		mc_die("send", rs);
	if (rr)
		mc_die("receive", rr);
	if (len != size)
		mc_die("receive length", -EBADMSG);
}

typedef void one_way_fn(struct fc_chan *tx, struct fc_chan *rx, const char *out,
			char *in, size_t size);

static void pingpongs(one_way_fn *one_way, struct fc_chan *ab,
		      struct fc_chan *ba, char *buf_a, char *buf_b, size_t size,
		      unsigned int iters)
{
	for (unsigned int i = 0; i < iters; i++) {
		buf_a[0] = (char)i;
		one_way(ab, ba, buf_a, buf_b, size);
		one_way(ba, ab, buf_b, buf_a, size);
		if (buf_a[0] != (char)i)
			mc_die("data", -EBADMSG);
	}
}

/* "A,B" into @a and @b. RETURN VALUE: 0, or -1 when it is not two names. */
static int split_pair(const char *s, char *a, char *b)
{
	const char *comma = strchr(s, ',');

	if (!comma || comma == s || !comma[1] || strchr(comma + 1, ',') ||
	    (size_t)(comma - s) >= MC_NAME_MAX ||
	    strlen(comma + 1) >= MC_NAME_MAX)
		return -1;
	memcpy(a, s, (size_t)(comma - s));
	a[comma - s] = '\0';
	strcpy(b, comma + 1);
	return 0;
}

/* What the command line asks for. */
struct mc_args {
	char name[2][MC_NAME_MAX];
	unsigned int iters;
	uint64_t size;
	one_way_fn *one_way;
};

static void mc_parse_args(int argc, char **argv, struct mc_args *a)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'i' },
		{ "devices", required_argument, NULL, 'd' },
		{ "mode", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cluster;
	bool named = false;
	uint64_t v;
	int c, i;

	a->iters = 10000;
	a->size = 8;
	a->one_way = one_way_send;
	optind = 2;
	while ((c = getopt_long(argc, argv, "s:i:d:m:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (parse_size(optarg, &a->size, "KM", true) ||
			    !a->size || a->size > MC_SIZE_MAX)
				usage_error("bad size '%s' (1..16M)", optarg);
			break;
		case 'i':
			if (parse_u64(optarg, &v) || !v || v > 100000000)
				usage_error("bad iteration count '%s'", optarg);
			a->iters = (unsigned int)v;
			break;
		case 'd':
			if (split_pair(optarg, a->name[0], a->name[1]))
				usage_error("-d takes two boards: A,B");
			named = true;
			break;
		case 'm':
			if (!strcmp(optarg, "send"))
				a->one_way = one_way_send;
			else if (!strcmp(optarg, "isend"))
				a->one_way = one_way_isend;
			else
				usage_error("bad mode '%s' (send or isend)",
					    optarg);
			break;
		default:
			other_option(c, msgcost_usage);
		}
	}
	if (optind != argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	if (a->one_way == one_way_send && a->size >= FC_CHAN_RNDV_MIN)
		usage_error("%llu bytes go by rendezvous: use -m isend",
			    (unsigned long long)a->size);
	if (named)
		return;
	cluster = getenv("FPGACOMM_CLUSTER");
	if (!cluster || !*cluster)
		usage_error("no -d and no $FPGACOMM_CLUSTER: run it as "
			    "fpgacomm-run -n 2 -- %s msgcost",
			    prog);
	for (i = 0; i < 2; i++)
		if (snprintf(a->name[i], MC_NAME_MAX, "emu:%s/%d", cluster,
			     i) >= MC_NAME_MAX)
			usage_error("cluster name too long");
}

/* Both boards, a buffer each and a channel between them. */
static void mc_open_pair(const struct mc_args *a, struct fc_dev *dev[2],
			 struct fc_chan *ch[2], char *buf[2])
{
	struct fc_world w[2];
	int i, ret;

	for (i = 0; i < 2; i++) {
		ret = fc_open(&dev[i], a->name[i]);
		if (ret)
			mc_die(a->name[i], ret);
		ret = fc_world_query(dev[i], &w[i]);
		if (ret)
			mc_die("world", ret);
		buf[i] = calloc(1, a->size);
		if (!buf[i])
			mc_die("buffer", -ENOMEM);
	}
	if (w[0].rank == w[1].rank)
		usage_error("%s and %s are the same rank", a->name[0],
			    a->name[1]);
	for (i = 0; i < 2; i++) {
		ret = fc_chan_open(dev[i], w[!i].rank, MC_PORT, 0, &ch[i]);
		if (ret)
			mc_die("channel", ret);
	}
}

int bench_msgcost_main(int argc, char **argv)
{
	struct fc_chan *ch[2];
	struct fc_dev *dev[2];
	struct mc_args a;
	const char *rank;
	char *buf[2];
	double t0, dt;
	int i;

	mc_parse_args(argc, argv, &a);
	rank = getenv("FPGACOMM_RANK");
	if (rank && strcmp(rank, "0"))
		return 0; /* rank 0 drives both boards */
	mc_open_pair(&a, dev, ch, buf);

	printf("# %s msgcost: %s <-> %s in one thread, %llu B, %u ping-pongs, "
	       "%s\n",
	       prog, a.name[0], a.name[1], (unsigned long long)a.size, a.iters,
	       a.one_way == one_way_send ? "fc_chan_send/recv" :
					   "fc_chan_isend/irecv");
	printf("# %-10s %18s\n", "Size", "Latency (us)");
	pingpongs(a.one_way, ch[0], ch[1], buf[0], buf[1], a.size, MC_WARMUP);
	t0 = tool_now_us();
	pingpongs(a.one_way, ch[0], ch[1], buf[0], buf[1], a.size, a.iters);
	dt = tool_now_us() - t0;
	printf("%-12llu %18.3f\n", (unsigned long long)a.size,
	       dt / (2.0 * a.iters));

	for (i = 0; i < 2; i++)
		fc_chan_close(ch[i]);
	for (i = 0; i < 2; i++) {
		fc_close(dev[i]);
		free(buf[i]);
	}
	return 0;
}
