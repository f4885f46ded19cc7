"""Untrusted GPU worker: runs one submission (and the trusted baseline) on device buffers.

Run as ``python -I -S gpu_worker.py REPLY_FD``; imports only the standard library.
Buffers come from the parent through shared files exactly as for the CPU worker
(see ``backends/worker.py``); here they are copied to device allocations with a
canary tail, the entry is called through the harness shim, and every buffer is
copied back so the parent can compare outputs and check inputs.

Requests (JSON lines on stdin; replies on REPLY_FD):
    {"op": "init", "harness": PATH, "device": 0}
    {"op": "load", "lib": PATH, "name": "candidate" | "baseline"}
    {"op": "call", "lib": NAME, "file": PATH, "size": N, "args": [...], "guards": [...]}
    {"op": "time", "libs": [NAME...], "sets": [{"file", "size", "args", "restore"}...],
     "min_trials": N, "max_trials": N, "budget_s": S, "target_rse": X, "flush_bytes": N, "warmup": N}
    {"op": "stage", "set": {...}}   then   {"op": "wall_check", "lib": NAME, "calls": N}
"""

import ctypes
import json
import mmap
import os
import statistics
import sys
import time
from typing import Any

CANARY_BYTES = 4096
H2D, D2H, D2D = 1, 2, 3
CALL = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_int)
_CTYPES: dict[str, Any] = {
    "int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32,
    "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16,
    "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64, "float32": ctypes.c_float,
    "float64": ctypes.c_double,
}  # fmt: skip


class Failure(Exception):
    """A CUDA call failed; the message goes back to the parent."""


