"""The arena leaderboard: ``leaderboard.md`` (Markdown table) and ``leaderboard.png``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from judgerl.eval.report import _ci, _pct, _table


def _elo(x: float | None) -> str:
    return "–" if x is None else f"{x:.0f}"


def _elo_ci(ci: Any) -> str:
    return "–" if not ci else f"[{ci[0]:.0f}, {ci[1]:.0f}]"


def _outcomes(o: Mapping[str, Any]) -> str:
    vals = [o.get(k) for k in ("strong_win", "win", "tie", "loss", "strong_loss")]
    return "–" if any(v is None for v in vals) else " / ".join(f"{v:g}" for v in vals)


def format_leaderboard(summary: Mapping[str, Any], plot_file: str | None = None) -> str:
    """Markdown leaderboard of an arena summary (:func:`judgerl.arena.run_arena`)."""
    cfg = summary.get("config") or {}
    proto = cfg.get("protocol") or {}
    inputs = summary.get("inputs") or {}
    conf = round(100 * summary.get("confidence", 0.95))
    lines = ["# judgerl arena leaderboard", ""]
    lines += _table(["setting", "value"], [
        ("judge", f"{cfg.get('model')} · {proto.get('name')}" + (" + anti-hacking" if proto.get("anti_hacking") else "")),
        ("baseline", summary["baseline"]),
        ("sampling", f"`{json.dumps(cfg.get('sampling'))}`"),
        ("samples per order", cfg.get("samples")),
        ("strong win / loss weight", f"{summary['strong_weight']:g} games (Arena-Hard-Auto)"),
        ("games between systems", "yes (round robin)" if cfg.get("round_robin") else "no (each system vs the baseline)"),
        ("confidence intervals", f"{conf}%: win rate Wilson score over prompts; Bradley-Terry percentile "
                                 f"bootstrap, {summary['n_bootstrap']} rounds over prompts"),
    ])
    lines += ["", "## Leaderboard", ""]
    head = ["rank", "system", "win rate vs baseline", f"{conf}% CI", "style-controlled win rate",
            "Bradley-Terry (Elo scale)", f"{conf}% CI",
            "prompts", "dropped", "≫ / > / = / < / ≪", "mean words", "audit flags"]
    rows = []
    for r in summary["leaderboard"]:
        inp = inputs.get(r["system"]) or {}
        flags = (inp.get("audit_counts") or {}).get("any")
        name = f"**{r['system']}** (baseline)" if r.get("baseline") else r["system"]
        rows.append([r["rank"], name, _pct(r["win_rate"]), _ci(r["win_rate_ci"]),
                     _pct(r.get("win_rate_style_controlled")), _elo(r["bt_elo"]),
                     _elo_ci(r["bt_elo_ci"]), "–" if r["n_prompts"] is None else r["n_prompts"],
                     "–" if r["n_dropped"] is None else r["n_dropped"], _outcomes(r["outcomes"]),
                     "–" if inp.get("mean_words") is None else f"{inp['mean_words']:.0f}",
                     "–" if flags is None else f"{flags}/{inp.get('n_responses')}"])
    lines += _table(head, rows)
    lines += ["", "Outcomes are counted per game from the system's side (strong win ≫ … strong loss ≪; "
              "fractions with several samples per order). A prompt with an invalid judgment in either order is "
              "dropped. Audit flags: responses with at least one reward-hacking flag (`judgerl audit`).", ""]
    style = summary.get("style_control")
    if style:
        lines += ["Style-controlled win rate: Bradley-Terry with normalised differences of token length, headers, "
                  "lists and bold as covariates (Chatbot Arena / Arena-Hard v2 style control); the win rate "
                  "equally styled responses would get. Style coefficients: "
                  + ", ".join(f"{k} {v:+.2f}" for k, v in (style.get("beta") or {}).items()) + ".", ""]
    if plot_file:
        lines += [f"![leaderboard]({plot_file})", ""]
    warnings = [(r["system"], r["bt_elo_ci_warning"]) for r in summary["leaderboard"] if r.get("bt_elo_ci_warning")]
    if warnings:
        lines += ["## Bradley-Terry intervals to read with care", ""]
        lines += _table(["system", "warning"], warnings)
        lines.append("")
    dropped = summary.get("dropped_by_matchup") or {}
    if dropped:
        lines += ["## Prompts dropped for an invalid judgment", ""]
        lines += _table(["series", "prompts"], list(dropped.items()))
        lines.append("")
    return "\n".join(lines)


def plot_leaderboard(summary: Mapping[str, Any], path: Path) -> Path:
    """Two panels: win rate vs the baseline and Bradley-Terry Elo, each with its CI."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    rows = summary["leaderboard"]
    names = [r["system"] for r in rows]
    fig, axes = plt.subplots(1, 2, figsize=(10, 1.4 + 0.42 * len(rows)), sharey=True)
    try:
        y = list(range(len(rows)))
        colours = ["#8c8c8c" if r.get("baseline") else "#4c72b0" for r in rows]
        for ax, key, ci_key, scale, label, ref in (
            (axes[0], "win_rate", "win_rate_ci", 100.0, "win rate vs baseline (%)", 50.0),
            (axes[1], "bt_elo", "bt_elo_ci", 1.0, "Bradley-Terry score (Elo scale)", summary["bt_elo_baseline"]),
        ):
            vals = [scale * r[key] if r[key] is not None else float("nan") for r in rows]  # NaN: not drawn
            lo = [max(0.0, v - scale * r[ci_key][0]) if r[ci_key] and r[key] is not None else 0.0
                  for v, r in zip(vals, rows)]
            hi = [max(0.0, scale * r[ci_key][1] - v) if r[ci_key] and r[key] is not None else 0.0
                  for v, r in zip(vals, rows)]
            ax.errorbar(vals, y, xerr=[lo, hi], fmt="o", color="k", ecolor="#4c72b0", capsize=3)
            ax.scatter(vals, y, c=colours, zorder=3)
            ax.axvline(ref, color="#8c8c8c", ls="--", lw=1)
            ax.set_xlabel(label)
        axes[0].set_xlim(0, 100)
        axes[0].set_yticks(y, names)
        axes[0].invert_yaxis()
        cfg = summary.get("config") or {}
        fig.suptitle(f"arena vs {summary['baseline']} · judge {cfg.get('model')} "
                     f"({(cfg.get('protocol') or {}).get('name')})", fontsize=9)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
    finally:
        plt.close(fig)
    return path


def write_arena_report(summary: Mapping[str, Any], out: Path, report_file: str, plot_file: str) -> Path:
    """Write ``report_file`` and ``plot_file`` into ``out``; returns the report path."""
    out.mkdir(parents=True, exist_ok=True)
    plot_leaderboard(summary, out / plot_file)
    path = out / report_file
    path.write_text(format_leaderboard(summary, plot_file), encoding="utf-8")
    return path
