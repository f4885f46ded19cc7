"""Untrusted KernelBench-mode worker: runs one submission's ``ModelNew`` with torch, confined.

Run as ``python -I kernelbench_worker.py REPLY_FD`` (site packages on: it imports torch and numpy, never
``cudaperf_env``) by ``backends/cuda/kernelbench.py``, one process per submission. Requests are JSON lines
on stdin, replies frames on REPLY_FD (``sandbox.frame``)::

    {"op": "init", "device": "cuda:0"}                     -> device facts (torch imported, context made)
    {"op": "load", "source": CODE, "modules": {KEY: PATH}}  -> the submission's module run, ModelNew found
    {"op": "run", "arrays": NPZ, "init": [...], "inputs": [NAME...], "parameters": {KEY: NAME},
     "shapes": {NAME: SHAPE}, "outputs": [[NAME, DTYPE]...]} -> {"status", "message", "buffers"}
    {"op": "time", ... as run, "sets": K, "timing": {...}}  -> {"times", "early", "mismatches", "problem", ...}
    {"op": "sample", "indices": [[INDEX...] per output]}    -> the last timed outputs' values there, per set
    {"op": "wall_check", "calls": N}                        -> event times of N back-to-back calls
    {"op": "bandwidth", "bytes": N}                         -> the device's copy bandwidth (GB/s)

The submission's ``load_inline`` is replaced by a loader of the parent's builds, matched by a digest
of its arguments (``source/inline_extension.py``'s ``extension_key``, restated here), so nothing is
compiled in this process and sources the parent did not screen are not loaded. The extension's bound
functions are counted; a :class:`OpGuard` (a ``TorchDispatchMode``) records every ATen op a forward
dispatches, from Python or from the extension's C++. A forward is refused (``status: refused``) when it
dispatches compute (anything but :data:`PERMITTED_OPS`: allocation, views, copies, metadata), never calls
the extension, or returns tensors that are not fresh (an input, a parameter, each other, or a buffer an
earlier call returned). The parent compares the returned buffers with the trusted reference's.
"""

import base64
import hashlib
import importlib.util
import json
import linecache
import math
import os
import statistics
import sys
import time
import traceback
from typing import Any

ALLOCATION_OPS = frozenset({"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros",
                            "zeros_like", "new_zeros", "zero_", "fill_"})  # fmt: skip
VIEW_OPS = frozenset({
    "view", "_unsafe_view", "reshape", "_reshape_alias", "as_strided", "alias", "t", "transpose", "permute",
    "squeeze", "unsqueeze", "expand", "slice", "select", "narrow", "split", "split_with_sizes", "chunk", "unbind",
    "unfold", "detach", "unflatten", "flatten", "movedim", "view_as", "expand_as", "lift_fresh",
})  # fmt: skip
COPY_OPS = frozenset({"clone", "copy_", "_to_copy", "contiguous", "to"})
METADATA_OPS = frozenset({"sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "is_contiguous", "size",
                          "stride", "dim", "numel", "_local_scalar_dense", "is_same_size"})  # fmt: skip
PERMITTED_OPS = ALLOCATION_OPS | VIEW_OPS | COPY_OPS | METADATA_OPS
MAX_REPLY_BYTES = 12 << 20  # under the parent's frame limit once base64-encoded


class Refused(Exception):
    """The submission broke a rule at run time; the message goes to the agent (status ``rejected``)."""


class Failed(Exception):
    """The submission raised or returned the wrong thing; the message goes to the agent (``runtime_error``)."""


def extension_key(name, cpp_sources, cuda_sources, functions, cflags=(), cuda_cflags=()) -> str:
    """``source/inline_extension.py``'s digest of load_inline's arguments (a test keeps the two equal)."""

    def strings(value):
        return [value] if isinstance(value, str) else [str(v) for v in value or ()]

    text = json.dumps([name, strings(cpp_sources), strings(cuda_sources), strings(functions), strings(cflags),
                       strings(cuda_cflags)])  # fmt: skip
    return hashlib.sha256(text.encode()).hexdigest()


def _flags(value) -> list:
    return [f.strip() for f in ([value] if isinstance(value, str) else value or ()) if f.strip()]


class Extension:
    """What the submission's ``load_inline`` returns: the built module's bound functions, each call counted."""

    def __init__(self, module, functions, counter: list) -> None:
        for name in functions:
            setattr(self, name, _counted(getattr(module, name), counter))


