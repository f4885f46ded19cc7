"""The GPU labeller: input sets, ordering, the input budget, bundled builds, and a real run on a GPU."""

import dataclasses
from pathlib import Path

import pytest

from cudaperf_env.backends import gpu_available
from cudaperf_env.datagen.bundle import UnitBuild
from cudaperf_env.datagen.label import (
    Labeller,
    LabelOptions,
    all_configs,
    cheapest_first,
    input_bytes,
    label_order,
    run_order,
    tasks_to_label,
    usable_builds,
)
from cudaperf_env.dataset.gpu_labels import best_speedup, perf_summary, read_stream, task_digest
from cudaperf_env.tasks import load_tasks

TASKS = load_tasks(kind="c2cuda")


def test_configs_cover_every_kind():
    task = TASKS["c2cuda/saxpy_f32"]
    kinds = [k for k, _ in all_configs(task)]
    assert kinds.count("shown") == len(task.configs) and kinds.count("perf") == len(task.perf_configs)
    assert len(kinds) == len(task.configs) + len(task.hidden_configs) + len(task.perf_configs)


def test_resumed_runs_skip_labelled_tasks_and_retry_errors_only_when_asked_and_last():
    saxpy, matmul, other = TASKS["c2cuda/saxpy_f32"], TASKS["c2cuda/matmul_f32"], TASKS["c2cuda/argmax_f32"]
    done = {saxpy.id: {"digest": task_digest(saxpy), "error": "perf: cudaErrorInvalidValue"},
            matmul.id: {"digest": task_digest(matmul), "error": ""},
            other.id: {"digest": "stale", "error": ""}}  # fmt: skip
    assert [t.id for t in tasks_to_label([saxpy, matmul, other], done)] == [other.id]
    assert [t.id for t in tasks_to_label([saxpy, matmul, other], done, retry_errors=True)] == [other.id, saxpy.id]
    assert [t.id for t in tasks_to_label([saxpy, matmul], {})] == [saxpy.id, matmul.id]


def test_an_implementation_that_does_not_build_is_dropped_not_its_task(tmp_path):
    task = TASKS["c2cuda/saxpy_f32"]
    good = UnitBuild(tmp_path / "lib.so", "cudaperf_call_0", "", True, "")
    bad = UnitBuild(None, "cudaperf_call", "x.cu(3): error: identifier \"tid\" is undefined\n", False, "alone")
    builds = [bad if i == 1 else good for i in range(len(task.implementations))]
    kept, dropped = usable_builds(task, builds)
    assert [i.name for i, _ in kept] == [i.name for n, i in enumerate(task.implementations) if n != 1]
    assert dropped == {task.implementations[1].name: 'build: x.cu(3): error: identifier "tid" is undefined'}


FAULTING_SAXPY = """
__global__ void saxpy_far(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i + (1LL << 40)] = a * x[i] + y[i];  // a terabyte past the buffer: an illegal address
}

extern "C" void saxpy(int n, float a, const float* x, float* y) {
  saxpy_far<<<(n + 255) / 256, 256>>>(n, a, x, y);
}
"""


class ScriptedWorker:
    """A labelling worker that loads every library and answers ``time`` with ``timed``."""

    early_replies = [{"name": "scripted"}]

    def __init__(self, timed: dict):
        self.timed = timed

    def request(self, message: dict, timeout: float) -> dict:
        return {"ok": True} if message["op"] == "load" else self.timed


def test_a_failed_timing_replaces_the_worker_a_cuda_error_leaves_unusable(tmp_path):
    task = TASKS["c2cuda/saxpy_f32"]
    builds = [UnitBuild(tmp_path / f"{i}.so", "cudaperf_call", "", True, "") for i in range(len(task.implementations))]
    inputs = [[{"size": 8}] for _ in all_configs(task)]
    labeller = Labeller(devices=(0,), arch="sm_90")
    try:
        illegal = ScriptedWorker({"ok": False, "error": "cudaErrorIllegalAddress: an illegal memory access"})
        record, replace = labeller._label(illegal, 0, task, builds, inputs, 0)
    finally:
        labeller.close()
    assert replace and "cudaErrorIllegalAddress" in record["error"] and record["configs"] == []


