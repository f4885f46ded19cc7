"""GPU timing labels: every implementation of every task, timed on every configuration.

The labelling run is a pipeline sized for one GPU machine:

* builds: implementations of consecutive tasks compiled together, several dozen per
  nvcc call (``backends/cuda/bundle.py``; content-cached), on all cores, ahead of
  the timing streams;
* inputs: each configuration's input set written ahead in worker processes (numpy's
  generators hold the GIL) on the cores the streams leave free, as far ahead as a
  byte budget on tmpfs allows (the perf inputs of the shipped dataset add up to
  about 2 TB); tasks are taken in a hashed order, so families, and input sizes,
  interleave;
* timing: one stream per GPU. A long-lived worker (the implementations are the
  dataset's own verified code, so one worker may load many) times all
  implementations of a task together, round robin, with the GPU backend's hardened
  loop (L2 flush and inputs restored before every call); being trusted, the code
  gets lighter timing than a submission (``LABEL_TIMING``, ``SMALL_TIMING``): one
  input set, outputs compared with the baseline's on the device on the first calls,
  which double as the warmup, and a short budget with at least 3 timed calls. An
  implementation far slower than the baseline stops being timed as soon as that is
  certain (the submissions' rule, ``backends/cuda/budget.py``): its label then rests on
  the calls made so far and says ``capped``, and it holds the GPU for one call or two.

Each finished task is appended to a JSONL stream at once, so a run cut short keeps
what it measured, and tasks already in any stream given as ``--done`` are skipped:
labelling resumes across runs and sessions; the tasks left go cheapest family first
(``cheapest_first``, by the seconds the ``--done`` streams recorded), so a run cut by its
deadline labels as many implementations as it can. Streams committed next to the data file
(``labels-h200.jsonl.gz``) are folded into the tasks' labels when the dataset loads
(``dataset/gpu_labels.py``). Records carry where their time went: per configuration
the worker's ``phases`` and the request's ``request_s``; per task ``seconds`` on the
stream, ``load_s`` (libraries), ``wait_s`` (for inputs and builds: the pipeline fell
behind) and ``worker_start_s``.

Measured (``benchmarks/label_rate.py``, ``benchmarks/results/label_rate.json``; one
NVIDIA H200, driver 580.159.04, 16 cores, 2026-11-30), on 100 tasks sampled over the
shipped labels' per-task cost (their mean cost matches the whole dataset's), in the same
run: these options label 2.19 tasks per second, the options the shipped labels were
measured with 1.77 (1.24x). A full run is bound by the stream once the pipeline has
filled (the sample's waits for inputs were its first tasks'): 0.385 against 0.479 s of
stream time per task, i.e. the 3,080-task dataset in about 20 instead of 25 minutes of
one H200 (a second run: 19.1 against 23.5; about half that on two GPUs, one stream each,
not measured with these options). Same tasks told apart (97 of 100), every
implementation pair told apart by both ordered alike (371 pairs), and the slowest
kernels now get 3 timed calls instead of as few as 1. Of the stream's time: perf trials
45%, perf uploads 22% (page-locked; plain pageable uploads were 30-40% slower on the
first 100 tasks in labelling order, ``label_rate_pageable.json``), the first (checked)
calls 13%, shown and hidden configurations 16%, most of it releasing the previous task's
buffers at the first of them. That is not the device frees (allocating from the device's
memory pool, which makes them free, changed nothing: ``label_rate_memory_pool.json``,
whose ``default`` used the pool and ``default_no_pool`` did not); unmapping the
populated host mappings of the input files is the likely rest (unmeasured). A tenth of
the tasks take half the time: naive kernels of up to 1.8 s on the perf configurations,
which at least 4 calls each cannot avoid. The shipped labels were measured with the
earlier options (``BASELINE`` in the benchmark) on two H200s of a 32-core machine,
2.3-2.7 tasks per second.

Run on the GPU machine::

    python -m cudaperf_env.datagen.label --source dataset --devices 0,1 --out labels.jsonl \\
        --done cudaperf_env/tasks/data/dataset/labels-h200.jsonl.gz --deadline-s 530

then append ``labels.jsonl`` to the committed stream (gzip) and ``cudaperf dataset card``.
Knob variants (``dataset/variants.py``) are labelled the same way with ``--source variants``
(tasks that have variants, every implementation of each timed together); their streams
live next to the variant file, one per card (``dataset/variants/labels-h200.jsonl.gz``,
``labels-h100.jsonl.gz``: every ``labels-*.jsonl.gz`` there is folded in; give the others as
``--done`` so that each task's implementations are timed on one card). PyTorch-to-CUDA
tasks with ``--kind torch2cuda`` (their implementations; the eager and torch.compile baselines
are timed by the evaluator, ``backends/cuda/torch_baselines.py``); their streams live next to
that data file, ``dataset/torch2cuda/labels-h200.jsonl.gz``.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import hashlib
import json
import math
import multiprocessing
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from cudaperf_env.backends.buffers import BufferFile, layout
from cudaperf_env.backends.cuda.backend import CudaBackend, detect_arch, set_spec, time_request
from cudaperf_env.backends.cuda.clocks import read_clocks
from cudaperf_env.backends.cuda.timing import TimingOptions
from cudaperf_env.backends.generator import task_inputs
from cudaperf_env.backends.sandbox import Crash, WorkerProcess
from cudaperf_env.datagen.bundle import UnitBuild, build_bundles
from cudaperf_env.dataset.gpu_labels import median_interval, perf_medians, perf_summary, read_stream, task_digest
from cudaperf_env.tasks.schema import Config, Task
from cudaperf_env.toolchain.cache import scratch_dir

LABEL_TIMING = TimingOptions(warmup=1, min_trials=5, max_trials=40, budget_s=0.5, budget_floor=3, target_rse=0.02,
                             input_sets=1, check_first=True)  # fmt: skip
"""Timing of the perf configurations, lighter than a step's: the code is the dataset's own, so
one input set (rotation defends against caching, which trusted code does not do) and outputs
checked on the first calls, which double as the warmup (no extra calls after timing); a 0.5 s
budget per configuration, but at least 3 timed calls of each implementation, so every median
has an interval. Every timed call still starts from restored inputs and a flushed L2."""

SMALL_TIMING = dataclasses.replace(LABEL_TIMING, max_trials=10, budget_s=0.25)
"""Timing of the shown and hidden configurations: small, launch-bound sizes, at most 10 trials."""

MAX_FAULTING_IMPLS = 3
"""Implementations of one task whose own call may fail (each left out, the rest timed again in a
fresh worker) before the task's record is an error."""


