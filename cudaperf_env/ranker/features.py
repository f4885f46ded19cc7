"""The ranker's features of one implementation: static, compiler and configuration-aware parallelism, with sources.

An implementation's *record* holds its configuration-independent features
(``static``: the source analysis and the structural score's components;
``compiler``: ptxas resources, occupancy and the SASS histogram, when compiled)
and, per configuration of its task, the parallelism features of
:mod:`cudaperf_env.analysis.parallelism`. A *vector* is the record at one
configuration in the fixed order of :data:`FEATURES` (NaN where a value is missing).

Run as a script it extracts records for the whole dataset into a gzip JSONL file,
in parallel and resumably (a killed run keeps what it flushed: its cut-off tail is repaired on the next start)::

    python -m cudaperf_env.ranker.features --out features.jsonl.gz --workers 16 --done features.done [--compiler] \
        [--variants]

(``--compiler`` runs nvcc on every implementation: about 1 s each on a loaded core.)
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import multiprocessing
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cudaperf_env.analysis import analyze
from cudaperf_env.analysis.parallelism import config_features
from cudaperf_env.analysis.report import StructuralReport
from cudaperf_env.analysis.score import COMPONENTS
from cudaperf_env.ranker.pairs import config_key
from cudaperf_env.tasks.schema import Config, Task
from cudaperf_env.text import source_digest
from cudaperf_env.toolchain.compile_check import CompileReport

STATIC = (
    "kernels", "launches", "block_size", "global_accesses", "global_loads", "global_stores",
    "coalesced_accesses", "strided_accesses", "uniform_accesses", "indirect_accesses", "unknown_accesses",
    "vector_accesses", "shared_arrays", "shared_static_bytes", "dynamic_shared", "shared_padded",
    "shared_accesses", "bank_conflict_accesses", "max_bank_ways", "syncthreads", "barriers_in_loops",
    "divergent_barriers", "warp_primitives", "warp_syncs", "smem_tree_reductions", "global_atomics",
    "shared_atomics", "contended_atomics", "indirect_global_atomics", "loops", "unrolled_loops",
    "grid_stride_loops", "max_loop_depth", "flops_weighted", "int_divmods_weighted", "coalescing",
    "vectorized_fraction", "strided_loads", "strided_stores",
    "arithmetic_intensity", "structural_score", *(f"score_{c}" for c in COMPONENTS),
)  # fmt: skip
COMPILER = (
    "registers", "spill_bytes", "stack_bytes", "ptxas_shared_bytes", "ptxas_barriers", "occupancy",
    "active_blocks_per_sm", "occupancy_min", "sass_instructions", "sass_global_loads", "sass_global_loads_128",
    "sass_global_stores", "sass_global_stores_128", "sass_shared_loads", "sass_shared_stores",
    "sass_local_memory", "sass_shuffles", "sass_warp_votes", "sass_barriers", "sass_global_atomics",
    "sass_shared_atomics", "sass_fma", "sass_fp_instructions", "sass_vector_fraction",
)  # fmt: skip
PARALLELISM = (
    "launches", "grid_known", "launch_in_loop", "threads_per_block", "log2_blocks", "log2_threads", "sm_fill",
    "thread_fill", "log2_waves", "log2_threads_per_output", "log2_iterations_per_thread", "log2_serial_chain",
    "log2_bytes_per_thread", "log2_traffic_over_minimum", "log2_ops_per_byte", "log2_shared_bytes_per_thread",
    "log2_barriers_per_thread", "unknown_trip_loops",
    "log2_warp_ops_per_thread", "log2_global_atomics", "log2_register_tile", "log2_shared_over_global",
    "host_allocations", "host_syncs",
)  # fmt: skip
HAND_WRITTEN = tuple(f"parallelism/{n}" for n in PARALLELISM[PARALLELISM.index("log2_warp_ops_per_thread"):])
"""The parallelism features added for what hand-written kernels do (warp collectives, guarded atomics,
register tiles, shared-memory reuse, host round trips). Extracted, but left out of training by default
(``TrainConfig.exclude``): they did not carry to new families in leave-families-out CV."""
CONTEXT = ("log2_min_bytes", "log2_outputs", "is_perf")
"""Features of the configuration, the same for both sides of a pair: never differenced."""

FEATURES: tuple[tuple[str, str], ...] = (
    *((f"static/{n}", "static") for n in STATIC),
    *((f"compiler/{n}", "compiler") for n in COMPILER),
    *((f"parallelism/{n}", "parallelism") for n in PARALLELISM),
)
"""Every implementation feature the ranker knows, as ``(name, source)``; names say their source too."""
SOURCES = ("static", "compiler", "parallelism")


def task_configs(task: Task) -> list[tuple[str, Config]]:
    """``(kind, configuration)`` of every configuration of the task: shown, hidden, then perf."""
    return [*(("shown", c) for c in task.configs), *(("hidden", c) for c in task.hidden_configs),
            *(("perf", c) for c in task.perf_configs)]  # fmt: skip


def structure_values(structure: StructuralReport) -> tuple[dict[str, float], dict[str, float]]:
    """The numeric ``(static, compiler)`` values of a structural report (score and components with static)."""
    static: dict[str, float] = {}
    compiler: dict[str, float] = {}
    for name, feature in structure.features.items():
        if isinstance(feature.value, str):
            continue
        (compiler if feature.source == "compiler" else static)[name] = float(feature.value)
    static["structural_score"] = float(structure.score)
    static.update({f"score_{k}": float(v) for k, v in structure.components.items()})
    return static, compiler


def implementation_record(task: Task, name: str, code: str, report: CompileReport | None = None,
                          structure: StructuralReport | None = None,
                          configs: Sequence[tuple[str, Config]] | None = None) -> dict[str, Any]:  # fmt: skip
    """The features of one implementation (or submission) of ``task`` at each of ``configs`` (default: all)."""
    structure = structure if structure is not None else analyze(code, report)
    static, compiler = structure_values(structure)
    chosen = task_configs(task) if configs is None else configs
    return {"task": task.id, "impl": name, "digest": source_digest(code), "static": static, "compiler": compiler,
            "configs": {config_key(c): config_features(task, code, c) for _, c in chosen}}  # fmt: skip


def vector(record: Mapping[str, Any], key: str, names: Sequence[str]) -> np.ndarray:
    """The record at configuration ``key`` as a float vector in the order of ``names`` (NaN: missing)."""
    per_config = record["configs"].get(key, {})
    tables = {"static": record["static"], "compiler": record.get("compiler", {}), "parallelism": per_config}
    out = np.full(len(names), math.nan)
    for i, full in enumerate(names):
        source, _, name = full.partition("/")
        value = tables.get(source, {}).get(name)
        if value is not None:
            out[i] = float(value)
    return out


def context(record: Mapping[str, Any], key: str, kind: str) -> np.ndarray:
    """The configuration's :data:`CONTEXT` values (problem size; perf or not)."""
    per_config = record["configs"].get(key, {})
    return np.array([per_config.get("log2_min_bytes", math.nan), per_config.get("log2_outputs", math.nan),
                     float(kind == "perf")])  # fmt: skip


