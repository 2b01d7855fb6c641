"""Evaluation of judges: the resumable runner, metrics and reports.

``run_eval(judge, pairs, out_dir, ...)`` judges every pair with a :class:`judgerl.judge.Judge`
(pairwise: both orders; pointwise: each response), appends one record per judgment sample to
``judgments.jsonl`` and writes ``summary.json`` / ``report.md``. ``compute_metrics(records)``
recomputes the summary metrics from records (definitions in :mod:`judgerl.eval.metrics`).
"""

from judgerl.judge.aggregate import majority_vote
from judgerl.eval.intervals import bootstrap_ci, mean_ci, proportion_ci
from judgerl.eval.metrics import RecordError, aggregate_pairs, compute_metrics
from judgerl.eval.plan import first_order, plan_units
from judgerl.eval.report import format_report, plot_accuracy_by_source, write_report
from judgerl.eval.runner import run_eval
from judgerl.eval.store import RunConfigMismatch, read_judgments

__all__ = [
    "RecordError",
    "RunConfigMismatch",
    "aggregate_pairs",
    "bootstrap_ci",
    "compute_metrics",
    "first_order",
    "format_report",
    "majority_vote",
    "mean_ci",
    "plan_units",
    "plot_accuracy_by_source",
    "proportion_ci",
    "read_judgments",
    "run_eval",
    "write_report",
]
