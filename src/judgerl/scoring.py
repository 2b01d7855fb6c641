"""One small interface for pointwise scoring, shared by LLM judges and programmatic gold judges.

Labelling (``judgerl label``), the agreement report, the in-process judge reward and the gold curves
of policy training all score (prompt, response) items through a :class:`PointwiseScorer` and never
branch on what is behind it beyond construction (:func:`load_scorer`):

* :class:`JudgeScorer` -- a pointwise :class:`~judgerl.judge.Judge` (any backend) in one of the score
  modes of :data:`judgerl.expected.SCORE_MODES`:

  - ``parsed``: the score the judge wrote in one judgment;
  - ``mean``: the mean of the written scores of ``samples`` judgments (J1 test-time scaling;
    sample with ``temperature > 0``);
  - ``expected``: the judge-as-reward expected score Σ s·p(s) / Σ p(s) (:mod:`judgerl.expected`),
    averaged over ``samples`` judgments;

* :class:`GoldScorer` -- the programmatic IFEval gold judge (:class:`judgerl.gold.IFEvalGoldJudge`,
  0-9), whose reasoning is the checker's per-instruction report.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence

from judgerl.expected import SCORE_MODES, ExpectedScoreUnavailable, expected_unavailable


@dataclass(frozen=True)
class ScoreItem:
    """One response to score.

    Attributes:
        prompt: The instruction.
        response: The response under judgment.
        key: Stable identity for sampling seeds (e.g. the record id); empty = derived from the texts.
    """

    prompt: str
    response: str
    key: str = ""


@dataclass(frozen=True)
class PointScore:
    """A scorer's verdict on one response.

    Attributes:
        score: On the scorer's scale; None when invalid.
        valid: Whether a score was obtained.
        reasoning: The judgment text (LLM judges: the first sample's raw output) or the checker's
            per-instruction report (gold judge); kept as an SFT target.
        invalid_reason: Why ``score`` is None (a parse failure, ``no_score_mass``, ``unknown_prompt``...).
        mode: The score mode used: ``parsed``, ``mean``, ``expected`` or ``programmatic``.
        details: Mode-specific facts (``parsed_score``, ``expected_mass``, ``n_samples``, ``n_invalid``;
            gold: ``followed``, ``skipped``...), JSON-ready.
        retryable: The generation failed for a reason a later run may fix (API error, filtered answer).
    """

    score: float | None
    valid: bool
    reasoning: str = ""
    invalid_reason: str | None = None
    mode: str = "parsed"
    details: Mapping[str, Any] = field(default_factory=dict)
    retryable: bool = False


class PointwiseScorer(Protocol):
    """Scores (prompt, response) items on a fixed scale.

    Attributes:
        name: Identity for records and reports (model name, ``ifeval``).
        scale: (min, max) of the scores.
        mode: The score mode every :class:`PointScore` it returns carries.
    """

    name: str
    scale: tuple[float, float]
    mode: str

    def config(self) -> dict[str, Any]:
        """JSON identity: two scorers with the same config give the same scores (resume checks)."""
        ...

    def score_batch(self, items: Sequence[ScoreItem]) -> list[PointScore]:
        """One :class:`PointScore` per item, in order."""
        ...


def parse_scale(text: str) -> tuple[float, float]:
    """``"0-9"`` -> (0.0, 9.0); also ``"1-10"``, ``"0.5-4.5"``.

    Raises:
        ValueError: not ``LO-HI`` with LO < HI.
    """
    m = re.fullmatch(r"\s*(-?\d+(?:\.\d+)?)\s*-\s*(-?\d+(?:\.\d+)?)\s*", str(text))
    if not m or float(m.group(1)) >= float(m.group(2)):
        raise ValueError(f"scale must be LO-HI with LO < HI (e.g. 0-9), got {text!r}")
    return float(m.group(1)), float(m.group(2))


class JudgeScorer:
    """A pointwise :class:`~judgerl.judge.Judge` as a :class:`PointwiseScorer`.

    Args:
        judge: A judge with a pointwise protocol (its ``min_score``/``max_score`` are the scale).
        mode: ``parsed``, ``mean`` or ``expected`` (module docstring).
        samples: Judgments per item (``parsed`` needs 1).
        fallback: When ``mode="expected"`` and the backend cannot give token probabilities: False
            (default) raises; True scores in ``parsed`` (1 sample) / ``mean`` mode instead and says so in
            every :class:`PointScore` (``mode``) and in :attr:`fallback_reason`.

    Raises:
        ValueError: a non-pointwise judge, an unknown mode, ``samples`` < 1, ``parsed`` with samples > 1.
        ExpectedScoreUnavailable: ``mode="expected"`` on a backend / scale that cannot give it, without
            ``fallback``.
    """

    def __init__(self, judge: Any, mode: str = "parsed", samples: int = 1, fallback: bool = False) -> None:
        if judge.kind != "pointwise":
            raise ValueError(f"a scorer needs a pointwise judge; {judge.protocol.name!r} is {judge.kind}")
        if mode not in SCORE_MODES:
            raise ValueError(f"score mode must be one of {', '.join(SCORE_MODES)}, got {mode!r}")
        if samples < 1:
            raise ValueError(f"samples must be >= 1, got {samples}")
        if mode == "parsed" and samples != 1:
            raise ValueError("score mode 'parsed' reads one judgment; use 'mean' for several samples")
        self.judge = judge
        self.samples = samples
        self.requested_mode = mode
        self.fallback_reason: str | None = None
        if mode == "expected":
            why = expected_unavailable(judge.protocol, judge.backend)
            if why is not None:
                if not fallback:
                    raise ExpectedScoreUnavailable(why)
                self.fallback_reason = why
                mode = "mean" if samples > 1 else "parsed"
        self.mode = mode
        self.name = str(getattr(judge.backend, "name", type(judge.backend).__name__))
        self.scale = (float(judge.protocol.min_score), float(judge.protocol.max_score))

    def config(self) -> dict[str, Any]:
        """The judge's config plus the mode and samples."""
        return {"judge": self.judge.config(), "mode": self.mode, "samples": self.samples}

    def score_batch(self, items: Sequence[ScoreItem]) -> list[PointScore]:
        """Judge every item ``samples`` times; see the class docstring for the modes.

        Raises:
            TypeError / ValueError: from the protocol for bad inputs; whatever the backend raises for the
                whole call.
        """
        from judgerl.judge import JudgeInput

        aggs = self.judge.judge([JudgeInput(it.prompt, (it.response,), it.key) for it in items], samples=self.samples)
        expected = None
        if self.mode == "expected":
            flat = [j for a in aggs for j in a.samples]
            expected = self.judge.expected_scores(flat)
        out = []
        for i, agg in enumerate(aggs):
            first = agg.samples[0]
            d = agg.decision
            parsed = float(d.scores[0]) if d.valid and d.scores else None
            details: dict[str, Any] = {"parsed_score": parsed, "n_samples": len(agg.samples), "n_invalid": agg.n_invalid}
            if first.forced:
                details["forced_answer"] = True
            if self.fallback_reason is not None:
                details["expected_unavailable"] = self.fallback_reason
            if expected is not None:
                mine = expected[i * self.samples : (i + 1) * self.samples]
                vals = [e.value for e in mine if e.value is not None]
                score = sum(vals) / len(vals) if vals else None
                details["expected_mass"] = sum(e.mass for e in mine if e.valid) / len(vals) if vals else 0.0
                reason = None if vals else (mine[0].invalid_reason or "invalid")
            else:
                score, reason = parsed, (None if d.valid else d.invalid_reason)
            out.append(PointScore(score=score, valid=score is not None, reasoning=first.text, invalid_reason=reason,
                                  mode=self.mode, details=details, retryable=agg.retryable))
        return out


class GoldScorer:
    """The programmatic IFEval gold judge as a :class:`PointwiseScorer` (0-9; mode ``programmatic``).

    Args:
        gold: An :class:`~judgerl.gold.IFEvalGoldJudge`.

    A prompt the judge does not know is invalid (``unknown_prompt``); a prompt with no checkable
    instruction is invalid (``no_checkable_instruction``); the reasoning is the checker's report.
    """

    mode = "programmatic"
    name = "ifeval"
    scale = (0.0, 9.0)

    def __init__(self, gold: Any) -> None:
        self.gold = gold

    def config(self) -> dict[str, Any]:
        """``{"judge": "ifeval", "records": n, "records_sha256": ..., "punkt": bool}``."""
        blob = json.dumps([[r.key, r.prompt, list(r.instruction_id_list), [dict(k) for k in r.kwargs]]
                           for r in self.gold.records], sort_keys=True, ensure_ascii=False, default=str)
        return {"judge": "ifeval", "records": len(self.gold.records),
                "records_sha256": hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16],
                "punkt": self.gold.punkt_source is not None}

    def score_batch(self, items: Sequence[ScoreItem]) -> list[PointScore]:
        """Check each response against its prompt's instructions (see :meth:`IFEvalGoldJudge.score`)."""
        out = []
        for it in items:
            rec = self.gold.find(it.prompt)
            if rec is None:
                out.append(PointScore(None, False, "", "unknown_prompt", self.mode))
                continue
            g = self.gold.score(rec, it.response)
            details = {"key": g.key, "followed": g.followed, "followed_loose": g.followed_loose, "skipped": g.skipped}
            out.append(PointScore(None if g.score is None else float(g.score), g.score is not None, g.reasoning,
                                  None if g.score is not None else "no_checkable_instruction", self.mode, details))
        return out


