/* SPDX-License-Identifier: MIT */
/*
 * Two boards of one fabric, for the tests that need a pair (include once,
 * after cmocka.h and harness.h): the two devices FPGACOMM_TEST_PAIR names
 * (the VM's boards behind the driver), else a full:2 cluster of emulated
 * boards made here. FPGACOMM_TEST_DEVICE naming one real board leaves
 * nothing to pair: the test skips.
 */
#ifndef FC_TEST_PAIR_H
#define FC_TEST_PAIR_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <fpgacomm/fpgacomm.h>
#include "fabric.h" /* emu/: makes the cluster the pair runs on */

static char names[2][128];
static char cluster[32]; /* the cluster made here, if any */
static struct fc_dev *bd[2];
static struct fc_world world[2];

/*
 * Open both boards (bd[], world[]); the cluster, if made, is @prefix-PID,
 * its link with @faults (NULL: none).
 * RETURN VALUE: 0 open, or nothing to pair (bd[] NULL); -1 failed (said).
 */
static int pair_open_faults(const char *prefix,
			    const struct fcemu_faults *faults)
{
	const char *pair = getenv("FPGACOMM_TEST_PAIR");
	const char *one = getenv("FPGACOMM_TEST_DEVICE");
	struct fcemu_cluster *c;
	struct fc_topology t;
	int i, rc;

	/*
	 * One thread drives both boards: a channel's first send, blocking on
	 * one board, would wait for the other board's library to answer its
	 * greeting (through the driver, credit.c), which nothing runs then.
	 * Tests of the greeting turn it on themselves.
	 */
	setenv("FPGACOMM_CHAN_GREET", "0", 0);
	if (pair && *pair) {
		if (sscanf(pair, "%127s %127s", names[0], names[1]) != 2) {
			print_message(
				"FPGACOMM_TEST_PAIR: two devices, please\n");
			return -1;
		}
	} else if (one && *one && strncmp(one, "emu:", 4)) {
		return 0; /* one real board: nothing to pair it with */
	} else {
		snprintf(cluster, sizeof(cluster), "%s-%d", prefix,
			 (int)getpid());
		fcemu_cluster_unlink(cluster);
		if (fc_topo_parse("full:2", &t))
			return -1;
		rc = fcemu_cluster_create(&c, cluster, &t, faults);
		if (rc) {
			print_message("cluster %s: %s\n", cluster,
				      fc_strerror(rc));
			return -1;
		}
		fcemu_cluster_detach(c); /* the boards attach by name */
		for (i = 0; i < 2; i++)
			snprintf(names[i], sizeof(names[i]), "emu:%s/%d",
				 cluster, i);
	}
	for (i = 0; i < 2; i++) {
		rc = fc_open(&bd[i], names[i]);
		if (!rc)
			rc = fc_world_query(bd[i], &world[i]);
		if (rc) {
			print_message("%s: %s\n", names[i], fc_strerror(rc));
			return -1;
		}
	}
	return 0;
}

static inline int pair_open(const char *prefix)
{
	return pair_open_faults(prefix, NULL);
}

/*
 * Emulated boards move only when their process calls into the library: a
 * thread keeps both going, as two ranks' processes would (a board behind
 * the driver moves on its own).
 */
static pthread_t pair_pump;
static volatile int pair_pumping;

static void *pair_pump_main(void *arg)
{
	(void)arg;
	while (pair_pumping) {
		fc_progress(bd[0]);
		fc_progress(bd[1]);
		usleep(20);
	}
	return NULL;
}

/* Start the thread that moves both boards (once). RETURN VALUE: 0 or -1. */
static inline int pair_pump_start(void)
{
	if (pair_pumping)
		return 0;
	pair_pumping = 1;
	if (pthread_create(&pair_pump, NULL, pair_pump_main, NULL)) {
		pair_pumping = 0;
		return -1;
	}
	return 0;
}

static inline void pair_pump_stop(void)
{
	if (!pair_pumping)
		return;
	pair_pumping = 0;
	pthread_join(pair_pump, NULL);
}

/* Close what pair_open() opened, and remove the cluster it made. */
static void pair_close(void)
{
	int i;

	for (i = 0; i < 2; i++) {
		if (bd[i])
			fc_close(bd[i]);
		bd[i] = NULL;
	}
	if (*cluster)
		fcemu_cluster_unlink(cluster);
}

/* A group's teardown: the pump stopped, both boards closed. */
static inline int pair_teardown(void **state)
{
	(void)state;
	pair_pump_stop();
	pair_close();
	return 0;
}

/*
 * pair_close_clean - pair_close(), first clearing the DMA stall knob: a
 * VM's boards outlive the program, so a failed test must not leave it set.
 */
static inline void pair_close_clean(void)
{
	int i;

	for (i = 0; i < 2; i++)
		if (bd[i])
			fc_reg_write(bd[i], FC_EMU_FAULT_DMA_STALL, 0);
	pair_close();
}

/* Skip unless both boards are open and board 0 has the emulator's knobs. */
static inline void pair_need_knobs(void)
{
	struct fc_info inf;

	if (!bd[0] || !bd[1])
		skip_because("FPGACOMM_TEST_DEVICE names one real board; "
			     "FPGACOMM_TEST_PAIR names two");
	assert_ok(fc_query(bd[0], &inf));
	if (!(inf.caps & FC_CAP_EMULATED))
		skip_because("board 0 is not emulated: no fault knobs");
}

/* How long, in us, a 1 MiB message nobody asked for waits for its
 * receive before it is landed in a library buffer (lib/proto/rndv*.c). */
#define PAIR_LAND_ENV "FPGACOMM_RNDV_LAND_US"

/*
 * The pair anew: closed, then opened as pair_open_faults(@prefix,
 * @faults) with @land_us (NULL: the default) in PAIR_LAND_ENV; @pump: and
 * the thread that moves both boards started.
 */
static inline void pair_reopen(const char *prefix, const char *land_us,
			       const struct fcemu_faults *faults, bool pump)
{
	pair_pump_stop();
	pair_close();
	if (land_us)
		setenv(PAIR_LAND_ENV, land_us, 1);
	else
		unsetenv(PAIR_LAND_ENV);
	assert_int_equal(pair_open_faults(prefix, faults), 0);
	if (pump)
		assert_int_equal(pair_pump_start(), 0);
}

/* A channel on @port from board 0 to board 1 (*@tx) and its other end
 * (*@rx); and both closed. */
static inline void pair_chans_open(uint32_t port, struct fc_chan **tx,
				   struct fc_chan **rx)
{
	assert_ok(fc_chan_open(bd[0], world[1].rank, port, 0, tx));
	assert_ok(fc_chan_open(bd[1], world[0].rank, port, 0, rx));
}

static inline void pair_chans_close(struct fc_chan *tx, struct fc_chan *rx)
{
	assert_ok(fc_chan_close(tx));
	assert_ok(fc_chan_close(rx));
}

/* Register @off of board @b (the test fails if it cannot be read). */
static inline uint32_t rd(int b, uint32_t off)
{
	uint32_t v = 0;

	assert_ok(fc_reg_read(bd[b], off, &v));
	return v;
}

static inline uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

#endif /* FC_TEST_PAIR_H */
