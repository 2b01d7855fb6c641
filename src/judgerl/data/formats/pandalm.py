"""PandaLM human-annotated test set (Wang et al., 2024, "PandaLM").

Record: ``idx, motivation_app, cmp_key, instruction, input, response1, response2, annotator1,
annotator2, annotator3``; each annotator votes 0 (tie), 1 (response1 better) or 2 (response2
better).

* Gold label = majority vote: the value given by more than half of the annotators who voted
  (a NaN/null vote — pandas exports contain bare ``NaN`` — counts as no vote). The pair is a
  **tie** when that majority is 0 or when there is no majority (e.g. votes 0, 1, 2).
* The votes are kept in ``meta["votes"]`` (in annotator order), with ``motivation_app`` and
  ``cmp_key`` (``"<model of response1>_<model of response2>"``).
* prompt = ``instruction`` followed by a blank line and ``input`` when ``input`` is non-empty
  (either may be blank — one record has instruction ``" "`` and input ``"Truthfulness"`` —
  but not both).
* Responses that pandas turned into JSON booleans (a response reading ``True``) are read back
  as the text ``"True"`` / ``"False"``.
* id = ``idx``; source = ``"pandalm"``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from judgerl.data.errors import FieldError
from judgerl.data.formats.base import (
    Format,
    RecordContext,
    as_int_label,
    get_id,
    get_optional_text,
    get_text,
    is_missing,
    order_pair,
)
from judgerl.types import PreferencePair

_KEYS = {"instruction", "response1", "response2", "annotator1"}
_ANNOTATOR = re.compile(r"annotator(\d+)$")


def matches(record: Mapping[str, Any]) -> bool:
    return record.keys() >= _KEYS


def majority_vote(votes: list[int | None]) -> int | None:
    """The value (0, 1 or 2) chosen by more than half of the non-missing ``votes``; else None.

    >>> majority_vote([1, 1, 0]), majority_vote([0, 1, 2]), majority_vote([2, None, 2])
    (1, None, 2)
    """
    cast = [v for v in votes if v is not None]
    if not cast:
        return None
    value, count = Counter(cast).most_common(1)[0]
    return value if count * 2 > len(cast) else None


def _votes(record: Mapping[str, Any]) -> list[int | None]:
    keys = sorted((int(m.group(1)), k) for k in record if (m := _ANNOTATOR.match(k)))
    votes: list[int | None] = []
    for _, key in keys:
        raw = record[key]
        if is_missing(raw):
            votes.append(None)
            continue
        vote = as_int_label(raw)
        if vote not in (0, 1, 2):
            raise FieldError(key, f"must be 0 (tie), 1 or 2, got {raw!r}")
        votes.append(vote)
    if all(v is None for v in votes):
        raise FieldError(keys[0][1], "has no vote: every annotator field is null/NaN")
    return votes


def convert(record: Mapping[str, Any], ctx: RecordContext) -> list[PreferencePair]:
    instruction = get_text(record, "instruction").strip()
    extra = get_optional_text(record, "input").strip()
    prompt = "\n\n".join(part for part in (instruction, extra) if part)
    if not prompt:
        raise FieldError("instruction", "is empty and so is 'input'")
    first = get_text(record, "response1", coerce=True)
    second = get_text(record, "response2", coerce=True)
    votes = _votes(record)
    majority = majority_vote(votes)
    winner = majority if majority in (1, 2) else None
    chosen, rejected = order_pair(first, second, winner)
    meta: dict[str, Any] = {"votes": votes}
    if winner is not None:
        meta["chosen_position"] = winner
    for key in ("motivation_app", "cmp_key"):
        if isinstance(record.get(key), str):
            meta[key] = record[key]
    return [
        PreferencePair(
            id=get_id(record, "idx", ctx),
            prompt=prompt,
            chosen=chosen,
            rejected=rejected,
            source="pandalm",
            tie=winner is None,
            meta=meta,
        )
    ]


FORMAT = Format(
    "pandalm",
    "instruction, input, response1, response2, annotator1..3 (0=tie|1|2)",
    matches,
    convert,
)
