"""Multi-turn GRPO for the bundled agent, top to bottom in one file.

One step:

1. sample ``tasks_per_step`` tasks (a pure function of seed and step, so a resumed run draws the same ones);
2. roll out ``group`` trajectories of up to ``turns`` replies on each (:func:`agents.rollout.rollout`:
   reply, execution feedback, reply ...), each reply graded by the env's turn function (any
   reward preset) as soon as the generator has finished it (``grade_while_generating``). Tasks run in
   ``rollout_workers`` threads sharing one generator, so one task's replies are graded while
   the next task's are generated, or (``rollout="batched"``) in one generation call per turn;
   the generator's idle time is the step's wait for evaluation;
3. credit every turn with its discounted return and normalize within the task's group
   (:mod:`agents.grpo.advantages`);
4. one sequence per graded turn, only the reply's tokens trained (:mod:`agents.grpo.batch`);
   ``minibatches`` optimizer updates of the clipped surrogate plus an optional k3 KL to the
   start model (:mod:`agents.grpo.loss`), with gradient accumulation over micro-batches and
   bf16 autocast on CUDA;
5. log (``metrics.jsonl``, TensorBoard, rich), write the step's trajectories, checkpoint.

A run stops after ``steps`` steps (writing ``OUT/final``) or, with ``max_minutes``, before a
step that would not fit the budget, with a checkpoint: the same command resumes it exactly
(weights, optimizer, step, RNG; task draws and sampling seeds derive from seed and step).

Run: ``cudaperf train grpo --split train --preset cudaperf --turns 2 --group 4 --steps 50 --out runs/grpo``.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import random
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from agents.card import card_hold, share_card_with_timings, timings_lock
from agents.errors import MissingDependencyError
from agents.grpo.advantages import group_advantages
from agents.grpo.batch import Sample, chunks, collate, turn_sample
from agents.grpo.checkpoint import check_same_run, latest_checkpoint, load_checkpoint, save_checkpoint
from agents.grpo.config import IDENTITY, GRPOConfig, add_config_args, config_from_args
from agents.grpo.generation import GENERATORS, Generator, SerialPolicy, SharedModelGenerator, conversation_key
from agents.grpo.logbook import Logbook, rollout_metrics, timing
from agents.grpo.loss import completion_logprobs, grpo_loss, token_weights
from agents.policies.base import Policy, Sampling
from agents.records import TurnRecord, write_records
from agents.report import trajectories
from agents.rollout import RolloutConfig, rollout, rollouts
from cudaperf_env.backends import make_backend
from cudaperf_env.evaluate import STAGES, Evaluator, rank
from cudaperf_env.tasks.schema import Task
from cudaperf_env.turn import Grader


@dataclass(frozen=True)
class RunResult:
    """How a run ended: ``stopped`` is ``done`` (all steps) or ``budget`` (resume with the same command)."""

    step: int
    stopped: str
    out: Path
    seconds: float


def train(config: GRPOConfig, *, model: Any = None, tokenizer: Any = None, tasks: Sequence[Task] | None = None,
          policy: Policy | None = None) -> RunResult:  # fmt: skip
    """Run (or resume) GRPO.

    Args:
        config: The run.
        model: A loaded start model (default: loaded from ``config.model``); ``tokenizer`` with it.
        tokenizer: Its tokenizer.
        tasks: The training tasks (default: from ``config.task``, ``task_dir`` or ``split``).
        policy: Generate with this policy instead of ``config.generator`` (its token ids, if any, are trained).
    """
    started = time.perf_counter()
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    device = ("cuda" if torch.cuda.is_available() else "cpu") if config.device == "auto" else config.device
    seed_everything(config.seed)

    # Tasks and the grader: the env's turn function, with or without the ranker stage.
    tasks = list(tasks) if tasks is not None else training_tasks(config)
    skipped = () if config.ranker else (rank.__name__,)
    if config.ray:
        from cudaperf_env.integrations.ray import EvaluatorPool

        address = None if config.ray == "local" else config.ray
        evaluator: Any = EvaluatorPool(config.backend, address=address, skip_stages=skipped)
    else:
        evaluator = Evaluator(make_backend(config.backend), stages=[s for s in STAGES if s.__name__ not in skipped])
    grader = Grader(evaluator, config.reward())

    # The model: LoRA on the start model (the start model is then the KL reference) or a full fine-tune.
    if model is None:
        model, tokenizer = load_model(config.model)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    reference = copy.deepcopy(model).eval() if config.kl_beta > 0 and config.lora_r == 0 else None
    model = trainable(model, config).to(device)
    if reference is not None:
        reference.to(device).requires_grad_(False)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay)

    # Resume from the latest checkpoint of this run directory, if any.
    step = 0
    ckpt = latest_checkpoint(out)
    if ckpt is not None:
        check_same_run(ckpt, config.as_dict(), IDENTITY)
        step = load_checkpoint(ckpt, model, optimizer, lora=config.lora_r > 0).step
    (out / "config.json").write_text(json.dumps(config.as_dict(), indent=2) + "\n", encoding="utf-8")
    if step >= config.steps and (out / "final").is_dir():  # finished before: nothing to build or run
        return RunResult(step, "done", out, time.perf_counter() - started)

    generator: Generator = SharedModelGenerator(policy) if policy is not None else GENERATORS[config.generator](
        model, tokenizer, device=device, name=config.model or "embedded", model_path=config.model, out=out,
        lora=config.lora_r > 0, memory=config.vllm_memory, seed=config.seed, context_window=None,
        static_cache=config.static_cache)  # fmt: skip
    card = timings_lock(evaluator, device) if config.timings_alone else None  # timings alone on a shared card
    if card is not None and policy is None:
        share_card_with_timings(generator.policy, evaluator)
    serial = SerialPolicy(generator.policy)
    book = Logbook(out, config.steps, config.tensorboard, config.progress, step)
    if ckpt is not None:
        book.note(f"resumed from {ckpt} at step {step}")
    stopped, last_step_s, saved_at = "done", 0.0, step
    try:
        while step < config.steps:
            if over_budget(started, last_step_s, config.max_minutes, ran_one=last_step_s > 0):
                stopped = "budget"
                break
            t0 = time.perf_counter()

            # 1-2. Sample tasks and roll out; generation of one task overlaps evaluation of another.
            batch = sample_tasks(tasks, config.tasks_per_step, config.seed, step)
            model.eval()
            generator.sync(model, step)
            records, rollout_s = collect(serial, batch, grader, config, step)
            gen_s = serial.busy_seconds
            memory = {"memory/generation_peak_gb": release_gpu_memory()}

            # 3-4. Advantages, sequences, optimizer updates.
            t1 = time.perf_counter()
            samples = build_samples(records, tokenizer, serial.token_ids, config)
            model.train()
            torch.manual_seed(config.seed * 1_000_003 + step)  # dropout etc.: the same after a resume
            lr = config.lr * min(1.0, (step + 1) / config.warmup) if config.warmup else config.lr
            with card_hold(card, device) as hold:
                stats = optimize(model, reference, optimizer, params, samples, config, device, tokenizer.pad_token_id,
                                 lr, between=hold.let_through if hold is not None else None)  # fmt: skip
            opt_s = time.perf_counter() - t1
            memory["memory/optimization_peak_gb"] = release_gpu_memory()
            step += 1

            # 5. Log, write the trajectories, checkpoint.
            step_s = time.perf_counter() - t0
            last_step_s = step_s
            scalars = {**rollout_metrics(records), **stats, **timing(records, rollout_s, gen_s, opt_s, step_s)}
            scalars.update(memory)
            book.log(step, scalars)
            write_trajectories(out, step, records)
            if step % config.save_every == 0 or step == config.steps:
                save_checkpoint(out, step, model, tokenizer, optimizer, config.as_dict(), config.keep_checkpoints)
                saved_at = step
        if saved_at != step:
            save_checkpoint(out, step, model, tokenizer, optimizer, config.as_dict(), config.keep_checkpoints)
    finally:
        book.close()
    if stopped == "done":
        model.save_pretrained(out / "final")
        tokenizer.save_pretrained(out / "final")
    return RunResult(step, stopped, out, time.perf_counter() - started)


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch."""
    import numpy as np

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def training_tasks(config: GRPOConfig) -> list[Task]:
    """The tasks of ``config.task``, ``config.task_dir`` or ``config.split`` (first ``limit`` of them)."""
    from cudaperf_env.dataset import find_task  # starter tasks, task files and the dataset's ids
    from cudaperf_env.tasks import load_tasks

    if config.task:
        tasks = [find_task(t, config.task_dir or None) for t in config.task]
    elif config.task_dir:
        tasks = list(load_tasks(config.task_dir).values())
    else:
        from cudaperf_env.dataset import load_dataset

        tasks = list(load_dataset(config.split, labels=False).values())
    return tasks[: config.limit] if config.limit else tasks


