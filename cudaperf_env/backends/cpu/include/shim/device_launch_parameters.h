// Stand-in for CUDA's <device_launch_parameters.h>: the CPU runtime provides everything.
#pragma once
#include <cudaperf/cuda_cpu.h>
