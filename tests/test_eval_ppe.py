"""PPE correctness (best-of-K sets) and PPE human preference: readers in the dataset cards' layout, and the
paper's metrics (judgerl.eval.ppe) against brute-force re-computations on hand-made records."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from judgerl.data import DataFormatError, load_pairs
from judgerl.eval.benchmark_report import benchmark_lines, benchmark_summary_lines
from judgerl.eval.benchmarks import bench_fields, benchmark_scores
from judgerl.eval.ppe import best_of_k_curve, pair_accuracy, row_pearson


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _row(qid: str, flags: list[bool], **extra) -> dict:
    row = {"question_id": qid, "prompt": f"Question {qid}?", "model_name": "m", "scores": flags,
           "mean_score": float(np.mean(flags))}
    row.update({f"response_{k + 1}": f"{qid} answer {k}" for k in range(len(flags))})
    row.update(extra)
    return row


def _pointwise_records(pairs, score):
    out = []
    for p in pairs:
        for oi, (order, text) in enumerate((("chosen", p.chosen), ("rejected", p.rejected))):
            s = score(text)
            out.append({"pair_id": p.id, "source": p.source, "kind": "pointwise", "order": order, "order_index": oi,
                        "sample": 0, "decision": {"valid": s is not None, "scores": [] if s is None else [s]},
                        "gold_tie": p.tie, "bench": bench_fields(p)})
    return out


def _pairwise_records(pairs, verdict):
    out = []
    for p in pairs:
        for oi, order in enumerate(("AB", "BA")):
            v = verdict(p, order)
            out.append({"pair_id": p.id, "source": p.source, "kind": "pairwise", "order": order, "order_index": oi,
                        "sample": 0, "chosen_index": 0 if order == "AB" else 1,
                        "decision": {"valid": v is not None, "verdict": v}, "gold_tie": p.tie,
                        "bench": bench_fields(p)})
    return out


# ------------------------------------------------------------------ reader

def test_reader_covers_every_response_and_skips_prompts_without_a_preference(tmp_path: Path) -> None:
    rows = [_row("q1", [True, False, False, True, False], answer_index=2, options=["a"]),
            _row("q2", [True, True, True]), _row("q3", [False, False])]
    result = load_pairs(_write(tmp_path / "ppe-math-best-of-k.jsonl", rows))
    assert result.format == "ppe-correctness"
    assert [p.id for p in result.pairs] == ["q1-c0r1", "q1-c3r2", "q1-c0r4"]
    p = result.pairs[0]
    assert (p.chosen, p.rejected, p.source) == ("q1 answer 0", "q1 answer 1", "ppe-correctness/mmlu_pro")
    assert p.meta["num_correct"] == 2 and p.meta["num_incorrect"] == 3 and p.meta["model_name"] == "m"
    # no answer_index: the subset comes from the file name
    named = load_pairs(_write(tmp_path / "ppe-math-best-of-k.jsonl", [_row("q9", [True, False])])).pairs
    assert named[0].meta["subset"] == "math"


@pytest.mark.parametrize("row, field, message", [
    (_row("q", [True, False, True]) | {"scores": [True, False]}, "scores", "array of 3 correctness flags"),
    (_row("q", [True, False]) | {"scores": [True, "maybe"]}, "scores[1]", "must be true/false"),
    ({k: v for k, v in _row("q", [True, False, True]).items() if k != "response_2"}, "response_1", "without gaps"),
])
def test_reader_refuses_bad_records_naming_the_field(tmp_path: Path, row, field, message) -> None:
    with pytest.raises(DataFormatError, match=message) as e:
        load_pairs(_write(tmp_path / "x.jsonl", [row]), format="ppe-correctness")
    assert e.value.field == field


def test_ppe_human_preference_reads_the_dataset_card_layout(tmp_path: Path) -> None:
    rows = [{"question_id": "h1", "model_a": "x", "model_b": "y", "winner": "model_b", "prompt": "Hi?",
             "response_1": "from x", "response_2": "from y", "language": "English"},
            {"question_id": "h2", "model_a": "x", "model_b": "y", "winner": "tie (bothbad)", "prompt": "Yo?",
             "response_1": "a", "response_2": "b", "language": "English"}]
    pairs = load_pairs(_write(tmp_path / "ppe.jsonl", rows), format="ppe").pairs
    assert (pairs[0].chosen, pairs[0].rejected, pairs[0].meta["benchmark"]) == ("from y", "from x", "ppe")
    assert "Hi?" in pairs[0].prompt and pairs[1].tie


# ------------------------------------------------------------------ metric building blocks

def _brute_best_of_k(scores, flags, k):
    """Mean over every K-subset of the expected correctness of its top response (ties split evenly)."""
    vals = []
    for subset in itertools.combinations(range(len(scores)), k):
        top = max(scores[i] for i in subset)
        vals.append(np.mean([flags[i] for i in subset if scores[i] == top]))
    return float(np.mean(vals))


@pytest.mark.parametrize("scores, flags", [
    ([3.0, 1.0, 2.0, 0.0, 5.0], [True, False, True, False, False]),
    ([2.0, 2.0, 2.0, 1.0, 1.0, 0.0], [True, False, False, True, False, True]),  # ties at the top
    ([1.0, 1.0, 1.0], [True, False, False]),  # a judge that cannot separate anything
])
def test_best_of_k_is_the_exact_expectation_over_subsets(scores, flags) -> None:
    curve = best_of_k_curve(scores, flags)
    assert curve == pytest.approx([_brute_best_of_k(scores, flags, k) for k in range(1, len(scores) + 1)])
    assert curve[0] == pytest.approx(np.mean(flags))  # K = 1: a random response


def test_pair_accuracy_and_row_pearson_by_hand() -> None:
    assert pair_accuracy([3.0, 1.0], [2.0, 1.0, 0.0]) == pytest.approx((1 + 1 + 1 + 0 + 0.5 + 1) / 6)
    assert row_pearson([1.0, 1.0], [True, False]) is None
    assert row_pearson([2.0, 0.0, 1.0], [True, False, False]) == pytest.approx(np.corrcoef([2, 0, 1], [1, 0, 0])[0, 1])
    with pytest.raises(ValueError):
        pair_accuracy([], [1.0])


# ------------------------------------------------------------------ official section

_SCORES = {"q1 answer 0": 4.0, "q1 answer 1": 5.0, "q1 answer 2": 1.0, "q1 answer 3": 2.0,
           "q2 answer 0": 3.0, "q2 answer 1": 3.0, "q2 answer 2": 0.0, "q2 answer 3": 2.0}


def test_pointwise_ppe_correctness_by_hand(tmp_path: Path) -> None:
    # q1: correct 0, 3 (scores 4, 2); incorrect 1, 2 (5, 1). q2: correct 0 (3); incorrect 1, 2, 3 (3, 0, 2).
    rows = [_row("q1", [True, False, False, True], answer_index=0),
            _row("q2", [True, False, False, False], answer_index=0)]
    pairs = load_pairs(_write(tmp_path / "p.jsonl", rows)).pairs
    bench = benchmark_scores(_pointwise_records(pairs, lambda t: _SCORES[t]))["ppe_correctness"]
    sub = bench["subsets"]["mmlu_pro"]
    acc_q1 = (0 + 1 + 0 + 1) / 4  # (4>5, 4>1, 2>5, 2>1)
    acc_q2 = (0.5 + 1 + 1) / 3  # (3=3, 3>0, 3>2)
    assert sub["accuracy"] == pytest.approx((acc_q1 + acc_q2) / 2) and bench["score"] == sub["accuracy"]
    # K = n: q1's top response (5.0) is wrong; q2's top is a 3.0-tie of one right and one wrong answer
    assert sub["end_score"] == pytest.approx((0 + 0.5) / 2)
    q1 = [_brute_best_of_k([4, 5, 1, 2], [1, 0, 0, 1], k) for k in (1, 2, 3, 4)]
    q2 = [_brute_best_of_k([3, 3, 0, 2], [1, 0, 0, 0], k) for k in (1, 2, 3, 4)]
    assert sub["best_of_k"] == pytest.approx([(a + b) / 2 for a, b in zip(q1, q2)])
    assert sub["max_achieved"] == pytest.approx(max(sub["best_of_k"]))
    pearson = (np.corrcoef([4, 5, 1, 2], [1, 0, 0, 1])[0, 1] + np.corrcoef([3, 3, 0, 2], [1, 0, 0, 0])[0, 1]) / 2
    assert sub["row_wise_pearson"] == pytest.approx(pearson)
    assert bench["n_prompts"] == 2 and bench["n_unscored_prompts"] == 0 and not bench["notes"]
    text = "\n".join(benchmark_lines({"ppe_correctness": bench}))
    assert "### PPE correctness" in text and "| mmlu_pro | 66.7% |" in text
    assert benchmark_summary_lines({"ppe_correctness": bench})[0].startswith("PPE correctness 66.7% (mmlu_pro 66.7%")


def test_unscored_and_unjudged_prompts_are_left_out_and_counted(tmp_path: Path) -> None:
    rows = [_row("q1", [True, False, False, True], answer_index=0), _row("q2", [True, False, False], answer_index=0)]
    pairs = load_pairs(_write(tmp_path / "p.jsonl", rows)).pairs
    records = _pointwise_records(pairs, lambda t: None if t == "q2 answer 2" else _SCORES[t])
    bench = benchmark_scores(records)["ppe_correctness"]
    assert bench["n_unscored_prompts"] == 1 and bench["n_prompts"] == 1
    assert bench["score"] == pytest.approx(0.5)
    cut = benchmark_scores([r for r in _pointwise_records(pairs, _SCORES.get) if r["pair_id"] != "q1-c3r2"])
    assert cut["ppe_correctness"]["n_incomplete_prompts"] == 1


def test_pairwise_ppe_correctness_is_accuracy_over_the_judged_pairs(tmp_path: Path) -> None:
    rows = [_row("q1", [True, False, False, True], answer_index=0), _row("g1", [True, False], choices=["a"],
                                                                        correct_choice_index=0)]
    pairs = load_pairs(_write(tmp_path / "p.jsonl", rows)).pairs

    def verdict(p, order):  # right on q1-c0r1 in both orders, a tie then a wrong verdict on q1-c3r2; invalid on g1
        if p.id == "g1-c0r1":
            return None
        if p.id == "q1-c0r1":
            return "A" if order == "AB" else "B"
        return "tie" if order == "AB" else "A"

    bench = benchmark_scores(_pairwise_records(pairs, verdict))["ppe_correctness"]
    assert bench["subsets"]["mmlu_pro"] == {"accuracy": pytest.approx((1.0 + 0.25) / 2), "n_prompts": 1}
    assert bench["subsets"]["gpqa"]["accuracy"] == 0.0
    assert bench["score"] == pytest.approx((0.625 + 0.0) / 2)
    assert "pointwise" in bench["notes"][0]
