"""The GRPO run's configuration: one frozen dataclass, its flags, and its TOML/YAML file form.

Every field of :class:`GRPOConfig` is a ``--flag`` of ``cudaperf train grpo``
(underscores as dashes) whose ``--help`` text is the field's line in the class
docstring, and a key of a config file (``--config run.toml`` or ``.yaml``).
Precedence: defaults, then the file, then flags given on the command line.
"""

from __future__ import annotations

import argparse
import difflib
import re
from dataclasses import MISSING, asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

import yaml

from agents.grpo.advantages import ADVANTAGES, SCOPES
from agents.grpo.aggregation import AGGREGATIONS
from cudaperf_env.reward import PRESETS, RewardConfig


@dataclass(frozen=True)
class GRPOConfig:
    """One GRPO run.

    Attributes:
        out: Run directory: checkpoints, metrics.jsonl, TensorBoard events, trajectories, final adapter.
        model: Start model: a local model directory or .gguf file (default: the embedded SmolLM2-135M).
        split: Dataset split the training tasks come from (train, validation, test).
        task: Train on these task ids (starter or dataset) instead of a split.
        task_dir: Train on every task of this directory instead of a split.
        limit: Use only the first N tasks (0: all).
        preset: Reward preset of the env's turn function (cudaperf, speedup_only, cuda_agent, kevin).
        ranker: Run the learned ranker (the cudaperf preset's ranker term); off drops the stage and the term.
        backend: Where replies are graded: cpu, cuda or auto.
        ray: Grade on a Ray evaluator pool ("" off; a cluster address, "auto", or "local" to start one here).
        turns: Replies per trajectory (the first plus refinements from execution feedback).
        group: Trajectories per task (G of a GRPO group).
        tasks_per_step: Tasks (groups) sampled per optimizer step.
        steps: Optimizer steps of the whole run (a resumed run continues to this many).
        gamma: Discount of later turns' scores in each turn's return (Kevin used 0.4).
        stop_when_correct: End a trajectory at its first correct reply (else refine for speed to --turns).
        advantage: Group normalization: grpo (divide by the std) or drgrpo (mean only).
        advantage_scope: Compare a turn's return with the group's at the same turn (turn) or with all of them (group).
        loss_aggregation: token (mean over the batch's tokens), sequence (mean of sequence means) or drgrpo.
        clip_low: Lower clip range of the importance ratio.
        clip_high: Upper clip range of the importance ratio (raise it for DAPO's clip-higher).
        kl_beta: Weight of the k3 KL to the start model (0: no reference pass).
        minibatches: Optimizer updates per step, each on a slice of the step's sequences.
        micro_batch: Sequences per forward/backward pass (gradient accumulation over a minibatch).
        lr: AdamW learning rate (constant after warm-up).
        warmup: Linear warm-up steps.
        weight_decay: AdamW weight decay.
        max_grad_norm: Gradient clipping norm (0: off).
        lora_r: LoRA rank; 0 fine-tunes every parameter.
        lora_alpha: LoRA scaling numerator.
        lora_dropout: Dropout on the LoRA path.
        max_tokens: Most new tokens per reply (also drgrpo's normalizer).
        temperature: Sampling temperature (the loss scores tokens under the same temperature).
        top_p: Nucleus sampling mass.
        repetition_penalty: Sampling's repetition penalty (1.0: off; anything else samples off-policy).
        source_tokens_only: Sample only tokens of printable ASCII, tabs and newlines (``Sampling``'s field):
            no reply is refused for a broken multi-byte character. Samples off-policy where the model puts
            mass elsewhere (the loss scores tokens under the whole vocabulary).
        generator: transformers (the trained model samples), merged (a copy with the LoRA adapter merged in,
            refreshed after each step: faster on a GPU) or vllm (an engine serving the LoRA adapter).
        vllm_memory: Fraction of GPU memory the vLLM engine may take.
        static_cache: The transformers and merged generators decode with a static KV cache, compiled
            on a GPU (a compile per distinct shape; see ``TransformersPolicy``).
        rollout: How a step's tasks are rolled out. ``overlapped``: each task in a thread of its own
            (``rollout_workers`` at a time), so one task's replies are graded while another's are
            generated. ``batched``: every task's turn in one generation call (tasks_per_step x group
            sequences), graded concurrently: faster where generation is bound by the per-token
            step rather than by the batch (a small model under transformers on a GPU; docs/grpo.md
            has the figures).
        rollout_workers: Tasks rolled out at once (``overlapped``).
        grade_while_generating: Grade each reply as soon as the generator has finished it (the
            transformers and merged generators tell of each reply at their next stop check), while
            the call's longer replies are still written; off: after the call. Same replies, same grades.
        timings_alone: Where replies are timed on the card the model is on (GPU backend, same device),
            generation and optimization hold the card's lock shared and let each waiting timing
            through between token steps and micro-batches, so no timing runs beside them
            (``agents/card.py``). Off: they run beside timings (faster, noisier speedups).
        device: cpu, cuda or auto.
        bf16: bfloat16 autocast on CUDA (weights stay float32).
        gradient_checkpointing: Trade compute for memory on long sequences.
        save_every: Steps between checkpoints.
        keep_checkpoints: Checkpoints kept (the oldest are deleted).
        max_minutes: Stop after this much wall time with a checkpoint; re-run the same command to resume (0: no limit).
        seed: Seed of task sampling, generation, graded inputs and initialization.
        tensorboard: Write TensorBoard scalars under OUT/tensorboard (needs the tensorboard package).
        progress: Show a rich progress view in the terminal.
    """

    out: str = "runs/grpo"
    model: str = ""
    split: str = "train"
    task: tuple[str, ...] = ()
    task_dir: str = ""
    limit: int = 0
    preset: str = "cudaperf"
    ranker: bool = True
    backend: str = "auto"
    ray: str = ""
    turns: int = 2
    group: int = 4
    tasks_per_step: int = 2
    steps: int = 50
    gamma: float = 0.4
    stop_when_correct: bool = False
    advantage: str = "grpo"
    advantage_scope: str = "turn"
    loss_aggregation: str = "token"
    clip_low: float = 0.2
    clip_high: float = 0.2
    kl_beta: float = 0.0
    minibatches: int = 1
    micro_batch: int = 4
    lr: float = 1e-5
    warmup: int = 0
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.0
    max_tokens: int = 512
    temperature: float = 1.0
    top_p: float = 1.0
    repetition_penalty: float = 1.0
    source_tokens_only: bool = False
    generator: str = "transformers"
    vllm_memory: float = 0.3
    static_cache: bool = False
    rollout: str = "overlapped"
    rollout_workers: int = 4
    grade_while_generating: bool = True
    timings_alone: bool = True
    device: str = "auto"
    bf16: bool = True
    gradient_checkpointing: bool = False
    save_every: int = 10
    keep_checkpoints: int = 2
    max_minutes: float = 0.0
    seed: int = 0
    tensorboard: bool = True
    progress: bool = True

    def __post_init__(self) -> None:
        for name, allowed in CHOICES.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {getattr(self, name)!r}")
        positive = ("turns", "group", "tasks_per_step", "steps", "minibatches", "micro_batch", "max_tokens",
                    "save_every", "keep_checkpoints", "rollout_workers")  # fmt: skip
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {self.gamma}")
        if min(self.clip_low, self.clip_high, self.kl_beta, self.lr, self.max_minutes, self.lora_r) < 0:
            raise ValueError("clip_low, clip_high, kl_beta, lr, max_minutes and lora_r must be >= 0")
        if self.group < 2:
            raise ValueError(f"group must be >= 2: a group of one has no baseline (advantages all 0), got {self.group}")

    def reward(self) -> RewardConfig:
        """The reward configuration of the preset."""
        return RewardConfig(preset=self.preset)

    def as_dict(self) -> dict[str, Any]:
        """The configuration as plain JSON-safe values."""
        data = asdict(self)
        data["task"] = list(self.task)
        return data