@dataclass(frozen=True)
class LabelOptions:
    """How the labelling run times and batches (lighter timing than a step's: the code is trusted).

    Attributes:
        timing: Trials, stopping rule, input sets and L2 flush per perf configuration.
        small_timing: The same for the shown and hidden configurations.
        worker_tasks: Tasks one worker times before it is replaced (bounds libraries loaded).
        bundle_tasks: Consecutive tasks whose implementations are built by one nvcc call.
        pin_above_bytes: Input sets larger than this are page-locked for the upload.
        input_jobs: Processes writing input sets (default: the cores not timing, at least 2).
        inflight_bytes: Input-set bytes written ahead of the timing streams, at most (the
            files live on tmpfs; default: a third of its free space). A task is always
            prepared when its stream has nothing else ahead.
    """

    timing: TimingOptions = LABEL_TIMING
    small_timing: TimingOptions = SMALL_TIMING
    worker_tasks: int = 600
    bundle_tasks: int = 12
    pin_above_bytes: int = 64 << 20
    input_jobs: int | None = None
    inflight_bytes: int | None = None

    def __post_init__(self) -> None:
        if self.timing.input_sets != self.small_timing.input_sets:
            raise ValueError("timing and small_timing need the same input_sets (one file per set and configuration)")


def label_order(tasks: Iterable[Task]) -> list[Task]:
    """Tasks in a fixed order that interleaves families (by a hash of the id).

    A run cut short then covers every family evenly, and the input sizes, which vary
    mostly by family, even out along the stream.
    """
    return sorted(tasks, key=lambda t: hashlib.sha256(t.id.encode()).hexdigest())


