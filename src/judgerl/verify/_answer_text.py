"""String-level reading of final answers (wrappers, money, percent, units, numbers, text) for
:mod:`judgerl.verify.answers`; no sympy here. Parser input and guards: :mod:`._answer_latex`.

Each helper takes and returns plain strings; the rules are documented where they are applied
(:func:`judgerl.verify.answers.normalize_answer`).
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

MAX_LEN = 1000
#: Largest number (decimal digits) an answer may produce: 1/2006! (5,760 digits) is fine.
MAX_DIGITS = 20_000
#: ... and under a root, log or trig function (sympy factors the argument: sqrt(10^3000+1) takes 5 s).
MAX_DIGITS_UNDER_ROOT = 300
#: Largest exponent on anything but a plain integer (simplify((1+sqrt(2))^100000 - 1) runs for minutes).
MAX_EXPONENT_EXPR = 200

_UNICODE = {
    "\u2212": "-", "\u2013": "-", "\u2014": "-", "\u00d7": r"\times ", "\u00f7": r"\div ",
    "\u00b7": r"\cdot ", "\u03c0": r"\pi ", "\u221e": r"\infty ", "\u221a": r"\sqrt",
    "\u2264": r"\le ", "\u2265": r"\ge ", "\u2260": r"\ne ", "\u00b0": r"^\circ",
    "\u00bd": r"\frac{1}{2}", "\u2153": r"\frac{1}{3}", "\u00bc": r"\frac{1}{4}", "\u00be": r"\frac{3}{4}",
    "\u00a0": " ", "\u2009": " ", "\u202f": " ", "\uff04": "$", "\uff05": "%", "\u00b2": "^2", "\u00b3": "^3",
}
_SPACING = re.compile(r"\\[,;:! ]|\\q?quad\b|~")


def clean_spacing(s: str) -> str:
    """Unicode math symbols to LaTeX, LaTeX spacing commands to spaces (``1\\,000`` -> ``1 000``)."""
    for k, v in _UNICODE.items():
        s = s.replace(k, v)
    s = _SPACING.sub(lambda m: "" if m.group() == r"\!" else " ", s)
    return s.replace("{,}", ",")


def brace_pairs(s: str) -> dict[int, int]:
    """``{index of "{": index of its "}"}`` for every balanced pair (``\\{``/``\\}`` skipped), one pass."""
    pairs, stack, i = {}, [], 0
    while i < len(s):
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            stack.append(i)
        elif c == "}" and stack:
            pairs[stack.pop()] = i
        i += 1
    return pairs


def matching_brace(s: str, open_idx: int) -> int | None:
    """Index of the ``}`` closing the ``{`` at ``open_idx`` (``\\{`` / ``\\}`` skipped), or None."""
    depth, i = 0, open_idx
    while i < len(s):
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


_WRAPPERS = re.compile(r"\\(?:boxed|fbox|text|textbf|textit|textrm|mbox|mathrm|mathbf|displaystyle)\s*\{")
_LEFT_RIGHT = re.compile(r"\\(?:left|right|big|Big|bigg|Bigg)(?:\.|(?=[\\(\[\]|)]))")


def strip_wrappers(s: str) -> str:
    """Remove what surrounds a whole answer, repeatedly: whitespace, ``**``, a trailing ``.``,
    ``,``, ``;`` or ``:``, ``$$…$$``, ``$…$``, ``\\(…\\)``, ``\\[…\\]``, ``\\boxed{…}``,
    ``\\text{…}`` and similar; ``\\left``/``\\right`` everywhere; ``\\boxed{X}`` inside -> X."""
    s = _LEFT_RIGHT.sub("", s)
    s = _unbox_inner(s)
    while True:
        before = s
        s = s.strip().strip("*").strip()
        s = re.sub(r"\\displaystyle\s*", "", s)
        while s.endswith((".", ",", ";", ":")) and not s.endswith("\\."):
            s = s[:-1].rstrip()
        for left, right in (("$$", "$$"), ("\\(", "\\)"), ("\\[", "\\]"), ("$", "$")):
            inner = s[len(left) : len(s) - len(right)]
            if len(s) > len(left) + len(right) - 1 and s.startswith(left) and s.endswith(right) \
                    and "$" not in inner.replace("\\$", ""):
                s = inner
                break
        m = _WRAPPERS.match(s)
        if m and matching_brace(s, m.end() - 1) == len(s) - 1:
            s = s[m.end() : -1]
        if s == before:
            return s


_MATH_SPAN = re.compile(r"(?<!\\)\$(?!\$)([^$]+?)(?<!\\)\$(?![\d$])")


def unwrap_math_spans(s: str) -> str:
    """``$5$ dollars`` -> ``5 dollars``: inline ``$…$`` spans inside an answer lose their ``$``.

    A ``$`` followed by a digit does not close a span (``$5 and $6`` is money twice).
    """
    return _MATH_SPAN.sub(lambda m: m.group(1), s)


def _unbox_inner(s: str) -> str:
    while True:
        m = re.search(r"\\(?:boxed|fbox)\s*\{", s)
        if not m:
            return s
        end = matching_brace(s, m.end() - 1)
        if end is None:
            return s
        s = s[: m.start()] + s[m.end() : end] + s[end + 1 :]


def cut_sentence(tail: str) -> str:
    """The start of ``tail`` up to its line end or the first sentence-ending ``.`` outside math."""
    tail = tail.split("\n", 1)[0]
    last_dollar = tail.rfind("$")
    in_dollar, depth, i = False, 0, 0
    while i < len(tail):
        c = tail[i]
        if c == "\\":
            if tail.startswith(("\\(", "\\[" ), i):
                depth += 1
            elif tail.startswith(("\\)", "\\]"), i):
                depth -= 1
            i += 2
            continue
        if c == "$":
            # "$5 and" (money) does not open math: a math "$" is followed by a closing one.
            if in_dollar or i < last_dollar:
                in_dollar = not in_dollar
        elif c in "{":
            depth += 1
        elif c in "}":
            depth -= 1
        elif c == "." and not in_dollar and depth <= 0 and (i + 1 == len(tail) or tail[i + 1].isspace()):
            break
        i += 1
    return tail[:i]


def squash(s: str) -> str:
    """An answer's text without wrappers, whitespace runs collapsed (not removed: ``1 2`` is not
    ``12``), for the identical-text shortcut."""
    return " ".join(strip_wrappers(clean_spacing(s)).split())


# ----------------------------------------------------------------------------- money, %, units

_MONEY_LEAD = re.compile(r"^(-?)\s*\\?\$\s*(?=[-\d.])")
_MONEY_TAIL = re.compile(r"(?<=[\d.])\s*\\?\$$")


def take_money(s: str) -> tuple[str, str | None]:
    """``\\$5``, ``$5``, ``-$5``, ``5$`` -> (``5``, ``"dollar"``); else (s, None)."""
    m = _MONEY_LEAD.match(s)
    if m:
        return m.group(1) + s[m.end() :], "dollar"
    m = _MONEY_TAIL.search(s)
    if m:
        return s[: m.start()], "dollar"
    return s, None


_PERCENT = re.compile(r"\s*(?:\\?%|\bper\s?cent\b|\bpct\b)$", re.IGNORECASE)


def take_percent(s: str) -> tuple[str, bool]:
    """Strip a trailing ``%`` / ``\\%`` / "percent"."""
    m = _PERCENT.search(s)
    return (s[: m.start()].rstrip(), True) if m else (s, False)


#: Unit spellings -> canonical unit. One-letter units (m, s, h, g, L) are read only after a plain
#: number and a space, and marked ambiguous (``5 m`` may be five times m).
UNITS: dict[str, str] = {}
for _canon, _spellings in {
    "mm": "mm millimeter millimeters millimetre millimetres",
    "cm": "cm centimeter centimeters centimetre centimetres",
    "m": "meter meters metre metres",
    "km": "km kilometer kilometers kilometre kilometres",
    "in": "in inch inches",
    "ft": "ft foot feet",
    "yd": "yd yard yards",
    "mi": "mi mile miles",
    "mg": "mg milligram milligrams",
    "g": "gram grams",
    "kg": "kg kilogram kilograms kilo kilos",
    "lb": "lb lbs pound pounds",
    "oz": "oz ounce ounces",
    "t": "ton tons tonne tonnes",
    "ml": "ml milliliter milliliters millilitre millilitres",
    "l": "liter liters litre litres",
    "gal": "gal gallon gallons",
    "cup": "cup cups",
    "qt": "qt quart quarts",
    "pt": "pint pints",
    "s": "sec secs second seconds",
    "min": "min mins minute minutes",
    "h": "hr hrs hour hours",
    "day": "day days",
    "week": "week weeks wk wks",
    "month": "month months",
    "year": "year years yr yrs",
    "dollar": "dollar dollars usd",
    "cent": "cent cents",
    "euro": "euro euros",
    "degree": "degree degrees deg ^\\circ ^{\\circ} \\circ \\degree",
    "mph": "mph",
    "km/h": "km/h kmh kph",
    "m/s": "m/s",
    "unit": "unit units",
}.items():
    for _s in _spellings.split():
        UNITS[_s] = _canon
_ONE_LETTER_UNITS = {"m": "m", "s": "s", "h": "h", "g": "g", "l": "l", "t": "t"}
_UNIT_ALT = "|".join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True))
_UNIT_RE = re.compile(
    rf"(?<![A-Za-z\\])(?P<area>(?:square|sq\.?|cubic|cu\.?)\s+)?(?P<unit>{_UNIT_ALT})"
    rf"(?P<pow>\s*\^\s*\{{?\s*[23]\s*\}}?)?\s*$",
    re.IGNORECASE,
)
_TEXT_TAIL = re.compile(r"\\(?:text|mbox|mathrm|textrm)\s*\{([^{}]*)\}\s*(\^\s*\{?\s*[23]\s*\}?)?\s*$")
_PLAIN_NUMBER = re.compile(r"^[+-]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)(?:\s*/\s*\d+)?$")


def take_unit(s: str) -> tuple[str, str | None, bool]:
    """Strip a trailing unit: returns (rest, canonical unit or None, one-letter/ambiguous)."""
    t = s
    m = _TEXT_TAIL.search(t)
    if m and m.group(1).strip():
        t = t[: m.start()] + " " + m.group(1).strip() + (m.group(2) or "")
    m = _UNIT_RE.search(t)
    if m and t[: m.start()].strip():
        rest = t[: m.start()].rstrip()
        spelled = m.group("unit")
        unit = UNITS.get(spelled) or UNITS.get(spelled.lower())
        if unit is not None and not (spelled.isupper() and len(spelled) > 1 and spelled.lower() != "usd"):
            if m.group("area"):
                unit = ("sq " if m.group("area").lower().startswith("s") else "cu ") + unit
            elif m.group("pow"):
                unit = unit + "^" + re.sub(r"\D", "", m.group("pow"))
            return rest, unit, False
    one = re.match(r"^(.*\d)\s+([A-Za-z])\s*$", t)
    if one and one.group(2).lower() in _ONE_LETTER_UNITS and _PLAIN_NUMBER.match(one.group(1).strip()):
        return one.group(1).strip(), _ONE_LETTER_UNITS[one.group(2).lower()], True
    return s, None, False


_SCALES = {"hundred": 100, "thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12, "dozen": 12}
_SCALE_RE = re.compile(r"(?<=[\d}.])\s*(" + "|".join(_SCALES) + r")s?\s*$", re.IGNORECASE)


def take_scale(s: str) -> tuple[str, int]:
    """Strip a trailing multiplier word after a number: ``5 million`` -> (``5``, 1000000)."""
    m = _SCALE_RE.search(s)
    return (s[: m.start()].rstrip(), _SCALES[m.group(1).lower()]) if m else (s, 1)


def conversion_factors() -> set[Any]:
    """Ratios that a unit conversion produces (sympy numbers): 10^k, 60, 3600, 12, 100, pi/180…"""
    import sympy

    base = [10, 100, 1000, 10**6, 10**9, 60, 3600, 24, 7, 12, 36, 3, 16, 365, 1440, 86400, 5280, 1760, 4, 2]
    out: set[Any] = {sympy.Integer(b) for b in base}
    out |= {sympy.pi / 180, 180 / sympy.pi}
    return out


class _Lazy:
    def __init__(self) -> None:
        self._value: set[Any] | None = None

    def __contains__(self, x: Any) -> bool:
        if self._value is None:
            self._value = conversion_factors()
        return x in self._value


CONVERSION_FACTORS = _Lazy()


# ----------------------------------------------------------------------------- text answers

MATH_WORDS = {
    "sin", "cos", "tan", "cot", "sec", "csc", "log", "ln", "exp", "arcsin", "arccos", "arctan",
    "sinh", "cosh", "tanh", "gcd", "lcm", "max", "min", "mod", "det", "sqrt", "pi", "inf",
    "infinity", "infty", "frac", "dfrac", "tfrac", "cdot", "times", "div", "pm", "mp", "le", "ge",
    "leq", "geq", "ne", "neq", "lt", "gt", "in", "cup", "cap", "emptyset", "varnothing", "mathbb",
    "sqrt", "circ", "binom", "overline", "operatorname", "begin", "end", "pmatrix", "bmatrix",
    "matrix", "vmatrix", "cases", "right", "left", "mid", "setminus", "approx", "ln", "log", "e",
}
_NUMBER_WORDS = set(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety "
    "hundred thousand million billion half halves third thirds quarter quarters fourth fourths "
    "none no nothing infinite infinitely infinity all both once twice dozen pair pairs single "
    "double triple first second".split()
)
_TEXT = re.compile(r"[A-Za-z][A-Za-z'\- ]*[A-Za-z]|[A-Za-z]{2,}")


def as_text(s: str) -> str | None:
    """Lower-cased words when the whole answer is words (``Monday``, ``no solution``), else None.

    A single letter (``A``, ``x``) is not text: it is compared as a symbol.
    """
    if not _TEXT.fullmatch(s.strip()):
        return None
    words = " ".join(s.lower().replace("-", " ").split())
    if words in MATH_WORDS:
        return None
    return words


#: Text answers that are different answers whenever they differ.
ANSWER_WORDS = {"yes", "no", "true", "false"}


def has_number_word(text: str) -> bool:
    """Whether a text answer contains a word that can denote a number (``five``, ``none``)."""
    return any(w in _NUMBER_WORDS for w in re.findall(r"[a-z]+", text.lower()))


# ----------------------------------------------------------------------------- numbers

_THOUSANDS = re.compile(r"^[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?$")
_THOUSANDS_SPACE = re.compile(r"^[+-]?\d{1,3}(?: \d{3})+(?:\.\d+)?$")
EURO_THOUSANDS = re.compile(r"[+-]?\d{1,3}(?:\.\d{3})+")
COMMA_DIGITS = re.compile(r"[+-]?\d+(?:,\d+)+(?:\.\d+)?")
_DECIMAL = re.compile(r"^([+-]?)(\d*)\.?(\d*)$")
_FRACTION = re.compile(r"^([+-]?)\s*(\d+)\s*/\s*(\d+)$")
_MIXED = re.compile(r"^([+-]?)(\d+)\s+(\d+)\s*/\s*(\d+)$")
_SCIENTIFIC = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))[eE]([+-]?\d{1,6})$")
_LATEX_FRAC = re.compile(r"^([+-]?)\\frac\s*\{\s*(\d+)\s*\}\s*\{\s*(\d+)\s*\}$")


def read_number(s: str) -> tuple[Fraction, int | None] | None:
    """An exact plain number: ``18``, ``-2.50``, ``1,000``, ``3/4``, ``2 1/2``, ``1.5e3``,
    ``\\frac{3}{4}``. Returns (value, decimal places or None), or None if ``s`` is not one; the
    places of a decimal in scientific notation count from the point of the value (``7.2e-9``: 10,
    ``1.5e3``: -2), so they always say the resolution it was written to."""
    s = s.strip()
    if _THOUSANDS.match(s):
        s = s.replace(",", "")
    elif _THOUSANDS_SPACE.match(s):
        s = s.replace(" ", "")
    m = _DECIMAL.match(s)
    if m and (m.group(2) or m.group(3)):
        sign, whole, frac = m.groups()
        value = Fraction(int(whole or "0") * 10 ** len(frac) + int(frac or "0"), 10 ** len(frac))
        return (-value if sign == "-" else value), (len(frac) if "." in s and frac else None)
    m = _SCIENTIFIC.match(s)
    if m and abs(int(m.group(2))) <= MAX_DIGITS:
        mantissa, decimals = read_number(m.group(1)) or (Fraction(0), None)
        # 7.2e-9 is written to 1e-10: 10 places, not the mantissa's 1 (1.5e3 is to the hundred: -2)
        return mantissa * Fraction(10) ** int(m.group(2)), None if decimals is None else decimals - int(m.group(2))
    for pattern in (_FRACTION, _LATEX_FRAC):
        m = pattern.match(s)
        if m and int(m.group(3)) != 0:
            value = Fraction(int(m.group(2)), int(m.group(3)))
            return (-value if m.group(1) == "-" else value), None
    m = _MIXED.match(s)
    if m and int(m.group(4)) != 0:
        value = int(m.group(2)) + Fraction(int(m.group(3)), int(m.group(4)))
        return (-value if m.group(1) == "-" else value), None
    return None
