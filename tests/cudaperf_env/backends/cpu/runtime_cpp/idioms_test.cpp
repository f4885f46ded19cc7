// Everyday CUDA source idioms (headers, macros, qualifiers, std:: mixes) must compile and run
// unchanged.
#include <assert.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <device_launch_parameters.h>
#include <math_constants.h>

#include <algorithm>
#include <cassert>
#include <iostream>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "common.h"

using namespace std;

#define FULL_MASK 0xffffffff
#define CUDA_CHECK(call)                                                                \
  do {                                                                                  \
    cudaError_t err_ = (call);                                                          \
    if (err_ != cudaSuccess) {                                                          \
      printf("CUDA error %s at %s:%d\n", cudaGetErrorString(err_), __FILE__, __LINE__); \
      return false;                                                                     \
    }                                                                                   \
  } while (0)

// helper_math.h style operators on the built-in vector types.
inline __host__ __device__ float4 operator+(float4 a, float4 b) {
  return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}
inline __host__ __device__ float4 operator*(float s, float4 a) {
  return make_float4(s * a.x, s * a.y, s * a.z, s * a.w);
}

__host__ __device__ inline float squash(float x) {
#ifdef __CUDA_ARCH__
  return __saturatef(x);
#else
  return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x);
#endif
}

__device__ __forceinline__ float warpReduceSum(float val) {
  for (int offset = warpSize / 2; offset > 0; offset /= 2)
    val += __shfl_down_sync(FULL_MASK, val, offset);
  return val;
}

__device__ float blockReduceSum(float val) {
  static __shared__ float shared[32];
  int lane = threadIdx.x % warpSize, wid = threadIdx.x / warpSize;
  val = warpReduceSum(val);
  if (lane == 0) shared[wid] = val;
  __syncthreads();
  val = (threadIdx.x < blockDim.x / warpSize) ? shared[lane] : 0.0f;
  if (wid == 0) val = warpReduceSum(val);
  return val;
}

template <int BLOCK>
__global__ void __launch_bounds__(BLOCK, 2)
    row_norms(const float4* __restrict__ x, float* out, size_t cols4) {
  __shared__ __align__(16) float4 cache[BLOCK];
  volatile __shared__ int done;
  const float4* row = x + blockIdx.x * cols4;
  float4 acc = make_float4(0, 0, 0, 0);
  for (size_t c = threadIdx.x; c < cols4; c += blockDim.x) {
    float4 v = __ldg(&row[c]);
    acc = acc + make_float4(v.x * v.x, v.y * v.y, v.z * v.z, v.w * v.w);
  }
  cache[threadIdx.x] = 0.5f * acc;
  float s = blockReduceSum(cache[threadIdx.x].x + cache[threadIdx.x].y + cache[threadIdx.x].z +
                           cache[threadIdx.x].w);
  if (threadIdx.x == 0) done = 1;
  if (threadIdx.x == 0 && done == 1) {
    out[blockIdx.x] = sqrtf(2.0f * s) + squash(-1.0f) + min(0, (int)blockIdx.x) * max(1.0f, 0.5f);
  }
}

extern "C" __global__ void scale(float* v, float a, int n) {
  auto times = [a] __device__(float x) { return a * x; };
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] = times(v[i]) + (float)CUDART_PI_F * 0.0f;
}

TEST_CASE(everyday_idioms) {
  const int rows = 7, cols4 = 301;
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float4> host(rows * cols4);
  for (float4& v : host) v = make_float4(dist(gen), dist(gen), dist(gen), dist(gen));
  float4* d_x = nullptr;
  float* d_out = nullptr;
  CUDA_CHECK(cudaMalloc((void**)&d_x, host.size() * sizeof(float4)));
  CUDA_CHECK(cudaMalloc(&d_out, rows * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(d_x, host.data(), host.size() * sizeof(float4), cudaMemcpyHostToDevice));
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  ::cudaperf::launch<true>(
      "row_norms<128>", __LINE__, rows, 128, 0, stream, [&](auto... a) { row_norms<128>(a...); },
      d_x, d_out, (size_t)cols4);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::unique_ptr<float[]> out(new float[rows]);
  CUDA_CHECK(cudaMemcpy(out.get(), d_out, rows * sizeof(float), cudaMemcpyDeviceToHost));
  for (int r = 0; r < rows; ++r) {
    double s = 0;
    for (int c = 0; c < cols4; ++c) {
      const float4& v = host[r * cols4 + c];
      s += double(v.x) * v.x + double(v.y) * v.y + double(v.z) * v.z + double(v.w) * v.w;
    }
    EXPECT(near(out[r], std::sqrt(s), 1e-4), "row %d: %f vs %f", r, out[r], std::sqrt(s));
  }
  std::vector<float> v(1000, 2.0f);
  ::cudaperf::launch<false>(
      "scale", __LINE__, (1000 + 255) / 256, 256, 0, 0, [&](auto... a) { scale(a...); }, v.data(),
      1.5f, 1000);
  EXPECT(*std::min_element(v.begin(), v.end()) == 3.0f, "lambda kernel");
  size_t n = 5;
  int k = 3;
  EXPECT(min(n, (size_t)k) == 3u && max(k, 4) == 4 && std::max<size_t>(n, 9) == 9, "min/max mixes");
  EXPECT(sqrt(4.0f) == 2.0f && fabsf(-1.0f) == 1.0f && fmaxf(1.0f, 2.0f) == 2.0f, "math overloads");
  std::thread t([] { std::cout << ""; });
  t.join();
  assert(n == 5);
  cudaStreamDestroy(stream);
  cudaFree(d_x);
  cudaFree(d_out);
  return true;
}
