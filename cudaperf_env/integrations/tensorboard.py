"""TensorBoard scalars for every reward term (and the other numbers) of an environment's ``info``.

::

    from cudaperf_env.integrations.tensorboard import InfoWriter
    writer = InfoWriter("runs/cudaperf")
    writer.log(info, step)          # a single-env or vector-env info

Each ``reward/<term>`` of the preset becomes a scalar ``<prefix>/reward/<term>``;
``status`` becomes the fraction of environments in each state; strings are skipped.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cudaperf_env.integrations.gym_vector import info_scalars

__all__ = ["InfoWriter"]


class InfoWriter:
    """Writes :func:`~cudaperf_env.integrations.gym_vector.info_scalars` of each ``info`` to TensorBoard.

    Args:
        log_dir: Event-file folder (ignored when ``writer`` is given).
        writer: An existing ``torch.utils.tensorboard.SummaryWriter`` (or anything with
            ``add_scalar(tag, value, step)``).
        prefix: Tag prefix.
        only_rewards: Write only ``reward/*`` and ``score`` (else every number in ``info``).
    """

    def __init__(self, log_dir: str | Path | None = None, writer: Any = None, prefix: str = "cudaperf",
                 only_rewards: bool = False) -> None:  # fmt: skip
        if writer is None:
            from torch.utils.tensorboard import SummaryWriter

            writer = SummaryWriter(log_dir=None if log_dir is None else str(log_dir))
        self.writer = writer
        self.prefix = prefix
        self.only_rewards = only_rewards

    def log(self, info: Mapping[str, Any], step: int, reward: float | None = None) -> dict[str, float]:
        """Write the scalars of ``info`` (and the step's ``reward`` when given) at ``step``; returns them.

        NaN values (no speedup on a CPU backend, say) are not written.
        """
        scalars = info_scalars(info)
        if self.only_rewards:
            scalars = {k: v for k, v in scalars.items() if k.startswith("reward/") or k == "score"}
        if reward is not None:
            scalars["reward"] = float(reward)
        written = {k: v for k, v in scalars.items() if not math.isnan(v)}
        for key, value in written.items():
            self.writer.add_scalar(f"{self.prefix}/{key}", value, step)
        return written

    def flush(self) -> None:
        """Write pending events to disk."""
        self.writer.flush()

    def close(self) -> None:
        """Flush and close the event file."""
        self.writer.close()