CHOICES: dict[str, tuple[str, ...]] = {
    "preset": tuple(PRESETS), "advantage": tuple(ADVANTAGES), "advantage_scope": SCOPES,
    "loss_aggregation": tuple(AGGREGATIONS), "rollout": ("overlapped", "batched"),
    "generator": ("transformers", "merged", "vllm"), "backend": ("cpu", "cuda", "auto"),
    "split": ("train", "validation", "test"), "device": ("cpu", "cuda", "auto"),
}  # fmt: skip
"""The allowed values of the fields that take a name."""

# Fields whose change makes a checkpoint a different run (anything else may change on resume).
IDENTITY = ("model", "split", "task", "task_dir", "limit", "preset", "ranker", "group", "turns", "tasks_per_step",
            "seed", "advantage", "advantage_scope", "loss_aggregation", "lora_r", "generator", "rollout")  # fmt: skip


def field_help(cls: type = GRPOConfig) -> dict[str, str]:
    """Each field's line of the class docstring's ``Attributes:`` section."""
    doc = (cls.__doc__ or "").split("Attributes:", 1)[-1]
    found: dict[str, str] = {}
    name = None
    for line in doc.splitlines():
        match = re.match(r"\s{8}(\w+): (.*)", line)
        if match:
            name = match.group(1)
            found[name] = match.group(2).strip()
        elif name and line.strip():
            found[name] += " " + line.strip()
    return found


