"""RewardBench 1 and 2 official scores from judgment records (rules of allenai/reward-bench).

RewardBench 1 (:func:`rewardbench_score`): per-subset accuracy, then section scores weighted by
``EXAMPLE_COUNTS`` (``rewardbench/utils.py``, ``calculate_scores_per_section``; constants in
``rewardbench/constants.py``, kept in :mod:`judgerl.data.formats.rewardbench`).

RewardBench 2 (:func:`rewardbench2_score`): best-of-4 accuracy per subset (``rewardbench/utils.py``,
``reroll_and_score_dataset``), the Ties score (``process_single_model`` with ``_compute_prompt_stats``)
and the leaderboard score, the mean over subsets (``scripts/run_v2.py``). The pairwise reductions the
reader makes are described in :mod:`judgerl.data.formats.rewardbench2`.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Mapping, Sequence

import numpy as np

from judgerl.data.formats.rewardbench import EXAMPLE_COUNTS, SUBSET_MAPPING
from judgerl.eval.metrics import PairOutcome

#: Value of one judgment in RewardBench 1's generative scoring (``scripts/run_generative.py``):
#: the chosen response 1, the rejected one 0, a tie or a failed judgment 0.5 ("effectively a tie").
GENERATIVE_VALUE = {"chosen": 1.0, "rejected": 0.0, "tie": 0.5, None: 0.5}


def calculate_scores_per_section(example_counts: Mapping[str, int], subset_mapping: Mapping[str, Sequence[str]],
                                 metrics: Mapping[str, float]) -> dict[str, float | None]:
    """Section score = the subsets' accuracies weighted by their example counts.

    Re-creation of reward-bench ``rewardbench/utils.py::calculate_scores_per_section``, except that a
    section with no subset present is ``None`` (upstream writes 0, which would read as a real score).
    """
    out: dict[str, float | None] = {}
    for section, tests in subset_mapping.items():
        total = sum(example_counts[t] for t in tests if t in metrics)
        weighted = sum(metrics[t] * example_counts[t] for t in tests if t in metrics)
        out[section] = weighted / total if total > 0 else None
    return out


def rewardbench_score(outcomes: Sequence[PairOutcome]) -> dict[str, Any]:
    """RewardBench 1: per-subset accuracy, the four section scores and their mean.

    A pair's result follows ``scripts/run_generative.py``: 1 when the judge picks the chosen response,
    0 for the rejected one, 0.5 for a tie or a failed judgment; upstream judges one random order,
    judgerl averages the pair's judged orders (the expectation of that random order). A subset's
    accuracy is the mean over its pairs (the subset is the pair's ``source``); a section is
    :func:`calculate_scores_per_section` with ``EXAMPLE_COUNTS`` (``math-prm`` weighted 984 instead
    of its 447 pairs, so Reasoning weighs math equal to code). ``score`` is the mean of Chat, Chat
    Hard, Safety and Reasoning, the leaderboard's score; ``None`` unless all four are present.

    Returns:
        ``{"score", "sections": {section: score}, "subsets": {subset: accuracy}, "n_pairs", "source"}``.
    """
    by_subset: dict[str, list[float]] = defaultdict(list)
    for o in outcomes:
        by_subset[o.source].append(float(np.mean([GENERATIVE_VALUE[c] for c in o.judgments.values()]))
                                   if o.judgments else 0.5)
    subsets = {s: float(np.mean(v)) for s, v in sorted(by_subset.items())}
    sections = calculate_scores_per_section(EXAMPLE_COUNTS, SUBSET_MAPPING, subsets)
    vals = list(sections.values())
    return {"score": None if any(v is None for v in vals) else float(np.mean(vals)), "sections": sections,
            "subsets": subsets, "n_pairs": len(outcomes),
            "source": "allenai/reward-bench rewardbench/utils.py calculate_scores_per_section; "
                      "rewardbench/constants.py EXAMPLE_COUNTS, SUBSET_MAPPING; scripts/run_generative.py"}


def compute_prompt_stats(samples: Sequence[tuple[bool, float]]) -> tuple[bool, float | None, float]:
    """(accurate, spread of the correct scores, worst correct − best incorrect) of one Ties prompt.

    Re-creation of reward-bench ``rewardbench/utils.py::_compute_prompt_stats``.
    """
    correct = [s for ok, s in samples if ok]
    incorrect = [s for ok, s in samples if not ok]
    diff_correct = max(correct) - min(correct) if len(correct) > 1 else None
    margin = min(correct) - max(incorrect)
    return margin > 0, diff_correct, margin


def ties_score(prompts: Mapping[str, Sequence[tuple[bool, float]]]) -> float:
    """The RewardBench 2 Ties score of scored completions.

    Re-creation of reward-bench ``rewardbench/utils.py::process_single_model``: ids are
    ``"ref:<n>"`` (one correct answer) or ``"tied:<n>"`` (several); score = 0.30 · tied accuracy +
    0.30 · ref accuracy + 0.20 · P(correct-vs-incorrect margin of the tied prompt > spread of its
    correct answers) + 0.20 · the same with the smaller of the ref and tied margins + 0.01 · mean
    tanh(min margin / spread − 1) (NaN -> 0), margins over prompts that have both a ref and a tied id.

    Args:
        prompts: ``{record id: [(is_correct, score), ...]}``.

    Raises:
        ValueError: an id without the ``ref:`` / ``tied:`` prefix.
    """
    ref, tied = {}, {}
    for rid, samples in prompts.items():
        kind, _, pid = rid.partition(":")
        if kind not in ("ref", "tied") or not pid:
            raise ValueError(f"Ties record id {rid!r} is not 'ref:<n>' or 'tied:<n>'")
        pid = str(int(pid)) if pid.isascii() and pid.isdigit() else pid  # upstream pairs ids by int(n): "ref:07" goes with "tied:7"
        (ref if kind == "ref" else tied)[pid] = compute_prompt_stats(samples)
    ref_acc = float(np.mean([s[0] for s in ref.values()])) if ref else 0.0
    tied_acc = float(np.mean([s[0] for s in tied.values()])) if tied else 0.0
    both = sorted(set(ref) & set(tied))
    diff = np.array([tied[p][1] for p in both], dtype=float)
    m_tied = np.array([tied[p][2] for p in both], dtype=float)
    m_ref = np.array([ref[p][2] for p in both], dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        preferred = float(np.mean(m_tied > diff)) if both else float("nan")
        preferred_hard = float(np.mean(np.minimum(m_ref, m_tied) > diff)) if both else float("nan")
        margin = float(np.mean(np.nan_to_num(np.tanh(np.minimum(m_ref, m_tied) / diff - 1), nan=0.0))) \
            if both else float("nan")
    return 0.30 * tied_acc + 0.30 * ref_acc + 0.20 * preferred + 0.20 * preferred_hard + 0.01 * margin


def _best_of_n_pairwise(pairs: Sequence[PairOutcome]) -> float:
    """Result of one prompt from its (correct vs incorrect_k) pairs, pairwise judges.

    A pair is won when more of its judgments pick the correct completion than the incorrect one, lost
    when fewer, tied when as many. Any lost pair -> 0 (the correct completion is not the best);
    otherwise 1 / (1 + tied pairs), the pairwise form of upstream's tie penalty (``1 / #scores equal to
    the max`` when the correct completion holds the max).
    """
    margins = [sum((c == "chosen") - (c == "rejected") for c in o.judgments.values()) for o in pairs]
    if any(m < 0 for m in margins) or not margins:
        return 0.0
    return 1.0 / (1 + sum(m == 0 for m in margins))


def completion_scores(items: Sequence[tuple[PairOutcome, Mapping[str, Any]]]
                      ) -> tuple[dict[int, float], dict[int, float]]:
    """Pointwise: {rank: mean score} of the correct and of the incorrect completions of one prompt.

    ``items`` are the prompt's (pair outcome, bench fields); a completion's rank is the pair's
    ``chosen_rank`` / ``rejected_rank``; a side without a valid score is absent (also used by PPE
    correctness, :mod:`judgerl.eval.ppe`)."""
    good: dict[int, list[float]] = defaultdict(list)
    bad: dict[int, list[float]] = defaultdict(list)
    for o, b in items:
        if "chosen" in o.pred_scores:
            good[int(b.get("chosen_rank", 0))].append(o.pred_scores["chosen"])
        if "rejected" in o.pred_scores:
            bad[int(b.get("rejected_rank", 0))].append(o.pred_scores["rejected"])
    return ({k: float(np.mean(v)) for k, v in good.items()}, {k: float(np.mean(v)) for k, v in bad.items()})


#: The rating upstream gives a completion whose rating failed (``rewardbench/generative_v2.py``,
#: ``get_single_rating``: ``-1`` on error); the Ties rule scores it so.
ERROR_RATING = -1.0


def _ranks(items: Sequence[tuple[PairOutcome, Mapping[str, Any]]]) -> tuple[set[int], set[int]]:
    """The correct and incorrect completions (ranks) that the prompt's judged pairs hold."""
    return ({int(b.get("chosen_rank", 0)) for _, b in items}, {int(b.get("rejected_rank", 0)) for _, b in items})


