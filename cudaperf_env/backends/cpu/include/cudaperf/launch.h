// Launching a grid: configuration checks, the worker thread pool, cudaperf::launch.
#pragma once

namespace cudaperf {
namespace detail {

struct RuntimeConfig {
  int num_threads = 0;  // <= 0: one per hardware thread
  bool deterministic = false;
  size_t stack_size = 64 * 1024;  // per CUDA thread in fiber mode
};
inline RuntimeConfig g_config;
inline unsigned long long g_launch_count = 0;  // __atomic builtins

inline unsigned hardware_threads() {
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) {
    return static_cast<unsigned>(CPU_COUNT(&set));
  }
  long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<unsigned>(n) : 1u;
}

inline unsigned configured_workers() {
  if (g_config.deterministic || g_race_requested || g_schedule_seed != 0) return 1;  // reproducible orders
  return g_config.num_threads > 0 ? static_cast<unsigned>(g_config.num_threads)
                                  : hardware_threads();
}

struct Job {
  const char* kernel;
  int line;
  dim3 grid;
  dim3 block;
  size_t smem;
  bool fibers;
  void (*body)(void*);
  void* ctx;
  unsigned nthreads;
  unsigned long long nblocks;
  unsigned long long next;  // next block to run (__atomic builtins)
  // Schedule perturbation (0 and 1: CUDA's natural order): block b runs as
  // (b * block_stride + block_offset) % nblocks; threads likewise within a block.
  unsigned long long block_stride;
  unsigned long long block_offset;
  unsigned thread_stride;
  unsigned thread_offset;
};

inline unsigned long long gcd_ull(unsigned long long a, unsigned long long b) {
  while (b != 0) {
    unsigned long long t = a % b;
    a = b;
    b = t;
  }
  return a;
}

// A stride coprime with n chosen by the seed: k -> (k * stride + offset) % n is a permutation.
inline unsigned long long coprime_stride(unsigned long long n, unsigned long long seed) {
  if (n <= 1 || seed == 0) return 1;
  unsigned long long s = ((seed * 0x9E3779B97F4A7C15ULL) >> 17) % n;
  if (s == 0) s = n - 1;  // seed's degenerate case: reverse order
  while (gcd_ull(s, n) != 1) ++s;  // stops by n - 1
  return s;
}

#if !CUDAPERF_DEFINE_LINKED
[[noreturn]] CUDAPERF_COLD CUDAPERF_LINKED void out_of_memory(const char* what);
#else
[[noreturn]] CUDAPERF_COLD CUDAPERF_LINKED void out_of_memory(const char* what) {
  Line m;
  m.str("cannot allocate ").str(what).str(" for the launch");
  fatal_exit_flush("abort", kExitAbort, m);
}
#endif

inline void prepare_worker(Worker& w, const Job& j) {
  if (j.fibers && !w.stacks.ensure(j.nthreads, g_config.stack_size)) out_of_memory("fiber stacks");
  char* shared = w.dynamic_shared.base_for(j.smem);
  if (shared == nullptr) out_of_memory("dynamic shared memory");
  tls_dynamic_shared = shared;
  ::gridDim = j.grid;
  ::blockDim = j.block;
  w.body = j.body;
  w.body_ctx = j.ctx;
  w.bdim = j.block;
  w.nthreads = j.nthreads;
  w.fiber_mode = j.fibers;
  w.launch_line = j.line;
  w.thread_stride = j.thread_stride;
  w.thread_offset = j.thread_offset;
  if (j.fibers) {
    unsigned i = 0;
    for (unsigned z = 0; z < j.block.z; ++z) {
      for (unsigned y = 0; y < j.block.y; ++y) {
        for (unsigned x = 0; x < j.block.x; ++x) w.fibers[i++].tid = uint3{x, y, z};
      }
    }
    for (unsigned k = 0; k * 32 < j.nthreads; ++k)
      w.warps[k].existing = existing_lanes(j.nthreads, k);
  }
  w.kernel = j.kernel;  // last: signal handlers trust the fields above once this is set
}

#if !CUDAPERF_DEFINE_LINKED
CUDAPERF_LINKED void run_blocks(Worker& w, Job& j);
#else
CUDAPERF_LINKED void run_blocks(Worker& w, Job& j) {
  prepare_worker(w, j);
  const unsigned long long gx = j.grid.x, gxy = gx * j.grid.y;
  for (;;) {
    unsigned long long b = __atomic_fetch_add(&j.next, 1ULL, __ATOMIC_RELAXED);
    if (b >= j.nblocks) break;
    if (j.block_stride != 1 || j.block_offset != 0)
      b = static_cast<unsigned long long>(
          (static_cast<unsigned __int128>(b) * j.block_stride + j.block_offset) % j.nblocks);
    uint3 idx{static_cast<unsigned>(b % gx), static_cast<unsigned>(b / gx % j.grid.y),
              static_cast<unsigned>(b / gxy)};
    ::blockIdx = idx;
    w.block_idx = idx;
    if (j.fibers) {
      run_block_fibers(w);
    } else {
      run_block_plain(w);
    }
  }
  w.kernel = nullptr;
}
#endif

// Worker threads beyond the launching thread, created lazily and reused by every launch.
class Pool {
 public:
  void run_helpers(Job* job, unsigned helpers) {
    MutexLock lock(&mu_);
    while (nthreads_ < helpers && nthreads_ < kMaxWorkers) {
      Start* start = new (runtime_malloc(sizeof(Start))) Start{this, nthreads_};  // never the host arena
      pthread_t t;
      if (::pthread_create(&t, nullptr, &Pool::thread_main, start) != 0) {
        runtime_free(start);
        break;  // run with the threads we have
      }
      ::pthread_detach(t);  // idle at exit; never joined
      ++nthreads_;
    }
    if (helpers > nthreads_) helpers = nthreads_;
    job_ = job;
    helpers_ = helpers;
    pending_ = helpers;
    ++generation_;
    ::pthread_cond_broadcast(&start_);
  }

