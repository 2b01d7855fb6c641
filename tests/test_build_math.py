"""MathVerifier (answer equivalence in worker processes) and the GSM8K pair builder."""

from __future__ import annotations

import json
import threading
import time

import pytest

from judgerl.data.builders.math import build_math_pairs, build_math_pairs_report
from judgerl.data.errors import DataFormatError
from judgerl.verify.math import (
    MathVerifier,
    answers_match,
    extract_final_answer,
    strip_calculator_annotations,
)


SLOW_ANSWER = "(\\sin^2 x+\\cos^2 x)^{100}+(\\sin^2 y+\\cos^2 y)^{100}-1"


@pytest.fixture(scope="module")
def verifier():
    with MathVerifier(timeout_s=3) as v:
        yield v


# --------------------------------------------------------------------------- re-exports
def test_extraction_is_reexported_from_verify_math():
    # The extraction/equivalence table lives in tests/test_verify_answers.py (in-process).
    from judgerl.verify import answers

    assert extract_final_answer is answers.extract_final_answer
    assert strip_calculator_annotations is answers.strip_calculator_annotations


# --------------------------------------------------------------------------- equivalence
@pytest.mark.parametrize(
    "gold, pred, expected",
    [
        ("18", "18", True),
        ("18", "18.0", True),
        ("1000", "1,000", True),
        ("\\frac{1}{2}", "0.5", True),
        ("5", "$5", True),
        ("18", "26", False),
        ("18", "not a number", False),
        # issue 9: the worker runs judgerl.verify.answers.equivalent, not math_verify.verify
        ("1/2^99", "1/2^98", False),
        ("2x+5y-7=0", "5x-2y+1=0", False),
        ("pi/2", "\\dfrac{\\pi}{2}", True),
        ("\\frac{1}{3}", "0.33", None),
    ],
)
def test_equivalent(verifier, gold, pred, expected):
    assert verifier.equivalent(gold, pred) is expected


def test_answers_match_on_solutions(verifier):
    assert answers_match("...\nA: 18", "blah blah\nA: 18.00", verifier) is True
    assert answers_match("...\nA: 18", "blah\nA: 26", verifier) is False
    assert answers_match("...\nA: 18", "no answer stated", verifier) is False
    assert answers_match("#### 460", "The answer is \\$460.", verifier) is True  # issue 9
    assert answers_match("\\boxed{\\sqrt{2}}", "The answer is $\\sqrt{2}$", verifier) is True  # issue 9
    assert answers_match("no gold answer", "A: 3", verifier) is None


def test_timeout_kills_worker_and_recovers():
    with MathVerifier(timeout_s=1) as v:
        assert v.equivalent("2", "2") is True  # warm the worker up
        start = time.monotonic()
        # Passes the answer guards (a power tower would be refused at once) but sympy needs ~6 s.
        assert v.equivalent("1", SLOW_ANSWER) is None
        assert time.monotonic() - start < 10
        assert v.n_timeouts == 1
        assert v.equivalent("3", "3") is True  # a fresh worker took over


def test_verifier_works_from_threads(verifier):
    results: list[bool | None] = []
    lock = threading.Lock()

    def work(i: int) -> None:
        r = verifier.equivalent(str(i), f"{i}.0")
        with lock:
            results.append(r)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert results == [True] * 6


def test_equivalent_many_parallel():
    with MathVerifier(timeout_s=3, max_workers=2) as v:
        assert v.equivalent_many([("1", "1"), ("2", "3"), ("1/4", "0.25")]) == [True, False, True]


def test_verifier_arguments_and_close():
    with pytest.raises(ValueError, match="timeout_s"):
        MathVerifier(timeout_s=0)
    with pytest.raises(ValueError, match="max_workers"):
        MathVerifier(max_workers=0)
    v = MathVerifier()
    v.close()
    v.close()
    with pytest.raises(RuntimeError, match="closed"):
        v.equivalent("1", "1")


# --------------------------------------------------------------------------- builder, real data
@pytest.fixture(scope="module")
def gsm8k_report(shared_data, verifier):
    return build_math_pairs_report(shared_data / "gsm8k" / "example_model_solutions.jsonl", verifier=verifier)


def test_gsm8k_counts(gsm8k_report):
    s = gsm8k_report.summary()
    assert s["questions"] == 1319
    assert s["solutions"] == 1319 * 4
    # README: 731 questions with both a correct and a wrong solution, 2429 pairs by is_correct
    assert s["pairs_by_is_correct"] == 2429
    assert s["questions_with_pairs"] == 731
    # The checker agrees with every decided is_correct label; 3 pairs are dropped as duplicate texts.
    assert s["disagreements"] == 0 and s["pairs"] == 2426
    # One answer is left undecided rather than guessed, with the 3 candidate pairs it was part of.
    assert (s["undecided"], s["undecided_pairs"]) == (1, 3)
    assert gsm8k_report.undecided == [
        {"id": "gsm8k-931", "solution_key": "175b_finetuning", "answer": "10+John's age", "gold": "50"}
    ]
    assert not any("-175b_finetuning" in p.id for p in gsm8k_report.pairs if p.id.startswith("gsm8k-931-"))


