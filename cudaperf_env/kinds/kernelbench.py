"""PyTorch to CUDA in KernelBench mode: replace ``Model`` with a ``ModelNew`` whose forward runs the agent's own
CUDA kernels, compiled with ``torch.utils.cpp_extension.load_inline`` (GPU only; ``docs/torch2cuda.md``).

The task is the native mode's torch2cuda task; only the answer's form differs: Python in KernelBench's
style instead of an ``extern "C"`` entry. ``evaluate_kernelbench.py`` judges it.
"""

from __future__ import annotations

from dataclasses import dataclass

from cudaperf_env.tasks.schema import Task

ANSWER = "the complete Python (imports, CUDA sources, load_inline, class ModelNew) in one ```python fenced block"


def parameter_names(task: Task) -> str:
    """The reference's parameters by ``state_dict`` key (``fc.weight, fc.bias``), or "" without any."""
    return ", ".join(f"`{key}`" for key in task.torch.parameters) if task.torch else ""


@dataclass(frozen=True)
class KernelBenchTorch2Cuda:
    """The ``torch2cuda`` family in KernelBench mode (see :class:`~cudaperf_env.kinds.base.Kind`)."""

    name: str = "torch2cuda"
    reference_language: str = "pytorch"
    reference_noun: str = "the PyTorch reference"
    mode: str = "kernelbench"

    def prompt(self, task: Task) -> str:
        init = ", ".join(map(str, task.torch.init_inputs)) if task.torch else ""
        configs = "\n".join("- " + ", ".join(f"{k}={v}" for k, v in c.items()) for c in task.configs)
        params = parameter_names(task)
        keep = (f"\n- Keep the reference's parameters under the same names ({params}): the harness loads the "
                "task's values into ModelNew by state_dict key." if params else "")  # fmt: skip
        return f"""You write custom CUDA kernels to replace the PyTorch operators of the model below, for speed.

Task {task.id}: {task.description.strip()}

Reference (PyTorch; built as `Model({init})` for each configuration, float32, on the GPU):
```python
{task.reference_source.strip()}
```

Write `class ModelNew(nn.Module)`, a drop-in replacement for `Model`: the same constructor arguments, the same
forward inputs and outputs. Compile your CUDA kernels with `torch.utils.cpp_extension.load_inline(name=...,
cpp_sources=..., cuda_sources=..., functions=[...])` at module level and call them from `forward`.

It is tested on these configurations (and on others not shown), then timed against the reference run eagerly:
{configs}

Rules:
- forward may only allocate tensors (torch.empty, torch.empty_like, torch.zeros), take views (view, reshape,
  contiguous, ...) and call your extension's functions; every operator of Model is computed by your kernels.
  No PyTorch compute (torch.*, F.*, nn modules, tensor arithmetic), no try/except, no use of Model.
- Return fresh output tensors; never modify the inputs.{keep}
- Imports: torch, torch.nn, torch.nn.functional, torch.utils.cpp_extension and math only. The load_inline
  arguments are written as string constants; extra flags: optimization levels, --use_fast_math, -D macros.
- CUDA sources: no libraries (cuBLAS, cuDNN, Thrust, CUB, CUTLASS), no inline assembly, no host threads,
  no PyTorch operators (torch::matmul, at::relu, ...) inside the extension; launch on the current stream.
- Handle any size, not only the ones listed.

Answer with {ANSWER}."""

    def reminder(self, task: Task) -> str:
        return f"Task {task.id}: write ModelNew for the PyTorch model. Reply with {ANSWER}."

    def answer_format(self, task: Task) -> str:
        return f"Reply with {ANSWER}, defining `class ModelNew(nn.Module)`."

    def harness(self, task: Task, code: str) -> str:
        raise NotImplementedError("KernelBench mode has no native harness: load_inline builds the extension")
