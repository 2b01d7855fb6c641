"""What untrusted text may look like to a copier: the one table of invisible characters and of
look-alikes (Unicode TR39 confusables), used wherever judgerl compares untrusted text.

* :func:`strip_invisible` / :func:`is_invisible`: characters that render as nothing (Unicode category
  Cf, :data:`INVISIBLE`, the supplementary variation selectors);
* :func:`skeleton`: every Unicode confusable mapped to one representative (UTS #39, "Unicode Security
  Mechanisms", section 4), for comparing texts (the quoted-answer check);
* :func:`plain_forms`: characters a copier writes as the ASCII they *mean* (digits of any script, letters
  in symbol dress, angle brackets), before the skeleton;
* :data:`LATIN_LOOKALIKES`: Cyrillic and Greek letters that look like Latin ones, folded in place by the
  audit inside otherwise-Latin words (:mod:`judgerl.text.normalize`, which keeps offsets).
"""

from __future__ import annotations

import functools
import re
import unicodedata

#: Invisible code points that are not in Unicode category Cf (which :func:`strip_invisible` drops as
#: well): Hangul fillers, the Braille blank, the combining grapheme joiner, Khmer inherent vowels,
#: Mongolian free variation selectors and the variation selectors (plus U+E0100..U+E01EF).
INVISIBLE = frozenset("\u115f\u1160\u3164\uffa0\u2800\u034f\u17b4\u17b5\u180b\u180c\u180d\u180e\u180f"
                      + "".join(map(chr, range(0xFE00, 0xFE10))))


def _class_re(cps: set[int]) -> re.Pattern[str]:
    """A regex matching runs of the code points ``cps`` (one character class of ranges)."""
    order = sorted(cps)
    ranges, start, prev = [], order[0], order[0]
    for cp in order[1:] + [-1]:
        if cp != prev + 1:
            ranges.append(re.escape(chr(start)) + ("-" + re.escape(chr(prev)) if prev > start else ""))
            start = cp
        prev = cp
    return re.compile("[" + "".join(ranges) + "]+")


@functools.lru_cache(maxsize=1)
def _categories() -> dict[str, set[int]]:
    """Code points of the Unicode categories Cf and M* (this Python's Unicode database; built once, ~0.4 s)."""
    out: dict[str, set[int]] = {"Cf": set(), "M": set()}
    for cp in range(0x110000):
        cat = unicodedata.category(chr(cp))
        if cat == "Cf":
            out["Cf"].add(cp)
        elif cat[0] == "M":
            out["M"].add(cp)
    return out


@functools.lru_cache(maxsize=1)
def _invisible_re() -> re.Pattern[str]:
    """Every invisible code point in one character class, so that stripping is one C-level ``re.sub``
    (1 MB in ~10 ms; a per-character ``unicodedata.category`` loop took ~0.3 s)."""
    return _class_re(_categories()["Cf"] | {ord(c) for c in INVISIBLE} | set(range(0xE0100, 0xE01F0)))


@functools.lru_cache(maxsize=1)
def _marks_re() -> re.Pattern[str]:
    return _class_re(_categories()["M"])


def strip_marks(text: str) -> str:
    """``text`` without combining marks (Unicode category M: accents such as the one of ``v\u0301``)."""
    return text if text.isascii() else _marks_re().sub("", text)


def strip_invisible(text: str) -> str:
    """``text`` without invisible characters: Unicode category Cf (zero-width joiners and spaces, BOM,
    bidi marks), :data:`INVISIBLE` and the supplementary variation selectors U+E0100..U+E01EF. The one
    definition of "invisible" for comparing untrusted text (quoted-answer check, reward guards)."""
    if text.isascii():  # no ASCII character is invisible in this sense
        return text
    return _invisible_re().sub("", text)



