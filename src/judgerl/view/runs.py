"""Find what a run directory holds and read its files, read-only.

A directory is one of four kinds, told apart by the files judgerl writes there:

* ``eval`` -- ``run.json`` + ``judgments.jsonl`` (:mod:`judgerl.eval.store`), with ``summary.json``;
* ``arena`` -- ``summary.json`` with a ``leaderboard`` (:mod:`judgerl.arena.run`), series in ``games/``;
* ``audit`` -- ``audit.jsonl`` + ``summary.json`` (:func:`judgerl.audit.write_audit`);
* ``policy`` -- ``curves.jsonl`` (:mod:`judgerl.train.curves`), held-out rollouts in ``heldout/``.

Reading never changes a file: unlike :func:`judgerl.eval.store.read_judgments` (which truncates a torn
last line so a run can resume), a torn last line is skipped here, so a run still being written can be
viewed safely.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any, Mapping

from judgerl.data.io import iter_records

KINDS = ("eval", "arena", "audit", "policy")


class RunDirError(ValueError):
    """A directory is not a judgerl run, or one of its files is malformed (the message names it)."""


def run_kind(path: Path) -> str:
    """The kind of run directory ``path`` is (one of :data:`KINDS`).

    Raises:
        RunDirError: ``path`` is not a directory, or holds none of the files of a known kind.
    """
    if not path.is_dir():
        raise RunDirError(f"{path}: not a directory")
    if (path / "judgments.jsonl").is_file():
        return "eval"
    if (path / "audit.jsonl").is_file():
        return "audit"
    if (path / "curves.jsonl").is_file():
        return "policy"
    summary = run_file(path, "summary.json")
    if summary.is_file() and "leaderboard" in read_json(summary, {}):
        return "arena"
    raise RunDirError(f"{path}: not a judgerl run directory (no judgments.jsonl, audit.jsonl, curves.jsonl, or "
                      "an arena summary.json)")


def run_file(root: Path, *parts: str) -> Path:
    """The path ``root/parts...`` of a file of run directory ``root``, checked to stay inside it.

    A run folder may be shared (a tarball keeps symlinks), so its files are read only where they
    resolve inside the run directory: a symlink (or a ``..`` / absolute name from a summary) leading
    elsewhere is refused rather than embedded in a page that may be sent on.

    Raises:
        RunDirError: the path resolves outside ``root`` (names both).
    """
    path = root.joinpath(*parts)
    real, base = path.resolve(), root.resolve()
    if real != base and base not in real.parents:
        raise RunDirError(f"{path}: resolves to {real}, outside the run directory {base}; refusing to read it")
    return path


def read_json(path: Path, default: Any = None) -> Any:
    """The JSON object in ``path``; ``default`` when the file does not exist.

    Raises:
        RunDirError: the file is not UTF-8 JSON, or its value is not an object (names the file and line).
    """
    if not path.is_file():
        return default
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise RunDirError(f"{path}: not UTF-8 text (byte {e.start})") from e
    except ValueError as e:
        raise RunDirError(f"{path}: invalid JSON ({e})") from e
    if not isinstance(value, dict):
        raise RunDirError(f"{path}: expected a JSON object, got {type(value).__name__}")
    return value


def object_field(parent: Mapping[str, Any], field: str, path: Path) -> dict[str, Any]:
    """``parent[field]`` when it is a JSON object, {} when absent or null.

    Raises:
        RunDirError: it is present and not an object (names the file and field).
    """
    value = parent.get(field)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RunDirError(f"{path}: field {field!r} must be an object, got {value!r:.80}")
    return value


def _non_utf8_line(path: Path) -> str:
    """Where the first non-UTF-8 byte of ``path`` is, as ``line N, byte B``."""
    for lineno, line in enumerate(path.read_bytes().split(b"\n"), start=1):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as e:
            return f"line {lineno}, byte {e.start + 1} of the line"
    return "unknown line"


def read_jsonl_lines(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` of each record of a JSON Lines file in file order ([] when absent),
    never modifying it (line numbers are 1-based; a JSON-array file gives indices).

    A torn last line (a run interrupted, or still writing) is skipped with a warning.

    Raises:
        RunDirError: a line other than the last is not a JSON object, or the file is not UTF-8
            (names the file and line).
    """
    from judgerl.data import DataFormatError

    if not path.is_file():
        return []
    try:
        raws = list(iter_records(path))
    except DataFormatError as e:
        if "UTF-8" in e.reason:
            raise RunDirError(f"{path}:{_non_utf8_line(path)}: not UTF-8 text") from e
        raise RunDirError(f"{path}{':' + e.location if e.location else ''}: {e.reason}") from e
    out = []
    for i, raw in enumerate(raws):
        if raw.error is not None or not isinstance(raw.value, dict):
            why = raw.error or f"not a JSON object ({type(raw.value).__name__})"
            if i == len(raws) - 1:
                warnings.warn(f"{path}:{raw.location}: skipping a torn last line ({why})", stacklevel=2)
                break
            raise RunDirError(f"{path}:{raw.location}: {why}")
        out.append((int(raw.location.split()[-1]), raw.value))
    return out


