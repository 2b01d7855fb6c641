"""What every domain teacher shares: the registry of prompts, the turn loop, reading the executed output.

A :class:`DomainTeacher` is a :class:`~judgerl.backends.Backend` (like
:class:`judgerl.train.teachers.ArithmeticTeacher`), so its judgments go through the same
:class:`~judgerl.judge.Judge` as a model's: the tool loop runs its code **in the sandbox**, with the
response namespace when the protocol has it on. Each domain is a :class:`Plan` (``arith``, ``code``,
``if``, ``chat``) that writes the first turn (a thought and a code block, or a final judgment
without tools) and, after the Judge appended the real output, the decision it reads from that output.
A plan that cannot decide (an error, neither response right, a tie) gives no verdict: the judgment
is invalid and rejection sampling (:func:`judgerl.train.distill.select_examples`) drops it. No plan
is ever told which response is the chosen one: a case holds the responses in the order shown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol, Sequence

from judgerl.backends.base import Backend, SamplingParams, derive_seed
from judgerl.backends.chat import prefill_of
from judgerl.text.codeblocks import output_blocks
from judgerl.train.datasets import prompt_key
from judgerl.types import Completion, Decision, Messages, PreferencePair

_THINK = "<think>"
_COUNT_LINE = re.compile(r"(?:([AB]) )?(\d{1,6}) of (\d{1,6})(?: score (\d{1,6}))?")


@dataclass(frozen=True)
class Turn:
    """One teacher turn: ``thought`` (text inside ``<think>``) and either ``code`` to run (the turn
    ends after its block) or the final ``decision`` (None: no verdict)."""

    thought: str
    code: str | None = None
    decision: Decision | None = None


@dataclass(frozen=True)
class Case:
    """What the teacher knows of one prompt: the protocol, the responses in the order shown, the
    question, whether it may run code (``tools``) and with the response namespace (``namespace``),
    and the plan's own ``data`` (an expression, the visible tests, the instructions). ``key``: the
    prompt's identity (seeds the chat plan's verdict)."""

    protocol: Any
    responses: tuple[str, ...]
    question: str
    tools: bool
    namespace: bool
    data: Any
    key: str = ""


class Plan(Protocol):
    """A domain's judging program (see the module docstring)."""

    domain: str

    def accepts(self, pair: PreferencePair) -> bool:
        """Whether this plan judges ``pair`` (by its ``meta``, never its label)."""
        ...

    def prepare(self, pair: PreferencePair, protocol: Any, tools: bool) -> Any:
        """The plan's data for ``pair`` (from the question and ``meta``); raises ValueError when the plan
        cannot judge it (the row is skipped)."""
        ...

    def first(self, case: Case, seed: int | None) -> Turn:
        """The first turn."""
        ...

    def after(self, case: Case, observation: str) -> Turn:
        """The final turn after the executed output ``observation`` of :meth:`first`'s code."""
        ...


def read_counts(observation: str, n: int) -> list[tuple[int, int]] | None:
    """``(passed, total)`` per response from lines ``A 3 of 4`` / ``B 2 of 4`` (pairwise) or ``3 of 4``
    (one response; the IF teacher's pointwise line may end ``score 7``, read by :func:`read_score`), or None when
    the output is anything else (an error, a missing or extra line)."""
    lines = [ln.strip(" \t\r") for ln in observation.strip().split("\n")]
    if len(lines) != n:
        return None
    out = []
    for i, ln in enumerate(lines):
        m = _COUNT_LINE.fullmatch(ln)
        if m is None or (n == 1) != (m.group(1) is None) or (n > 1 and m.group(1) != "AB"[i]):
            return None
        passed, total = int(m.group(2)), int(m.group(3))
        if passed > total:
            return None
        out.append((passed, total))
    return out


def read_score(observation: str) -> int | None:
    """The score printed after a pointwise count line (``3 of 4 score 7``), or None when there is none."""
    m = _COUNT_LINE.fullmatch(observation.strip(" \t\r\n"))
    return int(m.group(4)) if m is not None and m.group(4) is not None else None


