// Array bounds, checked in the race-check build: g++'s -fsanitize=bounds calls land here.
//
// An index past a declared array (a __shared__ tile, a register array, a __constant__ table) is
// an illegal address on a GPU when it leaves the block's shared window, and silently reads or
// writes another variable when it does not. Here static __shared__ arrays are thread_local, so
// the same index lands in the worker thread's other thread-locals, the runtime's own among them:
// the run may pass, or fail far from the cause. The race-check build (compiler.py,
// RACECHECK_FLAGS) adds -fsanitize=bounds -fno-sanitize-recover=bounds, and no UBSan runtime is
// linked: the compiler's check of every index into an array of known size calls
// __ubsan_handle_out_of_bounds_abort, defined below, which reports the fatal kind `out_of_bounds`
// (exit code 78) with the index, the array's type, the source line and the CUDA thread.
// Indices through pointers are not checked here: racecheck.h reports accesses past the last static
// __shared__ array (a zone racecheck.py links in after them); kernel arguments and dynamic shared
// memory end at guard pages (device_memory.h, launch.h).
#pragma once

namespace cudaperf {
namespace detail {

// The data g++ passes with each check (the UBSan ABI: source location, then type descriptors).
struct UbsanSourceLocation {
  const char* file;
  unsigned line;
  unsigned column;
};
struct UbsanTypeDescriptor {
  unsigned short kind;  // 0: integer
  unsigned short info;  // integers: bit 0 signed, the rest log2(bits)
  char name[1];         // quoted, e.g. 'float [33]'
};
struct UbsanOutOfBoundsData {
  UbsanSourceLocation location;
  const UbsanTypeDescriptor* array_type;
  const UbsanTypeDescriptor* index_type;
};

// An integer index as the check passed it: inline in the handle up to 64 bits, sign-extended.
inline CUDAPERF_COLD void write_index(Line& m, const UbsanTypeDescriptor& type, uintptr_t handle) {
  unsigned bits = 1u << (type.info >> 1);
  if (type.kind != 0 || bits > 64) {
    m.str("an index");
    return;
  }
  unsigned long long v = handle;
  if (bits < 64) v &= (1ULL << bits) - 1;
  if ((type.info & 1) && bits < 64 && (v >> (bits - 1)) != 0) v |= ~0ULL << bits;
  m.str("index ");
  if (type.info & 1) {
    m.num(static_cast<long long>(v));
  } else {
    m.unum(v);
  }
}

#if !CUDAPERF_DEFINE_LINKED
[[noreturn]] CUDAPERF_COLD CUDAPERF_LINKED void report_out_of_bounds(const UbsanOutOfBoundsData& d,
                                                                     uintptr_t index);
#else
[[noreturn]] CUDAPERF_COLD CUDAPERF_LINKED void report_out_of_bounds(const UbsanOutOfBoundsData& d,
                                                                     uintptr_t index) {
  Line m;
  write_index(m, *d.index_type, index);
  m.str(" of an array of type ").str(d.array_type->name);
  const char* file = d.location.file != nullptr ? d.location.file : "";
  bool submission = __builtin_strcmp(file, "submission.cu") == 0;
  m.str(" at ");
  if (!submission) m.str(file).str(" ");
  m.str("line ").unum(d.location.line);
  describe_place(m, tls_worker);
  fatal_exit_flush("out_of_bounds", kExitOutOfBounds, m);
}
#endif

}  // namespace detail
}  // namespace cudaperf

// The instrumentation's entry points: defined once, in the runtime object or (header-only) weakly in
// every file that includes this. They take void* as g++'s built-in declarations do.
#if defined(CUDAPERF_RUNTIME_OBJECT) || !defined(CUDAPERF_PREBUILT_RUNTIME)
#if defined(CUDAPERF_RUNTIME_OBJECT)
#define CUDAPERF_UBSAN_DEF __attribute__((used, no_sanitize_thread))
#else
#define CUDAPERF_UBSAN_DEF __attribute__((weak, used, no_sanitize_thread))
#endif
extern "C" CUDAPERF_UBSAN_DEF void __ubsan_handle_out_of_bounds(void* data, void* index) {
  ::cudaperf::detail::report_out_of_bounds(*static_cast<const ::cudaperf::detail::UbsanOutOfBoundsData*>(data),
                                           reinterpret_cast<uintptr_t>(index));
}
extern "C" CUDAPERF_UBSAN_DEF void __ubsan_handle_out_of_bounds_abort(void* data, void* index) {
  ::cudaperf::detail::report_out_of_bounds(*static_cast<const ::cudaperf::detail::UbsanOutOfBoundsData*>(data),
                                           reinterpret_cast<uintptr_t>(index));
}
#undef CUDAPERF_UBSAN_DEF
#endif
