"""Training and evaluation pairs: two implementations of one task, told apart beyond noise on one configuration.

A pair never crosses tasks. On each timed configuration (``kind`` shown, hidden or
perf), two implementations of the same task make a pair when their intervals are
:func:`~cudaperf_env.dataset.gpu_labels.distinguishable` (disjoint 5-95% intervals
and medians more than ``DEADBAND`` apart); the label is which one is faster there.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cudaperf_env.dataset.gpu_labels import DEADBAND, distinguishable
from cudaperf_env.tasks.schema import Config, Task, TimingLabel


@dataclass(frozen=True)
class Pair:
    """Two implementations of one task, ordered on one configuration.

    Attributes:
        task: The task id (both implementations belong to it).
        kind: The configuration's kind: ``shown``, ``hidden`` or ``perf``.
        config: The configuration (as JSON with sorted keys, so pairs hash and compare).
        faster: Name of the faster implementation.
        slower: Name of the slower one.
        ratio: Slower median time over faster (> 1 + deadband).
    """

    task: str
    kind: str
    config: str
    faster: str
    slower: str
    ratio: float


def config_key(config: Config) -> str:
    """A configuration as canonical JSON: the key pairs and features share."""
    return json.dumps(dict(config), sort_keys=True)


def timings(task: Task, kinds: Sequence[str]) -> dict[tuple[str, str], dict[str, TimingLabel]]:
    """``{(kind, config key): {implementation: label}}`` of the task's labels of the given kinds."""
    out: dict[tuple[str, str], dict[str, TimingLabel]] = {}
    for impl in task.implementations:
        for label in impl.labels:
            if label.kind in kinds:
                out.setdefault((label.kind, config_key(label.config)), {})[impl.name] = label
    return out


def task_pairs(task: Task, kinds: Sequence[str] = ("perf",), deadband: float = DEADBAND) -> list[Pair]:
    """Every pair of the task's implementations told apart beyond noise, per configuration of ``kinds``.

    Implementations whose outputs mismatched the baseline's on the device at that
    configuration are left out of it (their time is not of the same computation).
    """
    pairs = []
    for (kind, key), labels in sorted(timings(task, kinds).items()):
        clean = {name: label for name, label in labels.items() if not label.mismatched}
        for a, b in itertools.combinations(sorted(clean), 2):
            la, lb = clean[a], clean[b]
            if not distinguishable(_interval(la), _interval(lb), deadband):
                continue
            fast, slow = (a, b) if la.median_ms < lb.median_ms else (b, a)
            pairs.append(Pair(task.id, kind, key, fast, slow, clean[slow].median_ms / clean[fast].median_ms))
    return pairs


def dataset_pairs(tasks: Iterable[Task], kinds: Sequence[str] = ("perf",), deadband: float = DEADBAND) -> list[Pair]:
    """:func:`task_pairs` of every task, in task order."""
    return [p for task in tasks for p in task_pairs(task, kinds, deadband)]


def _interval(label: TimingLabel) -> dict[str, float]:
    return {"median_ms": label.median_ms, "lo_ms": label.lo_ms, "hi_ms": label.hi_ms}
