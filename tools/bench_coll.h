/* SPDX-License-Identifier: MIT */
/* fpgacomm-bench's collective commands (tools/bench_coll.c). */
#ifndef FC_BENCH_COLL_H
#define FC_BENCH_COLL_H

#include <stdbool.h>

/* Whether @name is a collective fpgacomm-bench measures. */
bool bench_coll_is(const char *name);
/* Run "fpgacomm-bench COLLECTIVE [options]" (argv[1] is the collective).
 * RETURN VALUE: the exit status. */
int bench_coll_main(int argc, char **argv);

#endif /* FC_BENCH_COLL_H */
