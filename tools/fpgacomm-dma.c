// SPDX-License-Identifier: MIT
/*
 * fpgacomm-dma: move a buffer to board memory and back with chaining DMA,
 * check it arrived intact, and report throughput and doorbells per chain.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <fpgacomm/fpgacomm.h>
#include <fpgacomm/hw.h>

#include "tool_util.h"

enum {
	DIR_H2B = 1,
	DIR_B2H = 2,
	DIR_BOTH = 3
};

struct opts {
	const char *dev;
	uint64_t size;
	unsigned int count;
	unsigned long iters;
	int dir;
	bool verify;
	bool json;
	bool memcpy;
	uint64_t board_addr;
	int timeout_ms;
};

/* One direction's (or memcpy's) measurement. */
struct result {
	bool done;
	double secs;
	double bytes;	    /* may pass 2^64 on a long run */
	uint32_t doorbells; /* accepted during the timed chains */
	double sim_secs;    /* simulated time (docs/model.md), < 0: no model */
};

const char *const prog = "fpgacomm-dma";

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [-d DEV] [-s SIZE] [-n COUNT] [-i ITERATIONS]\n"
		"       [--dir h2b|b2h|both] [--verify|--no-verify] [--board-addr ADDR]\n"
		"       [--memcpy] [--timeout MS] [--json]\n"
		"Move SIZE x COUNT bytes host->board and board->host as chains of COUNT\n"
		"transfers (one doorbell each), verify the round trip, print GB/s.\n"
		"\n"
		"  -d, --device DEV      board to use (default: $FPGACOMM_DEVICE,\n"
		"                        /dev/fpgacomm0, else emu:)\n"
		"  -s, --size SIZE       bytes per transfer, suffix K/M/G (default 1M)\n"
		"  -n, --count COUNT     transfers per chain, 1..%d (default 1)\n"
		"  -i, --iterations N    timed chains per direction (default 10);\n"
		"                        one more untimed chain warms up first\n"
		"      --dir DIR         h2b, b2h or both (default both)\n"
		"      --verify          compare the data read back (default)\n"
		"      --no-verify       do not compare\n"
		"      --board-addr ADDR board address of the first transfer (default 0)\n"
		"      --memcpy          also time memcpy of the same bytes, and the ratio\n"
		"      --timeout MS      give up on a chain after MS ms (default 30000)\n"
		"      --json            print one JSON object\n"
		"  -h, --help            show this help\n"
		"\n"
		"GB/s is 10^9 bytes per second of wall time (CLOCK_MONOTONIC).\n"
		"Doorbells are the engines' DOORBELLS counters, read before and\n"
		"after the timed chains. An emulated board's memory size comes\n"
		"from $FPGACOMM_EMU_MEM (e.g. 1G).\n"
		"Exit status: 0 ok, 1 error or data mismatch, 2 bad usage.\n",
		prog, FC_MAX_CHAIN);
}

/* ---- Argument parsing ---- */

/* A byte count or address with an optional K, M, G or T suffix. */
static uint64_t size_arg(const char *arg, const char *what)
{
	uint64_t v;
	int ret;

	ret = parse_size(arg, &v, "KMGT", true);
	if (ret == -ERANGE)
		usage_error("%s '%s' is too large", what, arg);
	if (ret)
		usage_error("bad %s '%s': expected a number with an optional "
			    "K, M or G suffix",
			    what, arg);
	return v;
}

/* A plain number from @min to @max. */
static uint64_t range_arg(const char *arg, const char *what, uint64_t min,
			  uint64_t max)
{
	uint64_t v;

	if (parse_u64(arg, &v))
		usage_error("bad %s '%s': expected a number", what, arg);
	if (v < min || v > max)
		usage_error("%s %s out of range %llu..%llu", what, arg,
			    (unsigned long long)min, (unsigned long long)max);
	return v;
}

