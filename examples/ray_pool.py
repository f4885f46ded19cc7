"""Grade a GRPO group on Ray evaluator actors (one per GPU; CPU actors without one).

Run: ``python examples/ray_pool.py`` (a local Ray instance) or pass ``address="auto"`` for a cluster.
"""

from cudaperf_env.integrations.grading import resolve_task
from cudaperf_env.integrations.ray import EvaluatorPool


def main(backend: str = "auto", num_actors: int | None = 2, address: str | None = None) -> list[float]:
    import ray

    local = {} if address else {"num_cpus": 2}
    pool = EvaluatorPool(backend, num_actors=num_actors, address=address, init_kwargs=local)
    try:
        task = resolve_task("c2cuda/saxpy_f32")
        naive = task.implementation("naive").source
        group = [f"```cuda\n{naive}```", f"```cuda\n{naive.replace('256', '0')}```", "no code"]
        turns = pool.grader().grade_many(task, group, seed=0)
        for turn in turns:
            print(f"{turn.status:14s} reward {turn.reward.total:+.3f}")
        return [t.reward.total for t in turns]
    finally:
        pool.close()
        if address is None:
            ray.shutdown()


if __name__ == "__main__":
    main()
