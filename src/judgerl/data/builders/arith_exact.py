"""Exact arithmetic for the arithmetic-form builders: values, step-by-step working, plausible slips.

:func:`judgerl.data.builders.arith.evaluate` reads integer ``+ - *`` expressions only. The forms of
:mod:`judgerl.data.builders.arith_forms` also need ``/``, decimals and negatives, so here an
expression (Python syntax, no thousands separators: ``"(23060 + 72268) * -3.5"``) is read into
exact :class:`fractions.Fraction` values -- never floats, so a label can never come from a rounding.

* :func:`exact_value` -- the value of an expression; :func:`steps` -- its binary operations in
  evaluation order (the working a careful solver writes), each with its exact result;
* :func:`fmt` -- a value as a decimal numeral, optionally with thousands separators;
* :func:`slip` -- a wrong value near a right one (off by one / ten / a thousand, two digits swapped,
  a lost sign, a shifted decimal point), for wrong responses and corrupted solutions;
* :func:`left_to_right` -- the value a solver who ignores precedence and parentheses gets.
"""

from __future__ import annotations

import ast
import random
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Mapping

_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_TEXT = re.compile(r"[0-9+\-*/(). ]+")
MAX_EXPRESSION_CHARS = 300
#: Refused beyond this many digits in a value (no arithmetic pair needs them).
MAX_DIGITS = 60
#: Decimal places :func:`fmt` writes at most; a value needing more is not written as a decimal.
MAX_PLACES = 6


@dataclass(frozen=True)
class Step:
    """One binary operation of an expression: ``left op right = value`` (exact values)."""

    left: Fraction
    op: str
    right: Fraction
    value: Fraction


def _bad(expression: object, why: str) -> ValueError:
    return ValueError(f"not an exact + - * / expression ({why}): {expression!r:.200}")


def _number(node: ast.AST, expression: str) -> Fraction | None:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        seg = ast.get_source_segment(expression, node)
        if seg is None or not re.fullmatch(r"\d+(\.\d+)?", seg):
            raise _bad(expression, f"number {seg!r}")
        return Fraction(seg)
    return None


def _walk(node: ast.AST, expression: str, out: list[Step], override: Mapping[int, Fraction]) -> Fraction:
    num = _number(node, expression)
    if num is not None:
        return num
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_walk(node.operand, expression, out, override)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left, right = _walk(node.left, expression, out, override), _walk(node.right, expression, out, override)
        op = _OPS[type(node.op)]
        if op == "/" and right == 0:
            raise _bad(expression, "division by zero")
        value = {"+": left + right, "-": left - right, "*": left * right}[op] if op != "/" else left / right
        value = override.get(len(out), value)
        if max(len(str(value.numerator)), len(str(value.denominator))) > MAX_DIGITS:
            raise _bad(expression, "value too large")
        out.append(Step(left, op, right, value))
        return value
    raise _bad(expression, f"unsupported {type(node).__name__}")


def _parse(expression: str) -> ast.AST:
    if (not isinstance(expression, str) or not expression or len(expression) > MAX_EXPRESSION_CHARS
            or not _TEXT.fullmatch(expression) or expression != expression.strip()):
        raise _bad(expression, f"only digits, + - * / ( ) . and spaces, at most {MAX_EXPRESSION_CHARS} characters")
    try:
        return ast.parse(expression, mode="eval").body
    except (SyntaxError, RecursionError, MemoryError):
        raise _bad(expression, "syntax") from None


def exact_value(expression: str) -> Fraction:
    """The exact value of an expression of numbers, ``+ - * /``, unary minus and parentheses.

    Numbers are ASCII digits with an optional decimal part (``3.75``; read exactly, 3.75 = 15/4).

    Raises:
        ValueError: other text (names, calls, ``**``, ``1e3``, separators), a division by zero,
            a value above :data:`MAX_DIGITS` digits (the message quotes the expression).
    """
    return _walk(_parse(expression), expression, [], {})


def steps(expression: str, override: Mapping[int, Fraction] | None = None) -> list[Step]:
    """The binary operations of ``expression`` in evaluation order (innermost first, left to right).

    Args:
        expression: As for :func:`exact_value`.
        override: ``{k: value}``: step ``k`` (0-based, in this order) *results in* ``value`` instead of
            its true result, and every later step uses it -- a slip that propagates, as a solver's
            would. The last step's value is then the slipped final answer.

    Raises:
        ValueError: as :func:`exact_value`.
    """
    out: list[Step] = []
    _walk(_parse(expression), expression, out, override or {})
    return out


def is_decimal(value: Fraction) -> bool:
    """Whether ``value`` is a terminating decimal of at most :data:`MAX_PLACES` places."""
    return (value * 10 ** MAX_PLACES).denominator == 1


