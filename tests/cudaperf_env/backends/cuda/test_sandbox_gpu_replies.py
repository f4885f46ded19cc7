"""Forged GPU worker replies are recognised as malformed, and a forged timing reply ends in a runtime error."""

import dataclasses
import shutil
import subprocess
from pathlib import Path

import pytest

from cudaperf_env.backends.base import Build
from cudaperf_env.backends.cuda.backend import HERE, CudaBackend
from cudaperf_env.backends.cuda.replies import time_reply_problem, wall_check_problem
from cudaperf_env.backends.cuda.timing import TimingOptions
from cudaperf_env.backends.sandbox import Crash, WorkerProcess
from cudaperf_env.tasks import load_tasks

FIXTURES = Path(__file__).parents[3] / "fixtures" / "fake_gpu"
SAXPY = load_tasks(kind="c2cuda")["c2cuda/saxpy_f32"]
SMALL = dataclasses.replace(SAXPY, perf_configs=({"N": 4099},))  # host memory: keep the "perf" inputs small

GOOD = {"ok": True, "times": {"candidate": [1.0, 1.1], "baseline": [2.0]}, "early": {}, "capped": [],
        "stop": "max_trials", "phases": {"trials_s": 0.5, "check_s": 0.1}, "overruns": {},
        "mismatches": {"candidate": [{"set": 0, "arg": 1, "count": 3, "total": 10}]}}  # fmt: skip


def test_a_well_formed_timing_reply_passes():
    assert time_reply_problem(GOOD, 4) == ""


def test_forged_timing_replies_are_named():
    assert time_reply_problem({"ok": True}, 4) == "times"
    assert time_reply_problem({**GOOD, "times": {"candidate": [float("nan")], "baseline": [1.0]}}, 4) == "times"
    assert time_reply_problem({**GOOD, "phases": {"trials_s": "x", "check_s": 0}}, 4) == "phases"
    assert time_reply_problem({**GOOD, "phases": {}}, 4) == "phases"
    bad_arg = {"candidate": [{"set": 0, "arg": 9, "count": 1, "total": 1}]}
    assert time_reply_problem({**GOOD, "mismatches": bad_arg}, 4) == "mismatches"
    assert time_reply_problem({**GOOD, "overruns": []}, 4) == "overruns"
    assert time_reply_problem({**GOOD, "early": {"candidate": [True]}}, 4) == "early"


def test_wall_check_replies_need_their_event_times():
    assert wall_check_problem({"events": [0.1, 0.2]}) == ""
    assert wall_check_problem({"events": []}) == "events" and wall_check_problem({}) == "events"


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_a_forged_reply_during_timing_is_a_protocol_crash_not_an_exception(tmp_path_factory, tmp_path):
    folder = tmp_path_factory.mktemp("fake_gpu_forge")
    folder.chmod(0o755)
    libs = {}
    for name, defines in (("harness", []), ("honest", []), ("forge", ["-DFORGE"])):
        source = FIXTURES / ("host_harness.cpp" if name == "harness" else "saxpy.cpp")
        libs[name] = folder / f"{name}.so"
        subprocess.run(["g++", "-shared", "-fPIC", "-O1", *defines, str(source), "-o", str(libs[name])], check=True)
    backend = CudaBackend(timing=TimingOptions(min_trials=3, max_trials=3, warmup=1, budget_s=2.0))
    object.__setattr__(backend, "facts", {"name": "fake"})  # no bandwidth probe on the fake harness
    worker = WorkerProcess(tmp_path, script=HERE / "gpu_worker.py", visible=[folder, backend.perf_inputs.folder])
    try:
        worker.send({"op": "init", "harness": str(libs["harness"]), "device": 0})
        assert worker.request({"op": "load", "lib": str(libs["forge"]), "name": "candidate"}, 30)["ok"]
        result = backend._time(SMALL, Build(True, libs["honest"]), worker)
    finally:
        worker.kill()
    assert isinstance(result, Crash) and result.kind == "protocol" and "malformed" in result.message
