"""The trusted PyTorch reference process: runs a task's ``Model`` on the inputs the parent drew.

Started by :mod:`cudaperf_env.backends.torch_reference` as ``python torch_child.py``
(no package imports, so it starts fast and runs whatever ``cudaperf_env`` is
checked out). It reads one request path per line on stdin and answers one JSON
line on stdout: ``{"ok": true}`` once the outputs file is written, or
``{"error": "..."}``. A request is a JSON file::

    {"source": ..., "inputs": [...], "outputs": [[name, shape, dtype], ...],
     "parameters": {state_dict_key: name}, "jobs": [{"init": [...], "shapes": {name: shape}}],
     "arrays": "<npz of '<job>:<name>' arrays>", "out": "<npz to write>"}

A request with ``"op": "compile"`` or ``"op": "time"`` times the reference itself
as the GPU baselines (``cudaperf_env/backends/cuda/torch_baselines.py``): the model
is built once per task and configuration (``"key"``) on ``"device"`` with the
parameters of input set 0, ``compile`` wraps it in ``torch.compile`` and runs it
once (the parent bounds that in time by killing this process), and ``time`` times
eager (and the compiled model, when asked and built) the way the GPU worker times
submissions: warmup, then rounds in ABBA order over the rotated input sets, each
call after an L2 flush, between CUDA events with a device-wide synchronize before
the end event, until the trial limits, the budget or the target error stop it.
The answer carries the event times (``{"ok": true, "times": {"eager": [...], ...}}``).
``"op": "sample"`` runs the eager model on every input set and answers its outputs' values at the
given flat indices (``{"values": [[[...] per output] per set]}``): the KernelBench-mode check of the
candidate's timed outputs (``cuda/kernelbench.py``).

It never sees a submission: the submission runs in the worker, this process only
computes expected outputs and baseline times from the task's own reference.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import sys
import time
import traceback
from typing import Any

import numpy as np


def _module(source: str, cache: dict[str, dict[str, Any]]) -> dict[str, Any]:
    key = hashlib.sha256(source.encode()).hexdigest()
    if key not in cache:
        namespace: dict[str, Any] = {"__name__": "cudaperf_reference"}
        exec(compile(source, "reference.py", "exec"), namespace)  # the task's own trusted reference
        if not isinstance(namespace.get("Model"), type):
            raise ValueError("the reference defines no `class Model(nn.Module)`")
        cache.clear()  # one task at a time in practice; keep memory flat
        cache[key] = namespace
    return cache[key]


def _run_job(torch: Any, namespace: dict[str, Any], request: dict[str, Any], job: dict[str, Any],
             arrays: Any, index: int) -> dict[str, np.ndarray]:  # fmt: skip
    torch.manual_seed(0)  # buffers a module builds for itself (not parameters) are reproducible
    model = namespace["Model"](*job["init"])
    state = model.state_dict()
    names = dict(model.named_parameters())
    unbound = sorted(set(names) - set(request["parameters"]))
    if unbound:
        raise ValueError(f"parameters of Model not bound to an argument: {', '.join(unbound)}")
    loaded = {}
    for key, arg in request["parameters"].items():
        if key not in state:
            raise ValueError(f"Model has no parameter or buffer {key!r} (it has: {', '.join(state)})")
        values = arrays[f"{index}:{arg}"]
        if values.size != state[key].numel():
            raise ValueError(f"{key} holds {state[key].numel()} elements {tuple(state[key].shape)}, "
                             f"argument `{arg}` {values.size}")  # fmt: skip
        loaded[key] = torch.from_numpy(values.copy()).reshape(state[key].shape).to(state[key].dtype)
    model.load_state_dict(loaded, strict=False)
    inputs = [torch.from_numpy(arrays[f"{index}:{n}"].copy()).reshape(job["shapes"][n]) for n in request["inputs"]]
    with torch.no_grad():
        result = model(*inputs)
    results = list(result) if isinstance(result, (tuple, list)) else [result]
    if len(results) != len(request["outputs"]):
        raise ValueError(f"forward returned {len(results)} tensors, the task binds {len(request['outputs'])} outputs")
    out = {}
    for (name, _, dtype), value in zip(request["outputs"], results, strict=True):
        if not isinstance(value, torch.Tensor):
            raise ValueError(f"forward returned a {type(value).__name__} for `{name}`, expected a tensor")
        shape = job["shapes"][name]
        if value.numel() != int(np.prod(shape)):
            raise ValueError(f"forward's `{name}` has shape {tuple(value.shape)}, the task says {shape}")
        out[f"{index}:{name}"] = value.detach().contiguous().reshape(-1).numpy().astype(dtype, copy=False)
    return out


def serve() -> None:
    """Answer requests until stdin closes."""
    import torch

    torch.set_num_threads(1)  # reproducible results, and fair to the other processes on the machine
    cache: dict[str, dict[str, Any]] = {}
    models: dict[str, dict[str, Any]] = {}  # baseline models by task and configuration key
    for line in sys.stdin:
        try:
            with open(line.strip(), encoding="utf-8") as f:
                request = json.load(f)
            namespace = _module(request["source"], cache)
            op = request.get("op", "expected")
            if op in ("compile", "time", "sample"):
                answer: dict[str, Any] = _baseline(torch, namespace, request, models)
            else:
                with np.load(request["arrays"]) as arrays:
                    out: dict[str, Any] = {}
                    for index, job in enumerate(request["jobs"]):
                        out.update(_run_job(torch, namespace, request, job, arrays, index))
                np.savez(request["out"], **out)
                answer = {"ok": True}
        except Exception as exc:  # noqa: BLE001 - any failure of the task's reference is reported, not fatal
            tail = traceback.format_exc().strip().splitlines()[-6:]
            answer = {"error": f"{type(exc).__name__}: {exc}\n" + "\n".join(tail)}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


def _baseline_model(torch: Any, namespace: dict[str, Any], request: dict[str, Any], models: dict) -> dict[str, Any]:
    """The eager model of ``request["key"]`` on its device with input set 0's parameters, and its input sets."""
    key = request["key"]
    if key not in models:
        device = torch.device(request["device"])
        with np.load(request["arrays"]) as arrays:
            torch.manual_seed(0)
            model = namespace["Model"](*request["init"])
            state = model.state_dict()
            loaded = {k: torch.from_numpy(arrays[f"0:{arg}"].copy()).reshape(state[k].shape).to(state[k].dtype)
                      for k, arg in request["parameters"].items()}  # fmt: skip
            model.load_state_dict(loaded, strict=False)
            sets = [[torch.from_numpy(arrays[f"{k}:{n}"].copy()).reshape(request["shapes"][n]).to(device)
                     for n in request["inputs"]] for k in range(request["sets"])]  # fmt: skip
        models.clear()  # one task and configuration at a time: device memory stays flat
        models[key] = {"eager": model.to(device), "sets": sets, "device": device}
    return models[key]


