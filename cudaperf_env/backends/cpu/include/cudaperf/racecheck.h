// A deterministic data-race detector with CUDA's rules, fed by g++'s ThreadSanitizer instrumentation.
//
// The race-check build compiles the submission with `-fsanitize=thread` but links no TSan
// runtime: the compiler's calls (__tsan_read4, __tsan_write8, __tsan_atomic32_fetch_add, ...)
// land here. Only device memory is checked: cudaMalloc allocations and the harness's buffers
// (device_memory.h), dynamic shared memory, and static __shared__ arrays (this module's
// thread-local block, less the runtime's own thread-locals). Stacks, the heap and the runtime's
// state are never looked at.
//
// Happens-before, as on Volta and later GPUs: within a launch, two accesses to the same bytes by
// different CUDA threads, at least one a plain (non-atomic) write, race unless the threads are
// in the same block and a __syncthreads completed between them, or in the same warp and a warp
// collective (__syncwarp, a shuffle, a vote) completed between them. Threads of different blocks
// are never ordered (the end of the launch is). There is no implicit warp-synchronous execution.
//
// Two plain writes of the *same value* are not reported (compute-sanitizer's racecheck calls such a
// write-after-write benign: every order leaves the same bytes, e.g. many threads marking a visited
// flag): a write-after-write conflict is kept pending with the bytes its word held, and reported
// at the next checked access or the launch's end only if the second write changed them.
//
// Shadow: a direct-mapped table of kRaceCells cells, one per 4-byte word (a tag names the word;
// a colliding word evicts the older history: a missed race, never a false one). Races are
// reported as the fatal kind `race` (exit code 76), naming the memory, the two threads and the
// code addresses of both accesses (module offsets, for addr2line).
#pragma once

