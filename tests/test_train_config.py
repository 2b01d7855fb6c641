"""Recipes load, overrides apply, bad input is reported with the field name; CLI wiring."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgerl.train.config import RecipeError, apply_overrides, load_recipe, recipe_names, recipe_path

RECIPES = ["j1-pav", "j1-pos", "j1-multitask", "tir-judge", "score-regression"]


def test_all_builtin_recipes_present() -> None:
    assert set(RECIPES) <= set(recipe_names())


@pytest.mark.parametrize("name", RECIPES)
def test_recipe_loads_and_validates_with_data(name: str) -> None:
    cfg = load_recipe(name, ["data.path=/x/pairs.jsonl"])
    cfg.validate()
    assert cfg.recipe == name
    assert cfg.grpo["loss_type"] == "dapo"
    assert cfg.grpo["epsilon_high"] > cfg.grpo.get("epsilon", 0.2)
    assert cfg.grpo["mask_truncated_completions"] is True


def test_recipe_without_data_is_rejected() -> None:
    with pytest.raises(RecipeError, match="data.path"):
        load_recipe("j1-pav").validate()


def test_overrides_parse_yaml_values() -> None:
    cfg = load_recipe(
        "j1-pav",
        ["grpo.max_steps=2", "rewards.format=0", "data.limit=null", "resume=true", "dapo.dynamic_sampling=false"],
    )
    assert cfg.grpo["max_steps"] == 2
    assert cfg.rewards.format == 0 and "format" not in cfg.rewards.weights()
    assert cfg.data.limit is None
    assert cfg.resume is True
    assert cfg.dapo.dynamic_sampling is False


@pytest.mark.parametrize(
    "override,match",
    [
        ("dapo.dynamic_sampeling=true", r"dapo.dynamic_sampeling: unknown field \(did you mean 'dynamic_sampling'\?\)"),
        ("warmup.step=3", r"warmup.step: unknown field \(did you mean 'steps'\?\)"),
        ("tools.max_round=2", r"did you mean 'max_rounds'"),
        ("rewards.verdcit=1", r"did you mean 'verdict'"),
        ("data.pth=x", r"did you mean 'path'"),
        ("sedd=3", r"did you mean 'seed'"),
    ],
)
def test_misspelt_section_keys_name_the_closest_valid_one(override: str, match: str) -> None:
    with pytest.raises(RecipeError, match=match):
        load_recipe("j1-pav", [override])


def test_misspelt_trainer_keys_are_errors_with_the_closest_field() -> None:
    cfg = load_recipe("j1-pav", ["data.path=x", "grpo.learing_rate=1e-5"])
    with pytest.raises(RecipeError, match=r"grpo.learing_rate: unknown JudgeGRPOConfig field \(did you mean 'learning_rate'\?\)"):
        cfg.validate()
    cfg = load_recipe("j1-pav", ["data.path=x", "sft.max_stpes=3"])
    with pytest.raises(RecipeError, match=r"did you mean 'max_steps'"):
        cfg.validate()


def test_protocols_are_objects_with_the_recipe_scale() -> None:
    cfg = load_recipe("score-regression", ["data.path=x"])
    pos = cfg.pointwise()
    assert (pos.name, pos.min_score, pos.max_score) == ("pos", 0, 9) and cfg.pairwise() is None
    mt = load_recipe("j1-multitask", ["data.path=x", "score_max=9", "protocol=pas", "protocol_args.max_score=5"])
    assert mt.pairwise().max_score == 5 and mt.pointwise().max_score == 9
    with pytest.raises(RecipeError, match="protocol='nope'"):
        apply_overrides(mt, ["protocol=nope"]).validate()


@pytest.mark.parametrize(
    "override,match",
    [
        ("nokey", "key=value"),
        ("bogus=1", "unknown field 'bogus'"),
        ("seed.x=1", "not a section"),
        ("grpo.x=[1", "valid YAML"),
    ],
)
def test_bad_overrides(override: str, match: str) -> None:
    with pytest.raises(RecipeError, match=match):
        load_recipe("j1-pav", [override])


def test_validate_messages_name_fields() -> None:
    cfg = load_recipe("j1-pav", ["data.path=x"])
    with pytest.raises(RecipeError, match="task="):
        apply_overrides(cfg, ["task=nope"]).validate()
    with pytest.raises(RecipeError, match="rewards.speed"):
        apply_overrides(cfg, ["rewards.speed=1"])
    with pytest.raises(RecipeError, match="non-zero"):
        apply_overrides(cfg, ["rewards.verdict=0", "rewards.consistency=0", "rewards.format=0"]).validate()


def test_recipe_file_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("- a list\n")
    with pytest.raises(RecipeError, match="mapping"):
        load_recipe(str(bad))
    unknown = tmp_path / "u.yaml"
    unknown.write_text("colour: red\n")
    with pytest.raises(RecipeError, match=r"u.yaml: unknown field 'colour'"):
        load_recipe(str(unknown))
    with pytest.raises(RecipeError, match="neither a file nor a built-in"):
        recipe_path("no-such-recipe")


def recipe_reward_funcs(cfg):
    """The reward functions and weights of a recipe, as a run builds them (its protocols and sections)."""
    from judgerl.train.rewards import RewardContext, reward_funcs

    return reward_funcs(cfg.rewards.weights(), RewardContext.from_sections(*cfg.protocols(), cfg.tools, cfg.grpo,
                                                                           cfg.dapo))


def test_grpo_config_built_and_odd_prompt_count_rejected() -> None:
    from judgerl.train.grpo import build_grpo_config

    cfg = load_recipe("j1-pav", ["data.path=x", "output_dir=/tmp/judgerl-test-cfg"])
    funcs, weights = recipe_reward_funcs(cfg)
    assert [f.__name__ for f in funcs] == ["verdict_reward", "consistency_reward", "format_reward"]

    def grpo_args(c):
        return build_grpo_config(c.grpo, c.dapo, output_dir=c.output_dir, seed=c.seed, weights=weights)

    args = grpo_args(cfg)
    assert args.epsilon_high == 0.28 and args.loss_type == "dapo" and args.mask_truncated_completions
    odd = apply_overrides(cfg, ["grpo.per_device_train_batch_size=4", "grpo.num_generations=4"])
    with pytest.raises(RecipeError, match="must be a multiple of 2"):
        grpo_args(odd)
    with pytest.raises(RecipeError, match="unknown JudgeGRPOConfig"):
        grpo_args(apply_overrides(cfg, ["grpo.not_a_field=1"]))


def test_overlong_reward_needs_buffer() -> None:
    cfg = load_recipe("tir-judge", ["data.path=x", "dapo.overlong_buffer=null"])
    with pytest.raises(RecipeError, match="overlong_buffer"):
        recipe_reward_funcs(cfg)
    with pytest.raises(RecipeError, match="overlong_buffer"):
        cfg.validate()


def test_cli_dry_run_and_list(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    from judgerl.cli.main import main

    assert main(["train", "--list-recipes"]) == 0
    assert "j1-pav" in capsys.readouterr().out
    pairs = tmp_path / "p.jsonl"
    pairs.write_text("".join(json.dumps({"prompt": f"q{i}", "chosen": "good", "rejected": "bad"}) + "\n"
                             for i in range(3)))
    rc = main(["train", "--config", "j1-pos", "--data", str(pairs), "--max-steps", "2", "--set", "grpo.beta=0.01",
               "--dry-run"])
    assert rc == 0
    out = capsys.readouterr()
    cfg = json.loads(out.out)
    assert cfg["grpo"]["max_steps"] == 2 and cfg["grpo"]["beta"] == 0.01 and cfg["data"]["path"] == str(pairs)
    assert f"data: 3 training pairs from {pairs}" in out.err  # the data was read as the run reads it
    assert main(["train", "--config", "j1-pav", "--dry-run"]) == 2  # no data
    assert "data.path" in capsys.readouterr().err
    # --dry-run reads --data: a missing file or a bad line is an error before any model loads
    assert main(["train", "--config", "j1-pav", "--data", str(tmp_path / "nope.jsonl"), "--dry-run"]) == 2
    assert "nope.jsonl" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text(pairs.read_text() + "{not json\n")
    assert main(["train", "--config", "j1-pav", "--data", str(bad), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "bad.jsonl" in err and "4" in err  # names the file and the line


@pytest.mark.parametrize("override", ["grpo.max_steps=abc", "grpo.max_steps=0", "grpo.num_generations=-2",
                                      "grpo.learning_rate=fast"])
def test_bad_trainer_values_are_rejected_before_training(override):
    from judgerl.train import RecipeError, load_recipe

    with pytest.raises(RecipeError, match=override.split("=")[0]):
        load_recipe("j1-pav", ["data.path=pairs.jsonl", override]).validate()


@pytest.mark.parametrize("name", ["tir-judge-distill", "tir-judge-zero", "j1-pav-distill"])
def test_a_saved_config_reloads_with_its_numbers(name: str, tmp_path: Path) -> None:
    """``--resume`` reloads ``<output_dir>/config.json``; read as YAML, JSON's ``2e-05`` (the recipes'
    ``2.0e-5`` learning rate after a round trip) was the string "2e-05" and the reload failed validation."""
    cfg = load_recipe(name, ["data.path=/x/pairs.jsonl"])
    saved = tmp_path / "config.json"
    saved.write_text(json.dumps(cfg.to_dict(), indent=2))
    assert "2e-05" in saved.read_text()
    again = load_recipe(str(saved))
    again.validate()
    assert again.grpo["learning_rate"] == cfg.grpo["learning_rate"] == 2e-5
    assert again.to_dict() == cfg.to_dict()
    saved.write_text("{not json")
    with pytest.raises(RecipeError, match="config.json: invalid JSON"):
        load_recipe(str(saved))


@pytest.mark.parametrize("text, value", [("2e-06", 2e-06), ("1e-5", 1e-5), ("1.0e-5", 1e-5), ("3", 3),
                                         ("1_000", 1000), ("0.5", 0.5), ("-2E3", -2000.0), ("e5", "e5"),
                                         ("1e", "1e"), (".inf", float("inf")), ("abc", "abc")])
def test_yaml_values_read_exponent_floats(text, value) -> None:
    """``grpo.learning_rate=2e-06`` (Python's own str of 2e-06) is a float, not the string PyYAML's
    YAML 1.1 rule made of it (the study's policy stage crashed in AdamW: '<=' float vs str)."""
    from judgerl.train.config import load_yaml

    assert load_yaml(text) == value and type(load_yaml(text)) is type(value)


def test_policy_override_learning_rate_in_exponent_form() -> None:
    from judgerl.train.policy_config import load_policy_recipe

    cfg = load_policy_recipe("policy-grpo", ["grpo.learning_rate=2e-06"])
    assert cfg.grpo["learning_rate"] == 2e-06
