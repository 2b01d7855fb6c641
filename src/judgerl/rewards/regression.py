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

from judgerl.protocols.base import JudgeProtocol
from judgerl.rewards._columns import RewardFn, column, log, protocol_set, read_decisions, row_protocols, row_responses


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


def get_regression_reward(protocol: JudgeProtocol | str = "pos", min_score: float | None = None,
                          max_score: float | None = None) -> RewardFn:
    """Factory for the score-regression reward (see module docstring for the formula).

    Args:
        protocol: The pointwise protocol object (its ``min_score``/``max_score`` are the scale, so
            out-of-range scores parse as invalid and get -1), or a name built with
            ``min_score``/``max_score`` (default 0-9, the paper's scale: M_max = 81).
        min_score, max_score: The scale when ``protocol`` is a name; must match the object's
            scale when given with an object.

    Columns: ``gold_score`` (number in [min_score, max_score]; rows with None get None),
        optional ``protocol``, ``responses`` (a score copied from the response is invalid: -1).
        Non-pointwise rows get None.
    Logs: ``judge/regression_valid_format``, ``judge/regression_abs_error`` (valid rows).

    Raises:
        ValueError: ``max_score <= min_score``, a scale that differs from the protocol object's,
            or (when called) a gold score out of range.
        KeyError: (when called) the ``gold_score`` column is missing.
    """
    if isinstance(protocol, str):
        from judgerl.protocols import get_protocol

        lo = 0 if min_score is None else min_score
        hi = 9 if max_score is None else max_score
        if hi <= lo:
            raise ValueError(f"max_score ({hi}) must be > min_score ({lo})")
        protocol = get_protocol(protocol, min_score=lo, max_score=hi)
    scale = protocol.score_scale
    if scale is None:
        raise ValueError(f"the regression reward needs a scaled (pointwise) protocol, not {protocol.name!r}")
    lo, hi = scale
    for name, given, own in (("min_score", min_score, lo), ("max_score", max_score, hi)):
        if given is not None and float(given) != own:
            raise ValueError(f"{name}={given} differs from the protocol's {own}; pass the protocol with its scale")
    protos = protocol_set(protocol)

    def regression_reward(completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
        n = len(completions)
        golds = column(kwargs, "gold_score", n, "regression_reward")
        rows = row_protocols(kwargs, n, protos, "regression_reward", kind="pointwise")
        out: list[float | None] = []
        valid: list[float] = []
        errors: list[float] = []
        rows = [p if g is not None else None for p, g in zip(rows, golds)]
        decisions = read_decisions(completions, rows, row_responses(kwargs, n, "regression_reward"),
                                   reward="regression_reward")
        for d, g in zip(decisions, golds):
            if d is None:
                out.append(None)
                continue
            if not lo <= float(g) <= hi:
                raise ValueError(f"regression_reward: gold score {g} outside [{lo}, {hi}]")
            pred = float(d.scores[0]) if d.valid and d.scores else None
            valid.append(float(pred is not None))
            if pred is not None:
                errors.append(abs(pred - float(g)))
            out.append(regression_reward_value(pred, float(g), lo, hi))
        log(kwargs, "judge/regression_valid_format", valid)
        log(kwargs, "judge/regression_abs_error", errors)
        return out

    return regression_reward


__all__ = ["get_regression_reward", "regression_reward_value"]
