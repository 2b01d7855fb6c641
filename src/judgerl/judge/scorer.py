"""One small interface for pointwise scoring, shared by LLM judges and programmatic gold judges.

Labelling (``judgerl label``), the agreement report, the in-process judge reward and the gold curves
of policy training all score (prompt, response) items through a :class:`PointwiseScorer` and never
branch on what is behind it beyond construction (:func:`judgerl.gold.scorer.load_scorer`):

* :class:`JudgeScorer` -- a pointwise :class:`~judgerl.judge.Judge` (any backend) in one of the score
  modes of :data:`judgerl.judge.expected.SCORE_MODES`:

  - ``parsed``: the score the judge wrote in one judgment;
  - ``mean``: the mean of the written scores of ``samples`` judgments (J1 test-time scaling;
    sample with ``temperature > 0``);
  - ``expected``: the judge-as-reward expected score Σ s·p(s) / Σ p(s) (:mod:`judgerl.judge.expected`),
    averaged over ``samples`` judgments;

* :class:`judgerl.gold.scorer.GoldScorer` -- the programmatic IFEval gold judge (0-9), whose reasoning
  is the checker's per-instruction report.

:func:`judgerl.gold.scorer.load_scorer` makes either from a name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Protocol, Sequence

from judgerl.judge.aggregate import vote_values
from judgerl.judge.core import JudgeInput
from judgerl.judge.defaults import default_score_mode
from judgerl.judge.expected import SCORE_MODES, ExpectedScoreUnavailable, expected_unavailable

if TYPE_CHECKING:
    from judgerl.judge.core import Judge


@dataclass(frozen=True)
class ScoreItem:
    """One response to score.

    Attributes:
        prompt: The instruction.
        response: The response under judgment.
        key: Stable identity for sampling seeds (e.g. the record id); empty = derived from the texts.
        rubric: Per-prompt rubric shown to an LLM judge (rubric-conditioned judging), or None; a
            programmatic gold judge ignores it.
    """

    prompt: str
    response: str
    key: str = ""
    rubric: str | None = None


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
        fallback_reason: Why the scorer fell back from the score mode asked for (e.g. expected scores
            unavailable from the backend), None when it did not.
    """

    name: str
    scale: tuple[float, float]
    mode: str
    fallback_reason: str | None

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
        judge: A judge with a pointwise protocol (its ``score_scale`` is the scale).
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

    def __init__(self, judge: "Judge", mode: str = "parsed", samples: int = 1, fallback: bool = False) -> None:
        scale = judge.protocol.score_scale
        if judge.kind != "pointwise" or scale is None:
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
                mode = default_score_mode(samples)
        self.mode = mode
        self.name = judge.backend.name
        self.scale = scale

    def config(self) -> dict[str, Any]:
        """The judge's config plus the mode and samples."""
        return {"judge": self.judge.config(), "mode": self.mode, "samples": self.samples}

    def score_batch(self, items: Sequence[ScoreItem]) -> list[PointScore]:
        """Judge every item ``samples`` times; see the class docstring for the modes.

        Raises:
            TypeError / ValueError: from the protocol for bad inputs; whatever the backend raises for the
                whole call.
        """
        aggs = self.judge.judge([JudgeInput(it.prompt, (it.response,), it.key, it.rubric) for it in items],
                                samples=self.samples)
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
                # the vote's rules over the samples' values: a quoted sample voids, a quorum is needed
                score = vote_values([j.decision for j in agg.samples], [e.value for e in mine])
                details["expected_mass"] = sum(e.mass for e in mine if e.valid) / len(vals) if vals else 0.0
                reason = None if score is not None else (d.invalid_reason if not d.valid else None) \
                    or next((e.invalid_reason for e in mine if e.invalid_reason), None) or "invalid"
            else:
                score, reason = parsed, (None if d.valid else d.invalid_reason)
            out.append(PointScore(score=score, valid=score is not None, reasoning=first.text, invalid_reason=reason,
                                  mode=self.mode, details=details, retryable=agg.retryable))
        return out


__all__ = ["JudgeScorer", "PointScore", "PointwiseScorer", "ScoreItem", "parse_scale"]
