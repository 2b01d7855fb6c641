"""Run a judge-training recipe: data -> GRPO rows -> (SFT stage) -> GRPO/DAPO on TRL.

:func:`run_training` is what ``judgerl train`` calls; a recipe with ``zero.rounds`` goes to
:func:`judgerl.train.bootstrap.run_zero`. :func:`train_recipe` runs one SFT and/or GRPO stage from a
given initial model (also used by every TIR-Judge-Zero phase). The pieces are reusable on their
own: :func:`load_training_pairs`, :func:`build_reward_funcs`, :func:`build_grpo_config`.

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

import dataclasses
import logging
from pathlib import Path
from typing import Any, Callable

from judgerl.train.config import RecipeError, TrainConfig, closest
from judgerl.types import PreferencePair

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


def load_training_pairs(config: TrainConfig) -> list[PreferencePair]:
    """The recipe's training pairs: ``data.builder`` or ``data.path`` (via ``judgerl.data.load_pairs``).

    See :class:`~judgerl.train.config.DataConfig` for the fields.

    Raises:
        RecipeError: unknown builder, missing ``source``, or no usable pair.
        judgerl.data.DataFormatError / FileNotFoundError: from the loaders.
    """
    d = config.data
    need = None if d.limit is None else int(d.limit) + int(d.offset)
    if d.builder:
        if d.builder != "gsm8k-arith":
            raise RecipeError(f"data.builder={d.builder!r}: known builders: gsm8k-arith")
        if not d.source:
            raise RecipeError("data.builder=gsm8k-arith needs data.source (a GSM8K jsonl file)")
        from judgerl.data.builders.arith import build_arithmetic_pairs

        pairs = build_arithmetic_pairs(d.source, limit=need, seed=config.seed, max_value=int(d.max_value), ops=d.ops)
    else:
        from judgerl.data import load_pairs

        res = load_pairs(d.path, format=d.format, field_map=d.field_map, skip_invalid=bool(d.skip_invalid), limit=None)
        pairs = [p for p in res.pairs if not p.tie]
        if need is not None:
            pairs = pairs[:need]
    pairs = pairs[int(d.offset):]
    if not pairs:
        raise RecipeError("data: no usable (non-tie) training pairs")
    return pairs


def build_reward_funcs(config: TrainConfig) -> tuple[list[Callable[..., Any]], list[float]]:
    """Reward functions and weights for ``config.rewards`` (0 weights dropped).

    Every reward gets the recipe's protocol objects (with their options: a 0-9 PoS recipe's
    format and regression rewards parse on 0-9).

    Raises:
        RecipeError: ``overlong`` without ``dapo.overlong_buffer``.
    """
    from trl.rewards import get_soft_overlong_punishment

    from judgerl.rewards import (
        get_consistency_reward,
        get_format_reward,
        get_pointwise_pair_reward,
        get_regression_reward,
        get_tir_reward,
        get_verdict_reward,
    )

    pw, pt = config.pairwise(), config.pointwise()
    both = [p for p in (pw, pt) if p is not None]
    funcs, weights = [], []
    for name, w in config.rewards.weights().items():
        if name == "verdict":
            fn = get_verdict_reward(pw)
        elif name == "consistency":
            fn = get_consistency_reward(pw)
        elif name == "pointwise_pair":
            fn = get_pointwise_pair_reward(pt)
        elif name == "format":
            fn = get_format_reward(both)
        elif name == "regression":
            fn = get_regression_reward(pt)
        elif name == "tir":
            fn = get_tir_reward(pw, max_tool_calls=int(config.tools.max_rounds))
            if config.tools.force_answer:
                fn = forced_answer_reward(fn)
        elif name == "overlong":
            if not config.dapo.overlong_buffer:
                raise RecipeError("rewards.overlong needs dapo.overlong_buffer (L_cache, in tokens)")
            max_len = int(config.grpo.get("max_completion_length", GRPO_DEFAULTS["max_completion_length"]))
            fn = get_soft_overlong_punishment(max_len, int(config.dapo.overlong_buffer))
            fn.__name__ = "soft_overlong_punishment"  # type: ignore[attr-defined]
        else:  # pragma: no cover - RewardsConfig has no other fields
            raise RecipeError(f"rewards.{name}: unknown reward")
        funcs.append(fn)
        weights.append(float(w))
    return funcs, weights


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


def build_grpo_config(config: TrainConfig, weights: list[float]) -> Any:
    """A :class:`~judgerl.train.trainer.JudgeGRPOConfig` from :data:`GRPO_DEFAULTS`, the recipe's
    ``grpo`` and ``dapo`` sections and the reward weights.

    Raises:
        RecipeError: an unknown field (with the closest valid one), or a generation batch that
            would split pairs.
    """
    from judgerl.train.trainer import JudgeGRPOConfig, cpu_precision_defaults

    kw = dict(GRPO_DEFAULTS)
    kw.update(cpu_precision_defaults())
    kw.update(config.grpo)
    known = {f.name for f in dataclasses.fields(JudgeGRPOConfig)}
    for k in kw:
        if k not in known:
            raise RecipeError(f"grpo.{k}: unknown JudgeGRPOConfig field{closest(k, known)}")
    kw.update(output_dir=config.output_dir, seed=config.seed, reward_weights=weights,
              dynamic_sampling=config.dapo.dynamic_sampling, max_sampling_rounds=config.dapo.max_sampling_rounds)
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


def run_training(config: TrainConfig) -> dict[str, Any]:
    """Train a judge with the recipe ``config``.

    Plain recipes (:func:`judgerl.train.stages.train_recipe`): load pairs -> GRPO rows (both halves
    of each pair adjacent) -> load the model (+ LoRA) -> SFT stage (``warmup.steps`` > 0: templated
    trajectories, or teacher trajectories kept by rejection sampling when ``distill.teacher`` is
    set; skipped when resuming) -> GRPO with the recipe's rewards and DAPO options -> save
    ``<output_dir>/final``. Recipes with ``zero.rounds`` > 0 run TIR-Judge-Zero
    (:func:`judgerl.train.bootstrap.run_zero`).

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
        from judgerl.train.bootstrap import run_zero

        return run_zero(config)
    from judgerl.train.stages import train_recipe

    return train_recipe(config)
