"""What a judge-training run is made of, read from its recipe once.

:meth:`TrainSetup.from_config` is the one place a recipe becomes the objects its stages use: the
protocol objects (with their options and scale), the resolved model directory, the training pairs and
their GRPO rows, the rewards' :class:`~judgerl.train.rewards.RewardContext` and weights, and the typed
sections each stage reads (``tools``, ``warmup``, ``distill``, ``lora``, ``dapo``; ``grpo`` / ``sft``
fields). The stages (:mod:`judgerl.train.stages`, :mod:`judgerl.train.zero`) receive these objects, not
the recipe; what changes from one phase to the next (the output directory, resuming, the initial model,
GRPO steps, a deadline) is an argument of :func:`judgerl.train.stages.train_recipe`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from judgerl.protocols.base import JudgeProtocol
from judgerl.train.config import TrainConfig
from judgerl.train.rewards import RewardContext
from judgerl.train.sections import DapoConfig, DistillConfig, LoraConfig, ToolsConfig, WarmupConfig
from judgerl.types import PreferencePair


@dataclass(frozen=True)
class TrainSetup:
    """The objects of one run.

    Attributes:
        task: The recipe's task (``pairwise``, ``pointwise``, ``multitask``, ``tir``, ``tir-pointwise``, ``regression``).
        pairwise: The pairwise protocol (tasks pairwise / multitask / tir), else None.
        pointwise: The pointwise protocol on the recipe's scale (pointwise / multitask / regression / tir-pointwise), else None.
        base_model: The model directory the run starts from (``config.model`` resolved).
        pairs: The training pairs (non-tie; ``data.offset`` / ``data.limit`` applied).
        rows: Their GRPO rows (:func:`judgerl.train.datasets.build_rows`), prompts stating the tool budget.
        seed: The run's seed (policy init, SFT, GRPO, teacher sampling).
        rewards: What the reward functions read (protocols, tool budget, completion budget).
        reward_weights: Reward name (:data:`judgerl.train.rewards.REWARDS`) -> non-zero weight.
        tools: Tool loop settings (TIR rollouts, the judge's tool budget).
        warmup, distill, lora, dapo: The recipe's sections (SFT warm-up, teacher, LoRA, DAPO options).
        freeze_layers: Bottom layers frozen (0: none).
        grpo: Fields of :class:`~judgerl.train.trainer.JudgeGRPOConfig` from the recipe.
        sft: Fields of TRL's ``SFTConfig`` from the recipe.
    """

    task: str
    pairwise: JudgeProtocol | None
    pointwise: JudgeProtocol | None
    base_model: str
    pairs: tuple[PreferencePair, ...]
    rows: tuple[dict[str, Any], ...]
    seed: int = 0
    rewards: RewardContext | None = None
    reward_weights: Mapping[str, float] = field(default_factory=dict)
    tools: ToolsConfig = field(default_factory=ToolsConfig)
    warmup: WarmupConfig = field(default_factory=WarmupConfig)
    distill: DistillConfig = field(default_factory=DistillConfig)
    lora: LoraConfig = field(default_factory=LoraConfig)
    dapo: DapoConfig = field(default_factory=DapoConfig)
    freeze_layers: int = 0
    grpo: Mapping[str, Any] = field(default_factory=dict)
    sft: Mapping[str, Any] = field(default_factory=dict)

    @property
    def protocols(self) -> dict[str, JudgeProtocol]:
        """The run's protocols by name."""
        return {p.name: p for p in (self.pairwise, self.pointwise) if p is not None}

    @classmethod
    def from_config(cls, config: TrainConfig) -> "TrainSetup":
        """Build the run's objects from a validated recipe.

        Raises:
            RecipeError: a bad protocol, no usable pair, an unknown builder.
            judgerl.data.DataFormatError / FileNotFoundError: from the loaders.
        """
        from judgerl.backends.models import resolve_hf_path
        from judgerl.train.datasets import build_rows, load_training_pairs

        pw, pt = config.protocols()
        pairs = load_training_pairs(config.data, config.seed)
        rows = build_rows(pairs, config.task, pw, pt, max_tool_rounds=int(config.tools.max_rounds))
        rewards = RewardContext.from_sections(pw, pt, config.tools, config.grpo, config.dapo,
                                              config.score_tolerance)
        return cls(config.task, pw, pt, resolve_hf_path(config.model), tuple(pairs), tuple(rows), int(config.seed),
                   rewards, config.rewards.weights(), config.tools, config.warmup, config.distill, config.lora,
                   config.dapo, int(config.freeze_layers), dict(config.grpo), dict(config.sft))


__all__ = ["TrainSetup"]
