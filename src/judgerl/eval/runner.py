"""The resumable evaluation runner: judge every pair with a :class:`~judgerl.judge.Judge`, write
judgments incrementally, summarise.

:func:`run_eval` plans the work units (:mod:`judgerl.eval.plan`: both orders of every pair, N
samples each), skips the ones ``judgments.jsonl`` already holds (:mod:`judgerl.eval.store`), sends
the rest to ``judge.run`` in chunks of ``batch_size``, appends each record as soon as it and every
unit before it in the plan are done, and writes ``summary.json``, ``report.md`` and
``accuracy_by_source.png`` at the end.

Results depend on the seed and the data only: each sample's seed comes from (run seed, pair id,
order, sample index), so the same command gives the same ``judgments.jsonl`` whatever
``batch_size`` and wherever an interrupted run was resumed.
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Mapping, Sequence

from judgerl.eval.benchmarks import bench_fields, benchmark_scores
from judgerl.eval.metrics import compute_metrics, sample_choice
from judgerl.eval.plan import WorkUnit, pair_hash, plan_units, prompt_hash
from judgerl.eval.store import (
    JUDGMENTS_FILE,
    PLOT_FILE,
    REPORT_FILE,
    SUMMARY_FILE,
    JudgmentWriter,
    atomic_write_text,
    index_existing,
    prepare_out_dir,
    read_judgments,
    run_config,
)
from judgerl.backends.base import reporting_progress
from judgerl.judge.core import Judge, Judgment, judgment_record
from judgerl.judge.defaults import DEFAULT_BATCH_SIZE
from judgerl.types import Messages, PreferencePair


def make_record(unit: WorkUnit, judge: Judge, messages: Messages, j: Judgment, save_messages: bool) -> dict[str, Any]:
    """The ``judgments.jsonl`` record of one judgment sample (fields: :mod:`judgerl.eval.metrics`)."""
    p = unit.pair
    gold = None
    if p.chosen_score is not None and p.rejected_score is not None:
        gold = [float(p.chosen_score), float(p.rejected_score)]
    kind = judge.kind
    rec: dict[str, Any] = {
        "pair_id": p.id,
        "source": p.source,
        "kind": kind,
        "protocol": judge.protocol.name,
        "order": unit.order,
        "order_index": unit.order_index,
        "sample": unit.sample,
        "chosen_index": unit.chosen_index,
        "gold_tie": bool(p.tie),
        "gold_scores": gold,
        "pair_hash": pair_hash(p),
        "prompt_hash": prompt_hash(messages),
        "seed": j.seed,
        "final": not j.retryable,
    }
    if p.meta.get("identical_responses"):
        rec["identical_responses"] = True
    if p.meta.get("difficulty"):
        rec["difficulty"] = str(p.meta["difficulty"])
    if bench_fields(p):
        rec["bench"] = bench_fields(p)
    rec.update(judgment_record(j))
    if kind == "pointwise":
        rec["choice"] = None
        rec["correct"] = None
    else:
        choice = sample_choice(rec)
        rec["choice"] = choice
        rec["correct"] = None if (p.tie or choice is None) else choice == "chosen"
    if save_messages:
        rec["messages"] = [dict(m) for m in messages]
    return rec


class _OrderedSink:
    """Writes the records of one chunk in plan order as soon as a contiguous prefix is done."""

    def __init__(self, units: Sequence[WorkUnit], writer: JudgmentWriter, done: dict, progress: Any) -> None:
        self.units = units
        self.writer = writer
        self.done = done
        self.progress = progress
        self.ready: dict[int, dict[str, Any]] = {}
        self.next = 0

    def add(self, i: int, record: dict[str, Any]) -> None:
        self.ready[i] = record
        if self.progress is not None:
            graded = record["kind"] != "pointwise" and not record["gold_tie"]
            self.progress.on_finished(record["completion_tokens"], (record["correct"] is True) if graded else None,
                                      record["decision"].get("valid", True))
        while self.next in self.ready:
            rec = self.ready.pop(self.next)
            self.writer.write(rec)
            self.done[self.units[self.next].key] = rec
            self.next += 1


def run_eval(
    judge: Judge,
    pairs: Sequence[PreferencePair],
    out_dir: str | os.PathLike[str],
    *,
    samples: int = 1,
    resume: bool = True,
    progress: bool = True,
    batch_size: int = DEFAULT_BATCH_SIZE,
    save_messages: bool = False,
    info: Mapping[str, Any] | None = None,
    write_report: bool = True,
) -> dict[str, Any]:
    """Judge ``pairs`` with ``judge``, resumably, and write the summary and report.

    Args:
        judge: The :class:`~judgerl.judge.Judge` (protocol, backend, sampling, tools, forcing);
            ``judge.seed`` decides the first order of every pair and every sampling seed.
        pairs: The pairs (unique ids). Pairs with ``tie=True`` are judged but excluded from accuracy.
        out_dir: Output directory (created). See :mod:`judgerl.eval.store` for its files.
        samples: Judgment samples per (pair, order) (test-time scaling; majority vote / mean score).
        resume: Continue a previous run in ``out_dir`` (same configuration required); judgments
            whose generation failed there (``final: false``) are made again. False discards
            previous outputs in ``out_dir`` and starts over.
        progress: Show progress on stderr while generating (:mod:`judgerl.judge.progress`): tokens
            generated of the expected total, judgments started and finished, the running accuracy
            and invalid count, time left from the token rate; judgments only for backends that
            report no tokens.
        batch_size: Judgment samples per ``judge.run`` call. The backend batches inside it (the hf
            backend decodes up to its own ``batch_size`` rows at once; finished rows leave and queued
            prompts join, so a call larger than that keeps the decode batch full). Records are written
            as they finish; this changes speed, never the results.
        save_messages: Also store the full prompt messages in every record (the hash is always stored).
        info: Extra JSON-serialisable context stored in run.json (data path, limit, …); not compared
            on resume.
        write_report: Also write report.md and the per-source plot.

    Returns:
        The summary dict written to ``summary.json``: :func:`judgerl.eval.metrics.compute_metrics`
        over this run's pairs plus ``forced_answer_rate`` (with forcing), ``n_retry`` (judgments
        to make again because their generation failed), ``config``, ``info``, ``timing``, ``files``.

    Raises:
        ValueError: bad arguments, duplicate pair ids, no pairs, corrupt judgments.jsonl.
        RunConfigMismatch: ``out_dir`` holds a different run (config, data or prompts differ).
        Exception: whatever the backend raises; finished judgments are already on disk.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if not pairs:
        raise ValueError("no pairs to evaluate")
    if samples > 1 and judge.params.temperature == 0:
        warnings.warn(f"samples={samples} with temperature 0: greedy samples are identical", stacklevel=2)
    units = plan_units(pairs, judge.kind, samples, judge.seed)
    by_key = {u.key: u for u in units}
    config = run_config(judge.config(), samples, judge.seed)
    out = Path(out_dir)
    prepare_out_dir(out, config, info or {}, resume)
    jpath = out / JUDGMENTS_FILE

    def build(u: WorkUnit) -> Messages:
        return judge.build(u.pair.prompt, u.responses(), u.pair.rubric)

    done = index_existing(read_judgments(jpath), by_key, build, jpath,
                          seed_of=lambda u: judge.sample_seed(u.seed_key, u.sample))
    todo = [u for u in units if u.key not in done or not done[u.key].get("final", True)]
    bar = tracker = None
    if progress:
        from judgerl.judge.progress import GenerationProgress, ProgressBar

        tracker = GenerationProgress(len(todo), judge.params.max_new_tokens)
        bar = ProgressBar(tracker, f"eval {judge.protocol.name}", sys.stderr, resumed=len(units) - len(todo))
    t0 = time.perf_counter()
    try:
        with JudgmentWriter(jpath) as writer, reporting_progress(tracker):
            for start in range(0, len(todo), batch_size):
                chunk = todo[start : start + batch_size]
                messages = [build(u) for u in chunk]
                requests = [judge.request(m, u.responses(), u.seed_key, u.sample, u.pair.prompt) for u, m in zip(chunk, messages)]
                sink = _OrderedSink(chunk, writer, done, tracker)
                judge.run(requests, on_done=lambda i, j: sink.add(i, make_record(chunk[i], judge, messages[i], j,
                                                                                  save_messages)))
                writer.sync()
    finally:
        if bar is not None:
            bar.close()
    elapsed = time.perf_counter() - t0
    return _summarise(judge, units, done, out, len(todo), elapsed, config, info, write_report)


