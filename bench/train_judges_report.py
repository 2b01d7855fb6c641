"""Tables and plots of ``bench/bench_train_judges.py`` (from its stage records), and the docs section.

:func:`write_report` writes ``<out>/report.md`` and ``<out>/train_judges_*.png``; with ``docs`` it copies
the plots to ``docs/figures/`` and puts the report between the markers of its own section of
``docs/results.md`` (appended the first time, replaced afterwards; the rest of the file is untouched).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

START, END = "<!-- bench_train_judges:start -->", "<!-- bench_train_judges:end -->"
COLUMNS = (("valid_format_rate", "valid format"), ("accuracy", "accuracy"), ("accuracy_valid_only", "acc. among valid"),
           ("position_consistent_accuracy", "PCA"), ("flip_rate", "flip rate"), ("tool_use_rate", "tool use"))
LABELS = {
    "base": "base (plain)", "base-forced": "base + forced answer", "pav-sft": "distilled SFT (PaV)",
    "pav-grpo": "SFT + J1 GRPO (PaV, verdict + consistency)", "pav-verdict": "SFT + GRPO, verdict reward only",
    "pos-sft": "PoS, SFT only", "pos": "PoS from pairwise supervision (SFT + GRPO)", "tir-sft": "TIR-Judge Distill, SFT only",
    "tir": "TIR-Judge (Distill: SFT + GRPO)", "zero": "TIR-Judge-Zero",
}


def _fmt(v: Any) -> str:
    return "–" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)


def _by_prefix(records: list[dict[str, Any]], prefix: str) -> dict[str, dict[str, Any]]:
    return {r["stage"][len(prefix):]: r for r in records if r["stage"].startswith(prefix)}


def tables(records: list[dict[str, Any]]) -> str:
    """The markdown of the main table (per held-out set), test-time scaling, consistency, cost, stages."""
    evals = _by_prefix(records, "eval:")
    lines: list[str] = []
    order = ("arith", "arith-phrasing", "arith-attack", "gsm8k", "humaneval")
    sets = sorted({k.split(":")[1] for k in evals}, key=lambda s: order.index(s) if s in order else 9)
    for s in sets:
        n = next((evals[k]["result"].get("n_pairs") for k in evals if k.endswith(f":{s}")), None)
        lines += [f"**{s}** ({n} held-out pairs, both orders, greedy)", "",
                  "| judge | " + " | ".join(c[1] for c in COLUMNS) + " |", "|---" * (len(COLUMNS) + 1) + "|"]
        for judge, label in LABELS.items():
            rec = evals.get(f"{judge}:{s}")
            if rec is not None:
                lines.append(f"| {label} | " + " | ".join(_fmt(rec["result"].get(c[0])) for c in COLUMNS) + " |")
        lines.append("")
    tts = _by_prefix(records, "tts:")
    if tts:
        lines += ["**Test-time scaling** (held-out arithmetic, temperature 0.7; majority vote / mean score over N)", "",
                  "| judge | N | accuracy | PCA | flip rate | valid format |", "|---|---|---|---|---|---|"]
        for judge, rec in tts.items():
            for n, f in rec["result"].items():
                lines.append(f"| {LABELS.get(judge, judge)} | {n} | {_fmt(f['accuracy'])} | "
                             f"{_fmt(f['position_consistent_accuracy'])} | {_fmt(f['flip_rate'])} | {_fmt(f['valid_format_rate'])} |")
        lines.append("")
    a, b = evals.get("pav-grpo:arith"), evals.get("pav-verdict:arith")
    steps = {k: r["result"].get("global_step") for k, r in _by_prefix(records, "train:").items()}
    if a and b:
        lines += [f"**Consistency reward** (same SFT start, {steps.get('pav-verdict')} GRPO steps each, held-out arithmetic): "
                  f"flip rate {_fmt(b['result']['flip_rate'])} with the verdict reward only vs "
                  f"{_fmt(a['result']['flip_rate'])} with verdict + consistency; PCA {_fmt(b['result']['position_consistent_accuracy'])} "
                  f"vs {_fmt(a['result']['position_consistent_accuracy'])}.", ""]
    cost = _by_prefix(records, "cost").get("")
    if cost and cost["result"].get("ratio") is not None:
        c = cost["result"]
        lines += [f"**TIR step cost** (same GRPO batch, 8 rollouts per step): TIR {c['tir']['step_time_s']:.1f} s/step "
                  f"(mean completion {c['tir']['mean_length']:.0f} tokens) vs no-tool {c['pav']['step_time_s']:.1f} s/step "
                  f"({c['pav']['mean_length']:.0f} tokens): ratio {c['ratio']:.2f}"
                  + "".join(f"; steps with {k} DAPO resampling round(s) ({c['tir']['by_rounds'][k]['steps']} TIR, "
                            f"{c['pav']['by_rounds'][k]['steps']} no-tool): {v:.2f}"
                            for k, v in (c.get("ratio_equal_rounds") or {}).items()) + ".", ""]
    lines += stage_table(records)
    return "\n".join(lines) + "\n"


def stage_table(records: list[dict[str, Any]]) -> list[str]:
    """The markdown lines of the stage table: wall time (min), 1-min load average before -> after, and
    for a training stage its GRPO steps or Zero rounds (and whether the time limit stopped it)."""
    lines = ["**Stages** (wall time, load average before -> after)", "", "| stage | wall (min) | load | result |",
             "|---|---|---|---|"]
    for r in records:
        res = r["result"]
        brief = ""
        if isinstance(res, dict) and "rounds" in res:
            brief = f"{len(res['rounds'])} Zero rounds" + (", stopped by the time limit" if res.get("stopped_early") else "")
        elif isinstance(res, dict) and "global_step" in res:
            brief = f"{res['global_step']} GRPO steps" + (", stopped by the time limit" if res.get("stopped_early") else "")
        lines.append(f"| {r['stage']} | {r['wall_s'] / 60:.1f} | {r['loadavg_before'][0]:.2f} -> {r['loadavg_after'][0]:.2f} | {brief} |")
    return lines


def plots(records: list[dict[str, Any]], out: Path) -> list[Path]:
    """PCA per judge per set; test-time scaling curves. Returns the PNG paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    evals = _by_prefix(records, "eval:")
    sets = sorted({k.split(":")[1] for k in evals})
    judges = [j for j in LABELS if any(k.startswith(f"{j}:") for k in evals)]
    if judges and sets:
        fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(judges)), 3.6))
        w = 0.8 / len(sets)
        for i, s in enumerate(sets):
            vals = [(evals.get(f"{j}:{s}") or {}).get("result", {}).get("position_consistent_accuracy") or 0 for j in judges]
            ax.bar([k + i * w for k in range(len(judges))], vals, w, label=s)
        ax.set_xticks([k + 0.4 - w / 2 for k in range(len(judges))], [LABELS[j].split(" (")[0] for j in judges],
                      rotation=25, ha="right", fontsize=7)
        ax.set_ylabel("position-consistent accuracy")
        ax.set_ylim(0, 1)
        ax.legend(fontsize=7)
        fig.tight_layout()
        files.append(out / "train_judges_pca.png")
        fig.savefig(files[-1], dpi=100)
        plt.close(fig)
    tts = _by_prefix(records, "tts:")
    if tts:
        fig, ax = plt.subplots(figsize=(5, 3.4))
        for judge, rec in tts.items():
            ns = sorted(rec["result"], key=int)
            ax.plot([int(n) for n in ns], [rec["result"][n]["position_consistent_accuracy"] or 0 for n in ns],
                    marker="o", label=LABELS.get(judge, judge))
        ax.set_xscale("log", base=2)
        ax.set_xlabel("samples N")
        ax.set_ylabel("PCA")
        ax.legend(fontsize=7)
        fig.tight_layout()
        files.append(out / "train_judges_tts.png")
        fig.savefig(files[-1], dpi=100)
        plt.close(fig)
    return files


