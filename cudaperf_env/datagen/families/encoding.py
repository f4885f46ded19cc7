"""Radix digit histograms of order-preserving key bits: the counting step of a radix-sort or radix-select pass."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, grid, impl, nth, pick, scalar, task

# Order-preserving unsigned key bits of a value v (C spelling, CUDA spelling): unsigned order = value order.
KEY_BITS = {
    "uint32": ("v", "v"),
    "int32": ("(unsigned int)v ^ 0x80000000u", "(unsigned int)v ^ 0x80000000u"),
    "float32": ("float_bits(v) & 0x80000000u ? ~float_bits(v) : float_bits(v) | 0x80000000u",
                "__float_as_uint(v) & 0x80000000u ? ~__float_as_uint(v) : __float_as_uint(v) | 0x80000000u"),
    "float64": ("double_bits(v) >> 63 ? ~double_bits(v) : double_bits(v) | 0x8000000000000000ull",
                "(unsigned long long)__double_as_longlong(v) >> 63 ? ~(unsigned long long)__double_as_longlong(v) "
                ": (unsigned long long)__double_as_longlong(v) | 0x8000000000000000ull"),
}  # fmt: skip
_KEY_INIT = {"uint32": {"dist": "randint", "low": 0, "high": 4294967296},
             "int32": {"dist": "randint", "low": -2147483648, "high": 2147483648},
             "float32": {"dist": "normal", "mean": 0, "std": 100}, "float64": {"dist": "normal", "mean": 0, "std": 100}}
# Which scans of the histogram come with it: none, the exclusive scan (digit starts), the inclusive one (digit ends).
SCANS = {"none": "", "exclusive": "offsets[d] = run; run += hist[d];", "inclusive": "run += hist[d]; offsets[d] = run;"}
RADIX_STRUCTURES = grid(sorted(KEY_BITS), (False, True), sorted(SCANS), (False, True))


def radix_histogram(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """hist[d] = how many keys have digit d at bit offset shift (optionally only keys with a given prefix above the
    digit, as in an MSD radix-select step), and optionally a scan of hist."""
    dtype, descending, scan, prefixed = nth(variant, RADIX_STRUCTURES)
    bits = int(pick(rng, (4, 6, 8)))
    width = 64 if dtype == "float64" else 32
    # The prefix is the top 4 key bits: floats near +-100 have 12 (positive) or 3 (negative) there.
    prefix = int(pick(rng, (3, 12)) if dtype.startswith("float") else rng.integers(0, 16))
    shift = width - bits - 4 if prefixed else bits * int(rng.integers(0, width // bits))
    t, radix, kt = CTYPE[dtype], 1 << bits, "unsigned long long" if width == 64 else "unsigned int"
    c_key, cu_key = KEY_BITS[dtype]
    filter_ = f"  if ((k >> (shift + {bits})) != {prefix}u) return -1;\n" if prefixed else ""
    outs = "int* hist" + (", int* offsets" if scan != "none" else "")
    sig = f"int n, int shift, const {t}* keys, {outs}"
    call = "n, shift, keys, hist" + (", offsets" if scan != "none" else "")
    digit = ("$Q int digit($T v, int shift) {\n  $K k = $flip($key);\n${filter}"
             "  return (int)((k >> shift) & (RADIX - 1));\n}\n")
    kw = {"R": radix, "T": t, "K": kt, "flip": "~" if descending else "", "filter": filter_, "Q": "$Q"}
    ref_head = fill("""#include <string.h>
