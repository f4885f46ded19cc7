"""The code encoder (issue 13, model 2): its words, and a tiny one trained on made-up saxpy timings."""

import numpy as np
import pytest

from cudaperf_env.ranker.encoder import EncoderConfig, EncoderModel, code_words, fit_encoder
from cudaperf_env.ranker.features import CONTEXT, records_for
from cudaperf_env.ranker.pairs import dataset_pairs
from cudaperf_env.tasks import parse_task
from tests.cudaperf_env.ranker.conftest import saxpy_record

pytest.importorskip("torch")


def test_words_keep_structure_and_generic_names_and_rename_the_rest():
    source = "#define TILE 32\n// a comment\n__global__ void saxpy_k(float* out) {\n#pragma unroll\n" \
             "  for (int i = 0; i < TILE; ++i) out[threadIdx.x * 4096 + i] = 1.5f; }\n"
    words = code_words(source, keep=frozenset({"threadIdx", "x"}))
    assert words[:6] == ["__global__", "void", "v0", "(", "float", "*"]
    assert "#pragma_unroll" in words and "comment" not in " ".join(words)
    assert words.count("32") == 1 and "TILE" not in words  # the one-token macro expanded
    assert "threadIdx" in words and "<2^12>" in words and "<float>" in words
    renamed = source.replace("saxpy_k", "other_name").replace("out", "dst")
    assert code_words(renamed, frozenset({"threadIdx", "x"})) == words  # a family's own names tell nothing


@pytest.fixture(scope="module")
def fixture_tasks():
    records = [saxpy_record(f"c2cuda/fixture_{n}", "fa" if n < 4 else "fb",
                            {"per_element": 1.0 + n / 10, "grid_stride": 0.8, "single_thread": 300.0})
               for n in range(6)]  # fmt: skip
    return {r["id"]: parse_task(r) for r in records}


def train(tasks, seed=0, steps=40):
    pairs = dataset_pairs(tasks.values(), ("shown", "hidden", "perf"))
    sources = {(t.id, i.name): i.source for t in tasks.values() for i in t.implementations}
    records = records_for(tasks.values())
    config = EncoderConfig(width=16, layers=1, heads=2, max_tokens=128, steps=steps, batch_pairs=16, seed=seed,
                           device="cpu", min_families=1)  # fmt: skip
    families = {t.id: t.family for t in tasks.values()}
    return fit_encoder(config, pairs, sources, records, families), pairs, sources, records


def test_a_tiny_encoder_learns_the_single_thread_kernel_is_slow_and_is_deterministic(fixture_tasks, tmp_path):
    model, pairs, sources, records = train(fixture_tasks)
    p = model.probabilities(pairs, sources, records)
    single = np.array([p_.slower == "single_thread" for p_ in pairs])
    assert single.any() and (p[single] > 0.5).mean() == 1.0
    again, *_ = train(fixture_tasks)
    np.testing.assert_allclose(again.probabilities(pairs, sources, records), p, atol=1e-6)
    model.save(tmp_path / "encoder.pt")
    np.testing.assert_allclose(EncoderModel.load(tmp_path / "encoder.pt").probabilities(pairs, sources, records), p,
                               atol=1e-6)  # fmt: skip
    trained_on_a_gpu = EncoderModel.load(tmp_path / "encoder.pt", device="cuda")  # as a GPU run saves it
    assert trained_on_a_gpu.config.device == "cuda"
    assert EncoderModel.load(tmp_path / "encoder.pt", device="cpu").config.device == "cpu"
    assert np.isnan(model.probabilities(pairs[:1], {}, records)).all()  # no source: no verdict


def test_with_compiler_features_the_head_reads_the_sass_histogram(fixture_tasks):
    from cudaperf_env.ranker.features import dataset_records

    pairs = dataset_pairs(fixture_tasks.values(), ("shown", "hidden", "perf"))
    sources = {(t.id, i.name): i.source for t in fixture_tasks.values() for i in t.implementations}
    records = {(r["task"], r["impl"]): r for r in dataset_records(fixture_tasks.values(), compiler=True)}  # real nvcc
    assert all(r["compiler"]["sass_instructions"] > 0 for r in records.values())
    config = EncoderConfig(width=16, layers=1, heads=2, max_tokens=128, steps=40, batch_pairs=16, device="cpu",
                           min_families=1, compiler=True)  # fmt: skip
    model = fit_encoder(config, pairs, sources, records, {t.id: t.family for t in fixture_tasks.values()})
    assert "compiler/sass_global_loads" in config.head_features
    assert model.mean.shape == (len(config.head_features) + len(CONTEXT),)
    p = model.probabilities(pairs, sources, records)
    assert (p[np.array([q.slower == "single_thread" for q in pairs])] > 0.5).all()
    uncompiled = {k: {**r, "compiler": {}} for k, r in records.items()}  # read as the training mean
    assert not np.allclose(model.probabilities(pairs, sources, uncompiled), p)
