"""Static agreement of a judge's labels with gold labels (judge-as-reward: Krippendorff's alpha).

Both sides are label directories written by :func:`judgerl.gold.label.run_label` (``judgerl label``),
joined by record id. For each judge:

* ``n``: records labelled by both (the gold label valid); ``n_gold_invalid``: joined records the gold
  judge could not score (left out of everything);
* ``invalid_rate``: fraction of the ``n`` records the judge failed to score (parse failures, no score
  mass): the paper reports it before and after GRPO (5-10% -> < 1%);
* on the records both scored: Krippendorff's alpha (interval), Pearson, Spearman, Kendall
  (:func:`judgerl.eval.metrics.score_agreement`, the one home of these statistics), mean absolute
  error and exact-match rate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from judgerl.eval.metrics import score_agreement
from judgerl.gold.label import read_labels


def agreement(pred: Mapping[str, Mapping[str, Any]], gold: Mapping[str, Mapping[str, Any]],
              ids: Sequence[str] | None = None) -> dict[str, Any]:
    """Agreement of ``pred`` labels with ``gold`` labels (records by id; see the module docstring).

    Args:
        pred, gold: Label records by id (``score``, ``valid``).
        ids: Restrict to these ids (e.g. a held-out split); default all ids in both.

    Returns:
        ``{"n", "n_gold_invalid", "n_pred_invalid", "invalid_rate", "n_both_valid", "krippendorff_alpha",
        "pearson", "spearman", "kendall", "mae", "exact"}`` (statistics None where undefined).
    """
    keys = [k for k in (ids if ids is not None else sorted(set(pred) & set(gold))) if k in pred and k in gold]
    gold_ok = [k for k in keys if gold[k].get("valid") and gold[k].get("score") is not None]
    pred_ok = [k for k in gold_ok if pred[k].get("valid") and pred[k].get("score") is not None]
    p = [float(pred[k]["score"]) for k in pred_ok]
    g = [float(gold[k]["score"]) for k in pred_ok]
    stats = score_agreement(p, g)
    n = len(gold_ok)
    return {
        "n": n,
        "n_gold_invalid": len(keys) - n,
        "n_pred_invalid": n - len(pred_ok),
        "invalid_rate": (n - len(pred_ok)) / n if n else None,
        "n_both_valid": len(pred_ok),
        "krippendorff_alpha": stats["krippendorff_alpha"],
        "pearson": stats["pearson"],
        "spearman": stats["spearman"],
        "kendall": stats["kendall"],
        "mae": sum(abs(a - b) for a, b in zip(p, g)) / len(p) if p else None,
        "exact": sum(a == b for a, b in zip(p, g)) / len(p) if p else None,
    }


def agreement_report(gold_dir: str | Path, judges: Mapping[str, str | Path],
                     ids: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
    """:func:`agreement` of each judge's label directory (by display name) with the gold directory.

    Raises:
        FileNotFoundError: a directory without labels.
    """
    gold = read_labels(gold_dir)
    return {name: agreement(read_labels(d), gold, ids) for name, d in judges.items()}


def format_agreement(report: Mapping[str, Mapping[str, Any]]) -> str:
    """A Markdown table of :func:`agreement_report` (one row per judge)."""

    def num(x: Any, pct: bool = False) -> str:
        if x is None:
            return "-"
        return f"{100 * x:.1f}%" if pct else f"{x:.3f}"

    lines = ["| judge | n | invalid | alpha | Pearson | Spearman | MAE | exact |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, r in report.items():
        lines.append(f"| {name} | {r['n']} | {num(r['invalid_rate'], True)} | {num(r['krippendorff_alpha'])} | "
                     f"{num(r['pearson'])} | {num(r['spearman'])} | {num(r['mae'])} | {num(r['exact'], True)} |")
    return "\n".join(lines)


__all__ = ["agreement", "agreement_report", "format_agreement"]
