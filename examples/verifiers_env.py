"""verifiers (v1): load the multi-turn kernel environment and show its tasks and rubric.

Evaluate a model with verifiers' CLI on the taskset id ``cudaperf-c2cuda`` (e.g.
``vf-eval cudaperf-c2cuda --env.taskset.split validation``), or in Python as below.
Run: ``python examples/verifiers_env.py``.
"""

from cudaperf_env.integrations.verifiers import load_environment


def main(split: str = "validation", limit: int = 3) -> dict[str, float]:
    env = load_environment(split=split, limit=limit, max_turns=4)
    tasks = list(env.taskset)
    print(f"{type(env).__name__}: {len(tasks)} tasks, e.g. {tasks[0].data.task_id}")
    rubric = {fn.__name__: fn._vf_weight for fn in tasks[0].hooks("reward")}
    print("rubric (reward: weight):", rubric)
    return rubric


if __name__ == "__main__":
    main()
