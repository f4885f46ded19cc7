// Stand-in for CUDA's <cooperative_groups/reduce.h>: the CPU runtime provides everything.
#pragma once
#include <cudaperf/cuda_cpu.h>
