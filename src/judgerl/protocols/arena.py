"""Arena pairwise protocol: a five-level preference label, as in Arena-Hard.

Arena-Hard-Auto (Li et al., 2024, "From Crowdsourced Data to High-Quality Benchmarks: Arena-Hard
and BenchBuilder Pipeline", arXiv:2406.11939; code: github.com/lmarena/arena-hard-auto) asks its
judge for one of five labels, ``[[A>>B]]`` (A is significantly better), ``[[A>B]]`` (slightly
better), ``[[A=B]]`` (tie), ``[[B>A]]``, ``[[B>>A]]``, so that a clear win weighs more than a
narrow one in the win rate (:mod:`judgerl.arena.scores`). judgerl asks for the label inside the
verdict tag, after the thinking, like every other protocol::

    <think>…</think>
    <verdict>[[A>>B]]</verdict>

Parsing (case-insensitive, whitespace ignored, read only after the last ``</think>``): the five
labels, their mirrored spellings (``B<<A`` = ``A>>B``, ``A<B`` = ``B>A``, ``B=A`` = ``A=B``), ``≫``
/ ``≪`` for ``>>`` / ``<<``, ``tie`` for ``A=B``, with optional wrappers (``[[…]]``, ``**…**``,
quotes). Answers are strict: a bare ``A`` or ``B`` (no strength), ``A>>>B`` or ``A>A`` are
``"invalid_verdict"``. The :class:`~judgerl.types.Decision` carries the canonical label in
``label`` and the coarse verdict (``A`` for ``A>>B`` / ``A>B``, ``tie`` for ``A=B``, ``B`` for
``B>A`` / ``B>>A``) in ``verdict``, so every pairwise consumer (eval metrics, rewards) reads an arena
judgment like a PaV one.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import ClassVar

from judgerl.protocols.pairwise import VERDICT_TAGS, _Pairwise
from judgerl.protocols.parsing import ParseFailure, TagMatch, agree, strip_wrappers
from judgerl.types import Decision

#: The five canonical labels, from "A much better" to "B much better".
ARENA_LABELS: tuple[str, ...] = ("A>>B", "A>B", "A=B", "B>A", "B>>A")
#: The coarse pairwise verdict of each label.
LABEL_VERDICT: dict[str, str] = {"A>>B": "A", "A>B": "A", "A=B": "tie", "B>A": "B", "B>>A": "B"}
#: The label of a plain verdict (used to render a decision that has no label).
VERDICT_LABEL: dict[str, str] = {"A": "A>B", "B": "B>A", "tie": "A=B"}

_LABEL_RE = re.compile(r"^([AB])(>>|>|=|<<|<)([AB])$")


def parse_arena_label(text: str) -> str:
    """Parse the content of an arena verdict tag into one of :data:`ARENA_LABELS`.

    ``"[[A>>B]]"`` -> ``"A>>B"``, ``"b < a"`` -> ``"A>B"``, ``"A ≫ B"`` -> ``"A>>B"``, ``"tie"`` ->
    ``"A=B"``.

    Raises:
        ParseFailure: ``"invalid_verdict"`` for anything else (a bare ``A``, ``A>>>B``, ``A>A``,
            ``A is better``, an empty tag).
    """
    t = unicodedata.normalize("NFKC", strip_wrappers(text))
    t = "".join(t.split()).upper().replace("≫", ">>").replace("≪", "<<")
    t = strip_wrappers(t)
    if t == "TIE":
        return "A=B"
    m = _LABEL_RE.match(t)
    if m is None or m.group(1) == m.group(3):
        raise ParseFailure("invalid_verdict")
    left, op, right = m.groups()
    if op == "=":
        return "A=B"
    winner, loser = (left, right) if op.startswith(">") else (right, left)
    return f"{winner}{'>>' if len(op) == 2 else '>'}{loser}"


@dataclass(frozen=True)
class Arena(_Pairwise):
    """Arena-Hard-style pairwise judge: (x, a, b) -> (thought, five-level label).

    ``parse`` returns ``Decision(verdict="A"|"B"|"tie", label="A>>B"|"A>B"|"A=B"|"B>A"|"B>>A")``.
    Invalid reasons: ``empty_output``, ``unterminated_thinking``, ``missing_final_answer``,
    ``invalid_verdict``, ``conflicting_answers`` (two tags with different labels).

    Args:
        anti_hacking: See :class:`judgerl.protocols.common.TaggedProtocol`.
    """

    name: ClassVar[str] = "arena"
    answer_tags: ClassVar[tuple[str, ...]] = VERDICT_TAGS

    # The examples write [[X]], never a real label inside the tags: a small judge that copies its
    # instructions must not produce a valid verdict by doing so.
    def _answer(self) -> str:
        return (
            "Then, after </think>, give your verdict exactly once as <verdict>[[X]]</verdict>, where X is "
            "A>>B if A is much better, A>B if A is better, A=B if they are about equal, B>A if B is better, "
            "or B>>A if B is much better."
        )

    def _reminder(self) -> str:
        return "Think inside <think></think>, then answer <verdict>[[X]]</verdict> with X one of A>>B, A>B, A=B, B>A, B>>A."

    def decide(self, tags: list[TagMatch], n_responses: int | None) -> Decision:
        label = agree(parse_arena_label(t.content) for t in tags)
        return Decision(valid=True, verdict=LABEL_VERDICT[label], label=label)  # type: ignore[arg-type]

    def render_answer(self, decision: Decision) -> str:
        """``<verdict>[[A>>B]]</verdict>``; a decision without a label renders its verdict's plain
        label (A -> ``A>B``, B -> ``B>A``, tie -> ``A=B``).

        Raises:
            ValueError: an invalid decision, or neither a known label nor a verdict.
        """
        label = decision.label
        if label is None and decision.verdict is not None:
            label = VERDICT_LABEL.get(decision.verdict)
        if not decision.valid or label not in LABEL_VERDICT:
            raise ValueError(f"arena: cannot render {decision!r}: needs a valid decision with a label in "
                             f"{ARENA_LABELS} or a verdict")
        if decision.verdict is not None and LABEL_VERDICT[label] != decision.verdict:
            raise ValueError(f"arena: label {label!r} contradicts verdict {decision.verdict!r}")
        return f"<verdict>[[{label}]]</verdict>"
