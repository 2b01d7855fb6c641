"""Score modes of the reward server's pointwise answers: ``parsed``, ``mean`` and ``expected``.

See :attr:`judgerl.serve.service.ServeConfig.score_mode`. ``expected`` is the judge-as-reward expected
score Σ s·p(s) / Σ p(s) over the valid scores at the judge's answer position (:mod:`judgerl.expected`),
read after generation in a worker thread; a backend that cannot give token probabilities answers in
``parsed`` / ``mean`` mode and every answer says so (never a silent fallback).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Sequence

from judgerl.expected import SCORE_MODES


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


def check_score_mode(judge: Any, score_mode: str | None) -> str | None:
    """Why ``judge`` cannot give expected scores (None when it can, or when it is not pointwise).

    Raises:
        ValueError: ``score_mode`` set on a non-pointwise judge, or ``expected`` where it cannot be read
            (a server configured so refuses to start).
    """
    from judgerl.expected import expected_unavailable

    proto = judge.protocol
    if proto.kind != "pointwise":
        if score_mode is not None:
            raise ValueError(f"score_mode applies to pointwise protocols; {proto.name!r} is {proto.kind}")
        return None
    why = expected_unavailable(proto, judge.backend)
    if score_mode == "expected" and why is not None:
        raise ValueError(f"score_mode expected: {why}")
    return why


def resolve_score_mode(service: Any, requested: str | None) -> ScoreMode:
    """The mode for a request of a :class:`~judgerl.serve.service.JudgeService` asking for ``requested``
    (None: the server's ``score_mode``, else ``mean`` with several samples, else ``parsed``).

    Raises:
        ApiError: 400 for a score mode on a non-pointwise server; 422 for an unknown mode.
    """
    from judgerl.serve.service import ApiError

    cfg = service.config
    if requested is not None and service.protocol.kind != "pointwise":
        raise ApiError(400, f"score_mode applies to pointwise protocols; this server runs {service.protocol.name!r}")
    if requested is not None and requested not in SCORE_MODES:
        raise ApiError(422, f"score_mode must be one of {', '.join(SCORE_MODES)}, got {requested!r}")
    want = requested or cfg.score_mode or ("mean" if cfg.samples > 1 else "parsed")
    mode, note = want, None
    if want == "expected" and service.expected_why is not None:
        mode, note = ("mean" if cfg.samples > 1 else "parsed"), service.expected_why
        service.counts["score_mode_fallback"] += 1
    return ScoreMode(mode, want, note, 1 if mode == "parsed" else cfg.samples)


async def pointwise_scores(service: Any, judged: Sequence[tuple[Any, list[Any], str | None]], mode: ScoreMode
                           ) -> list[tuple[float | None, str | None, list[Any], str | None, dict[str, Any]]]:
    """(score, invalid reason, judgments, error, extra answer fields) per judged input under ``mode``.

    ``judged`` is the service's ``_judge`` output (combined decision, samples, error). ``parsed`` / ``mean``:
    the combined decision's score. ``expected``: the mean over the samples' valid expected scores, with
    ``parsed_score`` and ``expected_mass`` added; a failed probability read fails the items with
    ``generation_failed`` (reported, retryable).
    """
    expected: list[Any] | None = None
    failure = None
    if mode.mode == "expected":
        flat = [j for _, js, _ in judged for j in js]
        try:
            expected = await asyncio.to_thread(service.judge.expected_scores, flat)
        except Exception as e:  # a failed logprob read fails these items, reported and retryable
            service.counts["item_errors"] += len(judged)
            failure = f"expected score failed: {type(e).__name__}: {e}"
    out: list[tuple[float | None, str | None, list[Any], str | None, dict[str, Any]]] = []
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
        score = sum(vals) / len(vals) if vals else None
        reason = None if vals else ((mine[0].invalid_reason if mine else d.invalid_reason) or "generation_failed")
        mass = sum(e.mass for e in mine if e.valid) / len(vals) if vals else 0.0
        out.append((score, reason, js, err, {"parsed_score": parsed, "expected_mass": mass}))
    return out


async def score_items(service: Any, items: Sequence[Any], gone: Any, mode: ScoreMode) -> list[dict[str, Any]]:
    """The answers of ``POST /v1/score`` (:meth:`judgerl.serve.service.JudgeService.score`) in ``mode``:
    ``{"score", "normalized", "valid", "invalid_reason", "score_mode", "raw"}`` per item, plus
    ``parsed_score`` / ``expected_mass`` (``expected``) and ``score_mode_requested`` / ``score_mode_note``
    (a fallback); guarded responses (empty, master keys) are invalid without a judge call."""
    guarded = [service._guard(it.response, it.prompt) for it in items]
    todo = [i for i, g in enumerate(guarded) if g is None]
    inputs = [service._input(f"items[{i}]", items[i].prompt, [items[i].response]) for i in todo]
    scored = dict(zip(todo, await service._pointwise(inputs, gone, mode))) if todo else {}
    results = []
    for i in range(len(items)):
        if guarded[i] is not None:
            results.append({"score": None, "normalized": None, "valid": False, "invalid_reason": guarded[i]}
                           | mode.fields())
            continue
        s, reason, js, err, extra = scored[i]
        body = {"score": s, "normalized": service._normalise(s) if s is not None else None, "valid": s is not None,
                "invalid_reason": reason} | mode.fields() | extra | service._raw(js)
        if err:
            body["error"] = err
        results.append(body)
    return results


__all__ = ["ScoreMode", "check_score_mode", "pointwise_scores", "resolve_score_mode", "score_items"]