def load_model(path: str) -> tuple[Any, Any]:
    """A start model and its tokenizer from a local directory or .gguf file (default: the embedded model)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from agents.model import default_model_path, split_model_path

    directory, gguf = split_model_path(path or default_model_path())
    kwargs: dict[str, Any] = {"local_files_only": True, **({"gguf_file": gguf} if gguf else {})}
    tokenizer = AutoTokenizer.from_pretrained(directory, **kwargs)
    model = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32, **kwargs)  # bf16 via autocast
    return model, tokenizer


def trainable(model: Any, config: GRPOConfig) -> Any:
    """A LoRA-wrapped model (``lora_r > 0``) or the model itself, every parameter trainable."""
    if config.gradient_checkpointing:
        model.gradient_checkpointing_enable()
        model.enable_input_require_grads()
    if config.lora_r == 0:
        return model.requires_grad_(True)
    try:
        import peft
    except ImportError as exc:
        raise MissingDependencyError(f"LoRA needs peft: pip install 'cudaperf-env[agent]' ({exc})") from exc
    lora = peft.LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha, lora_dropout=config.lora_dropout,
                           target_modules="all-linear", task_type="CAUSAL_LM")  # fmt: skip
    return peft.get_peft_model(model, lora)


def sample_tasks(tasks: Sequence[Task], k: int, seed: int, step: int) -> list[Task]:
    """``k`` distinct tasks (with replacement only when there are fewer), fixed by seed and step."""
    rng = random.Random(seed * 1_000_003 + step)
    return rng.sample(list(tasks), k) if k <= len(tasks) else [rng.choice(list(tasks)) for _ in range(k)]


def rollout_seed(seed: int, step: int, index: int) -> int:
    """The rollout seed of a step's ``index``-th task (generation seeds and graded inputs derive from it)."""
    return (seed * 1_000_003 + step) * 1_000 + index