static int dir_arg(const char *arg)
{
	if (!strcmp(arg, "h2b"))
		return DIR_H2B;
	if (!strcmp(arg, "b2h"))
		return DIR_B2H;
	if (!strcmp(arg, "both"))
		return DIR_BOTH;
	usage_error("bad direction '%s': expected h2b, b2h or both", arg);
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	enum {
		O_DIR = 256,
		O_VERIFY,
		O_NO_VERIFY,
		O_BOARD_ADDR,
		O_MEMCPY,
		O_TIMEOUT,
		O_JSON
	};
	static const struct option lopts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "size", required_argument, NULL, 's' },
		{ "count", required_argument, NULL, 'n' },
		{ "iterations", required_argument, NULL, 'i' },
		{ "dir", required_argument, NULL, O_DIR },
		{ "verify", no_argument, NULL, O_VERIFY },
		{ "no-verify", no_argument, NULL, O_NO_VERIFY },
		{ "board-addr", required_argument, NULL, O_BOARD_ADDR },
		{ "memcpy", no_argument, NULL, O_MEMCPY },
		{ "timeout", required_argument, NULL, O_TIMEOUT },
		{ "json", no_argument, NULL, O_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "d:s:n:i:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			o->dev = optarg;
			break;
		case 's':
			o->size = size_arg(optarg, "size");
			if (!o->size)
				usage_error("size must not be 0");
			break;
		case 'n':
			o->count = range_arg(optarg, "count", 1, FC_MAX_CHAIN);
			break;
		case 'i':
			o->iters = range_arg(optarg, "iteration count", 1,
					     1000000000);
			break;
		case O_DIR:
			o->dir = dir_arg(optarg);
			break;
		case O_VERIFY:
		case O_NO_VERIFY:
			o->verify = c == O_VERIFY;
			break;
		case O_BOARD_ADDR:
			o->board_addr = size_arg(optarg, "board address");
			break;
		case O_MEMCPY:
			o->memcpy = true;
			break;
		case O_TIMEOUT:
			o->timeout_ms =
				range_arg(optarg, "timeout (ms)", 1, INT32_MAX);
			break;
		case O_JSON:
			o->json = true;
			break;
		default:
			other_option(c, usage);
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
}

/* Limits only the open board can tell: its memory, transfer and chain sizes. */
static int check_board_limits(const struct opts *o, const struct fc_info *in,
			      uint64_t total)
{
	if (o->size > in->max_xfer_len) {
		fprintf(stderr,
			"%s: size %" PRIu64
			" above the board's maximum transfer of %" PRIu64
			" bytes\n",
			prog, o->size, in->max_xfer_len);
		return -1;
	}
	if (o->count > in->max_chain) {
		fprintf(stderr,
			"%s: count %u above the board's maximum chain of %u\n",
			prog, o->count, in->max_chain);
		return -1;
	}
	if (o->board_addr > in->board_mem_size ||
	    total > in->board_mem_size - o->board_addr) {
		fprintf(stderr,
			"%s: %" PRIu64 " bytes at board address 0x%" PRIx64
			" do not fit in board memory of %" PRIu64 " bytes%s\n",
			prog, total, o->board_addr, in->board_mem_size,
			strncmp(in->name, "emu:", 4) ?
				"" :
				" (set FPGACOMM_EMU_MEM for a bigger emulated board)");
		return -1;
	}
	return 0;
}

/* ---- DMA ---- */

static const char *const hw_errors[] = {
	[FC_DMA_ERR_NONE] = "none",
	[FC_DMA_ERR_COUNT] = "bad descriptor count",
	[FC_DMA_ERR_FETCH] = "descriptor table not reachable",
	[FC_DMA_ERR_ALIGN] = "descriptor table misaligned",
	[FC_DMA_ERR_LEN] = "bad length",
	[FC_DMA_ERR_FLAGS] = "bad flags",
	[FC_DMA_ERR_SPACE] = "bad address space",
	[FC_DMA_ERR_ADDR] = "address out of range",
	[FC_DMA_ERR_ROUTE] = "no route",
	[FC_DMA_ERR_RSVD] = "reserved field set",
	[FC_DMA_ERR_ABORTED] = "aborted",
	[FC_DMA_ERR_WINDOW] = "refused by a peer window",
};

