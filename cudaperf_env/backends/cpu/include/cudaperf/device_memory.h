// Host/device memory separation: device memory cannot be touched by the submission's host code.
//
// On a GPU, device memory is not in the host's address space: host code that dereferences a device
// pointer faults. Here both live in one process, so device memory is made inaccessible while the
// submission's host code runs: the pre-pass opens a HostScope at the top of the entry function,
// which protects (PROT_NONE) every device region (cudaMalloc allocations, and the mappings that
// hold the harness's buffers, found from the entry's pointer arguments). The only doors are kernel
// launches and the runtime's copy functions (cudaMemcpy*, cudaMemset*, cudaMemcpyToSymbol, ...),
// which open the regions for their duration (DeviceDoor). A host access faults, and the fault
// handler reports it as host code touching device memory.
//
// The copies themselves are where host code can still do the kernels' work: read the inputs back
// (device to host), compute the answer, and copy it into an output. Two rules refuse that
// (fatal kind host_output): a host-to-device copy into an entry buffer with no launch after it;
// and, once host code has read device memory, any bytes it copied into an entry buffer (directly,
// or through device memory it filled from the host) that no kernel changed by the time the entry
// returns, which a launch of a kernel that does nothing cannot hide.
#pragma once

namespace cudaperf {
namespace detail {

struct DeviceRegion {
  char* lo;
  size_t bytes;
  int prot;      // protection outside host code
  bool harness;  // a mapping of the harness's buffers (forgotten when the entry returns)
  const char* base;  // the entry's argument that points into it (harness), else lo
  int arg;           // that argument's position among the entry's parameters, -1 for cudaMalloc
};

constexpr unsigned kMaxDeviceRegions = 4096;
inline DeviceRegion g_device_regions[kMaxDeviceRegions];
inline unsigned g_device_region_count = 0;
inline int g_host_depth = 0;  // > 0 while the entry (the submission's host code) runs
inline int g_door_depth = 0;  // > 0 while a door (launch, copy) is open
inline pthread_mutex_t g_device_mutex = PTHREAD_MUTEX_INITIALIZER;
// The entry argument a host-to-device copy wrote last with no launch after it (-1: none).
inline int g_host_wrote_arg = -1;

// The host-copy ledger, while the entry runs after a device-to-host copy: what host code wrote
// into entry buffers (to check at the end that kernels changed it) and what it copied to the
// device anywhere (so a device-to-device copy of it into an entry buffer counts as a host write).
struct HostWrite {
  const char* dst;
  size_t bytes;
  uint64_t hash;
  int arg;
};
struct HostPayload {
  size_t bytes;
  uint64_t hash;
};
constexpr unsigned kMaxHostCopies = 1024;
inline HostWrite g_host_writes[kMaxHostCopies];
inline unsigned g_host_write_count = 0;
inline HostPayload g_host_payloads[kMaxHostCopies];
inline unsigned g_host_payload_count = 0;
inline bool g_host_read_device = false;  // a device-to-host copy happened in this entry

inline bool host_protected() { return g_host_depth > 0 && g_door_depth == 0; }
constexpr int kExitHostOutput = 77;

#if !CUDAPERF_DEFINE_LINKED
CUDAPERF_COLD CUDAPERF_LINKED void protect_device_regions(bool closed);
CUDAPERF_COLD CUDAPERF_LINKED bool add_device_region(void* lo, size_t bytes, int prot, bool harness,
                                                     const void* base, int arg);
CUDAPERF_COLD CUDAPERF_LINKED bool remove_device_region(void* lo);
CUDAPERF_COLD CUDAPERF_LINKED bool in_device_region(const void* p);
CUDAPERF_COLD CUDAPERF_LINKED void add_harness_mapping(const void* p, int arg);
CUDAPERF_COLD CUDAPERF_LINKED const DeviceRegion* device_region_of(const void* p);
CUDAPERF_COLD CUDAPERF_LINKED void host_scope_enter();
CUDAPERF_COLD CUDAPERF_LINKED void host_scope_leave();
CUDAPERF_COLD CUDAPERF_LINKED void door_open();
[[noreturn]] CUDAPERF_COLD CUDAPERF_LINKED void host_wrote_argument(int arg);
CUDAPERF_COLD CUDAPERF_LINKED void note_host_copy(void* dst, const void* src, size_t bytes, bool from_host,
                                                  bool to_host);
CUDAPERF_COLD CUDAPERF_LINKED void door_close();
__attribute__((noinline)) CUDAPERF_LINKED void* device_variable_storage(size_t bytes);
#else
CUDAPERF_COLD CUDAPERF_LINKED void protect_device_regions(bool closed) {
  for (unsigned i = 0; i < g_device_region_count; ++i) {
    const DeviceRegion& r = g_device_regions[i];
    ::mprotect(r.lo, r.bytes, closed ? PROT_NONE : r.prot);
  }
}

CUDAPERF_COLD CUDAPERF_LINKED bool add_device_region(void* lo, size_t bytes, int prot, bool harness,
                                                     const void* base, int arg) {
  if (g_device_region_count >= kMaxDeviceRegions) return false;
  const char* b = base != nullptr ? static_cast<const char*>(base) : static_cast<const char*>(lo);
  g_device_regions[g_device_region_count++] = {static_cast<char*>(lo), bytes, prot, harness, b, arg};
  if (host_protected()) ::mprotect(lo, bytes, PROT_NONE);
  return true;
}

CUDAPERF_COLD CUDAPERF_LINKED bool remove_device_region(void* lo) {
  for (unsigned i = 0; i < g_device_region_count; ++i) {
    if (g_device_regions[i].lo == lo) {
      ::mprotect(g_device_regions[i].lo, g_device_regions[i].bytes, g_device_regions[i].prot);
      g_device_regions[i] = g_device_regions[--g_device_region_count];
      return true;
    }
  }
  return false;
}

// Async-signal-safe (the fault handler asks): no locks, reads only.
CUDAPERF_COLD CUDAPERF_LINKED const DeviceRegion* device_region_of(const void* p) {
  const char* c = static_cast<const char*>(p);
  unsigned n = g_device_region_count;
  for (unsigned i = 0; i < n && i < kMaxDeviceRegions; ++i) {
    if (c >= g_device_regions[i].lo && c < g_device_regions[i].lo + g_device_regions[i].bytes)
      return &g_device_regions[i];
  }
  return nullptr;
}

CUDAPERF_COLD CUDAPERF_LINKED bool in_device_region(const void* p) {
  return device_region_of(p) != nullptr;
}

// The file mapping that holds p (the harness's buffer file), from /proc/self/maps. Libraries,
// the heap, stacks and anonymous memory are never taken: only a pointer the harness passed in
// a data file's mapping is a device pointer.
CUDAPERF_COLD CUDAPERF_LINKED void add_harness_mapping(const void* p, int arg) {
  if (p == nullptr || in_device_region(p)) return;
  std::FILE* f = std::fopen("/proc/self/maps", "r");
  if (f == nullptr) return;
  char line[1024];
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  while (std::fgets(line, sizeof line, f) != nullptr) {
    unsigned long lo = 0, hi = 0;
    char perms[8] = {0};
    int path_at = 0;
    if (std::sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &lo, &hi, perms, &path_at) < 3) continue;
    if (a < lo || a >= hi) continue;
    const char* path = line + path_at;
    bool data_file = path[0] == '/' && std::strstr(path, ".so") == nullptr;
    if (data_file && perms[0] == 'r') {
      int prot = PROT_READ | (perms[1] == 'w' ? PROT_WRITE : 0);
      add_device_region(reinterpret_cast<void*>(lo), hi - lo, prot, true, p, arg);
    }
    break;
  }
  std::fclose(f);
}

// The harness's buffers are written by kernels: a host-to-device copy into one that no launch
// follows means the host computed (part of) the result, which earns no credit. (Initialising an
// output from the host before the kernels that update it is fine.)
[[noreturn]] CUDAPERF_COLD CUDAPERF_LINKED void host_wrote_argument(int arg) {
  Line m;
  m.str("the host copied data into argument #").num(arg);
  m.str(" of the entry with cudaMemcpy after its last kernel launch: outputs must be computed by ");
  m.str("kernels, not on the host");
  fatal_exit_flush("host_output", kExitHostOutput, m);
}


CUDAPERF_COLD CUDAPERF_LINKED uint64_t bytes_hash(const void* p, size_t n) {  // FNV-1a, 64 bits
  const unsigned char* c = static_cast<const unsigned char*>(p);
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ c[i]) * 1099511628211ull;
  return h;
}

