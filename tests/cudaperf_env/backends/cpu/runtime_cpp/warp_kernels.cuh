// Real CUDA kernels for warp_test.cpp: warp intrinsics, cooperative groups, half, atomics.
#pragma once
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common.h"

namespace cg = cooperative_groups;

// Per-block sums with tiled_partition<32> + cg::reduce, per-tile maxima with a 16-wide tile.
__global__ void cg_tile_reduce(const int* x, int n, int* sum, int* tile16_max) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
  unsigned long long i = block.group_index().x * block.size() + block.thread_rank();
  int v = i < (unsigned long long)n ? x[i] : 0;
  int s = cg::reduce(tile, v, cg::plus<int>());
  if (tile.thread_rank() == 0) atomicAdd(sum, s);
  auto tile16 = cg::tiled_partition<16>(tile);
  int m = cg::reduce(tile16, v, cg::greater<int>());
  if (tile16.thread_rank() == 0) {
    tile16_max[blockIdx.x * (blockDim.x / 16) + tile.meta_group_rank() * 2 +
               tile16.meta_group_rank()] = m;
  }
  block.sync();
}

// Inclusive and exclusive scans over 8-wide tiles, and a dynamic 4-wide partition.
__global__ void cg_tile_scan(const int* x, int* inclusive, int* exclusive, int* rank4) {
  cg::thread_block block = cg::this_thread_block();
  auto tile8 = cg::tiled_partition<8>(block);
  int v = x[block.thread_rank()];
  inclusive[block.thread_rank()] = cg::inclusive_scan(tile8, v);
  exclusive[block.thread_rank()] = cg::exclusive_scan(tile8, v, cg::plus<int>());
  cg::thread_group g4 = cg::tiled_partition(block, 4);
  rank4[block.thread_rank()] = (int)g4.thread_rank() + 100 * (int)g4.size();
  g4.sync();
}

// y = a * x + y in half precision, scalar and paired.
__global__ void half_axpy(const __half* x, __half* y, __half a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __hfma(a, x[i], y[i]);
}
__global__ void half2_axpy(const __half2* x, __half2* y, __half2 a, int n2) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n2) y[i] = __hadd2(__hmul2(a, x[i]), y[i]);
}
__global__ void bf16_scale(const __nv_bfloat16* x, float* y, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __bfloat162float(__hmul(x[i], __float2bfloat16(s)));
}

// Block-wide predicate counts.
__global__ void sync_count(const int* x, int* counts) {
  int v = x[blockIdx.x * blockDim.x + threadIdx.x];
  int c = __syncthreads_count(v > 0);
  int all = __syncthreads_and(v > -1000);
  int any = __syncthreads_or(v > 1000);
  if (threadIdx.x == 0) {
    counts[3 * blockIdx.x] = c;
    counts[3 * blockIdx.x + 1] = all;
    counts[3 * blockIdx.x + 2] = any;
  }
}

// Groups lanes by key; also __match_all_sync on a warp-uniform value.
__global__ void match_keys(const int* keys, unsigned* masks, int* all_pred) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  masks[i] = __match_any_sync(0xffffffffu, keys[i]);
  int pred = 0;
  unsigned m = __match_all_sync(0xffffffffu, (long long)blockIdx.x, &pred);
  if ((threadIdx.x & 31) == 0) all_pred[i / 32] = pred && m == 0xffffffffu;
}

// Each shuffle flavour with a sub-warp width.
__global__ void shuffles(const float* x, float* out, int width) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = x[i];
  out[4 * i + 0] = __shfl_sync(0xffffffffu, v, 3, width);
  out[4 * i + 1] = __shfl_up_sync(0xffffffffu, v, 2, width);
  out[4 * i + 2] = __shfl_down_sync(0xffffffffu, v, 3, width);
  out[4 * i + 3] = __shfl_xor_sync(0xffffffffu, v, 5, width);
}
__global__ void shuffle_double(const double* x, double* out) {
  int i = threadIdx.x;
  double v = x[i];
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  long long w = __shfl_sync(0xffffffffu, (long long)i * 3000000000LL, 31 - (i & 31));
  out[2 * i] = v;
  out[2 * i + 1] = (double)w;
}

