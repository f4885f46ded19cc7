// Stand-in for CUDA's <cuda_fp16.h>: the CPU runtime provides the type and its operations; the
// short names are declared here, as nvcc's header does.
#pragma once
#include <cudaperf/cuda_cpu.h>
typedef __half half;
typedef __half2 half2;
typedef __half __nv_half;
typedef __half2 __nv_half2;
typedef __half nv_half;
typedef __half2 nv_half2;