def input_bytes(task: Task, sets: int) -> int:
    """Bytes of the input-set files of every configuration of ``task`` (pure)."""
    return sets * sum(layout(task, config)[2] for _, config in all_configs(task))


def all_configs(task: Task) -> list[tuple[str, Config]]:
    """Every configuration of ``task`` with its kind: shown, hidden, perf."""
    kinds = (("shown", task.configs), ("hidden", task.hidden_configs), ("perf", task.perf_configs))
    return [(kind, dict(c)) for kind, configs in kinds for c in configs]


class Labeller:
    """Times every implementation of many tasks on the GPUs ``devices``.

    Args:
        devices: CUDA device indices; one timing stream each.
        options: Timing effort.
        build_jobs: Parallel nvcc processes (default: all cores).
        arch: GPU architecture to build for (default: GPU 0's).
    """

    def __init__(self, devices: Sequence[int] = (0,), options: LabelOptions | None = None,
                 build_jobs: int | None = None, arch: str | None = None) -> None:  # fmt: skip
        self.devices = tuple(devices)
        self.arch = arch
        self.options = options or LabelOptions()
        self.backends = {d: CudaBackend(device=d, timeout_s=60.0) for d in self.devices}
        self.builds = ThreadPoolExecutor(max_workers=build_jobs or os.cpu_count() or 1)
        cores = os.cpu_count() or 2
        self.input_jobs = self.options.input_jobs or max(2, cores - 2 * len(self.devices))
        self.inputs = ProcessPoolExecutor(max_workers=self.input_jobs, mp_context=multiprocessing.get_context("spawn"))
        self.scratch = scratch_dir("cudaperf-label-")
        self.scratch.chmod(0o755)  # the input sets are read by confined workers (users of their own)
        free = shutil.disk_usage(self.scratch).free
        self.inflight_limit = self.options.inflight_bytes or free // 3
        self.inflight = 0  # bytes of input sets written or being written, all streams
        self.driver = _driver_version()
        self._write = threading.Lock()
        self._budget = threading.Lock()

    def run(self, tasks: Sequence[Task], out: Path, deadline: float = math.inf, progress=None) -> list[dict]:
        """Label ``tasks`` in their order (appending to ``out``) until done or until ``time.time() > deadline``.

        Callers order them: :func:`label_order` interleaves families, :func:`cheapest_first` goes by cost.
        """
        tasks = list(tasks)
        step = self.options.bundle_tasks
        builds: dict[str, Future] = {}
        for start in range(0, len(tasks), step):
            chunk = tasks[start : start + step]
            future = self.builds.submit(self._build, chunk)
            builds.update((t.id, future) for t in chunk)
        shards = [tasks[k :: len(self.devices)] for k in range(len(self.devices))]
        records: list[dict] = []
        with open(out, "a", encoding="utf-8") as sink:

            def stream(device: int, shard: Sequence[Task]) -> None:
                for record in self._stream(device, shard, builds, deadline):
                    with self._write:
                        sink.write(json.dumps(record) + "\n")
                        sink.flush()
                        records.append(record)
                        if progress:
                            progress(record)

            threads = [threading.Thread(target=stream, args=(d, s)) for d, s in zip(self.devices, shards, strict=True)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        for pending in builds.values():
            pending.cancel()
        return records

    def close(self) -> None:
        self.builds.shutdown(wait=False, cancel_futures=True)
        self.inputs.shutdown(wait=False, cancel_futures=True)
        shutil.rmtree(self.scratch, ignore_errors=True)

    def _build(self, tasks: Sequence[Task]) -> dict[str, list[UnitBuild]]:
        """Every implementation of ``tasks``, bundled; per task, in implementation order."""
        units = [(t, i.source) for t in tasks for i in t.implementations]
        built = iter(build_bundles(units, self.arch or detect_arch(), size=len(units)))
        return {t.id: [next(built) for _ in t.implementations] for t in tasks}

    def _stream(self, device: int, tasks: Sequence[Task], builds: Mapping[str, Future],
                deadline: float) -> Iterator[dict]:  # fmt: skip
        """Label ``tasks`` one after another on ``device``.

        Inputs are written ahead, as far as the input processes can use (their share per
        stream, plus two) and the in-flight byte budget allows.
        """
        ahead = self.input_jobs // len(self.devices) + 2
        sets = self.options.timing.input_sets
        prepared: list[tuple[Future, int]] = []
        worker, served = None, 0
        try:
            for n, task in enumerate(tasks):
                while len(prepared) < min(n + ahead, len(tasks)):
                    following = tasks[len(prepared)]
                    nbytes = input_bytes(following, sets)
                    if not self._reserve(nbytes, first=len(prepared) == n):
                        break
                    prepared.append((self._prepare(following), nbytes))
                future, nbytes = prepared[n]
                wait_from = time.perf_counter()
                try:
                    inputs = future.result()
                except Exception as exc:  # a task whose inputs cannot be made is a dataset bug: record it
                    self._release(nbytes)
                    yield {"task": task.id, "digest": task_digest(task), "configs": [], "error": f"inputs: {exc}"}
                    continue
                if time.time() > deadline:
                    break
                task_builds = builds[task.id].result()[task.id]
                waited = time.perf_counter() - wait_from  # for inputs and builds: the pipeline fell behind
                start_from = time.perf_counter()
                if worker is None or served >= self.options.worker_tasks:
                    if worker is not None:
                        worker.kill()
                    worker, served = self._start(device), 0
                restarted = time.perf_counter() - start_from
                record, spent, worker = self._label_task(worker, device, task, task_builds, inputs, n)
                record.update(wait_s=round(waited, 3), worker_start_s=round(restarted, 3))
                _remove_inputs(inputs)
                self._release(nbytes)
                served += 1
                if spent:
                    worker.kill()
                    worker = None
                yield record
        finally:
            if worker is not None:
                worker.kill()
            for future, _ in prepared:
                future.cancel()

    def _reserve(self, nbytes: int, first: bool) -> bool:
        """Count ``nbytes`` of input files in flight if the budget allows (always for a stream's ``first``)."""
        with self._budget:
            if not first and self.inflight + nbytes > self.inflight_limit:
                return False
            self.inflight += nbytes
            return True

    def _release(self, nbytes: int) -> None:
        with self._budget:
            self.inflight -= nbytes

    def _start(self, device: int) -> WorkerProcess:
        folder = Path(scratch_dir("cudaperf-labelw-"))
        return self.backends[device].start_worker(folder, visible=(self.scratch,))

    def _prepare(self, task: Task) -> Future:
        """Start writing the input-set files of every configuration of ``task`` (in another process)."""
        folder = self.scratch / hashlib.sha256(task.id.encode()).hexdigest()[:16]
        return self.inputs.submit(write_input_sets, task, str(folder), self.options.timing.input_sets)

    def _label_task(self, worker: WorkerProcess, device: int, task: Task, builds: Sequence[UnitBuild],
                    inputs: list[list[dict]], n: int) -> tuple[dict, bool, WorkerProcess]:  # fmt: skip
        """:meth:`_label`, tried again in a fresh worker without each implementation whose own call failed
        (a kernel's illegal address, a launch the GPU refuses), up to :data:`MAX_FAULTING_IMPLS` of them;
        the record, whether the worker must be replaced, and the worker now used."""
        faulted: dict[str, str] = {}
        record, spent = self._label(worker, device, task, builds, inputs, n)
        while record.get("failed_impl") and len(faulted) < MAX_FAULTING_IMPLS:
            faulted[record.pop("failed_impl")] = record["error"]
            worker.kill()
            worker = self._start(device)
            record, spent = self._label(worker, device, task, builds, inputs, n, faulted)
        if culprit := record.pop("failed_impl", None):
            record["error"] = f"{culprit}: {record['error']}"
        return record, spent, worker

    def _label(self, worker: WorkerProcess, device: int, task: Task, builds: Sequence[UnitBuild],
               inputs: list[list[dict]], n: int, faulted: Mapping[str, str] = MappingProxyType({})
               ) -> tuple[dict, bool]:  # fmt: skip
        """One task's record, and whether its worker must be replaced (it crashed, or a timing failed).

        ``faulted``: implementations left out, with the error their own call made in an earlier try
        (named in the record's ``dropped``). A timing that fails in one non-baseline implementation's
        call names it in ``failed_impl``: the caller tries again without it.
        """
        record: dict[str, Any] = {"task": task.id, "digest": task_digest(task), "baseline": task.baseline,
                                  "date": datetime.date.today().isoformat(), "driver": self.driver,
                                  "configs": [], "error": ""}  # fmt: skip
        kept, dropped = usable_builds(task, builds)
        kept = [(impl, build) for impl, build in kept if impl.name not in faulted]
        dropped.update((name, f"faulted: {why}") for name, why in faulted.items())
        if task.baseline in dropped:
            record["error"] = f"build failed: {task.baseline}: {dropped[task.baseline]}"
            return record, False
        names: dict[str, str] = {}
        started = time.perf_counter()
        for impl, build in kept:
            load = {"op": "load", "lib": str(build.library), "name": f"t{n}.{impl.name}", "symbol": build.symbol}
            reply = worker.request(load, 60)
            crashed = isinstance(reply, Crash)
            loaded = not isinstance(reply, Crash) and bool(reply.get("ok"))
            if not loaded and (crashed or impl.name == task.baseline):
                record["error"] = f"load {impl.name}: {_failure(reply)}"
                return record, crashed
            if not loaded:  # one implementation that does not load: label the others
                dropped[impl.name] = f"load: {_failure(reply)}"
                continue
            names[impl.name] = load["name"]
        if dropped:
            record["dropped"] = dropped
        record["load_s"] = round(time.perf_counter() - started, 4)
        init = worker.early_replies[0] if worker.early_replies else {}
        record["device"] = {k: init.get(k) for k in ("name", "cc", "sms", "driver")}
        by_lib = {lib: impl for impl, lib in names.items()}
        for (kind, config), sets in zip(all_configs(task), inputs, strict=True):
            opts = self.options.timing if kind == "perf" else self.options.small_timing
            pin = sets[0]["size"] > self.options.pin_above_bytes
            request = time_request(opts, task, list(names.values()), sets, names[task.baseline], pin)
            asked = time.perf_counter()
            reply = worker.request(request, opts.budget_s * 4 + 120)
            if isinstance(reply, Crash) or not reply.get("ok"):  # a CUDA error poisons the worker's context:
                record["error"] = f"{kind} {dict(config)}: {_failure(reply)}"  # the next task gets a fresh one
                culprit = by_lib.get(reply.get("lib", "")) if isinstance(reply, dict) else None
                if culprit is not None and culprit != task.baseline:
                    record["failed_impl"] = culprit
                return record, True
            impls = {by_lib[lib]: label_entry(lib, reply) for lib in reply["times"]}
            record["configs"].append({
                "kind": kind, "config": config, "impls": impls, "phases": reply["phases"],
                "request_s": round(time.perf_counter() - asked, 4),
                "mismatches": {by_lib[lib]: m for lib, m in reply["mismatches"].items()},
                "overruns": {by_lib[lib]: o for lib, o in reply["overruns"].items()},
            })  # fmt: skip
        record["clocks"] = read_clocks(device)
        record["seconds"] = round(time.perf_counter() - started, 3)
        return record, False


def usable_builds(task: Task, builds: Sequence[UnitBuild]) -> tuple[list[tuple[Any, UnitBuild]], dict[str, str]]:
    """The implementations of ``task`` whose build gave a library, and why the others were dropped (pure).

    One implementation that does not build on the GPU (a knob variant the CPU backend accepted,
    say) no longer costs its task's whole record: the others are labelled, the dropped ones named
    in the record's ``dropped``. The caller refuses a task whose baseline is dropped.
    """
    kept, dropped = [], {}
    for impl, build in zip(task.implementations, builds, strict=True):
        if build.library is None:
            dropped[impl.name] = f"build: {build.log.strip()[-400:]}"
        else:
            kept.append((impl, build))
    return kept, dropped


def label_entry(lib: str, reply: Mapping[str, Any]) -> dict[str, Any]:
    """One implementation's label from the worker's ``time`` reply (pure).

    An implementation stopped for being far slower than the baseline (``capped``: its speedup's
    upper bound fell below ``TimingOptions.slow_bound``, see ``backends/cuda/budget.py``) is
    labelled from every call it made, its checked first calls included, and marked ``capped``.
    """
    capped = lib in reply.get("capped", [])
    samples = [*reply.get("early", {}).get(lib, []), *reply["times"][lib]] if capped else reply["times"][lib]
    median, lo, hi = median_interval(samples)
    entry: dict[str, Any] = {"median_ms": median, "lo_ms": lo, "hi_ms": hi, "trials": len(samples)}
    return {**entry, "capped": True} if capped else entry


def _failure(reply: dict | Crash) -> str:
    return reply.message if isinstance(reply, Crash) else str(reply.get("error"))


def write_input_sets(task: Task, folder: str, sets: int) -> list[list[dict]]:
    """Write ``sets`` input sets per configuration of ``task`` under ``folder``; their worker specs.

    Runs in a worker process: the files stay (on tmpfs) for the GPU worker to map.
    """
    Path(folder).mkdir(parents=True, exist_ok=True)
    specs = []
    for i, (_, config) in enumerate(all_configs(task)):
        row = []
        for k in range(sets):
            f = BufferFile(Path(folder) / f"{i}-{k}.bin", task, config, task_inputs(task, config, 1000 + k))
            row.append(set_spec(task, config, f))
            del f  # unmapped; the file stays
        specs.append(row)
    return specs


def _remove_inputs(inputs: list[list[dict]]) -> None:
    for sets in inputs:
        for spec in sets:
            Path(spec["file"]).unlink(missing_ok=True)


def _driver_version() -> str:
    if shutil.which("nvidia-smi") is None:
        return ""
    out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True, check=False)  # fmt: skip
    return out.stdout.strip().splitlines()[0] if out.stdout.strip() else ""


