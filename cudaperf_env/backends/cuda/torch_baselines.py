"""PyTorch baselines of a torch2cuda task on the GPU: its reference ``Model`` timed eager and under ``torch.compile``.

The reference runs in the trusted torch process (``backends/torch_child.py``),
never in the worker that runs submissions, on the same timing configurations and
input sets (``PerfInputs``' seeds) as the candidate, timed the way the GPU worker
times implementations: warmup, ABBA rounds over rotated input sets, an L2 flush
before each call, CUDA events around the call with a device-wide synchronize
before the end event, the same trial limits, budget and target error. Both are
trusted and fixed per task and configuration, so they are measured once per
backend and kept (:class:`TorchBaselines`), like the baseline's call times.

``torch.compile`` can be slow to build and can fail: its build (the first call)
runs under ``compile_timeout_s``, past which the torch process is killed, and a
compile that fails or disagrees with eager leaves the task eager-only, with the
reason in :attr:`TorchTimes.compile_error` (``info["compile_fallback"]``).
:func:`over_pytorch` turns the candidate's timing into speedups over eager (the
headline ``speedup``) and over the compiled model (``speedup_vs_compile``).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from cudaperf_env.backends.cuda.perf_inputs import PERF_SEED
from cudaperf_env.backends.cuda.timing import SpeedupEstimate, Timing, TimingOptions
from cudaperf_env.backends.generator import task_inputs
from cudaperf_env.backends.torch_reference import TorchReference, TorchReferenceError
from cudaperf_env.tasks.expressions import evaluate
from cudaperf_env.tasks.schema import Config, Task
from cudaperf_env.toolchain.cache import cache_dir


@dataclass(frozen=True)
class TorchTimes:
    """The PyTorch baselines on one timing configuration.

    Attributes:
        eager_ms: Median event time of the eager model (NaN: it could not be timed).
        compile_ms: Median of the ``torch.compile``-d model (NaN: not asked for, or it failed).
        compile_error: Why there is no compiled time ("" when there is one or none was asked for).
        compile_s: Seconds the compile (the first compiled call) took.
        error: Why there is no eager time ("" when there is one).
    """

    eager_ms: float
    compile_ms: float = math.nan
    compile_error: str = ""
    compile_s: float = math.nan
    error: str = ""


class TorchBaselines:
    """Times a task's PyTorch reference on GPU ``device``, once per task and timing configuration.

    Args:
        device: CUDA device index (or a torch device name: ``"cpu"`` times with the host clock, no flush).
        compile: Also time ``torch.compile`` of the model.
        compile_timeout_s: Limit of one compile; past it the model is eager-only.
        compile_mode: ``torch.compile``'s ``mode`` (None: its default).
        python: Interpreter with a CUDA build of torch (default: this one).
    """

    def __init__(self, device: int | str = 0, compile: bool = True, compile_timeout_s: float = 300.0,
                 compile_mode: str | None = None, python: str | None = None) -> None:  # fmt: skip
        self.device = f"cuda:{device}" if isinstance(device, int) else device
        self.compile = compile
        self.compile_timeout_s = compile_timeout_s
        self.compile_mode = compile_mode
        inductor = cache_dir() / "torchinductor"  # compiled kernels reused across processes and runs
        kwargs = {"python": python} if python else {}
        self.process = TorchReference(env={"TORCHINDUCTOR_CACHE_DIR": str(inductor)}, **kwargs)
        self._times: dict[tuple, TorchTimes] = {}

    def times(self, task: Task, index: int, config: Config, opts: TimingOptions, workdir: Path) -> TorchTimes:
        """The baselines of ``task`` on its timing configuration ``index`` (measured on first use, then kept)."""
        key = (task.id, task.reference_source, index)
        if key not in self._times:
            self._times[key] = self._measure(task, index, config, opts, workdir)
        return self._times[key]

    def close(self) -> None:
        """Stop the torch process."""
        self.process.close()

    def samples(self, task: Task, index: int, config: Config, opts: TimingOptions, workdir: Path,
                indices: Sequence[Sequence[int]]) -> list[list[list[float]]] | None:  # fmt: skip
        """The eager reference's outputs on each timing input set of configuration ``index``, at the flat
        ``indices`` of each output (None when the reference cannot be run)."""
        if task.torch is None:
            return None
        request, arrays = self._request(task, index, config, opts, workdir)
        try:
            answer = self.process.ask({**request, "op": "sample", "indices": [list(map(int, i)) for i in indices]},
                                      workdir, opts.budget_s * 4 + 120)  # fmt: skip
        except TorchReferenceError:
            return None
        finally:
            arrays.unlink(missing_ok=True)
        return answer.get("values") if "error" not in answer else None

    def _request(self, task: Task, index: int, config: Config, opts: TimingOptions,
                 workdir: Path) -> tuple[dict[str, Any], Path]:  # fmt: skip
        """The torch process's request for the model of timing configuration ``index``, with its input sets
        written (``PerfInputs``' seeds) to the returned file, which the caller removes."""
        binding = task.torch
        assert binding is not None
        arrays = workdir / f"torch-baseline-{index}.npz"
        names = [*binding.inputs, *binding.parameters.values()]
        sets: dict[str, Any] = {f"{k}:{n}": np.asarray(values[n]) for k in range(opts.input_sets)
                                for values in [task_inputs(task, config, PERF_SEED + k)] for n in names}  # fmt: skip
        np.savez(arrays, **sets)
        request = {
            "source": task.reference_source, "device": self.device,
            "key": f"{task.id}:{index}:{hashlib.sha256(task.reference_source.encode()).hexdigest()[:16]}",
            "inputs": list(binding.inputs), "parameters": dict(binding.parameters),
            "init": list(binding.init_values(config)), "arrays": str(arrays), "sets": opts.input_sets,
            "shapes": {a.name: [int(evaluate(d, config)) for d in a.shape] for a in task.args if a.is_buffer},
        }  # fmt: skip
        return request, arrays

    def _measure(self, task: Task, index: int, config: Config, opts: TimingOptions, workdir: Path) -> TorchTimes:
        if task.torch is None:
            return TorchTimes(math.nan, error=f"{task.id} has no PyTorch reference")
        request, arrays = self._request(task, index, config, opts, workdir)
        compiled, compile_error, compile_s = False, "", math.nan
        if self.compile:
            compiled, compile_error, compile_s = self._compile(request, workdir)
        timing = {"warmup": opts.warmup, "min_trials": opts.min_trials, "max_trials": opts.max_trials,
                  "budget_s": opts.budget_s, "budget_floor": max(3, opts.budget_floor), "target_rse": opts.target_rse,
                  "flush_bytes": opts.flush_bytes, "l2_flush": opts.l2_flush}  # fmt: skip
        try:
            answer = self.process.ask({**request, "op": "time", "compiled": compiled, "timing": timing}, workdir,
                                      opts.budget_s * 4 + 120)  # fmt: skip
        except TorchReferenceError as exc:
            return TorchTimes(math.nan, compile_error=compile_error, error=str(exc))
        finally:
            arrays.unlink(missing_ok=True)  # the process keeps its own copies on the device
        if "error" in answer:
            return TorchTimes(math.nan, compile_error=compile_error, error=str(answer["error"]))
        times = answer["times"]
        compile_ms = _median(times["compiled"]) if compiled and "compiled" in times else math.nan
        return TorchTimes(_median(times["eager"]), compile_ms, compile_error, compile_s)

    def _compile(self, request: dict, workdir: Path) -> tuple[bool, str, float]:
        """Build the compiled model in the torch process; (built, why not, seconds)."""
        try:
            answer = self.process.ask({**request, "op": "compile", "mode": self.compile_mode}, workdir,
                                      self.compile_timeout_s)  # fmt: skip
        except TorchReferenceError as exc:  # past the limit (or dead): the process was killed with its compilers
            if "ran past" in str(exc):
                return False, f"torch.compile took longer than compile_timeout_s ({self.compile_timeout_s:g} s)", \
                    math.nan  # fmt: skip
            return False, f"torch.compile failed: {exc}", math.nan
        if "error" in answer:
            return False, f"torch.compile failed: {str(answer['error']).splitlines()[0][:300]}", math.nan
        return True, "", float(answer.get("compile_s", math.nan))


def _median(samples: Sequence[float]) -> float:
    return float(np.median(samples)) if samples else math.nan


def _gmean(values: Sequence[float]) -> float:
    ok = [v for v in values if math.isfinite(v) and v > 0]
    return float(np.exp(np.mean(np.log(ok)))) if ok and len(ok) == len(values) else math.nan


def _deadband(speedup: float, deadband: float) -> float:
    return 1.0 if math.isfinite(speedup) and abs(speedup - 1.0) <= deadband else speedup


def over_pytorch(timing: Timing, times: Sequence[TorchTimes], deadband: float = 0.03) -> Timing:
    """``timing`` (the candidate interleaved with the task's baseline implementation) as speedups over
    PyTorch eager and ``torch.compile`` (pure).

    Per configuration the speedup is ``eager / candidate``; its lower bound keeps the relative noise
    margin the interleaved pairing measured. ``speedup_vs_impl`` keeps the speedup over the baseline
    implementation, ``speedup_vs_compile`` is ``compiled / candidate`` (NaN unless every configuration
    has a compiled time). Where eager could not be timed on every configuration, ``timing`` is returned
    with only the compile fields set: its speedup stays over the implementation.
    """
    eager = tuple(t.eager_ms for t in times)
    compiled = tuple(t.compile_ms for t in times)
    compile_errors = [t.compile_error for t in times if t.compile_error]
    eager_errors = [t.error for t in times if t.error]
    base = replace(timing, eager_ms=eager, compile_ms=compiled, compile_error=next(iter(compile_errors), ""),
                   eager_error=next(iter(eager_errors), ""), speedup_vs_impl=timing.estimate.speedup)  # fmt: skip
    if len(times) != len(timing.per_config) or not all(math.isfinite(e) and e > 0 for e in eager):
        return base
    per_config = []
    for est, ms in zip(timing.per_config, eager, strict=True):
        speedup = ms / est.candidate_ms if est.candidate_ms > 0 else math.nan
        margin = est.speedup_lcb / est.speedup if est.speedup > 0 else 1.0
        per_config.append(SpeedupEstimate(est.candidate_ms, ms, _deadband(speedup, deadband),
                                          min(speedup * min(margin, 1.0), speedup), est.trials))  # fmt: skip
    combined = SpeedupEstimate(
        _gmean([e.candidate_ms for e in per_config]), _gmean(list(eager)),
        _deadband(_gmean([e.speedup for e in per_config]), deadband), _gmean([e.speedup_lcb for e in per_config]),
        min((e.trials for e in per_config), default=0),
    )  # fmt: skip
    vs_compile = _deadband(_gmean([c / e.candidate_ms for c, e in zip(compiled, per_config, strict=True)]), deadband)
    bound = timing.speedup_bound
    if math.isfinite(bound):  # stopped early as slow: the bound over the implementation, moved to eager
        bound *= _gmean([ms / est.baseline_ms for ms, est in zip(eager, timing.per_config, strict=True)])
    return replace(base, estimate=combined, per_config=tuple(per_config), baseline="pytorch_eager",
                   speedup_vs_compile=vs_compile, speedup_bound=bound)  # fmt: skip
