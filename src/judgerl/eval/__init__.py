"""Evaluation of judges: the resumable runner, metrics and reports.

``run_eval(backend, protocol, pairs, out_dir, ...)`` judges every pair (pairwise: both orders;
pointwise: each response), appends one record per judgment sample to ``judgments.jsonl`` and writes
``summary.json`` / ``report.md``. ``compute_metrics(records)`` recomputes the summary metrics from
records (definitions in :mod:`judgerl.eval.metrics`).
"""

from judgerl.eval.metrics import RecordError, aggregate_pairs, bootstrap_ci, compute_metrics, majority_vote
from judgerl.eval.report import format_report, plot_accuracy_by_source, write_report
from judgerl.eval.runner import RunConfigMismatch, first_order, plan_units, read_judgments, run_eval

__all__ = [
    "RecordError",
    "RunConfigMismatch",
    "aggregate_pairs",
    "bootstrap_ci",
    "compute_metrics",
    "first_order",
    "format_report",
    "majority_vote",
    "plan_units",
    "plot_accuracy_by_source",
    "read_judgments",
    "run_eval",
    "write_report",
]
