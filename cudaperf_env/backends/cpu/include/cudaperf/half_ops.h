// The cuda_fp16.h / cuda_bf16.h function set and operators for __half, __half2, __nv_bfloat16, __nv_bfloat162.
#pragma once

namespace cudaperf {
namespace fp16 {

template <class H> struct Traits;
template <> struct Traits<__half> {
  static unsigned short round(float f, int m) { return float_to_half(f, m); }
  static unsigned short round_exact(long double v, int m) { return to_half(v, m); }
};
template <> struct Traits<__nv_bfloat16> {
  static unsigned short round(float f, int m) { return float_to_bf16(f, m); }
  static unsigned short round_exact(long double v, int m) { return to_bf16(v, m); }
};
constexpr unsigned short kCanonicalNaN = 0x7fff;

inline float rsqrt_f(float x) { return static_cast<float>(1.0 / std::sqrt(static_cast<double>(x))); }
inline float rcp_f(float x) { return 1.0f / x; }
inline float exp10_f(float x) { return ::exp10f(x); }

template <class H> inline H bits(unsigned short b) { H h; h.__x = b; return h; }
// Arithmetic runs in float and rounds once: float has more than 2p+2 bits for both formats,
// so the double rounding is innocuous for + - * / and sqrt.
template <class H> inline H from(float f, int m = kRN) { return bits<H>(Traits<H>::round(f, m)); }
template <class H> inline H exact(long double v, int m) { return bits<H>(Traits<H>::round_exact(v, m)); }
template <class H> inline float val(H h) { return h.value(); }
template <class H> inline H sat(H h) {
  float v = val(h);
  return (std::isnan(v) || v <= 0.0f) ? from<H>(0.0f) : (v >= 1.0f ? from<H>(1.0f) : h);
}
template <class H> inline H relu(H h) {
  float v = val(h);
  return std::isnan(v) ? bits<H>(kCanonicalNaN) : (v < 0.0f ? from<H>(0.0f) : h);
}
template <class H> inline H fma(H a, H b, H c) {
  return from<H>(fma_round_to_odd(val(a), val(b), val(c)));
}
template <class H> inline H max_num(H a, H b) {
  float x = val(a), y = val(b);
  if (std::isnan(x) && std::isnan(y)) return bits<H>(kCanonicalNaN);
  if (std::isnan(x)) return b;
  if (std::isnan(y)) return a;
  return x > y || (x == y && !std::signbit(x)) ? a : b;
}
template <class H> inline H min_num(H a, H b) {
  float x = val(a), y = val(b);
  if (std::isnan(x) && std::isnan(y)) return bits<H>(kCanonicalNaN);
  if (std::isnan(x)) return b;
  if (std::isnan(y)) return a;
  return x < y || (x == y && std::signbit(x)) ? a : b;
}
template <class H> inline H max_nan(H a, H b) {
  return (std::isnan(val(a)) || std::isnan(val(b))) ? bits<H>(kCanonicalNaN) : max_num(a, b);
}
template <class H> inline H min_nan(H a, H b) {
  return (std::isnan(val(a)) || std::isnan(val(b))) ? bits<H>(kCanonicalNaN) : min_num(a, b);
}
template <class H> inline int isinf_sign(H h) {
  float v = val(h);
  return std::isinf(v) ? (v < 0 ? -1 : 1) : 0;
}
template <class H2, class F> inline H2 map(H2 a, F f) { return H2(f(a.x), f(a.y)); }
template <class H2, class F> inline H2 zip(H2 a, H2 b, F f) { return H2(f(a.x, b.x), f(a.y, b.y)); }
template <class H2, class F> inline H2 zip3(H2 a, H2 b, H2 c, F f) {
  return H2(f(a.x, b.x, c.x), f(a.y, b.y, c.y));
}

// Atomic add on a 16-bit value through a CAS on the 32-bit word that contains it.
template <class H>
inline H atomic_add(H* address, H v) {
  uintptr_t a = reinterpret_cast<uintptr_t>(address);
  uint32_t* word = reinterpret_cast<uint32_t*>(a & ~uintptr_t{3});
  unsigned shift = (a & 2u) != 0 ? 16u : 0u;
  uint32_t old = __atomic_load_n(word, __ATOMIC_RELAXED);
  for (;;) {
    H current = bits<H>(static_cast<unsigned short>(old >> shift));
    H next = from<H>(val(current) + val(v));
    uint32_t updated = (old & ~(0xffffu << shift)) | (static_cast<uint32_t>(next.__x) << shift);
    if (__atomic_compare_exchange_n(word, &old, updated, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
      return current;
    }
  }
}

}  // namespace fp16
}  // namespace cudaperf

#define CPF ::cudaperf::fp16

// Scalar conversions named after the type (t: half / bfloat16).
#define CUDAPERF_H16_INT_CONVERSIONS(H, t, I, iname)                                                 \
  inline H __##iname##2##t##_rn(I v) { return CPF::exact<H>(v, CPF::kRN); }                         \
  inline H __##iname##2##t##_rz(I v) { return CPF::exact<H>(v, CPF::kRZ); }                         \
  inline H __##iname##2##t##_ru(I v) { return CPF::exact<H>(v, CPF::kRU); }                         \
  inline H __##iname##2##t##_rd(I v) { return CPF::exact<H>(v, CPF::kRD); }                         \
  inline I __##t##2##iname##_rn(H h) { return CPF::to_int<I>(h.value(), CPF::kRN); }                \
  inline I __##t##2##iname##_rz(H h) { return CPF::to_int<I>(h.value(), CPF::kRZ); }                \
  inline I __##t##2##iname##_ru(H h) { return CPF::to_int<I>(h.value(), CPF::kRU); }                \
  inline I __##t##2##iname##_rd(H h) { return CPF::to_int<I>(h.value(), CPF::kRD); }

#define CUDAPERF_H16_NAMED(H, H2, t, p)                                                              \
  inline float __##t##2float(H h) { return h.value(); }                                              \
  inline H __float2##t(float f) { return CPF::from<H>(f); }                                          \
  inline H __float2##t##_rn(float f) { return CPF::from<H>(f, CPF::kRN); }                           \
  inline H __float2##t##_rz(float f) { return CPF::from<H>(f, CPF::kRZ); }                          \
  inline H __float2##t##_ru(float f) { return CPF::from<H>(f, CPF::kRU); }                          \
  inline H __float2##t##_rd(float f) { return CPF::from<H>(f, CPF::kRD); }                          \
  inline H __double2##t(double d) { return CPF::exact<H>(d, CPF::kRN); }                            \
  inline short __##t##_as_short(H h) { return static_cast<short>(h.__x); }                          \
  inline unsigned short __##t##_as_ushort(H h) { return h.__x; }                                     \
  inline H __short_as_##t(short v) { return CPF::bits<H>(static_cast<unsigned short>(v)); }         \
  inline H __ushort_as_##t(unsigned short v) { return CPF::bits<H>(v); }                            \
  inline signed char __##t##2char_rz(H h) { return CPF::to_int<signed char>(h.value(), CPF::kRZ); } \
  inline unsigned char __##t##2uchar_rz(H h) {                                                       \
    return CPF::to_int<unsigned char>(h.value(), CPF::kRZ);                                          \
  }                                                                                                  \
  CUDAPERF_H16_INT_CONVERSIONS(H, t, int, int)                                                       \
  CUDAPERF_H16_INT_CONVERSIONS(H, t, unsigned, uint)                                                 \
  CUDAPERF_H16_INT_CONVERSIONS(H, t, short, short)                                                   \
  CUDAPERF_H16_INT_CONVERSIONS(H, t, unsigned short, ushort)                                         \
  CUDAPERF_H16_INT_CONVERSIONS(H, t, long long, ll)                                                  \
  CUDAPERF_H16_INT_CONVERSIONS(H, t, unsigned long long, ull)                                        \
  inline H2 __floats2##p##_rn(float a, float b) { return H2(CPF::from<H>(a), CPF::from<H>(b)); }    \
  inline H2 __float2##p##_rn(float a) { return H2(CPF::from<H>(a), CPF::from<H>(a)); }              \
  inline H2 __float22##p##_rn(float2 f) { return H2(CPF::from<H>(f.x), CPF::from<H>(f.y)); }        \
  inline float2 __##p##2float2(H2 h) { return float2{h.x.value(), h.y.value()}; }                   \
  inline H2 __halves2##p(H a, H b) { return H2(a, b); }                                              \
  inline H2 make_##p(H a, H b) { return H2(a, b); }                                                  \
  inline H __low2##t(H2 h) { return h.x; }                                                           \
  inline H __high2##t(H2 h) { return h.y; }                                                          \
  inline H2 __lows2##p(H2 a, H2 b) { return H2(a.x, b.x); }                                          \
  inline H2 __highs2##p(H2 a, H2 b) { return H2(a.y, b.y); }                                         \
  inline H2 __low2##p(H2 h) { return H2(h.x, h.x); }                                                 \
  inline H2 __high2##p(H2 h) { return H2(h.y, h.y); }                                                \
  inline H2 __##t##2##p(H h) { return H2(h, h); }