def _counted(fn, counter: list):
    def call(*args, **kwargs):
        counter[0] += 1
        return fn(*args, **kwargs)

    return call


def op_guard(torch):
    """A dispatch mode recording the name of every ATen op dispatched while it is active."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class OpGuard(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.ops: dict = {}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func.overloadpacket.__name__
            self.ops[name] = self.ops.get(name, 0) + 1
            return func(*args, **(kwargs or {}))

    return OpGuard()


class Worker:
    def __init__(self, reply: int) -> None:
        self.reply = reply
        self.torch: Any = None
        self.np: Any = None
        self.device: Any = None
        self.model_class: Any = None
        self.modules: dict = {}
        self.calls = [0]  # the extension's functions' calls
        self.timed: dict = {}  # the last timing request's model, inputs and outputs, for sample / wall_check

    def send(self, **message) -> None:
        body = json.dumps(message).encode()
        data = b"CPF1" + len(body).to_bytes(4, "little") + body
        while data:
            data = data[os.write(self.reply, data) :]

    def init(self, request: dict) -> None:
        import numpy
        import torch

        self.torch, self.np = torch, numpy
        torch.set_num_threads(1)
        self.device = torch.device(request.get("device", "cuda:0"))
        facts: dict = {"torch": torch.__version__}
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)
            torch.zeros(1, device=self.device)  # the context, made while the parent builds
            props = torch.cuda.get_device_properties(self.device)
            facts.update(name=props.name, cc=props.major * 10 + props.minor, sms=props.multi_processor_count,
                         l2_bytes=getattr(props, "L2_cache_size", 0), cuda=torch.version.cuda,
                         driver=getattr(torch._C, "_cuda_getDriverVersion", lambda: 0)())  # fmt: skip
        self.send(ok=True, **facts)

    def load(self, request: dict) -> None:
        """Run the submission's module with ``load_inline`` replaced by a loader of the parent's builds."""
        from torch.utils import cpp_extension

        self.modules = dict(request["modules"])
        setattr(cpp_extension, "load_inline", self.load_inline)  # noqa: B010 - replaced on purpose
        namespace: dict = {"__name__": "submission"}
        source = request["source"]  # tracebacks quote the submission's lines
        linecache.cache["submission.py"] = (len(source), None, source.splitlines(True), "submission.py")
        try:
            exec(compile(request["source"], "submission.py", "exec"), namespace)  # screened by the parent
        except Exception as exc:  # noqa: BLE001 - the submission's failure goes back as text
            self.send(ok=True, status="error", message=f"loading the submission failed: {_describe(exc)}")
            return
        model = namespace.get("ModelNew")
        if not (isinstance(model, type) and issubclass(model, self.torch.nn.Module)):
            self.send(ok=True, status="error", message="the submission defines no `class ModelNew(nn.Module)`")
            return
        self.model_class = model
        self.send(ok=True, status="ok")

    def load_inline(self, name, cpp_sources, cuda_sources=None, functions=None, extra_cflags=None,
                    extra_cuda_cflags=None, **_ignored):  # fmt: skip
        key = extension_key(name, cpp_sources, cuda_sources, functions, _flags(extra_cflags),
                            _flags(extra_cuda_cflags))  # fmt: skip
        path = self.modules.get(key)
        if path is None:
            raise RuntimeError("load_inline was called with arguments other than the ones the screen read")
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return Extension(module, [functions] if isinstance(functions, str) else list(functions), self.calls)

    def model(self, request: dict, arrays, set_index: Any = None):
        """``ModelNew(*init)`` on the device with the task's parameters loaded by ``state_dict`` key."""
        torch = self.torch
        torch.manual_seed(0)  # buffers a module makes for itself, as the reference's
        model = self.model_class(*request["init"]).to(self.device)
        state = model.state_dict()
        loaded = {}
        for key, arg in request["parameters"].items():
            if key not in state:
                raise Failed(f"ModelNew has no parameter `{key}` (it has: {', '.join(state) or 'none'}): keep the "
                             "reference's parameters under the same names (e.g. self.fc = nn.Linear(...)) so the "
                             "task's values can be loaded")  # fmt: skip
            values = arrays[_array(arg, set_index)]
            if values.size != state[key].numel():
                raise Failed(f"ModelNew's `{key}` holds {state[key].numel()} values, the reference's "
                             f"{values.size}: give it the reference's shape")  # fmt: skip
            loaded[key] = torch.from_numpy(values.copy()).reshape(state[key].shape).to(self.device, state[key].dtype)
        model.load_state_dict(loaded, strict=True)
        return model

    def inputs(self, request: dict, arrays, set_index: Any = None) -> list:
        return [self.torch.from_numpy(arrays[_array(n, set_index)].copy()).reshape(request["shapes"][n])
                .to(self.device) for n in request["inputs"]]  # fmt: skip

    def forward(self, model, inputs: list, request: dict, guarded: bool, earlier: tuple = ()) -> list:
        """One checked call: the outputs, fresh and as the task binds them (raises Refused or Failed)."""
        torch = self.torch
        before = self.calls[0]
        guard = op_guard(torch) if guarded else None
        with torch.no_grad():
            if guard is not None:
                with guard:
                    result = model(*inputs)
            else:
                result = model(*inputs)
        self.synchronize()
        if guard is not None:
            compute = sorted(op for op in guard.ops if op not in PERMITTED_OPS)
            if compute:
                raise Refused(f"forward ran PyTorch compute ({', '.join('aten::' + op for op in compute[:5])}): the "
                              "work must be done by your own kernels; forward may only allocate, take views and "
                              "call your extension")  # fmt: skip
        if self.calls[0] == before:
            raise Refused("forward never called your extension's functions: do the work in your own kernels")
        outputs = list(result) if isinstance(result, (tuple, list)) else [result]
        self.check_outputs(outputs, inputs, model, request, earlier)
        return outputs

    def check_outputs(self, outputs: list, inputs: list, model, request: dict, earlier: tuple) -> None:
        torch, want = self.torch, request["outputs"]
        if len(outputs) != len(want):
            raise Failed(f"forward returned {len(outputs)} value(s), the reference returns {len(want)}")
        for (name, dtype), out in zip(want, outputs, strict=True):
            shape = request["shapes"][name]
            if not isinstance(out, torch.Tensor):
                raise Failed(f"forward returned a {type(out).__name__} for `{name}`, expected a tensor")
            if out.device != self.device or str(out.dtype) != f"torch.{dtype}":
                raise Failed(f"forward returned `{name}` as {out.dtype} on {out.device}, expected torch.{dtype} on "
                             f"{self.device}")  # fmt: skip
            if out.numel() != math.prod(shape):
                raise Failed(f"forward returned `{name}` with shape {tuple(out.shape)}, the reference's is "
                             f"{tuple(shape)}")  # fmt: skip
        taken = [("input", t) for t in inputs] + [("parameter", t) for t in model.state_dict().values()]
        taken += [("output of an earlier call", t) for t in earlier]
        for i, out in enumerate(outputs):
            span = _span(out)
            for what, other in taken + [("another output", o) for o in outputs[:i]]:
                if span[0] < _span(other)[1] and _span(other)[0] < span[1]:
                    raise Refused(f"forward's output {i} shares memory with {what}: return fresh tensors "
                                  "(torch::empty / empty_like in your extension), never an input or a cached "
                                  "buffer")  # fmt: skip

    def run(self, request: dict) -> None:
        np = self.np
        try:
            with np.load(request["arrays"]) as arrays:
                model = self.model(request, arrays)
                inputs = self.inputs(request, arrays)
                outputs = self.forward(model, inputs, request, guarded=True)
                buffers = {name: self.download(t) for name, t in zip(request["inputs"], inputs, strict=True)}
                state = model.state_dict()
                buffers.update({arg: self.download(state[key]) for key, arg in request["parameters"].items()})
                names = [name for name, _ in request["outputs"]]
                buffers.update({name: self.download(t) for name, t in zip(names, outputs, strict=True)})
        except (Refused, Failed) as exc:
            self.send(ok=True, status="refused" if isinstance(exc, Refused) else "error", message=str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - the submission's exception goes back as text
            self.send(ok=True, status="error", message=_describe(exc))
            return
        if sum(len(b["data"]) for b in buffers.values()) > MAX_REPLY_BYTES:
            self.send(ok=True, status="error", message="the outputs are too large to return")
            return
        self.send(ok=True, status="ok", buffers=buffers, calls=self.calls[0])

    def download(self, tensor) -> dict:
        array = tensor.detach().contiguous().reshape(-1).cpu().numpy()
        return {"dtype": array.dtype.name, "data": base64.b64encode(array.tobytes()).decode()}

    def synchronize(self) -> None:
        if self.device.type == "cuda":
            self.torch.cuda.synchronize()  # device-wide: a side stream's work is waited for too

    def time(self, request: dict) -> None:
        """Checked round on every set (guarded), warmup, then timed calls over the rotated sets."""
        torch, np, opts = self.torch, self.np, request["timing"]
        began = time.perf_counter()
        try:
            with np.load(request["arrays"]) as arrays:
                model = self.model(request, arrays, 0)
                sets = [self.inputs(request, arrays, k) for k in range(request["sets"])]
        except Failed as exc:
            self.send(ok=True, status="error", message=str(exc))
            return
        work = [torch.empty_like(t) for t in sets[0]]
        flush = torch.empty(max(1, opts["flush_bytes"] // 4), dtype=torch.int32, device=self.device) \
            if self.device.type == "cuda" else None  # fmt: skip
        self.timed = {"model": model, "work": work, "sets": sets, "flush": flush, "request": request}
        first: list = []
        early: list = []
        problem = ""
        try:
            for k in range(len(sets)):  # the checked round: guarded, every set, outputs kept
                ms, outputs = self.call(k, 1, guarded=True, earlier=tuple(o for out in first for o in out))
                early.append(ms)
                first.append([o.clone() for o in outputs] + outputs)
                changed = [n for n, w, p in zip(request["inputs"], work, sets[k], strict=True) if not torch.equal(w, p)]
                problem = problem or (f"modified the input `{changed[0]}` on a timing configuration, which must stay "
                                      "unchanged" if changed else "")  # fmt: skip
        except (Refused, Failed) as exc:
            self.send(ok=True, status="refused" if isinstance(exc, Refused) else "error", message=str(exc))
            return
        except Exception as exc:  # noqa: BLE001
            self.send(ok=True, status="error", message=_describe(exc))
            return
        n_out = len(request["outputs"])
        checked = [out[:n_out] for out in first]
        last, held = dict(enumerate(out[n_out:] for out in first)), [o for out in first for o in out[n_out:]]
        times, stop, trial = [], "", 0
        uploaded = time.perf_counter()
        for _ in range(max(0, opts["warmup"] - 1)):
            early.append(self.call(0, 0)[0])
        while not problem:
            k = trial % len(sets)
            before = self.calls[0]
            ms, outputs = self.call(k, 1 + trial % 200)
            if self.calls[0] == before:
                problem = "a timed call did not run your extension: every call must do the work"
            elif any(_span(o)[0] < _span(h)[1] and _span(h)[0] < _span(o)[1] for o in outputs for h in held):
                problem = "a timed call returned a buffer an earlier call returned: outputs must be fresh tensors"
            times.append(ms)
            held = [o for k2, out in last.items() if k2 != k for o in out] + list(outputs)
            last[k] = outputs
            trial += 1
            if trial >= opts["max_trials"]:
                stop = "max_trials"
            elif time.perf_counter() - uploaded > opts["budget_s"] and trial >= opts.get("budget_floor", 1):
                stop = "budget"
            elif trial >= opts["min_trials"] and _rse(times) < opts["target_rse"]:
                stop = "target_rse"
            if stop:
                break
        self.timed["last"] = last
        mismatches = [] if problem else self.compare(checked, last, request)
        self.send(ok=True, status="ok", times=times, early=early, mismatches=mismatches, problem=problem, stop=stop,
                  phases={"upload_s": uploaded - began, "trials_s": time.perf_counter() - uploaded})  # fmt: skip

    def call(self, k: int, flush: int, guarded: bool = False, earlier: tuple = ()) -> tuple:
        """Restore the work inputs from set ``k``, flush L2, and time one forward between events."""
        torch, t = self.torch, self.timed
        for w, p in zip(t["work"], t["sets"][k], strict=True):
            w.copy_(p)
        if flush and t["flush"] is not None:
            if t["request"]["timing"].get("l2_flush", "read") == "read":
                t["flush"].sum()
            else:
                t["flush"].fill_(flush & 0xFF)
        self.synchronize()
        if self.device.type != "cuda" or guarded:
            started = time.perf_counter()
            outputs = self.forward(t["model"], t["work"], t["request"], True, earlier) if guarded else \
                self.forward_plain(t["model"], t["work"])  # fmt: skip
            return (time.perf_counter() - started) * 1e3, outputs
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        outputs = self.forward_plain(t["model"], t["work"])
        torch.cuda.synchronize()  # device-wide, before the end event (side streams)
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)), outputs

    def forward_plain(self, model, inputs: list) -> list:
        with self.torch.no_grad():
            result = model(*inputs)
        return list(result) if isinstance(result, (tuple, list)) else [result]

    def compare(self, checked: list, last: dict, request: dict) -> list:
        """Elements of each set's last timed outputs that differ from the set's checked call (task tolerance)."""
        found = []
        for k, outputs in last.items():
            for i, (got, want) in enumerate(zip(outputs, checked[k], strict=True)):
                tol = request["tolerances"][i]
                a, b = got.detach().reshape(-1).double(), want.reshape(-1).double()
                bad = ~((a - b).abs() <= tol["atol"] + tol["rtol"] * b.abs()) & ~(a.isnan() & b.isnan())
                count = int(bad.sum())
                if count:
                    found.append({"set": k, "output": i, "count": count, "total": int(b.numel())})
        return found

    def sample(self, request: dict) -> None:
        """The last timed outputs of every set at the parent's indices (drawn after timing)."""
        values = []
        for k in sorted(self.timed.get("last", {})):
            outputs = self.timed["last"][k]
            values.append([out.detach().reshape(-1)[self.torch.tensor(idx, device=self.device)].double().cpu()
                           .tolist() for out, idx in zip(outputs, request["indices"], strict=True)])  # fmt: skip
        self.send(ok=True, values=values)

    def bandwidth(self, request: dict) -> None:
        """Device-to-device copy bandwidth (GB/s, read plus write; the best of ``reps`` copies after one)."""
        torch, size = self.torch, int(request["bytes"])
        a = torch.empty(size, dtype=torch.uint8, device=self.device)
        b = torch.empty_like(a)
        best = float("inf")
        for r in range(int(request.get("reps", 5)) + 1):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            b.copy_(a)
            end.record()
            end.synchronize()
            best = min(best, start.elapsed_time(end)) if r else best  # the first copy warms up
        self.send(ok=True, copy_gbps=2.0 * size / (best * 1e-3) / 1e9)

    def wall_check(self, request: dict) -> None:
        """``calls`` back-to-back timed calls on set 0, for the parent's own clock."""
        events = [self.call(0, 0)[0] for _ in range(request["calls"])]
        self.send(ok=True, events=events)


def _array(name: str, set_index: Any) -> str:
    return name if set_index is None else f"{set_index}:{name}"


def _span(tensor) -> tuple:
    storage = tensor.untyped_storage()
    return storage.data_ptr(), storage.data_ptr() + max(1, storage.nbytes())


def _describe(exc: BaseException) -> str:
    """The exception and the submission's own frames (the worker's are not the agent's business)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == "submission.py"]
    where = "".join(f"\n  line {f.lineno}, in {f.name}: {f.line}" for f in frames[-3:])
    return f"{type(exc).__name__}: {str(exc).strip()[:1500]}{where}"


def _rse(samples: list) -> float:
    if len(samples) < 3:
        return float("inf")
    med = statistics.median(samples)
    mad = statistics.median(abs(x - med) for x in samples)
    return 1.2533 * 1.4826 * mad / (len(samples) ** 0.5) / med if med > 0 else float("inf")


def main(reply_fd: int) -> None:
    worker = Worker(reply_fd)
    handlers = {"init": worker.init, "load": worker.load, "run": worker.run, "time": worker.time,
                "sample": worker.sample, "wall_check": worker.wall_check, "bandwidth": worker.bandwidth}  # fmt: skip
    for line in sys.stdin:
        request = json.loads(line)
        try:
            handlers[request["op"]](request)
        except Exception as exc:  # noqa: BLE001 - a failure outside the submission's calls: the parent decides
            worker.send(ok=False, error=_describe(exc))


if __name__ == "__main__":
    main(int(sys.argv[1]))
