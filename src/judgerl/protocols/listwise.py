"""Listwise judge protocol: choose the best of n responses, or rank them (TIR-Judge).

TIR-Judge (Xu et al., 2025) adds a listwise format to pointwise and pairwise: the judge sees n
responses and names the best one (``mode="best"``) or orders all of them (``mode="rank"``).
Responses are numbered 1..n in the prompt and in the answer; the Decision holds 0-based indices.

Final-answer tags (case-insensitive, read only after the last ``</think>``):

* ``mode="best"``: ``<best>2</best>`` (also ``Response 2``, ``[[2]]``) -> ``ranking=(1,)``.
* ``mode="rank"``: ``<ranking>2 > 1 > 3</ranking>`` (separators ``>``, ``,`` or ``;``; items may be
  written ``Response 2``, ``[2]``) -> ``ranking=(1, 0, 2)``. It must be a permutation: every
  response exactly once, no ties.

When ``parse`` gets ``n_responses`` the numbers must lie in 1..n (else ``"index_out_of_range"``)
and a ranking must list all n; without it a ranking must be a permutation of 1..k for its own
length k >= 2. Other invalid reasons: ``empty_output``, ``unterminated_thinking``,
``missing_final_answer``, ``invalid_ranking``, ``conflicting_answers``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar, Literal, Sequence

from judgerl.protocols.common import (
    BIAS_INSTRUCTION,
    TaggedProtocol,
    answer_block,
    check_inputs,
    system_message,
    user_message,
)
from judgerl.protocols.parsing import ParseFailure, TagMatch, agree, parse_label
from judgerl.text.codeblocks import MAX_TOOL_ROUNDS
from judgerl.types import Decision, Messages

_SEP_RE = re.compile(r"[>,;]")


def _index(text: str, n: int | None) -> int:
    """1-based response number in ``text`` -> 0-based index (ParseFailure if not a valid number)."""
    label = parse_label(text)
    # decimal digits only (``²`` and ``①`` are "digits" to ``str.isdigit`` but no ``int``), and few of them
    # (``int()`` refuses more than 4,300): a judge's answer must never make the parser raise
    if not label.isdecimal():
        raise ParseFailure("invalid_ranking")
    digits = label.lstrip("0") or "0"
    if len(digits) > 6:
        raise ParseFailure("index_out_of_range")
    k = int(digits)
    if k < 1 or (n is not None and k > n):
        raise ParseFailure("index_out_of_range")
    return k - 1


def _ranking(text: str, n: int | None) -> tuple[int, ...]:
    order = tuple(_index(item, n) for item in _SEP_RE.split(text))
    expected = n if n is not None else len(order)
    if len(order) < 2 or sorted(order) != list(range(expected)):
        raise ParseFailure("invalid_ranking")
    return order


@dataclass(frozen=True)
class Listwise(TaggedProtocol):
    """Listwise judge over n >= 2 responses (TIR-Judge).

    Args:
        mode: ``"best"`` (name the best response) or ``"rank"`` (order all responses).

    ``parse`` returns ``Decision(ranking=...)`` with 0-based indices, best first (``best`` mode:
    a 1-tuple).

    Raises:
        ValueError: unknown ``mode``.
    """

    mode: Literal["best", "rank"] = "best"
    name: ClassVar[str] = "listwise"
    kind: ClassVar[str] = "listwise"
    n_responses: ClassVar[int | None] = None
    tag_names: ClassVar[tuple[str, ...]] = ("best", "ranking")

    def __post_init__(self) -> None:
        if self.mode not in ("best", "rank"):
            raise ValueError(f"listwise mode must be 'best' or 'rank', got {self.mode!r}")

    @property
    def answer_tags(self) -> tuple[str, ...]:  # type: ignore[override]
        return ("best",) if self.mode == "best" else ("ranking",)

    def build(self, prompt: str, responses: Sequence[str], tools: bool = False,
              max_tool_rounds: int = MAX_TOOL_ROUNDS, rubric: str | None = None) -> Messages:
        """[system, user] messages showing the question (and ``rubric``) and Response 1..n in order.

        Raises:
            TypeError: non-str prompt / responses / rubric.
            ValueError: fewer than 2 responses.
        """
        items = check_inputs(self.name, prompt, responses, None)
        n = len(items)
        task = (
            f"You are an impartial judge. Given a user question and {n} numbered responses from AI "
            "assistants, compare how well each follows the user's instructions and how helpful "
            "and correct it is. " + BIAS_INSTRUCTION
        )
        if self.mode == "best":
            answer = (
                "Then, after </think>, give the number of the best response exactly once: "
                f"<best>k</best> with k from 1 to {n}."
            )
            reminder = f"Think inside <think></think>, then answer <best>k</best> (k from 1 to {n})."
        else:
            example = " > ".join(str(i) for i in [2, 1, *range(3, n + 1)])
            answer = (
                f"Then, after </think>, rank all {n} responses from best to worst exactly once, "
                f"each number once, e.g. <ranking>{example}</ranking>."
            )
            reminder = (
                f"Think inside <think></think>, then answer <ranking>…</ranking> with all {n} "
                "numbers, best first."
            )
        blocks = [answer_block(f"Response {i}", r) for i, r in enumerate(items, start=1)]
        return [system_message(task, answer, tools, self.anti_hacking, max_tool_rounds, self.namespace_kind,
                           self.measures),
                user_message(prompt, blocks, reminder, rubric)]

    def render_answer(self, decision: Decision) -> str:
        """``<best>k</best>`` (1-based) or ``<ranking>2 > 1 > 3</ranking>``.

        Raises:
            ValueError: an invalid decision, no ranking, or (rank mode) a ranking that is not a
                permutation of 0..n-1.
        """
        r = decision.ranking
        if not decision.valid or not r:
            raise ValueError(f"listwise: cannot render {decision!r}: needs a valid decision with a ranking")
        if self.mode == "best":
            return f"<best>{r[0] + 1}</best>"
        if sorted(r) != list(range(len(r))) or len(r) < 2:
            raise ValueError(f"listwise: ranking {r!r} is not a permutation of 0..{len(r) - 1}")
        return "<ranking>" + " > ".join(str(i + 1) for i in r) + "</ranking>"

    def decide(self, tags: list[TagMatch], n_responses: int | None) -> Decision:
        if self.mode == "best":
            best = agree(_index(t.content, n_responses) for t in tags)
            return Decision(valid=True, ranking=(best,))
        return Decision(valid=True, ranking=agree(_ranking(t.content, n_responses) for t in tags))
