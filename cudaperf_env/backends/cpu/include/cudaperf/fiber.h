// Fibers: guard-paged stacks and the context switch that lets CUDA threads wait at barriers.
#pragma once

namespace cudaperf {
namespace detail {

[[noreturn]] CUDAPERF_LINKED void fiber_entry();

#if defined(__x86_64__) && !defined(CUDAPERF_FIBER_UCONTEXT)

// A suspended context is just its stack pointer: the callee-saved registers are on its stack.
struct Ctx {
  void* sp = nullptr;
};

// Saves rbp, rbx, r12-r15 on the current stack, stores rsp in *save, switches to `next` and
// restores its registers. Everything else is caller-saved, so this is the whole context
// (8-11 ns; ucontext costs ~230 ns because it saves the signal mask with a syscall).
__attribute__((naked, noinline)) inline void fiber_switch(void** /*save*/, void* /*next*/) {
  __asm__(
      "pushq %rbp\n\t"
      "pushq %rbx\n\t"
      "pushq %r12\n\t"
      "pushq %r13\n\t"
      "pushq %r14\n\t"
      "pushq %r15\n\t"
      "movq %rsp, (%rdi)\n\t"
      "movq %rsi, %rsp\n\t"
      "popq %r15\n\t"
      "popq %r14\n\t"
      "popq %r13\n\t"
      "popq %r12\n\t"
      "popq %rbx\n\t"
      "popq %rbp\n\t"
      "ret\n\t");
}

inline void ctx_switch(Ctx* from, Ctx* to) { fiber_switch(&from->sp, to->sp); }

// Builds a stack [lo, top) whose first switch "returns" into fiber_entry with the ABI's
// alignment (rsp % 16 == 8 at function entry, as if called).
inline void ctx_make(Ctx* c, char* lo, char* top) {
  (void)lo;
  void** sp = reinterpret_cast<void**>(top);      // 64-byte aligned
  *--sp = nullptr;                                // fiber_entry's (unused) return address
  *--sp = reinterpret_cast<void*>(&fiber_entry);  // popped by `ret`
  for (int i = 0; i < 6; ++i) *--sp = nullptr;    // rbp, rbx, r12-r15
  c->sp = sp;
}

#else  // Portable fallback.

struct Ctx {
  ucontext_t uc;
};

inline void ctx_switch(Ctx* from, Ctx* to) { ::swapcontext(&from->uc, &to->uc); }

inline void ctx_make(Ctx* c, char* lo, char* top) {
  ::getcontext(&c->uc);
  c->uc.uc_stack.ss_sp = lo;
  c->uc.uc_stack.ss_size = static_cast<size_t>(top - lo);
  c->uc.uc_link = nullptr;
  ::makecontext(&c->uc, reinterpret_cast<void (*)()>(&fiber_entry), 0);
}

#endif

inline size_t page_size() {
  static const size_t size = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

inline size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

// The stacks of one worker thread: slot i is [guard | stack]; the guard (PROT_NONE) lies below
// the stack because stacks grow down, so an overflow faults there and is reported as a stack
// overflow. Stacks are reused by every block the worker runs.
//
// Stack tops are "colored": one extra page per slot plus a 64-byte step per fiber spread the
// hot top-of-stack lines over different cache sets. Equally spaced power-of-two stacks all
// map to the same L1/L2 sets, which made every fiber start and switch a cache miss.
class StackPool {
 public:
  static constexpr size_t kGuard = 64 * 1024;
  static constexpr size_t kColor = 4096;

  // Makes `count` stacks of `stack_size` bytes usable; false when memory is exhausted.
  bool ensure(unsigned count, size_t stack_size) {
    stack_size = round_up(stack_size, page_size());
    if (base_ != nullptr && (stack_size != stack_ || count > capacity_)) release();
    if (base_ == nullptr) {
      unsigned cap = 64;
      while (cap < count) cap *= 2;
      size_t slot = kGuard + stack_size + kColor;
      void* p = ::mmap(nullptr, slot * cap, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
      if (p == MAP_FAILED) return false;
      base_ = static_cast<char*>(p);
      stack_ = stack_size;
      slot_ = slot;
      capacity_ = cap;
      usable_ = 0;
      ++epoch_;
    }
    for (; usable_ < count; ++usable_) {
      if (::mprotect(lo(usable_), stack_ + kColor, PROT_READ | PROT_WRITE) != 0) return false;
    }
    return true;
  }

  char* lo(unsigned i) const { return base_ + static_cast<size_t>(i) * slot_ + kGuard; }
  char* top(unsigned i) const { return lo(i) + stack_ + kColor - (i % 64) * 64; }
  size_t stack_size() const { return stack_; }
  // Changes whenever the stacks move (contexts built on the old ones are void).
  unsigned epoch() const { return epoch_; }

  // Async-signal-safe: is `addr` in one of the guard pages?
  bool in_guard(const void* addr) const {
    const char* a = static_cast<const char*>(addr);
    if (base_ == nullptr || a < base_ || a >= base_ + slot_ * capacity_) return false;
    return static_cast<size_t>(a - base_) % slot_ < kGuard;
  }

 private:
  void release() {
    ::munmap(base_, slot_ * capacity_);
    base_ = nullptr;
  }

  char* base_ = nullptr;
  size_t stack_ = 0;
  size_t slot_ = 0;
  unsigned capacity_ = 0;
  unsigned usable_ = 0;
  unsigned epoch_ = 0;
};

// Dynamic shared memory of one worker: the block's buffer ends exactly at a PROT_NONE guard, so
// running past the size given at launch faults instead of silently reading garbage.
class DynamicSharedArea {
 public:
  static constexpr size_t kGuard = 64 * 1024;

  char* base_for(size_t bytes) {
    if (region_ == nullptr) {
      usable_ = round_up(kMaxDynamicShared, page_size());
      void* p = ::mmap(nullptr, usable_ + kGuard, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p == MAP_FAILED) return nullptr;
      region_ = static_cast<char*>(p);
      ::mprotect(region_ + usable_, kGuard, PROT_NONE);
    }
    bytes_ = bytes;
    return region_ + usable_ - round_up(bytes, 128);  // 128-byte aligned, like CUDA's
  }

  bool in_guard(const void* addr) const {
    const char* a = static_cast<const char*>(addr);
    return region_ != nullptr && a >= region_ + usable_ && a < region_ + usable_ + kGuard;
  }
  size_t bytes() const { return bytes_; }
  // The running block's buffer: [start(), start() + bytes()).
  const char* start() const { return region_ + usable_ - round_up(bytes_, 128); }
  bool contains(const void* addr) const {
    const char* a = static_cast<const char*>(addr);
    return region_ != nullptr && bytes_ != 0 && a >= start() && a < region_ + usable_;
  }

 private:
  char* region_ = nullptr;
  size_t usable_ = 0;
  size_t bytes_ = 0;
};

}  // namespace detail
}  // namespace cudaperf
