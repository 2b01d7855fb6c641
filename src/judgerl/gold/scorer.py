"""Scorers by name: the programmatic IFEval gold judge, or a PoS judge on any model.

:func:`load_scorer` is what ``judgerl label``, the agreement report, policy training's judge reward
and its gold curves call; both kinds are :class:`judgerl.judge.scorer.PointwiseScorer`.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any, Sequence

from judgerl.judge.scorer import JudgeScorer, PointScore, PointwiseScorer, ScoreItem

if TYPE_CHECKING:
    from judgerl.gold.ifeval import IFEvalGoldJudge
    from judgerl.judge.options import JudgeOptions


class GoldScorer:
    """The programmatic IFEval gold judge as a :class:`PointwiseScorer` (0-9; mode ``programmatic``).

    Args:
        gold: An :class:`~judgerl.gold.IFEvalGoldJudge`.

    A prompt the judge does not know is invalid (``unknown_prompt``); a prompt with no checkable
    instruction is invalid (``no_checkable_instruction``); the reasoning is the checker's report.
    """

    mode = "programmatic"
    fallback_reason: str | None = None  # the checker has no other mode to fall back from
    name = "ifeval"
    scale = (0.0, 9.0)

    def __init__(self, gold: "IFEvalGoldJudge") -> None:
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


class RandomScorer:
    """The random-reward control of the judge-as-reward study: a score that carries no information about the
    response (mode ``random``), on ``scale``.

    Each (prompt, response) gets ``lo + u * (hi - lo)`` with ``u`` uniform in [0, 1) drawn from
    :func:`judgerl.backends.base.derive_seed` of (``seed``, prompt, response): the same text always gets the
    same score (as a judge's seeded judgment does), two different texts independent ones, whatever the batch.
    A policy trained on it moves only by what GRPO does without a signal (entropy, length, drift): the
    baseline against which a judge arm's gain is credited to the judge.

    Args:
        seed: The run seed.
        scale: ``(lo, hi)``, default the gold's 0-9.
    """

    mode = "random"
    fallback_reason: str | None = None
    name = "random"

    def __init__(self, seed: int = 0, scale: tuple[float, float] = (0.0, 9.0)) -> None:
        self.seed, self.scale = seed, (float(scale[0]), float(scale[1]))

    def config(self) -> dict[str, Any]:
        """``{"judge": "random", "seed": ..., "scale": [lo, hi]}``."""
        return {"judge": "random", "seed": self.seed, "scale": list(self.scale)}

    def score_batch(self, items: Sequence[ScoreItem]) -> list[PointScore]:
        """One score per item (see the class docstring); never invalid."""
        from judgerl.backends.base import derive_seed

        lo, hi = self.scale
        return [PointScore(lo + derive_seed(self.seed, "random-reward", it.prompt, it.response) / 2.0 ** 63 * (hi - lo),
                           True, "", None, self.mode) for it in items]


def load_scorer(spec: str, *, scale: tuple[float, float] = (0.0, 9.0), mode: str = "parsed",
                options: "JudgeOptions | None" = None, ifeval_data: str | None = None,
                fallback: bool = False) -> PointwiseScorer:
    """A scorer from a name: ``ifeval`` (the programmatic gold judge, needs ``ifeval_data``), ``ifeval-gated`` (the
    same, scoring 0 a reply that does not attempt the task: :class:`judgerl.gold.gate.GatedScorer`) or any model
    name :func:`judgerl.backends.load_backend` takes (a PoS judge on ``scale``).

    Args:
        spec: ``ifeval``, ``ifeval-gated`` or a model name.
        scale: (min, max) of the PoS scale; ``ifeval`` requires (0, 9).
        mode, fallback: See :class:`~judgerl.judge.scorer.JudgeScorer`.
        options: The judge's options (:class:`~judgerl.judge.options.JudgeOptions`: samples, sampling,
            forcing, seed, backend and protocol options); its ``model`` and ``protocol`` are replaced by
            ``spec`` and ``pos`` on ``scale`` (a pointwise ``template`` protocol is kept, on its own scale).
            Default: ``JudgeOptions(spec)``.
        ifeval_data: The IFEval ``input_data.jsonl`` (``ifeval`` only).

    Raises:
        ValueError: a bad option (names it); ExpectedScoreUnavailable (see ``JudgeScorer``);
        FileNotFoundError / DataFormatError: from the IFEval file; ImportError: missing extras.
    """
    import dataclasses

    from judgerl.judge.options import JudgeOptions

    if spec == "ifeval-gated":  # the IFEval gold that pays nothing for a reply that does not attempt the task
        from judgerl.gold.gate import GatedScorer

        return GatedScorer(load_scorer("ifeval", scale=scale, ifeval_data=ifeval_data))
    if spec == "ifeval":
        if tuple(scale) != (0.0, 9.0):
            raise ValueError(f"--judge ifeval scores 0-9; got scale {scale[0]:g}-{scale[1]:g}")
        if not ifeval_data:
            raise ValueError("--judge ifeval needs the IFEval prompts file (--ifeval-data input_data.jsonl)")
        from judgerl.gold.ifeval import IFEvalGoldJudge

        return GoldScorer(IFEvalGoldJudge.from_file(ifeval_data))
    opts = options or JudgeOptions(spec)
    if opts.protocol == "template":  # a pointwise prompt template brings its own scale
        opts = dataclasses.replace(opts, model=spec)
        judge = opts.make_judge()
        if judge.protocol.kind != "pointwise":
            raise ValueError(f"a scorer scores one response: the prompt template {opts.protocol_args.get('path')} is "
                             f"{judge.protocol.kind}, not pointwise")
        return JudgeScorer(judge, mode=mode, samples=opts.samples, fallback=fallback)
    opts = dataclasses.replace(opts, model=spec, protocol="pos",
                               protocol_args={**opts.protocol_args, "min_score": scale[0], "max_score": scale[1]})
    return JudgeScorer(opts.make_judge(), mode=mode, samples=opts.samples, fallback=fallback)


__all__ = ["GoldScorer", "load_scorer"]
