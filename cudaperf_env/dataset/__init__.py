"""The C-to-CUDA dataset: family generators, the seeded builder, loading, statistics and the card."""

from __future__ import annotations

from cudaperf_env.dataset.load import load_dataset, load_records, load_splits

__all__ = ["load_dataset", "load_records", "load_splits"]
