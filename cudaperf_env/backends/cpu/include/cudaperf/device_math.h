// CUDA math API: CUDA-only functions, fast and directed-rounding intrinsics, conversions, min/max.
#pragma once

namespace cudaperf {
namespace math {

constexpr double kPi = 3.141592653589793238462643383279502884;
constexpr double kSqrt2 = 1.414213562373095048801688724209698079;

inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline double rcbrt(double x) { return 1.0 / std::cbrt(x); }

// sin(pi x) and cos(pi x) reduced exactly first: pi*x loses accuracy for large x.
inline double sinpi(double x) {
  if (!std::isfinite(x)) return std::nan("");
  double r = std::fmod(x, 2.0);  // exact
  if (r == 0.0) return std::copysign(0.0, x);
  if (r > 1.0) r -= 2.0;
  if (r < -1.0) r += 2.0;
  if (r == 1.0 || r == -1.0) return std::copysign(0.0, r) * -1.0;
  if (r > 0.5) r = 1.0 - r;
  if (r < -0.5) r = -1.0 - r;
  return std::sin(kPi * r);
}
inline double cospi(double x) {
  if (!std::isfinite(x)) return std::nan("");
  double r = std::fabs(std::fmod(x, 2.0));
  if (r > 1.0) r = 2.0 - r;  // cos(pi r), r in [0, 1]
  if (r == 0.5) return 0.0;
  return r < 0.5 ? std::cos(kPi * r) : -std::cos(kPi * (1.0 - r));
}

// Inverse of the standard normal CDF: Acklam's rational approximation (1e-9) refined by one
// Halley step on erfc, which brings it to double precision.
inline double normcdfinv(double p) {
  if (std::isnan(p) || p < 0.0 || p > 1.0) return std::nan("");
  if (p == 0.0) return -HUGE_VAL;
  if (p == 1.0) return HUGE_VAL;
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  double x;
  if (p < 0.02425 || p > 1 - 0.02425) {
    double q = std::sqrt(-2 * std::log(p < 0.5 ? p : 1 - p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    if (p > 0.5) x = -x;
  } else {
    double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  }
  double e = 0.5 * std::erfc(-x / kSqrt2) - p;
  double u = e * std::sqrt(2 * kPi) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}
inline double normcdf(double x) { return 0.5 * std::erfc(-x / kSqrt2); }
inline double erfcinv(double y) {
  if (y == 0.0) return HUGE_VAL;
  if (y == 2.0) return -HUGE_VAL;
  return -normcdfinv(y / 2) / kSqrt2;
}
inline double erfinv(double y) {
  if (y == 1.0) return HUGE_VAL;
  if (y == -1.0) return -HUGE_VAL;
  if (std::fabs(y) > 1.0 || std::isnan(y)) return std::nan("");
  if (std::fabs(y) >= 0.5) return y > 0 ? erfcinv(1.0 - y) : -erfcinv(1.0 + y);
  // Small |y|: Newton on erf from a first-order guess; 1 - y would lose y's low bits.
  double x = y * std::sqrt(kPi) / 2;
  for (int i = 0; i < 6; ++i) x -= (std::erf(x) - y) / (2 / std::sqrt(kPi) * std::exp(-x * x));
  return x;
}
// exp(x^2) erfc(x) without overflow: the asymptotic series once x is large.
inline double erfcx(double x) {
  if (x < 10.0) return std::exp(x * x) * std::erfc(x);
  double inv = 1.0 / (2 * x * x), term = 1.0, sum = 1.0;
  for (int n = 1; n < 12; ++n) {
    term *= -(2 * n - 1) * inv;
    sum += term;
  }
  return sum / (x * std::sqrt(kPi));
}
// Modified Bessel functions I0 and I1: power series up to |x| = 20, then the asymptotic
// series e^x / sqrt(2 pi x) * sum_k (-1)^k a_k(nu) / x^k, both accurate to double precision.
inline double bessel_i(int nu, double x) {
  double ax = std::fabs(x);
  double r;
  if (ax <= 20.0) {
    double q = ax * ax / 4, term = nu == 0 ? 1.0 : ax / 2;
    r = term;
    for (int k = 1; k < 200 && term > r * 1e-17; ++k) {
      term *= q / (static_cast<double>(k) * (k + nu));
      r += term;
    }
  } else {
    double mu = 4.0 * nu * nu, term = 1.0, sum = 1.0;
    for (int k = 1; k < 30; ++k) {
      term *= -(mu - (2.0 * k - 1) * (2.0 * k - 1)) / (k * 8.0 * ax);
      sum += term;
    }
    r = std::exp(ax) / std::sqrt(2 * kPi * ax) * sum;
  }
  return (nu == 1 && x < 0) ? -r : r;
}
inline double cyl_bessel_i0(double x) { return bessel_i(0, x); }
inline double cyl_bessel_i1(double x) { return bessel_i(1, x); }

// Hides a value from the optimizer (no constant folding across a rounding-mode change).
// Overloads, not a template: templates used here would be instantiated in every submission.
inline float opaque(float v) {
  __asm__ volatile("" : "+m"(v));
  return v;
}
inline double opaque(double v) {
  __asm__ volatile("" : "+m"(v));
  return v;
}
inline int opaque(int v) {
  __asm__ volatile("" : "+m"(v));
  return v;
}
inline unsigned opaque(unsigned v) {
  __asm__ volatile("" : "+m"(v));
  return v;
}
inline long long opaque(long long v) {
  __asm__ volatile("" : "+m"(v));
  return v;
}
inline unsigned long long opaque(unsigned long long v) {
  __asm__ volatile("" : "+m"(v));
  return v;
}

// CUDA's saturating conversions of an integral-valued v: NaN gives 0, out-of-range values clamp.
inline long long clamp_signed(double v, long long lo, long long hi) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(lo)) return lo;
  if (v >= static_cast<double>(hi)) return hi;
  return static_cast<long long>(v);
}
inline unsigned long long clamp_unsigned(double v, unsigned long long hi) {
  if (std::isnan(v) || v <= 0.0) return 0;
  if (v >= static_cast<double>(hi)) return hi;
  return static_cast<unsigned long long>(v);
}

}  // namespace math
}  // namespace cudaperf

