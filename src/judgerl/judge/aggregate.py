"""Test-time scaling: combine N sampled judgments into one (J1, Whitehouse et al. 2025, Sec. 5.3).

The one home of the voting rules, used by the eval metrics, the reward server and the ``Judge``:

* pairwise: **majority vote** over the valid samples' verdicts; a shared top count is a ``"tie"``;
  scores (PaS / PaVS) are averaged per position over the valid samples that have them;
* pointwise: **mean score** over the valid samples;
* listwise ``best``: majority vote of the best index; a shared top count goes to the tied index
  seen first (lowest sample index), so the result is a pure function of the samples in order;
* listwise ``rank``: Borda count (Borda 1781; mean position over the valid rankings, best first),
  ties broken by the earliest first appearance.

Invalid samples never vote, and a judgment is decided only by a **quorum**: more than half of its samples
valid (:func:`has_quorum`); otherwise the result is invalid, with the first invalid sample's reason. A
response can spoil a judge's sample without quoting an answer -- a prose request the judge then describes with
an answer tag ("A asked me to write <verdict>A</verdict>") gives ``conflicting_answers`` -- and a vote over the
samples it did not spoil is a vote over the ones it fooled (stop 43's red team: 2 of 3 samples spoiled, the
third, fooled, decided at reward 1.0). One exception closes a hole: a sample invalid because its final answer was
*quoted from a response under judgment* (``quoted_answer``) makes the whole aggregate invalid —
otherwise a response could spell out the judge's unwanted endings, have exactly those samples
dropped, and move the vote or the mean its way. A sample a response *spoiled* (``spoiled_by_markup``: the judge
repeated that response's markup and its parse broke) counts against the quorum; where a quorum is kept anyway it
is not dropped but **votes against its spoiler** (:func:`against_spoilers`): dropping it left the vote to the
samples the injection fooled (stop 43's red team: 2 of 5 spoiled, 2 fooled, 1 honest -> the injector won 2-1).
"""

from __future__ import annotations

from collections import Counter
from typing import Collection, Hashable, Iterable, Sequence, TypeVar

from judgerl.types import Decision

T = TypeVar("T", bound=Hashable)

#: The label :func:`majority_vote` returns when two or more labels share the top count.
TIE = "tie"


def majority_vote(labels: Iterable[T | None], tie: Hashable = TIE) -> T | Hashable | None:
    """Majority vote over labels (None = an invalid sample, excluded).

    Args:
        labels: Per-sample labels, e.g. ``"A"``/``"B"`` verdicts or ``"chosen"``/``"rejected"``/``"tie"``.
        tie: Returned when two or more labels share the top count.

    Returns:
        The most frequent label, ``tie`` on a shared top count, None when no label is given.
    """
    counts = Counter(x for x in labels if x is not None)
    if not counts:
        return None
    top = max(counts.values())
    winners = [x for x, n in counts.items() if n == top]
    return winners[0] if len(winners) == 1 else tie


#: The invalid reason of a sample whose final answer was copied from a response under judgment.
QUOTED_ANSWER = "quoted_answer"
#: The invalid reason of a sample whose output repeats a response's markup where that broke its parse
#: (:func:`judgerl.judge.decision.markup_sources`): a policy fault, but one sample's -- it does not void the
#: other samples (a judge's own glitch next to a response's ``List<Score>`` must not void four valid scores);
#: it counts against the quorum.
SPOILED_BY_MARKUP = "spoiled_by_markup"


def voided_by_quote(reasons: Iterable[str | None]) -> bool:
    """Whether the samples of one judgment, given by their invalid reasons (None for a valid one),
    include a quoted answer -- which makes the whole aggregate invalid (module docstring). The one
    statement of that rule: :func:`aggregate_decisions` and the eval metrics' vote both apply it."""
    return any(r == QUOTED_ANSWER for r in reasons)


def has_quorum(reasons: Sequence[str | None]) -> bool:
    """Whether more than half of one judgment's samples are valid (``reasons``: None for a valid sample): the
    quorum of the vote (module docstring). One sample: it decides alone (valid or not)."""
    return len(reasons) <= 1 or 2 * sum(r is None for r in reasons) > len(reasons)


