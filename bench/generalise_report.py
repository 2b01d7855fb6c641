"""Tables and plots of ``bench/bench_generalise.py`` (issue 23), from its stage records.

:func:`write_report` writes ``<out>/results.md`` -- the per-domain proof table (judges x domains: PCA and
valid format), one full table per domain (valid format, accuracy, accuracy among valid, PCA, flip rate,
tool use), the Zero rounds, the data counts, the commands and the stage times -- between the markers of
its own ``docs/results.md`` section, and ``<out>/generalise_pca.png`` / ``generalise_zero_rounds.png``.
The next session pastes the section into ``docs/results.md`` and copies the PNGs to ``docs/figures/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from train_judges_report import COLUMNS, _by_prefix, _commands, _fmt, stage_table

START, END = "<!-- bench_generalise:start -->", "<!-- bench_generalise:end -->"
#: Judges in table order (``bench_generalise.JUDGES``) and their labels.
LABELS = {
    "base": "base (TIR prompt, tools)", "base-forced": "base + forced answer", "notool": "no-tool judge (J1 PaV Distill)",
    "distill-sft": "TIR Distill, SFT only", "distill": "TIR Distill (SFT + GRPO)", "zero": "TIR Zero",
}
#: Domain order of the tables (others follow, sorted).
DOMAINS = ("arith/expression", "arith/word", "arith/format", "arith/prose", "code", "if", "chat", "safety")
#: Domains where a judge should call no tool (TIR-Judge's format rule).
NO_TOOL = ("chat", "safety")
ZERO_KEYS = (("valid_rate", "valid (no forcing)"), ("valid_rate_with_forcing", "valid (forced)"),
             ("correct_rate", "correct"), ("tool_use_rate", "tool use"), ("selected", "rows kept"))


def _evals(records: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """``{(judge, domain): figures}`` of the ``eval:<judge>:<domain>`` records."""
    out = {}
    for key, rec in _by_prefix(records, "eval:").items():
        judge, _, domain = key.partition(":")
        out[(judge, domain)] = rec["result"]
    return out


def _ordered(domains: set[str]) -> list[str]:
    return sorted(domains, key=lambda d: (DOMAINS.index(d) if d in DOMAINS else len(DOMAINS), d))


def _judges(evals: dict[tuple[str, str], Any]) -> list[str]:
    present = {j for j, _ in evals}
    return [j for j in LABELS if j in present] + sorted(present - set(LABELS))


def tables(records: list[dict[str, Any]]) -> str:
    """The markdown body: the proof matrix, per-domain tables, Zero rounds, data counts and stage times."""
    evals = _evals(records)
    domains, judges = _ordered({d for _, d in evals}), _judges(evals)
    lines: list[str] = []
    if evals:
        lines += ["**Per-domain proof table**: PCA / valid format without forcing (held-out pairs, both orders, greedy; "
                  f"{', '.join(NO_TOOL)}: tool use, where the right rate is 0)", "",
                  "| judge | " + " | ".join(domains) + " |", "|---" * (len(domains) + 1) + "|"]
        for j in judges:
            cells = []
            for d in domains:
                f = evals.get((j, d))
                if f is None:
                    cells.append("–")
                elif d in NO_TOOL:
                    cells.append(f"{_fmt(f.get('position_consistent_accuracy'))} / {_fmt(f.get('valid_format_rate'))}"
                                 f" (tools {_fmt(f.get('tool_use_rate'))})")
                else:
                    cells.append(f"{_fmt(f.get('position_consistent_accuracy'))} / {_fmt(f.get('valid_format_rate'))}")
            lines.append(f"| {LABELS.get(j, j)} | " + " | ".join(cells) + " |")
        lines.append("")
    for d in domains:
        n = next((f.get("n_pairs") for (_, dd), f in evals.items() if dd == d), None)
        lines += [f"**{d}** ({n} held-out pairs, both orders, greedy)", "",
                  "| judge | " + " | ".join(c[1] for c in COLUMNS) + " |", "|---" * (len(COLUMNS) + 1) + "|"]
        for j in judges:
            f = evals.get((j, d))
            if f is not None:
                lines.append(f"| {LABELS.get(j, j)} | " + " | ".join(_fmt(f.get(c[0])) for c in COLUMNS) + " |")
        lines.append("")
    zero = _by_prefix(records, "zero").get("")
    rounds = [r for r in (zero or {}).get("result", {}).get("rounds", []) if r.get("sampling")]
    if rounds:
        lines += ["**TIR-Judge-Zero rounds** (rejection sampling on the training rows after each RL phase)", "",
                  "| round | RL reward | " + " | ".join(k[1] for k in ZERO_KEYS) + " |", "|---" * (len(ZERO_KEYS) + 2) + "|"]
        for r in rounds:
            lines.append(f"| {r['round']} | {_fmt((r.get('rl') or {}).get('reward'))} | "
                         + " | ".join(_fmt(r["sampling"].get(k[0])) for k in ZERO_KEYS) + " |")
        lines.append("")
    data = _by_prefix(records, "data").get("")
    if data:
        res = data["result"]
        lines += ["**Data** (pairs per domain: training mixture / held-out)", "", "| domain | train | held-out |",
                  "|---|---|---|"]
        for d in _ordered(set(res.get("train", {})) | set(res.get("held_out", {}))):
            lines.append(f"| {d} | {res.get('train', {}).get(d, 0)} | {res.get('held_out', {}).get(d, 0)} |")
        lines.append("")
    lines += stage_table(records)
    return "\n".join(lines) + "\n"


def plots(records: list[dict[str, Any]], out: Path) -> list[Path]:
    """``generalise_pca.png`` (PCA per judge, grouped by domain) and, with Zero rounds,
    ``generalise_zero_rounds.png`` (sampling rates per round). Returns the PNG paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files: list[Path] = []
    evals = _evals(records)
    domains, judges = _ordered({d for _, d in evals}), _judges(evals)
    if evals:
        fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(domains)), 3.6))
        w = 0.8 / len(judges)
        for i, j in enumerate(judges):
            vals = [(evals.get((j, d)) or {}).get("position_consistent_accuracy") or 0 for d in domains]
            ax.bar([k + i * w for k in range(len(domains))], vals, w, label=LABELS.get(j, j))
        ax.set_xticks([k + 0.4 - w / 2 for k in range(len(domains))], domains, rotation=25, ha="right", fontsize=7)
        ax.set_ylabel("position-consistent accuracy")
        ax.set_ylim(0, 1)
        ax.legend(fontsize=6)
        fig.tight_layout()
        files.append(out / "generalise_pca.png")
        fig.savefig(files[-1], dpi=100)
        plt.close(fig)
    zero = _by_prefix(records, "zero").get("")
    rounds = [r for r in (zero or {}).get("result", {}).get("rounds", []) if r.get("sampling")]
    if rounds:
        fig, ax = plt.subplots(figsize=(5, 3.4))
        for key, label in ZERO_KEYS[:4]:
            ax.plot([r["round"] for r in rounds], [r["sampling"].get(key) or 0 for r in rounds], marker="o", label=label)
        ax.set_xlabel("Zero round")
        ax.set_ylabel("rate (sampled trajectories)")
        ax.set_ylim(0, 1)
        ax.legend(fontsize=7)
        fig.tight_layout()
        files.append(out / "generalise_zero_rounds.png")
        fig.savefig(files[-1], dpi=100)
        plt.close(fig)
    return files


def write_report(records: list[dict[str, Any]], out: Path, args: Any) -> Path:
    """Write ``<out>/results.md`` (the ``docs/results.md`` section, between :data:`START` and :data:`END`)
    and the plots; returns the markdown's path."""
    pngs = plots(records, out)
    listing = "\n".join(f"    {c}" for c in _commands(out, args.command))
    links = "\n".join(f"![{p.stem}](figures/{p.name})" for p in pngs)
    path = out / "results.md"
    path.write_text(f"{START}\n## Judges that generalise: one tool-using judge on a mixture (issue 23)\n\n"
                    "Reproduce (alone on an idle machine; the commands that filled this run directory, in order, each "
                    f"resuming it: finished stages are skipped):\n\n{listing}\n\n{tables(records)}\n{links}\n{END}\n")
    return path
