"""A timing's input sets are made before the card is locked (``CudaBackend.prepare``): the backend's wiring,
where no GPU is (its timed phase faked; the sets, the lock and the order real)."""

from dataclasses import replace
from pathlib import Path

from cudaperf_env.backends.base import Build
from cudaperf_env.backends.cuda.backend import CudaBackend, _timing_configs
from cudaperf_env.backends.cuda.timing import SpeedupEstimate, Timing
from cudaperf_env.backends.sandbox import WorkerProcess
from cudaperf_env.tasks import load_tasks

TASK = replace(load_tasks()["c2cuda/saxpy_f32"], perf_configs=({"N": 4096}, {"N": 8192}))  # CPU-sized


def test_a_timing_finds_every_input_set_made_before_it_holds_the_card(monkeypatch, tmp_path):
    backend = CudaBackend(torch_baselines=False)
    held, made_while_held, built = [], [], []
    make = backend.perf_inputs._make

    def recording_make(*args):
        made_while_held.append(bool(held))
        return make(*args)

    def timed_phase(self, task, baseline, worker, paired=True):  # what _time does with the sets, on the card
        held.append(True)
        for index, config in enumerate(_timing_configs(task)):
            with self.perf_inputs.lease(task, index, config, self.timing.input_sets) as files:
                assert all(f.path.exists() for f in files)
        held.clear()
        pair = SpeedupEstimate(2.0, 4.0, 2.0, 1.8, 20)
        return Timing(pair, per_config=(pair, pair))

    monkeypatch.setattr(backend.perf_inputs, "_make", recording_make)
    monkeypatch.setattr(CudaBackend, "build", lambda self, task, code, cancel=None: built.append(code) or
                        Build(True, Path("baseline.so")))  # fmt: skip
    monkeypatch.setattr(CudaBackend, "_time", timed_phase)
    timing = backend.time(TASK, Build(True, Path("candidate.so")), 0, tmp_path, object.__new__(WorkerProcess))
    assert isinstance(timing, Timing) and timing.estimate.speedup == 2.0
    assert timing.phases["prepare_s"] > 0 and timing.phases["lock_wait_s"] >= 0  # both before the timed phase
    assert made_while_held == [False, False]  # one making per timing configuration, both before the lock
    assert TASK.implementation(TASK.baseline).source in built  # the baseline's build is made ahead too
    backend.time(TASK, Build(True, Path("candidate.so")), 0, tmp_path, object.__new__(WorkerProcess))
    assert made_while_held == [False, False]  # a second reply's timing reuses them


def test_the_backend_offers_preparing_only_where_it_times():
    assert CudaBackend(torch_baselines=False).capabilities.preparer is not None
    assert CudaBackend(torch_baselines=False, measures_time=False).capabilities.preparer is None
