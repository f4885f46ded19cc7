"""Scoring a submission with the shipped ranker: P(faster than the task's baseline) on the shown configurations.

``load_ranker()`` reads the shipped model (``data/ranker.json``) and its provenance
(``data/ranker_provenance.json``) once. ``Ranker.score(task, code, report, structure)``
extracts the submission's features (reusing the structural report when given),
those of the task's baseline implementation (or, for a task with none, its C
reference, read as one thread), and averages the model's probability over the
task's shown configurations. It never raises on hostile code: where a feature
cannot be computed the score is NaN (the reward leaves a NaN term out).
"""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from cudaperf_env.analysis.report import StructuralReport
from cudaperf_env.ranker.features import context, implementation_record, source_digest, task_configs, vector
from cudaperf_env.ranker.model import PairwiseModel
from cudaperf_env.ranker.pairs import config_key
from cudaperf_env.tasks.schema import Config, Task
from cudaperf_env.toolchain.compile_check import CompileReport

DATA = resources.files("cudaperf_env.ranker") / "data"
MODEL_FILE = "ranker.json"
_BASELINE_CACHE = 4096
# What feature extraction of hostile source may raise; each becomes a NaN score, not an exception.
_FAILURES = (RecursionError, ValueError, TypeError, AttributeError, IndexError, KeyError, ArithmeticError,
             UnicodeError, MemoryError)  # fmt: skip


class Ranker:
    """The learned pairwise ranker, ready to score submissions.

    Args:
        model: The pairwise model.
        provenance: How it was built (data digest, card, date, metrics), as shipped.
    """

    def __init__(self, model: PairwiseModel, provenance: Mapping[str, Any] | None = None) -> None:
        self.model = model
        self.provenance = dict(provenance or {})
        self._needs_compiler = any(name.startswith("compiler/") for name in model.features)
        self._baselines: OrderedDict[tuple[str, str], dict[str, Any]] = OrderedDict()

    def score(self, task: Task, code: str, report: CompileReport | None = None,
              structure: StructuralReport | None = None) -> float:  # fmt: skip
        """P(the submission is faster than the task's baseline), averaged over the shown configurations.

        Args:
            task: The task.
            code: The submission's CUDA source.
            report: Its compile check's report (compiler features, when the model uses them).
            structure: Its structural report, when already computed (saves the static analysis).

        Returns:
            A probability in [0, 1]; NaN when the submission cannot be scored (no readable
            kernel launch of the entry function, or source the analysis cannot read).
        """
        probs = self.probabilities(task, code, report, structure, kinds=("shown",))
        finite = [p for p in probs.values() if math.isfinite(p)]
        return float(np.mean(finite)) if finite else math.nan

    def probabilities(self, task: Task, code: str, report: CompileReport | None = None,
                      structure: StructuralReport | None = None,
                      kinds: Sequence[str] = ("shown",)) -> dict[str, float]:  # fmt: skip
        """P(faster than the baseline) per configuration of ``kinds`` (by configuration key); NaN where unknown."""
        configs = [(k, c) for k, c in task_configs(task) if k in kinds]
        try:
            mine = implementation_record(task, "submission", code, report, structure, configs)
            base = self.baseline_record(task, configs)
        except _FAILURES:
            return {config_key(c): math.nan for _, c in configs}
        return self.compare(mine, base, configs)

    def compare(self, a: Mapping[str, Any], b: Mapping[str, Any],
                configs: Sequence[tuple[str, Config]]) -> dict[str, float]:  # fmt: skip
        """P(record ``a`` faster than record ``b``) per configuration key (NaN where ``a`` has no launch there)."""
        keys = [config_key(c) for _, c in configs]
        out = dict.fromkeys(keys, math.nan)
        live = [(kind, key) for (kind, _), key in zip(configs, keys, strict=True)
                if a["configs"].get(key, {}).get("launches")]  # fmt: skip
        if not live:
            return out
        xa = np.array([vector(a, key, self.model.features) for _, key in live])  # (K, F): one row per configuration
        xb = np.array([vector(b, key, self.model.features) for _, key in live])
        ctx = np.array([context(a, key, kind) for kind, key in live])
        for (_, key), p in zip(live, self.model.probability(xa, xb, ctx), strict=True):
            out[key] = float(p) if math.isfinite(p) else math.nan
        return out

    def baseline_record(self, task: Task, configs: Sequence[tuple[str, Config]]) -> dict[str, Any]:
        """Features of the task's baseline implementation (or C reference) at ``configs``, cached per task."""
        if task.implementations:
            name, code = task.baseline, task.implementation(task.baseline).source
        else:
            name, code = "reference", task.reference_source
        cache_key = (task.id, source_digest(code))
        cached = self._baselines.get(cache_key)
        if cached is not None and all(config_key(c) in cached["configs"] for _, c in configs):
            self._baselines.move_to_end(cache_key)
            return cached
        report = None
        if self._needs_compiler and task.implementations:
            from cudaperf_env.backends.harness import wrap
            from cudaperf_env.toolchain.compile_check import compile_check

            report = compile_check(wrap(task, code))
        record = implementation_record(task, name, code, report, None, task_configs(task))
        self._baselines[cache_key] = record
        if len(self._baselines) > _BASELINE_CACHE:
            self._baselines.popitem(last=False)
        return record


def provenance_file(model_path: str | Path) -> Path:
    """Where a model file's provenance lives: ``<stem>_provenance.json`` next to it."""
    path = Path(model_path)
    return path.with_name(path.stem + "_provenance.json")


@lru_cache(maxsize=4)
def load_ranker(path: str | None = None) -> Ranker:
    """The shipped ranker (or the model file at ``path``), loaded once.

    Raises:
        FileNotFoundError: No model file there; train one with ``cudaperf ranker train --out PATH``.
    """
    model_path = Path(path) if path else Path(str(DATA / MODEL_FILE))
    if not model_path.is_file():
        raise FileNotFoundError(f"no ranker model at {model_path}; train one with `cudaperf ranker train --out "
                                f"{model_path}`")  # fmt: skip
    provenance_path = provenance_file(model_path)
    provenance = json.loads(provenance_path.read_text()) if provenance_path.is_file() else {}
    return Ranker(PairwiseModel.load(model_path), provenance)
