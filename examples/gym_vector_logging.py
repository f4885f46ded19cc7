"""Async vector envs (spawned workers) with flat float info, and every reward term in TensorBoard.

Run: ``python examples/gym_vector_logging.py`` then ``tensorboard --logdir runs/cudaperf``.
"""

import numpy as np

from cudaperf_env.integrations.gym_vector import info_scalars, make_vec
from cudaperf_env.integrations.tensorboard import InfoWriter


def main(num_envs: int = 2, steps: int = 2, log_dir: str = "runs/cudaperf", backend: str = "auto") -> dict:
    envs = make_vec("CudaPerf-C2CUDA-v1", num_envs=num_envs, backend=backend, task_ids=["c2cuda/saxpy_f32"])
    writer = InfoWriter(log_dir)
    try:
        envs.reset(seed=0)
        source = envs.call("task")[0].implementation("naive").source  # stand-in for a policy's replies
        scalars: dict = {}
        for step in range(steps):
            replies = np.array([f"```cuda\n{source}```"] * num_envs, dtype=object)
            _, rewards, _, _, infos = envs.step(replies)
            scalars = writer.log(infos, step, reward=float(np.mean(rewards)))
            shown = {k: round(v, 3) for k, v in info_scalars(infos).items() if k.startswith(("reward", "status/ok"))}
            print(step, shown)
    finally:
        writer.close()
        envs.close()
    return scalars


if __name__ == "__main__":
    main()
