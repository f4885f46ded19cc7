"""Score a GRPO group: several replies to one task, judged concurrently, as rewards.

This is the shape of a reward function for an LLM trainer: prompts and
completions in, one float per completion out (TRL's ``reward_funcs`` signature).
Run: ``python examples/grpo_group_reward.py``.
"""

from cudaperf_env.tasks import load_tasks
from cudaperf_env.turn import Grader

TASKS = load_tasks()
GRADER = Grader.on("auto")


def cuda_reward(prompts: list[str], completions: list[str], task_id: list[str], **_: object) -> list[float]:
    """One reward per completion; ``task_id`` is a dataset column (one per completion)."""
    rewards = [0.0] * len(completions)
    for tid in dict.fromkeys(task_id):  # grade each task's group together
        members = [i for i, t in enumerate(task_id) if t == tid]
        turns = GRADER.grade_many(TASKS[tid], [completions[i] for i in members], seed=0)
        for i, turn in zip(members, turns, strict=True):
            rewards[i] = turn.reward.total
    return rewards


def main() -> list[float]:
    task = TASKS["c2cuda/saxpy_f32"]
    naive = task.implementation("naive").source
    completions = [f"```cuda\n{naive}```", "Sorry, I cannot help.", f"```cuda\n{naive.replace('256', '0')}```"]
    rewards = cuda_reward(["prompt"] * 3, completions, task_id=[task.id] * 3)
    for completion, reward in zip(completions, rewards, strict=True):
        print(f"{reward:+.2f}  {completion[:40]!r}")
    return rewards


if __name__ == "__main__":
    main()
