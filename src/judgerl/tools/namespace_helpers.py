"""The helpers of the response namespace: ``code_of(text)`` and ``number_of(text)`` (``passes(text, tests)``
is :mod:`judgerl.tools.namespace_passes`).

A tool-using judge with the response namespace on (:mod:`judgerl.tools.namespace`) finds the texts
under judgment as variables (``A``, ``B``, ``RESPONSE``, ``RESPONSES``, ``PROMPT``) and these three
functions in the namespace of every code block it writes, so it calls ``passes(A, tests)`` or
``number_of(B) == value`` instead of re-typing a response (copying is what small judges get wrong;
``exec(code_of(A))`` in the judge's own program lets the response's code rewrite that program).

This module is **standard-library only and self-contained**: its source text is executed inside the
sandbox (which sees no site-packages and no judgerl) before the judge's code, and the host imports
the same functions (the programmatic teachers read claims with them where no code runs), so the
host and the sandbox read every text the same way.

* :func:`code_of` -- a response's Python code: its ```` ```python ```` / ```` ```py ```` /
  ```` ```python3 ```` blocks joined by blank lines; without such a block its bare ```` ``` ````
  blocks; without any fence the whole text. Fences follow :mod:`judgerl.text.codeblocks`'s line
  rule (a fence line of three backticks, indented at most three spaces); a block left open at the
  end of the text runs to the end (a response cut short).
* :func:`number_of` -- the final number a response states: the first number after its last answer
  marker (``the answer is``, ``answer:``, ``result:``, ``####``, ``\\boxed{``, ``total is``, ...),
  else its last number. Thousands separators (``23,060``), signs (``-45``, ``−45``),
  decimals and ``$`` / ``%`` around the number are read; numbers written in English words
  (``two hundred sixty-seven``, ``minus forty-five``) count as numbers; a number in a power, a
  fraction or a date (``10^100``, ``1/2``) or after ``not`` / ``never`` is no claim, ``42 or 43`` states no
  one number, and a correction right before a number (``The answer is 42. Actually, no: 43.``, ``Oops,
  43.``) retracts the claim before it. After an answer marker a number inside arithmetic (``72 - 2``;
  ``3 + 4 = 7`` states 7) is no claim and a hedge, a range or a list (``72 (or 74)``, ``72 to 74``,
  ``72-74``, ``72 ± 2``, ``between 72 and 74``, ``72, 73 or 74``) states no one number; a marked statement
  whose numbers are all no claims (``The answer is not 72``) states none. Dashes as minus signs (``–45``),
  digits with a scale word (``72 thousand``) and zero-width characters are read as a reader sees them.
  Returns an ``int`` when the value is whole, else a ``float``; None when the text states no number.
"""

import re

_FENCE_OPEN = re.compile(r"^[ \t]{0,3}```[ \t]*([^\s`]*)[^\n`]*$")
_FENCE_CLOSE = re.compile(r"^[ \t]{0,3}```[ \t]*$")
_PYTHON = ("python", "py", "python3")


def code_of(text):
    """The Python code of ``text`` (see the module docstring); ``""`` for a non-str."""
    if not isinstance(text, str):
        return ""
    blocks, lang, body, inside = [], "", [], False
    for line in text.split("\n"):
        if not inside:
            m = _FENCE_OPEN.match(line)
            if m:
                inside, lang, body = True, m.group(1).lower(), []
        elif _FENCE_CLOSE.match(line):
            blocks.append((lang, "\n".join(body)))
            inside = False
        else:
            body.append(line)
    if inside:
        blocks.append((lang, "\n".join(body)))
    if not blocks:
        return text
    python = [b for lang, b in blocks if lang in _PYTHON]
    bare = [b for lang, b in blocks if lang == ""]
    return "\n\n".join(python or bare) + "\n" if (python or bare) else text


