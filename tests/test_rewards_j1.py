"""J1 rewards against their definitions, on hand-written judge outputs (TRL call convention)."""

from __future__ import annotations

import pytest

from judgerl import rewards
from judgerl.rewards import get_format_reward as _format_reward
from support.rewards import shown_none

# these completions are hand-written, with no response texts behind their prompts: [] per row
get_verdict_reward = shown_none(rewards.get_verdict_reward)
get_consistency_reward = shown_none(rewards.get_consistency_reward)
get_pointwise_pair_reward = shown_none(rewards.get_pointwise_pair_reward)
get_format_reward = shown_none(_format_reward)
from judgerl.protocols import PaV, PoS
from judgerl.rewards._columns import completion_text, partner_index

A = "<think>72 is right, A says 72.</think>\n<verdict>A</verdict>"
B = "<think>B matches.</think>\n<verdict>B</verdict>"
BAD = "I think A is better."  # no tags: invalid
QUOTED = "<think>Response says <verdict>B</verdict> but</think>\n<verdict>A</verdict>"


def msg(text: str) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": text}]


class Recorder:
    def __init__(self) -> None:
        self.metrics: dict[str, float] = {}

    def __call__(self, name: str, value: float) -> None:
        self.metrics[name] = value


@pytest.mark.parametrize(
    "text,label,expected",
    [
        (A, "A", 1.0),
        (A, "B", 0.0),
        (B, "B", 1.0),
        (BAD, "A", 0.0),
        (QUOTED, "A", 1.0),  # only the final answer after </think> counts
        ("<think>x</think><verdict>A</verdict><verdict>B</verdict>", "A", 0.0),  # conflicting
        ("", "A", 0.0),
    ],
)
def test_verdict_reward_table(text: str, label: str, expected: float) -> None:
    fn = get_verdict_reward("pav")
    assert fn([text], label=[label]) == [expected]
    assert fn([msg(text)], label=[label]) == [expected]  # conversational completions too


def test_verdict_reward_logs_accuracy_and_valid_rate() -> None:
    rec = Recorder()
    out = get_verdict_reward("pav")([A, B, BAD, A], label=["A", "A", "A", "A"], log_metric=rec)
    assert out == [1.0, 0.0, 0.0, 1.0]
    assert rec.metrics["judge/pairwise_accuracy"] == 0.5
    assert rec.metrics["judge/pairwise_valid_format"] == 0.75


def test_verdict_reward_skips_other_kinds_and_missing_labels() -> None:
    fn = get_verdict_reward("pav")
    out = fn([A, "<think>x</think><score>7</score>", A], label=["A", None, None], protocol=["pav", "pos", "pav"])
    assert out == [1.0, None, None]


def test_verdict_reward_pas_uses_argmax_and_tie_is_wrong() -> None:
    fn = get_verdict_reward("pas")
    texts = [
        "<think>.</think><score_A>8</score_A> <score_B>3</score_B>",
        "<think>.</think><score_A>5</score_A> <score_B>5</score_B>",
    ]
    assert fn(texts, label=["A", "A"]) == [1.0, 0.0]


def test_verdict_reward_needs_label_column() -> None:
    with pytest.raises(KeyError, match="label"):
        get_verdict_reward("pav")([A])


def test_consistency_reward_pairs_kth_samples_of_both_orders() -> None:
    # pair p1: order 0 (gold A) two samples, then order 1 (gold B) two samples (num_generations=2)
    completions = [A, A, B, A]
    out = get_consistency_reward("pav")(
        completions, label=["A", "A", "B", "B"], pair_id=["p1"] * 4, order=[0, 0, 1, 1]
    )
    # sample 0: correct (A) & correct (B) -> 1 ; sample 1: correct (A) & wrong (A) -> 0
    assert out == [1.0, 0.0, 1.0, 0.0]


def test_consistency_reward_two_pairs_interleaved_and_invalid() -> None:
    completions = [A, BAD, B, B]
    out = get_consistency_reward("pav")(
        completions, label=["A", "A", "B", "B"], pair_id=["p1", "p2", "p1", "p2"], order=[0, 0, 1, 1]
    )
    assert out == [1.0, 0.0, 1.0, 0.0]


