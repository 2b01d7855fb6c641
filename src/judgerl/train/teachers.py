"""A programmatic teacher judge for arithmetic-verification pairs (distillation without an LLM).

TIR-Judge-Distill (Xu et al., 2025) cold-starts a judge on ~10K trajectories of a stronger
teacher. For *verifiable* pairs a program can be that teacher. :class:`ArithmeticTeacher` is a
:class:`~judgerl.backends.Backend`, so its judgments go through the same
:class:`~judgerl.judge.Judge` as any model's -- tool loop and sandbox included:

* without tools it writes ``<think>48 + 24 = 72. Response A says 72, which matches. Response B says
  74, which is wrong. A is correct.</think>`` and the protocol's answer tags (it computes the
  expression itself; each claim is checked where it is copied: a pilot student trained on "Response A
  says 72, response B says 74. A is correct." copied both claims right but chose the letter at chance);
* with tools its first turn is ``<think>Let me check with Python.`` and a block
  ``print(48 + 24)``; the Judge's tool loop runs it **in the sandbox** and appends the real
  output, and the teacher's second turn reads that output (not its own arithmetic) and compares
  it with each response's claim before writing the verdict. If the code fails, it gives no verdict
  (the trajectory is invalid and rejection sampling drops it).

The teacher knows nothing of the gold label: it decides from the arithmetic alone, so rejection
sampling against the labels is a real filter. Prompts must be registered first
(:meth:`ArithmeticTeacher.register`, done by :func:`judgerl.train.distill.programmatic_teacher`):
the teacher looks up the expression and the shown responses by the prompt's text instead of
re-parsing the protocol's prompt layout.
"""

from __future__ import annotations

import ast
import json
import operator
import re
from dataclasses import dataclass
from typing import Any, Sequence

from judgerl.backends.base import SamplingParams
from judgerl.backends.chat import prefill_of
from judgerl.codeblocks import output_blocks
from judgerl.types import Completion, Decision, Messages

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}
_INT = re.compile(r"-?\d+")
_THINK_OPEN = "<think>"


def evaluate(expression: str) -> int:
    """The value of an integer expression of ``+ - *`` and parentheses (no names, no calls).

    Raises:
        ValueError: anything else (names the expression).
    """

    def ev(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        raise ValueError(f"not an integer +-* expression: {expression!r}")

    try:
        return ev(ast.parse(expression, mode="eval"))
    except SyntaxError:
        raise ValueError(f"not an integer +-* expression: {expression!r}") from None


def claimed_value(response: str) -> int | None:
    """The integer a response claims: the last integer in it (``48 + 24 = 72`` -> 72), or None."""
    found = _INT.findall(response)
    return int(found[-1]) if found else None


@dataclass(frozen=True)
class _Case:
    protocol: Any
    expression: str
    responses: tuple[str, ...]
    tools: bool


def prompt_key(messages: Messages) -> str:
    """The identity of a judge prompt without its assistant prefill (JSON of the other messages)."""
    msgs = list(messages)
    if msgs and msgs[-1].get("role") == "assistant":
        msgs = msgs[:-1]
    return json.dumps([[m.get("role"), m.get("content")] for m in msgs], ensure_ascii=False)


class ArithmeticTeacher:
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
        if case.tools and not output_blocks(prefill):
            return f"{_THINK_OPEN}Let me check with Python.\n```python\nprint({case.expression})\n```\n"
        if case.tools:
            observed = output_blocks(prefill)[-1].strip()
            if not re.fullmatch(r"-?\d+", observed):
                return "The code failed, so I cannot check the answers.</think>\n"
            value, lead = int(observed), f"The output is {observed}. "
        else:
            value, lead = evaluate(case.expression), f"{case.expression} = {evaluate(case.expression)}. "
        claims = [claimed_value(r) for r in case.responses]
        thought, decision = self._decide(case.protocol, value, claims, lead)
        if decision is None:  # no verdict: an invalid judgment, dropped by rejection sampling
            return f"{thought}</think>\n" if case.tools else f"{_THINK_OPEN}{thought}</think>\n"
        body = prefill[len(_THINK_OPEN):] if prefill.startswith(_THINK_OPEN) else prefill
        full = case.protocol.render_judgment(body + thought, decision)
        if case.tools and full.startswith(prefill):
            return full[len(prefill):]
        return full

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
            score = protocol.max_score if ok else protocol.min_score
            return (f"{lead}The answer says {claims[0]}, {check(claims[0])}.",
                    Decision(valid=True, scores=(float(score),)))
        a, b = claims
        said = f"{lead}Response A says {a}, {check(a)}. Response B says {b}, {check(b)}. "
        right = [c == value for c in claims]
        if right.count(True) != 1:
            return said + "I cannot tell which one is right.", None
        winner = right.index(True)
        return said + f"{'AB'[winner]} is correct.", pairwise_decision(protocol, winner)