// ---- CUDA-only functions, float and double, with CUDA's float overloads ----------------------

inline double rsqrt(double x) { return ::cudaperf::math::rsqrt(x); }
inline float rsqrt(float x) { return static_cast<float>(::cudaperf::math::rsqrt(x)); }
inline float rsqrtf(float x) { return static_cast<float>(::cudaperf::math::rsqrt(x)); }
inline double rcbrt(double x) { return ::cudaperf::math::rcbrt(x); }
inline float rcbrt(float x) { return static_cast<float>(::cudaperf::math::rcbrt(x)); }
inline float rcbrtf(float x) { return static_cast<float>(::cudaperf::math::rcbrt(x)); }
#if !__GLIBC_PREREQ(2, 41)  // newer glibc declares C23's sinpi family itself
inline double sinpi(double x) { return ::cudaperf::math::sinpi(x); }
inline float sinpif(float x) { return static_cast<float>(::cudaperf::math::sinpi(x)); }
inline double cospi(double x) { return ::cudaperf::math::cospi(x); }
inline float cospif(float x) { return static_cast<float>(::cudaperf::math::cospi(x)); }
#endif
inline float sinpi(float x) { return static_cast<float>(::cudaperf::math::sinpi(x)); }
inline float cospi(float x) { return static_cast<float>(::cudaperf::math::cospi(x)); }
inline void sincospi(double x, double* s, double* c) {
  *s = ::cudaperf::math::sinpi(x);
  *c = ::cudaperf::math::cospi(x);
}
inline void sincospif(float x, float* s, float* c) {
  *s = static_cast<float>(::cudaperf::math::sinpi(x));
  *c = static_cast<float>(::cudaperf::math::cospi(x));
}
inline void sincospi(float x, float* s, float* c) { sincospif(x, s, c); }
inline void sincos(float x, float* s, float* c) { ::sincosf(x, s, c); }