_ONES = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen".split())}
_TENS = {w: 10 * i for i, w in enumerate("_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()) if i >= 2}
_SCALES = {"thousand": 10 ** 3, "million": 10 ** 6, "billion": 10 ** 9, "trillion": 10 ** 12}
_WORD = "|".join(sorted([*_ONES, *_TENS, *_SCALES, "hundred"], key=len, reverse=True))
#: A run of number words: "two hundred and sixty-seven", "one thousand, two hundred", "minus five".
_WORDS_RUN = re.compile(
    rf"(?<![\w-])(?:(minus|negative)\s+)?((?:{_WORD})(?:(?:[\s-]+|,\s*|\s+and\s+)(?:{_WORD}))*)(?![\w-])",
    re.IGNORECASE)
_NUMBER = re.compile(
    r"(?<![\w.,])([-\u2212]?)\$?((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)(?![\w]|[.,]\d)")
_MARKER = re.compile(
    r"(?:\banswer\b[*\s]*(?:is|was|would be|=|:)|\bresult\b[*\s]*(?:is|=|:)|\bfinal\b[^\n.:]{0,20}?(?:is|=|:)"
    r"|####|\\boxed\s*\{|\btotal\b[*\s]*(?:is|=|:))",
    re.IGNORECASE)


#: Largest value a run of number words may name (``str()`` of a larger int exceeds Python's digit limit).
_WORDS_CAP = 10 ** 4000
#: A number that is part of a power, a fraction or a date (``10^100``, ``1.5 × 10^3``, ``1/2``) or follows
#: a negation (``not 42``) is no claim of its own.
_PART_AFTER = re.compile(r"\s*(?:\^|\*\*|[×x*]\s*10\s*(?:\^|\*\*))|\s*/\s*[-\u2212]?\d")
_PART_BEFORE = re.compile(r"[\d)]\s*(?:\^|\*\*|/)\s*$|(?:\bnot|n't|\bnever)[\s*_~`\"']+$", re.IGNORECASE)
#: ``42 or 43``: a hedge between two numbers states no one number (after a marker: :data:`_SPREAD_AFTER`).
_HEDGE_BEFORE = re.compile(r"\d\s*,?\s+or\s+$")
#: ``The answer is 42. Actually, no: 43.``: a correction right before a number that ends its sentence retracts
#: the claim before it (``Actually, 3 different ways give it`` corrects nothing).
_CORRECTION = re.compile(
    r"(?:\b(?:actually|wait|correction|sorry|i mean|scratch that|on second thought|make that|oops|hmm|my mistake"
    r"|my bad|rather|let me re-?(?:do|compute|check|calculate)(?: (?:that|this|it))?)|(?<=[.!?] )no)\b"
    r"(?:[\s,:;.!\u2014]|-(?!\d))*(?:no\b(?:[\s,:;.!\u2014]|-(?!\d))*)?"
    r"(?:(?:it(?:'s|\u2019s|\s+is)|make that|that should be|it should be|the answer is)\s+)?(?=[-\u2212$]?\d)",
    re.IGNORECASE)
_CLAIM_END = re.compile(r"[\s*_%)\]]*(?:$|[.!;,:\n])")
#: After an answer marker: a number inside arithmetic (``72 - 2``, ``3 + 4 = 7``: the ``7`` is the claim) is no
#: claim of its own, and one followed by another candidate -- a hedge (``72 (or 74)``, ``72, or maybe 74``,
#: ``72 and/or 74``), a range (``72 to 74``, ``72-74``, ``72 ± 2``, ``between 72 and 74``) or a list ending in
#: ``or`` / ``and`` (``72, 73 or 74``) -- states no one number.
_OP_AFTER = re.compile(r"\s*(?:[-+*\u00d7\u00b7\u00f7:\u2044\u2215]\s*[-\u2212]?\$?(?:\d|[a-z]\b)"
                       r"|(?:\u2192|->|=>)\s*[-\u2212]?\$?\d)", re.IGNORECASE)  # ``72 + x``; ``72 → 74``: 74
#: A claim its writer disowns (``72 (incorrect)``, ``72 ✗``) or bounds (``at least 72``, ``< 72``) names no value.
_DISOWNED_AFTER = re.compile(r"\s*(?:\(\s*(?:incorrect|wrong)\b|[\u2717\u2718\u274c])", re.IGNORECASE)
_BOUND_BEFORE = re.compile(r"(?:\bat\s+(?:least|most)|\b(?:more|less|fewer|greater)\s+than"
                           r"|(?<![-=])[<>\u2264\u2265]=?)\s*$", re.IGNORECASE)
#: Struck-out text (``~~72~~ 74``, ``<del>72</del>``, ``<s>72</s>``) is retracted: read as if absent.
_STRUCK = re.compile(r"~~[^~\n]{0,200}~~|<(del|s|strike)>[^<]{0,200}</\1>", re.IGNORECASE)
_OP_BEFORE = re.compile(r"[\d)]\s*[-+*\u00d7\u00b7\u00f7:\u2044\u2215]\s*$")
_SPREAD_AFTER = re.compile(
    r"\s*(?:\(?\s*,?\s*(?:\.{2,3}|\u2026)?\s*(?:or|and/or)\b[^\n.;:\d]{0,24}?|(?:to|~|\u00b1|\+/?-)\s*"
    r"|,?\s+(?:if|when|unless)\b[^\n.;]{0,60}?\b(?:else|otherwise)\b[^\n.;\d]{0,12}?"
    r"|(?:\s*,\s*[-\u2212]?\$?\d[\d.]*)+\s*,?\s*(?:or|and)\s+)[-\u2212]?\$?\d", re.IGNORECASE)
_SPREAD_BEFORE = re.compile(r"\b(?:between|from)\s+[-\u2212]?\$?$", re.IGNORECASE)
#: Dashes a text may write a minus sign with (``–45``, ``‐45``, ``－45``) and digits followed by a scale word
#: (``72 thousand``, ``1.5 million``): read as ``-45``, ``72000``, ``1500000``.
_DASH_SIGN = re.compile("[\u2010-\u2015\u2212\ufe63\uff0d](?=\\d)")
_DIGITS_SCALE = re.compile(r"(?<![\w.,])(\d{1,15}(?:\.\d{1,15})?)\s+(hundred|thousand|million|billion|trillion)\b",
                           re.IGNORECASE)


def _claims(text, start=0):
    """The numbers of ``text`` from ``start`` on that are claims of their own (:data:`_PART_AFTER`)."""
    for m in _NUMBER.finditer(text, start):
        if not _PART_AFTER.match(text, m.end()) and not _PART_BEFORE.search(text[max(0, m.start() - 12):m.start()]):
            yield m


def _words_value(words):
    """The integer of a run of number words, or None when the words do not form one number."""
    total, current, seen = 0, 0, False
    for w in re.split(r"[\s,-]+", words.lower()):
        if not w or w == "and":
            continue
        if w in _ONES:
            current += _ONES[w]
        elif w in _TENS:
            current += _TENS[w]
        elif w == "hundred":
            current = (current or 1) * 100
        elif w in _SCALES:
            total += (current or 1) * _SCALES[w]
            current = 0
        else:
            return None
        if current > _WORDS_CAP or total > _WORDS_CAP:  # "hundred hundred ...": no claim, and no quadratic work
            return None
        seen = True
    return total + current if seen else None


def _spell_out(text):
    """``text`` with each run of number words replaced by its digits."""
    def one(m):
        value = _words_value(m.group(2))
        if value is None:
            return m.group(0)
        return ("-" if m.group(1) else "") + str(value)
    return _WORDS_RUN.sub(one, text)


def _as_number(sign, digits):
    raw = digits.replace(",", "")
    if len(raw) > 4000:  # beyond int()'s default digit limit: not a claim a judge can check
        return None
    if "." in raw:
        value = float(raw)
        if value.is_integer() and abs(value) < 2 ** 53:
            value = int(value)
    else:
        value = int(raw)
    return -value if sign else value


def _scaled(m):
    """``72 thousand`` -> ``72000`` (exact: decimal arithmetic)."""
    from decimal import Decimal

    value = Decimal(m.group(1)) * (100 if m.group(2).lower() == "hundred" else _SCALES[m.group(2).lower()])
    return str(int(value)) if value == value.to_integral_value() else str(value)


def _marked_claims(text, start):
    """The claims after an answer marker that are no operand of arithmetic (``72 - 2``; ``3 + 4 = 7`` gives 7)."""
    for m in _claims(text, start):
        if not _OP_AFTER.match(text, m.end()) and not _OP_BEFORE.search(text[max(0, m.start() - 8):m.start()]):
            yield m


def number_of(text):
    """The final number ``text`` states (see the module docstring), or None."""
    if not isinstance(text, str):
        return None
    import unicodedata

    text = "".join(c for c in text if unicodedata.category(c) != "Cf")  # zero-width characters, soft hyphens
    text = _STRUCK.sub(" ", text)
    text = _spell_out(_DIGITS_SCALE.sub(_scaled, _DASH_SIGN.sub("-", text.replace("\u2212", "-"))))
    markers = list(_MARKER.finditer(text))
    if markers:
        m = next(_marked_claims(text, markers[-1].end()), None)
        if m is None and _NUMBER.search(text, markers[-1].end()):
            return None  # the last marked statement names no number of its own (``not 42``, ``72 - 2``)
        if m is not None:
            for c in reversed(list(_CORRECTION.finditer(text, m.end()))):
                fix = next(_claims(text, c.end()), None)
                if fix is not None and fix.start() == c.end() and _CLAIM_END.match(text, fix.end()):
                    m = fix  # the claim retracted: the number the last correction states
                    break
            if _SPREAD_AFTER.match(text, m.end()) or _DISOWNED_AFTER.match(text, m.end()) \
                    or _SPREAD_BEFORE.search(text[max(0, m.start() - 12):m.start()]) \
                    or _BOUND_BEFORE.search(text[max(0, m.start() - 16):m.start()]):
                return None
            return _as_number(*m.groups())
    found = list(_claims(text))
    if not found or _HEDGE_BEFORE.search(text[max(0, found[-1].start() - 40):found[-1].start()]):
        return None
    return _as_number(*found[-1].groups())
