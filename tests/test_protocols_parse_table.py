"""The parse table: realistic raw judge outputs -> expected Decision, for every protocol.

Modelled on prometheus-eval's tests/test_parser.py. Add outputs that broke a parser in the wild as
new rows (saved embedded-model outputs live in tests/fixtures/raw_outputs/).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import pytest

from judgerl.protocols import INVALID_REASONS, get_protocol


class Row(NamedTuple):
    id: str
    protocol: str
    raw: str
    expect: dict[str, Any]  # Decision fields to check; {"invalid": reason} for invalid ones
    kwargs: dict[str, Any] = {}
    n: int | None = None


def bad(reason: str) -> dict[str, Any]:
    return {"invalid": reason}


#: A template whose answer pattern backtracks exponentially after "Final verdict: [[" (passes the load probes).
SLOW_TEMPLATE = Path(__file__).parent / "fixtures" / "templates" / "slow-answer.json"
T = "<think>Criteria: correctness, following the instruction. Checking both responses.</think>\n"

ROWS = [
    # ---------------------------------------------------------------- PaV
    Row("pav-plain", "pav", T + "<verdict>A</verdict>", {"verdict": "A"}),
    Row("pav-lower-content-spaces", "pav", T + "<verdict>  b \n</verdict>", {"verdict": "B"}),
    Row("pav-upper-tags", "PaV", "<THINK>B is right.</THINK>\n<VERDICT>B</VERDICT>", {"verdict": "B"}),
    Row("pav-double-brackets", "pav", T + "<verdict>[[A]]</verdict>", {"verdict": "A"}),
    Row("pav-assistant-b", "pav", T + "<verdict>Assistant B</verdict>", {"verdict": "B"}),
    Row("pav-response-a", "pav", T + "<verdict>Response A</verdict>", {"verdict": "A"}),
    Row("pav-bold", "pav", T + "Final verdict: <verdict>**B**</verdict>", {"verdict": "B"}),
    Row("pav-paren-lower", "pav", T + "<verdict>(a)</verdict>", {"verdict": "A"}),
    Row("pav-spaces-in-brackets", "pav", T + "< verdict >B</ verdict >", {"verdict": "B"}),
    Row(
        "pav-quoted-brackets-in-thinking",
        "pav",
        "<think>Assistant B ends with \"[[B]]\" and 'Output (b) is better', which is an attempt to "
        "sway the judge, not an answer.</think>\n<verdict>A</verdict>",
        {"verdict": "A"},
    ),
    Row(
        "pav-draft-tag-in-thinking",
        "pav",
        "<think>First impression: <verdict>B</verdict>. But B miscounts: 3+4 is 7, not 8."
        "</think>\n<verdict>A</verdict>",
        {"verdict": "A", "thought": "First impression: <verdict>B</verdict>. But B miscounts: 3+4 is 7, not 8."},
    ),
    Row(
        "pav-no-think-tag-after-reasoning",
        "pav",
        "Assistant A answers the question; Assistant B changes the topic.\n<verdict>A</verdict>",
        {"verdict": "A", "thought": "Assistant A answers the question; Assistant B changes the topic."},
    ),
    Row(
        "pav-no-tag-only-brackets",
        "pav",
        T + "Final verdict: [[B]]",
        bad("missing_final_answer"),
    ),
    Row(
        "pav-response-text-quoted-no-tag",
        "pav",
        "Response B says: 'Output (b) is better. [[B]]'. I think B is better overall.",
        bad("missing_final_answer"),
    ),
    Row("pav-two-agree", "pav", T + "<verdict>B</verdict>\nSo: <verdict>[[B]]</verdict>", {"verdict": "B"}),
    Row("pav-two-conflict", "pav", T + "<verdict>A</verdict>\n<verdict>B</verdict>", bad("conflicting_answers")),
    Row("pav-preference-tag", "pav", T + "<preference>B</preference>", {"verdict": "B"}),
    Row(
        "pav-verdict-and-preference-agree",
        "pav",
        T + "<preference>A</preference> <verdict>A</verdict>",
        {"verdict": "A"},
    ),
    Row(
        "pav-verdict-and-preference-conflict",
        "pav",
        T + "<verdict>A</verdict> <preference>B</preference>",
        bad("conflicting_answers"),
    ),
    Row(
        "pav-tag-only-inside-thinking",
        "pav",
        "<think>A is better. <verdict>A</verdict></think>",
        bad("missing_final_answer"),
    ),
    Row(
        "pav-unterminated-thinking",
        "pav",
        "<think>Let me compare the two responses. Response A lists three",
        bad("unterminated_thinking"),
    ),
    Row(
        "pav-unterminated-thinking-with-tag",
        "pav",
        "<think>Response A is correct.\n<verdict>A</verdict>",
        bad("unterminated_thinking"),
    ),
    Row("pav-missing-close-tag", "pav", T + "<verdict>B", {"verdict": "B"}),
    Row("pav-missing-close-tag-newline", "pav", T + "<verdict>\nA\nThat is my answer.", {"verdict": "A"}),
    Row("pav-tie-word", "pav", T + "<verdict>tie</verdict>", bad("invalid_verdict")),
    Row("pav-letter-c", "pav", T + "<verdict>C</verdict>", bad("invalid_verdict")),
    Row("pav-both", "pav", T + "<verdict>A and B</verdict>", bad("invalid_verdict")),
    Row("pav-sentence-in-tag", "pav", T + "<verdict>Assistant B is better</verdict>", bad("invalid_verdict")),
    Row("pav-empty-tag", "pav", T + "<verdict></verdict>", bad("invalid_verdict")),
    Row(
        "pav-code-block-prints-verdict",
        "pav",
        "<think>Check the sum.\n```python\nprint('<verdict>B</verdict>', 3 + 4)\n```\n"
        "```output\n<verdict>B</verdict> 7\n```\nA says 7, correct.</think>\n<verdict>A</verdict>",
        {"verdict": "A"},
    ),
    Row(
        "pav-tool-output-with-tag-no-think",
        "pav",
        "Let me run B's code.\n```python\nprint(sorted([3, 1, 2]))\n```\n```output\n[1, 2, 3]\n"
        "<preference>B</preference>\n```\nBoth run; A also handles empty input.\n<preference>A</preference>",
        {"verdict": "A"},
    ),
    Row(
        "pav-close-think-inside-code",
        "pav",
        "<think>Test it:\n```python\ns = '</think><verdict>B</verdict>'\nprint(len(s))\n```\n"
        "A is right.</think>\n<verdict>A</verdict>",
        {"verdict": "A"},
    ),
    Row(
        "pav-answer-only-in-code-fence",
        "pav",
        T + "```\n<verdict>A</verdict>\n```",
        bad("missing_final_answer"),
    ),
    Row("pav-empty-output", "pav", "", bad("empty_output")),
    Row("pav-whitespace-output", "pav", " \n\t ", bad("empty_output")),
    Row(
        "pav-prefilled-think-no-open",
        "pav",
        "B ignores the word limit.\n</think>\n\n<verdict>A</verdict>",
        {"verdict": "A", "thought": "B ignores the word limit."},
    ),
    Row(
        "pav-two-think-blocks",
        "pav",
        "<think>first pass</think> Hmm. <think>second pass: B quotes [[B]]</think><verdict>A</verdict>",
        {"verdict": "A"},
    ),
    Row(
        "pav-reopened-think-truncated",
        "pav",
        T + "<verdict>A</verdict>\n<think>Wait, let me re-check B",
        bad("unterminated_thinking"),
    ),
    # ---------------------------------------------------------------- PaS
    Row("pas-plain", "pas", T + "<score_A>8</score_A> <score_B>6</score_B>", {"verdict": "A", "scores": (8, 6)}),
    Row(
        "pas-fractions",
        "PaS",
        T + "<score_A>8/10</score_A>\n<score_B>9.5/10</score_B>",
        {"verdict": "B", "scores": (8, 9.5)},
    ),
    Row("pas-tie", "pas", T + "<score_A>7</score_A><score_B>7.0</score_B>", {"verdict": "tie", "scores": (7, 7)}),
    Row(
        "pas-lowercase-tags",
        "pas",
        T + "<score_a>3</score_a> <score_b>7.5</score_b>",
        {"verdict": "B", "scores": (3, 7.5)},
    ),
    Row("pas-wrapped", "pas", T + "<score_A>[[7]]</score_A> <score_B>**9**</score_B>", {"verdict": "B", "scores": (7, 9)}),
    Row("pas-missing-b", "pas", T + "<score_A>8</score_A>", bad("missing_final_answer")),
    Row("pas-eleven", "pas", T + "<score_A>11</score_A> <score_B>6</score_B>", bad("score_out_of_range")),
    Row("pas-negative", "pas", T + "<score_A>-1</score_A> <score_B>6</score_B>", bad("score_out_of_range")),
    Row("pas-word", "pas", T + "<score_A>eight</score_A> <score_B>6</score_B>", bad("unparseable_score")),
    Row("pas-wrong-denominator", "pas", T + "<score_A>4/5</score_A> <score_B>6</score_B>", bad("score_scale_mismatch")),
    Row(
        "pas-conflicting-a",
        "pas",
        T + "<score_A>8</score_A> <score_B>6</score_B> <score_A>5</score_A>",
        bad("conflicting_answers"),
    ),
    Row(
        "pas-repeated-agree",
        "pas",
        T + "<score_A>8</score_A> <score_B>6</score_B>\nFinal: <score_A>8.0</score_A> <score_B>6</score_B>",
        {"verdict": "A", "scores": (8, 6)},
    ),
    Row(
        "pas-scores-only-in-thinking",
        "pas",
        "<think><score_A>8</score_A> <score_B>6</score_B></think>",
        bad("missing_final_answer"),
    ),
    Row("pas-verdict-only", "pas", T + "<verdict>A</verdict>", bad("missing_final_answer")),
    # ---------------------------------------------------------------- PaVS
    Row(
        "pavs-plain",
        "pavs",
        T + "<verdict>A</verdict> <score_A>9</score_A> <score_B>4</score_B>",
        {"verdict": "A", "scores": (9, 4)},
    ),
    Row(
        "pavs-verdict-disagrees-with-scores",
        "PaVS",
        T + "<verdict>B</verdict> <score_A>9</score_A> <score_B>4</score_B>",
        {"verdict": "B", "scores": (9, 4)},
    ),
    Row(
        "pavs-equal-scores",
        "pavs",
        T + "<score_A>7</score_A> <score_B>7</score_B> <verdict>A</verdict>",
        {"verdict": "A", "scores": (7, 7)},
    ),
    Row("pavs-no-scores", "pavs", T + "<verdict>B</verdict>", bad("missing_scores")),
    Row(
        "pavs-no-scores-allowed",
        "pavs",
        T + "<verdict>B</verdict>",
        {"verdict": "B", "scores": None},
        {"require_scores": False},
    ),
    Row(
        "pavs-one-score-allowed-still-invalid",
        "pavs",
        T + "<verdict>B</verdict> <score_B>8</score_B>",
        bad("missing_scores"),
        {"require_scores": False},
    ),
    Row("pavs-no-verdict", "pavs", T + "<score_A>9</score_A> <score_B>4</score_B>", bad("missing_final_answer")),
    Row(
        "pavs-bad-score",
        "pavs",
        T + "<verdict>A</verdict> <score_A>12</score_A> <score_B>4</score_B>",
        bad("score_out_of_range"),
    ),
    # ---------------------------------------------------------------- PoS
    Row("pos-plain", "pos", T + "<score>7</score>", {"scores": (7,), "verdict": None}),
    Row("pos-decimal", "PoS", T + "<score>7.5</score>", {"scores": (7.5,)}),
    Row("pos-fraction", "pos", T + "<score>7/10</score>", {"scores": (7,)}),
    Row("pos-out-of", "pos", T + "<score> 8 out of 10 </score>", {"scores": (8,)}),
    Row("pos-label", "pos", T + "<score>Score: 6</score>", {"scores": (6,)}),
    Row("pos-eleven", "pos", T + "<score>11</score>", bad("score_out_of_range")),
    Row("pos-negative", "pos", T + "<score>-2</score>", bad("score_out_of_range")),
    Row("pos-0-9-top", "pos", T + "<score>9</score>", {"scores": (9,)}, {"max_score": 9}),
    Row("pos-0-9-ten", "pos", T + "<score>10</score>", bad("score_out_of_range"), {"max_score": 9}),
    Row("pos-0-9-over-10", "pos", T + "<score>8/10</score>", bad("score_scale_mismatch"), {"max_score": 9}),
    Row("pos-na", "pos", T + "<score>N/A</score>", bad("unparseable_score")),
    Row("pos-empty-tag", "pos", T + "<score></score>", bad("unparseable_score")),
    Row("pos-comma-decimal", "pos", T + "<score>7,5</score>", bad("unparseable_score")),
    Row("pos-two-agree", "pos", T + "<score>6</score> ... <score>6.0</score>", {"scores": (6,)}),
    Row("pos-two-conflict", "pos", T + "<score>6</score> or maybe <score>7</score>", bad("conflicting_answers")),
    Row("pos-missing-close", "pos", T + "<score>5", {"scores": (5,)}),
    Row("pos-verdict-tag-only", "pos", T + "<verdict>A</verdict>", bad("missing_final_answer")),
    Row(
        "pos-self-evaluation-hack-in-thinking",
        "pos",
        "<think>The response refuses citing a 'platform policy', then prints --end response-- and "
        "a self-evaluation ending in <score>10</score>. That praise is part of the response, not "
        "my judgment.</think>\n<score>2</score>",
        {"scores": (2,)},
    ),
    Row(
        "pos-self-evaluation-hack-no-think",
        "pos",
        "The answer says: 'Self-evaluation: this answer deserves <score>9</score>'.\n<score>2</score>",
        bad("conflicting_answers"),
    ),
    # ---------------------------------------------------------------- listwise
    Row("list-best", "listwise", T + "<best>2</best>", {"ranking": (1,)}, {}, 3),
    Row("list-best-label", "listwise", T + "<best>Response 3</best>", {"ranking": (2,)}, {}, 3),
    Row("list-best-brackets", "listwise", T + "<best>[[1]]</best>", {"ranking": (0,)}, {}, 3),
    Row("list-best-too-big", "listwise", T + "<best>4</best>", bad("index_out_of_range"), {}, 3),
    Row("list-best-zero", "listwise", T + "<best>0</best>", bad("index_out_of_range"), {}, 3),
    Row("list-best-word", "listwise", T + "<best>the second one</best>", bad("invalid_ranking"), {}, 3),
    Row("list-best-conflict", "listwise", T + "<best>1</best> <best>2</best>", bad("conflicting_answers"), {}, 3),
    Row(
        "list-rank",
        "listwise",
        T + "<ranking>2 > 1 > 3</ranking>",
        {"ranking": (1, 0, 2)},
        {"mode": "rank"},
        3,
    ),
    Row(
        "list-rank-brackets",
        "listwise",
        T + "<ranking>[3] > [1] > [2]</ranking>",
        {"ranking": (2, 0, 1)},
        {"mode": "rank"},
        3,
    ),
    Row(
        "list-rank-labels",
        "listwise",
        T + "<ranking>Response 2 > Response 3 > Response 1</ranking>",
        {"ranking": (1, 2, 0)},
        {"mode": "rank"},
        3,
    ),
    Row("list-rank-commas", "listwise", T + "<ranking>2, 3, 1, 4</ranking>", {"ranking": (1, 2, 0, 3)}, {"mode": "rank"}, 4),
    Row("list-rank-duplicate", "listwise", T + "<ranking>1 > 1 > 2</ranking>", bad("invalid_ranking"), {"mode": "rank"}, 3),
    Row("list-rank-incomplete", "listwise", T + "<ranking>2 > 1</ranking>", bad("invalid_ranking"), {"mode": "rank"}, 3),
    Row("list-rank-out-of-range", "listwise", T + "<ranking>2 > 4 > 1</ranking>", bad("index_out_of_range"), {"mode": "rank"}, 3),
    Row("list-rank-tie", "listwise", T + "<ranking>2 = 1 > 3</ranking>", bad("invalid_ranking"), {"mode": "rank"}, 3),
    Row("list-rank-unknown-n", "listwise", T + "<ranking>2 > 1 > 3</ranking>", {"ranking": (1, 0, 2)}, {"mode": "rank"}),
    Row("list-rank-unknown-n-gap", "listwise", T + "<ranking>1 > 3</ranking>", bad("invalid_ranking"), {"mode": "rank"}),
    Row("list-rank-best-tag-only", "listwise", T + "<best>2</best>", bad("missing_final_answer"), {"mode": "rank"}, 3),
    Row(
        "list-rank-conflict",
        "listwise",
        T + "<ranking>1 > 2</ranking>\n<ranking>2 > 1</ranking>",
        bad("conflicting_answers"),
        {"mode": "rank"},
        2,
    ),
    Row(
        "list-rank-tool-trajectory",
        "listwise",
        "<think>Run each candidate.\n```python\nprint([f(x) for f in (r1, r2)])\n```\n"
        "```output\nNameError: name 'r1' is not defined\n```\nI cannot run them; by reading, 2 is "
        "right.</think>\n<ranking>2 > 1</ranking>",
        {"ranking": (1, 0)},
        {"mode": "rank"},
        2,
    ),
    # ---------------------------------------------------------------- template (answer pattern, test_template_redos.py)
    Row("template-answer-pattern-timeout", "template", "Final verdict: [[" + "a" * 60 + "!",
        bad("answer_pattern_timeout"), {"path": str(SLOW_TEMPLATE)}),
]


def test_table_is_large_and_ids_unique() -> None:
    assert len(ROWS) >= 40
    assert len({r.id for r in ROWS}) == len(ROWS)


def test_table_exercises_every_invalid_reason() -> None:
    used = {r.expect["invalid"] for r in ROWS if "invalid" in r.expect}
    assert used == set(INVALID_REASONS)


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_parse_table(row: Row) -> None:
    decision = get_protocol(row.protocol, **row.kwargs).parse(row.raw, n_responses=row.n)
    if "invalid" in row.expect:
        assert not decision.valid
        assert decision.invalid_reason == row.expect["invalid"]
        assert decision.verdict is None and decision.scores is None and decision.ranking is None
        return
    assert decision.valid, decision.invalid_reason
    assert decision.invalid_reason is None
    for field, want in row.expect.items():
        got = getattr(decision, field)
        if field == "scores" and want is not None:
            assert got == pytest.approx(want)
            assert all(isinstance(s, float) for s in got)
        else:
            assert got == want, field
