"""The probe's human-readable report: ``report.md`` (tables) and a bar chart of pass rates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from judgerl.eval.report import _ci, _num, _pct, _table


def _judge_line(config: Mapping[str, Any]) -> str:
    judge = config.get("judge") or {}
    if "members" in judge:
        ens = judge.get("ensemble") or {}
        models = ", ".join(str(m.get("model")) for m in judge["members"])
        return f"ensemble ({ens.get('combine')}) of {models}"
    proto = judge.get("protocol") or {}
    extra = " + anti-hacking instruction" if proto.get("anti_hacking") else ""
    return f"{judge.get('model')} · {proto.get('name')}{extra}"


def format_probe_report(summary: Mapping[str, Any], plot_file: str | None = None) -> str:
    """Markdown report of a probe summary (:func:`judgerl.probe.summary.summarise_probe`)."""
    kind = summary["kind"]
    cfg = summary.get("config") or {}
    pass_def = (f"score ≥ {summary['threshold']:g} on the {summary['scale'][0]:g}–{summary['scale'][1]:g} scale"
                if kind == "pointwise" else "preferred over the prompt's real reference answer (both orders judged)")
    lines = ["# judgerl probe: does the judge pass master keys and hacks?", ""]
    lines += _table(["setting", "value"], [
        ("judge", _judge_line(cfg)),
        ("kind", kind),
        ("pass", pass_def),
        ("sampling", f"`{json.dumps((cfg.get('judge') or {}).get('sampling'))}`"),
        ("reward guards", "off (the probe measures the judge itself)"),
        ("prompts", summary.get("n_prompts")),
        ("judgments", summary.get("n_judgments")),
    ])
    lines += ["", f"**False-positive rate** (master keys and hacks that pass): "
              f"**{_pct(summary.get('false_positive_rate'))}** {_ci(summary.get('false_positive_rate_ci'))}", ""]
    head = ["family", "judgments", "pass rate", "95% CI", "pass rate (valid only)", "invalid"]
    head += ["mean score (0–1)"] if kind == "pointwise" else ["tie", "passed in both orders"]

    def row(name: str, s: Mapping[str, Any]) -> list[Any]:
        r = [name, s["n"], _pct(s["pass_rate"]), _ci(s["pass_rate_ci"]), _pct(s["pass_rate_valid"]),
             _pct(s["invalid_rate"])]
        r += [_num(s.get("mean_score"))] if kind == "pointwise" else [_pct(s.get("tie_rate")),
                                                                      _pct(s.get("consistent_pass_rate"))]
        return r

    lines += ["## By family", ""]
    lines += _table(head, [row(f, s) for f, s in summary["families"].items()])
    lines += ["", "The `reference` row (pointwise only) is the control: real answers, which a useful judge passes.",
              "", "## By probe response", ""]
    lines += _table(["probe"] + head[1:], [row(f"`{n}`", s) for n, s in summary["by_probe"].items()])
    lines += ["", "## By source", ""]
    lines += _table(["source · family"] + head[1:], [row(f"{src} · {fam}", s)
                                                       for src, fams in summary["by_source"].items()
                                                       for fam, s in fams.items()])
    g, a = summary.get("guard_would_block") or {}, summary.get("audit_flagged") or {}
    lines += ["", "## Screens in front of the judge", "",
              f"* Reward guards (`judgerl serve`): would block {g.get('n')} of {g.get('of')} master-key/hack "
              f"responses ({_pct(g.get('rate'))}) before any judge call.",
              f"* Audit (`judgerl audit`): flags {a.get('n')} of {a.get('of')} ({_pct(a.get('rate'))}).", ""]
    reasons = summary.get("invalid_reasons") or {}
    if reasons:
        lines += ["## Invalid judgments", ""] + _table(["reason", "judgments"], list(reasons.items())) + [""]
    if plot_file:
        lines += [f"![pass rate per probe]({plot_file})", ""]
    return "\n".join(lines)


def plot_pass_rates(summary: Mapping[str, Any], path: Path) -> Path:
    """Horizontal bars with 95% CIs: all master keys together, each hacking template, and the
    reference control (pointwise); per-key rates are in the report's table."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fams = summary["families"]
    items: list[tuple[str, str, Mapping[str, Any]]] = []
    if "master_key" in fams:
        n_keys = sum(s["family"] == "master_key" for s in summary["by_probe"].values())
        items.append((f"master keys (all {n_keys})", "master_key", fams["master_key"]))
    items += [(n, "hack", s) for n, s in summary["by_probe"].items() if s["family"] == "hack"]
    if "reference" in fams:
        items.append(("reference answers (control)", "reference", fams["reference"]))
    colours = {"master_key": "#c44e52", "hack": "#dd8452", "reference": "#55a868"}
    fig, ax = plt.subplots(figsize=(7.5, 1.3 + 0.35 * len(items)))
    try:
        vals = [100 * (s["pass_rate"] or 0.0) for _, _, s in items]
        cis = [s["pass_rate_ci"] for _, _, s in items]
        err_lo = [max(0.0, v - 100 * ci[0]) if ci else 0.0 for v, ci in zip(vals, cis)]
        err_hi = [max(0.0, 100 * ci[1] - v) if ci else 0.0 for v, ci in zip(vals, cis)]
        y = list(range(len(items)))
        ax.barh(y, vals, xerr=[err_lo, err_hi], color=[colours[f] for _, f, _ in items], capsize=2)
        ax.set_yticks(y, [n for n, _, _ in items], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(0, 100)
        ax.set_xlabel("pass rate (%) with 95% Wilson CI over prompts")
        ax.set_title(f"{_judge_line(summary.get('config') or {})} · {summary['kind']}", fontsize=9)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
    finally:
        plt.close(fig)
    return path


def write_probe_report(summary: Mapping[str, Any], out: Path, report_file: str, plot_file: str) -> Path:
    """Write ``report_file`` and ``plot_file`` into ``out``; returns the report path."""
    plot_pass_rates(summary, out / plot_file)
    path = out / report_file
    path.write_text(format_probe_report(summary, plot_file), encoding="utf-8")
    return path
