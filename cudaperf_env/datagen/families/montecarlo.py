"""Monte-Carlo kernels driven by a counter-based integer hash, so C and CUDA draw identical samples."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, impl, nth, params, pick, scalar, task
from cudaperf_env.datagen.families.operators import to_double

# 32-bit mixers (unsigned arithmetic wraps identically in C and CUDA).
MIXERS = {
    "fmix32": "h ^= h >> 16; h *= 0x85ebca6bu; h ^= h >> 13; h *= 0xc2b2ae35u; h ^= h >> 16; return h;",
    "pcg": "unsigned int s = h * 747796405u + 2891336453u;\n"
           "  unsigned int w = ((s >> ((s >> 28) + 4u)) ^ s) * 277803737u;\n  return (w >> 22) ^ w;",
    "wang": "h = (h ^ 61u) ^ (h >> 16); h *= 9u; h = h ^ (h >> 4); h *= 0x27d4eb2du; h = h ^ (h >> 15); return h;",
    "xorshift": "h ^= h << 13; h ^= h >> 17; h ^= h << 5; return h;",
    "jenkins": "h = (h + 0x7ed55d16u) + (h << 12); h = (h ^ 0xc761c23cu) ^ (h >> 19);\n"
               "  h = (h + 0x165667b1u) + (h << 5); h = (h + 0xd3a2646cu) ^ (h << 9);\n"
               "  h = (h + 0xfd7046c5u) + (h << 3); h = (h ^ 0xb55a4f09u) ^ (h >> 16); return h;",
}  # fmt: skip
# Integrands of x (float32 spelling).
INTEGRANDS = ("sinf(x)", "expf(-x * x)", "1.0f / (1.0f + x * x)", "sqrtf(fabsf(x))", "x * x * x - x",
              "cosf(3.0f * x)", "logf(1.0f + fabsf(x))", "x * expf(-fabsf(x))")  # fmt: skip
# Integer statistics of two 12-bit draws u1, u2, all in [0, 2^25): exact in C and CUDA.
PREDICATES = ("u1 * u1 + u2 * u2", "u1 * u2 * 2", "(u1 + u2) * (u1 + u2) / 2",
              "(u1 > u2 ? u1 * u1 : u2 * u2) * 2", "(u1 > u2 ? u1 - u2 : u2 - u1) * 8192")  # fmt: skip
STEPS = ("(int)(h % 3u) - 1", "(int)(h & 1u) * 2 - 1", "(int)(h % 5u) - 2", "(h & 3u) == 0 ? 3 : -1")
# (kind, index of the integrand / step / statistic, output dtype, mixer)
_KINDS = (("integrate", len(INTEGRANDS), ("float32", "float64")), ("walk", len(STEPS), ("int32",)),
          ("hits", len(PREDICATES), ("int32",)), ("hits_total", len(PREDICATES), ("int32",)))
STRUCTURES = [(k, i, d, m) for m in sorted(MIXERS) for k, n, dtypes in _KINDS for i in range(n) for d in dtypes]
_TOL = {"float32": {"rtol": 1.0e-4, "atol": 1.0e-5}, "float64": {"rtol": 1.0e-10, "atol": 1.0e-12}}
_HEAD = """
$Q unsigned int mix(unsigned int h) {
  $mixer
}
// Draw number s of element i: a pure function of (seed, i, s).
$Q unsigned int draw(int seed, int i, int s) {
  return mix(mix((unsigned int)seed + (unsigned int)i * 0x9e3779b9u) ^ ((unsigned int)s * 0x85ebca77u));
}
"""


def montecarlo(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """Per-element Monte-Carlo estimate: an integral, a hit count or a random walk, or the total hit count."""
    kind, index, dtype, mixer = nth(variant, STRUCTURES)
    t = CTYPE[dtype]
    samples = int(pick(rng, (16, 33, 48, 64, 100)))
    if kind == "integrate":
        f = INTEGRANDS[index]
        f = to_double(f) if dtype == "float64" else f
        ins = [
            buffer("lo", "in", dtype, ["N"]),
            buffer("width", "in", dtype, ["N"], {"dist": "uniform", "low": 0.1, "high": 2}),
        ]
        contrib = (f"$Q {t} integrand({t} x) {{ return {f}; }}\n"
                   f"$Q {t} contrib(int seed, int i, int s, const {t}* lo, const {t}* width) {{\n"
                   f"  {t} u = ({t})(draw(seed, i, s) >> 8) * ({t})(1.0 / 16777216.0);\n"
                   f"  return integrand(lo[i] + width[i] * u);\n}}\n"
                   f"$Q {t} finish({t} acc, int i, int samples, const {t}* lo, const {t}* width) "
                   f"{{ return width[i] * (acc / ({t})samples); }}\n")  # fmt: skip
        what = (f"out[i] = width[i] * mean over s < samples of f(lo[i] + width[i] * u_s) with f(x) = {f} and "
                f"u_s = (draw(seed, i, s) >> 8) * 2^-24")  # fmt: skip
    elif kind == "walk":
        step = STEPS[index]
        ins = [buffer("lo", "in", "int32", ["N"], {"dist": "randint", "low": -100, "high": 100})]
        contrib = (f"$Q int contrib(int seed, int i, int s, const int* lo) {{\n"
                   f"  unsigned int h = draw(seed, i, s);\n  return {step};\n}}\n"
                   "$Q int finish(int acc, int i, int samples, const int* lo) { return lo[i] + acc; }\n")  # fmt: skip
        what = f"out[i] = lo[i] + sum over s < samples of step(h) with h = draw(seed, i, s), step(h) = {step}"
    else:
        stat = PREDICATES[index]
        ins = [buffer("lo", "in", "int32", ["N"], {"dist": "randint", "low": 0, "high": 1 << 25})]
        contrib = (f"$Q int contrib(int seed, int i, int s, const int* lo) {{\n"
                   f"  int u1 = (int)(draw(seed, i, 2 * s) >> 20), u2 = (int)(draw(seed, i, 2 * s + 1) >> 20);\n"
                   f"  return {stat} < lo[i] ? 1 : 0;\n}}\n"
                   "$Q int finish(int acc, int i, int samples, const int* lo) { return acc; }\n")  # fmt: skip
        what = (f"hits[i] = the number of s < samples with {stat} < lo[i], where u1 = draw(seed, i, 2s) >> 20 and "
                f"u2 = draw(seed, i, 2s + 1) >> 20")  # fmt: skip
        if kind == "hits_total":
            what = f"out[0] = sum over i of {what.replace('hits[i] = ', '')}"
        else:
            what = what.replace("hits[i]", "out[i]")
    inames = ", ".join(a["name"] for a in ins)
    sig = f"int n, int samples, int seed, {params(ins)}, {t}* out"
    kw = {"T": t, "sig": sig, "ins": inames, "call": f"n, samples, seed, {inames}, out"}
    head = fill(_HEAD, mixer=MIXERS[mixer], Q="$Q") + contrib
    templates = _TOTAL if kind == "hits_total" else _PER_ELEMENT
    dev = "#include <math.h>\n" + head.replace("$Q", "__device__ __forceinline__")
    impls = [impl(name, tags, dev + fill(src, **kw)) for name, tags, src in templates]
    reference = (
        "#include <math.h>\n" + head.replace("$Q", "static") + fill(_REF_TOTAL if kind == "hits_total" else _REF, **kw)
    )
    args = [scalar("n", "int32", "N"), scalar("samples", "int32", samples),
            scalar("seed", "int32", int(rng.integers(1, 1 << 30))), *ins,
            buffer("out", "out", dtype, [1] if kind == "hits_total" else ["N"])]  # fmt: skip
    mix_src = MIXERS[mixer].replace("\n", " ")
    return task(
        name="montecarlo", family="montecarlo", entry="montecarlo", args=args,
        description=f"Monte-Carlo with a counter-based hash ({dtype} output): {what}. Unsigned 32-bit arithmetic: "
        f"draw(seed, i, s) = mix(mix(seed + i * 0x9e3779b9u) ^ (s * 0x85ebca77u)), mix(h) {{ {mix_src} }}.",
        configs=[{"N": 1000}, {"N": 4097}, {"N": 20011}], hidden=[{"N": 3001}], perf=[{"N": 1 << 22}, {"N": 10000019}],
        reference=reference, implementations=impls, tolerance=_TOL.get(dtype),
    )  # fmt: skip


_REF = """
void montecarlo($sig) {
  for (int i = 0; i < n; ++i) {
    double acc = 0;  /* accurate reference; kernels may sum in $T */
    for (int s = 0; s < samples; ++s) acc += contrib(seed, i, s, $ins);
    out[i] = finish(($T)acc, i, samples, $ins);
  }
}
"""
_REF_TOTAL = """
void montecarlo($sig) {
  int total = 0;
  for (int i = 0; i < n; ++i)
    for (int s = 0; s < samples; ++s) total += contrib(seed, i, s, $ins);
  out[0] = total;
}
"""
_PER_ELEMENT = (
    (
        "naive",
        ["thread-per-element"],
        """
