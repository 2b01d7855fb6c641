"""PPE correctness scores (Frick et al., 2024, "How to Evaluate Reward Models for RLHF", ICLR 2025).

PPE's correctness sets (MMLU-Pro, MATH, GPQA, IFEval, MBPP-Plus) give, per prompt, K sampled
responses of one model, each with a verified correctness flag (reader:
:mod:`judgerl.data.formats.ppe_correctness`). The paper scores a reward model on them with, among
others, *accuracy* on (correct, incorrect) response pairs, *best-of-K* curves (the correctness of
the response the reward model ranks first among K samples, for K = 1 … 32) and the *row-wise
Pearson* correlation of scores and correctness within a prompt.

**Source.** The upstream scoring code (github.com/lmarena/PPE) could not be read from this
machine; these rules are re-created from the paper's definitions, and where the paper leaves a
choice open the choice is named here:

* **accuracy** of a prompt: over all its (correct i, incorrect j) pairs, 1 when the judge ranks i
  above j, 0.5 when it cannot separate them (equal scores; a ``tie`` verdict), 0 otherwise (an
  invalid pairwise judgment counts 0). Pointwise judges: every pair of the prompt from the response
  scores. Pairwise judges: the pairs the reader emits (a covering subset, each response at least
  once), each pair the mean over its judged orders. A subset's accuracy is the mean over prompts
  (each prompt weighs the same).
* **best-of-K** (pointwise only): for a uniformly random K-subset of a prompt's n responses, the
  expected correctness of the subset's top-scored response, ties broken uniformly at random. It is
  computed exactly rather than by sampling (so it depends on the data only): with the responses
  sorted by score and a group of equal scores at sorted positions [a, b), the subset's top lies in
  that group with probability (C(n−a, K) − C(n−b, K)) / C(n, K), and is then each of the group's
  members equally often, i.e. worth the group's mean correctness. ``best_of_k[K-1]`` is the mean over
  prompts; ``end_score`` = K = n (the top-ranked response), ``max_achieved`` = the curve's maximum.
* **row-wise Pearson** (pointwise only): per prompt, the Pearson correlation of the response scores
  with the 0/1 correctness flags; the mean over prompts where it is defined (a prompt whose scores
  are all equal has none and is counted in ``n_constant_score_prompts``).

A pointwise prompt with a response that has no valid score is left out of every metric and
counted (``n_unscored_prompts``; the run's invalid rate is in judgerl's own metrics), since a
ranking with a hole in it has no best-of-K. Prompts not fully judged (``--limit``) are left out and
counted (``n_incomplete_prompts``). ``score`` = the mean accuracy over the subsets present (PPE
reports correctness per benchmark; J1 and TIR-Judge quote the mean accuracy as "PPE Correctness").
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Mapping, Sequence

import numpy as np

from judgerl.eval.metrics import PairOutcome, mean_or_none
from judgerl.eval.rewardbench import completion_scores

#: Value of one pairwise judgment of a (correct, incorrect) pair.
PAIR_VALUE = {"chosen": 1.0, "tie": 0.5, "rejected": 0.0, None: 0.0}


def pair_accuracy(correct: Sequence[float], incorrect: Sequence[float]) -> float:
    """Mean over all (correct, incorrect) score pairs of 1 (correct higher), 0.5 (equal), 0 (lower).

    Raises:
        ValueError: an empty list.
    """
    if not correct or not incorrect:
        raise ValueError("pair accuracy needs at least one correct and one incorrect score")
    c = np.asarray(correct, dtype=float)[:, None]
    i = np.asarray(incorrect, dtype=float)[None, :]
    return float(np.mean((c > i) + 0.5 * (c == i)))


def best_of_k_curve(scores: Sequence[float], correct: Sequence[bool]) -> list[float]:
    """Expected correctness of the top-scored response of a random K-subset, K = 1 … n (docstring).

    Args:
        scores: The judge's score of each of the n responses.
        correct: Each response's correctness flag.

    Raises:
        ValueError: lengths differ or n = 0.
    """
    if len(scores) != len(correct) or not scores:
        raise ValueError(f"best-of-K needs as many scores as flags (got {len(scores)} and {len(correct)})")
    n = len(scores)
    order = sorted(range(n), key=lambda k: -scores[k])
    groups: list[tuple[int, int, float]] = []  # (start, end, mean correctness) of equal-score runs
    start = 0
    for pos in range(1, n + 1):
        if pos == n or scores[order[pos]] != scores[order[start]]:
            groups.append((start, pos, float(np.mean([correct[order[p]] for p in range(start, pos)]))))
            start = pos
    curve = []
    for k in range(1, n + 1):
        total = math.comb(n, k)
        curve.append(sum((math.comb(n - a, k) - math.comb(n - b, k)) * value for a, b, value in groups) / total)
    return curve


def row_pearson(scores: Sequence[float], correct: Sequence[bool]) -> float | None:
    """Pearson correlation of scores with the 0/1 flags; None when either is constant."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(correct, dtype=float)
    if np.ptp(s) == 0 or np.ptp(y) == 0:
        return None
    return float(np.corrcoef(s, y)[0, 1])


