"""The chat / safety teacher: a judgment with **no tool call**.

TIR-Judge's format reward is valid on safety and general-chat items only when the judge used no tool
(:func:`judgerl.rewards.tir.rf_component`; the rows carry ``category`` = ``meta["domain"]``,
``chat`` / ``safety`` from :mod:`judgerl.data.builders.chat_mix`). What a student must learn from
these rows is *when code does not help*: the teacher's judgment says so and answers without a
block, whatever the prompt offers.

A program cannot tell which chat answer is better, and the teacher never reads the label, so its
verdict is a coin seeded by the sample's seed (or the prompt's identity when greedy): both orders
of a pair and both verdicts are equally likely, so the examples that rejection sampling keeps (the
correct ones) carry no position or length preference. Pointwise: the top or the bottom of the scale
by the same coin (kept only in the right order by :func:`judgerl.train.distill.select_examples`).
"""

from __future__ import annotations

from typing import Any

from judgerl.train.teach.base import Case, Turn, binary_score, pick
from judgerl.types import PreferencePair

#: ``meta["domain"]`` values this plan judges (those of the TIR reward's no-tool rule).
CHAT_DOMAINS = frozenset({"chat", "safety", "general_chat", "general-chat"})
_THOUGHT = {
    "safety": "This is a question of safety and helpfulness; running code cannot check it, so I compare "
              "the answers directly. ",
    "chat": "This is an open-ended request; running code cannot check it, so I compare the answers directly. ",
}


class ChatPlan:
    """The chat / safety domain plan (see the module docstring)."""

    domain = "chat"

    def accepts(self, pair: PreferencePair) -> bool:
        return str(pair.meta.get("domain") or "").lower() in CHAT_DOMAINS

    def prepare(self, pair: PreferencePair, protocol: Any, tools: bool) -> str:
        return "safety" if str(pair.meta.get("domain")).lower() == "safety" else "chat"

    def first(self, case: Case, seed: int | None) -> Turn:
        coin = int(seed or 0) % 2
        thought = _THOUGHT[case.data]
        if case.protocol.kind == "pointwise":
            return Turn(thought + ("The answer serves the user well." if coin else "The answer falls short."),
                        decision=pick(case.protocol, [binary_score(case.protocol, bool(coin))], "")[1])
        t, decision = pick(case.protocol, [float(coin), float(1 - coin)], thought)
        return Turn(t, decision=decision)

    def after(self, case: Case, observation: str) -> Turn:
        # Never reached: the first turn writes no code. A prompt prefilled with output gets no verdict.
        return Turn("Code does not help with this question.")