static const char *hw_error_name(uint32_t e)
{
	return e <= FC_DMA_ERR_MAX ? hw_errors[e] : "unknown";
}

/* Submit one chain and wait for it; say why when it fails. */
static int run_chain(struct fc_dev *dev, const struct fc_xfer *x,
		     unsigned int n, int timeout_ms, const char *what)
{
	struct fc_dma_result res;
	uint64_t ticket;
	int ret;

	ret = fc_dma_submit(dev, x, n, 0, &ticket);
	if (ret) {
		fprintf(stderr, "%s: %s: submit: %s\n", prog, what,
			fc_strerror(ret));
		return ret;
	}
	ret = fc_dma_wait(dev, ticket, timeout_ms);
	if (!ret)
		return 0;
	if (ret == -ETIMEDOUT) {
		fprintf(stderr, "%s: %s: chain not done after %d ms: %s\n",
			prog, what, timeout_ms, fc_strerror(ret));
		/* Stop it so that its buffers can be freed. */
		fc_dma_reset(dev);
	} else if (!fc_dma_result(dev, ticket, &res) && res.hw_error) {
		fprintf(stderr,
			"%s: %s: %s (board error %u: %s, descriptor %u)\n",
			prog, what, fc_strerror(ret), res.hw_error,
			hw_error_name(res.hw_error), res.hw_index);
	} else {
		fprintf(stderr, "%s: %s: %s\n", prog, what, fc_strerror(ret));
	}
	return ret;
}

/* Doorbells accepted by all engines, so the count holds whichever one runs. */
static int read_doorbells(struct fc_dev *dev, unsigned int engines,
			  uint32_t *sum)
{
	uint32_t v;
	int ret;

	*sum = 0;
	for (unsigned int e = 0; e < engines && e < FC_DMA_MAX_ENGINES; e++) {
		ret = fc_reg_read(dev, FC_DMA_REG(e, FC_DMA_DOORBELLS), &v);
		if (ret) {
			fprintf(stderr, "%s: reading DMA%u doorbells: %s\n",
				prog, e, fc_strerror(ret));
			return ret;
		}
		*sum += v;
	}
	return 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One untimed warm-up chain, then @iters timed ones. */
static int time_chains(struct fc_dev *dev, const struct opts *o,
		       unsigned int engines, const struct fc_xfer *x,
		       const char *what, struct result *r)
{
	uint32_t before, after;
	uint64_t s0, s1;
	double t0;
	int ret;

	ret = run_chain(dev, x, o->count, o->timeout_ms, what);
	if (ret)
		return ret;
	ret = read_doorbells(dev, engines, &before);
	if (ret)
		return ret;
	r->sim_secs = fc_sim_time_ps(dev, &s0) ? -1 : 0;
	t0 = now();
	for (unsigned long i = 0; i < o->iters; i++) {
		ret = run_chain(dev, x, o->count, o->timeout_ms, what);
		if (ret)
			return ret;
	}
	r->secs = now() - t0;
	if (r->sim_secs >= 0 && !fc_sim_time_ps(dev, &s1))
		r->sim_secs = (double)(s1 - s0) * 1e-12;
	ret = read_doorbells(dev, engines, &after);
	if (ret)
		return ret;
	r->doorbells = after - before; /* the counter wraps; so does this */
	r->bytes = (double)o->size * o->count * o->iters;
	r->done = true;
	return 0;
}

/* ---- memcpy baseline ---- */

static volatile uint8_t sink;

static int time_memcpy(const struct opts *o, size_t total, const void *pattern,
		       struct result *r)
{
	uint8_t *a, *b;
	double t0;

	a = aligned_alloc(4096, (total + 4095) & ~(size_t)4095);
	b = aligned_alloc(4096, (total + 4095) & ~(size_t)4095);
	if (!a || !b) {
		fprintf(stderr, "%s: memcpy: cannot allocate 2 x %zu bytes\n",
			prog, total);
		free(a);
		free(b);
		return -ENOMEM;
	}
	memcpy(a, pattern, total);
	memcpy(b, a, total); /* warm-up: fault both buffers in */
	t0 = now();
	for (unsigned long i = 0; i < o->iters; i++) {
		memcpy(b, a, total);
		/* Read the copy so the compiler can't drop the stores. */
		sink = b[i % total];
	}
	r->secs = now() - t0;
	r->bytes = (double)total * o->iters;
	r->done = true;
	free(a);
	free(b);
	return 0;
}

/* ---- Data ---- */

/* xorshift64*: fast, and a fresh seed each run catches stale data. */
static void fill_random(void *buf, size_t len)
{
	uint64_t x = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^
		     (uintptr_t)buf;
	uint8_t *p = buf;
	size_t i;

	x |= 1;
	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t v;

		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		v = x * 0x2545f4914f6cdd1dull;
		memcpy(p + i, &v, 8);
	}
	for (; i < len; i++)
		p[i] = i * 131 + 7;
}

