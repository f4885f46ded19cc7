"""Hashes of the rows of a byte or word matrix (FNV-1a, djb2, sdbm, one-at-a-time, CRC-32, Adler-32, ...).

Each hash is a sequential fold over a row in unsigned 32-bit arithmetic (wrapping identically in C and CUDA),
so rows hash in parallel and a row's units one after another. Rows may have their own lengths, and the hash
may be reduced to a bucket index.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, grid, impl, nth, scalar, task

# name -> (start, step folding unit c into h, finish of h); all unsigned int arithmetic.
HASHES = {
    "fnv1a": ("2166136261u", "h = (h ^ c) * 16777619u;", "h"),
    "djb2": ("5381u", "h = h * 33u + c;", "h"),
    "djb2_xor": ("5381u", "h = (h * 33u) ^ c;", "h"),
    "sdbm": ("0u", "h = c + (h << 6) + (h << 16) - h;", "h"),
    "one_at_a_time": ("0u", "h += c; h += h << 10; h ^= h >> 6;", "fin_oaat(h)"),
    "crc32": ("0xffffffffu", "h = crc_step(h, c);", "~h"),
    "adler32": ("1u", "h = adler_step(h, c);", "h"),
    "rotate_xor": ("0x9e3779b9u", "h = ((h << 5) | (h >> 27)) ^ c;", "h ^ (h >> 15)"),
}
_HELPERS = """$Q unsigned int fin_oaat(unsigned int h) { h += h << 3; h ^= h >> 11; h += h << 15; return h; }
// CRC-32 (reflected, polynomial 0xEDB88320) over the low BITS bits of c.
$Q unsigned int crc_step(unsigned int h, unsigned int c) {
  h ^= c;
  for (int k = 0; k < BITS; ++k) h = (h >> 1) ^ (0xedb88320u & (0u - (h & 1u)));
  return h;
}
// Adler-32 state (b << 16 | a), sums modulo 65521 (c reduced first, so words fit).
$Q unsigned int adler_step(unsigned int h, unsigned int c) {
  unsigned int a = h & 0xffffu, b = h >> 16;
  a = (a + c % 65521u) % 65521u;
  b = (b + a) % 65521u;
  return (b << 16) | a;
}
"""
STRUCTURES = grid(sorted(HASHES), ("uint8", "uint32"), (False, True), (False, True))


def row_hash(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """out[r] = hash(row r) (or hash % nb) over the row's units, all of its cols or its own length."""
    name, unit, lengths, bucketed = nth(variant, STRUCTURES)
    start, step, finish = HASHES[name]
    ut = CTYPE[unit]
    bits = 8 if unit == "uint8" else 32
    limit = "len[r]" if lengths else "cols"
    params = ["int rows, int cols"] + (["int nb"] if bucketed else []) + [f"const {ut}* x"] + \
        (["const int* len"] if lengths else []) + ["unsigned int* out"]  # fmt: skip
    sig = ", ".join(params)
    call = ", ".join(p.split()[-1].lstrip("*") for p in sig.split(", "))
    store = "out[r] = (FINISH) % (unsigned int)nb;" if bucketed else "out[r] = FINISH;"
    kw = {"U": ut, "sig": sig, "call": call, "start": start, "step": step, "limit": limit,
          "store": store.replace("FINISH", finish)}  # fmt: skip
    helpers = f"#define BITS {bits}\n" + _HELPERS
    reference = helpers.replace("$Q", "static") + fill(_REF, **kw)
    head = helpers.replace("$Q", "__device__ __forceinline__")
    impls = [
        impl("naive", ["thread-per-row"], head + fill(_THREAD, **kw)),
        impl("smem_staged", ["thread-per-row", "shared-memory", "coalesced"], head + fill(_STAGED, **kw)),
        impl("warp_load", ["warp-per-row", "coalesced", "shared-memory", "serial-fold"], head + fill(_WARP, **kw)),
    ]
    init = {"dist": "randint", "low": 0, "high": 256 if unit == "uint8" else 4294967296}
    args = [scalar("rows", "int32", "R"), scalar("cols", "int32", "C")]
    if bucketed:
        args.append(scalar("nb", "int32", int(rng.integers(100, 100000))))
    args.append(buffer("x", "in", unit, ["R", "C"], init))
    if lengths:
        args.append(buffer("len", "in", "int32", ["R"], {"dist": "randint", "low": 0, "high": "C + 1"}))
    args.append(buffer("out", "out", "uint32", ["R"]))
    where = "its first len[r] units" if lengths else "all of its cols units"
    return task(
        name=f"row_hash_{name}", family="row_hash", entry="row_hash", args=args,
        description=f"Hash '{name}' of every row of a rows x cols row-major {unit} matrix, over {where}, in "
        f"unsigned 32-bit arithmetic: h = {start}; for each unit c (as unsigned int) of the row in order: "
        f"{{ {step} }}; then {kw['store']} The helpers (one-at-a-time finish, CRC-32 step over the unit's {bits} "
        f"bits, Adler-32 step) are those of the C reference.",
        configs=[{"R": 7, "C": 13}, {"R": 1000, "C": 64}, {"R": 4097, "C": 33}], hidden=[{"R": 3001, "C": 17}],
        perf=[{"R": 1 << 20, "C": 64}, {"R": 1 << 16, "C": 1024}], reference=reference, implementations=impls,
    )  # fmt: skip


