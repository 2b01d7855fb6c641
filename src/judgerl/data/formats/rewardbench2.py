"""RewardBench 2 (Malik et al., 2025, "RewardBench 2: Advancing Reward Model Evaluation").

Record (``allenai/reward-bench-2``): ``id, prompt, chosen: [str], rejected: [str], num_correct,
num_incorrect, total_completions, models, subset, additional_metadata``. Non-Ties subsets
(Factuality, Precise IF, Math, Safety, Focus) have one correct completion and three incorrect ones
(best-of-4); the Ties subset has several correct answers (``num_correct`` >= 1) and incorrect ones.

**Design: pairwise reductions.** A judgerl pair holds two responses, and the official rules
(:mod:`judgerl.eval.rewardbench`) can be computed from pairs:

* non-Ties: one pair per incorrect completion, ``chosen[0]`` vs ``rejected[k]`` (id
  ``"<id>-c0r<k>"``). The prompt is solved when the correct completion wins *all* its pairs — the
  best-of-4 rule (``chosen`` strictly above every rejected score) with a pairwise judge; a pointwise
  judge's scores feed the upstream rule directly.
* Ties: upstream scores Ties with absolute ratings only, so every completion must be scored once.
  The reader emits ``max(num_correct, num_incorrect)`` pairs ``chosen[k mod n_c]`` vs
  ``rejected[k mod n_i]`` (id ``"<id>-c<i>r<j>"``), which cover each completion at least once; a
  pointwise protocol then gives each completion its (mean) score.

``meta`` holds ``benchmark = "rewardbench2"``, ``record_id``, ``subset``, ``chosen_rank`` /
``rejected_rank`` (indices into the lists), ``num_correct`` and ``num_incorrect``. source = ``"rewardbench2/<subset>"``.
The list lengths must match ``num_correct`` / ``num_incorrect`` when those are given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judgerl.data.errors import FieldError
from judgerl.data.formats.base import Format, RecordContext, as_int_label, get_id, get_optional_text, get_text
from judgerl.types import PreferencePair

_KEYS = {"prompt", "chosen", "rejected", "subset"}
_MARKERS = {"num_correct", "num_incorrect", "total_completions"}


def matches(record: Mapping[str, Any]) -> bool:
    return record.keys() >= _KEYS and bool(_MARKERS & record.keys()) and isinstance(record["chosen"], list)


def _texts(record: Mapping[str, Any], key: str, count_key: str) -> list[str]:
    value = record.get(key)
    if not isinstance(value, list) or not value:
        raise FieldError(key, f"must be a non-empty array of strings, got {str(value)[:60]!r}")
    for k, item in enumerate(value):
        if not isinstance(item, str):
            raise FieldError(f"{key}[{k}]", f"must be a string, got {type(item).__name__}")
    if count_key in record and record[count_key] is not None:
        n = as_int_label(record[count_key])
        if n != len(value):
            raise FieldError(count_key, f"is {record[count_key]!r} but '{key}' has {len(value)} completions")
    return value


def convert(record: Mapping[str, Any], ctx: RecordContext) -> list[PreferencePair]:
    prompt = get_text(record, "prompt", allow_empty=False)
    chosen = _texts(record, "chosen", "num_correct")
    rejected = _texts(record, "rejected", "num_incorrect")
    subset = get_optional_text(record, "subset").strip()
    if not subset:
        raise FieldError("subset", "is empty (RewardBench 2 scores each subset by its own rule)")
    record_id = get_id(record, "id", ctx)
    if subset.lower() == "ties":
        n = max(len(chosen), len(rejected))
        index_pairs = [(k % len(chosen), k % len(rejected)) for k in range(n)]
    else:
        if len(chosen) != 1:
            raise FieldError("chosen", f"has {len(chosen)} completions; subset {subset!r} is best-of-n with one correct")
        index_pairs = [(0, k) for k in range(len(rejected))]
    pairs = []
    for i, j in index_pairs:
        meta = {"benchmark": "rewardbench2", "record_id": record_id, "subset": subset, "chosen_rank": i,
                "rejected_rank": j, "num_correct": len(chosen), "num_incorrect": len(rejected)}
        pairs.append(PreferencePair(id=f"{record_id}-c{i}r{j}", prompt=prompt, chosen=chosen[i], rejected=rejected[j],
                                    source=f"rewardbench2/{subset}", meta=meta))
    return pairs


FORMAT = Format(
    "rewardbench2",
    "id, prompt, chosen[], rejected[], num_correct, num_incorrect, total_completions, subset",
    matches,
    convert,
)