// Votes and warp reductions.
__global__ void votes(const int* x, unsigned* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = x[i];
  unsigned ballot = __ballot_sync(0xffffffffu, v > 0);
  int any = __any_sync(0xffffffffu, v > 90);
  int all = __all_sync(0xffffffffu, v > -100);
  unsigned sum = __reduce_add_sync(0xffffffffu, (unsigned)v);
  int mn = __reduce_min_sync(0xffffffffu, v);
  int mx = __reduce_max_sync(0xffffffffu, v);
  unsigned x_or = __reduce_xor_sync(0xffffffffu, (unsigned)v);
  if ((threadIdx.x & 31) == 0) {
    unsigned* o = out + 7 * (i / 32);
    o[0] = ballot;
    o[1] = any;
    o[2] = all;
    o[3] = sum;
    o[4] = (unsigned)mn;
    o[5] = (unsigned)mx;
    o[6] = x_or;
  }
}

// Divergent lanes see only their own branch in __activemask / coalesced_threads.
__global__ void active_lanes(unsigned* masks, int* ranks) {
  int lane = threadIdx.x & 31;
  if (lane % 3 == 0) {
    masks[threadIdx.x] = __activemask();
    cg::coalesced_group g = cg::coalesced_threads();
    ranks[threadIdx.x] = (int)g.thread_rank() + 100 * (int)g.size();
    int total = cg::reduce(g, lane, cg::plus<int>());
    masks[threadIdx.x + blockDim.x] = (unsigned)total;
  } else {
    masks[threadIdx.x] = 0;
    ranks[threadIdx.x] = -1;
  }
}

// One of each atomic; every thread of the grid takes part.
__global__ void all_atomics(int* i32, unsigned* u32, unsigned long long* u64, long long* i64,
                            float* f32, double* f64, __half* f16) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  atomicAdd(&i32[0], 2);
  atomicSub(&i32[1], 3);
  atomicMin(&i32[2], 1000 - t);
  atomicMax(&i32[3], t - 1000);
  atomicAnd(&i32[4], ~(1 << (t % 31)));
  atomicOr(&i32[5], 1 << (t % 31));
  atomicXor(&i32[6], t);
  atomicExch(&i32[7], 42);
  atomicCAS(&i32[8], 0, t + 1);  // exactly one thread wins
  atomicAdd(&u32[0], 1u);
  atomicInc(&u32[1], 9u);
  atomicDec(&u32[2], 6u);
  atomicMax(&u32[3], (unsigned)t * 7u);
  atomicAdd_block(&u32[4], 1u);
  atomicAdd_system(&u32[5], 2u);
  atomicAdd(&u64[0], 1ULL << 33);
  atomicCAS(&u64[1], 0ULL, (unsigned long long)t + 1);
  atomicMin(&u64[2], (unsigned long long)t + 5);
  atomicMax(&i64[0], (long long)t * -3);
  atomicAdd(&f32[0], 0.5f);
  atomicExch(&f32[1], 2.5f);
  atomicAdd(&f64[0], 0.25);
  atomicAdd(&f16[0], __float2half(1.0f));
}

// Spin-waiting on another thread of the same block must make progress.
__global__ void spin_wait(volatile int* flag, int* lock, int* order) {
  if (threadIdx.x == 0) {
    while (atomicCAS(lock, 0, 1) != 0) {
    }
    while (*flag == 0) __nanosleep(100);
    order[0] = 1;
    atomicExch(lock, 0);
  } else if (threadIdx.x == blockDim.x - 1) {
    order[1] = 2;
    __threadfence();
    *flag = 1;
  }
}

// Counts how often each thread ran (plain loop mode: no barriers, no collectives).
__global__ void count_runs(int* runs, int* max_tid) {
  int i =
      ((blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x) * blockDim.x + threadIdx.x;
  runs[i] += 1;
  atomicMax(max_tid, (int)threadIdx.x);
}

// A single-thread block may use barriers and single-lane collectives even without fibers.
__global__ void single_thread(int* out) {
  __syncthreads();
  out[0] = __shfl_sync(1u, 7, 0) + __syncthreads_count(1);
}

// Counts the threads that ran (used to show that invalid launches run nothing).
__global__ void mark(int* ran) { atomicAdd(ran, 1); }

// Lanes 16-31 exit; __syncwarp with the full mask counts them as arrived.
__global__ void syncwarp_after_exit(int* out) {
  __shared__ int s[32];
  if (threadIdx.x >= 16) return;
  s[threadIdx.x] = (int)threadIdx.x * 2;
  __syncwarp();
  out[threadIdx.x] = s[15 - threadIdx.x];
}
