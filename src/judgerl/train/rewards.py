"""The reward functions of judge training, by name: one registry, :data:`REWARDS`.

A recipe's ``rewards:`` section gives each reward a weight (0 = off, :class:`~judgerl.train.sections.RewardsConfig`);
:func:`reward_funcs` makes the weighted reward functions (TRL's signature, :mod:`judgerl.rewards`)
from a :class:`RewardContext` -- the objects the rewards need, read from the recipe once. A new reward
is a factory ``f(context) -> reward function`` added to :data:`REWARDS` (and a weight field in
``RewardsConfig``): the layout of verl's reward-manager registry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from judgerl.protocols.base import JudgeProtocol
from judgerl.train.config import RecipeError
from judgerl.train.grpo import GRPO_DEFAULTS
from judgerl.train.sections import DapoConfig, ToolsConfig

RewardFn = Callable[..., list[float | None]]


@dataclass(frozen=True)
class RewardContext:
    """What the rewards of one run read.

    Attributes:
        pairwise, pointwise: The run's protocol objects (None when the task has none), with their
            options and scale (a 0-9 PoS recipe's format and regression rewards parse on 0-9).
        max_tool_rounds: The tool budget (TIR reward: Rt counts at most this many calls).
        score_tolerance: The pointwise TIR reward's Rc: largest ``|score - gold|`` counted as correct.
        force_answer: TIR rollouts force missing answer tags (:func:`forced_answer_reward`).
        max_completion_length: GRPO's completion budget in tokens (overlong punishment).
        overlong_buffer: DAPO's L_cache in tokens (None: no overlong punishment).
    """

    pairwise: JudgeProtocol | None
    pointwise: JudgeProtocol | None
    max_tool_rounds: int
    force_answer: bool = False
    max_completion_length: int = int(GRPO_DEFAULTS["max_completion_length"])
    overlong_buffer: int | None = None
    score_tolerance: float = 0.0

    @classmethod
    def from_sections(cls, pairwise: JudgeProtocol | None, pointwise: JudgeProtocol | None, tools: ToolsConfig,
                      grpo: Mapping[str, Any], dapo: DapoConfig, score_tolerance: float = 0.0) -> "RewardContext":
        """The context of a run from its protocol objects (:meth:`~judgerl.train.config.TrainConfig.protocols`)
        and the recipe's ``tools`` section, ``grpo`` fields and ``dapo`` section
        (:meth:`judgerl.train.setup.TrainSetup.from_config` calls it)."""
        return cls(pairwise, pointwise, int(tools.max_rounds), bool(tools.force_answer),
                   int(grpo.get("max_completion_length", GRPO_DEFAULTS["max_completion_length"])),
                   None if dapo.overlong_buffer is None else int(dapo.overlong_buffer), float(score_tolerance))


def _verdict(c: RewardContext) -> RewardFn:
    from judgerl.rewards import get_verdict_reward

    return get_verdict_reward(c.pairwise)


def _consistency(c: RewardContext) -> RewardFn:
    from judgerl.rewards import get_consistency_reward

    return get_consistency_reward(c.pairwise)


def _pointwise_pair(c: RewardContext) -> RewardFn:
    from judgerl.rewards import get_pointwise_pair_reward

    return get_pointwise_pair_reward(c.pointwise)


def _format(c: RewardContext) -> RewardFn:
    from judgerl.rewards import get_format_reward

    return get_format_reward([p for p in (c.pairwise, c.pointwise) if p is not None])


def _regression(c: RewardContext) -> RewardFn:
    from judgerl.rewards import get_regression_reward

    return get_regression_reward(c.pointwise)


def _tir(c: RewardContext) -> RewardFn:
    from judgerl.rewards import get_tir_reward

    # task tir: the pairwise protocol; tir-pointwise: the pointwise one, its rows scored against gold_score
    fn = get_tir_reward(c.pairwise or c.pointwise, max_tool_calls=c.max_tool_rounds, score_tolerance=c.score_tolerance)
    return forced_answer_reward(fn) if c.force_answer else fn


def _overlong(c: RewardContext) -> RewardFn:
    from trl.rewards import get_soft_overlong_punishment

    if not c.overlong_buffer:
        raise RecipeError("rewards.overlong needs dapo.overlong_buffer (L_cache, in tokens)")
    fn = get_soft_overlong_punishment(c.max_completion_length, c.overlong_buffer)
    fn.__name__ = "soft_overlong_punishment"  # type: ignore[attr-defined]
    return fn


#: Reward name (a ``rewards:`` field) -> factory of the reward function (J1: verdict, consistency,
#: pointwise_pair, format; score regression; TIR-Judge: tir; DAPO: overlong).
REWARDS: dict[str, Callable[[RewardContext], RewardFn]] = {
    "verdict": _verdict,
    "consistency": _consistency,
    "pointwise_pair": _pointwise_pair,
    "format": _format,
    "regression": _regression,
    "tir": _tir,
    "overlong": _overlong,
}


def reward_funcs(weights: Mapping[str, float], context: RewardContext) -> tuple[list[RewardFn], list[float]]:
    """The reward functions of the non-zero ``weights`` (by :data:`REWARDS` name) and their weights.

    Raises:
        RecipeError: an unknown reward name, or ``overlong`` without ``overlong_buffer``.
    """
    funcs, out = [], []
    for name, w in weights.items():
        if name not in REWARDS:
            raise RecipeError(f"rewards.{name}: unknown reward; known: {', '.join(REWARDS)}")
        funcs.append(REWARDS[name](context))
        out.append(float(w))
    return funcs, out


def forced_answer_reward(base: Callable[..., list[float | None]]) -> Callable[..., list[float | None]]:
    """The TIR reward ``base`` with Rf = 0 for rollouts whose answer tag judgerl forced.

    TIR-Judge's Rf requires the answer tags to be present; a forced tag was written by judgerl, not
    the policy, so such a rollout scores R = Rc × (0.1 + 0.9 · 0) = 0.1 · Rc
    (:func:`judgerl.rewards.tir.tir_reward_value`; Rc = 1[R > 0] since R ≥ 0.1 · Rc): a correctness
    signal for a base that never writes the tag (the verdict token after the forced tag is
    trained), ten times smaller than a correct judgment in the policy's own format. Reads the
    ``forced`` flag of the rollout's ``trajectories`` column.
    """
    from judgerl.rewards.tir import tir_reward_value

    def tir_reward(completions: Any, **kwargs: Any) -> list[float | None]:
        values = base(completions, **kwargs)
        trajs = kwargs.get("trajectories") or [None] * len(values)
        return [v if v is None or not (t or {}).get("forced") else tir_reward_value(float(v > 0), 0.0, 0.0)
                for v, t in zip(values, trajs)]

    return tir_reward


__all__ = ["REWARDS", "RewardContext", "forced_answer_reward", "reward_funcs"]