def pick(protocol: Any, scores: Sequence[float], lead: str) -> tuple[str, Decision | None]:
    """The decision from one number per shown response (higher is better): pairwise the strictly
    higher one wins (a tie: no verdict); pointwise the score itself (within the protocol's scale)."""
    from judgerl.train.sft import pairwise_decision

    if protocol.kind == "pointwise":
        return lead, Decision(valid=True, scores=(float(scores[0]),))
    if len(scores) != 2 or scores[0] == scores[1]:
        return lead + "I cannot tell which one is better.", None
    winner = 0 if scores[0] > scores[1] else 1
    return lead + f"{'AB'[winner]} is better.", pairwise_decision(protocol, winner)


def binary_score(protocol: Any, ok: bool) -> float:
    """The top of the protocol's scale for a right response, the bottom for a wrong one."""
    lo, hi = protocol.score_scale
    return hi if ok else lo


def shown_names(case: Case) -> list[str]:
    """The names the code uses for the shown responses: ``A``/``B`` (pairwise) or ``RESPONSE``."""
    return ["A", "B"] if case.protocol.kind == "pairwise" else ["RESPONSE"]


class DomainTeacher(Backend):
    """A programmatic teacher judge over several domains (see the module docstring). Greedy and
    deterministic: ``params`` are ignored; ``seeds`` only vary the chat plan's verdict.

    Args:
        plans: The domain plans, tried in order by :meth:`plan_for`.
    """

    name = "programmatic/domains"
    context_length = None

    def __init__(self, plans: Sequence[Plan]) -> None:
        self.plans = tuple(plans)
        self._cases: dict[str, tuple[Plan, Case]] = {}

    def plan_for(self, pair: PreferencePair) -> Plan | None:
        """The first plan that accepts ``pair``, or None."""
        return next((p for p in self.plans if p.accepts(pair)), None)

    def register(self, messages: Messages, pair: PreferencePair, protocol: Any, responses: Sequence[str],
                 tools: bool) -> Plan:
        """Tell the teacher what the prompt ``messages`` shows: ``pair``'s question and ``meta``, the
        ``responses`` in the order shown; ``tools``: the Judge runs code.

        Raises:
            ValueError: no plan accepts the pair, the plan cannot judge it, or the number of responses
                does not fit the protocol.
        """
        plan = self.plan_for(pair)
        if plan is None:
            raise ValueError(f"pair {pair.id!r}: no teacher for domain {pair.meta.get('domain')!r}")
        need = {"pairwise": 2, "pointwise": 1}.get(protocol.kind)
        if need is None or len(responses) != need:
            raise ValueError(f"the {plan.domain} teacher judges pairwise (2) or pointwise (1) prompts, got "
                             f"{protocol.kind} with {len(responses)} response(s)")
        data = plan.prepare(pair, protocol, tools)
        key = prompt_key(messages)
        self._cases[key] = (plan, Case(protocol, tuple(responses), pair.prompt, bool(tools),
                                       bool(protocol.namespace), data, key))
        return plan

    def generate(self, prompts: Sequence[Messages], params: SamplingParams, *, seeds: Sequence[int] | None = None,
                 on_result: Any = None) -> list[Completion]:
        """One teacher turn per prompt; an unregistered prompt gets an ``error`` completion."""
        out = []
        for i, messages in enumerate(prompts):
            found = self._cases.get(prompt_key(messages))
            if found is None:
                c = Completion("", 0, 0, "error", "programmatic teacher: this prompt was not registered")
            else:
                text = self._turn(*found, prefill_of(messages), None if seeds is None else int(seeds[i]))
                c = Completion(text, 0, len(text.split()), "stop")
            out.append(c)
            if on_result is not None:
                on_result(i, c)
        return out

    def _turn(self, plan: Plan, case: Case, prefill: str, seed: int | None) -> str:
        outputs = output_blocks(prefill)
        if not outputs:
            turn = plan.first(case, seed if seed is not None else derive_seed(0, case.key))
            if turn.code is not None:
                return f"{_THINK}{turn.thought}\n```python\n{turn.code}```\n"
            if turn.decision is None:
                return f"{_THINK}{turn.thought}</think>\n"
            return case.protocol.render_judgment(turn.thought, turn.decision)
        turn = plan.after(case, outputs[-1])
        if turn.decision is None:
            return f"{turn.thought}</think>\n"
        body = prefill[len(_THINK):] if prefill.startswith(_THINK) else prefill
        full = case.protocol.render_judgment(body + turn.thought, turn.decision)
        return full[len(prefill):] if full.startswith(prefill) else full

