// The host arena: the submission's own host heap, closed to kernels.
//
// On a GPU a kernel that dereferences memory from the host's malloc/new faults (an illegal
// address). Here both share one process, so the submission's allocator calls are routed to an
// arena of mappings the runtime controls, made PROT_NONE while a kernel runs: a kernel's access
// faults and the fault handler names it. Only the submission's calls are routed: the CPU
// backend links the submission with `-Wl,--wrap=<symbol>` for malloc, calloc, realloc, free,
// aligned_alloc, posix_memalign, memalign and every operator new/delete (its references go to
// the __wrap_ functions below), and the prebuilt runtime object's own references to those
// symbols are renamed to __real_<symbol> (objcopy --redefine-sym; the linker binds them to the
// real allocator). The runtime's inline code, compiled into the submission's object, allocates
// through runtime_malloc & co. (defined in the runtime object), never through malloc/new.
//
// Not routed (a miss, never a false failure): allocations made inside shared libraries
// (libstdc++'s out-of-line code such as std::string's buffers, strdup) and header-only builds
// (no runtime object). A kernel's own malloc/new (CUDA's device heap) goes to the real
// allocator; free/realloc of a pointer the arena did not make go to the real ones.
#pragma once

namespace cudaperf {
namespace detail {

struct ArenaRegion {
  char* lo;
  size_t bytes;
};
constexpr unsigned kMaxArenaRegions = 1024;
constexpr size_t kArenaChunk = size_t(4) << 20;  // the arena grows by 4 MiB at least
inline ArenaRegion g_arena_regions[kMaxArenaRegions];
inline unsigned g_arena_region_count = 0;
inline bool g_arena_closed = false;
inline pthread_mutex_t g_arena_mutex = PTHREAD_MUTEX_INITIALIZER;

#if !CUDAPERF_DEFINE_LINKED
CUDAPERF_LINKED void* runtime_malloc(size_t bytes);
CUDAPERF_LINKED void* runtime_aligned_alloc(size_t align, size_t bytes);
CUDAPERF_LINKED void* runtime_realloc(void* p, size_t bytes);
CUDAPERF_LINKED void runtime_free(void* p);
CUDAPERF_LINKED void arena_close(bool closed);
CUDAPERF_COLD CUDAPERF_LINKED bool in_host_arena(const void* p);
__attribute__((noinline)) CUDAPERF_LINKED void* host_variable_storage(size_t bytes, size_t align, const void* init);
#else
// The runtime's own allocations: in the runtime object these calls are renamed to the real
// allocator, whatever the submission's are routed to.
CUDAPERF_LINKED void* runtime_malloc(size_t bytes) { return std::malloc(bytes); }
CUDAPERF_LINKED void* runtime_aligned_alloc(size_t align, size_t bytes) { return std::aligned_alloc(align, bytes); }
CUDAPERF_LINKED void* runtime_realloc(void* p, size_t bytes) { return std::realloc(p, bytes); }
CUDAPERF_LINKED void runtime_free(void* p) { std::free(p); }

// Around every launch (the launch lock held): closes the arena to the kernels, then reopens it.
// Two mprotect calls per region and launch; nothing when the submission allocated nothing.
CUDAPERF_LINKED void arena_close(bool closed) {
  MutexLock lock(&g_arena_mutex);
  if (g_arena_closed == closed) return;
  g_arena_closed = closed;
  for (unsigned i = 0; i < g_arena_region_count; ++i)
    ::mprotect(g_arena_regions[i].lo, g_arena_regions[i].bytes, closed ? PROT_NONE : PROT_READ | PROT_WRITE);
}

// Async-signal-safe (the fault handler asks): no locks, reads only.
CUDAPERF_COLD CUDAPERF_LINKED bool in_host_arena(const void* p) {
  const char* c = static_cast<const char*>(p);
  unsigned n = g_arena_region_count;
  for (unsigned i = 0; i < n && i < kMaxArenaRegions; ++i)
    if (c >= g_arena_regions[i].lo && c < g_arena_regions[i].lo + g_arena_regions[i].bytes) return true;
  return false;
}

#if defined(CUDAPERF_RUNTIME_OBJECT)
inline void* arena_alloc_or_real(size_t bytes, size_t align);  // the routed allocator, below
#endif

// Storage of a file-scope host array (host_variable below): from the arena in the runtime object,
// from the C library in a header-only build (no arena there: kernels reading it are not caught).
// Not cold, as device_variable_storage (device_memory.h says why).
__attribute__((noinline)) CUDAPERF_LINKED void* host_variable_storage(size_t bytes, size_t align, const void* init) {
  size_t rounded = (bytes + 15) & ~size_t(15);
#if defined(CUDAPERF_RUNTIME_OBJECT)
  void* p = arena_alloc_or_real(rounded == 0 ? 16 : rounded, align);
#else
  void* p = std::aligned_alloc(align < 16 ? 16 : align, rounded == 0 ? 16 : rounded);
#endif
  if (p == nullptr) std::abort();
  if (init != nullptr)
    std::memcpy(p, init, bytes);
  else
    std::memset(p, 0, bytes);
  return p;
}
#endif

}  // namespace detail

// File-scope host arrays: the pre-pass turns `T name[N] = init;` (no __device__) into a reference to
// storage made here, in the host arena where there is one (the runtime object), so a kernel handed
// its address faults, as it does on a GPU, while host code uses the array as before. Zero-filled
// or copied from the initialiser by the runtime (a unit initialiser may call only runtime names).
template <class T>
T& host_variable() {
  using U = std::remove_cv_t<T>;
  return detail::value_initialised<T>(detail::host_variable_storage(sizeof(U), alignof(U), nullptr));
}

template <class T>
T& host_variable(const std::remove_cv_t<T>& init) {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_trivially_copyable_v<U>)  // copied by the runtime: no library call in the initialiser
    return *static_cast<T*>(detail::host_variable_storage(sizeof(U), alignof(U), &init));
  else
    return detail::copy_initialised<T>(detail::host_variable_storage(sizeof(U), alignof(U), nullptr), init);
}

}  // namespace cudaperf

