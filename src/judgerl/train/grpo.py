"""Run a judge-training recipe: data -> GRPO rows -> (SFT warm-up) -> GRPO/DAPO on TRL.

:func:`run_training` is what ``judgerl train`` calls. The pieces are reusable on their own:
:func:`load_training_pairs`, :func:`build_reward_funcs`, :func:`build_grpo_config`.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Callable

from judgerl.train.config import RecipeError, TrainConfig
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


def resolve_model(name: str) -> str:
    """``smollm2-135m`` -> the embedded model directory; anything else is returned unchanged."""
    from judgerl.backends.embedded import EMBEDDED_NAME, embedded_model_path

    if name in (EMBEDDED_NAME, "embedded"):
        return str(embedded_model_path())
    return name


def load_training_pairs(config: TrainConfig) -> list[PreferencePair]:
    """The recipe's training pairs: ``data.builder`` or ``data.path`` (via ``judgerl.data.load_pairs``).

    ``data`` keys: ``path``, ``format``, ``field_map``, ``skip_invalid``, ``limit``, ``offset``
    (skip the first N usable pairs, e.g. to hold them out), or ``builder: gsm8k-arith`` with
    ``source`` (a GSM8K jsonl) and optional ``ops``/``max_value``.

    Raises:
        RecipeError: unknown builder or missing ``source``.
        judgerl.data.DataFormatError / FileNotFoundError: from the loaders.
    """
    d = config.data
    limit, offset = d.get("limit"), int(d.get("offset") or 0)
    need = None if limit is None else int(limit) + offset
    builder = d.get("builder")
    if builder:
        if builder != "gsm8k-arith":
            raise RecipeError(f"data.builder={builder!r}: known builders: gsm8k-arith")
        if not d.get("source"):
            raise RecipeError("data.builder=gsm8k-arith needs data.source (a GSM8K jsonl file)")
        from judgerl.data.builders.arith import build_arithmetic_pairs

        pairs = build_arithmetic_pairs(
            d["source"], limit=need, seed=config.seed, max_value=int(d.get("max_value", 999)), ops=d.get("ops", "+-*")
        )
    else:
        from judgerl.data import load_pairs

        res = load_pairs(
            d["path"], format=d.get("format"), field_map=d.get("field_map"),
            skip_invalid=bool(d.get("skip_invalid", False)), limit=None,
        )
        pairs = [p for p in res.pairs if not p.tie]
        if need is not None:
            pairs = pairs[:need]
    pairs = pairs[offset:]
    if not pairs:
        raise RecipeError("data: no usable (non-tie) training pairs")
    return pairs


def build_reward_funcs(config: TrainConfig) -> tuple[list[Callable[..., Any]], list[float]]:
    """Reward functions and weights for ``config.rewards`` (name -> weight; 0 weights dropped).

    Raises:
        RecipeError: ``overlong`` without ``dapo.overlong_buffer``.
    """
    from judgerl.rewards import (
        get_consistency_reward,
        get_format_reward,
        get_pointwise_pair_reward,
        get_regression_reward,
        get_verdict_reward,
    )
    from judgerl.train.dapo import get_soft_overlong_reward

    pkw = {"min_score": config.score_min, "max_score": config.score_max}
    funcs, weights = [], []
    for name, w in config.rewards.items():
        if not w:
            continue
        if name == "verdict":
            fn = get_verdict_reward(config.protocol)
        elif name == "consistency":
            fn = get_consistency_reward(config.protocol)
        elif name == "pointwise_pair":
            fn = get_pointwise_pair_reward(config.pointwise_protocol, **pkw)
        elif name == "format":
            fn = get_format_reward(None)
        elif name == "regression":
            fn = get_regression_reward(config.pointwise_protocol, config.score_min, config.score_max)
        elif name == "tir":
            from judgerl.train.rollout import tir_reward_func

            fn = tir_reward_func(config)
        elif name == "overlong":
            buf = config.dapo.get("overlong_buffer")
            if not buf:
                raise RecipeError("rewards.overlong needs dapo.overlong_buffer (L_cache, in tokens)")
            max_len = int(config.grpo.get("max_completion_length", GRPO_DEFAULTS["max_completion_length"]))
            fn = get_soft_overlong_reward(max_len, int(buf))
        else:  # validated by TrainConfig.validate
            raise RecipeError(f"rewards.{name}: unknown reward")
        funcs.append(fn)
        weights.append(float(w))
    return funcs, weights


def build_grpo_config(config: TrainConfig, weights: list[float]) -> Any:
    """A ``trl.GRPOConfig`` from :data:`GRPO_DEFAULTS`, the recipe's ``grpo`` section and the weights.

    Raises:
        RecipeError: an unknown GRPOConfig field, or a generation batch that would split pairs.
    """
    import dataclasses

    from trl import GRPOConfig

    kw = dict(GRPO_DEFAULTS)
    kw.update(cpu_precision_defaults())
    kw.update(config.grpo)
    known = {f.name for f in dataclasses.fields(GRPOConfig)}
    unknown = sorted(set(kw) - known)
    if unknown:
        raise RecipeError(f"grpo: unknown GRPOConfig field(s): {', '.join(unknown)}")
    kw.update(output_dir=config.output_dir, seed=config.seed, reward_weights=weights)
    args = GRPOConfig(**kw)
    per_gen = args.generation_batch_size // args.num_generations
    if per_gen % 2:
        raise RecipeError(
            f"grpo: {per_gen} distinct prompts per generation batch (generation_batch_size "
            f"{args.generation_batch_size} / num_generations {args.num_generations}) must be even, so both "
            "halves of every pair (both orders, or chosen+rejected) are generated and rewarded together"
        )
    return args


def cpu_precision_defaults() -> dict[str, Any]:
    """``bf16=False`` when no GPU is present (TRL configs default to bf16, which CPUs refuse)."""
    import torch

    return {} if torch.cuda.is_available() else {"bf16": False}


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

    Steps: load pairs -> GRPO rows (both halves of each pair adjacent) -> load the model ->
    SFT format warm-up (``warmup.steps`` > 0, skipped when resuming a GRPO checkpoint) -> GRPO with
    the recipe's rewards and DAPO options -> save ``<output_dir>/final``.

    Writes ``<output_dir>/config.json`` (the resolved config), ``metrics.jsonl`` (one record per
    logged step, SFT phase ``warmup`` then ``grpo``), ``curves_*.png`` and checkpoints
    ``checkpoint-N`` every ``grpo.save_steps`` steps.

    Returns:
        Summary dict: ``output_dir``, ``final_model``, ``global_step``, ``resumed_from``,
        ``n_pairs``, ``n_rows``, ``metrics``.

    Raises:
        RecipeError: invalid config.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import time

    from judgerl.train.callbacks import MetricsLogger, TimeLimit
    from judgerl.train.dapo import JudgeGRPOTrainer
    from judgerl.train.datasets import build_rows, to_dataset

    config.validate()
    started = time.time()
    limit_cb = [TimeLimit(started + 60 * float(config.time_limit_min))] if config.time_limit_min else []
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    out = Path(config.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(config.to_dict(), indent=2))

    pairs = load_training_pairs(config)
    rows = build_rows(pairs, config.task, config.protocol, config.pointwise_protocol, config.score_min, config.score_max)
    funcs, weights = build_reward_funcs(config)
    args = build_grpo_config(config, weights)
    resume_from = last_checkpoint(out) if config.resume else None

    model_path = resolve_model(config.model)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
    torch.manual_seed(config.seed)
    if config.freeze_layers:
        n_trainable = freeze_bottom(model, int(config.freeze_layers))
        logger.info("froze embeddings + %d layers; %d trainable parameters", config.freeze_layers, n_trainable)

    steps = int(config.warmup.get("steps", 0) or 0)
    if steps > 0 and resume_from is None:
        from judgerl.train.sft import run_sft, templated_examples

        n_ex = int(config.warmup.get("examples", len(rows)))
        examples = templated_examples(rows[:n_ex], {p.id: p for p in pairs}, config.score_min, config.score_max)
        sft_kw = dict(
            max_steps=steps,
            learning_rate=float(config.warmup.get("learning_rate", 5e-5)),
            per_device_train_batch_size=int(config.warmup.get("batch_size", 8)),
            seed=config.seed,
        )
        sft_kw.update(config.sft)
        logger.info("SFT warm-up: %d steps on %d templated trajectories", steps, len(examples))
        model = run_sft(model, tokenizer, examples, out / "warmup", sft_kw, callbacks=[MetricsLogger(out, "warmup"), *limit_cb])

    rollout_func = None
    if config.task == "tir":
        from judgerl.train.rollout import make_tir_rollout

        rollout_func = make_tir_rollout(config, tokenizer)

    tokenizer.padding_side = "left"
    trainer = JudgeGRPOTrainer(
        model=model,
        reward_funcs=funcs,
        args=args,
        train_dataset=to_dataset(rows),
        processing_class=tokenizer,
        callbacks=[MetricsLogger(out, "grpo"), *limit_cb],
        rollout_func=rollout_func,
        block=2,
        dynamic_sampling=bool(config.dapo.get("dynamic_sampling", False)),
        max_sampling_rounds=int(config.dapo.get("max_sampling_rounds", 2)),
    )
    trainer.train(resume_from_checkpoint=resume_from)
    final = out / "final"
    trainer.save_model(str(final))
    tokenizer.save_pretrained(str(final))
    return {
        "output_dir": str(out),
        "final_model": str(final),
        "global_step": int(trainer.state.global_step),
        "resumed_from": resume_from,
        "n_pairs": len(pairs),
        "n_rows": len(rows),
        "metrics": str(out / "metrics.jsonl"),
    }
