"""Label instruction–response records with a judge (LLM or programmatic gold): resumable, append-only.

The gold-judge framework of the judge-as-reward study ("Examining Reasoning LLMs-as-Judges in Non-Verifiable LLM Post-Training", 2025): a gold
judge scores instruction–response pairs 0-9; smaller judges are trained on its reasoning + scores and
checked for agreement with it (:mod:`judgerl.gold.agreement`).

Files in the output directory:

* ``run.json`` -- the scorer's configuration (:meth:`PointwiseScorer.config`) and the data file;
  resuming into a directory labelled with another configuration or data is refused
  (:class:`judgerl.eval.store.RunConfigMismatch`);
* ``labels.jsonl`` -- one record per labelled response, appended and fsync-ed per batch (a torn last
  line from a crash is dropped and redone): ``id, prompt, response, score, valid, invalid_reason,
  reasoning, mode, details, judge, item_hash, final``. ``reasoning`` is the judgment text (LLM judges)
  or the checker's report (gold), kept as an SFT target. A record whose generation failed for a
  retryable reason (API error) has ``final: false`` and is labelled again by the next run;
* ``summary.json`` -- counts, invalid rate, mean score and the score histogram.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from judgerl.data.errors import DataFormatError
from judgerl.eval.store import (JudgmentWriter, RunConfigMismatch, atomic_write_text, prepare_out_dir,
                                read_judgments, whole_config_diff)
from judgerl.judge.scorer import PointwiseScorer, ScoreItem
from judgerl.judge.defaults import DEFAULT_BATCH_SIZE

LABELS_FILE = "labels.jsonl"
SUMMARY_FILE = "summary.json"


@dataclass(frozen=True)
class LabelRecord:
    """One instruction–response record to label (``rubric``: shown to an LLM judge, or None)."""

    id: str
    prompt: str
    response: str
    rubric: str | None = None

    def item_hash(self) -> str:
        """SHA-256 (16 hex digits) of the prompt and response (and the rubric, when there is one): a resumed run
        refuses changed records."""
        texts = [self.prompt, self.response] + ([self.rubric] if self.rubric else [])
        blob = json.dumps(texts, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def load_label_records(path: str | Path, field_map: Mapping[str, str] | None = None, *,
                       skip_invalid: bool = False, rubric_field: str | None = None
                       ) -> tuple[list[LabelRecord], list[str]]:
    """Read instruction–response records (JSON array or JSON Lines, gzip allowed).

    Each record needs ``prompt`` and ``response`` strings; ``id`` (string or integer) defaults to the
    record's 0-based index. ``field_map`` maps these names to the record's fields (``{"prompt":
    "instruction"}``; dotted paths allowed), as :func:`judgerl.audit.load_audit_records` reads them.
    ``rubric_field`` names a record field holding each record's rubric (``judgerl label --rubric FIELD``).

    Returns:
        ``(records, errors)`` (``errors``: messages of skipped records with ``skip_invalid``).

    Raises:
        FileNotFoundError: no such file.
        DataFormatError: a bad record (names the file, the record and the field), a missing prompt or a
            duplicate id.
        ValueError: ``field_map`` names an unknown field.
    """
    from judgerl.audit import load_audit_records

    fmap = dict(field_map or {})
    unknown = sorted(set(fmap) - {"id", "prompt", "response"})
    if unknown:
        raise ValueError(f"--field: unknown field(s) {unknown}; known: id, prompt, response")
    raw, errors = load_audit_records(path, fmap, skip_invalid=skip_invalid)
    rubrics = _rubrics(path, fmap, rubric_field) if rubric_field else {}
    out: list[LabelRecord] = []
    seen: dict[str, int] = {}
    for n, r in enumerate(raw):
        try:
            if r.prompt is None:
                raise DataFormatError(path, f"record {n + 1} (id {r.id!r})", fmap.get("prompt", "prompt"),
                                      "is missing: a judge needs the instruction")
            if r.id in seen:
                raise DataFormatError(path, f"record {n + 1}", fmap.get("id", "id"),
                                      f"duplicate id {r.id!r} (also record {seen[r.id] + 1})")
            rubric = _rubric_of(rubrics, r) if rubric_field else None
            if isinstance(rubric, DataFormatError):
                raise rubric
        except DataFormatError as e:
            if not skip_invalid:
                raise
            errors.append(str(e))
            continue
        seen[r.id] = n
        out.append(LabelRecord(r.id, r.prompt, r.response, rubric))
    return out, errors


def _rubrics(path: str | Path, fmap: Mapping[str, str], rubric_field: str
             ) -> dict[str, list[tuple[Any, Any, str | DataFormatError]]]:
    """Record id -> ``(prompt, response, rubric)`` of every record with that id, in file order (ids as
    :func:`judgerl.audit.load_audit_records` makes them); the rubric is ``rubric_field``'s, or the
    :class:`DataFormatError` of a record without a usable one (names the file, record and field: raised, or
    skipped with ``skip_invalid``, by :func:`load_label_records`)."""
    from judgerl.data.formats.generic import resolve
    from judgerl.data.io import iter_records
    from judgerl.data.loaders import rubric_of_record

    out: dict[str, list[tuple[Any, Any, str | DataFormatError]]] = {}
    for raw in iter_records(path):
        if raw.error or not isinstance(raw.value, Mapping):
            continue  # reported by load_audit_records
        rid = str(raw.index if (rid := resolve(raw.value, fmap.get("id", "id"))) is None else rid)
        try:
            rubric: str | DataFormatError = rubric_of_record(raw.value, rubric_field, path, raw.location)
        except DataFormatError as e:
            rubric = e
        out.setdefault(rid, []).append((resolve(raw.value, fmap.get("prompt", "prompt")),
                                        resolve(raw.value, fmap.get("response", "response")), rubric))
    return out


def _rubric_of(rubrics: Mapping[str, list[tuple[Any, Any, str | DataFormatError]]], record: Any
               ) -> str | DataFormatError | None:
    """The rubric of the record ``load_audit_records`` kept: the first record of its id with its prompt and
    response (a skipped record of the same id does not lend it its rubric)."""
    found = rubrics.get(record.id) or []
    for prompt, response, rubric in found:
        if prompt == record.prompt and response == record.response:
            return rubric
    return found[0][2] if found else None


def ifeval_rubrics(records: Sequence[LabelRecord], ifeval_data: str | Path) -> list[LabelRecord]:
    """``records`` with the rubric derived from each prompt's IFEval instructions
    (:func:`judgerl.gold.rubric.ifeval_rubric`; ``--rubric ifeval``).

    Raises:
        DataFormatError: a prompt that is not one of the IFEval records (names its id).
    """
    import dataclasses

    from judgerl.gold.rubric import IFEvalRubrics

    rubrics = IFEvalRubrics.from_file(ifeval_data)
    out = []
    for r in records:
        text = rubrics.for_prompt(r.prompt)
        if text is None:
            raise DataFormatError(ifeval_data, f"record id {r.id!r}", "prompt", "is not one of the IFEval prompts "
                                  "(--rubric ifeval derives the rubric from its instructions)")
        out.append(dataclasses.replace(r, rubric=text))
    return out


def run_label(scorer: PointwiseScorer, records: Sequence[LabelRecord], out_dir: str | Path, *, resume: bool = True,
              batch_size: int = DEFAULT_BATCH_SIZE, info: Mapping[str, Any] | None = None,
              on_batch: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Label ``records`` with ``scorer`` into ``out_dir`` (see the module docstring for the files).

    Args:
        scorer: Any :class:`~judgerl.judge.scorer.PointwiseScorer` (``load_scorer``).
        records: What to label (unique ids).
        out_dir: Output directory.
        resume: Skip records already labelled there (same config and data); False starts over.
        batch_size: Records per ``score_batch`` call and per durable write.
        info: Extra run facts for ``run.json`` (``data``: the data file, compared on resume).
        on_batch: Progress callback ``f(done, total)`` after each batch.

    Returns:
        The summary (also written to ``summary.json``).

    Raises:
        RunConfigMismatch: ``out_dir`` holds labels of another config, data, or changed records.
        ValueError: ``batch_size`` < 1 or duplicate record ids.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    ids = [r.id for r in records]
    if len(set(ids)) != len(ids):
        dup = next(i for i, c in Counter(ids).items() if c > 1)
        raise ValueError(f"duplicate record id {dup!r}")
    out = Path(out_dir)
    prepare_out_dir(out, scorer.config(), dict(info or {}), resume, results=LABELS_FILE,
                    outputs=(LABELS_FILE, SUMMARY_FILE), diff=whole_config_diff)
    path = out / LABELS_FILE
    by_id = {r.id: r for r in records}
    done: dict[str, dict[str, Any]] = {}
    for lineno, rec in enumerate(read_judgments(path), start=1):
        rid = str(rec.get("id"))
        if rid in by_id and rec.get("item_hash") != by_id[rid].item_hash():
            raise RunConfigMismatch(f"{path}:{lineno}: record {rid!r} has a different prompt or response than when "
                                    "it was labelled; use a new --out directory or --overwrite")
        if rid in done and done[rid].get("final", True):
            continue
        done[rid] = rec
    todo = [r for r in records if not done.get(r.id, {}).get("final", False)]
    with JudgmentWriter(path) as writer:
        for start in range(0, len(todo), batch_size):
            chunk = todo[start : start + batch_size]
            scores = scorer.score_batch([ScoreItem(r.prompt, r.response, key=r.id, rubric=r.rubric) for r in chunk])
            for r, s in zip(chunk, scores):
                rec = {"id": r.id, "prompt": r.prompt, "response": r.response, "score": s.score, "valid": s.valid,
                       "invalid_reason": s.invalid_reason, "reasoning": s.reasoning, "mode": s.mode,
                       "details": dict(s.details), "judge": scorer.name, "item_hash": r.item_hash(),
                       "final": not s.retryable}
                if r.rubric:
                    rec["rubric"] = r.rubric
                writer.write(rec)
                done[r.id] = rec
            writer.sync()
            if on_batch is not None:
                on_batch(len(records) - sum(1 for r in records if not done.get(r.id, {}).get("final", False)),
                         len(records))
    summary = summarize_labels([done[r.id] for r in records if r.id in done], scorer)
    atomic_write_text(out / SUMMARY_FILE, json.dumps(summary, indent=2) + "\n")
    return summary


def summarize_labels(labels: Sequence[Mapping[str, Any]], scorer: PointwiseScorer | None = None) -> dict[str, Any]:
    """Counts, invalid rate (over labelled records), mean score (valid ones) and the score histogram."""
    valid = [lab for lab in labels if lab.get("valid")]
    scores = [float(lab["score"]) for lab in valid]
    reasons = Counter(str(lab.get("invalid_reason")) for lab in labels if not lab.get("valid"))
    hist = Counter(_key(s) for s in scores)
    out: dict[str, Any] = {
        "n": len(labels),
        "n_valid": len(valid),
        "invalid_rate": (len(labels) - len(valid)) / len(labels) if labels else None,
        "n_retry": sum(1 for lab in labels if not lab.get("final", True)),
        "mean_score": sum(scores) / len(scores) if scores else None,
        "histogram": dict(sorted(hist.items(), key=lambda kv: float(kv[0]))),
        "invalid_reasons": dict(reasons),
        "modes": dict(Counter(str(lab.get("mode")) for lab in labels)),
    }
    if scorer is not None:
        out["judge"] = scorer.name
        out["scale"] = list(scorer.scale)
        out["mode"] = scorer.mode
    return out


def read_labels(path: str | Path) -> dict[str, dict[str, Any]]:
    """The final label records of a label directory (or a ``labels.jsonl`` file), by id (last final wins).

    Raises:
        FileNotFoundError: no labels there.
        ValueError: a corrupt line (names the file and line).
    """
    p = Path(path)
    if p.is_dir():
        p = p / LABELS_FILE
    if not p.is_file():
        raise FileNotFoundError(f"no labels at {path} (expected a label directory or {LABELS_FILE})")
    out: dict[str, dict[str, Any]] = {}
    for rec in read_judgments(p):
        if rec.get("final", True):
            out[str(rec.get("id"))] = rec
    return out


def _key(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.2f}"


__all__ = ["LABELS_FILE", "LabelRecord", "ifeval_rubrics", "load_label_records", "read_labels", "run_label",
           "summarize_labels"]
