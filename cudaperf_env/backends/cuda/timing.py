"""Timing statistics and plausibility checks: pure functions over measured samples."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np


@dataclass(frozen=True)
class TimingOptions:
    """How hard to try for a stable speedup.

    Attributes:
        warmup: Untimed calls of each implementation first (module load, clocks).
        min_trials: Timed calls of each implementation at least.
        max_trials: And at most.
        budget_s: Wall-clock budget per configuration.
        budget_floor: Timed calls of each implementation even past the budget (a median of
            fewer than 3 samples has no interval; steps keep 1 so slow submissions stay cheap).
        target_rse: Stop once the relative standard error of both medians is below this.
        input_sets: Distinct input sets rotated through the same buffers (defeats caching;
            ``CudaBackend`` requires at least 2 for submissions).
        flush_bytes: L2 flush buffer read before every timed call.
        l2_flush: ``"read"`` (a kernel reads the flush buffer: L2 is left holding clean
            lines, so the timed call pays no write-back of someone else's data) or
            ``"write"`` (a memset of it: the L2 is left dirty).
        deadband: Speedups within ``1 +- deadband`` are reported as 1.
        wall_check_calls: Back-to-back calls timed from the parent's clock per implementation.
        pin_inputs: Page-lock the input sets while uploading them (faster copies).
        check_first: Compare outputs with the reference's on each implementation's first
            calls, which then also serve as its first warmup round, instead of on extra
            calls after timing. For trusted code only (the labeller): a submission could
            cache results across calls, which only a check after timing catches.
        evaluation_budget_s: Seconds of warmup and timed calls per evaluation, shared by its
            timing configurations (each gets ``min(budget_s, what is left)``; ``math.inf``:
            no shared limit). Past it each configuration still makes its first checked round
            and ``budget_floor`` trials, the output check after timing, and a wall-clock
            check shortened to the calls that fit (at least one).
        slow_bound: Stop timing an implementation once its speedup's upper bound is below this
            (``budget.decided_slow``): set it to ``1 / RewardConfig.speedup_clip``, below which
            the reward cannot tell kernels apart. 0 disables the early stop.
        slow_margin: The upper bound is ``slow_margin`` x the slowest baseline call / the
            fastest call of the implementation so far (>= 1).
    """

    warmup: int = 3
    min_trials: int = 20
    max_trials: int = 100
    budget_s: float = 3.0
    budget_floor: int = 1
    target_rse: float = 0.01
    input_sets: int = 3
    flush_bytes: int = 256 << 20
    l2_flush: str = "read"
    deadband: float = 0.03
    wall_check_calls: int = 10
    pin_inputs: bool = True
    check_first: bool = False
    evaluation_budget_s: float = 2.0
    slow_bound: float = 1 / 8
    slow_margin: float = 2.0

    def __post_init__(self) -> None:
        if not (self.budget_s >= 0 and self.evaluation_budget_s >= 0):  # NaN fails too
            raise ValueError(
                f"budget_s and evaluation_budget_s must be >= 0 seconds (math.inf: no limit), "
                f"got {self.budget_s} and {self.evaluation_budget_s}"
            )
        if not 0 <= self.slow_bound < 1:
            raise ValueError(
                f"slow_bound must be in [0, 1) (1 / the reward's speedup_clip; 0: off), got {self.slow_bound}"
            )
        if not (math.isfinite(self.slow_margin) and self.slow_margin >= 1):
            raise ValueError(f"slow_margin must be a finite number >= 1, got {self.slow_margin}")
        if self.l2_flush not in ("read", "write"):
            raise ValueError(f"l2_flush must be 'read' or 'write', not {self.l2_flush!r}")
        if not 1 <= self.min_trials <= self.max_trials:
            raise ValueError("need 1 <= min_trials <= max_trials")
        if not 1 <= self.budget_floor <= self.max_trials:
            raise ValueError("need 1 <= budget_floor <= max_trials")
        if self.input_sets < 1:
            raise ValueError("input_sets must be >= 1")


@dataclass(frozen=True)
class SpeedupEstimate:
    """Medians and the speedup with a lower confidence bound."""

    candidate_ms: float
    baseline_ms: float
    speedup: float
    speedup_lcb: float
    trials: int


@dataclass(frozen=True)
class Timing:
    """The speed verdict for one submission.

    Attributes:
        estimate: Medians (geometric mean over configurations) and speedup with its lower bound.
        flags: Reasons the speedup is not credited ("" when clean).
        mismatch: Set when outputs of timed calls differed from the baseline's.
        device: Card, compute capability, driver and copy bandwidth.
        per_config: Per-configuration estimates.
        phases: Seconds spent per phase (input preparation, upload, trials, output check, wall check).
        c_reference_ms: The serial C reference's time on the CPU per configuration (NaN: not measured).
        speedup_bound: Finite when timing stopped early on every configuration because the
            candidate is certainly slower than ``TimingOptions.slow_bound`` (``budget.decided_slow``):
            the speedup is at most this (< ``slow_bound``), and ``estimate.speedup`` and
            ``speedup_lcb``, from the few calls made, are at most it too. Not a flag: the reward
            credits it as measured and clips it to its floor, as it would the full measurement.
            NaN when timed in full (or only some configurations stopped early).
        capped_configs: Indices of the timing configurations where timing stopped early so.
        over_budget: The evaluation's timing budget (``evaluation_budget_s``) or a configuration's
            (``budget_s``) ran out before the trials reached ``target_rse``: the medians rest on
            fewer calls than usual.
        baseline: What the speedup is over: ``"implementation"`` (the task's baseline CUDA
            implementation, timed interleaved on the same GPU), ``"c_reference"`` (a task without
            a baseline: the C reference compiled with optimizations, timed on the host CPU) or
            ``"pytorch_eager"`` (a PyTorch task: its reference ``Model`` run eagerly on the same GPU,
            ``torch_baselines.over_pytorch``).
        eager_ms: A PyTorch task's eager reference, median per configuration (empty: not timed).
        compile_ms: Its ``torch.compile``-d model, median per configuration (NaN: compile failed or off).
        compile_error: Why ``torch.compile`` gave no time ("" when it did or was not tried).
        eager_error: Why eager gave no time ("" when it did or was not tried).
        speedup_vs_impl: Over the task's baseline implementation, where :attr:`estimate` is over
            something else (``pytorch_eager``); NaN otherwise.
        speedup_vs_compile: Over the ``torch.compile``-d reference (NaN: not measured on every configuration).
    """

    estimate: SpeedupEstimate
    flags: tuple[str, ...] = ()
    mismatch: str = ""
    device: Mapping[str, object] = field(default_factory=dict)
    per_config: tuple[SpeedupEstimate, ...] = ()
    phases: Mapping[str, float] = field(default_factory=dict)
    c_reference_ms: tuple[float, ...] = ()
    speedup_bound: float = math.nan
    capped_configs: tuple[int, ...] = ()
    over_budget: bool = False
    baseline: str = "implementation"
    eager_ms: tuple[float, ...] = ()
    compile_ms: tuple[float, ...] = ()
    compile_error: str = ""
    eager_error: str = ""
    speedup_vs_impl: float = math.nan
    speedup_vs_compile: float = math.nan

    @property
    def capped(self) -> bool:
        """Timing stopped early everywhere: the speedup is known only to be below :attr:`speedup_bound`."""
        return math.isfinite(self.speedup_bound)


def estimate_speedup(
    candidate: Sequence[float], baseline: Sequence[float], deadband: float = 0.03, resamples: int = 400
) -> SpeedupEstimate:
    """Ratio of medians (baseline / candidate) and its 5% bootstrap lower bound.

    Within ``1 +- deadband`` the speedup is reported as exactly 1 (noise).
    """
    c, b = np.asarray(candidate, float), np.asarray(baseline, float)
    med_c, med_b = float(np.median(c)), float(np.median(b))
    speedup = med_b / med_c if med_c > 0 else math.nan
    rng = np.random.default_rng(0)
    boot_c = np.median(rng.choice(c, (resamples, c.size)), axis=1)
    boot_b = np.median(rng.choice(b, (resamples, b.size)), axis=1)
    lcb = float(np.quantile(boot_b / boot_c, 0.05))
    if abs(speedup - 1.0) <= deadband:
        speedup = 1.0
    return SpeedupEstimate(med_c, med_b, speedup, min(lcb, speedup), int(min(c.size, b.size)))


def over_c_reference(timing: Timing, reference_ms: Sequence[float]) -> Timing:
    """A self-paired timing (the candidate interleaved with itself) as a speedup over the C reference (pure).

    Per configuration the speedup is ``reference / candidate``; its lower bound keeps the relative
    noise margin the self-pairing measured (``speedup_lcb / speedup`` of candidate vs candidate).
    A configuration whose reference could not be timed (NaN) leaves the speedup NaN and flagged.
    """
    per_config = []
    for est, ref in zip(timing.per_config, reference_ms, strict=True):
        speedup = ref / est.candidate_ms if est.candidate_ms > 0 else math.nan
        margin = est.speedup_lcb / est.speedup if est.speedup > 0 else 1.0
        per_config.append(SpeedupEstimate(est.candidate_ms, ref, speedup, speedup * min(margin, 1.0), est.trials))
    flags = timing.flags
    if not all(math.isfinite(e.speedup) for e in per_config):
        flags += ("the C reference could not be timed on every configuration",)

    def gmean(xs: list[float]) -> float:
        return float(np.exp(np.mean(np.log(xs)))) if xs and all(math.isfinite(x) for x in xs) else math.nan

    combined = SpeedupEstimate(
        gmean([e.candidate_ms for e in per_config]), gmean([e.baseline_ms for e in per_config]),
        gmean([e.speedup for e in per_config]), gmean([e.speedup_lcb for e in per_config]),
        min((e.trials for e in per_config), default=0),
    )  # fmt: skip
    return replace(timing, estimate=combined, per_config=tuple(per_config), flags=flags,
                   c_reference_ms=tuple(reference_ms), speedup_bound=math.nan, capped_configs=(),
                   baseline="c_reference")  # fmt: skip


def wall_clock_inconsistent(events_ms: Sequence[float], wall_ms: float, overhead_ms: float) -> bool:
    """Whether reported event times are too small for the parent's own wall clock.

    ``wall_ms`` is the parent's measurement of the whole back-to-back request;
    ``overhead_ms`` the per-call overhead seen for the trusted baseline. A
    submission that hides work from the events (side streams, patched timers)
    leaves wall time unexplained.
    """
    n = len(events_ms)
    if n == 0:
        return False
    unexplained = wall_ms / n - float(np.median(events_ms)) - overhead_ms
    return unexplained > max(0.2, 0.5 * float(np.median(events_ms)))


def bandwidth_flag(bytes_moved: int, time_ms: float, ceiling_gbps: float) -> bool:
    """True when the achieved bandwidth exceeds 1.25x the measured copy bandwidth (impossible)."""
    if time_ms <= 0 or ceiling_gbps <= 0:
        return True
    return bytes_moved / (time_ms * 1e-3) / 1e9 > 1.25 * ceiling_gbps
