"""What a GRPO step reports: metrics from its graded turns, written to metrics.jsonl, TensorBoard and the terminal.

:func:`rollout_metrics` is pure (records in, flat scalars out): the mean of every
reward term, pass rates, speedups, statuses and lengths. :class:`Logbook` writes
each step's scalars to ``OUT/metrics.jsonl`` (the ablation's curves come from
it), to TensorBoard (``OUT/tensorboard``) and to a rich progress view.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agents.errors import MissingDependencyError
from agents.metrics import geomean_speedup
from agents.records import TurnRecord
from agents.report import trajectories

TB_HINT = "TensorBoard logging needs the tensorboard package: pip install 'cudaperf-env[grpo]' (or --no-tensorboard)"


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def rollout_metrics(records: Sequence[TurnRecord]) -> dict[str, float]:
    """Flat scalars of one step's graded turns (NaN where nothing was measured)."""
    trajs = trajectories(records)
    terms: dict[str, list[float]] = defaultdict(list)
    for r in records:
        for name, value in r.reward_terms.items():
            terms[name].append(value)
    out = {
        "reward/total": _mean([r.reward for r in records]),
        "reward/score": _mean([r.score for r in records]),
        "reward/return": _mean([r.returns for r in records]),
        "pass_rate/turn": _mean([float(r.correct) for r in records]),
        "pass_rate/trajectory": _mean([float(any(r.correct for r in t)) for t in trajs.values()]),
        "pass_rate/first_turn": _mean([float(r.correct) for r in records if r.turn == 1]),
        "compile_rate": _mean([float(r.compiled) for r in records]),
        "speedup/geomean_correct": geomean_speedup((r.correct, r.speedup) for r in records),
        "length/completion_mean": _mean([float(r.completion_tokens) for r in records]),
        "length/completion_max": float(max((r.completion_tokens for r in records), default=0)),
        "length/prompt_mean": _mean([float(r.prompt_tokens) for r in records]),
        "turns/mean": _mean([float(len(t)) for t in trajs.values()]),
    }
    out.update({f"reward/{name}": _mean(values) for name, values in sorted(terms.items())})
    stages = sorted({k for r in records for k in r.info if k.startswith("seconds/")})
    out.update({f"grade/{k}": _mean([r.info.get(k, 0.0) for r in records]) for k in stages})  # mean per reply
    statuses: dict[str, int] = defaultdict(int)
    for r in records:
        statuses[r.status] += 1
    out.update({f"status/{s}": n / len(records) for s, n in sorted(statuses.items())})
    return out


def timing(records: Sequence[TurnRecord], rollout_s: float, gen_s: float, opt_s: float,
           step_s: float) -> dict[str, float]:  # fmt: skip
    """Wall time of the step split into generation, evaluation and optimization; the wait for evaluation.

    ``eval_wait_s`` is the rollout phase's time the generator sat idle (every rollout waiting
    for its grading); ``evaluation_s`` is the grading time summed over tasks (it overlaps
    generation, so it may exceed what it costs the step).
    """
    # One grading span per key: a task's turn (overlapped rollouts), or every task's turn at once
    # (batched rollouts: its records share the span, so summing per task would count it once per task).
    graded = {(r.turn, r.grade_seconds) for r in records}
    wait = max(0.0, rollout_s - gen_s)
    evaluation = sum(seconds for _, seconds in graded)
    return {"time/step_s": step_s, "time/rollout_s": rollout_s, "time/generation_s": gen_s,
            "time/evaluation_s": evaluation, "time/eval_wait_s": wait, "time/optimization_s": opt_s,
            "time/eval_wait_share": wait / step_s if step_s > 0 else math.nan,
            "time/eval_hidden_share": max(0.0, 1.0 - wait / evaluation) if evaluation > 0 else math.nan}  # fmt: skip


class Logbook:
    """Writes each step's scalars; one per run directory.

    Args:
        out: The run directory.
        total_steps: For the progress bar.
        tensorboard: Also write TensorBoard events.
        progress: Show the rich progress view.
        start_step: The step a resumed run continues from (metrics of later steps in the file are dropped).
    """

    def __init__(self, out: Path, total_steps: int, tensorboard: bool, progress: bool, start_step: int) -> None:
        self.path = out / "metrics.jsonl"
        _truncate_after(self.path, start_step)
        self.writer = _summary_writer(out / "tensorboard") if tensorboard else None
        self._progress: Any = None
        if progress:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(TextColumn("GRPO"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                      TextColumn("{task.description}"))  # fmt: skip
            self._progress.start()
            self._bar = self._progress.add_task("", total=total_steps, completed=start_step)

    def log(self, step: int, scalars: dict[str, float]) -> None:
        """Record step ``step``'s scalars everywhere."""
        clean = {k: (v if math.isfinite(v) else None) for k, v in scalars.items()}
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"step": step, **clean}) + "\n")
        if self.writer is not None:
            for name, value in scalars.items():
                if math.isfinite(value):
                    self.writer.add_scalar(name, value, step)
            self.writer.flush()
        if self._progress is not None:
            line = (f"reward {scalars.get('reward/total', math.nan):+.3f}  "
                    f"pass {scalars.get('pass_rate/trajectory', math.nan):.2f}  "
                    f"loss {scalars.get('loss/total', math.nan):+.4f}  "
                    f"gen {scalars.get('time/generation_s', math.nan):.1f}s "
                    f"eval-wait {scalars.get('time/eval_wait_share', math.nan):.0%} "
                    f"opt {scalars.get('time/optimization_s', math.nan):.1f}s")  # fmt: skip
            self._progress.update(self._bar, completed=step, description=line)

    def note(self, text: str) -> None:
        """A line for the terminal (above the progress bar)."""
        if self._progress is not None:
            self._progress.console.print(text)
        else:
            print(text, flush=True)

    def close(self) -> None:
        """Flush and stop."""
        if self.writer is not None:
            self.writer.close()
        if self._progress is not None:
            self._progress.stop()


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """The per-step rows of a ``metrics.jsonl``."""
    p = Path(path)
    if not p.is_file():
        return []
    return [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]


def _truncate_after(path: Path, step: int) -> None:
    """Drop rows of steps after ``step`` (written by a run that stopped before its next checkpoint)."""
    rows = [r for r in read_metrics(path) if r["step"] <= step]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _summary_writer(directory: Path) -> Any:
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as exc:
        raise MissingDependencyError(f"{TB_HINT} ({exc})") from exc
    return SummaryWriter(log_dir=str(directory))
