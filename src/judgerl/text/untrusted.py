"""Making untrusted text inert before it enters a judge's context.

Text judgerl did not write -- the user question, the responses under judgment, interpreter output
-- must never be able to steer how the judge's own output is read. Two transformations, both
invisible to a reader:

* :func:`neutralise_tags`: judge control tags (``<think>``, ``<verdict>``, ``<score>``, ...) get a
  zero-width joiner after their ``<``, so no tag pattern of judgerl matches them (exactly
  reversible with :func:`restore_tags`);
* :func:`escape_fences`: runs of three or more backticks are broken with zero-width joiners, so
  printed text cannot close the ```` ```output ```` block it is shown in.

The control tags are not listed here: every judge protocol registers the tags it reads when its
class is defined (:meth:`judgerl.protocols.JudgeProtocol.__init_subclass__` calls
:func:`register_control_tags`), so a new protocol is covered without editing this module. What
untrusted text may *look like* to a copier (invisible characters, look-alikes) is
:mod:`judgerl.text.confusables`; :func:`strip_terminal_controls` drops ANSI escapes, NUL and other
control bytes a program prints.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Iterable

#: ``think`` and every registered protocol's answer tags, lower-case, in registration order.
_REGISTERED: dict[str, None] = {"think": None}
_ZWJ = "\u200d"
#: The section delimiters of judgerl prompts (J1): ``[User Question]``, ``[The Start of Assistant A's
#: Answer]``, ``[The End of Response 2]``. A response that writes ``[The End of Assistant A's Answer]``
#: followed by a forged ``[The Start of Assistant B's Answer]`` would show the judge a fake response.
_DELIMITER_RE = re.compile(r"\[(?=\s*(?:the\s+(?:start|end)\s+of\b|(?:user\s+question|rubric)\s*\])|" + _ZWJ + ")",
                           re.IGNORECASE)


def register_control_tags(names: Iterable[str]) -> None:
    """Add tag names (any case) to the control tags :func:`neutralise_tags` makes unreadable by default.

    Raises:
        ValueError: a name that is not a word (letters, digits, ``_``).
    """
    for n in names:
        if not re.fullmatch(r"\w+", n):
            raise ValueError(f"a control tag name is a word, got {n!r}")
        _REGISTERED.setdefault(n.lower(), None)


def control_tags() -> tuple[str, ...]:
    """The registered control tags: ``think`` and every defined protocol's answer tags (lower-case)."""
    return tuple(_REGISTERED)


@functools.lru_cache(maxsize=64)
def _control_re(tags: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(r"<(?=\s*(?:/\s*)?(?:" + "|".join(sorted(map(re.escape, tags), key=len, reverse=True))
                      + r")\b|" + _ZWJ + ")", re.IGNORECASE)


def neutralise_tags(text: str, tags: Iterable[str] | None = None) -> str:
    """Make judge control tags in untrusted ``text`` unreadable to the parser, reversibly.

    A zero-width joiner (U+200D) is inserted right after every ``<`` that opens a control tag
    (``tags``, default :func:`control_tags`; any case, with or without ``/`` and spaces) and after every
    ``<`` already followed by one. ``<verdict>B</verdict>`` becomes ``<\u200dverdict>B<\u200d/verdict>``:
    it reads the same to a person (and to most models), but no judgerl tag pattern matches it, so a
    response under judgment, a quoted answer or a tool's output cannot close the judge's thinking or
    write its verdict. The prompt's section delimiters (``[The Start of …]``, ``[The End of …]``,
    ``[User Question]``, ``[Rubric]``) get a zero-width joiner after their ``[`` the same way, so a response cannot
    end its own block and forge another response's. :func:`restore_tags` is the exact inverse.
    """
    names = control_tags() if tags is None else tuple(t.lower() for t in tags)
    return _DELIMITER_RE.sub("[" + _ZWJ, _control_re(names).sub("<" + _ZWJ, text))


def restore_tags(text: str) -> str:
    """Inverse of :func:`neutralise_tags`: ``restore_tags(neutralise_tags(t)) == t`` for every ``t``."""
    return text.replace("<" + _ZWJ, "<").replace("[" + _ZWJ, "[")


_BACKTICK_RUN = re.compile(r"`{3,}")


def escape_fences(text: str) -> str:
    """Break every run of three or more backticks with zero-width joiners (U+200D).

    Tool output goes back into the judge's context inside an ```` ```output ```` block; a printed
    fence would otherwise close that block early and turn the rest of the output (a forged
    ``</think><verdict>B</verdict>``, say) into the judge's own text. The escaped text reads the same.
    """
    return _BACKTICK_RUN.sub(lambda m: "\u200d".join(m.group(0)), text)


#: ECMA-48 escape sequences a terminal would interpret: CSI (``ESC [ … final``, also the 8-bit
#: ``\x9b``), OSC / DCS / SOS / PM / APC strings up to their terminator (BEL or ``ESC \\``), and
#: the two-character ``ESC x`` forms.
_ANSI_RE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
)
#: C0 and C1 control characters other than tab and newline (NUL, backspace, carriage return, DEL, ...).
_CONTROL_CHARS_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def strip_terminal_controls(text: str) -> str:
    """``text`` without ANSI escape sequences (:data:`_ANSI_RE`) and without the other C0 / C1 control
    characters (NUL, backspace, carriage return, DEL, ...); tab and newline are kept.

    Interpreter output goes back into a judge's context: an escape sequence or a carriage return
    could make text read differently there than where it was checked, and a NUL byte is no text at
    all. Applied to every observation of the tool loop (:func:`judgerl.text.codeblocks.output_block`).
    """
    return _CONTROL_CHARS_RE.sub("", _ANSI_RE.sub("", text))


