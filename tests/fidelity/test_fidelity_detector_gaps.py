"""A gap of the CPU race checks found on the H200, and closed: the reproducers stay as regression tests.

`compact_positive_f32-naive-2` (the barrier after `pos[t] = keep` deleted) was wrong on the GPU
(2026-12-02) and credited on the CPU. Under a seeded schedule its race made a thread read a stale
prefix and scatter out of bounds: the rerun crashed (illegal address), and the schedules stage
counted only wrong answers, not crashes. The crash also killed the worker, so the race detector's
instrumented library, loaded into that worker next, never ran, and a check that cannot run was
skipped. A crash under another order is now a race verdict; the detector alone names the race too.
"""


from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.evaluate import EvalOptions, Evaluator
from cudaperf_env.tasks.loader import parse_task

SCAN = parse_task({
    "id": "c2cuda/scan_probe", "entry": "probe", "configs": [{"N": 256}],
    "args": [{"name": "n", "role": "scalar", "dtype": "int32", "value": "N"},
             {"name": "x", "role": "in", "dtype": "int32", "shape": ["N"],
              "init": {"dist": "randint", "low": 0, "high": 2}},
             {"name": "y", "role": "out", "dtype": "int32", "shape": ["N"]}],
    "reference": {"source": "void probe(int n, const int* x, int* y) "
                            "{ int s = 0; for (int i = 0; i < n; ++i) { s += x[i]; y[i] = s; } }"},
})  # fmt: skip
MISSING_BARRIER = """__global__ void k(int n, const int* x, int* y) {
  __shared__ int s[256]; int t = threadIdx.x;
  s[t] = x[t];
  for (int off = 1; off < 256; off *= 2) {
    int add = t >= off ? s[t - off] : 0;
    __syncthreads();
    s[t] += add;
    __syncthreads();
  }
  y[t] = s[t];
}
extern "C" void probe(int n, const int* x, int* y) { k<<<1, 256>>>(n, x, y); }
"""


def test_the_schedules_catch_the_scan_without_its_first_barrier():
    e = Evaluator(CpuBackend(timeout_s=30.0)).evaluate(SCAN, MISSING_BARRIER, seed=1)
    assert e.status == "wrong_answer" and e.message.startswith("race:"), e.message


def test_the_detector_alone_names_the_race_in_the_scan():
    e = Evaluator(CpuBackend(timeout_s=30.0), EvalOptions(schedules=0)).evaluate(SCAN, MISSING_BARRIER, seed=1)
    assert e.status == "wrong_answer" and "write by thread" in e.message, e.message


def test_the_barrier_deleted_compaction_gets_no_credit():
    from test_fidelity_starters import IDS, VARIANTS

    task, _, _, code = VARIANTS[IDS.index("compact_positive_f32-naive-2")]
    e = Evaluator(CpuBackend(timeout_s=30.0)).evaluate(task, code, seed=1)
    assert e.status == "wrong_answer" and e.message.startswith("race:") and "crashed" in e.message, e.message
    alone = Evaluator(CpuBackend(timeout_s=30.0), EvalOptions(schedules=0)).evaluate(task, code, seed=1)
    assert alone.status == "wrong_answer" and "write by thread" in alone.message, alone.message
