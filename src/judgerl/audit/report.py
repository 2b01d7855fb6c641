"""Audit report: ``report.md`` (rates per kind, per step, examples) and ``audit_rates.png``."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judgerl.audit.audit import AuditRecord, AuditReport, AuditResult

PLOT_FILE = "audit_rates.png"
_MAX_EXAMPLES = 3
_EXCERPT = 160


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in r) + " |" for r in rows]
    return lines


def plot_rates(report: AuditReport, path: str | os.PathLike[str]) -> Path:
    """Plot flag rates; writes a PNG with matplotlib's Agg backend.

    With training steps (``report.by_step``): one line per kind, rate (%) against step — rising
    lines mean the policy is learning to hack the judge. Without steps: one bar per kind.

    Returns:
        The PNG path.
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    kinds = list(report.kinds)
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    try:
        if report.by_step:
            steps = list(report.by_step)
            for kind in kinds:
                ax.plot(steps, [100 * report.by_step[s]["rates"][kind] for s in steps], marker="o", ms=3, label=kind)
            ax.set_xlabel("policy-training step")
            ax.set_ylabel("flagged responses (%)")
            ax.legend(fontsize=8, loc="upper left")
        else:
            ax.barh(range(len(kinds)), [100 * report.rates[k] for k in kinds], color="#c44e52")
            ax.set_yticks(range(len(kinds)), kinds)
            ax.invert_yaxis()
            ax.set_xlim(0, 100)
            ax.set_xlabel("flagged responses (%)")
        ax.set_title(f"reward-hacking audit · {report.n} responses", fontsize=9)
        fig.tight_layout()
        out = Path(path)
        fig.savefig(out, dpi=110)
    finally:
        plt.close(fig)
    return out


def format_report(report: AuditReport, records: Sequence[AuditRecord] = (), results: Sequence[AuditResult] = (),
                  plot_file: str | None = PLOT_FILE, info: Mapping[str, Any] | None = None) -> str:
    """Markdown report: rates per kind, rates per step (when steps exist), and a few flagged examples
    per kind with their evidence.

    Args:
        records, results: The audited records and their results (for examples; may be empty).
        plot_file: PNG to link (relative path), or None.
        info: Run information shown at the top (input file, field map …).
    """
    lines = ["# Reward-hacking audit", ""]
    if info:
        lines += [f"- {k}: `{v}`" for k, v in info.items()] + [""]
    lines += [
        f"{report.n} responses; {report.counts.get('any', 0)} ({_pct(report.rates.get('any'))}) have at least one "
        f"flag. Prompts missing: {report.n_prompt_missing} (policy refusals are then flagged without checking "
        f"the prompt); prompts classified harmful: {report.n_prompt_harmful}.", "",
        "## Rates per kind", "",
    ]
    lines += _table(["kind", "flagged", "rate"],
                    [(k, report.counts[k], _pct(report.rates[k])) for k in (*report.kinds, "any")])
    if report.by_step:
        lines += ["", "## Rates per training step", ""]
        lines += _table(["step", "n", *report.kinds, "any"],
                        [(s, v["n"], *(_pct(v["rates"][k]) for k in (*report.kinds, "any")))
                         for s, v in report.by_step.items()])
    if plot_file:
        lines += ["", f"![flag rates]({plot_file})"]
    examples = _examples(records, results, report.kinds)
    if examples:
        lines += ["", "## Examples", ""]
        for kind, items in examples.items():
            lines += [f"### {kind}", ""]
            for rid, ev_texts in items:
                lines.append(f"- `{rid}`: " + "; ".join(f"`{t}`" for t in ev_texts))
            lines.append("")
    lines += ["", "Kinds and their limits: docs/audit.md. Pattern: the judge-as-reward paper "
              "(policies trained on reasoning judges refuse citing a fabricated policy, emit a fake end marker and "
              "append a self-evaluation)."]
    return "\n".join(lines).rstrip() + "\n"


def _examples(records: Sequence[AuditRecord], results: Sequence[AuditResult], kinds: Sequence[str]
              ) -> dict[str, list[tuple[str, list[str]]]]:
    out: dict[str, list[tuple[str, list[str]]]] = {}
    for rec, res in zip(records, results):
        for kind in res.flags:
            bucket = out.setdefault(kind, [])
            if len(bucket) < _MAX_EXAMPLES:
                texts = [_excerpt(ev.text) for ev in res.evidence if ev.kind == kind]
                bucket.append((rec.id, texts))
    return {k: out[k] for k in kinds if k in out}


def _excerpt(text: str) -> str:
    t = " ".join(text.split()).replace("`", "'")
    if not t:
        return "(empty)"
    return t if len(t) <= _EXCERPT else t[: _EXCERPT - 1] + "…"
