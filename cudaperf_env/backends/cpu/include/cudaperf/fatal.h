// Fatal errors: one async-signal-safe "cudaperf-fatal: <kind>: <message>" line, then _exit(code).
#pragma once

namespace cudaperf {
namespace detail {

// Exit codes of docs/cpu-backend.md, section 2.
constexpr int kExitDeadlock = 70;
constexpr int kExitIllegalAddress = 71;
constexpr int kExitArithmetic = 72;
constexpr int kExitDeviceAssert = 73;
constexpr int kExitAbort = 74;
constexpr int kExitIllegalInstruction = 75;
constexpr int kExitOutOfBounds = 78;  // bounds.h, racecheck.h

// A fixed-size message builder that only touches its own buffer, so signal handlers can use it
// (no malloc, no stdio, digits written by hand). Overlong text is cut, never overflowed.
class Line {
 public:
  CUDAPERF_COLD Line& str(const char* s) {
    if (s == nullptr) s = "(null)";
    while (*s != '\0' && n_ < kCap) buf_[n_++] = *s++;
    return *this;
  }
  CUDAPERF_COLD Line& num(long long v) {
    if (v < 0) {
      str("-");
      return unum(0ULL - static_cast<unsigned long long>(v));
    }
    return unum(static_cast<unsigned long long>(v));
  }
  CUDAPERF_COLD Line& unum(unsigned long long v) {
    char digits[24];
    int k = 0;
    do {
      digits[k++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (k > 0 && n_ < kCap) buf_[n_++] = digits[--k];
    return *this;
  }
  CUDAPERF_COLD Line& hex(unsigned long long v) {
    static const char kDigits[] = "0123456789abcdef";
    char digits[20];
    int k = 0;
    do {
      digits[k++] = kDigits[v & 15];
      v >>= 4;
    } while (v != 0);
    str("0x");
    while (k > 0 && n_ < kCap) buf_[n_++] = digits[--k];
    return *this;
  }
  CUDAPERF_COLD Line& triple(unsigned x, unsigned y, unsigned z) {
    return str("(").unum(x).str(",").unum(y).str(",").unum(z).str(")");
  }
  const char* data() const { return buf_; }
  size_t size() const { return n_; }

 private:
  static constexpr size_t kCap = 2000;
  char buf_[kCap + 1];
  size_t n_ = 0;
};

inline void write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t k = ::write(fd, p, n);
    if (k <= 0) return;
    p += k;
    n -= static_cast<size_t>(k);
  }
}

// Set by the first fatal report; later reporters (other workers hitting errors at the same
// moment) wait to be killed by its _exit so that exactly one line is written.
inline int g_fatal_started = 0;  // __atomic builtins

#if !CUDAPERF_DEFINE_LINKED
[[noreturn]] CUDAPERF_COLD CUDAPERF_LINKED void fatal_exit(const char* kind, int code,
                                                           const Line& message);
#else
[[noreturn]] CUDAPERF_COLD CUDAPERF_LINKED void fatal_exit(const char* kind, int code,
                                                           const Line& message) {
  if (__atomic_exchange_n(&g_fatal_started, 1, __ATOMIC_ACQ_REL) != 0) {
    for (;;) ::pause();
  }
  Line out;
  out.str("cudaperf-fatal: ").str(kind).str(": ");
  Line copy = message;  // message may be cut to leave room for the prefix and newline
  const char* p = copy.data();
  for (size_t i = 0; i < copy.size() && out.size() < 1990; ++i) {
    char c[2] = {p[i] == '\n' ? ' ' : p[i], '\0'};
    out.str(c);
  }
  out.str("\n");
  write_all(2, out.data(), out.size());
  ::_exit(code);
}
#endif

// For fatal errors outside signal handlers: host output printed before the failure is flushed
// first (stdout is fully buffered when it is a pipe and _exit would drop it).
#if !CUDAPERF_DEFINE_LINKED
[[noreturn]] CUDAPERF_COLD CUDAPERF_LINKED void fatal_exit_flush(const char* kind, int code,
                                                                 const Line& message);
#else
[[noreturn]] CUDAPERF_COLD CUDAPERF_LINKED void fatal_exit_flush(const char* kind, int code,
                                                                 const Line& message) {
  if (__atomic_load_n(&g_fatal_started, __ATOMIC_ACQUIRE) == 0) std::fflush(stdout);
  fatal_exit(kind, code, message);
}
#endif

}  // namespace detail
}  // namespace cudaperf