  void wait() {
    MutexLock lock(&mu_);
    while (pending_ != 0) ::pthread_cond_wait(&done_, &mu_);
  }

 private:
  struct Start {
    Pool* pool;
    unsigned index;
  };

  static void* thread_main(void* arg) {
    Start start = *static_cast<Start*>(arg);
    runtime_free(arg);
    start.pool->loop(start.index);
    return nullptr;
  }

  void loop(unsigned index) {
    Worker& w = this_worker();
    unsigned long long seen = 0;
    ::pthread_mutex_lock(&mu_);
    for (;;) {
      while (generation_ == seen) ::pthread_cond_wait(&start_, &mu_);
      seen = generation_;
      if (index >= helpers_) continue;
      Job* job = job_;
      ::pthread_mutex_unlock(&mu_);
      run_blocks(w, *job);
      ::pthread_mutex_lock(&mu_);
      if (--pending_ == 0) ::pthread_cond_signal(&done_);
    }
  }

  pthread_mutex_t mu_ = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t start_ = PTHREAD_COND_INITIALIZER;
  pthread_cond_t done_ = PTHREAD_COND_INITIALIZER;
  unsigned nthreads_ = 0;
  Job* job_ = nullptr;
  unsigned helpers_ = 0;
  unsigned pending_ = 0;
  unsigned long long generation_ = 0;
};

#if !CUDAPERF_DEFINE_LINKED
CUDAPERF_LINKED Pool& pool();
#else
CUDAPERF_LINKED Pool& pool() {
  static Pool* p = new Pool();  // leaked on purpose: its threads outlive static destructors
  return *p;
}
#endif

inline pthread_mutex_t g_launch_mutex = PTHREAD_MUTEX_INITIALIZER;

#if !CUDAPERF_DEFINE_LINKED
CUDAPERF_LINKED void launch_erased(const char* kernel, int line, dim3 grid, dim3 block,
                                   size_t smem, bool fibers, void (*body)(void*), void* ctx);
#else
CUDAPERF_LINKED void launch_erased(const char* kernel, int line, dim3 grid, dim3 block,
                                   size_t smem, bool fibers, void (*body)(void*), void* ctx) {
  reload_kernel_resources_if_changed();
  cudaError_t refused = check_launch_limits(kernel, grid, block, smem);
  if (refused != cudaSuccess) {
    record_error(refused);
    return;
  }
  install_signal_handlers();  // again: a submission's own handler must never see a kernel's fault
  Worker& w = this_worker();
  if (w.kernel != nullptr) {
    Line m;
    m.str("kernel ").str(kernel).str(" launched (line ").num(line).str(") from inside kernel ");
    m.str(w.kernel).str(": dynamic parallelism is not supported");
    fatal_exit_flush("abort", kExitAbort, m);
  }
  MutexLock lock(&g_launch_mutex);
  DeviceDoor door;      // kernels see device memory; host code does not
  g_host_wrote_arg = -1;  // a kernel runs after the host's copies
  race_launch_begin();
  arena_close(true);  // the submission's host heap is not device memory (host_arena.h)
  std::fflush(stdout);  // host output first, then the kernel's printf output
  Job job;
  job.next = 0;
  job.kernel = kernel;
  job.line = line;
  job.grid = grid;
  job.block = block;
  job.smem = smem;
  job.fibers = fibers;
  job.body = body;
  job.ctx = ctx;
  job.nthreads = block.x * block.y * block.z;
  job.nblocks = static_cast<unsigned long long>(grid.x) * grid.y * grid.z;
  unsigned long long seed = g_schedule_seed;
  job.block_stride = coprime_stride(job.nblocks, seed);
  job.block_offset = seed != 0 ? (seed * 7919ULL) % job.nblocks : 0;
  job.thread_stride = static_cast<unsigned>(coprime_stride(job.nthreads, seed >> 1 | seed));
  job.thread_offset = seed != 0 ? static_cast<unsigned>((seed * 104729ULL) % job.nthreads) : 0;
  unsigned long long workers = configured_workers();
  if (workers > job.nblocks) workers = job.nblocks;
  if (workers > 1) pool().run_helpers(&job, static_cast<unsigned>(workers - 1));
  run_blocks(w, job);
  if (workers > 1) pool().wait();
  race_launch_end();
  arena_close(false);
  __atomic_fetch_add(&g_launch_count, 1ULL, __ATOMIC_RELAXED);
}
#endif

template <class F>
void invoke_body(void* f) {
  (*static_cast<F*>(f))();
}

// A kernel argument pointing into the launching host thread's stack or a loaded program's static data
// (a host array of a function, a string literal): a GPU faults when the kernel reads it, so the launch
// ends as an illegal address here (host heap memory is the host arena's: it faults when read). Checked
// while a submission's entry runs with host and device memory apart (device_memory.h), where device
// memory is never on a stack or in a program's data.
#if !CUDAPERF_DEFINE_LINKED
CUDAPERF_LINKED void check_host_pointer_arg(const char* kernel, int line, int index, uintptr_t p);
#else
CUDAPERF_COLD CUDAPERF_LINKED void check_host_pointer_arg(const char* kernel, int line, int index, uintptr_t p) {
  static thread_local uintptr_t stack_lo = 0, stack_hi = 0;  // pthread_getattr_np reads /proc for the main thread
  if (p == 0 || g_host_depth == 0) return;
  if (stack_hi == 0) {
    pthread_attr_t attr;
    if (::pthread_getattr_np(::pthread_self(), &attr) == 0) {
      void* addr = nullptr;
      size_t size = 0;
      if (::pthread_attr_getstack(&attr, &addr, &size) == 0) {
        stack_lo = reinterpret_cast<uintptr_t>(addr);
        stack_hi = stack_lo + size;
      }
      ::pthread_attr_destroy(&attr);
    }
  }
  const char* where = nullptr;
  Dl_info info;
  if (p >= stack_lo && p < stack_hi) {
    where = "the host thread's stack (a local array or variable)";
  } else if (::dladdr(reinterpret_cast<void*>(p), &info) != 0 && info.dli_fname != nullptr) {
    where = "host static data (a static or global host array, a string literal)";
  }
  if (where == nullptr) return;
  Line m;
  m.str("kernel ").str(kernel).str(" (launched at line ").num(line).str(") was given a pointer to ").str(where);
  m.str(" as argument #").num(index + 1).str(": kernels read device memory only; copy the data into a cudaMalloc ");
  m.str("buffer with cudaMemcpy and pass that");
  fatal_exit_flush("illegal_address", kExitIllegalAddress, m);
}
#endif

template <class A>
inline void check_host_arg(const char* kernel, int line, int index, const A& a) {
  if constexpr (std::is_pointer_v<A> && !std::is_function_v<std::remove_pointer_t<A>>) {
    check_host_pointer_arg(kernel, line, index, reinterpret_cast<uintptr_t>(a));
  }
}

}  // namespace detail

