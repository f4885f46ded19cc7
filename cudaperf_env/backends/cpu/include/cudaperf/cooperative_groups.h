// Cooperative groups: thread_block, tiled_partition, coalesced_threads, reduce/scan, memcpy_async.
#pragma once

namespace cooperative_groups {
namespace details {

using ::cudaperf::detail::kBarPlain;
using ::cudaperf::detail::kShflDown;
using ::cudaperf::detail::kShflIdx;
using ::cudaperf::detail::kShflUp;
using ::cudaperf::detail::kShflXor;

inline unsigned block_rank() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
inline unsigned block_size() { return blockDim.x * blockDim.y * blockDim.z; }
inline unsigned lane() { return block_rank() & 31u; }
inline unsigned lanemask_lt() { return (1u << lane()) - 1u; }
inline unsigned nth_set_bit(unsigned mask, unsigned n) {
  for (unsigned i = 0; i < n; ++i) mask &= mask - 1;
  return mask == 0 ? 0u : static_cast<unsigned>(__builtin_ctz(mask));
}
// The warp lanes of the size-n tile (n a power of two <= 32) that holds this thread.
inline unsigned tile_mask(unsigned n) {
  unsigned ones = n >= 32 ? 0xffffffffu : (1u << n) - 1u;
  return ones << (lane() & ~(n - 1u) & 31u);
}
inline void sync_warp(unsigned mask, int line, const char* what) {
  ::cudaperf::detail::warp_collective(mask, ::cudaperf::detail::kSyncWarp, 0, 0, 0, 32, line, what);
}

enum GroupKind { kBlock, kTile, kCoalesced };

}  // namespace details

// Any group; member functions dispatch on what the group is (CUDA's type-erased thread_group).
class thread_group {
 public:
  void sync(int line = __builtin_LINE()) const {
    if (kind_ == details::kBlock) {
      ::cudaperf::detail::block_barrier(line, "thread_block::sync", details::kBarPlain, 1);
    } else {
      details::sync_warp(mask_, line, "thread_group::sync");
    }
  }
  unsigned long long size() const { return size_; }
  unsigned long long num_threads() const { return size_; }
  unsigned long long thread_rank() const {
    switch (kind_) {
      case details::kBlock:
        return details::block_rank();
      case details::kTile:
        return details::block_rank() & (size_ - 1u);
      default:
        return static_cast<unsigned>(__builtin_popcount(mask_ & details::lanemask_lt()));
    }
  }
  bool is_valid() const { return size_ != 0; }

 protected:
  thread_group(details::GroupKind kind, unsigned size, unsigned mask)
      : kind_(kind), size_(size), mask_(mask) {}
  details::GroupKind kind_;
  unsigned size_;
  unsigned mask_;  // warp lanes of a tile or coalesced group
};

class thread_block : public thread_group {
 public:
  thread_block() : thread_group(details::kBlock, details::block_size(), 0) {}
  void sync(int line = __builtin_LINE()) const {
    ::cudaperf::detail::block_barrier(line, "thread_block::sync", details::kBarPlain, 1);
  }
  unsigned long long thread_rank() const { return details::block_rank(); }
  unsigned long long size() const { return details::block_size(); }
  unsigned long long num_threads() const { return details::block_size(); }
  dim3 group_index() const { return dim3(blockIdx); }
  dim3 thread_index() const { return dim3(threadIdx); }
  dim3 dim_threads() const { return blockDim; }
  dim3 group_dim() const { return blockDim; }
};

inline thread_block this_thread_block() { return thread_block(); }

template <unsigned N, class Parent = void>
class thread_block_tile;

// A tile of N consecutive threads inside one warp; its collectives are warp collectives
// restricted to the tile's lanes and width.
template <unsigned N>
class thread_block_tile<N, void> : public thread_group {
  static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0, "tile size must be a power of two <= 32");

 public:
  static constexpr unsigned numThreads = N;

  thread_block_tile(unsigned meta_rank, unsigned meta_size)
      : thread_group(details::kTile, N, details::tile_mask(N)),
        meta_rank_(meta_rank),
        meta_size_(meta_size) {}

  void sync(int line = __builtin_LINE()) const {
    details::sync_warp(mask_, line, "thread_block_tile::sync");
  }
  unsigned thread_rank() const { return details::block_rank() & (N - 1u); }
  unsigned size() const { return N; }
  unsigned num_threads() const { return N; }
  unsigned meta_group_rank() const { return meta_rank_; }
  unsigned meta_group_size() const { return meta_size_; }

