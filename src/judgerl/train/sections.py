"""The typed sections of a training recipe (``data:``, ``rewards:``, ``warmup:``, ``distill:``,
``zero:``, ``dapo:``, ``tools:``, ``lora:``); :mod:`judgerl.train.config` assembles them into a
:class:`~judgerl.train.config.TrainConfig`. Every field has its one default here."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from judgerl.text.codeblocks import MAX_TOOL_ROUNDS
from judgerl.train import defaults


@dataclass
class DataConfig:
    """Training data: a pairs file (``path``) or a builder.

    Attributes:
        path: Any file :func:`judgerl.data.load_pairs` reads.
        format: Its format (default: detected). field_map: ``--field`` mapping for generic files.
        skip_invalid: Skip malformed records instead of failing.
        builder: ``gsm8k-arith`` (arithmetic-verification pairs from GSM8K calculations).
        source: The builder's input (a GSM8K jsonl). max_value, ops: arithmetic builder options.
        limit: Most pairs used (after ``offset``). offset: Skip the first N usable pairs (hold-out).
    """

    path: str | None = None
    format: str | None = None
    field_map: dict[str, str] | None = None
    skip_invalid: bool = False
    builder: str | None = None
    source: str | None = None
    max_value: int = 999
    ops: str = "+-*"
    limit: int | None = None
    offset: int = 0


@dataclass
class RewardsConfig:
    """Reward weights (0 = off). Rewards: :mod:`judgerl.rewards` (J1 verdict / consistency /
    pointwise-from-pairwise / format, score regression, TIR) and DAPO's soft overlong punishment
    (``overlong``, needs ``dapo.overlong_buffer``)."""

    verdict: float = 0.0
    consistency: float = 0.0
    pointwise_pair: float = 0.0
    format: float = 0.0
    regression: float = 0.0
    tir: float = 0.0
    overlong: float = 0.0

    def weights(self) -> dict[str, float]:
        """The non-zero weights by reward name, in field order."""
        return {k: float(v) for k, v in dataclasses.asdict(self).items() if v}


@dataclass
class WarmupConfig:
    """The SFT stage before RL: templated correct judgments of the training pairs (format warm-up),
    or teacher trajectories when ``distill.teacher`` is set (cold start); also the SFT of every
    TIR-Judge-Zero round.

    Attributes:
        steps: SFT steps (0 = no SFT stage). examples: Rows used (None = all).
        learning_rate: SFT learning rate. batch_size: SFT per-device batch size.
    """

    steps: int = 0
    examples: int | None = None
    learning_rate: float = 5e-5
    batch_size: int = 8


@dataclass
class DistillConfig:
    """Distillation cold start (TIR-Judge-Distill; the reasoning-judge SFT of the judge-as-reward
    study): judge the training rows with a teacher, keep the trajectories whose decision is correct
    (rejection sampling), SFT on them (``warmup`` section: steps, learning rate, batch size) with
    tool outputs masked out of the loss.

    Attributes:
        teacher: None (off: templated warm-up), ``programmatic`` (:mod:`judgerl.train.teachers`:
            checks arithmetic pairs, with tools by running ``print(a + b)`` in the sandbox) or any
            model name :func:`judgerl.backends.load_backend` accepts (``openai/<model>``, a local
            directory, ``scripted/<file.jsonl>``).
        samples: Teacher judgments per row (the shortest correct one is kept).
        temperature: Teacher sampling temperature (0 = greedy; ``samples`` > 1 needs > 0).
        max_new_tokens: Teacher tokens per generation (per tool round with tools).
        force_answer: Force the teacher's answer tag when it never wrote one (the forced tag
            becomes part of the SFT target).
    """

    teacher: str | None = None
    samples: int = 1
    temperature: float = 0.0
    max_new_tokens: int = 256
    force_answer: bool = False


@dataclass
class ZeroConfig:
    """TIR-Judge-Zero iterative bootstrapping (Xu et al., 2025): ``rounds`` x (RL -> sample
    ``samples`` trajectories per row with the RL policy -> keep per row the correct one that is
    shortest with the fewest tool calls -> SFT from the ORIGINAL base), then a last RL phase.
    No teacher, no templated warm-up. See :mod:`judgerl.train.zero`.

    Attributes:
        rounds: Bootstrap rounds (0 = off; a plain recipe). The run has ``rounds + 1`` RL phases.
        samples: Trajectories sampled per training row in each round (k).
        temperature: Sampling temperature of the rejection-sampling step.
        max_new_tokens: Tokens per tool round when sampling (None: ``tools.max_new_tokens`` or
            ``grpo.max_completion_length``).
        force_answer: Force the answer tag of sampled trajectories that never wrote one; the
            forced tag is then SFT-trained as the model's own text (how the base learns the format).
        rl_steps: GRPO steps of each RL phase (None: ``grpo.max_steps``).
        examples: Rows sampled per round (None = all).
        prefill: Assistant text the judge continues in the RL rollouts and the sampling of the first
            ``prefill_rounds`` rounds (e.g. ``<think>Let me check with Python.\n```python\n``: a
            base that never writes code then tries the tool); masked in RL, and trained in the
            round's SFT as the model's own text (``forced`` piece). None: no nudge.
        prefill_rounds: Rounds whose RL and sampling use ``prefill``.
    """

    rounds: int = 0
    samples: int = 4
    temperature: float = 1.0
    max_new_tokens: int | None = None
    force_answer: bool = True
    rl_steps: int | None = None
    examples: int | None = None
    prefill: str | None = None
    prefill_rounds: int = 1


@dataclass
class LoraConfig:
    """LoRA (Hu et al., 2021) with ``peft``: train a low-rank adapter instead of all weights, so a
    trained judge ships as a few MB (``<output_dir>/final/adapter``).

    Attributes:
        r: Rank (0 = off: full fine-tuning). alpha: Scaling (ΔW = alpha / r · B A).
        dropout: Dropout on the adapter input. target_modules: Module names or ``all-linear``.
        top_layers: Put adapters on the top N decoder blocks only (0 = all). Backpropagation
            then stops at the lowest adapted block: on CPU a step costs about
            (1 + 2·N/L)/3 of a full one for an L-block model, and the adapter shrinks by N/L.
        merge_for_rollout: GRPO rollouts (TRL's generation and the TIR tool loop) generate on
            merged weights W + alpha/r · B A (:func:`judgerl.train.lora.merged_for_generation`);
            the loss's forward/backward stays on the unmerged adapter and the base weights are
            restored bit for bit. Off by default; figures in docs/training.md.
    """

    r: int = 0
    alpha: int = 32
    dropout: float = 0.0
    target_modules: Any = "all-linear"
    top_layers: int = 0
    merge_for_rollout: bool = False


@dataclass
class DapoConfig:
    """DAPO (Yu et al., 2025) options judgerl implements on top of TRL.

    Attributes:
        dynamic_sampling: Drop zero-variance groups and refill the batch (eq. 11).
        max_sampling_rounds: Extra generation batches per step for the refill.
        overlong_buffer: L_cache of the soft overlong punishment, eq. (13), in tokens.
    """

    dynamic_sampling: bool = defaults.DYNAMIC_SAMPLING
    max_sampling_rounds: int = defaults.MAX_SAMPLING_ROUNDS
    overlong_buffer: int | None = None


@dataclass
class ToolsConfig:
    """Tool-integrated rollouts (``task: tir``).

    Attributes:
        max_rounds: Most executed code blocks per rollout (TIR-Judge: 3).
        sandbox: ``auto``, ``bwrap`` or ``fallback`` (see :func:`judgerl.tools.get_sandbox`).
        timeout_s: Seconds per code execution.
        max_new_tokens: Tokens per generation round (None = ``grpo.max_completion_length``).
        allow_unsafe: Allow the fallback executor where bubblewrap is missing (not a boundary).
        force_answer: In GRPO rollouts, force the answer tag of trajectories that never wrote one
            (the forced tag is masked out of the loss; the verdict after it is trained) and score
            them with Rf = 0, i.e. R = 0.1 · Rc: a correctness signal for a base that never writes
            the tag, ten times smaller than a correct judgment in the model's own format.
    """

    max_rounds: int = MAX_TOOL_ROUNDS
    sandbox: str = "auto"
    timeout_s: float = 5.0
    max_new_tokens: int | None = None
    allow_unsafe: bool = False
    force_answer: bool = False


__all__ = ["DapoConfig", "DataConfig", "DistillConfig", "LoraConfig", "RewardsConfig", "ToolsConfig",
           "WarmupConfig", "ZeroConfig"]
