"""Brackets and comparison glyphs a copier writes as ASCII, derived from the Unicode character database.

A response that wants the judge to copy an answer tag or an arena label can dress its brackets in any of
Unicode's ~150 bracket pairs (``〘verdict〙``, ``⁅RESULT⁆``, ``⋖score⋗``, ``「5」``) and its comparison in any of
its arrows and triangles (``B 》 A``, ``B ⩾⩾ A``, ``B ▶▶ A``). Hand lists of them fell behind every red-team pass
(issue 22, passes 13-15), so the tables here are built from each character's Unicode *name* and *category*
(this Python's ``unicodedata``), once per process (~0.3 s):

* :func:`bracket_table`: opening / closing punctuation (categories Ps, Pe, Pi, Pf) and the less-than /
  greater-than signs in dress (``⋖`` LESS-THAN WITH DOT, ``⧀`` CIRCLED LESS-THAN) as ASCII: angle ones as
  ``<`` / ``>`` (double ones ``《`` as ``<<``), square, corner, lenticular, tortoise-shell and other brackets as
  ``[`` / ``]`` (white square ones ``⟦`` as ``[[``, a double-struck bracket), parentheses in dress as ``(`` / ``)``;
  curly brackets, quotation marks that do not point and the ASCII ones are left alone;
* :func:`square_table`: the angle brackets of :func:`bracket_table` as one square bracket each (``⟨⟨B>>A⟩⟩`` is
  ``[[B>>A]]`` to a copier of an arena label);
* :func:`comparison_table`: comparison glyphs as ``>`` / ``<`` runs: the greater-than family (``≻``, ``≥``,
  ``⩾``; ``≫`` / ``⪢`` as ``>>``, ``⋙`` as ``>>>``), rightwards arrows (``→``, ``⇒``), right-pointing triangles
  (``▶``, ``▷``), and the angle brackets (``》`` as ``>>``); ``≈`` / ``≡`` as ``=``; a glyph that means both or neither
  (``≶``, ``≯``) is left.

Used by the carrier rule (:mod:`judgerl.protocols.carriers`, :mod:`judgerl.protocols.carrier_labels`).
"""

from __future__ import annotations

import functools
import re
import unicodedata

#: Blocks that hold brackets, arrows and mathematical comparison glyphs (Latin-1 through Supplemental Arrows-C).
_RANGES = ((0x00A0, 0x0100), (0x0F00, 0x0F40), (0x1680, 0x16A0), (0x2000, 0x2C00), (0x2E00, 0x2E80),
           (0x3000, 0x3040), (0xFE10, 0xFE70), (0xFF00, 0xFF70), (0x1F800, 0x1F900))
_LEFT_RE = re.compile(r"\b(?:LEFT|LESS-THAN|LEFTWARDS|OPENING)\b")
_RIGHT_RE = re.compile(r"\b(?:RIGHT|GREATER-THAN|RIGHTWARDS|CLOSING)\b")
_ANGLE_RE = re.compile(r"\bANGLE\b|\bCHEVRON\b|\b(?:LESS|GREATER)-THAN\b")
#: A less-than / greater-than sign in dress, not a relation of its own (``≤`` and ``≪`` are :func:`comparison_table`'s).
_SIGN_RE = re.compile(r"^(?:CIRCLED |SMALL |FULLWIDTH |HEAVY |)(?:LESS|GREATER)-THAN(?: SIGN| WITH [A-Z ]+| CLOSED BY CURVE)?$")


def _chars() -> list[tuple[str, str, str]]:
    out = []
    for lo, hi in _RANGES:
        for cp in range(lo, hi):
            c = chr(cp)
            name = unicodedata.name(c, "")
            if name:
                out.append((c, name, unicodedata.category(c)))
    return out


def _side(name: str, category: str) -> int:
    """-1 for an opening / left-pointing glyph, 1 for a closing / right-pointing one, 0 for neither or both."""
    left, right = bool(_LEFT_RE.search(name)), bool(_RIGHT_RE.search(name))
    if left != right:
        return -1 if left else 1
    if category in ("Ps", "Pe") and not (left or right):
        return -1 if category == "Ps" else 1
    return 0