class FaultingWorker(ScriptedWorker):
    """Times every library, but a call of ``fault`` fails as a kernel's illegal address does."""

    def __init__(self, fault: str = ""):
        super().__init__({})
        self.fault, self.killed = fault, False

    def request(self, message: dict, timeout: float) -> dict:
        if message["op"] == "load":
            return {"ok": True}
        if self.fault in message["libs"]:
            return {"ok": False, "error": "cudaErrorIllegalAddress: an illegal memory access", "lib": self.fault}
        return {"ok": True, "times": {lib: [1.0, 1.1, 1.2] for lib in message["libs"]}, "mismatches": {},
                "overruns": {}, "phases": {"trials_s": 0.1, "check_s": 0.1}}  # fmt: skip

    def kill(self) -> None:
        self.killed = True


def test_an_implementation_whose_own_call_faults_is_dropped_and_the_others_labelled(tmp_path, monkeypatch):
    """The worker names the library whose call failed: the task is timed again without it, in a fresh worker."""
    task = TASKS["c2cuda/saxpy_f32"]
    faulty = task.implementations[-1].name
    assert faulty != task.baseline
    builds = [UnitBuild(tmp_path / f"{i}.so", "cudaperf_call", "", True, "") for i in range(len(task.implementations))]
    inputs = [[{"size": 8}] for _ in all_configs(task)]
    labeller = Labeller(devices=(0,), arch="sm_90")
    first, fresh = FaultingWorker(fault=f"t0.{faulty}"), FaultingWorker()
    monkeypatch.setattr(labeller, "_start", lambda device: fresh)
    try:
        record, replace, worker = labeller._label_task(first, 0, task, builds, inputs, 0)
    finally:
        labeller.close()
    assert first.killed and worker is fresh and not replace
    assert record["error"] == "" and len(record["configs"]) == len(all_configs(task))
    assert record["dropped"] == {faulty: f"faulted: shown {dict(task.configs[0])}: cudaErrorIllegalAddress: an "
                                         "illegal memory access"}  # fmt: skip
    assert all(set(c["impls"]) == {i.name for i in task.implementations} - {faulty} for c in record["configs"])


