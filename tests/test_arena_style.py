"""Arena style control (judgerl.arena.style): BT with normalised style differences as covariates."""

from __future__ import annotations

import pytest

from judgerl.arena.scores import Game, win_rate
from judgerl.arena.style import style_control, style_design, style_features


def test_style_features_count_markdown_outside_code() -> None:
    text = "# Title\n\nSome **bold** and __also__.\n\n- a\n- b\n1. c\n```\n# not a header\n- not a list\n```"
    tokens, headers, lists, bold = style_features(text)
    assert (headers, lists, bold) == (1, 3, 2) and tokens == len(text.split())


def _games(prefer_longer: bool, n: int = 200):
    """System 's' vs baseline 'b'; s is longer on 3 of 4 prompts; the judge prefers the longer answer
    on 4 prompts of 5 (a pure style bias: equal styles would be a coin flip) or always s (substance)."""
    games, responses = [], {}
    for q in range(n):
        long_s = q % 4 != 0
        responses[(str(q), "s")] = "word " * (60 if long_s else 10)
        responses[(str(q), "b")] = "word " * (10 if long_s else 60) + ("x " * (q % 5))
        s_wins = (long_s == (q % 5 != 0)) if prefer_longer else True
        for _ in range(2):  # both orders
            games.append(Game(str(q), "s", "b", "win" if s_wins else "loss"))
    return games, responses


def test_a_pure_length_bias_is_removed() -> None:
    games, responses = _games(prefer_longer=True)
    assert win_rate(games) == pytest.approx(0.65)
    sc = style_control(games, responses, "b", ["s"])
    assert abs(sc["systems"]["s"]["win_rate"] - 0.5) < 0.1
    assert sc["beta"]["length"] > 1.0


def test_substance_survives_style_control() -> None:
    games, responses = _games(prefer_longer=False)
    sc = style_control(games, responses, "b", ["s"])
    assert sc["systems"]["s"]["win_rate"] > 0.9


def test_constant_features_stay_zero_and_missing_response_is_named() -> None:
    games = [Game("1", "s", "b", "win"), Game("2", "s", "b", "loss")]
    d = style_design(games, {("1", "s"): "a", ("1", "b"): "a", ("2", "s"): "a", ("2", "b"): "a"})
    assert (d == 0).all()
    with pytest.raises(KeyError, match="no response of 'b' for prompt '2'"):
        style_design(games, {("1", "s"): "a", ("1", "b"): "a", ("2", "s"): "a"})
