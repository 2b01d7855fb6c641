"""Chat / safety pairs for the no-tool rule and the `judgerl data build arith-mix / chat-mix` CLI (issue 23)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgerl.cli.main import main
from judgerl.data import load_pairs
from judgerl.data.builders.chat_mix import chat_files, chat_mix_pairs, prompt_split_key
from judgerl.data.builders.mixes import parse_forms, write_arith_mix
from judgerl.data.builders.splits import HELD_OUT, TRAIN, overlap, split_of
from judgerl.data.errors import DataFormatError

DATA = Path(__file__).parents[1] / ".." / "shared" / "data"
needs_data = pytest.mark.skipif(not (DATA / "llmbar" / "natural.json").is_file(), reason="needs ../shared/data")


def _last_json(capsys) -> dict:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


@needs_data
def test_chat_pairs_split_by_prompt_with_domains() -> None:
    files = [DATA / "llmbar" / "natural.json", DATA / "pandalm" / "testset-v1.json"]
    train, counts = chat_mix_pairs(files, TRAIN)
    held, _ = chat_mix_pairs(files, HELD_OUT)
    assert train and held and not any(p.tie for p in train + held)
    assert {p.meta["domain"] for p in train + held} == {"chat"}
    assert all(not v for v in overlap(train, held).values())
    assert all(split_of(p.meta["problem_key"]) == HELD_OUT for p in held)
    pandalm = counts[str(DATA / "pandalm" / "testset-v1.json")]
    assert pandalm["ties"] == 105 and pandalm["kept"] + pandalm["other_split"] + pandalm["ties"] == pandalm["read"]
    assert len({p.id for p in train}) == len(train)
    again, _ = chat_mix_pairs(files, TRAIN)
    assert [p.to_dict() for p in again] == [p.to_dict() for p in train]


@needs_data
def test_hh_rlhf_harmless_is_safety_and_dialogues_split_by_first_turn() -> None:
    pairs, _ = chat_mix_pairs([DATA / "hh-rlhf" / "harmless-base-test.jsonl.gz"], TRAIN, limit=50)
    assert len(pairs) == 50 and {p.meta["domain"] for p in pairs} == {"safety"}
    assert prompt_split_key("Human: How do I pick a lock?\n\nAssistant: Why?\n\nHuman: fun") == \
        prompt_split_key("Human:  how do I pick a lock?\n\nAssistant: No.")


def test_chat_bad_inputs_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad_llmbar.json"
    bad.write_text('[{"input": "x", "output_1": "a", "output_2": "b", "label": 3}]')
    with pytest.raises(DataFormatError, match=r"bad_llmbar\.json index 0: field 'label'"):
        chat_mix_pairs([bad], TRAIN)
    with pytest.raises(FileNotFoundError, match="none of"):
        chat_files([tmp_path])
    with pytest.raises(FileNotFoundError, match="no such file"):
        chat_files([tmp_path / "nope.json"])


def test_arith_mix_cli_without_data_resumes_and_refuses_other_options(tmp_path: Path, capsys) -> None:
    out = tmp_path / "arith.jsonl"
    args = ["data", "build", "arith-mix", "--split", "held-out", "--forms", "expression,prose", "--limit", "15",
            "--out", str(out)]
    assert main(args) in (0, None)
    summary = _last_json(capsys)
    assert summary["by_item"] == {"expression": 15, "prose": 15} and summary["pairs_written"] == 30
    pairs = load_pairs(out).pairs
    assert {p.meta["domain"] for p in pairs} == {"arith/expression", "arith/prose"}
    assert all(p.meta["split"] == HELD_OUT for p in pairs)
    assert main(args) in (0, None)  # resumed: nothing new
    assert _last_json(capsys)["pairs_written"] == 30 and len(out.read_text().splitlines()) == 30
    with pytest.raises(ValueError, match="another configuration"):
        write_arith_mix(out, HELD_OUT, ["expression", "prose"], per_form=16)


def test_cli_usage_errors(tmp_path: Path, capsys) -> None:
    out = str(tmp_path / "x.jsonl")
    for extra, said in ((["arith-mix", "--split", "test"], "--split"), (["arith-mix", "--forms", "algebra"], "algebra"),
                        (["chat-mix"], "chat-mix needs --input")):
        assert main(["data", "build", *extra, "--out", out]) == 2
        assert said in capsys.readouterr().err
    with pytest.raises(ValueError, match="unknown arithmetic form"):
        parse_forms("expression,algebra")
    assert parse_forms("all") == parse_forms("") == ["expression", "word", "format", "prose"]


@needs_data
def test_chat_mix_cli_reads_a_directory(tmp_path: Path, capsys) -> None:
    out = tmp_path / "chat.jsonl"
    assert main(["data", "build", "chat-mix", "--split", "held-out", "--input", str(DATA), "--limit", "5",
                 "--out", str(out)]) in (0, None)
    summary = _last_json(capsys)
    assert len(summary["by_item"]) == 4 and summary["pairs_written"] == 20
    assert {p.meta["domain"] for p in load_pairs(out).pairs} == {"chat", "safety"}
