"""One GPU for a model and for the graders that time its replies: timings still have the card to themselves.

The card's lock (``CudaBackend.gpu_lock``) keeps a timing apart from other graders' work, not
from a model generating or training on the same card. :func:`share_card_with_timings` makes a
transformers policy hold the lock shared while it generates and let a waiting timing through at
each stop check; the trainer does the same around its optimization (:class:`SharedHold`).
"""

from __future__ import annotations

import contextlib
from typing import Any


def timings_lock(evaluator: Any, device: str) -> Any:
    """The lock of the card ``evaluator`` times replies on, if that is ``device`` (``cuda``, ``cuda:1``); else None.

    None too where nothing is timed (the CPU backend) or grading is elsewhere (a Ray pool's actors).
    """
    backend: Any = getattr(evaluator, "backend", None)
    lock = getattr(backend, "gpu_lock", None)
    if lock is None or backend.capabilities.timer is None or not device.startswith("cuda"):
        return None
    index = int(device.partition(":")[2] or 0)
    return lock if index == getattr(backend, "device", 0) else None


def share_card_with_timings(policy: Any, evaluator: Any) -> bool:
    """Make ``policy`` (a transformers policy, or a wrapper of one with ``inner``) let timings through.

    Returns whether it now does: its model is on the card ``evaluator`` times on.
    """
    inner = getattr(policy, "inner", policy)
    if not hasattr(inner, "timings_lock"):
        return False
    inner.timings_lock = timings_lock(evaluator, str(getattr(inner, "device", "cpu")))
    return inner.timings_lock is not None


def card_hold(lock: Any, device: str = "cuda") -> Any:
    """A context holding the card shared (``lock``: a ``DeviceLock``; its value a ``SharedHold`` that drains the
    work queued on ``device`` before letting a timing through), or holding nothing (``lock`` None: its value None)."""
    if lock is None:
        return contextlib.nullcontext()
    import torch

    from cudaperf_env.backends.cuda.device_lock import SharedHold

    drain = (lambda: torch.cuda.synchronize(device)) if torch.cuda.is_available() else None
    return SharedHold(lock, drain=drain)