[[noreturn]] CUDAPERF_COLD CUDAPERF_LINKED void host_copies_overflow() {
  Line m;
  m.str("more than ").num(kMaxHostCopies).str(" host-to-device copies after host code read device memory: ");
  m.str("outputs must be computed by kernels, not on the host");
  fatal_exit_flush("host_output", kExitHostOutput, m);
}

// Called by the copy functions while the entry runs (device memory open). from_host: the source
// is host memory; to_host: the destination is.
CUDAPERF_COLD CUDAPERF_LINKED void note_host_copy(void* dst, const void* src, size_t bytes, bool from_host,
                                                  bool to_host) {
  MutexLock lock(&g_device_mutex);
  if (to_host && !from_host) {
    g_host_read_device = true;
    return;
  }
  if (!g_host_read_device || to_host) return;
  uint64_t hash = bytes_hash(src, bytes);
  bool host_data = from_host;
  for (unsigned i = 0; !host_data && i < g_host_payload_count; ++i)
    host_data = g_host_payloads[i].bytes == bytes && g_host_payloads[i].hash == hash;
  if (!host_data) return;
  if (from_host) {
    if (g_host_payload_count >= kMaxHostCopies) host_copies_overflow();
    g_host_payloads[g_host_payload_count++] = {bytes, hash};
  }
  const DeviceRegion* r = device_region_of(dst);
  if (r == nullptr || !r->harness) return;
  if (g_host_write_count >= kMaxHostCopies) host_copies_overflow();
  g_host_writes[g_host_write_count++] = {static_cast<const char*>(dst), bytes, hash, r->arg};
}