#: Optional judgment-record fields the viewer reads, with the JSON types they must have when present.
_FIELD_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "raw_output": ((str,), "a string"), "messages": ((list,), "a list"), "trajectory": ((dict,), "an object"),
    "gold_scores": ((list,), "a list"), "decision.scores": ((list,), "a list"), "decision.ranking": ((list,), "a list"),
    "decision.verdict": ((str,), "a string"), "decision.invalid_reason": ((str,), "a string"),
    "trajectory.tool_calls": ((int,), "an integer"), "trajectory.tool_errors": ((int,), "an integer"),
    "trajectory.segments": ((list,), "a list"),
}


def _check_fields(r: dict[str, Any], where: str) -> None:
    """Raise RunDirError when a field of :data:`_FIELD_TYPES` present in ``r`` has the wrong type."""
    for name, (types, what) in _FIELD_TYPES.items():
        head, _, tail = name.partition(".")
        value = r.get(head)
        if tail:
            value = value.get(tail) if isinstance(value, dict) else None
        if value is not None and (not isinstance(value, types) or isinstance(value, bool)):
            raise RunDirError(f"{where}: judgment record field {name!r} must be {what}, got {value!r:.80}")
    for m in r.get("messages") or []:
        if not isinstance(m, dict):
            raise RunDirError(f"{where}: judgment record field 'messages' must hold objects, got {m!r:.80}")


def latest_records(records: list[tuple[int, dict[str, Any]]], path: Path) -> list[tuple[int, dict[str, Any]]]:
    """The records that count, with the eval runner's resume rule: per (pair, order, sample) the first
    final record, else the last non-final one (a failed generation superseded by its retry).

    Args:
        records: ``(line number, record)`` from :func:`read_jsonl_lines`; ``path`` names the file in errors.

    Returns:
        ``(line number, record)`` of the records that count, in first-seen order; each record a copy
        with ``pair_id`` as a string and ``sample`` as an int.

    Raises:
        RunDirError: a record lacks ``pair_id`` / ``order`` / ``sample`` or a ``decision`` object, or
            a field the viewer shows has the wrong type (names the file, line and field).
    """
    done: dict[tuple[str, str, int], tuple[int, dict[str, Any]]] = {}
    for line, r in records:
        where = f"{path}:{line}"
        try:
            pid, sample = r["pair_id"], r["sample"]
            if isinstance(pid, (dict, list, bool)) or pid is None or isinstance(sample, (bool, float)):
                raise TypeError(f"pair_id {pid!r:.80}, sample {sample!r:.80}")
            key = (str(pid), str(r["order"]), int(sample))
        except (KeyError, TypeError, ValueError) as e:
            raise RunDirError(f"{where}: judgment record lacks a valid pair_id/order/sample ({e})") from e
        if not isinstance(r.get("decision"), dict):
            raise RunDirError(f"{where}: judgment record field 'decision' must be an object")
        _check_fields(r, where)
        old = done.get(key)
        if old is None or not old[1].get("final", True):
            done[key] = (line, {**r, "pair_id": key[0], "sample": key[2]})
    return list(done.values())
