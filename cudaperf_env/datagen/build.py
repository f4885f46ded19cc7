"""The dataset builder: generate, dedupe, verify, split, write the data file, report and card.

Seeded and deterministic: the same families, ``per_family`` and seed give a
byte-identical data file and splits (the report adds wall times).

Resumable: with a verdict log (``BuildConfig.verdicts``) every verdict is appended as it
comes, keyed by a digest of the candidate and the verification options, and a rerun
verifies only what the log lacks; with a deadline (``deadline_s``) a build stops starting
verifications, keeps the log and writes no data file until every candidate has a verdict.
So a long build runs as several commands of a few minutes each.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import time
import zlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

from cudaperf_env.datagen.normalize import dedupe_key
from cudaperf_env.datagen.registry import FAMILIES, Generator
from cudaperf_env.datagen.splits import assign_splits
from cudaperf_env.datagen.torch_registry import TORCH_FAMILIES
from cudaperf_env.datagen.verify import Verdict, VerifyOptions, verify_task
from cudaperf_env.dataset.load import DATA_FILES as SHIPPED_FILES

DATA_DIR = Path(__file__).resolve().parents[1] / "tasks" / "data" / "dataset"
DATA_FILE = DATA_DIR / "c2cuda.jsonl.gz"
CARD_FILE = Path(__file__).resolve().parents[2] / "docs" / "dataset-card.md"
CARD_FILES = {"c2cuda": CARD_FILE, "torch2cuda": CARD_FILE.with_name("dataset-card-torch2cuda.md")}
FAMILIES_BY_KIND: dict[str, Mapping[str, Generator]] = {"c2cuda": FAMILIES, "torch2cuda": TORCH_FAMILIES}
DATA_FILES = dict(SHIPPED_FILES)  # per kind; each with its own splits and report


@dataclass(frozen=True)
class BuildConfig:
    """What to build.

    Attributes:
        families: Family names (default: every registered family).
        per_family: Candidates generated per family (before dedupe and verification).
        seed: Seed of the generators and the splits.
        workers: Verification processes (default: one per core).
        out: Data file; ``splits.json`` and ``build-report.json`` go next to it.
        card: Dataset card to write (None: none).
        verify: Run the verification (off only for quick generator checks).
        verify_options: Limits of the verification.
        kind: Task kind whose families are built (``c2cuda`` or ``torch2cuda``).
        verdicts: Verdict log (JSONL, appended): verdicts found there are not verified again.
        deadline_s: Start no verification after this many seconds (None: no limit).
    """

    families: tuple[str, ...] = ()
    per_family: int = 12
    seed: int = 0
    workers: int = 0
    out: Path = DATA_FILE
    card: Path | None = CARD_FILE
    verify: bool = True
    verify_options: VerifyOptions = field(default_factory=VerifyOptions)
    kind: str = "c2cuda"
    verdicts: Path | None = None
    deadline_s: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in FAMILIES_BY_KIND:
            raise ValueError(f"unknown kind {self.kind!r}; expected one of {', '.join(FAMILIES_BY_KIND)}")
        registered = FAMILIES_BY_KIND[self.kind]
        unknown = sorted(set(self.families) - set(registered))
        if unknown:
            raise ValueError(f"unknown {self.kind} families {unknown}; registered: {', '.join(sorted(registered))}")
        if self.per_family < 1:
            raise ValueError(f"per_family must be at least 1, got {self.per_family}")

    @property
    def family_list(self) -> tuple[str, ...]:
        return tuple(sorted(self.families or FAMILIES_BY_KIND[self.kind]))


def generate(family: str, seed: int, variant: int, kind: str = "c2cuda") -> dict[str, Any]:
    """Candidate ``variant`` of ``family`` (of ``kind``); its id and provenance are set here."""
    rng = np.random.default_rng([seed, zlib.crc32(family.encode()), variant])
    data = FAMILIES_BY_KIND[kind][family](rng, variant)
    data["id"] = f"{kind}/{family}_{variant:04d}"
    data["family"] = family
    data["provenance"] = {"generator": family, "variant": variant, "seed": seed}
    return data


def dedupe(candidates: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], Counter[str]]:
    """First candidate of each normalized reference, and the duplicates dropped per family."""
    seen: set[str] = set()
    kept, dropped = [], Counter[str]()
    for data in candidates:
        key = dedupe_key(data["reference"]["source"], data["entry"])
        if key in seen:
            dropped[data["family"]] += 1
        else:
            seen.add(key)
            kept.append(data)
    return kept, dropped


def candidate_digest(data: Mapping[str, Any], options: VerifyOptions) -> str:
    """What a verdict depends on: the candidate and the verification's options (pure)."""
    blob = json.dumps([data, asdict(options)], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def read_verdicts(path: Path | None) -> dict[str, Verdict]:
    """The verdicts of a log by candidate digest (later lines win; a missing file is empty)."""
    if path is None or not path.is_file():
        return {}
    verdicts = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            entry = json.loads(line)
            digest = entry.pop("digest")
            verdicts[digest] = Verdict(**entry)
    return verdicts


def verify_all(candidates: Sequence[dict[str, Any]], options: VerifyOptions, workers: int,
               on_done: Callable[[Verdict], None] | None = None,
               deadline: float = math.inf) -> list[Verdict]:  # fmt: skip
    """:func:`verify_task` over a process pool; verdicts in the order of ``candidates``.

    ``workers`` run at a time; past ``deadline`` (a ``time.time()``) none starts, so those
    not started have no verdict and the list is shorter than ``candidates`` (in their order).
    """
    verdicts: dict[str, Verdict] = {}
    waiting = list(reversed(candidates))
    with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn")) as pool:
        running: set[Future[Verdict]] = set()
        while waiting or running:
            while waiting and len(running) < workers and time.time() <= deadline:
                running.add(pool.submit(verify_task, waiting.pop(), options))
            if not running:
                break  # past the deadline: the rest have no verdict
            finished, running = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                verdict = future.result()
                verdicts[verdict.task_id] = verdict
                if on_done:
                    on_done(verdict)
    return [verdicts[d["id"]] for d in candidates if d["id"] in verdicts]


def write_data(path: Path, records: Sequence[dict[str, Any]]) -> None:
    """Records as gzip-compressed JSON lines, byte-identical for identical records."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps(r, sort_keys=True, separators=(",", ":")) + "\n" for r in records)
    with path.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as f:
        f.write(lines.encode())


def write_json(path: Path, value: Any) -> None:
    """``value`` as indented, key-sorted JSON."""
    path.write_text(json.dumps(value, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def build(config: BuildConfig, on_event: Callable[[str, int, Verdict | None], None] | None = None
          ) -> dict[str, Any]:  # fmt: skip
    """Build the dataset described by ``config``; returns the build report (also written).

    A build cut by its deadline returns ``{"complete": False, ...}`` (how many candidates have
    a verdict) and writes nothing but the verdict log: run it again to go on.

    Args:
        config: What to build and where.
        on_event: Progress callback ``(phase, total, verdict)``: ``("verify", n, None)``
            once when verification starts, then ``("done", n, verdict)`` per task.
    """
    started = time.perf_counter()
    deadline = time.time() + config.deadline_s if config.deadline_s is not None else math.inf
    families = config.family_list
    candidates = [generate(f, config.seed, v, config.kind) for f in families for v in range(config.per_family)]
    unique, duplicates = dedupe(candidates)
    workers = config.workers or os.cpu_count() or 1
    if on_event:
        on_event("verify", len(unique), None)
    if config.verify:
        digests = {d["id"]: candidate_digest(d, config.verify_options) for d in unique}
        logged = read_verdicts(config.verdicts)
        known = {d["id"]: logged[digests[d["id"]]] for d in unique if digests[d["id"]] in logged}

        def done(verdict: Verdict) -> None:
            if config.verdicts is not None:
                with config.verdicts.open("a", encoding="utf-8") as log:
                    log.write(json.dumps({"digest": digests[verdict.task_id], **asdict(verdict)}) + "\n")
            if on_event:
                on_event("done", len(unique), verdict)

        for verdict in known.values():
            if on_event:
                on_event("done", len(unique), verdict)
        todo = [d for d in unique if d["id"] not in known]
        fresh = {v.task_id: v for v in verify_all(todo, config.verify_options, workers, done, deadline)}
        if len(known) + len(fresh) < len(unique):
            return {"complete": False, "candidates": len(candidates), "verified_now": len(fresh),
                    "verified": len(known) + len(fresh), "unique": len(unique),
                    "build_seconds": round(time.perf_counter() - started, 1)}  # fmt: skip
        verdicts = [known.get(d["id"]) or fresh[d["id"]] for d in unique]
    else:
        verdicts = [Verdict(d["id"], d["family"], True) for d in unique]
    kept = [d for d, v in zip(unique, verdicts, strict=True) if v.ok]
    by_family: dict[str, list[str]] = {f: [] for f in families}
    for data in kept:
        by_family[data["family"]].append(data["id"])
    splits = assign_splits(by_family, config.seed)
    write_data(config.out, kept)
    write_json(config.out.parent / "splits.json", splits)
    report = _report(config, families, candidates, duplicates, verdicts, workers, time.perf_counter() - started)
    write_json(config.out.parent / "build-report.json", report)
    if config.card is not None:
        write_card(config.out, config.card, config.kind)
    return report


def write_card(data_file: Path, card: Path, kind: str | None = None) -> None:
    """Render the dataset card of ``data_file`` (with its splits, build report and GPU labels) to ``card``."""
    from cudaperf_env.datagen.card import render_card
    from cudaperf_env.dataset.load import load_records, load_splits
    from cudaperf_env.dataset.stats import dataset_stats

    report = json.loads((data_file.parent / "build-report.json").read_text(encoding="utf-8"))
    stats = dataset_stats(load_records(data_file), load_splits(data_file))
    card.write_text(render_card(stats, report, kind), encoding="utf-8")


def _report(config: BuildConfig, families: Sequence[str], candidates: Sequence[dict[str, Any]],
            duplicates: Counter[str], verdicts: Sequence[Verdict], workers: int, seconds: float
            ) -> dict[str, Any]:  # fmt: skip
    drops = Counter(v.reason for v in verdicts if not v.ok)
    drops_by_family = Counter(f"{v.family}:{v.reason}" for v in verdicts if not v.ok)
    return {
        "complete": True,
        "kind": config.kind,
        "seed": config.seed,
        "per_family": config.per_family,
        "families": list(families),
        "candidates": len(candidates),
        "duplicates": sum(duplicates.values()),
        "duplicates_by_family": dict(sorted(duplicates.items())),
        "verified": config.verify,
        "verify_options": asdict(config.verify_options),
        "drops": dict(sorted(drops.items())),
        "drops_by_family": dict(sorted(drops_by_family.items())),
        "dropped": [asdict(v) for v in verdicts if not v.ok],
        "kept": sum(v.ok for v in verdicts),
        "slowest_config_s": round(max((v.slowest_config_s for v in verdicts), default=0.0), 3),
        "workers": workers,
        "build_seconds": round(seconds, 1),
    }
