"""What a backend offers for the expected score: token probabilities at a prefilled position.

The judge-as-reward expected score (:mod:`judgerl.judge.expected`) needs p(s) for every score string s
right after the judge's answer tag. A backend that can give them returns a :class:`ScoreReader` from
:meth:`judgerl.backends.base.Backend.score_reader`: ``hf`` backends read logits
(:class:`judgerl.backends.hf_scores.HFScoreReader`), ``openai/...`` and ``vllm/...`` backends read top
log-probabilities (:class:`TopLogprobReader`); any other backend raises
:class:`ExpectedScoreUnavailable` (callers report the mode they used instead; never a silent fallback).
"""

from __future__ import annotations

import math
from typing import Callable, Protocol, Sequence

from judgerl.types import Messages


class ExpectedScoreUnavailable(RuntimeError):
    """The backend or the scale cannot give an expected score; the message says why."""


class ScoreReader(Protocol):
    """Reads the probability of each score string at the end of a prefilled prompt."""

    def check(self, candidates: Sequence[str], terminator: str) -> None:
        """Raise :class:`ExpectedScoreUnavailable` when these score strings cannot be read."""
        ...

    def score_probs(self, prompts: Sequence[Messages], candidates: Sequence[str],
                    terminator: str) -> list[dict[str, float]]:
        """For each prompt (ending in an assistant prefill that stops right after the answer tag),
        p(candidate) for every candidate score string, in [0, 1] (unnormalised).

        Args:
            prompts: Chat prompts whose last message is the assistant prefill.
            candidates: The valid score strings (e.g. ``"0"`` .. ``"9"``).
            terminator: The text that follows a complete score (the protocol's closing tag).

        Raises:
            ExpectedScoreUnavailable: the candidates cannot be read by this reader.
        """
        ...


TopLogprobsFn = Callable[[Sequence[Messages], int], list]


class TopLogprobReader:
    """p(score) from the top-k log-probabilities of the first token generated after the prefix.

    Args:
        top_logprobs: ``f(prompts, k) -> [entry per prompt]``, where an entry is a list of
            ``(token_text, logprob)`` (the top-k alternatives of the first generated token) or an
            error message (str). Backends provide it (``OpenAIBackend.top_logprobs``,
            ``VLLMBackend.top_logprobs``).
        k: Alternatives requested (OpenAI allows at most 20).
        name: Backend name for messages.

    A token counts for score ``c`` when its text, stripped of whitespace, equals ``c`` (``" 7"`` and
    ``"7"`` both count). Only single-character scores are read (scales within 0-9): a longer score
    may span several tokens whose split this reader cannot see.
    """

    def __init__(self, top_logprobs: TopLogprobsFn, k: int = 20, name: str = "backend") -> None:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        self._fn = top_logprobs
        self.k = k
        self.name = name

    def check(self, candidates: Sequence[str], terminator: str) -> None:
        """See :meth:`ScoreReader.check`: only single-character scores."""
        long = [c for c in candidates if len(c) != 1]
        if long:
            raise ExpectedScoreUnavailable(
                f"{self.name}: top-logprob readers read one token, so only single-character scores (a scale "
                f"within 0-9) are supported; this scale has {long[:3]}")

    def score_probs(self, prompts: Sequence[Messages], candidates: Sequence[str],
                    terminator: str) -> list[dict[str, float]]:
        """See :meth:`ScoreReader.score_probs`.

        Raises:
            ExpectedScoreUnavailable: a candidate longer than one character.
            RuntimeError: the backend failed for a prompt (its message).
        """
        self.check(candidates, terminator)
        entries = self._fn(list(prompts), self.k)
        out = []
        for i, entry in enumerate(entries):
            if isinstance(entry, str):
                raise RuntimeError(f"{self.name}: prompt {i}: no logprobs: {entry}")
            probs = {c: 0.0 for c in candidates}
            for tok, lp in entry:
                key = str(tok).strip()
                if key in probs and lp is not None and math.isfinite(lp):
                    probs[key] += math.exp(lp)
            out.append(probs)
        return out


__all__ = ["ExpectedScoreUnavailable", "ScoreReader", "TopLogprobReader", "TopLogprobsFn"]
