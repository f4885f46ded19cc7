// Barrier and warp intrinsics: __syncthreads*, __shfl*_sync, votes, __match*, __reduce*, ...
#pragma once

// Macros so that deadlock reports name the user's line (the pre-pass keeps #line).
#define __syncthreads()                                               \
  ((void)::cudaperf::detail::block_barrier(__LINE__, "__syncthreads", \
                                           ::cudaperf::detail::kBarPlain, 1))
#define __syncthreads_count(pred)                                    \
  ::cudaperf::detail::block_barrier(__LINE__, "__syncthreads_count", \
                                    ::cudaperf::detail::kBarCount, !!(pred))
#define __syncthreads_and(pred)                                                                 \
  ::cudaperf::detail::block_barrier(__LINE__, "__syncthreads_and", ::cudaperf::detail::kBarAnd, \
                                    !!(pred))
#define __syncthreads_or(pred)                                                                \
  ::cudaperf::detail::block_barrier(__LINE__, "__syncthreads_or", ::cudaperf::detail::kBarOr, \
                                    !!(pred))

namespace cudaperf {
namespace detail {

template <class T>
inline uint64_t to_bits(T v) {
  static_assert(std::is_trivially_copyable<T>::value && sizeof(T) <= 8,
                "warp shuffles and matches take values of at most 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  return bits;
}

template <class T>
inline T from_bits(uint64_t bits) {
  T v;
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}

template <class T>
inline T shfl(unsigned mask, T var, int mode, int param, int width, int line, const char* what) {
  return from_bits<T>(warp_collective(mask, kShfl, to_bits(var), mode, param, width, line, what));
}

inline unsigned vote(unsigned mask, int pred, int mode, int line, const char* what) {
  return static_cast<unsigned>(
      warp_collective(mask, kVote, pred != 0 ? 1 : 0, mode, 0, 32, line, what));
}

inline unsigned warp_reduce(unsigned mask, unsigned v, int op, int line, const char* what) {
  return static_cast<unsigned>(
      warp_collective(mask, kReduce + static_cast<uint32_t>(op), v, op, 0, 32, line, what));
}

}  // namespace detail
}  // namespace cudaperf

// The trailing `line` parameters default to the caller's line (__builtin_LINE honours #line).

inline void __syncwarp(unsigned mask = 0xffffffffu, int line = __builtin_LINE()) {
  ::cudaperf::detail::warp_collective(mask, ::cudaperf::detail::kSyncWarp, 0, 0, 0, 32, line,
                                      "__syncwarp");
}

inline unsigned __activemask(int line = __builtin_LINE()) {
  return ::cudaperf::detail::active_mask(line);
}

template <class T>
inline T __shfl_sync(unsigned mask, T var, int srcLane, int width = 32,
                     int line = __builtin_LINE()) {
  return ::cudaperf::detail::shfl(mask, var, ::cudaperf::detail::kShflIdx, srcLane, width, line,
                                  "__shfl_sync");
}

template <class T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32,
                        int line = __builtin_LINE()) {
  return ::cudaperf::detail::shfl(mask, var, ::cudaperf::detail::kShflUp, static_cast<int>(delta),
                                  width, line, "__shfl_up_sync");
}

template <class T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32,
                          int line = __builtin_LINE()) {
  return ::cudaperf::detail::shfl(mask, var, ::cudaperf::detail::kShflDown, static_cast<int>(delta),
                                  width, line, "__shfl_down_sync");
}

template <class T>
inline T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = 32,
                         int line = __builtin_LINE()) {
  return ::cudaperf::detail::shfl(mask, var, ::cudaperf::detail::kShflXor, laneMask, width, line,
                                  "__shfl_xor_sync");
}

inline unsigned __ballot_sync(unsigned mask, int pred, int line = __builtin_LINE()) {
  return ::cudaperf::detail::vote(mask, pred, ::cudaperf::detail::kBallot, line, "__ballot_sync");
}

inline int __any_sync(unsigned mask, int pred, int line = __builtin_LINE()) {
  return static_cast<int>(
      ::cudaperf::detail::vote(mask, pred, ::cudaperf::detail::kAny, line, "__any_sync"));
}

inline int __all_sync(unsigned mask, int pred, int line = __builtin_LINE()) {
  return static_cast<int>(
      ::cudaperf::detail::vote(mask, pred, ::cudaperf::detail::kAll, line, "__all_sync"));
}

inline int __uni_sync(unsigned mask, int pred, int line = __builtin_LINE()) {
  return static_cast<int>(
      ::cudaperf::detail::vote(mask, pred, ::cudaperf::detail::kUni, line, "__uni_sync"));
}

template <class T>
inline unsigned __match_any_sync(unsigned mask, T value, int line = __builtin_LINE()) {
  return static_cast<unsigned>(::cudaperf::detail::warp_collective(
      mask, ::cudaperf::detail::kMatchAny, ::cudaperf::detail::to_bits(value), 0, 0, 32, line,
      "__match_any_sync"));
}

template <class T>
inline unsigned __match_all_sync(unsigned mask, T value, int* pred, int line = __builtin_LINE()) {
  int p = 0;
  unsigned r = static_cast<unsigned>(::cudaperf::detail::warp_collective(
      mask, ::cudaperf::detail::kMatchAll, ::cudaperf::detail::to_bits(value), 0, 0, 32, line,
      "__match_all_sync", &p));
  if (pred != nullptr) *pred = p;
  return r;
}

#define CUDAPERF_WARP_REDUCE(name, T, op)                                                        \
  inline T name(unsigned mask, T value, int line = __builtin_LINE()) {                           \
    return static_cast<T>(::cudaperf::detail::warp_reduce(mask, static_cast<unsigned>(value),    \
                                                          ::cudaperf::detail::op, line, #name)); \
  }
CUDAPERF_WARP_REDUCE(__reduce_add_sync, unsigned, kRedAdd)
CUDAPERF_WARP_REDUCE(__reduce_add_sync, int, kRedAdd)
CUDAPERF_WARP_REDUCE(__reduce_min_sync, unsigned, kRedMinU)
CUDAPERF_WARP_REDUCE(__reduce_min_sync, int, kRedMinS)
CUDAPERF_WARP_REDUCE(__reduce_max_sync, unsigned, kRedMaxU)
CUDAPERF_WARP_REDUCE(__reduce_max_sync, int, kRedMaxS)
CUDAPERF_WARP_REDUCE(__reduce_and_sync, unsigned, kRedAnd)
CUDAPERF_WARP_REDUCE(__reduce_or_sync, unsigned, kRedOr)
CUDAPERF_WARP_REDUCE(__reduce_xor_sync, unsigned, kRedXor)
#undef CUDAPERF_WARP_REDUCE