namespace cudaperf {
namespace detail {

constexpr int kExitRace = 76;
constexpr size_t kSharedRedzoneBytes = 4096;  // racecheck.py's SHARED_REDZONE
constexpr unsigned kRaceCellBits = 19;
constexpr unsigned kRaceCells = 1u << kRaceCellBits;

struct RaceCell {
  uintptr_t word;           // address / 4 (0: empty)
  unsigned launch;          // launch the history belongs to
  unsigned owner_block;     // shared memory: the block whose copy this is
  unsigned w_thread;        // last writer's thread in its block + 1 (0: none)
  unsigned w_block, w_epoch;
  unsigned r_thread;        // a reader since the last write + 1 (0: none)
  unsigned r_block, r_epoch;
  unsigned short w_wepoch, r_wepoch;
  unsigned char w_mask, r_mask, flags;  // flags: 1 writer atomic, 2 several readers, 4 reader atomic
  uintptr_t w_pc, r_pc;
};

// A write-after-write conflict whose verdict waits for the second write's bytes (see the header).
struct RacePending {
  const unsigned char* word;  // the word's first byte
  unsigned char mask;         // bytes both writes touched
  unsigned char before[4];    // the word before the second write
  Line message;               // the report, should the write have changed them
};
constexpr unsigned kRacePending = 16;

struct RaceState {
  bool on = false;
  bool busy = false;  // inside race_access: the detector's own (instrumented) accesses are not checked
  bool ready = false;  // ranges below computed
  unsigned launch = 0;
  bool fenced = false;  // the launch used __threadfence: cross-block ordering is not modelled
  RaceCell* cells = nullptr;
  char* tls_lo = nullptr;  // this module's thread-local block (static __shared__ arrays)
  char* tls_hi = nullptr;
  const char* redzone_lo = nullptr;  // the race-check build's last thread-local: past every __shared__ one
  const char* redzone_hi = nullptr;
  const char* own_tls[8][2];  // the runtime's own thread-locals, excluded
  unsigned own_tls_count = 0;
  uintptr_t module_base = 0;
  unsigned pending_count = 0;
  RacePending pending[kRacePending];
};
inline RaceState g_race;

#if !CUDAPERF_DEFINE_LINKED
CUDAPERF_COLD CUDAPERF_LINKED void race_prepare();
CUDAPERF_COLD CUDAPERF_LINKED void race_access(const void* addr, size_t size, bool write, bool atomic,
                                               uintptr_t pc);
CUDAPERF_COLD CUDAPERF_LINKED void race_settle();
#else
struct TlsSearch {
  uintptr_t base;
  size_t size;
};

CUDAPERF_COLD CUDAPERF_LINKED void race_prepare() {
  if (g_race.cells == nullptr) {
    void* p = ::mmap(nullptr, sizeof(RaceCell) * kRaceCells, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      g_race.on = false;
      return;
    }
    g_race.cells = static_cast<RaceCell*>(p);
  }
  if (g_race.ready) return;
  g_race.ready = true;
  Dl_info info;
  if (::dladdr(reinterpret_cast<void*>(&race_prepare), &info) == 0) return;
  g_race.module_base = reinterpret_cast<uintptr_t>(info.dli_fbase);
  TlsSearch search{g_race.module_base, 0};
  ::dl_iterate_phdr(
      [](dl_phdr_info* i, size_t, void* data) -> int {
        TlsSearch* s = static_cast<TlsSearch*>(data);
        if (i->dlpi_addr != s->base) return 0;
        for (int k = 0; k < i->dlpi_phnum; ++k) {
          if (i->dlpi_phdr[k].p_type == PT_TLS) s->size = i->dlpi_phdr[k].p_memsz;
        }
        return 1;
      },
      &search);
  void* handle = ::dlopen(info.dli_fname, RTLD_NOLOAD | RTLD_LAZY);
  if (handle == nullptr) handle = ::dlopen(nullptr, RTLD_LAZY);  // the main program
  void* block = nullptr;
  if (handle != nullptr && search.size != 0 && ::dlinfo(handle, RTLD_DI_TLS_DATA, &block) == 0 &&
      block != nullptr) {
    g_race.tls_lo = static_cast<char*>(block);
    g_race.tls_hi = g_race.tls_lo + search.size;
  }
  if (handle != nullptr) {
    // racecheck.py links this function and its zone in after the submission's unit, so the zone
    // follows every __shared__ array of the submission in the module's thread-local block.
    using ZoneAt = char* (*)();
    auto zone_at = reinterpret_cast<ZoneAt>(::dlsym(handle, "cudaperf_shared_redzone_at"));
    if (zone_at != nullptr) {
      g_race.redzone_lo = zone_at();
      g_race.redzone_hi = g_race.redzone_lo + kSharedRedzoneBytes;
    }
    ::dlclose(handle);
  }
  auto own = [](const void* p, size_t n) {
    g_race.own_tls[g_race.own_tls_count][0] = static_cast<const char*>(p);
    g_race.own_tls[g_race.own_tls_count][1] = static_cast<const char*>(p) + n;
    ++g_race.own_tls_count;
  };
  own(&::threadIdx, sizeof ::threadIdx);
  own(&::blockIdx, sizeof ::blockIdx);
  own(&::blockDim, sizeof ::blockDim);
  own(&::gridDim, sizeof ::gridDim);
  own(&tls_worker, sizeof tls_worker);
  own(&tls_last_error, sizeof tls_last_error);
  own(&tls_dynamic_shared, sizeof tls_dynamic_shared);
}

// 0: not device memory; 1: global (device regions); 2: shared (dynamic or static); 3: past the last
// static __shared__ array (the redzone).
inline int race_space(const Worker& w, const char* a) {
  if (in_device_region(a)) return 1;
  if (w.dynamic_shared.contains(a)) return 2;
  if (a >= g_race.redzone_lo && a < g_race.redzone_hi) return 3;
  if (a >= g_race.tls_lo && a < g_race.tls_hi) {
    for (unsigned i = 0; i < g_race.own_tls_count; ++i) {
      if (a >= g_race.own_tls[i][0] && a < g_race.own_tls[i][1]) return 0;
    }
    return 2;
  }
  return 0;
}

inline CUDAPERF_COLD void race_describe(Line& m, const char* what, unsigned thread, unsigned block,
                                 uintptr_t pc) {
  const Worker& w = *tls_worker;
  unsigned bx = w.bdim.x, by = w.bdim.y, gx = ::gridDim.x, gy = ::gridDim.y;
  m.str(what).str(" by thread ").triple(thread % bx, thread / bx % by, thread / (bx * by));
  m.str(" of block ").triple(block % gx, block / gx % gy, block / (gx * gy));
  m.str(" (code offset ").hex(pc - g_race.module_base).str(")");
}

inline CUDAPERF_COLD void race_message(Line& m, const char* addr, int space, const RaceCell& c,
                                       bool earlier_write, bool write, bool atomic, unsigned me, unsigned block,
                                       uintptr_t pc) {
  const Worker& w = *tls_worker;
  m.str("in kernel ").str(w.kernel).str(" (launched at line ").num(w.launch_line).str("): ");
  const DeviceRegion* r = space == 1 ? device_region_of(addr) : nullptr;
  if (r != nullptr && r->arg >= 0) {
    m.str("argument #").num(r->arg).str(" at byte ").num(addr - r->base);
  } else if (r != nullptr) {
    m.str("a cudaMalloc buffer at byte ").num(addr - r->base);
  } else if (w.dynamic_shared.contains(addr)) {
    m.str("dynamic shared memory at byte ").num(addr - w.dynamic_shared.start());
  } else {
    m.str("a __shared__ array at ").hex(reinterpret_cast<uintptr_t>(addr));
  }
  m.str(": ");
  if (earlier_write) {
    race_describe(m, c.flags & 1 ? "atomic write" : "write", c.w_thread - 1, c.w_block, c.w_pc);
  } else {
    race_describe(m, c.flags & 4 ? "atomic read" : "read", c.r_thread - 1, c.r_block, c.r_pc);
  }
  m.str(" and ");
  race_describe(m, write ? (atomic ? "atomic write" : "write") : (atomic ? "atomic read" : "read"),
                me, block, pc);
  m.str(space == 2 || c.w_block == block ? " with no __syncthreads() or __syncwarp() between"
                                         : " in different blocks of one launch");
}

[[noreturn]] inline CUDAPERF_COLD void race_report(const char* addr, int space, const RaceCell& c,
                                            bool earlier_write, bool write, bool atomic,
                                            unsigned me, unsigned block, uintptr_t pc) {
  Line m;
  race_message(m, addr, space, c, earlier_write, write, atomic, me, block, pc);
  fatal_exit_flush("race", kExitRace, m);
}

// An access in the redzone: an index ran past the last static __shared__ array (through a pointer:
// -fsanitize=bounds sees only indices into arrays of known size).
[[noreturn]] inline CUDAPERF_COLD void race_past_shared(const char* addr, bool write, uintptr_t pc) {
  const Worker& w = *tls_worker;
  uint3 t = w.fiber_mode ? w.fibers[w.cur].tid : w.plain_tid;
  Line m;
  m.str(write ? "a write " : "a read ").unum(static_cast<unsigned long long>(addr - g_race.redzone_lo));
  m.str(" bytes past the end of the last __shared__ array, in kernel ").str(w.kernel);
  m.str(" (launched at line ").num(w.launch_line).str("), block ");
  m.triple(w.block_idx.x, w.block_idx.y, w.block_idx.z).str(", thread ").triple(t.x, t.y, t.z);
  m.str(" (code offset ").hex(pc - g_race.module_base).str(")");
  fatal_exit_flush("out_of_bounds", kExitOutOfBounds, m);
}

// Whether an access by (thread, block, epoch, warp epoch) is ordered before the running thread's.
inline bool race_ordered(unsigned thread, unsigned block, unsigned epoch, unsigned short wepoch,
                         const Worker& w, unsigned me, unsigned my_block) {
  if (thread == me && block == my_block) return true;  // program order
  if (block != my_block) return false;
  if (epoch != w.race_epoch) return true;  // a __syncthreads completed since
  return thread / 32 == me / 32 && wepoch != static_cast<unsigned short>(w.race_warp_epoch[me / 32]);
}

// The pending write-after-write conflicts: each is a race if the second write changed its word's bytes
// (the write has landed: this runs at the next checked access, or at the launch's end).
CUDAPERF_COLD CUDAPERF_LINKED void race_settle() {
  unsigned count = g_race.pending_count;
  g_race.pending_count = 0;
  for (unsigned i = 0; i < count; ++i) {
    const RacePending& p = g_race.pending[i];
    for (unsigned b = 0; b < 4; ++b) {
      if ((p.mask >> b & 1u) != 0 && p.word[b] != p.before[b]) {
        Line m = p.message;
        m.str("; the two writes stored different values");
        fatal_exit_flush("race", kExitRace, m);
      }
    }
  }
}

CUDAPERF_COLD CUDAPERF_LINKED void race_access(const void* addr, size_t size, bool write, bool atomic,
                                               uintptr_t pc) {
  if (g_race.pending_count != 0) race_settle();
  Worker* wp = tls_worker;
  if (wp == nullptr || wp->kernel == nullptr || g_race.cells == nullptr) return;
  const Worker& w = *wp;
  const char* a = static_cast<const char*>(addr);
  int space = race_space(w, a);
  if (space == 0) return;
  if (space == 3) race_past_shared(a, write, pc);
  unsigned me = w.cur;
  unsigned block = w.block_idx.x + ::gridDim.x * (w.block_idx.y + ::gridDim.y * w.block_idx.z);
  unsigned short wepoch = static_cast<unsigned short>(w.race_warp_epoch[me / 32]);
  uintptr_t first = reinterpret_cast<uintptr_t>(a) >> 2;
  uintptr_t last = (reinterpret_cast<uintptr_t>(a) + (size == 0 ? 1 : size) - 1) >> 2;
  if (last - first > 15) last = first + 15;  // bounded work for long ranges
  for (uintptr_t word = first; word <= last; ++word) {
    uintptr_t lo = word << 2;
    uintptr_t from = reinterpret_cast<uintptr_t>(a) > lo ? reinterpret_cast<uintptr_t>(a) : lo;
    uintptr_t to = reinterpret_cast<uintptr_t>(a) + size < lo + 4 ? reinterpret_cast<uintptr_t>(a) + size
                                                                  : lo + 4;
    unsigned char mask = static_cast<unsigned char>(((1u << (to - from)) - 1u) << (from - lo));
    RaceCell& c = g_race.cells[(word * 0x9E3779B97F4A7C15ULL) >> (64 - kRaceCellBits)];
    bool fresh = c.word != word || c.launch != g_race.launch || (space == 2 && c.owner_block != block);
    if (fresh) {
      std::memset(&c, 0, sizeof c);
      c.word = word;
      c.launch = g_race.launch;
      c.owner_block = block;
    }
    bool cross_ok = g_race.fenced;  // __threadfence patterns: blocks not checked against each other
    // Atomic writes conflict only with plain writes: a plain read of a word other threads update
    // atomically is the seed of CUDA's compare-and-swap loops (a stale value, not a torn one).
    bool earlier_atomic = (c.flags & 1) != 0;
    if (c.w_thread != 0 && (c.w_mask & mask) != 0 && !(earlier_atomic && (atomic || !write)) &&
        !race_ordered(c.w_thread - 1, c.w_block, c.w_epoch, c.w_wepoch, w, me, block) &&
        !(cross_ok && c.w_block != block)) {
      if (!write || atomic || earlier_atomic || g_race.pending_count == kRacePending) {
        race_report(a, space, c, true, write, atomic, me, block, pc);
      }
      RacePending& p = g_race.pending[g_race.pending_count++];  // plain after plain: same bytes are benign
      p.word = reinterpret_cast<const unsigned char*>(lo);
      p.mask = static_cast<unsigned char>(c.w_mask & mask);
      std::memcpy(p.before, p.word, 4);
      p.message = Line();
      race_message(p.message, a, space, c, true, write, atomic, me, block, pc);
    }
    if (write && !atomic && c.r_thread != 0 && (c.r_mask & mask) != 0) {
      bool other = (c.flags & 2) != 0 || c.r_thread - 1 != me || c.r_block != block;
      if (other && !race_ordered(c.r_thread - 1, c.r_block, c.r_epoch, c.r_wepoch, w,
                                 (c.flags & 2) ? ~0u : me, block) &&
          !(cross_ok && c.r_block != block)) {
        race_report(a, space, c, false, write, atomic, me, block, pc);
      }
    }
    if (write) {
      c.w_thread = me + 1;
      c.w_block = block;
      c.w_epoch = w.race_epoch;
      c.w_wepoch = wepoch;
      c.w_mask = mask;
      c.w_pc = pc;
      c.flags = atomic ? 1 : 0;
      c.r_thread = 0;
      c.r_mask = 0;
    } else if (c.r_thread == 0 ||
               race_ordered(c.r_thread - 1, c.r_block, c.r_epoch, c.r_wepoch, w, me, block)) {
      c.r_thread = me + 1;
      c.r_block = block;
      c.r_epoch = w.race_epoch;
      c.r_wepoch = wepoch;
      c.r_mask = mask;
      c.r_pc = pc;
      c.flags = static_cast<unsigned char>((c.flags & 1) | (atomic ? 4 : 0));
    } else if (c.r_thread - 1 != me || c.r_block != block) {
      c.flags |= 2;
      c.r_mask |= mask;
    }
  }
}
#endif

// Called by launch_erased after a launch ran: the last write-after-write conflicts are judged.
inline void race_launch_end() {
  if (g_race.on && g_race.pending_count != 0) race_settle();
}

// Called by launch_erased before a launch runs: the resources file's `racecheck 1` turns it on.
inline void race_launch_begin() {
  g_race.on = g_race_requested;
  if (!g_race.on) return;
  race_prepare();
  ++g_race.launch;
  g_race.fenced = false;
}

}  // namespace detail
}  // namespace cudaperf