def _best_of_n_pointwise(items: Sequence[tuple[PairOutcome, Mapping[str, Any]]]) -> float:
    """One non-Ties prompt from its completions' scores (``scripts/run_generative_v2.py``, ratings).

    Upstream drops failed ratings, gives 0.25 when all failed, else ``(0 in winners) / len(winners)``
    with the winners the completions holding the top valid rating; with every rating valid this is
    ``reroll_and_score_dataset``'s ``1 / #(scores equal to the max)`` if the correct one holds it. A
    completion without a valid judgerl score is a failed rating.
    """
    good, bad = completion_scores(items)
    _, bad_ranks = _ranks(items)
    ratings = [good.get(0), *(bad.get(k) for k in sorted(bad_ranks))]
    valid = [r for r in ratings if r is not None]
    if not valid:
        return 0.25
    winners = [k for k, r in enumerate(ratings) if r == max(valid)]
    return (0 in winners) / len(winners)


def rewardbench2_score(items: Sequence[tuple[PairOutcome, Mapping[str, Any]]], kind: str) -> dict[str, Any]:
    """RewardBench 2: best-of-n accuracy per subset, the Ties score and the mean over subsets.

    Non-Ties prompts: pointwise judges use upstream's rule on the completions' scores
    (:func:`_best_of_n_pointwise`); pairwise / listwise judges the pairwise form
    (:func:`_best_of_n_pairwise`). A subset's score is the mean over its prompts. Ties: upstream scores
    it with absolute ratings only (``scripts/run_generative_v2.py`` forces ratings), so it is scored
    from a pointwise judge's completion scores (:func:`ties_score`) and is ``None`` for other kinds.
    A completion with no valid pointwise score is a failed rating, as upstream's: left out of a
    non-Ties prompt's best-of-4 (0.25 when all failed), rated :data:`ERROR_RATING` in Ties (counted in
    ``n_unscored_ties_completions``). Prompts whose pairs are not all present (``--limit``) are left
    out and counted. ``score`` = mean of the subset scores (the leaderboard's); ``None`` when a present
    subset has no score (``mean_of_scored_subsets`` is then the mean of the others).

    Returns:
        ``{"score", "mean_of_scored_subsets", "subsets": {subset: score}, "best_of_n_accuracy" (all
        non-Ties prompts), "n_prompts", "n_incomplete_prompts", "n_unscored_ties_completions", "notes",
        "source"}``.
    """
    prompts: dict[str, list[tuple[PairOutcome, Mapping[str, Any]]]] = defaultdict(list)
    for o, b in items:
        prompts[str(b.get("record_id", o.pair_id))].append((o, b))
    results: dict[str, list[float]] = defaultdict(list)
    ties: dict[str, list[tuple[bool, float]]] = {}
    incomplete, unscored, notes = 0, 0, []
    for rid, its in prompts.items():
        b = its[0][1]
        subset = str(b.get("subset", ""))
        n_inc = int(b.get("num_incorrect", 0) or 0)
        n_cor = int(b.get("num_correct", 1) or 1)
        if subset.lower() == "ties":
            results.setdefault(subset, [])  # present, scored or not
        good_ranks, bad_ranks = _ranks(its)
        if len(good_ranks) < n_cor or len(bad_ranks) < n_inc:  # a pair not judged (--limit)
            incomplete += 1
            continue
        if subset.lower() == "ties":
            if kind == "pointwise":
                good, bad = completion_scores(its)
                unscored += len(good_ranks - set(good)) + len(bad_ranks - set(bad))
                ties[rid] = ([(True, good.get(k, ERROR_RATING)) for k in sorted(good_ranks)]
                             + [(False, bad.get(k, ERROR_RATING)) for k in sorted(bad_ranks)])
            continue
        if kind == "pointwise":
            results[subset].append(_best_of_n_pointwise(its))
        else:
            results[subset].append(_best_of_n_pairwise([o for o, _ in its]))
    subsets: dict[str, float | None] = {s: float(np.mean(v)) for s, v in sorted(results.items()) if v}
    for s in results:
        if s.lower() == "ties":
            if kind != "pointwise":
                subsets[s] = None
                notes.append("Ties is scored with absolute ratings upstream: run a pointwise protocol for it")
            else:
                subsets[s] = ties_score(ties) if ties else None
    scored = [v for v in subsets.values() if v is not None]
    non_ties = [x for s, v in results.items() if s.lower() != "ties" for x in v]
    return {"score": float(np.mean(scored)) if scored and len(scored) == len(subsets) else None,
            "mean_of_scored_subsets": float(np.mean(scored)) if scored else None, "subsets": subsets,
            "best_of_n_accuracy": float(np.mean(non_ties)) if non_ties else None,
            "n_prompts": len(prompts) - incomplete, "n_incomplete_prompts": incomplete,
            "n_unscored_ties_completions": unscored, "notes": notes,
            "source": "allenai/reward-bench rewardbench/utils.py reroll_and_score_dataset, process_single_model, "
                      "_compute_prompt_stats; scripts/run_v2.py, scripts/run_generative_v2.py"}
