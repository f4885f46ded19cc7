"""GRPO configuration: flags with the field docs as help, config files, precedence, validation."""

import argparse
from dataclasses import fields

import pytest

from agents.grpo.config import GRPOConfig, add_config_args, config_from_args, field_help, read_config_file
from cudaperf_env.reward import PRESETS


def parse(argv):
    parser = argparse.ArgumentParser()
    add_config_args(parser)
    return config_from_args(parser.parse_args(argv))


def test_every_field_is_documented_and_its_doc_is_the_help_text(capsys):
    helps = field_help()
    assert set(helps) == {f.name for f in fields(GRPOConfig)}
    assert all(len(text) > 10 for text in helps.values())
    with pytest.raises(SystemExit):
        parse(["--help"])
    out = capsys.readouterr().out
    assert "Discount of later turns' scores" in out and "--no-ranker" in out and "--max-minutes" in out


def test_presets_are_the_rewards_and_wrong_names_are_refused():
    assert set(PRESETS) == {"cudaperf", "speedup_only", "cuda_agent", "kevin"}
    for preset in PRESETS:
        assert parse(["--preset", preset]).reward().preset == preset
    with pytest.raises(SystemExit):
        parse(["--preset", "best"])
    with pytest.raises(ValueError, match="group must be >= 2"):
        GRPOConfig(group=1)
    with pytest.raises(ValueError, match="advantage must be one of grpo, drgrpo"):
        GRPOConfig(advantage="ppo")


def test_toml_and_yaml_files_are_the_same_config_and_flags_override_them(tmp_path):
    toml = tmp_path / "run.toml"
    toml.write_text('[grpo]\npreset = "speedup_only"\nturns = 3\ngroup = 8\nranker = false\ntask = ["a", "b"]\n')
    yaml = tmp_path / "run.yaml"
    yaml.write_text("preset: speedup_only\nturns: 3\ngroup: 8\nranker: false\ntask: [a, b]\n")
    assert read_config_file(toml) == read_config_file(yaml)
    config = parse(["--config", str(toml), "--turns", "4", "--out", "x"])
    assert (config.preset, config.turns, config.group, config.ranker, config.task, config.out) == (
        "speedup_only", 4, 8, False, ("a", "b"), "x")  # fmt: skip
    assert parse(["--task", "a", "--task", "b", "--ranker"]).task == ("a", "b")


def test_unknown_keys_suggest_the_closest_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("grpup: 4\n")
    with pytest.raises(ValueError, match="unknown option 'grpup'; did you mean 'group'"):
        read_config_file(bad)
    with pytest.raises(ValueError, match="must be .toml, .yaml or .yml"):
        read_config_file(tmp_path / "x.json")


def test_cudaperf_train_grpo_is_registered(capsys):
    from cudaperf_env.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["train", "grpo", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "--preset {cudaperf,cuda_agent,kevin,speedup_only}" in out and "--config CONFIG" in out
