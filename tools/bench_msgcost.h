/* SPDX-License-Identifier: MIT */
/* fpgacomm-bench's msgcost command (tools/bench_msgcost.c). */
#ifndef FC_BENCH_MSGCOST_H
#define FC_BENCH_MSGCOST_H

/* Run "fpgacomm-bench msgcost [options]" (argv[1] is "msgcost").
 * RETURN VALUE: the exit status. */
int bench_msgcost_main(int argc, char **argv);

#endif /* FC_BENCH_MSGCOST_H */