#define RADIX $R
static unsigned int float_bits(float f) { unsigned int u; memcpy(&u, &f, sizeof u); return u; }
static unsigned long long double_bits(double f) { unsigned long long u; memcpy(&u, &f, sizeof u); return u; }
""", **kw) + fill(digit, key=c_key, **kw).replace("$Q", "static")  # fmt: skip
    head = fill("#define RADIX $R\n", **kw) + fill(digit, key=cu_key, **kw).replace(
        "$Q", "__device__ __forceinline__") + fill(_SCAN_KERNEL, step=SCANS[scan] or "(void)run;")
    finish = "offsets_kernel<<<1, 1>>>(hist, offsets);" if scan != "none" else ""
    ref_finish = f"int run = 0;\n  for (int d = 0; d < RADIX; ++d) {{ {SCANS[scan]} }}" if scan != "none" else ""
    kw = {"T": t, "sig": sig, "call": call, "finish": finish}
    impls = [
        impl("naive", ["thread-per-element", "atomics"], head + fill(_GLOBAL_ATOMICS, **kw)),
        impl("smem_privatized", ["privatization", "shared-memory", "atomics", "grid-stride"],
             head + fill(_PRIVATE, **kw)),
        impl("per_warp_two_pass", ["per-warp-histograms", "shared-memory", "two-pass", "multi-element-per-thread"],
             head + fill(_PER_WARP, **kw)),
    ]  # fmt: skip
    args = [scalar("n", "int32", "N"), scalar("shift", "int32", shift), buffer("keys", "in", dtype, ["N"],
            _KEY_INIT[dtype]), buffer("hist", "out", "int32", [radix])]  # fmt: skip
    if scan != "none":
        args.append(buffer("offsets", "out", "int32", [radix]))
    key_text = {
        "uint32": "k = v",
        "int32": "k = v's bits with the sign bit flipped",
        "float32": "k = the float's bits, all flipped for negative values, else with the sign bit set",
        "float64": "k = the double's bits, all flipped for negative values, else with the sign bit set",
    }[dtype]
    scan_text = {"none": "", "exclusive": "; offsets[d] is the exclusive prefix sum of hist (the digit start in "
                 "the sorted pass)", "inclusive": "; offsets[d] is the inclusive prefix sum of hist (the digit end)"}
    return task(
        name="radix_histogram", family="radix_histogram", entry="radix_histogram", args=args,
        description=f"Digit histogram of one radix-sort pass over n {dtype} keys: the order-preserving {width}-bit key "
        f"of v is {key_text}{', then complemented (descending order)' if descending else ''}; its digit is "
        f"(k >> shift) & {radix - 1}. hist[d] ({radix} bins) counts the keys with digit d"
        + (f" among those whose bits above the digit, k >> (shift + {bits}), equal {prefix}" if prefixed else "")
        + f"{scan_text[scan]}.",
        configs=[{"N": 1000}, {"N": 4097}, {"N": 300007}], hidden=[{"N": 30011}],
        perf=[{"N": 1 << 24}, {"N": 1 << 26}], implementations=impls,
        reference=ref_head + fill(_REF, sig=sig, finish=ref_finish),
    )  # fmt: skip


_SCAN_KERNEL = """// A scan of the finished histogram, by one thread (RADIX is small).
__global__ void offsets_kernel(const int* hist, int* offsets) {
  int run = 0;
  for (int d = 0; d < RADIX; ++d) { $step }
}
"""
_REF = """
void radix_histogram($sig) {
  for (int d = 0; d < RADIX; ++d) hist[d] = 0;
  for (int i = 0; i < n; ++i) {
    int d = digit(keys[i], shift);
    if (d >= 0) hist[d] += 1;
  }
  $finish
}
"""
_GLOBAL_ATOMICS = """
// Every key is one atomic increment of the global histogram.
__global__ void hist_kernel($sig) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int d = i < n ? digit(keys[i], shift) : -1;
  if (d >= 0) atomicAdd(&hist[d], 1);
}
extern "C" void radix_histogram($sig) {
  cudaMemset(hist, 0, RADIX * sizeof(int));
  hist_kernel<<<(n + 255) / 256, 256>>>($call);
  $finish
}
"""
_PRIVATE = """
// A shared-memory histogram per block over a grid-stride range, merged into the global one at the end.
__global__ void hist_kernel($sig) {
  __shared__ int local[RADIX];
  for (int d = threadIdx.x; d < RADIX; d += blockDim.x) local[d] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    int d = digit(keys[i], shift);
    if (d >= 0) atomicAdd(&local[d], 1);
  }
  __syncthreads();
  for (int d = threadIdx.x; d < RADIX; d += blockDim.x)
    if (local[d]) atomicAdd(&hist[d], local[d]);
}
extern "C" void radix_histogram($sig) {
  cudaMemset(hist, 0, RADIX * sizeof(int));
  hist_kernel<<<min((n + 255) / 256, 512), 256>>>($call);
  $finish
}
"""
_PER_WARP = """
// Pass 1: each warp counts into its own shared histogram (less contention), the block writes its column of
// partial counts; pass 2 sums the columns. No global atomics, a fixed summation order.
constexpr int THREADS = 256, WARPS = THREADS / 32, ITEMS = 16, TILE = THREADS * ITEMS;

__global__ void tile_hist(int n, int shift, const $T* __restrict__ keys, int* partial) {
  __shared__ int local[WARPS][RADIX];
  int warp = threadIdx.x / 32;
  for (int d = threadIdx.x; d < WARPS * RADIX; d += THREADS) local[d / RADIX][d % RADIX] = 0;
  __syncthreads();
  int base = blockIdx.x * TILE;
  #pragma unroll 4
  for (int k = 0; k < ITEMS; ++k) {
    int i = base + k * THREADS + threadIdx.x;
    int d = i < n ? digit(keys[i], shift) : -1;
    if (d >= 0) atomicAdd(&local[warp][d], 1);
  }
  __syncthreads();
  for (int d = threadIdx.x; d < RADIX; d += THREADS) {
    int sum = 0;
    for (int w = 0; w < WARPS; ++w) sum += local[w][d];
    partial[(long)blockIdx.x * RADIX + d] = sum;
  }
}
__global__ void sum_columns(int tiles, const int* partial, int* hist) {
  int d = blockIdx.x * blockDim.x + threadIdx.x;
  if (d >= RADIX) return;
  int sum = 0;
  for (int b = 0; b < tiles; ++b) sum += partial[(long)b * RADIX + d];
  hist[d] = sum;
}
extern "C" void radix_histogram($sig) {
  int tiles = (n + TILE - 1) / TILE;
  int* partial = nullptr;
  cudaMalloc(&partial, (size_t)max(tiles, 1) * RADIX * sizeof(int));
  if (tiles > 0) tile_hist<<<tiles, THREADS>>>(n, shift, keys, partial);
  sum_columns<<<(RADIX + 127) / 128, 128>>>(tiles, partial, hist);
  $finish
  cudaFree(partial);
}
"""
