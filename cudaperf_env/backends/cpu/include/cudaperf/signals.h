// Crash reporting: SIGSEGV/SIGBUS/SIGFPE/SIGABRT/SIGILL become one fatal line naming the thread.
#pragma once

namespace cudaperf {
namespace detail {

// Registry of workers, read by signal handlers (no TLS, no locks there).
constexpr unsigned kMaxWorkers = 512;
inline Worker* g_workers[kMaxWorkers];
inline unsigned g_worker_count = 0;  // __atomic builtins
// Stack of the thread that loaded the runtime, for host-code stack overflows.
inline pthread_t g_main_thread;
inline char* g_main_stack_lo = nullptr;

// Crash reporting and set-up (compiled once, in the runtime object, when one is linked).
#if !CUDAPERF_DEFINE_LINKED
CUDAPERF_COLD CUDAPERF_LINKED Worker* find_worker();
CUDAPERF_COLD CUDAPERF_LINKED void describe_place(Line& m, const Worker* w);
CUDAPERF_COLD CUDAPERF_LINKED void on_fatal_signal(int sig, siginfo_t* info, void*);
CUDAPERF_COLD CUDAPERF_LINKED void install_altstack();
CUDAPERF_COLD CUDAPERF_LINKED char* thread_stack_lo();
CUDAPERF_COLD CUDAPERF_LINKED void install_signal_handlers();
CUDAPERF_COLD CUDAPERF_LINKED bool initialize_runtime();
// The calling thread's worker, created on first use.
CUDAPERF_COLD CUDAPERF_LINKED Worker& this_worker();
#else
CUDAPERF_COLD CUDAPERF_LINKED Worker* find_worker() {
  pthread_t self = ::pthread_self();
  unsigned n = __atomic_load_n(&g_worker_count, __ATOMIC_ACQUIRE);
  if (n > kMaxWorkers) n = kMaxWorkers;
  for (unsigned i = 0; i < n; ++i) {
    Worker* w = g_workers[i];
    if (w != nullptr && ::pthread_equal(w->thread, self)) return w;
  }
  return nullptr;
}

CUDAPERF_COLD CUDAPERF_LINKED void describe_place(Line& m, const Worker* w) {
  if (w == nullptr || w->kernel == nullptr) {
    m.str(" in host code");
    return;
  }
  uint3 t = w->fiber_mode ? w->fibers[w->cur].tid : w->plain_tid;
  m.str(" in kernel ").str(w->kernel).str(" (launched at line ").num(w->launch_line);
  m.str("), block ").triple(w->block_idx.x, w->block_idx.y, w->block_idx.z);
  m.str(", thread ").triple(t.x, t.y, t.z);
}

// Faults just below an OS thread's stack are overflows (the guard page or beyond it).
inline bool below_stack(const char* lo, const void* addr) {
  const char* a = static_cast<const char*>(addr);
  return lo != nullptr && a < lo + page_size() && a + (1u << 20) >= lo;
}

CUDAPERF_COLD CUDAPERF_LINKED void on_fatal_signal(int sig, siginfo_t* info, void*) {
  Worker* w = find_worker();
  bool in_kernel = w != nullptr && w->kernel != nullptr;
  Line m;
  const char* kind = "abort";
  int code = kExitAbort;
  if (sig == SIGSEGV || sig == SIGBUS) {
    kind = "illegal_address";
    code = kExitIllegalAddress;
    void* addr = info->si_addr;
    const char* os_lo = w != nullptr                                       ? w->os_stack_lo
                        : ::pthread_equal(::pthread_self(), g_main_thread) ? g_main_stack_lo
                                                                           : nullptr;
    if (in_kernel && w->fiber_mode && w->stacks.in_guard(addr)) {
      m.str("stack overflow (the thread's ").unum(w->stacks.stack_size() / 1024);
      m.str(" KiB stack is exhausted: deep recursion or large local arrays)");
    } else if (below_stack(os_lo, addr)) {
      m.str("stack overflow (deep recursion or large local arrays)");
    } else if (in_kernel && w->dynamic_shared.in_guard(addr)) {
      m.str("dynamic shared memory access at ").hex(reinterpret_cast<uintptr_t>(addr));
      m.str(" beyond the ").unum(w->dynamic_shared.bytes()).str(" bytes given at launch");
    } else if (!in_kernel && g_host_depth > 0 && in_device_region(addr)) {
      m.str("host code dereferenced device memory at ").hex(reinterpret_cast<uintptr_t>(addr));
      m.str(" (a device pointer: on a GPU this faults; copy with cudaMemcpy or do the work in a kernel)");
    } else if (in_kernel && g_arena_closed && in_host_arena(addr)) {
      m.str("a kernel read host memory from malloc/new at ").hex(reinterpret_cast<uintptr_t>(addr));
      m.str(": on a GPU that is an illegal address; copy it to device memory with cudaMemcpy");
    } else {
      m.str(sig == SIGBUS ? "bus error at address " : "invalid memory access at address ");
      m.hex(reinterpret_cast<uintptr_t>(addr));
    }
  } else if (sig == SIGFPE) {
    kind = "arithmetic";
    code = kExitArithmetic;
    m.str(info->si_code == FPE_INTDIV || info->si_code == FPE_INTOVF
              ? "integer division by zero (or INT_MIN / -1)"
              : "floating-point exception");
  } else if (sig == SIGILL) {
    kind = "illegal_instruction";
    code = kExitIllegalInstruction;
    m.str("illegal instruction");
  } else {
    m.str("abort() called");
  }
  describe_place(m, w);
  fatal_exit(kind, code, m);
}

// Every thread that runs kernels gets an alternate signal stack: the stack that overflowed
// cannot run the handler.
CUDAPERF_COLD CUDAPERF_LINKED void install_altstack() {
  static thread_local bool done = false;
  if (done) return;
  done = true;
  const size_t size = 64 * 1024;
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;
  stack_t ss{};
  ss.ss_sp = p;
  ss.ss_size = size;
  ::sigaltstack(&ss, nullptr);
}

CUDAPERF_COLD CUDAPERF_LINKED char* thread_stack_lo() {
  pthread_attr_t attr;
  char* lo = nullptr;
  if (::pthread_getattr_np(::pthread_self(), &attr) == 0) {
    void* addr = nullptr;
    size_t size = 0;
    if (::pthread_attr_getstack(&attr, &addr, &size) == 0) lo = static_cast<char*>(addr);
    ::pthread_attr_destroy(&attr);
  }
  return lo;
}

CUDAPERF_COLD CUDAPERF_LINKED void install_signal_handlers() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = &on_fatal_signal;
  // No SA_RESETHAND: dispositions are per process, so a second kernel thread faulting while the first
  // writes its report would be killed by the default action and the report lost ("killed by SIGSEGV";
  // seen under load). It enters the handler and waits in fatal_exit instead. A fault inside the
  // handler still kills the process: the signal is blocked there (no SA_NODEFER).
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGABRT, SIGILL}) ::sigaction(sig, &sa, nullptr);
}

CUDAPERF_COLD CUDAPERF_LINKED bool initialize_runtime() {
  g_main_thread = ::pthread_self();
  g_main_stack_lo = thread_stack_lo();
  install_altstack();
  install_signal_handlers();
  return true;
}

// Runs when the program starts or the submission's library is loaded.
CUDAPERF_LINKED const bool g_runtime_initialized = initialize_runtime();

CUDAPERF_COLD CUDAPERF_LINKED Worker& this_worker() {
  if (tls_worker != nullptr) return *tls_worker;
  install_altstack();
  Worker* w = new Worker();
  w->thread = ::pthread_self();
  w->os_stack_lo = thread_stack_lo();
  w->fibers = new Fiber[kMaxThreadsPerBlock];
  unsigned slot = __atomic_fetch_add(&g_worker_count, 1, __ATOMIC_ACQ_REL);
  if (slot < kMaxWorkers) g_workers[slot] = w;
  tls_worker = w;
  return *w;
}
#endif  // CUDAPERF_DEFINE_LINKED

}  // namespace detail
}  // namespace cudaperf
