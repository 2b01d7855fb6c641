"""Exact comparison of parsed math answers (sympy), with the guards math-verify lacks.

Parsing uses math-verify's own LaTeX engine (``latex2sympy2_extended``: ``normalize_latex`` then
``latex2sympy``), but none of ``math_verify.verify``'s comparison heuristics, because several of
them return True for different answers (checked against math-verify 0.9.0's ``grader.py``):

* ``sympy_numeric_eq`` compares non-float expressions with ``(a - b).evalf(chop=True, n=15) == 0``;
  ``chop`` zeroes anything below ~1e-15, so ``1/2^99`` equals ``1/2^98``;
* with a float on either side it compares ``a.round(6) == b.round(6)`` (``float_rounding=6``), so
  ``0.0000001`` equals ``0``, and 15 significant digits make ``1.0e20`` equal ``10^20+1``;
* ``parse`` falls back to the *last* part of an equation chain or to the first number it can
  find (``1/2004!`` is extracted as ``1``; ``2x+5y-7=0`` as ``0``), and ``verify`` then unwraps a
  predicted equation to its right-hand side, so any two equations "= 0" are equal;
* ``(a, b)`` parses as an open interval when ``a < b`` and as a tuple otherwise, and a reversed
  interval inside a union silently becomes a two-element set.

Here every decision is exact (sympy ``Rational``/``Integer`` arithmetic; decimals are turned
into exact fractions before parsing), equations are compared as equations, and anything that
cannot be decided exactly returns ``None``. Callers: :mod:`judgerl.verify.answers`.

Answers are real-valued: an odd root of a negative number is the real root (``\\sqrt[3]{-64}``
is -4, not sympy's principal complex root), and expressions in variables are compared on their
common *real* domain: a test point counts only where every power and function of both sides is
real there (``\\sqrt{a}\\sqrt{b}`` is not evaluated at negative ``a``), and an identity that
sympy proves only for positive variables (``\\sqrt{1/k} = 1/\\sqrt{k}``) is accepted when no
test point of the real domain -- every sign pattern is tried -- tells the two apart.
"""

from __future__ import annotations

import random
from typing import Any

import sympy
from sympy import Basic, Eq, FiniteSet, Interval, MatrixBase, Rational, Set, Tuple
from sympy.core.relational import Relational
from sympy.logic.boolalg import And

#: Relative difference above which two numbers whose equality sympy cannot prove are called
#: different (they are evaluated to 60 significant digits first).
_REL_TOL = sympy.Rational(1, 10**40)

_NORM_CONFIG: Any = None


def _normalize_config() -> Any:
    global _NORM_CONFIG
    if _NORM_CONFIG is None:
        from latex2sympy2_extended.latex2sympy2 import NormalizationConfig

        # units=False: unit words are stripped (and recorded) by judgerl.verify.answers, which
        # knows which words are units; latex2sympy's unit stripping would silently drop others.
        _NORM_CONFIG = NormalizationConfig(
            basic_latex=True, units=False, malformed_operators=True, nits=True, boxed="all", equations=False
        )
    return _NORM_CONFIG


def to_sympy(latex: str) -> Any:
    """Parse one LaTeX answer (no ``$`` delimiters) with math-verify's LaTeX engine.

    Args:
        latex: e.g. ``"\\\\frac{1}{2}"``, ``"x=5"``, ``"\\\\{1,2\\\\}"``. Decimals should already be
            exact fractions (see :func:`judgerl.verify.answers.normalize_answer`).

    Returns:
        A sympy ``Expr``, ``Relational``, ``Set``, ``Tuple`` or ``Matrix``.

    Raises:
        ValueError: the text does not parse (the parser's own exception is chained).
    """
    from latex2sympy2_extended.latex2sympy2 import latex2sympy, normalize_latex
    from math_verify.grader import should_treat_as_complex

    try:
        text = normalize_latex(latex, config=_normalize_config())
        return latex2sympy(
            text, normalization_config=None, is_real=not should_treat_as_complex(text), convert_degrees=False
        )
    except Exception as e:  # the parser raises bare Exception subclasses of many kinds
        raise ValueError(f"cannot parse {latex!r}: {type(e).__name__}") from e


# ----------------------------------------------------------------------------- comparisons


