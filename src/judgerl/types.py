"""Core records shared by every part of judgerl.

The data flow is one-directional (see docs/architecture.md)::

    records on disk --loaders--> PreferencePair --protocol.build--> Messages
        --backend.generate--> Completion --(tool loop)--> Trajectory
        --protocol.parse--> Decision --metrics / rewards--> numbers

All records are frozen dataclasses so they can be shared between threads and used as dict keys
where hashable.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Mapping, Sequence

#: One chat message, OpenAI style: ``{"role": "system"|"user"|"assistant", "content": str}``.
Message = Mapping[str, str]
#: A chat prompt. If the last message has role ``"assistant"`` the backend *continues* that
#: message (prefill) instead of opening a new assistant turn; the tool loop relies on this.
Messages = Sequence[Message]

Verdict = Literal["A", "B", "tie"]


@dataclass(frozen=True)
class PreferencePair:
    """One canonical preference pair.

    Attributes:
        id: Stable identifier, unique inside one dataset (used for resuming runs).
        prompt: The user instruction / conversation the responses answer (plain text).
        chosen: The preferred response. For ``tie=True`` simply the first response.
        rejected: The dispreferred response. For ``tie=True`` simply the second response.
        source: Dataset subset / source name used for per-source breakdowns (e.g. ``"llmbar/natural"``).
        tie: True when annotators judged both responses equally good (no gold preference).
        chosen_score: Optional gold pointwise score of ``chosen`` (scale given by the dataset).
        rejected_score: Optional gold pointwise score of ``rejected``.
        meta: Free-form extra fields kept from the original record (JSON-serialisable).
        rubric: Optional per-prompt rubric shown to the judge (rubric-conditioned judging; read from a
            record field with ``load_pairs(..., rubric_field=...)`` / ``judgerl eval --rubric FIELD``).
    """

    id: str
    prompt: str
    chosen: str
    rejected: str
    source: str = ""
    tie: bool = False
    chosen_score: float | None = None
    rejected_score: float | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    rubric: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["meta"] = dict(self.meta)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "PreferencePair":
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


@dataclass(frozen=True)
class Decision:
    """A parsed judge output.

    Exactly one of the payload fields is meaningful, depending on the protocol kind:

    * pairwise: ``verdict`` in {"A", "B"} (``"tie"`` only for score protocols with equal scores),
      ``scores`` = (s_a, s_b) for PaS / PaVS;
    * pointwise: ``scores`` = (s,);
    * listwise: ``ranking`` = 0-based indices of the responses, best first (``best`` = ranking[0]).

    ``valid`` is False when the output could not be parsed; ``invalid_reason`` then says why
    (e.g. ``"missing_final_answer"``, ``"conflicting_answers"``, ``"score_out_of_range"``).
    Invalid decisions are never turned into a tie or a default by judgerl.

    ``label`` is an optional finer-grained answer of protocols that have one: the arena protocol's
    five-level preference ``"A>>B"``, ``"A>B"``, ``"A=B"``, ``"B>A"``, ``"B>>A"`` (with the
    coarse ``verdict`` A / A / tie / B / B next to it). None for every other protocol, and then
    left out of :meth:`to_dict`, so records of other protocols are unchanged.

    ``quoted``: on a ``quoted_answer`` void only, the 0-based indices of the responses the final answer
    may be copied from (``()``: only from tool output); None otherwise, and then left out of
    :meth:`to_dict`. Consumers that would otherwise *drop* a void (the arena drops a prompt with an
    invalid game) score it as the quoted response's worst outcome instead, so a void never pays a
    response more than its loss.
    """

    valid: bool
    verdict: Verdict | None = None
    scores: tuple[float, ...] | None = None
    ranking: tuple[int, ...] | None = None
    invalid_reason: str | None = None
    thought: str | None = None
    label: str | None = None
    quoted: tuple[int, ...] | None = None

    @classmethod
    def invalid(cls, reason: str, thought: str | None = None) -> "Decision":
        return cls(valid=False, invalid_reason=reason, thought=thought)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for k in ("scores", "ranking", "quoted"):
            if d[k] is not None:
                d[k] = list(d[k])
        for k in ("label", "quoted"):
            if d[k] is None:
                del d[k]
        return d


#: Why a generation ended. ``stop``: EOS or a stop string; ``length``: ``max_new_tokens`` reached;
#: ``content_filter``: the server filtered the answer; ``error``: the request failed (the text is
#: empty and ``error`` says why); ``prompt_too_long``: the prompt plus ``max_new_tokens`` does not fit
#: the model's context, so nothing was generated.
FinishReason = Literal["stop", "length", "content_filter", "error", "prompt_too_long"]
#: Finish reasons of a completion that a later run should try again (never cached as final).
RETRYABLE_FINISH_REASONS = frozenset({"content_filter", "error"})


@dataclass(frozen=True)
class Completion:
    """One generated completion.

    Attributes:
        text: Generated text only (the prompt is not included); stop strings are cut off. Empty for
            a failed or refused generation.
        prompt_tokens: Number of prompt tokens (after the chat template).
        completion_tokens: Number of generated tokens.
        finish_reason: See :data:`FinishReason`.
        error: For ``error`` / ``prompt_too_long`` / ``content_filter``: a one-line message (e.g.
            ``"prompt has 12388 tokens + max_new_tokens 512 > context 8192 of hf/..."``); else None.
    """

    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: FinishReason = "stop"
    error: str | None = None

    @property
    def retryable(self) -> bool:
        """True when a later run should generate this prompt again (API error, filtered answer)."""
        return self.finish_reason in RETRYABLE_FINISH_REASONS


SegmentKind = Literal["model", "code", "tool", "forced"]


@dataclass(frozen=True)
class Segment:
    """A piece of a tool-integrated trajectory.

    ``kind``: ``"model"`` (reasoning text written by the judge), ``"code"`` (a code block the judge
    wrote; also model-generated), ``"tool"`` (interpreter output inserted by judgerl) or
    ``"forced"`` (the answer-forcing prefill inserted by judgerl: closing fences/think, the answer
    tag). ``tool`` and ``forced`` text is not the model's and is masked from the training loss;
    ``tool`` text is also never read as the judge's answer (the forced prefill is: it frames it). ``token_start``/``token_end`` are offsets (in tokens of the judge's
    tokenizer, end exclusive) into the full completion, i.e. everything after the prompt.
    """

    kind: SegmentKind
    text: str
    token_start: int = 0
    token_end: int = 0


@dataclass(frozen=True)
class Trajectory:
    """A full judgment: the segments in order plus tool statistics.

    ``text`` is the concatenation of all segment texts. ``tool_calls`` counts executed code blocks,
    ``tool_errors`` those that failed or timed out; ``error`` is the generation error of a failed
    round (see :class:`Completion`). ``prefill`` is the assistant prefill the trajectory continues
    (the prompt's trailing assistant message, e.g. ``<think>Let me check with Python.\n```python\n``):
    part of the judge's turn, so the parser reads it (:meth:`parse_text` starts with it), but not of
    the completion (``text``, the segments and their token offsets exclude it).
    """

    segments: tuple[Segment, ...]
    tool_calls: int = 0
    tool_errors: int = 0
    prompt_tokens: int = 0
    finish_reason: FinishReason = "stop"
    error: str | None = None
    prefill: str = ""

    @property
    def text(self) -> str:
        return "".join(s.text for s in self.segments)

    def char_spans(self, *kinds: str) -> list[tuple[int, int]]:
        """Character spans ``[start, end)`` in :attr:`text` of the segments of the given kinds.

        The parser blanks the ``tool`` spans by these recorded offsets (never by re-finding
        fences), so interpreter output can never be read as the judge's answer.
        """
        spans, pos = [], 0
        for s in self.segments:
            if s.kind in kinds:
                spans.append((pos, pos + len(s.text)))
            pos += len(s.text)
        return spans

    @property
    def completion_tokens(self) -> int:
        return self.segments[-1].token_end if self.segments else 0

    def parse_text(self) -> str:
        """The text the parser reads: :attr:`prefill` + :attr:`text`, with executed code and tool
        output blanked (spaces, newlines kept: same length) by their recorded offsets.

        Tool output is the interpreter's, and executed code is the judge's copy of code under
        judgment (a fence inside one of its string literals would otherwise expose the rest of the
        copied code, e.g. ``</think><verdict>B</verdict>``, as the judge's own text). A prefill that
        ends inside an opened fence whose block the completion finished and ran (first segment
        ``code``) has that fence blanked too, as part of the executed block. The prefill is read
        because it frames the completion: after ``<think>`` a verdict is only final once the
        thinking is closed.
        """
        text = self.text
        for start, end in self.char_spans("tool", "code"):
            text = text[:start] + _blank(text[start:end]) + text[end:]
        pre = self.prefill
        first = next((s for s in self.segments if s.text), None)
        if pre and first is not None and first.kind == "code":
            from judgerl.text.codeblocks import fence_spans, has_open_fence

            if has_open_fence(pre):
                start = fence_spans(pre)[-1][0]
                pre = pre[:start] + _blank(pre[start:])
        return pre + text

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Trajectory":
        """Inverse of :meth:`to_dict`.

        Raises:
            ValueError: a segment without ``kind``/``text`` or with an unknown kind.
        """
        segs = []
        for i, s in enumerate(d.get("segments") or []):
            if not isinstance(s, Mapping) or s.get("kind") not in ("model", "code", "tool", "forced") \
                    or not isinstance(s.get("text"), str):
                raise ValueError(f"trajectory segment {i}: needs kind in model/code/tool/forced and a text")
            segs.append(Segment(s["kind"], s["text"], int(s.get("token_start", 0)), int(s.get("token_end", 0))))
        prefill = d.get("prefill")
        prefill = "" if prefill is None else prefill
        if not isinstance(prefill, str):
            raise ValueError("trajectory prefill: needs a string")
        return cls(tuple(segs), int(d.get("tool_calls", 0)), int(d.get("tool_errors", 0)),
                   int(d.get("prompt_tokens", 0)), d.get("finish_reason", "stop"), d.get("error"), prefill)

    def to_dict(self) -> dict[str, Any]:
        return {
            "segments": [asdict(s) for s in self.segments],
            "tool_calls": self.tool_calls,
            "tool_errors": self.tool_errors,
            "prompt_tokens": self.prompt_tokens,
            "finish_reason": self.finish_reason,
            "error": self.error,
            **({"prefill": self.prefill} if self.prefill else {}),
        }


def _blank(text: str) -> str:
    """``text`` with every character but newlines replaced by a space (same length)."""
    return "".join("\n" if c == "\n" else " " for c in text)