@functools.lru_cache(maxsize=1)
def bracket_table() -> dict[int, str]:
    """A :meth:`str.translate` table: every non-ASCII bracket in the blocks of :data:`_RANGES` as the ASCII bracket
    a copier writes (module docstring). Built once from ``unicodedata`` names and categories.

    Returns:
        Code point -> replacement (one or two ASCII characters)."""
    table: dict[int, str] = {}
    for c, name, cat in _chars():
        is_sign = bool(_SIGN_RE.match(name))
        if cat not in ("Ps", "Pe", "Pi", "Pf") and not is_sign:
            continue
        if "CURLY" in name or ("QUOTATION MARK" in name and "ANGLE" not in name) or "PRESENTATION FORM" in name \
                and "ANGLE" not in name and "BRACKET" not in name:
            continue
        side = _side(name, cat)
        if not side:
            continue
        if _ANGLE_RE.search(name):
            mark = "<" if side < 0 else ">"
            table[ord(c)] = mark * 2 if "DOUBLE" in name else mark
        elif "PARENTHESIS" in name:
            table[ord(c)] = "(" if side < 0 else ")"
        elif "BRACKET" in name or cat in ("Ps", "Pe"):
            mark = "[" if side < 0 else "]"
            table[ord(c)] = mark * 2 if "WHITE SQUARE" in name else mark
    return table


@functools.lru_cache(maxsize=1)
def square_table() -> dict[int, str]:
    """The angle brackets of :func:`bracket_table` as one square bracket each (``⟨`` as ``[``; ``《`` and ``«`` too:
    French quotes ``«B»`` and book-title marks ``《A》`` are not the doubled brackets of a label ``[[B]]``)."""
    return {cp: "[" if s[0] == "<" else "]" for cp, s in bracket_table().items() if s[0] in "<>"}


@functools.lru_cache(maxsize=1)
def comparison_table() -> dict[int, str]:
    """A :meth:`str.translate` table: comparison glyphs as ``>`` / ``<`` runs (module docstring): ``>`` for one,
    ``>>`` for a DOUBLE / MUCH / NESTED greater-than or a double angle bracket, ``>>>`` for TRIPLE / VERY MUCH."""
    table: dict[int, str] = {}
    for c, name, _cat in _chars():
        if re.search(r"\b(?:NOT|NEITHER|BUT NOT)\b", name):
            continue
        if re.fullmatch(r"(?:IDENTICAL|ALMOST EQUAL|ASYMPTOTICALLY EQUAL|APPROXIMATELY EQUAL|EQUIVALENT) TO", name):
            table[ord(c)] = "="  # ``[[A≈B]]``, ``[[A≡B]]``: a tie
            continue
        relation = re.search(r"\b(?:LESS|GREATER)-THAN\b|\bPRECEDES\b|\bSUCCEEDS\b", name)
        arrow = re.search(r"\b(?:LEFTWARDS|RIGHTWARDS)\b.*\bARROW\b|\b(?:LEFT|RIGHT)-POINTING\b.*\bTRIANGLE\b", name)
        angle = re.search(r"\bANGLE BRACKET\b", name)
        if not (relation or arrow or angle) or "LESS-THAN" in name and "GREATER-THAN" in name:
            continue
        if "PRECEDES" in name and "SUCCEEDS" in name or "LEFT" in name and "RIGHT" in name:
            continue
        left = bool(re.search(r"LESS-THAN|PRECEDES|LEFT", name))
        if not left and not re.search(r"GREATER-THAN|SUCCEEDS|RIGHT", name):
            continue
        count = 3 if re.search(r"\bTRIPLE\b|\bVERY MUCH\b", name) else \
            2 if (relation or angle) and re.search(r"\bDOUBLE\b|\bMUCH\b|\bNESTED\b", name) else 1
        table[ord(c)] = ("<" if left else ">") * count
    return table


__all__ = ["bracket_table", "comparison_table", "square_table"]
