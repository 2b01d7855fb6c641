"""``judgerl train``'s entry point: read a recipe of either kind once, validate it once, run it.

:func:`load_run_recipe` is the one dispatch over the two kinds of recipe: it reads the file once
(:func:`judgerl.train.config.read_recipe`), builds a judge recipe (:class:`~judgerl.train.config.TrainConfig`)
or, for ``task: policy``, a policy recipe (:class:`~judgerl.train.policy_config.PolicyConfig`), applies the
command's shortcut options and overrides, and validates it. :func:`run_recipe` runs what it returned: a
policy recipe is :func:`judgerl.train.policy.run_policy`; a judge recipe is :func:`run_training`: a plain
recipe is one SFT and/or GRPO run (:func:`judgerl.train.stages.train_recipe`: data -> GRPO rows -> (SFT
stage) -> GRPO/DAPO on TRL), a recipe with ``zero.rounds`` is TIR-Judge-Zero
(:func:`judgerl.train.zero.run_zero`).

Output directory of a judge run::

    config.json            the resolved config (what --resume reloads)
    sft_examples.jsonl     the SFT targets (templated, or teacher trajectories kept by rejection
    sft_stats.json         sampling) and their statistics
    sft/                   the model after the SFT stage (+ sft/adapter with LoRA; done.json last)
    checkpoint-N/          GRPO checkpoints
    final/                 the trained judge (+ final/adapter with LoRA)
    metrics.jsonl, curves_*.png
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Iterable

from judgerl.train.config import SAVED_CONFIG, RecipeError, TrainConfig, apply_overrides, config_from_dict, read_recipe
from judgerl.train.policy_config import PolicyConfig, is_policy_mapping, policy_config_from_dict

#: ``judgerl train``'s shortcut options -> the field each kind of recipe sets, ``(judge recipe, policy
#: recipe)``; None: that kind has no such field (the option is an error there).
OPTION_FIELDS: dict[str, tuple[str | None, str | None]] = {
    "data": ("data.path", "prompts"),
    "output_dir": ("output_dir", "output_dir"),
    "max_steps": ("grpo.max_steps", "grpo.max_steps"),
    "model": ("model", "model"),
    "resume": ("resume", "resume"),
    "reward_url": (None, "reward_url"),
    "reward": (None, "reward"),
    "rubric": (None, "rubric"),
}


def load_run_recipe(name_or_path: str, overrides: Iterable[str] = (), **options: Any) -> TrainConfig | PolicyConfig:
    """Read a recipe (a name, a YAML path or a run's saved ``config.json``) once, build the config of its
    kind (``task: policy``: :class:`~judgerl.train.policy_config.PolicyConfig`, else
    :class:`~judgerl.train.config.TrainConfig`), apply ``overrides`` (``key=value``) then the shortcut
    ``options`` (:data:`OPTION_FIELDS`; None / False values are left out), and validate it once.

    Raises:
        RecipeError: an unreadable recipe, an unknown field or option, an option the recipe's kind does
            not have (``reward_url`` on a judge recipe), an invalid value (naming the recipe and the field).
    """
    path, raw = read_recipe(name_or_path)
    policy = is_policy_mapping(raw)
    extra = list(overrides)
    for name, value in options.items():
        if name not in OPTION_FIELDS:
            raise RecipeError(f"unknown option {name!r}; options: {', '.join(OPTION_FIELDS)}")
        if value is None or value is False:
            continue
        key = OPTION_FIELDS[name][1 if policy else 0]
        if key is None:
            raise RecipeError(f"{name} applies to policy recipes (task: policy, e.g. policy-grpo); "
                              f"{name_or_path} is a judge recipe")
        extra.append(f"{key}={str(value).lower() if isinstance(value, bool) else value}")
    if policy:
        config: TrainConfig | PolicyConfig = policy_config_from_dict(raw, extra, str(path))
    else:
        config = apply_overrides(config_from_dict(raw, where=str(path)), extra)
    config.validate(where=f"recipe {name_or_path}")
    return config


def run_recipe(config: TrainConfig | PolicyConfig, *, dry_run: bool = False) -> dict[str, Any]:
    """Run a validated recipe of either kind (:func:`load_run_recipe`): a policy recipe with
    :func:`judgerl.train.policy.run_policy`, a judge recipe with :func:`run_training`; with ``dry_run``
    only read its data as the run would (training pairs or the policy's prompts and split; no model loads,
    nothing is written).

    Returns:
        The run's summary (see those functions); with ``dry_run`` ``{"dry_run": True, "inputs": line}``.

    Raises:
        PolicyTrainingError: policy training stopped (a checkpoint was saved).
        RecipeError, DataFormatError, FileNotFoundError: before training starts.
    """
    if isinstance(config, PolicyConfig):
        from judgerl.train.policy import run_policy

        return run_policy(config, dry_run=dry_run)
    if dry_run:
        return {"dry_run": True, "inputs": _training_pairs_line(config.data, config.seed)}
    return run_training(config)


def _training_pairs_line(data: Any, seed: int) -> str:
    """Read a judge recipe's training pairs as its run will (:func:`judgerl.train.datasets.load_training_pairs`)
    and say what was found: ``"data: 120 training pairs from pairs.jsonl"``.

    Raises:
        RecipeError, judgerl.data.DataFormatError, FileNotFoundError, ValueError: as the run would.
    """
    from judgerl.train.datasets import load_training_pairs

    pairs = load_training_pairs(data, seed)
    where = data.path if not data.builder else f"builder {data.builder} on {data.source}"
    return f"data: {len(pairs)} training pairs from {where}"


def run_training(config: TrainConfig) -> dict[str, Any]:
    """Train a judge with the validated recipe ``config`` (:func:`load_run_recipe` reads and validates one;
    :meth:`~judgerl.train.config.TrainConfig.validate` one built otherwise).

    Plain recipes (:func:`judgerl.train.stages.train_recipe`): load pairs -> GRPO rows (both halves
    of each pair adjacent) -> load the model (+ LoRA) -> SFT stage (``warmup.steps`` > 0: templated
    trajectories, or teacher trajectories kept by rejection sampling when ``distill.teacher`` is
    set; skipped when resuming) -> GRPO with the recipe's rewards and DAPO options -> save
    ``<output_dir>/final``. The recipe becomes the run's objects once
    (:class:`~judgerl.train.setup.TrainSetup`). Recipes with ``zero.rounds`` > 0 run TIR-Judge-Zero
    (:func:`judgerl.train.zero.run_zero`).

    Writes ``<output_dir>/config.json`` (the resolved config), ``metrics.jsonl`` (one record per
    logged step, phases ``warmup`` then ``grpo``), ``curves_*.png``, ``sft/`` and checkpoints
    ``checkpoint-N`` every ``grpo.save_steps`` steps (layout: module docstring).

    Returns:
        Summary dict: ``output_dir``, ``final_model``, ``sft_model``, ``global_step``,
        ``resumed_from``, ``n_pairs``, ``n_rows``, ``metrics`` (and ``rounds`` for Zero).

    Raises:
        RecipeError: a protocol, reward or GRPO field that cannot be built; no usable pair.
    """
    from judgerl.train.setup import TrainSetup  # trl / peft / torch: not needed to read or check a recipe
    from judgerl.train.stages import is_main_process, train_recipe
    from judgerl.train.zero import run_zero

    if config.zero.rounds:
        return run_zero(config)
    deadline = time.time() + 60 * float(config.time_limit_min) if config.time_limit_min else None
    out = Path(config.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    if is_main_process():
        (out / SAVED_CONFIG).write_text(json.dumps(config.to_dict(), indent=2))
    setup = TrainSetup.from_config(config)  # the recipe becomes objects here, once
    return train_recipe(setup, out, resume=config.resume, deadline=deadline)


__all__ = ["OPTION_FIELDS", "load_run_recipe", "run_recipe", "run_training"]
