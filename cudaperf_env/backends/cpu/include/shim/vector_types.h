// Stand-in for CUDA's <vector_types.h>: the CPU runtime provides everything.
#pragma once
#include <cudaperf/cuda_cpu.h>
