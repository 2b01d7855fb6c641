"""JudgeBench (Tan et al., 2025, "JudgeBench: A Benchmark for Evaluating LLM-based Judges").

Record: ``pair_id, original_id, source, question, response_model, response_A, response_B,
label`` with label ``"A>B"`` or ``"B>A"`` (``"A=B"`` is read as a tie if a file has it).
id = ``pair_id``; source = the record's ``source`` (e.g. ``"mmlu-pro-biology"``,
``"livecodebench"``), or ``"judgebench"`` when absent. ``original_id`` and ``response_model``
are kept in ``meta``, with ``benchmark = "judgebench"`` (the official per-pair score and its four
categories: :mod:`judgerl.eval.benchmarks`).
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

_KEYS = {"question", "response_A", "response_B", "label"}
_LABELS: dict[Any, int | None] = {"A>B": 1, "B>A": 2, "A=B": None}


def matches(record: Mapping[str, Any]) -> bool:
    return record.keys() >= _KEYS


def convert(record: Mapping[str, Any], ctx: RecordContext) -> list[PreferencePair]:
    prompt = get_text(record, "question", allow_empty=False)
    first, second = get_text(record, "response_A"), get_text(record, "response_B")
    winner = get_label(record, "label", _LABELS)
    chosen, rejected = order_pair(first, second, winner)
    meta: dict[str, Any] = {"benchmark": "judgebench"}
    if winner is not None:
        meta["chosen_position"] = winner
    for key in ("original_id", "response_model"):
        if record.get(key) is not None:
            meta[key] = record[key]
    return [
        PreferencePair(
            id=get_id(record, "pair_id", ctx),
            prompt=prompt,
            chosen=chosen,
            rejected=rejected,
            source=get_optional_text(record, "source") or "judgebench",
            tie=winner is None,
            meta=meta,
        )
    ]


FORMAT = Format(
    "judgebench",
    "pair_id, source, question, response_A, response_B, label ('A>B'|'B>A')",
    matches,
    convert,
)
