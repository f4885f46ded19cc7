// Stand-in for CUDA's <math_constants.h>: the CUDART_* constants.
#pragma once
#include <cudaperf/cuda_cpu.h>
#include <cudaperf/math_constants.h>