def compare(gold: Any, pred: Any) -> bool | None:
    """Whether two parsed answers are mathematically the same object.

    Args:
        gold, pred: Results of :func:`to_sympy` (or sympy objects built by the caller).

    Returns:
        True when proven equal, False when proven different, None when undecided (equality
        sympy cannot prove and numbers that agree to 40 significant digits, equations that are
        not scalar multiples of each other but are not linear, non-finite values, ...).
    """
    gold, pred = _real_odd_roots(_doit(gold)), _real_odd_roots(_doit(pred))
    if _bad(gold) or _bad(pred):
        return None
    if _is_relation(gold) or _is_relation(pred):
        return _compare_relations(gold, pred)
    if isinstance(gold, MatrixBase) or isinstance(pred, MatrixBase):
        if not (isinstance(gold, MatrixBase) and isinstance(pred, MatrixBase)):
            return False
        if gold.shape != pred.shape:
            return False
        return all_of(compare(a, b) for a, b in zip(gold, pred))
    if isinstance(gold, Tuple) or isinstance(pred, Tuple):
        if not (isinstance(gold, Tuple) and isinstance(pred, Tuple)):
            return None  # a tuple against a set or number: a point vs a list is ambiguous
        if len(gold) != len(pred):
            return False
        return all_of(compare(a, b) for a, b in zip(gold.args, pred.args))
    if isinstance(gold, Set) or isinstance(pred, Set):
        return compare_sets(gold, pred)
    return compare_exprs(gold, pred)


def all_of(verdicts: Any) -> bool | None:
    """Combine element verdicts: False if any is False, else None if any is None, else True."""
    out: bool | None = True
    for v in verdicts:
        if v is False:
            return False
        if v is None:
            out = None
    return out


def compare_exprs(gold: Any, pred: Any) -> bool | None:
    """Compare two scalar expressions exactly; see :func:`compare`."""
    if not isinstance(gold, sympy.Expr) or not isinstance(pred, sympy.Expr):
        return None
    imaginary = {s: sympy.I for s in gold.free_symbols | pred.free_symbols if s.name == "i"}
    if imaginary:  # the parser reads a lone i as a variable; in answers it is the imaginary unit
        gold, pred = gold.subs(imaginary), pred.subs(imaginary)
    if gold == pred:
        return True
    if gold.has(sympy.Float) or pred.has(sympy.Float):
        return None  # the caller converts decimals to fractions; a float here is inexact
    symbols = gold.free_symbols | pred.free_symbols
    if not symbols:
        return _compare_numbers(gold, pred)
    functions = gold.atoms(sympy.Function) | pred.atoms(sympy.Function)
    if any(isinstance(f, sympy.core.function.AppliedUndef) for f in functions):
        return None  # f(x): an unknown function cannot be evaluated at points
    # Cheap disproof first: exact values at a few rational points of the real domain (simplify
    # can take minutes on a difference like (x+y+z)^50 - 1); simplify only to prove equality.
    ordered = sorted(symbols, key=str)
    if _differ_at_random_points(gold, pred, ordered) is False:
        return False
    for positive in (False, True):
        diff = gold - pred
        if positive:  # e.g. sqrt(a)*sqrt(b) = sqrt(a*b) holds where the roots are real: a, b >= 0
            diff = diff.subs({s: sympy.Dummy(s.name, positive=True) for s in ordered})
        try:
            if sympy.simplify(diff) == 0:
                return True
        except Exception:
            pass
    return None


def _compare_numbers(gold: Any, pred: Any) -> bool | None:
    if gold.is_Rational and pred.is_Rational:
        return bool(gold == pred)  # exact, any size
    if any(x in (sympy.oo, -sympy.oo) for x in (gold, pred)):
        return bool(gold == pred)
    diff = gold - pred
    try:
        value = sympy.N(diff, 60)
        scale = max(abs(sympy.N(gold, 60)), abs(sympy.N(pred, 60)), sympy.Integer(1))
        if value.is_number and not value.has(sympy.zoo, sympy.nan) and abs(value) > _REL_TOL * scale:
            return False
        for rewrite in (sympy.simplify, lambda d: sympy.simplify(sympy.expand_log(d, force=True))):
            if rewrite(diff) == 0:
                return True
    except Exception:
        return None
    return None  # agree to 40 digits but sympy cannot prove it


