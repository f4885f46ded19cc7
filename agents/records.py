"""Trajectory records: one JSON line per graded turn, written by rollouts and read by the report and trainer."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, TextIO

from agents.errors import RecordFormatError
from cudaperf_env.text import json_safe

RECORD_VERSION = 1


@dataclass(frozen=True)
class TurnRecord:
    """One graded turn of one trajectory.

    Attributes:
        task_id: The task answered.
        family: The task's family (for per-family tables).
        trajectory: Index of the trajectory within its task's group (0 .. G-1).
        turn: 1 for the first reply, then 2, 3, ...
        reply: The model's raw reply.
        status: ``ok``, ``compile_error``, ``wrong_answer``, ... (see ``cudaperf_env.status``).
        correct: Correct on every configuration.
        compiled: The compile check passed.
        speedup: Baseline time over the reply's time (None where not timed, e.g. the CPU backend).
        reward: This turn's reward (potential-based: its score minus the previous turn's).
        score: The level this turn reached (the potential).
        returns: Discounted return of the turn: ``score + gamma * next turn's return``.
        reward_terms: The reward's named terms.
        model: What produced the reply.
        seed: The rollout's seed.
        prompt: The conversation the reply continued (system, task prompt, earlier turns).
        feedback: The feedback text given back for this reply.
        dropped_turns: Earlier turns left out of ``prompt`` to fit the context window.
        prompt_tokens: Tokens of ``prompt`` (as the policy counted them).
        completion_tokens: Tokens of ``reply``.
        finish_reason: Why generation stopped: ``stop``, ``length`` (the token limit cut the reply), or "".
        generate_seconds: Wall time of the generation call that produced the reply (shared by its batch).
        grade_seconds: Wall time of grading the replies of this reply's generation call, from the first
            submission to the last verdict (shared by the call's replies; it may overlap the generation).
        info: The turn's flat ``info`` scalars (``Turn.info()``), JSON-safe.
        version: Record format version.
    """

    task_id: str
    family: str
    trajectory: int
    turn: int
    reply: str
    status: str
    correct: bool
    compiled: bool
    speedup: float | None
    reward: float
    score: float
    returns: float
    reward_terms: dict[str, float]
    model: str
    seed: int
    prompt: list[dict[str, str]] = field(default_factory=list)
    feedback: str = ""
    dropped_turns: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str = ""
    generate_seconds: float = 0.0
    grade_seconds: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)
    version: int = RECORD_VERSION

    def to_json(self) -> str:
        """The record as one JSON line (NaN written as null)."""
        return json.dumps(json_safe(asdict(self)), ensure_ascii=False)


_REQUIRED = ("task_id", "trajectory", "turn", "reply", "status", "correct", "reward", "model")
_FIELDS = {f.name for f in fields(TurnRecord)}


def record_from_dict(data: dict[str, Any], where: str = "<record>") -> TurnRecord:
    """A record from its JSON mapping; unknown keys are ignored, missing optional ones defaulted.

    Raises:
        RecordFormatError: A required key is missing.
    """
    missing = [k for k in _REQUIRED if k not in data]
    if missing:
        raise RecordFormatError(f"{where}: not a turn record, missing {', '.join(missing)}")
    known = {k: v for k, v in data.items() if k in _FIELDS}
    known.setdefault("family", data["task_id"].split("/")[-1])
    for key, default in (("compiled", data.get("correct", False)), ("speedup", None), ("score", data["reward"]),
                         ("returns", data["reward"]), ("reward_terms", {}), ("seed", 0)):  # fmt: skip
        known.setdefault(key, default)
    return TurnRecord(**known)


def write_records(records: Iterable[TurnRecord], out: TextIO) -> int:
    """Append records as JSON lines to an open text file; returns how many were written."""
    count = 0
    for record in records:
        out.write(record.to_json() + "\n")
        count += 1
    out.flush()
    return count


def read_records(path: str | Path) -> list[TurnRecord]:
    """Every record of a JSONL trajectory file, in file order.

    Raises:
        RecordFormatError: A line is not JSON or not a turn record (names the file and line).
    """
    return list(iter_records(path))


def iter_records(path: str | Path) -> Iterator[TurnRecord]:
    """Records of a JSONL file (gzip-compressed where it ends in ``.gz``), lazily (blank lines skipped)."""
    with (gzip.open if str(path).endswith(".gz") else open)(path, "rt", encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                raise RecordFormatError(f"{path}:{number}: not JSON ({exc.msg})") from exc
            if not isinstance(data, dict):
                raise RecordFormatError(f"{path}:{number}: not a turn record (a JSON {type(data).__name__})")
            yield record_from_dict(data, f"{path}:{number}")

