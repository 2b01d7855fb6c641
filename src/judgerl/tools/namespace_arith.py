"""The arithmetic helper of the response namespace: ``value_of(text)``, the value of the arithmetic
expression a question asks about.

A small judge that re-types ``((82 + 46) * 12 - 77) * 5`` into its code drops parentheses or a
``round(...)`` (stop 33: the first mixture SFT judge computed a wrong value in 85-100 % of its held-out
arithmetic judgments, every one from a mis-copied expression), exactly as it mis-copies responses; so
the question is data its code can read too: ``value = value_of(PROMPT)``, then
``number_of(A) == value``. Word problems, whose question holds no expression, still need the judge's
own steps.

* :func:`question_expression` -- the longest span of a text that is plain arithmetic: numbers (with
  thousands separators ``23,060``), ``+ - * /``, ``×`` ``÷`` ``−``, ``x`` between numbers, parentheses;
  unmatched outer parentheses trimmed; None when no span evaluates;
* :func:`value_of` -- its value, exact (:class:`fractions.Fraction` arithmetic, never floats): an
  ``int`` when whole, else the ``float`` of its decimal (the float ``number_of`` reads from the same
  decimal written out, so ``number_of(A) == value`` compares like with like); None when the text holds
  no expression, a division by zero, or a value over :data:`MAX_DIGITS` digits.

Standard-library only and self-contained, like :mod:`.namespace_helpers`: the sandbox executes this
source before the judge's code, and the host imports it (the arithmetic teacher reads questions with
the same :func:`question_expression`). The exact reading follows
:func:`judgerl.data.builders.arith_exact.exact_value` (the builders' labels); a test checks that they
agree on every builder form.
"""

import ast
import re
from fractions import Fraction

#: A span of the question that may be an expression: numbers (with separators), operators, parentheses.
#: Possessive quantifiers and a start that is not inside a run: linear on any text (``"1," * 50000``).
_SPAN = re.compile(r"(?<![-−(\d,.])[-−(]*+\d[\d,.]*+\s*+\)*+\s*+"
                   r"(?:[-+*/×÷x−][\s(]*+[-−]?\d[\d,.]*+\s*+\)*+\s*+)++")
_SEP = re.compile(r"(?<=\d),(?=\d{3}\b)")
_EXPR_TEXT = re.compile(r"[0-9+\-*/(). ]+")
_EXPR_NUMBER = re.compile(r"\d+(\.\d+)?")
_EXPR_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b}
#: Longest expression read (characters); a longer span is no question's arithmetic.
MAX_EXPRESSION_CHARS = 300
#: Largest value read (digits of its numerator or denominator).
MAX_DIGITS = 60
#: Longest text searched for an expression (characters): a question is not a megabyte.
MAX_TEXT_CHARS = 20000


def _exact(node, expression):
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        seg = ast.get_source_segment(expression, node)
        if seg is None or not _EXPR_NUMBER.fullmatch(seg):
            raise ValueError(seg)
        return Fraction(seg)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_exact(node.operand, expression)
    if isinstance(node, ast.BinOp) and (type(node.op) in _EXPR_OPS or isinstance(node.op, ast.Div)):
        left, right = _exact(node.left, expression), _exact(node.right, expression)
        if isinstance(node.op, ast.Div):
            if right == 0:
                raise ValueError("division by zero")
            value = left / right
        else:
            value = _EXPR_OPS[type(node.op)](left, right)
        if max(len(str(value.numerator)), len(str(value.denominator))) > MAX_DIGITS:
            raise ValueError("value too large")
        return value
    raise ValueError(type(node).__name__)


def _exact_value(expression):
    """The exact value of ``expression`` (digits, ``+ - * /``, unary minus, parentheses); ValueError else."""
    if (not expression or len(expression) > MAX_EXPRESSION_CHARS or not _EXPR_TEXT.fullmatch(expression)
            or expression != expression.strip()):
        raise ValueError("not an expression")
    try:
        tree = ast.parse(expression, mode="eval").body
    except (SyntaxError, RecursionError, MemoryError):
        raise ValueError("syntax") from None
    return _exact(tree, expression)


def _balanced(expr):
    """``expr`` with unmatched outer parentheses trimmed, or None when they cannot be balanced."""
    while expr.count("(") > expr.count(")") and expr.startswith("("):
        expr = expr[1:].lstrip()
    while expr.count(")") > expr.count("(") and expr.endswith(")"):
        expr = expr[:-1].rstrip()
    return expr if expr.count("(") == expr.count(")") else None


def question_expression(question):
    """The arithmetic expression ``question`` asks about (the longest operator-bearing span that
    evaluates, ``×`` ``÷`` ``−`` and thousands separators normalised), or None when there is none."""
    if not isinstance(question, str):
        return None
    best = None
    for m in _SPAN.finditer(question[:MAX_TEXT_CHARS]):
        raw = m.group(0).strip().rstrip(".,")
        expr = _SEP.sub("", raw).replace("×", "*").replace("÷", "/").replace("−", "-")
        expr = re.sub(r"(?<=[\d)\s])x(?=[\s(\d])", "*", expr)
        expr = _balanced(" ".join(expr.split()))
        if expr is None:
            continue
        try:
            _exact_value(expr)
        except ValueError:
            continue
        if best is None or len(expr) > len(best):
            best = expr
    return best


def exact_value_of(text):
    """The exact value (a :class:`~fractions.Fraction`) of the expression ``text`` asks about, or None."""
    expr = question_expression(text)
    return None if expr is None else _exact_value(expr)


def value_of(text):
    """The value of the arithmetic expression ``text`` asks about (see the module docstring): an ``int``
    when whole, else a ``float``; None when there is none."""
    value = exact_value_of(text)
    if value is None:
        return None
    if value.denominator == 1:
        return value.numerator
    return float(value)