__global__ void mc_kernel($sig) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  $T acc = 0;
  for (int s = 0; s < samples; ++s) acc += contrib(seed, i, s, $ins);
  out[i] = finish(acc, i, samples, $ins);
}
extern "C" void montecarlo($sig) {
  mc_kernel<<<(n + 255) / 256, 256>>>($call);
}
""",
    ),
    (
        "grid_stride_unrolled",
        ["grid-stride", "loop-unrolling", "multi-element-per-thread"],
        """
// A fixed grid walks the elements; the sample loop is unrolled by 4 with independent partial sums.
__global__ void mc_kernel($sig) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    $T a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    int s = 0;
    for (; s + 3 < samples; s += 4) {
      a0 += contrib(seed, i, s, $ins);
      a1 += contrib(seed, i, s + 1, $ins);
      a2 += contrib(seed, i, s + 2, $ins);
      a3 += contrib(seed, i, s + 3, $ins);
    }
    for (; s < samples; ++s) a0 += contrib(seed, i, s, $ins);
    out[i] = finish((a0 + a1) + (a2 + a3), i, samples, $ins);
  }
}
extern "C" void montecarlo($sig) {
  int blocks = min((n + 255) / 256, 1024);
  mc_kernel<<<blocks, 256>>>($call);
}
""",
    ),
    (
        "warp_per_element",
        ["warp-per-element", "warp-shuffle"],
        """
