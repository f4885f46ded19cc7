"""verl: a reward function (``compute_score``), its batched form, and a multi-turn kernel tool.

Single-turn, in verl's config (``ground_truth`` is the task id; :func:`build_rows` makes the rows)::

    custom_reward_function.path=<site-packages>/cudaperf_env/integrations/verl.py
    custom_reward_function.name=compute_score            # NaiveRewardManager: one response at a time
    # or name=compute_score_batch with reward_model.reward_manager=batch: each task's group graded together

Multi-turn: verl's tool agent loop (``actor_rollout_ref.rollout.multi_turn``) calls
:class:`SubmitKernelTool` each time the model submits; the tool grades it against
the previous submission of the same trajectory (kept in ``agent_data.extra_fields``)
and returns the feedback as the tool response and the turn's reward (potential-based:
the rewards of a trajectory sum to its last submission's score). Tool config::

    tools:
      - class_name: cudaperf_env.integrations.verl.SubmitKernelTool
        config: {type: native}

The row's ``extra_info.tools_kwargs.submit_kernel.create_kwargs.task_id`` names the task.
verl 0.9 has no ``BaseInteraction``; its multi-turn refinement runs through tools as here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from cudaperf_env.integrations.grading import BatchGrader, GroupEvaluator, resolve_task
from cudaperf_env.prompt import task_prompt
from cudaperf_env.turn import Grader, RewardConfig, Turn, turn_of

__all__ = ["DATA_SOURCE", "SubmitKernelTool", "build_rows", "compute_score", "compute_score_batch", "configure"]

DATA_SOURCE = "cudaperf/c2cuda"
_DEFAULT = BatchGrader()


def configure(backend: str = "auto", pool: GroupEvaluator | None = None, reward: RewardConfig | None = None,
              grader: Grader | None = None) -> None:  # fmt: skip
    """Set where this module's functions and tool evaluate (default: ``auto``, in-process)."""
    global _DEFAULT
    _DEFAULT = BatchGrader(grader=grader, backend=backend, pool=pool, reward=reward)


def _score(turn: Turn) -> dict[str, Any]:
    """verl's dict form: ``score`` is the reward; the other keys go to ``reward_extra_info`` (numbers only)."""
    info = turn.info()
    out: dict[str, Any] = {"score": float(turn.reward.total), "correct": float(turn.correct),
                           "compiled": float(turn.evaluation.compiled)}  # fmt: skip
    for key, value in info.items():
        if key.startswith("reward/") or key in ("speedup", "structural_score"):
            out[key] = float(value) if isinstance(value, int | float) and math.isfinite(value) else 0.0
    return out


def compute_score(data_source: str, solution_str: str, ground_truth: str, extra_info: Mapping[str, Any] | None = None,
                  **kwargs: Any) -> dict[str, Any]:  # fmt: skip
    """Grade one response; ``ground_truth`` is the task id. Returns ``{"score": reward, ...terms}``.

    The input seed is ``extra_info["index"]`` when present (else 0).
    """
    seed = int((extra_info or {}).get("index", 0) or 0)
    (turn,) = _DEFAULT.grade([str(ground_truth)], [solution_str], seed=seed)
    assert turn is not None
    return _score(turn)


def compute_score_batch(data_sources: Sequence[str], solution_strs: Sequence[str], ground_truths: Sequence[str],
                        extra_infos: Sequence[Mapping[str, Any] | None] | None = None,
                        **kwargs: Any) -> list[dict[str, Any]]:  # fmt: skip
    """Grade a whole batch (``reward_manager=batch``): each task's responses judged together."""
    turns = _DEFAULT.grade([str(g) for g in ground_truths], list(solution_strs), seed=0)
    return [_score(t) for t in turns if t is not None]


def build_rows(task_ids: Sequence[str], multi_turn: bool = False) -> list[dict[str, Any]]:
    """verl's RL dataset rows (write them to parquet): prompt, data_source, reward_model, extra_info."""
    rows = []
    for index, task_id in enumerate(task_ids):
        task = resolve_task(task_id)
        extra: dict[str, Any] = {"index": index, "task_id": task.id}
        if multi_turn:
            extra["tools_kwargs"] = {"submit_kernel": {"create_kwargs": {"task_id": task.id}}}
        rows.append({"data_source": DATA_SOURCE, "prompt": [{"role": "user", "content": task_prompt(task)}],
                     "ability": "cuda", "reward_model": {"style": "rule", "ground_truth": task.id},
                     "extra_info": extra})  # fmt: skip
    return rows


def _tool_base() -> type:
    try:
        from verl.tools.base_tool import BaseTool
    except ImportError:  # compute_score works without verl; the tool needs it
        return object
    return BaseTool


def _schema() -> Any:
    from verl.tools.schemas import OpenAIFunctionToolSchema

    return OpenAIFunctionToolSchema.model_validate({
        "type": "function",
        "function": {
            "name": "submit_kernel",
            "description": "Compile, run and check a CUDA kernel for the task; returns compiler and test feedback.",
            "parameters": {"type": "object", "required": ["source"], "properties": {
                "source": {"type": "string", "description": "The complete CUDA C++ source (kernel and launcher)."},
            }},
        },
    })  # fmt: skip


class SubmitKernelTool(_tool_base()):  # type: ignore[misc]  # verl's BaseTool when verl is installed
    """verl ``BaseTool``: grade a submission, answer with feedback, reward the change of score."""

    def __init__(self, config: dict | None = None, tool_schema: Any = None) -> None:
        super().__init__(config or {}, tool_schema or _schema())
        self._tasks: dict[str, str] = {}

    async def create(self, instance_id: str | None = None, **kwargs: Any) -> tuple[str, Any]:
        """Remember the task of this call (``create_kwargs.task_id``)."""
        instance_id, response = await super().create(instance_id)
        create = kwargs.get("create_kwargs", kwargs)
        self._tasks[instance_id] = str(create.get("task_id", ""))
        return instance_id, response

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs: Any) -> tuple[Any, float, dict]:
        """Grade ``parameters["source"]`` after the trajectory's previous submission."""
        from verl.tools.schemas import ToolResponse

        task_id = self._tasks.get(instance_id) or ""
        if not task_id:
            return ToolResponse(text="No task: the row needs tools_kwargs.create_kwargs.task_id."), 0.0, {}
        source = parameters.get("source") if isinstance(parameters, Mapping) else None
        code = source if isinstance(source, str) else ""
        reply = code if "```" in code else f"```cuda\n{code}\n```"
        state = getattr(kwargs.get("agent_data"), "extra_fields", None)
        turns: list[Turn] = state.setdefault("cudaperf_turns", []) if isinstance(state, dict) else []
        previous = turns[-1] if turns else None
        task = resolve_task(task_id)
        evaluation = _DEFAULT.evaluator().evaluate_many(task, [reply], seed=len(turns))[0]
        turn = turn_of(task, evaluation, previous, _DEFAULT.reward)
        turns.append(turn)
        metrics = {k: v for k, v in _score(turn).items() if k != "score"}
        return ToolResponse(text=turn.feedback), float(turn.reward.total), metrics

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """Nothing beyond what :meth:`execute` returned."""
        return 0.0

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """Forget the call."""
        self._tasks.pop(instance_id, None)
