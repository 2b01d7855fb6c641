"""Human-readable evaluation report: ``report.md`` (tables) and ``accuracy_by_source.png``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from judgerl.eval.benchmark_report import benchmark_lines

REPORT_FILE = "report.md"
PLOT_FILE = "accuracy_by_source.png"


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _ci(ci: Sequence[float] | None) -> str:
    return "–" if not ci else f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def _num(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows]
    return lines


def plot_accuracy_by_source(summary: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Horizontal bar chart of accuracy per source with 95% Wilson CIs; writes a PNG.

    Sources come from ``summary["by_source"]`` (the overall value is drawn as a dashed line). Uses
    matplotlib's object-oriented API on its Agg canvas: no ``pyplot`` (whose import and backend
    selection cost ~0.3-0.8 s of every ``judgerl eval``), no global figure state.

    Returns:
        The PNG path.
    """
    from matplotlib.figure import Figure

    by = summary.get("by_source") or {}
    names = list(by) or ["(all)"]
    rows = list(by.values()) or [summary]
    acc = [100 * (r.get("accuracy") or 0.0) for r in rows]
    lo, hi = [], []
    for r, a in zip(rows, acc):
        ci = r.get("accuracy_ci")
        lo.append(max(0.0, a - 100 * ci[0]) if ci else 0.0)
        hi.append(max(0.0, 100 * ci[1] - a) if ci else 0.0)
    fig = Figure(figsize=(7, 1.2 + 0.45 * len(names)))
    ax = fig.subplots()
    y = range(len(names))
    ax.barh(list(y), acc, xerr=[lo, hi], color="#4c72b0", capsize=3)
    ax.set_yticks(list(y), [n or "(no source)" for n in names])
    ax.invert_yaxis()
    if summary.get("accuracy") is not None:
        ax.axvline(100 * summary["accuracy"], color="k", ls="--", lw=1, label="overall")
        ax.legend(loc="lower right")
    ax.set_xlim(0, 100)
    ax.set_xlabel("accuracy (%) with 95% Wilson CI over pairs")
    cfg = summary.get("config") or {}
    proto = (cfg.get("protocol") or {}).get("name", "")
    ax.set_title(f"{cfg.get('model', '')} · {proto}".strip(" ·"), fontsize=9)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=110)
    return out


