"""`judgerl data build math|humaneval` end to end (through cli.main.main)."""

from __future__ import annotations

import json

from judgerl.cli.main import main
from judgerl.data import load_pairs


def test_build_math_cli(shared_data, tmp_path, capsys):
    out = tmp_path / "gsm8k_pairs.jsonl"
    src = shared_data / "gsm8k" / "example_model_solutions.jsonl"
    rc = main(["data", "build", "math", "--input", str(src), "--out", str(out), "--limit", "30",
               "--max-pairs-per-question", "2"])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["written"] == 30 and summary["disagreements"] == 0
    loaded = load_pairs(out)
    assert loaded.format == "judgerl" and len(loaded.pairs) == 30
    assert all(p.source == "gsm8k" for p in loaded.pairs)


def test_build_humaneval_cli_subprocess(tmp_path, capsys):
    out = tmp_path / "he.jsonl"
    rc = main(["data", "build", "humaneval", "--out", str(out), "--limit", "3", "--executor", "subprocess"])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["problems"] == 3 and summary["executor"] == "subprocess"
    loaded = load_pairs(out)
    assert len(loaded.pairs) == summary["written"] >= 2
    assert loaded.pairs[0].meta["task_id"] == "HumanEval/0"


def test_build_humaneval_cli_sandbox(tmp_path, capsys):
    out = tmp_path / "he.jsonl.gz"
    rc = main(["data", "build", "humaneval", "--out", str(out), "--limit", "2", "--executor", "sandbox"])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["executor"] in ("bwrap", "fallback")
    assert len(load_pairs(out).pairs) == summary["written"]


def test_build_math_needs_input(tmp_path, capsys):
    rc = main(["data", "build", "math", "--out", str(tmp_path / "x.jsonl")])
    assert rc == 2
    assert "--input" in capsys.readouterr().err


def test_build_unknown_kind(tmp_path, capsys):
    rc = main(["data", "build", "poetry", "--out", str(tmp_path / "x.jsonl")])
    assert rc == 2
    assert not (tmp_path / "x.jsonl").exists()


def test_build_missing_input_file(tmp_path, capsys):
    rc = main(["data", "build", "math", "--input", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "x.jsonl")])
    assert rc == 2
    assert "nope.jsonl" in capsys.readouterr().err
