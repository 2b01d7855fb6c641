"""Official benchmark scores, computed from judgment records the way each benchmark defines them.

judgerl's own metrics (:mod:`judgerl.eval.metrics`) pool every judgment; leaderboards do not. This
module re-creates each benchmark's scoring rule on the same ``judgments.jsonl`` records and returns
the ``benchmark`` section of ``summary.json`` (one entry per benchmark found in the records):

* ``judgebench`` — ScalerLab/JudgeBench ``utils/metrics.py`` (``compute_final_metrics`` with
  ``reverse_order``) and ``run_judge.py`` (categories by ``source`` prefix): see :func:`judgebench_score`.
* ``rmbench`` — THU-KEG/RM-Bench ``scripts/utils.py`` (``compute_accuracy``, ``split_dataset_by_domain``):
  see :func:`rmbench_score`.
* ``rewardbench`` / ``rewardbench2`` — allenai/reward-bench: :mod:`judgerl.eval.rewardbench`.
* ``ppe`` — PPE human preference: :func:`ppe_score`.
* ``ppe_correctness`` — PPE best-of-K correctness sets: :mod:`judgerl.eval.ppe`.

A pair belongs to a benchmark through ``meta["benchmark"]``, set by the data readers; the eval runner
copies it with the keys the rules need into each record's ``bench`` field (:func:`bench_fields`).
Every score is a fraction in [0, 1] (upstream prints percentages); undefined ones are ``None``.

A judgment's *choice* is judgerl's (:func:`judgerl.eval.metrics.sample_choice`, majority vote over
samples): ``"chosen"``, ``"rejected"``, ``"tie"`` or ``None`` (invalid).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Mapping, Sequence

import numpy as np

from judgerl.eval.metrics import PairOutcome, aggregate_pairs, mean_or_none
from judgerl.types import PreferencePair

#: ``PreferencePair.meta`` keys copied into a record's ``bench`` field.
BENCH_KEYS = ("benchmark", "record_id", "domain", "subset", "chosen_style", "rejected_style", "chosen_rank",
              "rejected_rank", "num_correct", "num_incorrect")

#: JudgeBench category -> ``source`` prefix (``run_judge.py``: mmlu-pro, livebench-reasoning,
#: livebench-math, livecodebench; the paper's knowledge / reasoning / math / coding).
JUDGEBENCH_CATEGORIES = {"knowledge": "mmlu-pro", "reasoning": "livebench-reasoning", "math": "livebench-math",
                         "coding": "livecodebench"}
#: RM-Bench domains; a record's domain belongs to the first one it starts with (safety-refuse and
#: safety-response are both "safety").
RMBENCH_DOMAINS = ("chat", "math", "code", "safety")


def bench_fields(pair: PreferencePair) -> dict[str, Any] | None:
    """The ``bench`` field of the records of ``pair``: its benchmark meta keys, or None if none."""
    if not pair.meta.get("benchmark"):
        return None
    return {k: pair.meta[k] for k in BENCH_KEYS if k in pair.meta}


def _outcomes(records: Sequence[Mapping[str, Any]]) -> tuple[str, list[tuple[PairOutcome, dict[str, Any]]]]:
    """(kind, [(pair outcome, bench fields)]) for the records that carry a ``bench`` field."""
    bench = {str(r["pair_id"]): r["bench"] for r in records if isinstance(r.get("bench"), Mapping)}
    kind, outcomes = aggregate_pairs([r for r in records if str(r["pair_id"]) in bench])
    return kind, [(o, dict(bench[o.pair_id])) for o in outcomes]


def judgebench_score(outcomes: Sequence[PairOutcome]) -> dict[str, Any]:
    """JudgeBench's per-pair score, overall and per category.

    Rule (ScalerLab/JudgeBench ``utils/metrics.py``, ``compute_final_metrics``, ``reverse_order``):
    each pair is judged in both orders (two *games*); a game whose decision matches the label adds
    +1, one that picks the other response adds −1, a tie or a failed judgment adds 0; the pair is
    correct when the sum is > 0. Score = correct pairs / pairs. With one order judged this is
    single-game accuracy (its ``single_game`` path). Categories by ``source`` prefix
    (:data:`JUDGEBENCH_CATEGORIES`, ``run_judge.py``). Gold-tie pairs are left out (JudgeBench has none).

    Returns:
        ``{"score", "n_pairs", "categories": {name: {"score", "n_pairs"}}, "source"}``.
    """
    scored = [o for o in outcomes if not o.gold_tie]

    def score(pairs: Sequence[PairOutcome]) -> float | None:
        wins = [sum((c == "chosen") - (c == "rejected") for c in o.judgments.values()) > 0 for o in pairs]
        return mean_or_none(wins)

    cats = {}
    for name, prefix in JUDGEBENCH_CATEGORIES.items():
        sub = [o for o in scored if o.source.startswith(prefix)]
        if sub:
            cats[name] = {"score": score(sub), "n_pairs": len(sub)}
    return {"score": score(scored), "n_pairs": len(scored), "categories": cats,
            "source": "ScalerLab/JudgeBench utils/metrics.py compute_final_metrics; run_judge.py categories"}


def _cell(o: PairOutcome) -> float:
    """A pair's value in an accuracy matrix: fraction of its judgments that pick the chosen response."""
    return float(np.mean(o.correct)) if o.judgments else 0.0


def _rmbench_block(records: Sequence[np.ndarray]) -> dict[str, float]:
    """hard / normal / easy accuracy of 3×3 matrices (RM-Bench ``compute_accuracy``)."""
    acc = np.mean(np.stack(records), axis=0)
    n = acc.shape[0]
    return {"hard": float(np.sum(np.triu(acc, 1)) / (n * (n - 1) / 2)), "normal": float(np.mean(np.diag(acc))),
            "easy": float(np.sum(np.tril(acc, -1)) / (n * (n - 1) / 2))}


