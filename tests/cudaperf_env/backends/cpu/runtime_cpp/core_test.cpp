// Runs core_kernels.cuh on odd sizes and checks every result against a plain C++ reference.
#include <algorithm>
#include <cuda_runtime.h>

#include "core_kernels.cuh"

TEST_CASE(matmul_tiled_odd_sizes) {
  const int M = 67, K = 129, N = 45;
  std::vector<float> A = random_floats(M * K, 1), B = random_floats(K * N, 2), C(M * N, -7.0f);
  dim3 block(TILE, TILE), grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
  ::cudaperf::launch<true>(
      "matmul_tiled", __LINE__, grid, block, 0, 0, [&](auto... a) { matmul_tiled(a...); }, A.data(),
      B.data(), C.data(), M, K, N);
  EXPECT(cudaGetLastError() == cudaSuccess, "launch failed");
  for (int r = 0; r < M; ++r) {
    for (int c = 0; c < N; ++c) {
      double want = 0;
      for (int k = 0; k < K; ++k) want += static_cast<double>(A[r * K + k]) * B[k * N + c];
      EXPECT(near(C[r * N + c], want, 1e-4, 1e-4), "C[%d][%d] = %f, want %f", r, c, C[r * N + c],
             want);
    }
  }
  return true;
}

static double reference_sum(const std::vector<float>& x) {
  double s = 0;
  for (float v : x) s += v;
  return s;
}

TEST_CASE(warp_shuffle_reduction_one_element_per_thread) {
  const int n = 1000003;
  std::vector<float> x = random_floats(n, 3, 0.0f, 1.0f);
  float* d_x = nullptr;
  float* d_out = nullptr;
  EXPECT(cudaMalloc(&d_x, n * sizeof(float)) == cudaSuccess, "cudaMalloc");
  EXPECT(cudaMalloc(&d_out, sizeof(float)) == cudaSuccess, "cudaMalloc");
  EXPECT(reinterpret_cast<uintptr_t>(d_x) % 256 == 0, "cudaMalloc must align to 256 bytes");
  cudaMemcpy(d_x, x.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemset(d_out, 0, sizeof(float));
  ::cudaperf::launch<true>(
      "reduce_sum", __LINE__, (n + 255) / 256, 256, 0, 0, [&](auto... a) { reduce_sum(a...); }, d_x,
      n, d_out);
  float got = 0;
  cudaMemcpy(&got, d_out, sizeof(float), cudaMemcpyDeviceToHost);
  double want = reference_sum(x);
  EXPECT(near(got, want, 1e-5), "sum %f, want %f", got, want);
  cudaFree(d_x);
  cudaFree(d_out);
  return true;
}

TEST_CASE(warp_shuffle_reduction_grid_stride) {
  const int n = 1823 * 781;
  std::vector<float> x = random_floats(n, 4);
  float out = 0;
  ::cudaperf::launch<true>(
      "reduce_sum", __LINE__, 37, 224, 0, 0, [&](auto... a) { reduce_sum(a...); }, x.data(), n,
      &out);
  EXPECT(near(out, reference_sum(x), 1e-4, 1e-2), "sum %f, want %f", out, reference_sum(x));
  return true;
}

TEST_CASE(scan_hillis_steele_then_blelloch) {
  const int n = 100003, block = 256, blocks = (n + block - 1) / block;  // 391 block totals
  std::vector<int> in(n), out(n), sums(blocks);
  Lcg rng(5);
  for (int& v : in) v = static_cast<int>(rng.next() % 100) - 30;
  ::cudaperf::launch<true>(
      "scan_hillis_steele", __LINE__, blocks, block, 0, 0,
      [&](auto... a) { scan_hillis_steele(a...); }, in.data(), out.data(), sums.data(), n);
  ::cudaperf::launch<true>(
      "scan_blelloch", __LINE__, 1, 512, 0, 0, [&](auto... a) { scan_blelloch(a...); }, sums.data(),
      blocks);
  ::cudaperf::launch<false>(
      "add_block_offsets", __LINE__, blocks, block, 0, 0,
      [&](auto... a) { add_block_offsets(a...); }, out.data(), sums.data(), n);
  long long running = 0;
  for (int i = 0; i < n; ++i) {
    running += in[i];
    EXPECT(out[i] == running, "prefix[%d] = %d, want %lld", i, out[i], running);
  }
  return true;
}

TEST_CASE(histogram_shared_atomics) {
  const int n = 1823 * 97;
  std::vector<unsigned char> data(n);
  Lcg rng(6);
  for (auto& d : data) d = static_cast<unsigned char>(rng.next() % 251);
  std::vector<unsigned> bins(256, 0), want(256, 0);
  for (unsigned char d : data) ++want[d];
  ::cudaperf::launch<true>(
      "histogram256", __LINE__, 13, 192, 0, 0, [&](auto... a) { histogram256(a...); }, data.data(),
      n, bins.data());
  for (int b = 0; b < 256; ++b)
    EXPECT(bins[b] == want[b], "bin %d = %u, want %u", b, bins[b], want[b]);
  return true;
}

TEST_CASE(stream_compaction_ballot_popc) {
  const int n = 1823;
  std::vector<int> in(n), out(n, 0), want;
  Lcg rng(7);
  for (int& v : in) v = static_cast<int>(rng.next() % 21) - 10;
  for (int v : in) {
    if (v > 0) want.push_back(v);
  }
  int count = 0;
  ::cudaperf::launch<true>(
      "compact_positive", __LINE__, (n + 127) / 128, 128, 0, 0,
      [&](auto... a) { compact_positive(a...); }, in.data(), n, out.data(), &count);
  EXPECT(count == static_cast<int>(want.size()), "count %d, want %zu", count, want.size());
  std::vector<int> got(out.begin(), out.begin() + count);
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  EXPECT(got == want, "compacted values differ");
  return true;
}

TEST_CASE(softmax_dynamic_shared) {
  const int rows = 37, cols = 1823, threads = 128;
  std::vector<float> x = random_floats(rows * cols, 8, -5.0f, 5.0f), y(rows * cols);
  ::cudaperf::launch<true>(
      "softmax_rows", __LINE__, rows, threads, threads * sizeof(float), 0,
      [&](auto... a) { softmax_rows(a...); }, x.data(), y.data(), cols);
  EXPECT(cudaGetLastError() == cudaSuccess, "launch failed");
  for (int r = 0; r < rows; ++r) {
    double m = -1e30, s = 0;
    for (int c = 0; c < cols; ++c) m = std::max(m, static_cast<double>(x[r * cols + c]));
    for (int c = 0; c < cols; ++c) s += std::exp(x[r * cols + c] - m);
    for (int c = 0; c < cols; ++c) {
      double want = std::exp(x[r * cols + c] - m) / s;
      EXPECT(near(y[r * cols + c], want, 1e-4, 1e-9), "y[%d][%d] = %g, want %g", r, c,
             y[r * cols + c], want);
    }
  }
  return true;
}

template <typename T, int BLOCK>
static bool check_staged_axpy(int n) {
  std::vector<T> x(n), y(n), want(n);
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<T>(i % 13) / 4;
    y[i] = want[i] = static_cast<T>(i % 7);
    want[i] = static_cast<T>(3) * x[i] + want[i];
  }
  ::cudaperf::launch<true>(
      "staged_axpy<T, BLOCK>", __LINE__, (n + BLOCK - 1) / BLOCK, BLOCK, 0, 0,
      [&](auto... a) { staged_axpy<T, BLOCK>(a...); }, x.data(), y.data(), static_cast<T>(3), n);
  for (int i = 0; i < n; ++i) {
    if (y[i] != want[i]) {
      std::fprintf(stderr, "y[%d] = %g, want %g\n", i, static_cast<double>(y[i]),
                   static_cast<double>(want[i]));
      return false;
    }
  }
  return true;
}

