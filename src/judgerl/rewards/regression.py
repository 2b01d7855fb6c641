"""Score-regression reward for pointwise reasoning judges trained to agree with a gold judge.

From the judge-as-reward study ("reasoning judges in non-verifiable post-training"): a pointwise
judge outputs a score ŝ on [min, max] and the gold score is s; the GRPO reward is

    r = -1                          if the output is invalid (no parseable in-range score),
    r = (M_max - (ŝ - s)²) / M_max  otherwise, with M_max = (max - min)² the largest squared error

(M_max = 81 on the paper's 0–9 scale), so r ∈ [0, 1] for valid outputs and r = 1 for an exact
match. Follows TRL's reward signature ``fn(completions, **columns) -> list[float | None]``.
"""

from __future__ import annotations

from typing import Any, Sequence

from judgerl.rewards.j1 import RewardFn, cached_protocol, column, log, parse_all, protocol_column


def regression_reward_value(pred: float | None, gold: float, min_score: float, max_score: float) -> float:
    """The reward for one prediction: -1 for None (invalid), else (M_max - (pred - gold)²) / M_max.

    Raises:
        ValueError: ``max_score <= min_score``, or ``gold`` outside [min_score, max_score].
    """
    if max_score <= min_score:
        raise ValueError(f"max_score ({max_score}) must be > min_score ({min_score})")
    if not min_score <= gold <= max_score:
        raise ValueError(f"gold score {gold} outside [{min_score}, {max_score}]")
    if pred is None:
        return -1.0
    m_max = (max_score - min_score) ** 2
    return (m_max - (pred - gold) ** 2) / m_max


def get_regression_reward(protocol: str | None = "pos", min_score: float = 0, max_score: float = 9) -> RewardFn:
    """Factory for the score-regression reward (see module docstring for the formula).

    Args:
        protocol: Default pointwise protocol (overridden per row by a ``protocol`` column); it is
            built with ``min_score``/``max_score`` so out-of-range scores parse as invalid (-1).
        min_score, max_score: The score scale (paper: 0–9, M_max = 81).

    Columns: ``gold_score`` (number in [min_score, max_score]; rows with None get None),
        optional ``protocol``. Non-pointwise rows get None.
    Logs: ``judge/regression_valid_format``, ``judge/regression_abs_error`` (valid rows).

    Raises:
        ValueError: ``max_score <= min_score`` (at creation) or a gold score out of range (when called).
        KeyError: (when called) the ``gold_score`` column is missing.
    """
    if max_score <= min_score:
        raise ValueError(f"max_score ({max_score}) must be > min_score ({min_score})")
    pkw = {"min_score": min_score, "max_score": max_score}

    def regression_reward(completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
        n = len(completions)
        golds = column(kwargs, "gold_score", n, "regression_reward")
        names = protocol_column(kwargs, n, protocol)
        names = [
            p if p is not None and g is not None and cached_protocol(p).kind == "pointwise" else None
            for p, g in zip(names, golds)
        ]
        decisions = parse_all(completions, names, pkw)
        out: list[float | None] = []
        valid: list[float] = []
        errors: list[float] = []
        for d, g in zip(decisions, golds):
            if d is None:
                out.append(None)
                continue
            pred = float(d.scores[0]) if d.valid and d.scores else None
            valid.append(float(pred is not None))
            if pred is not None:
                errors.append(abs(pred - float(g)))
            out.append(regression_reward_value(pred, float(g), min_score, max_score))
        log(kwargs, "judge/regression_valid_format", valid)
        log(kwargs, "judge/regression_abs_error", errors)
        return out

    return regression_reward


__all__ = ["get_regression_reward", "regression_reward_value"]
