// Software __half and __nv_bfloat16 (and pairs): 16-bit storage, correctly rounded conversions.
#pragma once

namespace cudaperf {
namespace fp16 {

enum Round { kRN, kRZ, kRU, kRD };

inline uint32_t float_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
inline float bits_float(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// Rounds a float to binary16 in the given mode.
inline unsigned short float_to_half(float f, int mode = kRN) {
  uint32_t x = float_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u)
    return static_cast<unsigned short>(sign | (ax > 0x7f800000u ? 0x7e00u : 0x7c00u));
  bool away =
      (mode == kRU && sign == 0) || (mode == kRD && sign != 0);  // inexact rounds up in magnitude
  int e = static_cast<int>(ax >> 23) - 127;
  if (e > 15) return static_cast<unsigned short>(sign | (mode == kRN || away ? 0x7c00u : 0x7bffu));
  uint32_t mant = ax & 0x7fffffu;
  if (e == -127) {
    e = -126;  // float subnormal: no implicit bit
  } else {
    mant |= 0x800000u;
  }
  int shift = e >= -14 ? 13 : 13 + (-14 - e);  // subnormal halves keep fewer bits
  uint32_t base = e >= -14 ? static_cast<uint32_t>(e + 14) << 10 : 0u;
  uint32_t q = 0, rem = mant, half = 0x800000u * 2;  // shift >= 25: everything is remainder
  if (shift <= 24) {
    q = mant >> shift;
    rem = mant & ((1u << shift) - 1u);
    half = 1u << (shift - 1);
  }
  if (mode == kRN) {
    if (rem > half || (rem == half && (q & 1u) != 0)) ++q;
  } else if (away && rem != 0) {
    ++q;
  }
  return static_cast<unsigned short>(sign | (base + q));  // carries roll into the exponent
}

inline float half_to_float(unsigned short h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) return bits_float(sign | 0x7f800000u | (m << 13));
  if (e == 0) {
    float v = static_cast<float>(m) * 5.9604644775390625e-8f;  // m * 2^-24, exact
    return sign != 0 ? -v : v;
  }
  return bits_float(sign | ((e + 112) << 23) | (m << 13));
}

inline unsigned short float_to_bf16(float f, int mode = kRN) {
  uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<unsigned short>((x >> 16) | 0x40u);
  uint32_t q = x >> 16, rem = x & 0xffffu;
  bool neg = (x >> 31) != 0;
  if (mode == kRN) {
    if (rem > 0x8000u || (rem == 0x8000u && (q & 1u) != 0)) ++q;
  } else if (((mode == kRU && !neg) || (mode == kRD && neg)) && rem != 0) {
    ++q;
  }
  return static_cast<unsigned short>(q);
}

inline float bf16_to_float(unsigned short b) { return bits_float(static_cast<uint32_t>(b) << 16); }

// Rounds to float keeping "inexact" in the last bit (round to odd): a second rounding to 16
// bits is then as exact as rounding the original value once.
inline float float_round_to_odd(long double v) {
  float f = static_cast<float>(v);
  if (std::isfinite(f) && static_cast<long double>(f) != v && (float_bits(f) & 1u) == 0) {
    f = std::nextafter(f, static_cast<long double>(f) < v ? HUGE_VALF : -HUGE_VALF);
  }
  return f;
}

// a * b + c for 16-bit inputs, exact up to a round-to-odd float.
inline float fma_round_to_odd(float a, float b, float c) {
  double p = static_cast<double>(a) * b;  // exact: 11- or 8-bit significands
  double s = p + c;
  double bb = s - p;
  double err = (p - (s - bb)) + (c - bb);  // TwoSum: s + err == p + c exactly
  return float_round_to_odd(static_cast<long double>(s) + err);
}

inline unsigned short to_half(long double v, int mode = kRN) {
  return float_to_half(float_round_to_odd(v), mode);
}
inline unsigned short to_bf16(long double v, int mode = kRN) {
  return float_to_bf16(float_round_to_odd(v), mode);
}

inline double rounded(float v, int mode) {
  switch (mode) {
    case kRN:
      return std::nearbyint(v);
    case kRU:
      return std::ceil(v);
    case kRD:
      return std::floor(v);
    default:
      return std::trunc(v);
  }
}
// Saturating conversions to integers (NaN gives 0), like the hardware's.
inline long long to_signed(float v, int mode, long long lo, long long hi) {
  return ::cudaperf::math::clamp_signed(rounded(v, mode), lo, hi);
}
inline unsigned long long to_unsigned(float v, int mode, unsigned long long hi) {
  return ::cudaperf::math::clamp_unsigned(rounded(v, mode), hi);
}

}  // namespace fp16
}  // namespace cudaperf

struct __half_raw {
  unsigned short x;
};
struct __half2_raw {
  unsigned short x, y;
};
struct __nv_bfloat16_raw {
  unsigned short x;
};
struct __nv_bfloat162_raw {
  unsigned short x, y;
};

