// CUDA host API, part 1: errors, allocation, copies, memset and symbols.
#pragma once

namespace cudaperf {
namespace detail {

// Live device allocations, so cudaFree can reject pointers it never handed out. A plain array:
// programs hold few allocations, and std containers would be compiled into every submission.
struct Allocation {
  const void* ptr;
  size_t bytes;
};
struct Allocations {
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  Allocation* items = nullptr;
  size_t count = 0;
  size_t capacity = 0;

  bool add(const void* p, size_t bytes) {
    if (count == capacity) {
      size_t cap = capacity == 0 ? 64 : capacity * 2;
      void* grown = runtime_realloc(items, cap * sizeof(Allocation));
      if (grown == nullptr) return false;
      items = static_cast<Allocation*>(grown);
      capacity = cap;
    }
    items[count++] = Allocation{p, bytes};
    return true;
  }
  bool remove(const void* p) {
    for (size_t i = 0; i < count; ++i) {
      if (items[i].ptr == p) {
        items[i] = items[--count];
        return true;
      }
    }
    return false;
  }
  bool contains(const void* p) const {  // anywhere inside an allocation
    const char* c = static_cast<const char*>(p);
    for (size_t i = 0; i < count; ++i) {
      const char* base = static_cast<const char*>(items[i].ptr);
      if (c >= base && c < base + items[i].bytes) return true;
    }
    return false;
  }
};
inline Allocations g_allocations;

inline cudaError_t allocate(void** ptr, size_t bytes) {
  if (ptr == nullptr) return record_error(cudaErrorInvalidValue);
  *ptr = nullptr;
  if (bytes == 0) return cudaSuccess;
  void* p = runtime_aligned_alloc(256, round_up(bytes, 256));  // cudaMalloc's alignment
  if (p == nullptr) return record_error(cudaErrorMemoryAllocation);
  MutexLock lock(&g_allocations.mu);
  if (!g_allocations.add(p, bytes)) {
    runtime_free(p);
    return record_error(cudaErrorMemoryAllocation);
  }
  *ptr = p;
  return cudaSuccess;
}

// cudaMalloc: whole pages of their own, so that host code can be shut out of them (device_memory.h).
inline cudaError_t allocate_device(void** ptr, size_t bytes) {
  if (ptr == nullptr) return record_error(cudaErrorInvalidValue);
  *ptr = nullptr;
  if (bytes == 0) return cudaSuccess;
  size_t mapped = round_up(bytes, page_size());
  void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return record_error(cudaErrorMemoryAllocation);
  MutexLock lock(&g_allocations.mu);
  bool added = g_allocations.add(p, bytes);
  if (added) {
    MutexLock device(&g_device_mutex);
    added = add_device_region(p, mapped, PROT_READ | PROT_WRITE, false, p, -1);
    if (!added) g_allocations.remove(p);
  }
  if (!added) {
    ::munmap(p, mapped);
    return record_error(cudaErrorMemoryAllocation);
  }
  *ptr = p;
  return cudaSuccess;
}

// Out of line: g++ cannot see that remove() refuses pointers no allocation returned
// (cudaFree(&local)) and warns about free() of a stack object where it inlines the call.
__attribute__((noinline)) inline void free_host(void* p) { runtime_free(p); }

inline cudaError_t release(void* p) {
  if (p == nullptr) return cudaSuccess;
  size_t bytes = 0;
  {
    MutexLock lock(&g_allocations.mu);
    for (size_t i = 0; i < g_allocations.count; ++i) {
      if (g_allocations.items[i].ptr == p) bytes = g_allocations.items[i].bytes;
    }
    if (!g_allocations.remove(p)) return record_error(cudaErrorInvalidValue);
  }
  bool device;
  {
    MutexLock lock(&g_device_mutex);
    device = remove_device_region(p);
  }
  if (device) {
    ::munmap(p, round_up(bytes, page_size()));
  } else {
    free_host(p);
  }
  return cudaSuccess;
}

inline bool valid_kind(cudaMemcpyKind kind) {
  return kind >= cudaMemcpyHostToHost && kind <= cudaMemcpyDefault;
}

inline double now_ms() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

inline size_t physical_memory() {
  long pages = ::sysconf(_SC_PHYS_PAGES), size = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && size > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(size)
                               : (size_t{16} << 30);
}

inline void fill_properties(cudaDeviceProp* p) {
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->name, sizeof p->name, "CudaPerf CPU runtime");
  p->totalGlobalMem = physical_memory();
  p->sharedMemPerBlock = kSharedPerBlock;
  p->regsPerBlock = 65536;
  p->warpSize = kWarpSize;
  p->memPitch = 2147483647;
  p->maxThreadsPerBlock = static_cast<int>(kMaxThreadsPerBlock);
  p->maxThreadsDim[0] = static_cast<int>(kMaxBlockDimXY);
  p->maxThreadsDim[1] = static_cast<int>(kMaxBlockDimXY);
  p->maxThreadsDim[2] = static_cast<int>(kMaxBlockDimZ);
  p->maxGridSize[0] = static_cast<int>(kMaxGridDimX);
  p->maxGridSize[1] = static_cast<int>(kMaxGridDimYZ);
  p->maxGridSize[2] = static_cast<int>(kMaxGridDimYZ);
  p->totalConstMem = 65536;
  p->major = 9;
  p->minor = 0;
  p->textureAlignment = 512;
  p->texturePitchAlignment = 32;
  p->multiProcessorCount = static_cast<int>(configured_workers());
  p->canMapHostMemory = 1;
  p->concurrentKernels = 1;
  p->asyncEngineCount = 1;
  p->unifiedAddressing = 1;
  p->memoryBusWidth = 5120;
  p->l2CacheSize = 50 * 1024 * 1024;
  p->maxThreadsPerMultiProcessor = 2048;
  p->globalL1CacheSupported = 1;
  p->localL1CacheSupported = 1;
  p->sharedMemPerMultiprocessor = 228 * 1024;
  p->regsPerMultiprocessor = 65536;
  p->managedMemory = 1;
  p->hostNativeAtomicSupported = 1;
  p->pageableMemoryAccess = 1;
  p->concurrentManagedAccess = 1;
  p->sharedMemPerBlockOptin = kMaxDynamicShared;
  p->maxBlocksPerMultiProcessor = 32;
  p->reservedSharedMemPerBlock = 1024;
  p->clockRate = 1980000;
  p->memoryClockRate = 2619000;
  p->deviceOverlap = 1;
}

inline int device_attribute(cudaDeviceAttr attr) {
  cudaDeviceProp p;
  fill_properties(&p);
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock:
      return p.maxThreadsPerBlock;
    case cudaDevAttrMaxBlockDimX:
      return p.maxThreadsDim[0];
    case cudaDevAttrMaxBlockDimY:
      return p.maxThreadsDim[1];
    case cudaDevAttrMaxBlockDimZ:
      return p.maxThreadsDim[2];
    case cudaDevAttrMaxGridDimX:
      return p.maxGridSize[0];
    case cudaDevAttrMaxGridDimY:
      return p.maxGridSize[1];
    case cudaDevAttrMaxGridDimZ:
      return p.maxGridSize[2];
    case cudaDevAttrMaxSharedMemoryPerBlock:
      return static_cast<int>(p.sharedMemPerBlock);
    case cudaDevAttrTotalConstantMemory:
      return static_cast<int>(p.totalConstMem);
    case cudaDevAttrWarpSize:
      return p.warpSize;
    case cudaDevAttrMaxPitch:
      return static_cast<int>(p.memPitch);
    case cudaDevAttrMaxRegistersPerBlock:
      return p.regsPerBlock;
    case cudaDevAttrClockRate:
      return p.clockRate;
    case cudaDevAttrTextureAlignment:
      return static_cast<int>(p.textureAlignment);
    case cudaDevAttrGpuOverlap:
      return 1;
    case cudaDevAttrMultiProcessorCount:
      return p.multiProcessorCount;
    case cudaDevAttrCanMapHostMemory:
      return 1;
    case cudaDevAttrConcurrentKernels:
      return 1;
    case cudaDevAttrMemoryClockRate:
      return p.memoryClockRate;
    case cudaDevAttrGlobalMemoryBusWidth:
      return p.memoryBusWidth;
    case cudaDevAttrL2CacheSize:
      return p.l2CacheSize;
    case cudaDevAttrMaxThreadsPerMultiProcessor:
      return p.maxThreadsPerMultiProcessor;
    case cudaDevAttrAsyncEngineCount:
      return p.asyncEngineCount;
    case cudaDevAttrUnifiedAddressing:
      return 1;
    case cudaDevAttrComputeCapabilityMajor:
      return p.major;
    case cudaDevAttrComputeCapabilityMinor:
      return p.minor;
    case cudaDevAttrGlobalL1CacheSupported:
      return 1;
    case cudaDevAttrLocalL1CacheSupported:
      return 1;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor:
      return static_cast<int>(p.sharedMemPerMultiprocessor);
    case cudaDevAttrMaxRegistersPerMultiprocessor:
      return p.regsPerMultiprocessor;
    case cudaDevAttrManagedMemory:
      return 1;
    case cudaDevAttrHostNativeAtomicSupported:
      return 1;
    case cudaDevAttrSingleToDoublePrecisionPerfRatio:
      return 2;
    case cudaDevAttrPageableMemoryAccess:
      return 1;
    case cudaDevAttrConcurrentManagedAccess:
      return 1;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
      return static_cast<int>(p.sharedMemPerBlockOptin);
    case cudaDevAttrMaxBlocksPerMultiprocessor:
      return p.maxBlocksPerMultiProcessor;
    case cudaDevAttrReservedSharedMemoryPerBlock:
      return static_cast<int>(p.reservedSharedMemPerBlock);
    default:
      return 0;
  }
}