_REF = """
void row_hash($sig) {
  for (int r = 0; r < rows; ++r) {
    const $U* row = x + (long)r * cols;
    unsigned int h = $start;
    for (int i = 0; i < $limit; ++i) {
      unsigned int c = row[i];
      $step
    }
    $store
  }
}
"""
_THREAD = """
// One thread per row folds the row from global memory (neighbouring threads read a row apart).
__global__ void hash_kernel($sig) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const $U* row = x + (long)r * cols;
  unsigned int h = $start;
  for (int i = 0; i < $limit; ++i) {
    unsigned int c = row[i];
    $step
  }
  $store
}
extern "C" void row_hash($sig) {
  hash_kernel<<<(rows + 127) / 128, 128>>>($call);
}
"""
_STAGED = """
// A block's rows are copied to shared memory in column chunks with consecutive (coalesced) reads, then each
// thread folds its row from shared memory.
constexpr int ROWS = 64, CHUNK = 64;
__global__ void hash_kernel($sig) {
  __shared__ $U tile[ROWS][CHUNK + 1];
  int r0 = blockIdx.x * ROWS, r = r0 + threadIdx.x;
  int n = r < rows ? $limit : 0;
  unsigned int h = $start;
  for (int c0 = 0; c0 < cols; c0 += CHUNK) {
    int width = min(CHUNK, cols - c0);
    for (int k = threadIdx.x; k < ROWS * width; k += ROWS) {
      int rr = k / width, cc = k % width;
      if (r0 + rr < rows) tile[rr][cc] = x[(long)(r0 + rr) * cols + c0 + cc];
    }
    __syncthreads();
    for (int cc = 0; cc < width && c0 + cc < n; ++cc) {
      unsigned int c = tile[threadIdx.x][cc];
      $step
    }
    __syncthreads();
  }
  if (r < rows) $store
}
extern "C" void row_hash($sig) {
  hash_kernel<<<(rows + ROWS - 1) / ROWS, ROWS>>>($call);
}
"""
_WARP = """
// One warp per row: the lanes load 32-unit chunks of the row together (coalesced) into shared memory and
// lane 0 folds them in order.
constexpr int WARPS = 8;
__global__ void hash_kernel($sig) {
  __shared__ $U chunk[WARPS][32];
  int wid = threadIdx.x / 32, lane = threadIdx.x % 32, r = blockIdx.x * WARPS + wid;
  if (r >= rows) return;  // uniform per warp
  const $U* row = x + (long)r * cols;
  int n = $limit;
  unsigned int h = $start;
  for (int c0 = 0; c0 < n; c0 += 32) {
    if (c0 + lane < n) chunk[wid][lane] = row[c0 + lane];
    __syncwarp();
    if (lane == 0)
      for (int k = 0; k < 32 && c0 + k < n; ++k) {
        unsigned int c = chunk[wid][k];
        $step
      }
    __syncwarp();
  }
  if (lane == 0) $store
}
extern "C" void row_hash($sig) {
  hash_kernel<<<(rows + WARPS - 1) / WARPS, 32 * WARPS>>>($call);
}
"""
