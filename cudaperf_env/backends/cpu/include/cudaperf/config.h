// Standard headers, CUDA version macros and CUDA qualifier keywords for the CUDA-on-CPU runtime.
#pragma once

// The standard headers the runtime uses, and those nvcc's forced cuda_runtime.h makes visible to
// every translation unit (<cmath>, <cstdlib>, <limits>, <new>, <utility>, <type_traits>, stdio,
// string, ctype, time): all an nvcc-checked submission can use without an #include. Parsed before
// any of our macros exists (glibc declares printf, __assert_fail and __expf, which are macros
// here); a later user #include of these is a no-op (include guards). Other standard headers
// (<vector>, <iostream>, ...) are read after the macros, which only libstdc++'s shared_ptr spells
// (__attribute__((__noinline__))): shim/bits/shared_ptr_base.h hides the macro from it. Each header
// left out is parse time saved in the precompiled header and in every build without it
// (docs/cpu-backend.md, step latency).
#include <cassert>
#include <cctype>
#include <cerrno>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <initializer_list>
#include <limits>
#include <new>
#include <type_traits>
#include <utility>

#include <assert.h>
#include <dlfcn.h>
#include <link.h>
#include <fenv.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if !defined(__x86_64__) || defined(CUDAPERF_FIBER_UCONTEXT)
#include <ucontext.h>
#endif

// The CUDA toolkit this runtime imitates (the nvcc used for the compile check is 13.0).
#define CUDART_VERSION 13000
#define CUDA_VERSION 13000
#define __CUDART_API_VERSION 13000
#define __CUDACC_VER_MAJOR__ 13
#define __CUDACC_VER_MINOR__ 0
#define __CUDACC_VER_BUILD__ 88
// Include guards of the real headers, for code that tests them.
#define __CUDA_RUNTIME_H__
#define __CUDA_RUNTIME_API_H__
#define __DRIVER_TYPES_H__
#define __VECTOR_TYPES_H__
#define __CUDA_FP16_H__
#define __CUDA_BF16_H__

// Qualifiers. __CUDA_ARCH__ stays undefined: host paths of __host__ __device__ code are the
// ones that run here.
#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __grid_constant__
#define __device_builtin__
#define __cudart_builtin__
#define __forceinline__ inline
#define __inline_hint__
#define __noinline__ __attribute__((noinline))
#define __no_return__ __attribute__((noreturn))
#define __launch_bounds__(...)
#define __maxnreg__(n)
#define __cluster_dims__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __builtin_align__(n) __attribute__((aligned(n)))
#define __CUDA_ALIGN__(n) __attribute__((aligned(n)))
#define CUDARTAPI
#define CUDART_CB
// Blocks run one at a time on an OS thread and all fibers of a block share that thread, so a
// thread_local is exactly one copy per running block. thread_local (not "static thread_local")
// keeps `static __shared__` legal: at block scope thread_local already implies static.
#define __shared__ thread_local

// The runtime's thread-locals. Hidden visibility lets g++ use the local-dynamic TLS model in the
// submission's shared library: one TLS lookup per function instead of one per variable
// (plain-loop threads cost 5 ns instead of 8). Never initial-exec: see pitfall 1.
#define CUDAPERF_TLS __attribute__((visibility("hidden"))) inline thread_local

// Error reporting and set-up code: compiled small (optimized for size, never inlined), which
// keeps the per-file compile time of every submission down.
#define CUDAPERF_COLD __attribute__((cold, noinline))

// The runtime's out-of-line code (launch, block scheduler, reports, set-up) is CUDAPERF_LINKED:
// declared under `#if !CUDAPERF_DEFINE_LINKED`, defined in the `#else`. By default the runtime is
// header-only: every file that includes it compiles them, inline. The CPU backend compiles them once instead, into a
// runtime object (built with CUDAPERF_RUNTIME_OBJECT), and links it into every submission, whose
// precompiled header defines CUDAPERF_PREBUILT_RUNTIME: only their declarations are left there,
// which cuts a submission's compile from 0.6 to 0.15 CPU-s (saxpy; docs/cpu-backend.md, 4).
#if defined(CUDAPERF_RUNTIME_OBJECT) || defined(CUDAPERF_PREBUILT_RUNTIME)
#define CUDAPERF_LINKED
#else
#define CUDAPERF_LINKED inline
#endif
#if defined(CUDAPERF_PREBUILT_RUNTIME)
#define CUDAPERF_DEFINE_LINKED 0
#else
#define CUDAPERF_DEFINE_LINKED 1
#endif

namespace cudaperf {
namespace detail {

// Holds a pthread mutex for one scope. The runtime avoids std:: templates (std::mutex guards,
// containers, std::thread): whatever its inline functions instantiate is compiled again for
// every submission.
class MutexLock {
 public:
  explicit MutexLock(pthread_mutex_t* m) : m_(m) { ::pthread_mutex_lock(m_); }
  ~MutexLock() { ::pthread_mutex_unlock(m_); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  pthread_mutex_t* m_;
};

// Launch limits of a Hopper-class device.
constexpr unsigned kMaxThreadsPerBlock = 1024;
constexpr unsigned kMaxBlockDimXY = 1024;
constexpr unsigned kMaxBlockDimZ = 64;
constexpr unsigned long long kMaxGridDimX = 2147483647ULL;
constexpr unsigned kMaxGridDimYZ = 65535;
constexpr size_t kMaxDynamicShared = 227 * 1024;
constexpr size_t kSharedPerBlock = 48 * 1024;
constexpr int kWarpSize = 32;

}  // namespace detail
}  // namespace cudaperf
