"""Training recipes: a YAML file -> a typed :class:`TrainConfig`, with ``key=value`` overrides.

A recipe is a YAML mapping whose top-level keys are the fields of :class:`TrainConfig`. The judgerl
sections are dataclasses -- :class:`DataConfig`, :class:`RewardsConfig`, :class:`WarmupConfig`,
:class:`DistillConfig`, :class:`ZeroConfig`, :class:`DapoConfig`, :class:`ToolsConfig`,
:class:`LoraConfig` -- so every field has one default, here, and a misspelt
key is an error naming the key and the closest valid one (``dapo.dynamic_sampeling`` -> "did you
mean 'dynamic_sampling'?"). ``grpo`` holds the fields of :class:`judgerl.train.trainer.JudgeGRPOConfig`
(TRL's ``GRPOConfig`` plus judgerl's own trainer options, as TRL does it) and ``sft`` those of TRL's
``SFTConfig``; both are checked against those classes when the recipe is validated.

Built-in recipes live in ``judgerl/recipes/*.yaml`` (package data) and are found by name
(``j1-pav``) or by path. Overrides use dotted keys (``grpo.max_steps=2``, ``data.limit=16``); values
are parsed as YAML scalars (``true``, ``0.2``, ``[1, 2]``, ``null``).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from judgerl.train.sections import (
    DapoConfig,
    DataConfig,
    DistillConfig,
    LoraConfig,
    RewardsConfig,
    ToolsConfig,
    WarmupConfig,
    ZeroConfig,
)


class _Yaml12Floats(yaml.SafeLoader):
    """PyYAML's safe loader with YAML 1.2's float rule: ``1e-5`` / ``2e-06`` are floats (YAML 1.1,
    which PyYAML follows, needs a dot and a signed exponent, so ``learning_rate: 1e-5`` or the
    override ``grpo.learning_rate=2e-06`` -- Python's own ``str(2e-06)`` -- became a string)."""


_Yaml12Floats.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
                |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
                |\.[0-9_]+(?:[eE][-+][0-9]+)?
                |[-+]?\.(?:inf|Inf|INF)
                |\.(?:nan|NaN|NAN))$""", re.X),
    list("-+0123456789."),
)


def load_yaml(text: str) -> Any:
    """Parse YAML (a recipe file, or one ``key=value`` override value) with YAML 1.2 floats
    (:class:`_Yaml12Floats`): the one YAML reader of recipes, overrides and CLI ``key=value`` options.

    Raises:
        yaml.YAMLError: invalid YAML.
    """
    return yaml.load(text, Loader=_Yaml12Floats)  # noqa: S506 - a SafeLoader subclass


TASKS: tuple[str, ...] = ("pairwise", "pointwise", "multitask", "tir", "tir-pointwise", "regression")
#: The tool-integrated tasks (sandboxed tool-loop rollouts, the TIR reward): pairwise and pointwise TIR-Judge.
TIR_TASKS: tuple[str, ...] = ("tir", "tir-pointwise")


class RecipeError(ValueError):
    """A recipe file or override is invalid; the message names the file and the field."""


def closest(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``known`` to ``name``, or ``""``."""
    match = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


SECTION_TYPES: dict[str, type] = {
    "data": DataConfig,
    "rewards": RewardsConfig,
    "warmup": WarmupConfig,
    "distill": DistillConfig,
    "zero": ZeroConfig,
    "dapo": DapoConfig,
    "tools": ToolsConfig,
    "lora": LoraConfig,
}


