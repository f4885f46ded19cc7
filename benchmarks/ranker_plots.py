"""Plots of the shipped ranker on the test split: accuracy per family (against the structural score) and calibration.

Writes ``docs/img/ranker_accuracy_per_family.png`` (pairwise accuracy on each
family's perf pairs, ranker next to the structural score; the whole held-out
families marked) and ``docs/img/ranker_calibration.png`` (pairs in a seeded random
orientation, binned by the predicted probability that the first is faster, against
the share of them where it is), and the full ``cudaperf ranker eval --json`` figures
to ``--out``.

Run: ``python benchmarks/ranker_plots.py [--features FILE] [--out benchmarks/results/ranker_eval_test.json]``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from cudaperf_env.dataset import load_dataset  # noqa: E402
from cudaperf_env.ranker import load_ranker  # noqa: E402
from cudaperf_env.ranker.cli import label_origin  # noqa: E402
from cudaperf_env.ranker.evaluation import compare, model_pair_probabilities  # noqa: E402
from cudaperf_env.ranker.features import records_for  # noqa: E402
from cudaperf_env.ranker.pairs import dataset_pairs  # noqa: E402
from cudaperf_env.text import json_safe  # noqa: E402

IMG = Path(__file__).resolve().parents[1] / "docs" / "img"


def per_family_plot(result: dict, unseen: set[str], where: str, path: Path) -> None:
    families = sorted(result["per_family"], key=lambda f: (f not in unseen, -result["per_family"][f]["accuracy"]))
    ranker = [result["per_family"][f]["accuracy"] for f in families]
    structural = [result["structural"]["per_family"][f]["accuracy"] for f in families]
    x = np.arange(len(families))
    fig, ax = plt.subplots(figsize=(14, 4.8))
    ax.bar(x - 0.2, ranker, 0.4, label="learned ranker", color="#2b6cb0")
    ax.bar(x + 0.2, structural, 0.4, label="hand-weighted structural score", color="#c0c0c0")
    ax.axhline(0.5, color="black", lw=0.8, ls=":")
    ax.axvline(len(unseen) - 0.5, color="#aa3333", lw=1.0, ls="--")
    ax.text(len(unseen) / 2 - 0.5, 1.03, "whole held-out families", ha="center", color="#aa3333", fontsize=9)
    ax.set_xticks(x, [f"{f} ({result['per_family'][f]['pairs']})" for f in families], rotation=75, fontsize=7)
    ax.set_ylim(0, 1.1)
    ax.set_ylabel("pairwise accuracy (perf pairs)")
    ax.set_title(f"Test split per family: ranker {result['pairwise_accuracy']:.3f} vs structural "
                 f"{result['structural']['pairwise_accuracy']:.3f} on {result['pairs']} pairs ({where})", fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def calibration_plot(p: np.ndarray, where: str, path: Path, bins: int = 10) -> dict[str, list[float]]:
    rng = np.random.default_rng(0)
    flip = rng.random(len(p)) < 0.5
    q = np.where(flip, 1 - p, p)  # P(first faster), first = the faster side unless flipped
    hit = (~flip).astype(float)
    edges = np.linspace(0, 1, bins + 1)
    which = np.clip(np.digitize(q, edges) - 1, 0, bins - 1)
    mean_q = [float(q[which == b].mean()) for b in range(bins) if (which == b).any()]
    freq = [float(hit[which == b].mean()) for b in range(bins) if (which == b).any()]
    count = [int((which == b).sum()) for b in range(bins) if (which == b).any()]
    fig, ax = plt.subplots(figsize=(4.8, 4.6))
    ax.plot([0, 1], [0, 1], color="black", lw=0.8, ls=":")
    ax.plot(mean_q, freq, marker="o", color="#2b6cb0")
    for mq, f, n in zip(mean_q, freq, count, strict=True):
        ax.annotate(str(n), (mq, f), textcoords="offset points", xytext=(4, -10), fontsize=7)
    ax.set_xlabel("predicted P(first is faster)")
    ax.set_ylabel("observed share where it is")
    ax.set_title(f"Ranker calibration, test perf pairs\n({where})", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return {"predicted": mean_q, "observed": freq, "pairs": [float(n) for n in count]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--features", help="feature records file (missing records are computed)")
    parser.add_argument("--out", help="write the evaluation figures as JSON here")
    args = parser.parse_args()
    model = load_ranker().model
    train, test = load_dataset("train"), load_dataset("test")
    seen = {t.family for t in train.values()}
    unseen = {t.family for t in test.values()} - seen
    records = records_for(test.values(), args.features)
    pairs = dataset_pairs(test.values(), ("perf",))
    result = compare(model, pairs, records, test, seen_families=seen)
    origin = label_origin(test)
    where = f"{origin['card']} labels, driver {origin['driver']}, {origin['date']}"
    IMG.mkdir(parents=True, exist_ok=True)
    per_family_plot(result, unseen, where, IMG / "ranker_accuracy_per_family.png")
    result["calibration"] = calibration_plot(model_pair_probabilities(model, pairs, records), where,
                                             IMG / "ranker_calibration.png")  # fmt: skip
    result = {"split": "test", "tasks": len(test), **origin, **result}
    if args.out:
        Path(args.out).write_text(json.dumps(json_safe(result), indent=2) + "\n")
    print(json.dumps(json_safe({k: v for k, v in result.items() if k not in ("per_family",)}), indent=1)[:3000])


if __name__ == "__main__":
    main()