// Blocks per SM limited by threads (2048), blocks (32) and shared memory (228 KiB).
inline int occupancy_blocks(int block_size, size_t dynamic_smem) {
  if (block_size <= 0 || block_size > static_cast<int>(kMaxThreadsPerBlock)) return 0;
  if (dynamic_smem > kMaxDynamicShared) return 0;
  int by_threads = 2048 / block_size;
  int by_smem = static_cast<int>((228 * 1024) / (dynamic_smem + 1024));
  int blocks = by_threads < 32 ? by_threads : 32;
  return blocks < by_smem ? blocks : by_smem;
}

}  // namespace detail
}  // namespace cudaperf

// ---- errors ---------------------------------------------------------------------------------

#if !CUDAPERF_DEFINE_LINKED
CUDAPERF_LINKED const char* cudaGetErrorName(cudaError_t e);
CUDAPERF_LINKED const char* cudaGetErrorString(cudaError_t e);
#else
CUDAPERF_LINKED const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
#define CUDAPERF_ERROR_NAME(name, value, text) \
  case name:                                   \
    return #name;
    CUDAPERF_ERRORS(CUDAPERF_ERROR_NAME)
#undef CUDAPERF_ERROR_NAME
    default:
      return "cudaErrorUnknown";
  }
}
CUDAPERF_LINKED const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
#define CUDAPERF_ERROR_TEXT(name, value, text) \
  case name:                                   \
    return text != nullptr ? text : #name;
    CUDAPERF_ERRORS(CUDAPERF_ERROR_TEXT)
