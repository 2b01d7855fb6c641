"""Every recipe trains 2 GRPO steps on CPU with the embedded model; resume continues a killed run.

Slow (each run loads the 135M model, does 1 SFT warm-up step and 2 GRPO steps with tiny
settings): run with ``pytest --runslow tests/test_train_recipes_slow.py``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judgerl.train.callbacks import read_metrics
from judgerl.train.config import load_recipe

# Generous timeouts: on a shared 2-core CPU one tiny GRPO step can take minutes.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]

TINY = [
    "data.builder=gsm8k-arith",
    "data.limit=4",
    "warmup.steps=1",
    "warmup.batch_size=2",
    "grpo.max_steps=2",
    "grpo.num_generations=2",
    "grpo.per_device_train_batch_size=4",  # 2 prompts x 2 generations: one whole pair
    "grpo.max_completion_length=16",
    "grpo.save_steps=1",
    "freeze_layers=24",
    "dapo.max_sampling_rounds=1",
]


def tiny(recipe: str, out: Path, shared_data: Path, *extra: str):
    return load_recipe(
        recipe,
        [*TINY, f"data.source={shared_data / 'gsm8k' / 'train.jsonl'}", f"output_dir={out}", *extra],
    )


@pytest.mark.parametrize(
    "recipe,extra",
    [
        ("j1-pav", ()),
        ("j1-pos", ()),
        ("j1-multitask", ("grpo.per_device_train_batch_size=8",)),
        ("score-regression", ()),
        ("tir-judge", ("grpo.max_completion_length=32", "dapo.overlong_buffer=8", "tools.max_rounds=1",
                       "tools.max_new_tokens=16", "dapo.dynamic_sampling=false")),
        # distillation cold start (programmatic teacher) + LoRA on the top 2 blocks
        ("j1-pav-distill", ("freeze_layers=0", "lora.top_layers=2")),
        ("tir-judge-distill", ("freeze_layers=0", "lora.top_layers=2", "grpo.max_completion_length=32",
                               "dapo.overlong_buffer=8", "tools.max_rounds=1", "tools.max_new_tokens=16",
                               "dapo.dynamic_sampling=false")),
    ],
)
def test_recipe_runs_two_steps(recipe: str, extra: tuple[str, ...], tmp_path: Path, shared_data: Path,
                               embedded_model_dir: Path) -> None:
    from judgerl.train.run import run_training

    result = run_training(tiny(recipe, tmp_path, shared_data, *extra))
    assert result["global_step"] == 2
    assert (Path(result["final_model"]) / "model.safetensors").is_file()
    assert (tmp_path / "checkpoint-2").is_dir()
    recs = [r for r in read_metrics(tmp_path / "metrics.jsonl") if r["phase"] == "grpo" and "reward" in r]
    assert [r["step"] for r in recs] == [1, 2]
    assert any(k.startswith("rewards/") for k in recs[0])
    assert "completions/mean_length" in recs[0]
    if recipe.startswith("tir-judge"):
        assert "judge/tool_use_rate" in recs[0]
        assert "rewards/tir_reward/mean" in recs[0]
    else:
        assert any(k.startswith("judge/") and "valid_format" in k for k in recs[0])
    assert (tmp_path / "curves_grpo.png").is_file()
    json.loads((tmp_path / "config.json").read_text())
    assert (Path(result["sft_model"]) / "done.json").is_file()
    if recipe.endswith("-distill"):  # teacher trajectories kept by rejection sampling, LoRA adapter saved
        stats = json.loads((tmp_path / "sft_stats.json").read_text())
        assert stats["teacher"] == "programmatic/arithmetic" and stats["selected"] == stats["rows"] == 8
        assert (Path(result["final_model"]) / "adapter" / "adapter_model.safetensors").is_file()


def test_resume_after_kill_continues_from_last_checkpoint(tmp_path: Path, shared_data: Path,
                                                          embedded_model_dir: Path) -> None:
    """Start `judgerl train` for 3 steps, kill it once checkpoint-2 exists, resume to step 3."""
    out = tmp_path / "run"
    sets = [*TINY, "grpo.max_steps=3", "warmup.steps=0", f"data.source={shared_data / 'gsm8k' / 'train.jsonl'}"]
    cmd = [sys.executable, "-m", "judgerl.cli.main", "train", "--config", "j1-pav", "--output-dir", str(out)]
    for s in sets:
        cmd += ["--set", s]
    env = dict(os.environ, JUDGERL_CACHE=os.environ.get("JUDGERL_CACHE", str(Path.home() / ".cache" / "judgerl")))
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.time() + 1500
        while not (out / "checkpoint-2" / "trainer_state.json").is_file():
            if proc.poll() is not None:
                pytest.fail(f"training exited early: {proc.stderr.read().decode()[-2000:]}")
            if time.time() > deadline:
                pytest.fail("no checkpoint-2 within the time limit")
            time.sleep(2)
        time.sleep(2)  # let the checkpoint finish writing (optimizer, rng state)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert not (out / "checkpoint-3").exists()

    from judgerl.train.grpo import last_checkpoint
    from judgerl.train.run import run_training

    assert last_checkpoint(out).endswith("checkpoint-2")
    cfg = load_recipe("j1-pav", [*sets, f"output_dir={out}", "resume=true"])
    result = run_training(cfg)
    assert result["resumed_from"].endswith("checkpoint-2")
    assert result["global_step"] == 3
    steps = [r["step"] for r in read_metrics(out / "metrics.jsonl") if r["phase"] == "grpo" and "reward" in r]
    assert steps[-1] == 3 and steps.count(3) == 1  # step 3 trained once, after the resume


def test_pointwise_tir_if_recipe_runs_two_steps(tmp_path: Path, shared_data: Path, embedded_model_dir: Path) -> None:
    """tir-judge-if (task tir-pointwise): the IF teacher's SFT, then 2 GRPO steps of pointwise tool-loop rollouts
    scored by the TIR reward against each row's gold score."""
    from judgerl.data.builders.if_pairs import IFPairSettings, write_if_pairs
    from judgerl.gold.ifeval import IFEvalGoldJudge
    from judgerl.train.run import run_training

    checker = IFEvalGoldJudge.from_file(shared_data / "ifeval" / "input_data.jsonl")
    pairs = tmp_path / "if-pairs.jsonl"
    write_if_pairs(checker.records[:12], checker, pairs, IFPairSettings(split="train", seed=0))
    cfg = load_recipe("tir-judge-if", [f"data.path={pairs}", "data.limit=2", f"output_dir={tmp_path / 'run'}",
                                       "warmup.steps=1", "warmup.batch_size=2", "grpo.max_steps=2",
                                       "grpo.num_generations=2", "grpo.per_device_train_batch_size=4",
                                       "grpo.max_completion_length=32", "dapo.overlong_buffer=8", "grpo.save_steps=1",
                                       "tools.max_rounds=1", "tools.max_new_tokens=16", "lora.top_layers=2",
                                       "dapo.dynamic_sampling=false"])
    result = run_training(cfg)
    assert result["global_step"] == 2
    stats = json.loads((tmp_path / "run" / "sft_stats.json").read_text())
    assert stats["teacher"] == "programmatic/domains" and stats["selected"] == stats["rows"] == 4
    recs = [r for r in read_metrics(tmp_path / "run" / "metrics.jsonl") if r["phase"] == "grpo" and "reward" in r]
    assert [r["step"] for r in recs] == [1, 2] and "rewards/tir_reward/mean" in recs[0]
    assert (Path(result["final_model"]) / "adapter" / "adapter_model.safetensors").is_file()