class Worker:
    def __init__(self, reply) -> None:
        self.reply = reply
        self.h: Any = None  # the harness library, after init
        self.libs: dict[str, Any] = {}
        self.staged: Any = None
        self.err = ctypes.create_string_buffer(512)

    def send(self, **message) -> None:
        self.reply.write(json.dumps(message) + "\n")

    def check(self, code: int) -> None:
        if code != 0:
            raise Failure(self.err.value.decode("ascii", "replace") or f"CUDA error {code}")

    def init(self, request: dict) -> None:
        self.h = ctypes.CDLL(request["harness"], mode=os.RTLD_NOW | ctypes.RTLD_LOCAL)
        name = ctypes.create_string_buffer(256)
        cc, sms, driver, l2 = ctypes.c_int(), ctypes.c_int(), ctypes.c_int(), ctypes.c_longlong()
        self.check(self.h.cph_init(int(request.get("device", 0)), name, 256, ctypes.byref(cc), ctypes.byref(sms),
                                   ctypes.byref(l2), ctypes.byref(driver), self.err, 512))  # fmt: skip
        self.send(ok=True, name=name.value.decode(), cc=cc.value, sms=sms.value, l2_bytes=l2.value,
                  driver=driver.value)  # fmt: skip

    def load(self, request: dict) -> None:
        try:
            lib = ctypes.CDLL(request["lib"], mode=os.RTLD_NOW | ctypes.RTLD_LOCAL)
            self.libs[request.get("name", "candidate")] = CALL(("cudaperf_call", lib))
        except (OSError, AttributeError) as exc:
            raise Failure(f"cannot load the built library: {exc}") from None
        self.send(ok=True)

    def upload(self, spec: dict):
        """Map a buffer file and copy each pointer argument to a fresh device allocation."""
        fd = os.open(spec["file"], os.O_RDWR)
        mem = mmap.mmap(fd, spec["size"], mmap.MAP_SHARED)
        os.close(fd)
        base = ctypes.addressof(ctypes.c_char.from_buffer(mem))
        buffers, argv, keep = [], (ctypes.c_void_p * max(1, len(spec["args"])))(), []
        for i, arg in enumerate(spec["args"]):
            if "ptr" in arg:
                dev = ctypes.c_void_p()
                self.check(self.h.cph_alloc(ctypes.c_size_t(arg["bytes"]), ctypes.c_size_t(CANARY_BYTES),
                                            ctypes.byref(dev), self.err, 512))  # fmt: skip
                host = base + arg["ptr"]
                size = ctypes.c_size_t(arg["bytes"])
                self.check(self.h.cph_copy(dev, ctypes.c_void_p(host), size, H2D, self.err, 512))
                buffers.append((i, dev, host, arg["bytes"]))
                argv[i] = dev.value
            else:
                value = _CTYPES[arg["scalar"]](arg["value"])
                keep.append(value)
                argv[i] = ctypes.addressof(value)
        return mem, buffers, argv, keep

    def download(self, buffers, hosts: list | None = None) -> list:
        """Copy every buffer back to its host address (or to ``hosts``); the indices of broken canaries."""
        overruns = []
        for n, (i, dev, host, nbytes) in enumerate(buffers):
            target = ctypes.c_void_p(hosts[n] if hosts is not None else host)
            self.check(self.h.cph_copy(target, dev, ctypes.c_size_t(nbytes), D2H, self.err, 512))
            intact = ctypes.c_int()
            self.check(self.h.cph_canary_intact(dev, ctypes.c_size_t(nbytes), ctypes.c_size_t(CANARY_BYTES),
                                                ctypes.byref(intact), self.err, 512))  # fmt: skip
            if not intact.value:
                overruns.append(i)
        return overruns

    def free(self, buffers) -> None:
        for _, dev, _, _ in buffers:
            self.h.cph_free(dev)

    def call(self, request: dict) -> None:
        mem, buffers, argv, keep = self.upload(request)
        fn = self.libs[request.get("lib", "candidate")]
        start = time.perf_counter()
        code = fn(argv, self.err, 512)
        seconds = time.perf_counter() - start
        error = self.err.value.decode("ascii", "replace") if code else ""
        overruns = self.download(buffers) if code == 0 else []
        self.free(buffers)
        sys.stdout.flush()
        self.send(ok=True, code=code, error=error, seconds=seconds, overrun_args=overruns)
        del mem, keep

    def time(self, request: dict) -> None:
        sets = [self.upload(s) for s in request["sets"]]  # pristine copies, one per input set
        work = self.upload(request["sets"][0])  # the buffers every timed call runs on
        names = request["libs"]
        self.h.cph_flush_setup(ctypes.c_size_t(request["flush_bytes"]), self.err, 512)
        times: dict[str, list[float]] = {n: [] for n in names}
        walls: dict[str, list[float]] = {n: [] for n in names}
        started, trial = time.perf_counter(), 0
        for _ in range(request["warmup"]):
            for name in names:
                self.timed(name, work, sets[0], request["sets"][0], flush=0)
        while True:
            order = names if trial % 2 == 0 else names[::-1]  # ABBA: drift hits both equally
            for name in order:
                k = trial % len(sets)
                ms, wall = self.timed(name, work, sets[k], request["sets"][k], flush=1 + trial % 200)
                times[name].append(ms)
                walls[name].append(wall)
            trial += 1
            if trial >= request["max_trials"] or time.perf_counter() - started > request["budget_s"]:
                break
            if trial >= request["min_trials"] and all(_rse(times[n]) < request["target_rse"] for n in names):
                break
        # after timing, each implementation once more on each set; outputs to files the parent checks
        overruns = []
        for k, spec in enumerate(request["sets"]):
            for name, key in ((names[0], "result_file"), (names[-1], "expected_file")):
                self.timed(name, work, sets[k], spec, flush=1)
                found = self.download_to_file(work, spec[key], spec["size"], spec["args"])
                overruns += found if name == names[0] else []
        for s in (*sets, work):
            self.free(s[1])
        self.send(ok=True, times=times, walls=walls, overrun_args=sorted(set(overruns)))

    def timed(self, name, work, pristine, spec, flush):
        pointer_args = [a for a in spec["args"] if "ptr" in a]
        for (_, dst, _, nbytes), (_, src, _, _), arg in zip(work[1], pristine[1], pointer_args, strict=True):
            if arg.get("restore") == "poison":
                self.check(self.h.cph_memset(dst, arg["poison"], ctypes.c_size_t(nbytes), self.err, 512))
            else:
                self.check(self.h.cph_copy(dst, src, ctypes.c_size_t(nbytes), D2D, self.err, 512))
        ms, wall = ctypes.c_float(), ctypes.c_double()
        fn = self.libs[name]
        self.check(self.h.cph_timed_call(fn, work[2], flush, ctypes.byref(ms), ctypes.byref(wall), self.err, 512))
        return ms.value, wall.value

    def download_to_file(self, work, path: str, size: int, args: list) -> list:
        """Copy the working buffers into the file at ``path`` (same layout); broken canaries."""
        fd = os.open(path, os.O_RDWR)
        mem = mmap.mmap(fd, size, mmap.MAP_SHARED)
        os.close(fd)
        base = ctypes.addressof(ctypes.c_char.from_buffer(mem))
        hosts = [base + a["ptr"] for a in args if "ptr" in a]
        return self.download(work[1], hosts)

    def bandwidth(self, request: dict) -> None:
        gbps = ctypes.c_double()
        self.check(self.h.cph_copy_bandwidth(ctypes.c_size_t(request["bytes"]), 5, ctypes.byref(gbps), self.err, 512))
        self.send(ok=True, copy_gbps=gbps.value)

    def stage(self, request: dict) -> None:
        """Upload a set for :meth:`wall_check`, so the parent's clock sees only the calls."""
        self.staged = self.upload(request["set"])
        self.send(ok=True)

    def wall_check(self, request: dict) -> None:
        work, fn, events = self.staged, self.libs[request["lib"]], []
        for _ in range(request["calls"]):
            ms, wall = ctypes.c_float(), ctypes.c_double()
            self.check(self.h.cph_timed_call(fn, work[2], 0, ctypes.byref(ms), ctypes.byref(wall), self.err, 512))
            events.append(ms.value)
        self.send(ok=True, events=events)
        self.free(work[1])


def _rse(samples: list) -> float:
    """Relative standard error of the median (normal approximation from the MAD)."""
    if len(samples) < 3:
        return float("inf")
    med = statistics.median(samples)
    mad = statistics.median(abs(x - med) for x in samples)
    return 1.2533 * 1.4826 * mad / (len(samples) ** 0.5) / med if med > 0 else float("inf")


def main(reply_fd: int) -> None:
    worker = Worker(os.fdopen(reply_fd, "w", buffering=1))
    handlers = {"init": worker.init, "load": worker.load, "call": worker.call, "time": worker.time,
                "stage": worker.stage, "bandwidth": worker.bandwidth, "wall_check": worker.wall_check}  # fmt: skip
    for line in sys.stdin:
        request = json.loads(line)
        try:
            handlers[request["op"]](request)
        except Failure as exc:
            worker.send(ok=False, error=str(exc))


if __name__ == "__main__":
    main(int(sys.argv[1]))