def _pointwise_prompt(items: Sequence[tuple[PairOutcome, Mapping[str, Any]]], n_c: int, n_i: int
                      ) -> tuple[str, dict[str, Any] | None]:
    """("ok" | "incomplete" | "unscored", metrics) of one prompt judged pointwise."""
    seen_c = {int(b.get("chosen_rank", 0)) for _, b in items}
    seen_i = {int(b.get("rejected_rank", 0)) for _, b in items}
    if len(seen_c) < n_c or len(seen_i) < n_i:
        return "incomplete", None
    good, bad = completion_scores(items)
    if len(good) < n_c or len(bad) < n_i:
        return "unscored", None
    scores = [good[k] for k in sorted(good)] + [bad[k] for k in sorted(bad)]
    flags = [True] * len(good) + [False] * len(bad)
    return "ok", {"accuracy": pair_accuracy(list(good.values()), list(bad.values())),
                  "curve": best_of_k_curve(scores, flags), "pearson": row_pearson(scores, flags)}


def _pairwise_prompt(items: Sequence[tuple[PairOutcome, Mapping[str, Any]]], n_c: int, n_i: int
                     ) -> tuple[str, dict[str, Any] | None]:
    """("ok" | "incomplete", metrics) of one prompt judged pairwise: accuracy over its judged pairs."""
    if len(items) < max(n_c, n_i):
        return "incomplete", None
    values = [float(np.mean([PAIR_VALUE[c] for c in o.judgments.values()])) if o.judgments else 0.0
              for o, _ in items]
    return "ok", {"accuracy": float(np.mean(values))}


def ppe_correctness_score(items: Sequence[tuple[PairOutcome, Mapping[str, Any]]], kind: str) -> dict[str, Any]:
    """PPE correctness metrics per subset and overall (rules: module docstring).

    Args:
        items: (pair outcome, bench fields) of the ``ppe_correctness`` pairs.
        kind: ``"pointwise"`` (all metrics) or a pairwise kind (accuracy only).

    Returns:
        ``{"score", "subsets": {subset: {"accuracy", "n_prompts"} + pointwise "best_of_k",
        "end_score", "max_achieved", "row_wise_pearson", "n_constant_score_prompts"}}, "n_prompts",
        "n_incomplete_prompts", "n_unscored_prompts", "notes", "source"}``.
    """
    prompts: dict[str, list[tuple[PairOutcome, Mapping[str, Any]]]] = defaultdict(list)
    for o, b in items:
        prompts[str(b.get("record_id", o.pair_id))].append((o, b))
    per_subset: dict[str, list[dict[str, Any]]] = defaultdict(list)
    counts = {"incomplete": 0, "unscored": 0}
    for its in prompts.values():
        b = its[0][1]
        n_c, n_i = int(b.get("num_correct", 1) or 1), int(b.get("num_incorrect", 1) or 1)
        judge = _pointwise_prompt if kind == "pointwise" else _pairwise_prompt
        status, metrics = judge(its, n_c, n_i)
        if metrics is None:
            counts[status] += 1
        else:
            per_subset[str(b.get("subset", ""))].append(metrics)
    subsets: dict[str, dict[str, Any]] = {}
    for name, rows in sorted(per_subset.items()):
        entry: dict[str, Any] = {"accuracy": mean_or_none([r["accuracy"] for r in rows]), "n_prompts": len(rows)}
        if kind == "pointwise":
            k_max = min(len(r["curve"]) for r in rows)
            curve = [float(np.mean([r["curve"][k] for r in rows])) for k in range(k_max)]
            pearsons = [r["pearson"] for r in rows if r["pearson"] is not None]
            entry.update(best_of_k=curve, end_score=curve[-1], max_achieved=max(curve),
                         row_wise_pearson=mean_or_none(pearsons), n_constant_score_prompts=len(rows) - len(pearsons))
        subsets[name] = entry
    notes = [] if kind == "pointwise" else [
        "best-of-K and row-wise Pearson need a score per response: run a pointwise protocol (--protocol pos)"]
    return {"score": mean_or_none([s["accuracy"] for s in subsets.values()]), "subsets": subsets,
            "n_prompts": sum(s["n_prompts"] for s in subsets.values()),
            "n_incomplete_prompts": counts["incomplete"], "n_unscored_prompts": counts["unscored"], "notes": notes,
            "source": "Frick et al. 2024 (PPE) correctness metrics, re-created from the paper (lmarena/PPE code "
                      "not readable here)"}
