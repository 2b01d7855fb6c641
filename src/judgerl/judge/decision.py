"""Reading a judge's decision from its output: the protocol's parse, then the quoted-answer check.

:func:`read_decision` is what :class:`judgerl.judge.core.Judge` applies to every judgment (and
``bench/reparse_judgments.py`` to recorded ones); :func:`worst_for` is the rule that decides whether a
final answer that may be copied from a response stands.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Sequence

from judgerl.protocols.base import JudgeProtocol
from judgerl.protocols.carriers import carrier_sources
from judgerl.protocols.parsing import ParseFailure
from judgerl.protocols.quoting import canonical_text, printed_sources, quoted_sources
from judgerl.types import Decision, Trajectory


def read_decision(protocol: JudgeProtocol, parse_text: str, responses: Sequence[str], n_responses: int | None = None,
                  finish_reason: str = "stop", observations: Sequence[str] = ()) -> Decision:
    """The decision a :class:`Judge` reads from one judge output: the protocol's parse, then the
    quoted-answer check against ``responses``.

    When a final-answer tag may be copied from responses (:func:`judgerl.protocols.quoting.quoted_sources`),
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
        observations: Tool output shown to the judge (untrusted: code under judgment may compute and
            print a verdict its text does not contain); an answer copied from one is always void, and so
            is one whose bare tag it prints (:func:`~judgerl.protocols.quoting.printed_sources`) unless a
            response holds that tag too (then that response is the matched one).

    A decision the parser found invalid *with* answer tags (``conflicting_answers``, ``score_out_of_range``,
    ...) whose tags may be copied is ``quoted_answer`` too: the expected-score reader reads the first answer
    tag, and the sample vote must not silently drop a sample the injection spoiled. A ``quoted_answer``
    decision carries the matched responses' indices in ``Decision.quoted`` (the arena scores it as their
    heaviest loss instead of dropping the prompt). A ``quote_form`` that raises
    :class:`~judgerl.protocols.parsing.ParseFailure` (the template protocol's answer pattern timing out)
    voids the decision with that reason (``answer_pattern_timeout``): a slow response cannot skip the check.
    """
    if finish_reason == "prompt_too_long":
        return Decision.invalid("prompt_too_long")
    decision = protocol.parse(parse_text, n_responses)
    if (decision.valid or decision.invalid_reason in _TAGGED_REASONS) and (responses or observations):
        form = protocol.quote_form  # a protocol whose answer is a pattern marks it with its control tag
        try:
            judged = form(parse_text)
            said, shown = [form(s, source=True) for s in responses], [form(s, source=True) for s in observations]
        except ParseFailure as e:  # the pattern timed out (answer_pattern_timeout): the check cannot be skipped
            return Decision.invalid(e.reason, thought=decision.thought)
        matched = quoted_sources(judged, [*said, *shown])
        if printed_sources(judged, shown):  # a bare tag the code printed:
            echoed = printed_sources(judged, said)  # a response's own, or
            matched |= echoed or {len(responses)}  # computed (no response holds it): always void
        carriers = _carriers(protocol, said)
        ours = frozenset(i for i in matched if i < len(responses)) | carriers
        if (matched or ours) and not (decision.valid and len(responses) not in matched
                                      and worst_for(decision, ours, len(responses), _min_score(protocol))):
            return Decision(valid=False, invalid_reason="quoted_answer", thought=decision.thought,
                            quoted=tuple(sorted(ours)))
    if not decision.valid and decision.invalid_reason in _SPOILABLE and responses:  # after the quoted-answer check
        spoilers = markup_sources(parse_text, responses, protocol.control_tags, protocol.answer_marker)
        if spoilers:  # the judge wrote (quoted, named) markup a response holds, and that broke its output
            return Decision(valid=False, invalid_reason="spoiled_by_markup", thought=decision.thought,
                            quoted=tuple(sorted(spoilers)))
    return decision


#: Invalid reasons of a parse that found final-answer tags (conflicting, out of range, ...): a quoted
#: one among them voids the decision as well (an expected score is read at the first tag, and a
#: dropped sample would move the vote).
_TAGGED_REASONS = frozenset({"conflicting_answers", "invalid_verdict", "unparseable_score", "score_scale_mismatch",
                             "score_out_of_range", "missing_scores", "invalid_ranking", "index_out_of_range"})


#: Invalid reasons of a parse that the judge's own markup broke -- a second end of thinking moves the answer region
#: past its answer (``missing_final_answer``), a second ``<think>`` leaves it open (``unterminated_thinking``), a
#: bare or second answer tag (the tagged reasons): a judge that names or quotes a response's markup writes them.
_SPOILABLE = _TAGGED_REASONS | {"missing_final_answer", "unterminated_thinking"}
_MARKUP_RE = re.compile(r"<\s*(/?)\s*([a-z][a-z0-9_:-]{0,40})\b[^<>\n]{0,40}>")
#: In a response, also a tag left open (``</think`` at the end of a line or before a space) or in square brackets
#: (``[score]``): a judge that names it writes the closed tag.
_GENERIC_RE = re.compile(r"(?<=[A-Za-z_])<\s*[A-Za-z_][\w:.]{0,40}\s*(?:,\s*[A-Za-z_][\w:.]{0,40}\s*)*>")
_LOOSE_MARKUP_RE = re.compile(r"(?:<\s*(/?)\s*([a-z][a-z0-9_:-]{0,40})(?:\b[^<>\n]{0,40}>|(?=[\s\ue000]|$))"
                              r"|\[\s*(/?)\s*([a-z][a-z0-9_:-]{0,40})\s*\])")


def _markup(text: str, names: frozenset[str], loose: bool = False) -> Counter:
    """``(closing, name) -> count`` of the control tags in ``text`` (canonical: case, spaces, look-alikes); with
    ``loose`` (a response's text) unclosed and bracketed tags too, and a generic type's ``List<Score>`` (a name
    right after a word character) not."""
    found: Counter = Counter()
    if loose:  # a generic type (``List<Score>``, ``Task<Verdict>``) is code, not markup
        text = _GENERIC_RE.sub(" ", text)
    canon = canonical_text(text)
    if not loose:
        for m in _MARKUP_RE.finditer(canon):
            if m.group(2) in names:
                found[(bool(m.group(1)), m.group(2))] += 1
        return found
    for m in _LOOSE_MARKUP_RE.finditer(canon):
        closing, name = (m.group(1), m.group(2)) if m.group(2) else (m.group(3), m.group(4))
        if name in names:
            found[(bool(closing), name)] += 1
    return found


def markup_sources(judge_output: str, responses: Sequence[str], control_tags: Sequence[str],
                   marker: str = "") -> frozenset[int]:
    """The responses whose control markup the judge's output repeats where it broke the parse: a tag (``think``
    or one of the protocol's ``control_tags``, opening or closing, in any case, spacing or look-alike dress) that
    a response holds and the judge's output holds too, beyond the judge's own -- an answer tag at all (the parse
    failed with it), an opening ``<think>`` other than the one its output starts with, a ``</think>`` other than
    the first one written before its first answer (an answer tag, or ``marker`` for a template judge; an R1-style
    output that never opened one closes its own reasoning). :func:`read_decision` gives such a decision the
    reason ``spoiled_by_markup`` (a policy fault; in a vote it counts against the quorum:
    :data:`judgerl.judge.aggregate.SPOILED_BY_MARKUP`).

    Returns:
        0-based indices (empty: no response holds markup the judge repeats). Never raises on text.
    """
    names = frozenset(t.lower() for t in control_tags) | {"think"}
    canon = canonical_text(judge_output)
    found = [(bool(m.group(1)), m.group(2), m.start()) for m in _MARKUP_RE.finditer(canon) if m.group(2) in names]
    answers = [pos for closing, name, pos in found if name != "think"]
    mark = canonical_text(marker).strip() if marker else ""
    if mark and mark in canon:
        answers.append(canon.index(mark))
    first_answer = min(answers) if answers else len(canon)
    counts: Counter = Counter((closing, name) for closing, name, _ in found)
    own = Counter()
    if re.match(r"\s*<think>", canon):
        own[(False, "think")] = 1
    if any(closing and name == "think" and pos < first_answer for closing, name, pos in found):
        own[(True, "think")] = 1
    repeated = {k for k, n in counts.items() if n > own[k]}
    if not repeated:
        return frozenset()
    return frozenset(i for i, r in enumerate(responses) if repeated & _spoiling(_markup(r, names, loose=True)))


def _spoiling(held: Counter) -> set:
    """The tags of a response's markup that can spoil a judge: its answer tags, and its think tags only when they
    are unbalanced (a fake end of thinking, a stray ``<think>``) -- a reasoning response's own
    ``<think>…</think>`` pair is its format, not an attack on the judge's."""
    keys = {k for k in held if k[1] != "think"}
    if held[(False, "think")] != held[(True, "think")]:
        keys |= {k for k in held if k[1] == "think"}
    return keys


def _carriers(protocol: JudgeProtocol, said: Sequence[str]) -> frozenset[int]:
    return carrier_sources(said, protocol.control_tags, protocol.name == "arena" or "[[" in protocol.answer_marker,
                           protocol.answer_marker, protocol.score_scale)


def carriers_of(protocol: JudgeProtocol, responses: Sequence[str]) -> tuple[int, ...]:
    """The 0-based indices of the ``responses`` that carry the judge's answer syntax
    (:func:`judgerl.protocols.carriers.carrier_sources`, on the protocol's ``quote_form``): a decision that
    stands for them is their worst (:func:`read_decision`), and an expected score is not read for them
    (:meth:`judgerl.judge.core.Judge.expected_scores`: the answer they carry primes the judge's token
    probabilities at its answer position). ``()`` when the quote form times out (the decision is void then)."""
    if not responses:
        return ()
    try:
        said = [protocol.quote_form(r, source=True) for r in responses]
    except ParseFailure:
        return ()
    return tuple(sorted(_carriers(protocol, said)))


#: Invalid reasons answer forcing can repair (the judge never reached its final answer).
FORCEABLE_REASONS = frozenset({"missing_final_answer", "unterminated_thinking"})


def forceable(decision: Decision, finish_reason: str, parse_text: str, protocol: JudgeProtocol | None = None) -> bool:
    """Whether answer forcing may give a judgment its final answer: a judge that never reached it
    (:data:`FORCEABLE_REASONS`, stopped or cut at its token limit), also where the markup rule marked it
    (``spoiled_by_markup`` over a parse of ``parse_text`` that is forceable): the forced turn is read again, with
    the quoted-answer check."""
    if decision.valid or finish_reason not in ("stop", "length"):
        return False
    if decision.invalid_reason in FORCEABLE_REASONS:
        return True
    if decision.invalid_reason == "spoiled_by_markup" and protocol is not None:
        return protocol.parse(parse_text).invalid_reason in FORCEABLE_REASONS
    return False


def observations_of(trajectory: Trajectory | None) -> tuple[str, ...]:
    """The tool output a trajectory showed the judge (its ``tool`` segments; ``()`` for None): the
    ``observations`` of :func:`read_decision`."""
    if trajectory is None:
        return ()
    return tuple(s.text for s in trajectory.segments if s.kind == "tool")


#: Arena label that is the heaviest loss of the response at position 0 / 1.
ARENA_WORST = {0: "B>>A", 1: "A>>B"}


def worst_for(decision: Decision, indices: frozenset[int] | set[int], n_responses: int,
              min_score: float | None = None) -> bool:
    """Whether ``decision`` is the worst possible outcome for every response in ``indices`` (0-based).

    Scores that are the answer (PaS, pointwise: ``min_score`` given): every such response gets
    ``min_score`` (the bottom of the scale). Pairwise verdicts (PaV, PaVS -- whose reward reads the
    verdict only --, arena): the verdict names the other response (an arena label is the ``>>`` against
    it, and PaVS scores do not favour it); both responses can never both lose. Listwise: the ranking puts the one matched response last
    (best mode, a ranking of one: it is not the best). Ties, and scores without ``min_score``: False.
    """
    if not indices:
        return False
    if min_score is not None and decision.scores is not None:
        return all(0 <= i < len(decision.scores) and decision.scores[i] <= min_score for i in indices)
    if decision.ranking:
        if len(decision.ranking) == 1 and n_responses > 1:
            return decision.ranking[0] not in indices
        return set(indices) == {decision.ranking[-1]}
    if n_responses == 2 and decision.verdict in ("A", "B"):
        loser = 1 - "AB".index(decision.verdict)
        if set(indices) != {loser}:
            return False
        if decision.scores is not None and len(decision.scores) == 2 and decision.scores[loser] > decision.scores[1 - loser]:
            return False  # PaVS scores that favour it (copied ones, as likely as not)
        return decision.label is None or decision.label == ARENA_WORST[loser]
    return False


def _min_score(protocol: JudgeProtocol) -> float | None:
    """The bottom of the protocol's scale when its scores are the answer (PaS, pointwise, a scored template);
    None when a verdict is (PaV, PaVS, arena) or it writes no score."""
    scale = protocol.score_scale
    if scale is None or "verdict" in (t.lower() for t in protocol.answer_tags):
        return None
    return scale[0]


__all__ = ["ARENA_WORST", "FORCEABLE_REASONS", "carriers_of", "forceable", "markup_sources", "observations_of", "read_decision", "worst_for"]
