"""Untrusted worker process: loads one built submission and calls it on shared buffers.

Run as ``python -I -S worker.py REPLY_FD`` so it imports nothing but the standard
library and holds nothing of the parent's memory (no expected outputs, no
reference). Requests arrive as JSON lines on stdin; replies go to REPLY_FD as frames
(``CPF1``, little-endian u32 length, JSON object: ``sandbox.frame``), which the
parent checks as hostile bytes.

Requests:
    {"op": "load", "lib": PATH, "threads": N, "deterministic": BOOL, "memory_bytes": N}
    {"op": "call", "file": PATH, "size": N, "guards": [OFFSET...],
     "args": [{"ptr": OFFSET} | {"scalar": DTYPE, "value": V}...]}
Replies:
    {"ok": true, "code": CUDA_ERROR, "error": TEXT, "seconds": WALL}
    {"ok": false, "error": TEXT}
"""

import ctypes
import json
import mmap
import os
import resource
import sys
import time

_CTYPES: dict[str, type[ctypes._SimpleCData]] = {
    "int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32,
    "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16,
    "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64, "float32": ctypes.c_float,
    "float64": ctypes.c_double,
}  # fmt: skip
_PROT_NONE = 0


class Replies:
    """The reply channel: one framed JSON object per reply, written whole."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def write(self, message: dict) -> None:
        body = json.dumps(message).encode()
        data = b"CPF1" + len(body).to_bytes(4, "little") + body
        while data:
            data = data[os.write(self.fd, data) :]


def main(reply_fd: int) -> None:
    reply = Replies(reply_fd)
    lib = None
    libc = ctypes.CDLL(None, use_errno=True)
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "load":
            lib = _load(request, reply)
        elif request["op"] == "call" and lib is not None:
            _call(lib, libc, request, reply)
        else:
            reply.write({"ok": False, "error": "protocol: load before call"})


def _load(request: dict, reply) -> object:
    limit = int(request.get("memory_bytes", 8 << 30))
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    uid = request.get("uid")
    if uid is not None and os.geteuid() == 0:  # run the submission as an unprivileged user
        resource.setrlimit(resource.RLIMIT_NPROC, (256, 256))
        os.setgroups([])
        os.setgid(int(uid))
        os.setuid(int(uid))
    try:
        lib = ctypes.CDLL(request["lib"], mode=ctypes.RTLD_LOCAL | os.RTLD_NOW)
        call = lib.cudaperf_call
    except (OSError, AttributeError) as exc:
        reply.write({"ok": False, "error": f"cannot load the built library: {exc}"})
        return None
    call.restype = ctypes.c_int
    call.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_int]
    configure = getattr(lib, "cudaperf_runtime_configure", None)
    if configure is not None:
        configure(int(request.get("threads", 0)), int(bool(request.get("deterministic", False))))
    reply.write({"ok": True})
    return lib


def _call(lib, libc, request: dict, reply) -> None:
    fd = os.open(request["file"], os.O_RDWR)
    mem = mmap.mmap(fd, request["size"], mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    os.close(fd)
    base = ctypes.addressof(ctypes.c_char.from_buffer(mem))
    for offset in request["guards"]:
        if libc.mprotect(ctypes.c_void_p(base + offset), mmap.PAGESIZE, _PROT_NONE) != 0:
            reply.write({"ok": False, "error": "mprotect failed"})
            return
    keep = []
    argv = (ctypes.c_void_p * max(1, len(request["args"])))()
    for i, arg in enumerate(request["args"]):
        if "ptr" in arg:
            argv[i] = base + arg["ptr"]
        else:
            value = _CTYPES[arg["scalar"]](arg["value"])
            keep.append(value)
            argv[i] = ctypes.addressof(value)
    err = ctypes.create_string_buffer(512)
    start = time.perf_counter()
    code = lib.cudaperf_call(argv, err, len(err))
    seconds = time.perf_counter() - start
    sys.stdout.flush()
    message = err.value.decode("ascii", "replace")
    reply.write({"ok": True, "code": code, "error": message, "seconds": seconds})


if __name__ == "__main__":
    main(int(sys.argv[1]))
