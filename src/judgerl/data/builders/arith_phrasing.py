"""Arithmetic-verification pairs in other phrasings (a generalisation test for trained judges).

:func:`judgerl.data.builders.arith.build_arithmetic_pairs` writes every pair the same way
("What is 48 + 24?" / "48 + 24 = 72"). A judge trained only on that phrasing may have learned the
template rather than the check. :func:`rephrase_arithmetic` rewrites each pair's question and both
responses with other templates (operator words, other question forms, answers that do not repeat
the expression), keeping the values, so the label is unchanged. The template of each pair is chosen
by ``derive_seed(seed, pair id)`` -- stable whatever the list's order or length.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from judgerl.backends.base import derive_seed
from judgerl.types import PreferencePair

_WORDS = {"+": "plus", "-": "minus", "*": "times"}
#: Question templates ({a}, {b}, {sym}, {word}); none is "What is {a} {sym} {b}?".
QUESTIONS = (
    "Compute {a} {word} {b}.",
    "How much is {a} {sym} {b}?",
    "Calculate {a}{sym}{b}.",
    "What number do you get from {a} {word} {b}?",
    "Evaluate the expression {a} {sym} {b}.",
)
#: Response templates ({v}: the claimed value); none repeats "{a} {sym} {b} = {v}".
ANSWERS = (
    "The answer is {v}.",
    "It equals {v}.",
    "{a} {word} {b} is {v}.",
    "Result: {v}",
    "That comes to {v}.",
)


def rephrase_arithmetic(pairs: Sequence[PreferencePair], seed: int = 0) -> list[PreferencePair]:
    """The pairs with their question and both responses in another phrasing.

    Args:
        pairs: Arithmetic pairs (``meta`` has ``expression`` "a op b", ``value`` and ``wrong``).
        seed: Chooses the templates per pair.

    Returns:
        New pairs: id ``<id>-rephrased``, source ``<source>-rephrased``, ``meta`` plus
        ``phrasing`` = (question template index, answer template index).

    Raises:
        ValueError: a pair without an ``a op b`` expression, a value or a wrong value (names the pair).
    """
    out = []
    for p in pairs:
        try:
            a, sym, b = str(p.meta["expression"]).split()
            value, wrong = p.meta["value"], p.meta["wrong"]
        except (KeyError, ValueError):
            raise ValueError(f"pair {p.id!r}: not an arithmetic pair (meta needs expression 'a op b', value, wrong)") from None
        if sym not in _WORDS:
            raise ValueError(f"pair {p.id!r}: unknown operator {sym!r}")
        h = derive_seed(seed, p.id)
        qi, ai = h % len(QUESTIONS), (h // len(QUESTIONS)) % len(ANSWERS)
        fields = {"a": a, "b": b, "sym": sym, "word": _WORDS[sym]}
        out.append(dataclasses.replace(
            p,
            id=f"{p.id}-rephrased",
            prompt=QUESTIONS[qi].format(**fields),
            chosen=ANSWERS[ai].format(v=value, **fields),
            rejected=ANSWERS[ai].format(v=wrong, **fields),
            source=f"{p.source}-rephrased",
            meta={**p.meta, "phrasing": [qi, ai]},
        ))
    return out
