// Faulty CUDA kernels whose failures the runtime must report; // @name marks the reported lines.
#pragma once
#include <cassert>

#include "common.h"

// Shared-memory tree reduction with the barriers left out. On the CPU each thread runs until it
// finishes (plain loop or fiber), so thread 0 adds partner slots that threads 1.. have not written
// yet: the result is wrong, as it can be on a GPU.
__global__ void reduce_without_barriers(const float* x, float* out) {
  __shared__ float s[256];
  s[threadIdx.x] = x[blockIdx.x * blockDim.x + threadIdx.x];
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if ((int)threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
  }
  if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

// Threads 0-15 wait at one barrier, the others at the next one: a divergent barrier.
__global__ void divergent_barrier(float* data) {
  __shared__ float s[64];
  s[threadIdx.x] = data[threadIdx.x];
  if (threadIdx.x < 16) {
    __syncthreads();  // @divergent_inner
    data[threadIdx.x] = s[threadIdx.x + 16];
  }
  __syncthreads();  // @divergent_outer
  data[threadIdx.x] += 1.0f;
}

// A full-warp shuffle that only half the warp reaches (the other half exits).
__global__ void half_warp_shuffle(float* data) {
  float v = data[threadIdx.x];
  if (threadIdx.x < 16) {
    v += __shfl_down_sync(0xffffffffu, v, 8);  // @partial_shfl
  }
  data[threadIdx.x] = v;
}

// Block 1, thread 5 writes through a wild pointer.
__global__ void wild_write(int* p, int* ok) {
  if (blockIdx.x == 1 && threadIdx.x == 5) {
    p[0] = 1;
  } else {
    ok[blockIdx.x * blockDim.x + threadIdx.x] = 1;
  }
}

__device__ int deep(int n) {
  volatile int pad[64];
  pad[n & 63] = n;
  return n == 0 ? 0 : deep(n - 1) + pad[n & 63];
}

// Unbounded recursion: exhausts the thread's stack.
__global__ void recurse(int* out, int n) {
  __syncthreads();
  out[threadIdx.x] = deep(n);
}

// The same recursion in a kernel without barriers: it runs on the worker thread's own stack.
__global__ void recurse_plain(int* out, int n) { out[threadIdx.x] = deep(n); }

__global__ void divide(const int* a, const int* b, int* c) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  c[i] = a[i] / b[i];
}

__global__ void check_values(const int* x) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  assert(x[i] < 10);  // @device_assert
}

__global__ void trap_kernel() {
  if (threadIdx.x == 3) __trap();
}

// Every thread but 0 writes past the 64 floats of dynamic shared memory given at launch.
__global__ void dynamic_shared_overrun(float* out) {
  DYNAMIC_SHARED(float, s);
  s[threadIdx.x * 64] = 1.0f;
  __syncthreads();
  out[threadIdx.x] = s[0];
}

__global__ void barrier_kernel(int* out) {
  out[threadIdx.x] = 1;
  __syncthreads();
}

__global__ void say_hello(int rows) {
  if ((int)threadIdx.x < rows)
    printf("hello from thread %d of block %d\n", (int)threadIdx.x, (int)blockIdx.x);
}

__global__ void chatty() {
  printf("thread %4d of block %4d says something long enough\n", (int)threadIdx.x, (int)blockIdx.x);
}
