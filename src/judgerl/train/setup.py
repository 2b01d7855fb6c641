"""What a judge-training run is made of, read from its recipe once.

:meth:`TrainSetup.from_config` is the one place a recipe's names become objects: the protocol objects
(with their options and scale), the resolved model directory, the training pairs and their GRPO rows.
The stages (:mod:`judgerl.train.stages`, :mod:`judgerl.train.zero`) receive these objects, not the
recipe.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from judgerl.protocols.base import JudgeProtocol
from judgerl.train.config import TrainConfig
from judgerl.types import PreferencePair


@dataclass(frozen=True)
class TrainSetup:
    """The objects of one run.

    Attributes:
        pairwise: The pairwise protocol (tasks pairwise / multitask / tir), else None.
        pointwise: The pointwise protocol on the recipe's scale (pointwise / multitask / regression), else None.
        base_model: The model directory the run starts from (``config.model`` resolved).
        pairs: The training pairs (non-tie; ``data.offset`` / ``data.limit`` applied).
        rows: Their GRPO rows (:func:`judgerl.train.datasets.build_rows`), prompts stating the tool budget.
    """

    pairwise: JudgeProtocol | None
    pointwise: JudgeProtocol | None
    base_model: str
    pairs: tuple[PreferencePair, ...]
    rows: tuple[dict[str, Any], ...]

    @property
    def protocols(self) -> dict[str, JudgeProtocol]:
        """The run's protocols by name."""
        return {p.name: p for p in (self.pairwise, self.pointwise) if p is not None}

    @classmethod
    def from_config(cls, config: TrainConfig) -> "TrainSetup":
        """Build the run's objects.

        Raises:
            RecipeError: a bad protocol, no usable pair, an unknown builder.
            judgerl.data.DataFormatError / FileNotFoundError: from the loaders.
        """
        from judgerl.backends.models import resolve_hf_path
        from judgerl.train.datasets import build_rows, load_training_pairs

        pw, pt = config.pairwise(), config.pointwise()
        pairs = load_training_pairs(config.data, config.seed)
        rows = build_rows(pairs, config.task, pw, pt, max_tool_rounds=int(config.tools.max_rounds))
        return cls(pw, pt, resolve_hf_path(config.model), tuple(pairs), tuple(rows))


__all__ = ["TrainSetup"]
