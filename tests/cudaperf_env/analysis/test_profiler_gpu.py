"""ncu on a real GPU: the metric names exist, the CSV parses, and coalescing verdicts agree.

Runs a small CuPy program under Nsight Compute with the default metric list.
Marked ``gpu``: skipped without a GPU, ncu or CuPy. On the GPU machine:
``python -m pytest -q -m gpu tests/cudaperf_env/analysis/test_profiler_gpu.py``.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from cudaperf_env.analysis import analyze
from cudaperf_env.analysis.profiler import DEFAULT_METRICS, find_ncu, ncu_command, parse_ncu_csv, profile_features

pytestmark = pytest.mark.gpu

KERNELS = {
    "coalesced": 'extern "C" __global__ void coalesced(const float* x, float* y, int n) '
                 "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }",
    "strided": 'extern "C" __global__ void strided(const float* x, float* y, int n) '
               "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[(i * 32) % n]; }",
}
PROGRAM = """
import cupy as cp
n = 1 << 22
x = cp.arange(n, dtype=cp.float32); y = cp.empty_like(x)
for name, src in {kernels!r}.items():
    cp.RawKernel(src, name)(((n + 255) // 256,), (256,), (x, y, cp.int32(n)))
cp.cuda.Device().synchronize()
"""


def test_ncu_metrics_parse_and_agree_with_the_static_verdict():
    pytest.importorskip("cupy")
    ncu = find_ncu()
    if ncu is None:
        pytest.skip("ncu not found (set CUDAPERF_NCU or put Nsight Compute on PATH)")
    program = [sys.executable, "-c", PROGRAM.format(kernels=KERNELS)]
    command = ncu_command(program, ncu=ncu, kernel_regex="^(coalesced|strided)$")  # not CuPy's own kernels
    out = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    profiles = {p.kernel.split("(")[0]: p for p in parse_ncu_csv(out.stdout)}
    assert set(profiles) == {"coalesced", "strided"}, out.stdout[-3000:] + out.stderr[-3000:]
    for profile in profiles.values():
        assert set(DEFAULT_METRICS) <= set(profile.metrics), "every default metric name is known to ncu"
    measured = {name: profile_features([p]) for name, p in profiles.items()}
    assert measured["coalesced"]["ncu_load_sectors_per_request"] <= 5
    assert measured["strided"]["ncu_load_sectors_per_request"] >= 16
    assert measured["coalesced"]["ncu_load_efficiency"] > 0.9 > 0.2 > measured["strided"]["ncu_load_efficiency"]
    static = {name: analyze(src, None).value("coalescing") for name, src in KERNELS.items()}
    assert static["coalesced"] == 1.0 and static["strided"] < 1.0
