"""Auto-J pairwise test set (Li et al., 2024, "Generative Judge for Evaluating Alignment").

Record: ``scenario, label, prompt, "response 1", "response 2"`` with label 0 = response 1 is
better, 1 = response 2 is better, 2 = tie. source = ``scenario`` (``"autoj"`` when absent);
id = the record's ``id`` if it has one, else ``"<stem>-<index>"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judgerl.data.formats.base import (
    Format,
    RecordContext,
    get_id,
    get_label,
    get_optional_text,
    get_text,
    order_pair,
)
from judgerl.types import PreferencePair

_KEYS = {"prompt", "response 1", "response 2", "label"}
#: Auto-J label -> 1-based winner (None = tie).
_LABELS: dict[Any, int | None] = {0: 1, 1: 2, 2: None}


def matches(record: Mapping[str, Any]) -> bool:
    return record.keys() >= _KEYS


def convert(record: Mapping[str, Any], ctx: RecordContext) -> list[PreferencePair]:
    prompt = get_text(record, "prompt", allow_empty=False)
    first, second = get_text(record, "response 1"), get_text(record, "response 2")
    winner = get_label(record, "label", _LABELS)
    chosen, rejected = order_pair(first, second, winner)
    return [
        PreferencePair(
            id=get_id(record, "id", ctx),
            prompt=prompt,
            chosen=chosen,
            rejected=rejected,
            source=get_optional_text(record, "scenario") or "autoj",
            tie=winner is None,
            meta={"chosen_position": winner} if winner is not None else {},
        )
    ]


FORMAT = Format(
    "autoj",
    "scenario, prompt, 'response 1', 'response 2', label (0|1|2=tie)",
    matches,
    convert,
)