def tasks_to_label(tasks: Iterable[Task], done: Mapping[str, Mapping[str, Any]], retry_errors: bool = False
                   ) -> list[Task]:  # fmt: skip
    """The tasks a run labels, in order (pure): those without a record of their current digest,
    then, with ``retry_errors``, those whose record is an error.

    An error (a build or launch that fails on the GPU, a configuration past its time limit)
    is mostly deterministic, so it is not retried by default: retried first, such tasks
    used to take a short run's whole time before any new task started. :func:`run_order`
    orders them by cost with the others: a timeout goes last with its family.
    """
    fresh, failed = [], []
    for task in tasks:
        record = done.get(task.id)
        if record is None or record["digest"] != task_digest(task):
            fresh.append(task)
        elif record["error"]:
            failed.append(task)
    return fresh + failed if retry_errors else fresh


def cheapest_first(tasks: Sequence[Task], done: Mapping[str, Mapping[str, Any]]) -> list[Task]:
    """``tasks`` by their family's mean labelling seconds in ``done``, cheapest first (pure; stable).

    A run cut by ``--deadline-s`` then labels the most implementations in its time: a task's
    cost is set by its family (a bucket_pass task, whose perf configurations hold quadratic
    kernels of up to 7 s a call, takes 45 s on an H100, the median task 0.6 s). A family
    without a timed record in ``done`` counts at the median of the families that have one;
    within a family the order is :func:`label_order`'s.
    """
    seconds: dict[str, list[float]] = {}
    by_id = {t.id: t.family for t in tasks}
    for record in done.values():
        family = by_id.get(record["task"])
        if family is not None and not record["error"] and "seconds" in record:
            seconds.setdefault(family, []).append(float(record["seconds"]))
    mean = {family: sum(s) / len(s) for family, s in seconds.items()}
    unknown = float(np.median(list(mean.values()))) if mean else 0.0
    return sorted(label_order(tasks), key=lambda t: mean.get(t.family, unknown))


