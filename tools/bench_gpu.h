/* SPDX-License-Identifier: MIT */
/* fpgacomm-bench's gpu command (tools/bench_gpu.c). */
#ifndef FC_BENCH_GPU_H
#define FC_BENCH_GPU_H

/* Run "fpgacomm-bench gpu [options]" (argv[1] is "gpu").
 * RETURN VALUE: the exit status (77 where there is no GPU). */
int bench_gpu_main(int argc, char **argv);

/* "fpgacomm-bench gpu-fabric [options]" as one of two ranks
 * (tools/bench_gpu_fabric.c). RETURN VALUE: as bench_gpu_main(). */
int bench_gpu_fabric_main(int argc, char **argv);

#endif /* FC_BENCH_GPU_H */
