"""Shared helpers for reading a judge's raw output.

Rules every protocol follows (see docs in each protocol module for its tags):

1. **Code is not an answer.** The content of fenced blocks (```` ```python ```` code the judge wrote,
   ```` ```output ```` interpreter output inserted by the tool loop, or any other ```` ``` ```` block)
   is blanked before anything else is searched, so a ``<verdict>`` printed by code, or a ``</think>``
   inside a string literal, is never read. An unclosed fence (truncated output) runs to the end.
2. **Only the final-answer region counts.** When the output contains ``</think>`` the region is the
   text after the LAST ``</think>``; final tags written inside the thinking are ignored (they are
   often drafts, or quotes such as "[[B]]" from the responses under judgment). When there are no
   think tags at all the whole output (outside code blocks) is the region. When a ``<think>`` is
   opened after the last ``</think>`` and never closed the thinking runs to the end of the output:
   the decision is invalid with reason ``"unterminated_thinking"`` (a tag after an unclosed
   ``<think>`` cannot be told apart from a draft inside the thinking).
3. **Tags are read leniently, answers strictly.** Tag names match case-insensitively (ASCII only: a
   dotless ``ı`` or a long ``ſ`` makes no tag) and with
   whitespace inside the angle brackets (``<Verdict >``). A final tag whose closing tag is missing
   (e.g. cut by a stop string) is read up to the next tag or the end of its first non-empty line.
4. **One answer.** Several final tags that agree are fine; tags that disagree make the decision
   invalid with ``"conflicting_answers"`` -- never a guess.

Invalid reasons used by judgerl protocols are listed in :data:`INVALID_REASONS`.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from typing import Iterable, Sequence, TypeVar

from judgerl.text.codeblocks import blank, mask_code_blocks, mask_spans  # noqa: F401 (re-exported)
from judgerl.text.confusables import strip_invisible  # noqa: F401 (re-exported)
from judgerl.text.untrusted import control_tags, neutralise_tags, restore_tags  # noqa: F401 (re-exported)

T = TypeVar("T")

#: Every ``Decision.invalid_reason`` a judgerl protocol can return, with its meaning.
INVALID_REASONS: dict[str, str] = {
    "empty_output": "the judge produced no text (or only whitespace)",
    "unterminated_thinking": "a <think> block is opened and never closed, so there is no final answer",
    "missing_final_answer": "no final-answer tag in the final-answer region",
    "conflicting_answers": "several final-answer tags that disagree",
    "invalid_verdict": "a verdict tag whose content is not A or B",
    "unparseable_score": "a score tag whose content is not a number",
    "score_scale_mismatch": "a score written as x/y where y is not the protocol's maximum score",
    "score_out_of_range": "a score outside the protocol's [min_score, max_score]",
    "missing_scores": "PaVS: the verdict is present but one or both scores are missing",
    "invalid_ranking": "listwise: a best answer that is not a response number, or a ranking that is "
    "not a permutation of the response numbers",
    "index_out_of_range": "a response number outside 1..n",
    "answer_pattern_timeout": "template protocol: the answer pattern ran past its timeout on the judge output or "
    "a response (catastrophic backtracking on adversarial text); the quoted-answer check could not run",
}


class ParseFailure(Exception):
    """Raised inside judgerl parsers to abort with an invalid reason (never escapes ``parse``).

    Attributes:
        reason: One of the keys of :data:`INVALID_REASONS`.
    """

    def __init__(self, reason: str) -> None:
        if reason not in INVALID_REASONS:
            raise ValueError(f"unknown invalid reason {reason!r}; add it to INVALID_REASONS")
        super().__init__(reason)
        self.reason = reason


# Tag names match ASCII-case-insensitively only: Unicode case folding would read ``<thınk>`` (dotless
# ı) or ``<ſcore>`` (long s) as a tag whose name is then not among the listed ones.
_THINK_OPEN_RE = re.compile(r"<\s*(?a:think)\s*>", re.IGNORECASE)
_THINK_CLOSE_RE = re.compile(r"<\s*/\s*(?a:think)\s*>", re.IGNORECASE)
_THINK_ANY_RE = re.compile(r"<\s*(?:/\s*)?(?a:think)\s*>", re.IGNORECASE)


@dataclass(frozen=True)
class AnswerRegion:
    """Where a judge's final answer may be.

    Attributes:
        text: The final-answer region with code blocks blanked (see :func:`mask_code_blocks`).
        start: Offset of ``text`` in the original output (characters).
        thought: The thinking (content of the think blocks, think tags removed, stripped); None if the
            output has no think tags (protocols then fill it from the text before the first tag).
    """

    text: str
    start: int
    thought: str | None


def answer_region(output: str) -> AnswerRegion:
    """Split a raw judge output into thinking and the final-answer region (rules 1-2 above).

    Args:
        output: The judge's full generated text (a trajectory's ``text`` for tool-using judges).

    Raises:
        ParseFailure: ``"empty_output"`` for blank output, ``"unterminated_thinking"`` when a
            ``<think>`` is opened after the last ``</think>`` and never closed.
    """
    if not output.strip():
        raise ParseFailure("empty_output")
    masked = mask_code_blocks(output)
    closes = list(_THINK_CLOSE_RE.finditer(masked))
    start = closes[-1].end() if closes else 0
    if _THINK_OPEN_RE.search(masked, start):
        raise ParseFailure("unterminated_thinking")
    if not closes:
        return AnswerRegion(text=masked, start=0, thought=None)
    thought = _THINK_ANY_RE.sub(" ", output[: closes[-1].start()])
    return AnswerRegion(text=masked[start:], start=start, thought=_squash(thought))


def thought_of(output: str) -> str | None:
    """Best-effort thinking text of an output that failed to parse (never raises).

    For an unterminated ``<think>`` this is the text after it; otherwise as :func:`answer_region`.
    """
    try:
        return answer_region(output).thought
    except ParseFailure:
        pass
    if not output.strip():
        return None
    return _squash(_THINK_ANY_RE.sub(" ", output))


def _squash(text: str) -> str | None:
    text = text.strip()
    return text or None


@dataclass(frozen=True)
class TagMatch:
    """One final-answer tag found in a region.

    Attributes:
        name: The tag name as listed by the caller (canonical case, e.g. ``"score_A"``).
        content: The text between the tags, stripped (for an unclosed tag: see rule 3).
        start: Offset of the opening tag in the region.
        closed: Whether the closing tag was present.
    """

    name: str
    content: str
    start: int
    closed: bool


@functools.lru_cache(maxsize=64)
def _tag_token_re(names: tuple[str, ...]) -> re.Pattern[str]:
    """Regex matching ``<name>`` / ``</name>`` for lower-case ``names`` (group 1: "/", group 2: name).

    Names match ASCII-case-insensitively only (``<VERDICT>``, not ``<verdıct>``), so ``group(2).lower()``
    is always one of ``names``."""
    alts = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"<\s*(?:(/)\s*)?((?a:{alts}))\s*>", re.IGNORECASE)


def find_tags(region: str, names: Sequence[str]) -> list[TagMatch]:
    """Find every ``<name>…</name>`` (any of ``names``) in ``region``, in order of appearance.

    Tag names match case-insensitively, with optional whitespace inside the brackets. An opening tag
    followed by another tag token (or the end) before its closing tag is *unclosed*: its content is
    the first non-empty line of the text up to that next tag token. Stray closing tags are ignored.
    Nested tags of the listed names are not supported (the inner opening tag ends the outer one).

    Args:
        region: Text to search (normally :attr:`AnswerRegion.text`).
        names: Tag names, e.g. ``("verdict", "preference")``.

    Returns:
        One :class:`TagMatch` per opening tag found.
    """
    if not names:
        raise ValueError("find_tags needs at least one tag name")
    canon = {n.lower(): n for n in names}
    tokens = list(_tag_token_re(tuple(sorted(canon))).finditer(region))
    found: list[TagMatch] = []
    for i, tok in enumerate(tokens):
        if tok.group(1):  # a closing tag: consumed by its opening tag or stray
            continue
        name = tok.group(2).lower()
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        end = nxt.start() if nxt is not None else len(region)
        body = region[tok.end() : end]
        closed = nxt is not None and bool(nxt.group(1)) and nxt.group(2).lower() == name
        if closed:
            content = body.strip()
        else:
            lines = [ln.strip() for ln in body.splitlines() if ln.strip()]
            content = lines[0] if lines else ""
        found.append(TagMatch(name=canon[name], content=content, start=tok.start(), closed=closed))
    return found


def agree(values: Iterable[T]) -> T:
    """The common value of several parsed final answers.

    Raises:
        ParseFailure: ``"missing_final_answer"`` when there are no values, ``"conflicting_answers"``
            when they are not all equal.
    """
    vals = list(values)
    if not vals:
        raise ParseFailure("missing_final_answer")
    first = vals[0]
    if any(v != first for v in vals[1:]):
        raise ParseFailure("conflicting_answers")
    return first


# Wrappers a judge puts around a short answer: [[A]], (A), **A**, "A", `A`, trailing period.
_WRAP_LEFT = " \t\r\n[({*\"'`"
_WRAP_RIGHT = _WRAP_LEFT + "])}.:;!"
_LABEL_RE = re.compile(
    r"^(?:assistant|response|output|answer|model|candidate|option)\s*(?:[-_#:]\s*)?", re.IGNORECASE
)


def strip_wrappers(text: str) -> str:
    """Remove brackets, bold markers, quotes and trailing punctuation around a short answer.

    ``"[[A]]" -> "A"``, ``"**B**." -> "B"``, ``"(a)" -> "a"``. Inner text is untouched.
    """
    prev = None
    while prev != text:
        prev = text
        text = text.lstrip(_WRAP_LEFT).rstrip(_WRAP_RIGHT)
    return text


def parse_label(text: str) -> str:
    """Normalise a label such as ``"Assistant A"``, ``"[[B]]"``, ``"Response 2"`` to ``"A"``/``"2"``.

    Removes wrappers (:func:`strip_wrappers`) and one leading word among assistant / response /
    output / answer / model / candidate / option; the result is upper-cased. Returns ``""`` when
    nothing is left. Never raises.
    """
    text = strip_wrappers(text)
    text = _LABEL_RE.sub("", text, count=1)
    return strip_wrappers(text).upper()


def parse_verdict(text: str) -> str:
    """Parse the content of a pairwise verdict tag into ``"A"`` or ``"B"``.

    Accepts ``A``, ``b``, ``[[A]]``, ``Assistant B``, ``Response A``, ``**A**`` and the like.

    Raises:
        ParseFailure: ``"invalid_verdict"`` for anything else (including "tie", "A and B",
            "Assistant A is better").
    """
    label = parse_label(text)
    if label not in ("A", "B"):
        raise ParseFailure("invalid_verdict")
    return label


_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)"
_SCORE_RE = re.compile(
    rf"^(?:score\s*(?:[:=]\s*)?)?({_NUMBER})\s*(?:(?:/|out\s+of)\s*({_NUMBER}))?$", re.IGNORECASE
)


def parse_score(text: str, min_score: float, max_score: float) -> float:
    """Parse a score such as ``"7"``, ``"7.5"``, ``"7/10"``, ``"8 out of 10"``, ``"[[8]]"``.

    Args:
        text: Tag content.
        min_score: Smallest valid score (inclusive).
        max_score: Largest valid score (inclusive); a denominator, if written, must equal it.

    Returns:
        The score as a float.

    Raises:
        ParseFailure: ``"unparseable_score"`` (not a number), ``"score_scale_mismatch"`` (``x/y``
            with ``y != max_score``), ``"score_out_of_range"`` (outside ``[min_score, max_score]``).
    """
    m = _SCORE_RE.match(strip_wrappers(text).replace("**", ""))
    if m is None:
        raise ParseFailure("unparseable_score")
    value = float(m.group(1))
    if not math.isfinite(value):  # pragma: no cover - the regex only admits finite decimals
        raise ParseFailure("unparseable_score")
    if m.group(2) is not None and float(m.group(2)) != float(max_score):
        raise ParseFailure("score_scale_mismatch")
    if not min_score <= value <= max_score:
        raise ParseFailure("score_out_of_range")
    return value


def format_number(x: float) -> str:
    """``10.0 -> "10"``, ``2.5 -> "2.5"`` (for prompts)."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))
