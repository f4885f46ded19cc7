// CUDA host API, part 2: devices, limits, streams, events, kernel attributes, occupancy.
#pragma once

// ---- device -----------------------------------------------------------------------------------

inline cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return ::cudaperf::detail::record_error(cudaErrorInvalidValue);
  *count = 1;
  return cudaSuccess;
}
inline cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return ::cudaperf::detail::record_error(cudaErrorInvalidValue);
  *device = 0;
  return cudaSuccess;
}
inline cudaError_t cudaSetDevice(int device) {
  return device == 0 ? cudaSuccess : ::cudaperf::detail::record_error(cudaErrorInvalidDevice);
}
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (prop == nullptr) return ::cudaperf::detail::record_error(cudaErrorInvalidValue);
  if (device != 0) return ::cudaperf::detail::record_error(cudaErrorInvalidDevice);
  ::cudaperf::detail::fill_properties(prop);
  return cudaSuccess;
}
inline cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (value == nullptr) return ::cudaperf::detail::record_error(cudaErrorInvalidValue);
  if (device != 0) return ::cudaperf::detail::record_error(cudaErrorInvalidDevice);
  *value = ::cudaperf::detail::device_attribute(attr);
  return cudaSuccess;
}
// Launches are synchronous, so there is never outstanding work.
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
inline cudaError_t cudaThreadSynchronize() { return cudaSuccess; }
inline cudaError_t cudaDeviceReset() { return cudaSuccess; }
inline cudaError_t cudaSetDeviceFlags(unsigned) { return cudaSuccess; }
inline cudaError_t cudaGetDeviceFlags(unsigned* flags) {
  if (flags != nullptr) *flags = 0;
  return cudaSuccess;
}
inline cudaError_t cudaChooseDevice(int* device, const cudaDeviceProp*) {
  return cudaGetDevice(device);
}
inline cudaError_t cudaDeviceSetCacheConfig(cudaFuncCache) { return cudaSuccess; }
inline cudaError_t cudaDeviceSetSharedMemConfig(cudaSharedMemConfig) { return cudaSuccess; }
inline cudaError_t cudaDeviceCanAccessPeer(int* can, int, int) {
  if (can != nullptr) *can = 0;
  return cudaSuccess;
}
inline cudaError_t cudaDeviceEnablePeerAccess(int, unsigned) {
  return ::cudaperf::detail::record_error(cudaErrorInvalidDevice);
}
inline cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  if (least != nullptr) *least = 0;
  if (greatest != nullptr) *greatest = 0;
  return cudaSuccess;
}
inline cudaError_t cudaDriverGetVersion(int* v) {
  if (v != nullptr) *v = CUDART_VERSION;
  return cudaSuccess;
}
inline cudaError_t cudaRuntimeGetVersion(int* v) {
  if (v != nullptr) *v = CUDART_VERSION;
  return cudaSuccess;
}
inline cudaError_t cudaProfilerStart() { return cudaSuccess; }
inline cudaError_t cudaProfilerStop() { return cudaSuccess; }

// The stack limit sizes the fibers' stacks (never below the 64 KiB default).
inline cudaError_t cudaDeviceSetLimit(cudaLimit limit, size_t value) {
  if (limit == cudaLimitStackSize) {
    ::cudaperf::detail::g_config.stack_size = value > 64 * 1024 ? value : 64 * 1024;
  }
  return limit <= cudaLimitPersistingL2CacheSize
             ? cudaSuccess
             : ::cudaperf::detail::record_error(cudaErrorUnsupportedLimit);
}
inline cudaError_t cudaDeviceGetLimit(size_t* value, cudaLimit limit) {
  if (value == nullptr) return ::cudaperf::detail::record_error(cudaErrorInvalidValue);
  switch (limit) {
    case cudaLimitStackSize:
      *value = ::cudaperf::detail::g_config.stack_size;
      break;
    case cudaLimitPrintfFifoSize:
      *value = 64 * 1024;
      break;
    case cudaLimitMallocHeapSize:
      *value = size_t{8} << 20;
      break;
    default:
      *value = 0;
      break;
  }
  return cudaSuccess;
}

// ---- streams and events (everything is already complete when it is enqueued) ---------------

inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags) {
  if (s == nullptr) return ::cudaperf::detail::record_error(cudaErrorInvalidValue);
  *s = new (::cudaperf::detail::runtime_malloc(sizeof(CUstream_st))) CUstream_st{flags};  // not the host arena
  return cudaSuccess;
}
inline cudaError_t cudaStreamCreate(cudaStream_t* s) { return cudaStreamCreateWithFlags(s, 0); }
inline cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned flags, int) {
  return cudaStreamCreateWithFlags(s, flags);
}
inline bool cudaperf_is_builtin_stream(cudaStream_t s) {
  return s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread;
}
inline cudaError_t cudaStreamDestroy(cudaStream_t s) {
  if (!cudaperf_is_builtin_stream(s)) ::cudaperf::detail::runtime_free(s);
  return cudaSuccess;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaStreamQuery(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned = 0) {
  return cudaSuccess;
}
typedef void (*cudaHostFn_t)(void*);
inline cudaError_t cudaLaunchHostFunc(cudaStream_t, cudaHostFn_t fn, void* data) {
  if (fn == nullptr) return ::cudaperf::detail::record_error(cudaErrorInvalidValue);
  fn(data);
  return cudaSuccess;
}

inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned) {
  if (e == nullptr) return ::cudaperf::detail::record_error(cudaErrorInvalidValue);
  *e = new (::cudaperf::detail::runtime_malloc(sizeof(CUevent_st))) CUevent_st{0.0, false};
  return cudaSuccess;
}
inline cudaError_t cudaEventCreate(cudaEvent_t* e) { return cudaEventCreateWithFlags(e, 0); }
inline cudaError_t cudaEventCreate(cudaEvent_t* e, unsigned flags) {
  return cudaEventCreateWithFlags(e, flags);
}
inline cudaError_t cudaEventDestroy(cudaEvent_t e) {
  ::cudaperf::detail::runtime_free(e);
  return cudaSuccess;
}
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t = 0) {
  if (e == nullptr) return ::cudaperf::detail::record_error(cudaErrorInvalidResourceHandle);
  e->ms = ::cudaperf::detail::now_ms();
  e->recorded = true;
  return cudaSuccess;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  return e == nullptr ? ::cudaperf::detail::record_error(cudaErrorInvalidResourceHandle)
                      : cudaSuccess;
}
inline cudaError_t cudaEventQuery(cudaEvent_t e) { return cudaEventSynchronize(e); }
inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (ms == nullptr) return ::cudaperf::detail::record_error(cudaErrorInvalidValue);
  if (start == nullptr || end == nullptr || !start->recorded || !end->recorded) {
    return ::cudaperf::detail::record_error(cudaErrorInvalidResourceHandle);
  }
  *ms = static_cast<float>(end->ms - start->ms);
  return cudaSuccess;
}

// ---- kernel attributes and occupancy ----------------------------------------------------------

// cudaFuncSetAttribute(kernel, attr, value) records the attribute under the kernel's name as
// written (the macro passes the call's text): a launch knows its kernel by name only.
inline cudaError_t cudaperf_func_set_attribute(const char* args, const void* func,
                                               cudaFuncAttribute attr, int value) {
  using namespace ::cudaperf::detail;
  if (func == nullptr) return record_error(cudaErrorInvalidDeviceFunction);
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaSuccess;
  char first[256];  // the call's first top-level argument: the kernel
  size_t n = 0;
  int depth = 0;
  for (const char* p = args; *p != '\0' && n + 1 < sizeof first; ++p) {
    if (*p == '(' || *p == '<' || *p == '[') ++depth;
    if (*p == ')' || *p == '>' || *p == ']') --depth;
    if (*p == ',' && depth == 0) break;
    first[n++] = *p;
  }
  first[n] = '\0';
  MutexLock lock(&g_kernel_limits_mutex);
  KernelLimits* k = kernel_limits(first, true);
  long static_shared = k != nullptr && k->static_shared > 0 ? k->static_shared : 0;
  if (value < 0 || static_cast<long>(value) + static_shared > g_shared_optin)
    return record_error(cudaErrorInvalidValue);
  if (k != nullptr) k->max_dynamic_shared = value;
  return cudaSuccess;
}
template <class F>
inline cudaError_t cudaperf_func_set_attribute(const char* args, F* func, cudaFuncAttribute attr,
                                               int value) {
  return cudaperf_func_set_attribute(args, reinterpret_cast<const void*>(func), attr, value);
}
#define cudaFuncSetAttribute(...) cudaperf_func_set_attribute(#__VA_ARGS__, __VA_ARGS__)
template <class F>
inline cudaError_t cudaFuncSetCacheConfig(F*, cudaFuncCache) {
  return cudaSuccess;
}
template <class F>
inline cudaError_t cudaFuncSetSharedMemConfig(F*, cudaSharedMemConfig) {
  return cudaSuccess;
}
template <class F>
inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, F* func) {
  if (attr == nullptr || func == nullptr)
    return ::cudaperf::detail::record_error(cudaErrorInvalidValue);
  std::memset(attr, 0, sizeof *attr);
  attr->maxThreadsPerBlock = static_cast<int>(::cudaperf::detail::kMaxThreadsPerBlock);
  attr->numRegs = 32;
  attr->ptxVersion = 90;
  attr->binaryVersion = 90;
  attr->maxDynamicSharedSizeBytes = static_cast<int>(::cudaperf::detail::kSharedPerBlock);
  attr->preferredShmemCarveout = -1;
  return cudaSuccess;
}

