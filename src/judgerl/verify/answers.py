"""Final-answer extraction and exact answer equivalence for verifiable math labels.

Pure functions, run in-process (no worker): :func:`extract_final_answer` finds the answer a
solution states, :func:`normalize_answer` reads it (delimiters, money, percent, units, thousands
separators, decimals as exact fractions) and :func:`equivalent` decides ``True`` / ``False`` /
``None`` ("don't know"). A wrong True is the worst outcome (it becomes a wrong training label),
so anything ambiguous is None: a unit on one side that could be a conversion (``50 cents`` vs
``0.5``), ``50%`` vs ``0.5``, a decimal that only approximates an exact answer (``3.14`` vs
``\\pi``), ``4/3\\pi`` (``(4/3)\\pi`` or ``4/(3\\pi)``?), text inside math, power towers and huge
factorials. LaTeX is parsed by math-verify's engine; the comparison itself is
:mod:`judgerl.verify.mathexpr` (exact, unlike ``math_verify.verify``; see there for why).

Sympy work has no timeout here: :class:`judgerl.verify.math.MathVerifier` runs
:func:`equivalent` in a worker process with a hard deadline. Call it in-process only on
answers you trust to be small (the string guards below refuse the known blow-ups).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from judgerl.verify import _answer_latex as L
from judgerl.verify import _answer_text as T

logger = logging.getLogger(__name__)


class UndecidableAnswer(ValueError):
    """An answer that cannot be compared reliably; ``reason`` says why (e.g. ``"text inside math"``)."""

    def __init__(self, answer: str, reason: str) -> None:
        self.answer = answer
        self.reason = reason
        super().__init__(f"{reason}: {answer[:80]!r}")


@dataclass(frozen=True)
class Answer:
    """A normalised final answer.

    Attributes:
        raw: The answer as given.
        kind: ``"number"`` (exact rational in ``number``), ``"expr"`` (LaTeX in ``text`` for the
            parser), ``"tuple"`` (``brackets`` + ``items``: ``(a, b]``, ``(1, 2, 3)``),
            ``"union"`` (``items`` are the LaTeX of 2-element bracketed intervals) or ``"text"``
            (lower-cased words in ``text``).
        unit: Canonical unit (``"cm"``, ``"dollar"``, ``"degree"``, …) stripped from the end.
        unit_ambiguous: The unit was one letter (``5 m``): it may be a variable.
        percent: A ``%`` / ``\\%`` / "percent" was stripped.
        scale: Multiplier word stripped (``5 million`` -> 1000000), else 1.
        decimals: Fewest decimal places among the decimal numbers written, None if none; a
            decimal is read exactly (``0.1`` is 1/10) but may be a rounded approximation. In
            scientific notation the places count from the value's point (``7.2e-9`` and
            ``7.2 \\times 10^{-9}``: 10), so ``7.2e-9`` vs ``7.2e-10`` is a difference, not a rounding.
    """

    raw: str
    kind: Literal["number", "expr", "tuple", "union", "text"]
    text: str = ""
    number: Fraction | None = None
    brackets: str = ""
    items: tuple[str, ...] = ()
    unit: str | None = None
    unit_ambiguous: bool = False
    percent: bool = False
    scale: int = 1
    decimals: int | None = None


# ----------------------------------------------------------------------------- extraction

_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
# Greedy ".*" then strip() in Python: a lazy ".+?" before "[ \t]*$" is quadratic on long space runs.
_HASHES = re.compile(r"^[ \t]*####(.*)$", re.MULTILINE)
_A_LINE = re.compile(r"^[ \t]*A:(.*)$", re.MULTILINE)
_ANSWER_IS = re.compile(r"\b(?:final answer|answer)\**[ \t]*(?:is|was|=|:)[ \t]*\**[ \t]*:?", re.IGNORECASE)


def extract_final_answer(text: str) -> str | None:
    """The final answer a solution states, or None when it states none.

    Looks, in order, for the last ``\\boxed{…}`` / ``\\fbox{…}`` (its content; nested boxes give
    the innermost), the last GSM8K ``#### N`` line, the last ``A: N`` line (GSM8K model
    solutions), and the last "the answer is …" / "final answer: …" (up to the end of its
    sentence or line). Surrounding ``$…$``, ``\\(…\\)``, ``\\[…\\]`` and markdown ``**`` are
    removed; ``\\$`` (money), units and ``%`` are kept for :func:`normalize_answer`. Nothing is
    guessed from bare numbers: a solution that never states its answer has none.

    Args:
        text: A whole solution.

    Returns:
        The answer text, e.g. ``"\\\\frac{1}{2}"``, ``"\\\\$460"``, ``"18"``; None if none.
    """
    boxed = _last_boxed_content(text)
    if boxed is not None:
        return _clean(boxed)
    for pattern in (_HASHES, _A_LINE):
        found = pattern.findall(text)
        if found and found[-1].strip():
            return _clean(found[-1])
    last = None
    for last in _ANSWER_IS.finditer(text):
        pass
    if last is not None:
        return _clean(T.cut_sentence(text[last.end() :]))
    return None


def _clean(answer: str) -> str | None:
    """Wrappers stripped; an answer too long to compare is returned as is (it stays undecidable)."""
    answer = answer.strip()
    if len(answer) > T.MAX_LEN:
        return answer
    return T.strip_wrappers(answer) or None


def _last_boxed_content(text: str) -> str | None:
    """Content of the last ``\\boxed{`` whose brace closes (one pass over ``text``: O(n))."""
    starts = [m.end() - 1 for m in _BOXED.finditer(text)]
    if not starts:
        return None
    closing = T.brace_pairs(text)
    for start in reversed(starts):
        if start in closing:
            return text[start + 1 : closing[start]]
    return None


def strip_calculator_annotations(text: str) -> str:
    """Remove GSM8K calculator annotations ``<<48/2=24>>`` from a solution."""
    return re.sub(r"<<[^<>]*>>", "", text)


# ----------------------------------------------------------------------------- normalisation


def normalize_answer(answer: str) -> Answer:
    """Read one final answer into an :class:`Answer`.

    Steps: unicode and spacing commands; outer ``$…$`` / ``\\(…\\)`` / ``\\boxed{}`` /
    ``\\text{}``; money (``\\$5``, ``$5``, ``5 dollars``); ``%``; a trailing unit (see
    ``_answer_text.UNITS``) or multiplier word (``million``); thousands separators (``1,000``,
    ``1{,}000``, ``1\\,000``); mixed numbers (``2 1/2``); scientific notation; plain-text math
    (``pi``, ``sqrt``, ``**``, ``>=``, ``or``); then the string guards.

    Raises:
        UndecidableAnswer: empty, longer than 1000 characters, a stray ``$``, a comma between
            digits that is not a thousands separator (``3,5``), ``a/bc``, ``a/b/c`` and
            ``a^b^c`` (ambiguous), ``!!``, power towers, numbers above 20,000 digits (above 300
            under a root or function), exponents above 200 on a non-number, or words that are
            not math (text inside an expression).
    """
    if len(answer) > T.MAX_LEN:
        raise UndecidableAnswer(answer, f"longer than {T.MAX_LEN} characters")
    s = T.strip_wrappers(T.unwrap_math_spans(T.strip_wrappers(T.clean_spacing(answer))))
    if not s:
        raise UndecidableAnswer(answer, "empty")
    s, unit = T.take_money(s)
    s, percent = T.take_percent(s)
    s, unit2, ambiguous = T.take_unit(s)
    if unit2 is not None:
        if unit is not None and unit2 != unit:
            raise UndecidableAnswer(answer, "two units")
        unit = unit2
    s, scale = T.take_scale(s)
    if not percent:
        s, percent = T.take_percent(s)
    s = T.strip_wrappers(s)
    if not s:
        raise UndecidableAnswer(answer, "no value")
    if "$" in s:
        raise UndecidableAnswer(answer, "stray '$'")
    common = {"unit": unit, "unit_ambiguous": ambiguous, "percent": percent, "scale": scale}
    words = T.as_text(s)
    if words is not None:
        return Answer(answer, "text", text=words, **common)
    number = T.read_number(s)
    if number is not None:
        value, decimals = number
        return Answer(answer, "number", text=s, number=value, decimals=decimals, **common)
    if T.COMMA_DIGITS.fullmatch(s):
        raise UndecidableAnswer(answer, "comma between digits (decimal comma or a list?)")
    try:
        latex, decimals = L.to_parser_latex(s)
    except ValueError as e:
        raise UndecidableAnswer(answer, str(e)) from None
    union = L.split_top(latex, r"\cup")
    if len(union) > 1:
        parts = [L.bracketed(part) for part in union]
        if any(p is None or len(p[1]) != 2 for p in parts):
            raise UndecidableAnswer(answer, "a union of something other than intervals")
        return Answer(answer, "union", text=latex, items=tuple(union), decimals=decimals, **common)
    tup = L.bracketed(latex)
    if tup is not None:
        brackets, items = tup
        return Answer(answer, "tuple", text=latex, brackets=brackets, items=tuple(items), decimals=decimals, **common)
    return Answer(answer, "expr", text=latex, decimals=decimals, **common)


# ----------------------------------------------------------------------------- equivalence


def equivalent(gold: str, pred: str) -> bool | None:
    """Whether answer ``pred`` is the same as answer ``gold`` (both final answers, not solutions).

    Args:
        gold: The reference answer, e.g. ``"18"``, ``"\\\\frac{\\\\pi}{2}"``, ``"(1, 2]"``.
        pred: The answer to check.

    Returns:
        True when provably the same; False when provably different; None ("don't know") when
        either answer is undecidable (see :func:`normalize_answer`), the kinds are not
        comparable, or a difference could be a unit conversion, a percent reading or a
        rounding (``50 cents`` vs ``0.5``, ``50%`` vs ``0.5``, ``0.33`` vs ``\\frac13``).
        Identical answer texts are True.
    """
    if max(len(gold), len(pred)) > T.MAX_LEN:
        return None
    if T.squash(gold) and T.squash(gold) == T.squash(pred):
        return True
    try:
        g, p = normalize_answer(gold), normalize_answer(pred)
    except UndecidableAnswer:
        return None
    if g.kind == "text" or p.kind == "text":
        return _compare_text(g, p)
    if (g.unit and p.unit and g.unit != p.unit) or g.unit_ambiguous != p.unit_ambiguous:
        return None
    try:
        g_val, p_val = _value(g), _value(p)
        verdict = _compare_values(g, p, g_val, p_val)
        if verdict is True and g.percent != p.percent:
            return _percent_reading(g if p.percent else p, g_val)
        if verdict is not False:
            return verdict
        return _explain_difference(g, p, g_val, p_val)
    except Exception as e:  # sympy raises many types on odd input: undecided, never a crash
        logger.debug("comparison failed (%s: %s) for gold=%r pred=%r", type(e).__name__, e, gold[:80], pred[:80])
        return None


def _compare_values(g: Answer, p: Answer, g_val: Any, p_val: Any) -> bool | None:
    import sympy

    from judgerl.verify import mathexpr as M

    if g.kind == "number" and p.kind == "number":
        return g_val == p_val
    if g.kind == "tuple" and p.kind == "tuple":
        if len(g.items) != len(p.items):
            return False
        elements = M.all_of(M.compare(M.to_sympy(a), M.to_sympy(b)) for a, b in zip(g.items, p.items))
        return False if g.brackets != p.brackets else elements
    if "tuple" in (g.kind, p.kind):
        other = p_val if g.kind == "tuple" else g_val
        if _is_number(other):
            return False  # a pair or interval is not a number
        if isinstance(other, (sympy.FiniteSet, sympy.Tuple, sympy.MatrixBase)):
            return None  # "[1, 2]" vs "\\{1, 2\\}" or a column vector: a list, a point or an interval?
        tup = g if g.kind == "tuple" else p
        as_set = _tuple_interval(tup)
        if as_set is None:
            return None
        return M.compare(as_set, other) if g.kind == "tuple" else M.compare(other, as_set)
    return M.compare(g_val, p_val)


def _percent_reading(plain: Answer, value: Any) -> bool | None:
    """``25%`` vs ``25``: True when the plain side is a whole number written as one (a
    "what percent" answer) or zero; None otherwise (``0.5%`` vs ``\\frac12`` may be 1/200 vs 1/2)."""
    if value == 0:
        return True
    whole = plain.kind == "number" and plain.decimals is None and plain.number is not None
    return True if whole and plain.number.denominator == 1 else None


def _explain_difference(g: Answer, p: Answer, g_val: Any, p_val: Any) -> bool | None:
    """False, or None when the difference may come from scale words, units, % or rounding."""
    import sympy

    if not (_is_number(g_val) and _is_number(p_val)):
        return False
    g_num, p_num = g_val, p_val
    if g.scale != p.scale and g_num / g.scale == p_num / p.scale:
        return None  # "5 million" vs "5": maybe the question asked for millions
    if g.percent != p.percent and (g_num == 100 * p_num or p_num == 100 * g_num):
        return None  # "50%" vs "0.5"
    if (g.unit or p.unit) and p_num != 0 and g_num != 0:
        ratio = g_num / p_num
        if ratio in T.CONVERSION_FACTORS or 1 / ratio in T.CONVERSION_FACTORS:
            return None  # "50 cents" vs "0.5", "90 degrees" vs "pi/2"
    for a, mine, other in ((g, g_num, p_num), (p, p_num, g_num)):
        if a.decimals == 3 and T.EURO_THOUSANDS.fullmatch(a.text) and mine * 1000 ** a.text.count(".") == other:
            return None  # "1.000" may be a European one thousand
    digits = [a.decimals for a in (g, p) if a.decimals is not None]
    if digits and abs(g_num - p_num) <= sympy.Rational(1, 2) * sympy.Rational(10) ** -min(digits):
        return None  # "0.33" vs "1/3": a rounded value of the exact answer
    return False


def _value(a: Answer) -> Any:
    """The sympy value of an answer (scale applied, percent sign dropped: ``50%`` -> 50)."""
    import sympy

    from judgerl.verify import mathexpr as M

    if a.kind == "number":
        assert a.number is not None
        return sympy.Rational(a.number.numerator, a.number.denominator) * a.scale
    if a.kind == "union":
        parts = [_tuple_interval(Answer(a.raw, "tuple", brackets=b, items=tuple(i)))
                 for b, i in (L.bracketed(x) or ("", []) for x in a.items)]
        if any(x is None for x in parts):
            raise ValueError("reversed or open-ended interval in a union")
        return sympy.Union(*parts)
    if a.kind == "tuple":
        return sympy.Tuple(*(M.to_sympy(x) for x in a.items))
    value = M.to_sympy(a.text)
    return value * a.scale if a.scale != 1 else value


def _tuple_interval(a: Answer) -> Any:
    """The interval a 2-element bracketed answer denotes, or None (reversed, not numeric)."""
    from judgerl.verify import mathexpr as M

    if len(a.items) != 2:
        return None
    try:
        start, end = (M.to_sympy(x) for x in a.items)
    except ValueError:
        return None
    return M.interval(a.brackets[0] == "(", start, end, a.brackets[1] == ")")


def _is_number(value: Any) -> bool:
    import sympy

    return isinstance(value, sympy.Expr) and value.is_number and not value.has(sympy.oo, -sympy.oo, sympy.zoo)


def _compare_text(g: Answer, p: Answer) -> bool | None:
    if g.kind == "text" and p.kind == "text":
        if g.text == p.text:
            return True
        words = (g.text, p.text)
        if all(w in T.ANSWER_WORDS for w in words):
            return False  # "yes" vs "no"
        # Different single words are different answers, unless short enough to be a product of
        # variables ("ab" vs "ba"); phrases may be paraphrases ("no solution" vs "none").
        return False if all(" " not in w and len(w) > 3 for w in words) else None
    text, other = (g, p) if g.kind == "text" else (p, g)
    if other.kind == "number" and not T.has_number_word(text.text):
        return False  # "monday" vs 18
    return None


__all__ = [
    "Answer",
    "UndecidableAnswer",
    "equivalent",
    "extract_final_answer",
    "normalize_answer",
    "strip_calculator_annotations",
]
