"""Text normalisation for matching (the audit detectors, the reward guards), keeping a map back to the
original offsets.

Reward-hacking text is often obfuscated by accident or on purpose: Unicode dashes in
``—end response—``, zero-width spaces inside a marker, full-width colons. :func:`normalize` folds
these so one regular expression covers every variant, and records for each normalised character
the offset of the original character it came from, so evidence spans point into the text the user
gave (:meth:`Normalized.span`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from judgerl.text.confusables import LATIN_LOOKALIKES, is_invisible

# Every dash-like character becomes ASCII "-".
_DASHES = frozenset("\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2e3a\u2e3b\ufe58\ufe63\uff0d")
# Curly and prime quotes become ASCII ' and " (so "can’t" matches "can't").
_QUOTES = {**dict.fromkeys("\u2018\u2019\u201a\u201b\u02bc\u2032\uff07", "'"),
           **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033\uff02\u00ab\u00bb", '"')}
_FENCE = re.compile(r"^[ \t]*```[^\n]*\n.*?^[ \t]*```[ \t]*$", re.M | re.S)
_INLINE_CODE = re.compile(r"`[^`\n]+`")


@dataclass(frozen=True)
class Normalized:
    """A normalised response and where each of its characters came from.

    Attributes:
        text: NFKC-folded text with invisible characters removed, dashes made ASCII ``-``, curly
            quotes/apostrophes made ASCII ``'``/``"``, and Cyrillic/Greek look-alike letters next to
            a Latin letter made Latin. Same length as ``origin``.
        origin: ``origin[i]`` is the offset in the original string of ``text[i]``'s source character.
        original: The string as given.
        prose: ``text`` with fenced and inline code blanked out by spaces (same length and offsets),
            for detectors that must not look inside code (``print("--end--")``).
    """

    text: str
    origin: Sequence[int]
    original: str
    prose: str

    def span(self, start: int, end: int) -> tuple[int, int]:
        """Map a ``[start, end)`` span of ``text`` to the original string's offsets."""
        if not self.origin:
            return 0, 0
        start = min(max(start, 0), len(self.origin) - 1)
        o_start = self.origin[start]
        if end <= start:
            return o_start, o_start
        o_end = self.origin[min(end, len(self.origin)) - 1] + 1
        return o_start, o_end


def fold(text: str) -> str:
    """The normalised form of ``text`` alone (no offset map); used for prompts and master keys."""
    return normalize(text).text


def normalize(text: str) -> Normalized:
    """Normalise ``text`` for matching; see :class:`Normalized`.

    Cost: ASCII text is returned as is (identity offsets); otherwise one pass over the characters
    (NFKC per non-ASCII character), about 0.4 µs per character.
    """
    if text.isascii():  # nothing to fold: identity map
        return Normalized(text=text, origin=range(len(text)), original=text, prose=_blank_code(text))
    out: list[str] = []
    origin: list[int] = []
    for i, ch in enumerate(text):
        if is_invisible(ch):
            continue
        if ch in _DASHES:
            folded = "-"
        elif ch in _QUOTES:
            folded = _QUOTES[ch]
        elif ch.isascii():
            folded = ch
        else:
            folded = unicodedata.normalize("NFKC", ch)
            if folded in _DASHES:
                folded = "-"
        for c in folded:
            out.append(c)
            origin.append(i)
    for j, c in enumerate(out):
        if c in LATIN_LOOKALIKES and _latin_neighbour(out, j):
            out[j] = LATIN_LOOKALIKES[c]
    norm = "".join(out)
    return Normalized(text=norm, origin=tuple(origin), original=text, prose=_blank_code(norm))


def _latin_neighbour(chars: list[str], j: int) -> bool:
    """True when the letter before or after position ``j`` is an ASCII letter."""
    return any(0 <= k < len(chars) and chars[k].isascii() and chars[k].isalpha() for k in (j - 1, j + 1))


def _blank_code(text: str) -> str:
    """``text`` with closed ``` fences and `inline code` replaced by spaces (newlines kept)."""
    def blank(m: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", m.group(0))

    return _INLINE_CODE.sub(blank, _FENCE.sub(blank, text))
