"""Grading replies with correctness runs sharing the card (``benchmarks/gpu_grading.py``): its pieces here,
the same verdicts in both lock modes on a GPU."""

import pytest

from benchmarks.gpu_grading import batches, grade, load_replies, marked, summary


def test_the_recorded_replies_come_in_the_trainers_batches_and_marks_change_only_a_comment():
    replies = load_replies()
    assert [len(b) for b in batches(replies)] == [32, 32, 32, 32]
    assert {(b[0]["step"], b[0]["turn"]) for b in batches(replies)} == {(1, 1), (1, 2), (4, 1), (4, 2)}
    assert len(batches(replies, 1)) == 1
    assert marked("text\n```cuda\nint x;\n```", "round 0") == "text\n```cuda\n// round 0\nint x;\n```"
    assert marked("no code", "t") == "// t\nno code"


def test_shared_runs_are_the_default_unless_the_environment_turns_them_off(monkeypatch):
    from cudaperf_env.backends.cuda.backend import CudaBackend

    assert CudaBackend(torch_baselines=False).shared_runs
    monkeypatch.setenv("CUDAPERF_GPU_SHARED_RUNS", "0")
    assert not CudaBackend(torch_baselines=False).shared_runs
    assert CudaBackend(torch_baselines=False, shared_runs=True).shared_runs


def _run(processes, mode, wall, statuses, run_s):
    per = [{"wall_s": wall, "statuses": statuses, "seconds": {"run": run_s, "timing": 1.0, "total": 3.0}}]
    return {"processes": processes, "mode": mode, "round": 0, "wall_s": wall, "per_process": per * processes}


def test_the_summary_compares_the_modes_per_process_count():
    runs = [_run(3, "exclusive", 90.0, ["ok", "compile_error"], 6.0),
            _run(3, "shared", 60.0, ["ok", "wrong_answer"], 2.0)]
    exclusive, shared = summary(runs)
    assert exclusive["replies"] == 6 and exclusive["replies_per_min"] == pytest.approx(4.0)
    assert shared["speedup_over_exclusive"] == pytest.approx(1.5) and shared["run_s_per_reply"] == 2.0
    assert shared["same_status_share"] == pytest.approx(0.5)


@pytest.mark.gpu
def test_shared_correctness_runs_give_the_same_verdicts_as_runs_one_at_a_time():
    replies = load_replies()
    first = batches(replies, 1)[0]
    exclusive = grade(False, "test exclusive", first, 1)
    shared = grade(True, "test shared", first, 1)
    assert shared["statuses"] == exclusive["statuses"]
    recorded = [r["status"] for r in first]
    assert sum(a == b for a, b in zip(shared["statuses"], recorded, strict=True)) >= 0.9 * len(first)


HOG = """```cuda
#include <cuda_runtime.h>
__global__ void saxpy_kernel(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
__global__ void hold(long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {}
}
extern "C" void saxpy(int n, float a, const float* x, float* y) {
  size_t free_bytes = 0, total = 0;
  cudaMemGetInfo(&free_bytes, &total);
  void* hog = nullptr;  // (nearly) all the card's free memory, held while the others run
  if (free_bytes > (size_t(512) << 20)) cudaMalloc(&hog, free_bytes - (size_t(512) << 20));
  hold<<<1, 1>>>(1500000000LL);  // about 0.75 s, inside its own 2 s limit
  saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, x, y);
  cudaDeviceSynchronize();
  cudaFree(hog);
}
```"""


@pytest.mark.gpu
def test_a_submission_that_takes_the_cards_memory_does_not_fail_the_honest_ones_graded_beside_it():
    from cudaperf_env.backends.cuda.backend import CudaBackend
    from cudaperf_env.evaluate import Evaluator
    from cudaperf_env.tasks import load_tasks

    task = load_tasks()["c2cuda/saxpy_f32"]
    honest = task.implementation("naive").source
    evaluator = Evaluator(CudaBackend(shared_runs=True))
    jobs = [(task, HOG, 0)] + [(task, f"```cuda\n// honest {k}\n{honest}```", 0) for k in range(7)]
    evaluations = evaluator.evaluate_batch(jobs, max_workers=8)
    assert [e.status for e in evaluations[1:]] == ["ok"] * 7, [e.message for e in evaluations[1:]]
    assert all(e.seconds["timing.lock_wait_s"] >= 0 for e in evaluations[1:])  # each timing says how long it waited
    print("judged alone:", sum("run_alone" in e.seconds for e in evaluations), "hog:", evaluations[0].status)
