"""Files of an evaluation run: ``judgments.jsonl`` (append-only, resumable) and ``run.json``.

* ``run.json`` — the run configuration (the judge's :meth:`~judgerl.judge.Judge.config`, samples,
  seed); resuming into a directory whose configuration differs is refused
  (:class:`RunConfigMismatch`) unless the run is started over;
* ``judgments.jsonl`` — one record per judgment sample, appended in plan order and fsync-ed at
  least once per generation batch, so an interrupted run resumes where it stopped without losing
  or repeating a judgment (a torn last line from a crash is dropped and redone). A record whose
  generation failed (API error, filtered answer) has ``"final": false``: the next run of the same
  command makes that judgment again and its new record supersedes the old one.

One run writes a directory at a time: :class:`JudgmentWriter` holds an exclusive lock on
``judgments.jsonl`` (``flock``, released when the writer closes or its process dies), and a second
run of the same directory stops with :class:`RunInProgress` before it generates anything, truncates a
line the first is writing, or deletes its file (``--overwrite``).
"""

from __future__ import annotations

import json
import os
import shutil
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from judgerl.eval.plan import WorkUnit, pair_hash, prompt_hash

JUDGMENTS_FILE = "judgments.jsonl"
RUN_FILE = "run.json"
SUMMARY_FILE = "summary.json"
REPORT_FILE = "report.md"
PLOT_FILE = "accuracy_by_source.png"
#: run.json fields that must match to resume into an existing directory.
CONFIG_KEYS = ("model", "protocol", "samples", "seed", "sampling", "tools", "max_tool_rounds", "force_answer")
#: Values assumed for keys that older run.json files lack.
_CONFIG_DEFAULTS = {"force_answer": False}
#: Protocol options assumed when an older run.json's ``protocol`` lacks them.
_PROTOCOL_DEFAULTS = {"anti_hacking": False, "namespace": False, "measures": False}


class RunConfigMismatch(ValueError):
    """``out_dir`` holds a run with a different configuration (or different pairs under the same ids)."""


class RunInProgress(RunConfigMismatch):
    """Another process is writing ``judgments.jsonl`` in the same directory (a second run of it)."""


