"""What differs between env families (C to CUDA, PyTorch to CUDA): one object per family."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from cudaperf_env.tasks.schema import Task


class Kind(Protocol):
    """One env family: its wording, its reference language, how a submission is wrapped.

    Everything outside a kind object is family-neutral: the pipeline, the reward and
    the feedback ask the task's kind (:func:`cudaperf_env.kinds.kind_of`) for these.
    """

    @property
    def name(self) -> str:
        """The ``Task.kind`` value (``c2cuda``)."""
        ...

    @property
    def reference_language(self) -> str:
        """Language of the task's reference (``c``)."""
        ...

    @property
    def reference_noun(self) -> str:
        """How the feedback names the reference ("the serial C reference")."""
        ...

    def prompt(self, task: Task) -> str:
        """The prompt of an episode's first turn."""
        ...

    def reminder(self, task: Task) -> str:
        """The short task reminder that follows each turn's feedback."""
        ...

    def answer_format(self, task: Task) -> str:
        """What a reply must hold, for the feedback on a reply without usable code."""
        ...

    def harness(self, task: Task, code: str) -> str:
        """The translation unit nvcc checks: the submission plus the harness's declaration and shim."""
        ...


@dataclass(frozen=True)
class RoleWords:
    """How the prompt describes each argument role."""

    scalar: str = "scalar"
    inp: str = "input (device pointer, read-only: must come back unchanged)"
    out: str = "output (device pointer, arrives filled with garbage/NaN: write every element)"
    inout: str = "input and output (device pointer, holds input values; update in place)"

    def of(self, role: str) -> str:
        """The words for ``role`` (``scalar``, ``in``, ``out``, ``inout``)."""
        return {"scalar": self.scalar, "in": self.inp, "out": self.out, "inout": self.inout}[role]


def submission_rules(task: Task, forbidden: str) -> str:
    """The rules every family's prompt ends with; ``forbidden`` is the family's "no libraries" line."""
    return f"""Rules:
- Define `extern "C" {task.signature}`. Its pointer arguments are device pointers
  (already allocated with cudaMalloc); launch your own __global__ kernels from it.
- The harness synchronizes and checks for CUDA errors after the call.
- {forbidden}
- Handle any size, not only the ones listed.

Answer with the complete source in one ```cuda fenced block."""


def native_answer_format(task: Task) -> str:
    """A native reply's form: CUDA C++ in a ```cuda block defining the entry."""
    return f'Reply with the complete CUDA source in one ```cuda fenced block that defines extern "C" {task.signature}.'


def reminder_text(task: Task, what: str = "") -> str:
    """The short reminder after each turn's feedback (``what`` adds what the entry computes)."""
    return (
        f"Task {task.id}: define `extern \"C\" {task.signature}`{what}. "
        "Reply with the complete improved source in one ```cuda fenced block."
    )