def test_gsm8k_pairs_are_verified(gsm8k_report):
    pairs = gsm8k_report.pairs
    assert len({p.id for p in pairs}) == len(pairs)
    for p in pairs[:200]:
        assert p.source == "gsm8k" and not p.tie
        assert p.meta["chosen_answer"] is not None
        assert "<<" not in p.chosen and "<<" not in p.rejected
        assert p.chosen != p.rejected
    first = pairs[0]
    assert first.prompt.startswith("Janet")
    assert first.meta["gold_answer"] == "18" and first.meta["chosen_answer"] == "18"
    assert first.meta["rejected_answer"] != "18"


def test_gsm8k_max_pairs_per_question_and_limit(shared_data, verifier):
    path = shared_data / "gsm8k" / "example_model_solutions.jsonl"
    capped = build_math_pairs(path, max_pairs_per_question=1, limit=50, verifier=verifier)
    assert len(capped) == 50
    qs = [p.meta["question_index"] for p in capped]
    assert len(set(qs)) == 50  # one pair per question
    again = build_math_pairs(path, max_pairs_per_question=1, limit=50, verifier=verifier)
    assert [p.id for p in again] == [p.id for p in capped]  # deterministic for a seed


# --------------------------------------------------------------------------- builder, small files
def _write(tmp_path, records):
    path = tmp_path / "sols.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return path


def _rec(question="Q?", gold="A: 10", **sols):
    rec = {"question": question, "ground_truth": gold}
    rec.update({k: {"is_correct": c, "solution": s} for k, (c, s) in sols.items()})
    return rec


def test_disagreement_reported_and_verified_label_used(tmp_path, verifier):
    path = _write(tmp_path, [_rec(
        m1=(True, "5 + 5 = 10\nA: 10.0"),
        m2=(True, "oops\nA: 11"),  # flagged correct, but wrong
        m3=(False, "10 exactly\nA: 10"),  # flagged wrong, but right
    )])
    report = build_math_pairs_report(path, verifier=verifier)
    assert len(report.disagreements) == 2
    assert {d["solution_key"] for d in report.disagreements} == {"m2", "m3"}
    assert {(p.meta["chosen_model"], p.meta["rejected_model"]) for p in report.pairs} == {("m1", "m2"), ("m3", "m2")}
    assert report.n_pairs_by_is_correct == 2


def test_undecided_labels_drop_and_count_their_pairs(tmp_path, verifier, caplog):
    path = _write(tmp_path, [_rec(
        gold="A: 10",
        m1=(True, "A: 10"),
        m2=(False, "A: 11"),
        m3=(False, "A: 10 or 11 apples"),  # undecided: not a label
        m4=(True, "The answer is \\frac{1}{3}, roughly 0.33"),  # undecided: not an answer
    ), _rec(gold="A: 4/3\\pi", m1=(True, "A: 4"), m2=(False, "A: 5"))])  # undecidable gold
    report = build_math_pairs_report(path, verifier=verifier)
    assert [(p.meta["chosen_model"], p.meta["rejected_model"]) for p in report.pairs] == [("m1", "m2")]
    # question 1: m3 and m4 each pair with m1, m2 and each other (5); question 2: m1-m2 (1)
    assert (report.n_undecided, report.n_undecided_pairs) == (4, 6)
    assert report.summary()["undecided_pairs"] == 6
    assert {(u["id"], u["solution_key"]) for u in report.undecided} == {
        ("gsm8k-0", "m3"), ("gsm8k-0", "m4"), ("gsm8k-1", "m1"), ("gsm8k-1", "m2")
    }
    assert "4 of 6 solutions undecided" in caplog.text


def test_question_without_wrong_solution_gives_no_pairs(tmp_path, verifier):
    path = _write(tmp_path, [_rec(m1=(True, "A: 10"), m2=(True, "A: 10"))])
    report = build_math_pairs_report(path, verifier=verifier)
    assert report.pairs == [] and report.n_questions_with_pairs == 0


@pytest.mark.parametrize(
    "record, field",
    [
        ({"ground_truth": "A: 1", "m": {"is_correct": True, "solution": "A: 1"}}, "question"),
        ({"question": "Q", "m": {"is_correct": True, "solution": "A: 1"}}, "ground_truth"),
        ({"question": "Q", "ground_truth": "A: 1", "m": {"is_correct": "yes", "solution": "A: 1"}}, "m.is_correct"),
        ({"question": "Q", "ground_truth": "no answer here", "m": {"is_correct": True, "solution": "A: 1"}}, "ground_truth"),
        ({"question": "Q", "ground_truth": "A: 1"}, None),
    ],
)
def test_bad_records_name_line_and_field(tmp_path, verifier, record, field):
    path = _write(tmp_path, [_rec(m1=(True, "A: 10"), m2=(False, "A: 3")), record])
    with pytest.raises(DataFormatError) as err:
        build_math_pairs_report(path, verifier=verifier)
    assert err.value.location == "line 2"
    assert err.value.field == field
    assert str(path) in str(err.value)


def test_invalid_arguments(tmp_path):
    path = _write(tmp_path, [_rec(m1=(True, "A: 10"))])
    with pytest.raises(ValueError, match="max_pairs_per_question"):
        build_math_pairs(path, max_pairs_per_question=0)
    with pytest.raises(ValueError, match="limit"):
        build_math_pairs(path, limit=0)
