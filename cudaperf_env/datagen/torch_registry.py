"""The PyTorch-to-CUDA family generators, by name, and the bundled starter tasks drawn from them."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import yaml

from cudaperf_env.datagen.families import (
    torch_attention,
    torch_bmm,
    torch_groupwise,
    torch_index,
    torch_linear,
    torch_mlp,
    torch_pointwise,
    torch_rowwise,
    torch_scan,
    torch_spatial,
)
from cudaperf_env.datagen.registry import Generator

TORCH_FAMILIES: Mapping[str, Generator] = MappingProxyType(
    {
        "activation_chain": torch_pointwise.activation_chain,
        "affine_chain": torch_pointwise.affine_chain,
        "row_reduce": torch_rowwise.row_reduce,
        "softmax": torch_rowwise.softmax,
        "norm": torch_rowwise.norm,
        "linear": torch_linear.linear,
        "matmul": torch_linear.matmul,
        "dim_reduce": torch_groupwise.dim_reduce,
        "softmax_dim": torch_groupwise.softmax_dim,
        "channel_norm": torch_groupwise.channel_norm,
        "loss": torch_groupwise.loss,
        "pooling": torch_spatial.pooling,
        "conv": torch_spatial.conv,
        "gather": torch_index.gather,
        "scatter_add": torch_index.scatter_add,
        "bmm": torch_bmm.bmm,
        "cumsum_dim": torch_scan.cumsum_dim,
        "attention": torch_attention.attention,
        "mlp": torch_mlp.mlp,
    }
)
STARTER_DIR = Path(__file__).resolve().parents[1] / "tasks" / "data" / "torch2cuda"
# (task name, family, generator seed): the bundled starters, one or two per family, chosen for variety.
STARTERS: tuple[tuple[str, str, int], ...] = (
    ("tanh", "activation_chain", 11),
    ("activation_chain", "activation_chain", 3),
    ("affine_chain", "affine_chain", 2),
    ("row_l2_norm", "row_reduce", 11),
    ("row_mean", "row_reduce", 3),
    ("softmax", "softmax", 11),
    ("log_softmax", "softmax", 1),
    ("layernorm_residual", "norm", 11),
    ("rmsnorm", "norm", 6),
    ("linear_mish_relu", "linear", 5),
    ("matmul", "matmul", 11),
    ("matmul_leaky_gelu", "matmul", 8),
    ("var_dim1", "dim_reduce", 5),
    ("softmin_dim1", "softmax_dim", 1),
    ("batchnorm", "channel_norm", 2),
    ("huber_rows", "loss", 1),
    ("avg_pool2d_padded", "pooling", 4),
    ("conv2d_k5", "conv", 4),
    ("index_select", "gather", 1),
    ("scatter_add", "scatter_add", 1),
    ("bmm_bias_hardsigmoid", "bmm", 1),
    ("cumsum", "cumsum_dim", 1),
    ("causal_attention", "attention", 1),
    ("mlp_gelu", "mlp", 1),
)


def starter(name: str, family: str, seed: int) -> dict[str, Any]:
    """The starter task ``torch2cuda/<name>``: variant 0 of ``family`` drawn with ``seed``."""
    data = TORCH_FAMILIES[family](np.random.default_rng(seed), 0)
    data["id"] = f"torch2cuda/{name}"
    data["provenance"] = {"generator": family, "seed": seed, "variant": 0}
    for implementation in data["implementations"]:
        implementation.pop("labels", None)
    return data


def write_starters(out: Path = STARTER_DIR) -> list[Path]:
    """Write every starter task as ``<out>/<name>.yaml`` (``python -m cudaperf_env.datagen.torch_registry``)."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, family, seed in STARTERS:
        path = out / f"{name}.yaml"
        path.write_text(dump_yaml(starter(name, family, seed)), encoding="utf-8")
        paths.append(path)
    return paths


def dump_yaml(data: Mapping[str, Any]) -> str:
    """A task mapping as YAML: field order kept, sources as ``|`` blocks, short lists inline."""
    return yaml.dump(dict(data), Dumper=_BlockDumper, sort_keys=False, width=120, default_flow_style=None)


class _BlockDumper(yaml.SafeDumper):
    """Multi-line strings (sources) as ``|`` blocks."""


def _block(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_BlockDumper.add_representer(str, _block)

if __name__ == "__main__":
    for written in write_starters():
        print(written)
