"""Each named input distribution has its property on every seed; grouped buffers agree."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph

from cudaperf_env.errors import TaskFormatError
from cudaperf_env.tasks.distributions import DISTRIBUTIONS
from cudaperf_env.tasks.inputs import make_inputs
from cudaperf_env.tasks.loader import parse_task

SEEDS = range(25)


def plain(name, params, shape, seed):
    n = int(np.prod(shape))
    return DISTRIBUTIONS[name].draw(params, n, shape, np.random.default_rng(seed))


@pytest.mark.parametrize("seed", SEEDS)
def test_matrix_distributions_have_their_property(seed):
    s = plain("symmetric", {}, (37, 37), seed).reshape(37, 37)
    assert np.array_equal(s, s.T) and len(np.unique(s)) > 37 * 18
    a = plain("spd", {}, (41, 41), seed).reshape(41, 41)
    assert np.array_equal(a, a.T) and np.linalg.eigvalsh(a).min() > 0
    m = plain("nonsingular", {}, (29, 29), seed).reshape(29, 29)
    assert not np.array_equal(m, m.T) and np.linalg.cond(m) < 1e3


@pytest.mark.parametrize("seed", SEEDS)
def test_graphs_are_simple_undirected_and_connected(seed):
    adj = plain("adjacency", {"edges": 60, "connected": 1}, (40, 40), seed).reshape(40, 40)
    assert np.array_equal(adj, adj.T) and not adj.diagonal().any() and adj.sum() == 2 * 60
    assert csgraph.connected_components(adj, directed=False)[0] == 1
    g = DISTRIBUTIONS["csr_graph"].draw({"nodes": 50, "edges": 49}, np.random.default_rng(seed))  # a tree
    graph = sp.csr_matrix((g["weights"], g["colidx"], g["rowptr"]), shape=(50, 50))
    assert graph.nnz == 98 and (graph != graph.T).nnz == 0 and graph.diagonal().sum() == 0
    assert csgraph.connected_components(graph, directed=False)[0] == 1
    assert all(np.all(np.diff(g["colidx"][a:b]) > 0) for a, b in zip(g["rowptr"][:-1], g["rowptr"][1:], strict=True))


@pytest.mark.parametrize("seed", SEEDS)
def test_sparse_matrices_are_nonsingular_with_exactly_nnz_entries(seed):
    m = DISTRIBUTIONS["csr_matrix"].draw({"rows": 30, "nnz": 150}, np.random.default_rng(seed))
    a = sp.csr_matrix((m["values"], m["colidx"], m["rowptr"]), shape=(30, 30))
    assert a.nnz == 150 and m["rowptr"][-1] == 150 and np.all(a.diagonal() > 0)
    assert np.linalg.matrix_rank(a.toarray()) == 30


@pytest.mark.parametrize("seed", SEEDS)
def test_keys_and_planted_values(seed):
    u = plain("unique_sorted", {"low": 5, "high": 400}, (300,), seed)
    assert np.all(np.diff(u) > 0) and u.min() >= 5 and u.max() < 400
    assert len(set(plain("unique", {"low": 0, "high": 100}, (100,), seed))) == 100
    p = plain("planted", {"low": 0, "high": 10, "value": 7, "count": 3}, (500,), seed)
    assert np.count_nonzero(p == 7) == 3 and p.min() >= 0 and p.max() < 10
    assert np.count_nonzero(plain("planted", {"value": 3, "count": 0}, (200,), seed) == 3) == 0


def test_the_first_match_lands_at_many_different_positions():
    firsts = {int(np.argmax(plain("planted", {"value": 1, "low": 0, "high": 4}, (1000,), s) == 1)) for s in SEEDS}
    assert len(firsts) > 20


def test_impossible_parameters_say_why():
    with pytest.raises(ValueError, match="fewer than 50 distinct"):
        plain("unique", {"low": 0, "high": 10}, (50,), 0)
    with pytest.raises(ValueError, match="needs at least 9 edges"):
        plain("adjacency", {"edges": 3}, (10, 10), 0)
    with pytest.raises(ValueError, match="square"):
        plain("spd", {}, (10, 11), 0)


GRAPH_TASK = {
    "id": "c2cuda/degrees",
    "entry": "degrees",
    "args": [
        {"name": "n", "role": "scalar", "dtype": "int32", "value": "N"},
        {"name": "rowptr", "role": "in", "dtype": "int32", "shape": ["N + 1"],
         "init": {"dist": "csr_graph", "group": "g", "part": "rowptr", "nodes": "N", "edges": "2 * N"}},
        {"name": "colidx", "role": "in", "dtype": "int32", "shape": ["4 * N"],
         "init": {"dist": "csr_graph", "group": "g", "part": "colidx", "nodes": "N", "edges": "2 * N"}},
        {"name": "deg", "role": "out", "dtype": "int32", "shape": ["N"]},
    ],
    "configs": [{"N": 100}, {"N": 257}],
    "reference": {"source": "void degrees(int n, const int* r, const int* c, int* d) "
                            "{ for (int i = 0; i < n; ++i) d[i] = r[i + 1] - r[i]; }"},
}  # fmt: skip


def test_buffers_of_one_group_describe_one_graph():
    task = parse_task(GRAPH_TASK)
    for seed in range(5):
        x = make_inputs(task, {"N": 257}, seed)
        assert x["rowptr"][-1] == x["colidx"].size == 4 * 257 and x["colidx"].max() < 257
        assert np.array_equal(x["rowptr"], make_inputs(task, {"N": 257}, seed)["rowptr"])
    assert not np.array_equal(make_inputs(task, {"N": 100}, 0)["colidx"], make_inputs(task, {"N": 100}, 1)["colidx"])


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda a: a[1]["init"].pop("group"), "give group: NAME"),
        (lambda a: a[2]["init"].update(part="weight"), "part: one of rowptr, colidx, weights"),
        (lambda a: a[2]["init"].update(edges="3 * N"), "described differently"),
        (lambda a: a[1]["init"].pop("nodes"), "needs nodes"),
    ],
)
def test_malformed_groups_are_rejected_with_the_field(edit, message):
    data = {**GRAPH_TASK, "args": [dict(a, init=dict(a.get("init", {}))) for a in GRAPH_TASK["args"]]}
    edit(data["args"])
    with pytest.raises(TaskFormatError, match=message):
        parse_task(data)
