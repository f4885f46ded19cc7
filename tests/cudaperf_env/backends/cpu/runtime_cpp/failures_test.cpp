// Runs one faulty kernel per case; the pytest checks exit status and fatal line (or wrong result).
#include <cuda_runtime.h>

#include "failure_kernels.cuh"

TEST_CASE(missing_syncthreads_gives_wrong_result) {
  const int blocks = 4, block = 256;
  std::vector<float> x(blocks * block, 1.0f), plain(blocks, 0.0f), fibers(blocks, 0.0f);
  // FIBERS=false is what the pre-pass picks for a kernel without barriers.
  ::cudaperf::launch<false>(
      "reduce_without_barriers", __LINE__, blocks, block, 0, 0,
      [&](auto... a) { reduce_without_barriers(a...); }, x.data(), plain.data());
  ::cudaperf::launch<true>(
      "reduce_without_barriers", __LINE__, blocks, block, 0, 0,
      [&](auto... a) { reduce_without_barriers(a...); }, x.data(), fibers.data());
  std::printf("sums without barriers: %g (plain), %g (fibers); correct: %d\n", plain[0], fibers[0],
              block);
  for (int b = 0; b < blocks; ++b) {
    EXPECT(plain[b] != block && fibers[b] != block, "block %d summed correctly without barriers",
           b);
  }
  return true;
}

TEST_CASE(divergent_syncthreads) {
  std::vector<float> data(64, 1.0f);
  ::cudaperf::launch<true>(
      "divergent_barrier", __LINE__, 1, 64, 0, 0, [&](auto... a) { divergent_barrier(a...); },
      data.data());
  return false;  // unreachable: the runtime reports a deadlock
}

TEST_CASE(partial_warp_shuffle) {
  std::vector<float> data(32, 1.0f);
  ::cudaperf::launch<true>(
      "half_warp_shuffle", __LINE__, 1, 32, 0, 0, [&](auto... a) { half_warp_shuffle(a...); },
      data.data());
  return false;
}

TEST_CASE(wild_pointer_write) {
  std::vector<int> ok(2 * 64, 0);
  ::cudaperf::launch<false>(
      "wild_write", __LINE__, 2, 64, 0, 0, [&](auto... a) { wild_write(a...); },
      reinterpret_cast<int*>(0x10), ok.data());
  return false;
}

TEST_CASE(deep_recursion) {
  std::vector<int> out(32);
  ::cudaperf::launch<true>(
      "recurse", __LINE__, 1, 32, 0, 0, [&](auto... a) { recurse(a...); }, out.data(), 100000000);
  return false;
}

TEST_CASE(deep_recursion_without_fibers) {
  std::vector<int> out(32);
  ::cudaperf::launch<false>(
      "recurse_plain", __LINE__, 1, 32, 0, 0, [&](auto... a) { recurse_plain(a...); }, out.data(),
      100000000);
  return false;
}

TEST_CASE(integer_division_by_zero) {
  std::vector<int> a(64, 7), b(64, 1), c(64);
  b[40] = 0;
  ::cudaperf::launch<false>(
      "divide", __LINE__, 2, 32, 0, 0, [&](auto... p) { divide(p...); }, a.data(), b.data(),
      c.data());
  return false;
}

TEST_CASE(failed_device_assert) {
  std::vector<int> x(64, 1);
  x[37] = 12;
  ::cudaperf::launch<false>(
      "check_values", __LINE__, 2, 32, 0, 0, [&](auto... a) { check_values(a...); }, x.data());
  return false;
}

TEST_CASE(trap) {
  ::cudaperf::launch<false>("trap_kernel", __LINE__, 1, 8, 0, 0,
                            [&](auto... a) { trap_kernel(a...); });
  return false;
}

TEST_CASE(dynamic_shared_out_of_bounds) {
  std::vector<float> out(64);
  ::cudaperf::launch<true>(
      "dynamic_shared_overrun", __LINE__, 1, 64, 64 * sizeof(float), 0,
      [&](auto... a) { dynamic_shared_overrun(a...); }, out.data());
  return false;
}

TEST_CASE(barrier_without_fibers) {
  std::vector<int> out(64);
  ::cudaperf::launch<false>(
      "barrier_kernel", __LINE__, 1, 64, 0, 0, [&](auto... a) { barrier_kernel(a...); },
      out.data());
  return false;
}

TEST_CASE(host_null_write) {
  volatile int* p = nullptr;
  *p = 1;
  return false;
}

TEST_CASE(host_abort) { std::abort(); }

TEST_CASE(host_assert) {
  int x = 3;
  assert(x == 4);
  return false;
}

TEST_CASE(device_printf) {
  std::printf("host before\n");
  ::cudaperf::launch<false>(
      "say_hello", __LINE__, 2, 32, 0, 0, [&](auto... a) { say_hello(a...); }, 3);
  std::printf("host after\n");
  return true;
}

TEST_CASE(device_printf_is_capped) {
  ::cudaperf::launch<false>("chatty", __LINE__, 8, 512, 0, 0, [&](auto... a) { chatty(a...); });
  std::printf("host after\n");
  return true;
}
