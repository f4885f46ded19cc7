"""Verification of knob variants on the CPU backend: plan, verify in worker processes, resume, write.

``cudaperf dataset variants`` (``datagen/cli.py``) drives it: for the tasks of a split
(in the labeller's hashed order, so a run cut short covers the families evenly),
``--per-impl K`` variants of each implementation are chosen (``variants.choose``,
seeded per implementation) and each is evaluated like a submission on the CPU
backend, on every shown and hidden configuration, as ``datagen/verify.py`` checks
the dataset's own implementations (same seed, timeouts and per-configuration time
limit). Every verdict is appended at once to a log (``--done``, gzip JSONL, one
member per record, so a killed run keeps what it verified); a rerun skips the
variants already in it. The verified-correct variants are then written to the
variant data file and the failure counts to a results JSON.
"""

from __future__ import annotations

import datetime
import gzip
import json
import os
import platform
import statistics
import time
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from cudaperf_env.datagen.variants import Variant, choose, variants
from cudaperf_env.datagen.verify import VerifyOptions
from cudaperf_env.ranker.features import source_digest
from cudaperf_env.tasks.schema import Task

ROOT = Path(__file__).resolve().parents[2]
VARIANTS_DIR = Path(__file__).resolve().parents[1] / "tasks" / "data" / "dataset" / "variants"
VARIANTS_FILE = VARIANTS_DIR / "c2cuda-variants.jsonl.gz"
DONE_FILE = ROOT / "benchmarks" / "results" / "variants_verify.jsonl.gz"
RESULTS_FILE = ROOT / "benchmarks" / "results" / "variants_verify.json"


@dataclass(frozen=True)
class VariantRunConfig:
    """What ``cudaperf dataset variants`` verifies and where it writes.

    Attributes:
        split: Split of the shipped dataset whose tasks get variants.
        limit: At most this many tasks (in the hashed order), None for all.
        per_impl: Variants chosen per implementation.
        seed: Seed of the choice.
        workers: Verification processes.
        done: Log of every verified record (read to resume, appended to).
        out: Variant data file (verified-correct variants only), rewritten from the log.
        results: Results JSON (counts by knob and verdict, seconds per variant).
        verify: Limits of one verification (those of the dataset build by default).
    """

    split: str = "train"
    limit: int | None = None
    per_impl: int = 4
    seed: int = 0
    workers: int = 1
    done: Path = DONE_FILE
    out: Path = VARIANTS_FILE
    results: Path | None = RESULTS_FILE
    verify: VerifyOptions = VerifyOptions()

    def __post_init__(self) -> None:
        if self.per_impl < 1 or self.workers < 1 or (self.limit is not None and self.limit < 0):
            raise ValueError("per_impl and workers must be at least 1, limit non-negative")


def plan(tasks: Iterable[Task], per_impl: int, seed: int, done: Iterable[tuple[str, str]] = ()
         ) -> list[tuple[Task, Variant]]:  # fmt: skip
    """``(task, variant)`` to verify: ``per_impl`` chosen per implementation, minus the ``(task, variant id)`` done."""
    skip = set(done)
    jobs = []
    for task in tasks:
        sources = {i.source for i in task.implementations}  # a variant equal to another implementation adds nothing
        for impl in task.implementations:
            found = [v for v in variants(impl.name, impl.source) if v.source not in sources]
            for v in choose(found, per_impl, f"{seed}:{task.id}:{impl.name}"):
                sources.add(v.source)
                if (task.id, v.id) not in skip:
                    jobs.append((task, v))
    return jobs


@lru_cache(maxsize=1)
def _evaluator(timeout_s: float) -> Any:
    """One CPU evaluator per worker process (its expected-output cache serves a task's variants)."""
    from cudaperf_env.backends.cpu.backend import CpuBackend
    from cudaperf_env.evaluate import Evaluator

    return Evaluator(CpuBackend(threads=1, timeout_s=timeout_s))


def verify_variant(task: Task, variant: Variant, options: VerifyOptions | None = None) -> dict[str, Any]:
    """The verified record of one variant: correct on every configuration, not slow on the CPU; never raises."""
    options = options or VerifyOptions()
    started = time.perf_counter()
    base = next((i for i in task.implementations if i.name == variant.base), None)
    record: dict[str, Any] = {"task": task.id, **asdict(variant), "tags": list(variant.tags),
                              "base_digest": source_digest(base.source) if base else ""}  # fmt: skip
    result = _evaluator(options.timeout_s).evaluate(task, variant.source, options.seed)
    slowest = result.seconds.get("run", 0.0) / max(len(result.configs), 1)
    if not result.correct:
        verdict, detail = str(result.status.value), f"{result.message}\n{result.compile_log[-300:]}"
    elif slowest > options.max_config_s:
        verdict, detail = "slow_on_cpu", f"{slowest:.2f} s per configuration"
    else:
        verdict, detail = "ok", ""
    return {**record, "verdict": verdict, "detail": detail[:500], "seconds": round(time.perf_counter() - started, 3),
            "slowest_config_s": round(slowest, 4)}  # fmt: skip


def _job(args: tuple[Task, Variant, VerifyOptions]) -> dict[str, Any]:
    return verify_variant(*args)