def _commands(out: Path, cmd: str) -> list[str]:
    """The commands that wrote to ``out`` (``<out>/commands.txt``, one per line), ``cmd`` appended
    when it is not the last one (``--write-docs`` left out: it only copies the report)."""
    cmd = cmd.replace(" --write-docs", "")
    f = out / "commands.txt"
    cmds = [c for c in f.read_text().splitlines() if c.strip()] if f.is_file() else []
    if not cmds or cmds[-1] != cmd:
        cmds.append(cmd)
        f.write_text("\n".join(cmds) + "\n")
    return cmds


def write_report(records: list[dict[str, Any]], out: Path, args: Any, docs: Path | None = None) -> Path:
    """Write ``<out>/report.md`` (+ plots); with ``docs``, also the section of ``docs/results.md``."""
    pngs = plots(records, out)
    cmd = getattr(args, "command", None) or f"python bench/bench_train_judges.py --out {args.out} --budget-min {args.budget_min:g}"
    cmds = _commands(out, cmd)
    listing = "\n".join(f"    {c}" for c in cmds)
    body = tables(records)
    report = out / "report.md"
    report.write_text(f"# Trained judges vs base\n\nCommands (in order, each resuming the same directory):\n\n{listing}\n\n{body}")
    if docs is not None:
        fig_dir = docs / "figures"
        fig_dir.mkdir(parents=True, exist_ok=True)
        links = []
        for p in pngs:
            shutil.copy2(p, fig_dir / p.name)
            links.append(f"![{p.stem}](figures/{p.name})")
        section = (f"{START}\n## Trained judges vs their base (issue 10)\n\n"
                   "Reproduce (alone on an idle machine; the commands that filled this run directory, in order, "
                   "each resuming it: finished stages are skipped; `--write-docs` on the last one writes this "
                   f"section):\n\n{listing}\n\n{body}\n" + "\n".join(links) + f"\n{END}\n")
        results = docs / "results.md"
        text = results.read_text() if results.is_file() else "# Results\n"
        if START in text and END in text:
            text = re.sub(re.escape(START) + ".*?" + re.escape(END) + "\n?", lambda m: section, text, flags=re.S)
        else:
            text = text.rstrip("\n") + "\n\n" + section
        results.write_text(text)
    return report
