"""Content-addressed build cache on disk (``$CUDAPERF_CACHE_DIR`` or ``~/.cache/cudaperf``)."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path


def cache_dir(*sub: str) -> Path:
    """The cache directory (created), or one of its subdirectories."""
    root = Path(os.environ.get("CUDAPERF_CACHE_DIR") or Path.home() / ".cache" / "cudaperf")
    path = root.joinpath(*sub)
    path.mkdir(parents=True, exist_ok=True)
    return path


def digest(*parts: str | bytes) -> str:
    """SHA-256 over ``parts`` (length-prefixed, so boundaries matter)."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``path`` so concurrent readers see the old file or the whole new one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        os.fchmod(f.fileno(), 0o644)  # readable by confined compilers, which run as users of their own
    os.replace(tmp, path)


def scratch_dir(prefix: str = "cudaperf-") -> Path:
    """A fresh private directory for one evaluation (tmpfs when available)."""
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    return Path(tempfile.mkdtemp(prefix=prefix, dir=base))
