// A submission-like shared library (big __shared__ arrays, extern "C" entries) for dlopen tests.
#include <cuda_runtime.h>

// 32 KiB of static __shared__ memory: thread-local storage in a dlopen'd library (pitfall 1).
__global__ void block_sums(const float* x, float* out, int n) {
  __shared__ float stage[8192];
  __shared__ float partial[256];
  int base = blockIdx.x * 8192;
  for (int k = threadIdx.x; k < 8192; k += blockDim.x) stage[k] = base + k < n ? x[base + k] : 0.0f;
  __syncthreads();
  float s = 0.0f;
  for (int k = threadIdx.x; k < 8192; k += blockDim.x) s += stage[k];
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if ((int)threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, partial[0]);
}

__global__ void poke(int* p) { p[threadIdx.x] = 1; }

// Sums 1, 2, ..., n through the GPU-style API; returns the CUDA error code.
extern "C" int sum_sequence(int n, float* result) {
  float* x = nullptr;
  float* out = nullptr;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&out, sizeof(float));
  float* host = new float[n];
  for (int i = 0; i < n; ++i) host[i] = static_cast<float>(i % 100);
  cudaMemcpy(x, host, n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemset(out, 0, sizeof(float));
  ::cudaperf::launch<true>(
      "block_sums", __LINE__, (n + 8191) / 8192, 256, 0, 0, [&](auto... a) { block_sums(a...); }, x,
      out, n);
  cudaDeviceSynchronize();
  cudaMemcpy(result, out, sizeof(float), cudaMemcpyDeviceToHost);
  delete[] host;
  cudaFree(x);
  cudaFree(out);
  return static_cast<int>(cudaGetLastError());
}

// Writes through a null pointer inside a kernel.
extern "C" int crash() {
  ::cudaperf::launch<false>(
      "poke", __LINE__, 1, 4, 0, 0, [&](auto... a) { poke(a...); }, static_cast<int*>(nullptr));
  return 0;
}
