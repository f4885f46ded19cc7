"""``dataset stats --json`` and the command wiring."""

import json

from cudaperf_env.datagen.cli import main
from cudaperf_env.dataset.load import load_records


def test_stats_json_has_the_promised_keys(capsys):
    assert main(["stats", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    for key in ("tasks", "families", "min_configs_per_task", "min_implementations_per_task",
                "gpu_labelled_tasks", "splits"):  # fmt: skip
        assert key in stats
    records = load_records()
    assert stats["tasks"] == len(records)
    assert stats["gpu_labelled_tasks"] == sum(all(i["labels"] for i in r["implementations"]) for r in records) > 0
    assert stats["min_configs_per_task"] >= 3 and stats["min_implementations_per_task"] >= 3
