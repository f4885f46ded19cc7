"""Byte processing on uint8 text or data: ciphers, case maps, lookup tables, byte histograms and run counts."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import buffer, fill, grid, impl, nth, pick, scalar, task

_TEXT = {"dist": "randint", "low": 32, "high": 127}
_BYTES = {"dist": "randint", "low": 0, "high": 256}
_UP = "(c >= 'A' && c <= 'Z')"
_LO = "(c >= 'a' && c <= 'z')"
# name -> (C body of f(c, i, key, k) returning the output byte, extra input ("key", "table" or ""), input init)
TRANSFORMS = {
    "xor_key": ("return c ^ key[i % k];", "key", _BYTES),
    "caesar": (f"if {_UP} return 'A' + (c - 'A' + S) % 26;\n  if {_LO} return 'a' + (c - 'a' + S) % 26;\n"
               "  return c;", "", _TEXT),
    "vigenere": (f"int s = key[i % k] % 26;\n  if {_UP} return 'A' + (c - 'A' + s) % 26;\n"
                 f"  if {_LO} return 'a' + (c - 'a' + s) % 26;\n  return c;", "key", _TEXT),
    "upper": (f"return {_LO} ? c - 32 : c;", "", _TEXT),
    "lower": (f"return {_UP} ? c + 32 : c;", "", _TEXT),
    "swapcase": (f"return ({_LO} || {_UP}) ? c ^ 32 : c;", "", _TEXT),
    "table": ("return key[c];", "table", _BYTES),
    "affine": ("return (c * A + S) & 255;", "", _BYTES),
    "nibble_swap": ("return ((c << 4) | (c >> 4)) & 255;", "", _BYTES),
    "bit_reverse": ("int r = 0;\n  for (int b = 0; b < 8; ++b) r |= ((c >> b) & 1) << (7 - b);\n  return r;", "",
                    _BYTES),
    "digit_rot": ("if (c >= '0' && c <= '9') return '0' + (c - '0' + S) % 10;\n  return c;", "", _TEXT),
    "atbash": (f"if {_UP} return 'Z' - (c - 'A');\n  if {_LO} return 'z' - (c - 'a');\n  return c;", "", _TEXT),
    "gray_code": ("return c ^ (c >> 1);", "", _BYTES),
    "saturating_add": ("return c + S > 255 ? 255 : c + S;", "", _BYTES),
}  # fmt: skip


# A final step applied to the transformed byte r: none, a fixed mask, position salts, the complement, a rotation.
POSTS = ("r", "r ^ 90", "(r + i) & 255", "255 - r", "(r ^ i) & 255", "((r << 1) | (r >> 7)) & 255",
         "r < 128 ? r : 255 - r", "(r * 3) & 255")
TRANSFORM_STRUCTURES = grid(sorted(TRANSFORMS), POSTS)


def byte_transform(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """y[i] = f(x[i], i) for a byte cipher / case map / lookup table f."""
    name, post = nth(variant, TRANSFORM_STRUCTURES)
    body, extra, init = TRANSFORMS[name]
    consts = {"S": int(rng.integers(1, 26)), "A": int(pick(rng, (3, 5, 7, 11, 13, 29)))}
    body = body.replace("S)", f"{consts['S'] % 10 if name == 'digit_rot' else consts['S']})")
    body = body.replace("+ S ", f"+ {consts['S']} ").replace("+ S;", f"+ {consts['S']};")
    body = body.replace("c * A", f"c * {consts['A']}")
    args = [scalar("n", "int32", "N"), buffer("x", "in", "uint8", ["N"], init)]
    if extra == "key":
        args += [scalar("k", "int32", "K"), buffer("key", "in", "uint8", ["K"], _BYTES)]
        sig, fargs, call = ("int n, const unsigned char* x, int k, const unsigned char* key, unsigned char* y",
                            "int c, int i, const unsigned char* key, int k", "key, k")  # fmt: skip
    elif extra == "table":
        args += [buffer("key", "in", "uint8", [256], _BYTES)]
        sig, fargs, call = ("int n, const unsigned char* x, const unsigned char* key, unsigned char* y",
                            "int c, int i, const unsigned char* key, int k", "key, 256")  # fmt: skip
    else:
        sig, fargs, call = ("int n, const unsigned char* x, unsigned char* y", "int c, int i", "")
    args.append(buffer("y", "out", "uint8", ["N"]))
    names = ", ".join(a["name"] for a in args)
    fcall = f"f(x[i], i{', ' + call if call else ''})"
    core = body
    pre = "" if post == "r" else fill("static int f0($fargs) {\n  $body\n}\n", fargs=fargs, body=core)
    if post != "r":
        body = "int r = f0(" + ", ".join(p.split()[-1].lstrip("*") for p in fargs.split(", ")) + f");\n  return {post};"
    reference = pre + fill("static int f($fargs) {\n  $body\n}\nvoid transform($sig) {\n"
                     "  for (int i = 0; i < n; ++i) y[i] = (unsigned char)$fcall;\n}",
                     fargs=fargs, body=body, sig=sig, fcall=fcall)  # fmt: skip
    head = "typedef unsigned char u8;\n" + pre.replace("static int", "__device__ __forceinline__ int") + fill(
        "__device__ __forceinline__ int f($fargs) {\n  $body\n}\n", fargs=fargs, body=body)
    has = bool(extra)
    smem_stage = ("  __shared__ u8 skey[1024];\n  int kk = k < 1024 ? k : 0;\n"
                  "  for (int j = threadIdx.x; j < kk; j += blockDim.x) skey[j] = key[j];\n  __syncthreads();\n"
                  "  const u8* kp = kk ? skey : key;\n") if extra == "key" else \
        ("  __shared__ u8 skey[256];\n  for (int j = threadIdx.x; j < 256; j += blockDim.x) skey[j] = key[j];\n"
         "  __syncthreads();\n  const u8* kp = skey;\n  int k = 256;\n") if extra == "table" else ""  # fmt: skip
    kw = {"sig": sig, "names": names, "fcall": f"f(c, i{', ' + call if call else ''})", "stage": smem_stage,
          "scall": f"f(c, i{', kp, k' if has else ''})", "kparams": sig}
    impls = [
        impl("naive", ["thread-per-element"], head + fill(_T_NAIVE, **kw)),
        impl("word4", ["vectorized-loads", "multi-element-per-thread", "coalesced"], head + fill(_T_WORD, **kw)),
        impl("smem_grid_stride", ["grid-stride", "shared-memory"] if has else ["grid-stride"],
             head + fill(_T_GRID, **kw)),
    ]
    cfg = (lambda n, k: {"N": n, "K": k}) if extra == "key" else (lambda n, k: {"N": n})
    return task(
        name="byte_transform", family="byte_transform", entry="transform", args=args,
        description=f"Byte transform '{name}' of n uint8 values: y[i] = f(x[i], i) with "
        f"f(c, i) = {{ {' '.join(core.split())} }}"
        + (f", then y[i] = {post} (r the result of f)" if post != "r" else "")
        + (" where key has k bytes" if extra == "key" else " where key is a 256-byte table" if extra else "") + ".",
        configs=[cfg(1000, 7), cfg(4097, 16), cfg(100003, 5)], hidden=[cfg(30011, 13)], perf=[cfg(1 << 28, 32)],
        reference=reference, implementations=impls,
    )


_T_NAIVE = """
__global__ void transform_kernel($kparams) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    int c = x[i];
    y[i] = (u8)$fcall;
  }
}
extern "C" void transform($sig) { transform_kernel<<<(n + 255) / 256, 256>>>($names); }
"""
_T_WORD = """
// Four bytes per thread through one 32-bit load and store (cudaMalloc'd buffers are 4-byte aligned);
// the last n % 4 bytes are done one at a time.
__global__ void transform_words($kparams) {
  int j = blockIdx.x * blockDim.x + threadIdx.x, words = n / 4;
  if (j < words) {
    unsigned in = ((const unsigned*)x)[j], out = 0;
    #pragma unroll
    for (int b = 0; b < 4; ++b) {
      int i = 4 * j + b, c = (in >> (8 * b)) & 255;
      out |= (unsigned)($fcall & 255) << (8 * b);
    }
    ((unsigned*)y)[j] = out;
  } else if (j == words) {
    for (int i = 4 * words; i < n; ++i) {
      int c = x[i];
      y[i] = (u8)$fcall;
    }
  }
}
extern "C" void transform($sig) {
  int threads = n / 4 + 1;
  transform_words<<<(threads + 255) / 256, 256>>>($names);
}
"""
_T_GRID = """
// A fixed grid walks the bytes; a key or table, if any, is first staged in shared memory.
__global__ void transform_grid($kparams) {
$stage  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    int c = x[i];
    y[i] = (u8)$scall;
  }
}
extern "C" void transform($sig) {
  transform_grid<<<min((n + 255) / 256, 1024), 256>>>($names);
}
"""

# name -> (bins (0: one count), C body of bin_of(x, i, n) returning the bin of element i or -1, input init, text)
COUNTS = {
    "histogram": (256, "return x[i];", _BYTES, "hist[b] = number of i with x[i] == b"),
    "high_nibble": (16, "return x[i] >> 4;", _BYTES, "hist[b] = number of i with x[i] >> 4 == b"),
    "char_class": (4, "int c = x[i];\n  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return 0;\n"
                   "  if (c >= '0' && c <= '9') return 1;\n  if (c == ' ') return 2;\n  return 3;", _TEXT,
                   "hist = counts of letters, digits, spaces, other bytes"),
    "vowels": (5, "int c = x[i] | 32;\n  switch (c) {\n    case 'a': return 0;\n    case 'e': return 1;\n"
               "    case 'i': return 2;\n    case 'o': return 3;\n    case 'u': return 4;\n  }\n  return -1;",
               _TEXT, "hist = counts of the vowels a, e, i, o, u (either case)"),
    "digram": (256, "return i == 0 ? -1 : (x[i - 1] & 15) * 16 + (x[i] & 15);", _BYTES,
               "hist[16 * p + q] = number of i >= 1 with (x[i-1] & 15) == p and (x[i] & 15) == q"),
    "runs": (0, "return (i == 0 || x[i] != x[i - 1]) ? 0 : -1;", {"dist": "randint", "low": 0, "high": 3},
             "count[0] = number of maximal runs of equal bytes"),
    "words": (0, "return (x[i] > 32 && (i == 0 || x[i - 1] <= 32)) ? 0 : -1;",
              {"dist": "randint", "low": 29, "high": 40},
              "count[0] = number of words (maximal runs of bytes > 32)"),
    "rising": (0, "return (i > 0 && x[i] > x[i - 1]) ? 0 : -1;", _BYTES,
               "count[0] = number of i >= 1 with x[i] > x[i-1]"),
    "low_nibble": (16, "return x[i] & 15;", _BYTES, "hist[b] = number of i with (x[i] & 15) == b"),
    "mod7": (7, "return x[i] % 7;", _BYTES, "hist[b] = number of i with x[i] % 7 == b"),
    "popcount": (9, "int c = x[i], p = 0;\n  while (c) {\n    p += c & 1;\n    c >>= 1;\n  }\n  return p;", _BYTES,
                 "hist[b] = number of i whose byte has b bits set"),
    "trigram": (64, "return i < 2 ? -1 : (x[i - 2] & 3) * 16 + (x[i - 1] & 3) * 4 + (x[i] & 3);", _BYTES,
                "hist[16 * p + 4 * q + r] = number of i >= 2 with low 2-bit fields (p, q, r) of x[i-2], x[i-1], x[i]"),
    "equal_pairs": (0, "return (i > 0 && x[i] == x[i - 1]) ? 0 : -1;", {"dist": "randint", "low": 0, "high": 4},
                    "count[0] = number of i >= 1 with x[i] == x[i-1]"),
    "echo2": (0, "return (i > 1 && x[i] == x[i - 2] && x[i] != x[i - 1]) ? 0 : -1;",
              {"dist": "randint", "low": 0, "high": 4},
              "count[0] = number of i >= 2 with x[i] == x[i-2] != x[i-1] (an a-b-a pattern)"),
    "letter_case": (3, "int c = x[i];\n  if (c >= 'A' && c <= 'Z') return 0;\n  if (c >= 'a' && c <= 'z') return 1;\n"
                    "  return 2;", _TEXT, "hist = counts of upper-case letters, lower-case letters, other bytes"),
}  # fmt: skip


# Positions that count at all: every one, even ones, non-space bytes, two of every three, every fourth, even bytes.
MASKS = ("", "(i & 1) == 0", "x[i] != 32", "i % 3 != 2", "i % 4 == 0", "(x[i] & 1) == 0")
COUNT_STRUCTURES = grid(sorted(COUNTS), MASKS)


def byte_count(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """Counts over bytes: a histogram of a bin function, or one count of positions matching a pattern."""
    name, mask = nth(variant, COUNT_STRUCTURES)
    bins, body, init, what = COUNTS[name]
    if mask:
        body = f"if (!({mask})) return -1;\n  {body}"
        what += f", counting only positions i with {mask}"
    nb = max(bins, 1)
    sig = "int n, const unsigned char* x, int* hist"
    args = [scalar("n", "int32", "N"), buffer("x", "in", "uint8", ["N"], init), buffer("hist", "out", "int32", [nb])]
    reference = fill("static int bin_of(const unsigned char* x, int i) {\n  $body\n}\nvoid count($sig) {\n"
                     "  for (int b = 0; b < $nb; ++b) hist[b] = 0;\n  for (int i = 0; i < n; ++i) {\n"
                     "    int b = bin_of(x, i);\n    if (b >= 0) hist[b] += 1;\n  }\n}",
                     body=body, sig=sig, nb=nb)  # fmt: skip
    head = fill("constexpr int NB = $nb;\n__device__ __forceinline__ int bin_of(const unsigned char* x, int i) {\n"
                "  $body\n}\n", nb=nb, body=body)  # fmt: skip
    third = impl("warp_reduce", ["warp-shuffle", "grid-stride", "atomics", "tree-reduction"], head + _C_REDUCE) \
        if bins == 0 else impl("per_warp_hist", ["shared-memory", "per-warp-histograms", "atomics", "grid-stride"],
                               head + _C_WARP)  # fmt: skip
    impls = [
        impl("naive", ["thread-per-element", "atomics"], head + _C_NAIVE),
        impl("smem_private", ["shared-memory", "privatization", "atomics", "grid-stride"], head + _C_SMEM),
        third,
    ]
    return task(
        name="byte_count", family="byte_count", entry="count", args=args,
        description=f"Byte statistics '{name}' of n uint8 values: {what}. Each i counts in bin bin_of(x, i) "
        f"(none when -1), with bin_of = {{ {' '.join(body.split())} }}.",
        configs=[{"N": 1000}, {"N": 4097}, {"N": 100003}], hidden=[{"N": 30011}], perf=[{"N": 1 << 28}],
        reference=reference, implementations=impls,
    )


_C_NAIVE = """
__global__ void count_kernel(int n, const unsigned char* x, int* hist) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    int b = bin_of(x, i);
    if (b >= 0) atomicAdd(&hist[b], 1);
  }
}
extern "C" void count(int n, const unsigned char* x, int* hist) {
  cudaMemset(hist, 0, NB * sizeof(int));  // hist arrives poisoned
  count_kernel<<<(n + 255) / 256, 256>>>(n, x, hist);
}
"""
_C_SMEM = """
// Each block counts into a shared-memory copy of the bins, then adds it to the global bins.
__global__ void count_kernel(int n, const unsigned char* x, int* hist) {
  __shared__ int local[NB];
  for (int b = threadIdx.x; b < NB; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    int b = bin_of(x, i);
    if (b >= 0) atomicAdd(&local[b], 1);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < NB; b += blockDim.x)
    if (local[b]) atomicAdd(&hist[b], local[b]);
}
extern "C" void count(int n, const unsigned char* x, int* hist) {
  cudaMemset(hist, 0, NB * sizeof(int));
  count_kernel<<<min((n + 255) / 256, 256), 256>>>(n, x, hist);
}
"""
_C_WARP = """
// One sub-histogram per warp (less contention on the shared atomics), summed per block at the end.
constexpr int THREADS = 256, WARPS = THREADS / 32;
__global__ void count_kernel(int n, const unsigned char* x, int* hist) {
  __shared__ int local[WARPS][NB];
  for (int j = threadIdx.x; j < WARPS * NB; j += THREADS) local[j / NB][j % NB] = 0;
  __syncthreads();
  int* mine = local[threadIdx.x / 32];
  for (int i = blockIdx.x * THREADS + threadIdx.x; i < n; i += gridDim.x * THREADS) {
    int b = bin_of(x, i);
    if (b >= 0) atomicAdd(&mine[b], 1);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < NB; b += THREADS) {
    int s = 0;
    for (int w = 0; w < WARPS; ++w) s += local[w][b];
    if (s) atomicAdd(&hist[b], s);
  }
}
extern "C" void count(int n, const unsigned char* x, int* hist) {
  cudaMemset(hist, 0, NB * sizeof(int));
  count_kernel<<<min((n + THREADS - 1) / THREADS, 512), THREADS>>>(n, x, hist);
}
"""
_C_REDUCE = """
// Per-thread counts over a grid-stride loop, a warp-shuffle sum, one atomic per warp.
__global__ void count_kernel(int n, const unsigned char* x, int* hist) {
  int c = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) c += bin_of(x, i) == 0;
  for (int off = 16; off > 0; off /= 2) c += __shfl_down_sync(0xffffffffu, c, off);
  if (threadIdx.x % 32 == 0 && c) atomicAdd(hist, c);
}
extern "C" void count(int n, const unsigned char* x, int* hist) {
  cudaMemset(hist, 0, sizeof(int));
  count_kernel<<<min((n + 255) / 256, 512), 256>>>(n, x, hist);
}
"""
