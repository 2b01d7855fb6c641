"""Any JSON / JSON Lines pair data, given a field mapping.

``field_map`` maps canonical fields to the record's fields, e.g.
``{"prompt": "question", "chosen": "good", "rejected": "bad", "source": "cat", "tie": "is_tie"}``.
``prompt``, ``chosen`` and ``rejected`` are required; ``id``, ``source``, ``tie``,
``chosen_score`` and ``rejected_score`` are optional. A record field may be a dotted path into
nested objects/arrays (``"meta.category"``, ``"responses.0"``); a key that literally contains a
dot is looked up first. Unmapped: id = ``"<stem>-<index>"``, source = the dataset stem,
tie = False, scores = None. Never auto-detected: pass ``field_map`` (CLI: ``--field k=v``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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

REQUIRED_FIELDS = ("prompt", "chosen", "rejected")
OPTIONAL_FIELDS = ("id", "source", "tie", "chosen_score", "rejected_score")
CANONICAL_FIELDS = REQUIRED_FIELDS + OPTIONAL_FIELDS


def validate_field_map(field_map: Mapping[str, str]) -> dict[str, str]:
    """Check a field mapping; return it as a plain dict.

    Raises:
        ValueError: an unknown canonical field, a required one missing, or an empty record field.
    """
    unknown = sorted(set(field_map) - set(CANONICAL_FIELDS))
    if unknown:
        raise ValueError(f"field map: unknown field(s) {unknown}; known: {', '.join(CANONICAL_FIELDS)}")
    missing = [k for k in REQUIRED_FIELDS if k not in field_map]
    if missing:
        raise ValueError(f"field map: required field(s) {missing} not mapped (e.g. --field prompt=question)")
    for canon, src in field_map.items():
        if not isinstance(src, str) or not src.strip():
            raise ValueError(f"field map: '{canon}' must map to a record field name, got {src!r}")
    return dict(field_map)


def resolve(record: Mapping[str, Any], path: str) -> Any:
    """``record[path]``, else follow a dotted path through objects and arrays; None if absent."""
    if path in record:
        return record[path]
    value: Any = record
    for part in path.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.lstrip("-").isdigit() and -len(value) <= int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value


def convert(record: Mapping[str, Any], ctx: RecordContext) -> list[PreferencePair]:
    fmap = ctx.field_map or {}
    # A flat view keyed by the *record's* field names, so errors name the user's fields.
    view = {src: resolve(record, src) for src in fmap.values()}
    view = {k: v for k, v in view.items() if v is not None or k in record}
    src = fmap.get
    return [
        PreferencePair(
            id=get_id(view, src("id"), ctx) if src("id") else ctx.default_id,
            prompt=get_text(view, fmap["prompt"], allow_empty=False),
            chosen=get_text(view, fmap["chosen"]),
            rejected=get_text(view, fmap["rejected"]),
            source=(get_optional_text(view, src("source")) if src("source") else "") or ctx.stem,
            tie=get_bool(view, src("tie")) if src("tie") else False,
            chosen_score=get_score(view, src("chosen_score")) if src("chosen_score") else None,
            rejected_score=get_score(view, src("rejected_score")) if src("rejected_score") else None,
        )
    ]


FORMAT = Format(
    "generic", "any fields, mapped with field_map / --field prompt=… chosen=… rejected=…", None, convert
)