/* RETURN VALUE: offset of the first byte that differs, or -1 when none. */
static int64_t first_mismatch(const uint8_t *a, const uint8_t *b, size_t len)
{
	const size_t step = 1 << 20;

	for (size_t off = 0; off < len; off += step) {
		size_t n = len - off < step ? len - off : step;

		if (!memcmp(a + off, b + off, n))
			continue;
		for (size_t i = off; i < off + n; i++)
			if (a[i] != b[i])
				return i;
	}
	return -1;
}

/* ---- Output ---- */

static double gbps(const struct result *r)
{
	return r->secs > 0 ? r->bytes / r->secs / 1e9 : 0;
}

/* The timing model's GB/s, simulated time; 0 without a model. */
static double sim_gbps(const struct result *r)
{
	return r->sim_secs > 0 ? r->bytes / r->sim_secs / 1e9 : 0;
}

enum verdict {
	VERIFY_SKIPPED,
	VERIFY_OK,
	VERIFY_MISMATCH
};

static const char *const verdict_names[] = {
	[VERIFY_SKIPPED] = "skipped",
	[VERIFY_OK] = "ok",
	[VERIFY_MISMATCH] = "mismatch",
};

struct report {
	const struct opts *o;
	const char *name;
	uint64_t total;
	struct result h2b, b2h, mc;
	enum verdict verify;
	int64_t bad_off;
	uint8_t bad_want, bad_got;
};

static void print_dir_text(const struct report *rp, const char *label,
			   const struct result *r)
{
	const struct opts *o = rp->o;

	printf("%-12s %9.3f GB/s  (%lu chain%s in %.3f s; %u doorbell%s, "
	       "%.2f per chain",
	       label, gbps(r), o->iters, o->iters == 1 ? "" : "s", r->secs,
	       r->doorbells, r->doorbells == 1 ? "" : "s",
	       (double)r->doorbells / o->iters);
	if (rp->mc.done)
		printf("; dma/memcpy %.2f", gbps(r) / gbps(&rp->mc));
	printf(")\n");
	if (r->sim_secs > 0)
		printf("%-12s %9.3f GB/s  (model %s: simulated time, %.3f us a chain)\n",
		       "", sim_gbps(r), getenv("FPGACOMM_EMU_MODEL"),
		       r->sim_secs * 1e6 / o->iters);
}

