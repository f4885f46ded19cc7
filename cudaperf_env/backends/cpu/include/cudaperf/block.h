// The block engine: a block's threads as fibers (barriers, warp collectives, deadlocks) or a loop.
#pragma once

// CUDA's built-in variables. One copy per OS thread: blocks never migrate between threads.
CUDAPERF_TLS uint3 threadIdx;
CUDAPERF_TLS uint3 blockIdx;
CUDAPERF_TLS dim3 blockDim;
CUDAPERF_TLS dim3 gridDim;
constexpr int warpSize = 32;

namespace cudaperf {
namespace detail {

enum FiberState : uint8_t { kReady, kRunning, kAtBarrier, kAtWarp, kAtActiveMask, kExited };

// Kinds of warp collective; lanes meet only with lanes of the same kind and mask.
// kReduce + ReduceOp for the __reduce_*_sync family.
enum WarpKind : uint32_t { kSyncWarp, kShfl, kVote, kMatchAny, kMatchAll, kReduce };
enum ShflMode : uint8_t { kShflIdx, kShflUp, kShflDown, kShflXor };
enum VoteMode : uint8_t { kBallot, kAny, kAll, kUni };
enum ReduceOp : uint8_t {
  kRedAdd,
  kRedMinS,
  kRedMaxS,
  kRedMinU,
  kRedMaxU,
  kRedAnd,
  kRedOr,
  kRedXor
};

struct alignas(64) Fiber {  // one cache line on x86-64
  Ctx ctx;
  uint3 tid;
  uint8_t state;
  uint8_t mode;   // ShflMode / VoteMode / ReduceOp of the pending collective
  uint8_t width;  // shuffle width
  int param;      // shuffle lane or offset
  int line;       // where the fiber waits (deadlock reports)
  const char* what;
  uint64_t in;   // this lane's contribution
  uint64_t out;  // this lane's result, written by the lane that completes the collective
  int pred;      // __match_all_sync's predicate
};

// A collective that some lanes of a warp have reached; the last lane to arrive completes it.
struct Pending {
  uint32_t mask;
  uint32_t arrived;
  uint32_t kind;
};

struct WarpState {
  uint32_t existing;  // lanes that exist in this block (the last warp may be partial)
  uint32_t exited;
  uint32_t npending;
  Pending pending[32];
};

// One per OS thread that runs blocks. Plain fields only where signal handlers read them.
struct Worker {
  pthread_t thread;
  // Schedule perturbation: threads start in the order (k * thread_stride + thread_offset) % n.
  unsigned thread_stride = 1;
  unsigned thread_offset = 0;
  // Where this thread is, for fatal reports.
  const char* volatile kernel = nullptr;  // non-null while running a kernel
  int launch_line = 0;
  uint3 block_idx{};
  uint3 plain_tid{};
  bool fiber_mode = false;
  char* os_stack_lo = nullptr;
  StackPool stacks;
  DynamicSharedArea dynamic_shared;
  // The running launch.
  void (*body)(void*) = nullptr;
  void* body_ctx = nullptr;
  dim3 bdim;
  unsigned nthreads = 0;
  // The running block (fiber mode).
  Fiber* fibers = nullptr;  // kMaxThreadsPerBlock of them
  WarpState warps[kMaxThreadsPerBlock / 32];
  unsigned queue[kMaxThreadsPerBlock];  // ring of runnable fibers
  unsigned qhead = 0;
  unsigned qcount = 0;
  unsigned cur = 0;  // linear index of the running CUDA thread
  unsigned exited = 0;
  int bar_line = -1;  // line of the __syncthreads being gathered, -1 when none
  int bar_op = 0;
  unsigned bar_arrived = 0;
  unsigned bar_true = 0;
  int bar_result = 0;
  unsigned activemask_waiters = 0;
  unsigned warp_streak = 0;    // warp collectives completed, for fair queueing
  unsigned contexts_made = 0;  // fibers [0, contexts_made) have a context (parked or fresh)
  unsigned contexts_epoch = ~0u;
  // Race detector (racecheck.h): completed __syncthreads of the block, warp collectives per warp.
  unsigned race_epoch = 0;
  unsigned race_warp_epoch[kMaxThreadsPerBlock / 32] = {};
  Ctx sched;  // the worker's own stack, where the block scheduler runs
};

CUDAPERF_TLS Worker* tls_worker = nullptr;
CUDAPERF_TLS char* tls_dynamic_shared = nullptr;  // the running block's dynamic shared memory

inline void push_ready(Worker& w, unsigned i) {
  w.fibers[i].state = kReady;
  w.queue[(w.qhead + w.qcount++) % kMaxThreadsPerBlock] = i;
}

inline void push_ready_front(Worker& w, unsigned i) {
  w.fibers[i].state = kReady;
  w.qhead = (w.qhead + kMaxThreadsPerBlock - 1) % kMaxThreadsPerBlock;
  w.queue[w.qhead] = i;
  ++w.qcount;
}

inline unsigned pop_ready(Worker& w) {
  unsigned i = w.queue[w.qhead];
  w.qhead = (w.qhead + 1) % kMaxThreadsPerBlock;
  --w.qcount;
  return i;
}

inline void enter(Worker& w, unsigned i, Ctx* save) {
  Fiber& f = w.fibers[i];
  w.cur = i;
  f.state = kRunning;
  ::threadIdx = f.tid;
  ctx_switch(save, &f.ctx);
}

// The current fiber (already marked waiting) gives the OS thread to the next runnable fiber,
// or back to the scheduler when none is runnable. Returns when someone makes it runnable.
inline void suspend(Worker& w, Fiber& f) {
  if (w.qcount != 0) {
    enter(w, pop_ready(w), &f.ctx);
  } else {
    ctx_switch(&f.ctx, &w.sched);
  }
}

#if !CUDAPERF_DEFINE_LINKED
[[noreturn]] CUDAPERF_COLD CUDAPERF_LINKED void not_in_fiber_mode(const char* what, int line);
#else
[[noreturn]] CUDAPERF_COLD CUDAPERF_LINKED void not_in_fiber_mode(const char* what, int line) {
  Worker* w = tls_worker;
  Line m;
  if (w == nullptr || w->kernel == nullptr) {
    m.str(what).str(" (line ").num(line).str(") called in host code");
  } else {
    m.str("kernel ").str(w->kernel).str(" (launched at line ").num(w->launch_line);
    m.str(") reached ").str(what).str(" (line ").num(line);
    m.str(
        ") but was launched without fibers; the pre-pass must launch kernels that use "
        "barriers or warp collectives with FIBERS=true");
  }
  fatal_exit_flush("abort", kExitAbort, m);
}
#endif

// ---- __syncthreads -------------------------------------------------------------------------

enum BarrierOp { kBarPlain, kBarCount, kBarAnd, kBarOr };

inline int barrier_result(int op, unsigned arrived, unsigned true_count) {
  switch (op) {
    case kBarCount:
      return static_cast<int>(true_count);
    case kBarAnd:
      return true_count == arrived ? 1 : 0;
    case kBarOr:
      return true_count != 0 ? 1 : 0;
    default:
      return 0;
  }
}

inline void release_barrier(Worker& w) {
  ++w.race_epoch;
  w.bar_result = barrier_result(w.bar_op, w.bar_arrived, w.bar_true);
  w.bar_line = -1;
  for (unsigned i = 0; i < w.nthreads; ++i) {
    if (w.fibers[i].state == kAtBarrier) push_ready(w, i);
  }
}

// All non-exited threads of the block must wait at the same __syncthreads (same source line);
// exited threads count as arrived. Threads waiting at a different line can never be released,
// which the scheduler reports as a deadlock once nothing can run.
inline int block_barrier(int line, const char* what, int op, int pred) {
  Worker* wp = tls_worker;
  if (wp == nullptr || !wp->fiber_mode) {
    if (wp != nullptr && wp->kernel != nullptr && wp->nthreads == 1) {
      return barrier_result(op, 1, pred != 0 ? 1 : 0);
    }
    not_in_fiber_mode(what, line);
  }
  Worker& w = *wp;
  Fiber& f = w.fibers[w.cur];
  if (w.bar_line < 0) {
    w.bar_line = line;
    w.bar_op = op;
    w.bar_arrived = 0;
    w.bar_true = 0;
  }
  if (w.bar_line == line) {
    ++w.bar_arrived;
    w.bar_true += pred != 0 ? 1 : 0;
    if (w.bar_arrived + w.exited == w.nthreads) {
      release_barrier(w);
      return w.bar_result;
    }
  }
  f.state = kAtBarrier;
  f.line = line;
  f.what = what;
  suspend(w, f);
  return w.bar_result;
}

// ---- warp collectives ----------------------------------------------------------------------

// Source lane of a shuffle, exactly as PTX shfl.sync computes it from CUDA's operands.
inline unsigned shfl_source(unsigned lane, int mode, int param, unsigned width) {
  unsigned segmask = (32u - width) & 31u;
  unsigned clamp = mode == kShflUp ? 0u : 31u;
  unsigned max_lane = (lane & segmask) | (clamp & ~segmask);
  unsigned min_lane = lane & segmask;
  unsigned b = static_cast<unsigned>(param) & 31u;
  int j = 0;
  bool ok = false;
  switch (mode) {
    case kShflUp:
      j = static_cast<int>(lane) - static_cast<int>(b);
      ok = j >= static_cast<int>(max_lane);
      break;
    case kShflDown:
      j = static_cast<int>(lane + b);
      ok = j <= static_cast<int>(max_lane);
      break;
    case kShflXor:
      j = static_cast<int>(lane ^ b);
      ok = j <= static_cast<int>(max_lane);
      break;
    default:
      j = static_cast<int>(min_lane | (b & ~segmask));
      ok = j <= static_cast<int>(max_lane);
      break;
  }
  return ok ? static_cast<unsigned>(j) : lane;
}

inline uint64_t reduce_values(int op, uint64_t a, uint64_t b) {
  uint32_t x = static_cast<uint32_t>(a), y = static_cast<uint32_t>(b);
  int32_t sx = static_cast<int32_t>(x), sy = static_cast<int32_t>(y);
  switch (op) {
    case kRedAdd:
      return x + y;
    case kRedMinS:
      return static_cast<uint32_t>(sx < sy ? sx : sy);
    case kRedMaxS:
      return static_cast<uint32_t>(sx > sy ? sx : sy);
    case kRedMinU:
      return x < y ? x : y;
    case kRedMaxU:
      return x > y ? x : y;
    case kRedAnd:
      return x & y;
    case kRedOr:
      return x | y;
    default:
      return x ^ y;
  }
}

// Computes every participating lane's result. `lanes` points at the warp's first fiber.
#if !CUDAPERF_DEFINE_LINKED
CUDAPERF_LINKED void compute_collective(Fiber* lanes, uint32_t kind, uint32_t arrived);
#else
CUDAPERF_LINKED void compute_collective(Fiber* lanes, uint32_t kind, uint32_t arrived) {
  switch (kind) {
    case kShfl:
      for (unsigned l = 0; l < 32; ++l) {
        if ((arrived >> l & 1u) == 0) continue;
        Fiber& g = lanes[l];
        unsigned j = shfl_source(l, g.mode, g.param, g.width);
        g.out = (arrived >> j & 1u) != 0 ? lanes[j].in : g.in;
      }
      break;
    case kVote: {
      uint32_t ballot = 0;
      for (unsigned l = 0; l < 32; ++l) {
        if ((arrived >> l & 1u) != 0 && lanes[l].in != 0) ballot |= 1u << l;
      }
      for (unsigned l = 0; l < 32; ++l) {
        if ((arrived >> l & 1u) == 0) continue;
        switch (lanes[l].mode) {
          case kBallot:
            lanes[l].out = ballot;
            break;
          case kAny:
            lanes[l].out = ballot != 0;
            break;
          case kAll:
            lanes[l].out = ballot == arrived;
            break;
          default:
            lanes[l].out = ballot == 0 || ballot == arrived;
            break;
        }
      }
      break;
    }
    case kMatchAny:
      for (unsigned l = 0; l < 32; ++l) {
        if ((arrived >> l & 1u) == 0) continue;
        uint32_t same = 0;
        for (unsigned k = 0; k < 32; ++k) {
          if ((arrived >> k & 1u) != 0 && lanes[k].in == lanes[l].in) same |= 1u << k;
        }
        lanes[l].out = same;
      }
      break;
    case kMatchAll: {
      bool all_same = true;
      uint64_t first = lanes[__builtin_ctz(arrived)].in;
      for (unsigned l = 0; l < 32; ++l) {
        if ((arrived >> l & 1u) != 0 && lanes[l].in != first) all_same = false;
      }
      for (unsigned l = 0; l < 32; ++l) {
        if ((arrived >> l & 1u) == 0) continue;
        lanes[l].out = all_same ? arrived : 0;
        lanes[l].pred = all_same ? 1 : 0;
      }
      break;
    }
    case kSyncWarp:
      break;
    default: {  // kReduce + op
      unsigned first = static_cast<unsigned>(__builtin_ctz(arrived));
      uint64_t acc = lanes[first].in;
      for (unsigned l = first + 1; l < 32; ++l) {
        if ((arrived >> l & 1u) != 0)
          acc = reduce_values(static_cast<int>(kind - kReduce), acc, lanes[l].in);
      }
      for (unsigned l = 0; l < 32; ++l) {
        if ((arrived >> l & 1u) != 0) lanes[l].out = acc;
      }
      break;
    }
  }
}
#endif

// Completes pending collective `k` of warp `warp`: results for all lanes, then the waiting
// lanes become runnable (the completing lane, if any, keeps running).
inline void complete_pending(Worker& w, unsigned warp, unsigned k, int running_lane) {
  WarpState& ws = w.warps[warp];
  ++w.race_warp_epoch[warp];
  Pending done = ws.pending[k];
  ws.pending[k] = ws.pending[--ws.npending];
  Fiber* lanes = &w.fibers[warp * 32];
  compute_collective(lanes, done.kind, done.arrived);
  // The warp's lanes normally run next (front of the queue, lane order): its 32 stacks stay
  // in the L1 cache. Every 16th completion queues them at the back, so a warp that spins on
  // collectives cannot starve the others.
  bool front = ++w.warp_streak % 16 != 0;
  for (unsigned k2 = 32; k2-- > 0;) {
    unsigned l = front ? k2 : 31 - k2;
    if ((done.arrived >> l & 1u) != 0 && static_cast<int>(l) != running_lane) {
      if (front) {
        push_ready_front(w, warp * 32 + l);
      } else {
        push_ready(w, warp * 32 + l);
      }
    }
  }
}

inline uint64_t collective_single_lane(uint32_t kind, int mode, uint64_t in, int* pred) {
  switch (kind) {
    case kVote:
      if (mode == kBallot) return in != 0 ? (1u << (tls_worker->cur & 31)) : 0u;
      return mode == kUni ? 1u : (in != 0 ? 1u : 0u);
    case kMatchAny:
    case kMatchAll:
      if (pred != nullptr) *pred = 1;
      return 1u << (tls_worker->cur & 31);
    default:
      return in;  // shuffles read their own value, reductions of one value are that value
  }
}

inline uint32_t existing_lanes(unsigned nthreads, unsigned warp) {
  unsigned lanes = nthreads - warp * 32;
  return lanes >= 32 ? 0xffffffffu : (1u << lanes) - 1u;
}

// The lanes of `mask` meet; lanes that do not exist in the block are ignored, lanes that have
// exited never arrive (a deadlock), except for __syncwarp where they count as arrived.
inline uint64_t warp_collective(uint32_t mask, uint32_t kind, uint64_t in, int mode, int param,
                                int width, int line, const char* what, int* pred = nullptr) {
  Worker* wp = tls_worker;
  if (wp == nullptr || !wp->fiber_mode) {
    if (wp != nullptr && wp->kernel != nullptr) {
      uint32_t bit = 1u << (wp->cur & 31);
      if ((mask & existing_lanes(wp->nthreads, wp->cur >> 5) & ~bit) == 0) {
        return collective_single_lane(kind, mode, in, pred);
      }
    }
    not_in_fiber_mode(what, line);
  }
  Worker& w = *wp;
  unsigned me = w.cur;
  unsigned warp = me >> 5;
  uint32_t bit = 1u << (me & 31);
  Fiber& f = w.fibers[me];
  WarpState& ws = w.warps[warp];
  uint32_t eff = (mask & ws.existing) | bit;
  f.in = in;
  f.mode = static_cast<uint8_t>(mode);
  f.param = param;
  f.width = static_cast<uint8_t>(width);
  f.line = line;
  f.what = what;
  unsigned k = 0;
  while (k < ws.npending && (ws.pending[k].mask != eff || ws.pending[k].kind != kind)) ++k;
  if (k == ws.npending) ws.pending[ws.npending++] = Pending{eff, 0, kind};
  Pending& p = ws.pending[k];
  p.arrived |= bit;
  uint32_t need = kind == kSyncWarp ? (eff & ~ws.exited) : eff;
  if (p.arrived == need) {
    complete_pending(w, warp, k, static_cast<int>(me & 31));
  } else {
    f.state = kAtWarp;
    suspend(w, f);
  }
  if (pred != nullptr) *pred = f.pred;
  return f.out;
}

// __activemask(): the lanes of the warp that are at this same call when the block has nothing
// else to run (threads run until they block, so that is when divergent lanes have split up).
inline unsigned active_mask(int line) {
  Worker* wp = tls_worker;
  if (wp == nullptr || !wp->fiber_mode) {
    if (wp != nullptr && wp->kernel != nullptr &&
        (existing_lanes(wp->nthreads, wp->cur >> 5) & ~(1u << (wp->cur & 31))) == 0) {
      return 1u << (wp->cur & 31);
    }
    not_in_fiber_mode("__activemask", line);
  }
  Worker& w = *wp;
  Fiber& f = w.fibers[w.cur];
  f.state = kAtActiveMask;
  f.line = line;
  f.what = "__activemask";
  ++w.activemask_waiters;
  suspend(w, f);
  return static_cast<unsigned>(f.out);
}

#if !CUDAPERF_DEFINE_LINKED
CUDAPERF_COLD CUDAPERF_LINKED bool resolve_activemask(Worker& w);
#else
CUDAPERF_COLD CUDAPERF_LINKED bool resolve_activemask(Worker& w) {
  if (w.activemask_waiters == 0) return false;
  for (unsigned base = 0; base < w.nthreads; base += 32) {
    unsigned end = base + 32 < w.nthreads ? base + 32 : w.nthreads;
    for (unsigned i = base; i < end; ++i) {
      if (w.fibers[i].state != kAtActiveMask) continue;
      uint32_t m = 0;
      for (unsigned k = i; k < end; ++k) {
        if (w.fibers[k].state == kAtActiveMask && w.fibers[k].line == w.fibers[i].line) {
          m |= 1u << (k - base);
        }
      }
      for (unsigned k = i; k < end; ++k) {
        if ((m >> (k - base) & 1u) != 0) {
          w.fibers[k].out = m;
          push_ready(w, k);
        }
      }
    }
  }
  w.activemask_waiters = 0;
  return true;
}
#endif

// Lets another fiber run (spin loops on atomicCAS and __nanosleep make progress).
inline void yield_fiber() {
  Worker* wp = tls_worker;
  if (wp == nullptr || !wp->fiber_mode || wp->qcount == 0) return;
  Worker& w = *wp;
  unsigned me = w.cur;
  push_ready(w, me);
  enter(w, pop_ready(w), &w.fibers[me].ctx);
}

// ---- running a block -----------------------------------------------------------------------

// Marks the running thread exited and gives the OS thread away. The fiber parks here; a later
// block resumes it to run that block's thread (contexts are built once, not per block).
inline void thread_exit(Worker& w) {
  unsigned me = w.cur;
  Fiber& f = w.fibers[me];
  f.state = kExited;
  ++w.exited;
  unsigned warp = me >> 5;
  WarpState& ws = w.warps[warp];
  ws.exited |= 1u << (me & 31);
  if (w.bar_line >= 0 && w.bar_arrived + w.exited == w.nthreads) release_barrier(w);
  for (unsigned k = 0; k < ws.npending;) {
    const Pending& p = ws.pending[k];
    if (p.kind == kSyncWarp && p.arrived == (p.mask & ~ws.exited)) {
      complete_pending(w, warp, k, -1);
    } else {
      ++k;
    }
  }
  if (w.qcount != 0) {
    enter(w, pop_ready(w), &f.ctx);
  } else {
    ctx_switch(&f.ctx, &w.sched);
  }
}

#if CUDAPERF_DEFINE_LINKED  // declared in fiber.h
[[noreturn]] CUDAPERF_LINKED void fiber_entry() {
  for (;;) {
    Worker& w = *tls_worker;
    w.body(w.body_ctx);
    thread_exit(w);
  }
}
#endif

#if !CUDAPERF_DEFINE_LINKED
[[noreturn]] CUDAPERF_COLD CUDAPERF_LINKED void report_deadlock(Worker& w);
#else
[[noreturn]] CUDAPERF_COLD CUDAPERF_LINKED void report_deadlock(Worker& w) {
  struct Site {
    const char* what;
    int line;
    unsigned count;
  };
  Site sites[12];
  unsigned nsites = 0, elsewhere = 0;
  for (unsigned i = 0; i < w.nthreads; ++i) {
    const Fiber& f = w.fibers[i];
    if (f.state == kExited) continue;
    unsigned s = 0;
    while (s < nsites && (sites[s].line != f.line || std::strcmp(sites[s].what, f.what) != 0)) ++s;
    if (s < nsites) {
      ++sites[s].count;
    } else if (nsites < 12) {
      sites[nsites++] = Site{f.what, f.line, 1};
    } else {
      ++elsewhere;
    }
  }
  Line m;
  m.str("kernel ").str(w.kernel).str(" (launched at line ").num(w.launch_line).str("), block ");
  m.triple(w.block_idx.x, w.block_idx.y, w.block_idx.z).str(": ");
  for (unsigned s = 0; s < nsites; ++s) {
    if (s != 0) m.str(", ");
    m.unum(sites[s].count).str(sites[s].count == 1 ? " thread at " : " threads at ");
    m.str(sites[s].what).str(" (line ").num(sites[s].line).str(")");
  }
  if (elsewhere != 0) m.str(", ").unum(elsewhere).str(" threads elsewhere");
  if (w.exited != 0)
    m.str(", ").unum(w.exited).str(w.exited == 1 ? " thread exited" : " threads exited");
  m.str(
      "; no thread can proceed (a barrier or warp collective that not all the threads it "
      "waits for reach)");
  fatal_exit_flush("deadlock", kExitDeadlock, m);
}
#endif

#if !CUDAPERF_DEFINE_LINKED
CUDAPERF_LINKED void run_block_fibers(Worker& w);
#else
CUDAPERF_LINKED void run_block_fibers(Worker& w) {
  unsigned n = w.nthreads;
  w.exited = 0;
  w.bar_line = -1;
  w.activemask_waiters = 0;
  w.qhead = 0;
  w.qcount = 0;
  for (WarpState& ws : w.warps) {
    ws.exited = 0;
    ws.npending = 0;
  }
  if (w.contexts_epoch != w.stacks.epoch()) {
    w.contexts_made = 0;
    w.contexts_epoch = w.stacks.epoch();
  }
  for (; w.contexts_made < n; ++w.contexts_made) {
    ctx_make(&w.fibers[w.contexts_made].ctx, w.stacks.lo(w.contexts_made),
             w.stacks.top(w.contexts_made));
  }
  for (unsigned k = 0; k < n; ++k) {
    push_ready(w, static_cast<unsigned>((static_cast<unsigned long long>(k) * w.thread_stride +
                                         w.thread_offset) % n));
  }
  enter(w, pop_ready(w), &w.sched);
  for (;;) {
    if (w.exited == n) return;
    if (!resolve_activemask(w)) report_deadlock(w);
    enter(w, pop_ready(w), &w.sched);
  }
}
#endif

inline void run_block_plain(Worker& w) {
  if (w.thread_stride != 1 || w.thread_offset != 0) {  // a perturbed schedule
    const unsigned n = w.nthreads, bx = w.bdim.x, bxy = w.bdim.x * w.bdim.y;
    for (unsigned k = 0; k < n; ++k) {
      unsigned i = static_cast<unsigned>(
          (static_cast<unsigned long long>(k) * w.thread_stride + w.thread_offset) % n);
      uint3 t{i % bx, i / bx % w.bdim.y, i / bxy};
      ::threadIdx = t;
      w.plain_tid = t;
      w.cur = i;
      w.body(w.body_ctx);
    }
    return;
  }
  unsigned i = 0;
  for (unsigned z = 0; z < w.bdim.z; ++z) {
    for (unsigned y = 0; y < w.bdim.y; ++y) {
      for (unsigned x = 0; x < w.bdim.x; ++x) {
        uint3 t{x, y, z};
        ::threadIdx = t;
        w.plain_tid = t;
        w.cur = i++;
        w.body(w.body_ctx);
      }
    }
  }
}

}  // namespace detail
}  // namespace cudaperf
