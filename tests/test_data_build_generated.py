"""`judgerl data build arithmetic` without --input: generated pairs (the demo needs no data folder)."""

from __future__ import annotations

import json
from pathlib import Path

from judgerl.cli.main import main
from judgerl.data import load_pairs
from judgerl.data.builders import generated_arithmetic_pairs
from judgerl.data.builders.arith import evaluate


def test_generated_pairs_are_verifiable_unique_and_seeded() -> None:
    pairs = generated_arithmetic_pairs(200, seed=3)
    assert len(pairs) == 200 and len({p.meta["expression"] for p in pairs}) == 200
    for p in pairs:
        assert p.chosen == f"{p.meta['expression']} = {evaluate(p.meta['expression'])}"
        assert p.rejected != p.chosen and 0 <= p.meta["value"] <= 999
    assert [p.to_dict() for p in generated_arithmetic_pairs(200, seed=3)] == [p.to_dict() for p in pairs]
    held = generated_arithmetic_pairs(50, seed=3, exclude={pairs[0].meta["expression"]})
    assert pairs[0].meta["expression"] not in {p.meta["expression"] for p in held}


def test_cli_builds_without_input(tmp_path: Path, capsys) -> None:
    out = tmp_path / "arith.jsonl"
    assert main(["data", "build", "arithmetic", "--limit", "12", "--seed", "1", "--out", str(out)]) in (0, None)
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["written"] == 12
    assert len(load_pairs(out).pairs) == 12


def test_demo_reads_no_sibling_data_folder() -> None:
    demo = (Path(__file__).parents[1] / "scripts" / "demo.sh").read_text()
    commands = [line for line in demo.splitlines() if not line.lstrip().startswith("#")]
    assert not any("shared" in line or "gsm8k" in line.lower() for line in commands)