TEST_CASE(template_kernel_instantiations) {
  EXPECT((check_staged_axpy<float, 256>(1823)), "float, 256");
  EXPECT((check_staged_axpy<double, 128>(1823)), "double, 128");
  EXPECT((check_staged_axpy<int, 32>(1000)), "int, 32");
  return true;
}

TEST_CASE(grid_3d) {
  const int nx = 37, ny = 19, nz = 11;
  std::vector<int> v(nx * ny * nz, -1);
  dim3 block(8, 4, 2), grid((nx + 7) / 8, (ny + 3) / 4, (nz + 1) / 2);
  ::cudaperf::launch<false>(
      "fill_coords", __LINE__, grid, block, 0, 0, [&](auto... a) { fill_coords(a...); }, v.data(),
      nx, ny, nz);
  for (int z = 0; z < nz; ++z) {
    for (int y = 0; y < ny; ++y) {
      for (int x = 0; x < nx; ++x) {
        int got = v[(z * ny + y) * nx + x];
        EXPECT(got == x + 1000 * y + 1000000 * z, "(%d,%d,%d) = %d", x, y, z, got);
      }
    }
  }
  // The same kernel as fibers: the coordinates do not depend on how threads are run.
  std::fill(v.begin(), v.end(), -1);
  ::cudaperf::launch<true>(
      "fill_coords", __LINE__, grid, block, 0, 0, [&](auto... a) { fill_coords(a...); }, v.data(),
      nx, ny, nz);
  EXPECT(v[(10 * ny + 18) * nx + 36] == 36 + 18000 + 10000000, "fiber mode 3-D index");
  return true;
}