def _differ_at_random_points(gold: Any, pred: Any, symbols: list) -> bool | None:
    """False if the two expressions differ at a rational point of their common real domain, else None.

    Points: every sign pattern of the symbols (up to 3 symbols; random signs beyond), twice, with
    random magnitudes in (0, 97]. A point is skipped unless every power and function of both
    expressions is real at it (:func:`_in_real_domain`): ``sqrt(a)*sqrt(b)`` at ``a = b = -1`` is
    ``-1`` through complex principal roots, but outside the real domain.
    """
    rng = random.Random(0)
    if len(symbols) <= 3:
        signs = [[1 - 2 * ((k >> j) & 1) for j in range(len(symbols))] for k in range(2 ** len(symbols))] * 2
    else:
        signs = [[rng.choice((1, -1)) for _ in symbols] for _ in range(16)]
    for pattern in signs:
        point = {s: sign * Rational(rng.randint(1, 97), rng.randint(1, 13)) for s, sign in zip(symbols, pattern)}
        try:
            if not (_in_real_domain(gold, point) and _in_real_domain(pred, point)):
                continue
            a, b = gold.subs(point), pred.subs(point)
            if a.is_number and b.is_number and not (_bad(a) or _bad(b)) and _compare_numbers(a, b) is False:
                return False
        except Exception:
            continue
    return None


def _in_real_domain(expr: Any, point: dict) -> bool:
    """Whether every power with a non-integer exponent and every function in ``expr`` is a finite
    real number at ``point`` (evaluated to 30 digits)."""
    for node in sympy.preorder_traversal(expr):
        if not (isinstance(node, sympy.Function) or (node.is_Pow and not node.exp.is_Integer)):
            continue
        value = sympy.N(node.subs(point), 30)
        if not value.is_number or value.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
            return False
        re_part, im_part = value.as_real_imag()
        if abs(im_part) > 1e-20 * max(1, abs(re_part)):
            return False
    return True


def _real_odd_roots(x: Any) -> Any:
    """``x`` with every odd root of a negative number made real: ``(-64)^(1/3)`` -> ``-4``,
    ``(-8)^(2/3)`` -> ``4`` (sympy's principal root is complex; answers are real numbers)."""
    if not isinstance(x, Basic):
        return x

    def odd_root_of_negative(e: Any) -> bool:
        return bool(e.is_Pow and e.exp.is_Rational and not e.exp.is_Integer and e.exp.q % 2 == 1
                    and e.base.is_number and e.base.is_negative)

    try:
        return x.replace(odd_root_of_negative, lambda e: (-1) ** e.exp.p * (-e.base) ** e.exp)
    except Exception:
        return x


def compare_sets(gold: Any, pred: Any) -> bool | None:
    """Compare sets (finite sets element by element; intervals and unions exactly).

    A number against a set is compared as a one-element set.
    """
    g = gold if isinstance(gold, Set) else FiniteSet(gold, evaluate=False)
    p = pred if isinstance(pred, Set) else FiniteSet(pred, evaluate=False)
    if isinstance(g, FiniteSet) and isinstance(p, FiniteSet):
        return _match_elements(list(g.args), list(p.args))
    if isinstance(g, FiniteSet) != isinstance(p, FiniteSet):
        if any(_is_relation(x) for x in (g.args if isinstance(g, FiniteSet) else p.args)):
            return None
    if g == p:
        return True
    try:
        difference = g.symmetric_difference(p)
        if difference == sympy.S.EmptySet:
            return True
        if difference.is_empty is False:
            return False
    except Exception:
        pass
    return None


def _match_elements(gold: list, pred: list) -> bool | None:
    """Multiset equality of two element lists under :func:`compare` (greedy; exact equality)."""
    if len(gold) != len(pred):
        return False if not (_has_relation(gold) or _has_relation(pred)) else None
    left = list(pred)
    undecided = False
    for g in gold:
        hit = None
        for k, p in enumerate(left):
            v = compare(g, p)
            if v is True:
                hit = k
                break
            if v is None:
                undecided = True
        if hit is None:
            return None if undecided else False
        left.pop(hit)
    return True


def _has_relation(items: list) -> bool:
    return any(_is_relation(x) for x in items)


# ----------------------------------------------------------------------------- relations


def _is_relation(x: Any) -> bool:
    if isinstance(x, Relational):
        return True
    return isinstance(x, And) and all(isinstance(a, Relational) for a in x.args)


def _assignment(eq: Any) -> tuple[Any, Any] | None:
    """``(symbol, value)`` for ``x = value`` or ``value = x`` (value without ``x``), else None."""
    if not isinstance(eq, Eq):
        return None
    for var, value in ((eq.lhs, eq.rhs), (eq.rhs, eq.lhs)):
        if isinstance(var, sympy.Symbol) and var not in getattr(value, "free_symbols", {var}):
            return var, value
    return None