// The instrumentation's entry points (g++ -fsanitize=thread, no TSan runtime linked).
#define CUDAPERF_TSAN_PC reinterpret_cast<uintptr_t>(__builtin_return_address(0))
#define CUDAPERF_TSAN_CHECK(a, size, write, atomic)                                            \
  do {                                                                                         \
    ::cudaperf::detail::RaceState& r = ::cudaperf::detail::g_race;                             \
    if (r.on && !r.busy) {                                                                     \
      r.busy = true;                                                                           \
      ::cudaperf::detail::race_access(a, size, write, atomic, CUDAPERF_TSAN_PC);               \
      r.busy = false;                                                                          \
    }                                                                                          \
  } while (0)
#define CUDAPERF_TSAN_ACCESS(name, size, write)                                                \
  extern "C" CUDAPERF_TSAN_DEF void name(void* a) {                                            \
    CUDAPERF_TSAN_CHECK(a, size, write, false);                                                \
  }
#define CUDAPERF_TSAN_RANGE(name, write)                                                       \
  extern "C" CUDAPERF_TSAN_DEF void name(void* a, unsigned long size) {                        \
    CUDAPERF_TSAN_CHECK(a, size, write, false);                                                \
  }
#define CUDAPERF_TSAN_ATOMICS(bits, T)                                                         \
  extern "C" CUDAPERF_TSAN_DEF T __tsan_atomic##bits##_load(const volatile T* a, int) {        \
    CUDAPERF_TSAN_CHECK(const_cast<const T*>(a), sizeof(T), false, true);                      \
    return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                               \
  }                                                                                            \
  extern "C" CUDAPERF_TSAN_DEF void __tsan_atomic##bits##_store(volatile T* a, T v, int) {     \
    CUDAPERF_TSAN_CHECK(const_cast<T*>(a), sizeof(T), true, true);                             \
    __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                                  \
  }                                                                                            \
  CUDAPERF_TSAN_RMW(bits, T, exchange, __atomic_exchange_n)                                    \
  CUDAPERF_TSAN_RMW(bits, T, fetch_add, __atomic_fetch_add)                                    \
  CUDAPERF_TSAN_RMW(bits, T, fetch_sub, __atomic_fetch_sub)                                    \
  CUDAPERF_TSAN_RMW(bits, T, fetch_and, __atomic_fetch_and)                                    \
  CUDAPERF_TSAN_RMW(bits, T, fetch_or, __atomic_fetch_or)                                      \
  CUDAPERF_TSAN_RMW(bits, T, fetch_xor, __atomic_fetch_xor)                                    \
  CUDAPERF_TSAN_RMW(bits, T, fetch_nand, __atomic_fetch_nand)                                  \
  extern "C" CUDAPERF_TSAN_DEF int __tsan_atomic##bits##_compare_exchange_strong(              \
      volatile T* a, T* c, T v, int, int) {                                                    \
    CUDAPERF_TSAN_CHECK(const_cast<T*>(a), sizeof(T), true, true);                             \
    return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);    \
  }                                                                                            \
  extern "C" CUDAPERF_TSAN_DEF int __tsan_atomic##bits##_compare_exchange_weak(                \
      volatile T* a, T* c, T v, int, int) {                                                    \
    CUDAPERF_TSAN_CHECK(const_cast<T*>(a), sizeof(T), true, true);                             \
    return __atomic_compare_exchange_n(a, c, v, true, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);     \
  }                                                                                            \
  extern "C" CUDAPERF_TSAN_DEF T __tsan_atomic##bits##_compare_exchange_val(                   \
      volatile T* a, T c, T v, int, int) {                                                     \
    CUDAPERF_TSAN_CHECK(const_cast<T*>(a), sizeof(T), true, true);                             \
    __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);          \
    return c;                                                                                  \
  }
