"""The torch2cuda dataset: a verified build through the shared builder, the shipped file, `dataset stats --kind`."""

import json

import pytest

from cudaperf_env.cli import main
from cudaperf_env.datagen.build import DATA_FILES, BuildConfig, build, generate
from cudaperf_env.dataset.load import load_records, load_splits
from cudaperf_env.dataset.stats import dataset_stats
from cudaperf_env.tasks import parse_task

SHIPPED = DATA_FILES["torch2cuda"]


def test_a_verified_build_keeps_tasks_whose_implementations_all_pass(tmp_path):
    out = tmp_path / "torch2cuda.jsonl.gz"
    card = tmp_path / "card.md"
    report = build(BuildConfig(kind="torch2cuda", families=("activation_chain", "softmax"), per_family=1, workers=1,
                               out=out, card=card))  # fmt: skip
    assert report["kept"] == 2 and report["candidates"] == 2 and not report["drops"] and report["kind"] == "torch2cuda"
    stats = dataset_stats(load_records(out), load_splits(out))
    assert (stats["tasks"], stats["families"], stats["implementations"]) == (2, 2, 6)
    assert stats["min_configs_per_task"] >= 3 and stats["min_implementations_per_task"] >= 3
    text = card.read_text()
    assert text.startswith("# Dataset card: CudaPerf PyTorch-to-CUDA") and "C reference" not in text
    assert "cudaperf dataset build --kind torch2cuda --per-family 1 --seed 0" in text


def test_generated_ids_carry_the_kind_and_unknown_families_are_named():
    assert generate("linear", 0, 7, "torch2cuda")["id"] == "torch2cuda/linear_0007"
    with pytest.raises(ValueError, match="unknown torch2cuda families"):
        BuildConfig(kind="torch2cuda", families=("saxpy",))
    with pytest.raises(ValueError, match="unknown kind"):
        BuildConfig(kind="julia2cuda")


@pytest.mark.skipif(not SHIPPED.is_file(), reason="no torch2cuda dataset shipped in this checkout")
def test_shipped_file_is_valid_and_stats_take_the_kind(capsys):
    records = load_records(SHIPPED)
    tasks = [parse_task(r, r["id"]) for r in records]
    assert len(tasks) >= 1000  # the size
    assert all(t.kind == "torch2cuda" and len(t.configs) >= 3 and len(t.implementations) >= 3 for t in tasks)
    assert len({t.reference_source for t in tasks}) == len(tasks)
    assert main(["dataset", "stats", "--kind", "torch2cuda", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["tasks"] == len(records) and stats["families"] >= 5
    assert stats["implementations"] == sum(len(r["implementations"]) for r in records)
    splits = load_splits(SHIPPED)
    assert splits["test_families"] and sorted(splits["train"] + splits["validation"] + splits["test"]) == sorted(
        r["id"] for r in records)


@pytest.mark.skipif(not SHIPPED.is_file(), reason="no torch2cuda dataset shipped in this checkout")
def test_split_draws_torch_tasks_from_the_torch_dataset():
    import gymnasium as gym

    import cudaperf_env  # noqa: F401
    from cudaperf_env.backends.cpu.backend import CpuBackend
    from cudaperf_env.dataset import find_task

    splits = load_splits(SHIPPED)
    env = gym.make("CudaPerf-Torch2CUDA-v0", split="train", backend=CpuBackend(timeout_s=3.0))
    tasks = env.unwrapped.tasks
    assert sorted(tasks) == sorted(splits["train"]) and all(t.kind == "torch2cuda" for t in tasks.values())
    obs, info = env.reset(seed=3)
    assert info["task_id"] in splits["train"] and "class Model" in obs
    held_out = set(splits["test_families"])
    assert not any(t.family in held_out for t in tasks.values())  # whole families held out of train
    test = gym.make("CudaPerf-Torch2CUDA-v0", split="test", backend=CpuBackend(timeout_s=3.0)).unwrapped.tasks
    assert sorted(test) == sorted(splits["test"]) and not set(test) & set(tasks)
    assert find_task(splits["test"][0]).id == splits["test"][0]  # `cudaperf tasks show` finds dataset ids
    with pytest.raises(ValueError, match="either split"):
        gym.make("CudaPerf-Torch2CUDA-v0", split="train", task_dir=".", backend=CpuBackend())


@pytest.mark.skipif(not SHIPPED.is_file(), reason="no torch2cuda dataset shipped in this checkout")
def test_the_shipped_card_is_the_rendering_of_the_shipped_data_and_its_labels():
    from cudaperf_env.datagen.build import CARD_FILES
    from cudaperf_env.datagen.card import render_card

    records = load_records(SHIPPED)  # GPU label streams beside the file folded in
    report = json.loads((SHIPPED.parent / "build-report.json").read_text())
    card = CARD_FILES["torch2cuda"].read_text()
    assert card == render_card(dataset_stats(records, load_splits(SHIPPED)), report, "torch2cuda")
    labelled = sum(all(i["labels"] for i in r["implementations"]) for r in records)
    assert labelled > 0 and f"- GPU-labelled tasks: {labelled}." in card
