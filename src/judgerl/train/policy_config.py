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
from typing import Any, Iterable, Mapping

import yaml

from judgerl.judge.defaults import DEFAULT_MAX_NEW_TOKENS
from judgerl.judge.expected import SCORE_MODES
from judgerl.judge.options import JudgeOptions
from judgerl.train.config import RecipeError, closest, load_yaml, read_recipe
from judgerl.train.sections import LoraConfig

POLICY_TASK = "policy"
#: Where a policy's reward comes from: the training judge (in process or ``reward_url``), the gold judge
#: itself (the oracle arm of the judge-as-reward study: the gold score normalised like the judge's), or a
#: random score independent of the response (its control arm: :class:`judgerl.gold.scorer.RandomScorer`).
POLICY_REWARDS = ("judge", "gold", "random")


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
        instructions: The prompt mix: keep only prompts (training and held-out) with at least one IFEval
            instruction id starting with one of these (``["punctuation:no_comma", "change_case"]``; needs
            ``gold_data`` or an IFEval ``prompts`` file). None (default): every prompt.
        reward: ``judge`` (default: the training judge) or ``gold``: the oracle arm, rewarded by the gold
            judge itself (``gold``), its score normalised to [0, 1] on its scale as the judge's expected score
            is ((s - lo) / (hi - lo)), so arms are comparable; no server or judge model is loaded. ``random``: the
            control arm, a seeded score that carries no information about the response
            (:class:`~judgerl.gold.scorer.RandomScorer`, 0-9, same normalisation).
        rubric: Rubric-conditioned judging: ``ifeval`` (derived from each prompt's IFEval instructions,
            :mod:`judgerl.gold.rubric`) or a field of the prompt records holding its rubric; sent to the
            training judge with every response (in process or to ``reward_url``). None: no rubric.
        lora: LoRA (``lora.r`` > 0) or full fine-tuning (``r: 0``, the default) of the policy
            (:class:`~judgerl.train.sections.LoraConfig`).
        judge: The training judge (:class:`PolicyJudgeConfig`).
        reward_url: A ``judgerl serve`` root URL: rewards come from that server instead of an in-process judge.
        reward_retry_s: How long (seconds) to keep retrying a reward server that is down or restarting; then
            the run stops with a checkpoint saved.
        invalid_reward: Reward of a response the judge could not score (in-process judge).
        gold: Gold judge for held-out evaluation (and the reward of ``reward: gold``): ``ifeval`` (programmatic),
            ``ifeval-gated`` (the same, 0 for a reply that does not attempt the task: :mod:`judgerl.gold.gate`) or a
            judge model name.
        gold_data: The IFEval prompts file for ``gold: ifeval`` (None = ``prompts``).
        eval_every: Held-out gold evaluation every K optimizer steps (and at step 0 and the last step).
        eval_max_new_tokens: Policy tokens per held-out response (None = ``grpo.max_completion_length``).
        hacking_window, hacking_min_rho, hacking_min_delta: The reward-hacking test
            (:func:`judgerl.train.curves.hacking_test`).
        time_limit_min: Stop (with a checkpoint) after this many minutes.
        resume: Continue from the newest checkpoint in ``output_dir``.
        grpo: Fields of TRL's ``GRPOConfig``; the pilot knobs are ``learning_rate`` (default 1e-6),
            ``max_steps`` (50), ``num_generations`` (4), ``per_device_train_batch_size`` (8) and
            ``max_completion_length`` (128): defaults in :data:`judgerl.train.policy.POLICY_GRPO_DEFAULTS`,
            the ``policy-grpo`` recipe sets its own.
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
    instructions: list[str] | None = None
    reward: str = "judge"
    rubric: str | None = None
    lora: LoraConfig = field(default_factory=LoraConfig)
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
        if self.reward not in POLICY_REWARDS:
            raise RecipeError(f"{where}: reward must be one of {', '.join(POLICY_REWARDS)}, got {self.reward!r}")
        if self.reward in ("gold", "random") and self.reward_url:
            raise RecipeError(f"{where}: reward: {self.reward} is computed in process; drop reward_url "
                              f"({self.reward_url})")
        if self.reward in ("gold", "random") and self.rubric:
            raise RecipeError(f"{where}: rubric is shown to a judge; reward: {self.reward} reads none")
        if self.instructions is not None and (not isinstance(self.instructions, list) or not self.instructions
                                              or not all(isinstance(i, str) and i for i in self.instructions)):
            raise RecipeError(f"{where}: instructions must be a non-empty list of IFEval instruction id prefixes, "
                              f"got {self.instructions!r}")
        if isinstance(self.lora.r, bool) or not isinstance(self.lora.r, int) or self.lora.r < 0:
            raise RecipeError(f"{where}: lora.r must be an integer >= 0 (0 = full fine-tuning), got {self.lora.r!r}")
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
        elif k == "lora":
            if v is None:
                v = {}
            if not isinstance(v, Mapping):
                raise RecipeError(f"{where}: lora must be a mapping, got {type(v).__name__}")
            v = _build(LoraConfig, v, f"{where}: lora")
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
        return is_policy_mapping(read_recipe(name_or_path)[1])
    except (RecipeError, OSError):
        return False


def is_policy_mapping(raw: Mapping[str, Any]) -> bool:
    """Whether a recipe's top-level mapping is a policy recipe (``task: policy``)."""
    return raw.get("task") == POLICY_TASK


def policy_config_from_dict(raw: Mapping[str, Any], overrides: Iterable[str] = (), where: str = "config"
                            ) -> PolicyConfig:
    """A :class:`PolicyConfig` from a recipe's mapping (:func:`judgerl.train.config.read_recipe`) with
    ``key=value`` overrides (dotted for ``judge.``, ``grpo.`` and ``lora.``; values parsed as YAML scalars); not validated.

    Raises:
        RecipeError: unknown fields (with the closest valid one), a malformed override (naming ``where``).
    """
    d = dict(raw)
    d["judge"] = dict(d.get("judge") or {})
    d["grpo"] = dict(d.get("grpo") or {})
    d["lora"] = dict(d.get("lora") or {})
    for item in overrides:
        if "=" not in item:
            raise RecipeError(f"override {item!r}: expected key=value")
        key, value = item.split("=", 1)
        try:
            parsed = load_yaml(value) if value.strip() else None
        except yaml.YAMLError as e:
            raise RecipeError(f"override {item!r}: value is not valid YAML: {e}") from None
        head, _, rest = key.strip().partition(".")
        if rest:
            if head not in ("judge", "grpo", "lora"):
                raise RecipeError(f"override {item!r}: {head!r} is not a section (sections: judge, grpo, lora)")
            d[head][rest] = parsed
        else:
            d[head] = parsed
    return _build(PolicyConfig, d, where)


def load_policy_recipe(name_or_path: str, overrides: Iterable[str] = ()) -> PolicyConfig:
    """Load a policy recipe by name or path (or a run's saved ``config.json``) and apply ``key=value``
    overrides (:func:`policy_config_from_dict`); not validated (:meth:`PolicyConfig.validate`).

    Raises:
        RecipeError: unreadable YAML, unknown fields (with the closest valid one), a malformed override.
    """
    path, raw = read_recipe(name_or_path)
    return policy_config_from_dict(raw, overrides, str(path))


__all__ = ["POLICY_REWARDS", "POLICY_TASK", "PolicyConfig", "PolicyJudgeConfig", "is_policy_mapping", "is_policy_recipe",
           "load_policy_recipe", "policy_config_from_dict"]
