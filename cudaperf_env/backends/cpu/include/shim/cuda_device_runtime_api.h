// Stand-in for CUDA's <cuda_device_runtime_api.h>: the CPU runtime provides everything.
#pragma once
#include <cudaperf/cuda_cpu.h>