def collect(policy: SerialPolicy, tasks: Sequence[Task], grader: Grader, config: GRPOConfig,
            step: int) -> tuple[list[TurnRecord], float]:  # fmt: skip
    """Every task's group rolled out (``config.rollout``: overlapped or batched); returns the records and wall time."""
    policy.reset()
    sampling = Sampling(temperature=config.temperature, top_p=config.top_p, max_tokens=config.max_tokens,
                        repetition_penalty=config.repetition_penalty,
                        source_tokens_only=config.source_tokens_only)  # fmt: skip

    def rollout_config(index: int) -> RolloutConfig:
        return RolloutConfig(turns=config.turns, group=config.group, sampling=sampling, gamma=config.gamma,
                             seed=rollout_seed(config.seed, step, index), stop_when_correct=config.stop_when_correct,
                             reward=grader.reward, grade_while_generating=config.grade_while_generating)  # fmt: skip

    def one(index: int, task: Task) -> list[TurnRecord]:
        return rollout(policy, task, grader.evaluator, rollout_config(index))

    start = time.perf_counter()
    if config.rollout == "batched":  # one generation call per turn over every task, its replies graded as they end
        return rollouts(policy, tasks, grader.evaluator, rollout_config(0)), time.perf_counter() - start
    with ThreadPoolExecutor(max_workers=config.rollout_workers) as pool:
        done = list(pool.map(one, range(len(tasks)), tasks))
    return [r for group in done for r in group], time.perf_counter() - start


