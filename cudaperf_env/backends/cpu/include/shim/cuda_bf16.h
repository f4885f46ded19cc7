// Stand-in for CUDA's <cuda_bf16.h>: the CPU runtime provides the type and its operations; the
// short names are declared here, as nvcc's header does.
#pragma once
#include <cudaperf/cuda_cpu.h>
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;
