"""LLMBar (Zeng et al., 2024, "Evaluating Large Language Models at Evaluating Instruction Following").

Record: ``{"input": str, "output_1": str, "output_2": str, "label": 1 | 2}`` (label may be a
string). ``label`` names the better output. No ties, no ids: ids are ``"<stem>-<index>"`` and the
source is ``"llmbar/<stem>"`` (``natural.json`` -> ``"llmbar/natural"``; the upstream layout
``Natural/dataset.json`` gives the same).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judgerl.data.formats.base import Format, RecordContext, get_label, get_text, order_pair
from judgerl.types import PreferencePair

_KEYS = {"input", "output_1", "output_2", "label"}


def matches(record: Mapping[str, Any]) -> bool:
    return record.keys() >= _KEYS


def convert(record: Mapping[str, Any], ctx: RecordContext) -> list[PreferencePair]:
    prompt = get_text(record, "input", allow_empty=False)
    first, second = get_text(record, "output_1"), get_text(record, "output_2")
    winner = get_label(record, "label", {1: 1, 2: 2})
    chosen, rejected = order_pair(first, second, winner)
    return [
        PreferencePair(
            id=ctx.default_id,
            prompt=prompt,
            chosen=chosen,
            rejected=rejected,
            source=f"llmbar/{ctx.stem}",
            meta={"chosen_position": winner},
        )
    ]


FORMAT = Format("llmbar", "input, output_1, output_2, label (1|2)", matches, convert)
