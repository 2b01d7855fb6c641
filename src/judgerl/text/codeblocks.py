"""Find fenced code blocks in judge output and format interpreter observations.

TIR-Judge (Xu et al., 2025, Sec. 3) writes a judgment as r1, c1, o1, …, rk, ck, ok: reasoning, a
```` ```python ```` block, and the interpreter output in a ```` ```output ```` block. This module holds the
text side of that loop: locating the first *complete* python block, and turning an execution result
into the observation text that goes back into the context (errors cut to their last line).

Two rules, for two questions (both live here, nowhere else):

* **What is code when reading an answer** (:func:`fence_spans`, :func:`has_open_fence`): every
  run of three backticks opens or closes a span, wherever it is on a line (CommonMark code spans
  and fenced blocks alike), and an unmatched opening runs to the end of the text. The parser
  ignores these spans; answer forcing closes an open one before it writes the answer tag.
* **What is a block to execute** (:func:`iter_code_blocks` and the ``find_*`` helpers): fenced
  blocks proper, line based, a CommonMark subset:

* an opening fence is a line ```` ``` ```` optionally indented, followed by an info string; the block is
  Python when the info string's first word is ``python``, ``py`` or ``python3`` (case-insensitive);
* the block ends at the next line that is only ```` ``` ```` (optionally indented / trailing spaces);
* blocks in any other language (```` ```output ````, ```` ```json ````, bare ```` ``` ````) are skipped
  whole, so python-looking text inside them is never executed;
* a python block without a closing fence is *not* complete and is never executed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from judgerl.text.untrusted import defuse_specials, escape_fences, neutralise_tags, strip_terminal_controls

#: Most code executions per judgment (TIR-Judge, Xu et al. 2025, Sec. 3: at most 3 tool rounds).
#: The one home of this limit: prompts, the tool loop, rewards and recipes read it from here.
MAX_TOOL_ROUNDS = 3

PYTHON_LANGS = frozenset({"python", "py", "python3"})

_FENCE_RUN = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_FENCE_OPEN = re.compile(r"^[ \t]{0,3}```[ \t]*([^\s`]*)[^\n`]*$")
_FENCE_CLOSE = re.compile(r"^[ \t]{0,3}```[ \t]*$")
_ERROR_LINE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)\b")


@dataclass(frozen=True)
class CodeBlock:
    """One fenced block found in a text.

    Attributes:
        lang: Lower-cased first word of the info string (``""`` for a bare fence).
        code: The block's content without the fences (lines as written, no dedent).
        start: Character offset of the opening fence's first character.
        end: Character offset just after the closing fence line, including its newline when the
            text has one (so ``text[:end]`` ends right after the block).
        closed: False when the text ended before a closing fence.
    """

    lang: str
    code: str
    start: int
    end: int
    closed: bool

    @property
    def is_python(self) -> bool:
        return self.lang in PYTHON_LANGS


def fence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans ``[start, end)`` of the code in ``text`` for answer reading (module rule 1).

    Backtick triples pair up left to right; a span includes its fences; an unmatched opening fence
    runs to the end of the text.
    """
    return [(m.start(), m.end()) for m in _FENCE_RUN.finditer(text)]


def has_open_fence(text: str) -> bool:
    """Whether ``text`` ends inside a code span (an odd number of backtick triples)."""
    spans = fence_spans(text)
    return bool(spans) and spans[-1][1] == len(text) and not text[spans[-1][0] + 3 :].count("```")


def _lines_with_offsets(text: str) -> Iterator[tuple[int, str, int]]:
    """Yield (start offset, line without newline, offset after the line incl. its newline)."""
    pos = 0
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        yield pos, body, pos + len(line)
        pos += len(line)


def iter_code_blocks(text: str) -> Iterator[CodeBlock]:
    """Yield every fenced block of ``text`` in order (any language, closed or not).

    An unclosed block runs to the end of the text and is yielded with ``closed=False`` last.
    """
    lines = list(_lines_with_offsets(text))
    i = 0
    while i < len(lines):
        start, body, after = lines[i]
        m = _FENCE_OPEN.match(body)
        if not m:
            i += 1
            continue
        lang = m.group(1).lower()
        code_start = after
        j = i + 1
        while j < len(lines) and not _FENCE_CLOSE.match(lines[j][1]):
            j += 1
        if j == len(lines):
            yield CodeBlock(lang, text[code_start:], start, len(text), closed=False)
            return
        close_start, _, close_after = lines[j]
        yield CodeBlock(lang, text[code_start:close_start], start, close_after, closed=True)
        i = j + 1


def find_new_python_block(text: str, new_from: int) -> CodeBlock | None:
    """The first closed python block of ``text`` that ends after ``new_from``, or None.

    ``text[:new_from]`` is context already handled (an earlier prompt prefill or earlier rounds);
    a block may *start* in it -- e.g. a prefill ending in ```` ```python\n ```` -- and be closed by
    the new text. Returns None when the new text holds no such block, or when the first python
    block reaching into it is unclosed.
    """
    for block in iter_code_blocks(text):
        if block.end <= new_from and block.closed:
            continue
        if block.is_python:
            return block if block.closed else None
    return None


