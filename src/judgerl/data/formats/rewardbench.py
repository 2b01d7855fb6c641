"""RewardBench-style JSON Lines (Lambert et al., 2024, "RewardBench").

Record: ``prompt, chosen, rejected, subset`` (+ optional ``id``; ``chosen_model`` /
``rejected_model`` are kept in ``meta``). The same layout is used by many DPO datasets; when
``subset`` is absent the source is the file's dataset stem. Never a tie.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judgerl.data.formats.base import Format, RecordContext, get_id, get_optional_text, get_text
from judgerl.types import PreferencePair


def matches(record: Mapping[str, Any]) -> bool:
    return (
        {"prompt", "chosen", "rejected"} <= record.keys()
        and isinstance(record["chosen"], str)
        and "tie" not in record  # the canonical judgerl format
    )


def convert(record: Mapping[str, Any], ctx: RecordContext) -> list[PreferencePair]:
    meta = {k: record[k] for k in ("chosen_model", "rejected_model") if isinstance(record.get(k), str)}
    return [
        PreferencePair(
            id=get_id(record, "id", ctx),
            prompt=get_text(record, "prompt", allow_empty=False),
            chosen=get_text(record, "chosen"),
            rejected=get_text(record, "rejected"),
            source=get_optional_text(record, "subset") or ctx.stem,
            meta=meta,
        )
    ]


FORMAT = Format("rewardbench", "prompt, chosen, rejected, subset (+ id)", matches, convert)