// The same constructors and conversion operators as CUDA's, so overload resolution (and its
// ambiguities, e.g. `h * 2.0f`) matches nvcc. Integer conversions truncate and saturate.
#define CUDAPERF_HALF_CLASS(H, RAW, TO16, FROM16, OTHER)                                        \
  struct alignas(2) H {                                                                         \
    unsigned short __x;                                                                         \
    H() = default;                                                                              \
    constexpr H(const RAW& r) : __x(r.x) {}                                                     \
    H(float f) : __x(::cudaperf::fp16::TO16(f)) {}                                              \
    H(double f) : __x(::cudaperf::fp16::to_##FROM16(f)) {}                                      \
    H(short v) : __x(::cudaperf::fp16::to_##FROM16(v)) {}                                       \
    H(unsigned short v) : __x(::cudaperf::fp16::to_##FROM16(v)) {}                              \
    H(int v) : __x(::cudaperf::fp16::to_##FROM16(v)) {}                                         \
    H(unsigned int v) : __x(::cudaperf::fp16::to_##FROM16(v)) {}                                \
    H(long v) : __x(::cudaperf::fp16::to_##FROM16(v)) {}                                        \
    H(unsigned long v) : __x(::cudaperf::fp16::to_##FROM16(v)) {}                               \
    H(long long v) : __x(::cudaperf::fp16::to_##FROM16(v)) {}                                   \
    H(unsigned long long v) : __x(::cudaperf::fp16::to_##FROM16(v)) {}                          \
    explicit H(const OTHER& o);                                                                 \
    H& operator=(const RAW& r) {                                                                \
      __x = r.x;                                                                                \
      return *this;                                                                             \
    }                                                                                           \
    operator RAW() const { return RAW{__x}; }                                                   \
    operator float() const { return value(); }                                                  \
    operator signed char() const { return static_cast<signed char>(rz(SCHAR_MIN, SCHAR_MAX)); } \
    operator unsigned char() const { return static_cast<unsigned char>(rz(0, UCHAR_MAX)); }     \
    operator char() const { return static_cast<char>(rz(CHAR_MIN, CHAR_MAX)); }                 \
    operator short() const { return static_cast<short>(rz(SHRT_MIN, SHRT_MAX)); }               \
    operator unsigned short() const { return static_cast<unsigned short>(rz(0, USHRT_MAX)); }   \
    operator int() const { return static_cast<int>(rz(INT_MIN, INT_MAX)); }                     \
    operator unsigned int() const { return static_cast<unsigned>(rz_u(UINT_MAX)); }             \
    operator long() const { return static_cast<long>(rz(LONG_MIN, LONG_MAX)); }                 \
    operator unsigned long() const { return static_cast<unsigned long>(rz_u(ULONG_MAX)); }      \
    operator long long() const { return rz(LLONG_MIN, LLONG_MAX); }                             \
    operator unsigned long long() const { return rz_u(ULLONG_MAX); }                            \
    constexpr operator bool() const { return (__x & 0x7fffu) != 0; }                            \
    float value() const { return ::cudaperf::fp16::FROM16##_to_float(__x); }                    \
    long long rz(long long lo, long long hi) const {                                            \
      return ::cudaperf::fp16::to_signed(value(), ::cudaperf::fp16::kRZ, lo, hi);               \
    }                                                                                           \
    unsigned long long rz_u(unsigned long long hi) const {                                      \
      return ::cudaperf::fp16::to_unsigned(value(), ::cudaperf::fp16::kRZ, hi);                 \
    }                                                                                           \
  };

struct __nv_bfloat16;
CUDAPERF_HALF_CLASS(__half, __half_raw, float_to_half, half, __nv_bfloat16)
CUDAPERF_HALF_CLASS(__nv_bfloat16, __nv_bfloat16_raw, float_to_bf16, bf16, __half)
#undef CUDAPERF_HALF_CLASS
inline __half::__half(const __nv_bfloat16& o) : __x(::cudaperf::fp16::float_to_half(o.value())) {}
inline __nv_bfloat16::__nv_bfloat16(const __half& o)
    : __x(::cudaperf::fp16::float_to_bf16(o.value())) {}

#define CUDAPERF_HALF_PAIR(H2, H, RAW2, RAW)                  \
  struct alignas(4) H2 {                                      \
    H x, y;                                                   \
    H2() = default;                                           \
    constexpr H2(const H& a, const H& b) : x(a), y(b) {}      \
    constexpr H2(const RAW2& r) : x(RAW{r.x}), y(RAW{r.y}) {} \
    H2& operator=(const RAW2& r) {                            \
      x = RAW{r.x};                                           \
      y = RAW{r.y};                                           \
      return *this;                                           \
    }                                                         \
    operator RAW2() const { return RAW2{x.__x, y.__x}; }      \
  };
CUDAPERF_HALF_PAIR(__half2, __half, __half2_raw, __half_raw)
CUDAPERF_HALF_PAIR(__nv_bfloat162, __nv_bfloat16, __nv_bfloat162_raw, __nv_bfloat16_raw)
#undef CUDAPERF_HALF_PAIR

// The short names (`half`, `nv_bfloat16`, ...) come with <cuda_fp16.h> and <cuda_bf16.h> (the shims),
// as with nvcc: a submission that does not include them may use the names for its own variables.

static_assert(sizeof(__half) == 2 && sizeof(__half2) == 4 && alignof(__half2) == 4, "fp16 layout");
static_assert(sizeof(__nv_bfloat16) == 2 && sizeof(__nv_bfloat162) == 4, "bf16 layout");
static_assert(std::is_trivially_default_constructible<__half2>::value, "usable in __shared__");