#define CUDAPERF_UNARY(name)                                                           \
  inline double name(double x) { return ::cudaperf::math::name(x); }                   \
  inline float name(float x) { return static_cast<float>(::cudaperf::math::name(x)); } \
  inline float name##f(float x) { return static_cast<float>(::cudaperf::math::name(x)); }
CUDAPERF_UNARY(normcdf)
CUDAPERF_UNARY(normcdfinv)
CUDAPERF_UNARY(erfinv)
CUDAPERF_UNARY(erfcinv)
CUDAPERF_UNARY(erfcx)
CUDAPERF_UNARY(cyl_bessel_i0)
CUDAPERF_UNARY(cyl_bessel_i1)
#undef CUDAPERF_UNARY

inline double rhypot(double x, double y) { return 1.0 / std::hypot(x, y); }
inline float rhypotf(float x, float y) { return static_cast<float>(rhypot(x, y)); }
inline float rhypot(float x, float y) { return rhypotf(x, y); }
inline double norm3d(double a, double b, double c) { return std::sqrt(a * a + b * b + c * c); }
inline float norm3df(float a, float b, float c) { return static_cast<float>(norm3d(a, b, c)); }
inline float norm3d(float a, float b, float c) { return norm3df(a, b, c); }
inline double rnorm3d(double a, double b, double c) { return 1.0 / norm3d(a, b, c); }
inline float rnorm3df(float a, float b, float c) { return static_cast<float>(rnorm3d(a, b, c)); }
inline float rnorm3d(float a, float b, float c) { return rnorm3df(a, b, c); }
inline double norm4d(double a, double b, double c, double d) {
  return std::sqrt(a * a + b * b + c * c + d * d);
}
inline float norm4df(float a, float b, float c, float d) {
  return static_cast<float>(norm4d(a, b, c, d));
}
inline double rnorm4d(double a, double b, double c, double d) { return 1.0 / norm4d(a, b, c, d); }
inline float rnorm4df(float a, float b, float c, float d) {
  return static_cast<float>(rnorm4d(a, b, c, d));
}
inline double norm(int dim, const double* p) {
  double s = 0;
  for (int i = 0; i < dim; ++i) s += p[i] * p[i];
  return std::sqrt(s);
}
inline float normf(int dim, const float* p) {
  double s = 0;
  for (int i = 0; i < dim; ++i) s += static_cast<double>(p[i]) * p[i];
  return static_cast<float>(std::sqrt(s));
}
inline double rnorm(int dim, const double* p) { return 1.0 / norm(dim, p); }
inline float rnormf(int dim, const float* p) { return 1.0f / normf(dim, p); }
inline float fdividef(float x, float y) { return x / y; }

// ---- fast intrinsics ----------------------------------------------------------------------
// glibc declares __expf, __sinf, ... without exporting them, so these must be macros.
#define __expf(x) (::expf(static_cast<float>(x)))
#define __exp10f(x) (::exp10f(static_cast<float>(x)))
#define __logf(x) (::logf(static_cast<float>(x)))
#define __log2f(x) (::log2f(static_cast<float>(x)))
#define __log10f(x) (::log10f(static_cast<float>(x)))
#define __sinf(x) (::sinf(static_cast<float>(x)))
#define __cosf(x) (::cosf(static_cast<float>(x)))
#define __tanf(x) (::tanf(static_cast<float>(x)))
#define __powf(x, y) (::powf(static_cast<float>(x), static_cast<float>(y)))
#define __sincosf(x, s, c) (::sincosf(static_cast<float>(x), (s), (c)))

