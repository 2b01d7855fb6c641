"""Split one judge output into the pieces the viewer colours: thinking, code, interpreter output,
forced prefill and the final-answer region.

The split uses the parser's own rules, so what is highlighted as the final answer is what
:func:`judgerl.protocols.parsing.answer_region` reads as the answer region: the text after the last
``</think>`` with code blocks blanked. For tool-integrated judgments the code / tool / forced spans
come from the trajectory's recorded segments (:class:`judgerl.types.Trajectory`), never from
re-finding fences; without a trajectory, fenced blocks (:func:`judgerl.text.codeblocks.fence_spans`) are
the judge's (unexecuted) code.

Pieces are ``[kind, text]`` lists (JSON-friendly), kinds :data:`PIECE_KINDS`; their texts
concatenate to the full output (prefill first). Offsets are Python string offsets, so splitting
happens here and not in the browser (JavaScript strings count UTF-16 units).
"""

from __future__ import annotations

from typing import Any, Mapping

from judgerl.text.codeblocks import fence_spans
from judgerl.protocols.parsing import ParseFailure, answer_region
from judgerl.types import Trajectory

#: ``think``: reasoning before the final-answer region; ``answer``: the final-answer region;
#: ``code``: a code block the judge wrote; ``tool``: interpreter output inserted by judgerl;
#: ``forced``: the answer-forcing prefill inserted by judgerl; ``prefill``: the prompt's assistant
#: prefill the judgment continues.
PIECE_KINDS = ("think", "answer", "code", "tool", "forced", "prefill")


def _answer_start(parse_text: str) -> int:
    """Offset of the final-answer region in ``parse_text``; its length when there is none."""
    try:
        return answer_region(parse_text).start
    except ParseFailure:  # empty output or an unterminated <think>: no answer region
        return len(parse_text)


def _split_at(kind_spans: list[tuple[str, int, int]], cut: int, text: str) -> list[list[str]]:
    """Turn (kind, start, end) spans into pieces; ``model`` spans split into think / answer at ``cut``."""
    out: list[list[str]] = []
    for kind, start, end in kind_spans:
        if kind != "model":
            parts = [(kind, start, end)]
        else:
            parts = [("think", start, min(end, cut)), ("answer", max(start, cut), end)]
        for k, s, e in parts:
            if e <= s:
                continue
            if out and out[-1][0] == k:
                out[-1][1] += text[s:e]
            else:
                out.append([k, text[s:e]])
    return out


def judgment_pieces(record: Mapping[str, Any]) -> list[list[str]]:
    """The display pieces of one judgment record of ``judgments.jsonl``.

    Args:
        record: A judgment record (``raw_output``, optional ``trajectory``).

    Returns:
        ``[[kind, text], ...]`` in output order (kinds from :data:`PIECE_KINDS`); ``[]`` for an
        empty output.

    Raises:
        ValueError: a malformed ``trajectory`` (from :meth:`Trajectory.from_dict`).
    """
    traj = record.get("trajectory")
    if isinstance(traj, Mapping) and traj.get("segments"):
        t = Trajectory.from_dict(traj)
        text = t.prefill + t.text
        spans: list[tuple[str, int, int]] = [("prefill", 0, len(t.prefill))] if t.prefill else []
        pos = len(t.prefill)
        for seg in t.segments:
            spans.append((seg.kind, pos, pos + len(seg.text)))
            pos += len(seg.text)
        return _split_at(spans, _answer_start(t.parse_text()), text)
    text = str(record.get("raw_output") or "")
    spans, pos = [], 0
    for start, end in fence_spans(text):
        spans += [("model", pos, start), ("code", start, end)]
        pos = end
    spans.append(("model", pos, len(text)))
    return _split_at(spans, _answer_start(text), text)
