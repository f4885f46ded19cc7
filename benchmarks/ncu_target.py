"""Run one implementation's calls on a perf configuration, for profiling under ncu.

Used by ``gpu_eval.py``: ``ncu ... python benchmarks/ncu_target.py TASK IMPL CALLS``.
"""

from __future__ import annotations

import io
import sys

from cudaperf_env.backends.buffers import BufferFile
from cudaperf_env.backends.cuda.backend import CudaBackend, harness_library
from cudaperf_env.backends.cuda.gpu_worker import Worker
from cudaperf_env.tasks import load_tasks
from cudaperf_env.tasks.inputs import make_inputs
from cudaperf_env.toolchain.cache import scratch_dir


def main(task_id: str, impl: str, calls: int) -> None:
    task = load_tasks()[task_id]
    backend = CudaBackend()
    build = backend.build(task, task.implementation(impl).source)
    assert build.ok, build.log
    worker = Worker(io.StringIO())
    worker.init({"harness": str(harness_library(backend.arch))})
    worker.load({"lib": str(build.library), "name": "candidate"})
    config = (task.perf_configs or task.configs)[0]
    f = BufferFile(scratch_dir() / "ncu.bin", task, config, make_inputs(task, config, 1))
    for _ in range(calls):
        worker.call({"lib": "candidate", "file": str(f.path), "size": f.size, "args": f.request_args(task, config)})


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
