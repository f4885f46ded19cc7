// Stand-in for CUDA's <cuda_fp16.h>: the CPU runtime provides everything.
#pragma once
#include <cudaperf/cuda_cpu.h>