def add_config_args(parser: argparse.ArgumentParser) -> None:
    """One flag per field (defaults suppressed, so only flags given override a config file) plus ``--config``."""
    parser.add_argument("--config", help="a TOML or YAML file of these options (keys as field names)")
    helps = field_help()
    for f in fields(GRPOConfig):
        flag = f"--{f.name.replace('_', '-')}"
        text = f"{helps.get(f.name, '')} (default: {f.default!r})".replace("%", "%%")
        if isinstance(f.default, bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=argparse.SUPPRESS, help=text)
        elif isinstance(f.default, tuple):
            parser.add_argument(flag, action="append", default=argparse.SUPPRESS, help=text + "; repeatable")
        else:
            kind = type(f.default) if f.default is not MISSING else str
            parser.add_argument(flag, type=kind, default=argparse.SUPPRESS, help=text, choices=CHOICES.get(f.name))


def read_config_file(path: str | Path) -> dict[str, Any]:
    """The options of a ``.toml``, ``.yaml`` or ``.yml`` file (a table ``[grpo]`` or top-level keys).

    Raises:
        ValueError: An unknown suffix or key (the message suggests the closest field).
    """
    p = Path(path)
    if p.suffix not in (".toml", ".yaml", ".yml"):
        raise ValueError(f"{p}: a config file must be .toml, .yaml or .yml")
    text = p.read_text(encoding="utf-8")
    if p.suffix == ".toml":
        try:
            import tomllib
        except ImportError as exc:  # Python 3.10
            raise ValueError(f"{p}: TOML needs Python 3.11 or newer; write the options as YAML instead") from exc
        data = tomllib.loads(text)
    else:
        data = yaml.safe_load(text) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{p}: expected a mapping of options, got {type(data).__name__}")
    data = data.get("grpo", data)
    known = {f.name for f in fields(GRPOConfig)}
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = str(key).replace("-", "_")
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"{p}: unknown option {key!r}{hint}")
        out[name] = tuple(value) if isinstance(value, list) else value
    return out


def config_from_args(args: argparse.Namespace) -> GRPOConfig:
    """Defaults, overridden by ``--config FILE``, overridden by the flags given."""
    values: dict[str, Any] = {}
    if getattr(args, "config", None):
        values.update(read_config_file(args.config))
    for f in fields(GRPOConfig):
        if hasattr(args, f.name):
            value = getattr(args, f.name)
            values[f.name] = tuple(value) if isinstance(f.default, tuple) else value
    return replace(GRPOConfig(), **values)
