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
    clustering,
    color,
    columnwise,
    compaction,
    convolution,
    elementwise,
    encoding,
    fractal,
    gather_scatter,
    geometry,
    graph,
    histogram,
    image,
    kron,
    linalg,
    merge,
    montecarlo,
    nbody,
    outer,
    permute,
    polynomial,
    pooling,
    reduction,
    rowwise,
    scan,
    search,
    segmented,
    selection,
    simulation,
    small_systems,
    sorting,
    sparse,
    stencil,
    transpose,
    triangular,
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
        "sorted_search": search.sorted_search,
        "merge_sorted": merge.merge_sorted,
        "topk_rows": selection.topk_rows,
        "segmented_reduce": segmented.segmented_reduce,
        "radix_histogram": encoding.radix_histogram,
        "run_length": encoding.run_length,
        "pde_step": simulation.pde_step,
        "life_step": simulation.life_step,
        "escape_time": fractal.escape_time,
        "pairwise_distance": geometry.pairwise_distance,
        "kmeans_assign": clustering.kmeans_assign,
        "color_convert": color.color_convert,
        "resize": color.resize,
        "ger": outer.ger,
        "trmv": triangular.trmv,
        "col_reduce": columnwise.col_reduce,
        "col_normalize": columnwise.col_normalize,
        "small_solve": small_systems.small_solve,
        "tridiag": small_systems.tridiag,
        "kron": kron.kron,
        "sym_band": kron.sym_band,
    }
)


def family_names() -> tuple[str, ...]:
    """Every registered family, sorted."""
    return tuple(sorted(FAMILIES))