#define CUDAPERF_TSAN_RMW(bits, T, op, builtin)                                                \
  extern "C" CUDAPERF_TSAN_DEF T __tsan_atomic##bits##_##op(volatile T* a, T v, int) {         \
    CUDAPERF_TSAN_CHECK(const_cast<T*>(a), sizeof(T), true, true);                             \
    return builtin(a, v, __ATOMIC_SEQ_CST);                                                    \
  }

// Defined once: in the runtime object, or (header-only) weakly in every file that includes this.
#if defined(CUDAPERF_RUNTIME_OBJECT) || !defined(CUDAPERF_PREBUILT_RUNTIME)
#if defined(CUDAPERF_RUNTIME_OBJECT)
#define CUDAPERF_TSAN_DEF __attribute__((used, no_sanitize_thread))
#else
#define CUDAPERF_TSAN_DEF __attribute__((weak, used, no_sanitize_thread))
#endif
extern "C" CUDAPERF_TSAN_DEF void __tsan_init() {}
extern "C" CUDAPERF_TSAN_DEF void __tsan_func_entry(void*) {}
extern "C" CUDAPERF_TSAN_DEF void __tsan_func_exit() {}
extern "C" CUDAPERF_TSAN_DEF void __tsan_vptr_update(void**, void*) {}
extern "C" CUDAPERF_TSAN_DEF void __tsan_vptr_read(void**) {}
extern "C" CUDAPERF_TSAN_DEF void __tsan_atomic_thread_fence(int) {
  ::cudaperf::detail::g_race.fenced = true;
}
extern "C" CUDAPERF_TSAN_DEF void __tsan_atomic_signal_fence(int) {}
CUDAPERF_TSAN_ACCESS(__tsan_read1, 1, false)
CUDAPERF_TSAN_ACCESS(__tsan_read2, 2, false)
CUDAPERF_TSAN_ACCESS(__tsan_read4, 4, false)
CUDAPERF_TSAN_ACCESS(__tsan_read8, 8, false)
CUDAPERF_TSAN_ACCESS(__tsan_read16, 16, false)
CUDAPERF_TSAN_ACCESS(__tsan_write1, 1, true)
CUDAPERF_TSAN_ACCESS(__tsan_write2, 2, true)
CUDAPERF_TSAN_ACCESS(__tsan_write4, 4, true)
CUDAPERF_TSAN_ACCESS(__tsan_write8, 8, true)
CUDAPERF_TSAN_ACCESS(__tsan_write16, 16, true)
CUDAPERF_TSAN_ACCESS(__tsan_unaligned_read2, 2, false)
CUDAPERF_TSAN_ACCESS(__tsan_unaligned_read4, 4, false)
CUDAPERF_TSAN_ACCESS(__tsan_unaligned_read8, 8, false)
CUDAPERF_TSAN_ACCESS(__tsan_unaligned_read16, 16, false)
CUDAPERF_TSAN_ACCESS(__tsan_unaligned_write2, 2, true)
CUDAPERF_TSAN_ACCESS(__tsan_unaligned_write4, 4, true)
CUDAPERF_TSAN_ACCESS(__tsan_unaligned_write8, 8, true)
CUDAPERF_TSAN_ACCESS(__tsan_unaligned_write16, 16, true)
CUDAPERF_TSAN_ACCESS(__tsan_volatile_read1, 1, false)
CUDAPERF_TSAN_ACCESS(__tsan_volatile_read2, 2, false)
CUDAPERF_TSAN_ACCESS(__tsan_volatile_read4, 4, false)
CUDAPERF_TSAN_ACCESS(__tsan_volatile_read8, 8, false)
CUDAPERF_TSAN_ACCESS(__tsan_volatile_read16, 16, false)
CUDAPERF_TSAN_ACCESS(__tsan_volatile_write1, 1, true)
CUDAPERF_TSAN_ACCESS(__tsan_volatile_write2, 2, true)
CUDAPERF_TSAN_ACCESS(__tsan_volatile_write4, 4, true)
CUDAPERF_TSAN_ACCESS(__tsan_volatile_write8, 8, true)
CUDAPERF_TSAN_ACCESS(__tsan_volatile_write16, 16, true)
CUDAPERF_TSAN_RANGE(__tsan_read_range, false)
CUDAPERF_TSAN_RANGE(__tsan_write_range, true)
CUDAPERF_TSAN_ATOMICS(8, unsigned char)
CUDAPERF_TSAN_ATOMICS(16, unsigned short)
CUDAPERF_TSAN_ATOMICS(32, unsigned int)
CUDAPERF_TSAN_ATOMICS(64, unsigned long)
#endif
