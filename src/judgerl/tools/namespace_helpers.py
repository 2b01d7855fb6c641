"""The helpers of the response namespace: ``code_of(text)`` and ``number_of(text)``.

A tool-using judge with the response namespace on (:mod:`judgerl.tools.namespace`) finds the texts
under judgment as variables (``A``, ``B``, ``RESPONSE``, ``RESPONSES``, ``PROMPT``) and these two
functions in the namespace of every code block it writes, so it calls ``exec(code_of(A), ns)`` or
``number_of(B) == value`` instead of re-typing a response (copying is what small judges get wrong).

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
  (``two hundred sixty-seven``, ``minus forty-five``) count as numbers. Returns an ``int`` when the
  value is whole, else a ``float``; None when the text states no number.
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


def number_of(text):
    """The final number ``text`` states (see the module docstring), or None."""
    if not isinstance(text, str):
        return None
    text = _spell_out(text.replace("\u2212", "-"))
    markers = list(_MARKER.finditer(text))
    if markers:
        m = _NUMBER.search(text, markers[-1].end())
        if m is not None:
            return _as_number(*m.groups())
    found = list(_NUMBER.finditer(text))
    return _as_number(*found[-1].groups()) if found else None
