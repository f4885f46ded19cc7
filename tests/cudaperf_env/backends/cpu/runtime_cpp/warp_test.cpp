// Runs warp_kernels.cuh (warp intrinsics, groups, half precision, atomics, launch checks) vs C++.
#include <algorithm>
#include <cuda_runtime.h>

#include "warp_kernels.cuh"

TEST_CASE(cg_tiled_partition_reduce) {
  const int n = 1823, block = 128, blocks = (n + block - 1) / block;
  std::vector<int> x(n), tile_max(blocks * block / 16, 0);
  Lcg rng(11);
  for (int& v : x) v = static_cast<int>(rng.next() % 2001) - 1000;
  int sum = 0;
  ::cudaperf::launch<true>(
      "cg_tile_reduce", __LINE__, blocks, block, 0, 0, [&](auto... a) { cg_tile_reduce(a...); },
      x.data(), n, &sum, tile_max.data());
  long long want = 0;
  for (int v : x) want += v;
  EXPECT(sum == want, "sum %d, want %lld", sum, want);
  for (size_t t = 0; t < tile_max.size(); ++t) {
    int m = 0;  // out-of-range threads contribute 0
    for (size_t k = t * 16; k < t * 16 + 16; ++k)
      m = k < x.size() ? std::max(m, x[k]) : std::max(m, 0);
    if (t * 16 >= x.size()) m = 0;
    EXPECT(tile_max[t] == m, "tile %zu max %d, want %d", t, tile_max[t], m);
  }
  return true;
}

TEST_CASE(cg_scans_and_dynamic_tiles) {
  const int n = 64;
  std::vector<int> x(n), inc(n), exc(n), rank4(n);
  for (int i = 0; i < n; ++i) x[i] = (i * 7) % 11 - 3;
  ::cudaperf::launch<true>(
      "cg_tile_scan", __LINE__, 1, n, 0, 0, [&](auto... a) { cg_tile_scan(a...); }, x.data(),
      inc.data(), exc.data(), rank4.data());
  for (int i = 0; i < n; ++i) {
    int s = 0;
    for (int k = i & ~7; k < i; ++k) s += x[k];
    EXPECT(exc[i] == s, "exclusive[%d] = %d, want %d", i, exc[i], s);
    EXPECT(inc[i] == s + x[i], "inclusive[%d] = %d, want %d", i, inc[i], s + x[i]);
    EXPECT(rank4[i] == i % 4 + 400, "dynamic tile rank/size %d", rank4[i]);
  }
  return true;
}

// One unit in the last place of a half near v (2^-10 relative; 2^-24 for subnormals).
static float half_ulp(float v) { return std::max(std::fabs(v) * 0.000977f, 6.0e-8f); }

TEST_CASE(half_precision_elementwise) {
  const int n = 1823;
  std::vector<__half> x(n), y(n);
  std::vector<float> xf = random_floats(n, 12, -4.0f, 4.0f), yf = random_floats(n, 13, -4.0f, 4.0f);
  for (int i = 0; i < n; ++i) {
    x[i] = __float2half(xf[i]);
    y[i] = __float2half(yf[i]);
  }
  __half a = __float2half(1.5f);
  const std::vector<__half> y0 = y;
  ::cudaperf::launch<false>(
      "half_axpy", __LINE__, (n + 127) / 128, 128, 0, 0, [&](auto... p) { half_axpy(p...); },
      x.data(), y.data(), a, n);
  for (int i = 0; i < n; ++i) {
    float want = 1.5f * __half2float(x[i]) + __half2float(y0[i]);
    EXPECT(std::fabs(__half2float(y[i]) - want) <= half_ulp(want), "y[%d] = %f, want %f", i,
           __half2float(y[i]), want);
  }
  // __half2: the product is rounded to half before the add, so allow one more rounding.
  std::vector<__half> y2 = y0;
  const int n2 = n / 2;
  ::cudaperf::launch<false>(
      "half2_axpy", __LINE__, (n2 + 127) / 128, 128, 0, 0, [&](auto... p) { half2_axpy(p...); },
      reinterpret_cast<const __half2*>(x.data()), reinterpret_cast<__half2*>(y2.data()),
      __halves2half2(a, a), n2);
  for (int i = 0; i < 2 * n2; ++i) {
    float want = 1.5f * __half2float(x[i]) + __half2float(y0[i]);
    float tolerance = half_ulp(1.5f * __half2float(x[i])) + half_ulp(want);
    EXPECT(std::fabs(__half2float(y2[i]) - want) <= tolerance, "half2 lane %d: %f, want %f", i,
           __half2float(y2[i]), want);
  }
  EXPECT(__half2float(y2[2 * n2 - 1]) != __half2float(y0[2 * n2 - 1]) ||
             __half2float(x[2 * n2 - 1]) == 0.0f,
         "half2 kernel wrote its output");
  std::vector<__nv_bfloat16> b(n);
  std::vector<float> bout(n);
  for (int i = 0; i < n; ++i) b[i] = __float2bfloat16(xf[i]);
  ::cudaperf::launch<false>(
      "bf16_scale", __LINE__, (n + 255) / 256, 256, 0, 0, [&](auto... p) { bf16_scale(p...); },
      b.data(), bout.data(), 3.0f, n);
  for (int i = 0; i < n; ++i) {
    EXPECT(near(bout[i], 3.0 * __bfloat162float(b[i]), 0.008), "bf16 %d: %f", i, bout[i]);
  }
  return true;
}

