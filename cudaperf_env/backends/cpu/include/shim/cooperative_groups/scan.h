// Stand-in for CUDA's <cooperative_groups/scan.h>: the CPU runtime provides everything.
#pragma once
#include <cudaperf/cuda_cpu.h>