// What the pre-pass turns `K<<<grid, block, smem, stream>>>(args...)` into. Runs the whole grid
// before returning (launches are synchronous). Each CUDA thread calls body(args...) with its
// own copies of the arguments. Fibers: whether the kernel may use barriers or warp collectives.
template <bool Fibers, class Body, class... Args>
inline void launch(const char* kernel, int line, dim3 grid, dim3 block, size_t dynamic_smem,
                   cudaStream_t stream, Body body, Args... args) {
  (void)stream;
  int index = 0;
  (detail::check_host_arg(kernel, line, index++, args), ...);
  auto run_thread = [&body, &args...]() { body(args...); };
  detail::launch_erased(kernel, line, grid, block, dynamic_smem, Fibers,
                        &detail::invoke_body<decltype(run_thread)>, &run_thread);
}

// The running block's dynamic shared memory (`extern __shared__` arrays point here).
inline void* dynamic_shared() { return detail::tls_dynamic_shared; }

}  // namespace cudaperf

// Called by the harness before the entry function (docs/cpu-backend.md, section 2).
extern "C" __attribute__((used, visibility("default"))) inline void cudaperf_runtime_configure(
    int num_threads, int deterministic) {
  cudaperf::detail::g_config.num_threads = num_threads;
  cudaperf::detail::g_config.deterministic = deterministic != 0;
  cudaperf::detail::reload_kernel_resources_if_changed();
}

// Number of kernel launches that ran so far (lets a harness check that kernels ran at all).
extern "C" __attribute__((used, visibility("default"))) inline unsigned long long
cudaperf_launch_count() {
  return __atomic_load_n(&cudaperf::detail::g_launch_count, __ATOMIC_RELAXED);
}
