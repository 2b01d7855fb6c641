"""Policy-training recipes (``task: policy``): a YAML file -> a typed :class:`PolicyConfig`.

A policy recipe trains a *policy* with GRPO against a judge (the judge-as-reward setting,
"Examining Reasoning LLMs-as-Judges in Non-Verifiable LLM Post-Training", 2025), where the judge
recipes (:mod:`judgerl.train.config`) train judges. ``judgerl train --config
policy-grpo`` recognises it by ``task: policy``. Sections are dataclasses, so every field has one default
here and a misspelt key is an error naming the closest valid one; ``grpo`` holds fields of TRL's
``GRPOConfig``. Overrides use dotted keys (``judge.score_mode=parsed``, ``grpo.max_steps=2``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from judgerl.judge.defaults import DEFAULT_MAX_NEW_TOKENS
from judgerl.judge.expected import SCORE_MODES
from judgerl.judge.options import JudgeOptions
from judgerl.train.config import RecipeError, closest, recipe_path

POLICY_TASK = "policy"


@dataclass
class PolicyJudgeConfig:
    """The training judge (in process; with ``reward_url`` the server's judge is used instead).

    Attributes:
        model: Judge model (``smollm2-135m``, a trained judge directory, ``openai/...``).
        scale: Score scale ``LO-HI`` of its PoS protocol (the paper: 0-9).
        score_mode: ``expected`` (the paper's reward), ``parsed`` or ``mean``.
        samples: Judgments per response (``mean`` / ``expected``).
        max_new_tokens: Tokens per judgment.
        force_answer: Prefill the score tag when a judgment ends without it.
        temperature: Judge sampling temperature (None: :func:`judgerl.judge.defaults.default_temperature`).
        anti_hacking: The protocol's anti-hacking instruction (protocol option, when supported).
    """

    model: str = "smollm2-135m"
    scale: str = "0-9"
    score_mode: str = "expected"
    samples: int = 1
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS
    force_answer: bool = True
    temperature: float | None = None
    anti_hacking: bool = False

    def options(self, seed: int = 0) -> JudgeOptions:
        """These settings as the one set of judge options (:class:`~judgerl.judge.options.JudgeOptions`;
        the PoS protocol and its scale are set by :func:`judgerl.gold.scorer.load_scorer`)."""
        return JudgeOptions(self.model, protocol="pos", anti_hacking=self.anti_hacking, samples=self.samples,
                            temperature=self.temperature, max_new_tokens=self.max_new_tokens, seed=seed,
                            force_answer=self.force_answer)


@dataclass
class PolicyConfig:
    """Everything one policy-training run needs.

    Attributes:
        recipe: Recipe name (for logs). task: Always ``policy``.
        model: The policy (``smollm2-135m``, a local model directory).
        output_dir: ``config.json``, checkpoints, ``metrics.jsonl``, ``curves.jsonl``, ``curves.png``,
            ``heldout/step-N.jsonl`` (held-out responses) and ``final/``.
        prompts: Prompt file (JSON / JSONL objects with ``prompt_field`` and optionally ``id_field``), e.g.
            IFEval's ``input_data.jsonl``.
        prompt_field, id_field: Field names in the prompt file (ids default to the record index).
        heldout: Prompts held out for gold evaluation (the split is seeded, see ``seed``).
        train_limit: Most training prompts (None = the rest).
        seed: Seed of the split, sampling and training.
        judge: The training judge (:class:`PolicyJudgeConfig`).
        reward_url: A ``judgerl serve`` root URL: rewards come from that server instead of an in-process judge.
        reward_retry_s: How long (seconds) to keep retrying a reward server that is down or restarting; then
            the run stops with a checkpoint saved.
        invalid_reward: Reward of a response the judge could not score (in-process judge).
        gold: Gold judge for held-out evaluation: ``ifeval`` (programmatic) or a judge model name.
        gold_data: The IFEval prompts file for ``gold: ifeval`` (None = ``prompts``).
        eval_every: Held-out gold evaluation every K optimizer steps (and at step 0 and the last step).
        eval_max_new_tokens: Policy tokens per held-out response (None = ``grpo.max_completion_length``).
        hacking_window, hacking_min_rho, hacking_min_delta: The reward-hacking test
            (:func:`judgerl.train.curves.hacking_test`).
        time_limit_min: Stop (with a checkpoint) after this many minutes.
        resume: Continue from the newest checkpoint in ``output_dir``.
        grpo: Fields of TRL's ``GRPOConfig``.
    """

    recipe: str = "custom"
    task: str = POLICY_TASK
    model: str = "smollm2-135m"
    output_dir: str = "runs/policy"
    prompts: str | None = None
    prompt_field: str = "prompt"
    id_field: str = "key"
    heldout: int = 16
    train_limit: int | None = None
    seed: int = 0
    judge: PolicyJudgeConfig = field(default_factory=PolicyJudgeConfig)
    reward_url: str | None = None
    reward_retry_s: float = 600.0
    invalid_reward: float = 0.0
    gold: str = "ifeval"
    gold_data: str | None = None
    eval_every: int = 10
    eval_max_new_tokens: int | None = None
    hacking_window: int = 4
    hacking_min_rho: float = 0.6
    hacking_min_delta: float = 0.0
    time_limit_min: float | None = None
    resume: bool = False
    grpo: dict[str, Any] = field(default_factory=dict)

    def validate(self, where: str = "config") -> None:
        """Check the fields (and ``grpo`` keys against TRL's ``GRPOConfig``).

        Raises:
            RecipeError: naming ``where`` and the field.
        """
        from trl import GRPOConfig

        from judgerl.judge.scorer import parse_scale

        if self.task != POLICY_TASK:
            raise RecipeError(f"{where}: task must be {POLICY_TASK!r}, got {self.task!r}")
        if not self.prompts:
            raise RecipeError(f"{where}: prompts (a prompt file, e.g. IFEval input_data.jsonl) is required")
        if self.judge.score_mode not in SCORE_MODES:
            raise RecipeError(f"{where}: judge.score_mode must be one of {', '.join(SCORE_MODES)}, got "
                              f"{self.judge.score_mode!r}")
        try:
            parse_scale(self.judge.scale)
        except ValueError as e:
            raise RecipeError(f"{where}: judge.scale: {e}") from None
        for name in ("heldout", "eval_every", "hacking_window"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise RecipeError(f"{where}: {name} must be a positive integer, got {v!r}")
        if self.hacking_window < 3:
            raise RecipeError(f"{where}: hacking_window must be >= 3, got {self.hacking_window}")
        if not 0 < float(self.hacking_min_rho) <= 1:
            raise RecipeError(f"{where}: hacking_min_rho must be in (0, 1], got {self.hacking_min_rho}")
        if self.judge.samples < 1 or self.judge.max_new_tokens < 1:
            raise RecipeError(f"{where}: judge.samples and judge.max_new_tokens must be >= 1")
        if self.reward_retry_s < 0:
            raise RecipeError(f"{where}: reward_retry_s must be >= 0, got {self.reward_retry_s}")
        known = {f.name for f in dataclasses.fields(GRPOConfig)}
        for k in self.grpo:
            if k not in known:
                raise RecipeError(f"{where}: grpo.{k}: unknown GRPOConfig field{closest(k, known)}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _build(cls: type, d: Mapping[str, Any], where: str) -> Any:
    known = {f.name: f for f in dataclasses.fields(cls)}
    kwargs = {}
    for k, v in d.items():
        if k not in known:
            raise RecipeError(f"{where}: unknown field {k!r}{closest(str(k), known)}; known: {', '.join(sorted(known))}")
        if k == "judge":
            if v is None:
                v = {}
            if not isinstance(v, Mapping):
                raise RecipeError(f"{where}: judge must be a mapping, got {type(v).__name__}")
            v = _build(PolicyJudgeConfig, v, f"{where}: judge")
        elif k == "grpo":
            if v is None:
                v = {}
            if not isinstance(v, Mapping):
                raise RecipeError(f"{where}: grpo must be a mapping, got {type(v).__name__}")
            v = dict(v)
        kwargs[k] = v
    return cls(**kwargs)


def is_policy_recipe(name_or_path: str) -> bool:
    """Whether a recipe (name or YAML / saved ``config.json`` path) is a policy recipe (``task: policy``)."""
    try:
        raw = yaml.safe_load(recipe_path(name_or_path).read_text())
    except (RecipeError, OSError, yaml.YAMLError):
        return False
    return isinstance(raw, Mapping) and raw.get("task") == POLICY_TASK


def load_policy_recipe(name_or_path: str, overrides: Iterable[str] = ()) -> PolicyConfig:
    """Load a policy recipe by name or path (or a run's saved ``config.json``) and apply ``key=value``
    overrides (dotted for ``judge.`` and ``grpo.``; values parsed as YAML scalars).

    Raises:
        RecipeError: unreadable YAML, unknown fields (with the closest valid one), a malformed override.
    """
    path = recipe_path(name_or_path)
    try:
        raw = yaml.safe_load(Path(path).read_text())
    except yaml.YAMLError as e:
        raise RecipeError(f"{path}: invalid YAML: {e}") from None
    if not isinstance(raw, Mapping):
        raise RecipeError(f"{path}: a recipe must be a YAML mapping, got {type(raw).__name__}")
    d = dict(raw)
    d["judge"] = dict(d.get("judge") or {})
    d["grpo"] = dict(d.get("grpo") or {})
    for item in overrides:
        if "=" not in item:
            raise RecipeError(f"override {item!r}: expected key=value")
        key, value = item.split("=", 1)
        try:
            parsed = yaml.safe_load(value) if value.strip() else None
        except yaml.YAMLError as e:
            raise RecipeError(f"override {item!r}: value is not valid YAML: {e}") from None
        head, _, rest = key.strip().partition(".")
        if rest:
            if head not in ("judge", "grpo"):
                raise RecipeError(f"override {item!r}: {head!r} is not a section (sections: judge, grpo)")
            d[head][rest] = parsed
        else:
            d[head] = parsed
    return _build(PolicyConfig, d, str(path))


__all__ = ["POLICY_TASK", "PolicyConfig", "PolicyJudgeConfig", "is_policy_recipe", "load_policy_recipe"]