def fmt(value: Fraction | int, separators: bool = False) -> str:
    """``value`` as a decimal numeral: ``-1234.5`` (or ``-1,234.5`` with ``separators``).

    Raises:
        ValueError: ``value`` is not a terminating decimal of at most :data:`MAX_PLACES` places.
    """
    value = Fraction(value)
    if not is_decimal(value):
        raise ValueError(f"{value} is not a decimal of at most {MAX_PLACES} places")
    sign, v = ("-" if value < 0 else ""), abs(value)
    whole, rest = divmod(v.numerator, v.denominator)
    frac = ""
    if rest:
        digits = str(Fraction(rest, v.denominator) * 10 ** MAX_PLACES).rjust(MAX_PLACES, "0").rstrip("0")
        frac = "." + digits
    return f"{sign}{whole:,}{frac}" if separators else f"{sign}{whole}{frac}"


def as_json_number(value: Fraction) -> int | float:
    """``value`` as an ``int`` when whole, else a ``float`` (exact for :func:`fmt`'s decimals)."""
    return value.numerator if value.denominator == 1 else float(fmt(value))


def places(value: Fraction) -> int:
    """Decimal places :func:`fmt` writes for ``value``."""
    text = fmt(value)
    return len(text.split(".")[1]) if "." in text else 0


def slip(value: Fraction, rng: random.Random, kinds: tuple[str, ...] = ()) -> tuple[Fraction, str]:
    """A plausible wrong value near ``value`` and the kind of slip made.

    Kinds: ``off-by-one`` / ``off-by-ten`` (in the last decimal place written), ``off-by-thousand``
    (values of 4+ digits: a carry lost in the thousands), ``digit-swap`` (the last two digits),
    ``sign`` (a negative value written positive or the reverse; nonzero values), ``decimal-point``
    (decimals: the point shifted one place). ``kinds`` restricts the choice (empty: all that apply).

    Returns:
        ``(wrong, kind)`` with ``wrong != value``, a decimal :func:`fmt` can write and not a possible
        rounding of ``value`` or the reverse (:func:`looks_rounded`).

    Raises:
        ValueError: ``value`` is not a decimal :func:`fmt` can write.
    """
    text = fmt(value)
    unit = Fraction(1, 10 ** places(value))
    options: dict[str, list[Fraction]] = {
        "off-by-one": [value + unit, value - unit],
        "off-by-ten": [value + 10 * unit, value - 10 * unit],
    }
    if abs(value) >= 1000:
        options["off-by-thousand"] = [value + 1000, value - 1000]
    digits = text.lstrip("-").replace(".", "")
    if len(digits) >= 2 and digits[-1] != digits[-2]:
        swapped = text[:-2] + text[-1] + text[-2] if text[-2] != "." else None
        if swapped:
            options["digit-swap"] = [Fraction(swapped)]
    if value != 0 and abs(value) >= 2:
        options["sign"] = [-value]
    if value.denominator != 1:
        options["decimal-point"] = [value * 10, value / 10]
    names = [k for k in options if not kinds or k in kinds] or list(options)
    kind = rng.choice(sorted(names))
    fine = [w for w in options[kind] if w != value and is_decimal(w) and not looks_rounded(value, w)]
    return (rng.choice(fine) if fine else value + 10 * unit), kind


def looks_rounded(a: Fraction, b: Fraction) -> bool:
    """Whether one of two different decimals could be the other rounded (``86.8`` vs ``86.79``): such a
    wrong value is not clearly wrong (:func:`judgerl.verify.answers.equivalent` says "don't know")."""
    fewer = min(places(a), places(b))
    return places(a) != places(b) and abs(a - b) <= Fraction(1, 2 * 10 ** fewer)


def left_to_right(expression: str) -> Fraction | None:
    """The value of ``expression`` read strictly left to right, ignoring precedence and parentheses
    (``2 + 3 * 4`` -> 20): the classic precedence error. None when it cannot be formed (a division
    by zero, a leading operator other than ``-``).

    Raises:
        ValueError: ``expression`` is not valid (as :func:`exact_value`).
    """
    exact_value(expression)
    tokens = re.findall(r"\d+(?:\.\d+)?|[-+*/]", expression.replace("(", " ").replace(")", " "))
    acc: Fraction | None = None
    op, neg = None, False
    for t in tokens:
        if t in "+-*/":
            if acc is None or op is not None:
                if t != "-":
                    return None
                neg = not neg
            else:
                op = t
            continue
        x = -Fraction(t) if neg else Fraction(t)
        neg = False
        if acc is None:
            acc = x
        else:
            if op == "/" and x == 0:
                return None
            acc = {"+": acc + x, "-": acc - x, "*": acc * x, "/": acc / x if x else acc}[op]
        op = None
    return acc
