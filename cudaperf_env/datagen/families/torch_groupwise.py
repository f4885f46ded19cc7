"""PyTorch models over groups that are not rows: reductions over a middle dim, softmax over channels, BatchNorm,
GroupNorm and InstanceNorm, and loss functions; kernels from :mod:`torch_grouped`."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import buffer, impl, pick, scalar
from cudaperf_env.datagen.families.torch_common import Chain, chain, module_source, pipeline, torch_task
from cudaperf_env.datagen.families.torch_grouped import Grouping, GroupProgram, grouped_kernels, signature
from cudaperf_env.datagen.families.torch_rowwise import Pass

NORMAL = {"dist": "normal", "mean": 0, "std": 1.0}
TOL = {"rtol": 1.0e-3, "atol": 1.0e-4}
# [B, R, C] reduced over dim=1: element j of group g = (b, c) sits at (b * R + j) * C + c.
_MIDDLE = Grouping("batch * cols", "rows", lambda j: f"((g / cols) * rows + ({j})) * cols + g % cols")
_CONFIGS3 = [{"B": 4, "R": 100, "C": 33}, {"B": 3, "R": 77, "C": 64}, {"B": 8, "R": 32, "C": 17}]
_HIDDEN3 = [{"B": 2, "R": 129, "C": 41}]
_PERF3 = [{"B": 32, "R": 1024, "C": 1024}]
_REDUCE = {
    "sum": ("torch.sum(x, dim=1)", ((Pass("s", "sum", "xj"), "float r = s;"),)),
    "mean": ("torch.mean(x, dim=1)", ((Pass("s", "sum", "xj"), "float r = s / n;"),)),
    "amax": ("torch.amax(x, dim=1)", ((Pass("r", "max", "xj"), ""),)),
    "amin": ("torch.amin(x, dim=1)", ((Pass("r", "min", "xj"), ""),)),
    "var": ("torch.var(x, dim=1)", ((Pass("s", "sum", "xj"), "float mean = s / n;"),
                                    (Pass("q", "sum", "(xj - mean) * (xj - mean)"), "float r = q / (n - 1);"))),
    "std": ("torch.std(x, dim=1)", ((Pass("s", "sum", "xj"), "float mean = s / n;"),
                                    (Pass("q", "sum", "(xj - mean) * (xj - mean)"), "float r = sqrtf(q / (n - 1));"))),
    "norm": ("torch.linalg.vector_norm(x, dim=1)", ((Pass("q", "sum", "xj * xj"), "float r = sqrtf(q);"),)),
    "logsumexp": ("torch.logsumexp(x, dim=1)", ((Pass("m", "max", "xj"), ""),
                                                (Pass("s", "sum", "expf(xj - m)"), "float r = m + logf(s);"))),
}


def dim_reduce(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """``forward(x)`` = post(reduce(pre(x), dim=1)) of a [B, R, C] tensor: columns, not rows."""
    pre, post = chain(rng, int(rng.integers(0, 3))), chain(rng, int(rng.integers(0, 2)))
    kind = pick(rng, tuple(_REDUCE))
    torch_op, passes = _REDUCE[kind]
    words = pipeline("x", pre.words, f"{kind}(dim=1)", post.words)
    source = _source3(f"Computes {words}.", [*pre.torch_lines(), f"x = {torch_op}", *post.torch_lines(), "return x"])
    program = GroupProgram("float xj = pre(x[$o]);", passes, "post(r)", per_element=False)
    tol = {"rtol": 1.0e-3, "atol": 1.0e-3} if kind == "sum" else TOL
    return _task3("dim_reduce", f"y = {words} (left to right) of a [B, R, C] float32 tensor, reduced over its middle "
                  "dimension to [B, C].", source, program, pre, post, ["B", "C"], tol)


def softmax_dim(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """``forward(x)`` = softmax, log_softmax or softmin over dim=1 of pre(x), x [B, R, C], optionally tempered."""
    pre, post = chain(rng, int(rng.integers(0, 2))), chain(rng, int(rng.integers(0, 2)), exclude=("exp_neg_abs",))
    name = pick(rng, ("softmax", "log_softmax", "softmin"))
    temperature = round(float(rng.uniform(0.5, 2.0)), 3) if rng.integers(0, 2) else 0.0
    t_line = [f"x = x / {temperature!r}"] if temperature else []
    t_c = f" / {temperature!r}f" if temperature else ""
    sign = "-" if name == "softmin" else ""
    load = f"float xj = {sign}pre(x[$o]){t_c};"
    passes = ((Pass("m", "max", "xj"), ""), (Pass("s", "sum", "expf(xj - m)"), ""))
    out = "post((xj - m) - logf(s))" if name == "log_softmax" else "post(expf(xj - m) / s)"
    body = [*pre.torch_lines(), *t_line, f"x = {'F' if name == 'softmin' else 'torch'}.{name}(x, dim=1)",
            *post.torch_lines(), "return x"]  # fmt: skip
    words = pipeline("x", pre.words, f"/ {temperature}" if temperature else "", f"{name}(dim=1)", post.words)
    tol = TOL if name == "log_softmax" else {"rtol": 1.0e-3, "atol": 1.0e-6}  # probabilities ~ 1/R: a small atol
    program = GroupProgram(load, passes, out, per_element=True)
    return _task3("softmax_dim", f"y = {words} (left to right) of a [B, R, C] float32 tensor over its middle "
                  "dimension.", _source3(f"Computes {words}.", body), program, pre, post, ["B", "R", "C"], tol)


def channel_norm(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """``forward(x)`` = post(norm(pre(x))) for x [N, C, L], norm one of BatchNorm1d (batch statistics),
    GroupNorm and InstanceNorm1d, with or without learned per-channel parameters."""
    pre, post = chain(rng, int(rng.integers(0, 2))), chain(rng, int(rng.integers(0, 3)))
    kind, groups = pick(rng, ("batch", "group", "instance")), int(pick(rng, (2, 4)))
    affine = kind != "instance" or bool(rng.integers(0, 2))
    layer, grouping, channel = {
        "batch": ("nn.BatchNorm1d(channels)", Grouping("channels", "batch * length",
                  lambda j: f"((({j}) / length) * channels + g) * length + ({j}) % length"), "g"),
        "group": (f"nn.GroupNorm({groups}, channels)", Grouping(f"batch * {groups}", f"channels / {groups} * length",
                  lambda j: f"g * (channels / {groups} * length) + ({j})"),
                  f"(g % {groups}) * (channels / {groups}) + j / length"),
        "instance": (f"nn.InstanceNorm1d(channels{', affine=True' if affine else ''})",
                     Grouping("batch * channels", "length", lambda j: f"g * length + ({j})"), "g % channels"),
    }[kind]  # fmt: skip
    passes: tuple[tuple[Pass, str], ...] = (
        (Pass("s", "sum", "xj"), "float mean = s / n;"),
        (Pass("q", "sum", "(xj - mean) * (xj - mean)"), "float rstd = rsqrtf(q / n + 1e-5f);"))
    scale = f" * weight[{channel}] + bias[{channel}]" if affine else ""
    program = GroupProgram("float xj = pre(x[$o]);", passes, f"post((xj - mean) * rstd{scale})", per_element=True)
    name = {"batch": "batch_norm", "group": f"group_norm({groups} groups)", "instance": "instance_norm"}[kind]
    words = pipeline("x", pre.words, name, post.words)
    body = [*pre.torch_lines(), "x = self.norm(x)", *post.torch_lines(), "return x"]
    source = module_source(
        doc=f"Computes {words}.", init_params="channels", init_body=[f"self.norm = {layer}"], forward_params="x",
        forward_body=body, constants={"batch_size": 16, "channels": 64, "length": 512},
        inputs=["torch.randn(batch_size, channels, length)"], init_inputs=["channels"],
    )
    params = [(f"norm.{p}", buffer(p, "in", "float32", ["C"], init)) for p, init in
              (("weight", {"dist": "uniform", "low": 0.5, "high": 1.5}),
               ("bias", {"dist": "uniform", "low": -0.5, "high": 0.5}))] if affine else []  # fmt: skip
    sizes = ["batch", "channels", "length"]
    sig, call = signature(["x", *(["weight", "bias"] if affine else [])], sizes)
    head = pre.device_function("pre") + post.device_function("post")
    few = kind != "instance"  # a group per channel (or channel group): 256 groups of a million elements
    impls = [impl(n, s, code) for n, s, code in grouped_kernels(program, grouping, sig, call, head, few)]
    statistics = {"batch": "every sample and position of a channel", "group": f"{groups} channel groups per sample",
                  "instance": "each channel of each sample"}[kind]  # fmt: skip
    return torch_task(
        name="channel_norm", family="channel_norm",
        description=f"y = {words} (left to right) of a [N, C, L] float32 tensor; statistics over {statistics}"
                    f"{', with learned per-channel weight and bias [C]' if affine else ''}.",
        source=source, inputs=[buffer("x", "in", "float32", ["N", "C", "L"], NORMAL)], parameters=params,
        outputs=[buffer("y", "out", "float32", ["N", "C", "L"])],
        sizes=[scalar("batch", "int32", "N"), scalar("channels", "int32", "C"), scalar("length", "int32", "L")],
        init_inputs=["C"], configs=[{"N": 4, "C": 8, "L": 100}, {"N": 3, "C": 12, "L": 77}, {"N": 8, "C": 16, "L": 33}],
        hidden=[{"N": 2, "C": 20, "L": 129}], perf=[{"N": 64, "C": 256, "L": 4096}], implementations=impls,
        tolerance=TOL,
    )


# name -> (torch call of x and t, ``$r`` its reduction; the per-element loss in C, of xj and tj)
_LOSSES = {
    "mse": ("F.mse_loss(x, t, reduction=$r)", "(xj - tj) * (xj - tj)"),
    "l1": ("F.l1_loss(x, t, reduction=$r)", "fabsf(xj - tj)"),
    "smooth_l1": ("F.smooth_l1_loss(x, t, reduction=$r)",
                  "fabsf(xj - tj) < 1.0f ? 0.5f * (xj - tj) * (xj - tj) : fabsf(xj - tj) - 0.5f"),
    "huber": ("F.huber_loss(x, t, reduction=$r, delta=0.5)",
              "fabsf(xj - tj) < 0.5f ? 0.5f * (xj - tj) * (xj - tj) : 0.5f * (fabsf(xj - tj) - 0.25f)"),
    "bce_logits": ("F.binary_cross_entropy_with_logits(x, t, reduction=$r)",
                   "fmaxf(xj, 0.0f) - xj * tj + log1pf(expf(-fabsf(xj)))"),
    "soft_margin": ("F.soft_margin_loss(x, t, reduction=$r)", "log1pf(expf(-tj * xj))"),
}


def loss(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """A loss of pre(x) against a target ``t`` [B, D]: elementwise losses averaged per row or over everything,
    or cross-entropy over classes with integer targets."""
    pre = chain(rng, int(rng.integers(0, 2)))
    kind = pick(rng, (*_LOSSES, "cross_entropy"))
    per_row = bool(rng.integers(0, 2))
    sizes = [scalar("batch", "int32", "B"), scalar("dim", "int32", "D")]
    rows = Grouping("batch", "dim", lambda j: f"g * dim + ({j})")
    everything = Grouping("1", "(long long)batch * dim", lambda j: f"({j})")
    if kind == "cross_entropy":
        target = buffer("t", "in", "int32", ["B"], {"dist": "randint", "low": 0, "high": "D"})
        passes: tuple[tuple[Pass, str], ...] = (
            (Pass("m", "max", "xj"), ""),
            (Pass("s", "sum", "expf(xj - m)"), "float r = m + logf(s) - pre(x[g * dim + t[g]]);"))
        program, grouping = GroupProgram("float xj = pre(x[$o]);", passes, "r", per_element=False), rows
        torch_loss = "F.cross_entropy(x, t.long(), reduction='none')"
        per_row, ints, floats = True, ["t"], ["x"]
        what = "cross-entropy of logits x [B, D] with integer class targets t [B]"
    else:
        expr, elem = _LOSSES[kind]
        target = buffer("t", "in", "float32", ["B", "D"], {"dist": "bernoulli", "p": 0.5} if kind == "bce_logits"
                        else {"dist": "uniform", "low": -1.0, "high": 1.0})  # fmt: skip
        passes = ((Pass("s", "sum", elem), "float r = s / n;"),)
        load = "float xj = pre(x[$o]); float tj = t[$o];"
        program, grouping = GroupProgram(load, passes, "r", per_element=False), rows if per_row else everything
        torch_loss = expr.replace("$r", "'none'") + ".mean(dim=-1)" if per_row else expr.replace("$r", "'mean'")
        ints, floats = [], ["x", "t"]
        what = f"{kind} loss of x [B, D] against targets t [B, D]"
    words = pipeline("x", pre.words, kind)
    body = [*pre.torch_lines(), f"return {torch_loss}"]
    source = module_source(doc=f"{what}.", init_params="", init_body=[], forward_params="x, t", forward_body=body,
                           constants={"batch_size": 128, "dim": 1000}, init_inputs=[],
                           inputs=["torch.randn(batch_size, dim)", "torch.randint(0, dim, (batch_size,))"
                                   if kind == "cross_entropy" else "torch.randn(batch_size, dim)"])  # fmt: skip
    sig, call = signature(floats, ["batch", "dim"], ints)
    head = pre.device_function("pre")
    few = grouping is everything  # one group: a single thread would walk every element
    impls = [impl(n, s, code) for n, s, code in grouped_kernels(program, grouping, sig, call, head, few)]
    reduced = "averaged over each row, y [B]" if per_row else "averaged over every element, y [1]"
    return torch_task(
        name="loss", family="loss", description=f"y = {what} ({words}), {reduced}.", source=source,
        inputs=[buffer("x", "in", "float32", ["B", "D"], {"dist": "normal", "mean": 0, "std": 1.5}), target],
        parameters=[], outputs=[buffer("y", "out", "float32", ["B"] if per_row else [1])], sizes=sizes,
        init_inputs=[], configs=[{"B": 8, "D": 1000}, {"B": 13, "D": 781}, {"B": 32, "D": 256}],
        hidden=[{"B": 5, "D": 2049}], perf=[{"B": 4096, "D": 8192}], implementations=impls,
        tolerance={"rtol": 1.0e-3, "atol": 1.0e-5},
    )


def _source3(doc: str, body: list[str]) -> str:
    return module_source(doc=doc, init_params="", init_body=[], forward_params="x", forward_body=body,
                         constants={"batch_size": 16, "rows": 256, "cols": 256}, init_inputs=[],
                         inputs=["torch.randn(batch_size, rows, cols)"])  # fmt: skip


def _task3(family: str, description: str, source: str, program: GroupProgram, pre: Chain, post: Chain,
           out_shape: list[str], tol: dict[str, float]) -> dict[str, Any]:  # fmt: skip
    sizes = ["batch", "rows", "cols"]
    sig, call = signature(["x"], sizes)
    head = pre.device_function("pre") + post.device_function("post")
    impls = [impl(n, s, code) for n, s, code in grouped_kernels(program, _MIDDLE, sig, call, head)]
    return torch_task(
        name=family, family=family, description=description, source=source,
        inputs=[buffer("x", "in", "float32", ["B", "R", "C"], NORMAL)], parameters=[],
        outputs=[buffer("y", "out", "float32", out_shape)],
        sizes=[scalar("batch", "int32", "B"), scalar("rows", "int32", "R"), scalar("cols", "int32", "C")],
        init_inputs=[], configs=_CONFIGS3, hidden=_HIDDEN3, perf=_PERF3, implementations=impls, tolerance=tol,
    )
