// CUDA bit intrinsics, cache-hint loads/stores, fences, clocks, __nanosleep and __trap.
#pragma once

inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __clzll(long long x) {
  return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x));
}
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }

inline unsigned __brev(unsigned x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
  return __builtin_bswap32(x);
}
inline unsigned long long __brevll(unsigned long long x) {
  return (static_cast<unsigned long long>(__brev(static_cast<unsigned>(x))) << 32) |
         __brev(static_cast<unsigned>(x >> 32));
}

// Byte n of the result is byte (s >> 4n) & 7 of the 8-byte value {y, x}.
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  unsigned long long v = (static_cast<unsigned long long>(y) << 32) | x;
  unsigned r = 0;
  for (int n = 0; n < 4; ++n) {
    unsigned sel = (s >> (4 * n)) & 7u;
    r |= static_cast<unsigned>((v >> (8 * sel)) & 0xffu) << (8 * n);
  }
  return r;
}

inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned shift) {
  unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned>((v << (shift & 31u)) >> 32);
}
inline unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned shift) {
  unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned>((v << (shift < 32u ? shift : 32u)) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
  unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned>(v >> (shift & 31u));
}
inline unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned shift) {
  unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned>(v >> (shift < 32u ? shift : 32u));
}

inline int __mul24(int x, int y) {
  long long a = static_cast<long long>(static_cast<int>(static_cast<unsigned>(x) << 8) >> 8);
  long long b = static_cast<long long>(static_cast<int>(static_cast<unsigned>(y) << 8) >> 8);
  return static_cast<int>(static_cast<unsigned>(a * b));
}
inline unsigned __umul24(unsigned x, unsigned y) { return (x & 0xffffffu) * (y & 0xffffffu); }
inline int __mulhi(int x, int y) { return static_cast<int>((static_cast<long long>(x) * y) >> 32); }
inline unsigned __umulhi(unsigned x, unsigned y) {
  return static_cast<unsigned>((static_cast<unsigned long long>(x) * y) >> 32);
}
inline long long __mul64hi(long long x, long long y) {
  return static_cast<long long>((static_cast<__int128>(x) * y) >> 64);
}
inline unsigned long long __umul64hi(unsigned long long x, unsigned long long y) {
  return static_cast<unsigned long long>((static_cast<unsigned __int128>(x) * y) >> 64);
}
inline unsigned __sad(int x, int y, unsigned z) {
  return z + static_cast<unsigned>(x > y ? static_cast<long long>(x) - y
                                         : static_cast<long long>(y) - x);
}
inline unsigned __usad(unsigned x, unsigned y, unsigned z) { return z + (x > y ? x - y : y - x); }
inline int __hadd(int x, int y) { return static_cast<int>((static_cast<long long>(x) + y) >> 1); }
inline int __rhadd(int x, int y) {
  return static_cast<int>((static_cast<long long>(x) + y + 1) >> 1);
}
inline unsigned __uhadd(unsigned x, unsigned y) {
  return static_cast<unsigned>((static_cast<unsigned long long>(x) + y) >> 1);
}
inline unsigned __urhadd(unsigned x, unsigned y) {
  return static_cast<unsigned>((static_cast<unsigned long long>(x) + y + 1) >> 1);
}

// Position of the n-th set bit of mask counting from base (up for offset > 0, down for < 0).
inline unsigned __fns(unsigned mask, unsigned base, int offset) {
  if (offset == 0) return (base < 32 && (mask >> base & 1u) != 0) ? base : 0xffffffffu;
  int step = offset > 0 ? 1 : -1;
  int remaining = offset > 0 ? offset : -offset;
  for (int pos = static_cast<int>(base); pos >= 0 && pos < 32; pos += step) {
    if ((mask >> pos & 1u) != 0 && --remaining == 0) return static_cast<unsigned>(pos);
  }
  return 0xffffffffu;
}

// Four-way byte and two-way halfword dot products (int8 kernels).
inline int __dp4a(int a, int b, int c) {
  for (int i = 0; i < 4; ++i) {
    c += static_cast<signed char>(a >> (8 * i)) * static_cast<signed char>(b >> (8 * i));
  }
  return c;
}
inline unsigned __dp4a(unsigned a, unsigned b, unsigned c) {
  for (int i = 0; i < 4; ++i) c += ((a >> (8 * i)) & 0xffu) * ((b >> (8 * i)) & 0xffu);
  return c;
}
inline int __dp2a_lo(int a, int b, int c) {
  return c + static_cast<short>(a) * static_cast<signed char>(b) +
         static_cast<short>(a >> 16) * static_cast<signed char>(b >> 8);
}
inline int __dp2a_hi(int a, int b, int c) {
  return c + static_cast<short>(a) * static_cast<signed char>(b >> 16) +
         static_cast<short>(a >> 16) * static_cast<signed char>(b >> 24);
}

// Cache hints mean nothing on a CPU: plain loads and stores.
template <class T>
inline T __ldg(const T* p) {
  return *p;
}
template <class T>
inline T __ldcg(const T* p) {
  return *p;
}
template <class T>
inline T __ldca(const T* p) {
  return *p;
}
template <class T>
inline T __ldcs(const T* p) {
  return *p;
}
template <class T>
inline T __ldlu(const T* p) {
  return *p;
}
template <class T>
inline T __ldcv(const T* p) {
  return *p;
}
template <class T>
inline void __stcg(T* p, T v) {
  *p = v;
}
template <class T>
inline void __stcs(T* p, T v) {
  *p = v;
}
template <class T>
inline void __stwb(T* p, T v) {
  *p = v;
}
template <class T>
inline void __stwt(T* p, T v) {
  *p = v;
}

inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

inline long long clock64() {
#if defined(__x86_64__)
  return static_cast<long long>(__builtin_ia32_rdtsc());
#else
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
#endif
}

// Spin-wait loops call this: let the other fibers of the block, or other OS threads, run.
inline void __nanosleep(unsigned ns) {
  (void)ns;
  ::cudaperf::detail::Worker* w = ::cudaperf::detail::tls_worker;
  if (w != nullptr && w->fiber_mode && w->qcount != 0) {
    ::cudaperf::detail::yield_fiber();
  } else {
    ::sched_yield();
  }
}

[[noreturn]] inline void __trap() {
  ::cudaperf::detail::Line m;
  m.str("__trap() called");
  ::cudaperf::detail::describe_place(m, ::cudaperf::detail::find_worker());
  ::cudaperf::detail::fatal_exit_flush("illegal_instruction",
                                       ::cudaperf::detail::kExitIllegalInstruction, m);
}
[[noreturn]] inline void __brkpt() { __trap(); }
inline void __prof_trigger(int) {}
