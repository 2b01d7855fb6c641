"""The judge-protocol interface: build a prompt, parse the judge's output into a Decision."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar, Literal, Sequence

from judgerl.types import Decision, Messages

ProtocolKind = Literal["pairwise", "pointwise", "listwise"]


class JudgeProtocol(ABC):
    """A judge format (J1: PaV, PaS, PaVS, PoS; TIR-Judge: pointwise, pairwise, listwise).

    Subclasses set ``name`` (canonical lower-case name), ``kind`` and ``n_responses``
    (2 for pairwise, 1 for pointwise, None for listwise = any n >= 2).
    """

    name: ClassVar[str]
    kind: ClassVar[ProtocolKind]
    n_responses: ClassVar[int | None]

    @abstractmethod
    def build(self, prompt: str, responses: Sequence[str], tools: bool = False) -> Messages:
        """Chat messages asking the judge to think first, then answer in this protocol's tags.

        Args:
            prompt: The user instruction the responses answer.
            responses: The candidate responses, in the order they are shown (A, B, … / 1, 2, …).
            tools: Also tell the judge it may write ```python blocks that will be executed.

        Raises:
            ValueError: wrong number of responses for this protocol.
        """

    @abstractmethod
    def parse(self, text: str, n_responses: int | None = None) -> Decision:
        """Parse the judge's full output (thinking + final answer) into a typed Decision.

        Only the judge's own final answer region is read; verdict-like text inside the thinking
        or quoted from the responses is ignored. Never raises on bad model output: returns
        ``Decision.invalid(reason)``.

        Args:
            text: The judge's generated text (for tool-using judges: ``Trajectory.text``).
            n_responses: How many responses the prompt showed. Optional; listwise protocols use it
                to check that a best index / ranking refers to responses 1..n. Generic callers may
                always pass ``len(responses)``.

        Raises:
            ValueError: ``n_responses`` is impossible for this protocol (a caller error).
        """

    @abstractmethod
    def render_answer(self, decision: Decision) -> str:
        """The final-answer tags that :meth:`parse` reads back as ``decision`` (its inverse).

        Used to write SFT targets and templated trajectories. ``parse(render_judgment(t, d))``
        returns ``d`` (with ``thought=t``).

        Raises:
            ValueError: ``decision`` is invalid or does not fit this protocol (e.g. a PoS decision
                without a score, a score outside the scale).
        """

    def render_judgment(self, thought: str, decision: Decision) -> str:
        """A complete judgment: ``<think>thought</think>`` then :meth:`render_answer`."""
        return f"<think>{thought}</think>\n{self.render_answer(decision)}"

    @abstractmethod
    def force_suffix(self, text: str) -> str:
        """Text to append to an unfinished judgment ``text`` to force its final answer.

        Closes an open code span and an open ``<think>``, then opens this protocol's first answer
        tag, so that a few more generated tokens give the decision (answer forcing; the same idea
        as s1's budget forcing, Muennighoff et al., 2025).
        """

    @property
    @abstractmethod
    def forced_stop(self) -> tuple[str, ...]:
        """Stop strings for the short generation after :meth:`force_suffix`."""

    @abstractmethod
    def finish_forced(self, generated: str) -> str:
        """``generated`` (text after the forced suffix, stop string cut) completed with the
        closing tag the stop string removed, if any."""
