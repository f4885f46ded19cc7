"""Env families, one object each, chosen by ``Task.kind``."""

from __future__ import annotations

from types import MappingProxyType

from cudaperf_env.errors import TaskNotFoundError
from cudaperf_env.kinds.base import Kind
from cudaperf_env.kinds.c2cuda import C2Cuda
from cudaperf_env.kinds.kernelbench import KernelBenchTorch2Cuda
from cudaperf_env.kinds.torch2cuda import Torch2Cuda
from cudaperf_env.tasks.schema import Task

KINDS: MappingProxyType[str, Kind] = MappingProxyType({"c2cuda": C2Cuda(), "torch2cuda": Torch2Cuda()})
MODES = ("native", "kernelbench")
"""Submission modes: ``native`` (CUDA C++ with an ``extern "C"`` entry, every kind) and ``kernelbench``
(Python defining ``ModelNew`` with ``load_inline``; ``torch2cuda`` on a GPU only)."""
KERNELBENCH = KernelBenchTorch2Cuda()

__all__ = ["KINDS", "MODES", "Kind", "check_mode", "kind_named", "kind_of"]


def kind_named(name: str) -> Kind:
    """The family called ``name``."""
    try:
        return KINDS[name]
    except KeyError:
        raise TaskNotFoundError(f"unknown task kind {name!r}; this version supports: {', '.join(KINDS)}") from None


def kind_of(task: Task, mode: str = "native") -> Kind:
    """The family of ``task`` as submissions of ``mode`` see it (its wording, its answer format)."""
    check_mode(mode, task.kind)
    return KERNELBENCH if mode == "kernelbench" else kind_named(task.kind)


def check_mode(mode: str, kind: str) -> None:
    """Raise ``ValueError`` unless ``mode`` is one of :data:`MODES` and offered for tasks of ``kind``."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of: {', '.join(MODES)}")
    if mode == "kernelbench" and kind != "torch2cuda":
        raise ValueError(f"mode='kernelbench' is for torch2cuda tasks (a PyTorch Model to replace), not {kind!r}")
