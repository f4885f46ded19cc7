"""The scan, attention and MLP torch2cuda families: their first variants reach every structure, and every
implementation of a variant off the starters' path (exclusive scan along the middle dim, projected attention,
pre-norm residual MLP) is correct on the CPU backend."""

import numpy as np
import pytest

from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.datagen.families import torch_attention, torch_mlp, torch_scan
from cudaperf_env.datagen.families.common import nth
from cudaperf_env.datagen.torch_registry import TORCH_FAMILIES
from cudaperf_env.evaluate import Evaluator
from cudaperf_env.tasks import parse_task

FAMILIES = {
    "cumsum_dim": (torch_scan.STRUCTURES, ["torch.cumsum(x, dim=-1)", "torch.cumprod(x, dim=1)",
                                           "torch.cummax(x, dim=-1).values", "torch.flip(torch.cumsum(",
                                           "torch.cumsum(x, dim=1) - x"]),
    "attention": (torch_attention.STRUCTURES, ["F.scaled_dot_product_attention(q, k, v, is_causal=True)",
                                               "masked_fill(mask", "q.size(-1) ** -0.5", "self.proj(x)",
                                               "nn.Linear(embed, embed, bias=False)"]),
    "mlp": (torch_mlp.STRUCTURES, ["nn.LayerNorm(dim)", "F.gelu(h)", 'F.gelu(h, approximate="tanh")', "F.silu(h)",
                                   "torch.relu(h)", "x = x + h", "bias=False"]),
}  # fmt: skip
# One structure per family that the starters (variant 0) do not exercise.
OFF_PATH = {"cumsum_dim": ("exclusive_cumsum", 1, 1, 1), "attention": ("sdpa", False, "bias", 1),
            "mlp": ("silu", True, True, True, 1)}  # fmt: skip


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_first_variants_reach_every_structure(family):
    structures, spellings = FAMILIES[family]
    assert {nth(v, structures) for v in range(len(structures))} == set(structures)
    sources = [TORCH_FAMILIES[family](np.random.default_rng(v), v)["reference"]["source"]
               for v in range(len(structures))]  # fmt: skip
    for spelling in spellings:
        assert any(spelling in source for source in sources), f"{family}: no variant spells {spelling!r}"


@pytest.mark.parametrize("family", sorted(OFF_PATH))
def test_every_implementation_of_an_off_path_variant_is_correct(family):
    structures, _ = FAMILIES[family]
    variant = next(v for v in range(len(structures)) if nth(v, structures) == OFF_PATH[family])
    data = TORCH_FAMILIES[family](np.random.default_rng(5), variant)
    task = parse_task(data, f"torch2cuda/{family}_test")
    evaluator = Evaluator(CpuBackend(timeout_s=60.0))
    for implementation in task.implementations:
        e = evaluator.evaluate(task, implementation.source, seed=3)
        assert (e.status, e.correct) == ("ok", True), f"{implementation.name}: {e.message}\n{e.compile_log}"
