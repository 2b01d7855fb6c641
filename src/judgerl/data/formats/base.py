"""What every format adapter provides, plus the field helpers they share.

A format adapter is a :class:`Format`: a ``matches(record)`` test used by format detection (it
looks at a record's keys) and a ``convert(record, ctx)`` function turning one raw record into
zero or more :class:`~judgerl.types.PreferencePair` (RM-Bench gives 9 per record).
Converters report a bad field by raising :class:`~judgerl.data.errors.FieldError`; the loader
adds the file name and line/index.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judgerl.data.errors import FieldError
from judgerl.types import PreferencePair

_MISSING = object()


@dataclass(frozen=True)
class RecordContext:
    """Where a record comes from; passed to every converter.

    Attributes:
        path: The data file.
        stem: Dataset name derived from the file (see :func:`dataset_stem`), e.g. ``"natural"``.
        index: 0-based position of the record in the file.
        field_map: Canonical field -> record field, for the ``generic`` format (else ``None``).
        label_map: For ``generic`` with a ``label`` field: label value (as text) -> ``"first"``,
            ``"second"`` or ``"tie"`` (see :func:`judgerl.data.formats.generic.validate_label_map`).
    """

    path: Path
    stem: str
    index: int
    field_map: Mapping[str, str] | None = None
    label_map: Mapping[str, str] | None = None

    @property
    def default_id(self) -> str:
        """``"<stem>-<index>"``: the id of records that carry none of their own."""
        return f"{self.stem}-{self.index}"


@dataclass(frozen=True)
class Format:
    """One supported on-disk format.

    Attributes:
        name: Canonical name used by ``--format`` (``"llmbar"``, ``"hh-rlhf"``, …).
        description: The fields it expects, one line, for help texts and error messages.
        matches: True when a record's keys identify this format (``None`` = never auto-detected).
        convert: One raw record -> its preference pairs. Raises FieldError on a bad field.
    """

    name: str
    description: str
    matches: Callable[[Mapping[str, Any]], bool] | None
    convert: Callable[[Mapping[str, Any], RecordContext], list[PreferencePair]]


def dataset_stem(path: str | Path) -> str:
    """Dataset name from a file path: the file name without ``.gz``/``.jsonl``/``.json``/``.parquet``/``.csv``….

    Upstream repositories often name every file ``dataset.json`` / ``data.json`` inside a
    folder named after the subset (LLMBar: ``Natural/dataset.json``); then the lower-cased
    folder name is used instead.
    """
    p = Path(path)
    name = p.name
    for suffix in (".gz", ".jsonl", ".json", ".jsonlines", ".ndjson", ".parquet", ".pq", ".csv", ".tsv", ".arrow"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
    if name.lower() in {"dataset", "data"} and p.parent.name:
        return p.parent.name.lower()
    return name


def is_missing(value: Any) -> bool:
    """True for ``None`` and float NaN (what bare ``NaN`` tokens decode to)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def get_text(record: Mapping[str, Any], key: str, *, allow_empty: bool = True, coerce: bool = False) -> str:
    """The string in ``record[key]``.

    Args:
        allow_empty: Accept ``""`` (responses may legitimately be empty; prompts may not).
        coerce: Turn scalars (bool, int, finite float) into their ``str()`` — for files written
            by pandas, which turns a response reading ``True`` into the JSON boolean ``true``.

    Raises:
        FieldError: the key is absent, null/NaN, not a string (unless ``coerce``), or empty
            when ``allow_empty`` is False.
    """
    value = record.get(key, _MISSING)
    if value is _MISSING:
        raise FieldError(key, "is missing")
    if is_missing(value):
        raise FieldError(key, f"is {'NaN' if value is not None else 'null'}")
    if not isinstance(value, str):
        if coerce and isinstance(value, (bool, int, float)):
            value = str(value)
        else:
            raise FieldError(key, f"must be a string, got {_type_name(value)}")
    if not allow_empty and not value.strip():
        raise FieldError(key, "is empty")
    return value