TEST_CASE(half_conversions_round_to_nearest_even) {
  auto bits = [](__half h) { return __half_as_ushort(h); };
  EXPECT(sizeof(__half) == 2 && sizeof(__half2) == 4 && alignof(__half2) == 4, "layout");
  EXPECT(bits(__float2half(1.0f + 0x1p-11f)) == 0x3c00, "tie rounds to even (down)");
  EXPECT(bits(__float2half(1.0f + 3 * 0x1p-11f)) == 0x3c02, "tie rounds to even (up)");
  EXPECT(bits(__float2half(65519.0f)) == 0x7bff, "just below the overflow threshold");
  EXPECT(bits(__float2half(65520.0f)) == 0x7c00, "overflow to inf");
  EXPECT(bits(__float2half(0x1p-24f)) == 0x0001, "smallest subnormal");
  EXPECT(bits(__float2half(0x1p-25f)) == 0x0000, "half the smallest subnormal ties to zero");
  EXPECT(bits(__float2half(3 * 0x1p-26f)) == 0x0001, "above the tie rounds up");
  EXPECT(bits(__float2half(-2.0f)) == 0xc000, "sign");
  EXPECT(__hisnan(__float2half(NAN)) && __hisinf(__float2half(-INFINITY)) == -1, "nan / inf");
  EXPECT(bits(__double2half(1.0 + 0x1p-11 + 0x1p-40)) == 0x3c01, "double converts in one rounding");
  EXPECT(bits(__float2half_rz(1.0f + 0x1p-11f + 0x1p-20f)) == 0x3c00, "rz");
  EXPECT(bits(__float2half_ru(1.0f + 0x1p-20f)) == 0x3c01, "ru");
  EXPECT(bits(__float2half_rd(-1.0f - 0x1p-20f)) == 0xbc01, "rd");
  EXPECT(__half2float(__ushort_as_half(0x3555)) == 0.333251953125f, "half to float is exact");
  EXPECT(__half2int_rz(__float2half(-2.75f)) == -2 && __half2int_rn(__float2half(2.5f)) == 2,
         "to int");
  EXPECT(bits(__int2half_rn(2049)) == bits(__float2half(2048.0f)), "int to half ties to even");
  EXPECT(__bfloat16_as_ushort(__float2bfloat16(1.0f + 0x1p-8f)) == 0x3f80, "bf16 tie to even");
  EXPECT(__bfloat16_as_ushort(__float2bfloat16(1.0f + 3 * 0x1p-8f)) == 0x3f82, "bf16 tie up");
  __half2 h2 = __floats2half2_rn(1.0f, -3.0f);
  float2 f2 = __half22float2(__hmul2(h2, h2));
  EXPECT(f2.x == 1.0f && f2.y == 9.0f, "half2 multiply");
  EXPECT(__low2float(h2) == 1.0f && __high2float(h2) == -3.0f, "half2 halves");
  __half h = __float2half(0.5f);
  h += __float2half(0.25f);
  EXPECT(__half2float(h) == 0.75f && h > __float2half(0.5f) && __heq(h, __float2half(0.75f)),
         "operators");
  EXPECT(__half2float(hsqrt(__float2half(2.0f))) == __half2float(__float2half(std::sqrt(2.0f))),
         "hsqrt");
  EXPECT(__half2float(__hmax(__float2half(NAN), __float2half(1.0f))) == 1.0f, "__hmax ignores NaN");
  return true;
}

