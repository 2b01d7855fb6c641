"""Score-regression reward r = -1 (invalid) else (M_max - (ŝ - s)²) / M_max, M_max = (max - min)²."""

from __future__ import annotations

import pytest

from judgerl.rewards import get_regression_reward as _regression_reward
from judgerl.rewards import regression_reward_value
from support.rewards import shown_none

get_regression_reward = shown_none(_regression_reward)  # hand-written completions: no responses shown

S = "<think>ok</think>\n<score>{}</score>"


@pytest.mark.parametrize(
    "pred,gold,expected",
    [
        (9, 9, 1.0),
        (0, 9, 0.0),  # largest error: (81 - 81) / 81
        (7, 9, (81 - 4) / 81),
        (4.5, 3, (81 - 2.25) / 81),
        (None, 5, -1.0),
    ],
)
def test_value_formula_on_0_9(pred, gold, expected) -> None:
    assert regression_reward_value(pred, gold, 0, 9) == pytest.approx(expected)


def test_value_rejects_bad_scale_and_gold() -> None:
    with pytest.raises(ValueError, match="max_score"):
        regression_reward_value(1, 1, 5, 5)
    with pytest.raises(ValueError, match="gold score"):
        regression_reward_value(1, 12, 0, 9)


def test_reward_function_parses_with_protocol() -> None:
    fn = get_regression_reward("pos", 0, 9)
    texts = [S.format(9), S.format(6), "no tags", S.format(10), "<think>a</think><score>seven</score>"]
    out = fn(texts, gold_score=[9, 3, 5, 9, 7])
    assert out[0] == pytest.approx(1.0)
    assert out[1] == pytest.approx((81 - 9) / 81)
    assert out[2] == -1.0  # invalid
    assert out[3] == -1.0  # 10 is outside 0-9: invalid
    assert out[4] == -1.0


def test_reward_other_scale_and_skips() -> None:
    fn = get_regression_reward("pos", 1, 5)  # M_max = 16
    out = fn([S.format(3), S.format(3), "<think>x</think><verdict>A</verdict>"], gold_score=[5, None, 2],
             protocol=["pos", "pos", "pav"])
    assert out == [pytest.approx((16 - 4) / 16), None, None]


def test_reward_logs_valid_rate_and_error() -> None:
    seen = {}
    fn = get_regression_reward("pos", 0, 9)
    fn([S.format(8), "junk"], gold_score=[6, 6], log_metric=lambda k, v: seen.__setitem__(k, v))
    assert seen["judge/regression_valid_format"] == 0.5
    assert seen["judge/regression_abs_error"] == 2.0


def test_factory_validates_scale() -> None:
    with pytest.raises(ValueError):
        get_regression_reward("pos", 9, 0)
    with pytest.raises(KeyError, match="gold_score"):
        get_regression_reward("pos")([S.format(1)])
