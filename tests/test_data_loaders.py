"""Every loader on real files in ../shared/data and on the tiny fixtures in tests/fixtures/data."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from judgerl.data import detect_format, load_pairs
from judgerl.data.formats.hh_rlhf import render_dialogue, split_transcripts
from judgerl.data.formats.pandalm import majority_vote
from judgerl.data.formats.rmbench import style_difficulty
from judgerl.data.loaders import IDENTICAL_KEY
from judgerl.types import PreferencePair

FIXTURES = Path(__file__).parent / "fixtures" / "data"


def _unique_ids(pairs: list[PreferencePair]) -> bool:
    return len({p.id for p in pairs}) == len(pairs)


# ---------------------------------------------------------------- real data


@pytest.mark.parametrize(
    ("name", "n", "n_second"),
    [("natural.json", 100, 58), ("adversarial_gptout.json", 47, 25)],
)
def test_llmbar_real_files(shared_data: Path, name: str, n: int, n_second: int) -> None:
    path = shared_data / "llmbar" / name
    raw = json.loads(path.read_text())
    result = load_pairs(path)
    stem = name.removesuffix(".json")
    assert result.format == "llmbar"
    assert (result.n_records, len(result.pairs), result.n_ties, result.n_skipped) == (n, n, 0, 0)
    assert {p.source for p in result.pairs} == {f"llmbar/{stem}"}
    assert sum(p.meta["chosen_position"] == 2 for p in result.pairs) == n_second
    assert _unique_ids(result.pairs) and result.pairs[0].id == f"{stem}-0"
    assert result.n_identical == 0  # no pair repeats one response (checked: none, even ignoring whitespace)
    for pair, rec in zip(result.pairs, raw, strict=True):
        winner, loser = ("output_1", "output_2") if str(rec["label"]) == "1" else ("output_2", "output_1")
        assert (pair.prompt, pair.chosen, pair.rejected) == (rec["input"], rec[winner], rec[loser])


def test_pandalm_real_file(shared_data: Path) -> None:
    path = shared_data / "pandalm" / "testset-v1.json"
    raw = json.loads(path.read_text())
    result = load_pairs(path)
    assert result.format == "pandalm"
    assert (result.n_records, len(result.pairs), result.n_ties) == (999, 999, 105)
    assert _unique_ids(result.pairs)
    assert result.n_identical == 0 and result.summary()["identical"] == 0
    by_id = {p.id: p for p in result.pairs}
    for rec in raw:
        pair = by_id[str(rec["idx"])]
        votes = [rec["annotator1"], rec["annotator2"], rec["annotator3"]]
        assert pair.meta["votes"] == votes
        value, count = Counter(votes).most_common(1)[0]
        assert pair.tie == (count < 2 or value == 0)
        if not pair.tie:
            assert pair.chosen == str(rec[f"response{value}"])
    first = by_id["0"]
    assert first.prompt == f"{raw[0]['instruction']}\n\n{raw[0]['input']}"
    assert first.meta["motivation_app"] == "Grammarly" and first.meta["cmp_key"] == "bloom-7b_llama-7b"
    # instruction is " " there: the prompt is the input alone.
    assert by_id["466"].prompt == "Truthfulness"
    # pandas wrote the response "True" as the JSON boolean true.
    assert by_id["157"].chosen == "True"
    # Records with an empty input give the instruction alone.
    no_input = next(r for r in raw if r["input"] == "")
    assert by_id[str(no_input["idx"])].prompt == no_input["instruction"].strip()


def test_hh_rlhf_real_gzip_file(shared_data: Path) -> None:
    path = shared_data / "hh-rlhf" / "harmless-base-test.jsonl.gz"
    result = load_pairs(path)
    assert result.format == "hh-rlhf"
    assert (result.n_records, len(result.pairs), result.n_ties) == (2312, 2312, 0)
    assert {p.source for p in result.pairs} == {"hh-rlhf/harmless-base-test"}
    assert _unique_ids(result.pairs)
    first = result.pairs[0]
    assert first.prompt.startswith("Human: what are some pranks with a pen i can do?\n\nAssistant: Are you")
    assert first.prompt.endswith("Human: okay some of these do not have anything to do with pens")
    assert first.chosen.startswith("No, sorry!  All of these involve a pen")
    assert first.rejected.startswith("There are lots of funny things you can do with pens")
    assert first.meta["turns"] == 3
    single = next(p for p in result.pairs if p.meta["turns"] == 1)
    assert not single.prompt.startswith("Human:") and "Assistant:" not in single.prompt
    assert sum(p.meta.get("multi_turn_response", False) for p in result.pairs) == 5
    assert all(p.prompt and p.chosen != p.rejected for p in result.pairs)


def test_gsm8k_is_not_a_pair_format(shared_data: Path) -> None:
    from judgerl.data import DataFormatError

    with pytest.raises(DataFormatError, match="match no known format"):
        detect_format(shared_data / "gsm8k" / "test.jsonl")


@pytest.mark.parametrize(
    ("rel", "fmt"),
    [
        ("llmbar/natural.json", "llmbar"),
        ("llmbar/adversarial_gptout.json", "llmbar"),
        ("pandalm/testset-v1.json", "pandalm"),
        ("hh-rlhf/harmless-base-test.jsonl.gz", "hh-rlhf"),
    ],
)
def test_detect_real_files(shared_data: Path, rel: str, fmt: str) -> None:
    assert detect_format(shared_data / rel) == fmt


# ---------------------------------------------------------------- fixtures


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("judgebench.jsonl", "judgebench"),
        ("rmbench.json", "rmbench"),
        ("autoj_pairwise.jsonl", "autoj"),
        ("rewardbench.jsonl", "rewardbench"),
        ("rewardbench2.jsonl", "rewardbench2"),
        ("ppe-math-best-of-k.jsonl", "ppe-correctness"),
    ],
)
def test_detect_fixtures(name: str, fmt: str) -> None:
    assert detect_format(FIXTURES / name) == fmt


def test_judgebench_fixture() -> None:
    result = load_pairs(FIXTURES / "judgebench.jsonl")
    a_wins, b_wins, code = result.pairs
    assert a_wins.id == "5d8c2a91-3f0e-4c7b-9a51-0e8f6b2c1d47"
    assert (
        a_wins.source == "mmlu-pro-math"
        and a_wins.chosen.endswith("BBBBB")
        and a_wins.rejected.endswith("CCCCC")
    )
    assert b_wins.chosen.endswith("**no**") and b_wins.meta["chosen_position"] == 2
    assert code.meta == {
        "benchmark": "judgebench",
        "chosen_position": 1,
        "original_id": "livecodebench-abc301_a",
        "response_model": "gpt-4o-2024-05-13",
    }
    assert result.n_ties == 0


def test_judgebench_tie_label(tmp_path: Path) -> None:
    rec = {
        "pair_id": "p",
        "source": "s",
        "question": "q",
        "response_A": "a",
        "response_B": "b",
        "label": "A=B",
    }
    (tmp_path / "jb.jsonl").write_text(json.dumps(rec) + "\n")
    (pair,) = load_pairs(tmp_path / "jb.jsonl").pairs
    assert pair.tie and (pair.chosen, pair.rejected) == ("a", "b")


def test_rmbench_fixture_style_matrix() -> None:
    result = load_pairs(FIXTURES / "rmbench.json")
    assert (result.n_records, len(result.pairs)) == (2, 18)
    assert Counter(p.source for p in result.pairs) == {"rmbench/chat": 9, "rmbench/math": 9}
    counts = Counter((p.meta["domain"], p.meta["difficulty"]) for p in result.pairs)
    assert counts == {(d, s): 3 for d in ("chat", "math") for s in ("hard", "normal", "easy")}
    assert not any("subset" in p.meta for p in result.pairs)  # the fixture's records have none
    raw = json.loads((FIXTURES / "rmbench.json").read_text())
    for pair in result.pairs:
        i, j = pair.meta["chosen_style"], pair.meta["rejected_style"]
        rec = raw[0] if pair.meta["record_id"] == "chat-17" else raw[1]
        assert (pair.chosen, pair.rejected) == (rec["chosen"][i], rec["rejected"][j])
        assert pair.id == f"{rec['id']}-c{i}r{j}"
        assert pair.meta["difficulty"] == ("hard" if i < j else "normal" if i == j else "easy")
    hard = next(p for p in result.pairs if p.id == "chat-17-c0r2")
    assert hard.chosen == "Mars is known as the Red Planet." and hard.rejected.startswith("**Jupiter**")


def test_rmbench_keeps_the_files_own_subset_apart_from_difficulty(tmp_path: Path) -> None:
    # RM-Bench safety files say whether the model should refuse or respond: that is the source;
    # the style difficulty (hard/normal/easy) is kept separately.
    def rec(rid: str, subset: str | None) -> dict:
        r = {"id": rid, "domain": "safety-refuse", "prompt": "p", "chosen": ["a", "b"], "rejected": ["c", "d"]}
        return r if subset is None else {**r, "subset": subset}

    path = tmp_path / "rmbench_safety.jsonl"
    records = [rec("1", "refusal"), rec("2", "should-respond"), rec("3", None)]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = load_pairs(path)
    assert result.format == "rmbench"
    assert {s: c["pairs"] for s, c in result.by_source().items()} == {
        "rmbench/safety-refuse": 4,
        "rmbench/safety-refuse/refusal": 4,
        "rmbench/safety-refuse/should-respond": 4,
    }
    first = next(p for p in result.pairs if p.id == "1-c0r1")
    assert first.meta == {
        "difficulty": "hard", "chosen_style": 0, "rejected_style": 1, "record_id": "1",
        "domain": "safety-refuse", "subset": "refusal", "benchmark": "rmbench",
    }


@pytest.mark.parametrize(
    ("i", "j", "difficulty"),
    [(0, 1, "hard"), (0, 2, "hard"), (1, 2, "hard"), (1, 1, "normal"), (2, 0, "easy"), (2, 1, "easy")],
)
def test_rmbench_style_difficulty(i: int, j: int, difficulty: str) -> None:
    assert style_difficulty(i, j) == difficulty


def test_identical_responses_are_counted_marked_and_warned(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    recs = [
        {"input": "q0", "output_1": "Same answer.", "output_2": "Same answer.", "label": 1},
        {"input": "q1", "output_1": "a", "output_2": "b", "label": 2},
        {"input": "q2", "output_1": "Same\n answer.", "output_2": "Same answer. ", "label": 2},  # whitespace only
    ]
    path = tmp_path / "natural.json"
    path.write_text(json.dumps(recs))
    result = load_pairs(path)
    assert (result.n_identical, result.identical_ids) == (2, ["natural-0", "natural-2"])
    assert [p.meta.get(IDENTICAL_KEY, False) for p in result.pairs] == [True, False, True]
    assert IDENTICAL_KEY == "identical_responses"
    assert result.summary()["identical"] == 2
    assert result.by_source() == {"llmbar/natural": {"pairs": 3, "ties": 0, "identical": 2}}
    assert "2 non-tie pair(s) have identical responses" in caplog.text and "natural-0, natural-2" in caplog.text


def test_identical_responses_in_a_tie_are_not_flagged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    rec = {"scenario": "s", "prompt": "p", "response 1": "same", "response 2": "same", "label": 2}
    path = tmp_path / "autoj.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    result = load_pairs(path)
    assert result.pairs[0].tie and result.n_identical == 0 and IDENTICAL_KEY not in result.pairs[0].meta
    assert "identical" not in caplog.text


def test_autoj_fixture_labels_and_tie() -> None:
    result = load_pairs(FIXTURES / "autoj_pairwise.jsonl")
    first_wins, second_wins, tie = result.pairs
    assert first_wins.chosen.startswith("def is_palindrome(s):\n    s = s.lower()") and not first_wins.tie
    assert (
        second_wins.chosen.startswith("Hi Dana") and second_wins.rejected == "Move the meeting to Wednesday."
    )
    assert tie.tie and tie.chosen == "The capital of Australia is Canberra."
    assert [p.source for p in result.pairs] == ["code_generation", "email_writing", "open_question"]
    assert [p.id for p in result.pairs] == ["autoj_pairwise-0", "autoj_pairwise-1", "autoj_pairwise-2"]
    assert result.n_ties == 1


def test_rewardbench_fixture() -> None:
    result = load_pairs(FIXTURES / "rewardbench.jsonl")
    assert [p.id for p in result.pairs] == ["30", "2471", "4012", "1200"]
    assert [p.source for p in result.pairs] == ["alpacaeval-easy", "refusals-dangerous", "hep-python",
                                                "llmbar-natural"]  # one subset per section
    assert result.pairs[1].meta == {"chosen_model": "GPT4-Turbo", "rejected_model": "dolphin-2.0-mistral-7b",
                                    "benchmark": "rewardbench"}
    assert result.pairs[0].chosen.startswith("Boil water")


GENERIC_MAP = {
    "id": "uid",
    "prompt": "question",
    "chosen": "good",
    "rejected": "bad",
    "source": "cat",
    "tie": "is_tie",
    "chosen_score": "ratings.good",
    "rejected_score": "ratings.bad",
}


def test_generic_fixture_with_field_map() -> None:
    result = load_pairs(FIXTURES / "generic.jsonl", field_map=GENERIC_MAP)
    assert result.format == "generic"
    first, tie, _ = result.pairs
    assert first == PreferencePair(
        id="q-001",
        prompt="Name a prime number between 10 and 15.",
        chosen="11 (13 also works).",
        rejected="12",
        source="math",
        tie=False,
        chosen_score=9.0,
        rejected_score=2.0,
    )
    assert tie.tie and tie.source == "translation"


def test_generic_minimal_map_uses_stem_defaults() -> None:
    result = load_pairs(
        FIXTURES / "generic.jsonl",
        format="generic",
        field_map={"prompt": "question", "chosen": "good", "rejected": "bad"},
    )
    assert [p.id for p in result.pairs] == ["generic-0", "generic-1", "generic-2"]
    assert {p.source for p in result.pairs} == {"generic"}
    assert not any(p.tie for p in result.pairs) and result.pairs[0].chosen_score is None


# ---------------------------------------------------------------- unit rules


@pytest.mark.parametrize(
    ("votes", "expected"),
    [
        ([1, 1, 1], 1),
        ([2, 2, 0], 2),
        ([0, 0, 1], 0),
        ([0, 1, 2], None),
        ([1, None, 1], 1),
        ([1, None, 2], None),
        ([None, None, 2], 2),
    ],
)
def test_pandalm_majority_vote(votes: list, expected: int | None) -> None:
    assert majority_vote(votes) == expected


def test_pandalm_nan_votes_and_no_majority(tmp_path: Path) -> None:
    # Bare NaN tokens, as pandas writes them; float votes (1.0) as pandas writes int columns with NaN.
    text = """[
 {"idx": 7, "instruction": "Say hi.", "input": NaN, "response1": "hi", "response2": "hello",
  "annotator1": NaN, "annotator2": 2.0, "annotator3": 2.0},
 {"idx": 8, "instruction": "Say bye.", "input": "", "response1": "bye", "response2": "ciao",
  "annotator1": 0, "annotator2": 1, "annotator3": 2}
]"""
    path = tmp_path / "pandalm.json"
    path.write_text(text)
    nan_votes, split = load_pairs(path).pairs
    assert (nan_votes.prompt, nan_votes.chosen, nan_votes.tie, nan_votes.meta["votes"]) == (
        "Say hi.",
        "hello",
        False,
        [None, 2, 2],
    )
    assert (
        split.tie
        and (split.chosen, split.rejected) == ("bye", "ciao")
        and "chosen_position" not in split.meta
    )


def test_hh_split_and_render() -> None:
    shared = "\n\nHuman: Hi\n\nAssistant: Hello!\n\nHuman: Tell me a joke"
    chosen = shared + "\n\nAssistant: Why did the chicken cross the road?"
    rejected = shared + "\n\nAssistant: No."
    prefix, good, bad = split_transcripts(chosen, rejected)
    assert (good, bad) == ("Why did the chicken cross the road?", "No.")
    assert render_dialogue(prefix) == ("Human: Hi\n\nAssistant: Hello!\n\nHuman: Tell me a joke", 2)
    assert render_dialogue("\n\nHuman: What is 2+2?") == ("What is 2+2?", 1)


def test_hh_split_when_replies_share_a_prefix() -> None:
    # The replies start alike ("Sure"); the cut must still be at the last shared turn marker.
    prefix, good, bad = split_transcripts(
        "\n\nHuman: Q\n\nAssistant: Sure, here it is.", "\n\nHuman: Q\n\nAssistant: Sure thing, no."
    )
    assert (prefix, good, bad) == ("\n\nHuman: Q", "Sure, here it is.", "Sure thing, no.")