TEST_CASE(syncthreads_count_and_or) {
  const int blocks = 3, block = 96;
  std::vector<int> x(blocks * block), counts(3 * blocks);
  for (int i = 0; i < blocks * block; ++i) x[i] = (i % 5 == 0) ? 5 : -1;
  x[block + 3] = 5000;  // block 1: one value above 1000
  ::cudaperf::launch<true>(
      "sync_count", __LINE__, blocks, block, 0, 0, [&](auto... a) { sync_count(a...); }, x.data(),
      counts.data());
  for (int b = 0; b < blocks; ++b) {
    int want = 0;
    for (int t = 0; t < block; ++t) want += x[b * block + t] > 0;
    EXPECT(counts[3 * b] == want, "block %d count %d, want %d", b, counts[3 * b], want);
    EXPECT(counts[3 * b + 1] == 1, "and");
    EXPECT(counts[3 * b + 2] == (b == 1), "or in block %d", b);
  }
  return true;
}

TEST_CASE(match_any_and_all) {
  const int n = 96;
  std::vector<int> keys(n);
  std::vector<unsigned> masks(n);
  std::vector<int> all_pred(n / 32, -1);
  for (int i = 0; i < n; ++i) keys[i] = (i * 7) % 5;
  ::cudaperf::launch<true>(
      "match_keys", __LINE__, 2, 48, 0, 0, [&](auto... a) { match_keys(a...); }, keys.data(),
      masks.data(), all_pred.data());
  for (int i = 0; i < n; ++i) {
    int warp_base = (i / 48) * 48 + ((i % 48) / 32) * 32;
    int warp_end = std::min(warp_base + 32, (i / 48) * 48 + 48);
    unsigned want = 0;
    for (int k = warp_base; k < warp_end; ++k) {
      if (keys[k] == keys[i]) want |= 1u << (k - warp_base);
    }
    EXPECT(masks[i] == want, "thread %d mask %08x, want %08x", i, masks[i], want);
  }
  return true;
}

TEST_CASE(shuffle_widths_match_cuda_semantics) {
  const int n = 64;
  std::vector<float> x(n), out(4 * n);
  for (int i = 0; i < n; ++i) x[i] = static_cast<float>(i * 10 + 1);
  for (int width : {32, 16, 8, 4}) {
    ::cudaperf::launch<true>(
        "shuffles", __LINE__, 1, n, 0, 0, [&](auto... a) { shuffles(a...); }, x.data(), out.data(),
        width);
    for (int i = 0; i < n; ++i) {
      int lane = i & 31, base = i & ~31, seg = lane & ~(width - 1), pos = lane - seg;
      int idx = seg + 3 % width, up = pos >= 2 ? lane - 2 : lane,
          down = pos + 3 < width ? lane + 3 : lane;
      int xr = lane ^ 5;
      if (xr / width > lane / width) xr = lane;
      float want[4] = {x[base + idx], x[base + up], x[base + down], x[base + xr]};
      for (int k = 0; k < 4; ++k) {
        EXPECT(out[4 * i + k] == want[k], "width %d thread %d op %d: %f, want %f", width, i, k,
               out[4 * i + k], want[k]);
      }
    }
  }
  std::vector<double> d(64), dout(128);
  for (int i = 0; i < 64; ++i) d[i] = 0.1 * i;
  ::cudaperf::launch<true>(
      "shuffle_double", __LINE__, 1, 64, 0, 0, [&](auto... a) { shuffle_double(a...); }, d.data(),
      dout.data());
  for (int i = 0; i < 64; ++i) {
    double want = 0;
    for (int k = i & ~31; k < (i & ~31) + 32; ++k) want += d[k];
    EXPECT(near(dout[2 * i], want, 1e-12), "double butterfly %d", i);
    int src = (i & ~31) + 31 - (i & 31);
    EXPECT(dout[2 * i + 1] == static_cast<double>(src * 3000000000LL), "long long shuffle %d", i);
  }
  return true;
}

TEST_CASE(votes_and_warp_reductions) {
  const int n = 64;
  std::vector<int> x(n);
  std::vector<unsigned> out(7 * 2);
  for (int i = 0; i < n; ++i) x[i] = (i * 37) % 101 - 50;
  ::cudaperf::launch<true>(
      "votes", __LINE__, 1, n, 0, 0, [&](auto... a) { votes(a...); }, x.data(), out.data());
  for (int w = 0; w < 2; ++w) {
    unsigned ballot = 0, sum = 0, xo = 0;
    int mn = 1 << 30, mx = -(1 << 30), any = 0;
    for (int l = 0; l < 32; ++l) {
      int v = x[32 * w + l];
      ballot |= (v > 0 ? 1u : 0u) << l;
      any |= v > 90;
      sum += static_cast<unsigned>(v);
      xo ^= static_cast<unsigned>(v);
      mn = std::min(mn, v);
      mx = std::max(mx, v);
    }
    const unsigned* o = &out[7 * w];
    EXPECT(o[0] == ballot, "ballot %08x want %08x", o[0], ballot);
    EXPECT(o[1] == static_cast<unsigned>(any) && o[2] == 1u, "any/all");
    EXPECT(o[3] == sum && o[6] == xo, "reduce add/xor");
    EXPECT(static_cast<int>(o[4]) == mn && static_cast<int>(o[5]) == mx, "reduce min/max");
  }
  return true;
}

