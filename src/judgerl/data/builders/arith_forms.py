"""Verifiable arithmetic pairs in four forms, generated with no input file (issue 23, the data).

A pair is a question, a right response and a wrong one; the label comes from exact arithmetic on
the *question's* numbers (:mod:`judgerl.data.builders.arith_exact`), never from a response.

* ``expression`` -- multi-step integer expressions with precedence and nesting:
  ``(12 + 7) * 4``, ``9 * 6 - 13``, ``((4 + 5) * 3 - 2) * 6``, exact divisions;
* ``word`` -- templated word problems (:mod:`judgerl.data.builders.arith_templates`); GSM8K's real
  ones are :mod:`judgerl.data.builders.gsm8k_forms`;
* ``format`` -- big numbers, thousands separators, negatives, decimals: ``23,060 + 72,268``,
  ``-45 * 12``, ``3.75 + 1.5``;
* ``prose`` -- the same kinds of problems answered in prose: hedged right vs confident wrong, the
  answer buried mid-text, the number in words, ... (:data:`judgerl.data.builders.arith_render.PROSE`).

The wrong response makes a plausible mistake: a slip in one step that propagates to the end
(:func:`arith_exact.steps` with an override; worked responses show the slipped steps), or, for
``expression`` / ``format`` answers that show no steps, sometimes the left-to-right precedence
error. Every pair has exactly one right response.

Splits (:mod:`judgerl.data.builders.splits`): a problem belongs to the split of its expression's
hash; expression shapes, word templates, question phrasings and response phrasings are
partitioned into families, and a held-out pair uses only held-out ones. ``meta``: ``domain``
(``"arith/<form>"``), ``form``, ``split``, ``expression`` (Python syntax, what a teacher computes),
``value`` / ``answer`` (the exact value as a JSON number / decimal text), ``wrong`` /
``wrong_answer``, ``error`` (the mistake made), ``problem_key``, ``template``, ``question_family``,
``response_family``; prose pairs add ``right_manner`` (which of the family's two manners the right
response is written in, drawn per pair).
"""

from __future__ import annotations

import hashlib
import random
import re
from fractions import Fraction
from typing import Any

from judgerl.backends.base import derive_seed
from judgerl.data.builders import arith_render as R
from judgerl.data.builders import arith_templates as W
from judgerl.data.builders.arith_exact import (as_json_number, exact_value, fmt, is_decimal, left_to_right,
                                               looks_rounded, slip, steps)
from judgerl.data.builders.splits import check_split, families_of, grouped_families_of, split_of
from judgerl.types import PreferencePair

FORMS = ("expression", "word", "format", "prose")

#: Shapes of the ``expression`` form, in groups (each group is split on its own, so training keeps
#: divisions). Slots: ``{s}`` 2..99, ``{t}`` 2..12.
EXPRESSION_SHAPES: dict[str, dict[str, str]] = {
    "integer": {
        "paren-add-mul": "({s} + {s}) * {t}", "mul-sub": "{s} * {t} - {s}", "add-mul": "{s} + {s} * {t}",
        "two-products": "{s} * {t} + {s} * {t}", "diff-times-sum": "({s} - {t}) * ({t} + {t})",
        "mul-paren-sub": "{t} * ({s} + {s}) - {s}", "sum3-times": "({s} + {s} + {s}) * {t}",
        "prod-diff": "{s} * {t} - {t} * {t}", "nested": "(({s} + {s}) * {t} - {s}) * {t}",
        "prod3": "{t} * {t} * {s}", "sub-paren-mul": "{s} - ({t} - {t}) * {t}",
        "paren-prod": "({s} + {t}) * ({s} - {t})", "mul-sub-add": "{t} * ({s} - {t}) + {t} * {t}",
        "add-sub-mul": "{s} + {s} - {t} * {t}", "sub-mul": "{s} - {t} * {t}",
    },
    "division": {"sum-div": "({s} + {s}) / {t}", "div-add": "{s} / {t} + {s}",
                 "paren-mul-div": "({s} * {t} + {s}) / {t}", "div-mul": "{s} / {t} * {t}"},
}
#: Shapes of the ``format`` form. Slots: ``{s}`` 2..99, ``{t}`` 2..12, ``{M}`` 100..9,999,
#: ``{B}`` 1,000..999,999, ``{D}`` a decimal 0.01..99.99, ``{S}`` a decimal 100.01..9,999.99.
FORMAT_SHAPES: dict[str, dict[str, str]] = {
    "big": {"big-add": "{B} + {B}", "big-sub": "{B} - {M}", "big-mul": "{M} * {s}",
            "big-add-sub": "{B} + {M} - {M}", "big-mul-big": "{M} * {M}"},
    "negative": {"neg-mul": "-{s} * {s}", "neg-result": "{s} - {M}", "neg-add-neg": "-{s} + -{s}",
                 "neg-times-neg": "(-{s}) * (-{t})", "neg-sub": "-{M} - {M}", "mul-neg-add": "{s} * (-{t}) + {s}",
                 "neg-mul-add": "-{s} * {t} + {s}"},
    "decimal": {"dec-add": "{D} + {D}", "dec-sub": "{D} - {D}", "dec-mul": "{D} * {t}", "dec-mul-dec": "{D} * {D}",
                "dec-div": "{D} / {t}", "dec-add-mul": "{D} + {D} * {t}"},
    "mixed": {"sep-dec-add": "{S} + {S}", "sep-dec-sub": "{S} - {M}", "neg-dec-mul": "-{D} * {M}",
              "big-dec-mul": "{B} * {D}", "neg-big-add": "-{B} + {M}"},
}
_NUM = re.compile(r"\d+(?:\.\d+)?")


