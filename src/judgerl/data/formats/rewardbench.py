"""RewardBench-style JSON Lines (Lambert et al., 2024, "RewardBench").

Record: ``prompt, chosen, rejected, subset`` (+ optional ``id``; ``chosen_model`` /
``rejected_model`` are kept in ``meta``). The same layout is used by many DPO datasets; the source is
``subset``, else the record's own ``source``, else the file's dataset stem. Never a tie. A pair whose
subset is one of RewardBench's 23 (``EXAMPLE_COUNTS``) gets ``meta["benchmark"] = "rewardbench"``,
so the evaluation adds the section-weighted official score (:mod:`judgerl.eval.rewardbench`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judgerl.data.formats.base import Format, RecordContext, get_id, get_optional_text, get_text
from judgerl.types import PreferencePair

#: Examples per RewardBench subset, used as section weights; copied from allenai/reward-bench
#: ``rewardbench/constants.py`` (``math-prm`` has 447 pairs but is weighted 984, "upweighting to be
#: equal to code": the six ``hep-*`` subsets hold 6 × 164).
EXAMPLE_COUNTS: dict[str, int] = {
    "alpacaeval-easy": 100, "alpacaeval-length": 95, "alpacaeval-hard": 95, "mt-bench-easy": 28,
    "mt-bench-med": 40, "mt-bench-hard": 37, "math-prm": 984, "refusals-dangerous": 100,
    "refusals-offensive": 100, "llmbar-natural": 100, "llmbar-adver-neighbor": 134, "llmbar-adver-GPTInst": 92,
    "llmbar-adver-GPTOut": 47, "llmbar-adver-manual": 46, "xstest-should-refuse": 154,
    "xstest-should-respond": 250, "donotanswer": 136, "hep-cpp": 164, "hep-go": 164, "hep-java": 164,
    "hep-js": 164, "hep-python": 164, "hep-rust": 164,
}
#: Section -> its subsets (allenai/reward-bench ``rewardbench/constants.py``, ``SUBSET_MAPPING``).
SUBSET_MAPPING: dict[str, tuple[str, ...]] = {
    "Chat": ("alpacaeval-easy", "alpacaeval-length", "alpacaeval-hard", "mt-bench-easy", "mt-bench-med"),
    "Chat Hard": ("mt-bench-hard", "llmbar-natural", "llmbar-adver-neighbor", "llmbar-adver-GPTInst",
                  "llmbar-adver-GPTOut", "llmbar-adver-manual"),
    "Safety": ("refusals-dangerous", "refusals-offensive", "xstest-should-refuse", "xstest-should-respond",
               "donotanswer"),
    "Reasoning": ("math-prm", "hep-cpp", "hep-go", "hep-java", "hep-js", "hep-python", "hep-rust"),
}


def matches(record: Mapping[str, Any]) -> bool:
    return (
        {"prompt", "chosen", "rejected"} <= record.keys()
        and isinstance(record["chosen"], str)
        and "tie" not in record  # the canonical judgerl format
    )


def convert(record: Mapping[str, Any], ctx: RecordContext) -> list[PreferencePair]:
    meta: dict[str, Any] = {k: record[k] for k in ("chosen_model", "rejected_model") if isinstance(record.get(k), str)}
    subset = get_optional_text(record, "subset")
    if subset in EXAMPLE_COUNTS:
        meta["benchmark"] = "rewardbench"
    return [
        PreferencePair(
            id=get_id(record, "id", ctx),
            prompt=get_text(record, "prompt", allow_empty=False),
            chosen=get_text(record, "chosen"),
            rejected=get_text(record, "rejected"),
            source=subset or get_optional_text(record, "source") or ctx.stem,
            meta=meta,
        )
    ]


FORMAT = Format("rewardbench", "prompt, chosen, rejected, subset (+ id)", matches, convert)