CUDAPERF_H16_NAMED(__half, __half2, half, half2)
CUDAPERF_H16_NAMED(__nv_bfloat16, __nv_bfloat162, bfloat16, bfloat162)
#undef CUDAPERF_H16_NAMED
#undef CUDAPERF_H16_INT_CONVERSIONS

// Comparisons: ordered ones are false on NaN, the *u ("unordered") ones true.
#define CUDAPERF_H16_COMPARE(H, H2, name, op, unordered)                                           \
  inline bool name(H a, H b) {                                                                       \
    float x = a.value(), y = b.value();                                                              \
    return (std::isnan(x) || std::isnan(y)) ? unordered : (x op y);                                  \
  }                                                                                                  \
  inline H2 name##2(H2 a, H2 b) {                                                                    \
    return H2(CPF::from<H>(name(a.x, b.x) ? 1.0f : 0.0f), CPF::from<H>(name(a.y, b.y) ? 1.0f : 0.0f)); \
  }                                                                                                  \
  inline unsigned name##2_mask(H2 a, H2 b) {                                                         \
    return (name(a.x, b.x) ? 0xffffu : 0u) | (name(a.y, b.y) ? 0xffff0000u : 0u);                    \
  }

#define CUDAPERF_H16_BOTH_COMPARE(H, H2, base, op)                                                 \
  CUDAPERF_H16_COMPARE(H, H2, __h##base, op, false)                                                  \
  CUDAPERF_H16_COMPARE(H, H2, __h##base##u, op, true)                                                \
  inline bool __hb##base##2(H2 a, H2 b) { return __h##base(a.x, b.x) && __h##base(a.y, b.y); }       \
  inline bool __hb##base##u2(H2 a, H2 b) { return __h##base##u(a.x, b.x) && __h##base##u(a.y, b.y); }

#define CUDAPERF_H16_UNARY(H, H2, name, pname, fn)                                                 \
  inline H name(H a) { return CPF::from<H>(fn(a.value())); }                                        \
  inline H2 pname(H2 a) { return H2(name(a.x), name(a.y)); }


#define CUDAPERF_H16_COMMON(H, H2)                                                                  \
  inline float __low2float(H2 h) { return h.x.value(); }                                             \
  inline float __high2float(H2 h) { return h.y.value(); }                                            \
  inline H2 __lowhigh2highlow(H2 h) { return H2(h.y, h.x); }                                         \
  inline H __hadd(H a, H b) { return CPF::from<H>(a.value() + b.value()); }                          \
  inline H __hsub(H a, H b) { return CPF::from<H>(a.value() - b.value()); }                          \
  inline H __hmul(H a, H b) { return CPF::from<H>(a.value() * b.value()); }                          \
  inline H __hdiv(H a, H b) { return CPF::from<H>(a.value() / b.value()); }                          \
  inline H __hadd_rn(H a, H b) { return __hadd(a, b); }                                              \
  inline H __hsub_rn(H a, H b) { return __hsub(a, b); }                                              \
  inline H __hmul_rn(H a, H b) { return __hmul(a, b); }                                              \
  inline H __hadd_sat(H a, H b) { return CPF::sat(__hadd(a, b)); }                                   \
  inline H __hsub_sat(H a, H b) { return CPF::sat(__hsub(a, b)); }                                   \
  inline H __hmul_sat(H a, H b) { return CPF::sat(__hmul(a, b)); }                                   \
  inline H __hfma(H a, H b, H c) { return CPF::fma(a, b, c); }                                       \
  inline H __hfma_sat(H a, H b, H c) { return CPF::sat(CPF::fma(a, b, c)); }                         \
  inline H __hfma_relu(H a, H b, H c) { return CPF::relu(CPF::fma(a, b, c)); }                       \
  inline H __hneg(H a) { return CPF::bits<H>(static_cast<unsigned short>(a.__x ^ 0x8000u)); }        \
  inline H __habs(H a) { return CPF::bits<H>(static_cast<unsigned short>(a.__x & 0x7fffu)); }        \
  inline H __hmax(H a, H b) { return CPF::max_num(a, b); }                                           \
  inline H __hmin(H a, H b) { return CPF::min_num(a, b); }                                           \
  inline H __hmax_nan(H a, H b) { return CPF::max_nan(a, b); }                                       \
  inline H __hmin_nan(H a, H b) { return CPF::min_nan(a, b); }                                       \
  inline bool __hisnan(H a) { return std::isnan(a.value()); }                                        \
  inline int __hisinf(H a) { return CPF::isinf_sign(a); }                                            \
  inline H2 __hisnan2(H2 a) {                                                                        \
    return H2(CPF::from<H>(__hisnan(a.x) ? 1.0f : 0.0f), CPF::from<H>(__hisnan(a.y) ? 1.0f : 0.0f)); \
  }                                                                                                  \
  inline H2 __hadd2(H2 a, H2 b) { return CPF::zip(a, b, [](H x, H y) { return __hadd(x, y); }); }    \
  inline H2 __hsub2(H2 a, H2 b) { return CPF::zip(a, b, [](H x, H y) { return __hsub(x, y); }); }    \
  inline H2 __hmul2(H2 a, H2 b) { return CPF::zip(a, b, [](H x, H y) { return __hmul(x, y); }); }    \
  inline H2 __h2div(H2 a, H2 b) { return CPF::zip(a, b, [](H x, H y) { return __hdiv(x, y); }); }    \
  inline H2 __hadd2_rn(H2 a, H2 b) { return __hadd2(a, b); }                                         \
  inline H2 __hsub2_rn(H2 a, H2 b) { return __hsub2(a, b); }                                         \
  inline H2 __hmul2_rn(H2 a, H2 b) { return __hmul2(a, b); }                                         \
  inline H2 __hadd2_sat(H2 a, H2 b) { return CPF::map(__hadd2(a, b), [](H x) { return CPF::sat(x); }); } \
  inline H2 __hsub2_sat(H2 a, H2 b) { return CPF::map(__hsub2(a, b), [](H x) { return CPF::sat(x); }); } \
  inline H2 __hmul2_sat(H2 a, H2 b) { return CPF::map(__hmul2(a, b), [](H x) { return CPF::sat(x); }); } \
  inline H2 __hfma2(H2 a, H2 b, H2 c) {                                                              \
    return CPF::zip3(a, b, c, [](H x, H y, H z) { return __hfma(x, y, z); });                        \
  }                                                                                                  \
  inline H2 __hfma2_sat(H2 a, H2 b, H2 c) {                                                          \
    return CPF::zip3(a, b, c, [](H x, H y, H z) { return __hfma_sat(x, y, z); });                    \
  }                                                                                                  \
  inline H2 __hfma2_relu(H2 a, H2 b, H2 c) {                                                         \
    return CPF::zip3(a, b, c, [](H x, H y, H z) { return __hfma_relu(x, y, z); });                   \
  }                                                                                                  \
  inline H2 __hcmadd(H2 a, H2 b, H2 c) {                                                             \
    float re = a.x.value() * b.x.value() - a.y.value() * b.y.value() + c.x.value();                  \
    float im = a.x.value() * b.y.value() + a.y.value() * b.x.value() + c.y.value();                  \
    return H2(CPF::from<H>(re), CPF::from<H>(im));                                                   \
  }                                                                                                  \
  inline H2 __hneg2(H2 a) { return H2(__hneg(a.x), __hneg(a.y)); }                                   \
  inline H2 __habs2(H2 a) { return H2(__habs(a.x), __habs(a.y)); }                                   \
  inline H2 __hmax2(H2 a, H2 b) { return H2(__hmax(a.x, b.x), __hmax(a.y, b.y)); }                   \
  inline H2 __hmin2(H2 a, H2 b) { return H2(__hmin(a.x, b.x), __hmin(a.y, b.y)); }                   \
  inline H2 __hmax2_nan(H2 a, H2 b) { return H2(__hmax_nan(a.x, b.x), __hmax_nan(a.y, b.y)); }       \
  inline H2 __hmin2_nan(H2 a, H2 b) { return H2(__hmin_nan(a.x, b.x), __hmin_nan(a.y, b.y)); }       \
  CUDAPERF_H16_BOTH_COMPARE(H, H2, eq, ==)                                                           \
  CUDAPERF_H16_BOTH_COMPARE(H, H2, ne, !=)                                                           \
  CUDAPERF_H16_BOTH_COMPARE(H, H2, lt, <)                                                            \
  CUDAPERF_H16_BOTH_COMPARE(H, H2, le, <=)                                                           \
  CUDAPERF_H16_BOTH_COMPARE(H, H2, gt, >)                                                            \
  CUDAPERF_H16_BOTH_COMPARE(H, H2, ge, >=)                                                           \
  CUDAPERF_H16_UNARY(H, H2, hexp, h2exp, ::expf)                                                     \
  CUDAPERF_H16_UNARY(H, H2, hexp2, h2exp2, ::exp2f)                                                  \
  CUDAPERF_H16_UNARY(H, H2, hexp10, h2exp10, CPF::exp10_f)                                       \
  CUDAPERF_H16_UNARY(H, H2, hlog, h2log, ::logf)                                                     \
  CUDAPERF_H16_UNARY(H, H2, hlog2, h2log2, ::log2f)                                                  \
  CUDAPERF_H16_UNARY(H, H2, hlog10, h2log10, ::log10f)                                               \
  CUDAPERF_H16_UNARY(H, H2, hsin, h2sin, ::sinf)                                                     \
  CUDAPERF_H16_UNARY(H, H2, hcos, h2cos, ::cosf)                                                     \
  CUDAPERF_H16_UNARY(H, H2, htanh, h2tanh, ::tanhf)                                                  \
  CUDAPERF_H16_UNARY(H, H2, htanh_approx, h2tanh_approx, ::tanhf)                                    \
  CUDAPERF_H16_UNARY(H, H2, hsqrt, h2sqrt, ::sqrtf)                                                  \
  CUDAPERF_H16_UNARY(H, H2, hrsqrt, h2rsqrt, CPF::rsqrt_f)                                       \
  CUDAPERF_H16_UNARY(H, H2, hrcp, h2rcp, CPF::rcp_f)                                             \
  CUDAPERF_H16_UNARY(H, H2, hceil, h2ceil, ::ceilf)                                                  \
  CUDAPERF_H16_UNARY(H, H2, hfloor, h2floor, ::floorf)                                               \
  CUDAPERF_H16_UNARY(H, H2, htrunc, h2trunc, ::truncf)                                               \
  CUDAPERF_H16_UNARY(H, H2, hrint, h2rint, ::rintf)                                                  \
  inline H operator+(const H& a, const H& b) { return __hadd(a, b); }                                \
  inline H operator-(const H& a, const H& b) { return __hsub(a, b); }                                \
  inline H operator*(const H& a, const H& b) { return __hmul(a, b); }                                \
  inline H operator/(const H& a, const H& b) { return __hdiv(a, b); }                                \
  inline H& operator+=(H& a, const H& b) { return a = __hadd(a, b); }                                \
  inline H& operator-=(H& a, const H& b) { return a = __hsub(a, b); }                                \
  inline H& operator*=(H& a, const H& b) { return a = __hmul(a, b); }                                \
  inline H& operator/=(H& a, const H& b) { return a = __hdiv(a, b); }                                \
  inline H& operator++(H& a) { return a = __hadd(a, CPF::from<H>(1.0f)); }                           \
  inline H& operator--(H& a) { return a = __hsub(a, CPF::from<H>(1.0f)); }                           \
  inline H operator++(H& a, int) { H old = a; ++a; return old; }                                     \
  inline H operator--(H& a, int) { H old = a; --a; return old; }                                     \
  inline H operator+(const H& a) { return a; }                                                       \
  inline H operator-(const H& a) { return __hneg(a); }                                               \
  inline bool operator==(const H& a, const H& b) { return __heq(a, b); }                             \
  inline bool operator!=(const H& a, const H& b) { return __hneu(a, b); }                            \
  inline bool operator<(const H& a, const H& b) { return __hlt(a, b); }                              \
  inline bool operator<=(const H& a, const H& b) { return __hle(a, b); }                             \
  inline bool operator>(const H& a, const H& b) { return __hgt(a, b); }                              \
  inline bool operator>=(const H& a, const H& b) { return __hge(a, b); }                             \
  inline H2 operator+(const H2& a, const H2& b) { return __hadd2(a, b); }                            \
  inline H2 operator-(const H2& a, const H2& b) { return __hsub2(a, b); }                            \
  inline H2 operator*(const H2& a, const H2& b) { return __hmul2(a, b); }                            \
  inline H2 operator/(const H2& a, const H2& b) { return __h2div(a, b); }                            \
  inline H2& operator+=(H2& a, const H2& b) { return a = __hadd2(a, b); }                            \
  inline H2& operator-=(H2& a, const H2& b) { return a = __hsub2(a, b); }                            \
  inline H2& operator*=(H2& a, const H2& b) { return a = __hmul2(a, b); }                            \
  inline H2& operator/=(H2& a, const H2& b) { return a = __h2div(a, b); }                            \
  inline H2 operator+(const H2& a) { return a; }                                                     \
  inline H2 operator-(const H2& a) { return __hneg2(a); }                                            \
  inline bool operator==(const H2& a, const H2& b) { return __hbeq2(a, b); }                         \
  inline bool operator!=(const H2& a, const H2& b) { return __hbneu2(a, b); }                        \
  inline bool operator<(const H2& a, const H2& b) { return __hblt2(a, b); }                          \
  inline bool operator<=(const H2& a, const H2& b) { return __hble2(a, b); }                         \
  inline bool operator>(const H2& a, const H2& b) { return __hbgt2(a, b); }                          \
  inline bool operator>=(const H2& a, const H2& b) { return __hbge2(a, b); }                         \
  inline H atomicAdd(H* a, H v) { return CPF::atomic_add(a, v); }                                    \
  inline H2 atomicAdd(H2* a, H2 v) {                                                                 \
    return ::cudaperf::detail::atomic_update<H2, uint32_t>(a, [v](H2 x) { return __hadd2(x, v); });  \
  }

CUDAPERF_H16_COMMON(__half, __half2)
CUDAPERF_H16_COMMON(__nv_bfloat16, __nv_bfloat162)
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
