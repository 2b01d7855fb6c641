"""The canonical judgerl JSON Lines written by :func:`judgerl.data.write_pairs_jsonl`.

One ``PreferencePair.to_dict()`` per line: ``id, prompt, chosen, rejected, source, tie,
chosen_score, rejected_score, meta, rubric`` (``rubric``: null or absent = none). Detected by the presence of ``id, prompt, chosen,
rejected, tie``. Every field is validated, so a hand-edited file gets the same clear errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judgerl.data.errors import FieldError
from judgerl.data.formats.base import (
    Format,
    RecordContext,
    get_bool,
    get_id,
    get_optional_text,
    get_score,
    get_text,
)
from judgerl.types import PreferencePair

_KEYS = {"id", "prompt", "chosen", "rejected", "tie"}


def matches(record: Mapping[str, Any]) -> bool:
    return record.keys() >= _KEYS


def convert(record: Mapping[str, Any], ctx: RecordContext) -> list[PreferencePair]:
    meta = record.get("meta")
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise FieldError("meta", f"must be an object, got {type(meta).__name__}")
    rubric = record.get("rubric")
    if rubric is not None and not isinstance(rubric, str):
        raise FieldError("rubric", f"must be a string or null (the prompt's rubric), got {rubric!r:.60}")
    rubric = rubric if rubric and rubric.strip() else None  # blank = no rubric, as every protocol's build reads it
    tie = record.get("tie")
    if tie is not None and not isinstance(tie, bool):
        raise FieldError("tie", f"must be true or false, got {tie!r}")
    return [
        PreferencePair(
            id=get_id(record, "id", ctx),
            prompt=get_text(record, "prompt", allow_empty=False),
            chosen=get_text(record, "chosen"),
            rejected=get_text(record, "rejected"),
            source=get_optional_text(record, "source"),
            tie=get_bool(record, "tie"),
            chosen_score=get_score(record, "chosen_score"),
            rejected_score=get_score(record, "rejected_score"),
            meta=meta,
            rubric=rubric,
        )
    ]


FORMAT = Format(
    "judgerl",
    "canonical JSONL: id, prompt, chosen, rejected, source, tie, chosen_score, rejected_score, meta, rubric",
    matches,
    convert,
)