// One warp per element: lanes take every 32nd sample, shuffles add the partial sums.
__global__ void mc_kernel($sig) {
  int i = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (i >= n) return;  // uniform per warp
  $T acc = 0;
  for (int s = lane; s < samples; s += 32) acc += contrib(seed, i, s, $ins);
  for (int off = 16; off > 0; off /= 2) acc += __shfl_down_sync(0xffffffffu, acc, off);
  if (lane == 0) out[i] = finish(acc, i, samples, $ins);
}
extern "C" void montecarlo($sig) {
  mc_kernel<<<(n + 7) / 8, 256>>>($call);
}
""",
    ),
)
_TOTAL = (
    (
        "naive",
        ["thread-per-element", "atomics"],
        """
// Every thread adds its element's count to the total with one atomic.
__global__ void mc_kernel($sig) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int acc = 0;
  for (int s = 0; s < samples; ++s) acc += contrib(seed, i, s, $ins);
  atomicAdd(out, acc);
}
extern "C" void montecarlo($sig) {
  cudaMemset(out, 0, sizeof(int));
  mc_kernel<<<(n + 255) / 256, 256>>>($call);
}
""",
    ),
    (
        "block_reduce",
        ["grid-stride", "shared-memory", "tree-reduction", "atomics"],
        """
// Grid-stride partial counts, a shared-memory tree per block, one atomic per block.
constexpr int THREADS = 256;
__global__ void mc_kernel($sig) {
  __shared__ int part[THREADS];
  int acc = 0;
  for (int i = blockIdx.x * THREADS + threadIdx.x; i < n; i += gridDim.x * THREADS)
    for (int s = 0; s < samples; ++s) acc += contrib(seed, i, s, $ins);
  part[threadIdx.x] = acc;
  __syncthreads();
  for (int w = THREADS / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, part[0]);
}
extern "C" void montecarlo($sig) {
  cudaMemset(out, 0, sizeof(int));
  mc_kernel<<<min((n + THREADS - 1) / THREADS, 512), THREADS>>>($call);
}
""",
    ),
    (
        "warp_shuffle",
        ["warp-shuffle", "atomics", "sample-parallel"],
        """
// Flattened (element, sample) pairs over all threads; a warp shuffle sum, one atomic per warp.
__global__ void mc_kernel($sig) {
  long total = (long)n * samples;
  int acc = 0;
  for (long k = blockIdx.x * (long)blockDim.x + threadIdx.x; k < total; k += (long)gridDim.x * blockDim.x)
    acc += contrib(seed, (int)(k / samples), (int)(k % samples), $ins);
  for (int off = 16; off > 0; off /= 2) acc += __shfl_down_sync(0xffffffffu, acc, off);
  if (threadIdx.x % 32 == 0) atomicAdd(out, acc);
}
extern "C" void montecarlo($sig) {
  cudaMemset(out, 0, sizeof(int));
  mc_kernel<<<1024, 256>>>($call);
}
""",
    ),
)
