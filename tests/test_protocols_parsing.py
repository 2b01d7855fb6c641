"""Unit tests of the shared parsing helpers (judgerl.protocols.parsing)."""

from __future__ import annotations

import pytest

from judgerl.protocols.parsing import (
    ParseFailure,
    agree,
    answer_region,
    find_tags,
    format_number,
    mask_code_blocks,
    parse_label,
    parse_score,
    parse_verdict,
    strip_wrappers,
)


def test_mask_code_blocks_keeps_offsets_and_newlines() -> None:
    text = "a\n```python\nprint('<verdict>B</verdict>')\n```\nb ```output\nX\n``` c"
    masked = mask_code_blocks(text)
    assert len(masked) == len(text)
    assert masked.count("\n") == text.count("\n")
    assert "verdict" not in masked and "X" not in masked
    assert masked.startswith("a\n") and masked.endswith(" c")


def test_mask_unclosed_fence_runs_to_end() -> None:
    masked = mask_code_blocks("ok ```python\nprint(1)\n<verdict>A</verdict>")
    assert masked.strip() == "ok"


def test_answer_region_variants() -> None:
    r = answer_region("<think>t1</think> x <think>t2</think> tail")
    assert r.text == " tail" and r.thought == "t1  x  t2"
    assert r.start == len("<think>t1</think> x <think>t2</think>")
    r = answer_region("no tags at all")
    assert r.text == "no tags at all" and r.thought is None and r.start == 0
    for text, reason in [("", "empty_output"), ("<think>open", "unterminated_thinking")]:
        with pytest.raises(ParseFailure) as e:
            answer_region(text)
        assert e.value.reason == reason


def test_find_tags_closed_unclosed_and_stray() -> None:
    tags = find_tags("x</verdict> <Verdict> A </VERDICT> <preference>B\nmore <verdict>", ("verdict", "preference"))
    assert [(t.name, t.content, t.closed) for t in tags] == [
        ("verdict", "A", True),
        ("preference", "B", False),
        ("verdict", "", False),
    ]
    # Tag names are matched exactly: <score> is not <score_A>.
    tags = find_tags("<score_A>1</score_A><score>2</score>", ("score", "score_A"))
    assert [(t.name, t.content) for t in tags] == [("score_A", "1"), ("score", "2")]
    with pytest.raises(ValueError):
        find_tags("x", ())


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("7", 7.0),
        (" 7.5 ", 7.5),
        (".5", 0.5),
        ("7.", 7.0),
        ("7/10", 7.0),
        ("7 / 10", 7.0),
        ("8.5/10.0", 8.5),
        ("8 out of 10", 8.0),
        ("[[8]]", 8.0),
        ("**8**/10", 8.0),
        ("Score: 6", 6.0),
        ("+3", 3.0),
        ("0", 0.0),
        ("10", 10.0),
    ],
)
def test_parse_score_valid(text: str, want: float) -> None:
    assert parse_score(text, 0, 10) == want


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "unparseable_score"),
        ("seven", "unparseable_score"),
        ("7 or 8", "unparseable_score"),
        ("nan", "unparseable_score"),
        ("inf", "unparseable_score"),
        ("1e1", "unparseable_score"),
        ("80%", "unparseable_score"),
        ("7/5", "score_scale_mismatch"),
        ("10.5", "score_out_of_range"),
        ("-0.1", "score_out_of_range"),
    ],
)
def test_parse_score_invalid(text: str, reason: str) -> None:
    with pytest.raises(ParseFailure) as e:
        parse_score(text, 0, 10)
    assert e.value.reason == reason


def test_labels_and_verdicts() -> None:
    assert strip_wrappers(' [[ "A" ]]. ') == "A"
    assert strip_wrappers("**B**!") == "B"
    assert parse_label("Assistant b") == "B"
    assert parse_label("Response #2") == "2"
    assert parse_label("[[Output (a)]]") == "A"
    assert parse_label("") == ""
    for good, want in [("A", "A"), ("b", "B"), ("Assistant A", "A"), ("[[B]]", "B"), ("Model: A", "A")]:
        assert parse_verdict(good) == want
    for junk in ["tie", "AB", "A or B", "Assistant", "both", "1"]:
        with pytest.raises(ParseFailure) as e:
            parse_verdict(junk)
        assert e.value.reason == "invalid_verdict"


def test_agree() -> None:
    assert agree([1.0, 1.0]) == 1.0
    for values, reason in [([], "missing_final_answer"), (["A", "B"], "conflicting_answers")]:
        with pytest.raises(ParseFailure) as e:
            agree(values)
        assert e.value.reason == reason


def test_parse_failure_rejects_unknown_reason() -> None:
    with pytest.raises(ValueError, match="unknown invalid reason"):
        ParseFailure("because")


def test_format_number() -> None:
    assert format_number(10.0) == "10" and format_number(9) == "9" and format_number(2.5) == "2.5"
