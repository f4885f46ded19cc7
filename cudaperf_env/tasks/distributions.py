"""Named input distributions: how a task's ``init`` draws a buffer's values (pure functions of an rng).

Plain distributions fill one buffer (``normal``, ``randint``, ``symmetric``, ``planted``, ...).
Structured ones (``csr_graph``, ``csr_matrix``) describe several buffers that must agree with
each other (row pointers, column indices, values); every argument naming the same ``group``
takes its ``part`` of one structure, drawn once from the group's own stream.

Every function takes the resolved parameters (expressions already evaluated), the buffer's
element count and shape, and an rng; it returns float64 or int64 values the caller casts.
See docs/task-format.md for the task-file spelling and an example of each.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

Params = Mapping[str, float]


@dataclass(frozen=True)
class Distribution:
    """One named distribution.

    Attributes:
        keys: Parameters it accepts (expressions of the configuration's symbols).
        draw: ``(params, n, shape, rng) -> values`` for a plain one, ``(params, rng) -> {part: values}``
            for a structured one.
        parts: For structured distributions, the buffers it describes; empty for plain ones.
        needs: Parameters that must be given.
    """

    keys: frozenset[str]
    draw: Callable
    parts: tuple[str, ...] = ()
    needs: frozenset[str] = frozenset()

    @property
    def structured(self) -> bool:
        return bool(self.parts)


def normal(p: Params, n: int, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    return rng.normal(p.get("mean", 0.0), p.get("std", 1.0), n)


def uniform(p: Params, n: int, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    return rng.uniform(p.get("low", 0.0), p.get("high", 1.0), n)


def randint(p: Params, n: int, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    low, high = int(p.get("low", 0)), int(p.get("high", 100))
    return rng.integers(low, max(high, low + 1), n, dtype=np.int64)


def bernoulli(p: Params, n: int, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """0 or 1, 1 with probability ``p`` (bool masks and flags)."""
    return (rng.random(n) < p.get("p", 0.5)).astype(np.int64)


def sorted_randint(p: Params, n: int, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    return np.sort(randint(p, n, shape, rng))


def unique(p: Params, n: int, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Distinct integers in ``[low, high)`` in random order (keys of a set, a hash table)."""
    low, high = int(p.get("low", 0)), int(p.get("high", 1 << 30))
    if high - low < n:
        raise ValueError(f"unique: [{low}, {high}) holds fewer than {n} distinct values")
    return rng.choice(high - low, n, replace=False).astype(np.int64) + low


def unique_sorted(p: Params, n: int, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Strictly increasing integers in ``[low, high)`` (sorted keys for binary search, merges)."""
    return np.sort(unique(p, n, shape, rng))


def permutation(p: Params, n: int, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    return rng.permutation(n).astype(np.int64)


def csr_rowptr(p: Params, n: int, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    nnz = int(p.get("nnz", 0))
    cuts = np.sort(rng.integers(0, nnz + 1, max(n - 2, 0), dtype=np.int64))
    return np.concatenate([[0], cuts, [nnz]]) if n >= 2 else np.zeros(n, np.int64)


def planted(p: Params, n: int, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Integers in ``[low, high)`` without ``value`` except at ``count`` random positions.

    For searches: the first match is at a random index, never at 0 by construction, and
    ``count: 0`` gives an input where the value is absent.
    """
    low, high, value, count = int(p.get("low", 0)), int(p.get("high", 100)), int(p["value"]), int(p.get("count", 1))
    if not low <= value < high or high - low < 2:
        raise ValueError(f"planted: value {value} must lie in [{low}, {high}) with another value beside it")
    if not 0 <= count <= n:
        raise ValueError(f"planted: count {count} must be between 0 and the buffer's {n} elements")
    values = rng.integers(low, high - 1, n, dtype=np.int64)
    values[values >= value] += 1  # uniform over the range without ``value``
    values[rng.choice(n, count, replace=False)] = value
    return values


def _square(shape: tuple[int, ...], name: str) -> int:
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"{name}: needs a square two-dimensional shape, got {list(shape)}")
    return shape[0]


def symmetric(p: Params, n: int, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """A symmetric matrix with normal entries (row-major)."""
    m = rng.normal(p.get("mean", 0.0), p.get("std", 1.0), (_square(shape, "symmetric"),) * 2)
    return np.triu(m) + np.triu(m, 1).T


def _dominant(m: np.ndarray) -> np.ndarray:
    """Make the diagonal exceed each row's off-diagonal magnitude: nonsingular (and SPD if symmetric)."""
    off = np.abs(m).sum(axis=1) - np.abs(np.diag(m))
    np.fill_diagonal(m, off + 1.0)
    return m


def spd(p: Params, n: int, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Symmetric positive definite (strictly diagonally dominant, positive diagonal): for Cholesky, CG."""
    return _dominant(symmetric(p, n, shape, rng))


def nonsingular(p: Params, n: int, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """A dense matrix that is strictly diagonally dominant, hence invertible (LU without pivoting works)."""
    size = _square(shape, "nonsingular")
    return _dominant(rng.normal(p.get("mean", 0.0), p.get("std", 1.0), (size, size)))


def _random_edges(nodes: int, edges: int, connected: bool, rng: np.random.Generator) -> np.ndarray:
    """``edges`` distinct undirected edges ``(u < v)`` without self loops; a spanning tree first if connected."""
    if edges > nodes * (nodes - 1) // 2:
        raise ValueError(f"{edges} edges do not fit a simple graph of {nodes} nodes")
    if connected and edges < nodes - 1:
        raise ValueError(f"a connected graph of {nodes} nodes needs at least {nodes - 1} edges, got {edges}")
    found: set[tuple[int, int]] = set()
    if connected:
        order = rng.permutation(nodes)
        for i in range(1, nodes):  # attach each node to a random earlier one: a uniform-ish random tree
            u, v = int(order[i]), int(order[rng.integers(0, i)])
            found.add((min(u, v), max(u, v)))
    while len(found) < edges:
        batch = rng.integers(0, nodes, (2 * (edges - len(found)) + 8, 2))
        for u, v in batch:
            if u != v and len(found) < edges:
                found.add((int(min(u, v)), int(max(u, v))))
    return np.array(sorted(found), dtype=np.int64).reshape(-1, 2)


def _csr(rows: int, coords: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row pointers, column indices (sorted within rows) and the order of ``coords`` (row, col) pairs."""
    order = np.lexsort((coords[:, 1], coords[:, 0]))
    rowptr = np.zeros(rows + 1, np.int64)
    np.add.at(rowptr, coords[:, 0] + 1, 1)
    return np.cumsum(rowptr), coords[order, 1].astype(np.int64), order


def adjacency(p: Params, n: int, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """A dense 0/1 adjacency matrix of an undirected simple graph (``edges`` edges, connected by default)."""
    nodes = _square(shape, "adjacency")
    edges = _random_edges(nodes, int(p["edges"]), bool(p.get("connected", 1)), rng)
    m = np.zeros((nodes, nodes), np.int64)
    m[edges[:, 0], edges[:, 1]] = m[edges[:, 1], edges[:, 0]] = 1
    return m


def csr_graph(p: Params, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """An undirected simple graph in CSR: ``rowptr`` [nodes + 1], ``colidx`` [2 * edges], ``weights`` [2 * edges].

    Both directions of every edge are stored, with one weight (uniform in [1, 10)); connected by default.
    """
    nodes = int(p["nodes"])
    edges = _random_edges(nodes, int(p["edges"]), bool(p.get("connected", 1)), rng)
    both = np.concatenate([edges, edges[:, ::-1]])
    weight = rng.uniform(1.0, 10.0, len(edges))
    rowptr, colidx, order = _csr(nodes, both)
    return {"rowptr": rowptr, "colidx": colidx, "weights": np.concatenate([weight, weight])[order]}


def csr_matrix(p: Params, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A nonsingular sparse matrix in CSR: ``rowptr`` [rows + 1], ``colidx`` [nnz], ``values`` [nnz].

    Every diagonal entry is stored and dominates its row, so the matrix is invertible (and
    triangular solves, Jacobi and ILU(0) are well defined); the other ``nnz - rows`` entries sit
    at distinct random positions with normal values.
    """
    rows, nnz = int(p["rows"]), int(p["nnz"])
    if not rows <= nnz <= rows * rows:
        raise ValueError(f"csr_matrix: nnz {nnz} must be between rows ({rows}) and rows^2 ({rows * rows})")
    off = rng.choice(rows * rows - rows, nnz - rows, replace=False)  # indices among off-diagonal cells
    r, c = off // max(rows - 1, 1), off % max(rows - 1, 1)
    c = c + (c >= r)  # skip the diagonal
    coords = np.concatenate([np.stack([np.arange(rows), np.arange(rows)], 1), np.stack([r, c], 1)]).astype(np.int64)
    values = np.concatenate([np.zeros(rows), rng.normal(0.0, 1.0, nnz - rows)])
    row_abs = np.zeros(rows)
    np.add.at(row_abs, coords[rows:, 0], np.abs(values[rows:]))
    values[:rows] = row_abs + 1.0
    rowptr, colidx, order = _csr(rows, coords)
    return {"rowptr": rowptr, "colidx": colidx, "values": values[order]}


def _plain(draw: Callable, keys: str = "", needs: str = "") -> Distribution:
    return Distribution(frozenset(keys.split()), draw, (), frozenset(needs.split()))


DISTRIBUTIONS: dict[str, Distribution] = {
    "normal": _plain(normal, "mean std"),
    "uniform": _plain(uniform, "low high"),
    "randint": _plain(randint, "low high"),
    "bernoulli": _plain(bernoulli, "p"),
    "sorted_randint": _plain(sorted_randint, "low high"),
    "unique": _plain(unique, "low high"),
    "unique_sorted": _plain(unique_sorted, "low high"),
    "permutation": _plain(permutation),
    "csr_rowptr": _plain(csr_rowptr, "nnz"),
    "planted": _plain(planted, "low high value count", "value"),
    "symmetric": _plain(symmetric, "mean std"),
    "spd": _plain(spd, "mean std"),
    "nonsingular": _plain(nonsingular, "mean std"),
    "adjacency": _plain(adjacency, "edges connected", "edges"),
    "csr_graph": Distribution(frozenset({"nodes", "edges", "connected"}), csr_graph,
                              ("rowptr", "colidx", "weights"), frozenset({"nodes", "edges"})),  # fmt: skip
    "csr_matrix": Distribution(frozenset({"rows", "nnz"}), csr_matrix, ("rowptr", "colidx", "values"),
                               frozenset({"rows", "nnz"})),  # fmt: skip
}
