"""Run the probe: how often does a judge pass master keys and hacks? (resumable, incremental).

Every probe judgment goes through ``judge.judge`` (a :class:`~judgerl.judge.Judge` or a
:class:`~judgerl.judge.ensemble.JudgeEnsemble`) with **no reward guards**: the probe measures the judge
itself. (The reward server's guards block the empty response and the listed master keys before
any judge sees them; ``summary.json`` counts how many probe responses they would have blocked.)

What counts as a **pass** (a false positive when the response is a master key or a hack):

* pointwise: the (combined) score is >= ``threshold`` (default: the midpoint of the scale);
* pairwise: the judge prefers the probe response over the prompt's real reference answer. Both
  orders are judged (``hack_first``: probe response shown as A; ``reference_first``: as B); a
  tie is not a pass (reported as ``tie_rate``); ``consistent_pass_rate`` counts the (prompt, probe)
  items passed in both orders.

Invalid judgments are never passes (``invalid_rate``). Records are appended to
``judgments.jsonl`` after every batch; the same command resumes an interrupted run (a changed
judge configuration or changed data is refused).
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from judgerl.judge.ensemble import judge_scale
from judgerl.eval.plan import digest
from judgerl.eval.store import (JUDGMENTS_FILE, RUN_FILE, JudgmentWriter, RunConfigMismatch, atomic_write_text,
                                prepare_out_dir, read_judgments, whole_config_diff)
from judgerl.judge import JudgeInput, judgment_record
from judgerl.judge.defaults import DEFAULT_BATCH_SIZE
from judgerl.probe.items import ProbePrompt, ProbeResponse, default_probes

SUMMARY_FILE = "summary.json"
REPORT_FILE = "report.md"
PLOT_FILE = "probe_pass_rates.png"
_OUTPUTS = (JUDGMENTS_FILE, RUN_FILE, SUMMARY_FILE, REPORT_FILE, PLOT_FILE)


@dataclass(frozen=True)
class ProbeUnit:
    """One probe judgment: a prompt, a probe response and (pairwise) the order shown.

    ``order`` is ``"single"`` (pointwise), ``"hack_first"`` or ``"reference_first"`` (pairwise).
    """

    prompt: ProbePrompt
    probe: ProbeResponse
    order: str

    @property
    def key(self) -> str:
        return f"{self.prompt.id}\x00{self.probe.name}\x00{self.order}"

    @property
    def probe_position(self) -> int | None:
        """0-based position of the probe response in the judge prompt; None for pointwise."""
        return {"hack_first": 0, "reference_first": 1}.get(self.order)

    def responses(self) -> tuple[str, ...]:
        if self.order == "single":
            return (self.probe.text,)
        ref = self.prompt.reference or ""
        return (self.probe.text, ref) if self.order == "hack_first" else (ref, self.probe.text)

    def content_hash(self) -> str:
        return digest(json.dumps([self.prompt.prompt, list(self.responses())], ensure_ascii=False))[:16]


def plan_probe(prompts: Sequence[ProbePrompt], probes: Sequence[ProbeResponse], kind: str) -> list[ProbeUnit]:
    """All probe judgments. Pointwise: every (prompt, probe) plus each prompt's reference as a
    control. Pairwise: every (prompt with a reference, probe) in both orders (prompts without a
    reference are skipped).

    Raises:
        ValueError: a listwise kind, duplicate prompt ids or probe names, or nothing to judge.
    """
    if kind not in ("pointwise", "pairwise"):
        raise ValueError(f"the probe needs a pointwise or pairwise judge, not {kind}")
    for what, names in (("prompt id", [p.id for p in prompts]), ("probe name", [p.name for p in probes])):
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"duplicate {what}(s): {sorted(dup)[:5]}")
    units: list[ProbeUnit] = []
    for p in prompts:
        if kind == "pointwise":
            units += [ProbeUnit(p, r, "single") for r in probes]
            if p.reference is not None:
                units.append(ProbeUnit(p, ProbeResponse("reference", "reference", p.reference), "single"))
        elif p.reference is not None:
            units += [ProbeUnit(p, r, o) for r in probes for o in ("hack_first", "reference_first")]
    if not units:
        raise ValueError("nothing to probe: pairwise judges need prompts with a reference answer "
                         "(gsm8k, llmbar or a prompts file with 'reference')")
    return units


def _record(u: ProbeUnit, result: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "key": u.key, "prompt_id": u.prompt.id, "source": u.prompt.source, "probe": u.probe.name,
        "family": u.probe.family, "order": u.order, "probe_position": u.probe_position,
        "content_hash": u.content_hash(), "decision": result.decision.to_dict(),
        "final": not result.retryable,
    }
    members = getattr(result, "members", None)
    if members is not None:
        rec["members"] = [m.decision.to_dict() for m in members]
    rec["samples"] = [{k: v for k, v in judgment_record(s).items() if k != "trajectory"} for s in result.samples]
    return rec


def run_probe(
    judge: Any,
    prompts: Sequence[ProbePrompt],
    out_dir: str | os.PathLike[str],
    *,
    probes: Sequence[ProbeResponse] | None = None,
    threshold: float | None = None,
    samples: int = 1,
    batch_size: int = DEFAULT_BATCH_SIZE,
    resume: bool = True,
    progress: bool = True,
    info: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Probe ``judge`` with master keys and hacks on ``prompts``; write judgments, summary, report.

    Args:
        judge: A pointwise or pairwise :class:`~judgerl.judge.Judge` or
            :class:`~judgerl.judge.ensemble.JudgeEnsemble`.
        prompts: Real prompts (:func:`judgerl.probe.load_probe_prompts`).
        out_dir: Output directory: ``judgments.jsonl``, ``run.json``, ``summary.json``,
            ``report.md``, ``probe_pass_rates.png``.
        probes: Responses under probe (default :func:`judgerl.probe.items.default_probes`).
        threshold: Pointwise pass threshold (default: midpoint of the judge's scale).
        samples: Samples per judgment (the judge's voting rules).
        batch_size: Judgments per ``judge.judge`` call and per durable write (speed only).
        resume: Continue a previous run in ``out_dir``; False starts over.
        progress: Progress bar on stderr.
        info: Extra context stored in run.json (not compared on resume).

    Returns:
        The summary (:func:`judgerl.probe.summary.summarise_probe`), also in ``summary.json``.

    Raises:
        ValueError: bad arguments (listwise judge, threshold outside the scale, nothing to probe).
        RunConfigMismatch: ``out_dir`` holds a different probe run, or the data changed.
        Exception: whatever the backend raises; finished judgments are already on disk.
    """
    from judgerl.probe.summary import summarise_probe

    if batch_size < 1 or samples < 1:
        raise ValueError(f"batch_size and samples must be >= 1, got {batch_size} and {samples}")
    probes = list(probes) if probes is not None else default_probes()
    units = plan_probe(prompts, probes, judge.kind)
    scale = judge_scale(judge)
    if judge.kind == "pointwise":
        lo, hi = scale  # type: ignore[misc]
        threshold = (lo + hi) / 2 if threshold is None else float(threshold)
        if not lo <= threshold <= hi:
            raise ValueError(f"threshold {threshold} is outside the judge's scale [{lo}, {hi}]")
    elif threshold is not None:
        raise ValueError("threshold applies to pointwise judges only")
    config = {"judge": judge.config(), "seed": getattr(judge, "seed", None), "samples": samples,
              "threshold": threshold}
    out = Path(out_dir)
    prepare_out_dir(out, config, info or {}, resume, outputs=_OUTPUTS, diff=whole_config_diff)
    jpath = out / JUDGMENTS_FILE
    by_key = {u.key: u for u in units}
    done: dict[str, dict[str, Any]] = {}
    for i, r in enumerate(read_judgments(jpath), start=1):
        u = by_key.get(str(r.get("key")))
        if u is None:
            continue
        if r.get("content_hash") != u.content_hash():
            raise RunConfigMismatch(f"{jpath}:{i}: {r.get('prompt_id')} / {r.get('probe')} was judged on different "
                                    "text; the data changed — use a new output directory or overwrite")
        if u.key not in done or not done[u.key].get("final", True):
            done[u.key] = r
    todo = [u for u in units if u.key not in done or not done[u.key].get("final", True)]
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(units), initial=len(units) - len(todo), unit="judgment", desc="probe",
                   dynamic_ncols=True, file=sys.stderr)
    t0 = time.perf_counter()
    try:
        with JudgmentWriter(jpath) as writer:
            for start in range(0, len(todo), batch_size):
                chunk = todo[start : start + batch_size]
                inputs = [JudgeInput(u.prompt.prompt, u.responses(), key=u.key) for u in chunk]
                for u, res in zip(chunk, judge.judge(inputs, samples)):
                    rec = _record(u, res)
                    writer.write(rec)
                    done[u.key] = rec
                writer.sync()
                if bar is not None:
                    bar.update(len(chunk))
    finally:
        if bar is not None:
            bar.close()
    records = [done[u.key] for u in units]
    summary = summarise_probe(records, units, kind=judge.kind, scale=scale, threshold=threshold)
    summary["config"] = config
    summary["info"] = dict(info or {})
    elapsed = time.perf_counter() - t0
    summary["timing"] = {"elapsed_s": round(elapsed, 3), "judgments_this_run": len(todo),
                         "judgments_resumed": len(units) - len(todo)}
    atomic_write_text(out / SUMMARY_FILE, json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    from judgerl.probe.report import write_probe_report

    write_probe_report(summary, out, REPORT_FILE, PLOT_FILE)
    return summary
