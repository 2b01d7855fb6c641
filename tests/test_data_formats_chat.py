"""Readers of issue 26: RewardBench 2, HelpSteer3, UltraFeedback, Skywork-style chat pairs, Chatbot Arena,
MT-Bench human judgments, PPE; --field label with a label map; detection notices; no silent inversions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgerl.data import DataFormatError, load_pairs


def _w(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def msgs(*pairs: tuple[str, str]) -> list[dict]:
    return [{"role": r, "content": c} for r, c in pairs]


RB2 = {"id": "7", "prompt": "Capital of France?", "chosen": ["Paris."], "rejected": ["Lyon.", "Nice.", "Rome."],
       "num_correct": 1, "num_incorrect": 3, "total_completions": 4, "models": ["a", "b", "c", "d"],
       "subset": "Factuality", "additional_metadata": {}}


def test_rewardbench2_best_of_4_becomes_three_pairs(tmp_path: Path) -> None:
    result = load_pairs(_w(tmp_path / "rb2.jsonl", [RB2]))
    assert result.format == "rewardbench2" and "rewardbench2" in result.notice
    assert [(p.id, p.chosen, p.rejected) for p in result.pairs] == [
        ("7-c0r0", "Paris.", "Lyon."), ("7-c0r1", "Paris.", "Nice."), ("7-c0r2", "Paris.", "Rome.")]
    assert result.pairs[0].source == "rewardbench2/Factuality" and result.pairs[0].meta["benchmark"] == "rewardbench2"


def test_rewardbench2_ties_with_equal_list_lengths_is_not_rmbench(tmp_path: Path) -> None:
    ties = RB2 | {"id": "tied:3", "subset": "Ties", "chosen": ["4", "four", "IV"], "rejected": ["5", "6", "7"],
                  "num_correct": 3, "num_incorrect": 3, "total_completions": 6}
    result = load_pairs(_w(tmp_path / "ties.jsonl", [ties]))
    assert result.format == "rewardbench2"
    assert [p.id for p in result.pairs] == ["tied:3-c0r0", "tied:3-c1r1", "tied:3-c2r2"]
    assert not any("difficulty" in p.meta for p in result.pairs)
    bad = ties | {"num_correct": 2}
    with pytest.raises(DataFormatError, match="field 'num_correct' is 2 but 'chosen' has 3"):
        load_pairs(_w(tmp_path / "bad.jsonl", [bad]))


HS3 = {"domain": "code", "language": "python", "context": msgs(("user", "Write f."), ("assistant", "def f(): ..."),
                                                              ("user", "Now add a docstring.")),
       "response1": "R1", "response2": "R2", "individual_preference": []}


@pytest.mark.parametrize(("pref", "chosen", "tie"), [(-3, "R1", False), (-1, "R1", False), (0, "R1", True),
                                                     (1, "R2", False), (3, "R2", False), ("2", "R2", False)])
def test_helpsteer3_sign_convention(tmp_path: Path, pref, chosen: str, tie: bool) -> None:
    pair = load_pairs(_w(tmp_path / "hs3.jsonl", [HS3 | {"overall_preference": pref}])).pairs[0]
    assert (pair.chosen, pair.tie) == (chosen, tie)
    assert pair.prompt == "User: Write f.\n\nAssistant: def f(): ...\n\nUser: Now add a docstring."
    assert pair.source == "helpsteer3/code"


@pytest.mark.parametrize("pref", [4, -4, 0.5, "much better", True])
def test_helpsteer3_unknown_preference_is_refused(tmp_path: Path, pref) -> None:
    with pytest.raises(DataFormatError, match="line 1: field 'overall_preference' must be one of"):
        load_pairs(_w(tmp_path / "hs3.jsonl", [HS3 | {"overall_preference": pref}]))


def test_helpsteer3_through_generic_label_map_has_no_silent_inversion(tmp_path: Path) -> None:
    rows = [HS3 | {"context": "Q", "overall_preference": p} for p in (-2, 0, 2)]
    path = _w(tmp_path / "hs3.jsonl", rows)
    fmap = {"prompt": "context", "first": "response1", "second": "response2", "label": "overall_preference"}
    lmap = {"-3": "first", "-2": "first", "-1": "first", "0": "tie", "1": "second", "2": "second", "3": "second"}
    pairs = load_pairs(path, field_map=fmap, label_map=lmap).pairs
    assert [(p.chosen, p.tie) for p in pairs] == [("R1", False), ("R1", True), ("R2", False)]
    with pytest.raises(DataFormatError, match=r"line 3: field 'overall_preference' value 2 is not in the declared"):
        load_pairs(path, field_map=fmap, label_map={k: v for k, v in lmap.items() if k != "2"})
    with pytest.raises(DataFormatError, match="no label map was declared"):
        load_pairs(path, field_map=fmap)
    with pytest.raises(ValueError, match="must map to one of first, second, tie"):
        load_pairs(path, field_map=fmap, label_map={"0": "A"})


UFB = {"prompt": "Hi?", "prompt_id": "abc", "chosen": msgs(("user", "Hi?"), ("assistant", "Hello!")),
       "rejected": msgs(("user", "Hi?"), ("assistant", "Go away.")), "messages": [], "score_chosen": 8.0,
       "score_rejected": 3.0}


def test_ultrafeedback_binarized_keeps_labels_and_scores(tmp_path: Path) -> None:
    result = load_pairs(_w(tmp_path / "ufb.jsonl", [UFB]))
    assert result.format == "ultrafeedback"
    p = result.pairs[0]
    assert (p.prompt, p.chosen, p.rejected, p.chosen_score, p.rejected_score) == ("Hi?", "Hello!", "Go away.", 8.0, 3.0)
    with pytest.raises(DataFormatError, match="score_chosen' is 2.0 < score_rejected 3.0"):
        load_pairs(_w(tmp_path / "inv.jsonl", [UFB | {"score_chosen": 2.0}]))


def test_ultrafeedback_raw_ranks_by_rating(tmp_path: Path) -> None:
    raw = {"source": "evol", "instruction": "Explain X.", "models": [], "correct_answers": [],
           "completions": [{"model": "m1", "response": "low", "fine-grained_score": 2.0},
                           {"model": "m2", "response": "high", "fine-grained_score": 4.5},
                           {"model": "m3", "response": "same-low", "fine-grained_score": 2.0}]}
    pairs = load_pairs(_w(tmp_path / "uf.jsonl", [raw])).pairs
    assert [(p.chosen, p.rejected, p.tie) for p in pairs] == [("high", "low", False), ("low", "same-low", True),
                                                            ("high", "same-low", False)]
    assert all(p.chosen_score >= p.rejected_score for p in pairs)


def test_ultrafeedback_raw_never_mixes_the_two_rating_scales(tmp_path: Path) -> None:
    """fine-grained_score is 1-5, overall_score 1-10: a completion rated only overall must not be ranked
    against fine-grained ones (an overall 6 'beat' a fine-grained 4.5 before: a silent inversion)."""
    raw = {"source": "evol", "instruction": "Explain X.",
           "completions": [{"model": "m1", "response": "best", "fine-grained_score": 4.5, "overall_score": 9.0},
                           {"model": "m2", "response": "worse", "fine-grained_score": None, "overall_score": 6.0}]}
    # every completion has overall_score (one lacks fine-grained): the whole record is ranked on that scale
    (pair,) = load_pairs(_w(tmp_path / "uf.jsonl", [raw])).pairs
    assert (pair.chosen, pair.chosen_score, pair.rejected_score) == ("best", 9.0, 6.0)
    raw["completions"][0].pop("overall_score")
    with pytest.raises(DataFormatError, match=r"completions\[1\].fine-grained_score' is missing, and not every "
                                              r"completion has an overall_score"):
        load_pairs(_w(tmp_path / "uf2.jsonl", [raw]))


def test_skywork_chat_pairs_keep_the_whole_context(tmp_path: Path) -> None:
    ctx = [("system", "Be brief."), ("user", "2+2?"), ("assistant", "4"), ("user", "times 3?")]
    rec = {"chosen": msgs(*ctx, ("assistant", "12")), "rejected": msgs(*ctx, ("assistant", "7")), "source": "sky"}
    result = load_pairs(_w(tmp_path / "sky.jsonl", [rec]))
    p = result.pairs[0]
    assert result.format == "chat-pairs" and (p.chosen, p.rejected, p.source) == ("12", "7", "sky")
    assert p.prompt == "System: Be brief.\n\nUser: 2+2?\n\nAssistant: 4\n\nUser: times 3?" and p.meta["turns"] == 2
    bad = rec | {"chosen": msgs(("user", "2+2?"), ("assistant", 12))}
    with pytest.raises(DataFormatError, match=r"field 'chosen\[1\].content' must be a string"):
        load_pairs(_w(tmp_path / "bad.jsonl", [bad]))


BATTLE = {"question_id": "q1", "model_a": "m1", "model_b": "m2", "judge": "arena_user_1", "turn": 1,
          "conversation_a": msgs(("user", "Hi"), ("assistant", "A1")),
          "conversation_b": msgs(("user", "Hi"), ("assistant", "B1")), "anony": True, "language": "English",
          "tstamp": 1.0}


@pytest.mark.parametrize(("winner", "chosen", "tie"), [("model_a", "A1", False), ("model_b", "B1", False),
                                                       ("tie", "A1", True), ("tie (bothbad)", "A1", True)])
def test_chatbot_arena_winner(tmp_path: Path, winner: str, chosen: str, tie: bool) -> None:
    result = load_pairs(_w(tmp_path / "arena.jsonl", [BATTLE | {"winner": winner}]))
    p = result.pairs[0]
    assert result.format == "arena" and (p.prompt, p.chosen, p.tie, p.source) == ("Hi", chosen, tie, "arena/English")


def test_mtbench_human_turns(tmp_path: Path) -> None:
    two = {k: v for k, v in BATTLE.items() if k not in ("anony", "language", "tstamp")} | {
        "judge": "expert_3", "winner": "model_b",
        "conversation_a": msgs(("user", "Q1"), ("assistant", "A1"), ("user", "Q2"), ("assistant", "A2")),
        "conversation_b": msgs(("user", "Q1"), ("assistant", "B1"), ("user", "Q2"), ("assistant", "B2"))}
    result = load_pairs(_w(tmp_path / "mtb.jsonl", [two, two | {"turn": 2}]))
    t1, t2 = result.pairs
    assert result.format == "mtbench-human"
    assert (t1.prompt, t1.chosen, t1.source) == ("Q1", "B1", "mtbench/turn1")
    assert t2.chosen == "Assistant: B1\n\nUser: Q2\n\nAssistant: B2" and t2.meta["multi_turn_response"]
    assert t2.meta["judge"] == "expert_3"


def test_rewardbench_with_source_keeps_it_and_detection_notice(tmp_path: Path) -> None:
    rec = {"id": "1", "prompt": "P", "chosen": "good", "rejected": "bad", "source": "my-set"}
    result = load_pairs(_w(tmp_path / "rb.jsonl", [rec]))
    assert result.format == "rewardbench" and result.pairs[0].source == "my-set"
    assert result.notice.startswith("format 'rewardbench' detected: 1 of 1 sampled records")


def test_two_formats_fitting_equally_ask_for_format(tmp_path: Path) -> None:
    rb = {"prompt": "P", "chosen": "good", "rejected": "bad"}
    hs = HS3 | {"overall_preference": 1}
    with pytest.raises(DataFormatError, match="fit several formats .*name one with format="):
        load_pairs(_w(tmp_path / "mixed.jsonl", [rb, hs]))
