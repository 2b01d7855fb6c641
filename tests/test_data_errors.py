"""Bad records: errors naming file, line/index and field; --skip-invalid counting; detection errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgerl.data import DataFormatError, detect_format, load_pairs, normalize_format

GOOD_RB = {"prompt": "p", "chosen": "c", "rejected": "r", "subset": "s"}


def _jsonl(path: Path, lines: list) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def test_missing_field_names_file_line_and_field(tmp_path: Path) -> None:
    bad = {"prompt": "p", "rejected": "r", "subset": "s"}
    path = _jsonl(tmp_path / "data.jsonl", [GOOD_RB, "", bad])
    with pytest.raises(DataFormatError) as info:
        load_pairs(path, format="rewardbench")
    err = info.value
    assert (err.location, err.field) == ("line 3", "chosen")  # the blank line 2 still counts as a line
    assert err.path == str(path)
    assert str(err) == f"{path} line 3: field 'chosen' is missing"
    assert isinstance(err, ValueError)


def test_json_array_error_names_index(tmp_path: Path) -> None:
    recs = [
        {"input": "q", "output_1": "a", "output_2": "b", "label": 1},
        {"input": "q", "output_1": "a", "output_2": "b", "label": 3},
    ]
    path = tmp_path / "natural.json"
    path.write_text(json.dumps(recs, indent=2))
    with pytest.raises(
        DataFormatError, match=r"natural\.json index 1: field 'label' must be one of 1, 2, got 3"
    ) as info:
        load_pairs(path)
    assert (info.value.location, info.value.field) == ("index 1", "label")


@pytest.mark.parametrize(
    ("record", "field", "reason"),
    [
        ({**GOOD_RB, "chosen": None}, "chosen", "is null"),
        ({**GOOD_RB, "chosen": float("nan")}, "chosen", "is NaN"),
        ({**GOOD_RB, "chosen": ["x"]}, "chosen", "must be a string, got an array"),
        ({**GOOD_RB, "prompt": "   "}, "prompt", "is empty"),
        ({**GOOD_RB, "id": True}, "id", "must be a non-empty string or an integer"),
    ],
)
def test_bad_field_values(tmp_path: Path, record: dict, field: str, reason: str) -> None:
    path = _jsonl(tmp_path / "rb.jsonl", [GOOD_RB, record])
    with pytest.raises(DataFormatError) as info:
        load_pairs(path, format="rewardbench")
    assert (info.value.location, info.value.field) == ("line 2", field)
    assert reason in info.value.reason


def test_format_specific_bad_fields(tmp_path: Path) -> None:
    rm = {"id": "x", "prompt": "p", "chosen": ["a", "b", "c"], "rejected": ["a", "b"]}
    with pytest.raises(
        DataFormatError, match="line 1: field 'rejected' has 2 style levels but 'chosen' has 3"
    ):
        load_pairs(_jsonl(tmp_path / "rm.jsonl", [rm]))
    rm_item = {"id": "x", "prompt": "p", "chosen": ["a", 5, "c"], "rejected": ["a", "b", "c"]}
    with pytest.raises(DataFormatError, match=r"field 'chosen\[1\]' must be a string"):
        load_pairs(_jsonl(tmp_path / "rm2.jsonl", [rm_item]))
    panda = {
        "idx": 1,
        "instruction": "i",
        "input": "",
        "response1": "a",
        "response2": "b",
        "annotator1": 1,
        "annotator2": 4,
        "annotator3": 1,
    }
    with pytest.raises(DataFormatError, match="field 'annotator2' must be 0 \\(tie\\), 1 or 2, got 4"):
        load_pairs(_jsonl(tmp_path / "p.jsonl", [panda]))
    jb = {"pair_id": "1", "question": "q", "response_A": "a", "response_B": "b", "label": "A>>B"}
    with pytest.raises(DataFormatError, match="field 'label' must be one of 'A>B', 'B>A', 'A=B'"):
        load_pairs(_jsonl(tmp_path / "jb.jsonl", [jb]))
    hh = {"chosen": "Human: hi Assistant: yo", "rejected": "Human: hi Assistant: no"}
    with pytest.raises(DataFormatError, match="field 'chosen' shares no"):
        load_pairs(_jsonl(tmp_path / "hh.jsonl", [hh]))
    canon = {"id": "a", "prompt": "p", "chosen": "c", "rejected": "r", "tie": "maybe"}
    with pytest.raises(DataFormatError, match="field 'tie' must be true or false"):
        load_pairs(_jsonl(tmp_path / "c.jsonl", [canon]))


@pytest.mark.parametrize(
    ("name", "record", "reason"),
    [
        (
            "natural.jsonl",
            {"input": "q", "output_1": "a", "output_2": "b", "label": True},
            "must be one of 1, 2, got true (a JSON boolean is not a label)",
        ),
        (
            "autoj.jsonl",
            {"scenario": "s", "prompt": "p", "response 1": "a", "response 2": "b", "label": False},
            "must be one of 0, 1, 2, got false (a JSON boolean is not a label)",
        ),
    ],
)
def test_boolean_labels_are_not_read_as_1_or_0(tmp_path: Path, name: str, record: dict, reason: str) -> None:
    # Python's True == 1 once made LLMBar/Auto-J files with boolean labels load as labels 1 / 0.
    good = {**record, "label": 1}
    path = _jsonl(tmp_path / name, [good, record])
    with pytest.raises(DataFormatError) as info:
        load_pairs(path)
    assert (info.value.location, info.value.field, info.value.reason) == ("line 2", "label", reason)
    result = load_pairs(path, skip_invalid=True)
    assert (len(result.pairs), result.n_skipped) == (1, 1)


def test_bad_first_record_does_not_break_detection(tmp_path: Path) -> None:
    # The first record lacks 'label', so it fits no format; the next ones decide (llmbar), and the
    # bad record is then reported with its field, or skipped, like any other.
    good = {"input": "q", "output_1": "a", "output_2": "b", "label": 2}
    bad = {"input": "q", "output_1": "a", "output_2": "b"}
    path = _jsonl(tmp_path / "natural.jsonl", [bad, good, good])
    assert detect_format(path) == "llmbar"
    with pytest.raises(DataFormatError) as info:
        load_pairs(path)
    assert (info.value.location, info.value.field, info.value.reason) == ("line 1", "label", "is missing")
    result = load_pairs(path, skip_invalid=True)
    assert (result.format, len(result.pairs), result.n_skipped) == ("llmbar", 2, 1)
    assert result.errors == [f"{path} line 1: field 'label' is missing"]


def test_detection_votes_and_reports_ties(tmp_path: Path) -> None:
    llmbar = {"input": "q", "output_1": "a", "output_2": "b", "label": 1}
    rb = {"prompt": "p", "chosen": "c", "rejected": "r"}
    path = _jsonl(tmp_path / "mixed.jsonl", [rb, llmbar, llmbar])
    assert detect_format(path) == "llmbar"  # 2 votes against 1
    tie = _jsonl(tmp_path / "tie.jsonl", [rb, llmbar])
    with pytest.raises(DataFormatError, match=r"fit several formats \(llmbar, rewardbench\)"):
        detect_format(tie)
    nothing = _jsonl(tmp_path / "q.jsonl", [{"question": "q"}, {"question": "r"}, {"question": "s"}])
    with pytest.raises(DataFormatError, match=r"match no known format \(nor do the 2 records after it\)") as info:
        detect_format(nothing)
    assert info.value.location == "line 1"


def test_generic_errors_name_the_record_field(tmp_path: Path) -> None:
    recs = [
        {"q": "x", "good": "a", "bad": "b", "score": 3},
        {"q": "y", "bad": "b", "score": 1},
        {"q": "z", "good": "a", "bad": "b", "score": "high"},
    ]
    path = _jsonl(tmp_path / "g.jsonl", recs)
    fmap = {"prompt": "q", "chosen": "good", "rejected": "bad", "chosen_score": "score"}
    with pytest.raises(DataFormatError, match=r"g\.jsonl line 2: field 'good' is missing"):
        load_pairs(path, field_map=fmap)
    result = load_pairs(path, field_map=fmap, skip_invalid=True)
    assert (len(result.pairs), result.n_skipped) == (1, 2)
    assert result.errors[1] == f"{path} line 3: field 'score' must be a number, got 'high'"


def test_skip_invalid_counts_and_reports(tmp_path: Path) -> None:
    lines = [GOOD_RB, {"prompt": "p"}, "{not json", [1, 2], {**GOOD_RB, "id": 7}, {**GOOD_RB, "id": 7}]
    path = _jsonl(tmp_path / "mixed.jsonl", lines)
    with pytest.raises(DataFormatError, match="line 2: field 'chosen' is missing"):
        load_pairs(path, format="rewardbench")
    result = load_pairs(path, format="rewardbench", skip_invalid=True)
    assert result.n_records == 6
    assert [p.id for p in result.pairs] == ["mixed-0", "7"]
    assert result.n_skipped == 4 and len(result.errors) == 4
    assert "line 3: invalid JSON" in result.errors[1]
    assert "line 4: record must be a JSON object, got list" in result.errors[2]
    assert "line 6: field 'id' repeats id '7' (first at line 5)" in result.errors[3]
    assert result.summary()["skipped"] == 4


def test_skip_invalid_does_not_hide_file_level_errors(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('[{"prompt": "p", "chosen": "c",\n "rejected": }]')
    with pytest.raises(DataFormatError, match=r"broken\.json line 2: invalid JSON"):
        load_pairs(path, format="rewardbench", skip_invalid=True)


def test_empty_and_single_object_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(DataFormatError, match="contains no records"):
        load_pairs(empty, format="rewardbench")
    with pytest.raises(DataFormatError, match="contains no JSON object records"):
        detect_format(empty)
    single = tmp_path / "one.json"
    single.write_text(json.dumps(GOOD_RB, indent=2))
    with pytest.raises(DataFormatError, match="pretty-printed JSON object"):
        load_pairs(single)


def test_unknown_and_ambiguous_detection(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "q.jsonl", [{"question": "q", "answer": "a"}])
    with pytest.raises(DataFormatError) as info:
        detect_format(path)
    message = str(info.value)
    assert "q.jsonl line 1: record keys ['question', 'answer'] match no known format" in message
    for name in (
        "llmbar",
        "pandalm",
        "judgebench",
        "rmbench",
        "autoj",
        "rewardbench",
        "hh-rlhf",
        "generic",
        "judgerl",
    ):
        assert f"\n  {name} " in message
    both = {
        "input": "q",
        "output_1": "a",
        "output_2": "b",
        "label": 1,
        "prompt": "q",
        "response 1": "a",
        "response 2": "b",
    }
    with pytest.raises(DataFormatError, match=r"fit several formats \(llmbar, autoj\)"):
        load_pairs(_jsonl(tmp_path / "both.jsonl", [both]))
    assert load_pairs(tmp_path / "both.jsonl", format="autoj").format == "autoj"


def test_detection_skips_undecodable_first_line(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "rb.jsonl", ["{oops", GOOD_RB])
    assert detect_format(path) == "rewardbench"


def test_named_format_that_clearly_mismatches(shared_data: Path) -> None:
    with pytest.raises(
        DataFormatError,
        match=r"format 'llmbar' was named but the first record \(index 0\) looks like pandalm",
    ):
        load_pairs(shared_data / "pandalm" / "testset-v1.json", format="llmbar", skip_invalid=True)


def test_argument_errors(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "rb.jsonl", [GOOD_RB])
    with pytest.raises(ValueError, match="unknown data format 'nope'; known formats: llmbar, pandalm"):
        load_pairs(path, format="nope")
    with pytest.raises(ValueError, match="needs field_map"):
        load_pairs(path, format="generic")
    with pytest.raises(ValueError, match="only used by format 'generic'"):
        load_pairs(
            path, format="llmbar", field_map={"prompt": "prompt", "chosen": "chosen", "rejected": "rejected"}
        )
    with pytest.raises(ValueError, match=r"unknown field\(s\) \['verdict'\]"):
        load_pairs(
            path, field_map={"prompt": "prompt", "chosen": "chosen", "rejected": "rejected", "verdict": "x"}
        )
    with pytest.raises(ValueError, match=r"required field\(s\) \['rejected'\] not mapped"):
        load_pairs(path, field_map={"prompt": "prompt", "chosen": "chosen"})
    with pytest.raises(ValueError, match="limit must be a positive integer"):
        load_pairs(path, limit=0)
    with pytest.raises(FileNotFoundError):
        load_pairs(tmp_path / "missing.jsonl")


@pytest.mark.parametrize(
    ("given", "canonical"),
    [
        ("LLMBar", "llmbar"),
        ("RM-Bench", "rmbench"),
        ("hh_rlhf", "hh-rlhf"),
        ("Auto-J", "autoj"),
        ("canonical", "judgerl"),
        (" PandaLM ", "pandalm"),
    ],
)
def test_format_names_and_aliases(given: str, canonical: str) -> None:
    assert normalize_format(given) == canonical
