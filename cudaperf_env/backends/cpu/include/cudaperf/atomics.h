// CUDA atomics (atomicAdd ... atomicDec, _block/_system aliases) on the __atomic builtins.
#pragma once

namespace cudaperf {
namespace detail {

// Blocks run concurrently on several OS threads, so every atomic is a real one.
constexpr int kOrder = __ATOMIC_SEQ_CST;

// Called when an atomicCAS fails: a spin lock whose holder is another fiber of this block must
// let it run.
inline void on_cas_failure() { yield_fiber(); }

}  // namespace detail
}  // namespace cudaperf

// A compare-and-swap loop on the bits of *address: `old` is the current value, NEXT the value
// to store; returns the old value. A macro, not a template: templates used by these inline
// functions would be instantiated in every submission.
#define CUDAPERF_CAS_LOOP(T, BITS, address, NEXT)                                                  \
  BITS* bits_ = reinterpret_cast<BITS*>(address);                                                  \
  BITS old_bits = __atomic_load_n(bits_, __ATOMIC_RELAXED);                                        \
  for (;;) {                                                                                       \
    T old;                                                                                         \
    std::memcpy(&old, &old_bits, sizeof(T));                                                       \
    T next = (NEXT);                                                                               \
    BITS next_bits;                                                                                \
    std::memcpy(&next_bits, &next, sizeof(T));                                                     \
    if (__atomic_compare_exchange_n(bits_, &old_bits, next_bits, true, ::cudaperf::detail::kOrder, \
                                    __ATOMIC_RELAXED)) {                                           \
      return old;                                                                                  \
    }                                                                                              \
  }

#define CUDAPERF_CAS(T, a, compare, v)                                                 \
  T expected = compare;                                                                \
  if (!__atomic_compare_exchange_n(a, &expected, v, false, ::cudaperf::detail::kOrder, \
                                   ::cudaperf::detail::kOrder)) {                      \
    ::cudaperf::detail::on_cas_failure();                                              \
  }                                                                                    \
  return expected;

#define CUDAPERF_INTEGER_ATOMICS(T)                                                                \
  inline T atomicAdd(T* a, T v) { return __atomic_fetch_add(a, v, ::cudaperf::detail::kOrder); }   \
  inline T atomicSub(T* a, T v) { return __atomic_fetch_sub(a, v, ::cudaperf::detail::kOrder); }   \
  inline T atomicExch(T* a, T v) { return __atomic_exchange_n(a, v, ::cudaperf::detail::kOrder); } \
  inline T atomicAnd(T* a, T v) { return __atomic_fetch_and(a, v, ::cudaperf::detail::kOrder); }   \
  inline T atomicOr(T* a, T v) { return __atomic_fetch_or(a, v, ::cudaperf::detail::kOrder); }     \
  inline T atomicXor(T* a, T v) { return __atomic_fetch_xor(a, v, ::cudaperf::detail::kOrder); }   \
  inline T atomicMin(T* a, T v) { CUDAPERF_CAS_LOOP(T, T, a, v < old ? v : old) }                  \
  inline T atomicMax(T* a, T v) { CUDAPERF_CAS_LOOP(T, T, a, v > old ? v : old) }                  \
  inline T atomicCAS(T* a, T compare, T v) { CUDAPERF_CAS(T, a, compare, v) }

CUDAPERF_INTEGER_ATOMICS(int)
CUDAPERF_INTEGER_ATOMICS(unsigned int)
CUDAPERF_INTEGER_ATOMICS(unsigned long long)
CUDAPERF_INTEGER_ATOMICS(long long)
#undef CUDAPERF_INTEGER_ATOMICS

inline unsigned short atomicCAS(unsigned short* a, unsigned short compare, unsigned short v) {
  CUDAPERF_CAS(unsigned short, a, compare, v)
}

// ((old >= limit) ? 0 : old + 1) and (((old == 0) || (old > limit)) ? limit : old - 1).
inline unsigned atomicInc(unsigned* a, unsigned limit) {
  CUDAPERF_CAS_LOOP(unsigned, unsigned, a, old >= limit ? 0u : old + 1u)
}
inline unsigned atomicDec(unsigned* a, unsigned limit) {
  CUDAPERF_CAS_LOOP(unsigned, unsigned, a, (old == 0 || old > limit) ? limit : old - 1u)
}

inline float atomicAdd(float* a, float v) { CUDAPERF_CAS_LOOP(float, uint32_t, a, old + v) }
inline double atomicAdd(double* a, double v) { CUDAPERF_CAS_LOOP(double, uint64_t, a, old + v) }
inline float atomicExch(float* a, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  uint32_t old =
      __atomic_exchange_n(reinterpret_cast<uint32_t*>(a), bits, ::cudaperf::detail::kOrder);
  float r;
  std::memcpy(&r, &old, 4);
  return r;
}
inline float atomicMin(float* a, float v) {
  CUDAPERF_CAS_LOOP(float, uint32_t, a, std::fmin(old, v))
}
inline float atomicMax(float* a, float v) {
  CUDAPERF_CAS_LOOP(float, uint32_t, a, std::fmax(old, v))
}
inline double atomicMin(double* a, double v) {
  CUDAPERF_CAS_LOOP(double, uint64_t, a, std::fmin(old, v))
}
inline double atomicMax(double* a, double v) {
  CUDAPERF_CAS_LOOP(double, uint64_t, a, std::fmax(old, v))
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
