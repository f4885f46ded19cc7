// Stand-in for CUDA's <sm_60_atomic_functions.h>: the CPU runtime provides everything.
#pragma once
#include <cudaperf/cuda_cpu.h>
