"""The agent rollout example runs top to bottom (scripted policy, CPU backend)."""

import importlib.util
import json
from pathlib import Path

EXAMPLE = Path(__file__).parents[2] / "examples" / "agent_rollout.py"


def test_agent_rollout_example_writes_records_and_a_report(tmp_path):
    spec = importlib.util.spec_from_file_location("agent_rollout", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    report = module.main(out=str(tmp_path / "t.jsonl"), report_dir=str(tmp_path / "r"))
    lines = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    # the two canned replies alternate: trajectory 0 gets no code at turns 1 and 2, then the naive kernel;
    # trajectory 1 gets the naive kernel at once and stops (correct)
    assert [(r["trajectory"], r["turn"], r["status"]) for r in lines] == [
        (0, 1, "format_error"), (0, 2, "format_error"), (0, 3, "ok"), (1, 1, "ok")]  # fmt: skip
    assert report["pass_at_k"]["1"] == 1.0 and report["per_turn"][0]["correct_by_turn"] == 0.5
    assert (tmp_path / "r" / "report.json").is_file()
