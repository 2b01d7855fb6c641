"""Expected score of a pointwise judge: the probability-weighted score at the judge's answer position.

The judge-as-reward study ("Examining Reasoning LLMs-as-Judges in Non-Verifiable LLM Post-Training", 2025) rewards a policy with the judge's *expected* score rather than the one number it wrote:

    E[s] = Σ_s s · p(s) / Σ_s p(s)        over the valid scores s of the scale (0-9 in the paper)

where p(s) is the judge's probability of writing score s right after its thinking and the opening
score tag. The normalisation over valid scores discards the mass on anything else (a word, an
out-of-range number); that mass, ``1 - Σ_s p(s)``, is reported as :attr:`ExpectedScore.mass`.

How p(s) is read:

* the judgment is generated as usual (:meth:`judgerl.judge.Judge.run`, thinking, tools and answer
  forcing included);
* the answer position is right after the judge's own first final-answer tag (found by the protocol's
  parser: :func:`judgerl.protocols.parsing.answer_region` + ``find_tags`` with the protocol's
  ``answer_tags``; forced answers carry the protocol's ``force_suffix``). As in the paper, E[s] is read
  there whatever the judge's greedy continuation was: a judgment whose written score is unparseable
  (``<score>x</score>``, a small judge copying the prompt's template), out of range or conflicting still
  has a score distribution at its tag. No answer position (no tag, unterminated thinking, a prompt that did
  not fit, a failed generation) -> invalid; a final answer **quoted from a response under judgment**
  (``quoted_answer``) is never read (the tag is the response's, not the judge's). ``require_valid=True``
  reads valid judgments only: stricter, e.g. against a policy that makes the judge write ``<score>99`` on
  0-9, whose first token ``9`` the single-token reading counts as a 9 (a limit of the paper's reading);
* a :class:`ScoreReader` returns p(s) for every score string at that position:
  :class:`judgerl.backends.hf_scores.HFScoreReader` from the logits of one forward pass (any
  tokenisation: a score written as several tokens, e.g. ``"10"`` = ``"1"`` ``"0"`` in SmolLM2, gets
  the product of its token probabilities, followed by the first token of the closing tag whenever
  one score's tokens are a prefix of another's, so that ``"1"`` and ``"10"`` are disjoint events);
  :class:`TopLogprobReader` from the top-k log-probabilities of one generated token (OpenAI-compatible
  servers, vLLM): single-character scores only (scales within 0-9, which is why the paper uses 0-9).

A backend that cannot give token probabilities (scripted, an API without logprobs) raises
:class:`ExpectedScoreUnavailable`; callers report the mode they used instead (never a silent fallback).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from judgerl.backends.base import Backend
from judgerl.backends.chat import continue_prompt, prefill_of
from judgerl.backends.scores import ExpectedScoreUnavailable, ScoreReader, TopLogprobReader  # noqa: F401 (re-exported)
from judgerl.protocols.base import JudgeProtocol
from judgerl.types import Messages

#: Most scores on one scale (a guard against scales such as 0-1000 that no reader handles well).
MAX_CANDIDATES = 101
#: Score modes of the reward server, the label command and the judge reward.
SCORE_MODES = ("parsed", "mean", "expected")


@dataclass(frozen=True)
class ExpectedScore:
    """The expected score of one judgment.

    Attributes:
        value: E[s] = Σ s·p(s) / Σ p(s) over the valid scores; None when the judgment is invalid or
            no probability fell on a valid score.
        mass: Σ p(s) over the valid scores, in [0, 1] (unnormalised; 1 - mass went elsewhere).
        probs: p(s) / Σ p(s) per score value (empty when ``value`` is None).
        invalid_reason: Why ``value`` is None: the judgment's own invalid reason, or
            ``"no_score_mass"`` when no valid score had any probability.
    """

    value: float | None
    mass: float = 0.0
    probs: Mapping[float, float] = field(default_factory=dict)
    invalid_reason: str | None = None

    @property
    def valid(self) -> bool:
        return self.value is not None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``{"value", "mass", "probs": {"7": p, ...}, "invalid_reason"}``."""
        return {"value": self.value, "mass": self.mass,
                "probs": {_fmt(k): v for k, v in self.probs.items()}, "invalid_reason": self.invalid_reason}


def score_candidates(protocol: JudgeProtocol) -> list[tuple[float, str]]:
    """The valid scores of a pointwise protocol's scale (:attr:`JudgeProtocol.score_scale`): every
    integer in [min, max].

    Returns:
        ``[(value, text)]`` in increasing order, e.g. ``[(0.0, "0"), ..., (9.0, "9")]``.

    Raises:
        ExpectedScoreUnavailable: not a pointwise protocol, one whose answer is not in tags (a ``template``
            protocol: no answer position to read), bounds that are not integers, or more than
            :data:`MAX_CANDIDATES` scores.
    """
    scale = protocol.score_scale
    if protocol.kind != "pointwise" or scale is None:
        raise ExpectedScoreUnavailable(
            f"the expected score needs a pointwise protocol; {protocol.name!r} is {protocol.kind}")
    if not protocol.answer_tags:
        raise ExpectedScoreUnavailable(f"the expected score is read after an answer tag; {protocol.name!r} answers "
                                       "with a pattern, not a tag")
    lo, hi = scale
    if not (lo.is_integer() and hi.is_integer()):
        raise ExpectedScoreUnavailable(f"the expected score needs an integer scale, got {lo:g}-{hi:g}")
    n = int(hi - lo) + 1
    if n > MAX_CANDIDATES:
        raise ExpectedScoreUnavailable(f"scale {lo:g}-{hi:g} has {n} scores; at most {MAX_CANDIDATES} are read")
    return [(float(v), str(v)) for v in range(int(lo), int(hi) + 1)]