def read_records(path: str | Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Records by ``(task, implementation)`` from a gzip JSONL file (later lines win; a cut-off tail is left out)."""
    return {(r["task"], r["impl"]): r for r in _readable(path)[0]}


def _readable(path: str | Path) -> tuple[list[dict[str, Any]], bool]:
    """The whole records of a gzip JSONL file, and whether it ended cleanly (not cut off by a killed run)."""
    records: list[dict[str, Any]] = []
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    records.append(json.loads(line))
    except (EOFError, json.JSONDecodeError):  # a member without its end, or half a line
        return records, False
    return records, True


def _repair(out: Path, done: Path | None) -> None:
    """After a killed run: rewrite ``out`` with its whole records and ``done`` to name exactly them.

    (A gzip member cut off mid-stream hides every member appended after it from a reader.)
    """
    records, whole = _readable(out) if out.is_file() else ([], True)
    if whole:
        return
    tmp = out.with_name(out.name + ".tmp")
    with gzip.open(tmp, "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(r, sort_keys=True) + "\n" for r in records)
    tmp.replace(out)
    if done is not None:
        done.write_text("".join(f"{r['task']}\t{r['impl']}\n" for r in records))
    print(f"{out}: cut off by a killed run; kept its {len(records)} whole records", file=sys.stderr)


def dataset_records(tasks: Iterable[Task], compiler: bool = False) -> Iterator[dict[str, Any]]:
    """Records of every implementation of ``tasks`` (serially; the script below runs it in parallel)."""
    for task in tasks:
        for impl in task.implementations:
            yield _extract((task, impl.name, impl.source, compiler))


def _extract(job: tuple[Task, str, str, bool]) -> dict[str, Any]:
    task, name, code, compiler = job
    report = None
    if compiler:
        from cudaperf_env.backends.harness import wrap
        from cudaperf_env.toolchain.compile_check import compile_check

        report = compile_check(wrap(task, code))
    return implementation_record(task, name, code, report)


FLUSH_EVERY = 64
"""Records between two flushes of the script's output (what a killed run keeps)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Extracts the dataset's feature records (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m cudaperf_env.ranker.features", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--out", required=True, help="gzip JSONL file the records are appended to")
    parser.add_argument("--done", help="file of finished 'task<TAB>implementation' keys (resume; default: none)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes")
    parser.add_argument("--compiler", action="store_true", help="also run nvcc (compiler and SASS features)")
    parser.add_argument("--split", choices=("train", "validation", "test"), help="only this split")
    parser.add_argument("--limit", type=int, help="at most this many implementations (a quick run)")
    parser.add_argument("--variants", action="store_true", help="the train tasks' labelled knob variants too")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error(f"--workers must be at least 1, got {args.workers}")
    from rich.progress import Progress

    from cudaperf_env.dataset import load_dataset
    from cudaperf_env.dataset.variants import load_variant_tasks

    tasks = load_variant_tasks(args.split) if args.variants else load_dataset(args.split)
    _repair(Path(args.out), Path(args.done) if args.done else None)
    done = set(Path(args.done).read_text().splitlines()) if args.done and Path(args.done).is_file() else set()
    jobs = [(t, i.name, i.source, args.compiler) for t in tasks.values() for i in t.implementations
            if f"{t.id}\t{i.name}" not in done][: args.limit]  # fmt: skip
    context_ = multiprocessing.get_context("fork" if sys.platform != "win32" else "spawn")
    with context_.Pool(args.workers) as pool, gzip.open(args.out, "at", encoding="utf-8") as out, \
            open(args.done or "/dev/null", "a", encoding="utf-8") as done_file, Progress() as progress:  # fmt: skip
        bar = progress.add_task(f"features of {len(jobs)} implementations", total=len(jobs))
        pending: list[str] = []
        for n, record in enumerate(pool.imap_unordered(_extract, jobs, chunksize=8), 1):
            out.write(json.dumps(record, sort_keys=True) + "\n")
            pending.append(f"{record['task']}\t{record['impl']}\n")
            if n % FLUSH_EVERY == 0 or n == len(jobs):  # a key is marked done only once its record is readable
                out.flush()
                done_file.writelines(pending)
                done_file.flush()
                pending.clear()
            progress.advance(bar)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def records_for(tasks: Iterable[Task], cache: str | Path | None = None,
                progress: Callable[[int, int], None] | None = None,
                compiler: bool = False) -> dict[tuple[str, str], dict[str, Any]]:  # fmt: skip
    """Records of every implementation of ``tasks``: from ``cache`` where its source digest matches, else computed
    (with ``compiler``, by nvcc too: about 1 s each)."""
    cached = read_records(cache) if cache is not None and Path(cache).is_file() else {}
    jobs = [(t, i) for t in tasks for i in t.implementations]
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for n, (task, impl) in enumerate(jobs):
        record = cached.get((task.id, impl.name))
        if record is None or record.get("digest") != source_digest(impl.source):
            record = _extract((task, impl.name, impl.source, compiler))
        out[(task.id, impl.name)] = record
        if progress is not None:
            progress(n + 1, len(jobs))
    return out
