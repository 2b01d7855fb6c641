"""Reading a judge's decision from its output: the protocol's parse, then the quoted-answer check.

:func:`read_decision` is what :class:`judgerl.judge.Judge` applies to every judgment (and
``bench/reparse_judgments.py`` to recorded ones); :func:`worst_for` is the rule that decides whether a
final answer that may be copied from a response stands.
"""

from __future__ import annotations

from typing import Any, Sequence

from judgerl.protocols.parsing import quoted_sources
from judgerl.types import Decision


def read_decision(protocol: Any, parse_text: str, responses: Sequence[str], n_responses: int | None = None,
                  finish_reason: str = "stop") -> Decision:
    """The decision a :class:`Judge` reads from one judge output: the protocol's parse, then the
    quoted-answer check against ``responses``.

    When a final-answer tag may be copied from responses (:func:`judgerl.protocols.parsing.quoted_sources`),
    the decision is void (``quoted_answer``) unless it is the **worst outcome for every matched
    response** (:func:`worst_for`): a pairwise verdict against it (the arena's ``>>`` label against
    it), a listwise ranking that puts it last (best mode: not best). A response can then never gain
    from text it contains: a verdict it injected for itself is void, and one it wrote against itself
    stands (voiding that would rescue it from its loss; before, it also voided the judge's own right
    answer, which looks the same: 5 of 10 injected-verdict judgments of the shipped TIR judge on the
    ``arith-attack`` set). Decisions with scores (PaS, PaVS, pointwise) are always void on a match:
    a copied score can always help its author. Also used to re-read recorded judgments
    (``bench/reparse_judgments.py``).

    Args:
        protocol: A :class:`judgerl.protocols.JudgeProtocol` object.
        parse_text: The judge's output as the parser reads it (a trajectory's ``parse_text()``).
        responses: The responses under judgment in prompt order (empty: no quoted-answer check).
        n_responses: Passed to ``protocol.parse`` (listwise index checks).
        finish_reason: ``"prompt_too_long"`` gives that invalid decision without parsing.
    """
    if finish_reason == "prompt_too_long":
        return Decision.invalid("prompt_too_long")
    decision = protocol.parse(parse_text, n_responses)
    if decision.valid and responses:
        matched = quoted_sources(parse_text, responses)
        if matched and not worst_for(decision, matched, len(responses)):
            return Decision.invalid("quoted_answer", thought=decision.thought)
    return decision


#: Arena label that is the heaviest loss of the response at position 0 / 1.
_ARENA_WORST = {0: "B>>A", 1: "A>>B"}


def worst_for(decision: Decision, indices: frozenset[int] | set[int], n_responses: int) -> bool:
    """Whether ``decision`` is the worst possible outcome for every response in ``indices`` (0-based).

    Pairwise: the verdict names the other response (and an arena label is the ``>>`` against it);
    both responses can never both lose. Listwise: the ranking puts the one matched response last
    (best mode, a ranking of one: it is not the best). Scores (PaS, PaVS, pointwise), ties and any
    other shape: False.
    """
    if not indices or decision.scores is not None:
        return False
    if decision.ranking:
        if len(decision.ranking) == 1 and n_responses > 1:
            return decision.ranking[0] not in indices
        return set(indices) == {decision.ranking[-1]}
    if n_responses == 2 and decision.verdict in ("A", "B"):
        loser = 1 - "AB".index(decision.verdict)
        if set(indices) != {loser}:
            return False
        return decision.label is None or decision.label == _ARENA_WORST[loser]
    return False


__all__ = ["read_decision", "worst_for"]
