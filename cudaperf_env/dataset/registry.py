"""The family generators, by name: the one place a new family is registered."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from cudaperf_env.dataset.families import (
    argreduce,
    batched,
    bytes_ops,
    compaction,
    convolution,
    elementwise,
    gather_scatter,
    graph,
    histogram,
    image,
    linalg,
    montecarlo,
    nbody,
    permute,
    polynomial,
    pooling,
    reduction,
    rowwise,
    scan,
    sorting,
    sparse,
    stencil,
    transpose,
)

Generator = Callable[[np.random.Generator, int], dict[str, Any]]

FAMILIES: Mapping[str, Generator] = MappingProxyType(
    {
        "map_unary": elementwise.map_unary,
        "map_binary": elementwise.map_binary,
        "reduce": reduction.reduce,
        "norm": reduction.norm,
        "dot_reduce": reduction.dot_reduce,
        "argreduce": argreduce.argreduce,
        "histogram": histogram.histogram,
        "transpose": transpose.transpose,
        "matvec": linalg.matvec,
        "matmul": linalg.matmul,
        "row_reduce": rowwise.row_reduce,
        "row_normalize": rowwise.row_normalize,
        "stencil1d": stencil.stencil1d,
        "stencil2d": stencil.stencil2d,
        "stencil3d": stencil.stencil3d,
        "scan": scan.scan,
        "compaction": compaction.compact,
        "gather": gather_scatter.gather,
        "scatter_reduce": gather_scatter.scatter_reduce,
        "pool1d": pooling.pool1d,
        "pool2d": pooling.pool2d,
        "conv1d": convolution.conv1d,
        "conv2d": convolution.conv2d,
        "image_filter": image.image_filter,
        "byte_transform": bytes_ops.byte_transform,
        "byte_count": bytes_ops.byte_count,
        "spmv_csr": sparse.spmv_csr,
        "nbody": nbody.nbody,
        "montecarlo": montecarlo.montecarlo,
        "sort_rows": sorting.sort_rows,
        "frontier_step": graph.frontier_step,
        "batched": batched.batched,
        "permute": permute.permute,
        "polynomial": polynomial.polynomial,
    }
)


def family_names() -> tuple[str, ...]:
    """Every registered family, sorted."""
    return tuple(sorted(FAMILIES))