def _baseline(torch: Any, namespace: dict[str, Any], request: dict[str, Any], models: dict) -> dict[str, Any]:
    entry = _baseline_model(torch, namespace, request, models)
    device, sets = entry["device"], entry["sets"]
    with torch.no_grad():
        if request["op"] == "compile" and "compiled" in entry:
            return {"ok": True, "compile_s": 0.0}
        if request["op"] == "compile":
            started = time.perf_counter()
            compiled = torch.compile(entry["eager"], mode=request.get("mode") or None)
            got, want = compiled(*sets[0]), entry["eager"](*sets[0])
            _synchronize(torch, device)
            for a, b in zip(_tensors(got), _tensors(want), strict=True):
                if a.shape != b.shape or not torch.allclose(a.float(), b.float(), rtol=1e-2, atol=1e-3):
                    raise ValueError("torch.compile's output differs from eager's")
            entry["compiled"] = compiled
            return {"ok": True, "compile_s": time.perf_counter() - started}
        if request["op"] == "sample":  # eager's outputs on every set at the given flat indices
            values = []
            for inputs in sets:
                outputs = _tensors(entry["eager"](*inputs))
                values.append([out.detach().reshape(-1)[torch.tensor(idx, device=device)].double().cpu().tolist()
                               for out, idx in zip(outputs, request["indices"], strict=True)])  # fmt: skip
            return {"ok": True, "values": values}
        fns = {"eager": entry["eager"]}
        if request.get("compiled") and "compiled" in entry:
            fns["compiled"] = entry["compiled"]
        return {"ok": True, "times": _time_all(torch, fns, sets, request["timing"], device)}


def _tensors(result: Any) -> list[Any]:
    return list(result) if isinstance(result, (tuple, list)) else [result]


def _synchronize(torch: Any, device: Any) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _time_all(torch: Any, fns: dict[str, Any], sets: list, t: dict[str, Any], device: Any) -> dict[str, list[float]]:
    """Event times (ms) of each of ``fns`` as the GPU worker times implementations (see the module docstring)."""
    cuda = device.type == "cuda"
    flush = torch.zeros(max(4, t["flush_bytes"] // 4) if cuda else 4, dtype=torch.int32, device=device)
    read = t.get("l2_flush", "read") == "read"

    def timed(fn: Any, inputs: list, k: int) -> float:
        if k and cuda and read:  # the harness's flush: read every line of a buffer larger than L2 ...
            flush.sum()
        elif k and cuda:  # ... or memset it
            flush.fill_(k & 0xFF)
        _synchronize(torch, device)
        if not cuda:
            started = time.perf_counter()
            fn(*inputs)
            return (time.perf_counter() - started) * 1e3
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*inputs)
        torch.cuda.synchronize(device)  # device-wide, like the harness, before the end event
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end))

    names = list(fns)
    for _ in range(max(1, t["warmup"])):
        for name in names:
            timed(fns[name], sets[0], 0)
    times: dict[str, list[float]] = {n: [] for n in names}
    began, trial = time.perf_counter(), 0
    while True:
        for name in names if trial % 2 == 0 else names[::-1]:  # ABBA: drift hits both alike
            times[name].append(timed(fns[name], sets[trial % len(sets)], 1 + trial % 200))
        trial += 1
        if trial >= t["max_trials"]:
            break
        if time.perf_counter() - began > t["budget_s"] and trial >= t.get("budget_floor", 1):
            break
        if trial >= t["min_trials"] and all(_rse(times[n]) < t["target_rse"] for n in names):
            break
    return times


def _rse(samples: list[float]) -> float:
    """Relative standard error of the median (the GPU worker's rule)."""
    if len(samples) < 3:
        return float("inf")
    med = statistics.median(samples)
    mad = statistics.median(abs(x - med) for x in samples)
    return 1.2533 * 1.4826 * mad / (len(samples) ** 0.5) / med if med > 0 else float("inf")


if __name__ == "__main__":
    serve()
