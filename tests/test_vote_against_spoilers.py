"""A sample a response spoiled votes against its spoiler where the vote keeps a quorum (judgerl.judge.aggregate,
against_spoilers): aggregate_decisions, the pointwise expected-score mean (vote_values) and the eval vote
(metrics.aggregate_pairs) alike; /v1/rewards blames the policy's response (at_fault)."""
from __future__ import annotations

import pytest

from judgerl.judge.aggregate import against_spoilers, aggregate_decisions, vote_values
from judgerl.types import Decision

SPOIL_A = Decision(valid=False, invalid_reason="spoiled_by_markup", quoted=(0,))
SPOIL_B = Decision(valid=False, invalid_reason="spoiled_by_markup", quoted=(1,))
SPOIL_AB = Decision(valid=False, invalid_reason="spoiled_by_markup", quoted=(0, 1))
GLITCH = Decision(valid=False, invalid_reason="missing_final_answer")


def v(verdict=None, scores=None, ranking=None):
    return Decision(valid=True, verdict=verdict, scores=scores, ranking=ranking)


def test_pairwise_spoiled_samples_vote_for_the_other_response():
    # 2 spoiled by A, 1 honest B, 2 fooled A: dropping the spoiled samples gave A 2-1
    d = aggregate_decisions([SPOIL_A, SPOIL_A, v("B"), v("A"), v("A")], "pairwise")
    assert d.valid and d.verdict == "B"
    assert aggregate_decisions([SPOIL_B, v("A"), v("B")], "pairwise").verdict == "A"


def test_pairwise_scores_of_a_spoiled_sample_are_the_extremes_against_the_spoiler():
    d = aggregate_decisions([SPOIL_A, v("B", (3.0, 7.0)), v("A", (9.0, 2.0))], "pairwise")
    # spoiled sample: (2, 9); mean over the three: A (2+3+9)/3, B (9+7+2)/3
    assert d.verdict == "B" and d.scores == pytest.approx(((2 + 3 + 9) / 3, (9 + 7 + 2) / 3))


def test_two_spoilers_of_a_pair_stay_dropped():
    turned = against_spoilers([SPOIL_AB, v("A"), v("B")], "pairwise")
    assert turned[0] is SPOIL_AB
    assert aggregate_decisions([SPOIL_AB, v("A"), v("A")], "pairwise").verdict == "A"


def test_pointwise_spoiled_sample_counts_as_the_lowest_valid_score():
    d = aggregate_decisions([SPOIL_A, v(scores=(1.0,)), v(scores=(10.0,))], "pointwise")
    assert d.scores == pytest.approx((4.0,))


def test_listwise_best_spoiler_cannot_win_a_tie_it_made():
    outs = [SPOIL_C := Decision(valid=False, invalid_reason="spoiled_by_markup", quoted=(2,)),
            v(ranking=(2,)), v(ranking=(0,)), v(ranking=(1,)), SPOIL_C]
    assert aggregate_decisions(outs, "listwise").ranking == (0,)


def test_listwise_rank_spoiled_sample_puts_the_spoiler_last():
    spoil = Decision(valid=False, invalid_reason="spoiled_by_markup", quoted=(0,))
    turned = against_spoilers([spoil, v(ranking=(0, 1, 2)), v(ranking=(1, 0, 2))], "listwise")
    assert turned[0].valid and turned[0].ranking[-1] == 0 and sorted(turned[0].ranking) == [0, 1, 2]


@pytest.mark.parametrize("samples", [
    [SPOIL_A],  # one sample decides alone: invalid, a policy fault
    [SPOIL_A, SPOIL_A, v("B")],  # no quorum: invalid
    [SPOIL_A, GLITCH, v("B")],  # no quorum
])
def test_without_a_vote_the_spoiled_judgment_stays_invalid(samples):
    d = aggregate_decisions(samples, "pairwise")
    assert not d.valid


def test_other_invalid_samples_are_not_turned():
    turned = against_spoilers([GLITCH, v("A"), v("A")], "pairwise")
    assert turned[0] is GLITCH


def test_quoted_answer_still_voids_everything():
    quoted = Decision(valid=False, invalid_reason="quoted_answer", quoted=(0,))
    assert aggregate_decisions([quoted, v("B"), v("B"), SPOIL_A], "pairwise").invalid_reason == "quoted_answer"


