"""Rule-built IFEval instruction-constraint pairs: generators per instruction type, labels checked by
the IFEval checker, splits by prompt key, determinism, pointwise records, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("lm_eval")
pytest.importorskip("langdetect")

from judgerl.data.builders.if_breaks import break_candidates  # noqa: E402
from judgerl.data.builders.if_compose import SUPPORTED, UnsupportedInstruction, compose, plan_for  # noqa: E402
from judgerl.data.builders.if_pairs import (  # noqa: E402
    IFPairSettings,
    build_if_prompt,
    prompt_split,
    write_if_pairs,
)
from judgerl.data.builders.splits import overlap  # noqa: E402
from judgerl.data.errors import DataFormatError  # noqa: E402
from judgerl.gold.ifeval import IFEvalGoldJudge, score_from_counts  # noqa: E402
from judgerl.gold.records import IFEvalRecord, load_records  # noqa: E402
from judgerl.types import PreferencePair  # noqa: E402

#: One typical argument set per instruction type (as IFEval's input_data.jsonl writes them).
KWARGS = {
    "change_case:capital_word_frequency": {"capital_relation": "at least", "capital_frequency": 5},
    "change_case:english_capital": {},
    "change_case:english_lowercase": {},
    "combination:repeat_prompt": {"prompt_to_repeat": "Write a short note about rivers."},
    "combination:two_responses": {},
    "detectable_content:number_placeholders": {"num_placeholders": 3},
    "detectable_content:postscript": {"postscript_marker": "P.P.S"},
    "detectable_format:constrained_response": {},
    "detectable_format:json_format": {},
    "detectable_format:multiple_sections": {"section_spliter": "Section", "num_sections": 3},
    "detectable_format:number_bullet_lists": {"num_bullets": 4},
    "detectable_format:number_highlighted_sections": {"num_highlights": 2},
    "detectable_format:title": {},
    "keywords:existence": {"keywords": ["river", "bridge"]},
    "keywords:forbidden_words": {"forbidden_words": ["good", "time"]},
    "keywords:frequency": {"keyword": "water", "frequency": 3, "relation": "at least"},
    "keywords:letter_frequency": {"letter": "z", "let_frequency": 4, "let_relation": "at least"},
    "language:response_language": {"language": "de"},
    "length_constraints:nth_paragraph_first_word": {"num_paragraphs": 3, "nth_paragraph": 2, "first_word": "rivers"},
    "length_constraints:number_paragraphs": {"num_paragraphs": 3},
    "length_constraints:number_sentences": {"num_sentences": 5, "relation": "less than"},
    "length_constraints:number_words": {"num_words": 120, "relation": "at least"},
    "punctuation:no_comma": {},
    "startend:end_checker": {"end_phrase": "Is there anything else I can help with?"},
    "startend:quotation": {},
}
RECORDS = [IFEvalRecord(key=9000 + i, prompt=f"Write about rivers ({iid}).", instruction_id_list=(iid,),
                        kwargs=(KWARGS[iid],)) for i, iid in enumerate(SUPPORTED)]


@pytest.fixture(scope="module")
def judge():
    return IFEvalGoldJudge(RECORDS)


@pytest.fixture(scope="module")
def real_judge(shared_data):
    return IFEvalGoldJudge.from_file(shared_data / "ifeval" / "input_data.jsonl")


def _failed(judge, rec, text):
    return {label for label, ok in judge.score(rec, text).followed.items() if not ok}


def test_every_supported_type_has_kwargs():
    assert len(SUPPORTED) == 25 and set(KWARGS) == set(SUPPORTED)


@pytest.mark.parametrize("rec", RECORDS, ids=[r.instruction_id_list[0] for r in RECORDS])
def test_generator_passes_and_one_edit_breaks(judge, rec):
    iid = rec.instruction_id_list[0]
    assert judge.skip_reason(iid) is None
    plan = plan_for(rec.instruction_id_list, rec.kwargs)
    made = compose(plan, lambda t: _failed(judge, rec, t))
    assert made is not None, iid
    text, n = made
    assert judge.score(rec, text).score == 9
    broken = [c for c in break_candidates(iid, rec.kwargs[0], text, plan, n) if _failed(judge, rec, c) == {iid}]
    assert broken, f"no edit breaks {iid}"


def test_build_one_prompt_labels_and_meta(judge):
    rec = next(r for r in RECORDS if r.instruction_id_list[0] == "punctuation:no_comma")
    res = build_if_prompt(rec, judge, IFPairSettings(split=prompt_split(rec.key)))
    assert res.status == "ok" and len(res.pairs) == 1
    pair = res.pairs[0]
    assert "," not in pair.chosen and "," in pair.rejected
    assert pair.meta["domain"] == "if" and pair.meta["broken"] == "punctuation:no_comma"
    assert pair.meta["instruction_ids"] == ["punctuation:no_comma"] and pair.meta["kwargs"] == [{}]
    assert (pair.chosen_score, pair.rejected_score) == (9.0, 0.0)
    other = "train" if prompt_split(rec.key) == "held-out" else "held-out"
    assert build_if_prompt(rec, judge, IFPairSettings(split=other)).status == "other_split"


def test_unknown_instruction_is_unsupported():
    with pytest.raises(UnsupportedInstruction, match="no generator"):
        plan_for(["keywords:key_sentences"], [{}])
    with pytest.raises(UnsupportedInstruction, match="language"):
        plan_for(["language:response_language"], [{"language": "xx"}])


def _read(path):
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]


@pytest.mark.slow
def test_real_prompts_both_splits(real_judge, tmp_path):
    records = real_judge.records[:120]
    built = {}
    for split in ("train", "held-out"):
        out, points = tmp_path / f"{split}.jsonl", tmp_path / f"{split}.points.jsonl"
        summary = write_if_pairs(records, real_judge, out, IFPairSettings(split=split), points)
        assert summary["pairs_written"] > 0
        pairs = [PreferencePair.from_dict(d) for d in _read(out)]
        for p in pairs:
            rec = real_judge.record(p.meta["key"])
            assert prompt_split(rec.key) == split == p.meta["split"]
            assert not _failed(real_judge, rec, p.chosen)
            assert _failed(real_judge, rec, p.rejected) == {p.meta["broken"]}
            assert p.prompt == rec.prompt
        for r in _read(points):
            gold = real_judge.score(r["key"], r["response"])
            assert r["score"] == gold.score == score_from_counts(sum(gold.followed.values()), len(gold.followed))
        built[split] = pairs
    assert not any(overlap(built["train"], built["held-out"]).values())
    assert {p.meta["key"] for p in built["train"]}.isdisjoint({p.meta["key"] for p in built["held-out"]})


def test_deterministic_and_resumable(real_judge, tmp_path):
    records = real_judge.records[:25]
    settings = IFPairSettings(split="train")
    write_if_pairs(records, real_judge, tmp_path / "a.jsonl", settings, tmp_path / "a.points.jsonl")
    write_if_pairs(records, real_judge, tmp_path / "b.jsonl", settings, tmp_path / "b.points.jsonl")
    assert (tmp_path / "a.jsonl").read_text() == (tmp_path / "b.jsonl").read_text()
    assert (tmp_path / "a.points.jsonl").read_text() == (tmp_path / "b.points.jsonl").read_text()
    before = (tmp_path / "a.jsonl").read_text()
    again = write_if_pairs(records, real_judge, tmp_path / "a.jsonl", settings, tmp_path / "a.points.jsonl")
    assert (tmp_path / "a.jsonl").read_text() == before and again["pointwise_written"] == 0
    with pytest.raises(ValueError, match="another configuration"):
        write_if_pairs(records, real_judge, tmp_path / "a.jsonl", IFPairSettings(split="train", seed=1))


def test_split_by_key_is_stable_and_mixed():
    splits = [prompt_split(k) for k in range(1000, 1400)]
    assert splits == [prompt_split(k) for k in range(1000, 1400)]
    assert 0.1 < splits.count("held-out") / len(splits) < 0.3
    with pytest.raises(ValueError, match="split"):
        IFPairSettings(split="test")


def test_bad_input_names_file_and_line(tmp_path):
    bad = tmp_path / "input.jsonl"
    bad.write_text(json.dumps({"key": 1, "prompt": "p", "instruction_id_list": ["punctuation:no_comma"],
                               "kwargs": [{}]}) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"input\.jsonl line 2"):
        load_records(bad)


def test_cli_if_pairs(tmp_path):
    from typer.testing import CliRunner

    from judgerl.cli.main import app

    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"key": r.key, "prompt": r.prompt, "instruction_id_list": list(r.instruction_id_list),
                                       "kwargs": [dict(k) for k in r.kwargs]}) + "\n" for r in RECORDS[:12]))
    res = CliRunner().invoke(app, ["data", "build", "if-pairs", "--input", str(src), "--split", "train",
                                   "--out", str(tmp_path / "o.jsonl"), "--pointwise-out", str(tmp_path / "p.jsonl")])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output.strip().splitlines()[-1])
    assert summary["pairs_written"] == len(_read(tmp_path / "o.jsonl")) > 0
    res = CliRunner().invoke(app, ["data", "build", "if-pairs", "--out", str(tmp_path / "x.jsonl")])
    assert res.exit_code != 0 and "--input" in res.output
