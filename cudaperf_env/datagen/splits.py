"""Seeded train / validation / test splits: whole families held out for test, plus held-out tasks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

SPLITS = ("train", "validation", "test")


def assign_splits(
    ids_by_family: Mapping[str, Sequence[str]],
    seed: int,
    test_family_fraction: float = 0.15,
    heldout_fraction: float = 0.1,
) -> dict[str, list[str]]:
    """Split task ids; pure and deterministic for a given ``seed``.

    Args:
        ids_by_family: Task ids of each family.
        seed: Seed of the draw.
        test_family_fraction: Share of families held out whole for ``test`` (at
            least one family when there are three or more).
        heldout_fraction: Share of each seen family's tasks held out for
            ``validation`` and, again, for ``test`` (at least one each for families of 5+ tasks).

    Returns:
        ``{"train": [...], "validation": [...], "test": [...], "test_families": [...]}``, each sorted.
    """
    if not 0 <= test_family_fraction < 1 or not 0 <= heldout_fraction < 0.5:
        raise ValueError("test_family_fraction must be in [0, 1) and heldout_fraction in [0, 0.5)")
    rng = np.random.default_rng([seed, 0x5B117])
    families = sorted(f for f, ids in ids_by_family.items() if ids)
    n_held = max(1, round(test_family_fraction * len(families))) if len(families) >= 3 else 0
    held = sorted(str(f) for f in rng.choice(families, size=n_held, replace=False)) if n_held else []
    out: dict[str, list[str]] = {"train": [], "validation": [], "test": [], "test_families": held}
    for family in families:
        ids = sorted(ids_by_family[family])
        if family in held:
            out["test"] += ids
            continue
        k = max(1, round(heldout_fraction * len(ids))) if len(ids) >= 5 else 0
        order = [ids[i] for i in rng.permutation(len(ids))]
        out["validation"] += order[:k]
        out["test"] += order[k : 2 * k]
        out["train"] += order[2 * k :]
    return {name: sorted(ids) for name, ids in out.items()}
