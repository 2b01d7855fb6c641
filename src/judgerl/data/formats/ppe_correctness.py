"""PPE correctness, best-of-K (Frick et al., 2024, "How to Evaluate Reward Models for RLHF", Sec. 3).

Record (``lmarena-ai/PPE-{MMLU-Pro,MATH,GPQA,IFEval,MBPP-Plus}-Best-of-K``, their dataset cards):
``question_id, prompt, response_1 … response_K, scores: [bool] (one verified-correctness flag per
response), model_name`` plus the source benchmark's own fields (``options, answer_index`` for
MMLU-Pro, ``choices, correct_choice_index`` for GPQA, ``ifeval_prompt, instruction_id_list`` for
IFEval, …). K is 32 upstream; any K >= 2 is read.

**Subset** (the source benchmark): a ``subset`` field when present, else recognised from the
benchmark's fields (``answer_index`` -> ``mmlu_pro``, ``correct_choice_index`` -> ``gpqa``,
``instruction_id_list`` -> ``ifeval``; a field holding null counts as absent, as in a parquet row
whose dataset has the column), else from the file / dataset name (``mmlu``, ``math``, ``gpqa``,
``ifeval``, ``mbpp`` in it), else the file name itself.

**Design: pairwise reductions** (as :mod:`judgerl.data.formats.rewardbench2`). The metrics
(:mod:`judgerl.eval.ppe`) need every response scored once by a pointwise judge, or
correct-vs-incorrect pairs judged by a pairwise one. With correct responses C and incorrect ones I,
the reader emits ``max(|C|, |I|)`` pairs ``C[k mod |C|]`` (chosen) vs ``I[k mod |I|]`` (rejected),
id ``"<question_id>-c<i>r<j>"`` with i, j the 0-based response indices, which cover every response
at least once. A prompt whose responses are all correct or all incorrect has no preference and
ranks nothing (its best-of-K is the same for every judge), so it gives no pair.

``meta``: ``benchmark = "ppe_correctness"``, ``record_id``, ``subset``, ``chosen_rank`` /
``rejected_rank`` (the response indices), ``num_correct``, ``num_incorrect``, ``model_name``.
source = ``"ppe-correctness/<subset>"``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from judgerl.data.errors import FieldError
from judgerl.data.formats.base import Format, RecordContext, get_id, get_optional_text, get_text, is_missing
from judgerl.types import PreferencePair

#: Benchmark field -> subset name (fields from the PPE dataset cards).
_SUBSET_MARKERS = (("answer_index", "mmlu_pro"), ("correct_choice_index", "gpqa"), ("instruction_id_list", "ifeval"))
#: Substring of the file / dataset name -> subset name, checked in order.
_SUBSET_NAMES = (("mmlu", "mmlu_pro"), ("gpqa", "gpqa"), ("ifeval", "ifeval"), ("mbpp", "mbpp_plus"),
                 ("math", "math"))
_RESPONSE_KEY = re.compile(r"^response_(\d+)$")


def matches(record: Mapping[str, Any]) -> bool:
    return ({"question_id", "prompt", "scores", "response_1", "response_2"} <= record.keys()
            and "winner" not in record and isinstance(record.get("scores"), (list, tuple)))


def subset_of(record: Mapping[str, Any], stem: str) -> str:
    """The source benchmark of a record (module docstring)."""
    explicit = get_optional_text(record, "subset").strip()
    if explicit:
        return explicit
    for key, name in _SUBSET_MARKERS:
        if not is_missing(record.get(key)):  # a parquet / datasets row holds every column, None where absent
            return name
    low = stem.lower()
    return next((name for part, name in _SUBSET_NAMES if part in low), stem)


def _responses(record: Mapping[str, Any]) -> list[str]:
    numbers = sorted(int(m.group(1)) for k in record if (m := _RESPONSE_KEY.match(str(k))))
    if numbers != list(range(1, len(numbers) + 1)):
        raise FieldError("response_1", f"response fields must be response_1 … response_K without gaps, got {numbers}")
    return [get_text(record, f"response_{n}") for n in numbers]


def _flags(record: Mapping[str, Any], n: int) -> list[bool]:
    flags = record.get("scores")
    if not isinstance(flags, (list, tuple)) or len(flags) != n:
        got = len(flags) if isinstance(flags, (list, tuple)) else type(flags).__name__
        raise FieldError("scores", f"must be an array of {n} correctness flags (one per response), got {got}")
    out = []
    for k, f in enumerate(flags):
        if isinstance(f, bool) or f in (0, 1):
            out.append(bool(f))
        else:
            raise FieldError(f"scores[{k}]", f"must be true/false (verified correctness), got {f!r}")
    return out


def convert(record: Mapping[str, Any], ctx: RecordContext) -> list[PreferencePair]:
    prompt = get_text(record, "prompt", allow_empty=False)
    responses = _responses(record)
    if len(responses) < 2:
        raise FieldError("response_2", "is missing: best-of-K needs at least two responses")
    flags = _flags(record, len(responses))
    record_id = get_id(record, "question_id", ctx)
    subset = subset_of(record, ctx.stem)
    good = [k for k, ok in enumerate(flags) if ok]
    bad = [k for k, ok in enumerate(flags) if not ok]
    if not good or not bad:
        return []
    pairs = []
    for k in range(max(len(good), len(bad))):
        i, j = good[k % len(good)], bad[k % len(bad)]
        meta = {"benchmark": "ppe_correctness", "record_id": record_id, "subset": subset, "chosen_rank": i,
                "rejected_rank": j, "num_correct": len(good), "num_incorrect": len(bad)}
        model = get_optional_text(record, "model_name")
        if model:
            meta["model_name"] = model
        pairs.append(PreferencePair(id=f"{record_id}-c{i}r{j}", prompt=prompt, chosen=responses[i],
                                    rejected=responses[j], source=f"ppe-correctness/{subset}", meta=meta))
    return pairs


FORMAT = Format(
    "ppe-correctness",
    "question_id, prompt, response_1 … response_K, scores[K] (PPE best-of-K correctness)",
    matches,
    convert,
)