def test_expected_values_add_the_lowest_for_a_spoiled_sample():
    assert vote_values([SPOIL_A, v(scores=(1.0,)), v(scores=(10.0,))], [None, 1.0, 10.0]) == pytest.approx(4.0)
    assert vote_values([SPOIL_A, SPOIL_A, v(scores=(9.0,))], [None, None, 9.0]) is None  # no quorum
    assert vote_values([GLITCH, v(scores=(1.0,)), v(scores=(10.0,))], [None, 1.0, 10.0]) == pytest.approx(5.5)


def _rec(decision, kind="pairwise", chosen=0, order="AB", pid="p1"):
    return {"pair_id": pid, "kind": kind, "order": order, "sample": 0, "chosen_index": chosen,
            "decision": decision.to_dict()}


def test_eval_vote_counts_a_spoiled_sample_against_the_spoiler():
    from judgerl.eval.metrics import aggregate_pairs

    # chosen is response 0; the rejected response (1) spoiled two samples, two were fooled
    recs = [_rec(SPOIL_B), _rec(SPOIL_B), _rec(v("A")), _rec(v("B")), _rec(v("B"))]
    _, [o] = aggregate_pairs(recs)
    assert o.judgments["AB"] == "chosen"
    _, [o] = aggregate_pairs([_rec(SPOIL_B)])  # one sample: invalid, no vote
    assert o.judgments["AB"] is None


def test_eval_listwise_agrees_with_the_judge():
    from judgerl.eval.metrics import aggregate_pairs

    spoil = Decision(valid=False, invalid_reason="spoiled_by_markup", quoted=(1,))
    ds = [spoil, spoil, v(ranking=(1,)), v(ranking=(1,)), v(ranking=(0,))]
    assert aggregate_decisions(ds, "listwise").ranking == (0,)
    _, [o] = aggregate_pairs([_rec(d, "listwise") for d in ds])
    assert o.judgments["AB"] == "chosen"


def test_eval_pointwise_has_the_quorum_and_turns_spoiled_samples():
    from judgerl.eval.metrics import aggregate_pairs

    # rejected: 2 spoiled by it, then 1, 10, 10 -> (1+1+1+10+10)/5 = 4.6 under the chosen's 6
    recs = [_rec(v(scores=(6.0,)), "pointwise", order="chosen")]
    recs += [_rec(d, "pointwise", order="rejected") for d in (SPOIL_A, SPOIL_A, v(scores=(1.0,)), v(scores=(10.0,)),
                                                              v(scores=(10.0,)))]
    _, [o] = aggregate_pairs(recs)
    assert o.pred_scores["rejected"] == pytest.approx(4.6) and o.judgments["pointwise"] == "chosen"
    # 3 of 5 spoiled: no quorum, no score, no choice
    recs = recs[:1] + [_rec(d, "pointwise", order="rejected") for d in (SPOIL_A,) * 3 + (v(scores=(10.0,)),) * 2]
    _, [o] = aggregate_pairs(recs)
    assert "rejected" not in o.pred_scores and o.judgments["pointwise"] is None


def test_rewards_blame_the_policy_not_the_reference():
    # /v1/rewards: the policy's response at 0; a sample spoiled by the reference's markup votes against the policy
    assert aggregate_decisions([SPOIL_B, v("A"), v("B")], "pairwise", at_fault=(0,)).verdict == "B"
    assert aggregate_decisions([SPOIL_AB, v("A"), v("B")], "pairwise", at_fault=(0,)).verdict == "B"


def test_listwise_spoiler_never_wins_a_tie_in_any_order():
    spoil = Decision(valid=False, invalid_reason="spoiled_by_markup", quoted=(2,))
    ds = [v(ranking=(2,)), v(ranking=(2,)), v(ranking=(0,)), v(ranking=(1,)), spoil]
    assert aggregate_decisions(ds, "listwise").ranking == (0,)


def test_listwise_odd_spoiler_indices_do_not_enter_the_ranking():
    for quoted in ((0, 5), (-1,)):
        spoil = Decision(valid=False, invalid_reason="spoiled_by_markup", quoted=quoted)
        d = aggregate_decisions([spoil, v(ranking=(0, 1, 2)), v(ranking=(1, 0, 2))], "listwise")
        assert d.valid and sorted(d.ranking) == [0, 1, 2]