def build_samples(records: Sequence[TurnRecord], tokenizer: Any, token_ids: dict[tuple[str, str], tuple[int, ...]],
                  config: GRPOConfig) -> list[Sample]:  # fmt: skip
    """One training sequence per graded turn, with its group-normalized discounted-return advantage."""
    by_task: dict[tuple[str, int], list[list[TurnRecord]]] = {}
    for (task_id, seed, _), turns in trajectories(records).items():
        by_task.setdefault((task_id, seed), []).append(turns)
    samples = []
    for groups in by_task.values():
        scores = [[r.score for r in t] for t in groups]
        advantages = group_advantages(scores, config.gamma, config.advantage, scope=config.advantage_scope)
        for turns, advs in zip(groups, advantages, strict=True):
            for r, a in zip(turns, advs, strict=True):
                ids = token_ids.get((conversation_key(r.prompt), r.reply))
                samples.append(turn_sample(tokenizer, r.prompt, r.reply, a, ids, task_id=r.task_id, turn=r.turn))
    return [s for s in samples if s.completion_tokens > 0]


def optimize(model: Any, reference: Any, optimizer: Any, params: list[Any], samples: Sequence[Sample],
             config: GRPOConfig, device: str, pad_id: int, lr: float,
             between: Callable[[], object] | None = None) -> dict[str, float]:  # fmt: skip
    """``minibatches`` optimizer updates over the step's sequences; returns the loss terms' scalars.

    ``between`` is called after each micro-batch (to let a waiting timing have the card).
    """
    if not samples:  # every reply was empty: nothing to train on this step
        return {"lr": lr, "sequences": 0.0, "skipped": 1.0}
    if config.kl_beta == 0 and all(s.advantage == 0 for s in samples):
        # Every group's replies scored alike: the gradient is exactly 0, so the passes would be wasted
        # (an AdamW step on it would still move the weights by momentum alone).
        return {"lr": lr, "sequences": float(len(samples)), "skipped": 1.0, "advantage/abs_mean": 0.0}
    for group in optimizer.param_groups:
        group["lr"] = lr
    size = math.ceil(len(samples) / config.minibatches)
    parts = [list(r) for r in chunks(len(samples), size)]
    plan = [[[part[j] for j in mb] for mb in chunks(len(part), config.micro_batch)] for part in parts]
    fixed = frozen_logprobs(model, reference, samples, plan, config, device, pad_id, between)
    totals = {"loss/total": 0.0, "loss/policy": 0.0, "kl": 0.0, "entropy": 0.0, "clip_fraction": 0.0,
              "grad_norm": 0.0}  # fmt: skip
    for part, micro in zip(parts, plan, strict=True):
        weights = token_weights([samples[i].completion_tokens for i in part], config.loss_aggregation,
                                config.max_tokens)  # fmt: skip
        weight_of = dict(zip(part, weights, strict=True))
        for idx in micro:
            batch = collate([samples[i] for i in idx], pad_id, device)
            logp, entropy = forward_logprobs(model, batch, config, device)
            old, ref = fixed.get(tuple(idx), (logp.detach(), None))
            w = torch.tensor([weight_of[i] for i in idx], device=logp.device)
            terms = grpo_loss(logp, old, ref, batch["advantages"], batch["mask"], w, entropy,
                              clip_low=config.clip_low, clip_high=config.clip_high, kl_beta=config.kl_beta)  # fmt: skip
            terms.loss.backward()
            if between is not None:
                between()
            for key, value in (("loss/total", float(terms.loss.detach())), ("loss/policy", terms.policy),
                               ("kl", terms.kl), ("entropy", terms.entropy), ("clip_fraction", terms.clip_fraction)):
                totals[key] += value / len(parts)
        norm = torch.nn.utils.clip_grad_norm_(params, config.max_grad_norm if config.max_grad_norm > 0 else math.inf)
        totals["grad_norm"] += float(norm) / len(parts)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    advs = [abs(s.advantage) for s in samples]
    totals.update({"lr": lr, "sequences": float(len(samples)), "advantage/abs_mean": sum(advs) / len(advs),
                   "skipped": 0.0, "tokens/trained": float(sum(s.completion_tokens for s in samples))})  # fmt: skip
    return totals


def forward_logprobs(model: Any, batch: dict[str, Any], config: GRPOConfig, device: str) -> tuple[Any, Any]:
    """Per-token log-probabilities and entropies ``(B, T)`` of a collated batch.

    Only the positions from the batch's first reply token on are projected to the vocabulary
    (``logits_to_keep``); the rest are 0 (masked out of the loss anyway). A multi-turn prompt is most
    of a sequence and the vocabulary is large (49,152 for SmolLM2), so this halves or better the
    step's largest tensors: with full logits, four training runs sharing one 80 GB card ran out of memory.
    """
    ids, width = batch["input_ids"], batch["input_ids"].shape[1]
    keep = width - first_scored_position(batch["mask"]) + 1
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.startswith("cuda") and config.bf16):
        logits = model(input_ids=ids, attention_mask=batch["attention_mask"], logits_to_keep=keep).logits
    logp, entropy = completion_logprobs(logits, ids[:, width - keep:], config.temperature)  # (B, keep)
    return left_pad(logp, width), left_pad(entropy, width)


