"""Data permutations: reverse, roll, (de)interleave, tile transposes, channel shuffles, 3-D axis permutations,
pixel shuffles, flips, rotations and even-odd splits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import buffer, fill, grid, impl, nth, params, pick, scalar, task

_INIT = {"uint8": {"dist": "randint", "low": 0, "high": 256}, "int32": {"dist": "randint", "low": -1000, "high": 1000}}


@dataclass(frozen=True)
class Perm:
    """One permutation: its arguments, and the copy as a gather over outputs and a scatter over inputs.

    Attributes:
        args: Scalar and buffer arguments in call order.
        n_out: C expression of the number of gather steps (each writes its outputs for index o).
        gather: C statements for one gather step o.
        n_in: C expression of the number of scatter steps.
        scatter: C statements for one scatter step i.
        what: Description of the mapping.
        configs: Shown, hidden and perf configurations.
    """

    args: list[dict[str, Any]]
    n_out: str
    gather: str
    n_in: str
    scatter: str
    what: str
    configs: tuple[list[dict[str, int]], list[dict[str, int]], list[dict[str, int]]]


_FLAT = ([{"N": 1000}, {"N": 4099}, {"N": 1000003}], [{"N": 77777}], [{"N": 1 << 26}, {"N": 50000017}])
_ROWS = ([{"R": 3, "C": 5}, {"R": 129, "C": 257}, {"R": 1001, "C": 999}], [{"R": 77, "C": 301}],
         [{"R": 16384, "C": 4096}, {"R": 4097, "C": 16385}])  # fmt: skip


_AXES_CFG = ([{"A": 3, "B": 5, "C": 7}, {"A": 16, "B": 33, "C": 65}, {"A": 64, "B": 129, "C": 127}],
             [{"A": 9, "B": 31, "C": 17}], [{"A": 256, "B": 512, "C": 513}, {"A": 1024, "B": 64, "C": 1025}])
_IMAGE_CFG = ([{"C": 3, "H": 5, "W": 7}, {"C": 4, "H": 33, "W": 65}, {"C": 8, "H": 127, "W": 129}],
              [{"C": 3, "H": 31, "W": 17}], [{"C": 64, "H": 512, "W": 513}, {"C": 3, "H": 4096, "W": 4097}])


def _axes(order: tuple[int, int, int], dtype: str) -> Perm:
    """out = x (da x db x dc, row-major) with its axes permuted: out axis k is x axis order[k]."""
    dims, coords = ("da", "db", "dc"), ("a", "b", "c")
    od = [dims[k] for k in order]  # output extents
    inv = [order.index(k) for k in range(3)]  # output axis of each input axis
    u = [f"u{k}" for k in range(3)]
    gather = (f"int u2 = o % {od[2]}, u1 = o / {od[2]} % {od[1]}, u0 = o / ({od[2]} * {od[1]}); "
              f"out[o] = x[((long){u[inv[0]]} * db + {u[inv[1]]}) * dc + {u[inv[2]]}];")  # fmt: skip
    scatter = (f"int c = i % dc, b = i / dc % db, a = i / (dc * db); "
               f"out[((long){coords[order[0]]} * {od[1]} + {coords[order[1]]}) * {od[2]} + {coords[order[2]]}] = x[i];")
    args = [scalar("da", "int32", "A"), scalar("db", "int32", "B"), scalar("dc", "int32", "C"),
            buffer("x", "in", dtype, ["A", "B", "C"], _INIT.get(dtype)),
            buffer("out", "out", dtype, [d[1].upper() for d in od])]  # fmt: skip
    what = (f"axis permutation ({', '.join(map(str, order))}) of the da x db x dc row-major tensor x: out has "
            f"extents {' x '.join(od)} and out[{']['.join(coords[k] for k in order)}] = x[a][b][c]")
    return Perm(args, "da * db * dc", gather, "da * db * dc", scatter, what, _AXES_CFG)


def _pixel_shuffle(name: str, dtype: str, s: int) -> Perm:
    """depth_to_space: x (c*s*s) x h x w -> out c x (h*s) x (w*s); space_to_depth is its inverse."""
    small = ["C", f"H * {s}", f"W * {s}"]
    deep = [f"C * {s * s}", "H", "W"]
    to_space = name == "depth_to_space"
    deep_at = f"(((long)ch * {s * s} + (oh % {s}) * {s} + ow % {s}) * h + oh / {s}) * w + ow / {s}"
    space_at = f"((long)c2 * h * {s} + hh * {s} + k / {s}) * (w * {s}) + ww * {s} + k % {s}"
    from_space = f"int ow = $v % (w * {s}), oh = $v / (w * {s}) % (h * {s}), ch = $v / ((long)w * {s} * h * {s}); "
    from_deep = f"int ww = $v % w, hh = $v / w % h, c2 = $v / (w * h) / {s * s}, k = $v / (w * h) % {s * s}; "
    if to_space:
        gather = fill(from_space, v="o") + f"out[o] = x[{deep_at}];"
        scatter = fill(from_deep, v="i") + f"out[{space_at}] = x[i];"
    else:
        gather = fill(from_deep, v="o") + f"out[o] = x[{space_at}];"
        scatter = fill(from_space, v="i") + f"out[{deep_at}] = x[i];"
    args = [scalar("c", "int32", "C"), scalar("h", "int32", "H"), scalar("w", "int32", "W"),
            buffer("x", "in", dtype, deep if to_space else small, _INIT.get(dtype)),
            buffer("out", "out", dtype, small if to_space else deep)]  # fmt: skip
    what = (f"{name.replace('_', ' ')} with block {s}: the (c*{s * s}) x h x w tensor D and the c x (h*{s}) x "
            f"(w*{s}) tensor S (both row-major) correspond by S[ch][y*{s} + i][q*{s} + j] = "
            f"D[ch*{s * s} + i*{s} + j][y][q]; "
            f"x is {'D, out is S' if to_space else 'S, out is D'}")
    return Perm(args, f"c * h * w * {s * s}", gather, f"c * h * w * {s * s}", scatter, what, _IMAGE_CFG)


def _extra(name: str, dtype: str) -> Perm:
    """Row flips, 90-degree rotation, and the even-odd split of a sequence."""
    x = buffer("x", "in", dtype, ["R", "C"], _INIT.get(dtype))
    rc = [scalar("rows", "int32", "R"), scalar("cols", "int32", "C")]
    if name == "flip_rows":
        return Perm([*rc, x, buffer("out", "out", dtype, ["R", "C"])], "rows * cols",
                    "out[o] = x[(long)(rows - 1 - o / cols) * cols + o % cols];", "rows * cols",
                    "out[(long)(rows - 1 - i / cols) * cols + i % cols] = x[i];",
                    "out[r][c] = x[rows - 1 - r][c] (rows x cols row-major, row order reversed)", _ROWS)  # fmt: skip
    if name == "rotate90":
        return Perm([*rc, x, buffer("out", "out", dtype, ["C", "R"])], "rows * cols",
                    "int c = o / rows, q = o % rows; out[o] = x[(long)(rows - 1 - q) * cols + c];", "rows * cols",
                    "int r = i / cols, c = i % cols; out[(long)c * rows + rows - 1 - r] = x[i];",
                    "x is rows x cols, out is cols x rows (row-major) with out[c][rows - 1 - r] = x[r][c] "
                    "(a clockwise quarter turn)", _ROWS)  # fmt: skip
    xs = buffer("x", "in", dtype, ["N"], _INIT.get(dtype))
    return Perm([scalar("n", "int32", "N"), xs, buffer("out", "out", dtype, ["N"])], "n",
                "int h = (n + 1) / 2; out[o] = o < h ? x[2 * o] : x[2 * (o - h) + 1];", "n",
                "int h = (n + 1) / 2; out[i % 2 ? h + i / 2 : i / 2] = x[i];",
                "even-odd split: out holds x's even-indexed elements in order, then its odd-indexed ones "
                "(out[o] = x[2o] for o < (n + 1) / 2, then x[1], x[3], ...)", _FLAT)  # fmt: skip


def _kind(name: str, dtype: str, rng: np.random.Generator) -> Perm:
    if name.startswith("axes_"):
        return _axes(tuple(int(c) for c in name[5:]), dtype)  # type: ignore[arg-type]
    if name in ("depth_to_space", "space_to_depth"):
        return _pixel_shuffle(name, dtype, int(pick(rng, (2, 3, 4))))
    if name in ("flip_rows", "rotate90", "even_odd"):
        return _extra(name, dtype)
    x, t = buffer("x", "in", dtype, ["N"], _INIT.get(dtype)), dtype
    if name == "reverse":
        return Perm(
            [scalar("n", "int32", "N"), x, buffer("out", "out", t, ["N"])],
            "n",
            "out[o] = x[n - 1 - o];",
            "n",
            "out[n - 1 - i] = x[i];",
            "out[o] = x[n - 1 - o] for o < n",
            _FLAT,
        )
    if name == "roll":
        shift = int(pick(rng, (1, 3, 17, 1000, 65537)))
        return Perm(
            [scalar("n", "int32", "N"), scalar("shift", "int32", shift), x, buffer("out", "out", t, ["N"])],
            "n",
            "out[o] = x[(int)(((long)o + n - shift % n) % n)];",
            "n",
            "out[(int)(((long)i + shift) % n)] = x[i];",
            "out[(o + shift) mod n] = x[o] (roll right by shift >= 0, which may exceed n)",
            _FLAT,
        )
    xr = buffer("x", "in", t, ["R", "C"], _INIT.get(dtype))
    rc = [scalar("rows", "int32", "R"), scalar("cols", "int32", "C")]
    if name == "reverse_rows":
        return Perm(
            [*rc, xr, buffer("out", "out", t, ["R", "C"])],
            "rows * cols",
            "out[o] = x[o - o % cols + (cols - 1 - o % cols)];",
            "rows * cols",
            "out[i - i % cols + (cols - 1 - i % cols)] = x[i];",
            "out[r][c] = x[r][cols - 1 - c] (rows x cols row-major)",
            _ROWS,
        )
    if name == "roll_rows":
        shift = int(pick(rng, (1, 5, 100)))
        return Perm(
            [*rc, scalar("shift", "int32", shift), xr, buffer("out", "out", t, ["R", "C"])],
            "rows * cols",
            "out[o] = x[o - o % cols + (o % cols + cols - shift % cols) % cols];",
            "rows * cols",
            "out[i - i % cols + (i % cols + shift) % cols] = x[i];",
            "out[r][(c + shift) mod cols] = x[r][c] (each row rolled right; rows x cols row-major)",
            _ROWS,
        )
    if name in ("interleave2", "interleave3"):
        k = 2 if name == "interleave2" else 3
        ins = [buffer(v, "in", t, ["N"], _INIT.get(dtype)) for v in "abc"[:k]]
        g = " ".join(f"out[{k} * o + {j}] = {v}[o];" for j, v in enumerate("abc"[:k]))
        s = "int o = i % n, j = i / n; " + " else ".join(
            f"if (j == {j}) out[{k} * o + {j}] = {v}[o];" for j, v in enumerate("abc"[:k])
        )
        return Perm(
            [scalar("n", "int32", "N"), *ins, buffer("out", "out", t, ["N", k])],
            "n",
            g,
            f"{k} * n",
            s,
            f"out[{k} * o + j] = the j-th input ({', '.join('abc'[:k])}) at o, for o < n (interleave)",
            _FLAT,
        )
    if name in ("deinterleave2", "deinterleave3"):
        k = 2 if name == "deinterleave2" else 3
        outs = [buffer(v, "out", t, ["N"]) for v in "abc"[:k]]
        g = " ".join(f"{v}[o] = x[{k} * o + {j}];" for j, v in enumerate("abc"[:k]))
        s = f"int o = i / {k}, j = i % {k}; " + " else ".join(
            f"if (j == {j}) {v}[o] = x[i];" for j, v in enumerate("abc"[:k])
        )
        return Perm([scalar("n", "int32", "N"), buffer("x", "in", t, ["N", k], _INIT.get(dtype)), *outs], "n", g,
                    f"{k} * n", s, f"output j ({', '.join('abc'[:k])}) [o] = x[{k} * o + j] for o < n (deinterleave)",
                    _FLAT)  # fmt: skip
    if name == "tile_transpose":
        tile = int(pick(rng, (4, 8, 16, 32)))
        g = (
            f"int w = gr * {tile}, r = o / w, c = o % w; "
            f"out[o] = x[(long)((c / {tile}) * {tile} + r % {tile}) * (gc * {tile})"
            f" + (r / {tile}) * {tile} + c % {tile}];"
        )
        s = (
            f"int w = gc * {tile}, r = i / w, c = i % w; "
            f"out[(long)((c / {tile}) * {tile} + r % {tile}) * (gr * {tile})"
            f" + (r / {tile}) * {tile} + c % {tile}] = x[i];"
        )
        scale = 32 // tile if tile < 16 else 1  # keep the small-tile grids as large as the others, odd

        def grid(gr: int, gc: int) -> dict[str, int]:
            return {"GR": gr * scale + (scale > 1), "GC": gc * scale + (scale > 1)}

        cfg = ([grid(1, 3), grid(13, 7), grid(31, 17)], [grid(9, 11)], [grid(256, 512), grid(1023, 129)])
        return Perm(
            [
                scalar("gr", "int32", "GR"),
                scalar("gc", "int32", "GC"),
                buffer("x", "in", t, [f"GR * {tile}", f"GC * {tile}"], _INIT.get(dtype)),
                buffer("out", "out", t, [f"GC * {tile}", f"GR * {tile}"]),
            ],
            f"gr * gc * {tile * tile}",
            g,
            f"gr * gc * {tile * tile}",
            s,
            f"x is a (gr*{tile}) x (gc*{tile}) row-major grid of {tile} x {tile} tiles; out is the "
            f"(gc*{tile}) x (gr*{tile}) grid with out tile (I, J) = x tile (J, I), each tile copied as is "
            f"(not transposed inside)",
            cfg,
        )
    # channel shuffle: x [B, G, J, S] -> out [B, J, G, S]
    g = (
        "int s = o % hw, c = o / hw % (groups * per), b = o / (hw * groups * per); "
        "out[o] = x[(((long)b * groups + c % groups) * per + c / groups) * hw + s];"
    )
    s = (
        "int s = i % hw, c = i / hw % (groups * per), b = i / (hw * groups * per); "
        "out[(((long)b * per + c % per) * groups + c / per) * hw + s] = x[i];"
    )
    dims = [
        scalar("batch", "int32", "B"),
        scalar("groups", "int32", "G"),
        scalar("per", "int32", "P"),
        scalar("hw", "int32", "S"),
    ]
    cfg = (
        [{"B": 2, "G": 3, "P": 5, "S": 7}, {"B": 4, "G": 4, "P": 16, "S": 225}, {"B": 8, "G": 8, "P": 8, "S": 3136}],
        [{"B": 3, "G": 2, "P": 24, "S": 49}],
        [{"B": 64, "G": 8, "P": 32, "S": 3136}, {"B": 128, "G": 3, "P": 81, "S": 197}],
    )
    return Perm(
        [
            *dims,
            buffer("x", "in", t, ["B", "G", "P", "S"], _INIT.get(dtype)),
            buffer("out", "out", t, ["B", "P", "G", "S"]),
        ],
        "batch * groups * per * hw",
        g,
        "batch * groups * per * hw",
        s,
        "channel shuffle: x is batch x groups x per x hw, "
        "out is batch x per x groups x hw with out[b][p][g][s] = x[b][g][p][s]",
        cfg,
    )


KINDS = (
    "reverse",
    "roll",
    "reverse_rows",
    "roll_rows",
    "interleave2",
    "interleave3",
    "deinterleave2",
    "deinterleave3",
    "tile_transpose",
    "channel_shuffle",
    "axes_021",
    "axes_102",
    "axes_120",
    "axes_201",
    "axes_210",
    "depth_to_space",
    "space_to_depth",
    "flip_rows",
    "rotate90",
    "even_odd",
)
STRUCTURES = grid(KINDS, ("float32", "float64", "int32", "uint8"))


def permute(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """A pure data movement: every output element is one input element (gather) or vice versa (scatter)."""
    name, dtype = nth(variant, STRUCTURES)
    p = _kind(name, dtype, rng)
    sig = params(p.args)
    call = ", ".join(a["name"] for a in p.args)
    kw = {"sig": sig, "call": call, "n_out": p.n_out, "gather": p.gather, "n_in": p.n_in, "scatter": p.scatter}
    impls = [
        impl("naive", ["thread-per-output", "gather"], fill(_GATHER, **kw)),
        impl("scatter", ["thread-per-input", "scatter"], fill(_SCATTER, **kw)),
        impl(
            "grid_stride_x4",
            ["grid-stride", "multi-element-per-thread", "loop-unrolling", "coalesced"],
            fill(_GRID4, **kw),
        ),
    ]
    shown, hidden, perf = p.configs
    return task(
        name=f"permute_{name}",
        family="permute",
        entry="permute",
        args=p.args,
        description=f"Permutation of {dtype} data ({name.replace('_', ' ')}): {p.what}.",
        configs=shown,
        hidden=hidden,
        perf=perf,
        reference=fill(_REF, **kw),
        implementations=impls,
    )


_REF = """
void permute($sig) {
  for (int o = 0; o < $n_out; ++o) { $gather }
}
"""
_GATHER = """
// One thread per output: reads follow the permutation, writes are contiguous.
__global__ void permute_kernel($sig) {
  int o = blockIdx.x * blockDim.x + threadIdx.x;
  if (o < $n_out) { $gather }
}
extern "C" void permute($sig) {
  permute_kernel<<<($n_out + 255) / 256, 256>>>($call);
}
"""
_SCATTER = """
// One thread per input: reads are contiguous, writes follow the permutation.
__global__ void permute_kernel($sig) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < $n_in) { $scatter }
}
extern "C" void permute($sig) {
  permute_kernel<<<($n_in + 255) / 256, 256>>>($call);
}
"""
_GRID4 = """
// A fixed grid; each thread does 4 outputs per pass, blockDim apart so every warp access stays contiguous.
__global__ void permute_kernel($sig) {
  int total = $n_out;
  for (int base = blockIdx.x * blockDim.x * 4 + threadIdx.x; base < total; base += gridDim.x * blockDim.x * 4) {
    #pragma unroll
    for (int u = 0; u < 4; ++u) {
      int o = base + u * blockDim.x;
      if (o < total) { $gather }
    }
  }
}
extern "C" void permute($sig) {
  int blocks = min(($n_out + 1023) / 1024, 2048);
  permute_kernel<<<blocks > 0 ? blocks : 1, 256>>>($call);
}
"""
