// The CUDA-on-CPU runtime: force-included into every submission (docs/cpu-backend.md, section 2).
// A classic include guard rather than #pragma once: a precompiled copy of this header must
// also stop later `#include <cuda_runtime.h>` (shim -> this file) from being read again.
#ifndef CUDAPERF_CUDA_CPU_H_
#define CUDAPERF_CUDA_CPU_H_

#include <cudaperf/config.h>
#include <cudaperf/vector_types.h>
#include <cudaperf/runtime_types.h>
#include <cudaperf/fatal.h>
#include <cudaperf/fiber.h>
#include <cudaperf/device_memory.h>
#include <cudaperf/block.h>
#include <cudaperf/host_arena.h>
#include <cudaperf/signals.h>
#include <cudaperf/launch_limits.h>
#include <cudaperf/racecheck.h>
#include <cudaperf/bounds.h>
#include <cudaperf/launch.h>
#include <cudaperf/warp.h>
#include <cudaperf/atomics.h>
#include <cudaperf/intrinsics.h>
#include <cudaperf/device_math.h>
#include <cudaperf/half_types.h>
#include <cudaperf/half_ops.h>
#include <cudaperf/cooperative_groups.h>
#include <cudaperf/host_api.h>
#include <cudaperf/host_device.h>
#include <cudaperf/device_io.h>

// Lets code (and our tests) tell this runtime from nvcc.
#define CUDAPERF_CPU_RUNTIME 1
// Last: some system headers test __CUDACC__ and must see the plain host compiler. __NVCC__
// stays undefined: code under it tends to use nvcc-only pragmas and builtins.
#define __CUDACC__ 1

#endif  // CUDAPERF_CUDA_CPU_H_
