"""PNG plots of a report: the fast_p curve and the per-turn improvement (matplotlib, no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.errors import MissingDependencyError


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise MissingDependencyError("plots need matplotlib: pip install 'cudaperf-env[agent]'") from exc
    return plt


def plot_fast_p(report: dict[str, Any], path: str | Path) -> Path:
    """fast_p against p (0 to 3): the fraction of tasks correct and faster than p x baseline."""
    plt = _pyplot()
    curve = report["fast_p_curve"]
    ps = [float(p) for p in curve]
    values = [v if v is not None else 0.0 for v in curve.values()]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.step(ps, values, where="post")
    ax.set(xlabel="speedup threshold p", ylabel="fast_p (fraction of tasks)", ylim=(0, 1.02),
           title=f"fast_p over {report['tasks']} tasks")  # fmt: skip
    ax.grid(alpha=0.3)
    return _save(fig, plt, path)


def plot_per_turn(report: dict[str, Any], path: str | Path) -> Path:
    """Correct-by-turn and mean score per turn: what each refinement turn adds."""
    plt = _pyplot()
    rows = report["per_turn"]
    turns = [r["turn"] for r in rows]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(turns, [r["correct_by_turn"] or 0.0 for r in rows], marker="o", label="correct by turn")
    ax.plot(turns, [r["fast_1_by_turn"] or 0.0 for r in rows], marker="s", label="fast_1 by turn")
    ax.set(xlabel="turn", ylabel="fraction of trajectories", ylim=(0, 1.02), xticks=turns, title="per-turn improvement")
    ax.grid(alpha=0.3)
    ax.legend()
    return _save(fig, plt, path)


def _save(fig: Any, plt: Any, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