@functools.lru_cache(maxsize=1)
def _confusable_table() -> dict[int, str]:
    """Unicode's confusables table (UTS #39, "Unicode Security Mechanisms", section 4) as
    ``str.translate`` table: code point -> the representative of its confusable class.

    The data is the ``confusable_homoglyphs`` package's ``confusables.json``, generated from Unicode's
    ``confusables.txt`` and stored both ways (each ``source -> prototype`` line appears under both
    characters). A character with a single multi-character entry is a source of a sequence (``m`` ->
    ``rn``); the other single characters fall into classes (a prototype with its sources) whose
    representative is the prototype (the member with most entries), an ASCII member, or the lowest
    code point. Two texts then have the same skeleton exactly when TR39's skeletons are equal.
    """
    import json
    from importlib.resources import files

    raw = json.loads((files("confusable_homoglyphs") / "confusables.json").read_text(encoding="utf-8"))
    unmark = str.maketrans("", "", "\u200e\u200f")  # the data wraps right-to-left glyphs in direction marks
    entries = {k.translate(unmark): [e["c"].translate(unmark) for e in v] for k, v in raw.items()}
    parent: dict[str, str] = {}

    def find(c: str) -> str:
        while parent.setdefault(c, c) != c:
            parent[c] = parent[parent[c]]
            c = parent[c]
        return c

    sequences: dict[str, str] = {}
    for k, targets in entries.items():
        if len(k) != 1:
            continue
        if len(targets) == 1 and len(targets[0]) > 1:
            sequences[k] = targets[0]
            continue
        for t in targets:
            if len(t) == 1:
                parent[find(k)] = find(t)
    rank = lambda c: (-len(entries.get(c, ())), not c.isascii(), ord(c))  # noqa: E731
    rep: dict[str, str] = {}
    for c in list(parent):
        root = find(c)
        if root not in rep or rank(c) < rank(rep[root]):
            rep[root] = c
    table = {ord(c): rep[find(c)] for c in parent if rep[find(c)] != c}
    for k, seq in sequences.items():
        table[ord(k)] = "".join(table.get(ord(ch), ch) for ch in seq)
    return table


def skeleton(text: str) -> str:
    """The TR39 skeleton of ``text`` (UTS #39 section 4: NFD, every character replaced by its
    prototype in Unicode's confusables table, NFD again), case-folded (and mapped once more, as the
    case fold can make new sources).

    Two strings that look alike have the same skeleton: Cyrillic ``а``, the small capital ``ᴠ``, the
    dotless ``ı``, mathematical letters and the like all become their Latin prototypes (``l`` and
    ``1`` both become ``l``, ``0`` and ``O`` become ``o``; for ASCII the case fold comes first, so ``I``
    is ``i``; a non-ASCII letter is mapped before the fold too, so Greek ``Β`` is ``b``, not ``ß``). Callers normalise with NFKC first (TR39's table maps the long ``ſ`` to ``f``, NFKC to
    ``s``). Only for *comparing* texts (TR39: a skeleton is not a normalisation to show anyone).
    The table: :func:`_confusable_table` (class representatives, not always TR39's own prototype
    characters: equal skeletons mean exactly what TR39's do).
    """
    table = _confusable_table()
    # non-ASCII characters are mapped before the case fold as well (TR39's table is case-sensitive: Greek
    # ``Β`` and Cyrillic ``В`` are confusable with ``B``, their case folds with ``ß`` and ``ʙ``)
    text = _NON_ASCII_RE.sub(lambda m: m.group(0).translate(table), unicodedata.normalize("NFD", text))
    out = unicodedata.normalize("NFD", unicodedata.normalize("NFD", text.casefold()).translate(table)).casefold()
    return unicodedata.normalize("NFD", out.translate(table))  # the table again: the case fold may make sources


_NON_ASCII_RE = re.compile(r"[^\x00-\x7f]+")

#: A symbol named after one Latin letter (``REGIONAL INDICATOR SYMBOL LETTER B``, ``NEGATIVE SQUARED LATIN
#: CAPITAL LETTER B``): read as that letter.
_LETTER_NAME_RE = re.compile(r"(?:^|\s)(?:LATIN (?:CAPITAL|SMALL) LETTER|REGIONAL INDICATOR SYMBOL LETTER"
                             r"|LATIN LETTER SMALL CAPITAL) ([A-Z])$")
