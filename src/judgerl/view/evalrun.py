"""Page data of an eval run directory: the summary, a small index of pairs to filter, and the
pairs' full details in chunks the page parses only when it shows them.

Per pair the index holds its id, source, content-level choice per order (``chosen`` / ``rejected`` /
``tie`` / None = invalid, from :func:`judgerl.eval.metrics.aggregate_pairs`, i.e. after voting over
samples) and the filter flags :data:`FLAGS`:

* ``correct``: every judgment (order) of the pair chose the chosen response; ``wrong``: some did not
  (ties and invalid judgments are wrong, as in accuracy); gold-tie pairs are neither (``gold_tie``);
* ``flipped``: both orders valid and their choices differ (the flip rate's numerator);
* ``invalid``: some sample's output is invalid; ``quoted``: some sample was voided because its
  answer region quotes a response under judgment (``quoted_answer``);
* ``forced``: some sample's answer was forced (``--force-answer``);
* ``tool_errors``: some sample's code execution failed.

The pairs' texts (prompt, chosen, rejected) are not in ``judgments.jsonl``: they are read from the
data file named in ``run.json`` (``info.data``; ``data`` overrides it) and checked against each
record's ``pair_hash``; a pair whose content changed since it was judged is shown with a warning.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from judgerl.eval.metrics import RecordError, aggregate_pairs
from judgerl.eval.plan import pair_hash
from judgerl.judge import JUDGE_INVALID_REASONS
from judgerl.protocols import INVALID_REASONS
from judgerl.types import PreferencePair
from judgerl.view.pieces import judgment_pieces
from judgerl.view.runs import RunDirError, latest_records, object_field, read_json, read_jsonl_lines, run_file

FLAGS = ("correct", "wrong", "flipped", "invalid", "forced", "quoted", "tool_errors", "gold_tie")
#: Pairs per details chunk (a chunk is parsed by the page the first time one of its pairs is shown).
CHUNK = 100
_SUMMARY_KEYS = ("kind", "n_pairs", "n_judgments", "n_samples", "accuracy", "accuracy_ci", "accuracy_valid_only",
                 "accuracy_first_order", "position_consistent_accuracy", "position_consistent_accuracy_ci",
                 "flip_rate", "n_flip_pairs", "tie_rate", "invalid_rate", "judgment_invalid_rate", "position_a_rate",
                 "truncation_rate", "mean_completion_tokens", "forced_answer_rate", "tool_use_rate",
                 "tool_error_rate", "mean_tool_rounds", "krippendorff_alpha", "spearman", "kendall",
                 "invalid_reasons", "by_source", "n_failed")


def invalid_reason_text(reason: str | None) -> str:
    """A sentence saying what an ``invalid_reason`` means ("" for None; the code itself when unknown)."""
    if not reason:
        return ""
    return JUDGE_INVALID_REASONS.get(reason) or INVALID_REASONS.get(reason) or reason


def _sample_view(r: Mapping[str, Any]) -> dict[str, Any]:
    d = r["decision"]
    traj = r.get("trajectory") if isinstance(r.get("trajectory"), Mapping) else {}
    out: dict[str, Any] = {
        "sample": r.get("sample", 0), "valid": bool(d.get("valid")), "choice": r.get("choice"),
        "correct": r.get("correct"), "verdict": d.get("verdict"), "scores": d.get("scores"),
        "ranking": d.get("ranking"), "label": d.get("label"), "reason": d.get("invalid_reason"),
        "reason_text": invalid_reason_text(d.get("invalid_reason")), "forced": bool(r.get("forced_answer")),
        "finish": r.get("finish_reason"), "tokens": r.get("completion_tokens"),
        "tool_calls": int(traj.get("tool_calls") or 0), "tool_errors": int(traj.get("tool_errors") or 0),
        "error": r.get("error") or traj.get("error"), "final": r.get("final", True),
        "chosen_index": r.get("chosen_index"),
    }
    try:
        out["pieces"] = judgment_pieces(r)
    except (ValueError, TypeError, KeyError) as e:  # a malformed trajectory: the raw output, uncoloured
        out["pieces"] = [["answer", str(r.get("raw_output") or "")]]
        out["note"] = f"trajectory not shown: {e}"
    return out


def _check_summary(summary: Mapping[str, Any], path: Path) -> None:
    """Raise RunDirError when the summary fields the page walks into have the wrong JSON type."""
    for src, m in object_field(summary, "by_source", path).items():
        if not isinstance(m, dict):
            raise RunDirError(f"{path}: field 'by_source.{src}' must be an object, got {m!r:.80}")
    object_field(summary, "invalid_reasons", path)


def pair_flags(choices: Mapping[str, str | None], samples: Sequence[Mapping[str, Any]], gold_tie: bool,
               kind: str) -> list[str]:
    """The filter flags (:data:`FLAGS`) of one pair.

    Args:
        choices: Order -> voted choice (None = invalid) from :func:`~judgerl.eval.metrics.aggregate_pairs`.
        samples: The pair's judgment records.
        gold_tie: The pair has no gold preference.
        kind: The protocol kind (``pointwise`` pairs cannot flip).
    """
    flags = []
    vals = list(choices.values())
    if gold_tie:
        flags.append("gold_tie")
    elif vals and all(c == "chosen" for c in vals):
        flags.append("correct")
    else:
        flags.append("wrong")
    if kind != "pointwise" and len(vals) == 2 and None not in vals and vals[0] != vals[1]:
        flags.append("flipped")
    if any(not s["decision"].get("valid") for s in samples):
        flags.append("invalid")
    if any(s.get("forced_answer") for s in samples):
        flags.append("forced")
    if any(s["decision"].get("invalid_reason") == "quoted_answer" for s in samples):
        flags.append("quoted")
    if any(int((s.get("trajectory") or {}).get("tool_errors") or 0) for s in samples):
        flags.append("tool_errors")
    return flags


def load_run_pairs(info: Mapping[str, Any], data: Path | None, base: Path) -> tuple[dict[str, PreferencePair], str]:
    """The run's pairs by id, read from ``data`` or the run's ``info.data``; ``({}, why)`` when unreadable.

    Returns:
        ``(pairs, note)``: ``note`` is "" when the file was read, else why the texts are missing.

    Raises:
        RunDirError: ``info.data`` / ``info.format`` is not a string.
    """
    from judgerl.data import DataFormatError, load_pairs

    for field in ("data", "format"):
        if info.get(field) is not None and not isinstance(info[field], str):
            raise RunDirError(f"{base / 'run.json'}: field 'info.{field}' must be a string, got {info[field]!r:.80}")
    path = data if data is not None else (Path(info["data"]) if info.get("data") else None)
    if path is None:
        return {}, "run.json names no data file (pass --data)"
    if not path.is_absolute():
        path = base / path
    try:
        loaded = load_pairs(path, format=None if data is not None else info.get("format"), skip_invalid=True)
    except (DataFormatError, OSError, ValueError) as e:
        return {}, f"could not read the pairs from {path}: {e}"
    return {p.id: p for p in loaded.pairs}, ""


def eval_view(path: Path, *, data: Path | None = None, name: str | None = None,
              pairs_of: Callable[[Mapping[str, Any]], tuple[dict[str, PreferencePair], str]] | None = None
              ) -> dict[str, Any]:
    """Page data of the eval run in ``path``.

    Args:
        path: The run directory (``run.json``, ``judgments.jsonl``, ``summary.json``).
        data: The preference-data file to show the pairs' texts from (default: run.json's).
        name: Tab title (default: the directory name).
        pairs_of: ``f(run.json info) -> (pairs by id, note)`` replacing the data-file lookup (arena
            series rebuild their pairs from the system files).

    Returns:
        ``{"type": "eval", "name", "path", "config", "summary", "note", "kind", "orders", "sources",
        "index": [{"id", "src", "flags", "choices", "first"}], "chunk": CHUNK, "chunks": [[pair details]]}``
        (chunks of :data:`CHUNK` pairs, in index order).

    Raises:
        RunDirError: malformed files (names the file and line / record).
    """
    run = read_json(run_file(path, "run.json"), {})
    info, config = object_field(run, "info", path / "run.json"), object_field(run, "config", path / "run.json")
    jpath = run_file(path, "judgments.jsonl")
    lines = latest_records(read_jsonl_lines(jpath), jpath)
    records = [r for _, r in lines]
    try:
        kind, outcomes = aggregate_pairs(records) if records else ("pairwise", [])
    except RecordError as e:  # "record <index>: ..." -> the file's line
        m = re.match(r"record (\d+): (.*)", str(e), re.S)
        where = f"{jpath}:{lines[int(m.group(1))][0]}: {m.group(2)}" if m else f"{jpath}: {e}"
        raise RunDirError(where) from e
    except (TypeError, ValueError, IndexError) as e:  # e.g. a score that is not a number
        raise RunDirError(f"{jpath}: malformed judgment records ({e})") from e
    pairs, note = pairs_of(info) if pairs_of is not None else load_run_pairs(info, data, path)
    by_pair: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by_pair.setdefault(str(r["pair_id"]), []).append(r)
    orders = ["chosen", "rejected"] if kind == "pointwise" else ["AB", "BA"]
    index, details, changed = [], [], 0
    for o in outcomes:
        recs = by_pair[o.pair_id]
        choices = dict(sorted(o.judgments.items(), key=lambda kv: orders.index(kv[0]) if kv[0] in orders else 9))
        index.append({"id": o.pair_id, "src": o.source, "flags": pair_flags(choices, recs, o.gold_tie, kind),
                      "choices": choices, "first": o.first_order})
        pair = pairs.get(o.pair_id)
        det: dict[str, Any] = {"id": o.pair_id, "judgments": {}}
        if pair is not None:
            det.update(prompt=pair.prompt, chosen=pair.chosen, rejected=pair.rejected)
            if recs[0].get("pair_hash") and recs[0]["pair_hash"] != pair_hash(pair):
                det["warning"] = "the data file's pair differs from the one judged (the data changed since)"
                changed += 1
        elif recs[0].get("messages"):
            det["messages"] = recs[0]["messages"]
        for r in sorted(recs, key=lambda r: (orders.index(r["order"]) if r["order"] in orders else 9, r["sample"])):
            det["judgments"].setdefault(r["order"], []).append(_sample_view(r))
        details.append(det)
    if changed:
        warnings.warn(f"{path}: {changed} pairs changed in the data file since they were judged", stacklevel=2)
    summary = read_json(run_file(path, "summary.json"), {})
    _check_summary(summary, path / "summary.json")
    return {
        "type": "eval", "name": name or path.name, "path": str(path),
        "config": config or object_field(summary, "config", path / "summary.json"),
        "info": info, "summary": {k: summary[k] for k in _SUMMARY_KEYS if k in summary}, "note": note,
        "kind": kind, "orders": orders, "sources": sorted({o.source for o in outcomes}),
        "index": index, "chunk": CHUNK, "chunks": [details[i:i + CHUNK] for i in range(0, len(details), CHUNK)],
    }


def compare_view(a: Mapping[str, Any], b: Mapping[str, Any], ia: int, ib: int) -> dict[str, Any]:
    """Two eval runs' pairs side by side, the pairs where they disagree first.

    Two runs disagree on a pair when some order's voted choice differs, or one is correct and the
    other not. Pairs judged by one run only are listed last.

    Args:
        a, b: :func:`eval_view` results; ``ia``, ``ib``: their positions in the page's run list.

    Returns:
        ``{"type": "compare", "name", "a", "b", "n_both", "n_disagree", "rows": [{"id", "src", "ia",
        "ib", "disagree", "fa", "fb"}]}`` where ``ia`` / ``ib`` index the runs' ``index`` lists (None
        when absent) and ``fa`` / ``fb`` are the pair's flags in each run.
    """
    pos_a = {r["id"]: i for i, r in enumerate(a["index"])}
    pos_b = {r["id"]: i for i, r in enumerate(b["index"])}
    rows = []
    for pid in list(pos_a) + [p for p in pos_b if p not in pos_a]:
        ra = a["index"][pos_a[pid]] if pid in pos_a else None
        rb = b["index"][pos_b[pid]] if pid in pos_b else None
        both = ra is not None and rb is not None
        disagree = both and (ra["choices"] != rb["choices"]
                             or ("correct" in ra["flags"]) != ("correct" in rb["flags"]))
        rows.append({"id": pid, "src": (ra or rb)["src"], "ia": pos_a.get(pid), "ib": pos_b.get(pid),
                     "disagree": bool(disagree), "both": both,
                     "fa": ra["flags"] if ra else None, "fb": rb["flags"] if rb else None})
    rows.sort(key=lambda r: (not r["disagree"], not r["both"]))
    return {"type": "compare", "name": f"{a['name']} vs {b['name']}", "a": ia, "b": ib,
            "n_both": sum(r["both"] for r in rows), "n_disagree": sum(r["disagree"] for r in rows), "rows": rows}
