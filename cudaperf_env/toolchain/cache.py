"""Content-addressed build cache on disk (``$CUDAPERF_CACHE_DIR`` or ``~/.cache/cudaperf``).

Each folder of builds is bounded (:func:`max_bytes`): after a new entry is stored the
least recently used entries are evicted (:func:`evict`; a hit marks its entry used,
:func:`touch`). Only successful builds are stored.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import time
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


DEFAULT_MAX_BYTES = 4 << 30
# A file used this recently is never evicted: an evaluation may be about to load it.
MIN_AGE_S = 600.0


def max_bytes() -> int:
    """The size bound of each cache folder (``$CUDAPERF_CACHE_MAX_BYTES``, default 4 GiB)."""
    value = os.environ.get("CUDAPERF_CACHE_MAX_BYTES", "")
    return int(value) if value.isdigit() and int(value) > 0 else DEFAULT_MAX_BYTES


def touch(path: Path) -> None:
    """Mark a cache entry as used now (least recently used entries are evicted first)."""
    with contextlib.suppress(OSError):
        os.utime(path)


def evict(folder: Path, limit: int | None = None, min_age_s: float = MIN_AGE_S) -> int:
    """Delete the least recently used files of ``folder`` until it holds at most ``limit`` bytes.

    Files used within ``min_age_s`` stay (they may be in use), so the folder can exceed the
    bound briefly under heavy load. Safe with concurrent writers (a file gone already is
    skipped). Returns the bytes freed.
    """
    limit = max_bytes() if limit is None else limit
    entries = []
    with contextlib.suppress(FileNotFoundError), os.scandir(folder) as scan:
        for entry in scan:
            with contextlib.suppress(OSError):
                if entry.is_file(follow_symlinks=False) and not entry.name.startswith(".tmp-"):
                    st = entry.stat(follow_symlinks=False)
                    entries.append((st.st_mtime, st.st_size, entry.path))
    total, freed, now = sum(size for _, size, _ in entries), 0, time.time()
    for mtime, size, path in sorted(entries):
        if total - freed <= limit:
            break
        if now - mtime < min_age_s:
            break
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
            freed += size
    return freed