def count_python_blocks(text: str) -> int:
    """Number of closed python blocks in ``text`` (code the judge asked to run)."""
    return sum(1 for b in iter_code_blocks(text) if b.is_python and b.closed)


def output_blocks(text: str) -> list[str]:
    """Contents of the closed ```` ```output ```` blocks of ``text``, in order."""
    return [b.code for b in iter_code_blocks(text) if b.lang == "output" and b.closed]


def looks_like_error(observation: str) -> bool:
    """Whether an observation's last non-empty line is a Python error line (``NameError: …``).

    Used to count tool errors from text alone, when no :class:`~judgerl.types.Trajectory` is
    available (the tool loop writes errors as their last line, see :func:`format_observation`).
    """
    lines = [ln for ln in observation.strip().splitlines() if ln.strip()]
    return bool(lines) and bool(_ERROR_LINE.match(lines[-1].strip()))


def last_line(text: str) -> str:
    """The last non-empty line of ``text`` stripped, or ``""``."""
    for line in reversed(text.splitlines()):
        if line.strip():
            return line.strip()
    return ""


def cap_text(text: str, max_chars: int) -> str:
    """Cut ``text`` to at most ``max_chars`` characters (head kept) plus a truncation note.

    Raises:
        ValueError: ``max_chars`` < 1.
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be >= 1, got {max_chars}")
    if len(text) <= max_chars:
        return text
    return text[:max_chars] + f"\n... [output truncated: {len(text) - max_chars} more characters]"


def format_observation(result: Any, max_chars: int = 1024) -> tuple[str, bool]:
    """Observation text for an execution result, and whether the execution failed.

    Args:
        result: An :class:`~judgerl.tools.sandbox.ExecResult`-like object with ``stdout``,
            ``stderr``, ``ok`` and ``timed_out``.
        max_chars: Cap on the stdout part, in characters (head kept).

    Returns:
        ``(text, is_error)``. On success: stdout (``"(no output)"`` when empty). On failure: the
        stdout written before the failure, then only the **last line** of the error output
        (TIR-Judge: "error messages are truncated to their last line"); when stderr is empty, a
        timeout reads ``TimeoutError: execution timed out`` and another failure names the exit code.
    """
    stdout = (result.stdout or "").rstrip("\n")
    if result.ok:
        return (cap_text(stdout, max_chars) if stdout else "(no output)"), False
    err = last_line(result.stderr or "")
    if not err:
        err = "TimeoutError: execution timed out" if result.timed_out else f"Error: exit code {result.exit_code}"
    parts = [cap_text(stdout, max_chars)] if stdout else []
    parts.append(err)
    return "\n".join(parts), True


def output_block(observation: str) -> str:
    """Wrap an observation as the ```` ```output ```` block inserted after a code block.

    The observation's ANSI escapes, NUL and other control characters are removed
    (:func:`judgerl.text.untrusted.strip_terminal_controls`), its fences escaped (:func:`escape_fences`)
    and its judge control tags neutralised (:func:`judgerl.protocols.parsing.neutralise_tags`) and its
    chat-template role markers defused (:func:`judgerl.text.untrusted.defuse_specials`), so nothing
    the code printed can close the block, open a judge tag, forge a chat turn (in the trajectory a
    trained judge is tokenised from, too) or reach the context as raw terminal bytes.
    """
    text = defuse_specials(neutralise_tags(escape_fences(strip_terminal_controls(observation))))
    return f"```output\n{text}\n```\n"


def blank_executed_blocks(text: str) -> str:
    """``text`` with every closed python block and every closed ```` ```output ```` block blanked
    (same length, newlines kept), the blocks found by line fences as the tool loop finds them
    (:func:`iter_code_blocks`).

    For reading a recorded judgment without its trajectory: a fence inside a string literal of the
    executed code (``s = "```"``) would otherwise end the code for :func:`fence_spans` and expose the
    rest of it (``</think><verdict>B</verdict>``) as the judge's own text.
    """
    spans = [(b.start, b.end) for b in iter_code_blocks(text) if b.closed and (b.is_python or b.lang == "output")]
    return mask_spans(text, spans)


def blank(text: str) -> str:
    """``text`` with every character but newlines replaced by a space (same length)."""
    return "".join("\n" if c == "\n" else " " for c in text)


def mask_spans(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """``text`` with the character ranges ``[start, end)`` of ``spans`` blanked (same length)."""
    parts, pos = [], 0
    for start, end in sorted(spans):  # linear: one pass (a judgment with 10^5 fences took 32 s before)
        start = max(start, pos)
        if end <= start:
            continue
        parts += [text[pos:start], blank(text[start:end])]
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


def mask_code_blocks(text: str) -> str:
    """Return ``text`` with every fenced ```` ``` ```` block (fences included) replaced by spaces.

    The spans come from :func:`judgerl.text.codeblocks.fence_spans` (what counts as code for reading an
    answer; answer forcing uses the same rule). The result has the same length as ``text``
    (offsets stay valid; newlines are kept). An unclosed fence is blanked to the end of the text.
    """
    return mask_spans(text, fence_spans(text))