#undef CUDAPERF_ERROR_TEXT
    default:
      return "unrecognized error code";
  }
}
#endif
inline cudaError_t cudaGetLastError() {
  cudaError_t e = ::cudaperf::detail::tls_last_error;
  ::cudaperf::detail::tls_last_error = cudaSuccess;
  return e;
}
inline cudaError_t cudaPeekAtLastError() { return ::cudaperf::detail::tls_last_error; }

// ---- memory ---------------------------------------------------------------------------------

inline cudaError_t cudaMalloc(void** p, size_t bytes) {
  return ::cudaperf::detail::allocate_device(p, bytes);
}
template <class T>
inline cudaError_t cudaMalloc(T** p, size_t bytes) {
  return ::cudaperf::detail::allocate_device(reinterpret_cast<void**>(p), bytes);
}
inline cudaError_t cudaMallocManaged(void** p, size_t bytes, unsigned flags = cudaMemAttachGlobal) {
  (void)flags;
  return ::cudaperf::detail::allocate(p, bytes);
}
template <class T>
inline cudaError_t cudaMallocManaged(T** p, size_t bytes, unsigned flags = cudaMemAttachGlobal) {
  return cudaMallocManaged(reinterpret_cast<void**>(p), bytes, flags);
}
inline cudaError_t cudaMallocHost(void** p, size_t bytes) {
  return ::cudaperf::detail::allocate(p, bytes);
}
template <class T>
inline cudaError_t cudaMallocHost(T** p, size_t bytes) {
  return ::cudaperf::detail::allocate(reinterpret_cast<void**>(p), bytes);
}
inline cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned flags) {
  (void)flags;
  return ::cudaperf::detail::allocate(p, bytes);
}
template <class T>
inline cudaError_t cudaHostAlloc(T** p, size_t bytes, unsigned flags) {
  return cudaHostAlloc(reinterpret_cast<void**>(p), bytes, flags);
}
inline cudaError_t cudaMallocPitch(void** p, size_t* pitch, size_t width, size_t height) {
  if (pitch == nullptr) return ::cudaperf::detail::record_error(cudaErrorInvalidValue);
  *pitch = ::cudaperf::detail::round_up(width == 0 ? 1 : width, 256);
  return ::cudaperf::detail::allocate_device(p, *pitch * height);
}
template <class T>
inline cudaError_t cudaMallocPitch(T** p, size_t* pitch, size_t width, size_t height) {
  return cudaMallocPitch(reinterpret_cast<void**>(p), pitch, width, height);
}
inline cudaError_t cudaFree(void* p) { return ::cudaperf::detail::release(p); }
inline cudaError_t cudaFreeHost(void* p) { return ::cudaperf::detail::release(p); }
inline cudaError_t cudaHostRegister(void*, size_t, unsigned) { return cudaSuccess; }
inline cudaError_t cudaHostUnregister(void*) { return cudaSuccess; }
inline cudaError_t cudaHostGetDevicePointer(void** d, void* h, unsigned) {
  if (d == nullptr) return ::cudaperf::detail::record_error(cudaErrorInvalidValue);
  *d = h;
  return cudaSuccess;
}
inline cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  size_t total = ::cudaperf::detail::physical_memory();
  if (free_bytes != nullptr) *free_bytes = total / 2;
  if (total_bytes != nullptr) *total_bytes = total;
  return cudaSuccess;
}
template <class... A>
inline cudaError_t cudaMemPrefetchAsync(const void*, size_t, A...) {
  return cudaSuccess;
}
template <class... A>
inline cudaError_t cudaMemAdvise(const void*, size_t, A...) {
  return cudaSuccess;
}
inline cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* a, const void* p) {
  if (a == nullptr) return ::cudaperf::detail::record_error(cudaErrorInvalidValue);
  bool device = false;
  {
    ::cudaperf::detail::MutexLock lock(&::cudaperf::detail::g_allocations.mu);
    device = ::cudaperf::detail::g_allocations.contains(p);
  }
  a->type = device ? cudaMemoryTypeDevice : cudaMemoryTypeUnregistered;
  a->device = 0;
  a->devicePointer = const_cast<void*>(p);
  a->hostPointer = const_cast<void*>(p);
  return cudaSuccess;
}

