"""`judgerl data inspect` through judgerl.cli.main.main(argv)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgerl.cli.main import main

FIXTURES = Path(__file__).parent / "fixtures" / "data"


def test_inspect_real_file_prints_format_and_counts(
    shared_data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "inspect", str(shared_data / "pandalm" / "testset-v1.json")]) == 0
    out = capsys.readouterr().out
    assert "pandalm (detected)" in out
    for line in ("records   999", "pairs     999", "ties      105", "identical 0", "skipped   0"):
        assert line in out
    assert "pandalm" in out.split("pairs by source")[1]


def test_inspect_json_output(shared_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "inspect", str(shared_data / "llmbar" / "natural.json"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["format"] == "llmbar" and summary["detected"] is True
    assert (summary["records"], summary["pairs"], summary["ties"], summary["skipped"]) == (100, 100, 0, 0)
    assert summary["identical"] == 0
    assert summary["sources"] == {"llmbar/natural": {"pairs": 100, "ties": 0, "identical": 0}}


def test_inspect_named_format_and_sources(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "inspect", str(FIXTURES / "rmbench.json"), "--format", "RM-Bench"]) == 0
    out = capsys.readouterr().out
    assert "rmbench (given)" in out and "records   2" in out and "pairs     18" in out
    assert "rmbench/chat " in out and "rmbench/math " in out  # difficulty is in meta, not the source


def test_inspect_generic_with_field_flags(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["data", "inspect", str(FIXTURES / "generic.jsonl"), "--json"]
    for item in ("prompt=question", "chosen=good", "rejected=bad", "source=cat", "tie=is_tie"):
        argv += ["--field", item]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["format"] == "generic" and summary["ties"] == 1
    assert set(summary["sources"]) == {"math", "translation", "vocabulary"}


def test_inspect_bad_record_fails_with_location(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text('{"prompt": "p", "chosen": "c", "rejected": "r"}\n{"prompt": "p", "rejected": "r"}\n')
    assert main(["data", "inspect", str(path)]) == 2  # a bad data file is an input error (judgerl.cli.errors)
    assert "data.jsonl line 2: field 'chosen' is missing" in capsys.readouterr().err
    assert main(["data", "inspect", str(path), "--skip-invalid"]) == 0
    out = capsys.readouterr().out
    assert (
        "rewardbench (detected)" in out and "skipped   1" in out and "line 2: field 'chosen' is missing" in out
    )


def test_inspect_shows_identical_responses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "natural.json"
    recs = [{"input": "q", "output_1": "same", "output_2": "same", "label": 1},
            {"input": "q", "output_1": "a", "output_2": "b", "label": 1}]
    path.write_text(json.dumps(recs))
    assert main(["data", "inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "identical 1 (non-tie pairs with the same response twice" in out
    row = next(line for line in out.splitlines() if "llmbar/natural" in line)
    assert row.split("│")[2:5] == ["     2 ", "    0 ", "         1 "]
    assert main(["data", "inspect", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["identical"] == 1


def test_inspect_skips_a_bad_first_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text('{"prompt": "p", "rejected": "r"}\n{"prompt": "p", "chosen": "c", "rejected": "r"}\n' * 2)
    assert main(["data", "inspect", str(path)]) == 2
    assert "data.jsonl line 1: field 'chosen' is missing" in capsys.readouterr().err
    assert main(["data", "inspect", str(path), "--skip-invalid"]) == 0
    out = capsys.readouterr().out
    assert "rewardbench (detected)" in out and "skipped   2" in out and "pairs     2" in out


def test_inspect_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fixture = str(FIXTURES / "generic.jsonl")
    assert main(["data", "inspect", fixture, "--field", "prompt"]) == 2
    assert "expected CANONICAL=RECORD_FIELD" in capsys.readouterr().err
    assert main(["data", "inspect", fixture]) == 2
    assert "match no known format" in capsys.readouterr().err
    assert main(["data", "inspect", str(tmp_path / "missing.jsonl")]) == 2
    assert main(["data", "inspect", fixture, "--format", "nope"]) == 2
    assert "known formats: llmbar" in capsys.readouterr().err
