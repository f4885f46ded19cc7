"""The trusted PyTorch reference process: runs a task's ``Model`` on the inputs the parent drew.

Started by :mod:`cudaperf_env.backends.torch_reference` as ``python torch_child.py``
(no package imports, so it starts fast and runs whatever ``cudaperf_env`` is
checked out). It reads one request path per line on stdin and answers one JSON
line on stdout: ``{"ok": true}`` once the outputs file is written, or
``{"error": "..."}``. A request is a JSON file::

    {"source": ..., "inputs": [...], "outputs": [[name, shape, dtype], ...],
     "parameters": {state_dict_key: name}, "jobs": [{"init": [...], "shapes": {name: shape}}],
     "arrays": "<npz of '<job>:<name>' arrays>", "out": "<npz to write>"}

It never sees a submission: the submission runs in the worker, this process only
computes expected outputs from the task's own reference.
"""

from __future__ import annotations

import hashlib
import json
import sys
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
    for line in sys.stdin:
        try:
            with open(line.strip(), encoding="utf-8") as f:
                request = json.load(f)
            namespace = _module(request["source"], cache)
            with np.load(request["arrays"]) as arrays:
                out: dict[str, Any] = {}
                for index, job in enumerate(request["jobs"]):
                    out.update(_run_job(torch, namespace, request, job, arrays, index))
            np.savez(request["out"], **out)
            answer: dict[str, Any] = {"ok": True}
        except Exception as exc:  # noqa: BLE001 - any failure of the task's reference is reported, not fatal
            tail = traceback.format_exc().strip().splitlines()[-6:]
            answer = {"error": f"{type(exc).__name__}: {exc}\n" + "\n".join(tail)}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    serve()