TEST_CASE(activemask_and_coalesced_groups) {
  const int n = 64;
  std::vector<unsigned> masks(2 * n);
  std::vector<int> ranks(n);
  ::cudaperf::launch<true>(
      "active_lanes", __LINE__, 1, n, 0, 0, [&](auto... a) { active_lanes(a...); }, masks.data(),
      ranks.data());
  unsigned want = 0;
  int lane_sum = 0;
  for (int l = 0; l < 32; l += 3) {
    want |= 1u << l;
    lane_sum += l;
  }
  for (int i = 0; i < n; ++i) {
    int lane = i & 31;
    if (lane % 3 != 0) continue;
    EXPECT(masks[i] == want, "thread %d mask %08x, want %08x", i, masks[i], want);
    EXPECT(ranks[i] == lane / 3 + 100 * 11, "thread %d rank/size %d", i, ranks[i]);
    EXPECT(masks[i + n] == static_cast<unsigned>(lane_sum), "coalesced reduce %u", masks[i + n]);
  }
  return true;
}

TEST_CASE(syncwarp_counts_exited_lanes) {
  std::vector<int> out(32, -1);
  ::cudaperf::launch<true>(
      "syncwarp_after_exit", __LINE__, 1, 32, 0, 0, [&](auto... a) { syncwarp_after_exit(a...); },
      out.data());
  for (int t = 0; t < 16; ++t) EXPECT(out[t] == 2 * (15 - t), "out[%d] = %d", t, out[t]);
  EXPECT(out[16] == -1, "exited lanes wrote nothing");
  return true;
}

TEST_CASE(every_atomic_kind) {
  const int blocks = 4, block = 128, total = blocks * block;
  int i32[9] = {0, 0, 1 << 30, INT_MIN, -1, 0, 0, 0, 0};
  unsigned u32[6] = {0, 0, 0, 0, 0, 0};
  unsigned long long u64[3] = {0, 0, ~0ULL};
  long long i64[1] = {LLONG_MIN};
  float f32[2] = {0, 0};
  double f64[1] = {0};
  __half f16[2] = {__float2half(0.0f), __float2half(7.0f)};
  ::cudaperf::launch<false>(
      "all_atomics", __LINE__, blocks, block, 0, 0, [&](auto... a) { all_atomics(a...); }, i32, u32,
      u64, i64, f32, f64, f16);
  int x = 0;
  for (int t = 0; t < total; ++t) x ^= t;
  EXPECT(i32[0] == 2 * total && i32[1] == -3 * total, "add/sub %d %d", i32[0], i32[1]);
  EXPECT(i32[2] == 1000 - (total - 1) && i32[3] == total - 1 - 1000, "min/max %d %d", i32[2],
         i32[3]);
  EXPECT(i32[4] == INT_MIN && i32[5] == 0x7fffffff && i32[6] == x, "and/or/xor %x %x %d", i32[4],
         i32[5], i32[6]);
  EXPECT(i32[7] == 42 && i32[8] >= 1 && i32[8] <= total, "exch/cas %d %d", i32[7], i32[8]);
  EXPECT(u32[0] == static_cast<unsigned>(total) && u32[1] == total % 10u, "inc %u", u32[1]);
  unsigned dec_want = total % 7 == 0 ? 0u : 7u - total % 7;
  EXPECT(u32[2] == dec_want, "dec %u, want %u", u32[2], dec_want);
  EXPECT(u32[3] == static_cast<unsigned>(total - 1) * 7u &&
             u32[4] == static_cast<unsigned>(total) && u32[5] == 2u * total,
         "umax/_block/_system");
  EXPECT(u64[0] == static_cast<unsigned long long>(total) << 33 && u64[1] >= 1 && u64[1] <= total &&
             u64[2] == 5,
         "64-bit add/cas/min");
  EXPECT(i64[0] == 0, "signed 64-bit max %lld", i64[0]);
  EXPECT(f32[0] == 0.5f * total && f32[1] == 2.5f && f64[0] == 0.25 * total, "float/double");
  EXPECT(__half2float(f16[0]) == static_cast<float>(total) && __half2float(f16[1]) == 7.0f,
         "half atomicAdd %f (neighbour %f)", __half2float(f16[0]), __half2float(f16[1]));
  return true;
}

