// Stand-in for CUDA's <cuda.h>: the CPU runtime provides everything.
#pragma once
#include <cudaperf/cuda_cpu.h>