@dataclass
class TrainConfig:
    """Everything one ``judgerl train`` run needs.

    Attributes:
        recipe: Recipe name (for logs).
        model: Model to train: ``smollm2-135m`` (the embedded model), ``hf/<path>`` or a local
            model directory (resolved by :func:`judgerl.backends.models.resolve_hf_path`).
        output_dir: Where ``config.json``, checkpoints, ``metrics.jsonl`` and the PNG curves go.
        task: ``pairwise`` (J1 PaV/PaS/PaVS with position-agnostic batching), ``pointwise`` (PoS
            from pairwise labels), ``multitask`` (both in one run), ``tir`` (tool-integrated
            rollouts, pairwise), ``tir-pointwise`` (tool-integrated rollouts of the pointwise protocol,
            each response scored against its gold score: TIR-Judge's pointwise format), ``regression``
            (pointwise scores against gold scores).
        protocol: Pairwise protocol name (``pav``, ``pas``, ``pavs``); ``protocol_args`` its options
            (task ``tir-pointwise``: the options of ``pointwise_protocol``, e.g. ``namespace``).
        pointwise_protocol: Pointwise protocol name (``pos``), built on ``score_min``..``score_max``.
        score_min, score_max: Pointwise score scale (regression: M_max = (max - min)²).
        score_tolerance: Task ``tir-pointwise``: the TIR reward's Rc counts a score within this distance of
            the gold score as correct (0: exact, as TIR-Judge's pointwise Rc).
        seed: Seed for data shuffling, sampling and training.
        freeze_layers: Freeze the input embeddings and the first N transformer blocks (CPU speed-up).
        time_limit_min: Stop training (after saving a checkpoint) after this many minutes.
        resume: Continue from the newest checkpoint in ``output_dir`` if there is one.
        data, rewards, warmup, distill, zero, dapo, tools, lora: The typed sections (see their
            classes).
        grpo: Fields of :class:`judgerl.train.trainer.JudgeGRPOConfig` (TRL's ``GRPOConfig``).
        sft: Fields of TRL's ``SFTConfig`` for the warm-up.
    """

    recipe: str = "custom"
    model: str = "smollm2-135m"
    output_dir: str = "runs/judge"
    task: str = "pairwise"
    protocol: str = "pav"
    protocol_args: dict[str, Any] = field(default_factory=dict)
    pointwise_protocol: str = "pos"
    score_min: float = 0
    score_max: float = 10
    score_tolerance: float = 0.0
    seed: int = 0
    freeze_layers: int = 0
    time_limit_min: float | None = None
    resume: bool = False
    data: DataConfig = field(default_factory=DataConfig)
    rewards: RewardsConfig = field(default_factory=RewardsConfig)
    warmup: WarmupConfig = field(default_factory=WarmupConfig)
    distill: DistillConfig = field(default_factory=DistillConfig)
    zero: ZeroConfig = field(default_factory=ZeroConfig)
    dapo: DapoConfig = field(default_factory=DapoConfig)
    tools: ToolsConfig = field(default_factory=ToolsConfig)
    lora: LoraConfig = field(default_factory=LoraConfig)
    grpo: dict[str, Any] = field(default_factory=dict)
    sft: dict[str, Any] = field(default_factory=dict)

    def pairwise(self) -> Any:
        """The pairwise protocol object (with ``protocol_args``), or None for pointwise-only tasks.

        Raises:
            RecipeError: an unknown protocol or a bad option.
        """
        if self.task not in ("pairwise", "multitask", "tir"):
            return None
        return _protocol(self.protocol, dict(self.protocol_args), "protocol")

    def pointwise(self) -> Any:
        """The pointwise protocol object on ``score_min``..``score_max``, or None.

        Raises:
            RecipeError: an unknown protocol or a bad scale.
        """
        if self.task not in ("pointwise", "multitask", "regression", "tir-pointwise"):
            return None
        options = dict(self.protocol_args) if self.task == "tir-pointwise" else {}
        return _protocol(self.pointwise_protocol, {**options, "min_score": self.score_min, "max_score": self.score_max},
                         "pointwise_protocol")

    def protocols(self) -> tuple[Any, Any]:
        """``(pairwise, pointwise)``: the task's protocol objects (:meth:`pairwise`, :meth:`pointwise`).

        Raises:
            RecipeError: an unknown protocol, a bad option or scale.
        """
        return self.pairwise(), self.pointwise()

    def validate(self, where: str = "config") -> None:
        """Check field values, the protocols, and the ``grpo`` / ``sft`` keys against TRL's classes.

        Raises:
            RecipeError: naming ``where`` and the bad field (with the closest valid key).
        """
        if self.task not in TASKS:
            raise RecipeError(f"{where}: task={self.task!r}; expected one of {', '.join(TASKS)}{closest(self.task, TASKS)}")
        if not any(w for n, w in self.rewards.weights().items() if n != "overlong"):
            raise RecipeError(f"{where}: rewards: at least one non-zero reward weight is needed")
        for name, w in dataclasses.asdict(self.rewards).items():
            if isinstance(w, bool) or not isinstance(w, (int, float)):
                raise RecipeError(f"{where}: rewards.{name}: weight must be a number, got {w!r}")
        if self.score_max <= self.score_min:
            raise RecipeError(f"{where}: score_max ({self.score_max}) must be > score_min ({self.score_min})")
        tol = self.score_tolerance
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 <= tol < self.score_max - self.score_min:
            raise RecipeError(f"{where}: score_tolerance must be a number of score points in [0, score_max - score_min), "
                              f"got {tol!r}")
        if not self.data.path and not self.data.builder:
            raise RecipeError(f"{where}: data.path (a pairs file) or data.builder is required")
        if self.rewards.overlong and not self.dapo.overlong_buffer:
            raise RecipeError(f"{where}: rewards.overlong needs dapo.overlong_buffer (L_cache, in tokens)")
        self._validate_stages(where)
        try:
            self.protocols()
        except RecipeError as e:
            raise RecipeError(f"{where}: {e}") from None
        from judgerl.train.trainer import JudgeGRPOConfig

        _check_keys(self.grpo, JudgeGRPOConfig, f"{where}: grpo")
        from trl import SFTConfig

        _check_keys(self.sft, SFTConfig, f"{where}: sft")
        for key in _GRPO_POSITIVE_INTS:
            v = self.grpo.get(key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise RecipeError(f"{where}: grpo.{key} must be a positive integer, got {v!r}")
        for key in _GRPO_NUMBERS:
            v = self.grpo.get(key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0):
                raise RecipeError(f"{where}: grpo.{key} must be a non-negative number, got {v!r}")

    def _validate_stages(self, where: str) -> None:
        """Checks of the distill / zero / lora / warm-up sections (see :meth:`validate`)."""
        for section, key in (("warmup", "steps"), ("zero", "rounds"), ("lora", "r"), ("lora", "top_layers")):
            v = getattr(getattr(self, section), key)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise RecipeError(f"{where}: {section}.{key} must be an integer >= 0, got {v!r}")
        for section, key in (("distill", "samples"), ("zero", "samples")):
            v = getattr(getattr(self, section), key)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise RecipeError(f"{where}: {section}.{key} must be a positive integer, got {v!r}")
        d, z = self.distill, self.zero
        if d.teacher is not None and (not isinstance(d.teacher, str) or not d.teacher.strip()):
            raise RecipeError(f"{where}: distill.teacher must be 'programmatic' or a model name, got {d.teacher!r}")
        if d.teacher and self.warmup.steps == 0:
            raise RecipeError(f"{where}: distill.teacher is set but warmup.steps is 0 (the SFT steps on its trajectories)")
        if d.samples > 1 and d.temperature == 0:
            raise RecipeError(f"{where}: distill.samples={d.samples} with temperature 0 gives identical samples; "
                              "set distill.temperature > 0")
        if z.rounds:
            if self.task != "tir":
                raise RecipeError(f"{where}: zero.rounds needs task: tir (TIR-Judge-Zero bootstraps a pairwise tool judge)")
            if d.teacher:
                raise RecipeError(f"{where}: zero.rounds and distill.teacher exclude each other (Zero has no teacher)")
            if self.warmup.steps == 0:
                raise RecipeError(f"{where}: zero.rounds needs warmup.steps > 0 (the SFT steps of every round)")
            if z.temperature <= 0:
                raise RecipeError(f"{where}: zero.temperature must be > 0 to sample {z.samples} different trajectories")
        if self.lora.r and self.freeze_layers:
            raise RecipeError(f"{where}: freeze_layers and lora.r exclude each other (LoRA already freezes the base)")
        if not isinstance(self.lora.merge_for_rollout, bool):
            raise RecipeError(f"{where}: lora.merge_for_rollout must be true or false, got {self.lora.merge_for_rollout!r}")
        if self.lora.merge_for_rollout and not self.lora.r:
            raise RecipeError(f"{where}: lora.merge_for_rollout needs lora.r > 0 (there is no adapter to merge)")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


_GRPO_POSITIVE_INTS = ("max_steps", "num_generations", "per_device_train_batch_size",
                       "gradient_accumulation_steps", "max_completion_length", "max_prompt_length")
_GRPO_NUMBERS = ("learning_rate", "beta", "epsilon", "epsilon_high", "temperature")


def _protocol(name: str, kwargs: dict[str, Any], where: str) -> Any:
    from judgerl.protocols import get_protocol

    try:
        return get_protocol(name, **kwargs)
    except (ValueError, TypeError) as e:
        raise RecipeError(f"{where}={name!r}: {e}") from None


def _check_keys(values: Mapping[str, Any], cls: type, where: str) -> None:
    known = {f.name for f in dataclasses.fields(cls)}
    for k in values:
        if k not in known:
            raise RecipeError(f"{where}.{k}: unknown {cls.__name__} field{closest(k, known)}")


def _section(name: str, value: Any, where: str) -> Any:
    cls = SECTION_TYPES[name]
    if value is None:
        return cls()
    if isinstance(value, cls):
        return value
    if not isinstance(value, Mapping):
        raise RecipeError(f"{where}: field {name!r} must be a mapping, got {type(value).__name__}")
    known = {f.name for f in dataclasses.fields(cls)}
    for k in value:
        if k not in known:
            raise RecipeError(f"{where}: {name}.{k}: unknown field{closest(str(k), known)}; "
                              f"known: {', '.join(sorted(known))}")
    return cls(**dict(value))


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
        f"{closest(name_or_path, recipe_names())}"
    )


