"""Pairwise judge protocols: PaV (verdict), PaS (two scores), PaVS (verdict + scores).

J1 (Whitehouse et al., 2025, section 2): a pairwise judge sees (x, a, b) and, after thinking,
outputs a verdict in {A, B} (PaV), two real-valued scores s_a, s_b with verdict = argmax (PaS),
or both (PaVS, whose reward looks at the verdict only). TIR-Judge's pairwise format is the same
verdict, given in ``<preference>`` tags; judgerl prompts always ask for ``<verdict>`` (with or
without tools, so a judge learns one format) and parsing accepts both tag names -- a
``<verdict>`` and a ``<preference>`` that disagree are ``"conflicting_answers"``.

Final-answer tags (case-insensitive, read only after the last ``</think>``):

* PaV:  ``<verdict>A</verdict>`` (or ``<preference>B</preference>``); content ``A``/``B`` with
  optional wrappers: ``[[A]]``, ``Assistant B``, ``Response A``, ``**B**``.
* PaS:  ``<score_A>8</score_A> <score_B>6.5</score_B>``; scores in ``[min_score, max_score]``
  (default 0-10), ``x/10`` accepted. Equal scores give verdict ``"tie"`` (a valid decision).
* PaVS: the verdict tag and both score tags. The verdict comes from the verdict tag even when
  the scores disagree with it (both are reported). Missing scores make the decision invalid
  (``"missing_scores"``) unless the protocol is built with ``require_scores=False``; malformed
  scores are always invalid.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import ClassVar, Sequence

from judgerl.protocols.common import (
    BIAS_INSTRUCTION,
    TaggedProtocol,
    answer_block,
    check_inputs,
    check_scale,
    system_message,
    tags_named,
    user_message,
)
from judgerl.protocols.parsing import (
    ParseFailure,
    TagMatch,
    agree,
    format_number,
    parse_score,
    parse_verdict,
)
from judgerl.text.codeblocks import MAX_TOOL_ROUNDS
from judgerl.types import Decision, Messages

VERDICT_TAGS = ("verdict", "preference")
SCORE_TAGS = ("score_A", "score_B")

_TASK = (
    "You are an impartial judge. Given a user question and the responses of two AI assistants, "
    "A and B, decide which response follows the user's instructions better and answers more "
    "helpfully and correctly. " + BIAS_INSTRUCTION
)


class _Pairwise(TaggedProtocol):
    """Shared prompt building of the pairwise protocols (subclasses give the answer format)."""

    kind: ClassVar[str] = "pairwise"
    n_responses: ClassVar[int | None] = 2

    @abstractmethod
    def _answer(self) -> str:
        """The final-answer instruction of the system message."""

    @abstractmethod
    def _reminder(self) -> str:
        """The one-line format reminder closing the user message."""

    def build(self, prompt: str, responses: Sequence[str], tools: bool = False,
              max_tool_rounds: int = MAX_TOOL_ROUNDS, rubric: str | None = None) -> Messages:
        """[system, user] messages: the question (and ``rubric``), then Assistant A's and B's answers in order.

        Raises:
            TypeError: non-str prompt / responses / rubric.
            ValueError: ``len(responses) != 2``.
        """
        a, b = check_inputs(self.name, prompt, responses, 2)
        return [
            system_message(_TASK, self._answer(), tools, self.anti_hacking, max_tool_rounds, self.namespace_kind,
                           self.measures),
            user_message(
                prompt,
                [answer_block("Assistant A's Answer", a), answer_block("Assistant B's Answer", b)],
                self._reminder(),
                rubric,
            ),
        ]


def _verdict(tags: list[TagMatch]) -> str:
    return agree(parse_verdict(t.content) for t in tags_named(tags, *VERDICT_TAGS))


def _scores(tags: list[TagMatch], lo: float, hi: float) -> tuple[float | None, float | None]:
    out = []
    for name in SCORE_TAGS:
        found = tags_named(tags, name)
        out.append(agree(parse_score(t.content, lo, hi) for t in found) if found else None)
    return out[0], out[1]


def _render_verdict(name: str, decision: Decision) -> str:
    if not decision.valid or decision.verdict not in ("A", "B"):
        raise ValueError(f"{name}: cannot render {decision!r}: needs a valid decision with verdict A or B")
    return decision.verdict


def _render_scores(name: str, decision: Decision, lo: float, hi: float) -> str:
    if not decision.valid or decision.scores is None or len(decision.scores) != 2:
        raise ValueError(f"{name}: cannot render {decision!r}: needs a valid decision with two scores")
    for s in decision.scores:
        if not lo <= s <= hi:
            raise ValueError(f"{name}: score {s} outside [{lo}, {hi}]")
    sa, sb = (format_number(x) for x in decision.scores)
    return f"<score_A>{sa}</score_A> <score_B>{sb}</score_B>"


@dataclass(frozen=True)
class PaV(_Pairwise):
    """J1 pairwise-verdict judge: (x, a, b) -> (thought, verdict in {A, B}).

    ``parse`` returns ``Decision(verdict="A"|"B")``; invalid reasons: ``empty_output``,
    ``unterminated_thinking``, ``missing_final_answer``, ``invalid_verdict``,
    ``conflicting_answers``.
    """

    name: ClassVar[str] = "pav"
    answer_tags: ClassVar[tuple[str, ...]] = VERDICT_TAGS

    def _answer(self) -> str:
        return (
            "Then, after </think>, give your verdict exactly once: <verdict>A</verdict> if "
            "Assistant A is better, or <verdict>B</verdict> if Assistant B is better."
        )

    def _reminder(self) -> str:
        return "Think inside <think></think>, then answer <verdict>A</verdict> or <verdict>B</verdict>."

    def decide(self, tags: list[TagMatch], n_responses: int | None) -> Decision:
        return Decision(valid=True, verdict=_verdict(tags))  # type: ignore[arg-type]

    def render_answer(self, decision: Decision) -> str:
        """``<verdict>A</verdict>`` / ``<verdict>B</verdict>``.

        Raises:
            ValueError: an invalid decision or a verdict other than A/B.
        """
        return f"<verdict>{_render_verdict(self.name, decision)}</verdict>"


@dataclass(frozen=True)
class PaS(_Pairwise):
    """J1 pairwise-scores judge: (x, a, b) -> (thought, s_a, s_b); verdict = argmax (tie if equal).

    Args:
        min_score, max_score: The score scale (inclusive; default 0-10 as in J1).

    ``parse`` returns ``Decision(verdict="A"|"B"|"tie", scores=(s_a, s_b))``. Invalid reasons:
    those of PaV (except ``invalid_verdict``) plus ``unparseable_score``, ``score_scale_mismatch``,
    ``score_out_of_range``; a missing score tag is ``missing_final_answer``.

    Raises:
        ValueError: non-finite scale or ``min_score >= max_score``.
    """

    min_score: float = 0
    max_score: float = 10
    name: ClassVar[str] = "pas"
    answer_tags: ClassVar[tuple[str, ...]] = SCORE_TAGS

    @property
    def score_scale(self) -> tuple[float, float]:
        """``(min_score, max_score)``."""
        return float(self.min_score), float(self.max_score)

    def __post_init__(self) -> None:
        check_scale(self.min_score, self.max_score)

    def _scale(self) -> str:
        return f"from {format_number(self.min_score)} to {format_number(self.max_score)}"

    def _answer(self) -> str:
        return (
            f"Then, after </think>, score each response {self._scale()} (higher is better; decimals "
            "allowed), exactly once: <score_A>x</score_A> <score_B>y</score_B>."
        )

    def _reminder(self) -> str:
        return "Think inside <think></think>, then answer <score_A>x</score_A> <score_B>y</score_B>."

    @property
    def forced_tags(self) -> tuple[str, ...]:
        return SCORE_TAGS

    def render_answer(self, decision: Decision) -> str:
        """``<score_A>x</score_A> <score_B>y</score_B>``.

        Raises:
            ValueError: an invalid decision, no two scores, or a score outside the scale.
        """
        return _render_scores(self.name, decision, self.min_score, self.max_score)

    def decide(self, tags: list[TagMatch], n_responses: int | None) -> Decision:
        sa, sb = _scores(tags, self.min_score, self.max_score)
        if sa is None or sb is None:
            raise ParseFailure("missing_final_answer")
        verdict = "A" if sa > sb else "B" if sb > sa else "tie"
        return Decision(valid=True, verdict=verdict, scores=(sa, sb))  # type: ignore[arg-type]


@dataclass(frozen=True)
class PaVS(_Pairwise):
    """J1 pairwise verdict + scores judge: (x, a, b) -> (thought, verdict, s_a, s_b).

    Args:
        min_score, max_score: The score scale (inclusive; default 0-10).
        require_scores: When True (default) both scores must be present (the format the prompt
            asks for); when False a verdict alone is valid (``scores=None``), but a single score
            without the other is still ``missing_scores``.

    ``parse`` returns ``Decision(verdict="A"|"B", scores=(s_a, s_b) or None)``; the verdict is the
    verdict tag's, even if the scores rank the other way. A missing verdict is
    ``missing_final_answer``; other invalid reasons as PaV and PaS, plus ``missing_scores``.

    Raises:
        ValueError: non-finite scale or ``min_score >= max_score``.
    """

    min_score: float = 0
    max_score: float = 10
    require_scores: bool = True
    name: ClassVar[str] = "pavs"
    answer_tags: ClassVar[tuple[str, ...]] = VERDICT_TAGS + SCORE_TAGS

    @property
    def score_scale(self) -> tuple[float, float]:
        """``(min_score, max_score)``."""
        return float(self.min_score), float(self.max_score)

    def __post_init__(self) -> None:
        check_scale(self.min_score, self.max_score)

    def _answer(self) -> str:
        return (
            "Then, after </think>, give exactly once your verdict, <verdict>A</verdict> if "
            "Assistant A is better or <verdict>B</verdict> if Assistant B is better, and a score "
            f"for each response from {format_number(self.min_score)} to "
            f"{format_number(self.max_score)} (higher is better): <score_A>x</score_A> "
            "<score_B>y</score_B>."
        )

    def _reminder(self) -> str:
        return (
            "Think inside <think></think>, then answer <verdict>A or B</verdict> "
            "<score_A>x</score_A> <score_B>y</score_B>."
        )

    @property
    def forced_tags(self) -> tuple[str, ...]:
        return ("verdict",) + SCORE_TAGS if self.require_scores else ("verdict",)

    def render_answer(self, decision: Decision) -> str:
        """``<verdict>A</verdict> <score_A>x</score_A> <score_B>y</score_B>`` (scores may be
        omitted when ``require_scores=False`` and the decision has none).

        Raises:
            ValueError: an invalid decision, a verdict other than A/B, or missing / out-of-range
                scores where they are required.
        """
        verdict = f"<verdict>{_render_verdict(self.name, decision)}</verdict>"
        if decision.scores is None and not self.require_scores:
            return verdict
        return f"{verdict} {_render_scores(self.name, decision, self.min_score, self.max_score)}"

    def decide(self, tags: list[TagMatch], n_responses: int | None) -> Decision:
        verdict = _verdict(tags)
        sa, sb = _scores(tags, self.min_score, self.max_score)
        if sa is None and sb is None and not self.require_scores:
            return Decision(valid=True, verdict=verdict)  # type: ignore[arg-type]
        if sa is None or sb is None:
            raise ParseFailure("missing_scores")
        return Decision(valid=True, verdict=verdict, scores=(sa, sb))  # type: ignore[arg-type]