def run_order(tasks: Sequence[Task], done: Mapping[str, Mapping[str, Any]], retry_errors: bool = False,
              interleave: bool = False) -> list[Task]:  # fmt: skip
    """The tasks a run labels (:func:`tasks_to_label`), in the order it labels them (pure).

    Cheapest family first (:func:`cheapest_first`, whose family costs come from every task's
    record, so ordered before the choice), or families interleaved (:func:`label_order`). Retried
    errors take their family's place: a context poisoned by another task's fault left cheap ones, a
    timeout is in an expensive family.
    """
    chosen = {t.id for t in tasks_to_label(tasks, done, retry_errors)}
    ordered = label_order(tasks) if interleave else cheapest_first(tasks, done)
    return [t for t in ordered if t.id in chosen]


def load_label_tasks(source: str, path: str | None = None, kind: str = "c2cuda") -> list[Task]:
    """The tasks of ``source`` (``starter``, ``dataset``, ``variants``) and ``kind`` (``c2cuda``, ``torch2cuda``)."""
    if source == "starter":
        from cudaperf_env.tasks import load_tasks

        return list(load_tasks(kind=kind).values())
    if source == "variants":
        if kind != "c2cuda":
            raise ValueError("knob variants exist for the c2cuda dataset only")
        from cudaperf_env.dataset.variants import VARIANTS_FILE, load_variant_tasks

        return list(load_variant_tasks(variants=path or VARIANTS_FILE, only_with_variants=True, fold=False).values())
    from cudaperf_env.dataset.load import DATA_FILES, load_dataset

    return list(load_dataset(path=DATA_FILES[kind], labels=False).values())