def rmbench_score(items: Sequence[tuple[PairOutcome, Mapping[str, Any]]]) -> dict[str, Any]:
    """RM-Bench's domain-averaged 3×3 style matrix.

    Rule (THU-KEG/RM-Bench ``scripts/utils.py``, ``compute_accuracy``): per record a 3×3 matrix,
    cell (i, j) = 1 when chosen at style i beats rejected at style j (judgerl: the fraction of the
    pair's judgments that pick chosen, so both orders count); matrices are averaged over the records
    of a domain; *hard* = mean of the upper triangle (chosen less styled), *normal* = the diagonal,
    *easy* = the lower triangle; a domain's score is the mean of the three. Domains are split by
    prefix (``split_dataset_by_domain``: chat, math, code, safety — safety-refuse and safety-response
    together). The overall hard / normal / easy and ``score`` (``total_avg_acc``) are means over
    domains, not over pairs. Records without a complete 3×3 (e.g. cut by ``--limit``) are left out and
    counted; with no ``domain`` at all the records form one block (the per-domain-file path).

    Returns:
        ``{"score", "hard", "normal", "easy", "domains": {d: {"score", "hard", "normal", "easy",
        "n_records"}}, "n_records", "n_incomplete_records", "source"}``.
    """
    cells: dict[str, dict[tuple[int, int], float]] = defaultdict(dict)
    domain_of: dict[str, str] = {}
    for o, b in items:
        rid = str(b.get("record_id", o.pair_id))
        cells[rid][(int(b.get("chosen_style", 0)), int(b.get("rejected_style", 0)))] = _cell(o)
        domain_of[rid] = str(b.get("domain") or "")
    size = 1 + max((max(k) for c in cells.values() for k in c), default=0)
    full = [(rid, c) for rid, c in cells.items() if len(c) == size * size]
    by_domain: dict[str, list[np.ndarray]] = defaultdict(list)
    for rid, c in full:
        mat = np.array([[c[(i, j)] for j in range(size)] for i in range(size)])
        dom = next((d for d in RMBENCH_DOMAINS if domain_of[rid].startswith(d)), None)
        if not domain_of[rid]:
            dom = "(all)"
        if dom is not None:
            by_domain[dom].append(mat)
    out: dict[str, Any] = {"n_records": len(full), "n_incomplete_records": len(cells) - len(full),
                           "source": "THU-KEG/RM-Bench scripts/utils.py compute_accuracy"}
    if size < 2 or not by_domain:
        return {**out, "score": None, "hard": None, "normal": None, "easy": None, "domains": {}}
    domains = {}
    for d in [*RMBENCH_DOMAINS, "(all)"]:
        if d in by_domain:
            block = _rmbench_block(by_domain[d])
            domains[d] = {"score": float(np.mean(list(block.values()))), **block, "n_records": len(by_domain[d])}
    out["domains"] = domains
    for key in ("hard", "normal", "easy"):
        out[key] = float(np.mean([v[key] for v in domains.values()]))
    out["score"] = float(np.mean([v["score"] for v in domains.values()]))
    return out


def ppe_score(outcomes: Sequence[PairOutcome]) -> dict[str, Any]:
    """PPE human-preference accuracy (Frick et al., 2024, "How to Evaluate Reward Models for RLHF", Sec. 3).

    Accuracy on the battles with a human preference (gold ties left out): a pair's value is the
    fraction of its judgments that pick the human-preferred response (ties and invalid judgments
    count as wrong); score = mean over pairs. (lmarena/PPE could not be read from this machine; the
    rule is the paper's definition of accuracy on the human-preference set.)

    Returns:
        ``{"score", "n_pairs", "n_ties_excluded", "source"}``.
    """
    scored = [o for o in outcomes if not o.gold_tie]
    return {"score": mean_or_none([_cell(o) for o in scored]), "n_pairs": len(scored),
            "n_ties_excluded": len(outcomes) - len(scored),
            "source": "Frick et al. 2024 (PPE), human-preference accuracy"}


def benchmark_scores(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``benchmark`` section: official scores of every benchmark the records belong to.

    Args:
        records: ``judgments.jsonl`` records; only those with a ``bench`` field are used.

    Returns:
        ``{benchmark name: its score dict}`` (see each rule's function); empty when no record carries
        a benchmark.

    Raises:
        judgerl.eval.metrics.RecordError: malformed records (as :func:`~judgerl.eval.metrics.compute_metrics`).
    """
    from judgerl.eval.rewardbench import rewardbench2_score, rewardbench_score

    if not any(isinstance(r.get("bench"), Mapping) for r in records):
        return {}
    kind, items = _outcomes(records)
    groups: dict[str, list[tuple[PairOutcome, dict[str, Any]]]] = defaultdict(list)
    for o, b in items:
        groups[str(b.get("benchmark"))].append((o, b))
    out: dict[str, Any] = {}
    if "judgebench" in groups:
        out["judgebench"] = judgebench_score([o for o, _ in groups["judgebench"]])
    if "rmbench" in groups:
        out["rmbench"] = rmbench_score(groups["rmbench"])
    if "rewardbench" in groups:
        out["rewardbench"] = rewardbench_score([o for o, _ in groups["rewardbench"]])
    if "rewardbench2" in groups:
        out["rewardbench2"] = rewardbench2_score(groups["rewardbench2"], kind)
    if "ppe" in groups:
        out["ppe"] = ppe_score([o for o, _ in groups["ppe"]])
    if "ppe_correctness" in groups:
        from judgerl.eval.ppe import ppe_correctness_score

        out["ppe_correctness"] = ppe_correctness_score(groups["ppe_correctness"], kind)
    return out
