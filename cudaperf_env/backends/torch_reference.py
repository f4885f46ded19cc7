"""Expected outputs from a task's PyTorch reference, computed by CPU torch in a trusted child process.

The child (:mod:`cudaperf_env.backends.torch_child`) is started on first use and
kept for later requests, so torch is imported once per :class:`TorchReference`
rather than once per step. It runs only the task's own ``Model``, on inputs and
parameters the parent drew (``make_inputs``); the submission never reaches it.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cudaperf_env.backends.execute import Job
from cudaperf_env.errors import CudaPerfError
from cudaperf_env.tasks.expressions import evaluate
from cudaperf_env.tasks.schema import Task

CHILD = Path(__file__).with_name("torch_child.py")


class TorchReferenceError(CudaPerfError):
    """The PyTorch reference failed (or torch is missing): a bug in the task or the install, not the submission."""


class TorchReference:
    """A long-lived trusted torch process computing expected outputs.

    Args:
        python: Interpreter with torch installed (default: this one).
        env: Extra environment variables of the child (e.g. torch.compile's cache directory).
    """

    def __init__(self, python: str = sys.executable, env: Mapping[str, str] | None = None) -> None:
        self.python = python
        self.env = dict(env or {})
        self._proc: subprocess.Popen[bytes] | None = None
        self._requests = 0

    def ask(self, request: Mapping[str, Any], workdir: Path, timeout_s: float) -> dict[str, Any]:
        """Send one request (written as a JSON file in ``workdir``) and return the child's answer.

        Raises:
            TorchReferenceError: The child died or ran past ``timeout_s`` (it is then killed, with any
                process it started, and a later request starts a fresh one).
        """
        self._requests += 1
        path = workdir / f"torch-ask-{id(self):x}-{self._requests}.json"  # apart from another process's files
        path.write_text(json.dumps(request), encoding="utf-8")
        return self._ask(str(path), timeout_s)

    def expected(self, task: Task, jobs: Sequence[Job], workdir: Path, timeout_s: float) -> list[dict[str, np.ndarray]]:
        """Every buffer's expected contents after the entry runs (inputs unchanged, outputs from ``forward``)."""
        binding = task.torch
        if binding is None:
            raise TorchReferenceError(f"{task.id}: a pytorch reference needs reference.inputs/outputs")
        args = {a.name: a for a in task.args}
        self._requests += 1
        stem = workdir / f"torch-{self._requests}"
        arrays: dict[str, Any] = {f"{i}:{name}": np.asarray(job.inputs[name]) for i, job in enumerate(jobs)
                  for name in [*binding.inputs, *binding.parameters.values()]}  # fmt: skip
        np.savez(f"{stem}-in.npz", **arrays)
        request = {
            "source": task.reference_source,
            "inputs": list(binding.inputs),
            "outputs": [[n, [], args[n].dtype.numpy.name] for n in binding.outputs],
            "parameters": dict(binding.parameters),
            "jobs": [{"init": list(binding.init_values(job.config)),
                      "shapes": {a.name: [int(evaluate(d, job.config)) for d in a.shape]
                                 for a in task.args if a.is_buffer}} for job in jobs],  # fmt: skip
            "arrays": f"{stem}-in.npz",
            "out": f"{stem}-out.npz",
        }
        Path(f"{stem}.json").write_text(json.dumps(request), encoding="utf-8")
        answer = self._ask(f"{stem}.json", timeout_s * max(1, len(jobs)))
        if "error" in answer:
            raise TorchReferenceError(f"{task.id}: the PyTorch reference failed: {answer['error']}")
        with np.load(f"{stem}-out.npz") as out:
            results = []
            for i, job in enumerate(jobs):
                buffers = {name: np.array(value, copy=True) for name, value in job.inputs.items()}
                buffers.update({name: out[f"{i}:{name}"] for name in binding.outputs})
                results.append(buffers)
        return results

    def close(self) -> None:
        """Stop the child process (a later request starts a new one)."""
        if self._proc is not None:
            _stop(self._proc)
            self._proc = None

    def _ask(self, request: str, timeout_s: float) -> dict[str, Any]:
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write((request + "\n").encode())
            proc.stdin.flush()
        except BrokenPipeError:
            self.close()
            raise TorchReferenceError(self._died()) from None
        ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
        line = proc.stdout.readline() if ready else b""
        if not line:
            self.close()
            raise TorchReferenceError(self._died() if ready else f"the PyTorch reference ran past {timeout_s:g} s")
        return dict(json.loads(line))

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            # its own session: a kill takes the compiler processes torch.compile may have started with it
            self._proc = subprocess.Popen([self.python, str(CHILD)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.DEVNULL, env={**os.environ, **self.env},
                                          start_new_session=True)  # fmt: skip
            weakref.finalize(self, _stop, self._proc)
        return self._proc

    def _died(self) -> str:
        return ("the PyTorch reference process died; is torch installed for "
                f"{self.python}? (`pip install torch --index-url https://download.pytorch.org/whl/cpu`)")  # fmt: skip


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the child leads its own process group
    proc.wait()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