def _check_not_locked(path: Path, doing: str) -> None:
    """Raise :class:`RunInProgress` when a :class:`JudgmentWriter` (of any process) holds ``path``."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no flock (Windows): no protection
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise RunInProgress(f"{path} is being written by another run; refusing to {doing}. Wait for it to "
                            "finish (or stop it), or use another output directory") from None
    finally:
        os.close(fd)  # closing the descriptor also drops a lock taken here


def read_judgments(path: Path) -> list[dict[str, Any]]:
    """Read ``judgments.jsonl``, repairing a torn last line left by a crash.

    A last line that is not valid JSON (an interrupted write) is dropped and the file truncated
    to the last complete record, so appending continues cleanly.

    Returns:
        The records in file order ([] when the file does not exist).

    Raises:
        ValueError: a line other than the last is not a JSON object (names file and line).
    """
    if not path.exists():
        return []
    data = path.read_bytes()
    records: list[dict[str, Any]] = []
    offset = 0
    lines = data.split(b"\n")
    for lineno, raw in enumerate(lines, start=1):
        is_last = lineno == len(lines)
        end = offset + len(raw) + (0 if is_last else 1)
        if raw.strip():
            try:
                rec = json.loads(raw)
                if not isinstance(rec, dict):
                    raise ValueError("not a JSON object")
            except ValueError as e:
                rest_blank = all(not x.strip() for x in lines[lineno:])
                if rest_blank:
                    _check_not_locked(path, "truncate its last line")
                    warnings.warn(f"{path}:{lineno}: dropping a torn last line ({len(raw)} bytes) left by an "
                                  "interrupted run; it will be redone", stacklevel=2)
                    with open(path, "r+b") as f:
                        f.truncate(offset)
                    break
                raise ValueError(f"{path}:{lineno}: corrupt judgment record ({e}); fix or delete the line") from e
            records.append(rec)
        offset = end
    else:
        if data and not data.endswith(b"\n"):  # a complete last record whose newline was not written
            with open(path, "ab") as f:
                f.write(b"\n")
    return records


class JudgmentWriter:
    """Append-only writer of judgment records: one JSON line each.

    :meth:`write` appends and flushes one record (the OS has it: a killed process loses nothing);
    :meth:`sync` makes everything written durable (fsync: a power loss loses nothing). The writer
    holds an exclusive ``flock`` on the file while it is open.

    Raises:
        RunInProgress: another writer (another run of the same directory) holds the file.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._f = open(path, "a", encoding="utf-8")
        try:
            import fcntl
        except ImportError:  # pragma: no cover - no flock (Windows): no protection
            return
        try:
            fcntl.flock(self._f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._f.close()
            raise RunInProgress(f"{path} is being written by another run; wait for it to finish (or stop it), "
                                "or use another output directory") from None

    def write(self, record: Mapping[str, Any]) -> None:
        """Append one record and flush it to the OS."""
        self._f.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._f.flush()

    def sync(self) -> None:
        """fsync the file."""
        self._f.flush()
        os.fsync(self._f.fileno())

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> "JudgmentWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename (never half-written)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _config_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    diffs = []
    for k in CONFIG_KEYS:
        before, now = old.get(k, _CONFIG_DEFAULTS.get(k)), new.get(k, _CONFIG_DEFAULTS.get(k))
        if k == "protocol" and isinstance(before, Mapping) and isinstance(now, Mapping):
            before, now = {**_PROTOCOL_DEFAULTS, **before}, {**_PROTOCOL_DEFAULTS, **now}
        if before != now:
            diffs.append(f"{k}: {before!r} in run.json, {now!r} now")
    return diffs


def _clear_outputs(out: Path) -> None:
    _check_not_locked(out / JUDGMENTS_FILE, "overwrite it")
    for name in (JUDGMENTS_FILE, RUN_FILE, SUMMARY_FILE, REPORT_FILE, PLOT_FILE):
        p = out / name
        if p.is_file():
            p.unlink()
    shutil.rmtree(out / "plots", ignore_errors=True)


def run_config(judge_config: Mapping[str, Any], samples: int, seed: int) -> dict[str, Any]:
    """The configuration a run directory records and compares on resume: the judge's identity
    (:func:`judgerl.judge.identity.judge_config`) with the samples per item and the base seed."""
    return {**judge_config, "samples": samples, "seed": seed}


def _with_protocol_defaults(value: Any) -> Any:
    """``value`` with :data:`_PROTOCOL_DEFAULTS` under every ``"protocol"`` mapping, at any depth (a scorer's
    config nests its judge's)."""
    if isinstance(value, Mapping):
        return {k: ({**_PROTOCOL_DEFAULTS, **_with_protocol_defaults(v)} if k == "protocol" and isinstance(v, Mapping)
                    else _with_protocol_defaults(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_with_protocol_defaults(v) for v in value]
    return value


def whole_config_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """``[]`` when two run configurations are equal as JSON (protocol options an older run.json lacks taken at
    their defaults, :data:`_PROTOCOL_DEFAULTS`), else one line saying both (probe, label runs)."""
    new = json.loads(json.dumps(new, default=str))
    if _with_protocol_defaults(old) == _with_protocol_defaults(new):
        return []
    return [f"config {json.dumps(old, sort_keys=True)} in run.json, {json.dumps(new, sort_keys=True)} now"]


def check_resumable(out: Path, config: Mapping[str, Any], info: Mapping[str, Any], *, results: str = JUDGMENTS_FILE,
                    diff: Callable[[Mapping[str, Any], Mapping[str, Any]], list[str]] = _config_diff) -> bool:
    """Whether ``out`` holds a run that a run with ``config`` and ``info["data"]`` can resume (True), or no
    run yet (False); writes nothing. ``judgerl eval`` calls it before loading the model; probe and label runs
    through :func:`prepare_out_dir` with their own ``results`` file and ``diff`` (:func:`whole_config_diff`).

    Args:
        results: The results file that must not exist without a ``run.json``.
        diff: What differs between the saved and the new configuration, one line each (eval: the judge's
            identity keys with their defaults, :data:`CONFIG_KEYS`).

    Raises:
        RunConfigMismatch: the directory holds a run with another configuration or other data, an
            unreadable run.json, or results without a run.json (each names the path and what differs).
    """
    run_file = out / RUN_FILE
    if run_file.exists():
        try:
            saved = json.loads(run_file.read_text(encoding="utf-8"))
            old = saved["config"]
        except (ValueError, KeyError, TypeError) as e:
            raise RunConfigMismatch(f"{run_file}: unreadable run configuration ({e}); use overwrite") from e
        diffs = diff(old, config)
        old_data = (saved.get("info") or {}).get("data")
        if old_data and info.get("data") and old_data != info.get("data"):
            diffs.append(f"data: {old_data!r} in run.json, {info.get('data')!r} now")
        if diffs:
            raise RunConfigMismatch(
                f"{out} holds a run with a different configuration ({'; '.join(diffs)}). "
                "Use a new output directory, or overwrite (--overwrite / resume=False) to discard it."
            )
        return True
    if (out / results).exists():
        raise RunConfigMismatch(f"{out / results} exists without {RUN_FILE}; use overwrite to discard it")
    return False


def prepare_out_dir(out: Path, config: Mapping[str, Any], info: Mapping[str, Any], resume: bool, *,
                    results: str = JUDGMENTS_FILE, outputs: Sequence[str] | None = None,
                    diff: Callable[[Mapping[str, Any], Mapping[str, Any]], list[str]] = _config_diff) -> None:
    """Create ``out`` and its ``run.json``, or check that a run there can be resumed (:func:`check_resumable`):
    the one run-directory rule of eval, probe and label runs.

    Args:
        results, diff: See :func:`check_resumable`.
        outputs: The files a fresh run (``resume=False``) removes; default: the eval run's (and its plots).

    Raises:
        RunConfigMismatch: ``resume`` and the directory holds a run with another configuration or
            other data, an unreadable run.json, or results without a run.json.
    """
    out.mkdir(parents=True, exist_ok=True)
    run_file = out / RUN_FILE
    if not resume:
        if outputs is None:
            _clear_outputs(out)
        else:
            for name in (*outputs, RUN_FILE):
                (out / name).unlink(missing_ok=True)
    elif check_resumable(out, config, info, results=results, diff=diff):
        return
    from judgerl import __version__

    payload = {"config": config, "info": dict(info), "judgerl_version": __version__,
               "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    atomic_write_text(run_file, json.dumps(payload, indent=2, ensure_ascii=False, default=str) + "\n")


def index_existing(records: Sequence[Mapping[str, Any]], units: Mapping[tuple[str, str, int], WorkUnit],
                   build: Any, path: Path, seed_of: Any = None) -> dict[tuple[str, str, int], dict[str, Any]]:
    """Index existing records by (pair id, order, sample); refuse records whose pair or prompt changed.

    A final record is kept over any later duplicate; a non-final record (``"final": false``, a
    failed generation) is superseded by a later record of the same key.

    Args:
        records: The records of ``judgments.jsonl`` in file order.
        units: This run's units by key.
        build: ``f(unit) -> messages``, the prompt the judge would send for a unit now.
        path: The file, for error messages.
        seed_of: Optional ``f(unit) -> seed | None``, the sampling seed the judge gives a unit now;
            a record with another seed (another ``--seed``, an older judgerl) is refused.

    Raises:
        ValueError: a record lacks pair_id/order/sample, or its ``final`` is not a bool (names file
            and line).
        RunConfigMismatch: a pair's content or a unit's prompt differs from the recorded one.
    """
    done: dict[tuple[str, str, int], dict[str, Any]] = {}
    hashes: dict[str, str] = {}
    for i, r in enumerate(records, start=1):
        try:
            key = (str(r["pair_id"]), str(r["order"]), int(r["sample"]))
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"{path}:{i}: judgment record lacks pair_id/order/sample ({e})") from e
        dec = r.get("decision")
        if not isinstance(dec, Mapping) or not isinstance(dec.get("valid"), bool):
            raise ValueError(f"{path}:{i}: judgment record field 'decision' must be an object with a true/false "
                             f"'valid', got {dec!r:.80}")
        if not isinstance(r.get("final", True), bool):
            raise ValueError(f"{path}:{i}: judgment record field 'final' must be true or false, got {r['final']!r}")
        if key in done and done[key].get("final", True):
            warnings.warn(f"{path}:{i}: duplicate judgment {key}; keeping the first", stacklevel=2)
            continue
        unit = units.get(key)
        if unit is not None:
            ph = hashes.setdefault(unit.pair.id, pair_hash(unit.pair))
            if r.get("pair_hash") != ph:
                raise RunConfigMismatch(
                    f"{path}:{i}: pair {unit.pair.id!r} has different content than when it was judged; "
                    "the data changed — use a new output directory or overwrite"
                )
            if r.get("prompt_hash") != prompt_hash(build(unit)):
                raise RunConfigMismatch(
                    f"{path}:{i}: the prompt for {key} differs from the recorded one (protocol template "
                    "changed?); use a new output directory or overwrite"
                )
            if seed_of is not None and "seed" in r and r["seed"] != seed_of(unit):
                raise RunConfigMismatch(
                    f"{path}:{i}: the judgment {key} was sampled with seed {r['seed']!r}, not the seed this run "
                    f"derives ({seed_of(unit)!r}); use a new output directory or overwrite"
                )
        done[key] = dict(r)
    return done
