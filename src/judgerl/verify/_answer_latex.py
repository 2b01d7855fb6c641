"""LaTeX for the parser from a final answer, and the guards that refuse ambiguous or pathological
answers before sympy sees them (for :mod:`judgerl.verify.answers`; no sympy here).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

from judgerl.verify import _answer_text as T

# ----------------------------------------------------------------------------- parser input

_PLAIN_TO_LATEX = [
    (re.compile(r"(?<![\\A-Za-z])(?:infinity|inf)(?![A-Za-z])"), r"\\infty "),
    (re.compile(r"(?<![\\A-Za-z])pi(?![A-Za-z])"), r"\\pi "),
    (re.compile(r"(?<![\\A-Za-z])sqrt(?![A-Za-z])"), r"\\sqrt"),
    (re.compile(r"\*\*"), "^"),
    (re.compile(r">="), r"\\ge "),
    (re.compile(r"<="), r"\\le "),
    (re.compile(r"(?<![\d)}!\s])!=|(?<=\s)!="), r"\\ne "),
    (re.compile(r"\\varnothing"), r"\\emptyset"),
    (re.compile(r"\\(?:dfrac|tfrac)"), r"\\frac"),
    (re.compile(r"(?<=[^\sA-Za-z\\])\s+(?:or|and)\s+(?=[^\sA-Za-z])|\\text\s*\{\s*(?:or|and)\s*\}"), ", "),
    (re.compile(r"^[A-Za-z]\s*\\in\s*"), ""),
]
_STOP_WORDS = {"or", "is", "at", "of", "to", "by", "no", "on", "an", "as", "be", "it", "so", "we",
               "if", "up", "do", "go", "me", "my", "us", "am", "and", "the", "not", "are", "for"}
#: "a/b" followed by an implicit product: 4/3\pi is (4/3)pi to some and 4/(3pi) to others.
_AMBIGUOUS_SLASH = re.compile(
    r"/\s*(?:\d+(?:\.\d+)?|[A-Za-z])\s*(?:\\(?!right|cdot|times|div)[A-Za-z]|[A-Za-z(\[{])"
)
#: A root, log, trig function or fractional power: sympy factors big integers under these.
_ROOT_OR_FUNCTION = re.compile(
    r"\\(?:sqrt|log|ln|sin|cos|tan|cot|sec|csc|exp)|\^\s*\{?\s*-?\s*(?:\\frac|\d+\s*/|\d*\.\d)"
)
_SLASH_CHAIN = re.compile(r"/\s*[\w.]+\s*/")
_POWER_CHAIN = re.compile(r"\^\s*(?:\{[^{}]*\}|\\[A-Za-z]+|[\w.]+)\s*\^")
_REPEATING = re.compile(r"(\d*)\.(\d*)\\overline\s*\{(\d+)\}")
_DECIMAL_IN = re.compile(r"(?<![\d.])(\d*)\.(\d+)(?![\d.])")
#: `` \times 10^{-9}`` after a decimal (scientific notation in LaTeX); group 1 is the exponent.
_TIMES_TEN = re.compile(r"\s*(?:\\times|\\cdot|\*)\s*10\s*\^\s*\{?\s*([+-]?\s*\d{1,6})\s*\}?")
_SQRT_PAREN = re.compile(r"\\sqrt\s*\(")
#: A number (not a subscript or part of a name) or a closing parenthesis right before an opening bracket, or
#: a closing parenthesis right before a number or ``\frac``: an implicit product (``2(3)``, ``(2)(3)``, ``(2)3``).
_JUXTAPOSED = re.compile(r"((?<![_A-Za-z\\\d.])\d+(?:\.\d+)?|\))\s*(?=(?:\\left\s*)?[(\[]|(?:\\left\s*)?\\\{)"
                         r"|(\))(?=\s*(?:\d|\\frac))")


def to_parser_latex(s: str) -> tuple[str, int | None]:
    """LaTeX for the parser from an answer that is not a plain number; exact decimals.

    Returns:
        (latex, fewest decimal places written or None).

    Raises:
        ValueError: a guard refused the answer (the message is the reason).
    """
    for pattern, repl in _PLAIN_TO_LATEX:
        s = pattern.sub(repl, s)
    if "!!" in s.replace(" ", ""):
        raise ValueError("'!!' (double factorial or a factorial of a factorial)")
    if re.search(r"(?<![_^\d])\d+\s+\.?\d", s):
        raise ValueError("two numbers separated by a space")
    if _AMBIGUOUS_SLASH.search(s):
        raise ValueError("'a/bc' is ambiguous ((a/b)c or a/(bc))")
    if _SLASH_CHAIN.search(s):
        raise ValueError("'a/b/c' is ambiguous")
    if _POWER_CHAIN.search(s):
        raise ValueError("'a^b^c' is ambiguous")
    _check_words(s)
    _check_sizes(s)
    s = _sqrt_parens(s)
    # juxtaposition is a product: the parser reads a number next to a bracketed number as a mixed number
    # (``2(3)`` = 5, ``(2)(3)`` = 5, ``2(\frac{1}{2})`` = 5/2), a wrong True against 5
    s = _JUXTAPOSED.sub(lambda m: (m.group(1) or m.group(2)) + "\\cdot ", s)
    s = _REPEATING.sub(lambda m: _frac_latex(s, m, _repeating_value(m)), s)
    places = [_places(s, m) for m in _DECIMAL_IN.finditer(s)]
    s = _DECIMAL_IN.sub(lambda m: _frac_latex(s, m, _decimal_value(m)), s)
    s = re.sub(r"(?<=\d)\.(?!\d)", "", s)  # "5." inside an expression
    return s, (min(places) if places else None)


def _sqrt_parens(s: str) -> str:
    """``\\sqrt(x+1)`` (plain text ``sqrt(x+1)`` after the rewrites above) -> ``\\sqrt{x+1}``,
    up to the matching parenthesis. math-verify's own rewrite (``sqrt\\s?\\((.*?)\\)``) would
    see the ``sqrt(`` inside ``\\sqrt(`` and stop at the first ``)``."""
    out, i = [], 0
    for m in _SQRT_PAREN.finditer(s):
        if m.start() < i:
            continue  # inside a root already rewritten (nested roots are rewritten recursively)
        depth = 0
        for j in range(m.end() - 1, len(s)):
            depth += {"(": 1, ")": -1}.get(s[j], 0)
            if depth == 0:
                out += [s[i : m.start()], "\\sqrt{", _sqrt_parens(s[m.end() : j]), "}"]
                i = j + 1
                break
    return "".join(out) + s[i:] if out else s


def _places(s: str, m: re.Match) -> int:
    """Decimal places of the decimal ``m`` as a resolution: ``7.2`` -> 1, but ``7.2 \\times 10^{-9}``
    -> 10 (it is written to 1e-10) and ``1.5 \\times 10^{3}`` -> -2."""
    power = _TIMES_TEN.match(s, m.end())
    return len(m.group(2)) - (int(power.group(1).replace(" ", "")) if power else 0)


def _repeating_value(m: re.Match) -> Fraction:
    """``0.1\\overline{6}`` -> 1/6: whole + fixed digits + repeating digits / (10^r - 1) / 10^f."""
    whole, fixed, rep = m.group(1) or "0", m.group(2), m.group(3)
    fixed_part = Fraction(int(fixed or "0"), 10 ** len(fixed))
    return int(whole) + fixed_part + Fraction(int(rep), (10 ** len(rep) - 1) * 10 ** len(fixed))


def _decimal_value(m: re.Match) -> Fraction:
    """``12.50`` -> 25/2, exactly."""
    return Fraction(int((m.group(1) or "0") + m.group(2)), 10 ** len(m.group(2)))


def _frac_latex(s: str, m: re.Match, value: Fraction) -> str:
    """``\\frac{p}{q}`` for an exact number; braced after ``^``/``_`` (a bare ``{…}`` elsewhere
    would parse as a set)."""
    frac = "\\frac{%d}{%d}" % (value.numerator, value.denominator)
    return "{" + frac + "}" if s[: m.start()].rstrip().endswith(("^", "_")) else frac


def _check_words(s: str) -> None:
    for m in re.finditer(r"\\(?:text|mbox|mathrm|textrm|textbf|operatorname)\s*\{([^{}]*)\}", s):
        content = m.group(1).strip()
        if len(re.sub(r"[^A-Za-z]", "", content)) > 1 and content.lower() not in T.MATH_WORDS:
            raise ValueError("text inside math")
    bare = re.sub(r"\\[A-Za-z]+", " ", s)
    for word in re.findall(r"[A-Za-z]{2,}", bare):
        w = word.lower()
        if w in _STOP_WORDS or (len(w) > 2 and w not in T.MATH_WORDS):
            raise ValueError(f"word {word!r} in a math answer")


def _check_sizes(s: str) -> None:
    """Refuse answers whose numbers sympy cannot handle quickly (its ``sqrt`` of a 10,000-digit
    non-square runs for minutes; ``9^(9^(9^9))`` never ends)."""
    digits = _max_digits(s)
    if digits > T.MAX_DIGITS:
        raise ValueError(f"a number above {T.MAX_DIGITS} digits")
    if digits > T.MAX_DIGITS_UNDER_ROOT and _ROOT_OR_FUNCTION.search(s):
        raise ValueError(f"a root or function of a number above {T.MAX_DIGITS_UNDER_ROOT} digits")


def _max_digits(s: str) -> float:
    """Estimated decimal digits of the largest integer a power or factorial in ``s`` produces."""
    best = float(max((len(n) for n in re.findall(r"\d+", s)), default=0))
    for i, c in enumerate(s):
        if c == "^":
            exponent = _group_after(s, i + 1)
            if "^" in exponent and not re.search(r"[A-Za-z]", re.sub(r"\\[A-Za-z]+", "", exponent)):
                raise ValueError("power tower")
            base, numeric_base = _group_before(s, i)
            plain = re.fullmatch(r"\s*[+-]?\s*(\d+)\s*", exponent)
            numbers = [int(n) for n in re.findall(r"\d+", exponent)]
            if not plain and any(n > T.MAX_EXPONENT_EXPR for n in numbers):
                raise ValueError(f"an exponent expression with numbers above {T.MAX_EXPONENT_EXPR}")
            power = int(plain.group(1)) if plain else max(numbers, default=1)
            if not numeric_base and power > T.MAX_EXPONENT_EXPR:
                raise ValueError(f"exponent above {T.MAX_EXPONENT_EXPR} on a non-number base")
            base_digits = math.log10(int(base)) if numeric_base and int(base) > 1 else max(_max_digits(base), 1.0)
            best = max(best, power * (base_digits if numeric_base else max(base_digits, 1.0)))
        elif c == "!":
            before = s[:i].rstrip()
            if before.endswith((")", "}", "]")):
                raise ValueError("factorial of an expression")
            m = re.search(r"(\d+)$", before)
            if m:
                n = int(m.group(1))
                if n > 10**7:
                    raise ValueError(f"a number above {T.MAX_DIGITS} digits")
                best = max(best, math.lgamma(n + 1) / math.log(10))
    return best


def _group_before(s: str, i: int) -> tuple[str, bool]:
    """The base written before position ``i`` (a ``^``): (text, whether it is a plain integer)."""
    j = i
    while j > 0 and s[j - 1] == " ":
        j -= 1
    m = re.search(r"(\d+)$", s[:j])
    if m:
        return m.group(1), True
    if j > 0 and s[j - 1] in ")}]":
        close, depth = s[j - 1], 0
        opening = {")": "(", "}": "{", "]": "["}[close]
        for k in range(j - 1, -1, -1):
            depth += {close: 1, opening: -1}.get(s[k], 0)
            if depth == 0:
                return s[k:j], False
        return s[:j], False
    return s[max(0, j - 1) : j], False


def _group_after(s: str, i: int) -> str:
    while i < len(s) and s[i] == " ":
        i += 1
    if i < len(s) and s[i] in "{(":
        close = "}" if s[i] == "{" else ")"
        depth = 0
        for j in range(i, len(s)):
            depth += {s[i]: 1, close: -1}.get(s[j], 0)
            if depth == 0:
                return s[i + 1 : j]
        return s[i + 1 :]
    m = re.match(r"-?\d+|\\[A-Za-z]+|.", s[i:])
    return m.group() if m else ""


# ----------------------------------------------------------------------------- structure


def split_top(s: str, sep: str) -> list[str]:
    """Split on ``sep`` outside any (), [], {} nesting; items stripped."""
    out, depth, start, i = [], 0, 0, 0
    while i < len(s):
        if s.startswith(sep, i) and depth == 0:
            out.append(s[start:i].strip())
            i += len(sep)
            start = i
            continue
        c = s[i]
        if c == "\\" and not s.startswith(sep, i):
            i += 2 if i + 1 < len(s) and not s[i + 1].isalpha() else 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        i += 1
    out.append(s[start:].strip())
    return out


def bracketed(s: str) -> tuple[str, list[str]] | None:
    """``(a, b]`` -> (``"(]"``, [``a``, ``b``]) for a bracketed list with >= 2 items, else None."""
    s = s.strip()
    if len(s) < 2 or s[0] not in "([" or s[-1] not in ")]":
        return None
    depth = 0
    for i, c in enumerate(s):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0 and i != len(s) - 1:
                return None  # "(1)(2)": not one bracketed list
    items = split_top(s[1:-1], ",")
    if len(items) < 2 or not all(items):
        return None
    return s[0] + s[-1], items