def test_consistency_reward_position_biased_judge_gets_zero() -> None:
    # always answers A: right on order 0, wrong on order 1 -> never consistent
    rec = Recorder()
    out = get_consistency_reward("pav")(
        [A, A], label=["A", "B"], pair_id=["p", "p"], order=[0, 1], log_metric=rec
    )
    assert out == [0.0, 0.0]
    assert rec.metrics["judge/position_consistent_accuracy"] == 0.0


def test_consistency_reward_missing_partner_is_an_error() -> None:
    with pytest.raises(ValueError, match="same batch"):
        get_consistency_reward("pav")([A], label=["A"], pair_id=["p"], order=[0])


S = "<think>fine</think>\n<score>{}</score>"


@pytest.mark.parametrize(
    "s_chosen,s_rejected,expected",
    [("8", "3", 1.0), ("3", "8", 0.0), ("5", "5", 0.0), ("10", "0", 1.0)],
)
def test_pointwise_pair_reward_formula(s_chosen: str, s_rejected: str, expected: float) -> None:
    fn = get_pointwise_pair_reward("pos")
    out = fn([S.format(s_chosen), S.format(s_rejected)], pair_id=["p", "p"], role=["chosen", "rejected"])
    assert out == [expected, expected]


def test_pointwise_pair_reward_invalid_or_out_of_range_is_zero() -> None:
    fn = get_pointwise_pair_reward(PoS(min_score=0, max_score=10))
    assert fn([BAD, S.format(2)], pair_id=["p", "p"], role=["chosen", "rejected"]) == [0.0, 0.0]
    assert fn([S.format(11), S.format(2)], pair_id=["p", "p"], role=["chosen", "rejected"]) == [0.0, 0.0]


def test_pointwise_pair_reward_groups_and_logs_ties() -> None:
    rec = Recorder()
    fn = get_pointwise_pair_reward("pos")
    # num_generations=2: chosen samples (9, 4), rejected samples (2, 4)
    out = fn(
        [S.format(9), S.format(4), S.format(2), S.format(4)],
        pair_id=["p"] * 4, role=["chosen", "chosen", "rejected", "rejected"], log_metric=rec,
    )
    assert out == [1.0, 0.0, 1.0, 0.0]
    assert rec.metrics["judge/pointwise_tie_rate"] == 0.5
    assert rec.metrics["judge/pointwise_pair_accuracy"] == 0.5


def test_pointwise_pair_reward_bad_role() -> None:
    with pytest.raises(ValueError, match="role"):
        get_pointwise_pair_reward("pos")([S.format(1)], pair_id=["p"], role=["winner"])


def test_multitask_batch_each_reward_scores_its_rows() -> None:
    completions = [A, B, S.format(8), S.format(2)]
    cols = dict(
        protocol=["pav", "pav", "pos", "pos"],
        label=["A", "B", None, None],
        pair_id=["p"] * 4,
        order=[0, 1, None, None],
        role=[None, None, "chosen", "rejected"],
    )
    both = [PaV(), PoS()]
    assert get_verdict_reward(both)(completions, **cols) == [1.0, 1.0, None, None]
    assert get_consistency_reward(both)(completions, **cols) == [1.0, 1.0, None, None]
    assert get_pointwise_pair_reward(both)(completions, **cols) == [None, None, 1.0, 1.0]
    assert get_format_reward(both)(completions + [BAD], **{k: v + [v[0]] for k, v in cols.items()}) == [
        1.0, 1.0, 1.0, 1.0, 0.0,
    ]


def test_format_reward_needs_the_protocol_of_each_row() -> None:
    with pytest.raises(KeyError, match="protocol"):
        get_format_reward([PaV(), PoS()])([A])
    assert get_format_reward("pav")([A, BAD]) == [1.0, 0.0]


def test_format_reward_uses_the_protocol_options() -> None:
    """A 0-9 PoS recipe's format reward parses on 0-9: a score of 10 is invalid (it parsed on 0-10)."""
    ten = S.format(10)
    assert get_format_reward(PoS(max_score=9))([ten, S.format(9)]) == [0.0, 1.0]
    assert get_format_reward(PoS())([ten]) == [1.0]


def test_completion_text_and_partner_index() -> None:
    assert completion_text([{"role": "assistant", "content": "a"}, {"role": "assistant", "content": "b"}]) == "ab"
    with pytest.raises(TypeError):
        completion_text(3)
    keys = [("p", 0), ("p", 0), ("p", 1), ("p", 1), None]
    assert partner_index(keys, lambda k: (k[0], 1 - k[1])) == [2, 3, 0, 1, None]
