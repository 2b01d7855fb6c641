"""Page data of arena, audit and policy-study directories.

* arena (:mod:`judgerl.arena.run`): the leaderboard rows with their CIs, the matchups, and every
  game series in ``games/`` as an eval run whose pairs are rebuilt from the system files the summary
  names (:func:`judgerl.arena.matchup`);
* audit (:func:`judgerl.audit.write_audit`): the rates per kind and per step, and every flagged
  response split into pieces with its evidence spans marked (the responses are read back from the
  audited file the summary names);
* policy (:mod:`judgerl.train.curves`): the held-out train-judge vs gold points, the rollout points,
  and behind each held-out point the rollouts of ``heldout/step-N.jsonl``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import math

from judgerl.view.evalrun import eval_view
from judgerl.view.runs import RunDirError, object_field, read_json, read_jsonl_lines, run_file


def _resolve(p: str, base: Path) -> Path:
    path = Path(p)
    return path if path.is_absolute() or path.exists() else base / path


def _arena_pairs(summary: Mapping[str, Any], base: Path) -> Any:
    """``pairs_of`` for the arena's series: pairs rebuilt from the system files in the summary."""
    from judgerl.arena import load_system, matchup

    inputs = summary.get("inputs") or {}
    loaded: dict[str, Any] = {}

    def system(name: str) -> Any:
        if name not in loaded:
            entry = inputs.get(name)
            path = entry.get("path") if isinstance(entry, Mapping) else None
            if not path:
                raise ValueError(f"the arena summary names no file for system {name!r}")
            loaded[name] = load_system(f"{name}={_resolve(path, base)}", require_prompt=name == summary["baseline"])
        return loaded[name]

    def pairs_of(info: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
        try:
            sys_, opp = str(info["arena_system"]), str(info["arena_opponent"])
            base_s = system(summary["baseline"])
            m = matchup(base_s, system(sys_), None if opp == summary["baseline"] else system(opp))
        except (KeyError, OSError, ValueError) as e:
            return {}, f"could not rebuild this series' pairs from the system files: {e}"
        return {p.id: p for p in m.pairs}, ""

    return pairs_of


def arena_view(path: Path, name: str | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Page data of an arena directory and of its game series (eval runs).

    Returns:
        ``(arena, series)``: ``arena`` is ``{"type": "arena", "name", "path", "baseline", "confidence",
        "leaderboard", "matchups", "inputs", "config"}``; ``series`` the :func:`eval_view` of each
        ``games/<system>__vs__<opponent>/`` folder (in matchup order).
    """
    spath = path / "summary.json"
    summary = read_json(run_file(path, "summary.json"), {})
    matchups, inputs = object_field(summary, "matchups", spath), object_field(summary, "inputs", spath)
    board = summary.get("leaderboard") or []
    if not isinstance(board, list) or not all(isinstance(r, dict) for r in board):
        raise RunDirError(f"{spath}: field 'leaderboard' must be a list of objects")
    pairs_of = _arena_pairs(summary, path)
    series = []
    for label, m in matchups.items():
        if not isinstance(m, dict):
            raise RunDirError(f"{spath}: field 'matchups.{label}' must be an object, got {m!r:.80}")
        d = run_file(path, str(m.get("folder") or ""))  # a series folder outside the arena is refused
        if (d / "judgments.jsonl").is_file():
            series.append(eval_view(d, name=f"{name or path.name}: {label}", pairs_of=pairs_of))
    arena = {"type": "arena", "name": name or path.name, "path": str(path), "baseline": summary.get("baseline"),
             "confidence": summary.get("confidence", 0.95), "leaderboard": board,
             "matchups": matchups, "inputs": inputs,
             "config": object_field(summary, "config", spath), "strong_weight": summary.get("strong_weight")}
    return arena, series


def marked_pieces(text: str, evidence: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    """Split ``text`` at the evidence spans: ``[[text, [kinds…]], …]`` (an empty kinds list = unflagged).

    Spans are ``[start, end)`` character offsets (:class:`judgerl.audit.detectors.Evidence`); spans
    outside the text are clipped, overlapping spans give pieces carrying every kind that covers them.
    """
    cuts = {0, len(text)}
    spans = []
    for ev in evidence:
        s = max(0, min(len(text), _offset(ev, "start")))
        e = max(s, min(len(text), _offset(ev, "end")))
        spans.append((s, e, str(ev.get("kind", ""))))
        cuts |= {s, e}
    points = sorted(cuts)
    out: list[list[Any]] = []
    for s, e in zip(points, points[1:]):
        kinds = sorted({k for a, b, k in spans if a <= s and e <= b and a < b})
        if out and out[-1][1] == kinds:
            out[-1][0] += text[s:e]
        else:
            out.append([text[s:e], kinds])
    return out


def _offset(ev: Mapping[str, Any], key: str) -> int:
    """An evidence span's ``start`` / ``end`` (0 when absent); ValueError when not an integer."""
    v = ev.get(key, 0)
    if not isinstance(v, int) or isinstance(v, bool):
        raise ValueError(f"evidence field {key!r} must be an integer, got {v!r:.80}")
    return v


def _audit_row(row: Mapping[str, Any], where: str) -> None:
    """Raise RunDirError when an audit.jsonl row's ``flags`` / ``evidence`` have the wrong JSON types."""
    flags, ev = row.get("flags"), row.get("evidence")
    if flags is not None and (not isinstance(flags, list) or not all(isinstance(f, str) for f in flags)):
        raise RunDirError(f"{where}: field 'flags' must be a list of strings, got {flags!r:.80}")
    if ev is not None and (not isinstance(ev, list) or not all(isinstance(e, dict) for e in ev)):
        raise RunDirError(f"{where}: field 'evidence' must be a list of objects, got {ev!r:.80}")
    for e in ev or []:
        try:
            _offset(e, "start"), _offset(e, "end")
        except ValueError as err:
            raise RunDirError(f"{where}: {err}") from err


def audit_view(path: Path, name: str | None = None) -> dict[str, Any]:
    """Page data of an audit directory.

    Returns:
        ``{"type": "audit", "name", "path", "summary", "note", "items": [{"id", "step", "flags",
        "prompt", "pieces", "evidence"}]}`` with the flagged responses only; ``note`` says why response
        texts are missing when the audited file cannot be read.
    """
    from judgerl.audit import load_audit_records

    spath = path / "summary.json"
    summary = read_json(run_file(path, "summary.json"), {})
    info = object_field(summary, "info", spath)
    for key in ("counts", "rates", "by_step"):
        object_field(summary, key, spath)
    for step, v in object_field(summary, "by_step", spath).items():
        if not isinstance(v, dict) or not isinstance(v.get("rates"), dict):
            raise RunDirError(f"{spath}: field 'by_step.{step}' must be an object with 'rates', got {v!r:.80}")
    if not isinstance(summary.get("kinds") or [], list):
        raise RunDirError(f"{spath}: field 'kinds' must be a list, got {summary['kinds']!r:.80}")
    apath = run_file(path, "audit.jsonl")
    numbered = read_jsonl_lines(apath)
    for line, row in numbered:
        _audit_row(row, f"{apath}:{line}")
    rows = [r for _, r in numbered]
    texts: dict[str, Any] = {}
    note = ""
    if info.get("input"):
        try:
            recs, _ = load_audit_records(_resolve(str(info["input"]), path), info.get("field_map") or None,
                                         skip_invalid=True)
            texts = {r.id: r for r in recs}
        except (OSError, ValueError) as e:
            note = f"could not read the audited responses from {info['input']}: {e}"
    else:
        note = "summary.json names no input file; evidence texts only"
    items = []
    for row in rows:
        if not row.get("flags"):
            continue
        rec = texts.get(str(row.get("id")))
        ev = row.get("evidence") or []
        items.append({"id": str(row.get("id")), "step": row.get("step"), "flags": row["flags"],
                      "prompt": rec.prompt if rec is not None else None,
                      "pieces": marked_pieces(rec.response, ev) if rec is not None else None,
                      "evidence": [{"kind": e.get("kind"), "rule": e.get("rule"), "text": e.get("text")} for e in ev]})
    return {"type": "audit", "name": name or path.name, "path": str(path), "n": len(rows),
            "summary": {k: summary.get(k) for k in ("n", "kinds", "counts", "rates", "by_step", "n_prompt_missing",
                                                    "n_prompt_harmful")},
            "info": info, "note": note, "items": items}


def _finite_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _step_key(step: int | float) -> str:
    """A step as the page's script writes it (``String(2.0)`` is ``"2"``): the key of its rollouts and
    the N of ``heldout/step-N.jsonl``."""
    return str(int(step)) if isinstance(step, float) and step.is_integer() else str(step)


def policy_view(path: Path, name: str | None = None) -> dict[str, Any]:
    """Page data of a policy-study directory (``curves.jsonl``, ``heldout/step-N.jsonl``).

    Returns:
        ``{"type": "policy", "name", "path", "heldout": [curve records], "rollout": [curve records],
        "steps": {step: [held-out rows]}}``; each held-out row is ``{"id", "prompt", "response",
        "gold_score", "judge_score", "audit"}``.

    Raises:
        RunDirError: a curve record without a numeric ``step``.
    """
    cpath = run_file(path, "curves.jsonl")
    numbered = read_jsonl_lines(cpath)
    for line, r in numbered:
        if r.get("kind") == "heldout" and not _finite_number(r.get("step")):
            raise RunDirError(f"{cpath}:{line}: field 'step' must be a finite number, got {r.get('step')!r:.80}")
    records = [r for _, r in numbered]
    held = sorted((r for r in records if r.get("kind") == "heldout"), key=lambda r: r["step"])
    roll = sorted((r for r in records if r.get("kind") == "rollout" and _finite_number(r.get("step"))),
                  key=lambda r: r["step"])
    steps = {}
    for r in held:
        key = _step_key(r["step"])
        hpath = run_file(path, "heldout", f"step-{key}.jsonl")
        rows = read_jsonl_lines(hpath)
        for line, row in rows:
            if not isinstance(row.get("audit") or [], list):
                raise RunDirError(f"{hpath}:{line}: field 'audit' must be a list, got {row['audit']!r:.80}")
        steps[key] = [row for _, row in rows]
    return {"type": "policy", "name": name or path.name, "path": str(path), "heldout": held, "rollout": roll,
            "steps": steps}
