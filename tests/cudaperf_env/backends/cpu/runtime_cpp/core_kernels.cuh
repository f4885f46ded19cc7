// Real CUDA kernels for core_test.cpp: matmul, reductions, scans, histogram, softmax, templates.
#pragma once
#include "common.h"

#define TILE 16

// C[M x N] = A[M x K] * B[K x N], 16x16 shared-memory tiles with bounds checks.
__global__ void matmul_tiled(const float* A, const float* B, float* C, int M, int K, int N) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  int row = blockIdx.y * TILE + threadIdx.y;
  int col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.0f;
  for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
    int ak = t * TILE + threadIdx.x;
    int bk = t * TILE + threadIdx.y;
    As[threadIdx.y][threadIdx.x] = (row < M && ak < K) ? A[row * K + ak] : 0.0f;
    Bs[threadIdx.y][threadIdx.x] = (bk < K && col < N) ? B[bk * N + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

// Grid-stride sum: warp shuffles, one shared slot per warp, one atomicAdd per block.
__global__ void reduce_sum(const float* x, int n, float* out) {
  __shared__ float partial[32];
  float v = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) v += x[i];
  v = warp_sum(v);
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (int)((blockDim.x + 31) / 32) ? partial[lane] : 0.0f;
    v = warp_sum(v);
    if (lane == 0) atomicAdd(out, v);
  }
}

// Inclusive Hillis-Steele scan of each block's segment (double-buffered), plus block totals.
__global__ void scan_hillis_steele(const int* in, int* out, int* block_sums, int n) {
  __shared__ int buf[2][256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int pout = 0;
  buf[pout][threadIdx.x] = i < n ? in[i] : 0;
  __syncthreads();
  for (int offset = 1; offset < (int)blockDim.x; offset <<= 1) {
    pout = 1 - pout;
    int pin = 1 - pout;
    int v = buf[pin][threadIdx.x];
    if ((int)threadIdx.x >= offset) v += buf[pin][threadIdx.x - offset];
    buf[pout][threadIdx.x] = v;
    __syncthreads();
  }
  if (i < n) out[i] = buf[pout][threadIdx.x];
  if (threadIdx.x == blockDim.x - 1) block_sums[blockIdx.x] = buf[pout][threadIdx.x];
}

// Exclusive Blelloch (up-sweep / down-sweep) scan of up to 2 * blockDim.x values, one block.
__global__ void scan_blelloch(int* data, int n) {
  __shared__ int t[1024];
  int tid = threadIdx.x, m = 2 * blockDim.x;
  t[2 * tid] = 2 * tid < n ? data[2 * tid] : 0;
  t[2 * tid + 1] = 2 * tid + 1 < n ? data[2 * tid + 1] : 0;
  int offset = 1;
  for (int d = m >> 1; d > 0; d >>= 1) {
    __syncthreads();
    if (tid < d) {
      int ai = offset * (2 * tid + 1) - 1, bi = offset * (2 * tid + 2) - 1;
      t[bi] += t[ai];
    }
    offset *= 2;
  }
  if (tid == 0) t[m - 1] = 0;
  for (int d = 1; d < m; d *= 2) {
    offset >>= 1;
    __syncthreads();
    if (tid < d) {
      int ai = offset * (2 * tid + 1) - 1, bi = offset * (2 * tid + 2) - 1;
      int tmp = t[ai];
      t[ai] = t[bi];
      t[bi] += tmp;
    }
  }
  __syncthreads();
  if (2 * tid < n) data[2 * tid] = t[2 * tid];
  if (2 * tid + 1 < n) data[2 * tid + 1] = t[2 * tid + 1];
}

__global__ void add_block_offsets(int* out, const int* offsets, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] += offsets[blockIdx.x];
}

// 256-bin histogram: shared-memory atomics per block, then one global atomic per bin.
__global__ void histogram256(const unsigned char* data, int n, unsigned* bins) {
  __shared__ unsigned local[256];
  for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    atomicAdd(&local[data[i]], 1u);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += blockDim.x) atomicAdd(&bins[b], local[b]);
}

