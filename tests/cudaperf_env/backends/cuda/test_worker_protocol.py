"""The GPU worker's timing protocol, end to end, on a host-memory stand-in for the GPU harness.

``tests/fixtures/fake_gpu/host_harness.cpp`` implements the harness's C interface with
malloc and memcpy, so this runs in CI: uploads, round-robin trials, the output check
against the reference after timing, canaries, and stage / wall_check. The real harness
is exercised by the ``gpu`` tests on the GPU machine.
"""

import shutil
import subprocess
from pathlib import Path

import pytest

from cudaperf_env.backends.buffers import BufferFile
from cudaperf_env.backends.cuda.backend import HERE, mismatch_message, set_spec, time_request
from cudaperf_env.backends.cuda.timing import TimingOptions
from cudaperf_env.backends.sandbox import Crash, WorkerProcess
from cudaperf_env.tasks import load_tasks
from cudaperf_env.tasks.inputs import make_inputs

FIXTURES = Path(__file__).parents[3] / "fixtures" / "fake_gpu"
SAXPY = load_tasks(kind="c2cuda")["c2cuda/saxpy_f32"]
CONFIG = {"N": 4099}
pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")


def compile_shared(source: Path, out: Path, *defines: str) -> Path:
    subprocess.run(["g++", "-shared", "-fPIC", "-O1", *defines, str(source), "-o", str(out)], check=True)
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fake_gpu")
    folder.chmod(0o755)  # the confined worker runs as a user of its own
    libs = {
        "harness": compile_shared(FIXTURES / "host_harness.cpp", folder / "harness.so"),
        "honest": compile_shared(FIXTURES / "saxpy.cpp", folder / "honest.so"),
        "stale": compile_shared(FIXTURES / "saxpy.cpp", folder / "stale.so", "-DSTALE"),
        "overrun": compile_shared(FIXTURES / "saxpy.cpp", folder / "overrun.so", "-DOVERRUN"),
        "late": compile_shared(FIXTURES / "saxpy.cpp", folder / "late.so", "-DLATE"),
    }
    return folder, libs


@pytest.fixture
def worker(built, tmp_path):
    folder, libs = built
    proc = WorkerProcess(tmp_path, script=HERE / "gpu_worker.py", visible=[folder])
    proc.send({"op": "init", "harness": str(libs["harness"]), "device": 0})
    for name, lib in (("baseline", "honest"), ("candidate", "honest"), ("stale", "stale"), ("overrun", "overrun"),
                      ("late", "late")):
        reply = proc.request({"op": "load", "lib": str(libs[lib]), "name": name}, 30)
        assert not isinstance(reply, Crash) and reply["ok"], reply
    yield proc
    proc.kill()


def input_sets(folder: Path, count: int = 3) -> list[dict]:
    files = [BufferFile(folder / f"set{k}.bin", SAXPY, CONFIG, make_inputs(SAXPY, CONFIG, 1000 + k))
             for k in range(count)]  # fmt: skip
    return [set_spec(SAXPY, CONFIG, f) for f in files]


def test_timing_checks_every_implementation_against_the_reference(worker, tmp_path):
    sets = input_sets(tmp_path)
    opts = TimingOptions(warmup=1, min_trials=3, max_trials=4, budget_s=5.0)
    libs = ["candidate", "stale", "overrun", "baseline"]
    reply = worker.request(time_request(opts, SAXPY, libs, sets, "baseline", pin=True), 60)
    assert not isinstance(reply, Crash) and reply["ok"], reply
    assert set(reply["times"]) == set(libs) and all(len(t) >= 3 for t in reply["times"].values())
    assert set(reply["phases"]) == {"release_s", "upload_s", "trials_s", "check_s"}
    assert "candidate" not in reply["mismatches"] and "overrun" not in reply["mismatches"]
    stale = reply["mismatches"]["stale"]  # replays set 1's outputs on sets 2 and 3
    assert [m["set"] for m in stale] == [1, 2] and all(m["count"] > 0.9 * m["total"] for m in stale)
    assert "input set 2" in mismatch_message(SAXPY, stale)
    assert reply["overruns"] == {"overrun": [3]}  # `y`, the fourth argument, written one past its end


@pytest.mark.parametrize("check_first", [False, True])
def test_check_first_checks_the_first_calls_and_counts_them_as_warmup(worker, tmp_path, check_first):
    sets = input_sets(tmp_path)
    opts = TimingOptions(warmup=1, min_trials=2, max_trials=2, budget_s=5.0, check_first=check_first)
    libs = ["candidate", "stale", "late", "baseline"]
    reply = worker.request(time_request(opts, SAXPY, libs, sets, "baseline", pin=False), 60)
    assert not isinstance(reply, Crash) and reply["ok"], reply
    assert all(len(t) == 2 for t in reply["times"].values())
    assert [m["set"] for m in reply["mismatches"]["stale"]] == [1, 2]  # right on set 1, replayed on sets 2 and 3
    assert ("late" in reply["mismatches"]) is not check_first  # right on its first three calls only
    assert "candidate" not in reply["mismatches"] and reply["phases"]["check_s"] > 0


@pytest.mark.parametrize("floor", [1, 3])
def test_budget_floor_keeps_timing_past_the_budget(worker, tmp_path, floor):
    opts = TimingOptions(warmup=0, min_trials=5, max_trials=10, budget_s=0.0, budget_floor=floor)
    reply = worker.request(time_request(opts, SAXPY, ["candidate", "baseline"], input_sets(tmp_path, 2), "baseline",
                                        pin=False), 60)  # fmt: skip
    assert reply["ok"] and [len(t) for t in reply["times"].values()] == [floor, floor]


def test_backend_refuses_check_first_for_submissions():
    from cudaperf_env.backends.cuda.backend import CudaBackend

    with pytest.raises(ValueError, match="trusted code"):
        CudaBackend(timing=TimingOptions(check_first=True))


def test_wall_check_replays_a_kept_input_set(worker, tmp_path):
    sets = input_sets(tmp_path, 2)
    opts = TimingOptions(warmup=0, min_trials=1, max_trials=1)
    assert worker.request(time_request(opts, SAXPY, ["candidate", "baseline"], sets, "baseline", pin=False), 60)["ok"]
    assert worker.request({"op": "stage", "set": 1}, 30)["ok"]
    reply = worker.request({"op": "wall_check", "lib": "candidate", "calls": 3}, 30)
    assert reply["ok"] and len(reply["events"]) == 3 and all(e >= 0 for e in reply["events"])