TEST_CASE(spin_wait_makes_progress) {
  int flag = 0, lock = 0, order[2] = {0, 0};
  ::cudaperf::launch<true>(
      "spin_wait", __LINE__, 1, 64, 0, 0, [&](auto... a) { spin_wait(a...); },
      static_cast<volatile int*>(&flag), &lock, order);
  EXPECT(order[0] == 1 && order[1] == 2 && lock == 0, "order %d %d lock %d", order[0], order[1],
         lock);
  return true;
}

TEST_CASE(invalid_launch_configurations) {
  int ran = 0;
  auto try_launch = [&](dim3 grid, dim3 block, size_t smem) {
    ::cudaperf::launch<false>(
        "mark", __LINE__, grid, block, smem, 0, [&](auto... a) { mark(a...); }, &ran);
    return cudaGetLastError();
  };
  const size_t max_smem = 227 * 1024;
  EXPECT(try_launch(1, 1025, 0) == cudaErrorInvalidConfiguration, "1025 threads");
  EXPECT(try_launch(1, dim3(32, 33), 0) == cudaErrorInvalidConfiguration, "32 x 33 threads");
  EXPECT(try_launch(1, dim3(1, 1, 65), 0) == cudaErrorInvalidConfiguration, "block z 65");
  EXPECT(try_launch(1, dim3(2048, 1), 0) == cudaErrorInvalidConfiguration, "block x 2048");
  EXPECT(try_launch(dim3(1, 65536), 32, 0) == cudaErrorInvalidConfiguration, "grid y 65536");
  EXPECT(try_launch(dim3(1, 1, 65536), 32, 0) == cudaErrorInvalidConfiguration, "grid z 65536");
  EXPECT(try_launch(dim3(2147483648u), 32, 0) == cudaErrorInvalidConfiguration, "grid x 2^31");
  EXPECT(try_launch(0, 32, 0) == cudaErrorInvalidConfiguration, "empty grid");
  EXPECT(try_launch(1, dim3(32, 0), 0) == cudaErrorInvalidConfiguration, "empty block");
  EXPECT(try_launch(1, 32, max_smem + 1) == cudaErrorInvalidValue, "too much shared memory");
  // More than 48 KiB of dynamic shared memory needs the opt-in, as on a GPU.
  EXPECT(try_launch(1, 32, 48 * 1024 + 1) == cudaErrorInvalidValue, "49 KiB without the opt-in");
  EXPECT(try_launch(1, 32, 48 * 1024) == cudaSuccess && ran == 32, "48 KiB without the opt-in");
  EXPECT(cudaFuncSetAttribute(mark, cudaFuncAttributeMaxDynamicSharedMemorySize, max_smem) ==
             cudaSuccess,
         "opt-in");
  EXPECT(ran == 32, "invalid launches ran %d threads", ran - 32);
  EXPECT(cudaGetLastError() == cudaSuccess, "cudaGetLastError resets the error");
  EXPECT(cudaErrorInvalidConfiguration == 9, "real enum value");
  EXPECT(std::strcmp(cudaGetErrorName(cudaErrorInvalidConfiguration),
                     "cudaErrorInvalidConfiguration") == 0 &&
             std::strcmp(cudaGetErrorString(cudaErrorInvalidConfiguration),
                         "invalid configuration argument") == 0,
         "names");
  EXPECT(try_launch(2, dim3(8, 8, 16), max_smem) == cudaSuccess, "the largest valid launch");
  EXPECT(ran == 32 + 2 * 1024, "valid launch ran %d threads", ran);
  ::cudaperf::launch<true>("mark", __LINE__, 1, 1024, 0, 0, [&](auto... a) { mark(a...); }, &ran);
  EXPECT(cudaPeekAtLastError() == cudaSuccess && ran == 32 + 3 * 1024, "1024 fibers");
  return true;
}