def test_a_fault_in_the_baseline_fails_the_task(tmp_path, monkeypatch):
    task = TASKS["c2cuda/saxpy_f32"]
    builds = [UnitBuild(tmp_path / f"{i}.so", "cudaperf_call", "", True, "") for i in range(len(task.implementations))]
    inputs = [[{"size": 8}] for _ in all_configs(task)]
    labeller = Labeller(devices=(0,), arch="sm_90")
    monkeypatch.setattr(labeller, "_start", lambda device: pytest.fail("no second try without the baseline"))
    try:
        record, replace, _ = labeller._label_task(FaultingWorker(fault=f"t0.{task.baseline}"), 0, task, builds,
                                                  inputs, 0)  # fmt: skip
    finally:
        labeller.close()
    assert replace and "cudaErrorIllegalAddress" in record["error"] and record["configs"] == []


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU")
def test_a_kernel_that_faults_costs_its_own_task_only(tmp_path):
    """An illegal address is sticky: the context it happened in fails every later call. The labeller
    times the faulting task again without the faulting implementation, and the next task, each in a
    fresh worker: both are labelled, the faulting implementation named in ``dropped``."""
    saxpy = TASKS["c2cuda/saxpy_f32"]
    fault = dataclasses.replace(saxpy.implementations[-1], source=FAULTING_SAXPY)
    faulting = dataclasses.replace(saxpy, id="c2cuda/saxpy_fault", implementations=(saxpy.implementations[0], fault))
    labeller = Labeller()
    try:
        records = labeller.run([faulting, TASKS["c2cuda/matmul_f32"]], tmp_path / "labels.jsonl")
    finally:
        labeller.close()
    by_task = {r["task"]: r for r in records}
    faulting_record = by_task["c2cuda/saxpy_fault"]
    assert faulting_record["error"] == "" and faulting_record["configs"], faulting_record
    assert "illegal" in faulting_record["dropped"][fault.name].lower(), faulting_record
    assert all(set(c["impls"]) == {saxpy.implementations[0].name} for c in faulting_record["configs"])
    assert by_task["c2cuda/matmul_f32"]["error"] == "" and by_task["c2cuda/matmul_f32"]["configs"]


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU")
def test_labelling_two_starter_tasks_on_the_gpu(tmp_path):
    tasks = [TASKS["c2cuda/saxpy_f32"], TASKS["c2cuda/matmul_f32"]]
    labeller = Labeller()
    try:
        records = labeller.run(tasks, tmp_path / "labels.jsonl")
    finally:
        labeller.close()
    assert [r["task"] for r in sorted(records, key=lambda r: r["task"])] == ["c2cuda/matmul_f32", "c2cuda/saxpy_f32"]
    for r, task in zip(sorted(records, key=lambda r: r["task"]), sorted(tasks, key=lambda t: t.id), strict=True):
        assert r["error"] == ""
        assert len(r["configs"]) == len(all_configs(task))
        assert r["load_s"] >= 0 and r["wait_s"] >= 0 and r["worker_start_s"] >= 0
        for c in r["configs"]:
            assert set(c["impls"]) == {i.name for i in task.implementations}
            assert not c["mismatches"] and not c["overruns"], c
            assert c["request_s"] >= sum(c["phases"].values()) and c["phases"]["check_s"] > 0
            assert all(t["median_ms"] > 0 and t["lo_ms"] <= t["median_ms"] <= t["hi_ms"] for t in c["impls"].values())
    matmul = next(r for r in records if r["task"] == "c2cuda/matmul_f32")
    assert best_speedup(matmul, "naive") > 2 and perf_summary(matmul)["distinguishable"]
    assert read_stream([tmp_path / "labels.jsonl"]).keys() == {t.id for t in tasks}


def test_options_time_perf_and_small_configurations_from_the_same_input_sets():
    options = LabelOptions()
    assert options.timing.check_first and options.small_timing.max_trials <= options.timing.max_trials
    with pytest.raises(ValueError, match="input_sets"):
        LabelOptions(small_timing=dataclasses.replace(LabelOptions().timing, input_sets=2))


def test_input_sets_are_written_for_every_configuration(tmp_path):
    from cudaperf_env.datagen.label import write_input_sets

    task = TASKS["c2cuda/saxpy_f32"]
    task = dataclasses.replace(task, perf_configs=({"N": 4099},))  # keep the test small
    specs = write_input_sets(task, str(tmp_path / "inputs"), 2)
    assert len(specs) == len(all_configs(task)) and all(len(row) == 2 for row in specs)
    for row in specs:
        first, second = (Path(s["file"]).read_bytes() for s in row)
        assert len(first) == row[0]["size"] and first != second  # two distinct input sets
        assert [a for a in row[0]["args"] if "ptr" in a]


def test_implementations_of_consecutive_tasks_build_in_one_bundle():
    tasks = [TASKS["c2cuda/saxpy_f32"], TASKS["c2cuda/sum_f32"]]
    labeller = Labeller(arch="sm_90")
    try:
        built = labeller._build(tasks)
    finally:
        labeller.close()
    assert list(built) == [t.id for t in tasks]
    units = [u for t in tasks for u in built[t.id]]
    assert len(units) == sum(len(t.implementations) for t in tasks)
    assert all(u.library is not None and u.bundled for u in units)
    assert len({u.library for u in units}) == 1 and len({u.symbol for u in units}) == len(units)


