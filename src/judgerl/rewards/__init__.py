"""Reward functions with TRL's signature ``fn(completions, **columns) -> list[float | None]``."""

from judgerl.rewards.j1 import (
    get_consistency_reward,
    get_format_reward,
    get_pointwise_pair_reward,
    get_verdict_reward,
)
from judgerl.rewards.regression import get_regression_reward, regression_reward_value
from judgerl.rewards.tir import get_tir_reward, get_tir_reward_components

__all__ = [
    "get_consistency_reward",
    "get_format_reward",
    "get_pointwise_pair_reward",
    "get_regression_reward",
    "get_tir_reward",
    "get_tir_reward_components",
    "get_verdict_reward",
    "regression_reward_value",
]
