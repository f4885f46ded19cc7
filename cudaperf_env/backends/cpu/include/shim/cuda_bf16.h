// Stand-in for CUDA's <cuda_bf16.h>: the CPU runtime provides everything.
#pragma once
#include <cudaperf/cuda_cpu.h>
