"""The arithmetic teacher: compute from the question, then test each response's final number.

Every form of :mod:`judgerl.data.builders.arith_forms` and :mod:`judgerl.data.builders.gsm8k_forms`:

* the **computation** comes from the question, never from a response: ``meta["expression"]``
  (multi-step, precedence, separators removed, negatives, decimals); for GSM8K word problems the
  reference solution's calculations (``meta["calculations"]``) as a chain of steps, each later step
  naming the earlier results it uses (``step2 = step1 - 30``); else an expression read from the
  question itself (``What is 23,060 + 72,268?``, ``×``/``÷`` accepted). Each is checked to be plain
  arithmetic (:func:`judgerl.data.builders.arith_exact.exact_value`) before it is written as code;
* with tools the code computes ``value`` and prints, per shown response, whether its final number
  equals it -- with the response namespace ``number_of(A) == value`` (the sandbox reads the
  response), in the plain form ``value == 267`` with the number read here by the same
  :func:`~judgerl.tools.namespace_helpers.number_of`. Non-integer values are compared after
  ``round(…, k)`` to the exact value's decimal places;
* the verdict is the one response whose line says ``True``. **Neither right, or both**: no verdict
  (the judgment is invalid and dropped). Pointwise: the top of the scale when right, the bottom
  when wrong. Without tools the thought states the value and checks each claim where it is copied
  (:class:`judgerl.train.teachers.ArithmeticTeacher`'s form).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Sequence

from judgerl.data.builders.arith_exact import exact_value, fmt, places
from judgerl.tools.namespace_arith import exact_value_of, question_expression
from judgerl.tools.namespace_helpers import number_of
from judgerl.train.teach.base import Case, Turn, binary_score, pick, shown_names
from judgerl.train.teachers import read_checks
from judgerl.types import PreferencePair

_NUM = re.compile(r"\d+(?:\.\d+)?")
_BARE_POINT = re.compile(r"(?<![\d.])\.(\d)")


def chain_code(calculations: Sequence[str]) -> tuple[list[str], Fraction]:
    """Code lines ``step1 = …`` … ``value = stepN`` for a GSM8K calculation chain (a number equal to an
    earlier step's result is written as that step's name) and the exact value.

    Raises:
        ValueError: no calculation, or one that is not plain arithmetic.
    """
    if not calculations:
        raise ValueError("no calculations to write as code")
    lines, results = [], []
    for i, calc in enumerate(calculations, 1):
        calc = _BARE_POINT.sub(r"0.\1", calc)  # GSM8K writes "200*40*.01"
        value = exact_value(calc)

        def name(m: re.Match) -> str:
            num = Fraction(m.group(0))
            for j in range(len(results) - 1, -1, -1):
                if results[j] == num:
                    return f"step{j + 1}"
            return m.group(0)

        lines.append(f"step{i} = {_NUM.sub(name, calc)}")
        results.append(value)
    lines.append(f"value = step{len(calculations)}")
    return lines, results[-1]


@dataclass(frozen=True)
class Computation:
    """The code lines that compute ``value`` and the exact value (for the no-tool thought)."""

    lines: tuple[str, ...]
    value: Fraction
    shown: str


def _value_line(expr: str, value: Fraction) -> str:
    return f"value = {expr}" if value.denominator == 1 and "/" not in expr and "." not in expr \
        else f"value = round({expr}, {max(places(value), 1)})"


class ArithmeticPlan:
    """The arithmetic domain plan (see the module docstring)."""

    domain = "arith"

    def accepts(self, pair: PreferencePair) -> bool:
        domain = str(pair.meta.get("domain") or "")
        return domain.startswith("arith") or bool(pair.meta.get("expression"))

    def prepare(self, pair: PreferencePair, protocol: Any, tools: bool) -> Computation:
        meta = pair.meta
        expr = meta.get("expression")
        if isinstance(expr, str) and expr.strip():
            value = exact_value(expr)
            return Computation((_value_line(expr, value),), value, expr)
        calcs = meta.get("calculations")
        if isinstance(calcs, list) and calcs:
            lines, value = chain_code([str(c) for c in calcs])
            if value.denominator != 1 or "/" in "".join(calcs) or "." in "".join(calcs):
                lines[-1] = f"value = round(step{len(calcs)}, {max(places(value), 1)})"
            return Computation(tuple(lines), value, " then ".join(calcs))
        expr = question_expression(pair.prompt)
        if expr is None:
            raise ValueError(f"pair {pair.id!r}: no expression in meta or in the question")
        value = exact_value(expr)
        return Computation((_value_line(expr, value),), value, expr)

    def first(self, case: Case, seed: int | None) -> Turn:
        comp: Computation = case.data
        if not case.tools:
            return self._no_tools(case, comp)
        names = shown_names(case)
        lines = list(comp.lines)
        if case.namespace:
            tests = [f"number_of({n}) == value" for n in names]
            if exact_value_of(case.question) == comp.value:  # the question states the expression: read it
                lines = ["value = value_of(PROMPT)"]
        else:
            tests = [f"value == {_literal(number_of(r))}" for r in case.responses]
        prints = [f"print({t})" for t in tests] if len(names) == 1 else \
            [f'print("{n}", {t})' for n, t in zip(names, tests)]
        what = "the answer" if len(names) == 1 else "both answers"
        return Turn(f"Let me compute the value and check {what} with Python.",
                    "\n".join([*lines, *prints]) + "\n")

    def after(self, case: Case, observation: str) -> Turn:
        checks = read_checks(observation, len(case.responses))
        if checks is None:
            return Turn("The code failed, so I cannot check the answers.")
        if case.protocol.kind == "pointwise":
            thought = "The answer matches." if checks[0] else "The answer is wrong."
            return Turn(thought, decision=pick(case.protocol, [binary_score(case.protocol, checks[0])], "")[1])
        if checks.count(True) != 1:
            return Turn("Neither answer is the only right one, so I cannot tell.")
        return Turn(f"Only {'AB'[checks.index(True)]} is correct.",
                    decision=pick(case.protocol, [float(c) for c in checks], "")[1])

    @staticmethod
    def _no_tools(case: Case, comp: Computation) -> Turn:
        value = comp.value
        claims = [number_of(r) for r in case.responses]
        lead = f"{comp.shown} = {fmt(value)}. "
        right = [c is not None and Fraction(str(c)) == value for c in claims]
        said = [f"{'says ' + str(c) if c is not None else 'states no number'}, "
                f"{'which matches' if ok else 'which is wrong'}" for c, ok in zip(claims, right)]
        if case.protocol.kind == "pointwise":
            return Turn(f"{lead}The answer {said[0]}.",
                        decision=pick(case.protocol, [binary_score(case.protocol, right[0])], "")[1])
        thought = f"{lead}Response A {said[0]}. Response B {said[1]}. "
        if right.count(True) != 1:
            return Turn(thought + "I cannot tell which one is right.")
        return Turn(thought + f"{'AB'[right.index(True)]} is correct.",
                    decision=pick(case.protocol, [float(r) for r in right], "")[1])


def _literal(number: int | float | None) -> str:
    return "None" if number is None else repr(number)
