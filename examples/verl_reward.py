"""verl: dataset rows and the reward function, called as verl's reward manager calls it.

In a verl run: ``custom_reward_function.path=<site-packages>/cudaperf_env/integrations/verl.py``
and ``custom_reward_function.name=compute_score`` (or ``compute_score_batch`` with the batch manager).
Run: ``python examples/verl_reward.py``.
"""

from cudaperf_env.integrations.grading import resolve_task
from cudaperf_env.integrations.verl import build_rows, compute_score


def main() -> list[float]:
    rows = build_rows(["c2cuda/saxpy_f32"])
    task = resolve_task(rows[0]["reward_model"]["ground_truth"])
    naive = task.implementation("naive").source
    scores = []
    for response in (f"```cuda\n{naive}```", "I cannot do that."):
        result = compute_score(rows[0]["data_source"], response, rows[0]["reward_model"]["ground_truth"],
                               rows[0]["extra_info"])  # fmt: skip
        print({k: round(v, 3) for k, v in result.items()})
        scores.append(result["score"])
    return scores


if __name__ == "__main__":
    main()
