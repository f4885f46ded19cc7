"""The timing input sets: made once, bounded in size, safe across threads, and no files left by a failed set."""

import errno
import threading

import numpy as np
import pytest

import cudaperf_env.backends.buffers as buffers
import cudaperf_env.backends.cuda.perf_inputs as perf_inputs
from cudaperf_env.backends.buffers import layout
from cudaperf_env.backends.cuda.perf_inputs import PerfInputs, max_bytes
from cudaperf_env.errors import BackendUnavailableError
from cudaperf_env.tasks import load_tasks

TASKS = load_tasks()
SAXPY, FMA3, CLAMP = TASKS["c2cuda/saxpy_f32"], TASKS["c2cuda/fma3_f32"], TASKS["c2cuda/clamp_i32"]
SMALL = {"N": 4096}  # the sets are the same whatever the size: small keeps the test fast


def files(inputs):
    return sorted(p.name for p in inputs.folder.iterdir())


def test_sets_are_made_once_with_the_fixed_seeds_and_reused():
    inputs = PerfInputs()
    first = inputs.sets(SAXPY, 0, SMALL, 3)
    assert inputs.sets(SAXPY, 0, SMALL, 3) is first and len(files(inputs)) == 3
    x = [f.snapshot()["x"] for f in first]
    assert not np.array_equal(x[0], x[1])  # input sets differ (rotation defeats result caching)
    again = PerfInputs().sets(SAXPY, 0, SMALL, 3)  # another process's sets hold the same data
    assert all(np.array_equal(a.snapshot()["x"], b) for a, b in zip(again, x, strict=True))


def test_the_least_recently_used_sets_go_first_and_the_returned_ones_never():
    saxpy_bytes, fma3_bytes, clamp_bytes = (2 * layout(t, SMALL)[2] for t in (SAXPY, FMA3, CLAMP))
    inputs = PerfInputs(limit=saxpy_bytes + max(fma3_bytes, clamp_bytes))  # room for two tasks' sets
    saxpy = inputs.sets(SAXPY, 0, SMALL, 2)
    fma3 = inputs.sets(FMA3, 0, SMALL, 2)
    assert inputs.sets(SAXPY, 0, SMALL, 2) is saxpy  # saxpy used last: fma3 is the one to go
    clamp = inputs.sets(CLAMP, 0, SMALL, 2)
    assert not any(f.path.exists() for f in fma3) and all(f.path.exists() for f in saxpy + clamp)
    assert len(files(inputs)) == 4 and inputs.bytes == saxpy_bytes + clamp_bytes
    inputs.clear()
    assert files(inputs) == [] and inputs.bytes == 0 and inputs.sets(SAXPY, 0, SMALL, 2) is not saxpy
    alone = PerfInputs(limit=1)  # a bound smaller than one task's sets: still made, everything else evicted
    alone.sets(SAXPY, 0, SMALL, 2)
    made = alone.sets(FMA3, 0, SMALL, 2)
    assert all(f.path.exists() for f in made) and len(files(alone)) == 2


def test_the_free_space_of_the_folder_bounds_the_sets_too(monkeypatch):
    inputs = PerfInputs()
    inputs.sets(SAXPY, 0, SMALL, 2)
    monkeypatch.setattr(inputs, "_free", lambda: perf_inputs.RESERVE_BYTES)  # the tmpfs filled up meanwhile
    inputs.sets(FMA3, 0, SMALL, 2)
    assert len(files(inputs)) == 2 and all(f.path.exists() for f in inputs.sets(FMA3, 0, SMALL, 2))


def test_a_set_that_cannot_be_made_leaves_no_file_and_the_next_try_starts_clean(monkeypatch):
    inputs = PerfInputs()
    real, calls = buffers._pwrite_all, []

    def full(fd, data):  # the second file of the set finds the file system full
        calls.append(fd)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd, data)

    monkeypatch.setattr(buffers, "_pwrite_all", full)
    with pytest.raises(BackendUnavailableError, match="no room for the timing inputs of c2cuda/saxpy_f32"):
        inputs.sets(SAXPY, 0, SMALL, 3)
    assert files(inputs) == []
    assert len(inputs.sets(SAXPY, 0, SMALL, 3)) == 3 and len(files(inputs)) == 3  # no FileExistsError


def test_threads_asking_for_the_same_sets_at_once_get_one_made_set():
    inputs = PerfInputs()
    got, errors, start = [], [], threading.Barrier(8)

    def ask():
        start.wait()
        try:
            got.append(inputs.sets(SAXPY, 0, SMALL, 3))
        except Exception as e:  # noqa: BLE001 - the test reports any
            errors.append(e)

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and all(g is got[0] for g in got) and len(files(inputs)) == 3


def test_the_bound_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv(perf_inputs.MAX_BYTES_ENV, str(3 << 30))
    assert max_bytes() == 3 << 30 and PerfInputs().limit == 3 << 30
    monkeypatch.setenv(perf_inputs.MAX_BYTES_ENV, "lots")
    assert max_bytes() == perf_inputs.DEFAULT_MAX_BYTES


def test_leased_sets_are_never_evicted_until_the_lease_ends():
    saxpy_bytes = 2 * layout(SAXPY, SMALL)[2]
    inputs = PerfInputs(limit=saxpy_bytes)  # room for one task's sets
    with inputs.lease(SAXPY, 0, SMALL, 2) as read:  # a timing reads these
        made = inputs.sets(FMA3, 0, SMALL, 2)  # made ahead for another task meanwhile (prepare)
        assert all(f.path.exists() for f in read + made)  # over the bound rather than pull files from a timing
    inputs.sets(CLAMP, 0, SMALL, 2)  # the lease ended: both older sets may go now
    assert not any(f.path.exists() for f in read + made) and len(files(inputs)) == 2


def test_a_set_being_made_holds_up_no_one_asking_for_another(monkeypatch):
    inputs = PerfInputs()
    saxpy = inputs.sets(SAXPY, 0, SMALL, 2)
    real, entered, release = perf_inputs.task_inputs, threading.Event(), threading.Event()

    def slow(task, config, seed):  # a large set: seconds of generation
        if task is FMA3:
            entered.set()
            assert release.wait(30)
        return real(task, config, seed)

    monkeypatch.setattr(perf_inputs, "task_inputs", slow)
    maker = threading.Thread(target=inputs.sets, args=(FMA3, 0, SMALL, 2))
    maker.start()
    assert entered.wait(30)
    try:  # the timing of another task finds its sets at once, and may lease them, while FMA3's are made
        got: list = []

        def timing():
            with inputs.lease(SAXPY, 0, SMALL, 2) as leased:
                got.append(leased)

        asker = threading.Thread(target=timing)
        asker.start()
        asker.join(10)
        assert got == [saxpy]
    finally:
        release.set()
        maker.join()
    assert len(files(inputs)) == 4
