"""nvcc and the runtime headers must come from one release; a mismatch is a clear start-up error."""

import pytest

from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.errors import ToolchainError
from cudaperf_env.tasks import load_tasks
from cudaperf_env.toolchain import tools
from cudaperf_env.turn import Grader


def test_release_parsing():
    assert tools.release("Build cuda_13.5.r13.5/compiler.39125733_0") == (13, 5)
    assert tools.release("Cuda compilation tools, release 13.0, V13.0.88") == (13, 0)
    assert tools.runtime_release("#define CUDART_VERSION  13050\n") == (13, 5)
    assert tools.runtime_release("#define CUDART_VERSION 13000") == (13, 0)


def test_a_mismatched_pair_is_refused_with_the_fix(tmp_path, monkeypatch):
    (tmp_path / "bin").mkdir()
    (tmp_path / "include").mkdir()
    fake = tmp_path / "bin" / "nvcc"
    fake.write_text("#!/bin/sh\necho 'Build cuda_13.5.r13.5/compiler.1_0'\n")
    fake.chmod(0o755)
    (tmp_path / "include" / "cuda_runtime_api.h").write_text("#define CUDART_VERSION 13000\n")
    with pytest.raises(ToolchainError, match=r"nvcc 13.5 .* runtime headers 13.0 .*nvidia-cuda-runtime==13.5"):
        tools.check_toolkit(str(fake))


def test_the_installed_toolkit_matches_and_compiles_cooperative_groups():
    tools.check_toolkit(tools.nvcc())
    task = load_tasks()["c2cuda/sum_f32"]
    source = """#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
__global__ void k(int n, const float* x, float* out) {
    cg::thread_block block = cg::this_thread_block();
    auto warp = cg::tiled_partition<32>(block);
    float v = 0.f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += x[i];
    v = cg::reduce(warp, v, cg::plus<float>());
    if (warp.thread_rank() == 0) atomicAdd(out, v);
}
__global__ void zero(float* out) { *out = 0.f; }
extern "C" void sum_f32(int n, const float* x, float* out) {
    zero<<<1, 1>>>(out);
    k<<<64, 256>>>(n, x, out);
}
"""
    turn = Grader.on(CpuBackend()).grade(task, f"```cuda\n{source}```")
    assert turn.evaluation.compiled and "incompatible" not in turn.evaluation.compile_log, turn.feedback
    assert turn.status == "ok", turn.feedback
