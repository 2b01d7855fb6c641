"""Score modes of the reward server's pointwise answers: ``parsed``, ``mean`` and ``expected``.

See :attr:`judgerl.serve.service.ServeConfig.score_mode`. ``expected`` is the judge-as-reward expected
score Σ s·p(s) / Σ p(s) over the valid scores at the judge's answer position
(:mod:`judgerl.judge.expected`), read after generation in a worker thread; a backend that cannot give
token probabilities answers in ``parsed`` / ``mean`` mode and every answer says so (never a silent
fallback).

:class:`ScoreModes` holds one server's modes: it resolves a request's mode and turns judged inputs into
scores and answers. It is given what it needs (the judge, the sample count, the score range, the
counters) and never calls back into the service.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass
from typing import Any, Sequence

from judgerl.judge.aggregate import vote_values
from judgerl.judge.core import Judge, Judgment
from judgerl.judge.defaults import default_score_mode
from judgerl.judge.expected import SCORE_MODES, expected_unavailable
from judgerl.serve.errors import ApiError
from judgerl.types import Decision

#: One judged input: (combined decision, its samples, generation error or None).
Judged = tuple[Decision, list[Judgment], "str | None"]
#: One scored input: (score or None, invalid reason, samples, error, extra answer fields).
Scored = tuple["float | None", "str | None", list[Judgment], "str | None", dict[str, Any]]


@dataclass(frozen=True)
class ScoreMode:
    """The score mode a request is answered in.

    Attributes:
        mode: Used: ``parsed``, ``mean`` or ``expected``.
        requested: What the request (or the server's default) asked for.
        note: Why ``mode`` differs from ``requested`` (the backend cannot give token probabilities).
        samples: Judgments per item (1 for ``parsed``).
    """

    mode: str
    requested: str
    note: str | None
    samples: int

    def fields(self) -> dict[str, Any]:
        """``{"score_mode"}``, plus ``score_mode_requested`` / ``score_mode_note`` on a fallback."""
        out: dict[str, Any] = {"score_mode": self.mode}
        if self.note is not None:
            out |= {"score_mode_requested": self.requested, "score_mode_note": self.note}
        return out


def check_score_mode(judge: Judge, score_mode: str | None) -> str | None:
    """Why ``judge`` cannot give expected scores (None when it can, or when it is not pointwise).

    Raises:
        ValueError: ``score_mode`` set on a non-pointwise judge, or ``expected`` where it cannot be read
            (a server configured so refuses to start).
    """
    proto = judge.protocol
    if proto.kind != "pointwise":
        if score_mode is not None:
            raise ValueError(f"score_mode applies to pointwise protocols; {proto.name!r} is {proto.kind}")
        return None
    why = expected_unavailable(proto, judge.backend)
    if score_mode == "expected" and why is not None:
        raise ValueError(f"score_mode expected: {why}")
    return why


def normalise(score: float, score_range: tuple[float, float] | None) -> float:
    """``(score - lo) / (hi - lo)`` clipped to [0, 1].

    Raises:
        RuntimeError: no score range (only pointwise protocols normalise, and they have one).
    """
    if score_range is None:
        raise RuntimeError("no score range configured")
    lo, hi = score_range
    return min(1.0, max(0.0, (score - lo) / (hi - lo)))


def raw_field(judgments: Sequence[Judgment], return_raw: bool) -> dict[str, Any]:
    """``{"raw": text}`` (a list for several samples) when ``return_raw``, else ``{}``."""
    if not return_raw:
        return {}
    texts = [j.text for j in judgments]
    return {"raw": texts[0] if len(texts) == 1 else texts}


class ScoreModes:
    """The score modes of one server.

    Args:
        judge: The server's judge (its protocol and backend decide whether ``expected`` can be read).
        samples: The server's judgments per item.
        default: The server's ``score_mode`` (None: ``mean`` with several samples, else ``parsed``).
        score_range: The pointwise scale answers are normalised on.
        return_raw: Whether answers carry the judge's raw output.
        counts: The server's counters (``score_mode_fallback``, ``item_errors`` are added here).

    Raises:
        ValueError: see :func:`check_score_mode`.
    """

    def __init__(self, judge: Judge, samples: int, default: str | None, score_range: tuple[float, float] | None,
                 return_raw: bool, counts: Counter[str]) -> None:
        self.judge = judge
        self.samples = samples
        self.default = default
        self.score_range = score_range
        self.return_raw = return_raw
        self.counts = counts
        self.expected_why = check_score_mode(judge, default)

    def resolve(self, requested: str | None) -> ScoreMode:
        """The mode of a request asking for ``requested`` (None: the server's default).

        Raises:
            ApiError: 400 for a score mode on a non-pointwise server; 422 for an unknown mode.
        """
        proto = self.judge.protocol
        if requested is not None and proto.kind != "pointwise":
            raise ApiError(400, f"score_mode applies to pointwise protocols; this server runs {proto.name!r}")
        if requested is not None and requested not in SCORE_MODES:
            raise ApiError(422, f"score_mode must be one of {', '.join(SCORE_MODES)}, got {requested!r}")
        want = requested or self.default or default_score_mode(self.samples)
        mode, note = want, None
        if want == "expected" and self.expected_why is not None:
            mode, note = default_score_mode(self.samples), self.expected_why
            self.counts["score_mode_fallback"] += 1
        return ScoreMode(mode, want, note, 1 if mode == "parsed" else self.samples)

    async def scores(self, judged: Sequence[Judged], mode: ScoreMode) -> list[Scored]:
        """(score, invalid reason, judgments, error, extra answer fields) per judged input under ``mode``.

        ``parsed`` / ``mean``: the combined decision's score. ``expected``: the mean over the samples'
        valid expected scores, with ``parsed_score`` and ``expected_mass`` added; a failed probability read
        fails the items with ``generation_failed`` (reported, retryable).
        """
        expected: list[Any] | None = None
        failure = None
        if mode.mode == "expected":
            flat = [j for _, js, _ in judged for j in js]
            try:
                expected = await asyncio.to_thread(self.judge.expected_scores, flat)
            except Exception as e:  # a failed logprob read fails these items, reported and retryable
                self.counts["item_errors"] += len(judged)
                failure = f"expected score failed: {type(e).__name__}: {e}"
        out: list[Scored] = []
        pos = 0
        for d, js, err in judged:
            parsed = float(d.scores[0]) if d.valid and d.scores else None
            if failure is not None:
                out.append((None, "generation_failed", js, failure, {"parsed_score": parsed}))
                continue
            if expected is None:
                out.append((parsed, None if d.valid else d.invalid_reason, js, err, {}))
                continue
            mine = expected[pos : pos + len(js)]
            pos += len(js)
            vals = [e.value for e in mine if e.value is not None]
            # the vote's rules over the samples' values: a quoted sample voids, a quorum is needed
            score = vote_values([j.decision for j in js], [e.value for e in mine]) if mine else None
            reason = None if score is not None else ((d.invalid_reason if not d.valid else None)
                                                     or next((e.invalid_reason for e in mine if e.invalid_reason), None)
                                                     or "generation_failed")
            mass = sum(e.mass for e in mine if e.valid) / len(vals) if vals else 0.0
            out.append((score, reason, js, err, {"parsed_score": parsed, "expected_mass": mass}))
        return out

    def answer(self, guard: str | None, scored: Scored | None, mode: ScoreMode) -> dict[str, Any]:
        """One answer of ``POST /v1/score``: ``{"score", "normalized", "valid", "invalid_reason",
        "score_mode", "raw"}``, plus ``parsed_score`` / ``expected_mass`` (``expected``) and
        ``score_mode_requested`` / ``score_mode_note`` (a fallback); a guarded response (``guard``: its
        reason; ``scored`` None) is invalid without a judge call."""
        if guard is not None or scored is None:
            return {"score": None, "normalized": None, "valid": False, "invalid_reason": guard} | mode.fields()
        s, reason, js, err, extra = scored
        body = {"score": s, "normalized": normalise(s, self.score_range) if s is not None else None,
                "valid": s is not None, "invalid_reason": reason} | mode.fields() | extra | raw_field(js, self.return_raw)
        if err:
            body["error"] = err
        return body


__all__ = ["ScoreMode", "ScoreModes", "check_score_mode", "normalise", "raw_field"]