def first_scored_position(mask: Any) -> int:
    """The first position any row's mask scores (at least 1: position 0 has no context)."""
    scored = mask.any(dim=0).nonzero()
    return max(1, int(scored[0])) if len(scored) else mask.shape[1] - 1


def left_pad(values: Any, width: int) -> Any:
    """``(B, K)`` values as the last ``K`` of ``width`` columns, zeros before."""
    return torch.nn.functional.pad(values, (width - values.shape[1], 0))


@torch.no_grad()
def frozen_logprobs(model: Any, reference: Any, samples: Sequence[Sample], plan: list[list[list[int]]],
                    config: GRPOConfig, device: str, pad_id: int,
                    between: Callable[[], object] | None = None) -> dict[tuple[int, ...], tuple[Any, Any]]:  # fmt: skip
    """Per micro-batch, the sampling policy's log-probabilities (needed when a step makes several updates)
    and the reference's (when ``kl_beta > 0``); empty when neither is needed. ``between`` as in :func:`optimize`."""
    if config.minibatches == 1 and config.kl_beta == 0:
        return {}
    out = {}
    for idx in (tuple(mb) for micro in plan for mb in micro):
        batch = collate([samples[i] for i in idx], pad_id, device)
        old = forward_logprobs(model, batch, config, device)[0]
        ref = None
        if config.kl_beta > 0:
            if reference is not None:
                ref = forward_logprobs(reference, batch, config, device)[0]
            else:
                with model.disable_adapter():  # LoRA: the start model is the model without the adapter
                    ref = forward_logprobs(model, batch, config, device)[0]
        out[idx] = (old, ref)
        if between is not None:
            between()
    return out


def release_gpu_memory() -> float:
    """The phase's peak GPU memory held by this process (GB; NaN without CUDA), then the cached blocks back.

    PyTorch's allocator keeps what a phase once used: generation's and the optimizer's peaks
    differ, and on a GPU shared by several runs (the ablation's ``--jobs-per-gpu``) one run's
    cache is memory the others run out of (the third pilot: 25 and 38 GB held by two runs while
    the third failed to get 1 GB). So each phase gives its cache back when it ends.
    """
    if not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return math.nan
    peak = torch.cuda.max_memory_reserved() / 2**30
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    return peak


def over_budget(started: float, last_step_s: float, max_minutes: float, ran_one: bool) -> bool:
    """Whether another step (estimated as long as the last) would overrun ``max_minutes`` (0: never)."""
    if max_minutes <= 0 or not ran_one:
        return False
    return time.perf_counter() - started + 1.1 * last_step_s > max_minutes * 60


def write_trajectories(out: Path, step: int, records: Sequence[TurnRecord]) -> Path:
    """The step's turn records as ``OUT/trajectories/step-<step>.jsonl`` (``cudaperf evaluate --trajectories``)."""
    path = out / "trajectories" / f"step-{step:06d}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        write_records(records, f)
    return path


def main(argv: list[str] | None = None) -> int:
    """``python -m agents.grpo.trainer``: the same flags as ``cudaperf train grpo``."""
    parser = argparse.ArgumentParser(prog="python -m agents.grpo.trainer", description=__doc__.split("\n\n")[0])
    add_config_args(parser)
    return run_cli(parser.parse_args(argv))


def run_cli(args: argparse.Namespace) -> int:
    """Train from parsed flags; prints how the run ended (exit 0 for a finished or budget-stopped run)."""
    config = config_from_args(args)
    result = train(config)
    if result.stopped == "budget":
        print(f"stopped at step {result.step}/{config.steps} after {result.seconds / 60:.1f} min (--max-minutes "
              f"{config.max_minutes}); checkpoint written: run the same command again to resume", flush=True)
    else:
        print(f"done: {result.step} steps, final weights in {result.out / 'final'}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