def _slot(kind: str, rng: random.Random) -> str:
    if kind in "DS":
        lo, hi = (1, 9999) if kind == "D" else (10001, 999999)
        v = Fraction(rng.randint(lo, hi), 100)
        return fmt(v if v.denominator != 1 else v + Fraction(1, 4))
    lo, hi = {"s": (2, 99), "t": (2, 12), "M": (100, 9999), "B": (1000, 999999)}[kind]
    return str(rng.randint(lo, hi))


def fill(shape: str, rng: random.Random) -> str:
    """A shape with each ``{slot}`` drawn independently (see :data:`FORMAT_SHAPES`)."""
    return re.sub(r"\{([stMBDS])\}", lambda m: _slot(m.group(1), rng), shape)


def shown(expression: str, separators: bool, signs: bool) -> str:
    """How the question writes ``expression``: thousands separators, ``×`` / ``÷`` when asked."""
    text = _NUM.sub(lambda m: fmt(Fraction(m.group(0)), separators=True), expression) if separators else expression
    return text.replace("*", "×").replace("/", "÷") if signs else text


def shapes_of(split: str, groups: dict[str, dict[str, str]]) -> dict[str, str]:
    """``{shape id: shape}`` of the split, each group partitioned on its own."""
    flat = {k: v for group in groups.values() for k, v in group.items()}
    return {k: flat[k] for k in grouped_families_of(split, groups)}


