"""TIR-Judge-Zero's round loop: layout, done markers, resume at round granularity, the prefill nudge
(phases replaced by fakes that record their calls; the real phases run in the slow tests)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgerl.train import zero as bootstrap
from judgerl.train.config import RecipeError, load_recipe
from judgerl.train.sft import SFTExample

PAIRS = [{"id": f"p{i}", "prompt": f"What is {i} + 1?", "chosen": f"{i} + 1 = {i + 1}", "rejected": f"{i} + 1 = {i + 5}",
          "source": "t", "tie": False, "meta": {"expression": f"{i} + 1", "value": i + 1}} for i in range(3)]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    f = tmp_path / "pairs.jsonl"
    f.write_text("".join(json.dumps(p) + "\n" for p in PAIRS))
    return f


class Fakes:
    """Fake train_recipe / sample_round writing the files the real ones write."""

    def __init__(self, fail_sampling_in_round: int | None = None) -> None:
        self.calls: list[tuple] = []
        self.fail = fail_sampling_in_round

    def train_recipe(self, setup, out, *, resume=False, init_path=None, init_adapter=None, examples=None, sft=True,
                     grpo=True, max_steps=None, deadline=None, prefill=None):
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        if grpo:
            self.calls.append(("rl", out.parent.name, init_path, init_adapter, prefill, max_steps))
            (out / "final").mkdir(parents=True, exist_ok=True)
            (out / "metrics.jsonl").write_text(json.dumps({"phase": "grpo", "step": 2, "reward": 0.3}) + "\n")
            return {"stopped_early": False, "global_step": 2}
        self.calls.append(("sft", out.name, init_path, len(examples)))
        (out / "sft").mkdir(parents=True, exist_ok=True)
        (out / "sft" / "done.json").write_text("{}")
        return {"stopped_early": False}

    def sample_round(self, policy_dir, rows, r, *, protocol, params, samples, force_answer, tools, seed, sandbox=None):
        self.calls.append(("sample", r, Path(policy_dir).parent.parent.name, rows[0]["prompt"][-1]["role"]))
        if r == self.fail:
            return [], {"selected": 0}
        ex = [SFTExample(tuple(rows[0]["prompt"][:2]), (("model", "<think>x</think><verdict>A</verdict>"),), "k")]
        return ex, {"selected": 1, "samples": len(rows) * samples}


def zero_config(data: Path, out: Path, *extra: str):
    return load_recipe("tir-judge-zero", [f"data.path={data}", f"output_dir={out}", "zero.rounds=2", "zero.rl_steps=2",
                                          "lora.r=0", *extra])


def test_rounds_layout_prefill_and_original_base(monkeypatch, data: Path, tmp_path: Path, embedded_model_dir) -> None:
    fakes = Fakes()
    monkeypatch.setattr(bootstrap, "train_recipe", fakes.train_recipe)
    monkeypatch.setattr(bootstrap, "sample_round", fakes.sample_round)
    out = tmp_path / "run"
    result = bootstrap.run_zero(zero_config(data, out))
    base = str(embedded_model_dir)
    r0, r1 = out / "rounds" / "round-0", out / "rounds" / "round-1"
    assert [c[0] for c in fakes.calls] == ["rl", "sample", "sft", "rl", "sample", "sft", "rl"]
    # round 0 RL from the base with the prefill nudge; later rounds from the previous SFT model, no nudge
    assert fakes.calls[0][2:5] == (base, None, "<think>Let me check with Python.\n```python\n")
    assert fakes.calls[3][2:5] == (str(r0 / "sft"), None, None)
    assert fakes.calls[6][2] == str(r1 / "sft") and fakes.calls[6][5] == 2
    # sampling uses the RL policy of its round; round 0's rows end in the prefill (assistant)
    assert fakes.calls[1] == ("sample", 0, "round-0", "assistant") and fakes.calls[4][3] == "user"
    # every SFT restarts from the ORIGINAL base
    assert all(c[2] == base for c in fakes.calls if c[0] == "sft")
    assert result["final_model"] == str(out / "rounds" / "round-2" / "rl" / "final")
    rounds = [json.loads(x) for x in (out / "zero_rounds.jsonl").read_text().splitlines()]
    assert [r["round"] for r in rounds] == [0, 1, 2] and rounds[0]["rl"] == {"step": 2, "reward": 0.3}
    assert rounds[0]["sampling"]["selected"] == 1 and (r0 / "selected.jsonl").is_file()
    assert json.loads((out / "config.json").read_text())["zero"]["rounds"] == 2


def test_resume_skips_finished_rounds_and_phases(monkeypatch, data: Path, tmp_path: Path, embedded_model_dir) -> None:
    out = tmp_path / "run"
    fakes = Fakes(fail_sampling_in_round=1)
    monkeypatch.setattr(bootstrap, "train_recipe", fakes.train_recipe)
    monkeypatch.setattr(bootstrap, "sample_round", fakes.sample_round)
    with pytest.raises(RecipeError, match="zero round 1: no sampled trajectory"):
        bootstrap.run_zero(zero_config(data, out))
    assert (out / "rounds" / "round-0" / "done.json").is_file()
    assert (out / "rounds" / "round-1" / "rl" / "done.json").is_file()
    with pytest.raises(RecipeError, match="--resume"):
        bootstrap.run_zero(zero_config(data, out))
    fakes2 = Fakes()
    monkeypatch.setattr(bootstrap, "train_recipe", fakes2.train_recipe)
    monkeypatch.setattr(bootstrap, "sample_round", fakes2.sample_round)
    result = bootstrap.run_zero(zero_config(data, out, "resume=true"))
    # round 0 and round 1's RL were done: the resumed run samples round 1, SFTs, and runs the last RL
    assert [c[0] for c in fakes2.calls] == ["sample", "sft", "rl"]
    assert [r["round"] for r in result["rounds"]] == [0, 1, 2]


def test_zero_recipe_validation(data: Path, tmp_path: Path) -> None:
    with pytest.raises(RecipeError, match="zero.rounds needs task: tir"):
        load_recipe("tir-judge-zero", [f"data.path={data}", "task=pairwise"]).validate()
    with pytest.raises(RecipeError, match="exclude each other"):
        load_recipe("tir-judge-zero", [f"data.path={data}", "distill.teacher=programmatic"]).validate()
    with pytest.raises(RecipeError, match="zero.temperature"):
        load_recipe("tir-judge-zero", [f"data.path={data}", "zero.temperature=0"]).validate()
    with pytest.raises(RecipeError, match="zero.samples"):
        load_recipe("tir-judge-zero", [f"data.path={data}", "zero.samples=0"]).validate()
    with pytest.raises(RecipeError, match="freeze_layers and lora.r"):
        load_recipe("tir-judge-zero", [f"data.path={data}", "freeze_layers=3"]).validate()
    with pytest.raises(RecipeError, match="warmup.steps is 0"):
        load_recipe("j1-pav-distill", [f"data.path={data}", "warmup.steps=0"]).validate()
    with pytest.raises(RecipeError, match="distill.temperature"):
        load_recipe("j1-pav-distill", [f"data.path={data}", "distill.samples=4"]).validate()


def test_a_grpo_prefill_needs_the_tool_loop(data: Path, tmp_path: Path) -> None:
    # only the tool-loop rollouts (the Judge) read a prefill as part of the judge's turn
    from judgerl.train.setup import TrainSetup
    from judgerl.train.stages import train_recipe

    config = load_recipe("j1-pav", [f"data.path={data}", f"output_dir={tmp_path / 'run'}"])
    with pytest.raises(ValueError, match="prefill needs a TIR task"):
        train_recipe(TrainSetup.from_config(config), config.output_dir, prefill="<think>")
    assert not (tmp_path / "run").exists()
