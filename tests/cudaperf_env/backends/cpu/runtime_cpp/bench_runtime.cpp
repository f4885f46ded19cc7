// Measures the runtime's costs (switch, barrier, shuffle, matmul, reduction) for the docs.
#include <chrono>
#include <cuda_runtime.h>

#define COMMON_NO_MAIN  // this program has its own main
#include "core_kernels.cuh"

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Best of `reps` runs (1 with `bench_runtime quick`): the machine is shared, the minimum is
// the cost.
int g_reps = 3;
template <class F>
double best_seconds(int reps, F f) {
  double best = 1e30;
  if (reps > g_reps) reps = g_reps;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, seconds_since(t0));
  }
  return best;
}

#if defined(__x86_64__)
// Raw switch cost: two contexts bouncing through cudaperf::detail::fiber_switch.
void* g_main_sp = nullptr;
void* g_fiber_sp = nullptr;
long g_bounces = 0;
[[noreturn]] void bounce_entry() {
  for (;;) {
    ++g_bounces;
    ::cudaperf::detail::fiber_switch(&g_fiber_sp, g_main_sp);
  }
}
double switch_ns() {
  static char stack[64 * 1024] __attribute__((aligned(16)));
  void** sp = reinterpret_cast<void**>(stack + sizeof stack);
  *--sp = nullptr;
  *--sp = reinterpret_cast<void*>(&bounce_entry);
  for (int i = 0; i < 6; ++i) *--sp = nullptr;
  g_fiber_sp = sp;
  const long n = 2000000;
  double s = best_seconds(3, [&] {
    for (long i = 0; i < n; ++i) ::cudaperf::detail::fiber_switch(&g_main_sp, g_fiber_sp);
  });
  return s * 1e9 / (2.0 * n);  // two switches per round trip
}
#endif

__global__ void barrier_loop(int iters, int* sink) {
  int acc = 0;
  for (int i = 0; i < iters; ++i) {
    acc += i;
    __syncthreads();
  }
  if (threadIdx.x == 0) sink[blockIdx.x] = acc;
}

__global__ void shuffle_loop(int iters, int* sink) {
  int v = threadIdx.x;
  for (int i = 0; i < iters; ++i) v += __shfl_xor_sync(0xffffffffu, v, i & 31);
  if (threadIdx.x == 0) sink[blockIdx.x] = v;
}

__global__ void empty_kernel(int* sink) {
  if (threadIdx.x == 1023) sink[0] = blockIdx.x;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "quick") == 0) g_reps = 1;
  int sink[64] = {0};
#if defined(__x86_64__)
  std::printf("context_switch_ns %.1f\n", switch_ns());
#endif
  cudaperf_runtime_configure(1, 0);
  const int iters = 2000, threads = 256, blocks = 4;
  double s = best_seconds(3, [&] {
    ::cudaperf::launch<true>(
        "barrier_loop", __LINE__, blocks, threads, 0, 0, [&](auto... a) { barrier_loop(a...); },
        iters, sink);
  });
  std::printf("syncthreads_ns_per_thread %.1f\n", s * 1e9 / (double(iters) * threads * blocks));
  s = best_seconds(3, [&] {
    ::cudaperf::launch<true>(
        "shuffle_loop", __LINE__, blocks, threads, 0, 0, [&](auto... a) { shuffle_loop(a...); },
        iters, sink);
  });
  std::printf("warp_shuffle_ns_per_thread %.1f\n", s * 1e9 / (double(iters) * threads * blocks));
  s = best_seconds(3, [&] {
    ::cudaperf::launch<false>(
        "empty_kernel", __LINE__, 1024, 1024, 0, 0, [&](auto... a) { empty_kernel(a...); }, sink);
  });
  std::printf("plain_thread_ns %.1f\n", s * 1e9 / (1024.0 * 1024));
  s = best_seconds(3, [&] {
    ::cudaperf::launch<true>(
        "empty_kernel", __LINE__, 1024, 1024, 0, 0, [&](auto... a) { empty_kernel(a...); }, sink);
  });
  std::printf("fiber_thread_ns %.1f\n", s * 1e9 / (1024.0 * 1024));

  const int n = 512;
  std::vector<float> A = random_floats(n * n, 1), B = random_floats(n * n, 2), C(n * n);
  for (int workers : {1, 2}) {
    cudaperf_runtime_configure(workers, 0);
    s = best_seconds(3, [&] {
      ::cudaperf::launch<true>(
          "matmul_tiled", __LINE__, dim3(n / TILE, n / TILE), dim3(TILE, TILE), 0, 0,
          [&](auto... a) { matmul_tiled(a...); }, A.data(), B.data(), C.data(), n, n, n);
    });
    std::printf("matmul512_s_%d_threads %.3f\n", workers, s);
  }
  const int m = 1 << 20;
  std::vector<float> x = random_floats(m, 3);
  float out = 0;
  for (int workers : {1, 2}) {
    cudaperf_runtime_configure(workers, 0);
    s = best_seconds(3, [&] {
      out = 0;
      ::cudaperf::launch<true>(
          "reduce_sum", __LINE__, m / 256, 256, 0, 0, [&](auto... a) { reduce_sum(a...); },
          x.data(), m, &out);
    });
    std::printf("reduce1M_s_%d_threads %.4f\n", workers, s);
    // The same kernel as a grid-stride loop over a GPU-sized grid (132 blocks of 256 threads).
    s = best_seconds(3, [&] {
      out = 0;
      ::cudaperf::launch<true>("reduce_sum", __LINE__, 132, 256, 0, 0,
                               [&](auto... a) { reduce_sum(a...); }, x.data(), m, &out);
    });
    std::printf("reduce1M_gridstride_s_%d_threads %.4f\n", workers, s);
  }
  return sink[0] == 12345 ? 1 : 0;
}