def config_from_dict(d: Mapping[str, Any], where: str = "config") -> TrainConfig:
    """Build a TrainConfig from a mapping (a recipe, or a saved ``config.json``).

    Raises:
        RecipeError: unknown key (with the closest valid one) or a section that is not a mapping.
    """
    fields = {f.name for f in dataclasses.fields(TrainConfig)}
    kwargs: dict[str, Any] = {}
    for k, v in d.items():
        if k not in fields:
            raise RecipeError(f"{where}: unknown field {k!r}{closest(str(k), fields)}; known fields: "
                              f"{', '.join(sorted(fields))}")
        if k in SECTION_TYPES:
            v = _section(k, v, where)
        elif k in ("grpo", "sft", "protocol_args"):
            if v is None:
                v = {}
            if not isinstance(v, Mapping):
                raise RecipeError(f"{where}: field {k!r} must be a mapping, got {type(v).__name__}")
            v = dict(v)
        kwargs[k] = v
    try:
        return TrainConfig(**kwargs)
    except TypeError as e:  # pragma: no cover - every key was checked above
        raise RecipeError(f"{where}: {e}") from None


def apply_overrides(config: TrainConfig, overrides: Iterable[str]) -> TrainConfig:
    """Return a copy of ``config`` with ``key=value`` overrides applied.

    Keys are field names or ``section.key`` (``grpo.max_steps=2``, ``dapo.dynamic_sampling=true``).

    Raises:
        RecipeError: malformed override (no ``=``), an unknown field or section key (with the
            closest valid one), or a dotted key on a field that is not a section.
    """
    d = config.to_dict()
    nested = set(SECTION_TYPES) | {"grpo", "sft", "protocol_args"}
    for item in overrides:
        if "=" not in item:
            raise RecipeError(f"override {item!r}: expected key=value")
        key, raw = item.split("=", 1)
        key = key.strip()
        try:
            value = load_yaml(raw) if raw.strip() else None
        except yaml.YAMLError as e:
            raise RecipeError(f"override {item!r}: value is not valid YAML: {e}") from None
        head, _, rest = key.partition(".")
        if head not in d:
            raise RecipeError(f"override {item!r}: unknown field {head!r}{closest(head, d)}; "
                              f"known fields: {', '.join(sorted(d))}")
        if rest:
            if head not in nested:
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


