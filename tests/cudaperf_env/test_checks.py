"""Output checks up to order and of a counted prefix accept every valid answer and reject wrong ones."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cudaperf_env.checks import compare_output
from cudaperf_env.errors import TaskFormatError
from cudaperf_env.tasks.loader import parse_task


def task_with(check: str, length: str = "", count_shape=("1",)):
    out = {"name": "out", "role": "out", "dtype": "float32", "shape": ["N"], "check": check}
    if length:
        out["length"] = length
    return parse_task({
        "id": "c2cuda/t", "entry": "t", "configs": [{"N": 64}], "reference": {"source": "void t() {}"},
        "args": [{"name": "n", "role": "scalar", "dtype": "int32", "value": "N"},
                 {"name": "x", "role": "in", "dtype": "float32", "shape": ["N"]}, out,
                 {"name": "count", "role": "out", "dtype": "int32", "shape": list(count_shape)}],
    })  # fmt: skip


MULTISET, SORTED = task_with("multiset"), task_with("sorted")
COUNTED = task_with("multiset", length="count")


def check(task, got, want, got_count=0, want_count=0):
    arg = task.args[2]
    return compare_output(task, arg, {"out": np.asarray(got, np.float32), "count": np.array([got_count])},
                          {"out": np.asarray(want, np.float32), "count": np.array([want_count])}).ok  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-1000, 1000).map(lambda v: v / 4), min_size=1, max_size=64),  # apart beyond tolerance
       st.randoms(use_true_random=False))
def test_every_permutation_passes_multiset_and_only_the_sorted_one_passes_sorted(values, rng):
    want = np.array(values, np.float32)
    perm = want.copy()
    rng.shuffle(perm)
    assert check(MULTISET, perm, want)
    assert check(SORTED, np.sort(want), perm)  # the reference's own order does not matter
    if not np.array_equal(np.sort(perm), perm):
        assert not check(SORTED, perm, want)


def test_a_changed_value_or_an_unwritten_element_fails_whatever_the_order():
    want = np.arange(10, dtype=np.float32)
    assert not check(MULTISET, np.r_[want[:-1], 11.0], want)
    assert not check(MULTISET, np.r_[np.nan, want[1:]], want)  # poison is not sorted away
    assert not check(MULTISET, np.r_[want[:-1], want[0]], want)  # a duplicate in place of a value


def test_only_the_counted_prefix_is_compared():
    want = np.r_[np.arange(5, dtype=np.float32), np.full(5, np.nan, np.float32)]
    got = np.r_[np.arange(5, dtype=np.float32)[::-1], np.full(5, 7.0, np.float32)]  # tail holds anything
    assert check(COUNTED, got, want, 5, 5)
    assert not check(COUNTED, np.r_[got[:4], 9.0, got[5:]], want, 5, 5)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: task_with("any_order"), "expected elementwise, multiset or sorted"),
        (lambda: task_with("multiset", length="x"), "integer output holding the count"),
        (lambda: task_with("multiset", length="count", count_shape=("2",)), "exactly one element"),
    ],
)
def test_malformed_checks_are_refused(make, message):
    with pytest.raises(TaskFormatError, match=message):
        make()