#if defined(CUDAPERF_RUNTIME_OBJECT)
// The routed allocator (runtime object only). Blocks are powers of two (16 B and up) from
// per-class free lists, carved from mappings grown contiguously where the kernel allows
// (MAP_FIXED_NOREPLACE at the end of the last one): adjacent mappings merge into one region, so a
// launch costs two mprotect calls however many blocks are live. Every block has a 16-byte header
// just below the pointer handed out: where its storage starts, its class and a tag. Freed blocks
// of 4 MiB and more give their pages back (madvise) but keep their address space.
namespace cudaperf {
namespace detail {

struct ArenaHeader {
  char* block;
  uint32_t cls;
  uint32_t tag;
};
constexpr uint32_t kArenaTag = 0xA7E4A5C1u;
constexpr unsigned kArenaClasses = 44;  // 16 B .. 128 TiB
struct ArenaState {
  void* free_lists[kArenaClasses] = {};
  char* bump = nullptr;
  char* bump_end = nullptr;
};
inline ArenaState g_arena;

extern "C" void* __real_malloc(size_t);
extern "C" void __real_free(void*);
extern "C" void* __real_realloc(void*, size_t);

constexpr size_t kArenaHuge = size_t(2) << 20;  // x86-64's transparent huge page

// A fresh mapping of `size` (a multiple of kArenaHuge) at `at`, or anywhere kArenaHuge-aligned when
// `at` is null, made eligible for transparent huge pages: mprotect's cost grows with the page
// table entries it rewrites, 512 times fewer with huge pages (docs/cpu-backend.md, 5).
inline char* arena_map(char* at, size_t size, int prot) {
  if (at != nullptr) {
    void* p = ::mmap(at, size, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    if (p != at) {  // a kernel that took the flag as a hint
      ::munmap(p, size);
      return nullptr;
    }
  } else {
    void* p = ::mmap(nullptr, size + kArenaHuge, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    char* c = static_cast<char*>(p);
    at = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(c) + kArenaHuge - 1) & ~uintptr_t(kArenaHuge - 1));
    if (at > c) ::munmap(c, static_cast<size_t>(at - c));
    if (c + size + kArenaHuge > at + size) ::munmap(at + size, static_cast<size_t>(c + size + kArenaHuge - (at + size)));
  }
  ::madvise(at, size, MADV_HUGEPAGE);
  return at;
}

// At least `bytes` more bump space (under g_arena_mutex); false: out of address space or regions.
inline bool arena_grow(size_t bytes) {
  size_t size = bytes < kArenaChunk ? kArenaChunk : (bytes + kArenaHuge - 1) & ~(kArenaHuge - 1);
  if (size < bytes) return false;
  int prot = g_arena_closed ? PROT_NONE : PROT_READ | PROT_WRITE;
  if (g_arena.bump_end != nullptr && arena_map(g_arena.bump_end, size, prot) != nullptr) {
    g_arena_regions[g_arena_region_count - 1].bytes += size;
    g_arena.bump_end += size;
    return true;
  }
  if (g_arena_region_count >= kMaxArenaRegions) return false;
  char* p = arena_map(nullptr, size, prot);
  if (p == nullptr) return false;
  g_arena_regions[g_arena_region_count] = {p, size};
  __atomic_store_n(&g_arena_region_count, g_arena_region_count + 1, __ATOMIC_RELEASE);
  g_arena.bump = p;
  g_arena.bump_end = p + size;
  return true;
}

// Storage of at least `need` bytes (header included); nullptr: the caller falls back to the real
// allocator.
inline char* arena_block(size_t need, uint32_t* cls) {
  uint32_t c = 0;
  while (c < kArenaClasses && (size_t(16) << c) < need) ++c;
  if (c == kArenaClasses) return nullptr;
  *cls = c;
  if (void* head = g_arena.free_lists[c]) {
    g_arena.free_lists[c] = *static_cast<void**>(head);
    return static_cast<char*>(head);
  }
  size_t size = size_t(16) << c;
  if (size_t(g_arena.bump_end - g_arena.bump) < size && !arena_grow(size - size_t(g_arena.bump_end - g_arena.bump)))
    return nullptr;
  char* p = g_arena.bump;
  g_arena.bump += size;
  return p;
}

inline ArenaHeader* arena_header(void* p) {
  if (p == nullptr || !in_host_arena(p)) return nullptr;
  ArenaHeader* h = static_cast<ArenaHeader*>(p) - 1;
  return h->tag == kArenaTag ? h : nullptr;
}

// A kernel's own malloc (CUDA's device heap) and a full arena use the real allocator.
inline void* arena_alloc(size_t bytes, size_t align) {
  if (tls_worker != nullptr && tls_worker->kernel != nullptr) return nullptr;
  if (align < 16) align = 16;
  size_t need = bytes + sizeof(ArenaHeader) + (align - 16);
  if (need < bytes) return nullptr;
  MutexLock lock(&g_arena_mutex);
  if (g_arena_closed) return nullptr;
  uint32_t cls = 0;
  char* block = arena_block(need, &cls);
  if (block == nullptr) return nullptr;
  uintptr_t user = (reinterpret_cast<uintptr_t>(block) + sizeof(ArenaHeader) + align - 1) & ~(uintptr_t(align) - 1);
  ArenaHeader* h = reinterpret_cast<ArenaHeader*>(user) - 1;
  *h = ArenaHeader{block, cls, kArenaTag};
  return reinterpret_cast<void*>(user);
}

inline void* arena_alloc_or_real(size_t bytes, size_t align) {
  void* p = arena_alloc(bytes, align);
  if (p != nullptr) return p;
  if (align <= 16) return __real_malloc(bytes == 0 ? 1 : bytes);
  void* q = nullptr;
  return ::posix_memalign(&q, align, bytes) == 0 ? q : nullptr;  // renamed to the real one
}

inline void arena_free(void* p) {
  ArenaHeader* h = arena_header(p);
  if (h == nullptr) {
    __real_free(p);
    return;
  }
  char* block = h->block;
  uint32_t cls = h->cls;
  h->tag = 0;
  size_t size = size_t(16) << cls;
  if (size >= (size_t(4) << 20)) {  // the free-list link at the block's start stays
    char* lo = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(block) + 16 + 4095) & ~uintptr_t(4095));
    ::madvise(lo, static_cast<size_t>(block + size - lo), MADV_DONTNEED);
  }
  MutexLock lock(&g_arena_mutex);
  *reinterpret_cast<void**>(block) = g_arena.free_lists[cls];
  g_arena.free_lists[cls] = block;
}