  template <class T>
  T shfl(T v, int src, int line = __builtin_LINE()) const {
    return ::cudaperf::detail::shfl(mask_, v, details::kShflIdx, src, N, line, "tile.shfl");
  }
  template <class T>
  T shfl_down(T v, unsigned delta, int line = __builtin_LINE()) const {
    return ::cudaperf::detail::shfl(mask_, v, details::kShflDown, static_cast<int>(delta), N, line,
                                    "tile.shfl_down");
  }
  template <class T>
  T shfl_up(T v, unsigned delta, int line = __builtin_LINE()) const {
    return ::cudaperf::detail::shfl(mask_, v, details::kShflUp, static_cast<int>(delta), N, line,
                                    "tile.shfl_up");
  }
  template <class T>
  T shfl_xor(T v, unsigned lane_mask, int line = __builtin_LINE()) const {
    return ::cudaperf::detail::shfl(mask_, v, details::kShflXor, static_cast<int>(lane_mask), N,
                                    line, "tile.shfl_xor");
  }
  unsigned ballot(int pred, int line = __builtin_LINE()) const {
    return to_tile(
        ::cudaperf::detail::vote(mask_, pred, ::cudaperf::detail::kBallot, line, "tile.ballot"));
  }
  int any(int pred, int line = __builtin_LINE()) const {
    return static_cast<int>(
        ::cudaperf::detail::vote(mask_, pred, ::cudaperf::detail::kAny, line, "tile.any"));
  }
  int all(int pred, int line = __builtin_LINE()) const {
    return static_cast<int>(
        ::cudaperf::detail::vote(mask_, pred, ::cudaperf::detail::kAll, line, "tile.all"));
  }
  template <class T>
  unsigned match_any(T v, int line = __builtin_LINE()) const {
    return to_tile(__match_any_sync(mask_, v, line));
  }
  template <class T>
  unsigned match_all(T v, int& pred, int line = __builtin_LINE()) const {
    return to_tile(__match_all_sync(mask_, v, &pred, line));
  }

 private:
  // Warp-lane bits -> tile-rank bits.
  unsigned to_tile(unsigned warp_bits) const {
    return N == 32 ? warp_bits : (warp_bits >> (details::lane() & ~(N - 1u))) & ((1u << N) - 1u);
  }
  unsigned meta_rank_;
  unsigned meta_size_;
};

template <unsigned N, class Parent>
class thread_block_tile : public thread_block_tile<N, void> {
 public:
  using thread_block_tile<N, void>::thread_block_tile;
};

template <unsigned N>
thread_block_tile<N, thread_block> tiled_partition(const thread_block&) {
  return thread_block_tile<N, thread_block>(details::block_rank() / N,
                                            (details::block_size() + N - 1) / N);
}

template <unsigned N, unsigned M, class P>
thread_block_tile<N, thread_block_tile<M, P>> tiled_partition(const thread_block_tile<M, P>& g) {
  static_assert(N <= M, "a tile can only be split into smaller tiles");
  return thread_block_tile<N, thread_block_tile<M, P>>(g.thread_rank() / N, M / N);
}

// Threads of a warp that are together at this point (see __activemask).
class coalesced_group : public thread_group {
 public:
  explicit coalesced_group(unsigned mask)
      : thread_group(details::kCoalesced, static_cast<unsigned>(__builtin_popcount(mask)), mask) {}
  void sync(int line = __builtin_LINE()) const {
    details::sync_warp(mask_, line, "coalesced_group::sync");
  }
  unsigned thread_rank() const {
    return static_cast<unsigned>(__builtin_popcount(mask_ & details::lanemask_lt()));
  }
  unsigned size() const { return size_; }
  unsigned num_threads() const { return size_; }
  unsigned meta_group_rank() const { return 0; }
  unsigned meta_group_size() const { return 1; }

  template <class T>
  T shfl(T v, unsigned rank, int line = __builtin_LINE()) const {
    return from_lane(v, details::nth_set_bit(mask_, rank % size_), line, "coalesced.shfl");
  }
  template <class T>
  T shfl_down(T v, unsigned delta, int line = __builtin_LINE()) const {
    unsigned r = thread_rank() + delta;
    return from_lane(v, r < size_ ? details::nth_set_bit(mask_, r) : details::lane(), line,
                     "coalesced.shfl_down");
  }
  template <class T>
  T shfl_up(T v, unsigned delta, int line = __builtin_LINE()) const {
    unsigned r = thread_rank();
    return from_lane(v, r >= delta ? details::nth_set_bit(mask_, r - delta) : details::lane(), line,
                     "coalesced.shfl_up");
  }
  unsigned ballot(int pred, int line = __builtin_LINE()) const {
    unsigned raw = ::cudaperf::detail::vote(mask_, pred, ::cudaperf::detail::kBallot, line,
                                            "coalesced.ballot");
    unsigned out = 0;
    for (unsigned r = 0; r < size_; ++r) out |= (raw >> details::nth_set_bit(mask_, r) & 1u) << r;
    return out;
  }
  int any(int pred, int line = __builtin_LINE()) const {
    return static_cast<int>(
        ::cudaperf::detail::vote(mask_, pred, ::cudaperf::detail::kAny, line, "coalesced.any"));
  }
  int all(int pred, int line = __builtin_LINE()) const {
    return static_cast<int>(
        ::cudaperf::detail::vote(mask_, pred, ::cudaperf::detail::kAll, line, "coalesced.all"));
  }

