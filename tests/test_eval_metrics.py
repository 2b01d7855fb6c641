"""Metrics on hand-built judgment records with known answers."""

from __future__ import annotations

import math

import pytest

from judgerl.eval.intervals import bootstrap_ci
from judgerl.eval.metrics import RecordError, compute_metrics, majority_vote, sample_choice

CHOSEN_INDEX = {"AB": 0, "BA": 1}


def pw(pid, order, verdict, *, sample=0, source="s", gold_tie=False, reason="missing_final_answer",
       order_index=None, scores=None, gold=None, trajectory=None):
    """A pairwise record; verdict None = invalid output."""
    if verdict is None:
        decision = {"valid": False, "verdict": None, "scores": None, "ranking": None, "invalid_reason": reason}
    else:
        decision = {"valid": True, "verdict": verdict, "scores": scores, "ranking": None, "invalid_reason": None}
    return {
        "pair_id": pid, "source": source, "kind": "pairwise", "order": order, "sample": sample,
        "order_index": order_index if order_index is not None else (0 if order == "AB" else 1),
        "chosen_index": CHOSEN_INDEX[order], "decision": decision, "gold_tie": gold_tie, "gold_scores": gold,
        "completion_tokens": 10, "finish_reason": "stop", "trajectory": trajectory,
    }


def pt(pid, response, score, *, sample=0, source="s", gold=None, gold_tie=False):
    """A pointwise record; score None = invalid output."""
    valid = score is not None
    decision = {"valid": valid, "verdict": None, "scores": [score] if valid else None, "ranking": None,
                "invalid_reason": None if valid else "score_out_of_range"}
    return {"pair_id": pid, "source": source, "kind": "pointwise", "order": response, "sample": sample,
            "order_index": 0 if response == "chosen" else 1, "chosen_index": None, "decision": decision,
            "gold_tie": gold_tie, "gold_scores": gold}


def right(pid, order, **kw):
    """A correct pairwise record for this order (picks the chosen position)."""
    return pw(pid, order, "A" if order == "AB" else "B", **kw)


def wrong(pid, order, **kw):
    return pw(pid, order, "B" if order == "AB" else "A", **kw)


@pytest.mark.parametrize(
    ("choices", "expected"),
    [
        (["chosen"], "chosen"),
        (["chosen", "chosen", "rejected"], "chosen"),
        (["rejected", "chosen", "rejected"], "rejected"),
        (["chosen", "rejected"], "tie"),
        (["chosen", "rejected", "tie"], "tie"),
        (["tie", "tie", "chosen"], "tie"),
        ([None, "rejected"], "rejected"),
        (["chosen", None, None], "chosen"),
        ([None, None, None], None),
        ([], None),
    ],
)
def test_majority_vote(choices, expected):
    assert majority_vote(choices) == expected


def test_sample_choice_maps_positions_to_content():
    assert sample_choice(pw("p", "AB", "A")) == "chosen"
    assert sample_choice(pw("p", "BA", "A")) == "rejected"
    assert sample_choice(pw("p", "BA", "B")) == "chosen"
    assert sample_choice(pw("p", "AB", "tie")) == "tie"
    assert sample_choice(pw("p", "AB", None)) is None
    # PaS decision without verdict: argmax of the two scores
    assert sample_choice(pw("p", "BA", "X", scores=[3, 7]) | {"decision": {"valid": True, "scores": [3, 7]}}) == "chosen"
    assert sample_choice(pw("p", "AB", "X") | {"decision": {"valid": True, "scores": [5, 5]}}) == "tie"


def test_perfect_judge():
    recs = [right(p, o) for p in ("p1", "p2", "p3") for o in ("AB", "BA")]
    m = compute_metrics(recs)
    assert m["n_pairs"] == 3 and m["n_judgments"] == 6 and m["n_samples"] == 6
    assert m["accuracy"] == 1.0 and m["position_consistent_accuracy"] == 1.0
    assert m["flip_rate"] == 0.0 and m["tie_rate"] == 0.0 and m["invalid_rate"] == 0.0
    # issue 22: the bootstrap claimed [1.0, 1.0]; Wilson over 3 pairs, 3 of 3 correct
    assert m["accuracy_ci"] == m["position_consistent_accuracy_ci"] == pytest.approx([0.4385, 1.0], abs=1e-4)


