"""A programmatic teacher judge for arithmetic-verification pairs (distillation without an LLM).

TIR-Judge-Distill (Xu et al., 2025) cold-starts a judge on ~10K trajectories of a stronger
teacher. For *verifiable* pairs a program can be that teacher. :class:`ArithmeticTeacher` is a
:class:`~judgerl.backends.Backend`, so its judgments go through the same
:class:`~judgerl.judge.Judge` as any model's -- tool loop and sandbox included:

* without tools it writes ``<think>48 + 24 = 72. Response A says 72, which matches. Response B says
  74, which is wrong. A is correct.</think>`` and the protocol's answer tags (it computes the
  expression itself; each claim is checked where it is copied: a pilot student trained on "Response A
  says 72, response B says 74. A is correct." copied both claims right but chose the letter at chance);
* with tools it lets the code do the comparison: its first turn is ``<think>Let me check both
  answers with Python.`` and a block that computes the expression once and tests each response's
  claim against it::

      value = 48 + 24
      print("A", value == 72)
      print("B", value == 74)

  The Judge's tool loop runs it **in the sandbox** and appends the real output (``A True`` /
  ``B False``); the teacher's second turn reads that output (not its own arithmetic) and names the
  response whose line says ``True``. The student then only copies numbers into code and reads one
  ``True`` back: a pilot student trained on the earlier ``print(48 + 24)`` form ("The output is 72.
  Response A says 72, which matches ...") restated the output right but compared it with the claims
  at chance. If the code fails, or not exactly one line says ``True``, it gives no verdict (the
  trajectory is invalid and rejection sampling drops it).

The teacher knows nothing of the gold label: it decides from the arithmetic alone, so rejection
sampling against the labels is a real filter. Prompts must be registered first
(:meth:`ArithmeticTeacher.register`, done by :func:`judgerl.train.distill.programmatic_teacher`):
the teacher looks up the expression and the shown responses by the prompt's text instead of
re-parsing the protocol's prompt layout.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from judgerl.backends.base import Backend, SamplingParams
from judgerl.backends.chat import prefill_of
from judgerl.text.codeblocks import output_blocks
from judgerl.data.builders.arith import MAX_VALUE_DIGITS, evaluate
from judgerl.train.datasets import prompt_key
from judgerl.types import Completion, Decision, Messages

#: A number in a response: optional sign (not after a word character: "70-72" is 72), digits with
#: optional thousands commas, an optional decimal part; not glued to letters ("x72y", "4²").
_NUMBER = re.compile(r"(?<![\w.,])(-?)(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?![\w,]|\.\d)")
_THINK_OPEN = "<think>"


def claimed_value(response: str) -> int | None:
    """The integer a response claims: its last number (``48 + 24 = 72`` -> 72, ``1,072`` -> 1072,
    ``72.0`` -> 72), or None when that number is not an integer (``0.72``), is over
    :data:`MAX_VALUE_DIGITS` digits, or there is none. The teacher gives no verdict on a response
    whose claim it cannot read (never "wrong" for an unreadable answer)."""
    found = _NUMBER.findall(response)
    if not found:
        return None
    sign, digits, frac = found[-1]
    digits = digits.replace(",", "")
    if (frac and frac.strip("0")) or len(digits) > MAX_VALUE_DIGITS:
        return None
    return int(sign + digits)


_WHAT = {1: "the answer", 2: "both answers"}
_CHECK_LINE = re.compile(r"(?:([AB]) )?(True|False)")


def check_code(expression: str, claims: Sequence[int | None]) -> str:
    """The teacher's code: compute ``expression`` once, then test each claim against it.

    One claim (pointwise) prints ``True``/``False``; two (pairwise) print ``A <bool>`` and
    ``B <bool>``. A claim of None is tested as ``None`` (always ``False``; the teacher itself gives no
    verdict on an unreadable claim and never writes it).
    """
    lines = [f"value = {expression}"]
    if len(claims) == 1:
        lines.append(f"print(value == {claims[0]})")
    else:
        lines += [f'print("{label}", value == {c})' for label, c in zip("AB", claims)]
    return "\n".join(lines) + "\n"


def read_checks(observation: str, n: int) -> list[bool] | None:
    """The booleans printed by :func:`check_code` for ``n`` responses, or None when the output is
    anything else (an error, a neutralised tag, a missing line)."""
    lines = [ln.strip(" \t\r\xa0") for ln in observation.strip(" \t\r\n\xa0").split("\n")]  # print() writes \n
    if len(lines) != n:
        return None
    out = []
    for i, ln in enumerate(lines):
        m = _CHECK_LINE.fullmatch(ln)
        if m is None or (n == 1) != (m.group(1) is None) or (n > 1 and m.group(1) != "AB"[i]):
            return None
        out.append(m.group(2) == "True")
    return out


@dataclass(frozen=True)
class _Case:
    protocol: Any
    expression: str
    responses: tuple[str, ...]
    tools: bool


class ArithmeticTeacher(Backend):
    """Programmatic teacher judge (a Backend) for arithmetic-verification prompts; see the module
    docstring. Greedy and deterministic: ``params`` and ``seeds`` are ignored.

    Attributes:
        name: ``programmatic/arithmetic``. context_length: None.
    """

    name = "programmatic/arithmetic"
    context_length = None

    def __init__(self) -> None:
        self._cases: dict[str, _Case] = {}

    def register(self, messages: Messages, protocol: Any, expression: str, responses: Sequence[str],
                 tools: bool) -> None:
        """Tell the teacher what a prompt shows: the ``expression`` asked about and the responses
        in the order shown; ``tools``: check by running code.

        Raises:
            ValueError: the expression is not an integer ``+ - *`` expression, or the protocol kind
                is not pairwise / pointwise.
        """
        evaluate(expression)
        if protocol.kind not in ("pairwise", "pointwise"):
            raise ValueError(f"the arithmetic teacher judges pairwise or pointwise prompts, not {protocol.kind}")
        if len(responses) != (2 if protocol.kind == "pairwise" else 1):
            raise ValueError(f"a {protocol.kind} prompt shows {2 if protocol.kind == 'pairwise' else 1} "
                             f"response(s), got {len(responses)}")
        self._cases[prompt_key(messages)] = _Case(protocol, expression, tuple(responses), bool(tools))

    def generate(self, prompts: Sequence[Messages], params: SamplingParams, *, seeds: Sequence[int] | None = None,
                 on_result: Any = None) -> list[Completion]:
        """One judgment turn per prompt (see the module docstring); an unregistered prompt gets an
        ``error`` completion."""
        out = []
        for i, messages in enumerate(prompts):
            case = self._cases.get(prompt_key(messages))
            if case is None:
                c = Completion("", 0, 0, "error", "programmatic teacher: this prompt was not registered")
            else:
                text = self._turn(case, prefill_of(messages))
                c = Completion(text, 0, len(text.split()), "stop")
            out.append(c)
            if on_result is not None:
                on_result(i, c)
        return out

    def _turn(self, case: _Case, prefill: str) -> str:
        claims = [claimed_value(r) for r in case.responses]
        if None in claims:  # a claim it cannot read: no verdict (dropped by rejection sampling)
            return f"{_THINK_OPEN}I cannot read the answer's number.</think>\n"
        if case.tools and not output_blocks(prefill):
            return f"{_THINK_OPEN}Let me check {_WHAT[len(claims)]} with Python.\n```python\n{check_code(case.expression, claims)}```\n"
        if case.tools:
            checks = read_checks(output_blocks(prefill)[-1], len(claims))
            if checks is None:
                return "The code failed, so I cannot check the answers.</think>\n"
            thought, decision = self._decide_checked(case.protocol, checks)
        else:
            value = evaluate(case.expression)
            thought, decision = self._decide(case.protocol, value, claims, f"{case.expression} = {value}. ")
        if decision is None:  # no verdict: an invalid judgment, dropped by rejection sampling
            return f"{thought}</think>\n" if case.tools else f"{_THINK_OPEN}{thought}</think>\n"
        body = prefill[len(_THINK_OPEN):] if prefill.startswith(_THINK_OPEN) else prefill
        full = case.protocol.render_judgment(body + thought, decision)
        if case.tools and full.startswith(prefill):
            return full[len(prefill):]
        return full

    @staticmethod
    def _decide_checked(protocol: Any, checks: list[bool]) -> tuple[str, Decision | None]:
        """The thought and decision after the executed checks (one bool per shown response)."""
        from judgerl.train.sft import pairwise_decision

        if protocol.kind == "pointwise":
            score = protocol.score_scale[1] if checks[0] else protocol.score_scale[0]
            return ("The answer matches." if checks[0] else "The answer is wrong."), Decision(valid=True, scores=(float(score),))
        if checks.count(True) != 1:
            return "I cannot tell which one is right.", None
        winner = checks.index(True)
        return f"Only {'AB'[winner]} is correct.", pairwise_decision(protocol, winner)

    @staticmethod
    def _decide(protocol: Any, value: int, claims: list[int | None], lead: str) -> tuple[str, Decision | None]:
        """The thought after the computed / observed ``value``: each claim checked right where it is
        copied ("which matches" / "which is wrong"), then the verdict -- one local comparison per
        response, which a small student learns far more easily than comparing both at the end."""
        from judgerl.train.sft import pairwise_decision

        def check(c: int | None) -> str:
            return "which matches" if c == value else "which is wrong"

        if protocol.kind == "pointwise":
            ok = claims[0] == value
            score = protocol.score_scale[1] if ok else protocol.score_scale[0]
            return (f"{lead}The answer says {claims[0]}, {check(claims[0])}.",
                    Decision(valid=True, scores=(float(score),)))
        a, b = claims
        said = f"{lead}Response A says {a}, {check(a)}. Response B says {b}, {check(b)}. "
        right = [c == value for c in claims]
        if right.count(True) != 1:
            return said + "I cannot tell which one is right.", None
        winner = right.index(True)
        return said + f"{'AB'[winner]} is correct.", pairwise_decision(protocol, winner)
