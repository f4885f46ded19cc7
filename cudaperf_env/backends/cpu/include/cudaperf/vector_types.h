// CUDA's vector types (float4, int2, ..., dim3) with CUDA's sizes, alignments and make_*.
#pragma once

// Trivial aggregates, like CUDA's, so `__shared__ float4 s[64];` and `float4 v = {..}` work.
// No arithmetic operators: CUDA has none, and user code commonly defines its own.
#define CUDAPERF_VECTOR_TYPES(T, name, a1, a2, a3, a4)                                 \
  struct alignas(a1) name##1 { T x; };                                                 \
  struct alignas(a2) name##2 { T x, y; };                                              \
  struct alignas(a3) name##3 { T x, y, z; };                                           \
  struct alignas(a4) name##4 { T x, y, z, w; };                                        \
  inline constexpr name##1 make_##name##1(T x) { return name##1 {x}; }                 \
  inline constexpr name##2 make_##name##2(T x, T y) { return name##2 {x, y}; }         \
  inline constexpr name##3 make_##name##3(T x, T y, T z) { return name##3 {x, y, z}; } \
  inline constexpr name##4 make_##name##4(T x, T y, T z, T w) { return name##4 {x, y, z, w}; }

CUDAPERF_VECTOR_TYPES(signed char, char, 1, 2, 1, 4)
CUDAPERF_VECTOR_TYPES(unsigned char, uchar, 1, 2, 1, 4)
CUDAPERF_VECTOR_TYPES(short, short, 2, 4, 2, 8)
CUDAPERF_VECTOR_TYPES(unsigned short, ushort, 2, 4, 2, 8)
CUDAPERF_VECTOR_TYPES(int, int, 4, 8, 4, 16)
CUDAPERF_VECTOR_TYPES(unsigned int, uint, 4, 8, 4, 16)
CUDAPERF_VECTOR_TYPES(long, long, 8, 16, 8, 16)
CUDAPERF_VECTOR_TYPES(unsigned long, ulong, 8, 16, 8, 16)
CUDAPERF_VECTOR_TYPES(long long, longlong, 8, 16, 8, 16)
CUDAPERF_VECTOR_TYPES(unsigned long long, ulonglong, 8, 16, 8, 16)
CUDAPERF_VECTOR_TYPES(float, float, 4, 8, 4, 16)
CUDAPERF_VECTOR_TYPES(double, double, 8, 16, 8, 16)
#undef CUDAPERF_VECTOR_TYPES

// CUDA 13 spells the 32-byte vector types with an explicit alignment.
#define CUDAPERF_VECTOR4_ALIGNED(T, name)                                                      \
  struct alignas(16) name##4_16a { T x, y, z, w; };                                            \
  struct alignas(32) name##4_32a { T x, y, z, w; };                                            \
  inline constexpr name##4_16a make_##name##4_16a(T x, T y, T z, T w) { return {x, y, z, w}; } \
  inline constexpr name##4_32a make_##name##4_32a(T x, T y, T z, T w) { return {x, y, z, w}; }
CUDAPERF_VECTOR4_ALIGNED(long, long)
CUDAPERF_VECTOR4_ALIGNED(unsigned long, ulong)
CUDAPERF_VECTOR4_ALIGNED(long long, longlong)
CUDAPERF_VECTOR4_ALIGNED(unsigned long long, ulonglong)
CUDAPERF_VECTOR4_ALIGNED(double, double)
#undef CUDAPERF_VECTOR4_ALIGNED

// Grid and block shapes. Implicit from unsigned so `k<<<n, 256>>>` works.
struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

typedef struct cudaExtent {
  size_t width, height, depth;
} cudaExtent;
inline cudaExtent make_cudaExtent(size_t w, size_t h, size_t d) { return cudaExtent{w, h, d}; }
