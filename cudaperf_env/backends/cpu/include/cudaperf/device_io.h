// Device printf (serialized, capped at 64 KiB per process) and device assert (device_assert).
#pragma once

namespace cudaperf {
namespace detail {

constexpr size_t kPrintfCap = 64 * 1024;

struct PrintfState {
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  size_t written = 0;
  bool capped = false;
};
inline PrintfState g_printf;

inline bool in_kernel() { return tls_worker != nullptr && tls_worker->kernel != nullptr; }

// One write(2) per call under a lock, so lines of different threads never interleave; written
// straight to fd 1 so nothing is lost when a later fatal error calls _exit.
CUDAPERF_COLD inline int device_vprintf(const char* fmt, va_list args) {
  char small[512];
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(small, sizeof small, fmt, copy);
  va_end(copy);
  if (n < 0) return n;
  char* big = nullptr;
  const char* text = small;
  if (static_cast<size_t>(n) >= sizeof small) {
    big = static_cast<char*>(runtime_malloc(static_cast<size_t>(n) + 1));
    if (big == nullptr) return -1;
    std::vsnprintf(big, static_cast<size_t>(n) + 1, fmt, args);
    text = big;
  }
  PrintfState& s = g_printf;
  MutexLock lock(&s.mu);
  if (s.capped) {
    runtime_free(big);
    return n;
  }
  size_t len = static_cast<size_t>(n);
  if (s.written + len > kPrintfCap) {
    len = kPrintfCap - s.written;
    s.capped = true;
  }
  write_all(1, text, len);
  s.written += len;
  if (s.capped) {
    static const char kNotice[] = "\n[cudaperf: device printf output truncated at 65536 bytes]\n";
    write_all(1, kNotice, sizeof kNotice - 1);
  }
  runtime_free(big);
  return n;
}

}  // namespace detail
}  // namespace cudaperf

// Inside kernels printf goes through the capped, serialized device path; host code keeps
// ordinary buffered stdio (flushed before every launch, so the order is kept).
__attribute__((format(printf, 1, 2))) inline int cudaperf_printf(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  int n = ::cudaperf::detail::in_kernel() ? ::cudaperf::detail::device_vprintf(fmt, args)
                                          : std::vprintf(fmt, args);
  va_end(args);
  return n;
}
namespace std {
using ::cudaperf_printf;
}
#define printf(...) cudaperf_printf(__VA_ARGS__)

// glibc's assert() calls __assert_fail; renaming it here also catches asserts from a later
// #include <assert.h>, which redefines assert() itself. Same signature as glibc's declaration.
extern "C" [[noreturn]] inline void cudaperf_assert_fail(const char* expr, const char* file,
                                                         unsigned int line,
                                                         const char* function) noexcept {
  (void)function;
  ::cudaperf::detail::Worker* w = ::cudaperf::detail::tls_worker;
  ::cudaperf::detail::Line m;
  m.str(file).str(":").unum(line).str(": assertion `").str(expr).str("` failed");
  ::cudaperf::detail::describe_place(m, w);
  if (w != nullptr && w->kernel != nullptr) {
    ::cudaperf::detail::fatal_exit_flush("device_assert", ::cudaperf::detail::kExitDeviceAssert, m);
  }
  ::cudaperf::detail::fatal_exit_flush("abort", ::cudaperf::detail::kExitAbort, m);
}
#define __assert_fail cudaperf_assert_fail