def get_optional_text(record: Mapping[str, Any], key: str, default: str = "") -> str:
    """Like :func:`get_text` but an absent/null/NaN value gives ``default``."""
    value = record.get(key)
    if is_missing(value):
        return default
    if not isinstance(value, str):
        raise FieldError(key, f"must be a string, got {_type_name(value)}")
    return value


def get_id(record: Mapping[str, Any], key: str, ctx: RecordContext) -> str:
    """The record's own id from ``record[key]`` (string or integer), else ``ctx.default_id``.

    Raises:
        FieldError: the id is present but neither a non-empty string nor an integer.
    """
    value = record.get(key)
    if is_missing(value):
        return ctx.default_id
    if (
        isinstance(value, bool)
        or not isinstance(value, (str, int))
        or (isinstance(value, str) and not value.strip())
    ):
        raise FieldError(key, f"must be a non-empty string or an integer, got {value!r}")
    return str(value)


def as_int_label(value: Any) -> int | None:
    """An integer class label from ``1``, ``1.0`` (pandas) or ``"1"``; ``None`` if not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    return None


def get_label(record: Mapping[str, Any], key: str, allowed: Mapping[Any, Any]) -> Any:
    """Map ``record[key]`` through ``allowed`` (integer labels normalised by :func:`as_int_label`).

    A JSON ``true`` / ``false`` is never a label, although Python's ``True == 1`` would find
    it among integer labels (LLMBar and Auto-J files exported with boolean labels were read
    as labels 1 and 0).

    Raises:
        FieldError: absent, a boolean, or a value not among ``allowed`` (the message lists them).
    """
    value = record.get(key, _MISSING)
    if value is _MISSING:
        raise FieldError(key, "is missing")
    if isinstance(value, bool):
        choices = ", ".join(repr(k) for k in allowed)
        raise FieldError(
            key, f"must be one of {choices}, got {str(value).lower()} (a JSON boolean is not a label)"
        )
    norm = as_int_label(value)
    lookup = norm if norm is not None else (value.strip() if isinstance(value, str) else value)
    try:
        known = not is_missing(value) and lookup in allowed
    except TypeError:  # unhashable (object / array)
        known = False
    if not known:
        choices = ", ".join(repr(k) for k in allowed)
        raise FieldError(key, f"must be one of {choices}, got {value!r}")
    return allowed[lookup]  # type: ignore[index]


def get_score(record: Mapping[str, Any], key: str) -> float | None:
    """An optional numeric gold score (int, float or numeric string); absent/null/NaN -> None.

    Raises:
        FieldError: present but not a finite number.
    """
    value = record.get(key)
    if is_missing(value):
        return None
    if isinstance(value, bool):
        raise FieldError(key, f"must be a number, got {value!r}")
    try:
        score = float(value)
    except (TypeError, ValueError):
        raise FieldError(key, f"must be a number, got {value!r}") from None
    if not math.isfinite(score):
        raise FieldError(key, f"must be a finite number, got {value!r}")
    return score


_TRUE = {"true", "yes", "y", "1", "tie"}
_FALSE = {"false", "no", "n", "0", ""}


def get_bool(record: Mapping[str, Any], key: str) -> bool:
    """A flag: bool, 0/1, or ``"true"/"false"/"yes"/"no"``; absent/null/NaN -> False.

    Raises:
        FieldError: any other value.
    """
    value = record.get(key)
    if is_missing(value):
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise FieldError(key, f"must be a boolean (true/false, 1/0), got {value!r}")


def order_pair(first: str, second: str, winner: int | None) -> tuple[str, str]:
    """(chosen, rejected) from two responses and the 1-based winner (``None`` = tie: keep order)."""
    return (second, first) if winner == 2 else (first, second)


def _type_name(value: Any) -> str:
    return {dict: "an object", list: "an array", bool: "a boolean", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__
    )
