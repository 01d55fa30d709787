/* SPDX-License-Identifier: MIT */
/* fpgacomm-bench hbm (tools/bench_hbm.c). */
#ifndef FC_BENCH_HBM_H
#define FC_BENCH_HBM_H

/* Run "fpgacomm-bench hbm [options]" (argv[0] is "hbm").
 * RETURN VALUE: the exit status. */
int bench_hbm_main(int argc, char **argv);

#endif /* FC_BENCH_HBM_H */