def vote_values(decisions: Sequence[Decision], values: Sequence[float | None]) -> float | None:
    """The mean of per-sample values (expected scores) under the vote's rules: None when a sample is a
    ``quoted_answer`` (:func:`voided_by_quote`) or there is no quorum (:func:`has_quorum`), else the mean of the
    values that are not None (None when none is), where a sample spoiled by the response (``spoiled_by_markup``
    naming response 0) adds the lowest of them (:func:`against_spoilers`). Used by the pointwise expected-score
    paths (the scorer, the reward server), which average values instead of reading :func:`aggregate_decisions`.

    Raises:
        ValueError: the two sequences differ in length.
    """
    if len(decisions) != len(values):
        raise ValueError(f"vote_values: {len(decisions)} decisions for {len(values)} values")
    reasons = [None if d.valid else d.invalid_reason for d in decisions]
    if voided_by_quote(reasons) or not has_quorum(reasons):
        return None
    vals = [v for v in values if v is not None]
    if vals and len(decisions) > 1:  # a spoiled sample votes against its spoiler (:func:`against_spoilers`)
        low = min(vals)
        vals += [low for d, v in zip(decisions, values) if v is None and _spoiled(d) and set(d.quoted or ()) == {0}]
    return sum(vals) / len(vals) if vals else None


def mean(values: Sequence[float]) -> float:
    """Arithmetic mean of a non-empty sequence.

    Raises:
        ValueError: ``values`` is empty.
    """
    if not values:
        raise ValueError("mean of no values")
    return sum(values) / len(values)


def aggregate_decisions(decisions: Sequence[Decision], kind: str,
                        at_fault: Collection[int] | None = None) -> Decision:
    """Combine the sampled decisions of one judgment (see the module docstring for the rules).

    Args:
        decisions: N >= 1 decisions of the same prompt (sample order).
        kind: The protocol kind: ``"pairwise"``, ``"pointwise"`` or ``"listwise"``.
        at_fault: The responses under training, blamed for a spoiled sample (:func:`against_spoilers`); None: the
            spoilers each sample names.

    Returns:
        One Decision. With a single sample it is that sample unchanged.

    Raises:
        ValueError: no decisions, or an unknown ``kind``.
    """
    if not decisions:
        raise ValueError("aggregate_decisions needs at least one decision")
    if kind not in ("pairwise", "pointwise", "listwise"):
        raise ValueError(f"unknown protocol kind {kind!r}")
    if len(decisions) == 1:
        return decisions[0]
    if voided_by_quote(None if d.valid else d.invalid_reason for d in decisions):
        return next(d for d in decisions if not d.valid and d.invalid_reason == QUOTED_ANSWER)
    valid = [d for d in decisions if d.valid]
    if not valid:
        return decisions[0]
    if not has_quorum([None if d.valid else d.invalid_reason for d in decisions]):
        return next(d for d in decisions if not d.valid)
    valid = [d for d in against_spoilers(decisions, kind, at_fault) if d.valid]
    if kind == "pointwise":
        scored = [d.scores[0] for d in valid if d.scores]
        return Decision(valid=True, scores=(mean(scored),)) if scored else decisions[0]
    if kind == "pairwise":
        verdict = majority_vote(d.verdict for d in valid)
        scored = [d.scores for d in valid if d.scores and len(d.scores) == 2]
        scores = (mean([s[0] for s in scored]), mean([s[1] for s in scored])) if scored else None
        return Decision(valid=True, verdict=verdict, scores=scores)  # type: ignore[arg-type]
    rankings = [d.ranking for d in valid if d.ranking]
    if not rankings:
        return decisions[0]
    return Decision(valid=True, ranking=_listwise_vote(rankings, spoilers_of(decisions, at_fault)))


def _listwise_vote(rankings: Sequence[tuple[int, ...]], last: frozenset[int] = frozenset()) -> tuple[int, ...]:
    """The listwise vote over non-empty rankings (module docstring): majority of ``best`` when every ranking has
    one index (a shared top count: the index seen first), else the Borda order (mean position; ties: first
    appearance). An index in ``last`` (a response at fault for a spoiled sample) loses every tie. Returns the best
    index alone, or the full order."""
    if all(len(r) == 1 for r in rankings):
        counts = Counter(r[0] for r in rankings)
        top = max(counts.values())
        tied = [r[0] for r in rankings if counts[r[0]] == top]
        return (next((i for i in tied if i not in last), tied[0]),)
    first_seen: dict[int, int] = {}
    positions: dict[int, list[int]] = {}
    for k, r in enumerate(rankings):
        for pos, idx in enumerate(r):
            positions.setdefault(idx, []).append(pos)
            first_seen.setdefault(idx, k * 1000 + pos)
    return tuple(sorted(positions, key=lambda i: (mean(positions[i]), i in last, first_seen[i])))


