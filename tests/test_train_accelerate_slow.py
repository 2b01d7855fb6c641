"""The scale path: recipes under ``accelerate launch`` with 2 CPU processes (gloo).

One launch trains, in the same two processes, a tiny ``j1-pav`` run (pairwise verdict +
consistency rewards: the consistency reward raises if the two orders of a pair reach different
processes, and the trainer checks the dealing of the first generation batch at start-up) and a tiny
``tir-judge-zero`` run (one Zero round: RL with forced answers and TIR rollouts in the sandbox,
rejection sampling on the main process, SFT from the base with LoRA, the last RL phase). The other
recipes share these code paths (same trainer, SFT stage and rollouts); ``tests/support/train_launch.py``
runs any of them the same way.

Measured: about 5 minutes on the shared 2-core machine at load average 7; about 2 minutes idle.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

REPO = Path(__file__).resolve().parents[1]


def test_two_cpu_processes_train_j1_pav_and_a_zero_round(tmp_path: Path, shared_data: Path,
                                                         embedded_model_dir: Path) -> None:
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
           "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
           "-m", "tests.support.train_launch", str(tmp_path), str(shared_data / "gsm8k" / "train.jsonl"),
           "j1-pav", "tir-judge-zero"]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(REPO))
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=1700)
    assert proc.returncode == 0, proc.stderr[-4000:]
    for recipe in ("j1-pav", "tir-judge-zero"):
        ranks = [json.loads((tmp_path / recipe / f"rank-{i}.json").read_text()) for i in (0, 1)]
        assert [r["process_index"] for r in ranks] == [0, 1]
        assert all(r["num_processes"] == 2 and r["distributed_type"].endswith("MULTI_CPU") for r in ranks)
    pav = tmp_path / "j1-pav"
    recs = [json.loads(x) for x in (pav / "metrics.jsonl").read_text().splitlines()]
    grpo = [r for r in recs if r["phase"] == "grpo" and "reward" in r]
    assert [r["step"] for r in grpo] == [1] and "judge/position_consistent_accuracy" in grpo[0]
    assert (pav / "final" / "model.safetensors").is_file()
    zero = tmp_path / "tir-judge-zero"
    r0 = zero / "rounds" / "round-0"
    for f in ("done.json", "selected.jsonl", "sample_stats.json", "sft/done.json", "sft/adapter/adapter_model.safetensors",
              "rl/done.json", "rl/final/model.safetensors"):
        assert (r0 / f).is_file(), f
    assert (zero / "rounds" / "round-1" / "rl" / "final" / "adapter" / "adapter_config.json").is_file()
    rounds = [json.loads(x) for x in (zero / "zero_rounds.jsonl").read_text().splitlines()]
    assert [r["round"] for r in rounds] == [0, 1]  # written once, by the main process
    assert rounds[0]["rl"]["judge/forced_rate"] >= 0 and rounds[0]["sampling"]["samples"] == 8
