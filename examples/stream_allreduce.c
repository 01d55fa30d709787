// SPDX-License-Identifier: MIT
/*
 * stream_allreduce: an allreduce of uint32 sums written with channels
 * alone, as CIRCUS fuses a reduction into its pipeline: the vector flows
 * around the ring in chunks; each rank adds its part to a chunk as it
 * passes and sends it on while the next chunk is still arriving, so
 * arithmetic and transfer overlap. After one lap the last rank holds the
 * sum of each chunk, and a second lap carries the sums to everyone. The
 * result is checked against fc_allreduce on the same input.
 *
 *   fpgacomm-run -n 4 -- build/examples/stream_allreduce [-c COUNT] [-k CHUNK]
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <fpgacomm/fpgacomm.h>

#define PORT	   2
#define TIMEOUT_MS 60000

static void die(const char *what, int err)
{
	fprintf(stderr, "stream_allreduce: %s: %s\n", what, fc_strerror(err));
	exit(1);
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Receive the next chunk from the left into @dst. */
static void take(struct fc_chan *left, uint32_t *dst, size_t len)
{
	size_t got;
	int ret = fc_chan_recv(left, dst, len * 4, &got, TIMEOUT_MS);

	if (ret)
		die("receive", ret);
}

/* Pass a chunk on to the right once the one before it has left (*send),
 * so that it goes while the next chunk is still coming in. */
static void pass(struct fc_chan *right, const uint32_t *src, size_t len,
		 struct fc_req **send)
{
	int ret = 0;

	if (*send)
		ret = fc_req_wait(*send, TIMEOUT_MS, NULL);
	*send = NULL;
	if (!ret && src)
		ret = fc_chan_isend(right, src, len * 4, send);
	if (ret)
		die("send", ret);
}

/*
 * Rank 0 starts each chunk with its own values; every other rank receives
 * the partial sum from the left, adds its values and passes it right; the
 * last rank's sums go around once more, copied, to everyone.
 */
static void ring_sum(struct fc_chan *left, struct fc_chan *right, int rank,
		     int size, const uint32_t *in, uint32_t *out, size_t count,
		     size_t chunk)
{
	struct fc_req *send = NULL;
	size_t off, len, i;

	/* lap 1: the reduction, streamed */
	for (off = 0; off < count; off += len) {
		len = count - off < chunk ? count - off : chunk;
		if (rank == 0) {
			memcpy(out + off, in + off, len * 4);
		} else {
			take(left, out + off, len);
			for (i = 0; i < len; i++)
				out[off + i] += in[off + i];
		}
		if (rank != size - 1)
			pass(right, out + off, len, &send);
	}
	pass(right, NULL, 0, &send);
	/* lap 2: the sums, from the last rank around to everyone */
	for (off = 0; off < count; off += len) {
		len = count - off < chunk ? count - off : chunk;
		if (rank != size - 1)
			take(left, out + off, len);
		if (rank != size - 2)
			pass(right, out + off, len, &send);
	}
	pass(right, NULL, 0, &send);
}

int main(int argc, char **argv)
{
	size_t count = 1 << 20, chunk = 16 << 10, i, bad = 0;
	struct fc_chan *left = NULL, *right = NULL;
	uint32_t *in, *out, *ref;
	struct fc_group *world;
	struct fc_dev *dev;
	double t_stream, t_coll;
	int c, ret, rank, size;

	while ((c = getopt(argc, argv, "c:k:h")) != -1) {
		if (c == 'c' && (count = strtoul(optarg, NULL, 0)) > 0)
			continue;
		if (c == 'k' && (chunk = strtoul(optarg, NULL, 0)) > 0 &&
		    chunk * 4 <= FC_CHAN_MAX_MSG)
			continue;
		fprintf(c == 'h' ? stdout : stderr,
			"usage: stream_allreduce [-c COUNT] [-k CHUNK] (as every rank)\n");
		return c == 'h' ? 0 : 2;
	}
	ret = fc_open(&dev, NULL);
	if (ret)
		die("open", ret);
	ret = fc_group_world(dev, &world);
	if (ret)
		die("world (run it under fpgacomm-run)", ret);
	rank = fc_group_rank(world);
	size = fc_group_size(world);
	in = malloc(count * 4);
	out = malloc(count * 4);
	ref = malloc(count * 4);
	if (!in || !out || !ref)
		die("buffers", -ENOMEM);
	for (i = 0; i < count; i++)
		in[i] = (uint32_t)(i * 2654435761u) ^ (uint32_t)rank * 40503u;
	if (size > 1) {
		ret = fc_chan_open(dev, (rank + size - 1) % size, PORT, 0,
				   &left);
		right = left; /* two ranks: one neighbour both ways */
		if (!ret && size > 2)
			ret = fc_chan_open(dev, (rank + 1) % size, PORT, 0,
					   &right);
		if (ret)
			die("channel", ret);
	}
	ret = fc_barrier_group(world, TIMEOUT_MS);
	if (ret)
		die("barrier", ret);
	t_stream = now_us();
	if (size > 1)
		ring_sum(left, right, rank, size, in, out, count, chunk);
	else
		memcpy(out, in, count * 4);
	t_stream = now_us() - t_stream;
	ret = fc_barrier_group(world, TIMEOUT_MS);
	if (ret)
		die("barrier", ret);
	t_coll = now_us();
	ret = fc_allreduce(world, in, ref, count, FC_UINT32, FC_SUM,
			   TIMEOUT_MS);
	if (ret)
		die("allreduce", ret);
	t_coll = now_us() - t_coll;
	for (i = 0; i < count; i++)
		bad += out[i] != ref[i];
	ret = fc_allreduce(world, FC_IN_PLACE, &bad, 1, FC_UINT64, FC_SUM,
			   TIMEOUT_MS);
	if (ret)
		die("allreduce", ret);
	if (rank == 0)
		printf("stream_allreduce: %zu uint32 on %d rank(s), chunks of %zu: "
		       "streamed %.0f us, fc_allreduce (%s) %.0f us, %zu wrong\n",
		       count, size, chunk, t_stream,
		       fc_coll_algo_name(world, "allreduce", count * 4), t_coll,
		       bad);
	if (left)
		fc_chan_close(left);
	if (right && right != left)
		fc_chan_close(right);
	fc_group_free(world);
	fc_close(dev);
	free(in);
	free(out);
	free(ref);
	return bad ? 1 : 0;
}
