"""The reward ablation: does a structural + ranker reward train better kernel writers than speedup alone?

Arms (:data:`ARMS`, each a reward preset and the ranker on or off) x seeds, all from the
same start model, on the same training tasks, for the same number of steps. Each run's
start model and final checkpoint are evaluated with ``cudaperf evaluate`` on the held-out
splits (validation: the families seen in training; test: held-out families), with the
same evaluation seed for a run's start and final, so the comparison is paired.

Every piece of work is a *job* run as a subprocess (a fresh CUDA context each, and vLLM
engines free their memory only when their process ends), up to ``--gpus`` at once, each
pinned to one GPU. A job is done when its output exists (``final/`` of a run,
``report.json`` of an evaluation), so re-running the same command skips finished work and
resumes unfinished runs from their checkpoints. With ``--max-minutes`` no job is started
that would not fit and training jobs get the remaining time as their own budget: split a
long ablation into commands of under 10 minutes and repeat the command until it reports
``complete``.

Layout of ``--out``: ``runs/<arm>/seed-<s>/`` (GRPO run directories),
``eval/start/seed-<s>/<split>/`` and ``eval/<arm>/seed-<s>/<split>/`` (evaluation reports),
``logs/`` (each job's output). Results: ``--results`` (JSON) and its ``_curves.png``.

Run: ``python -m agents.grpo.ablation --model START --out runs/ablation --seeds 0 1 --steps 20 --max-minutes 9``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from agents.grpo.ablation_results import arm_result, comparisons, merge_arm, plot_curves
from agents.grpo.start_model import start_identity

ARMS: Mapping[str, tuple[str, bool]] = MappingProxyType({
    "speedup_only": ("speedup_only", False),
    "cudaperf_no_ranker": ("cudaperf", False),
    "cudaperf_ranker": ("cudaperf", True),
    "kevin": ("kevin", False),
    "cuda_agent": ("cuda_agent", False),
})
"""Arm name -> (reward preset, ranker on)."""


@dataclass(frozen=True)
class AblationConfig:
    """The ablation.

    Attributes:
        model: Start model: a local model directory (e.g. the SFT model exported as one) shared by every arm.
        out: Working directory of runs, evaluations and logs.
        results: Where the JSON results go (the curves next to it as ``<stem>_curves.png``).
        arms: Arms to run (keys of ARMS).
        seeds: Training seeds; each arm runs every seed.
        steps: GRPO steps per run.
        turns: Replies per trajectory, in training and evaluation.
        group: Trajectories per task in training (G).
        tasks_per_step: Tasks per training step.
        max_tokens: New tokens per reply.
        lr: Learning rate.
        temperature: Training's sampling temperature (the loss scores tokens under it). 0.7, as the
            evaluation samples: at 1.0 the 135M start model passed none of its training tasks in
            the H200 pilot (every group's rewards alike: no correctness signal to learn from).
        train_split: Split the training tasks come from.
        train_limit: Use the first N tasks of the training split (0: all).
        eval_splits: Held-out splits every checkpoint is evaluated on.
        eval_limit: Evaluate on N tasks of each held-out split, spread over its families (0: all).
        eval_group: Samples per task in evaluation (pass@1 is their mean).
        backend: Grading backend of training and evaluation (cuda for speedups).
        generator: Training's generator (merged, transformers or vllm; vllm where it is installed).
        static_cache: Training's transformers generators and transformers evaluations decode with a
            static KV cache (compiled on a GPU; ``TransformersPolicy``).
        eval_policy: The evaluation's policy (vllm or transformers).
        source_tokens_only: Training and evaluation sample only tokens of printable ASCII, tabs and
            newlines (``Sampling.source_tokens_only``). Off: as the committed seeds 0 and 1 ran.
        gpus: GPUs to use (jobs are pinned to one each).
        jobs_per_gpu: Jobs that share a GPU at once. Measured on one H200 with ten jobs of the
            135M model (transformers, overlapped rollouts): each made about 38 new tokens/s, 380 in
            all, against 1,333 for one process generating 256 sequences per call; batch within one
            job (``rollout``) before sharing a GPU between jobs.
        rollout: The training runs' rollout mode (GRPOConfig.rollout: batched or overlapped).
        tensorboard: Training runs also write TensorBoard events (needs the tensorboard package).
        max_minutes: Stop starting jobs past this budget (0: none); re-run to continue.
        eval_minutes: Budget needed to start an evaluation job (it is killed at the deadline otherwise).
        train_minutes: Budget needed to start a training job (loading, engine start-up and one step).
        merge: Earlier results of the same ablation (JSON) to combine with this run's: the seeds this
            run measured nothing of are taken from it, so seeds can run in separate device sessions
            (``--seeds 0``, then ``--seeds 1 --merge`` the first results). Its settings must match.
    """

    model: str
    out: str = "runs/ablation"
    results: str = "benchmarks/results/grpo_ablation.json"
    arms: tuple[str, ...] = ("speedup_only", "cudaperf_no_ranker", "cudaperf_ranker")
    seeds: tuple[int, ...] = (0, 1)
    steps: int = 20
    turns: int = 2
    group: int = 8
    tasks_per_step: int = 4
    max_tokens: int = 1024
    lr: float = 2e-5
    temperature: float = 0.7
    train_split: str = "train"
    train_limit: int = 0
    eval_splits: tuple[str, ...] = ("validation", "test")
    eval_limit: int = 64
    eval_group: int = 4
    backend: str = "cuda"
    generator: str = "merged"
    static_cache: bool = False
    eval_policy: str = "vllm"
    source_tokens_only: bool = False
    gpus: int = 1
    jobs_per_gpu: int = 1
    rollout: str = "batched"
    tensorboard: bool = True
    max_minutes: float = 0.0
    eval_minutes: float = 4.0
    train_minutes: float = 3.0
    merge: str = ""

    def __post_init__(self) -> None:
        unknown = [a for a in self.arms if a not in ARMS]
        if unknown:
            raise ValueError(f"unknown arms {unknown}; expected some of {', '.join(ARMS)}")
        if not self.seeds or self.gpus < 1 or self.jobs_per_gpu < 1 or self.steps < 1:
            raise ValueError("need at least one seed, one GPU, one job per GPU and one step")


@dataclass
class Job:
    """One subprocess: its command, the file that marks it done, and the jobs it waits for."""

    name: str
    command: list[str]
    done_marker: Path
    after: tuple[str, ...] = ()
    trains: bool = False
    log: Path = field(default=Path("job.log"))

    @property
    def done(self) -> bool:
        return self.done_marker.exists()


def run_dir(config: AblationConfig, arm: str, seed: int) -> Path:
    return Path(config.out) / "runs" / arm / f"seed-{seed}"


def eval_dir(config: AblationConfig, which: str, seed: int) -> Path:
    return Path(config.out) / "eval" / which / f"seed-{seed}"


def train_command(config: AblationConfig, arm: str, seed: int) -> list[str]:
    """The ``python -m agents.grpo.trainer`` command of one (arm, seed) run (budget appended at launch)."""
    preset, ranker = ARMS[arm]
    return [sys.executable, "-m", "agents.grpo.trainer", "--out", str(run_dir(config, arm, seed)),
            "--model", config.model, "--split", config.train_split, "--limit", str(config.train_limit),
            "--preset", preset, "--ranker" if ranker else "--no-ranker", "--turns", str(config.turns),
            "--group", str(config.group), "--tasks-per-step", str(config.tasks_per_step),
            "--steps", str(config.steps), "--seed", str(seed), "--max-tokens", str(config.max_tokens),
            "--lr", str(config.lr), "--temperature", str(config.temperature),
            "--backend", config.backend, "--generator", config.generator,
            "--rollout", config.rollout, "--save-every", "1", "--keep-checkpoints", "1", "--no-progress",
            "--tensorboard" if config.tensorboard else "--no-tensorboard",
            "--static-cache" if config.static_cache else "--no-static-cache", *_source_tokens_flag(config)]  # fmt: skip


def _source_tokens_flag(config: AblationConfig) -> list[str]:
    return ["--source-tokens-only" if config.source_tokens_only else "--no-source-tokens-only"]


def eval_command(config: AblationConfig, which: str, seed: int) -> list[str]:
    """The ``cudaperf evaluate`` command of the start model (``which="start"``) or an arm's final checkpoint.

    Every held-out split in one command (one model load, one generation call per turn for all
    of them); the report keeps each split's figures (``per_split``).
    """
    splits = [arg for split in config.eval_splits for arg in ("--split", split)]
    batch = config.eval_limit * len(config.eval_splits) if config.eval_limit else 64
    command = [sys.executable, "-m", "cudaperf_env.cli", "evaluate", *splits,
               "--limit", str(config.eval_limit), "--spread", "--policy", config.eval_policy,
               "--model", config.model,
               "--backend", config.backend, "--turns", str(config.turns), "--group", str(config.eval_group),
               "--batch-tasks", str(batch), "--seed", str(seed), "--max-tokens", str(config.max_tokens),
               "--out-dir", str(eval_dir(config, which, seed)), "--no-plots", *_source_tokens_flag(config)]  # fmt: skip
    if which != "start":
        command += ["--adapter", str(run_dir(config, which, seed) / "final")]
    if config.static_cache and config.eval_policy == "transformers":
        command.append("--static-cache")
    return command


def plan(config: AblationConfig) -> list[Job]:
    """Every job of the ablation, in launch order: start evaluations, training runs, final evaluations."""
    logs = Path(config.out) / "logs"
    jobs = []
    for seed in config.seeds:
        report = eval_dir(config, "start", seed) / "report.json"
        jobs.append(Job(f"eval-start-s{seed}", eval_command(config, "start", seed), report,
                        log=logs / f"eval-start-s{seed}.log"))  # fmt: skip
    for arm in config.arms:
        for seed in config.seeds:
            name = f"train-{arm}-s{seed}"
            jobs.append(Job(name, train_command(config, arm, seed), run_dir(config, arm, seed) / "final", trains=True,
                            log=logs / f"{name}.log"))  # fmt: skip
    for arm in config.arms:
        for seed in config.seeds:
            jobs.append(Job(f"eval-{arm}-s{seed}", eval_command(config, arm, seed),
                            eval_dir(config, arm, seed) / "report.json", after=(f"train-{arm}-s{seed}",),
                            log=logs / f"eval-{arm}-s{seed}.log"))  # fmt: skip
    return jobs


def run_jobs(jobs: Sequence[Job], gpus: int, max_minutes: float, eval_minutes: float, train_minutes: float = 3.0,
             started: float | None = None, jobs_per_gpu: int = 1, retries: int = 1) -> dict[str, str]:  # fmt: skip
    """Run pending jobs, ``gpus * jobs_per_gpu`` at a time, within the budget; returns each job's state.

    A job starts only with ``train_minutes`` (training) or ``eval_minutes`` left; a training job
    gets the time left as its own ``--max-minutes`` (it checkpoints every step); any job still
    running at the deadline is killed (a training run loses at most its current step). A job
    that fails is started again up to ``retries`` times (a training run resumes from its last
    checkpoint: a run that ran out of GPU memory beside others need not wait for the next command).
    States: ``done`` (finished now or before), ``failed`` (exit status not 0, retries spent),
    ``incomplete`` (a training run that stopped at its budget, or a job killed at the deadline),
    ``pending``.
    """
    start = time.monotonic() if started is None else started
    deadline = start + max_minutes * 60 if max_minutes > 0 else float("inf")
    state = {j.name: "done" if j.done else "pending" for j in jobs}
    attempts = dict.fromkeys(state, 0)
    free = [gpu for _ in range(jobs_per_gpu) for gpu in range(gpus)]  # slots, spread over the GPUs
    running: dict[str, tuple[subprocess.Popen[bytes], int, Job]] = {}
    while True:
        for name, (proc, gpu, job) in list(running.items()):
            killed = proc.poll() is None and time.monotonic() > deadline
            if killed:
                proc.kill()  # past the deadline: an evaluation reruns next time, a run resumes
                proc.wait()
            if proc.poll() is not None:
                failed = proc.returncode and not killed
                state[name] = "done" if job.done else ("failed" if failed else "incomplete")
                if state[name] == "failed" and attempts[name] <= retries:
                    state[name] = "pending"  # again, while time is left
                free.append(gpu)
                del running[name]
        left = (deadline - time.monotonic()) / 60
        for job in jobs:
            if not free or state[job.name] != "pending" or any(state[a] != "done" for a in job.after):
                continue
            if left < (train_minutes if job.trains else eval_minutes):
                continue
            gpu = free.pop(0)
            attempts[job.name] += 1
            command = job.command + (["--max-minutes", f"{left - 0.5:.2f}"] if job.trains and left < 1e9 else [])
            job.log.parent.mkdir(parents=True, exist_ok=True)
            with job.log.open("ab") as log:
                log.write(f"$ {shlex.join(command)}\n".encode())
                proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=job_env(gpu))
            running[job.name] = (proc, gpu, job)
            state[job.name] = "running"
        if not running:
            return state
        time.sleep(1.0)


def job_env(gpu: int) -> dict[str, str]:
    """A job's environment: pinned to ``gpu``; PyTorch's allocator growing its blocks in place, so that jobs
    sharing the GPU fragment less of it (unless the caller chose other allocator settings)."""
    return {**os.environ, "CUDA_VISIBLE_DEVICES": str(gpu),
            "PYTORCH_CUDA_ALLOC_CONF": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")}


def device_info() -> dict[str, str]:
    """The GPU card and driver (nvidia-smi), or that there was none."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30, check=True).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return {"card": "none", "driver": "none"}
    card, _, driver = out.splitlines()[0].partition(",")
    return {"card": card.strip(), "driver": driver.strip()}


EXPERIMENT = "grpo_reward_ablation"
"""The results file's ``experiment``: what ``--merge`` accepts."""

SAME_IN_MERGED = ("steps", "turns", "group", "tasks_per_step", "max_tokens", "lr", "temperature", "train_split",
                  "train_limit", "eval_splits", "eval_limit", "eval_group", "backend",
                  "source_tokens_only", "start")  # fmt: skip
"""Settings that results combined with ``--merge`` must share (the rest, such as GPUs, may differ)."""

SETTING_BEFORE_IT_EXISTED = {"source_tokens_only": False, "start": "f1bd4e47eb37488d"}
"""What results written before a setting existed ran with (``start``: the interim SFT adapter of
2026-12-02, step 800, merged into the embedded model; agents/data/smollm2-sft until 2026-12-07)."""


class MergeMismatchError(ValueError):
    """Results given to ``--merge`` were made with other settings."""


def check_mergeable(earlier: Mapping[str, Any], config: Mapping[str, Any]) -> None:
    """Raise :class:`MergeMismatchError` where results made with ``config`` could not join ``earlier`` (pure)."""
    def setting(of: Mapping[str, Any], key: str) -> Any:
        return of.get(key, SETTING_BEFORE_IT_EXISTED.get(key))

    differ = [k for k in SAME_IN_MERGED if setting(earlier.get("config", {}), k) != setting(config, k)]
    if earlier.get("experiment") != EXPERIMENT or differ:
        raise MergeMismatchError(f"the results to merge were made with other settings ({', '.join(differ)}): "
                                 "run this session with the same values, or write to a new results file")  # fmt: skip


def merged(earlier: dict[str, Any], now: dict[str, Any]) -> dict[str, Any]:
    """``now``'s results with ``earlier``'s seeds added where ``now`` measured nothing of them (pure)."""
    check_mergeable(earlier, now["config"])
    before = {a["name"]: a for a in earlier["arms"]}
    arms = [merge_arm(before[a["name"]], a) if a["name"] in before else a for a in now["arms"]]
    arms += [a for name, a in before.items() if name not in {b["name"] for b in now["arms"]}]  # arms run only before
    jobs = {**earlier["jobs"], **now["jobs"]}
    seeds = sorted({s for a in arms for s in a["seeds"]})
    commands = [*earlier.get("commands", [earlier["command"]]), now["command"]]
    return {**now, "commands": commands, "complete": all(v == "done" for v in jobs.values()), "jobs": jobs,
            "config": {**now["config"], "seeds": seeds}, "arms": arms}  # fmt: skip


def results_config(config: AblationConfig) -> dict[str, Any]:
    """The configuration as the results file keeps it (JSON types)."""
    return {**asdict(config), "arms": list(config.arms), "seeds": list(config.seeds),
            "eval_splits": list(config.eval_splits), "start": start_identity(config.model)}  # fmt: skip


def write_results(config: AblationConfig, state: dict[str, str], command: str) -> dict[str, Any]:
    """``config.results`` (JSON, whatever is finished so far) and the training curves next to it."""
    runs, evals = Path(config.out) / "runs", Path(config.out) / "eval"
    arms = [arm_result(a, *ARMS[a], config.seeds, config.steps, runs, evals, config.eval_splits) for a in config.arms]
    results: dict[str, Any] = {
        "experiment": EXPERIMENT,
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d"),
        "device": device_info(),
        "command": command,
        "complete": all(s == "done" for s in state.values()),
        "jobs": state,
        "config": results_config(config),
        "arms": arms,
    }
    if config.merge:
        results = merged(json.loads(Path(config.merge).read_text(encoding="utf-8")), results)
    results["comparisons"] = comparisons(results["arms"])  # after the merge: over every seed measured
    path = Path(config.results)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    if any(entry.get("curve") for arm in results["arms"] for entry in arm["per_seed"]):
        plot_curves(results["arms"], path.with_name(path.stem + "_curves.png"))
    return results


def comparison_table(found: Sequence[Mapping[str, Any]]) -> Any:
    """The paired comparisons as a rich table: differences with their task-level 95% intervals and sign tests."""
    from rich.table import Table

    table = Table(title="held-out, paired by seed and task (a - b; 95% interval over tasks; sign test p)")
    for column in ("a", "b", "seeds", "tasks", "samples", "pass@1", "95% CI", "p", "fast_1", "95% CI", "p"):
        table.add_column(column, justify="left" if column in ("a", "b") else "right", no_wrap=True)
    for row in found:
        cells = [cell for m in ("pass_at_1", "fast_1") for cell in (
            f"{row[m]['difference']:+.3f}", f"[{row[m]['ci95'][0]:+.3f}, {row[m]['ci95'][1]:+.3f}]",
            f"{row[m]['p_value']:.2f}")]  # fmt: skip
        table.add_row(row["a"], row["b"], ",".join(map(str, row["seeds"])), str(row["tasks"]), str(row["samples"]),
                      *cells)  # fmt: skip
    return table


def main(argv: list[str] | None = None) -> int:
    """``python -m agents.grpo.ablation``: every :class:`AblationConfig` field is a flag."""
    from agents.grpo.config import field_help

    parser = argparse.ArgumentParser(prog="python -m agents.grpo.ablation", description=__doc__.split("\n\n")[0])
    helps = field_help(AblationConfig)
    for f in AblationConfig.__dataclass_fields__.values():
        flag, text = f"--{f.name.replace('_', '-')}", helps.get(f.name, "")
        if f.name == "model":
            parser.add_argument(flag, required=True, help=text)
        elif isinstance(f.default, bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=f.default, help=text)
        elif isinstance(f.default, tuple):
            kind = type(f.default[0]) if f.default else str
            parser.add_argument(flag, nargs="+", type=kind, default=list(f.default), help=text)
        else:
            parser.add_argument(flag, type=type(f.default), default=f.default, help=f"{text} (default: %(default)s)")
    parser.add_argument("--dry-run", action="store_true", help="print the jobs' commands and states, run nothing")
    args = vars(parser.parse_args(argv))
    dry = args.pop("dry_run")
    values: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in args.items()}
    config = AblationConfig(**values)
    if config.merge:  # before any job runs: a refusal after a session's training would lose the session
        check_mergeable(json.loads(Path(config.merge).read_text(encoding="utf-8")), results_config(config))
    jobs = plan(config)
    if dry:
        for job in jobs:
            print(f"[{'done' if job.done else 'pending'}] {job.name}: {shlex.join(job.command)}")
        return 0
    state = run_jobs(jobs, config.gpus, config.max_minutes, config.eval_minutes, config.train_minutes,
                     jobs_per_gpu=config.jobs_per_gpu)  # fmt: skip
    command = shlex.join(["python", "-m", "agents.grpo.ablation", *(argv if argv is not None else sys.argv[1:])])
    results = write_results(config, state, command)
    counts = {s: sum(v == s for v in state.values()) for s in sorted(set(state.values()))}
    if results["comparisons"]:
        from rich.console import Console

        # A log file is no terminal: rich would squeeze the table into 80 columns.
        Console(width=None if sys.stdout.isatty() else 160).print(comparison_table(results["comparisons"]))
    print(f"jobs: {counts}; results: {config.results}" + ("" if results["complete"] else
          " (not complete: run the same command again)"))  # fmt: skip
    return 1 if "failed" in state.values() else 0


if __name__ == "__main__":
    raise SystemExit(main())
