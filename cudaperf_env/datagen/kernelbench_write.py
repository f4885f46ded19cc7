"""``cudaperf tasks import-kernelbench DIR --out DIR``: convert, write, check, and report what did not convert."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cudaperf_env.datagen.kernelbench import Outcome, import_dir
from cudaperf_env.datagen.torch_registry import dump_yaml

REPORT = "import-report.json"


def import_kernelbench(source: str | Path, out: str | Path, check: bool = True) -> dict[str, Any]:
    """Convert every problem file under ``source`` into ``out/<id name>.yaml``; returns (and writes) the report.

    With ``check``, each written file goes through ``cudaperf tasks check`` (schema, the PyTorch
    reference on every configuration for two seeds, the zero-fill probe); a file that fails is
    removed and reported with the check's errors.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    outcomes = import_dir(source)
    written = _write(outcomes, out)
    failures = _check(written) if check and written else {}
    for path in failures:
        path.unlink()
    converted = [{"file": o.path, "task": str(o.task["id"]), "path": str(p)}
                 for o, p in written if p not in failures and o.task is not None]  # fmt: skip
    refused = [{"file": o.path, "reason": o.reason} for o in outcomes if o.task is None]
    refused += [{"file": o.path, "reason": "the converted task fails `tasks check`: " + "; ".join(failures[p])}
                for o, p in written if p in failures]  # fmt: skip
    report = {"source": str(source), "out": str(out), "files": len(outcomes), "converted": converted,
              "not_converted": sorted(refused, key=lambda r: r["file"]), "checked": check}  # fmt: skip
    (out / REPORT).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return report


def _write(outcomes: Sequence[Outcome], out: Path) -> list[tuple[Outcome, Path]]:
    written = []
    for outcome in outcomes:
        if outcome.task is None:
            continue
        path = out / f"{str(outcome.task['id']).split('/')[-1]}.yaml"
        path.write_text(dump_yaml(outcome.task), encoding="utf-8")
        written.append((outcome, path))
    return written


def _check(written: Sequence[tuple[Outcome, Path]]) -> dict[Path, list[str]]:
    from cudaperf_env.backends.cpu.backend import CpuBackend
    from cudaperf_env.backends.reference import ReferenceOutputs
    from cudaperf_env.datagen.check import check_task
    from cudaperf_env.evaluate import Evaluator

    reference = ReferenceOutputs()
    evaluator = Evaluator(CpuBackend(), reference=reference)
    failures = {}
    for _, path in written:
        result = check_task(path, reference, evaluator)
        if not result.ok:
            failures[path] = list(result.errors)
    return failures