def test_cheapest_families_go_first_by_the_done_streams_seconds():
    by_family: dict[str, list] = {}
    for t in TASKS.values():
        by_family.setdefault(t.family, []).append(t)
    slow, fast, unseen = [fam for fam, ts in by_family.items() if len(ts) >= 2][:3]
    tasks = by_family[slow] + by_family[unseen] + by_family[fast]
    done = {by_family[slow][0].id: {"task": by_family[slow][0].id, "error": "", "seconds": 40.0},
            by_family[fast][0].id: {"task": by_family[fast][0].id, "error": "", "seconds": 0.5},
            by_family[fast][1].id: {"task": by_family[fast][1].id, "error": "perf: killed", "configs": []}}  # fmt: skip
    families = [t.family for t in cheapest_first(tasks, done)]
    # fast (0.5 s), then the unseen family at the median of the known means (20.25 s), then slow (40 s)
    assert families == sorted(families, key=[fast, unseen, slow].index)
    assert [t.id for t in cheapest_first(tasks, {})] == [t.id for t in label_order(tasks)]  # no timings: interleaved


def test_a_run_retries_errors_in_their_familys_place_not_after_new_tasks():
    """Retried errors of a cheap family (a worker poisoned by another task's fault left many) go
    before new tasks of an expensive one: the costs come from every record, not the chosen tasks'."""
    by_family: dict[str, list] = {}
    for t in TASKS.values():
        by_family.setdefault(t.family, []).append(t)
    slow, fast = [fam for fam, ts in by_family.items() if len(ts) >= 2][:2]
    (timed_slow, new_slow), (timed_fast, failed_fast) = by_family[slow][:2], by_family[fast][:2]
    done = {t.id: {"task": t.id, "digest": task_digest(t), "error": "", "seconds": s}
            for t, s in ((timed_slow, 40.0), (timed_fast, 0.5))}  # fmt: skip
    done[failed_fast.id] = {"task": failed_fast.id, "digest": task_digest(failed_fast), "error": "illegal address"}
    tasks = [timed_slow, new_slow, timed_fast, failed_fast]
    assert [t.id for t in run_order(tasks, done, retry_errors=True)] == [failed_fast.id, new_slow.id]
    assert [t.id for t in run_order(tasks, done)] == [new_slow.id]


def test_label_order_interleaves_families_and_is_fixed():
    tasks = list(TASKS.values())
    ordered = label_order(tasks)
    assert sorted(t.id for t in ordered) == sorted(t.id for t in tasks)
    assert [t.id for t in label_order(reversed(tasks))] == [t.id for t in ordered]
    families = [t.id.split("_")[0] for t in ordered]
    assert sum(a == b for a, b in zip(families, families[1:], strict=False)) < len(tasks) // 2


def test_input_bytes_count_every_configuration_and_set(tmp_path):
    from cudaperf_env.datagen.label import write_input_sets

    task = dataclasses.replace(TASKS["c2cuda/saxpy_f32"], perf_configs=({"N": 4099},))
    specs = write_input_sets(task, str(tmp_path), 2)
    assert input_bytes(task, 2) == sum(spec["size"] for row in specs for spec in row) == 2 * input_bytes(task, 1)


def test_input_budget_admits_a_streams_next_task_even_when_full():
    labeller = Labeller(devices=(0,), options=LabelOptions(inflight_bytes=100, input_jobs=2), arch="sm_90")
    try:
        assert labeller._reserve(80, first=False)
        assert not labeller._reserve(30, first=False)  # over budget: not written ahead
        assert labeller._reserve(30, first=True)  # but the task a stream waits on always is
        labeller._release(110)
        assert labeller.inflight == 0 and labeller._reserve(100, first=False)
    finally:
        labeller.close()


def test_the_labeller_loads_each_kinds_dataset_and_starters():
    from cudaperf_env.datagen.label import load_label_tasks

    torch_tasks = load_label_tasks("dataset", kind="torch2cuda")
    assert torch_tasks and all(t.kind == "torch2cuda" and t.implementations for t in torch_tasks)
    assert all(t.kind == "torch2cuda" for t in load_label_tasks("starter", kind="torch2cuda"))
    assert all(t.kind == "c2cuda" for t in load_label_tasks("starter"))
    with pytest.raises(ValueError, match="c2cuda dataset only"):
        load_label_tasks("variants", kind="torch2cuda")