def _compare_relations(gold: Any, pred: Any) -> bool | None:
    g_assign, p_assign = _assignment(gold), _assignment(pred)
    if g_assign and p_assign:
        if g_assign[0] != p_assign[0]:
            return None  # x = 5 against y = 5: a naming question, not a math one
        return compare(g_assign[1], p_assign[1])
    # "x = 5" against "5": the value is the answer. Any other equation against a non-equation
    # (e.g. "2x+5y-7=0" against "0") is a different kind of answer.
    if g_assign and not _is_relation(pred):
        return compare(g_assign[1], pred)
    if p_assign and not _is_relation(gold):
        return compare(gold, p_assign[1])
    if isinstance(gold, Eq) and isinstance(pred, Eq):
        return compare_equations(gold, pred)
    if _is_relation(gold) != _is_relation(pred) and not (isinstance(gold, Set) or isinstance(pred, Set)):
        return None
    return _compare_as_sets(gold, pred)


def compare_equations(gold: Any, pred: Any) -> bool | None:
    """Two equations are equal iff one is a nonzero constant multiple of the other.

    Both are moved to one side (``lhs - rhs``); the ratio of the two sides must simplify to a
    constant. When it does not, linear equations are different (two linear equations have the
    same solution set only if proportional); for others (``x = 1`` vs ``x^2 - 2x + 1 = 0``)
    the answer is None.
    """
    e1, e2 = gold.lhs - gold.rhs, pred.lhs - pred.rhs
    if not isinstance(e1, sympy.Expr) or not isinstance(e2, sympy.Expr):
        return None
    if not (e1.free_symbols or e2.free_symbols):
        return None  # "3 = 3" style statements
    if e1 == 0 or e2 == 0:
        return None
    try:
        ratio = sympy.simplify(sympy.cancel(sympy.together(e1 / e2)))
    except Exception:
        return None
    if not ratio.free_symbols and ratio.is_number and ratio != 0 and ratio.is_finite:
        return True
    try:
        symbols = sorted(e1.free_symbols | e2.free_symbols, key=str)
        p1, p2 = sympy.Poly(e1, *symbols), sympy.Poly(e2, *symbols)
        if p1.total_degree() == 1 and p2.total_degree() == 1:
            return False
    except (sympy.PolynomialError, sympy.GeneratorsNeeded):
        pass
    return None


def _compare_as_sets(gold: Any, pred: Any) -> bool | None:
    """Inequalities (and an inequality against an interval) as sets of one real variable."""
    sets = []
    for x in (gold, pred):
        if isinstance(x, Set):
            sets.append(x)
            continue
        symbols = x.free_symbols
        if len(symbols) != 1:
            return True if gold == pred else None
        try:
            sets.append(x.as_set())
        except Exception:
            return None
    g_sym = gold.free_symbols if not isinstance(gold, Set) else None
    p_sym = pred.free_symbols if not isinstance(pred, Set) else None
    if g_sym is not None and p_sym is not None and g_sym != p_sym:
        return None
    return compare_sets(sets[0], sets[1])


# ----------------------------------------------------------------------------- helpers


def _doit(x: Any) -> Any:
    """Evaluate unevaluated parts (``lcm(4, 6)``); relations are left alone (``Eq(x, {-2, 2})``
    would evaluate to False)."""
    if _is_relation(x) or not isinstance(x, (Basic, MatrixBase)):
        return x
    try:
        return x.doit()
    except Exception:
        return x


def _bad(x: Any) -> bool:
    """NaN, complex infinity or a non-sympy value: nothing can be decided about it."""
    if not isinstance(x, (Basic, MatrixBase)):
        return True
    try:
        return bool(isinstance(x, Basic) and x.has(sympy.nan, sympy.zoo))
    except Exception:
        return True


def interval(open_left: bool, start: Any, end: Any, open_right: bool) -> Any:
    """A sympy ``Interval`` from bracket types and endpoints; None unless ``start < end`` is proven.

    ``Interval(3, 1)`` is silently the empty set in sympy, which would make every reversed
    interval equal; this refuses those.
    """
    try:
        less = sympy.Lt(start, end)
    except TypeError:
        return None
    if less is not sympy.true:
        return None
    return Interval(start, end, left_open=open_left, right_open=open_right)


__all__ = ["all_of", "compare", "compare_equations", "compare_exprs", "compare_sets", "interval", "to_sympy"]
