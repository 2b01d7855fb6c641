"""``judgerl train``'s entry point: run a judge-training recipe.

:func:`run_training` validates the recipe and runs it: a plain recipe is one SFT and/or GRPO run
(:func:`judgerl.train.stages.train_recipe`: data -> GRPO rows -> (SFT stage) -> GRPO/DAPO on TRL), a
recipe with ``zero.rounds`` is TIR-Judge-Zero (:func:`judgerl.train.zero.run_zero`).

Output directory of a run::

    config.json            the resolved config (what --resume reloads)
    sft_examples.jsonl     the SFT targets (templated, or teacher trajectories kept by rejection
    sft_stats.json         sampling) and their statistics
    sft/                   the model after the SFT stage (+ sft/adapter with LoRA; done.json last)
    checkpoint-N/          GRPO checkpoints
    final/                 the trained judge (+ final/adapter with LoRA)
    metrics.jsonl, curves_*.png
"""

from __future__ import annotations

from typing import Any

from judgerl.train.config import TrainConfig
from judgerl.train.stages import train_recipe
from judgerl.train.zero import run_zero


def run_training(config: TrainConfig) -> dict[str, Any]:
    """Train a judge with the recipe ``config``.

    Plain recipes (:func:`judgerl.train.stages.train_recipe`): load pairs -> GRPO rows (both halves
    of each pair adjacent) -> load the model (+ LoRA) -> SFT stage (``warmup.steps`` > 0: templated
    trajectories, or teacher trajectories kept by rejection sampling when ``distill.teacher`` is
    set; skipped when resuming) -> GRPO with the recipe's rewards and DAPO options -> save
    ``<output_dir>/final``. Recipes with ``zero.rounds`` > 0 run TIR-Judge-Zero
    (:func:`judgerl.train.zero.run_zero`).

    Writes ``<output_dir>/config.json`` (the resolved config), ``metrics.jsonl`` (one record per
    logged step, phases ``warmup`` then ``grpo``), ``curves_*.png``, ``sft/`` and checkpoints
    ``checkpoint-N`` every ``grpo.save_steps`` steps (layout: module docstring).

    Returns:
        Summary dict: ``output_dir``, ``final_model``, ``sft_model``, ``global_step``,
        ``resumed_from``, ``n_pairs``, ``n_rows``, ``metrics`` (and ``rounds`` for Zero).

    Raises:
        RecipeError: invalid config.
    """
    config.validate()
    if config.zero.rounds:
        return run_zero(config)
    return train_recipe(config)


__all__ = ["run_training"]
