"""A correct but very slow submission stays cheap: timing stops early, correctness calls stop at their limit.

Runs the real GPU worker and the backend's parent side on the host-memory stand-in for the
GPU harness (``tests/fixtures/fake_gpu``, see ``test_worker_protocol.py``): the "slow"
saxpy sleeps 20 ms per call, the baseline takes microseconds. The same on a GPU:
``test_slow_kernels_gpu.py``.
"""

import dataclasses
import math
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from cudaperf_env.backends.base import Build
from cudaperf_env.backends.buffers import BufferFile
from cudaperf_env.backends.cuda.backend import HERE, CudaBackend, run_limited, set_spec, time_request
from cudaperf_env.backends.cuda.timing import TimingOptions
from cudaperf_env.backends.execute import Job
from cudaperf_env.backends.sandbox import Crash, WorkerProcess
from cudaperf_env.datagen.label import LABEL_TIMING, label_entry
from cudaperf_env.reward import speedup_term
from cudaperf_env.tasks import load_tasks
from cudaperf_env.tasks.inputs import make_inputs
from cudaperf_env.tasks.schema import TimingLabel

FIXTURES = Path(__file__).parents[3] / "fixtures" / "fake_gpu"
SAXPY = load_tasks(kind="c2cuda")["c2cuda/saxpy_f32"]
SMALL = dataclasses.replace(SAXPY, perf_configs=({"N": 4099},))  # host memory: keep the "perf" inputs small
SLOW_MS = 20.0
pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")


def compile_shared(source: Path, out: Path, *defines: str) -> Path:
    subprocess.run(["g++", "-shared", "-fPIC", "-O1", *defines, str(source), "-o", str(out)], check=True)
    return out


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fake_gpu_slow")
    folder.chmod(0o755)  # the confined worker runs as a user of its own
    return {
        "harness": compile_shared(FIXTURES / "host_harness.cpp", folder / "harness.so"),
        "honest": compile_shared(FIXTURES / "saxpy.cpp", folder / "honest.so"),
        "slow": compile_shared(FIXTURES / "saxpy.cpp", folder / "slow.so", f"-DSLOW_US={int(SLOW_MS * 1000)}"),
        "slow_wrong": compile_shared(
            FIXTURES / "saxpy.cpp", folder / "slow_wrong.so", f"-DSLOW_US={int(SLOW_MS * 1000)}", "-DWRONG"
        ),  # fmt: skip
    }


@pytest.fixture
def start(libs, tmp_path):
    """A worker on the fake harness with ``candidate`` loaded from ``libs[name]``."""
    started = []

    def start(name: str, *visible: Path) -> WorkerProcess:
        proc = WorkerProcess(tmp_path, script=HERE / "gpu_worker.py", visible=[libs["harness"].parent, *visible])
        started.append(proc)
        proc.send({"op": "init", "harness": str(libs["harness"]), "device": 0})
        reply = proc.request({"op": "load", "lib": str(libs[name]), "name": "candidate"}, 30)
        assert not isinstance(reply, Crash) and reply["ok"], reply
        return proc

    yield start
    for proc in started:
        proc.kill()


def backend(**timing) -> CudaBackend:
    return CudaBackend(timing=TimingOptions(**timing), facts={"name": "host stand-in", "copy_gbps": 1e6})


def time_it(start, libs, candidate: str, **timing):
    timed = backend(**timing)
    worker = start(candidate, timed.perf_inputs.folder)  # as CudaBackend.start_worker shows it
    began = time.perf_counter()
    result = timed._time(SMALL, Build(True, libs["honest"]), worker)
    return result, time.perf_counter() - began


def input_sets(folder: Path, count: int = 2) -> list[dict]:
    config = SMALL.perf_configs[0]
    files = [BufferFile(folder / f"set{k}.bin", SMALL, config, make_inputs(SMALL, config, 1000 + k))
             for k in range(count)]  # fmt: skip
    return [set_spec(SMALL, config, f) for f in files]


def load_baseline(worker: WorkerProcess, libs) -> WorkerProcess:
    assert worker.request({"op": "load", "lib": str(libs["honest"]), "name": "baseline"}, 30)["ok"]
    return worker


@pytest.mark.parametrize("slow_bound", [1 / 8, 0.0])
def test_the_worker_stops_timing_a_slow_implementation_after_its_checked_first_call(start, libs, tmp_path,
                                                                                   slow_bound):  # fmt: skip
    worker = load_baseline(start("slow"), libs)
    opts = TimingOptions(warmup=3, min_trials=5, max_trials=5, budget_s=5.0, slow_bound=slow_bound)
    reply = worker.request(time_request(opts, SMALL, ["candidate", "baseline"], input_sets(tmp_path), "baseline",
                                        pin=False), 60)  # fmt: skip
    assert reply["ok"] and not reply["mismatches"], reply
    calls = len(reply["early"]["candidate"]) + len(reply["times"]["candidate"])
    if slow_bound:
        assert (reply["capped"], reply["stop"], calls) == (["candidate"], "slow", 1)
        assert reply["times"]["candidate"] == [] and min(reply["early"]["candidate"]) >= SLOW_MS
    else:  # the rule switched off: the full measurement
        assert (reply["capped"], reply["stop"], len(reply["times"]["candidate"])) == ([], "max_trials", 5)