def read_recipe(name_or_path: str) -> tuple[Path, dict[str, Any]]:
    """The one reader of a recipe file, of either kind (judge recipes here, ``task: policy`` recipes
    :mod:`judgerl.train.policy_config`): a name or a YAML path, or a run's saved ``config.json``.

    Returns:
        ``(path, mapping)``: the resolved file and its top-level mapping.

    Raises:
        RecipeError: no such recipe, unreadable YAML/JSON, or not a mapping (naming the file).
    """
    path = recipe_path(name_or_path)
    if path.suffix.lower() == ".json":  # a saved config: YAML 1.1 reads JSON's 2e-05 as a string
        try:
            raw = json.loads(path.read_text())
        except json.JSONDecodeError as e:
            raise RecipeError(f"{path}: invalid JSON: {e}") from None
    else:
        try:
            raw = load_yaml(path.read_text())
        except yaml.YAMLError as e:
            raise RecipeError(f"{path}: invalid YAML: {e}") from None
    if not isinstance(raw, Mapping):
        raise RecipeError(f"{path}: a recipe must be a YAML mapping, got {type(raw).__name__}")
    return path, dict(raw)


def load_recipe(name_or_path: str, overrides: Iterable[str] = ()) -> TrainConfig:
    """Load a judge recipe by name or path (or a run's saved ``config.json``) and apply overrides; not
    validated (:meth:`TrainConfig.validate`; :func:`judgerl.train.run.load_run_recipe` reads and validates
    a recipe of either kind).

    Raises:
        RecipeError: unreadable YAML/JSON, not a mapping, unknown fields, or bad overrides.
    """
    path, raw = read_recipe(name_or_path)
    return apply_overrides(config_from_dict(raw, where=str(path)), overrides)


SAVED_CONFIG = "config.json"


def saved_config(output_dir: str | Path) -> Path | None:
    """``<output_dir>/config.json`` when a run saved one there (what ``--resume`` reloads)."""
    p = Path(output_dir) / SAVED_CONFIG
    return p if p.is_file() else None
