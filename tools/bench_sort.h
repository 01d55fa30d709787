/* SPDX-License-Identifier: MIT */
/* fpgacomm-bench sort (tools/bench_sort.c). */
#ifndef FC_BENCH_SORT_H
#define FC_BENCH_SORT_H

/* Run "fpgacomm-bench sort [options]" (argv[1] is "sort").
 * RETURN VALUE: the exit status. */
int bench_sort_main(int argc, char **argv);

#endif /* FC_BENCH_SORT_H */