// At the entry's end (device memory open): host-written bytes that no kernel changed.
[[noreturn]] CUDAPERF_COLD CUDAPERF_LINKED void host_output_unchanged(const HostWrite& w) {
  Line m;
  m.str("argument #").num(w.arg).str(" of the entry still holds the ").num(static_cast<long long>(w.bytes));
  m.str(" bytes the host copied into it after reading device memory (kernels launched after it did not ");
  m.str("change them): outputs must be computed by kernels, not on the host");
  fatal_exit_flush("host_output", kExitHostOutput, m);
}

CUDAPERF_COLD CUDAPERF_LINKED void check_host_writes() {
  for (unsigned i = 0; i < g_host_write_count; ++i) {
    const HostWrite& w = g_host_writes[i];
    if (bytes_hash(w.dst, w.bytes) == w.hash) host_output_unchanged(w);
  }
}

CUDAPERF_COLD CUDAPERF_LINKED void host_scope_enter() {
  MutexLock lock(&g_device_mutex);
  if (g_host_depth == 0) {
    g_host_wrote_arg = -1;
    g_host_write_count = g_host_payload_count = 0;
    g_host_read_device = false;
  }
  if (g_host_depth++ == 0 && g_door_depth == 0) protect_device_regions(true);
}

CUDAPERF_COLD CUDAPERF_LINKED void host_scope_leave() {
  MutexLock lock(&g_device_mutex);
  if (--g_host_depth != 0) return;
  int wrote = g_host_wrote_arg;
  g_host_wrote_arg = -1;
  if (wrote >= 0) host_wrote_argument(wrote);
  protect_device_regions(false);
  check_host_writes();
  g_host_write_count = g_host_payload_count = 0;
  for (unsigned i = 0; i < g_device_region_count;) {  // the harness's buffers are its own again
    if (g_device_regions[i].harness) {
      g_device_regions[i] = g_device_regions[--g_device_region_count];
    } else {
      ++i;
    }
  }
}

CUDAPERF_COLD CUDAPERF_LINKED void door_open() {
  MutexLock lock(&g_device_mutex);
  if (g_door_depth++ == 0 && g_host_depth > 0) protect_device_regions(false);
}

CUDAPERF_COLD CUDAPERF_LINKED void door_close() {
  MutexLock lock(&g_device_mutex);
  if (--g_door_depth == 0 && g_host_depth > 0) protect_device_regions(true);
}