@pytest.mark.parametrize(
    ("n_pairs", "low"),
    [(1, 0.2065), (10, 0.7225)],  # Wilson lower bounds of 1/1 and 10/10
)
def test_cis_never_have_zero_width_on_small_or_constant_samples(n_pairs, low):
    """Issue 22: 1 pair, or 10/10 correct, gave a bootstrap CI of zero width."""
    recs = [right(f"p{i}", o) for i in range(n_pairs) for o in ("AB", "BA")]
    m = compute_metrics(recs)
    for key in ("accuracy_ci", "position_consistent_accuracy_ci"):
        assert m[key] == pytest.approx([low, 1.0], abs=1e-4)
        assert m["by_source"]["s"][key] == m[key]
    wrong_all = compute_metrics([wrong(f"p{i}", o) for i in range(n_pairs) for o in ("AB", "BA")])
    assert wrong_all["accuracy_ci"] == pytest.approx([0.0, 1 - low], abs=1e-4)


def test_always_a_judge_is_half_right_never_consistent():
    recs = [pw(p, o, "A") for p in ("p1", "p2", "p3", "p4") for o in ("AB", "BA")]
    m = compute_metrics(recs)
    assert m["accuracy"] == 0.5
    assert m["position_consistent_accuracy"] == 0.0
    assert m["flip_rate"] == 1.0
    assert m["position_a_rate"] == 1.0


def test_mixed_accuracy_pca_flip_and_invalid_never_a_tie():
    recs = [
        right("p1", "AB"), right("p1", "BA"),   # consistent, right
        right("p2", "AB"), wrong("p2", "BA"),   # flip
        pw("p3", "AB", None), right("p3", "BA"),  # one invalid order
    ]
    m = compute_metrics(recs)
    assert m["accuracy"] == pytest.approx(4 / 6)
    assert m["accuracy_valid_only"] == pytest.approx(4 / 5)
    assert m["position_consistent_accuracy"] == pytest.approx(1 / 3)
    assert m["flip_rate"] == pytest.approx(1 / 2) and m["n_flip_pairs"] == 2
    assert m["tie_rate"] == 0.0  # the invalid output is NOT a tie
    assert m["invalid_rate"] == pytest.approx(1 / 6)
    assert m["judgment_invalid_rate"] == pytest.approx(1 / 6)
    assert m["invalid_reasons"] == {"missing_final_answer": 1}


def test_tie_verdict_counts_as_tie_and_wrong():
    recs = [pw("p1", "AB", "tie", scores=[5, 5]), right("p1", "BA")]
    m = compute_metrics(recs)
    assert m["tie_rate"] == 0.5
    assert m["accuracy"] == 0.5 and m["accuracy_valid_only"] == 0.5
    assert m["flip_rate"] == 1.0  # tie -> chosen is a change of decision
    assert m["position_consistent_accuracy"] == 0.0


def test_majority_vote_over_samples_excludes_invalid_samples():
    recs = [
        right("p1", "AB", sample=0), right("p1", "AB", sample=1), wrong("p1", "AB", sample=2),
        pw("p1", "BA", None, sample=0), pw("p1", "BA", None, sample=1), right("p1", "BA", sample=2),
        right("p2", "AB", sample=0), wrong("p2", "AB", sample=1), pw("p2", "AB", None, sample=2),
        pw("p2", "BA", None, sample=0), pw("p2", "BA", None, sample=1), pw("p2", "BA", None, sample=2),
    ]
    m = compute_metrics(recs)
    # p1: AB chosen (2:1); BA has 1 valid sample of 3 -- no quorum (judgerl.judge.aggregate.has_quorum: more than
    # half valid), so invalid: a response that spoils two samples must not leave the third to decide
    # p2: AB vote tie (1:1, 2 of 3 valid), BA all invalid -> invalid judgment, not a tie
    assert m["n_samples"] == 12 and m["n_judgments"] == 4
    assert m["accuracy"] == pytest.approx(1 / 4)
    assert m["position_consistent_accuracy"] == pytest.approx(0 / 2)
    assert m["tie_rate"] == pytest.approx(1 / 4)
    assert m["judgment_invalid_rate"] == pytest.approx(2 / 4)
    assert m["invalid_rate"] == pytest.approx(6 / 12)
    assert m["flip_rate"] is None and m["n_flip_pairs"] == 0  # no prompt with both orders valid


