"""Training recipes: a YAML file -> :class:`TrainConfig`, with ``key=value`` overrides.

A recipe is a YAML mapping whose top-level keys are the fields of :class:`TrainConfig`; nested
sections (``data``, ``rewards``, ``warmup``, ``dapo``, ``tools``, ``grpo``, ``sft``) are mappings.
``grpo`` and ``sft`` are passed verbatim to TRL's ``GRPOConfig`` / ``SFTConfig`` (so every TRL
option is reachable), the other sections are judgerl's own. Built-in recipes live in
``judgerl/recipes/*.yaml`` (package data) and are found by name (``j1-pav``) or by path.

Overrides use dotted keys, e.g. ``grpo.max_steps=2`` or ``data.limit=16``; values are parsed as
YAML scalars (``true``, ``0.2``, ``[1, 2]``, ``null``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping

import yaml

Task = Literal["pairwise", "pointwise", "multitask", "tir", "regression"]
TASKS: tuple[str, ...] = ("pairwise", "pointwise", "multitask", "tir", "regression")


class RecipeError(ValueError):
    """A recipe file or override is invalid; the message names the file and the field."""


@dataclass
class TrainConfig:
    """Everything one ``judgerl train`` run needs.

    Attributes:
        recipe: Recipe name (for logs).
        model: Model to train: ``smollm2-135m`` (the embedded model) or a local model directory.
        output_dir: Where checkpoints, ``metrics.jsonl`` and the PNG curves go.
        task: ``pairwise`` (J1 PaV/PaS/PaVS with position-agnostic batching), ``pointwise`` (PoS
            from pairwise labels), ``multitask`` (both in one run), ``tir`` (tool-integrated
            rollouts), ``regression`` (pointwise scores against gold scores).
        protocol: Pairwise protocol name (``pav``, ``pas``, ``pavs``).
        pointwise_protocol: Pointwise protocol name (``pos``).
        score_min, score_max: Pointwise score scale (regression: M_max = (max - min)²).
        seed: Seed for data shuffling, sampling and training.
        freeze_layers: Freeze the input embeddings and the first N transformer blocks (a CPU
            speed-up: no backward pass through them; 0 = train everything). With tied
            embeddings the output head is frozen too.
        time_limit_min: Stop training (after saving a checkpoint) once this many minutes have
            passed since the run started, warm-up included (None = no limit).
        resume: Continue from the newest checkpoint in ``output_dir`` if there is one.
        data: ``path`` (any format ``judgerl.data.load_pairs`` reads) or ``builder`` (``gsm8k-arith``
            with ``source`` = a GSM8K jsonl), plus ``format``, ``limit``, ``skip_invalid``,
            ``eval_size`` (pairs held out, not trained on).
        rewards: Reward name -> weight. Names: ``verdict``, ``consistency``, ``pointwise_pair``,
            ``format``, ``regression``, ``tir``, ``overlong`` (DAPO soft overlong penalty).
        warmup: SFT format warm-up before RL: ``steps`` (0 = none), ``examples`` (templated
            trajectories built from the training pairs), ``learning_rate``, ``batch_size``.
        dapo: ``dynamic_sampling`` (drop zero-variance groups and refill), ``max_sampling_rounds``,
            ``overlong_buffer`` (L_cache of DAPO eq. 13, tokens).
        tools: Tool-integrated rollouts: ``max_rounds`` (≤ 3 in TIR-Judge), ``sandbox`` kind,
            ``timeout_s``.
        grpo: Keyword arguments for ``trl.GRPOConfig`` (e.g. ``epsilon_high``, ``loss_type``,
            ``mask_truncated_completions``, ``num_generations``, ``max_steps``, ``use_vllm``).
        sft: Keyword arguments for ``trl.SFTConfig`` used by the warm-up.
    """

    recipe: str = "custom"
    model: str = "smollm2-135m"
    output_dir: str = "runs/judge"
    task: str = "pairwise"
    protocol: str = "pav"
    pointwise_protocol: str = "pos"
    score_min: float = 0
    score_max: float = 10
    seed: int = 0
    freeze_layers: int = 0
    time_limit_min: float | None = None
    resume: bool = False
    data: dict[str, Any] = field(default_factory=dict)
    rewards: dict[str, float] = field(default_factory=dict)
    warmup: dict[str, Any] = field(default_factory=dict)
    dapo: dict[str, Any] = field(default_factory=dict)
    tools: dict[str, Any] = field(default_factory=dict)
    grpo: dict[str, Any] = field(default_factory=dict)
    sft: dict[str, Any] = field(default_factory=dict)

    def validate(self, where: str = "config") -> None:
        """Check field values.

        Raises:
            RecipeError: naming ``where`` and the bad field.
        """
        if self.task not in TASKS:
            raise RecipeError(f"{where}: task={self.task!r}; expected one of {', '.join(TASKS)}")
        known_rewards = {"verdict", "consistency", "pointwise_pair", "format", "regression", "tir", "overlong"}
        for name, w in self.rewards.items():
            if name not in known_rewards:
                raise RecipeError(f"{where}: rewards.{name}: unknown reward; known: {', '.join(sorted(known_rewards))}")
            if not isinstance(w, (int, float)):
                raise RecipeError(f"{where}: rewards.{name}: weight must be a number, got {w!r}")
        if not any(w for n, w in self.rewards.items() if n != "overlong"):
            raise RecipeError(f"{where}: rewards: at least one non-zero reward weight is needed")
        if self.score_max <= self.score_min:
            raise RecipeError(f"{where}: score_max ({self.score_max}) must be > score_min ({self.score_min})")
        if not self.data.get("path") and not self.data.get("builder"):
            raise RecipeError(f"{where}: data.path (a pairs file) or data.builder is required")
        # Catch bad trainer values here, before the model loads and the warm-up runs.
        for key in _GRPO_POSITIVE_INTS:
            v = self.grpo.get(key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise RecipeError(f"{where}: grpo.{key} must be a positive integer, got {v!r}")
        for key in _GRPO_NUMBERS:
            v = self.grpo.get(key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0):
                raise RecipeError(f"{where}: grpo.{key} must be a non-negative number, got {v!r}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


_SECTIONS = {"data", "rewards", "warmup", "dapo", "tools", "grpo", "sft"}
_GRPO_POSITIVE_INTS = ("max_steps", "num_generations", "per_device_train_batch_size",
                       "gradient_accumulation_steps", "max_completion_length", "max_prompt_length")
_GRPO_NUMBERS = ("learning_rate", "beta", "epsilon", "epsilon_high", "temperature")


def recipe_names() -> list[str]:
    """Names of the built-in recipes (``judgerl/recipes/*.yaml``)."""
    root = resources.files("judgerl") / "recipes"
    return sorted(p.name[: -len(".yaml")] for p in root.iterdir() if p.name.endswith(".yaml"))


def recipe_path(name_or_path: str) -> Path:
    """Resolve a recipe name (``j1-pav``) or a YAML path.

    Raises:
        RecipeError: neither an existing file nor a built-in recipe name.
    """
    p = Path(name_or_path)
    if p.is_file():
        return p
    candidate = resources.files("judgerl") / "recipes" / f"{name_or_path}.yaml"
    if candidate.is_file():
        return Path(str(candidate))
    raise RecipeError(
        f"recipe {name_or_path!r} is neither a file nor a built-in recipe ({', '.join(recipe_names())})"
    )


def config_from_dict(d: Mapping[str, Any], where: str = "config") -> TrainConfig:
    """Build a TrainConfig from a mapping.

    Raises:
        RecipeError: unknown key or a section that is not a mapping.
    """
    fields = {f.name for f in dataclasses.fields(TrainConfig)}
    kwargs: dict[str, Any] = {}
    for k, v in d.items():
        if k not in fields:
            raise RecipeError(f"{where}: unknown field {k!r}; known fields: {', '.join(sorted(fields))}")
        if k in _SECTIONS:
            if v is None:
                v = {}
            if not isinstance(v, Mapping):
                raise RecipeError(f"{where}: field {k!r} must be a mapping, got {type(v).__name__}")
            v = dict(v)
        kwargs[k] = v
    return TrainConfig(**kwargs)


def apply_overrides(config: TrainConfig, overrides: Iterable[str]) -> TrainConfig:
    """Return a copy of ``config`` with ``key=value`` overrides applied.

    Keys are field names or ``section.key`` for the mapping sections (``grpo.max_steps=2``).

    Raises:
        RecipeError: malformed override (no ``=``), unknown field, or a dotted key on a non-section.
    """
    d = config.to_dict()
    for item in overrides:
        if "=" not in item:
            raise RecipeError(f"override {item!r}: expected key=value")
        key, raw = item.split("=", 1)
        key = key.strip()
        try:
            value = yaml.safe_load(raw) if raw.strip() else None
        except yaml.YAMLError as e:
            raise RecipeError(f"override {item!r}: value is not valid YAML: {e}") from None
        head, _, rest = key.partition(".")
        if head not in d:
            raise RecipeError(f"override {item!r}: unknown field {head!r}; known fields: {', '.join(sorted(d))}")
        if rest:
            if head not in _SECTIONS:
                raise RecipeError(f"override {item!r}: {head!r} is not a section, use {head}=value")
            section = d[head]
            parts = rest.split(".")
            for part in parts[:-1]:
                section = section.setdefault(part, {})
                if not isinstance(section, dict):
                    raise RecipeError(f"override {item!r}: {part!r} is not a mapping")
            section[parts[-1]] = value
        else:
            d[head] = value
    return config_from_dict(d, where="overrides")


def load_recipe(name_or_path: str, overrides: Iterable[str] = ()) -> TrainConfig:
    """Load a recipe by name or path and apply ``key=value`` overrides.

    Raises:
        RecipeError: unreadable YAML, not a mapping, unknown fields, or bad overrides.
    """
    path = recipe_path(name_or_path)
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise RecipeError(f"{path}: invalid YAML: {e}") from None
    if not isinstance(raw, Mapping):
        raise RecipeError(f"{path}: a recipe must be a YAML mapping, got {type(raw).__name__}")
    config = config_from_dict(raw, where=str(path))
    return apply_overrides(config, overrides)