#: Brackets that look like ``<`` / ``>`` by their Unicode names (``〈`` ``⟨`` ``‹`` ``⧼``, ``◁`` ``▷``;
#: no double brackets).
_ANGLE_NAME_RE = re.compile(r"^(?!.*DOUBLE)(?:.*\b(LEFT|RIGHT)(?:-POINTING)? (?:CURVED )?ANGLE "
                            r"(?:BRACKET|QUOTATION MARK)|.*\b(LESS|GREATER)-THAN SIGN"
                            r"|WHITE (LEFT|RIGHT)-POINTING (?:SMALL )?TRIANGLE)$")


@functools.lru_cache(maxsize=8192)
def _plain_char(c: str) -> str:
    digit = unicodedata.decimal(c, None)
    if digit is not None:
        return str(digit)
    name = unicodedata.name(c, "")
    value = unicodedata.numeric(c, None)
    if value is not None and value.is_integer() and "CIRCLED" in name:  # ``❿``, ``➓``, ``⓫``: a number in dress
        return str(int(value))
    m = _LETTER_NAME_RE.search(name)
    if m:
        big = ("CAPITAL" in name and "SMALL CAPITAL" not in name) or "REGIONAL" in name  # ``ʀ``: a small r
        return m.group(1) if big else m.group(1).lower()
    m = _ANGLE_NAME_RE.match(name)
    if m:
        return "<" if (m.group(1) or m.group(2) or m.group(3)) in ("LEFT", "LESS") else ">"
    return c


def plain_forms(text: str) -> str:
    """``text`` with every non-ASCII character a copier writes as ASCII by what it *means* (not by its look,
    which is :func:`skeleton`'s business) replaced: decimal digits of any script by their value (``٣``,
    ``३`` -> ``3``, as Python's ``float`` and the answer parsers read them), circled numbers by theirs
    (``❿`` -> ``10``), symbols named after one Latin letter (regional indicators ``🇧``, ``🅱``, small capitals
    ``ʀ``) by that letter, and angle brackets by their Unicode names (``〈`` ``⟨`` ``‹`` ``◁`` -> ``<``). Other
    characters are left as they are."""
    return _NON_ASCII_CHAR_RE.sub(lambda m: _plain_char(m.group(0)), text)


_NON_ASCII_CHAR_RE = re.compile(r"[^\x00-\x7f]")


def is_invisible(c: str) -> bool:
    """Whether the character ``c`` renders as nothing (the rule of :func:`strip_invisible`)."""
    return unicodedata.category(c) == "Cf" or c in INVISIBLE or 0xE0100 <= ord(c) <= 0xE01EF


#: Cyrillic and Greek letters that look like Latin ones, each with its Latin letter (case kept). The
#: audit folds them only inside otherwise-Latin words (``--\u0435nd response--`` with a Cyrillic ``е``),
#: so Russian or Greek text is left alone (:func:`judgerl.text.normalize.normalize`); :func:`skeleton`
#: is the full TR39 reading used to compare texts.
LATIN_LOOKALIKES: dict[str, str] = dict(zip(
    "\u0430\u0435\u043e\u0440\u0441\u0443\u0445\u0456\u0458\u0455\u0501\u0410\u0412\u0415\u041a\u041c\u041d"
    "\u041e\u0420\u0421\u0422\u0425\u0406\u03bf\u03b1\u03b5\u03b9\u03ba\u03bd\u03c1\u039f\u0391\u0395\u0399"
    "\u039a\u039d\u03a1\u03a4",
    "aeopcyxijsdABEKMHOPCTXIoaeikvpOAEIKNPT",
))


__all__ = ["INVISIBLE", "LATIN_LOOKALIKES", "is_invisible", "plain_forms", "skeleton", "strip_invisible"]
