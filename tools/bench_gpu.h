/* SPDX-License-Identifier: MIT */
/* fpgacomm-bench's gpu command (tools/bench_gpu.c). */
#ifndef FC_BENCH_GPU_H
#define FC_BENCH_GPU_H

/* Run "fpgacomm-bench gpu [options]" (argv[1] is "gpu").
 * RETURN VALUE: the exit status (77 where there is no GPU). */
int bench_gpu_main(int argc, char **argv);

#endif /* FC_BENCH_GPU_H */