def read_log(path: str | Path) -> list[dict[str, Any]]:
    """Records of a log of gzip members (a member cut short by a kill is dropped); missing file: none."""
    path = Path(path)
    if not path.is_file():
        return []
    data, records = path.read_bytes(), []
    while data:
        inflater = zlib.decompressobj(31)
        try:
            text = inflater.decompress(data)
        except zlib.error:
            break
        if not inflater.eof:
            break
        for line in text.decode("utf-8").splitlines():
            if line.strip():
                records.append(json.loads(line))
        data = inflater.unused_data
    return records


def append_log(path: str | Path, record: Mapping[str, Any]) -> None:
    """Append one record as its own gzip member (complete on disk when this returns)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as f:
        f.write(gzip.compress((json.dumps(record, sort_keys=True) + "\n").encode("utf-8"), mtime=0))


def compact_log(path: str | Path, log: Sequence[Mapping[str, Any]]) -> None:
    """Rewrite the log as one gzip member (smaller than one per record), atomically."""
    tmp = Path(f"{path}.tmp")
    with gzip.GzipFile(tmp, "wb", mtime=0) as f:
        f.write("".join(json.dumps(r, sort_keys=True) + "\n" for r in log).encode("utf-8"))
    os.replace(tmp, path)


def run(config: VariantRunConfig, tasks: Sequence[Task], on_record: Callable[[dict[str, Any], int], None] | None = None,
        deadline: float = float("inf")) -> list[dict[str, Any]]:  # fmt: skip
    """Verify the planned variants of ``tasks`` (appending to ``config.done``) until done or past ``deadline``.

    ``on_record(record, total)`` is called after each verdict. Returns this run's records.
    """
    done = {(r["task"], r["id"]) for r in read_log(config.done)}
    jobs = plan(tasks, config.per_impl, config.seed, done)
    records: list[dict[str, Any]] = []
    for record in _verified(jobs, config):
        append_log(config.done, record)
        records.append(record)
        if on_record is not None:
            on_record(record, len(jobs))
        if time.time() > deadline:
            break
    return records


def _verified(jobs: Sequence[tuple[Task, Variant]], config: VariantRunConfig) -> Iterator[dict[str, Any]]:
    """Records in job order: inline for one worker, else from spawned processes."""
    args = [(task, variant, config.verify) for task, variant in jobs]
    if config.workers == 1:
        yield from map(_job, args)
        return
    import multiprocessing

    with ProcessPoolExecutor(config.workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield from pool.map(_job, args, chunksize=4)


DATA_KEYS = ("task", "id", "base", "base_digest", "kind", "knob", "value", "tags", "source")


def write_variants(log: Sequence[Mapping[str, Any]], out: str | Path) -> int:
    """Write the verified-correct variants of ``log`` (last verdict per variant wins), sorted; returns how many."""
    latest = {(r["task"], r["id"]): r for r in log}
    ok = [{k: r[k] for k in DATA_KEYS} for key, r in sorted(latest.items()) if r["verdict"] == "ok"]
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    with gzip.GzipFile(out, "wb", mtime=0) as f:
        f.write("".join(json.dumps(r, sort_keys=True) + "\n" for r in ok).encode("utf-8"))
    return len(ok)


def summarize(log: Sequence[Mapping[str, Any]], command: str) -> dict[str, Any]:
    """The results JSON: verdict counts overall, by kind, knob and tag, and seconds per variant."""
    latest = list({(r["task"], r["id"]): r for r in log}.values())
    seconds = [r["seconds"] for r in latest]

    def counts(key: Callable[[Mapping[str, Any]], str]) -> dict[str, dict[str, Any]]:
        out: dict[str, Counter[str]] = {}
        for r in latest:
            out.setdefault(key(r), Counter())[r["verdict"]] += 1
        return {k: {"variants": sum(c.values()), "ok": c["ok"], "failed": {v: n for v, n in sorted(c.items())
                                                                           if v != "ok"}}
                for k, c in sorted(out.items())}  # fmt: skip

    ok = sum(r["verdict"] == "ok" for r in latest)
    return {
        "what": "knob variants of the dataset's implementations verified on the CPU backend (variant_verify.py)",
        "machine": f"{platform.machine()} {os.cpu_count()} cores, {platform.system()}, "
                   f"Python {platform.python_version()}",
        "date": datetime.date.today().isoformat(),
        "command": command,
        "tasks": len({r["task"] for r in latest}),
        "implementations": len({(r["task"], r["base"]) for r in latest}),
        "variants": len(latest),
        "verified_ok": ok,
        "pass_rate": round(ok / len(latest), 4) if latest else None,
        "seconds_per_variant": {"mean": round(statistics.fmean(seconds), 3),
                                "median": round(statistics.median(seconds), 3),
                                "total": round(sum(seconds), 1)} if seconds else {},
        "by_kind": counts(lambda r: r["kind"]),
        "by_tag": counts(lambda r: r["tags"][0]),
        "by_knob": counts(lambda r: r["knob"]),
        "verdicts": dict(sorted(Counter(r["verdict"] for r in latest).items())),
    }  # fmt: skip