// Out of line (the runtime object), so that a submission's unit imports no mmap of its own
// (backends/cpu/imports.py checks the unit's imports). Not cold: a unit's initialiser that calls
// it (its __device__ variables) would be cold too, and g++ would put the whole initialiser among
// the unit's cold code (.text.unlikely) instead of .text.startup, where the load-time code check
// (toolchain/initcode.py) reads it apart from the submission's code.
__attribute__((noinline)) CUDAPERF_LINKED void* device_variable_storage(size_t bytes) {
  size_t mapped = (bytes + 4095) & ~size_t(4095);
  if (mapped == 0) mapped = 4096;
  void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    Line m;
    m.str("out of memory for a __device__ variable");
    fatal_exit_flush("abort", kExitAbort, m);
  }
  MutexLock lock(&g_device_mutex);
  add_device_region(p, mapped, PROT_READ | PROT_WRITE, false, p, -1);
  return p;
}
#endif

// Opens device memory for a launch or a copy (a no-op outside the entry's host code).
class DeviceDoor {
 public:
  DeviceDoor() {
    if (g_host_depth > 0) {
      door_open();
      open_ = true;
    }
  }
  ~DeviceDoor() {
    if (open_) door_close();
  }
  DeviceDoor(const DeviceDoor&) = delete;
  DeviceDoor& operator=(const DeviceDoor&) = delete;

 private:
  bool open_ = false;
};

}  // namespace detail

// __device__ and __constant__ variables: the pre-pass turns `__device__ T name;` into a reference to
// storage of whole pages made here, a device region like cudaMalloc memory, so host code that reads
// or writes one directly (which on a GPU touches a host-side shadow, not the variable) faults as
// any host access to device memory does; cudaMemcpyToSymbol and kernels reach it through doors.

namespace detail {

// A file-scope variable the pre-pass moved into runtime storage `p` (zero-filled, as a global is):
// value-initialised, or copied from its initialiser (device_variable here, host_variable in host_arena.h).
template <class T>
T& value_initialised(void* p) {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_array_v<U>) {
    using E = std::remove_cv_t<std::remove_all_extents_t<U>>;
    if constexpr (!std::is_trivially_default_constructible_v<E>)
      for (size_t i = 0; i < sizeof(U) / sizeof(E); ++i) new (static_cast<E*>(p) + i) E();
  } else if constexpr (!std::is_trivially_default_constructible_v<U>) {
    new (p) U();
  }
  return *static_cast<T*>(p);
}

template <class T>
T& copy_initialised(void* p, const std::remove_cv_t<T>& init) {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_array_v<U>) {
    using E = std::remove_cv_t<std::remove_all_extents_t<U>>;
    for (size_t i = 0; i < sizeof(U) / sizeof(E); ++i)
      new (static_cast<E*>(p) + i) E(reinterpret_cast<const E*>(&init)[i]);
  } else {
    new (p) U(init);
  }
  return *static_cast<T*>(p);
}

}  // namespace detail

template <class T>
T& device_variable() {
  return detail::value_initialised<T>(detail::device_variable_storage(sizeof(std::remove_cv_t<T>)));
}

template <class T>
T& device_variable(const std::remove_cv_t<T>& init) {
  return detail::copy_initialised<T>(detail::device_variable_storage(sizeof(std::remove_cv_t<T>)), init);
}

// What the pre-pass puts at the top of the entry function: the entry's pointer arguments are
// device pointers, and device memory is closed to host code until the entry returns.
class HostScope {
 public:
  template <class... A>
  explicit HostScope(const A&... args) {
    {
      detail::MutexLock lock(&detail::g_device_mutex);
      int arg = 0;
      (note(args, arg++), ...);
    }
    detail::host_scope_enter();
  }
  ~HostScope() { detail::host_scope_leave(); }
  HostScope(const HostScope&) = delete;
  HostScope& operator=(const HostScope&) = delete;

 private:
  template <class T>
  static void note(const T& value, int arg) {
    if constexpr (std::is_pointer_v<T> && std::is_object_v<std::remove_pointer_t<T>>)
      detail::add_harness_mapping(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(value)),
                                  arg);
  }
};

}  // namespace cudaperf
