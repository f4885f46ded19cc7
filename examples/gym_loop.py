"""The Gymnasium loop with a stand-in policy that replays a task's known implementations.

Replace ``policy`` with your LLM. Run: ``python examples/gym_loop.py``.
"""

import gymnasium as gym

import cudaperf_env  # noqa: F401  (registers CudaPerf-* ids)


def policy(observation: str, env: gym.Env, turn: int) -> str:
    """Stand-in for an LLM: first a broken kernel, then the task's baseline implementation."""
    task = env.unwrapped.task
    source = task.implementation(task.baseline).source
    if turn == 0:
        source = source.replace("blockIdx.x * blockDim.x", "blockIdx.x")  # a classic indexing bug
    return f"```cuda\n{source}```"


def main(episodes: int = 2, backend: str = "cpu") -> list[float]:
    env = gym.make("CudaPerf-C2CUDA-v0", backend=backend, max_turns=3)
    returns = []
    for episode in range(episodes):
        observation, info = env.reset(seed=episode)
        done, turn, total = False, 0, 0.0
        while not done:
            observation, reward, terminated, truncated, info = env.step(policy(observation, env, turn))
            print(f"episode {episode} turn {info['turn']} {info['task_id']}: {info['status']} reward {reward:+.2f}")
            done, turn, total = terminated or truncated, turn + 1, total + reward
        returns.append(total)
    env.close()
    return returns


if __name__ == "__main__":
    main()