TEST_CASE(plain_mode_and_single_thread_blocks) {
  std::vector<int> runs(6 * 64, 0);
  int max_tid = -1, out = 0;
  ::cudaperf::launch<false>(
      "count_runs", __LINE__, dim3(3, 2), 64, 0, 0, [&](auto... a) { count_runs(a...); },
      runs.data(), &max_tid);
  for (int r : runs) EXPECT(r == 1, "every thread runs once");
  EXPECT(max_tid == 63, "threadIdx covers the block");
  ::cudaperf::launch<false>(
      "single_thread", __LINE__, 1, 1, 0, 0, [&](auto... a) { single_thread(a...); }, &out);
  EXPECT(out == 8, "single-thread collectives %d", out);
  return true;
}

TEST_CASE(deterministic_mode_is_reproducible) {
  extern void deterministic_reduce(float* out, const std::vector<float>& x);
  std::vector<float> x = random_floats(300007, 14);
  float a = 0, b = 0, c = 0;
  cudaperf_runtime_configure(0, 1);
  deterministic_reduce(&a, x);
  deterministic_reduce(&b, x);
  cudaperf_runtime_configure(2, 0);
  deterministic_reduce(&c, x);
  cudaperf_runtime_configure(0, 0);
  EXPECT(std::memcmp(&a, &b, sizeof a) == 0, "deterministic runs differ: %.9g vs %.9g", a, b);
  EXPECT(near(c, a, 1e-4), "two workers %f vs one %f", c, a);
  return true;
}

// Block sums combined with float atomicAdd: the order of blocks decides the last bits.
__global__ void block_sums_atomic(const float* x, int n, float* out) {
  __shared__ float s[128];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  s[threadIdx.x] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (int k = 64; k > 0; k >>= 1) {
    if ((int)threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, s[0]);
}

void deterministic_reduce(float* out, const std::vector<float>& x) {
  int n = static_cast<int>(x.size());
  *out = 0;
  ::cudaperf::launch<true>(
      "block_sums_atomic", __LINE__, (n + 127) / 128, 128, 0, 0,
      [&](auto... a) { block_sums_atomic(a...); }, x.data(), n, out);
}

TEST_CASE(host_api) {
  void* p = nullptr;
  EXPECT(cudaMalloc(&p, 1000) == cudaSuccess && reinterpret_cast<uintptr_t>(p) % 256 == 0,
         "malloc");
  int dummy = 0;
  EXPECT(cudaFree(&dummy) == cudaErrorInvalidValue, "freeing a pointer cudaMalloc never returned");
  EXPECT(cudaGetLastError() == cudaErrorInvalidValue && cudaGetLastError() == cudaSuccess,
         "last error");
  cudaPointerAttributes attr;
  EXPECT(cudaPointerGetAttributes(&attr, static_cast<char*>(p) + 999) == cudaSuccess &&
             attr.type == cudaMemoryTypeDevice,
         "pointer attributes");
  EXPECT(cudaFree(p) == cudaSuccess && cudaFree(nullptr) == cudaSuccess, "free");
  float* pitched = nullptr;
  size_t pitch = 0;
  EXPECT(
      cudaMallocPitch(&pitched, &pitch, 10 * sizeof(float), 3) == cudaSuccess && pitch % 256 == 0,
      "pitch");
  float src[30];
  for (int i = 0; i < 30; ++i) src[i] = static_cast<float>(i);
  EXPECT(cudaMemcpy2D(pitched, pitch, src, 10 * sizeof(float), 10 * sizeof(float), 3,
                      cudaMemcpyHostToDevice) == cudaSuccess,
         "2-D copy");
  EXPECT(reinterpret_cast<float*>(reinterpret_cast<char*>(pitched) + 2 * pitch)[9] == 29.0f,
         "2-D layout");
  EXPECT(cudaMemcpy(src, src, 4, static_cast<cudaMemcpyKind>(7)) == cudaErrorInvalidMemcpyDirection,
         "kind");
  cudaGetLastError();
  cudaFree(pitched);
  cudaDeviceProp prop;
  EXPECT(cudaGetDeviceProperties(&prop, 0) == cudaSuccess, "properties");
  EXPECT(std::strcmp(prop.name, "CudaPerf CPU runtime") == 0 && prop.warpSize == 32 &&
             prop.maxThreadsPerBlock == 1024 && prop.sharedMemPerBlock == 48 * 1024 &&
             prop.sharedMemPerBlockOptin == 227 * 1024 && prop.multiProcessorCount >= 1,
         "Hopper-like limits");
  int value = 0, count = 0, device = -1;
  EXPECT(
      cudaDeviceGetAttribute(&value, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0) == cudaSuccess &&
          value == 227 * 1024,
      "attribute");
  EXPECT(cudaGetDeviceCount(&count) == cudaSuccess && count == 1 &&
             cudaGetDevice(&device) == cudaSuccess && device == 0 &&
             cudaSetDevice(1) == cudaErrorInvalidDevice,
         "devices");
  cudaGetLastError();
  cudaStream_t stream;
  cudaEvent_t start, stop;
  EXPECT(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess, "stream");
  EXPECT(cudaEventCreate(&start) == cudaSuccess && cudaEventCreate(&stop) == cudaSuccess, "events");
  float ms = -1;
  EXPECT(cudaEventElapsedTime(&ms, start, stop) == cudaErrorInvalidResourceHandle,
         "unrecorded events");
  cudaEventRecord(start, stream);
  int ran = 0;
  ::cudaperf::launch<false>(
      "mark", __LINE__, 4, 32, 0, stream, [&](auto... a) { mark(a...); }, &ran);
  cudaEventRecord(stop, stream);
  EXPECT(cudaStreamSynchronize(stream) == cudaSuccess && cudaEventSynchronize(stop) == cudaSuccess,
         "sync");
  EXPECT(cudaEventElapsedTime(&ms, start, stop) == cudaSuccess && ms >= 0.0f && ran == 128,
         "elapsed %f", ms);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaStreamDestroy(stream);
  EXPECT(cudaFuncSetAttribute(mark, cudaFuncAttributeMaxDynamicSharedMemorySize, 100000) ==
                 cudaSuccess &&
             cudaFuncSetAttribute(mark, cudaFuncAttributeMaxDynamicSharedMemorySize, 300000) ==
                 cudaErrorInvalidValue,
         "function attributes");
  cudaGetLastError();
  cudaFuncAttributes fattr;
  EXPECT(cudaFuncGetAttributes(&fattr, mark) == cudaSuccess && fattr.maxThreadsPerBlock == 1024,
         "get attributes");
  int blocks = 0, min_grid = 0, best = 0;
  EXPECT(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, mark, 256, 0) == cudaSuccess &&
             blocks == 8,
         "occupancy %d", blocks);
  EXPECT(cudaOccupancyMaxPotentialBlockSize(&min_grid, &best, mark) == cudaSuccess && best > 0 &&
             best <= 1024 && min_grid >= 1,
         "potential block size %d %d", best, min_grid);
  int* ran_ptr = &ran;
  void* args[] = {&ran_ptr};
  EXPECT(cudaLaunchKernel(mark, dim3(2), dim3(16), args, 0, nullptr) == cudaSuccess && ran == 160,
         "cudaLaunchKernel ran %d", ran);
  EXPECT(cudaLaunchKernel(mark, dim3(2), dim3(2000), args) == cudaErrorInvalidConfiguration,
         "bad config");
  EXPECT(cudaGetLastError() == cudaErrorInvalidConfiguration, "recorded");
  EXPECT(cudaDeviceSynchronize() == cudaSuccess, "device sync");
  return true;
}

