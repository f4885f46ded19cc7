// The cuda_fp16.h / cuda_bf16.h functions and operators for __half(2) and __nv_bfloat16(2).
#pragma once

namespace cudaperf {
namespace fp16 {

constexpr unsigned short kCanonicalNaN = 0x7fff;

inline float rsqrt_f(float x) {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(x)));
}
inline float rcp_f(float x) { return 1.0f / x; }
inline float exp10_f(float x) { return ::exp10f(x); }

// Saturating, rounded conversion to an integer range (NaN gives 0).
inline long double to_bounded(float v, int mode, long double lo, long double hi) {
  double r = rounded(v, mode);
  if (std::isnan(r)) return 0;
  return r < lo ? lo : (r > hi ? hi : r);
}

}  // namespace fp16
}  // namespace cudaperf

// Helpers for one 16-bit type (t: half / bfloat16). Plain overloads and t-named functions, not
// templates: templates used by these inline functions would be instantiated in every file.
// Arithmetic runs in float and rounds once: float has more than 2p+2 bits for both formats, so
// the double rounding is innocuous for + - * / and sqrt.
#define CUDAPERF_H16_HELPERS(H, t, ROUND, ROUND_EXACT)                                             \
  namespace cudaperf {                                                                             \
  namespace fp16 {                                                                                 \
  inline H t##_bits(unsigned short b) {                                                            \
    H h;                                                                                           \
    h.__x = b;                                                                                     \
    return h;                                                                                      \
  }                                                                                                \
  inline H t##_from(float f, int m = kRN) { return t##_bits(ROUND(f, m)); }                        \
  inline H t##_exact(long double v, int m) { return t##_bits(ROUND_EXACT(v, m)); }                 \
  inline H sat(H h) {                                                                              \
    float v = h.value();                                                                           \
    return (std::isnan(v) || v <= 0.0f) ? t##_from(0.0f) : (v >= 1.0f ? t##_from(1.0f) : h);       \
  }                                                                                                \
  inline H relu(H h) {                                                                             \
    float v = h.value();                                                                           \
    return std::isnan(v) ? t##_bits(kCanonicalNaN) : (v < 0.0f ? t##_from(0.0f) : h);              \
  }                                                                                                \
  inline H fma(H a, H b, H c) {                                                                    \
    return t##_from(fma_round_to_odd(a.value(), b.value(), c.value()));                            \
  }                                                                                                \
  inline H max_num(H a, H b) {                                                                     \
    float x = a.value(), y = b.value();                                                            \
    if (std::isnan(x) && std::isnan(y)) return t##_bits(kCanonicalNaN);                            \
    if (std::isnan(x)) return b;                                                                   \
    if (std::isnan(y)) return a;                                                                   \
    return x > y || (x == y && !std::signbit(x)) ? a : b;                                          \
  }                                                                                                \
  inline H min_num(H a, H b) {                                                                     \
    float x = a.value(), y = b.value();                                                            \
    if (std::isnan(x) && std::isnan(y)) return t##_bits(kCanonicalNaN);                            \
    if (std::isnan(x)) return b;                                                                   \
    if (std::isnan(y)) return a;                                                                   \
    return x < y || (x == y && std::signbit(x)) ? a : b;                                           \
  }                                                                                                \
  inline bool any_nan(H a, H b) { return std::isnan(a.value()) || std::isnan(b.value()); }         \
  inline H max_nan(H a, H b) { return any_nan(a, b) ? t##_bits(kCanonicalNaN) : max_num(a, b); }   \
  inline H min_nan(H a, H b) { return any_nan(a, b) ? t##_bits(kCanonicalNaN) : min_num(a, b); }   \
  /* Atomic add on a 16-bit value through a CAS on the 32-bit word that holds it. */               \
  inline H atomic_add(H* address, H v) {                                                           \
    uintptr_t a = reinterpret_cast<uintptr_t>(address);                                            \
    uint32_t* word = reinterpret_cast<uint32_t*>(a & ~uintptr_t{3});                               \
    unsigned shift = (a & 2u) != 0 ? 16u : 0u;                                                     \
    uint32_t old = __atomic_load_n(word, __ATOMIC_RELAXED);                                        \
    for (;;) {                                                                                     \
      H current = t##_bits(static_cast<unsigned short>(old >> shift));                             \
      H next = t##_from(current.value() + v.value());                                              \
      uint32_t updated = (old & ~(0xffffu << shift)) | (static_cast<uint32_t>(next.__x) << shift); \
      if (__atomic_compare_exchange_n(word, &old, updated, true, __ATOMIC_SEQ_CST,                 \
                                      __ATOMIC_RELAXED)) {                                         \
        return current;                                                                            \
      }                                                                                            \
    }                                                                                              \
  }                                                                                                \
  }                                                                                                \
  }

CUDAPERF_H16_HELPERS(__half, half, float_to_half, to_half)
CUDAPERF_H16_HELPERS(__nv_bfloat16, bfloat16, float_to_bf16, to_bf16)
#undef CUDAPERF_H16_HELPERS

#define CPF ::cudaperf::fp16

// Scalar conversions named after the type (t: half / bfloat16).
#define CUDAPERF_H16_INT_CONVERSIONS(H, t, I, iname, LO, HI)                 \
  inline H __##iname##2##t##_rn(I v) { return CPF::t##_exact(v, CPF::kRN); } \
  inline H __##iname##2##t##_rz(I v) { return CPF::t##_exact(v, CPF::kRZ); } \
  inline H __##iname##2##t##_ru(I v) { return CPF::t##_exact(v, CPF::kRU); } \
  inline H __##iname##2##t##_rd(I v) { return CPF::t##_exact(v, CPF::kRD); } \
  inline I __##t##2##iname##_rn(H h) {                                       \
    return static_cast<I>(CPF::to_bounded(h.value(), CPF::kRN, LO, HI));     \
  }                                                                          \
  inline I __##t##2##iname##_rz(H h) {                                       \
    return static_cast<I>(CPF::to_bounded(h.value(), CPF::kRZ, LO, HI));     \
  }                                                                          \
  inline I __##t##2##iname##_ru(H h) {                                       \
    return static_cast<I>(CPF::to_bounded(h.value(), CPF::kRU, LO, HI));     \
  }                                                                          \
  inline I __##t##2##iname##_rd(H h) {                                       \
    return static_cast<I>(CPF::to_bounded(h.value(), CPF::kRD, LO, HI));     \
  }