inline float __fdividef(float x, float y) { return x / y; }
inline float __saturatef(float x) { return x >= 1.0f ? 1.0f : (x > 0.0f ? x : 0.0f); }
inline float __frsqrt_rn(float x) {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(x)));
}

// Evaluates `expr` with the FPU in rounding mode `mode` and returns it. The empty asm statements
// pin the arithmetic between the two mode switches.
#define CUDAPERF_IN_MODE(T, mode, expr)          \
  int saved_mode = fegetround();                 \
  fesetround(mode);                              \
  __asm__ volatile("" ::: "memory");             \
  T result = (expr);                             \
  __asm__ volatile("" : "+m"(result)::"memory"); \
  fesetround(saved_mode);                        \
  return result;

#define CUDAPERF_ROUNDED(suffix, mode)                                               \
  inline float __fadd_##suffix(float a, float b) {                                   \
    CUDAPERF_IN_MODE(float, mode, ::cudaperf::math::opaque(a) + b)                   \
  }                                                                                  \
  inline float __fsub_##suffix(float a, float b) {                                   \
    CUDAPERF_IN_MODE(float, mode, ::cudaperf::math::opaque(a) - b)                   \
  }                                                                                  \
  inline float __fmul_##suffix(float a, float b) {                                   \
    CUDAPERF_IN_MODE(float, mode, ::cudaperf::math::opaque(a) * b)                   \
  }                                                                                  \
  inline float __fdiv_##suffix(float a, float b) {                                   \
    CUDAPERF_IN_MODE(float, mode, ::cudaperf::math::opaque(a) / b)                   \
  }                                                                                  \
  inline float __frcp_##suffix(float a) {                                            \
    CUDAPERF_IN_MODE(float, mode, 1.0f / ::cudaperf::math::opaque(a))                \
  }                                                                                  \
  inline float __fsqrt_##suffix(float a) {                                           \
    CUDAPERF_IN_MODE(float, mode, std::sqrt(::cudaperf::math::opaque(a)))            \
  }                                                                                  \
  inline float __fmaf_##suffix(float a, float b, float c) {                          \
    CUDAPERF_IN_MODE(float, mode, std::fma(::cudaperf::math::opaque(a), b, c))       \
  }                                                                                  \
  inline float __fmaf_ieee_##suffix(float a, float b, float c) {                     \
    return __fmaf_##suffix(a, b, c);                                                 \
  }                                                                                  \
  inline double __dadd_##suffix(double a, double b) {                                \
    CUDAPERF_IN_MODE(double, mode, ::cudaperf::math::opaque(a) + b)                  \
  }                                                                                  \
  inline double __dsub_##suffix(double a, double b) {                                \
    CUDAPERF_IN_MODE(double, mode, ::cudaperf::math::opaque(a) - b)                  \
  }                                                                                  \
  inline double __dmul_##suffix(double a, double b) {                                \
    CUDAPERF_IN_MODE(double, mode, ::cudaperf::math::opaque(a) * b)                  \
  }                                                                                  \
  inline double __ddiv_##suffix(double a, double b) {                                \
    CUDAPERF_IN_MODE(double, mode, ::cudaperf::math::opaque(a) / b)                  \
  }                                                                                  \
  inline double __drcp_##suffix(double a) {                                          \
    CUDAPERF_IN_MODE(double, mode, 1.0 / ::cudaperf::math::opaque(a))                \
  }                                                                                  \
  inline double __dsqrt_##suffix(double a) {                                         \
    CUDAPERF_IN_MODE(double, mode, std::sqrt(::cudaperf::math::opaque(a)))           \
  }                                                                                  \
  inline double __fma_##suffix(double a, double b, double c) {                       \
    CUDAPERF_IN_MODE(double, mode, std::fma(::cudaperf::math::opaque(a), b, c))      \
  }                                                                                  \
  inline float __int2float_##suffix(int v) {                                         \
    CUDAPERF_IN_MODE(float, mode, static_cast<float>(::cudaperf::math::opaque(v)))   \
  }                                                                                  \
  inline float __uint2float_##suffix(unsigned v) {                                   \
    CUDAPERF_IN_MODE(float, mode, static_cast<float>(::cudaperf::math::opaque(v)))   \
  }                                                                                  \
  inline float __ll2float_##suffix(long long v) {                                    \
    CUDAPERF_IN_MODE(float, mode, static_cast<float>(::cudaperf::math::opaque(v)))   \
  }                                                                                  \
  inline float __ull2float_##suffix(unsigned long long v) {                          \
    CUDAPERF_IN_MODE(float, mode, static_cast<float>(::cudaperf::math::opaque(v)))   \
  }                                                                                  \
  inline double __ll2double_##suffix(long long v) {                                  \
    CUDAPERF_IN_MODE(double, mode, static_cast<double>(::cudaperf::math::opaque(v))) \
  }                                                                                  \
  inline double __ull2double_##suffix(unsigned long long v) {                        \
    CUDAPERF_IN_MODE(double, mode, static_cast<double>(::cudaperf::math::opaque(v))) \
  }                                                                                  \
  inline float __double2float_##suffix(double v) {                                   \
    CUDAPERF_IN_MODE(float, mode, static_cast<float>(::cudaperf::math::opaque(v)))   \
  }
