"""Env families, one object each, chosen by ``Task.kind``."""

from __future__ import annotations

from types import MappingProxyType

from cudaperf_env.errors import TaskNotFoundError
from cudaperf_env.kinds.base import Kind
from cudaperf_env.kinds.c2cuda import C2Cuda
from cudaperf_env.kinds.torch2cuda import Torch2Cuda
from cudaperf_env.tasks.schema import Task

KINDS: MappingProxyType[str, Kind] = MappingProxyType({"c2cuda": C2Cuda(), "torch2cuda": Torch2Cuda()})

__all__ = ["KINDS", "Kind", "kind_named", "kind_of"]


def kind_named(name: str) -> Kind:
    """The family called ``name``."""
    try:
        return KINDS[name]
    except KeyError:
        raise TaskNotFoundError(f"unknown task kind {name!r}; this version supports: {', '.join(KINDS)}") from None


def kind_of(task: Task) -> Kind:
    """The family of ``task``."""
    return kind_named(task.kind)