template <class F>
inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* blocks, F,
                                                                          int block_size,
                                                                          size_t smem, unsigned) {
  if (blocks == nullptr || block_size <= 0)
    return ::cudaperf::detail::record_error(cudaErrorInvalidValue);
  *blocks = ::cudaperf::detail::occupancy_blocks(block_size, smem);
  return cudaSuccess;
}
template <class F>
inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, F func,
                                                                 int block_size, size_t smem) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(blocks, func, block_size, smem, 0);
}
// The block size with the most resident threads per SM, and a grid that fills every SM.
template <class F, class SmemOf>
inline cudaError_t cudaOccupancyMaxPotentialBlockSizeVariableSMem(int* min_grid, int* block, F,
                                                                  SmemOf smem_of, int limit = 0) {
  if (min_grid == nullptr || block == nullptr)
    return ::cudaperf::detail::record_error(cudaErrorInvalidValue);
  int top = limit > 0 && limit < 1024 ? limit : 1024;
  int best = 0, best_threads = -1, best_blocks = 0;
  for (int b = top; b >= 1; b = b > 32 ? b - 32 : b - 1) {
    int n = ::cudaperf::detail::occupancy_blocks(b, static_cast<size_t>(smem_of(b)));
    if (n * b > best_threads) {
      best_threads = n * b;
      best = b;
      best_blocks = n;
    }
  }
  *block = best;
  *min_grid = best_blocks * static_cast<int>(::cudaperf::detail::configured_workers());
  return cudaSuccess;
}
template <class F>
inline cudaError_t cudaOccupancyMaxPotentialBlockSize(int* min_grid, int* block, F func,
                                                      size_t smem = 0, int limit = 0) {
  return cudaOccupancyMaxPotentialBlockSizeVariableSMem(
      min_grid, block, func, [smem](int) { return smem; }, limit);
}
template <class F>
inline cudaError_t cudaOccupancyAvailableDynamicSMemPerBlock(size_t* smem, F, int blocks,
                                                             int block_size) {
  if (smem == nullptr || blocks <= 0 || block_size <= 0) {
    return ::cudaperf::detail::record_error(cudaErrorInvalidValue);
  }
  size_t per_block = (228 * 1024) / static_cast<size_t>(blocks);
  size_t avail = per_block > 1024 ? per_block - 1024 : 0;
  *smem =
      avail < ::cudaperf::detail::kMaxDynamicShared ? avail : ::cudaperf::detail::kMaxDynamicShared;
  return cudaSuccess;
}

// ---- cudaLaunchKernel ---------------------------------------------------------------------------

namespace cudaperf {
namespace detail {
template <class... P, size_t... I>
inline cudaError_t launch_packed(void (*kernel)(P...), dim3 grid, dim3 block, void** args,
                                 size_t smem, std::index_sequence<I...>) {
  cudaError_t before = tls_last_error;
  tls_last_error = cudaSuccess;
  ::cudaperf::launch<true>(
      "cudaLaunchKernel", 0, grid, block, smem, nullptr, [kernel](auto... a) { kernel(a...); },
      *static_cast<std::decay_t<P>*>(args[I])...);
  cudaError_t e = tls_last_error;
  if (e == cudaSuccess) tls_last_error = before;
  return e;
}
}  // namespace detail
}  // namespace cudaperf

template <class... P>
inline cudaError_t cudaLaunchKernel(void (*kernel)(P...), dim3 grid, dim3 block, void** args,
                                    size_t smem = 0, cudaStream_t stream = nullptr) {
  (void)stream;
  if (kernel == nullptr || (sizeof...(P) > 0 && args == nullptr)) {
    return ::cudaperf::detail::record_error(cudaErrorInvalidValue);
  }
  return ::cudaperf::detail::launch_packed(kernel, grid, block, args, smem,
                                           std::index_sequence_for<P...>{});
}
namespace cudaperf {
namespace detail {
template <class T>
struct dependent_false : std::false_type {};
}  // namespace detail
}  // namespace cudaperf

template <class T = void>
inline cudaError_t cudaLaunchKernel(const void*, dim3, dim3, void**, size_t = 0,
                                    cudaStream_t = nullptr) {
  static_assert(::cudaperf::detail::dependent_false<T>::value,
                "the CPU backend needs the kernel's own type: call cudaLaunchKernel(kernel, ...) "
                "without casting the kernel to void*");
  return cudaErrorInvalidDeviceFunction;
}