TEST_CASE(constant_memory_symbols) {
  const float poly[4] = {1.0f, -2.0f, 0.5f, 0.25f};
  const int offsets[4] = {0, 10, 20, 30};
  EXPECT(cudaMemcpyToSymbol(c_poly, poly, sizeof poly) == cudaSuccess, "to symbol");
  EXPECT(cudaMemcpyToSymbol(c_offsets, offsets + 1, 3 * sizeof(int), sizeof(int)) == cudaSuccess,
         "to symbol with offset");
  EXPECT(
      cudaMemcpyToSymbol(c_offsets, offsets, sizeof(int), 0, cudaMemcpyHostToDevice) == cudaSuccess,
      "explicit kind");
  EXPECT(cudaMemcpyToSymbol(c_poly, poly, 9 * sizeof(float)) == cudaErrorInvalidValue,
         "a copy past the symbol's end is rejected");
  EXPECT(cudaGetLastError() == cudaErrorInvalidValue, "the rejection is recorded");
  int back[4] = {0, 0, 0, 0};
  EXPECT(cudaMemcpyFromSymbol(back, c_offsets, sizeof back) == cudaSuccess, "from symbol");
  EXPECT(back[3] == 30 && back[1] == 10, "read back %d %d", back[1], back[3]);
  const int n = 1823;
  std::vector<float> x = random_floats(n, 9), y(n);
  ::cudaperf::launch<false>(
      "eval_poly", __LINE__, (n + 255) / 256, 256, 0, 0, [&](auto... a) { eval_poly(a...); },
      x.data(), y.data(), n, 3);
  for (int i = 0; i < n; ++i) {
    double xi = x[i], want = 1.0 - 2.0 * xi + 0.5 * xi * xi + 0.25 * xi * xi * xi + offsets[i % 4];
    EXPECT(near(y[i], want, 1e-5, 1e-5), "y[%d] = %f, want %f", i, y[i], want);
  }
  return true;
}

TEST_CASE(early_return_before_barrier) {
  const int n = 1823, block = 128;
  std::vector<int> x(n), y(n, -1);
  for (int i = 0; i < n; ++i) x[i] = i * 3 + 1;
  ::cudaperf::launch<true>(
      "neighbour_sum", __LINE__, (n + block - 1) / block, block, 0, 0,
      [&](auto... a) { neighbour_sum(a...); }, x.data(), y.data(), n);
  for (int i = 0; i < n; ++i) {
    int next = (i % block) + 1 < block && i + 1 < n ? x[i + 1] : 0;
    EXPECT(y[i] == x[i] + next, "y[%d] = %d, want %d", i, y[i], x[i] + next);
  }
  return true;
}

// CUDA's sizes and alignments (vector_types.h).
static_assert(sizeof(float4) == 16 && alignof(float4) == 16, "float4");
static_assert(sizeof(float3) == 12 && alignof(float3) == 4, "float3");
static_assert(sizeof(float2) == 8 && alignof(float2) == 8, "float2");
static_assert(sizeof(double2) == 16 && alignof(double2) == 16, "double2");
static_assert(sizeof(int4) == 16 && alignof(int4) == 16 && alignof(int3) == 4, "int");
static_assert(alignof(char4) == 4 && alignof(char2) == 2 && alignof(char3) == 1, "char");
static_assert(alignof(short2) == 4 && alignof(short4) == 8 && alignof(uchar4) == 4, "short");
static_assert(sizeof(longlong2) == 16 && alignof(longlong2) == 16 && alignof(ulonglong4) == 16, "ll");
static_assert(alignof(double4_32a) == 32 && sizeof(dim3) == 12, "32-byte types, dim3");
static_assert(std::is_trivially_default_constructible<float4>::value, "usable in __shared__");

TEST_CASE(vector_types_in_shared_memory) {
  const int blocks = 5;
  std::vector<float4> in(blocks * 64), out(blocks * 64);
  for (int i = 0; i < blocks * 64; ++i) in[i] = make_float4(i, i + 0.25f, i + 0.5f, i + 0.75f);
  ::cudaperf::launch<true>("reverse_float4", __LINE__, blocks, 64, 0, 0,
                           [&](auto... a) { reverse_float4(a...); }, in.data(), out.data());
  for (int b = 0; b < blocks; ++b) {
    for (int t = 0; t < 64; ++t) {
      const float4& src = in[b * 64 + 63 - t];
      const float4& got = out[b * 64 + t];
      EXPECT(got.x == src.w && got.y == src.z && got.z == src.y && got.w == src.x, "block %d slot %d",
             b, t);
    }
  }
  dim3 d = 7;
  EXPECT(d.x == 7 && d.y == 1 && d.z == 1, "dim3 from unsigned");
  return true;
}