CUDAPERF_ROUNDED(rz, FE_TOWARDZERO)
CUDAPERF_ROUNDED(ru, FE_UPWARD)
CUDAPERF_ROUNDED(rd, FE_DOWNWARD)
#undef CUDAPERF_ROUNDED
#undef CUDAPERF_IN_MODE

// Round-to-nearest is the FPU's mode already. Baseline x86-64 has no FMA instruction, so g++
// never contracts these into one (CUDA promises that for the _rn intrinsics).
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __frcp_rn(float a) { return 1.0f / a; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline float __fmaf_ieee_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __drcp_rn(double a) { return 1.0 / a; }
inline double __dsqrt_rn(double a) { return std::sqrt(a); }
inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
inline float __int2float_rn(int v) { return static_cast<float>(v); }
inline float __uint2float_rn(unsigned v) { return static_cast<float>(v); }
inline float __ll2float_rn(long long v) { return static_cast<float>(v); }
inline float __ull2float_rn(unsigned long long v) { return static_cast<float>(v); }
inline double __ll2double_rn(long long v) { return static_cast<double>(v); }
inline double __ull2double_rn(unsigned long long v) { return static_cast<double>(v); }
inline float __double2float_rn(double v) { return static_cast<float>(v); }

inline double __int2double_rn(int v) { return v; }
inline double __uint2double_rn(unsigned v) { return v; }

// Float/double -> integer: rn is round-half-even, all saturate like the hardware.
#define CUDAPERF_TO_INT(F, fname, I, iname, CLAMP)                                            \
  inline I __##fname##2##iname##_rn(F v) { return static_cast<I>(CLAMP(std::nearbyint(v))); } \
  inline I __##fname##2##iname##_rz(F v) { return static_cast<I>(CLAMP(std::trunc(v))); }     \
  inline I __##fname##2##iname##_ru(F v) { return static_cast<I>(CLAMP(std::ceil(v))); }      \
  inline I __##fname##2##iname##_rd(F v) { return static_cast<I>(CLAMP(std::floor(v))); }
#define CUDAPERF_CLAMP_INT(v) ::cudaperf::math::clamp_signed(v, INT_MIN, INT_MAX)
#define CUDAPERF_CLAMP_UINT(v) ::cudaperf::math::clamp_unsigned(v, UINT_MAX)
#define CUDAPERF_CLAMP_LL(v) ::cudaperf::math::clamp_signed(v, LLONG_MIN, LLONG_MAX)
#define CUDAPERF_CLAMP_ULL(v) ::cudaperf::math::clamp_unsigned(v, ULLONG_MAX)
CUDAPERF_TO_INT(float, float, int, int, CUDAPERF_CLAMP_INT)
CUDAPERF_TO_INT(float, float, unsigned, uint, CUDAPERF_CLAMP_UINT)
CUDAPERF_TO_INT(float, float, long long, ll, CUDAPERF_CLAMP_LL)
CUDAPERF_TO_INT(float, float, unsigned long long, ull, CUDAPERF_CLAMP_ULL)
CUDAPERF_TO_INT(double, double, int, int, CUDAPERF_CLAMP_INT)
CUDAPERF_TO_INT(double, double, unsigned, uint, CUDAPERF_CLAMP_UINT)
CUDAPERF_TO_INT(double, double, long long, ll, CUDAPERF_CLAMP_LL)
CUDAPERF_TO_INT(double, double, unsigned long long, ull, CUDAPERF_CLAMP_ULL)
#undef CUDAPERF_TO_INT
#undef CUDAPERF_CLAMP_INT
#undef CUDAPERF_CLAMP_UINT
#undef CUDAPERF_CLAMP_LL
#undef CUDAPERF_CLAMP_ULL

// Bit reinterpretation.
inline int __float_as_int(float x) {
  int r;
  std::memcpy(&r, &x, 4);
  return r;
}
inline unsigned __float_as_uint(float x) {
  unsigned r;
  std::memcpy(&r, &x, 4);
  return r;
}
inline float __int_as_float(int x) {
  float r;
  std::memcpy(&r, &x, 4);
  return r;
}
inline float __uint_as_float(unsigned x) {
  float r;
  std::memcpy(&r, &x, 4);
  return r;
}
inline long long __double_as_longlong(double x) {
  long long r;
  std::memcpy(&r, &x, 8);
  return r;
}
inline double __longlong_as_double(long long x) {
  double r;
  std::memcpy(&r, &x, 8);
  return r;
}
inline int __double2hiint(double x) { return static_cast<int>(__double_as_longlong(x) >> 32); }
inline int __double2loint(double x) { return static_cast<int>(__double_as_longlong(x)); }
inline double __hiloint2double(int hi, int lo) {
  return __longlong_as_double(
      static_cast<long long>((static_cast<unsigned long long>(static_cast<unsigned>(hi)) << 32) |
                             static_cast<unsigned>(lo)));
}

// ---- min / max ----------------------------------------------------------------------------
// CUDA's global min/max accept any two arithmetic types with the usual conversions. Templates
// rank below std::min/std::max (more specialized), so `using namespace std;` code is unaffected.
template <class A, class B,
          class = std::enable_if_t<std::is_arithmetic<A>::value && std::is_arithmetic<B>::value>>
inline std::common_type_t<A, B> min(A a, B b) {
  using C = std::common_type_t<A, B>;
  if constexpr (std::is_floating_point<C>::value) {
    return std::fmin(static_cast<C>(a), static_cast<C>(b));
  } else {
    return static_cast<C>(b) < static_cast<C>(a) ? static_cast<C>(b) : static_cast<C>(a);
  }
}
template <class A, class B,
          class = std::enable_if_t<std::is_arithmetic<A>::value && std::is_arithmetic<B>::value>>
inline std::common_type_t<A, B> max(A a, B b) {
  using C = std::common_type_t<A, B>;
  if constexpr (std::is_floating_point<C>::value) {
    return std::fmax(static_cast<C>(a), static_cast<C>(b));
  } else {
    return static_cast<C>(a) < static_cast<C>(b) ? static_cast<C>(b) : static_cast<C>(a);
  }
}
inline unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned umax(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long llmin(long long a, long long b) { return a < b ? a : b; }
inline long long llmax(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long ullmin(unsigned long long a, unsigned long long b) {
  return a < b ? a : b;
}
inline unsigned long long ullmax(unsigned long long a, unsigned long long b) {
  return a > b ? a : b;
}