def load_scorer(spec: str, *, scale: tuple[float, float] = (0.0, 9.0), mode: str = "parsed", samples: int = 1,
                max_new_tokens: int = 512, temperature: float | None = None, force_answer: bool = False,
                seed: int = 0, ifeval_data: str | None = None, fallback: bool = False,
                backend_kwargs: Mapping[str, Any] | None = None,
                protocol_args: Mapping[str, Any] | None = None) -> PointwiseScorer:
    """A scorer from a name: ``ifeval`` (the programmatic gold judge, needs ``ifeval_data``) or any model
    name :func:`judgerl.backends.load_backend` takes (a PoS judge on ``scale``).

    Args:
        spec: ``ifeval`` or a model name.
        scale: (min, max) of the PoS scale; ``ifeval`` requires (0, 9).
        mode, samples, fallback: See :class:`JudgeScorer`.
        max_new_tokens, temperature, force_answer, seed: The judge's sampling (temperature default: 0
            for one sample, 0.7 for several).
        ifeval_data: The IFEval ``input_data.jsonl`` (``ifeval`` only).
        backend_kwargs: Passed to ``load_backend``.
        protocol_args: Extra PoS protocol options (e.g. ``{"anti_hacking": True}``).

    Raises:
        ValueError: a bad option (names it); ExpectedScoreUnavailable (see :class:`JudgeScorer`);
        FileNotFoundError / DataFormatError: from the IFEval file; ImportError: missing extras.
    """
    if spec == "ifeval":
        if tuple(scale) != (0.0, 9.0):
            raise ValueError(f"--judge ifeval scores 0-9; got scale {scale[0]:g}-{scale[1]:g}")
        if not ifeval_data:
            raise ValueError("--judge ifeval needs the IFEval prompts file (--ifeval-data input_data.jsonl)")
        from judgerl.gold import IFEvalGoldJudge

        return GoldScorer(IFEvalGoldJudge.from_file(ifeval_data))
    from judgerl.backends import SamplingParams, load_backend
    from judgerl.judge import Judge
    from judgerl.protocols import get_protocol

    proto = get_protocol("pos", min_score=scale[0], max_score=scale[1], **dict(protocol_args or {}))
    temp = temperature if temperature is not None else (0.0 if samples == 1 else 0.7)
    params = SamplingParams(max_new_tokens=max_new_tokens, temperature=temp)
    judge = Judge(proto, load_backend(spec, **dict(backend_kwargs or {})), params, force_answer=force_answer, seed=seed)
    return JudgeScorer(judge, mode=mode, samples=samples, fallback=fallback)


__all__ = ["GoldScorer", "JudgeScorer", "PointScore", "PointwiseScorer", "ScoreItem", "load_scorer", "parse_scale"]
