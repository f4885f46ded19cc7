"""Families of batch A (scan, compaction, gather/scatter, pooling, convolution, image, bytes): determinism, schema."""

import zlib

import numpy as np
import pytest

from cudaperf_env.dataset.families import bytes_ops, compaction, convolution, gather_scatter, image, pooling, scan
from cudaperf_env.dataset.normalize import dedupe_key
from cudaperf_env.tasks import parse_task

GENERATORS = {
    "scan": scan.scan,
    "compaction": compaction.compact,
    "gather": gather_scatter.gather,
    "scatter_reduce": gather_scatter.scatter_reduce,
    "pool1d": pooling.pool1d,
    "pool2d": pooling.pool2d,
    "conv1d": convolution.conv1d,
    "conv2d": convolution.conv2d,
    "image_filter": image.image_filter,
    "byte_transform": bytes_ops.byte_transform,
    "byte_count": bytes_ops.byte_count,
}


def _generate(family, seed, variant):
    """As the builder does: the rng is seeded from (seed, family, variant)."""
    rng = np.random.default_rng([seed, zlib.crc32(family.encode()), variant])
    data = GENERATORS[family](rng, variant)
    data["id"] = f"c2cuda/{family}_{variant:04d}"
    return data


@pytest.mark.parametrize("family", sorted(GENERATORS))
def test_generation_is_deterministic_and_valid(family):
    first = [_generate(family, 3, v) for v in range(4)]
    assert first == [_generate(family, 3, v) for v in range(4)]
    assert first != [_generate(family, 4, v) for v in range(4)]  # the seed matters
    for data in first:
        task = parse_task(data, data["id"])
        assert data["family"] == family
        assert len({i.name for i in task.implementations}) >= 3
        assert all(i["strategies"] and i["labels"] == [] for i in data["implementations"])
        assert len(task.configs) >= 3 and task.hidden_configs and task.perf_configs
        assert sum(any(v % 2 for v in c.values()) for c in task.configs) >= 1, f"{task.id}: no odd size"
        assert "extern \"C\"" in data["implementations"][0]["source"]


@pytest.mark.parametrize("family", sorted(GENERATORS))
def test_variants_differ_after_normalization(family):
    keys = {dedupe_key(d["reference"]["source"], d["entry"]) for d in (_generate(family, 0, v) for v in range(12))}
    assert len(keys) >= 6, f"{family}: only {len(keys)} distinct references in 12 variants"
