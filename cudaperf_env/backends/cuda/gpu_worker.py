"""Untrusted GPU worker: runs one submission (and the trusted baseline) on device buffers.

Run as ``python -I -S gpu_worker.py REPLY_FD``; imports only the standard library.
Buffers come from the parent through shared files exactly as for the CPU worker
(see ``backends/worker.py``); here they are copied to device allocations with a
canary tail, the entry is called through the harness shim, and every buffer is
copied back so the parent can compare outputs and check inputs.

Requests (JSON lines on stdin; replies on REPLY_FD, framed as ``sandbox.frame`` writes them):
    {"op": "init", "harness": PATH, "device": 0, "canary_bytes": 4096}
    {"op": "load", "lib": PATH, "name": NAME, "symbol": "cudaperf_call"}
    {"op": "call", "lib": NAME, "file": PATH, "size": N, "args": [...], "guards": [...]}
    {"op": "time", "libs": [NAME...], "sets": [{"file", "size", "args"}...], "reference": NAME,
     "outputs": [{"arg", "elem_bytes", "is_float", "atol", "rtol"}...], "pin": BOOL,
     "min_trials": N, "max_trials": N, "budget_s": S, "budget_floor": N, "target_rse": X,
     "flush_bytes": N, "l2_flush": "read"|"write", "warmup": N, "check_first": BOOL,
     "slow_bound": X, "slow_margin": X}
        -> {"times", "early", "mismatches", "overruns", "phases", "capped": [NAME...],
            "stop": "slow"|"max_trials"|"budget"|"target_rse"}
    {"op": "stage", "set": K}   then   {"op": "wall_check", "lib": NAME, "calls": N}

Timing keeps everything on the device: the pristine input sets are uploaded once,
every timed call runs on work buffers restored from them on the device, and after
timing (for trusted code, ``check_first``: on the first calls, which double as
warmup) each implementation's outputs are compared with the reference's by a
harness kernel, so no large buffer crosses the bus twice. The counts come back to
the parent, which trusts them exactly as far as it trusts downloaded buffers: both
come from this process.

An implementation whose speedup over the reference is certainly below ``slow_bound``
(``budget.py``) stops being timed after any round: it is left out of the later rounds
and of the check after timing (its outputs were checked on the first round), and the
request ends once only the reference is left.
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


_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.mmap.restype = ctypes.c_void_p
_LIBC.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
_LIBC.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)


class ReadOnlyMapping:
    """A file mapped shared and read-only, and its address (``mmap.mmap`` gives no address of a read-only map).

    The timing input sets are shown to the worker read-only and are only ever read from the host: a
    private writable mapping of them would copy every page when populated or page-locked (0.2 -> 0.79 s
    of a saxpy timing's upload on an H100, driver 580.159.04, 2026-12-07); this one copies nothing.
    """

    def __init__(self, path: str, size: int) -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            address = _LIBC.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0), fd, 0)
        finally:
            os.close(fd)
        if address is None or address == ctypes.c_void_p(-1).value:
            raise OSError(ctypes.get_errno(), f"cannot map {path}")
        self.address, self.size = address, size

    def __del__(self, munmap: Any = _LIBC.munmap) -> None:  # bound here: module globals may be gone at exit
        munmap(self.address, self.size)


class Failure(Exception):
    """A CUDA call failed; the message goes back to the parent, with the library whose call it was."""

    def __init__(self, message: str, lib: str = "") -> None:
        super().__init__(message)
        self.lib = lib


class Worker:
    def __init__(self, reply) -> None:
        self.reply = reply
        self.h: Any = None  # the harness library, after init
        self.libs: dict[str, Any] = {}
        # the last timing request's input sets, work buffers and scratch, kept for stage / wall_check
        self.kept_sets: list = []
        self.kept_specs: list = []
        self.kept_work: Any = None
        self.scratch: list = []
        self.err = ctypes.create_string_buffer(512)
        self.canary = CANARY_BYTES  # 0 under compute-sanitizer: exact allocations, so it sees every overrun

    def send(self, **message) -> None:
        """One reply, framed as the parent expects (``sandbox.frame``: magic, u32 length, JSON)."""
        body = json.dumps(message).encode()
        data = b"CPF1" + len(body).to_bytes(4, "little") + body
        while data:
            data = data[os.write(self.reply, data) :]

    def check(self, code: int) -> None:
        if code != 0:
            raise Failure(self.err.value.decode("ascii", "replace") or f"CUDA error {code}")

    def init(self, request: dict) -> None:
        self.canary = int(request.get("canary_bytes", CANARY_BYTES))
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
            symbol = request.get("symbol", "cudaperf_call")
            self.libs[request.get("name", "candidate")] = CALL((symbol, lib))
        except (OSError, AttributeError) as exc:
            raise Failure(f"cannot load the built library: {exc}") from None
        self.send(ok=True)

    def upload(self, spec: dict, copy: bool = True, pin: bool = False, read_only: bool = False):
        """Map a buffer file and copy each pointer argument to a fresh device allocation.

        ``copy=False`` only allocates (buffers that are overwritten before use);
        ``pin`` page-locks the mapping for the copies (faster for large sets);
        ``read_only`` maps it read-only (:class:`ReadOnlyMapping`: the timing input sets, never written here).
        """
        mem: Any
        if read_only:
            mem = ReadOnlyMapping(spec["file"], spec["size"])
            base = mem.address
        else:
            fd = os.open(spec["file"], os.O_RDWR)
            mem = mmap.mmap(fd, spec["size"], mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0))
            os.close(fd)
            base = ctypes.addressof(ctypes.c_char.from_buffer(mem))
        pinned = copy and pin and self.h.cph_host_register(ctypes.c_void_p(base), ctypes.c_size_t(spec["size"]),
                                                           int(read_only), self.err, 512) == 0  # fmt: skip
        buffers, argv, keep = [], (ctypes.c_void_p * max(1, len(spec["args"])))(), []
        for i, arg in enumerate(spec["args"]):
            if "ptr" in arg:
                dev = ctypes.c_void_p()
                self.check(self.h.cph_alloc(ctypes.c_size_t(arg["bytes"]), ctypes.c_size_t(self.canary),
                                            ctypes.byref(dev), self.err, 512))  # fmt: skip
                host = base + arg["ptr"]
                if copy:
                    size = ctypes.c_size_t(arg["bytes"])
                    self.check(self.h.cph_copy(dev, ctypes.c_void_p(host), size, H2D, self.err, 512))
                buffers.append((i, dev, host, arg["bytes"]))
                argv[i] = dev.value
            else:
                value = _CTYPES[arg["scalar"]](arg["value"])
                keep.append(value)
                argv[i] = ctypes.addressof(value)
        if pinned:
            self.h.cph_host_unregister(ctypes.c_void_p(base))
        return mem, buffers, argv, keep

    def download(self, buffers) -> list:
        """Copy every buffer back to its host address; the indices of broken canaries."""
        for _, dev, host, nbytes in buffers:
            self.check(self.h.cph_copy(ctypes.c_void_p(host), dev, ctypes.c_size_t(nbytes), D2H, self.err, 512))
        return self.broken_canaries(buffers)

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
        released = time.perf_counter()
        self.release()
        started = time.perf_counter()
        sets = [self.upload(s, pin=request.get("pin", False), read_only=True)  # pristine, one per set
                for s in request["sets"]]  # fmt: skip
        work = self.upload(request["sets"][0], copy=False, read_only=True)  # every timed call runs here, restored first
        self.kept_sets, self.kept_specs, self.kept_work = sets, request["sets"], work
        names, reference = request["libs"], request["reference"]
        read = int(request.get("l2_flush", "read") == "read")
        self.check(self.h.cph_flush_setup(ctypes.c_size_t(request["flush_bytes"]), read, self.err, 512))
        uploaded = time.perf_counter()
        overruns: dict[str, list] = {}  # canaries are checked after every call, outside the timed span
        times: dict[str, list[float]] = {n: [] for n in names}
        early: dict[str, list[float]] = {n: [] for n in names}  # event times of the checked and warmup calls
        first = bool(request.get("check_first"))  # trusted code: every set checked on the first calls
        # The first round is checked (on set 0 for submissions, again on every set after timing) and
        # doubles as warmup, so an implementation stopped for being slow still had its outputs checked.
        mismatches, overruns = self.check_outputs(request, work, sets, overruns, early, len(sets) if first else 1)
        checked = time.perf_counter()
        active, capped = list(names), []  # implementations still timed; those stopped as too slow

        def spent() -> bool:
            return time.perf_counter() - uploaded > request["budget_s"]

        def drop_slow() -> bool:
            """Stop timing implementations decided slow; True when only the reference is left."""
            for name in [n for n in active if n != reference]:
                if _decided_slow(early[name] + times[name], early[reference] + times[reference],
                                 request.get("slow_bound", 0.0), request.get("slow_margin", 1.0)):  # fmt: skip
                    active.remove(name)
                    capped.append(name)
            return bool(capped) and all(n == reference for n in active)

        stop = "slow" if drop_slow() else ""
        for _ in range(request["warmup"] - 1):
            if stop or spent():
                break
            for name in active:
                early[name].append(self.timed(name, work, sets[0], request["sets"][0], flush=0))
                self.charge_overruns(name, work[1], overruns)
            stop = "slow" if drop_slow() else ""
        trial = 0
        while not stop:
            order = active if trial % 2 == 0 else active[::-1]  # ABBA: drift hits all equally
            for name in order:
                k = trial % len(sets)
                times[name].append(self.timed(name, work, sets[k], request["sets"][k], flush=1 + trial % 200))
                self.charge_overruns(name, work[1], overruns)
            trial += 1
            if drop_slow():
                stop = "slow"
            elif trial >= request["max_trials"]:
                stop = "max_trials"
            elif spent() and trial >= request.get("budget_floor", 1):
                stop = "budget"
            elif trial >= request["min_trials"] and all(_rse(times[n]) < request["target_rse"] for n in active):
                stop = "target_rse"
        timed = time.perf_counter()
        if not first and any(n != reference for n in active):  # the stopped ones were checked on set 0
            late, overruns = self.check_outputs(request, work, sets, overruns, libs=active)
            mismatches = {n: mismatches.get(n, []) + late.get(n, []) for n in dict.fromkeys([*mismatches, *late])}
        phases = {"release_s": started - released, "upload_s": uploaded - started, "trials_s": timed - checked,
                  "check_s": checked - uploaded + time.perf_counter() - timed}  # fmt: skip
        self.send(ok=True, times=times, mismatches=mismatches, overruns=overruns, phases=phases, early=early,
                  capped=capped, stop=stop)  # fmt: skip

    def check_outputs(self, request: dict, work, sets, overruns: dict, seen: dict | None = None,
                      n_sets: int | None = None, libs: list | None = None) -> tuple[dict, dict]:  # fmt: skip
        """Run the reference, then every other implementation (of ``libs``), once more on each of the
        first ``n_sets`` input sets; compare their outputs on the device and check every canary.

        Returns ``{name: [{"set", "arg", "count", "first", "total"}...]}`` for outputs that differ and
        ``overruns`` (``{name: [arg...]}``, broken canaries) with these calls' added. The calls' event
        times are appended to ``seen[name]`` when given.
        """
        reference, outputs = request["reference"], request["outputs"]
        by_arg = {i: (dev, nbytes) for i, dev, _, nbytes in work[1]}
        expected = []
        for out in outputs:
            copy = ctypes.c_void_p()
            self.check(self.h.cph_alloc(ctypes.c_size_t(by_arg[out["arg"]][1]), ctypes.c_size_t(0),
                                        ctypes.byref(copy), self.err, 512))  # fmt: skip
            expected.append(copy)
            self.scratch.append(copy)
        mismatches: dict[str, list] = {}
        seen = {} if seen is None else seen
        for k, spec in enumerate(request["sets"][:n_sets]):
            seen.setdefault(reference, []).append(self.timed(reference, work, sets[k], spec, flush=1))
            for out, copy in zip(outputs, expected, strict=True):
                dev, nbytes = by_arg[out["arg"]]
                self.check(self.h.cph_copy(copy, dev, ctypes.c_size_t(nbytes), D2D, self.err, 512))
            for name in request["libs"] if libs is None else libs:
                if name == reference:
                    continue
                seen.setdefault(name, []).append(self.timed(name, work, sets[k], spec, flush=1))
                self.charge_overruns(name, work[1], overruns)
                for out, copy in zip(outputs, expected, strict=True):
                    dev, nbytes = by_arg[out["arg"]]
                    count, first = ctypes.c_ulonglong(), ctypes.c_ulonglong()
                    self.check(self.h.cph_compare(dev, copy, ctypes.c_size_t(nbytes // out["elem_bytes"]),
                                                  out["elem_bytes"], out["is_float"], ctypes.c_double(out["atol"]),
                                                  ctypes.c_double(out["rtol"]), ctypes.byref(count),
                                                  ctypes.byref(first), self.err, 512))  # fmt: skip
                    if count.value:
                        mismatches.setdefault(name, []).append({"set": k, "arg": out["arg"], "count": count.value,
                                                                "first": first.value,
                                                                "total": nbytes // out["elem_bytes"]})  # fmt: skip
        return mismatches, overruns

    def charge_overruns(self, name: str, buffers, overruns: dict) -> None:
        """Record the arguments whose canary ``name``'s last call wrote, and re-arm those canaries."""
        for i in self.broken_canaries(buffers):
            found = overruns.setdefault(name, [])
            found += [] if i in found else [i]
            _, dev, _, nbytes = next(b for b in buffers if b[0] == i)
            self.check(self.h.cph_arm_canary(dev, ctypes.c_size_t(nbytes), ctypes.c_size_t(self.canary), self.err, 512))

    def broken_canaries(self, buffers) -> list:
        """Argument indices whose canary tail was written."""
        broken = []
        for i, dev, _, nbytes in buffers:
            intact = ctypes.c_int()
            self.check(self.h.cph_canary_intact(dev, ctypes.c_size_t(nbytes), ctypes.c_size_t(self.canary),
                                                ctypes.byref(intact), self.err, 512))  # fmt: skip
            if not intact.value:
                broken.append(i)
        return broken

    def release(self) -> None:
        """Free the device buffers kept from the last timing request."""
        for kept in (*self.kept_sets, *([self.kept_work] if self.kept_work else [])):
            self.free(kept[1])
        for dev in self.scratch:
            self.h.cph_free(dev)
        self.kept_sets, self.kept_specs, self.kept_work, self.scratch = [], [], None, []

    def restore(self, work, pristine, pointer_args) -> None:
        """Work buffers := the pristine set (outputs: the poison pattern), on the device."""
        for (_, dst, _, nbytes), (_, src, _, _), arg in zip(work[1], pristine[1], pointer_args, strict=True):
            if arg.get("restore") == "poison":
                self.check(self.h.cph_memset(dst, arg["poison"], ctypes.c_size_t(nbytes), self.err, 512))
            else:
                self.check(self.h.cph_copy(dst, src, ctypes.c_size_t(nbytes), D2D, self.err, 512))

    def timed(self, name, work, pristine, spec, flush) -> float:
        """Restore the work buffers, then one timed call of ``name``: its event time in ms."""
        self.restore(work, pristine, [a for a in spec["args"] if "ptr" in a])
        ms, wall = ctypes.c_float(), ctypes.c_double()
        fn = self.libs[name]
        try:
            self.check(self.h.cph_timed_call(fn, work[2], flush, ctypes.byref(ms), ctypes.byref(wall), self.err, 512))
        except Failure as exc:  # the call synchronizes: its error is this library's (a fault, a bad launch)
            raise Failure(str(exc), lib=name) from None
        return ms.value

    def bandwidth(self, request: dict) -> None:
        gbps = ctypes.c_double()
        self.check(self.h.cph_copy_bandwidth(ctypes.c_size_t(request["bytes"]), 5, ctypes.byref(gbps), self.err, 512))
        self.send(ok=True, copy_gbps=gbps.value)

    def stage(self, request: dict) -> None:
        """Restore the kept work buffers from input set K for :meth:`wall_check`."""
        k = request["set"]
        self.restore(self.kept_work, self.kept_sets[k], [a for a in self.kept_specs[k]["args"] if "ptr" in a])
        self.send(ok=True)

    def wall_check(self, request: dict) -> None:
        work, fn, events = self.kept_work, self.libs[request["lib"]], []
        for _ in range(request["calls"]):
            ms, wall = ctypes.c_float(), ctypes.c_double()
            self.check(self.h.cph_timed_call(fn, work[2], 0, ctypes.byref(ms), ctypes.byref(wall), self.err, 512))
            events.append(ms.value)
        self.send(ok=True, events=events)


def _decided_slow(candidate: list, baseline: list, bound: float, margin: float) -> bool:
    """``budget.decided_slow``, restated here because the worker imports only the standard library."""
    if bound <= 0 or not candidate or not baseline or min(candidate) <= 0:
        return False
    return margin * max(baseline) / min(candidate) < bound


def _rse(samples: list) -> float:
    """Relative standard error of the median (normal approximation from the MAD)."""
    if len(samples) < 3:
        return float("inf")
    med = statistics.median(samples)
    mad = statistics.median(abs(x - med) for x in samples)
    return 1.2533 * 1.4826 * mad / (len(samples) ** 0.5) / med if med > 0 else float("inf")


def main(reply_fd: int) -> None:
    worker = Worker(reply_fd)
    handlers = {"init": worker.init, "load": worker.load, "call": worker.call, "time": worker.time,
                "stage": worker.stage, "bandwidth": worker.bandwidth, "wall_check": worker.wall_check}  # fmt: skip
    for line in sys.stdin:
        request = json.loads(line)
        try:
            handlers[request["op"]](request)
        except Failure as exc:
            worker.send(ok=False, error=str(exc), **({"lib": exc.lib} if exc.lib else {}))


if __name__ == "__main__":
    main(int(sys.argv[1]))
