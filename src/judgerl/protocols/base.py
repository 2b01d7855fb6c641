"""The judge-protocol interface: build a prompt, parse the judge's output into a Decision."""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Literal, Sequence

from judgerl.text.codeblocks import MAX_TOOL_ROUNDS
from judgerl.text.untrusted import register_control_tags
from judgerl.types import Decision, Messages

ProtocolKind = Literal["pairwise", "pointwise", "listwise"]


class JudgeProtocol(ABC):
    """A judge format (J1: PaV, PaS, PaVS, PoS; TIR-Judge: pointwise, pairwise, listwise).

    Subclasses set ``name`` (canonical lower-case name), ``kind``, ``n_responses`` (2 for pairwise,
    1 for pointwise, None for listwise = any n >= 2) and ``tag_names`` (every answer tag an instance
    may read; defining the class registers them as control tags, which untrusted text never carries
    readable: :func:`judgerl.text.untrusted.neutralise_tags`). Scaled protocols override
    :attr:`score_scale`.
    """

    name: ClassVar[str]
    kind: ClassVar[ProtocolKind]
    n_responses: ClassVar[int | None]
    tag_names: ClassVar[tuple[str, ...]] = ()
    #: Whether tool-using judgments see the texts under judgment as variables (the response namespace,
    #: :mod:`judgerl.tools.namespace`); an option of :class:`~judgerl.protocols.common.TaggedProtocol`.
    namespace = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        names = cls.__dict__.get("tag_names")
        if names is None:
            answer = cls.__dict__.get("answer_tags")
            names = answer if isinstance(answer, tuple) else ()
            if names:
                cls.tag_names = names
        register_control_tags(names)

    @property
    def answer_tags(self) -> tuple[str, ...]:
        """The tags :meth:`parse` reads in the final-answer region (the first is the one forced)."""
        return self.tag_names

    @property
    def control_tags(self) -> tuple[str, ...]:
        """``think`` and :attr:`answer_tags`: the tags whose readable copy in untrusted text could steer
        this judge."""
        return ("think", *self.answer_tags)

    def quote_form(self, text: str, source: bool = False) -> str:
        """``text`` as the quoted-answer check reads it (:func:`judgerl.protocols.quoting.quoted_sources`,
        applied to the judge's output and, with ``source=True``, to every response and tool output). The check
        compares answer *tags*: a protocol whose answer is not in tags (the ``template`` protocol's answer
        pattern) marks each answer with one of its :attr:`control_tags` here -- in a source also every answer
        a copier would write after "cleaning" it (escapes, invisible characters, look-alikes). Tagged
        protocols: ``text`` unchanged. May raise :class:`~judgerl.protocols.parsing.ParseFailure` (the check
        then voids the decision with its reason)."""
        return text

    @property
    def answer_marker(self) -> str:
        """Text the judge writes right before its answer when the answer is not in tags (a template's
        ``answer_prefix``, ``"[RESULT] "``); ``""`` for tagged protocols. A response holding it followed by a value
        carries the judge's answer syntax (:mod:`judgerl.protocols.carriers`)."""
        return ""

    @property
    def score_scale(self) -> tuple[float, float] | None:
        """``(min_score, max_score)`` of the protocol's scores, or None when it writes no score."""
        return None

    def options(self) -> dict[str, Any]:
        """The protocol's options (its dataclass fields) as JSON-ready values, e.g. ``{"min_score": 0,
        "max_score": 9, "anti_hacking": False}``: with ``name`` they identify the protocol."""
        if not dataclasses.is_dataclass(self):
            return {}
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if isinstance(getattr(self, f.name), (str, int, float, bool, type(None)))}

    @abstractmethod
    def build(self, prompt: str, responses: Sequence[str], tools: bool = False,
              max_tool_rounds: int = MAX_TOOL_ROUNDS, rubric: str | None = None) -> Messages:
        """Chat messages asking the judge to think first, then answer in this protocol's tags.

        Args:
            prompt: The user instruction the responses answer.
            responses: The candidate responses, in the order they are shown (A, B, … / 1, 2, …).
            tools: Also tell the judge it may write ```python blocks that will be executed.
            max_tool_rounds: The judge's tool budget, stated in the tool instruction (executed blocks).
            rubric: Per-prompt criteria shown after the question in a ``[Rubric]`` section
                (rubric-conditioned judging); untrusted text, neutralised like the question. None or
                blank: no section.

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