static void print_text(const struct report *rp)
{
	const struct opts *o = rp->o;
	char s1[32], s2[32];

	printf("board %s: chains of %u x %s = %s at board address 0x%" PRIx64
	       "\n",
	       rp->name, o->count, human_size(o->size, 2, s1, sizeof(s1)),
	       human_size(rp->total, 2, s2, sizeof(s2)), o->board_addr);
	if (rp->h2b.done)
		print_dir_text(rp, "host->board", &rp->h2b);
	if (rp->b2h.done)
		print_dir_text(rp, "board->host", &rp->b2h);
	if (rp->mc.done)
		printf("%-12s %9.3f GB/s  (%lu cop%s in %.3f s)\n", "memcpy",
		       gbps(&rp->mc), o->iters, o->iters == 1 ? "y" : "ies",
		       rp->mc.secs);
	if (rp->verify == VERIFY_OK)
		printf("verify: OK, %" PRIu64 " bytes read back match\n",
		       rp->total);
	else if (rp->verify == VERIFY_MISMATCH)
		printf("verify: MISMATCH at offset %" PRId64
		       " (transfer %" PRId64 ", byte %" PRId64
		       "): wrote 0x%02x, read 0x%02x\n",
		       rp->bad_off, rp->bad_off / (int64_t)o->size,
		       rp->bad_off % (int64_t)o->size, rp->bad_want,
		       rp->bad_got);
	else
		printf("verify: skipped\n");
}

static void print_dir_json(const struct report *rp, const char *key,
			   const struct result *r)
{
	printf("  \"%s\": { \"seconds\": %.9f, \"bytes\": %.0f"
	       ", \"gbps\": %.4f, \"doorbells\": %u, \"doorbells_per_chain\": %.4f",
	       key, r->secs, r->bytes, gbps(r), r->doorbells,
	       (double)r->doorbells / rp->o->iters);
	if (rp->mc.done)
		printf(", \"dma_memcpy_ratio\": %.4f", gbps(r) / gbps(&rp->mc));
	if (r->sim_secs > 0)
		printf(", \"model_seconds\": %.9f, \"model_gbps\": %.4f",
		       r->sim_secs, sim_gbps(r));
	printf(" },\n");
}

static void print_json(const struct report *rp)
{
	const struct opts *o = rp->o;

	printf("{\n  \"device\": ");
	json_str(rp->name);
	printf(",\n");
	printf("  \"size\": %" PRIu64 ",\n  \"count\": %u,\n", o->size,
	       o->count);
	printf("  \"bytes_per_chain\": %" PRIu64 ",\n", rp->total);
	printf("  \"iterations\": %lu,\n", o->iters);
	printf("  \"board_addr\": %" PRIu64 ",\n", o->board_addr);
	if (rp->h2b.done)
		print_dir_json(rp, "h2b", &rp->h2b);
	if (rp->b2h.done)
		print_dir_json(rp, "b2h", &rp->b2h);
	if (rp->mc.done)
		printf("  \"memcpy\": { \"seconds\": %.9f, \"bytes\": %.0f"
		       ", \"gbps\": %.4f },\n",
		       rp->mc.secs, rp->mc.bytes, gbps(&rp->mc));
	if (rp->bad_off >= 0)
		printf("  \"mismatch_offset\": %" PRId64 ",\n", rp->bad_off);
	printf("  \"verify\": \"%s\"\n}\n", verdict_names[rp->verify]);
}

/* ---- Main ---- */

static void build_chain(struct fc_xfer *x, const struct opts *o,
			struct fc_mem *mem, bool to_board)
{
	for (unsigned int i = 0; i < o->count; i++) {
		struct fc_loc host = fc_host(mem, (uint64_t)i * o->size);
		struct fc_loc board =
			fc_board(o->board_addr + (uint64_t)i * o->size);

		memset(&x[i], 0, sizeof(x[i]));
		x[i].src = to_board ? host : board;
		x[i].dst = to_board ? board : host;
		x[i].len = o->size;
	}
}