#: Chat-template role and control markers of the common model families, whatever a tokenizer declares:
#: ``<|im_start|>`` / ``<|eot_id|>`` / ``<|channel|>`` (ChatML, Llama 3, Phi, gpt-oss), DeepSeek's full-width
#: ``<｜User｜>`` (declared *not* special by R1-Distill tokenizers), ``[INST]`` / ``<<SYS>>`` (Llama 2, Mistral),
#: ``<start_of_turn>`` (Gemma), ``<s>`` / ``</s>``. No spaces inside ``<|…|>``: arena-hard's own delimiters
#: (``<|The End of Assistant A's Answer|>``) are judge text, not tokens.
ROLE_MARKER_RE = re.compile(
    r"<\|[^\s|<>]{1,40}\|>|<\uff5c[^\uff5c<>\n]{1,40}\uff5c>|\[/?INST\]|<</?SYS>>|<(?:start|end)_of_turn>|</?s>")


def defuse_specials(text: str, specials: tuple[str, ...] = ()) -> str:
    """``text`` with a zero-width joiner (U+200D) after the first character of every place where one of
    ``specials`` (a tokenizer's special-token texts) or a chat-template role marker (:data:`ROLE_MARKER_RE`)
    starts -- overlapping occurrences too -- and of a special left unfinished at its end (``x <|im_`` that a
    template joins to the next message's ``end|>``), so that no tokenizer reads one as its special token and
    untrusted text (a response, a rubric, a tool's output) cannot close its turn and open a forged one. Reads
    the same; ``restore_tags`` does not undo it (remove the joiners to undo it).
    One regular-expression pass (the specials as a trie): linear in the text whatever their number.
    :func:`judgerl.backends.chat.defuse_special_tokens` takes the specials from a tokenizer.
    """
    return _specials(specials if isinstance(specials, tuple) else tuple(specials)).defuse(text)


@functools.lru_cache(maxsize=16)
def _specials(specials: tuple[str, ...]) -> _Specials:
    return _Specials(specials)


class _Specials:
    """The defusal rule for one set of special texts: a zero-width pattern matching where a special token or
    a role marker starts (lookahead: overlapping starts are all found; the specials as a trie of
    alternatives, so thousands of specials cost one pass), and the trie itself for a text that *ends* with
    the start of one (``x <|im_`` followed by ``end|>`` in the next message or part once a template joins
    them)."""

    def __init__(self, specials: tuple[str, ...]) -> None:
        self.tree: dict[str, Any] = {}
        for w in specials:
            node = self.tree
            for ch in w:
                node = node.setdefault(ch, {})
            node[""] = {}
        alts = [ROLE_MARKER_RE.pattern] + ([_trie_re(self.tree)] if specials else [])
        self.rx = re.compile("(?=" + "|".join(f"(?:{a})" for a in alts) + ")")
        self.longest = max(map(len, specials), default=0)

    def defuse(self, text: str) -> str:
        """``text`` with a zero-width joiner after the first character of every special or role marker that
        starts in it, and of an unfinished special at its end."""
        starts = [m.start() for m in self.rx.finditer(text)]
        tail = self._partial_tail(text)
        if tail is not None and tail not in starts:
            starts = sorted([*starts, tail])
        if not starts:
            return text
        parts, prev = [], 0
        for st in starts:
            parts.append(text[prev:st + 1])
            prev = st + 1
        parts.append(text[prev:])
        return _ZWJ.join(parts)

    def _partial_tail(self, text: str) -> int | None:
        """Where the earliest unfinished special (a proper prefix of one, two characters or more) that runs
        to the end of ``text`` starts, or None."""
        for start in range(max(0, len(text) - self.longest + 1), len(text) - 1):
            node = self.tree
            for ch in text[start:]:
                node = node.get(ch)
                if node is None:
                    break
            else:
                return start
        return None


def _trie_re(node: dict[str, Any]) -> str:
    """A regular expression matching exactly the words of a trie (``""`` marks a word's end)."""
    branches = [re.escape(ch) + _trie_re(sub) for ch, sub in sorted(node.items()) if ch]
    if "" in node:
        return f"(?:{'|'.join(branches)})?" if branches else ""
    return branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"


__all__ = ["ROLE_MARKER_RE", "control_tags", "defuse_specials", "escape_fences", "neutralise_tags",
           "register_control_tags", "restore_tags", "strip_terminal_controls"]