inline void* arena_realloc(void* p, size_t bytes) {
  ArenaHeader* h = arena_header(p);
  if (p != nullptr && h == nullptr) return __real_realloc(p, bytes);
  if (p == nullptr) return arena_alloc_or_real(bytes, 16);
  if (bytes == 0) {
    arena_free(p);
    return nullptr;
  }
  size_t usable = (size_t(16) << h->cls) - static_cast<size_t>(static_cast<char*>(p) - h->block);
  if (bytes <= usable) return p;
  void* q = arena_alloc_or_real(bytes, 16);
  if (q == nullptr) return nullptr;
  std::memcpy(q, p, usable);
  arena_free(p);
  return q;
}

}  // namespace detail
}  // namespace cudaperf

extern "C" {
void* __wrap_malloc(size_t n) { return cudaperf::detail::arena_alloc_or_real(n, 16); }
void* __wrap_calloc(size_t count, size_t size) {
  size_t n = count * size;
  if (size != 0 && n / size != count) return nullptr;
  void* p = cudaperf::detail::arena_alloc_or_real(n, 16);
  if (p != nullptr) std::memset(p, 0, n);
  return p;
}
void* __wrap_realloc(void* p, size_t n) { return cudaperf::detail::arena_realloc(p, n); }
void __wrap_free(void* p) { cudaperf::detail::arena_free(p); }
void* __wrap_aligned_alloc(size_t align, size_t n) { return cudaperf::detail::arena_alloc_or_real(n, align); }
void* __wrap_memalign(size_t align, size_t n) { return cudaperf::detail::arena_alloc_or_real(n, align); }
int __wrap_posix_memalign(void** out, size_t align, size_t n) {
  if (align < sizeof(void*) || (align & (align - 1)) != 0) return EINVAL;
  void* p = cudaperf::detail::arena_alloc_or_real(n, align);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
// operator new / delete, by their mangled names (x86-64: size_t is unsigned long, m).
[[noreturn]] CUDAPERF_COLD void cudaperf_arena_bad_alloc() { throw std::bad_alloc(); }
static void* cudaperf_new(size_t n, size_t align) {
  void* p = cudaperf::detail::arena_alloc_or_real(n, align);
  if (p == nullptr) cudaperf_arena_bad_alloc();
  return p;
}
void* __wrap__Znwm(size_t n) { return cudaperf_new(n, 16); }
void* __wrap__Znam(size_t n) { return cudaperf_new(n, 16); }
void* __wrap__ZnwmSt11align_val_t(size_t n, size_t a) { return cudaperf_new(n, a); }
void* __wrap__ZnamSt11align_val_t(size_t n, size_t a) { return cudaperf_new(n, a); }
void* __wrap__ZnwmRKSt9nothrow_t(size_t n, const void*) { return cudaperf::detail::arena_alloc_or_real(n, 16); }
void* __wrap__ZnamRKSt9nothrow_t(size_t n, const void*) { return cudaperf::detail::arena_alloc_or_real(n, 16); }
void* __wrap__ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const void*) {
  return cudaperf::detail::arena_alloc_or_real(n, a);
}
void* __wrap__ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const void*) {
  return cudaperf::detail::arena_alloc_or_real(n, a);
}
void __wrap__ZdlPv(void* p) { cudaperf::detail::arena_free(p); }
void __wrap__ZdaPv(void* p) { cudaperf::detail::arena_free(p); }
void __wrap__ZdlPvm(void* p, size_t) { cudaperf::detail::arena_free(p); }
void __wrap__ZdaPvm(void* p, size_t) { cudaperf::detail::arena_free(p); }
void __wrap__ZdlPvSt11align_val_t(void* p, size_t) { cudaperf::detail::arena_free(p); }
void __wrap__ZdaPvSt11align_val_t(void* p, size_t) { cudaperf::detail::arena_free(p); }
void __wrap__ZdlPvmSt11align_val_t(void* p, size_t, size_t) { cudaperf::detail::arena_free(p); }
void __wrap__ZdaPvmSt11align_val_t(void* p, size_t, size_t) { cudaperf::detail::arena_free(p); }
void __wrap__ZdlPvRKSt9nothrow_t(void* p, const void*) { cudaperf::detail::arena_free(p); }
void __wrap__ZdaPvRKSt9nothrow_t(void* p, const void*) { cudaperf::detail::arena_free(p); }
}
#endif  // CUDAPERF_RUNTIME_OBJECT
