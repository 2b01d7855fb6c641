"""RM-Bench (Liu et al., 2025, "RM-Bench: Benchmarking Reward Models of Language Models with
Subtlety and Style").

Record: ``id, prompt, chosen: [str × 3], rejected: [str × 3]`` (+ ``domain``: chat, code, math,
safety-refuse, safety-response; + the file's own ``subset`` where it has one, e.g. ``refusal`` vs
``should-respond``). Index k of each list is the same answer at style level k: 0 = concise,
1 = detailed (plain text), 2 = detailed with markdown.

Each record gives one pair per (i, j) — chosen at style i vs rejected at style j — 9 in all,
whose *difficulty* is the paper's 3×3 accuracy matrix (Sec. 3.3 and its ``compute_accuracy``):

* ``hard``   i < j (upper triangle): the chosen answer is *less* styled than the rejected one,
  so a judge biased towards style gets it wrong;
* ``normal`` i == j (diagonal): same style;
* ``easy``   i > j (lower triangle): the chosen answer is also the more styled one.

source = ``"rmbench/<domain>/<subset>"`` from the record's own ``domain`` and ``subset``
(either part left out when the record has none: ``"rmbench/chat"``, ``"rmbench"``), so the
per-source table shows the file's subsets. The difficulty is kept apart, in
``meta["difficulty"]``. id = ``"<id>-c<i>r<j>"``. ``meta`` holds ``difficulty``,
``chosen_style``, ``rejected_style`` (level indices), ``record_id``, ``benchmark = "rmbench"`` (for the
official score of :mod:`judgerl.eval.benchmarks`) and ``domain`` /
``subset`` when the record has them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judgerl.data.errors import FieldError
from judgerl.data.formats.base import Format, RecordContext, get_id, get_optional_text, get_text
from judgerl.types import PreferencePair

STYLE_NAMES = ("concise", "detailed", "detailed_markdown")


def matches(record: Mapping[str, Any]) -> bool:
    return (
        {"prompt", "chosen", "rejected"} <= record.keys()
        and isinstance(record["chosen"], list)
        and not any(isinstance(c, Mapping) for c in record["chosen"])  # message lists: chat-pairs / ultrafeedback
        and not {"num_correct", "num_incorrect", "total_completions"} & record.keys()  # RewardBench 2
    )


def style_difficulty(chosen_level: int, rejected_level: int) -> str:
    """``"hard"`` if chosen is less styled (i < j), ``"normal"`` if equal, else ``"easy"``."""
    if chosen_level < rejected_level:
        return "hard"
    return "normal" if chosen_level == rejected_level else "easy"


def _levels(record: Mapping[str, Any], key: str) -> list[str]:
    value = record.get(key)
    if not isinstance(value, list) or not value:
        raise FieldError(
            key, f"must be a non-empty array of strings (one per style level), got {value!r:.60}"
        )
    for k, item in enumerate(value):
        if not isinstance(item, str):
            raise FieldError(f"{key}[{k}]", f"must be a string, got {type(item).__name__}")
    return value


def convert(record: Mapping[str, Any], ctx: RecordContext) -> list[PreferencePair]:
    prompt = get_text(record, "prompt", allow_empty=False)
    chosen, rejected = _levels(record, "chosen"), _levels(record, "rejected")
    if len(chosen) != len(rejected):
        raise FieldError("rejected", f"has {len(rejected)} style levels but 'chosen' has {len(chosen)}")
    record_id = get_id(record, "id", ctx)
    domain = get_optional_text(record, "domain").strip()
    subset = get_optional_text(record, "subset").strip()
    source = "/".join(["rmbench"] + [part for part in (domain, subset) if part])
    pairs = []
    for i, good in enumerate(chosen):
        for j, bad in enumerate(rejected):
            meta: dict[str, Any] = {
                "difficulty": style_difficulty(i, j),
                "chosen_style": i,
                "rejected_style": j,
                "record_id": record_id,
                "benchmark": "rmbench",
            }
            if domain:
                meta["domain"] = domain
            if subset:
                meta["subset"] = subset
            pairs.append(
                PreferencePair(
                    id=f"{record_id}-c{i}r{j}",
                    prompt=prompt,
                    chosen=good,
                    rejected=bad,
                    source=source,
                    meta=meta,
                )
            )
    return pairs


FORMAT = Format(
    "rmbench",
    "id, prompt, chosen[3], rejected[3] (style levels), domain, subset",
    matches,
    convert,
)