inline cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (!::cudaperf::detail::valid_kind(kind)) {
    return ::cudaperf::detail::record_error(cudaErrorInvalidMemcpyDirection);
  }
  if (bytes == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr)
    return ::cudaperf::detail::record_error(cudaErrorInvalidValue);
  bool in_entry = ::cudaperf::detail::g_host_depth > 0;
  bool from_host = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyHostToHost ||
                   (kind == cudaMemcpyDefault && !::cudaperf::detail::in_device_region(src));
  bool to_host = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyHostToHost ||
                 (kind == cudaMemcpyDefault && !::cudaperf::detail::in_device_region(dst));
  if (in_entry && from_host && !to_host) {
    const ::cudaperf::detail::DeviceRegion* r = ::cudaperf::detail::device_region_of(dst);
    if (r != nullptr && r->harness) ::cudaperf::detail::g_host_wrote_arg = r->arg;
  }
  ::cudaperf::detail::DeviceDoor door;
  std::memmove(dst, src, bytes);
  if (in_entry) ::cudaperf::detail::note_host_copy(dst, src, bytes, from_host, to_host);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                                   cudaStream_t = 0) {
  return cudaMemcpy(dst, src, bytes, kind);
}
inline cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch,
                                size_t width, size_t height, cudaMemcpyKind kind) {
  if (width > dpitch || width > spitch)
    return ::cudaperf::detail::record_error(cudaErrorInvalidPitchValue);
  for (size_t r = 0; r < height; ++r) {
    cudaError_t e = cudaMemcpy(static_cast<char*>(dst) + r * dpitch,
                               static_cast<const char*>(src) + r * spitch, width, kind);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}
inline cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                                     size_t width, size_t height, cudaMemcpyKind kind,
                                     cudaStream_t = 0) {
  return cudaMemcpy2D(dst, dpitch, src, spitch, width, height, kind);
}
inline cudaError_t cudaMemcpyPeer(void* dst, int, const void* src, int, size_t bytes) {
  return cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
}
inline cudaError_t cudaMemset(void* p, int value, size_t bytes) {
  if (bytes == 0) return cudaSuccess;
  if (p == nullptr) return ::cudaperf::detail::record_error(cudaErrorInvalidValue);
  ::cudaperf::detail::DeviceDoor door;
  std::memset(p, value, bytes);
  return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t = 0) {
  return cudaMemset(p, value, bytes);
}
inline cudaError_t cudaMemset2D(void* p, size_t pitch, int value, size_t width, size_t height) {
  if (width > pitch) return ::cudaperf::detail::record_error(cudaErrorInvalidPitchValue);
  for (size_t r = 0; r < height; ++r) {
    cudaError_t e = cudaMemset(static_cast<char*>(p) + r * pitch, value, width);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

// __constant__ and __device__ variables are ordinary globals here.
template <class T>
inline cudaError_t cudaMemcpyToSymbol(const T& symbol, const void* src, size_t count,
                                      size_t offset = 0,
                                      cudaMemcpyKind kind = cudaMemcpyHostToDevice) {
  if (offset + count > sizeof(T)) return ::cudaperf::detail::record_error(cudaErrorInvalidValue);
  return cudaMemcpy(reinterpret_cast<char*>(const_cast<T*>(&symbol)) + offset, src, count, kind);
}
template <class T>
inline cudaError_t cudaMemcpyFromSymbol(void* dst, const T& symbol, size_t count, size_t offset = 0,
                                        cudaMemcpyKind kind = cudaMemcpyDeviceToHost) {
  if (offset + count > sizeof(T)) return ::cudaperf::detail::record_error(cudaErrorInvalidValue);
  return cudaMemcpy(dst, reinterpret_cast<const char*>(&symbol) + offset, count, kind);
}
template <class T>
inline cudaError_t cudaMemcpyToSymbolAsync(const T& symbol, const void* src, size_t count,
                                           size_t offset = 0,
                                           cudaMemcpyKind kind = cudaMemcpyHostToDevice,
                                           cudaStream_t = 0) {
  return cudaMemcpyToSymbol(symbol, src, count, offset, kind);
}
template <class T>
inline cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const T& symbol, size_t count,
                                             size_t offset = 0,
                                             cudaMemcpyKind kind = cudaMemcpyDeviceToHost,
                                             cudaStream_t = 0) {
  return cudaMemcpyFromSymbol(dst, symbol, count, offset, kind);
}
template <class T>
inline cudaError_t cudaGetSymbolAddress(void** p, const T& symbol) {
  if (p == nullptr) return ::cudaperf::detail::record_error(cudaErrorInvalidValue);
  *p = const_cast<T*>(&symbol);
  return cudaSuccess;
}
template <class T>
inline cudaError_t cudaGetSymbolSize(size_t* size, const T&) {
  if (size == nullptr) return ::cudaperf::detail::record_error(cudaErrorInvalidValue);
  *size = sizeof(T);
  return cudaSuccess;
}
