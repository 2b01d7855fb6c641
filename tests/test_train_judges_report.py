"""bench/train_judges_report.py: the proof report lists every command that filled the run directory."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]


def _load():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        spec = importlib.util.spec_from_file_location("train_judges_report", ROOT / "bench" / "train_judges_report.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(ROOT / "bench"))


def _record(stage: str, result: dict) -> dict:
    return {"stage": stage, "result": result, "wall_s": 60.0, "loadavg_before": [0.1, 0, 0], "loadavg_after": [1.5, 0, 0]}


def test_report_lists_every_command_in_order_and_the_pos_sft_row(tmp_path: Path) -> None:
    rep = _load()
    figs = {"n_pairs": 4, "valid_format_rate": 1.0, "accuracy": 0.75, "accuracy_valid_only": 0.75,
            "position_consistent_accuracy": 0.5, "flip_rate": 0.25, "tool_use_rate": None}
    records = [_record("eval:pos-sft:arith", figs), _record("eval:pos:arith", {**figs, "accuracy": 0.5})]
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "results.md").write_text("# Results\n\nbefore\n")
    for cmd in ("python bench/bench_train_judges.py --runs tir", "python bench/bench_train_judges.py --runs pos",
                "python bench/bench_train_judges.py --runs pos --write-docs"):
        rep.write_report(records, tmp_path, SimpleNamespace(command=cmd, out=str(tmp_path), budget_min=1.0), docs=docs)
    text = (docs / "results.md").read_text()
    assert text.count("    python bench/bench_train_judges.py --runs tir\n    python bench/bench_train_judges.py --runs pos\n") == 1
    assert "--runs pos\n    python" not in text  # a repeated command is listed once
    assert "| PoS, SFT only | 1.000 | 0.750 |" in text and "| PoS from pairwise supervision (SFT + GRPO) | 1.000 | 0.500 |" in text
    assert text.startswith("# Results\n\nbefore\n") and text.count(rep.START) == 1
    assert (tmp_path / "commands.txt").read_text().splitlines()[-1].endswith("--runs pos")