def test_a_time_limited_sft_stage_is_unfinished_and_continues_from_its_checkpoint(
        tmp_path: Path, shared_data: Path, embedded_model_dir: Path) -> None:
    """A long SFT spans sessions: the time limit stops it with a checkpoint and no done.json (no GRPO on a
    half-trained model); the next call continues from the checkpoint to max_steps."""
    from judgerl.train.setup import TrainSetup
    from judgerl.train.stages import train_recipe

    cfg = tiny("j1-pav-distill", tmp_path, shared_data, "warmup.steps=3", "lora.top_layers=2", "freeze_layers=0")
    setup = TrainSetup.from_config(cfg)
    first = train_recipe(setup, tmp_path, resume=True, sft=True, grpo=True, deadline=time.time() - 1)
    assert first["sft_done"] is None and first["stopped_early"] and first["final_model"] is None
    assert not (tmp_path / "sft" / "done.json").exists() and (tmp_path / "sft-logs" / "checkpoint-1").is_dir()
    second = train_recipe(setup, tmp_path, resume=True, sft=True, grpo=False)
    assert second["sft_done"]["steps"] == 3 and not second["sft_done"]["stopped_early"]
    steps = [r["step"] for r in read_metrics(tmp_path / "metrics.jsonl") if r["phase"] == "warmup" and "loss" in r]
    assert steps == [1, 2, 3]  # step 1 once: the second call continued, it did not start over