/* The measured part: both directions, then the check. */
static int run(struct fc_dev *dev, const struct opts *o,
	       const struct fc_info *in, struct report *rp)
{
	struct fc_xfer h2b[FC_MAX_CHAIN], b2h[FC_MAX_CHAIN];
	struct fc_mem *src, *dst;
	int ret;

	ret = fc_mem_alloc(dev, rp->total, 0, &src);
	if (ret) {
		fprintf(stderr, "%s: allocating %" PRIu64 " host bytes: %s\n",
			prog, rp->total, fc_strerror(ret));
		return 1;
	}
	ret = fc_mem_alloc(dev, rp->total, 0, &dst);
	if (ret) {
		fprintf(stderr, "%s: allocating %" PRIu64 " host bytes: %s\n",
			prog, rp->total, fc_strerror(ret));
		goto err_free_src;
	}
	fill_random(src->addr, rp->total);
	build_chain(h2b, o, src, true);
	build_chain(b2h, o, dst, false);

	/* Board memory must hold the pattern even when only b2h is timed. */
	if (o->dir & DIR_H2B)
		ret = time_chains(dev, o, in->dma_engines, h2b, "host->board",
				  &rp->h2b);
	else
		ret = run_chain(dev, h2b, o->count, o->timeout_ms,
				"host->board");
	if (ret)
		goto err_free_dst;
	if (o->dir & DIR_B2H)
		ret = time_chains(dev, o, in->dma_engines, b2h, "board->host",
				  &rp->b2h);
	else if (o->verify)
		ret = run_chain(dev, b2h, o->count, o->timeout_ms,
				"board->host");
	if (ret)
		goto err_free_dst;

	if (o->verify) {
		rp->bad_off = first_mismatch(src->addr, dst->addr, rp->total);
		rp->verify = rp->bad_off < 0 ? VERIFY_OK : VERIFY_MISMATCH;
		if (rp->bad_off >= 0) {
			rp->bad_want = ((uint8_t *)src->addr)[rp->bad_off];
			rp->bad_got = ((uint8_t *)dst->addr)[rp->bad_off];
		}
	}
	if (o->memcpy && time_memcpy(o, rp->total, src->addr, &rp->mc))
		goto err_free_dst;

	fc_mem_free(dev, dst);
	fc_mem_free(dev, src);
	return 0;

err_free_dst:
	fc_mem_free(dev, dst);
err_free_src:
	fc_mem_free(dev, src);
	return 1;
}

int main(int argc, char **argv)
{
	struct opts o = {
		.size = 1 << 20,
		.count = 1,
		.iters = 10,
		.dir = DIR_BOTH,
		.verify = true,
		.timeout_ms = 30000,
	};
	struct report rp = { .o = &o, .bad_off = -1 };
	struct fc_info info;
	struct fc_dev *dev;
	int ret, status;

	parse_args(argc, argv, &o);
	if (__builtin_mul_overflow(o.size, (uint64_t)o.count, &rp.total) ||
	    rp.total > SIZE_MAX)
		usage_error("size x count (%" PRIu64 " x %u) overflows", o.size,
			    o.count);

	ret = fc_open(&dev, o.dev);
	if (ret) {
		fprintf(stderr, "%s: cannot open %s: %s\n", prog,
			o.dev ? o.dev : "the default board", fc_strerror(ret));
		return 1;
	}
	ret = fc_query(dev, &info);
	if (ret) {
		fprintf(stderr, "%s: query: %s\n", prog, fc_strerror(ret));
		status = 1;
		goto out_close;
	}
	rp.name = info.name;
	if (check_board_limits(&o, &info, rp.total)) {
		status = EXIT_USAGE;
		goto out_close;
	}
	if (!(info.caps & FC_CAP_DMA) || !(info.caps & FC_CAP_BOARD_MEM)) {
		fprintf(stderr, "%s: %s has no %s\n", prog, info.name,
			info.caps & FC_CAP_DMA ? "board memory" : "DMA engine");
		status = 1;
		goto out_close;
	}

	status = run(dev, &o, &info, &rp);
	if (!status) {
		if (o.json)
			print_json(&rp);
		else
			print_text(&rp);
		if (rp.bad_off >= 0) {
			fprintf(stderr,
				"%s: data read back differs at offset %" PRId64
				"\n",
				prog, rp.bad_off);
			status = 1;
		}
	}
out_close:
	fc_close(dev);
	return status;
}
