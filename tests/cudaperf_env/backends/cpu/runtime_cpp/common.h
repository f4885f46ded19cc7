// Test-program scaffolding: named cases run from the command line, checks with messages, inputs.
#pragma once
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

// Lets one .cu file be checked by nvcc (extern __shared__) and run here (the pre-pass form).
#ifdef CUDAPERF_CPU_RUNTIME
#define DYNAMIC_SHARED(T, name) T* name = reinterpret_cast<T*>(::cudaperf::dynamic_shared())
#else
#define DYNAMIC_SHARED(T, name) extern __shared__ T name[]
#endif

struct TestCase {
  const char* name;
  bool (*run)();
};

inline std::vector<TestCase>& test_cases() {
  static std::vector<TestCase> cases;
  return cases;
}

#define TEST_CASE(name)                                                            \
  static bool name();                                                              \
  static const int registered_##name = (test_cases().push_back({#name, name}), 0); \
  static bool name()

// Reports the failed condition and makes the case fail.
#define EXPECT(cond, ...)                                                      \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::fprintf(stderr, "%s:%d: expected %s: ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                       \
      std::fprintf(stderr, "\n");                                              \
      return false;                                                            \
    }                                                                          \
  } while (0)

inline bool near(double got, double want, double rtol, double atol = 0.0) {
  return std::fabs(got - want) <= atol + rtol * std::fabs(want);
}

// Deterministic inputs (a small LCG: the same numbers on every machine).
struct Lcg {
  unsigned long long state;
  explicit Lcg(unsigned long long seed)
      : state(seed * 6364136223846793005ULL + 1442695040888963407ULL) {}
  unsigned next() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<unsigned>(state >> 33);
  }
  float uniform(float lo, float hi) { return lo + (hi - lo) * (next() / 2147483648.0f); }
};

inline std::vector<float> random_floats(size_t n, unsigned seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  Lcg rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = rng.uniform(lo, hi);
  return v;
}

#ifndef COMMON_NO_MAIN
// `prog CASE` runs one case, `prog` runs them all, `prog --list` names them; the exit status is
// 0 only if all passed.
int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--list") == 0) {
    for (const TestCase& c : test_cases()) std::printf("%s\n", c.name);
    return 0;
  }
  int failed = 0, ran = 0;
  for (const TestCase& c : test_cases()) {
    if (argc > 1 && std::strcmp(argv[1], c.name) != 0) continue;
    ++ran;
    bool ok = c.run();
    std::fprintf(stderr, "%s: %s\n", c.name, ok ? "ok" : "FAILED");
    failed += ok ? 0 : 1;
  }
  if (ran == 0) {
    std::fprintf(stderr, "no test case named %s\n", argc > 1 ? argv[1] : "(any)");
    return 2;
  }
  return failed == 0 ? 0 : 1;
}
#endif
