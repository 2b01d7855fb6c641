"""Judge-quality metrics computed from judgment records (one record per judgment sample).

A *judgment record* is the dict the eval runner writes as one line of ``judgments.jsonl``. The
fields read here are:

* ``pair_id`` (str), ``source`` (str), ``kind`` ("pairwise" | "pointwise" | "listwise");
* ``order`` (pairwise / listwise: ``"AB"`` = chosen shown first, ``"BA"`` = rejected shown first;
  pointwise: ``"chosen"`` / ``"rejected"`` = which response was scored), ``order_index`` (0 for the
  order judged first, chosen per pair by a seeded RNG), ``sample`` (0-based sample index);
* ``chosen_index`` (pairwise / listwise: 0-based position of the chosen response in the prompt);
* ``decision`` (:meth:`judgerl.types.Decision.to_dict`);
* ``gold_tie`` (bool), optional ``gold_scores`` (``[chosen_score, rejected_score]`` or null);
* optional ``trajectory`` (:meth:`judgerl.types.Trajectory.to_dict`, tool runs only),
  ``completion_tokens`` and ``finish_reason``.

Definitions (J1, Whitehouse et al. 2025, Sec. 4 / 5.3; "pairs" below are pairs with a gold
preference, i.e. ``gold_tie`` false; gold-tie pairs are reported separately under ``gold_ties``):

* **choice** of one sample: the response whose *content* the judge preferred — ``"chosen"``,
  ``"rejected"`` or ``"tie"`` (a tie verdict, equal PaS scores) — or ``None`` when the output was
  invalid. Invalid outputs are never turned into a tie or a default.
* **judgment**: one (pair, order). With N samples its choice is the majority vote over the valid
  samples' choices (test-time scaling); a shared top count is a vote ``"tie"``; all samples invalid
  makes the judgment invalid, and so does one sample whose answer was quoted from a response
  (``quoted_answer``: the rule of :func:`judgerl.judge.aggregate.aggregate_decisions`, one statement of it
  in :func:`judgerl.judge.aggregate.voided_by_quote`). Pointwise: one judgment per pair, comparing the mean of the valid
  scores of the chosen response with that of the rejected one (equal means -> ``"tie"``; a response
  with no valid score makes the judgment invalid).
* ``accuracy``: fraction of judgments whose choice is ``"chosen"``; ties and invalid judgments
  count as wrong. ``accuracy_valid_only``: the same over judgments that are not invalid (ties still
  count as wrong). ``accuracy_first_order``: accuracy over the first-judged order only (what a
  single-order evaluation with seeded random positions would report).
* ``position_consistent_accuracy`` (PCA): fraction of pairs whose judgments are correct in *both*
  orders (a missing order counts as not correct). Pointwise judging is position-free, so PCA equals
  accuracy.
* ``flip_rate``: over pairs where both orders are valid, the fraction whose chosen content differs
  between the orders (including tie vs. non-tie). ``None`` for pointwise (no order to swap).
* ``tie_rate``: fraction of judgments whose choice is ``"tie"``.
* ``invalid_rate``: fraction of judgment *samples* (records) whose output is invalid;
  ``judgment_invalid_rate``: fraction of judgments invalid after voting.
* ``position_a_rate``: pairwise / listwise only, fraction of valid non-tie samples that picked the
  response in the first position (0.5 = no position bias).
* 95% confidence intervals of ``accuracy`` and ``position_consistent_accuracy``: Wilson score
  intervals over pairs (Wilson 1927; :func:`judgerl.eval.intervals.mean_ci`: a pair's value is
  its accuracy over its orders, in [0, 1]), never of zero width (10/10 correct -> [0.72, 1.0]).
* With gold scores: Krippendorff's alpha (interval level; Krippendorff 2011) between the judge's
  mean predicted score per response and the gold score, plus Spearman's rho and Kendall's tau-b
  (scipy). Predicted scores come from pointwise scores or from pairwise score protocols (PaS/PaVS).
* Tool runs: ``tool_use_rate`` (fraction of samples with >= 1 code execution),
  ``tool_error_rate`` (failed executions / all executions), ``mean_tool_rounds`` (executions per
  sample).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from judgerl.judge.aggregate import against_spoilers, has_quorum, majority_vote, voided_by_quote  # noqa: F401 (majority_vote re-exported)
from judgerl.types import Decision
from judgerl.eval.intervals import mean_ci

KINDS = ("pairwise", "pointwise", "listwise")
PAIRWISE_ORDERS = ("AB", "BA")
POINTWISE_ORDERS = ("chosen", "rejected")
_REQUIRED = ("pair_id", "kind", "order", "sample", "decision")


class RecordError(ValueError):
    """A judgment record is malformed (message names the record index and field)."""


def sample_choice(record: Mapping[str, Any], index: int = 0) -> str | None:
    """The content-level choice of one pairwise / listwise record.

    Maps the decision's position (verdict ``A``/``B``, or ``ranking[0]`` for listwise) to
    ``"chosen"`` / ``"rejected"`` using ``chosen_index``; a ``"tie"`` verdict stays ``"tie"``. A PaS
    decision without a verdict is decided by its two scores (argmax; equal -> ``"tie"``).

    Returns:
        ``"chosen"``, ``"rejected"``, ``"tie"`` or ``None`` for an invalid decision.

    Raises:
        RecordError: a valid decision carries no usable verdict / ranking, or ``chosen_index``
            is missing (``index`` is used in the message).
    """
    d = record["decision"]
    if not d.get("valid"):
        return None
    kind = record["kind"]
    pos: int | None = None
    if kind == "listwise":
        ranking = d.get("ranking")
        if not ranking:
            raise RecordError(f"record {index}: field decision.ranking is empty for a valid listwise decision")
        pos = int(ranking[0])
    else:
        verdict = d.get("verdict")
        if verdict == "tie":
            return "tie"
        if verdict in ("A", "B"):
            pos = 0 if verdict == "A" else 1
        else:
            scores = d.get("scores")
            if not scores or len(scores) != 2:
                raise RecordError(
                    f"record {index}: field decision.verdict is {verdict!r} and there are no two scores "
                    "for a valid pairwise decision"
                )
            if scores[0] == scores[1]:
                return "tie"
            pos = 0 if scores[0] > scores[1] else 1
    chosen_index = record.get("chosen_index")
    if chosen_index not in (0, 1):
        raise RecordError(f"record {index}: field chosen_index must be 0 or 1, got {chosen_index!r}")
    return "chosen" if pos == chosen_index else "rejected"


def record_decision(record: Mapping[str, Any]) -> Decision:
    """The :class:`~judgerl.types.Decision` a judgment record's ``decision`` field holds (the fields the vote
    reads: validity, verdict, scores, ranking, invalid reason, spoilers / quoted responses)."""
    d = record["decision"]

    def tup(k: str, cast: Any) -> tuple | None:
        v = d.get(k)
        return tuple(cast(x) for x in v) if isinstance(v, (list, tuple)) else None

    return Decision(valid=bool(d.get("valid")), verdict=d.get("verdict"), scores=tup("scores", float),
                    ranking=tup("ranking", int), invalid_reason=d.get("invalid_reason"), quoted=tup("quoted", int))


def _turned_group(group: Sequence[tuple[int, Mapping[str, Any]]], kind: str) -> list[tuple[int, Mapping[str, Any]]] | None:
    """The valid samples of one judgment (``(record index, record)``) after the vote's rules
    (:mod:`judgerl.judge.aggregate`, as the ``Judge`` applies them): None when a quoted answer voids it or there is
    no quorum; else the valid records, each spoiled sample turned into its vote against its spoiler
    (:func:`~judgerl.judge.aggregate.against_spoilers`) as a record with that decision."""
    decisions = [record_decision(r) for _, r in group]
    reasons = [None if d.valid else d.invalid_reason for d in decisions]
    if voided_by_quote(reasons) or not has_quorum(reasons):
        return None
    turned = against_spoilers(decisions, kind)
    return [(i, r if t is d else {**r, "decision": t.to_dict()})
            for (i, r), d, t in zip(group, decisions, turned) if t.valid]


@dataclass
class PairOutcome:
    """Aggregated result of one pair.

    Attributes:
        pair_id, source, gold_tie: From the records.
        judgments: order -> aggregated choice (``None`` = invalid). Pairwise keys ``"AB"``/``"BA"``;
            pointwise a single key ``"pointwise"``.
        first_order: The order judged first (``order_index`` 0), pairwise only.
        samples: Number of records of the pair; ``invalid_samples`` how many were invalid.
        pred_scores: ``{"chosen": mean, "rejected": mean}`` predicted scores where available.
        gold_scores: ``(chosen, rejected)`` gold scores or None.
        difficulty: The pair's difficulty label (e.g. RM-Bench easy/normal/hard), or ``""``.
        identical: The two responses are the same text (no judge can be position-consistent).
    """

    pair_id: str
    source: str
    gold_tie: bool
    judgments: dict[str, str | None] = field(default_factory=dict)
    first_order: str | None = None
    samples: int = 0
    invalid_samples: int = 0
    pred_scores: dict[str, float] = field(default_factory=dict)
    gold_scores: tuple[float, float] | None = None
    difficulty: str = ""
    identical: bool = False

    @property
    def correct(self) -> list[bool]:
        """Per judgment: choice == "chosen" (ties / invalid are wrong)."""
        return [c == "chosen" for c in self.judgments.values()]


def _validate(records: Sequence[Mapping[str, Any]]) -> str:
    kinds = set()
    for i, r in enumerate(records):
        if not isinstance(r, Mapping):
            raise RecordError(f"record {i}: expected an object, got {type(r).__name__}")
        for f in _REQUIRED:
            if f not in r:
                raise RecordError(f"record {i}: missing field {f!r}")
        if r["kind"] not in KINDS:
            raise RecordError(f"record {i}: field kind must be one of {KINDS}, got {r['kind']!r}")
        allowed = POINTWISE_ORDERS if r["kind"] == "pointwise" else PAIRWISE_ORDERS
        if r["order"] not in allowed:
            raise RecordError(f"record {i}: field order must be one of {allowed}, got {r['order']!r}")
        if not isinstance(r["decision"], Mapping) or "valid" not in r["decision"]:
            raise RecordError(f"record {i}: field decision must be a Decision.to_dict() object")
        kinds.add(r["kind"])
    if len(kinds) > 1:
        raise RecordError(f"records mix protocol kinds {sorted(kinds)}; compute metrics per kind")
    return kinds.pop() if kinds else "pairwise"


def _pointwise_score(record: Mapping[str, Any]) -> float | None:
    d = record["decision"]
    if not d.get("valid"):
        return None
    scores = d.get("scores")
    if not scores:
        return None
    return float(scores[0])


def aggregate_pairs(records: Sequence[Mapping[str, Any]]) -> tuple[str, list[PairOutcome]]:
    """Group records by pair and aggregate samples into judgments (see the module docstring).

    Returns:
        ``(kind, outcomes)`` with outcomes in first-seen pair order.

    Raises:
        RecordError: malformed records (message names the record index and field), mixed kinds.
    """
    kind = _validate(records)
    outcomes: dict[str, PairOutcome] = {}
    groups: dict[tuple[str, str], list[tuple[int, Mapping[str, Any]]]] = defaultdict(list)
    reasons: dict[tuple[str, str], list[str | None]] = defaultdict(list)  # the aggregate's quote rule
    scores: dict[tuple[str, str], list[float]] = defaultdict(list)
    for i, r in enumerate(records):
        pid = str(r["pair_id"])
        o = outcomes.get(pid)
        if o is None:
            gs = r.get("gold_scores")
            gold = None
            if gs is not None and len(gs) == 2 and all(v is not None for v in gs):
                gold = (float(gs[0]), float(gs[1]))
            o = outcomes[pid] = PairOutcome(pid, str(r.get("source") or ""), bool(r.get("gold_tie", False)),
                                            gold_scores=gold, difficulty=str(r.get("difficulty") or ""),
                                            identical=bool(r.get("identical_responses")))
        o.samples += 1
        valid = bool(r["decision"].get("valid"))
        if not valid:
            o.invalid_samples += 1
        reasons[(pid, r["order"])].append(None if valid else r["decision"].get("invalid_reason"))
        if kind == "pointwise":
            if valid and _pointwise_score(r) is None:
                raise RecordError(f"record {i}: field decision.scores is empty for a valid pointwise decision")
        else:
            sample_choice(r, i)  # a malformed valid record fails here, with its index
            if r.get("order_index") == 0:
                o.first_order = r["order"]
        groups[(pid, r["order"])].append((i, r))
    for (pid, order), group in groups.items():  # the vote's rules over each judgment's samples (quorum, spoilers)
        kept = _turned_group(group, kind)
        if kind == "pointwise":
            vals = [s for _, r in kept or () if (s := _pointwise_score(r)) is not None]
            if vals:
                scores[(pid, order)] += vals
            continue
        outcomes[pid].judgments[order] = None if kept is None else majority_vote(sample_choice(r, i) for i, r in kept)
        for _, r in kept or ():
            sc = r["decision"].get("scores")
            if sc and len(sc) == 2 and r.get("chosen_index") in (0, 1):
                ci = r["chosen_index"]
                scores[(pid, "chosen")].append(float(sc[ci]))
                scores[(pid, "rejected")].append(float(sc[1 - ci]))
    for (pid, resp), vals in scores.items():
        outcomes[pid].pred_scores[resp] = float(np.mean(vals))
    if kind == "pointwise":
        for pid, o in outcomes.items():
            c, rj = o.pred_scores.get("chosen"), o.pred_scores.get("rejected")
            if c is None or rj is None or voided_by_quote(reasons[(pid, "chosen")] + reasons[(pid, "rejected")]):
                choice = None
            elif math.isclose(c, rj, rel_tol=0.0, abs_tol=1e-9):
                choice = "tie"
            else:
                choice = "chosen" if c > rj else "rejected"
            o.judgments["pointwise"] = choice
    return kind, list(outcomes.values())


def mean_or_none(xs: Sequence[float | bool]) -> float | None:
    """The mean of ``xs`` (booleans count as 0 / 1); None when empty (an undefined rate)."""
    return float(np.mean(xs)) if len(xs) else None


def _nan_to_none(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def agreement_with_gold(outcomes: Sequence[PairOutcome]) -> dict[str, Any]:
    """Agreement of predicted scores with gold scores (per response, both responses of each pair).

    Returns:
        ``{"n_scored_responses", "krippendorff_alpha", "spearman", "kendall"}``; the statistics are
        ``None`` when fewer than 2 responses have both scores or a statistic is undefined (e.g.
        constant scores).
    """
    pred, gold = [], []
    for o in outcomes:
        if o.gold_scores is None:
            continue
        for resp, g in zip(("chosen", "rejected"), o.gold_scores):
            if resp in o.pred_scores:
                pred.append(o.pred_scores[resp])
                gold.append(g)
    out = score_agreement(pred, gold)
    out.pop("pearson", None)
    return {"n_scored_responses": out.pop("n")} | out


def score_agreement(pred: Sequence[float], gold: Sequence[float]) -> dict[str, Any]:
    """Agreement of paired predicted and gold scores (one pair per response).

    Krippendorff's alpha at the interval level (Krippendorff 2011; two coders: the judge and the
    gold), Pearson's r, Spearman's rho and Kendall's tau-b (scipy).

    Returns:
        ``{"n", "krippendorff_alpha", "pearson", "spearman", "kendall"}``; a statistic is None with
        fewer than 2 pairs or when it is undefined (e.g. constant scores).

    Raises:
        ValueError: ``pred`` and ``gold`` differ in length.
    """
    if len(pred) != len(gold):
        raise ValueError(f"score_agreement: {len(pred)} predicted but {len(gold)} gold scores")
    out: dict[str, Any] = {"n": len(pred), "krippendorff_alpha": None, "pearson": None, "spearman": None,
                           "kendall": None}
    if len(pred) < 2:
        return out
    import krippendorff
    from scipy import stats

    try:
        out["krippendorff_alpha"] = _nan_to_none(
            krippendorff.alpha(reliability_data=np.array([pred, gold], dtype=float), level_of_measurement="interval")
        )
    except ValueError:  # one value in the whole domain: alpha undefined
        out["krippendorff_alpha"] = None
    if len(set(pred)) > 1 and len(set(gold)) > 1:
        out["pearson"] = _nan_to_none(stats.pearsonr(pred, gold).statistic)
        out["spearman"] = _nan_to_none(stats.spearmanr(pred, gold).statistic)
        out["kendall"] = _nan_to_none(stats.kendalltau(pred, gold).statistic)
    return out


def _ci(values: Sequence[float], confidence: float) -> list[float] | None:
    ci = mean_ci(values, confidence)
    return None if ci is None else list(ci)


def _core_metrics(kind: str, outcomes: Sequence[PairOutcome], invalid_samples: int, n_samples: int,
                  confidence: float) -> dict[str, Any]:
    judgments = [c for o in outcomes for c in o.judgments.values()]
    correct = [c == "chosen" for c in judgments]
    valid_correct = [c == "chosen" for c in judgments if c is not None]
    pair_acc = [float(np.mean(o.correct)) if o.judgments else 0.0 for o in outcomes]
    if kind == "pointwise":
        pair_pca = pair_acc
        flips: list[bool] = []
    else:
        pair_pca = [float(all(o.judgments.get(k) == "chosen" for k in PAIRWISE_ORDERS)) for o in outcomes]
        flips = [
            o.judgments["AB"] != o.judgments["BA"]
            for o in outcomes
            if o.judgments.get("AB") is not None and o.judgments.get("BA") is not None
        ]
    m: dict[str, Any] = {
        "n_pairs": len(outcomes),
        "n_judgments": len(judgments),
        "n_samples": n_samples,
        "accuracy": mean_or_none(correct),
        "accuracy_ci": _ci(pair_acc, confidence),
        "accuracy_valid_only": mean_or_none(valid_correct),
        "position_consistent_accuracy": mean_or_none(pair_pca),
        "position_consistent_accuracy_ci": _ci(pair_pca, confidence),
        "flip_rate": None if kind == "pointwise" else mean_or_none(flips),
        "n_flip_pairs": None if kind == "pointwise" else len(flips),
        "tie_rate": mean_or_none([c == "tie" for c in judgments]),
        "invalid_rate": invalid_samples / n_samples if n_samples else None,
        "judgment_invalid_rate": mean_or_none([c is None for c in judgments]),
    }
    if kind != "pointwise":
        first = [o.judgments[o.first_order] == "chosen" for o in outcomes
                 if o.first_order is not None and o.first_order in o.judgments]
        m["accuracy_first_order"] = mean_or_none(first)
    else:
        m["accuracy_first_order"] = None
    return m


def compute_metrics(
    judgment_records: Sequence[Mapping[str, Any]],
    *,
    confidence: float = 0.95,
    tools: bool | None = None,
) -> dict[str, Any]:
    """All judge metrics for a set of judgment records (definitions: module docstring).

    Args:
        judgment_records: Records as written to ``judgments.jsonl`` (one per judgment sample).
        confidence: Confidence level of the Wilson score intervals (default 95%; no resampling,
            so the intervals need no seed).
        tools: Whether the judge ran code: True/False report / omit the tool metrics; None
            reports them when a record's trajectory has tool calls or a code / tool segment.

    Returns:
        A JSON-serialisable dict with keys ``kind``, ``n_pairs_total`` (all pairs), ``n_pairs``
        (pairs with a gold preference; the population of all headline metrics),
        ``n_judgments``, ``n_samples``, ``accuracy``, ``accuracy_ci`` ([low, high]),
        ``accuracy_valid_only``, ``accuracy_first_order``, ``position_consistent_accuracy``,
        ``position_consistent_accuracy_ci``, ``flip_rate``, ``n_flip_pairs``, ``tie_rate``,
        ``invalid_rate``, ``judgment_invalid_rate``, ``invalid_reasons`` ({reason: count}),
        ``position_a_rate``, ``mean_completion_tokens``, ``truncation_rate``, ``by_source``
        ({source: the core metrics}), ``by_difficulty`` (the same per difficulty label, when the
        records carry one), ``gold_ties`` (``{"n_pairs", "tie_rate", "invalid_rate"}`` or None),
        ``identical_responses`` (core metrics of the non-tie pairs whose two responses are the same
        text, reported apart and left out of the headline figures, or None), ``krippendorff_alpha``, ``spearman``, ``kendall``, ``n_scored_responses`` and,
        ``finish_reasons`` ({finish reason: count}), ``n_failed`` (samples whose generation failed:
        API error, filtered answer, prompt too long) and, for tool runs, ``tool_use_rate``,
        ``tool_error_rate``, ``mean_tool_rounds``. Rates are fractions in [0, 1]; undefined ones
        are ``None``.

    Raises:
        RecordError: a record lacks a field or has an unknown kind / order (message names the
            record index and field), or the records mix protocol kinds.
    """
    kind, outcomes = aggregate_pairs(judgment_records)
    ties = [o for o in outcomes if o.gold_tie]
    same = [o for o in outcomes if o.identical and not o.gold_tie]
    scored = [o for o in outcomes if not o.gold_tie and not o.identical]
    apart = {o.pair_id for o in ties} | {o.pair_id for o in same}
    scored_records = [r for r in judgment_records if str(r["pair_id"]) not in apart]
    n_invalid = sum(o.invalid_samples for o in scored)
    m: dict[str, Any] = {"kind": kind, "n_pairs_total": len(outcomes)}
    m.update(_core_metrics(kind, scored, n_invalid, len(scored_records), confidence))
    m["invalid_reasons"] = dict(Counter(
        str(r["decision"].get("invalid_reason") or "unknown")
        for r in scored_records if not r["decision"].get("valid")
    ).most_common())
    if kind == "pointwise":
        m["position_a_rate"] = None
    else:
        pos = [
            (r["decision"].get("verdict") == "A") if kind == "pairwise" else (r["decision"]["ranking"][0] == 0)
            for r in scored_records
            if r["decision"].get("valid") and sample_choice(r) in ("chosen", "rejected")
        ]
        m["position_a_rate"] = mean_or_none(pos)
    toks = [r["completion_tokens"] for r in scored_records if r.get("completion_tokens") is not None]
    m["mean_completion_tokens"] = mean_or_none(toks)
    fin = [r["finish_reason"] == "length" for r in scored_records if r.get("finish_reason") is not None]
    m["truncation_rate"] = mean_or_none(fin)
    def breakdown(key: Any) -> dict[str, Any]:
        out = {}
        for value in sorted({key(o) for o in scored}):
            outs = [o for o in scored if key(o) == value]
            out[value] = _core_metrics(kind, outs, sum(o.invalid_samples for o in outs), sum(o.samples for o in outs),
                                       confidence)
        return out

    m["by_source"] = breakdown(lambda o: o.source)
    if any(o.difficulty for o in scored):
        m["by_difficulty"] = breakdown(lambda o: o.difficulty or "(none)")
    m["identical_responses"] = (
        _core_metrics(kind, same, sum(o.invalid_samples for o in same), sum(o.samples for o in same),
                      confidence) if same else None
    )
    if ties:
        tj = [c for o in ties for c in o.judgments.values()]
        n_tie_samples = sum(o.samples for o in ties)
        m["gold_ties"] = {
            "n_pairs": len(ties),
            "tie_rate": mean_or_none([c == "tie" for c in tj]),
            "invalid_rate": sum(o.invalid_samples for o in ties) / n_tie_samples if n_tie_samples else None,
        }
    else:
        m["gold_ties"] = None
    m.update(agreement_with_gold(outcomes))
    m["finish_reasons"] = dict(Counter(str(r.get("finish_reason") or "stop") for r in judgment_records).most_common())
    m["n_failed"] = sum(r.get("finish_reason") in ("error", "content_filter", "prompt_too_long")
                        for r in judgment_records)
    trajs = [r["trajectory"] for r in scored_records if r.get("trajectory")]
    if tools is None:
        tools = any(int(t.get("tool_calls") or 0) > 0
                    or any(seg.get("kind") in ("code", "tool") for seg in t.get("segments", ())) for t in trajs)
    if tools:
        calls = [int(t.get("tool_calls", 0)) for t in trajs]
        errors = [int(t.get("tool_errors", 0)) for t in trajs]
        m["tool_use_rate"] = mean_or_none([c > 0 for c in calls])
        m["tool_error_rate"] = sum(errors) / sum(calls) if sum(calls) else None
        m["mean_tool_rounds"] = mean_or_none(calls)
    return m
