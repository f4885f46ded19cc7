// Stand-in for CUDA's <device_atomic_functions.h>: the CPU runtime provides everything.
#pragma once
#include <cudaperf/cuda_cpu.h>