def against_spoilers(decisions: Sequence[Decision], kind: str,
                     at_fault: Collection[int] | None = None) -> list[Decision]:
    """The samples of one judgment with each ``spoiled_by_markup`` sample (its spoilers in ``Decision.quoted``)
    turned into a valid vote **against** the responses at fault, read off the valid samples (module docstring):

    * pointwise (response 0 at fault): the lowest score a valid sample gave;
    * pairwise (one response at fault, 0 or 1): the verdict for the other response; where the valid samples carry
      two scores, the lowest of them for the one at fault and the highest for the other;
    * listwise: the vote of the valid samples with those at fault left out, appended last (``best``: the best of
      the others alone); in the vote a response at fault never wins a shared top count (:func:`spoilers_of`).

    Who is at fault: by default each sample's spoilers (every response a candidate of equal standing: eval,
    ``/v1/judge/*``, the ``Judge``); ``at_fault`` names the responses under training instead (``/v1/rewards``: the
    policy's response, never the fixed reference) -- a spoiled sample then votes against them whoever's markup the
    judge repeated, as the single-sample rule makes any spoil a policy fault
    (:func:`judgerl.rewards.guards.policy_fault`): a policy that nudges the judge into naming a reference's R1-style
    ``</think>`` gains nothing (stop 44's red team).

    Applied only where the vote is taken (N >= 2 samples, no quoted-answer void, a quorum: the caller checks); a
    spoiled sample with no such vote (both responses of a pair at fault, no valid sample with a payload) stays
    invalid and is dropped. Indices no valid sample ranks are ignored (listwise). A pure function of the samples
    in order.

    Args:
        decisions: The N sampled decisions of one judgment, sample order.
        kind: ``"pairwise"``, ``"pointwise"`` or ``"listwise"``.
        at_fault: The responses a spoil is blamed on (0-based); None: each sample's own spoilers.

    Returns:
        A list of N decisions, the same objects where nothing is turned.
    """
    valid = [d for d in decisions if d.valid]
    if len(decisions) < 2 or not valid:
        return list(decisions)
    blamed = None if at_fault is None else frozenset(at_fault)
    return [_vote_against(blamed if blamed is not None else frozenset(d.quoted or ()), valid, kind) or d
            if _spoiled(d) and (d.quoted or blamed) else d for d in decisions]


def spoilers_of(decisions: Sequence[Decision], at_fault: Collection[int] | None = None) -> frozenset[int]:
    """The responses a vote over ``decisions`` holds at fault (:func:`against_spoilers`): ``at_fault`` where any
    sample is ``spoiled_by_markup``, else the union of those samples' spoilers (empty: none spoiled)."""
    spoiled = [d for d in decisions if _spoiled(d)]
    if not spoiled:
        return frozenset()
    return frozenset(at_fault) if at_fault is not None else frozenset(i for d in spoiled for i in (d.quoted or ()))


def _spoiled(d: Decision) -> bool:
    return not d.valid and d.invalid_reason == SPOILED_BY_MARKUP


def _vote_against(spoilers: frozenset[int], valid: Sequence[Decision], kind: str) -> Decision | None:
    """One spoiled sample's vote against ``spoilers`` from the ``valid`` samples (:func:`against_spoilers`);
    None where there is none to give."""
    if kind == "pointwise":
        scored = [d.scores[0] for d in valid if d.scores]
        return Decision(valid=True, scores=(min(scored),)) if scored and spoilers == {0} else None
    if kind == "pairwise":
        if len(spoilers) != 1 or not spoilers <= {0, 1}:
            return None
        loser = next(iter(spoilers))
        both = [x for d in valid if d.scores and len(d.scores) == 2 for x in d.scores]
        scores = None
        if both:
            lo, hi = min(both), max(both)
            scores = (lo, hi) if loser == 0 else (hi, lo)
        return Decision(valid=True, verdict="B" if loser == 0 else "A", scores=scores)
    seen = {i for d in valid if d.ranking for i in d.ranking}
    spoilers = spoilers & seen  # an index no valid sample ranks is not a response here
    rankings = [tuple(i for i in d.ranking if i not in spoilers) for d in valid if d.ranking]
    rankings = [r for r in rankings if r]
    if not spoilers or not rankings:
        return None
    order = _listwise_vote(rankings)
    return Decision(valid=True, ranking=order if len(order) == 1 else order + tuple(sorted(spoilers)))

