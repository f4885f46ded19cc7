// CUDA atomics (atomicAdd ... atomicDec, with _block/_system aliases) on the compiler's __atomic builtins.
#pragma once

namespace cudaperf {
namespace detail {

// Blocks run concurrently on several OS threads, so every atomic is a real one.
constexpr int kOrder = __ATOMIC_SEQ_CST;

// Compare-and-swap loop applying `op` to values stored as the same-sized integer `Bits`.
template <class T, class Bits, class Op>
inline T atomic_update(T* address, Op op) {
  static_assert(sizeof(T) == sizeof(Bits), "bit-size mismatch");
  Bits* p = reinterpret_cast<Bits*>(address);
  Bits old = __atomic_load_n(p, __ATOMIC_RELAXED);
  for (;;) {
    T current;
    std::memcpy(&current, &old, sizeof(T));
    T next = op(current);
    Bits next_bits;
    std::memcpy(&next_bits, &next, sizeof(T));
    if (__atomic_compare_exchange_n(p, &old, next_bits, true, kOrder, __ATOMIC_RELAXED)) {
      return current;
    }
  }
}

template <class T>
inline T atomic_cas(T* address, T compare, T value) {
  T expected = compare;
  if (!__atomic_compare_exchange_n(address, &expected, value, false, kOrder, kOrder)) {
    yield_fiber();  // a spin lock whose holder is another fiber of this block must let it run
  }
  return expected;
}

}  // namespace detail
}  // namespace cudaperf

#define CUDAPERF_INTEGER_ATOMICS(T)                                                               \
  inline T atomicAdd(T* a, T v) { return __atomic_fetch_add(a, v, ::cudaperf::detail::kOrder); } \
  inline T atomicSub(T* a, T v) { return __atomic_fetch_sub(a, v, ::cudaperf::detail::kOrder); } \
  inline T atomicExch(T* a, T v) { return __atomic_exchange_n(a, v, ::cudaperf::detail::kOrder); } \
  inline T atomicAnd(T* a, T v) { return __atomic_fetch_and(a, v, ::cudaperf::detail::kOrder); } \
  inline T atomicOr(T* a, T v) { return __atomic_fetch_or(a, v, ::cudaperf::detail::kOrder); }   \
  inline T atomicXor(T* a, T v) { return __atomic_fetch_xor(a, v, ::cudaperf::detail::kOrder); } \
  inline T atomicMin(T* a, T v) {                                                                 \
    return ::cudaperf::detail::atomic_update<T, T>(a, [v](T x) { return v < x ? v : x; });       \
  }                                                                                               \
  inline T atomicMax(T* a, T v) {                                                                 \
    return ::cudaperf::detail::atomic_update<T, T>(a, [v](T x) { return v > x ? v : x; });       \
  }                                                                                               \
  inline T atomicCAS(T* a, T compare, T v) { return ::cudaperf::detail::atomic_cas(a, compare, v); }

CUDAPERF_INTEGER_ATOMICS(int)
CUDAPERF_INTEGER_ATOMICS(unsigned int)
CUDAPERF_INTEGER_ATOMICS(unsigned long long)
CUDAPERF_INTEGER_ATOMICS(long long)
#undef CUDAPERF_INTEGER_ATOMICS

inline unsigned short atomicCAS(unsigned short* a, unsigned short compare, unsigned short v) {
  return ::cudaperf::detail::atomic_cas(a, compare, v);
}

// ((old >= limit) ? 0 : old + 1) and (((old == 0) || (old > limit)) ? limit : old - 1).
inline unsigned atomicInc(unsigned* a, unsigned limit) {
  return ::cudaperf::detail::atomic_update<unsigned, unsigned>(
      a, [limit](unsigned x) { return x >= limit ? 0u : x + 1u; });
}
inline unsigned atomicDec(unsigned* a, unsigned limit) {
  return ::cudaperf::detail::atomic_update<unsigned, unsigned>(
      a, [limit](unsigned x) { return (x == 0 || x > limit) ? limit : x - 1u; });
}

inline float atomicAdd(float* a, float v) {
  return ::cudaperf::detail::atomic_update<float, uint32_t>(a, [v](float x) { return x + v; });
}
inline double atomicAdd(double* a, double v) {
  return ::cudaperf::detail::atomic_update<double, uint64_t>(a, [v](double x) { return x + v; });
}
inline float atomicExch(float* a, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  uint32_t old = __atomic_exchange_n(reinterpret_cast<uint32_t*>(a), bits, ::cudaperf::detail::kOrder);
  float r;
  std::memcpy(&r, &old, 4);
  return r;
}
inline float atomicMin(float* a, float v) {
  return ::cudaperf::detail::atomic_update<float, uint32_t>(a, [v](float x) { return std::fmin(x, v); });
}
inline float atomicMax(float* a, float v) {
  return ::cudaperf::detail::atomic_update<float, uint32_t>(a, [v](float x) { return std::fmax(x, v); });
}
inline double atomicMin(double* a, double v) {
  return ::cudaperf::detail::atomic_update<double, uint64_t>(a, [v](double x) { return std::fmin(x, v); });
}
inline double atomicMax(double* a, double v) {
  return ::cudaperf::detail::atomic_update<double, uint64_t>(a, [v](double x) { return std::fmax(x, v); });
}

// sm_90 vector atomics: each component is atomic on its own.
inline float2 atomicAdd(float2* a, float2 v) {
  return float2{atomicAdd(&a->x, v.x), atomicAdd(&a->y, v.y)};
}
inline float4 atomicAdd(float4* a, float4 v) {
  return float4{atomicAdd(&a->x, v.x), atomicAdd(&a->y, v.y), atomicAdd(&a->z, v.z),
                atomicAdd(&a->w, v.w)};
}

// Scoped variants: every scope is the whole process here.
#define atomicAdd_block atomicAdd
#define atomicAdd_system atomicAdd
#define atomicSub_block atomicSub
#define atomicSub_system atomicSub
#define atomicExch_block atomicExch
#define atomicExch_system atomicExch
#define atomicMin_block atomicMin
#define atomicMin_system atomicMin
#define atomicMax_block atomicMax
#define atomicMax_system atomicMax
#define atomicInc_block atomicInc
#define atomicInc_system atomicInc
#define atomicDec_block atomicDec
#define atomicDec_system atomicDec
#define atomicCAS_block atomicCAS
#define atomicCAS_system atomicCAS
#define atomicAnd_block atomicAnd
#define atomicAnd_system atomicAnd
#define atomicOr_block atomicOr
#define atomicOr_system atomicOr
#define atomicXor_block atomicXor
#define atomicXor_system atomicXor