def digest(text: str) -> str:
    """12 hex digits of SHA-256: stable pair ids from a problem's key."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def wrong_answer(expression: str, value: Fraction, rng: random.Random, kinds: tuple[str, ...],
                 precedence: bool, nonneg: bool = False) -> tuple[Fraction, list | None, str]:
    """A wrong final value for ``expression`` and how it arose: ``(wrong, wrong steps or None, error)``.

    ``precedence``: the left-to-right reading may be used (then there are no steps to show);
    otherwise a slip of ``kinds`` in one step, propagated (``error`` ``"slip:<kind>@<step>"``).
    ``nonneg``: every slipped step stays a non-negative whole number (the integer forms: a slip into
    the negatives or fractions would be an implausible mistake there).
    """
    if precedence and rng.random() < 0.35:
        ltr = left_to_right(expression)
        whole = ltr is not None and ltr >= 0 and ltr.denominator == 1
        if ltr is not None and ltr != value and is_decimal(ltr) and not looks_rounded(value, ltr) \
                and (not nonneg or whole):
            return ltr, None, "precedence"
    st = steps(expression)
    for _ in range(20):
        k = rng.randrange(len(st))
        w_k, kind = slip(st[k].value, rng, kinds)
        try:
            ws = steps(expression, {k: w_k})
        except ValueError:
            continue
        w = ws[-1].value
        whole = all(s.value >= 0 and s.value.denominator == 1 for s in ws)
        if w != value and is_decimal(w) and not looks_rounded(value, w) and (not nonneg or whole):
            return w, ws, f"slip:{kind}@{k}"
    w, kind = slip(value, rng, kinds)
    return w, steps(expression, {len(st) - 1: w}), f"slip:{kind}@{len(st) - 1}"


def _problem(form: str, split: str, rng: random.Random) -> dict[str, Any] | None:
    """One candidate problem of ``form`` for ``split``, or None (outside the split, or no valid draw)."""
    sep = signs = False
    unit = ""
    if form == "word" or (form == "prose" and rng.random() < 0.5):
        templates = {t.id: t for t in W.TEMPLATES}
        t = templates[rng.choice(families_of(split, list(templates)))]
        got = W.draw(t, rng)
        if got is None:
            return None
        question, expression, value = got
        template, qfam, unit = f"word:{t.id}", f"word:{t.id}", t.unit
    else:
        groups = FORMAT_SHAPES if form == "format" else {"integer": EXPRESSION_SHAPES["integer"]} \
            if form == "prose" else EXPRESSION_SHAPES
        shapes = shapes_of(split, groups)
        template = rng.choice(sorted(shapes))
        expression = fill(shapes[template], rng)
        try:
            value = exact_value(expression)
            st = steps(expression)
        except ValueError:
            return None
        exact = all(s.value.denominator == 1 for s in st) if form != "format" else is_decimal(value)
        if not exact or (form != "format" and value < 0) or not all(is_decimal(s.value) for s in st):
            return None
        sep = form == "format" and any(abs(Fraction(x)) >= 1000 for x in _NUM.findall(expression)) \
            and rng.random() < 0.75
        signs = rng.random() < 0.25
        qfam = rng.choice(families_of(split, list(R.QUESTIONS)))
        question = R.QUESTIONS[qfam].format(e=shown(expression, sep, signs))
        template = f"{form if form != 'prose' else 'expression'}:{template}"
    key = f"expr:{expression}"
    if split_of(key) != split:
        return None
    return {"question": question, "expression": expression, "value": value, "template": template,
            "question_family": qfam, "unit": unit, "sep": sep, "signs": signs, "key": key}


def _responses(form: str, split: str, pb: dict[str, Any],
               rng: random.Random) -> tuple[str, str, str, Fraction, str, dict[str, Any]]:
    """``(chosen, rejected, response family, wrong value, error, extra meta)`` for one problem."""
    expression, value = pb["expression"], pb["value"]
    word = pb["template"].startswith("word:")
    kinds = ("off-by-one", "off-by-ten", "digit-swap", "off-by-thousand") if form != "format" else ()
    if form == "prose":
        fam = rng.choice(grouped_families_of(split, R.PROSE_GROUPS))
        wrong, ws, error = wrong_answer(expression, value, rng, kinds, precedence=False, nonneg=True)
        manner = rng.randrange(2)
        chosen, rejected = R.prose_pair(fam, value, wrong, steps(expression), ws or [], manner)
        return chosen, rejected, f"prose:{fam}", wrong, error, {"right_manner": manner}
    # "with-unit" needs a story's unit, "equation" a written expression.
    fams = [f for f in grouped_families_of(split, R.RESPONSE_GROUPS) if f != ("equation" if word else "with-unit")]
    fam = rng.choice(fams)
    with_steps = fam in R.STEP_FAMILIES
    wrong, ws, error = wrong_answer(expression, value, rng, kinds, precedence=not with_steps and not word,
                                    nonneg=form != "format")
    sep = pb["sep"] if rng.random() < 0.7 else not pb["sep"]
    e = None if word else shown(expression, pb["sep"], pb["signs"])
    render = R.RESPONSES[fam]
    chosen = render(e, steps(expression), value, sep, pb["unit"])
    rejected = render(e, ws, wrong, sep, pb["unit"])
    return chosen, rejected, fam, wrong, error, {}


def generate_form_pairs(form: str, split: str, n: int, seed: int = 0) -> list[PreferencePair]:
    """``n`` pairs of one generated form for one split (fewer only if the problem space runs out).

    Args:
        form: One of :data:`FORMS`.
        split: ``"train"`` or ``"held-out"``.
        n: Pairs wanted (each problem once).
        seed: Draws the problems and mistakes (``random.Random(derive_seed(seed, form, split))``);
            the split of a problem, template or phrasing never depends on it.

    Returns:
        Pairs with ids ``arith-<form>-<digest of the expression>``, source ``generated/arith-<form>``
        and the ``meta`` of the module docstring.

    Raises:
        ValueError: unknown form or split, or ``n < 1``.
    """
    if form not in FORMS:
        raise ValueError(f"unknown arithmetic form {form!r}; expected one of {', '.join(FORMS)}")
    check_split(split)
    if n < 1:
        raise ValueError(f"need n >= 1 pairs, got {n}")
    rng = random.Random(derive_seed(seed, "arith", form, split))
    seen: set[str] = set()
    pairs: list[PreferencePair] = []
    for _ in range(100 * n):
        if len(pairs) >= n:
            break
        pb = _problem(form, split, rng)
        if pb is None or pb["key"] in seen:
            continue
        seen.add(pb["key"])
        chosen, rejected, fam, wrong, error, extra = _responses(form, split, pb, rng)
        value = pb["value"]
        pairs.append(PreferencePair(
            id=f"arith-{form}-{digest(pb['key'])}", prompt=pb["question"], chosen=chosen, rejected=rejected,
            source=f"generated/arith-{form}",
            meta={"domain": f"arith/{form}", "form": form, "split": split, "expression": pb["expression"],
                  "value": as_json_number(value), "answer": fmt(value), "wrong": as_json_number(wrong),
                  "wrong_answer": fmt(wrong), "error": error, "problem_key": pb["key"], "template": pb["template"],
                  "question_family": pb["question_family"], "response_family": fam, **extra},
        ))
    return pairs