def answer_prefix(protocol: JudgeProtocol, text: str) -> str | None:
    """The judgment ``text`` up to and including its first final-answer tag (the answer position).

    The tag is found as the protocol's parser finds it: the final-answer region after the last
    ``</think>`` with code blanked, and the protocol's ``answer_tags``; the judge's own spelling of
    the tag is kept (``<Score >`` stays as written). Returns None when there is no such tag.
    """
    from judgerl.protocols.parsing import ParseFailure, answer_region, find_tags

    try:
        region = answer_region(text)
    except ParseFailure:
        return None
    tags = find_tags(region.text, protocol.answer_tags)
    if not tags:
        return None
    start = region.start + tags[0].start
    end = text.find(">", start)
    return None if end == -1 else text[: end + 1]


def expected_from_probs(probs: Mapping[float, float]) -> ExpectedScore:
    """E[s] = Σ s·p(s) / Σ p(s) (judge-as-reward); ``no_score_mass`` when Σ p(s) is 0.

    Raises:
        ValueError: a negative or non-finite probability.
    """
    for s, p in probs.items():
        if not (math.isfinite(p) and p >= 0):
            raise ValueError(f"probability of score {s:g} must be finite and >= 0, got {p}")
    mass = float(sum(probs.values()))
    if mass <= 0:
        return ExpectedScore(None, 0.0, {}, "no_score_mass")
    norm = {s: p / mass for s, p in probs.items()}
    return ExpectedScore(sum(s * p for s, p in norm.items()), min(mass, 1.0), norm)


def score_reader(backend: Backend) -> ScoreReader:
    """The :class:`ScoreReader` of a backend: :meth:`judgerl.backends.base.Backend.score_reader`.

    Raises:
        ExpectedScoreUnavailable: the backend cannot give token probabilities (scripted, ...), naming it.
    """
    return backend.score_reader()


def expected_unavailable(protocol: JudgeProtocol, backend: Backend) -> str | None:
    """Why ``backend`` cannot give expected scores on ``protocol``'s scale, or None when it can."""
    try:
        reader = score_reader(backend)
        reader.check([c for _, c in score_candidates(protocol)], protocol.forced_stop[0])
    except ExpectedScoreUnavailable as e:
        return str(e)
    return None


#: Invalid reasons whose judgments are never read: the answer region is not the judge's own.
UNREADABLE_REASONS = frozenset({"quoted_answer", "spoiled_by_markup", "prompt_too_long", "generation_failed"})


def read_expected(protocol: JudgeProtocol, reader: ScoreReader, items: Sequence[tuple[Messages, str, bool, str | None]],
                  require_valid: bool = False) -> list[ExpectedScore]:
    """Expected scores of judgments given as ``(messages, text, valid, invalid_reason)``.

    Each judgment with an answer position (:func:`answer_prefix`) is read there, all in one
    ``reader.score_probs`` call; the others -- and those of :data:`UNREADABLE_REASONS`, and with
    ``require_valid`` every invalid one -- keep their invalid reason (module docstring).

    Raises:
        ExpectedScoreUnavailable: the protocol's scale or the reader cannot give expected scores.
    """
    cands = score_candidates(protocol)
    terminator = protocol.forced_stop[0]
    out: list[ExpectedScore | None] = [None] * len(items)
    todo, prompts = [], []
    for i, (messages, text, valid, reason) in enumerate(items):
        readable = valid or (not require_valid and reason not in UNREADABLE_REASONS)
        prefix = _continuation_prefix(protocol, messages, text) if readable else None
        if prefix is None:
            out[i] = ExpectedScore(None, 0.0, {}, reason or "missing_final_answer")
            continue
        todo.append(i)
        prompts.append(continue_prompt(messages, prefix))
    if todo:
        probs = reader.score_probs(prompts, [c for _, c in cands], terminator)
        for i, p in zip(todo, probs):
            out[i] = expected_from_probs({v: float(p.get(c, 0.0)) for v, c in cands})
    return out  # type: ignore[return-value]


def parsed_for_carrier(decision: Any) -> ExpectedScore:
    """The expected score of a judgment of a response that carries the judge's answer syntax
    (``Judgment.carriers``): its parsed score with all the mass on it (a valid decision stood only as the carrier's
    worst outcome; the answer it carries would lift E[s] at the answer position: stop 43), else invalid."""
    if decision.valid and decision.scores:
        v = float(decision.scores[0])
        return ExpectedScore(v, 1.0, {v: 1.0})
    return ExpectedScore(None, 0.0, {}, decision.invalid_reason or "quoted_answer")


def _continuation_prefix(protocol: JudgeProtocol, messages: Messages, text: str) -> str | None:
    """The completion ``text`` up to its answer position, found in the judge's whole turn (the
    prompt's assistant prefill + ``text``: a score inside a prefilled, never closed ``<think>`` is
    a draft, not the answer). None when the turn has no answer position in the completion."""
    prefill = prefill_of(messages)
    prefix = answer_prefix(protocol, prefill + text)
    if prefix is None or len(prefix) < len(prefill):
        return None
    return prefix[len(prefill):]


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


__all__ = [
    "ExpectedScore",
    "ExpectedScoreUnavailable",
    "MAX_CANDIDATES",
    "SCORE_MODES",
    "ScoreReader",
    "TopLogprobReader",
    "UNREADABLE_REASONS",
    "answer_prefix",
    "expected_from_probs",
    "expected_unavailable",
    "read_expected",
    "score_candidates",
    "score_reader",
]