#define CUDAPERF_H16_NAMED(H, H2, t, p)                                                            \
  inline float __##t##2float(H h) { return h.value(); }                                            \
  inline H __float2##t(float f) { return CPF::t##_from(f); }                                       \
  inline H __float2##t##_rn(float f) { return CPF::t##_from(f, CPF::kRN); }                        \
  inline H __float2##t##_rz(float f) { return CPF::t##_from(f, CPF::kRZ); }                        \
  inline H __float2##t##_ru(float f) { return CPF::t##_from(f, CPF::kRU); }                        \
  inline H __float2##t##_rd(float f) { return CPF::t##_from(f, CPF::kRD); }                        \
  inline H __double2##t(double d) { return CPF::t##_exact(d, CPF::kRN); }                          \
  inline short __##t##_as_short(H h) { return static_cast<short>(h.__x); }                         \
  inline unsigned short __##t##_as_ushort(H h) { return h.__x; }                                   \
  inline H __short_as_##t(short v) { return CPF::t##_bits(static_cast<unsigned short>(v)); }       \
  inline H __ushort_as_##t(unsigned short v) { return CPF::t##_bits(v); }                          \
  inline signed char __##t##2char_rz(H h) {                                                        \
    return static_cast<signed char>(h.rz(SCHAR_MIN, SCHAR_MAX));                                   \
  }                                                                                                \
  inline unsigned char __##t##2uchar_rz(H h) {                                                     \
    return static_cast<unsigned char>(h.rz(0, UCHAR_MAX));                                         \
  }                                                                                                \
  CUDAPERF_H16_INT_CONVERSIONS(H, t, int, int, INT_MIN, INT_MAX)                                   \
  CUDAPERF_H16_INT_CONVERSIONS(H, t, unsigned, uint, 0, UINT_MAX)                                  \
  CUDAPERF_H16_INT_CONVERSIONS(H, t, short, short, SHRT_MIN, SHRT_MAX)                             \
  CUDAPERF_H16_INT_CONVERSIONS(H, t, unsigned short, ushort, 0, USHRT_MAX)                         \
  CUDAPERF_H16_INT_CONVERSIONS(H, t, long long, ll, LLONG_MIN, LLONG_MAX)                          \
  CUDAPERF_H16_INT_CONVERSIONS(H, t, unsigned long long, ull, 0, ULLONG_MAX)                       \
  inline H2 __floats2##p##_rn(float a, float b) { return H2(CPF::t##_from(a), CPF::t##_from(b)); } \
  inline H2 __float2##p##_rn(float a) { return H2(CPF::t##_from(a), CPF::t##_from(a)); }           \
  inline H2 __float22##p##_rn(float2 f) { return H2(CPF::t##_from(f.x), CPF::t##_from(f.y)); }     \
  inline float2 __##p##2float2(H2 h) { return float2{h.x.value(), h.y.value()}; }                  \
  inline H2 __halves2##p(H a, H b) { return H2(a, b); }                                            \
  inline H2 make_##p(H a, H b) { return H2(a, b); }                                                \
  inline H __low2##t(H2 h) { return h.x; }                                                         \
  inline H __high2##t(H2 h) { return h.y; }                                                        \
  inline H2 __lows2##p(H2 a, H2 b) { return H2(a.x, b.x); }                                        \
  inline H2 __highs2##p(H2 a, H2 b) { return H2(a.y, b.y); }                                       \
  inline H2 __low2##p(H2 h) { return H2(h.x, h.x); }                                               \
  inline H2 __high2##p(H2 h) { return H2(h.y, h.y); }                                              \
  inline H2 __##t##2##p(H h) { return H2(h, h); }

