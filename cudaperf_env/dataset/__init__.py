"""The datasets (C-to-CUDA, PyTorch-to-CUDA) at run time: loading tasks and labels, splits, statistics.

The offline builder, the family generators and the GPU labeller live in ``cudaperf_env/datagen``.
"""

from __future__ import annotations

from cudaperf_env.dataset.load import data_file, find_task, load_dataset, load_records, load_splits

__all__ = ["data_file", "find_task", "load_dataset", "load_records", "load_splits"]
