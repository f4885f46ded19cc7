"""The coder-and-reviewer PettingZoo game with stand-in policies (replace them with two LLMs).

Run: ``python examples/pettingzoo_review.py``.
"""

from cudaperf_env.integrations.pettingzoo import env


def main(backend: str = "auto") -> dict[str, float]:
    game = env(backend=backend, task_ids=["c2cuda/saxpy_f32"], max_rounds=3)
    game.reset(seed=0)
    source = game.game.task.implementation("naive").source
    returns = {"coder": 0.0, "reviewer": 0.0}
    submissions = 0
    for agent in game.agent_iter():
        _, reward, terminated, truncated, info = game.last()
        returns[agent] += reward
        if terminated or truncated:
            game.step(None)
            continue
        if agent == "coder":
            buggy = submissions == 0 and "Index with" not in game.observe_text("coder")
            code = source.replace("blockIdx.x * blockDim.x", "blockIdx.x") if buggy else source
            game.step(f"```cuda\n{code}```")
            submissions += 1
        else:
            wrong = "wrong" in game.observe_text(agent)
            advice = "Index with blockIdx.x * blockDim.x + threadIdx.x." if wrong else "LGTM."
            game.step(advice)
        print(agent, info.get("status"), f"reward so far {returns[agent]:+.2f}")
    game.close()
    return returns


if __name__ == "__main__":
    main()