def _summarise(judge: Judge, units: Sequence[WorkUnit], done: Mapping, out: Path, n_new: int, elapsed: float,
               config: dict, info: Mapping[str, Any] | None, write_report: bool) -> dict[str, Any]:
    run_records = [done[u.key] for u in units]
    summary: dict[str, Any] = compute_metrics(run_records, tools=judge.tools)
    if judge.force_answer:
        summary["forced_answer_rate"] = sum(bool(r.get("forced_answer")) for r in run_records) / len(run_records)
    summary["n_retry"] = sum(not r.get("final", True) for r in run_records)
    benchmark = benchmark_scores(run_records)  # official scores of the benchmarks the pairs come from
    if benchmark:
        summary["benchmark"] = benchmark
    n_identical = len({r["pair_id"] for r in run_records if r.get("identical_responses") and not r.get("gold_tie")})
    if n_identical:
        summary["n_identical_response_pairs"] = n_identical
    from judgerl.audit.judged import audit_pairs  # reward-hacking flags of the judged responses

    summary["audit"] = audit_pairs(list({u.pair.id: u.pair for u in units}.values()))
    summary["config"] = config
    summary["info"] = dict(info or {})
    summary["timing"] = {
        "elapsed_s": round(elapsed, 3),
        "judgments_this_run": n_new,
        "judgments_resumed": len(units) - n_new,
        "judgments_per_s": round(n_new / elapsed, 3) if elapsed > 0 and n_new else None,
    }
    summary["files"] = {"judgments": JUDGMENTS_FILE, "summary": SUMMARY_FILE}
    if write_report:
        summary["files"].update(report=REPORT_FILE, plot=PLOT_FILE)
    atomic_write_text(out / SUMMARY_FILE, json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    if write_report:
        from judgerl.eval.report import write_report as _write_report

        _write_report(summary, out)
    return summary