// Stream compaction of the positive values: one warp-aggregated atomic per warp.
__global__ void compact_positive(const int* in, int n, int* out, int* count) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? in[i] : 0;
  bool keep = i < n && v > 0;
  unsigned ballot = __ballot_sync(0xffffffffu, keep);
  int lane = threadIdx.x & 31;
  int base = 0;
  if (lane == 0 && ballot != 0) base = atomicAdd(count, __popc(ballot));
  base = __shfl_sync(0xffffffffu, base, 0);
  if (keep) out[base + __popc(ballot & ((1u << lane) - 1u))] = v;
}

// Row softmax, one block per row; the reduction buffer is dynamic shared memory.
__global__ void softmax_rows(const float* x, float* y, int cols) {
  DYNAMIC_SHARED(float, sdata);
  const float* row = x + (size_t)blockIdx.x * cols;
  float* out = y + (size_t)blockIdx.x * cols;
  int t = threadIdx.x;
  float m = -INFINITY;
  for (int c = t; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
  sdata[t] = m;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) sdata[t] = fmaxf(sdata[t], sdata[t + s]);
    __syncthreads();
  }
  m = sdata[0];
  __syncthreads();
  float sum = 0.0f;
  for (int c = t; c < cols; c += blockDim.x) sum += __expf(row[c] - m);
  sdata[t] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) sdata[t] += sdata[t + s];
    __syncthreads();
  }
  sum = sdata[0];
  for (int c = t; c < cols; c += blockDim.x) out[c] = __expf(row[c] - m) / sum;
}

// y = a * x + y, staged through a statically sized shared array (template parameter).
template <typename T, int BLOCK>
__global__ void staged_axpy(const T* x, T* y, T a, int n) {
  __shared__ T stage[BLOCK];
  int i = blockIdx.x * BLOCK + threadIdx.x;
  stage[threadIdx.x] = i < n ? x[i] : T(0);
  __syncthreads();
  T v = stage[(threadIdx.x + 1) % BLOCK];  // read a neighbour's value: needs the barrier
  int j = blockIdx.x * BLOCK + (threadIdx.x + 1) % BLOCK;
  if (j < n) y[j] = a * v + y[j];
}

// Writes each element's coordinates; grid and block are 3-D.
__global__ void fill_coords(int* v, int nx, int ny, int nz) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  int z = blockIdx.z * blockDim.z + threadIdx.z;
  if (x < nx && y < ny && z < nz) v[(z * ny + y) * nx + x] = x + 1000 * y + 1000000 * z;
}

__constant__ float c_poly[8];
__constant__ int c_offsets[4];

// Evaluates the polynomial in __constant__ memory (Horner), shifted by a constant offset.
__global__ void eval_poly(const float* x, float* y, int n, int degree) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc = 0.0f;
  for (int k = degree; k >= 0; --k) acc = acc * x[i] + c_poly[k];
  y[i] = acc + (float)c_offsets[i % 4];
}

// The `if (i >= n) return;` idiom before a barrier: exited threads count as arrived.
__global__ void neighbour_sum(const int* x, int* y, int n) {
  __shared__ int s[128];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  s[threadIdx.x] = x[i];
  __syncthreads();
  int next = (int)threadIdx.x + 1 < (int)blockDim.x && i + 1 < n ? s[threadIdx.x + 1] : 0;
  y[i] = s[threadIdx.x] + next;
}

// Vector types in shared memory: each block reverses its 64 float4 values.
__global__ void reverse_float4(const float4* in, float4* out) {
  __shared__ float4 tile[64];
  int i = blockIdx.x * 64 + threadIdx.x;
  tile[threadIdx.x] = in[i];
  __syncthreads();
  float4 v = tile[63 - threadIdx.x];
  out[i] = make_float4(v.w, v.z, v.y, v.x);
}