TEST_CASE(intrinsics_and_math) {
  EXPECT(__popc(0xf0f0u) == 8 && __popcll(~0ULL) == 64 && __clz(1) == 31 && __clz(0) == 32,
         "popc/clz");
  EXPECT(__clzll(1LL) == 63 && __ffs(0) == 0 && __ffs(0x10) == 5 && __ffsll(1LL << 40) == 41,
         "clzll/ffs");
  EXPECT(__brev(1u) == 0x80000000u && __brevll(1ULL) == 1ULL << 63, "brev");
  EXPECT(__byte_perm(0x33221100u, 0x77665544u, 0x7531u) == 0x77553311u, "byte_perm %08x",
         __byte_perm(0x33221100u, 0x77665544u, 0x7531u));
  EXPECT(__funnelshift_l(0x80000000u, 0x1u, 1) == 0x3u &&
             __funnelshift_r(0x2u, 0x1u, 1) == 0x80000001u && __funnelshift_lc(1u, 2u, 40) == 1u,
         "funnel shifts");
  EXPECT(__mul24(-3, 5) == -15 && __umul24(0x1000001u, 3u) == 3u && __mulhi(1 << 30, 8) == 2 &&
             __umulhi(0xffffffffu, 2u) == 1u && __umul64hi(~0ULL, 2ULL) == 1ULL &&
             __mul64hi(-1LL, 1LL) == -1LL,
         "multiplies");
  EXPECT(__sad(3, 10, 1u) == 8u && __usad(10u, 3u, 0u) == 7u && __hadd(-3, 0) == -2 &&
             __rhadd(1, 2) == 2,
         "sad/hadd");
  EXPECT(__dp4a(0x01020304, 0x01010101, 10) == 20 && __fns(0xf0u, 0, 2) == 5u, "dp4a/fns");
  EXPECT(__float2int_rn(2.5f) == 2 && __float2int_rn(3.5f) == 4 && __float2int_rz(-2.7f) == -2 &&
             __float2int_ru(2.1f) == 3 && __float2int_rd(-2.1f) == -3 &&
             __float2int_rn(1e20f) == INT_MAX && __float2int_rn(NAN) == 0 &&
             __float2uint_rn(-5.0f) == 0u,
         "saturating float to int");
  EXPECT(__float_as_int(1.0f) == 0x3f800000 && __int_as_float(0x40000000) == 2.0f &&
             __uint_as_float(__float_as_uint(-0.5f)) == -0.5f &&
             __longlong_as_double(__double_as_longlong(1.25)) == 1.25 &&
             __double2hiint(2.0) == 0x40000000,
         "bit casts");
  float third_rd = __fdiv_rd(1.0f, 3.0f), third_ru = __fdiv_ru(1.0f, 3.0f);
  EXPECT(third_rd < third_ru && std::nextafter(third_rd, 1.0f) == third_ru &&
             __fdiv_rn(1.0f, 3.0f) == 1.0f / 3.0f,
         "directed rounding");
  EXPECT(__fadd_rz(1.0f, 0x1p-30f) == 1.0f && __fadd_ru(1.0f, 0x1p-30f) > 1.0f &&
             __dmul_rd(1.0 / 3, 3.0) < 1.0,
         "directed add/mul");
  EXPECT(__int2float_rz(16777217) == 16777216.0f && __int2float_ru(16777217) == 16777218.0f,
         "int to float");
  EXPECT(__saturatef(1.5f) == 1.0f && __saturatef(-1.0f) == 0.0f && __saturatef(NAN) == 0.0f,
         "saturate");
  EXPECT(near(rsqrtf(4.0f), 0.5, 1e-7) && near(rcbrt(8.0), 0.5, 1e-15), "rsqrt/rcbrt");
  EXPECT(near(erfinvf(erff(0.3f)), 0.3, 1e-6) && near(erfinv(std::erf(1.7)), 1.7, 1e-13) &&
             near(erfinv(1e-12), 1e-12 * std::sqrt(M_PI) / 2, 1e-12),
         "erfinv");
  EXPECT(near(erfcinv(std::erfc(5.0)), 5.0, 1e-12) && near(erfcinvf(1.5f), -0.476936276, 1e-6),
         "erfcinv");
  EXPECT(near(normcdfinv(0.975), 1.959963984540054, 1e-13) &&
             near(normcdf(1.959963984540054), 0.975, 1e-14) &&
             near(normcdfinvf(1e-10f), -6.361340902, 1e-5),
         "normcdf");
  EXPECT(near(erfcx(30.0), std::exp(900.0 - 900.0) * 0.018795888861416751, 1e-12) &&
             near(erfcxf(1.0f), 0.427583576, 1e-6),
         "erfcx %.17g", erfcx(30.0));
  float s = 0, c = 0;
  sincospif(0.5f, &s, &c);
  EXPECT(s == 1.0f && c == 0.0f && sinpi(1.0) == 0.0 && cospi(1.0) == -1.0 &&
             near(sinpif(0.25f), M_SQRT1_2, 1e-7),
         "sinpi/cospi");
  EXPECT(near(norm3df(2.0f, 3.0f, 6.0f), 7.0, 1e-7) && near(rhypotf(3.0f, 4.0f), 0.2, 1e-7) &&
             near(cyl_bessel_i0(1.0), 1.2660658777520082, 1e-14) && near(__expf(1.0f), M_E, 1e-6) &&
             near(__powf(2.0f, 10.0f), 1024.0, 1e-6) && __fdividef(1.0f, 4.0f) == 0.25f,
         "norms / bessel / fast intrinsics");
  unsigned u = 5;
  int i = -3;
  long long ll = 7;
  EXPECT(min(i, 2) == -3 && max(2.5f, 1) == 2.5f && min(1.5, 2.0f) == 1.5 && max(u, 3u) == 5u &&
             max(ll, 9) == 9 && std::min(i, 4) == -3 && umin(3u, 4u) == 3u,
         "min/max overloads");
  using namespace std;
  EXPECT(min(3, 4) == 3 && max(1.0, 2.0) == 2.0, "std::min with using namespace std");
  return true;
}