def format_report(summary: Mapping[str, Any], plot_file: str | None = PLOT_FILE) -> str:
    """Markdown report for a summary from :func:`judgerl.eval.run_eval` / ``compute_metrics``.

    Sections: configuration, overall metrics with 95% CIs, per-source table, invalid-output
    reasons, gold-tie pairs, gold-score agreement, tool use and timing (those present).
    """
    cfg = summary.get("config") or {}
    info = summary.get("info") or {}
    proto = cfg.get("protocol") or {}
    lines = ["# judgerl evaluation report", ""]
    setup = [
        ("model", info.get("model_arg") or cfg.get("model")),
        ("protocol", f"{proto.get('name', '')} ({summary.get('kind', '')})"),
        ("data", info.get("data")),
        ("samples per judgment", cfg.get("samples")),
        ("seed", cfg.get("seed")),
        ("sampling", cfg.get("sampling")),
        ("tools", cfg.get("tools") or "none"),
    ]
    lines += _table(["setting", "value"], [(k, f"`{v if isinstance(v, str) else json.dumps(v)}`")
                                           for k, v in setup if v is not None])
    lines += ["", "## Overall", ""]
    rows = [
        ("pairs (gold preference)", summary.get("n_pairs"), ""),
        ("judgments (pair × order)", summary.get("n_judgments"), ""),
        ("judgment samples", summary.get("n_samples"), ""),
        ("accuracy", _pct(summary.get("accuracy")), _ci(summary.get("accuracy_ci"))),
        ("accuracy (valid judgments only)", _pct(summary.get("accuracy_valid_only")), ""),
        ("accuracy (first order only)", _pct(summary.get("accuracy_first_order")), ""),
        ("position-consistent accuracy", _pct(summary.get("position_consistent_accuracy")),
         _ci(summary.get("position_consistent_accuracy_ci"))),
        ("verdict flip rate", _pct(summary.get("flip_rate")),
         "" if summary.get("n_flip_pairs") is None else f"over {summary['n_flip_pairs']} pairs valid in both orders"),
        ("tie rate", _pct(summary.get("tie_rate")), ""),
        ("invalid-output rate (per sample)", _pct(summary.get("invalid_rate")), ""),
        ("invalid judgments after voting", _pct(summary.get("judgment_invalid_rate")), ""),
        ("position A picked (valid samples)", _pct(summary.get("position_a_rate")), ""),
        ("truncated outputs (hit max tokens)", _pct(summary.get("truncation_rate")), ""),
        ("mean completion tokens", _num(summary.get("mean_completion_tokens"), 1), ""),
    ]
    if "forced_answer_rate" in summary:
        rows.append(("answer forced (--force-answer)", _pct(summary["forced_answer_rate"]),
                     "judgments whose answer tag was prefilled"))
    if summary.get("n_failed"):
        rows.append(("generation failed (API error, filtered, prompt too long)", summary["n_failed"],
                     f"{summary.get('n_retry', 0)} will be retried by re-running the same command"))
    if summary.get("n_identical_response_pairs"):
        rows.append(("pairs whose two responses are identical", summary["n_identical_response_pairs"],
                     "no judge can be position-consistent on them"))
    lines += _table(["metric", "value", "95% CI"], rows)
    lines += ["", "Ties and invalid judgments count as wrong in accuracy; invalid outputs are never "
              "counted as ties. Pointwise judging has no order: its position-consistent accuracy equals "
              "its accuracy and the flip rate is undefined (–).", ""]
    lines += benchmark_lines(summary.get("benchmark"))
    by = summary.get("by_source") or {}
    if by:
        lines += ["## By source", ""]
        lines += _table(
            ["source", "pairs", "accuracy", "95% CI", "pos.-consistent acc.", "flip", "tie", "invalid"],
            [(s or "(no source)", m.get("n_pairs"), _pct(m.get("accuracy")), _ci(m.get("accuracy_ci")),
              _pct(m.get("position_consistent_accuracy")), _pct(m.get("flip_rate")), _pct(m.get("tie_rate")),
              _pct(m.get("invalid_rate"))) for s, m in by.items()],
        )
        lines.append("")
    diff = summary.get("by_difficulty") or {}
    if diff:
        lines += ["## By difficulty", ""]
        lines += _table(
            ["difficulty", "pairs", "accuracy", "95% CI", "pos.-consistent acc.", "flip", "invalid"],
            [(d, m.get("n_pairs"), _pct(m.get("accuracy")), _ci(m.get("accuracy_ci")),
              _pct(m.get("position_consistent_accuracy")), _pct(m.get("flip_rate")), _pct(m.get("invalid_rate")))
             for d, m in diff.items()],
        )
        lines.append("")
    same = summary.get("identical_responses")
    if same:
        lines += ["## Pairs whose two responses are identical (excluded from the figures above)", "",
                  "No judge can be position-consistent on these: the same text is shown in both positions.", ""]
        lines += _table(["pairs", "accuracy", "flip", "invalid"],
                        [(same.get("n_pairs"), _pct(same.get("accuracy")), _pct(same.get("flip_rate")),
                          _pct(same.get("invalid_rate")))])
        lines.append("")
    if plot_file:
        lines += [f"![accuracy by source]({plot_file})", ""]
    reasons = summary.get("invalid_reasons") or {}
    if reasons:
        lines += ["## Invalid outputs", ""]
        lines += _table(["reason", "samples"], list(reasons.items()))
        lines.append("")
    gt = summary.get("gold_ties")
    if gt:
        lines += ["## Pairs labelled as ties (excluded from accuracy)", ""]
        lines += _table(["pairs", "predicted tie rate", "invalid rate"],
                        [(gt.get("n_pairs"), _pct(gt.get("tie_rate")), _pct(gt.get("invalid_rate")))])
        lines.append("")
    if summary.get("n_scored_responses"):
        lines += ["## Agreement with gold scores", ""]
        lines += _table(["responses", "Krippendorff's alpha (interval)", "Spearman", "Kendall"],
                        [(summary["n_scored_responses"], _num(summary.get("krippendorff_alpha")),
                          _num(summary.get("spearman")), _num(summary.get("kendall")))])
        lines.append("")
    if "tool_use_rate" in summary:
        lines += ["## Tool use", ""]
        lines += _table(["tool-use rate", "tool-error rate", "mean tool rounds"],
                        [(_pct(summary.get("tool_use_rate")), _pct(summary.get("tool_error_rate")),
                          _num(summary.get("mean_tool_rounds"), 2))])
        lines.append("")
    audit = summary.get("audit")
    if audit:
        lines += ["## Reward-hacking flags in the judged responses", ""]
        if not audit.get("n_flagged"):
            lines += [f"`judgerl audit` flags none of the {audit.get('n_responses')} judged responses.", ""]
        else:
            by = audit.get("by_role") or {}
            kinds = [k for k in (audit.get("counts") or {}) if k != "any"]
            lines += _table(["kind", "chosen", "rejected"], [(f"`{k}`", (by.get("chosen") or {}).get(k),
                                                             (by.get("rejected") or {}).get(k)) for k in kinds])
            shown = audit.get("flagged") or []
            lines += ["", f"{audit['n_flagged']} of {audit.get('n_responses')} judged responses are flagged "
                      f"(first {len(shown)} below; `judgerl audit` for evidence):", ""]
            lines += _table(["pair", "response", "flags"], [(f["pair_id"], f["response"], ", ".join(f["flags"]))
                                                            for f in shown])
            lines.append("")
    timing = summary.get("timing")
    if timing:
        lines += ["## Timing", ""]
        lines += _table(["elapsed (s, this invocation)", "new judgments", "resumed judgments", "judgments/s"],
                        [(_num(timing.get("elapsed_s"), 1), timing.get("judgments_this_run"),
                          timing.get("judgments_resumed"), _num(timing.get("judgments_per_s"), 2))])
        lines.append("")
    return "\n".join(lines)


def write_report(summary: Mapping[str, Any], out_dir: str | os.PathLike[str]) -> Path:
    """Write ``report.md`` and ``accuracy_by_source.png`` into ``out_dir``; returns the report path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plot_accuracy_by_source(summary, out / PLOT_FILE)
    path = out / REPORT_FILE
    path.write_text(format_report(summary, PLOT_FILE), encoding="utf-8")
    return path
