"""PPO on CudaPerf-C2CUDA-Pick-v0: learn to pick the fastest candidate kernel from structural features.

Rewards come from the H200 timing labels shipped with the dataset, so this runs on a CPU.
Run: ``python examples/sb3_pick.py`` (trains on train tasks, scores on held-out validation tasks).
"""

import gymnasium as gym

import cudaperf_env  # noqa: F401  (registers the ids)
from cudaperf_env.integrations.sb3 import model_policy, oracle_policy, random_policy, score_policy, train_ppo


def main(train_tasks: int = 200, steps: int = 8192, held_out_tasks: int = 150, episodes: int = 500) -> dict:
    model, train_env = train_ppo(steps=steps, seed=0, split="train", limit=train_tasks)
    held_out = gym.make("CudaPerf-C2CUDA-Pick-v0", split="validation", limit=held_out_tasks)
    scores = {}
    for name, env in (("train", train_env), ("validation", held_out)):
        for policy_name, policy in (("ppo", model_policy(model)), ("random", random_policy(0)),
                                    ("oracle", oracle_policy())):  # fmt: skip
            score = score_policy(env, policy, episodes=episodes)
            scores[f"{name}/{policy_name}"] = score
            print(f"{name:10s} {policy_name:6s} mean log2 speedup {score.mean_reward:+.3f}  "
                  f"fastest picked {score.fastest_rate:.1%}")
    return scores


if __name__ == "__main__":
    main()
