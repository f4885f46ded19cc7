"""C to CUDA: port a sequential C function to a fast CUDA implementation with the same signature."""

from __future__ import annotations

from dataclasses import dataclass

from cudaperf_env.backends.harness import wrap
from cudaperf_env.kinds.base import RoleWords, native_answer_format, reminder_text, submission_rules
from cudaperf_env.tasks.schema import Arg, Task

ROLES = RoleWords()


@dataclass(frozen=True)
class C2Cuda:
    """The ``c2cuda`` family (see :class:`~cudaperf_env.kinds.base.Kind`)."""

    name: str = "c2cuda"
    reference_language: str = "c"
    reference_noun: str = "the serial C reference"

    def prompt(self, task: Task) -> str:
        args = "\n".join(
            f"- `{a.name}`: {_type_words(a)} {ROLES.of(a.role)}"
            + (f", shape [{', '.join(map(str, a.shape))}]" if a.is_buffer else _scalar_value(a))
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

{submission_rules(task, "Do not use libraries (cuBLAS, Thrust, CUB), inline assembly or host threads.")}"""

    def reminder(self, task: Task) -> str:
        return reminder_text(task)

    def answer_format(self, task: Task) -> str:
        return native_answer_format(task)

    def harness(self, task: Task, code: str) -> str:
        return wrap(task, code, "cuda")


def _scalar_value(arg: Arg) -> str:
    """`` = N`` for a configuration's value, the distribution for a scalar drawn per episode."""
    if arg.value is not None and not arg.init:
        return f" = {arg.value}"
    params = ", ".join(f"{k}={v}" for k, v in arg.init.items() if k != "dist")
    return f", drawn per episode from {arg.init['dist']}({params}): do not assume a value"


def _type_words(arg: Arg) -> str:
    """``float32``, or for a buffer of structs ``float2 (struct of float32 x, y)``."""
    if not arg.fields:
        return arg.dtype.name
    return f"{arg.c_type} (struct of {arg.dtype.name} {', '.join(arg.fields)})"