def test_first_order_accuracy_uses_order_index():
    recs = [
        right("p1", "AB", order_index=1), wrong("p1", "BA", order_index=0),
        right("p2", "AB", order_index=0), wrong("p2", "BA", order_index=1),
    ]
    assert compute_metrics(recs)["accuracy_first_order"] == 0.5


def test_gold_tie_pairs_are_excluded_and_reported():
    recs = [right("p1", "AB"), right("p1", "BA"),
            pw("t1", "AB", "tie", gold_tie=True), pw("t1", "BA", None, gold_tie=True)]
    m = compute_metrics(recs)
    assert m["n_pairs"] == 1 and m["n_pairs_total"] == 2
    assert m["accuracy"] == 1.0 and m["invalid_rate"] == 0.0
    assert m["gold_ties"] == {"n_pairs": 1, "tie_rate": 0.5, "invalid_rate": 0.5}


def test_by_source_breakdown():
    recs = [right("a1", o, source="x") for o in ("AB", "BA")] + [wrong("b1", o, source="y") for o in ("AB", "BA")]
    m = compute_metrics(recs)
    assert set(m["by_source"]) == {"x", "y"}
    assert m["by_source"]["x"]["accuracy"] == 1.0 and m["by_source"]["y"]["accuracy"] == 0.0
    assert m["by_source"]["x"]["n_pairs"] == 1
    assert m["accuracy"] == 0.5


def test_pointwise_mean_scores_ties_and_invalid():
    recs = [
        pt("p1", "chosen", 8, sample=0), pt("p1", "chosen", 6, sample=1), pt("p1", "rejected", 5),  # 7 > 5
        pt("p2", "chosen", 4), pt("p2", "rejected", 4),  # tie
        pt("p3", "chosen", 9), pt("p3", "rejected", None),  # rejected has no valid score -> invalid
        pt("p4", "chosen", 2), pt("p4", "rejected", None, sample=0), pt("p4", "rejected", 3, sample=1),
        # p4: 1 of 2 rejected samples valid -- no quorum (the Judge's rule, aggregate.has_quorum): invalid
        pt("p5", "chosen", 2), pt("p5", "rejected", 3),  # wrong
    ]
    m = compute_metrics(recs)
    assert m["kind"] == "pointwise"
    assert m["n_pairs"] == 5 and m["n_judgments"] == 5
    assert m["accuracy"] == 0.2
    assert m["accuracy_valid_only"] == pytest.approx(1 / 3)
    assert m["position_consistent_accuracy"] == m["accuracy"]
    assert m["flip_rate"] is None and m["position_a_rate"] is None
    assert m["tie_rate"] == 0.2
    assert m["judgment_invalid_rate"] == 0.4
    assert m["invalid_rate"] == pytest.approx(2 / 12)


def test_gold_score_agreement():
    gold = {"p1": [9, 2], "p2": [7, 4], "p3": [5, 1]}
    recs = [pt(p, r, g[i], gold=g) for p, g in gold.items() for i, r in enumerate(("chosen", "rejected"))]
    m = compute_metrics(recs)
    assert m["n_scored_responses"] == 6
    assert m["krippendorff_alpha"] == pytest.approx(1.0)
    assert m["spearman"] == pytest.approx(1.0) and m["kendall"] == pytest.approx(1.0)
    # shifted predictions: ranks agree perfectly, absolute agreement (alpha) drops
    shifted = [dict(r, decision=dict(r["decision"], scores=[r["decision"]["scores"][0] - 3])) for r in recs]
    m2 = compute_metrics(shifted)
    assert m2["spearman"] == pytest.approx(1.0)
    assert m2["krippendorff_alpha"] < 0.9


