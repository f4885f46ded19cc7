"""Checks of the GPU worker's replies: the submission runs in that process and can forge them.

A frame that parses (``sandbox.unframe``) may still say anything. Before the parent reads a
``time`` or ``wall_check`` reply it checks its shape here (pure functions: the reason it is
malformed, or ""); a malformed reply ends the worker with a ``protocol`` crash, which is a
``runtime_error`` for the submission, never an exception.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

_LIBS = ("candidate", "baseline")


def _numbers(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value
    )


def _mismatch(value: Any, n_args: int) -> bool:
    keys = ("set", "arg", "count", "total")
    return (isinstance(value, dict) and all(isinstance(value.get(k), int) for k in keys)
            and 0 <= value["arg"] < n_args)  # fmt: skip


def time_reply_problem(reply: Mapping[str, Any], n_args: int) -> str:
    """Why a ``time`` reply is malformed ("" when its every field the parent reads has its type)."""
    times, early, phases = reply.get("times"), reply.get("early", {}), reply.get("phases")
    mismatches, overruns = reply.get("mismatches"), reply.get("overruns")
    if not isinstance(times, dict) or not all(name in times and _numbers(times[name]) for name in _LIBS):
        return "times"
    if not isinstance(early, dict) or not all(_numbers(v) for v in early.values()):
        return "early"
    if not isinstance(phases, dict) or not {"trials_s", "check_s"} <= set(phases):
        return "phases"
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in phases.values()):
        return "phases"
    if not isinstance(mismatches, dict) or not all(
        isinstance(v, list) and all(_mismatch(m, n_args) for m in v) for v in mismatches.values()
    ):
        return "mismatches"
    if not isinstance(overruns, dict):
        return "overruns"
    if not isinstance(reply.get("capped", []), list) or not isinstance(reply.get("stop", ""), str):
        return "capped/stop"
    return ""


def wall_check_problem(reply: Mapping[str, Any]) -> str:
    """Why a ``wall_check`` reply is malformed ("" when ``events`` is a non-empty list of times)."""
    events = reply.get("events")
    return "" if _numbers(events) and events else "events"
