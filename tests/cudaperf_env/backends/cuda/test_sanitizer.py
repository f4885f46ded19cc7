"""The compute-sanitizer pass: reading its reports (pure) and catching what canaries cannot (GPU)."""

import pytest

from cudaperf_env.backends.cuda.backend import CudaBackend
from cudaperf_env.backends.cuda.sanitizer import first_finding, sanitizer_command, sanitizer_verdict
from cudaperf_env.evaluate import Evaluator
from cudaperf_env.tasks import load_tasks

MEMCHECK = """========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 4 bytes
=========     at k(int, float, const float *, float *)+0x70 in submission.cu:4
=========     by thread (255,0,0) in block (3,0,0)
=========     Address 0x7f0000001000 is out of bounds
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: [0x2dbe3f] in libcuda.so.1
=========
========= ERROR SUMMARY: 1 error
"""
RACECHECK = """========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at reduce(const float *, float *, int)+0x90 in submission.cu:9
=========     and Read access at reduce(const float *, float *, int)+0xb0 in submission.cu:11 [2048 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""


def test_a_clean_report_passes_and_findings_are_quoted():
    assert sanitizer_verdict("memcheck", "========= ERROR SUMMARY: 0 errors\n") == ""
    clean_race = "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"
    assert sanitizer_verdict("racecheck", clean_race) == ""
    memcheck = sanitizer_verdict("memcheck", MEMCHECK)
    assert "1 error" in memcheck and "Invalid __global__ read of size 4 bytes" in memcheck
    assert "submission.cu:4" in memcheck
    assert "Host Frame" not in memcheck
    race = sanitizer_verdict("racecheck", RACECHECK)
    assert "Race reported" in race and "submission.cu:9" in race


def test_warnings_only_and_missing_summaries():
    warnings_only = "========= RACECHECK SUMMARY: 3 hazards displayed (0 errors, 3 warnings)"
    assert sanitizer_verdict("racecheck", warnings_only) == ""
    assert "did not finish" in sanitizer_verdict("memcheck", "")
    assert first_finding("nothing to see") == "(see the sanitizer report)"


def test_the_command_names_the_tool_and_log(tmp_path):
    command = sanitizer_command("racecheck", tmp_path / "log", sanitizer="/opt/cs")
    assert command[:3] == ["/opt/cs", "--tool", "racecheck"] and str(tmp_path / "log") in command
    with pytest.raises(ValueError, match="unknown sanitizer tool"):
        sanitizer_command("leakcheck", tmp_path / "log", sanitizer="/opt/cs")


SAXPY = load_tasks(kind="c2cuda")["c2cuda/saxpy_f32"]
OFF_BY_ONE_READ = """
__global__ void k(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
  if (i == n - 1 && x[i + 1] == 12345.5f) y[i] = 0.0f;  // reads one element past the end; never true
}
extern "C" void saxpy(int n, float a, const float* x, float* y) { k<<<(n + 255) / 256, 256>>>(n, a, x, y); }
"""
MISSING_BARRIER = """
__global__ void k(int n, float a, const float* x, float* y) {
  __shared__ float s[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  s[threadIdx.x] = i < n ? x[i] : 0.0f;
  float other = s[(threadIdx.x + 32) % 256];  // another warp's slot, read without __syncthreads()
  if (i < n) y[i] = a * s[threadIdx.x] + y[i] + 0.0f * other;
}
extern "C" void saxpy(int n, float a, const float* x, float* y) { k<<<(n + 255) / 256, 256>>>(n, a, x, y); }
"""


@pytest.mark.gpu
@pytest.mark.parametrize(("source", "tool"), [(OFF_BY_ONE_READ, "memcheck"), (MISSING_BARRIER, "racecheck")],
                         ids=["off-by-one read", "missing barrier"])  # fmt: skip
def test_the_sanitizer_catches_what_a_plain_run_does_not(source, tool):
    plain = Evaluator(CudaBackend(measures_time=False))
    assert plain.evaluate(SAXPY, source).status == "ok"  # the answer is right and nothing was written out of bounds
    checked = Evaluator(CudaBackend(measures_time=False, sanitizers=("memcheck", "racecheck")))
    e = checked.evaluate(SAXPY, source)
    assert e.status == "runtime_error" and tool in e.message, e.message
    assert "submission.cu" in e.message  # the finding names the submission's line


@pytest.mark.gpu
def test_a_correct_submission_passes_the_sanitizer():
    checked = Evaluator(CudaBackend(measures_time=False, sanitizers=("memcheck", "racecheck")))
    e = checked.evaluate(SAXPY, SAXPY.implementation(SAXPY.baseline).source)
    assert e.status == "ok", e.message