def main(argv: Sequence[str] | None = None) -> None:
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", choices=("starter", "dataset", "variants"), default="dataset",
                        help="the bundled starters, the dataset, or the dataset's tasks with their verified knob "
                             "variants (label streams of those go next to the variant file, dataset/variants/)")
    parser.add_argument("--path", help="variant data file for --source variants (default: the shipped one)")
    parser.add_argument("--kind", choices=("c2cuda", "torch2cuda"), default="c2cuda",
                        help="which family's tasks (torch2cuda label streams go next to its data file, "
                             "tasks/data/dataset/torch2cuda/labels-<card>.jsonl.gz)")
    parser.add_argument("--out", required=True, help="JSONL stream to append labels to")
    parser.add_argument("--done", action="append", default=[], help="streams whose tasks are skipped (resume)")
    parser.add_argument("--devices", default="0", help="comma-separated CUDA device indices")
    parser.add_argument("--deadline-s", type=float, default=math.inf, help="stop starting tasks after this long")
    parser.add_argument("--limit", type=int, default=None, help="label at most this many tasks")
    parser.add_argument("--times-out", help="also write {task: {impl: ms}} (perf medians) for structure_vs_speed")
    parser.add_argument("--retry-errors", action="store_true",
                        help="label again the tasks whose last record is an error (in cost order with the "
                             "others: cheap ones first, a timeout's family last)")
    parser.add_argument("--interleave", action="store_true",
                        help="interleave families (a run cut short covers each evenly; default: cheapest "
                             "families first, by the --done streams' seconds per task)")
    parser.add_argument("--pin-above-mb", type=float, default=64, help="page-lock input sets larger than this")
    parser.add_argument("--ray", metavar="ADDRESS", default=None,
                        help="label on a Ray cluster, one actor per GPU (auto, ray://host:port; local: start one "
                             "here); --devices is then ignored")
    parser.add_argument("--chunk", type=int, default=16, help="tasks an actor labels per call (with --ray)")
    args = parser.parse_args(argv)

    started = time.time()
    done = read_stream([*args.done, args.out])
    tasks = load_label_tasks(args.source, args.path, args.kind)
    tasks = run_order(tasks, done, args.retry_errors, args.interleave)
    tasks = tasks[: args.limit]
    options = LabelOptions(pin_above_bytes=int(args.pin_above_mb * (1 << 20)))
    console = Console()
    where = f"the Ray cluster {args.ray}" if args.ray else f"devices {args.devices}"
    console.print(f"{len(tasks)} tasks to label ({len(done)} already labelled) on {where}")
    if args.ray:
        from cudaperf_env.datagen.label_ray import label_tasks

        with Progress(console=console) as bar:
            job = bar.add_task("labelling", total=len(tasks))
            records, failed = label_tasks(tasks, args.out, address=None if args.ray == "local" else args.ray,
                                          options=options, chunk=args.chunk, deadline=started + args.deadline_s,
                                          progress=lambda r: bar.advance(job))  # fmt: skip
        if failed:
            console.print(f"{len(failed)} tasks not labelled (their actor failed): run the same command again")
        driver = next((str(r.get("driver", "")) for r in records), "")
    else:
        labeller = Labeller([int(d) for d in args.devices.split(",")], options)
        try:
            with Progress(console=console) as bar:
                job = bar.add_task("labelling", total=len(tasks))
                records = labeller.run(tasks, Path(args.out), started + args.deadline_s,
                                       progress=lambda r: bar.advance(job))  # fmt: skip
        finally:
            labeller.close()
        driver = labeller.driver
    everything = {**done, **{r["task"]: r for r in records}}
    if args.times_out:
        device: dict[str, Any] = next((r.get("device", {}) for r in records), {})
        times = {"card": device.get("name"), "driver": driver, "date": datetime.date.today().isoformat(),
                 "tasks": perf_medians(everything.values())}  # fmt: skip
        Path(args.times_out).write_text(json.dumps(times, indent=1) + "\n")
    summaries = [perf_summary(r) for r in records if not r["error"]]
    table = Table(title=f"labelling run ({time.time() - started:.0f} s)")
    table.add_column("measure")
    table.add_column("value", justify="right")
    rows = {
        "tasks labelled now": len(records),
        "tasks with an error": sum(bool(r["error"]) for r in records),
        "implementations differing from the baseline on the GPU": sum(
            len(c["mismatches"]) for r in records for c in r["configs"]),
        "tasks distinguishable beyond noise": f"{sum(s['distinguishable'] for s in summaries)}/{len(summaries)}",
        "pairs distinguishable (perf configs)": f"{sum(s['distinguishable_pairs'] for s in summaries)}/"
                                               f"{sum(s['pairs'] for s in summaries)}",
        "median seconds per task": f"{np.median([r.get('seconds', 0) for r in records]):.2f}" if records else "-",
    }  # fmt: skip
    for key, value in rows.items():
        table.add_row(key, str(value))
    console.print(table)
    for r in records:
        if r["error"]:
            console.print(f"[red]{r['task']}[/red]: {r['error'][:300]}")


if __name__ == "__main__":
    main()
