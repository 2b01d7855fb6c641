"""Arena inputs: one file of responses per system, matched to the baseline's by ``id``.

Format: a JSON Lines file (or a JSON array; gzip allowed) with one record per prompt::

    {"id": "q1", "prompt": "What is 2+2?", "response": "4"}

* ``id`` (string or integer, unique in the file) matches a system's response to the baseline's;
* ``prompt`` is required in the baseline file; in a system file it is optional, and when given it
  must equal the baseline's prompt for that id (whitespace-insensitive) — a mismatch is an error
  naming the file, line and field, so outputs of two different prompt sets are never compared;
* ``response`` (string, may be empty) is the system's answer.

``--field CANONICAL=RECORD_FIELD`` maps other names (dotted paths allowed), e.g. ``--field
prompt=question --field response=output.text``. A system is named after its file (``dataset_stem``)
or ``NAME=PATH``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from judgerl.data.errors import DataFormatError
from judgerl.data.formats.base import dataset_stem
from judgerl.data.formats.generic import resolve
from judgerl.data.io import iter_records
from judgerl.types import PreferencePair

ARENA_FIELDS = ("id", "prompt", "response")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,99}$")


@dataclass(frozen=True)
class SystemOutputs:
    """The responses of one system.

    Attributes:
        name: The system's name (also its folder name under ``games/``).
        path: The file read.
        responses: id -> response, in file order.
        prompts: id -> prompt (None where the record had none).
        locations: id -> ``"line N"`` / ``"index N"`` (for error messages).
    """

    name: str
    path: str
    responses: dict[str, str] = field(default_factory=dict)
    prompts: dict[str, str | None] = field(default_factory=dict)
    locations: dict[str, str] = field(default_factory=dict)


def split_spec(spec: str) -> tuple[str | None, str]:
    """``"NAME=PATH"`` -> (NAME, PATH); a plain path -> (None, PATH). A ``=`` inside a path that
    exists as given is not a separator."""
    name, sep, path = spec.partition("=")
    if not sep or Path(spec).exists():
        return None, spec
    return name.strip(), path


def check_name(name: str, where: str) -> str:
    """Validate a system name (letters, digits, ``._+-``; starts with a letter or digit).

    Raises:
        ValueError: an unsafe or empty name (it becomes a folder name).
    """
    if not _NAME_RE.match(name):
        raise ValueError(f"{where}: system name {name!r} must be 1-100 letters, digits or ._+- and start with a "
                         "letter or digit (use NAME=PATH)")
    return name


def load_system(spec: str | Path, field_map: Mapping[str, str] | None = None, *,
                require_prompt: bool = False) -> SystemOutputs:
    """Read one system's responses (format: module docstring).

    Args:
        spec: ``PATH`` or ``NAME=PATH``.
        field_map: CANONICAL -> record field (dotted paths allowed) for ``id``, ``prompt``, ``response``.
        require_prompt: Every record needs a ``prompt`` (the baseline).

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: an unknown ``field_map`` key, a bad system name, an empty file.
        DataFormatError: a record that is not an object, a missing / non-string ``response``, a
            missing prompt where required, a bad or duplicate ``id`` (names file, line and field).
    """
    name, path = split_spec(str(spec))
    fmap = dict(field_map or {})
    unknown = sorted(set(fmap) - set(ARENA_FIELDS))
    if unknown:
        raise ValueError(f"--field: unknown field(s) {unknown}; known: {', '.join(ARENA_FIELDS)}")
    src = {k: fmap.get(k, k) for k in ARENA_FIELDS}
    name = check_name(name if name is not None else dataset_stem(path), path)
    out = SystemOutputs(name=name, path=path)
    for raw in iter_records(path):
        loc = raw.location
        if raw.error:
            raise DataFormatError(path, loc, None, raw.error)
        rec = raw.value
        if not isinstance(rec, Mapping):
            raise DataFormatError(path, loc, None, f"must be a JSON object, got {type(rec).__name__}")
        rid = resolve(rec, src["id"])
        if rid is None:
            raise DataFormatError(path, loc, src["id"], "is missing (each record needs an id to match systems)")
        if isinstance(rid, bool) or not isinstance(rid, (str, int)) or not str(rid).strip():
            raise DataFormatError(path, loc, src["id"], f"must be a non-empty string or an integer, got {rid!r}")
        rid = str(rid)
        if rid in out.responses:
            raise DataFormatError(path, loc, src["id"], f"duplicate id {rid!r} (first at {out.locations[rid]})")
        response = resolve(rec, src["response"])
        if not isinstance(response, str):
            raise DataFormatError(path, loc, src["response"], "is missing" if response is None
                                  else f"must be a string, got {type(response).__name__}")
        prompt = resolve(rec, src["prompt"])
        if prompt is not None and not isinstance(prompt, str):
            raise DataFormatError(path, loc, src["prompt"], f"must be a string, got {type(prompt).__name__}")
        if require_prompt and (prompt is None or not prompt.strip()):
            raise DataFormatError(path, loc, src["prompt"], "is missing (the baseline file needs every prompt)")
        out.responses[rid] = response
        out.prompts[rid] = prompt
        out.locations[rid] = loc
    if not out.responses:
        raise ValueError(f"{path}: no records")
    return out


@dataclass(frozen=True)
class Matchup:
    """The pairs of one game series: ``system`` (shown as chosen) against ``opponent`` (rejected).

    ``pairs`` use the baseline's ids and prompts; ``missing`` lists baseline ids one of the two
    systems has no response for (not judged); ``extra`` ids a system has that the baseline lacks.
    """

    system: str
    opponent: str
    pairs: list[PreferencePair]
    missing: list[str]
    extra: list[str]


def _check_prompt(s: SystemOutputs, base: SystemOutputs, rid: str, src_prompt: str) -> None:
    p = s.prompts.get(rid)
    if p is not None and " ".join(p.split()) != " ".join(src_prompt.split()):
        raise DataFormatError(s.path, s.locations[rid], "prompt",
                              f"differs from the baseline's prompt for id {rid!r} ({base.path} {base.locations[rid]})")


def matchup(baseline: SystemOutputs, system: SystemOutputs, opponent: SystemOutputs | None = None) -> Matchup:
    """Pairs of ``system`` against ``opponent`` (default: the baseline) on the baseline's prompts.

    Pair ``id`` = the prompt id, ``chosen`` = the system's response, ``rejected`` = the opponent's,
    ``source`` = the system's name (``chosen``/``rejected`` are positions, not a gold preference).

    Raises:
        DataFormatError: a system's prompt differs from the baseline's for the same id.
        ValueError: the two systems share no prompt id with the baseline.
    """
    opp = opponent if opponent is not None else baseline
    pairs, missing = [], []
    for rid, prompt in baseline.prompts.items():
        for s in (system, opp):
            if rid in s.responses:
                _check_prompt(s, baseline, rid, prompt or "")
        if rid not in system.responses or rid not in opp.responses:
            missing.append(rid)
            continue
        pairs.append(PreferencePair(id=rid, prompt=prompt or "", chosen=system.responses[rid],
                                    rejected=opp.responses[rid], source=system.name))
    extra = [rid for s in (system, opp) for rid in s.responses if rid not in baseline.responses]
    if not pairs:
        raise ValueError(f"{system.path} and {opp.path} share no prompt id with the baseline {baseline.path}")
    return Matchup(system.name, opp.name, pairs, missing, sorted(set(extra)))
