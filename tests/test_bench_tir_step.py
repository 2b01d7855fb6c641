"""bench/bench_tir_step.py --shipped: both kinds continue the shipped TIR judge on the same pairs (fast checks)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import bench_tir_step  # noqa: E402


def test_shipped_runs_share_model_pairs_and_batch(shared_data, tmp_path):
    from judgerl.train.config import load_recipe

    runs = bench_tir_step.shipped_runs(shared_data, 6, tmp_path)
    assert set(runs) == {"plain", "tir"}
    cfgs = {k: load_recipe(str(c)) for k, (c, _) in runs.items()}
    for cfg in cfgs.values():
        cfg.validate()
    assert cfgs["plain"].task == "pairwise" and cfgs["tir"].task == "tir"
    same = lambda c: (c.data.builder, c.data.source, c.data.limit, c.lora.r, c.lora.top_layers,  # noqa: E731
                      c.grpo["per_device_train_batch_size"], c.grpo["num_generations"])
    assert same(cfgs["plain"]) == same(cfgs["tir"]) == (
        "gsm8k-arith", str(shared_data / "gsm8k" / "train.jsonl"), 6, 16, 0, 8, 4)
    assert runs["plain"][1] == runs["tir"][1] and (runs["tir"][1] / "adapter_model.safetensors").is_file()


def test_shipped_runs_name_a_missing_data_folder(tmp_path):
    with pytest.raises(SystemExit, match="gsm8k/train.jsonl"):
        bench_tir_step.shipped_runs(tmp_path / "nowhere", 6, tmp_path)


def test_proof_runs_say_how_to_run_without_them(tmp_path):
    args = bench_tir_step.argparse.Namespace(proof=tmp_path, plain_run="pav", tir_run="tir")
    with pytest.raises(SystemExit, match="--shipped"):
        bench_tir_step.proof_runs(args)
