"""Pointwise judge protocol PoS: (x, a) -> (thought, score).

J1 (Whitehouse et al., 2025): PoS scores one response from 0 to 10 and is position-free by
construction; TIR-Judge's pointwise format uses the same ``<score>`` tag. The scale is
configurable: the judge-as-reward study scores 0-9 (so its regression reward has
M_max = (9 - 0)^2 = 81; see :mod:`judgerl.rewards.regression`).

Final-answer tag (case-insensitive, read only after the last ``</think>``): ``<score>7</score>``;
``7.5``, ``7/10`` (the denominator must equal ``max_score``), ``8 out of 10``, ``[[8]]``,
``**8**`` are read as numbers. Several agreeing ``<score>`` tags are fine; disagreeing ones are
``"conflicting_answers"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Sequence

from judgerl.protocols.common import (
    TaggedProtocol,
    answer_block,
    check_inputs,
    check_scale,
    system_message,
    user_message,
)
from judgerl.protocols.parsing import TagMatch, agree, format_number, parse_score
from judgerl.text.codeblocks import MAX_TOOL_ROUNDS
from judgerl.types import Decision, Messages

_TASK = (
    "You are an impartial judge. Given a user question and the response of an AI assistant, rate "
    "how well the response follows the user's instructions and how helpful and correct it is. "
    "Do not let the response's length influence you."
)


@dataclass(frozen=True)
class PoS(TaggedProtocol):
    """Pointwise-score judge (J1 PoS, TIR-Judge pointwise).

    Args:
        min_score: Lowest score (inclusive), default 0.
        max_score: Highest score (inclusive), default 10; e.g. 9 for the judge-as-reward 0-9 scale.

    ``build(prompt, [response])`` shows one response; ``parse`` returns ``Decision(scores=(s,))``
    with ``verdict=None``. Invalid reasons: ``empty_output``, ``unterminated_thinking``,
    ``missing_final_answer``, ``unparseable_score``, ``score_scale_mismatch``,
    ``score_out_of_range``, ``conflicting_answers``.

    Raises:
        ValueError: non-finite scale or ``min_score >= max_score``.
    """

    min_score: float = 0
    max_score: float = 10
    name: ClassVar[str] = "pos"
    kind: ClassVar[str] = "pointwise"
    n_responses: ClassVar[int | None] = 1
    answer_tags: ClassVar[tuple[str, ...]] = ("score",)

    @property
    def score_scale(self) -> tuple[float, float]:
        """``(min_score, max_score)``."""
        return float(self.min_score), float(self.max_score)

    def __post_init__(self) -> None:
        check_scale(self.min_score, self.max_score)

    def build(self, prompt: str, responses: Sequence[str], tools: bool = False,
              max_tool_rounds: int = MAX_TOOL_ROUNDS, rubric: str | None = None) -> Messages:
        """[system, user] messages showing the question (and ``rubric``) and the single response.

        Raises:
            TypeError: non-str prompt / responses / rubric.
            ValueError: ``len(responses) != 1``.
        """
        (response,) = check_inputs(self.name, prompt, responses, 1)
        lo, hi = format_number(self.min_score), format_number(self.max_score)
        answer = (
            f"Then, after </think>, give a score from {lo} to {hi} (higher is better) exactly "
            "once: <score>x</score>."
        )
        return [
            system_message(_TASK, answer, tools, self.anti_hacking, max_tool_rounds, self.namespace_kind,
                           self.measures),
            user_message(
                prompt,
                [answer_block("Assistant's Answer", response)],
                f"Think inside <think></think>, then answer <score>x</score> with x from {lo} to {hi}.",
                rubric,
            ),
        ]

    def render_answer(self, decision: Decision) -> str:
        """``<score>x</score>``.

        Raises:
            ValueError: an invalid decision, no score, or a score outside the scale.
        """
        if not decision.valid or not decision.scores or len(decision.scores) != 1:
            raise ValueError(f"pos: cannot render {decision!r}: needs a valid decision with one score")
        s = decision.scores[0]
        if not self.min_score <= s <= self.max_score:
            raise ValueError(f"pos: score {s} outside [{self.min_score}, {self.max_score}]")
        return f"<score>{format_number(s)}</score>"

    def decide(self, tags: list[TagMatch], n_responses: int | None) -> Decision:
        score = agree(parse_score(t.content, self.min_score, self.max_score) for t in tags)
        return Decision(valid=True, scores=(score,))
