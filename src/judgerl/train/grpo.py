"""The GRPO pieces of judge training on TRL: the trainer config from a recipe, checkpoints, frozen layers.

:func:`build_grpo_config` makes a :class:`~judgerl.train.trainer.JudgeGRPOConfig` from
:data:`GRPO_DEFAULTS`, the recipe's ``grpo`` and ``dapo`` sections and the reward weights; the run
itself is :func:`judgerl.train.run.run_training` (stages: :mod:`judgerl.train.stages`; rewards:
:mod:`judgerl.train.rewards`).
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any, Mapping, Sequence

from judgerl.train.config import RecipeError, closest
from judgerl.train.sections import DapoConfig

logger = logging.getLogger(__name__)

#: GRPOConfig defaults for judgerl runs (a recipe's ``grpo`` section overrides any of them).
GRPO_DEFAULTS: dict[str, Any] = dict(
    learning_rate=1e-6,
    per_device_train_batch_size=8,
    num_generations=4,
    max_completion_length=128,
    temperature=1.0,
    beta=0.0,
    logging_steps=1,
    save_steps=50,
    save_total_limit=2,
    report_to="none",
    remove_unused_columns=False,
    shuffle_dataset=True,
    log_completions=False,
)


def build_grpo_config(grpo: Mapping[str, Any], dapo: DapoConfig, *, output_dir: str | Path, seed: int,
                      weights: Sequence[float], merge_for_rollout: bool = False) -> Any:
    """A :class:`~judgerl.train.trainer.JudgeGRPOConfig` from :data:`GRPO_DEFAULTS`, a recipe's ``grpo``
    fields and ``dapo`` section, the run directory, the seed, the reward weights (one per reward function,
    :func:`judgerl.train.rewards.reward_funcs`) and the recipe's ``lora.merge_for_rollout``.

    Raises:
        RecipeError: an unknown field (with the closest valid one), or a generation batch that
            would split pairs.
    """
    from judgerl.train.trainer import JudgeGRPOConfig, cpu_precision_defaults

    kw = dict(GRPO_DEFAULTS)
    kw.update(cpu_precision_defaults())
    kw.update(grpo)
    known = {f.name for f in dataclasses.fields(JudgeGRPOConfig)}
    for k in kw:
        if k not in known:
            raise RecipeError(f"grpo.{k}: unknown JudgeGRPOConfig field{closest(k, known)}")
    kw.update(output_dir=str(output_dir), seed=int(seed), reward_weights=list(weights),
              dynamic_sampling=dapo.dynamic_sampling, max_sampling_rounds=dapo.max_sampling_rounds,
              merge_for_rollout=bool(merge_for_rollout))
    args = JudgeGRPOConfig(**kw)
    per_gen = args.generation_batch_size // args.num_generations
    if per_gen % args.pair_block:
        raise RecipeError(
            f"grpo: {per_gen} distinct prompts per generation batch (generation_batch_size "
            f"{args.generation_batch_size} / num_generations {args.num_generations}) must be a multiple of "
            f"{args.pair_block}, so both halves of every pair (both orders, or chosen+rejected) are generated "
            "and rewarded together"
        )
    return args


def last_checkpoint(output_dir: str | Path) -> str | None:
    """The newest ``checkpoint-N`` directory under ``output_dir`` (None if there is none)."""
    from transformers.trainer_utils import get_last_checkpoint

    if not Path(output_dir).is_dir():
        return None
    return get_last_checkpoint(str(output_dir))


def prune_checkpoints(output_dir: str | Path) -> int:
    """Delete every ``checkpoint-N`` directory (searched recursively) under a *finished* run's ``output_dir``.

    A finished run keeps ``final/`` (and ``sft/``); its checkpoints only serve a resume, and on the embedded
    model each full fine-tuning checkpoint is ~1.6 GB (fp32 weights + Adam state). Nothing outside
    directories named ``checkpoint-<digits>`` is touched.

    Returns:
        The bytes freed.
    """
    import re
    import shutil

    root, freed = Path(output_dir), 0
    if not root.is_dir():
        return 0
    for d in sorted(root.rglob("checkpoint-*")):
        if d.is_dir() and not d.is_symlink() and re.fullmatch(r"checkpoint-\d+", d.name):
            freed += sum(f.stat().st_size for f in d.rglob("*") if f.is_file() and not f.is_symlink())
            shutil.rmtree(d, ignore_errors=True)
    return freed


def freeze_bottom(model: Any, n_layers: int) -> int:
    """Freeze the input embeddings and the first ``n_layers`` decoder blocks of ``model``.

    Returns:
        The number of parameters left trainable.

    Raises:
        RecipeError: the model has no ``model.layers`` list, or ``n_layers`` exceeds its depth.
    """
    layers = getattr(getattr(model, "model", None), "layers", None)
    if layers is None:
        raise RecipeError(f"freeze_layers: {type(model).__name__} has no .model.layers to freeze")
    if not 0 <= n_layers <= len(layers):
        raise RecipeError(f"freeze_layers={n_layers}: the model has {len(layers)} layers")
    for p in model.get_input_embeddings().parameters():
        p.requires_grad_(False)
    for layer in list(layers)[:n_layers]:
        for p in layer.parameters():
            p.requires_grad_(False)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
