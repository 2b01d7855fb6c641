"""Any JSON / JSON Lines pair data, given a field mapping.

``field_map`` maps canonical fields to the record's fields, e.g.
``{"prompt": "question", "chosen": "good", "rejected": "bad", "source": "cat", "tie": "is_tie"}``.
``prompt``, ``chosen`` and ``rejected`` are required; ``id``, ``source``, ``tie``,
``chosen_score`` and ``rejected_score`` are optional. A record field may be a dotted path into
nested objects/arrays (``"meta.category"``, ``"responses.0"``); a key that literally contains a
dot is looked up first. Unmapped: id = ``"<stem>-<index>"``, source = the dataset stem,
tie = False, scores = None. Never auto-detected: pass ``field_map`` (CLI: ``--field k=v``).

Labelled pairs: instead of ``chosen`` / ``rejected``, map ``first``, ``second`` and ``label`` and
declare what each label value means with ``label_map`` (CLI: ``--label-map VALUE=first|second|tie``),
e.g. HelpSteer3 read as generic data::

    --field prompt=context --field first=response1 --field second=response2 --field label=overall_preference
    --label-map -3=first --label-map -2=first --label-map -1=first --label-map 0=tie \
    --label-map 1=second --label-map 2=second --label-map 3=second

A label value missing from the map is an error naming the record and field (never a guess, never a
default); ``tie`` makes a tie pair (first response kept first).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judgerl.data.errors import FieldError
from judgerl.data.formats.base import (
    Format,
    RecordContext,
    as_int_label,
    get_bool,
    get_id,
    get_optional_text,
    get_score,
    get_text,
)
from judgerl.types import PreferencePair

REQUIRED_FIELDS = ("prompt", "chosen", "rejected")
OPTIONAL_FIELDS = ("id", "source", "tie", "chosen_score", "rejected_score")
#: The labelled alternative to chosen / rejected (needs a label map).
LABELLED_FIELDS = ("first", "second", "label")
CANONICAL_FIELDS = REQUIRED_FIELDS + OPTIONAL_FIELDS + LABELLED_FIELDS
LABEL_MEANINGS = ("first", "second", "tie")


def validate_label_map(label_map: Mapping[str, str]) -> dict[str, str]:
    """Check a label map (label value as text -> ``"first"`` / ``"second"`` / ``"tie"``).

    Raises:
        ValueError: an empty value, or a meaning other than first / second / tie.
    """
    out = {}
    for value, meaning in label_map.items():
        key = str(value).strip()
        norm = as_int_label(key)
        key = str(norm) if norm is not None else key
        if not key:
            raise ValueError("label map: an empty label value")
        if meaning not in LABEL_MEANINGS:
            raise ValueError(f"label map: {key!r} must map to one of {', '.join(LABEL_MEANINGS)}, got {meaning!r}")
        out[key] = meaning
    return out


def validate_field_map(field_map: Mapping[str, str]) -> dict[str, str]:
    """Check a field mapping; return it as a plain dict.

    Raises:
        ValueError: an unknown canonical field, a required one missing, or an empty record field.
    """
    unknown = sorted(set(field_map) - set(CANONICAL_FIELDS))
    if unknown:
        raise ValueError(f"field map: unknown field(s) {unknown}; known: {', '.join(CANONICAL_FIELDS)}")
    labelled = "label" in field_map
    needed = ("prompt", "first", "second", "label") if labelled else REQUIRED_FIELDS
    missing = [k for k in needed if k not in field_map]
    if labelled and ({"chosen", "rejected"} & field_map.keys()):
        raise ValueError("field map: map either chosen/rejected or first/second/label, not both")
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
        elif isinstance(value, list) and part.lstrip("-").isascii() and part.lstrip("-").isdigit() and -len(value) <= int(part) < len(value):
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
    meta: dict[str, Any] = {}
    if "label" in fmap:
        chosen, rejected, tie, meta = _labelled(view, fmap, ctx)
    else:
        chosen, rejected = get_text(view, fmap["chosen"]), get_text(view, fmap["rejected"])
        tie = get_bool(view, src("tie")) if src("tie") else False
    return [
        PreferencePair(
            id=get_id(view, src("id"), ctx) if src("id") else ctx.default_id,
            prompt=get_text(view, fmap["prompt"], allow_empty=False),
            chosen=chosen,
            rejected=rejected,
            source=(get_optional_text(view, src("source")) if src("source") else "") or ctx.stem,
            tie=tie,
            chosen_score=get_score(view, src("chosen_score")) if src("chosen_score") else None,
            rejected_score=get_score(view, src("rejected_score")) if src("rejected_score") else None,
            meta=meta,
        )
    ]


def _labelled(view: Mapping[str, Any], fmap: Mapping[str, str], ctx: RecordContext) -> tuple[str, str, bool, dict]:
    """(chosen, rejected, tie, meta) of a first/second/label record, through ``ctx.label_map``."""
    lmap = ctx.label_map or {}
    if not lmap:
        raise FieldError(fmap["label"], "is mapped but no label map was declared (--label-map VALUE=first|second|tie)")
    first, second = get_text(view, fmap["first"]), get_text(view, fmap["second"])
    raw = view.get(fmap["label"])
    norm = as_int_label(raw)
    key = str(norm) if norm is not None else (raw.strip() if isinstance(raw, str) else None)
    if isinstance(raw, bool) or key not in lmap:
        raise FieldError(fmap["label"], f"value {raw!r} is not in the declared label map ({', '.join(lmap)})")
    meaning = lmap[key]
    chosen, rejected = (second, first) if meaning == "second" else (first, second)
    meta: dict[str, Any] = {"label": raw}
    if meaning != "tie":
        meta["chosen_position"] = 1 if meaning == "first" else 2
    return chosen, rejected, meaning == "tie", meta


FORMAT = Format(
    "generic", "any fields, mapped with field_map / --field prompt=… chosen=… rejected=…", None, convert
)