def test_a_slow_implementation_that_is_also_wrong_is_still_caught(start, libs):
    timing, _ = time_it(start, libs, "slow_wrong")
    assert not isinstance(timing, Crash), timing
    assert timing.capped and "differ from the baseline's" in timing.mismatch


def test_a_capped_speedup_is_an_upper_bound_that_earns_the_clip_floor(start, libs):
    capped, capped_s = time_it(start, libs, "slow")
    full, full_s = time_it(start, libs, "slow", slow_bound=0.0, evaluation_budget_s=math.inf, warmup=1,
                           min_trials=3, max_trials=3)  # fmt: skip
    assert capped.capped and capped.capped_configs == (0,) and not capped.flags and not capped.mismatch
    assert capped.estimate.trials == 1 and not capped.over_budget
    assert capped.estimate.speedup_lcb <= capped.estimate.speedup <= capped.speedup_bound < 1 / 8
    assert not full.capped and math.isnan(full.speedup_bound) and full.estimate.trials == 3 and not full.flags
    for clip in (8.0, 4.0):  # any clip at least as wide as the bound's: both sit at the floor
        assert speedup_term(capped.estimate.speedup, clip=clip) == speedup_term(full.estimate.speedup, clip=clip)
    assert capped_s < full_s / 2  # 1 slow call against 17 (checked, trials, check after timing, wall check)


def test_the_evaluation_budget_bounds_a_slow_kernel_the_rule_leaves_alone(start, libs):
    slow = {"slow_bound": 0.0, "min_trials": 20, "max_trials": 100, "target_rse": 0.0}
    bounded, bounded_s = time_it(start, libs, "slow", evaluation_budget_s=0.1, **slow)
    unbounded, unbounded_s = time_it(start, libs, "slow", evaluation_budget_s=math.inf, budget_s=0.6, **slow)
    assert bounded.over_budget and not bounded.capped and 1 <= bounded.estimate.trials < 10
    assert unbounded.over_budget and unbounded.estimate.trials > 2 * bounded.estimate.trials
    assert bounded_s < unbounded_s


def test_a_correct_but_slow_kernel_times_out_on_the_configuration_past_its_limit(start, libs, tmp_path):
    worker = start("slow")
    jobs = [Job(c, make_inputs(SAXPY, c, 3)) for c in SAXPY.correctness_configs]  # 3 shown, then 1 hidden
    results = run_limited(libs["slow"], SAXPY, jobs[:2], tmp_path, worker, [5.0, 0.005], [0.004, 0.005], 30)
    assert [r.status for r in results] == ["ok", "timeout"]
    assert results[1].message == (
        "correct on the 1 configuration before it; too slow on N=1823: over 5 ms vs the baseline's 0.005 ms (stopped)"
    )
    hidden = run_limited(libs["slow"], SAXPY, jobs, tmp_path, start("slow"), [5.0] * 3 + [0.005], [0.005] * 4, 30)
    assert [r.status for r in hidden] == ["ok"] * 3 + ["timeout"]
    assert "correct on the 3 configurations before it; too slow on a hidden configuration" in hidden[3].message


def test_labelled_baseline_times_need_no_baseline_run(tmp_path):
    labels = tuple(TimingLabel("NVIDIA H200", "580", "2026-11-30", "shown", c, 0.01 * (i + 1), 0.0, 1.0, 5)
                   for i, c in enumerate(SAXPY.correctness_configs))  # fmt: skip
    naive = dataclasses.replace(SAXPY.implementation(SAXPY.baseline), labels=labels)
    task = dataclasses.replace(SAXPY, implementations=(naive, *SAXPY.implementations[1:]))
    jobs = [Job(c, {}) for c in task.correctness_configs]
    assert CudaBackend()._baseline_call_ms(task, jobs, tmp_path) == [0.01, 0.02, 0.03, 0.04]  # built nothing


def test_the_labeller_stops_timing_a_slow_implementation_and_labels_it_capped(start, libs, tmp_path):
    worker = load_baseline(start("slow"), libs)
    assert worker.request({"op": "load", "lib": str(libs["honest"]), "name": "other"}, 30)["ok"]
    opts = dataclasses.replace(LABEL_TIMING, budget_s=5.0, min_trials=10, max_trials=10)
    request = time_request(opts, SMALL, ["candidate", "baseline", "other"], input_sets(tmp_path, 1), "baseline", False)
    reply = worker.request(request, 60)
    assert reply["ok"] and reply["capped"] == ["candidate"] and reply["stop"] == "max_trials", reply
    slow, other = label_entry("candidate", reply), label_entry("other", reply)
    assert slow["capped"] and slow["trials"] == 1 and slow["median_ms"] >= SLOW_MS  # its checked first call
    assert "capped" not in other and other["trials"] == 10