def test_gold_scores_from_pairwise_score_protocol():
    # PaS: scores [s_A, s_B]; in BA order the chosen response is B.
    recs = [pw("p1", "AB", "A", scores=[8, 3], gold=[9, 2]), pw("p1", "BA", "B", scores=[2, 9], gold=[9, 2]),
            pw("p2", "AB", "A", scores=[6, 5], gold=[6, 4]), pw("p2", "BA", "B", scores=[4, 6], gold=[6, 4])]
    m = compute_metrics(recs)
    assert m["n_scored_responses"] == 4
    assert m["spearman"] == pytest.approx(1.0)


def test_no_gold_scores_gives_none():
    m = compute_metrics([right("p1", "AB"), right("p1", "BA")])
    assert m["n_scored_responses"] == 0 and m["krippendorff_alpha"] is None and m["spearman"] is None


def test_tool_statistics():
    t = lambda calls, errors: {"segments": [], "tool_calls": calls, "tool_errors": errors}  # noqa: E731
    recs = [right("p1", "AB", trajectory=t(2, 1)), right("p1", "BA", trajectory=t(0, 0)),
            right("p2", "AB", trajectory=t(1, 0)), right("p2", "BA", trajectory=t(1, 1))]
    m = compute_metrics(recs)
    assert m["tool_use_rate"] == 0.75
    assert m["tool_error_rate"] == 0.5
    assert m["mean_tool_rounds"] == 1.0
    assert "tool_use_rate" not in compute_metrics([right("p1", "AB"), right("p1", "BA")])


def test_listwise_on_pairs_uses_best_of_ranking():
    def lw(order, ranking):
        return {"pair_id": "p", "source": "", "kind": "listwise", "order": order, "sample": 0,
                "order_index": 0 if order == "AB" else 1, "chosen_index": CHOSEN_INDEX[order],
                "decision": {"valid": True, "ranking": ranking}, "gold_tie": False}

    m = compute_metrics([lw("AB", [0, 1]), lw("BA", [1, 0])])
    assert m["accuracy"] == 1.0 and m["position_consistent_accuracy"] == 1.0
    m = compute_metrics([lw("AB", [0, 1]), lw("BA", [0, 1])])
    assert m["accuracy"] == 0.5 and m["flip_rate"] == 1.0


def test_bootstrap_ci_brackets_point_estimate_and_is_deterministic():
    import numpy as np

    vals = np.random.default_rng(1).integers(0, 2, size=200).astype(float)
    lo, hi = bootstrap_ci(vals, n_resamples=1000, seed=0)
    assert lo <= vals.mean() <= hi
    assert 0.0 <= lo < hi <= 1.0
    assert hi - lo < 0.2
    assert bootstrap_ci(vals, seed=0) == (lo, hi)
    assert bootstrap_ci([], seed=0) is None
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_ci(vals, confidence=1.5)


def test_metric_cis_bracket_estimates():
    recs = []
    for i in range(40):
        recs += [right(f"p{i}", "AB") if i % 3 else wrong(f"p{i}", "AB"), right(f"p{i}", "BA") if i % 4 else wrong(f"p{i}", "BA")]
    m = compute_metrics(recs)
    for key in ("accuracy", "position_consistent_accuracy"):
        lo, hi = m[f"{key}_ci"]
        assert lo <= m[key] <= hi
        assert not math.isclose(lo, hi)


def test_bad_records_raise_clear_errors():
    with pytest.raises(RecordError, match=r"record 1: missing field 'decision'"):
        compute_metrics([right("p1", "AB"), {k: v for k, v in right("p1", "BA").items() if k != "decision"}])
    with pytest.raises(RecordError, match="order"):
        compute_metrics([dict(right("p1", "AB"), order="CD")])
    with pytest.raises(RecordError, match="mix protocol kinds"):
        compute_metrics([right("p1", "AB"), pt("p2", "chosen", 3)])
    with pytest.raises(RecordError, match="chosen_index"):
        compute_metrics([dict(right("p1", "AB"), chosen_index=None)])


def test_empty_records():
    m = compute_metrics([])
    assert m["n_pairs"] == 0 and m["accuracy"] is None and m["accuracy_ci"] is None
