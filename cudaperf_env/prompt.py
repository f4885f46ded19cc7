"""The task prompt: what the agent sees at the start of an episode."""

from __future__ import annotations

from cudaperf_env.tasks.schema import Task

_ROLE_TEXT = {
    "scalar": "scalar",
    "in": "input (device pointer, read-only: must come back unchanged)",
    "out": "output (device pointer, arrives filled with garbage/NaN: write every element)",
    "inout": "input and output (device pointer, holds input values; update in place)",
}


def task_prompt(task: Task) -> str:
    """The full prompt for ``task``: problem, ABI, reference, sizes, answer format."""
    args = "\n".join(
        f"- `{a.name}`: {a.dtype.name} {_ROLE_TEXT[a.role]}"
        + (f", shape [{', '.join(map(str, a.shape))}]" if a.is_buffer else f" = {a.value}")
        for a in task.args
    )
    configs = "\n".join("- " + ", ".join(f"{k}={v}" for k, v in c.items()) for c in task.configs)
    return f"""Write a fast CUDA implementation of the following C function.

Task {task.id}: {task.description.strip()}

Reference (C, sequential):
```c
{task.reference_source.strip()}
```

Arguments:
{args}

It is tested on these configurations (and on others not shown):
{configs}

Rules:
- Define `extern "C" {task.signature}`. Its pointer arguments are device pointers
  (already allocated with cudaMalloc); launch your own __global__ kernels from it.
- The harness synchronizes and checks for CUDA errors after the call.
- Do not use libraries (cuBLAS, Thrust, CUB), inline assembly or host threads.
- Handle any size, not only the ones listed.

Answer with the complete source in one ```cuda fenced block."""


def turn_prompt(task: Task, feedback_text: str, turn: int, max_turns: int) -> str:
    """The observation after a turn: feedback plus a short reminder of the task."""
    return (
        f"Turn {turn}/{max_turns} feedback:\n{feedback_text}\n\n"
        f"Task {task.id}: define `extern \"C\" {task.signature}`. "
        "Reply with the complete improved source in one ```cuda fenced block."
    )