CUDAPERF_H16_NAMED(__half, __half2, half, half2)
CUDAPERF_H16_NAMED(__nv_bfloat16, __nv_bfloat162, bfloat16, bfloat162)
#undef CUDAPERF_H16_NAMED
#undef CUDAPERF_H16_INT_CONVERSIONS

// Comparisons: ordered ones are false on NaN, the *u ("unordered") ones true.
#define CUDAPERF_H16_COMPARE(H, H2, t, name, op, unordered)                       \
  inline bool name(H a, H b) {                                                    \
    float x = a.value(), y = b.value();                                           \
    return (std::isnan(x) || std::isnan(y)) ? unordered : (x op y);               \
  }                                                                               \
  inline H2 name##2(H2 a, H2 b) {                                                 \
    return H2(CPF::t##_from(name(a.x, b.x) ? 1.0f : 0.0f),                        \
              CPF::t##_from(name(a.y, b.y) ? 1.0f : 0.0f));                       \
  }                                                                               \
  inline unsigned name##2_mask(H2 a, H2 b) {                                      \
    return (name(a.x, b.x) ? 0xffffu : 0u) | (name(a.y, b.y) ? 0xffff0000u : 0u); \
  }

#define CUDAPERF_H16_BOTH_COMPARE(H, H2, t, base, op)                                          \
  CUDAPERF_H16_COMPARE(H, H2, t, __h##base, op, false)                                         \
  CUDAPERF_H16_COMPARE(H, H2, t, __h##base##u, op, true)                                       \
  inline bool __hb##base##2(H2 a, H2 b) { return __h##base(a.x, b.x) && __h##base(a.y, b.y); } \
  inline bool __hb##base##u2(H2 a, H2 b) {                                                     \
    return __h##base##u(a.x, b.x) && __h##base##u(a.y, b.y);                                   \
  }

#define CUDAPERF_H16_UNARY(H, H2, t, name, pname, fn)         \
  inline H name(H a) { return CPF::t##_from(fn(a.value())); } \
  inline H2 pname(H2 a) { return H2(name(a.x), name(a.y)); }

#define CUDAPERF_H16_COMMON(H, H2, t)                                                              \
  inline float __low2float(H2 h) { return h.x.value(); }                                           \
  inline float __high2float(H2 h) { return h.y.value(); }                                          \
  inline H2 __lowhigh2highlow(H2 h) { return H2(h.y, h.x); }                                       \
  inline H __hadd(H a, H b) { return CPF::t##_from(a.value() + b.value()); }                       \
  inline H __hsub(H a, H b) { return CPF::t##_from(a.value() - b.value()); }                       \
  inline H __hmul(H a, H b) { return CPF::t##_from(a.value() * b.value()); }                       \
  inline H __hdiv(H a, H b) { return CPF::t##_from(a.value() / b.value()); }                       \
  inline H __hadd_rn(H a, H b) { return __hadd(a, b); }                                            \
  inline H __hsub_rn(H a, H b) { return __hsub(a, b); }                                            \
  inline H __hmul_rn(H a, H b) { return __hmul(a, b); }                                            \
  inline H __hadd_sat(H a, H b) { return CPF::sat(__hadd(a, b)); }                                 \
  inline H __hsub_sat(H a, H b) { return CPF::sat(__hsub(a, b)); }                                 \
  inline H __hmul_sat(H a, H b) { return CPF::sat(__hmul(a, b)); }                                 \
  inline H __hfma(H a, H b, H c) { return CPF::fma(a, b, c); }                                     \
  inline H __hfma_sat(H a, H b, H c) { return CPF::sat(CPF::fma(a, b, c)); }                       \
  inline H __hfma_relu(H a, H b, H c) { return CPF::relu(CPF::fma(a, b, c)); }                     \
  inline H __hneg(H a) { return CPF::t##_bits(static_cast<unsigned short>(a.__x ^ 0x8000u)); }     \
  inline H __habs(H a) { return CPF::t##_bits(static_cast<unsigned short>(a.__x & 0x7fffu)); }     \
  inline H __hmax(H a, H b) { return CPF::max_num(a, b); }                                         \
  inline H __hmin(H a, H b) { return CPF::min_num(a, b); }                                         \
  inline H __hmax_nan(H a, H b) { return CPF::max_nan(a, b); }                                     \
  inline H __hmin_nan(H a, H b) { return CPF::min_nan(a, b); }                                     \
  inline bool __hisnan(H a) { return std::isnan(a.value()); }                                      \
  inline int __hisinf(H a) { return std::isinf(a.value()) ? (a.value() < 0 ? -1 : 1) : 0; }        \
  inline H2 __hisnan2(H2 a) {                                                                      \
    return H2(CPF::t##_from(__hisnan(a.x) ? 1.0f : 0.0f),                                          \
              CPF::t##_from(__hisnan(a.y) ? 1.0f : 0.0f));                                         \
  }                                                                                                \
  inline H2 __hadd2(H2 a, H2 b) { return H2(__hadd(a.x, b.x), __hadd(a.y, b.y)); }                 \
  inline H2 __hsub2(H2 a, H2 b) { return H2(__hsub(a.x, b.x), __hsub(a.y, b.y)); }                 \
  inline H2 __hmul2(H2 a, H2 b) { return H2(__hmul(a.x, b.x), __hmul(a.y, b.y)); }                 \
  inline H2 __h2div(H2 a, H2 b) { return H2(__hdiv(a.x, b.x), __hdiv(a.y, b.y)); }                 \
  inline H2 __hadd2_rn(H2 a, H2 b) { return __hadd2(a, b); }                                       \
  inline H2 __hsub2_rn(H2 a, H2 b) { return __hsub2(a, b); }                                       \
  inline H2 __hmul2_rn(H2 a, H2 b) { return __hmul2(a, b); }                                       \
  inline H2 __hadd2_sat(H2 a, H2 b) {                                                              \
    H2 r = __hadd2(a, b);                                                                          \
    return H2(CPF::sat(r.x), CPF::sat(r.y));                                                       \
  }                                                                                                \
  inline H2 __hsub2_sat(H2 a, H2 b) {                                                              \
    H2 r = __hsub2(a, b);                                                                          \
    return H2(CPF::sat(r.x), CPF::sat(r.y));                                                       \
  }                                                                                                \
  inline H2 __hmul2_sat(H2 a, H2 b) {                                                              \
    H2 r = __hmul2(a, b);                                                                          \
    return H2(CPF::sat(r.x), CPF::sat(r.y));                                                       \
  }                                                                                                \
  inline H2 __hfma2(H2 a, H2 b, H2 c) { return H2(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)); } \
  inline H2 __hfma2_sat(H2 a, H2 b, H2 c) {                                                        \
    return H2(__hfma_sat(a.x, b.x, c.x), __hfma_sat(a.y, b.y, c.y));                               \
  }                                                                                                \
  inline H2 __hfma2_relu(H2 a, H2 b, H2 c) {                                                       \
    return H2(__hfma_relu(a.x, b.x, c.x), __hfma_relu(a.y, b.y, c.y));                             \
  }                                                                                                \
  inline H2 __hcmadd(H2 a, H2 b, H2 c) {                                                           \
    float re = a.x.value() * b.x.value() - a.y.value() * b.y.value() + c.x.value();                \
    float im = a.x.value() * b.y.value() + a.y.value() * b.x.value() + c.y.value();                \
    return H2(CPF::t##_from(re), CPF::t##_from(im));                                               \
  }                                                                                                \
  inline H2 __hneg2(H2 a) { return H2(__hneg(a.x), __hneg(a.y)); }                                 \
  inline H2 __habs2(H2 a) { return H2(__habs(a.x), __habs(a.y)); }                                 \
  inline H2 __hmax2(H2 a, H2 b) { return H2(__hmax(a.x, b.x), __hmax(a.y, b.y)); }                 \
  inline H2 __hmin2(H2 a, H2 b) { return H2(__hmin(a.x, b.x), __hmin(a.y, b.y)); }                 \
  inline H2 __hmax2_nan(H2 a, H2 b) { return H2(__hmax_nan(a.x, b.x), __hmax_nan(a.y, b.y)); }     \
  inline H2 __hmin2_nan(H2 a, H2 b) { return H2(__hmin_nan(a.x, b.x), __hmin_nan(a.y, b.y)); }     \
  CUDAPERF_H16_BOTH_COMPARE(H, H2, t, eq, ==)                                                      \
  CUDAPERF_H16_BOTH_COMPARE(H, H2, t, ne, !=)                                                      \
  CUDAPERF_H16_BOTH_COMPARE(H, H2, t, lt, <)                                                       \
  CUDAPERF_H16_BOTH_COMPARE(H, H2, t, le, <=)                                                      \
  CUDAPERF_H16_BOTH_COMPARE(H, H2, t, gt, >)                                                       \
  CUDAPERF_H16_BOTH_COMPARE(H, H2, t, ge, >=)                                                      \
  CUDAPERF_H16_UNARY(H, H2, t, hexp, h2exp, ::expf)                                                \
  CUDAPERF_H16_UNARY(H, H2, t, hexp2, h2exp2, ::exp2f)                                             \
  CUDAPERF_H16_UNARY(H, H2, t, hexp10, h2exp10, CPF::exp10_f)                                      \
  CUDAPERF_H16_UNARY(H, H2, t, hlog, h2log, ::logf)                                                \
  CUDAPERF_H16_UNARY(H, H2, t, hlog2, h2log2, ::log2f)                                             \
  CUDAPERF_H16_UNARY(H, H2, t, hlog10, h2log10, ::log10f)                                          \
  CUDAPERF_H16_UNARY(H, H2, t, hsin, h2sin, ::sinf)                                                \
  CUDAPERF_H16_UNARY(H, H2, t, hcos, h2cos, ::cosf)                                                \
  CUDAPERF_H16_UNARY(H, H2, t, htanh, h2tanh, ::tanhf)                                             \
  CUDAPERF_H16_UNARY(H, H2, t, htanh_approx, h2tanh_approx, ::tanhf)                               \
  CUDAPERF_H16_UNARY(H, H2, t, hsqrt, h2sqrt, ::sqrtf)                                             \
  CUDAPERF_H16_UNARY(H, H2, t, hrsqrt, h2rsqrt, CPF::rsqrt_f)                                      \
  CUDAPERF_H16_UNARY(H, H2, t, hrcp, h2rcp, CPF::rcp_f)                                            \
  CUDAPERF_H16_UNARY(H, H2, t, hceil, h2ceil, ::ceilf)                                             \
  CUDAPERF_H16_UNARY(H, H2, t, hfloor, h2floor, ::floorf)                                          \
  CUDAPERF_H16_UNARY(H, H2, t, htrunc, h2trunc, ::truncf)                                          \
  CUDAPERF_H16_UNARY(H, H2, t, hrint, h2rint, ::rintf)                                             \
  inline H operator+(const H& a, const H& b) { return __hadd(a, b); }                              \
  inline H operator-(const H& a, const H& b) { return __hsub(a, b); }                              \
  inline H operator*(const H& a, const H& b) { return __hmul(a, b); }                              \
  inline H operator/(const H& a, const H& b) { return __hdiv(a, b); }                              \
  inline H& operator+=(H& a, const H& b) { return a = __hadd(a, b); }                              \
  inline H& operator-=(H& a, const H& b) { return a = __hsub(a, b); }                              \
  inline H& operator*=(H& a, const H& b) { return a = __hmul(a, b); }                              \
  inline H& operator/=(H& a, const H& b) { return a = __hdiv(a, b); }                              \
  inline H& operator++(H& a) { return a = __hadd(a, CPF::t##_from(1.0f)); }                        \
  inline H& operator--(H& a) { return a = __hsub(a, CPF::t##_from(1.0f)); }                        \
  inline H operator++(H& a, int) {                                                                 \
    H old = a;                                                                                     \
    ++a;                                                                                           \
    return old;                                                                                    \
  }                                                                                                \
  inline H operator--(H& a, int) {                                                                 \
    H old = a;                                                                                     \
    --a;                                                                                           \
    return old;                                                                                    \
  }                                                                                                \
  inline H operator+(const H& a) { return a; }                                                     \
  inline H operator-(const H& a) { return __hneg(a); }                                             \
  inline bool operator==(const H& a, const H& b) { return __heq(a, b); }                           \
  inline bool operator!=(const H& a, const H& b) { return __hneu(a, b); }                          \
  inline bool operator<(const H& a, const H& b) { return __hlt(a, b); }                            \
  inline bool operator<=(const H& a, const H& b) { return __hle(a, b); }                           \
  inline bool operator>(const H& a, const H& b) { return __hgt(a, b); }                            \
  inline bool operator>=(const H& a, const H& b) { return __hge(a, b); }                           \
  inline H2 operator+(const H2& a, const H2& b) { return __hadd2(a, b); }                          \
  inline H2 operator-(const H2& a, const H2& b) { return __hsub2(a, b); }                          \
  inline H2 operator*(const H2& a, const H2& b) { return __hmul2(a, b); }                          \
  inline H2 operator/(const H2& a, const H2& b) { return __h2div(a, b); }                          \
  inline H2& operator+=(H2& a, const H2& b) { return a = __hadd2(a, b); }                          \
  inline H2& operator-=(H2& a, const H2& b) { return a = __hsub2(a, b); }                          \
  inline H2& operator*=(H2& a, const H2& b) { return a = __hmul2(a, b); }                          \
  inline H2& operator/=(H2& a, const H2& b) { return a = __h2div(a, b); }                          \
  inline H2 operator+(const H2& a) { return a; }                                                   \
  inline H2 operator-(const H2& a) { return __hneg2(a); }                                          \
  inline bool operator==(const H2& a, const H2& b) { return __hbeq2(a, b); }                       \
  inline bool operator!=(const H2& a, const H2& b) { return __hbneu2(a, b); }                      \
  inline bool operator<(const H2& a, const H2& b) { return __hblt2(a, b); }                        \
  inline bool operator<=(const H2& a, const H2& b) { return __hble2(a, b); }                       \
  inline bool operator>(const H2& a, const H2& b) { return __hbgt2(a, b); }                        \
  inline bool operator>=(const H2& a, const H2& b) { return __hbge2(a, b); }                       \
  inline H atomicAdd(H* a, H v) { return CPF::atomic_add(a, v); }                                  \
  inline H2 atomicAdd(H2* a, H2 v) {                                                               \
    /* Both halves in one 32-bit CAS. */                                                           \
    uint32_t* word = reinterpret_cast<uint32_t*>(a);                                               \
    uint32_t old = __atomic_load_n(word, __ATOMIC_RELAXED);                                        \
    for (;;) {                                                                                     \
      H2 current;                                                                                  \
      std::memcpy(&current, &old, 4);                                                              \
      H2 next = __hadd2(current, v);                                                               \
      uint32_t next_bits;                                                                          \
      std::memcpy(&next_bits, &next, 4);                                                           \
      if (__atomic_compare_exchange_n(word, &old, next_bits, true, __ATOMIC_SEQ_CST,               \
                                      __ATOMIC_RELAXED)) {                                         \
        return current;                                                                            \
      }                                                                                            \
    }                                                                                              \
  }

CUDAPERF_H16_COMMON(__half, __half2, half)
CUDAPERF_H16_COMMON(__nv_bfloat16, __nv_bfloat162, bfloat16)
#undef CUDAPERF_H16_COMMON
#undef CUDAPERF_H16_UNARY
#undef CUDAPERF_H16_BOTH_COMPARE
#undef CUDAPERF_H16_COMPARE
#undef CPF

#define CUDART_INF_FP16 __ushort_as_half((unsigned short)0x7C00U)
#define CUDART_NAN_FP16 __ushort_as_half((unsigned short)0x7FFFU)
#define CUDART_MIN_DENORM_FP16 __ushort_as_half((unsigned short)0x0001U)
#define CUDART_MAX_NORMAL_FP16 __ushort_as_half((unsigned short)0x7BFFU)
#define CUDART_NEG_ZERO_FP16 __ushort_as_half((unsigned short)0x8000U)
#define CUDART_ZERO_FP16 __ushort_as_half((unsigned short)0x0000U)
#define CUDART_ONE_FP16 __ushort_as_half((unsigned short)0x3C00U)
#define CUDART_INF_BF16 __ushort_as_bfloat16((unsigned short)0x7F80U)
#define CUDART_NAN_BF16 __ushort_as_bfloat16((unsigned short)0x7FFFU)
#define CUDART_MIN_DENORM_BF16 __ushort_as_bfloat16((unsigned short)0x0001U)
#define CUDART_MAX_NORMAL_BF16 __ushort_as_bfloat16((unsigned short)0x7F7FU)
#define CUDART_NEG_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x8000U)
#define CUDART_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x0000U)
#define CUDART_ONE_BF16 __ushort_as_bfloat16((unsigned short)0x3F80U)
