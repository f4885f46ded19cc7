"""PyTorch to CUDA: replace a PyTorch ``Model.forward`` with CUDA kernels behind a C entry (native mode).

The entry takes device pointers for the forward's inputs, the module's
parameters and the outputs, then the sizes, in that order (the task's ``args``);
the harness, judge and backends are the C-to-CUDA ones unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from cudaperf_env.backends.harness import wrap
from cudaperf_env.kinds.base import RoleWords, native_answer_format, reminder_text, submission_rules
from cudaperf_env.tasks.schema import Arg, Task

ROLES = RoleWords()


def arg_meaning(task: Task, arg: Arg) -> str:
    """What an argument is in PyTorch terms: ``forward`` input k, parameter ``fc.weight``, output k, a size."""
    binding = task.torch
    if binding is None or not arg.is_buffer:
        return "size" if not arg.is_buffer else ""
    if arg.name in binding.inputs:
        return f"forward input {binding.inputs.index(arg.name)}"
    if arg.name in binding.outputs:
        return "forward's result" + (f" {binding.outputs.index(arg.name)}" if len(binding.outputs) > 1 else "")
    key = next((k for k, v in binding.parameters.items() if v == arg.name), "")
    return f"parameter `{key}` of the Model (its values, contiguous)"


FORBIDDEN = ("Plain CUDA C++ only: no PyTorch, ATen or c10 (no torch/extension.h), no libraries\n"
             "  (cuBLAS, cuDNN, Thrust, CUB), no inline assembly, no host threads.")


@dataclass(frozen=True)
class Torch2Cuda:
    """The ``torch2cuda`` family (see :class:`~cudaperf_env.kinds.base.Kind`)."""

    name: str = "torch2cuda"
    reference_language: str = "pytorch"
    reference_noun: str = "the PyTorch reference"

    def prompt(self, task: Task) -> str:
        args = "\n".join(
            f"- `{a.name}`: {a.dtype.name} {ROLES.of(a.role)}"
            + (f", shape [{', '.join(map(str, a.shape))}]" if a.is_buffer else f" = {a.value}")
            + (f"; {meaning}" if (meaning := arg_meaning(task, a)) else "")
            for a in task.args
        )
        configs = "\n".join("- " + ", ".join(f"{k}={v}" for k, v in c.items()) for c in task.configs)
        init = ", ".join(map(str, task.torch.init_inputs)) if task.torch else ""
        return f"""Write a fast CUDA implementation of the forward pass of the following PyTorch model.

Task {task.id}: {task.description.strip()}

Reference (PyTorch; the model is built as `Model({init})` for each configuration and run in float32):
```python
{task.reference_source.strip()}
```

Arguments of the entry (in order: forward inputs, parameters, outputs, sizes; all tensors contiguous, row-major):
{args}

It is tested on these configurations (and on others not shown):
{configs}

{submission_rules(task, FORBIDDEN)}"""

    def reminder(self, task: Task) -> str:
        return reminder_text(task, " computing the PyTorch model's forward")

    def answer_format(self, task: Task) -> str:
        return native_answer_format(task)

    def harness(self, task: Task, code: str) -> str:
        return wrap(task, code, "cuda")