 private:
  template <class T>
  T from_lane(T v, unsigned src_lane, int line, const char* what) const {
    return ::cudaperf::detail::shfl(mask_, v, details::kShflIdx, static_cast<int>(src_lane), 32,
                                    line, what);
  }
};

inline coalesced_group coalesced_threads(int line = __builtin_LINE()) {
  return coalesced_group(__activemask(line));
}

// Dynamic partition of a block or tile into tiles of n threads (n a power of two <= 32).
class dynamic_tile : public thread_group {
 public:
  explicit dynamic_tile(unsigned n) : thread_group(details::kTile, n, details::tile_mask(n)) {}
};

inline thread_group tiled_partition(const thread_group& parent, unsigned n) {
  (void)parent;
  if (n == 0 || n > 32 || (n & (n - 1)) != 0) {
    ::cudaperf::detail::Line m;
    m.str("tiled_partition(group, ").unum(n);
    m.str("): only powers of two up to 32 are supported; use tiled_partition<N>(group)");
    ::cudaperf::detail::fatal_exit_flush("abort", ::cudaperf::detail::kExitAbort, m);
  }
  return dynamic_tile(n);
}

template <class Group>
inline void sync(const Group& g, int line = __builtin_LINE()) {
  g.sync(line);
}
template <class Group>
inline unsigned long long thread_rank(const Group& g) {
  return g.thread_rank();
}
template <class Group>
inline unsigned long long num_threads(const Group& g) {
  return g.num_threads();
}

// Reduction and scan operators (cg::less / cg::greater reduce to the minimum / maximum).
template <class T>
struct plus {
  T operator()(T a, T b) const { return a + b; }
};
template <class T>
struct less {
  T operator()(T a, T b) const { return b < a ? b : a; }
};
template <class T>
struct greater {
  T operator()(T a, T b) const { return a < b ? b : a; }
};
template <class T>
struct bit_and {
  T operator()(T a, T b) const { return a & b; }
};
template <class T>
struct bit_or {
  T operator()(T a, T b) const { return a | b; }
};
template <class T>
struct bit_xor {
  T operator()(T a, T b) const { return a ^ b; }
};

// Every thread of the tile gets the reduction of all the tile's values (butterfly).
template <unsigned N, class P, class T, class Op>
inline T reduce(const thread_block_tile<N, P>& g, T val, Op op, int line = __builtin_LINE()) {
  for (unsigned offset = N / 2; offset > 0; offset /= 2)
    val = op(val, g.shfl_xor(val, offset, line));
  return val;
}

template <class T, class Op>
inline T reduce(const coalesced_group& g, T val, Op op, int line = __builtin_LINE()) {
  unsigned n = g.size(), r = g.thread_rank();
  for (unsigned offset = 1; offset < n; offset *= 2) {
    T other = g.shfl_down(val, offset, line);
    if (r + offset < n) val = op(val, other);
  }
  return g.shfl(val, 0u, line);
}

template <class Group, class T, class Op = plus<T>>
inline T inclusive_scan(const Group& g, T val, Op op = Op(), int line = __builtin_LINE()) {
  unsigned n = static_cast<unsigned>(g.size()), r = static_cast<unsigned>(g.thread_rank());
  for (unsigned d = 1; d < n; d *= 2) {
    T t = g.shfl_up(val, d, line);
    if (r >= d) val = op(t, val);
  }
  return val;
}

template <class Group, class T, class Op = plus<T>>
inline T exclusive_scan(const Group& g, T val, Op op = Op(), int line = __builtin_LINE()) {
  T inclusive = inclusive_scan(g, val, op, line);
  T shifted = g.shfl_up(inclusive, 1u, line);
  return g.thread_rank() == 0 ? T() : shifted;
}

// Collective copies run synchronously: each thread copies its share at once; wait() is the
// barrier that makes all shares visible.
template <class Group>
inline void memcpy_async(const Group& g, void* dst, const void* src, size_t bytes) {
  size_t n = static_cast<size_t>(g.size()), r = static_cast<size_t>(g.thread_rank());
  size_t chunk = (bytes + n - 1) / n, begin = std::min(bytes, r * chunk);
  std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin,
              std::min(bytes, begin + chunk) - begin);
}
template <class Group>
inline void wait(const Group& g, int line = __builtin_LINE()) {
  g.sync(line);
}
template <unsigned Count, class Group>
inline void wait_prior(const Group& g, int line = __builtin_LINE()) {
  g.sync(line);
}

}  // namespace cooperative_groups
